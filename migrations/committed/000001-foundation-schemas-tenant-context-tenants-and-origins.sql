--! Previous: -
--! Hash: sha1:99789a11c9d48ce2e0e8c2d28179f387b3c38f9f
--! Message: Foundation: schemas, tenant context, tenants and origins

-- Foundation: schemas, the tenant context, tenants and the origins they are served from.

-- Schemas (DESIGN.md, "Database conventions"):
--   weld_public   what API roles may touch and what GraphQL shows
--   weld_hidden   helpers API roles may call but GraphQL does not show
--   weld_private  secrets and bookkeeping; never granted to API roles
-- graphile-migrate re-runs current.sql on every save, so it starts from a clean slate.
drop schema if exists weld_public, weld_hidden, weld_private cascade;

create schema weld_public;
create schema weld_hidden;
create schema weld_private;

grant usage on schema weld_public, weld_hidden to weld_anonymous;
-- The authenticator calls two lookups itself, before it becomes a request role.
grant usage on schema weld_hidden to weld_authenticator;

-- New functions are not executable by PUBLIC; each gets its grants explicitly.
alter default privileges revoke execute on functions from public;

--------------------------------------------------------------------------------------------------
-- The request context. The server sets these per transaction (db/database.ts, withContext);
-- policies compare with (select weld_hidden.current_tenant_id()) so the call is an initPlan,
-- evaluated once per statement. No context means null, and null matches no row.

create function weld_hidden.current_tenant_id() returns uuid
  language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('jwt.claims.tenant_id', true), '')::uuid
$$;

create function weld_hidden.current_user_id() returns uuid
  language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('jwt.claims.user_id', true), '')::uuid
$$;

grant execute on function weld_hidden.current_tenant_id(), weld_hidden.current_user_id()
  to weld_anonymous;

--------------------------------------------------------------------------------------------------
-- Tenants. A tenant is served from one or more origins (scheme://host[:port], lower case, no
-- path); a request's tenant is the one whose origin equals the request's exactly.

create table weld_public.tenants (
  id         uuid primary key default gen_random_uuid(),
  slug       text not null unique
             constraint tenants_slug_format check (slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  name       text not null
             constraint tenants_name_length check (char_length(name) between 1 and 200),
  created_at timestamptz not null default now()
);
comment on table weld_public.tenants is 'A customer of the service: one project owner, served from its own origins.';

alter table weld_public.tenants enable row level security;
alter table weld_public.tenants force row level security;
create policy tenants_select_own on weld_public.tenants
  for select using (id = (select weld_hidden.current_tenant_id()));
grant select on weld_public.tenants to weld_viewer;

create table weld_private.tenant_origins (
  tenant_id uuid not null references weld_public.tenants on delete cascade,
  origin    text not null
            constraint tenant_origins_origin_format
            check (origin ~ '^https?://([a-z0-9.-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$'),
  primary key (tenant_id, origin),
  -- Routing is global by nature: one origin, one tenant. This is the only unique key in the
  -- schema that does not lead with tenant_id.
  constraint tenant_origins_origin_key unique (origin)
);
comment on table weld_private.tenant_origins is 'The origins a tenant is served from; matched exactly against each request.';

alter table weld_private.tenant_origins enable row level security;
alter table weld_private.tenant_origins force row level security;
create policy tenant_origins_own on weld_private.tenant_origins
  using (tenant_id = (select weld_hidden.current_tenant_id()));

-- Which tenant serves this origin. Called by the authenticator for every new Host it sees, before
-- any tenant context exists; SECURITY DEFINER (owner, BYPASSRLS) because it must look across
-- tenants, and it returns only the one matching row.
create function weld_hidden.tenant_by_origin(request_origin text)
  returns table (id uuid, slug text, name text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select t.id, t.slug, t.name
  from weld_private.tenant_origins o
  join weld_public.tenants t on t.id = o.tenant_id
  where o.origin = request_origin
$$;
grant execute on function weld_hidden.tenant_by_origin(text) to weld_authenticator;

-- Creates a tenant with its origins in one statement, so a duplicate slug or origin leaves
-- nothing behind. Used by `weld-admin tenant add` as the owner.
create function weld_private.create_tenant(slug text, name text, origins text[])
  returns weld_public.tenants
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant weld_public.tenants;
begin
  if coalesce(array_length(origins, 1), 0) = 0 then
    raise exception 'a tenant needs at least one origin' using errcode = '22023';
  end if;
  insert into weld_public.tenants (slug, name)
    values (create_tenant.slug, create_tenant.name)
    returning * into tenant;
  insert into weld_private.tenant_origins (tenant_id, origin)
    select tenant.id, o from unnest(origins) as o;
  return tenant;
end
$$;

create function weld_private.tenant_list()
  returns table (id uuid, slug text, name text, origins text[], created_at timestamptz)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select t.id, t.slug, t.name,
         array(select o.origin from weld_private.tenant_origins o
               where o.tenant_id = t.id order by o.origin),
         t.created_at
  from weld_public.tenants t
  order by t.slug
$$;

--------------------------------------------------------------------------------------------------
-- The newest applied migration, for GET /health/ready: the server compares it with the newest
-- file in migrations/committed and reports not ready when the database is behind.
create function weld_hidden.applied_migration() returns text
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select filename from graphile_migrate.migrations order by filename desc limit 1
$$;
grant execute on function weld_hidden.applied_migration() to weld_authenticator;
