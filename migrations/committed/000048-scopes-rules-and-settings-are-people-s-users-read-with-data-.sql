--! Previous: sha1:c92d0aee4c7cbba3f3a627b041dc507ee5458b2d
--! Hash: sha1:d5eed798ac5af188ddb317383355dd95a92b67e6
--! Message: scopes: rules and settings are people's; users read with data scopes

-- F18, from a second attacker-side review:
-- - a client acting as an admin (webhooks:write) with welds:write could rewrite the transition
--   rules (admin-only): writing the rule tables and settings now needs a request without scopes,
--   as users do, and webhooks:write is registered with read scopes only (oauth_client_add).
-- - users could be read with any scope: reading them needs one of the data scopes now.
-- - clear_tenant runs as its owner (SECURITY DEFINER), so a superuser running weld-admin tenant
--   remove or reset runs nothing with its own rights that the owner could have rewritten.

do $$
declare
  tbl text;
begin
  foreach tbl in array array[
    'weld_public.tenant_settings', 'weld_public.weld_transition_rules',
    'weld_public.examination_rules', 'weld_public.qualification_range_rules',
    'weld_public.procedure_thickness_rules', 'weld_public.p_number_rules',
    'weld_public.heat_treatment_rules']
  loop
    execute format('drop policy if exists scope_insert on %1$s; drop policy if exists scope_update on %1$s;
                    drop policy if exists scope_delete on %1$s', tbl);
    execute format('create policy scope_insert on %s as restrictive for insert to weld_viewer
                      with check (tenant_id = (select weld_hidden.unscoped_tenant_id()))', tbl);
    execute format('create policy scope_update on %s as restrictive for update to weld_viewer
                      using (tenant_id = (select weld_hidden.unscoped_tenant_id()))', tbl);
    execute format('create policy scope_delete on %s as restrictive for delete to weld_viewer
                      using (tenant_id = (select weld_hidden.unscoped_tenant_id()))', tbl);
  end loop;
end
$$;

drop policy if exists scope_read on weld_public.users;
create policy scope_read on weld_public.users as restrictive for select to weld_viewer
  using (tenant_id = (select weld_hidden.scoped_tenant_id(
    '{welds:read,welds:write,ndt:write,packages:write,imports:write}')));

--! Included functions/weld_hidden.oauth_client_add.sql
-- Registers an OAuth2 client of the caller's tenant (an admin over REST, weld-admin as the
-- owner): a user of its own, named by the client id and acting in the role its scopes need
-- (weld_private.oauth_scopes_role), so that sessions, audit trails and deactivation work as for
-- a person; and the client, its scopes and its secret's SHA-256 (the secret itself is shown once,
-- by the caller, and kept nowhere).
--
-- SECURITY DEFINER as weld_rules (row security binds it to the caller's tenant): an admin may
-- not write users or weld_private itself.
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_client_add(
  client_id text, name text, scopes text[], secret_hash bytea
) returns jsonb
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  account weld_public.users;
  client weld_private.oauth_clients;
begin
  perform weld_private.require_person();
  -- webhooks:write makes the client an admin: with another write scope that role would reach
  -- past the area (admin-only transitions, say). A client that manages endpoints only reads.
  if 'webhooks:write' = any (scopes) and scopes && '{welds:write,ndt:write,packages:write,imports:write}'::text[] then
    raise exception 'webhooks:write goes with read scopes only (welds:read, events:read, reports:read): register another client for writing'
      using errcode = 'WD007', detail = json_build_object('pointer', '/scopes')::text;
  end if;
  insert into weld_public.users (tenant_id, user_name, display_name, role)
    values (tenant, oauth_client_add.client_id, oauth_client_add.name,
            weld_private.oauth_scopes_role(oauth_client_add.scopes))
    returning * into account;
  insert into weld_private.oauth_clients as c
         (tenant_id, client_id, user_id, name, scopes, secret_hash, created_by)
    values (tenant, oauth_client_add.client_id, account.id, oauth_client_add.name,
            oauth_client_add.scopes, oauth_client_add.secret_hash, weld_hidden.current_user_id())
    returning * into client;
  return weld_private.oauth_client_json(client);
end
$$;

grant execute on function weld_hidden.oauth_client_add(text, text, text[], bytea) to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_client_add.sql
--! Included functions/weld_private.clear_tenant.sql
-- Empties a tenant for `weld-admin tenant remove` and `tenant reset` (F18): every row of every
-- table with a tenant_id (whole = true, then the tenant itself), or, for a reset, every row but
-- the tenant's setup: its origins, users and their credentials and sessions, signing keys,
-- settings, rule tables, webhook endpoints, OAuth2 clients and reporting logins. A table added
-- later is data unless it is named here, so a reset never leaves project rows behind.
--
-- Why triggers are off: the rules refuse what a removal must do (a released package's records are
-- held, welds hold their ISO by RESTRICT, history is append-only) and each deleted row would write
-- an event. The caller runs it with session_replication_role = replica for its transaction, so no
-- trigger fires, the foreign keys' own included; that is safe because every row of the tenant
-- goes, and nothing of another tenant refers to it (every key leads with tenant_id). Only a
-- superuser may set that: weld-admin sets it on the root connection and calls this, which runs as
-- its owner (SECURITY DEFINER, where PostgreSQL refuses SET ROLE), so that the superuser runs no
-- code with its own rights that the owner could have rewritten.
--
-- Writes of the tenant in flight: the tenant's row is locked first (FOR UPDATE waits for every
-- transaction that wrote a row naming the tenant, and holds back any new one), and a last pass
-- finds every table empty of the tenant (or of its data), else nothing is deleted.
--
-- A removal announces the end of the tenant's live sessions (as the revocation trigger would),
-- so every server drops their access tokens at once. Returns the rows deleted per table, the
-- tables with none left out.
create or replace function weld_private.clear_tenant(tenant uuid, whole boolean)
  returns table (table_name text, deleted bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  setup constant text[] := array[
    'weld_private.tenant_origins', 'weld_public.users', 'weld_private.user_credentials',
    'weld_private.sessions', 'weld_private.refresh_tokens', 'weld_private.known_addresses',
    'weld_private.login_throttle', 'weld_private.signing_keys', 'weld_private.tenant_secrets',
    'weld_private.reporting_logins', 'weld_private.oauth_clients', 'weld_public.tenant_settings',
    'weld_public.weld_transition_rules', 'weld_public.examination_rules',
    'weld_public.qualification_range_rules', 'weld_public.procedure_thickness_rules',
    'weld_public.p_number_rules', 'weld_public.heat_treatment_rules',
    'weld_private.report_refreshes', 'weld_hidden.webhooks'];
  tables regclass[];
  tbl regclass;
  count bigint;
  left_over boolean;
begin
  if current_setting('session_replication_role') <> 'replica' then
    raise exception 'clear_tenant runs with session_replication_role = replica (weld-admin tenant remove or reset)'
      using errcode = '55000';
  end if;
  perform from weld_public.tenants t where t.id = tenant for update;
  if not found then
    raise exception 'no tenant %', tenant using errcode = 'WD001';
  end if;
  if whole then
    perform pg_notify('weld_session_revoked', json_build_object(
              'tenantId', s.tenant_id, 'sessionId', s.id, 'userId', s.user_id)::text)
       from weld_private.sessions s
      where s.tenant_id = tenant and s.revoked_at is null;
  end if;

  select array_agg(c.oid::regclass order by c.oid::regclass::text) into tables
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id'
                                   and not a.attisdropped
   where n.nspname in ('weld_public', 'weld_hidden', 'weld_private')
     and c.relkind in ('r', 'p')
     and (whole or c.oid::regclass::text <> all (setup));
  foreach tbl in array tables loop
    execute format('delete from %s where tenant_id = $1', tbl) using tenant;
    get diagnostics count = row_count;
    if count > 0 then
      table_name := tbl::text;
      deleted := count;
      return next;
    end if;
  end loop;
  foreach tbl in array tables loop
    execute format('select exists (select from %s where tenant_id = $1)', tbl) into left_over
      using tenant;
    if left_over then
      raise exception 'rows of the tenant were written in % while it was being emptied; nothing was deleted: run it again', tbl
        using errcode = '40001';
    end if;
  end loop;
  if whole then
    delete from weld_public.tenants t where t.id = tenant;
    table_name := 'weld_public.tenants';
    deleted := 1;
    return next;
  end if;
end
$$;

comment on function weld_private.clear_tenant(uuid, boolean) is
  'Deletes a tenant''s data (whole: everything, and the tenant) in a transaction with triggers off (session_replication_role = replica, set by weld-admin as a superuser).';
--! EndIncluded functions/weld_private.clear_tenant.sql
--! Included functions/weld_hidden.unscoped_tenant_id.sql
-- Users, rules and settings are managed by people (F18): for a request that carries OAuth2
-- scopes (a client's token), whatever its role and scopes, writing them is refused (WD003), so no
-- client can make a person an admin or change the rules every weld is judged by; otherwise the
-- tenant of the request. The row security policies of weld_public.users (migration 000047) and
-- of the rule tables and tenant_settings (000048) compare tenant_id with it for writes.
create or replace function weld_hidden.unscoped_tenant_id() returns uuid
  language plpgsql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(current_setting('jwt.claims.scope', true), '') <> '' then
    raise exception 'an OAuth2 client may not change users, rules or settings' using errcode = 'WD003';
  end if;
  return weld_hidden.current_tenant_id();
end
$$;

grant execute on function weld_hidden.unscoped_tenant_id() to weld_anonymous;
--! EndIncluded functions/weld_hidden.unscoped_tenant_id.sql
