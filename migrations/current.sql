-- F14 GraphQL: the tenant's id never appears in GraphQL (README, "GraphQL for analysts").
--
-- Node ids leave tenant_id out (server/graphql.ts, TenantlessNodeIdPlugin). The tenants table
-- itself would still show it: allTenants { rowId }, and tenantByTenantId { rowId } on every tenant
-- table. The session implies the tenant, so GraphQL shows no tenants table at all, and with it go
-- the relations to it (tenantByTenantId, and Tenant's weldsByTenantId ... which read a whole
-- table). REST's /tenants routes are untouched. Idempotent: a comment replaces the one before.
comment on table weld_public.tenants is
  E'@behavior -*\nA customer of the service: one project owner, served from its own origins.';
