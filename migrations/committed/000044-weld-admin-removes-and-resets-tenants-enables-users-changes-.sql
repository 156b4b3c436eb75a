--! Previous: sha1:d3f43776549b0cfa801e2e57895fe52a0552b7e8
--! Hash: sha1:76db7bc7a81997c916215e76bdd322ba5d2f2d3b
--! Message: weld-admin removes and resets tenants, enables users, changes roles

-- F18, the operator's CLI. A removed tenant's sessions end with their own reason.
alter table weld_private.sessions
  drop constraint sessions_revoked_reason_check,
  add constraint sessions_revoked_reason_check check (revoked_reason in (
    'logout', 'reuse', 'user-disabled', 'role-changed', 'password-changed', 'tenant-removed'));

--! Included functions/weld_private.clear_tenant.sql
-- Empties a tenant for `weld-admin tenant remove` and `tenant reset` (F18): every row of every
-- table with a tenant_id (whole = true, then the tenant itself), or, for a reset, every row but
-- the tenant's setup: its origins, users and their credentials and sessions, signing keys,
-- settings, rule tables, webhook endpoints and reporting logins. A table added later is data
-- unless it is named here, so a reset never leaves project rows behind.
--
-- Why triggers are off: the rules refuse what a removal must do (a released package's records are
-- held, welds hold their ISO by RESTRICT, history is append-only) and each deleted row would write
-- an event. With session_replication_role = replica, for this transaction only, no trigger fires,
-- the foreign keys' own included; that is safe because every row of the tenant goes, and nothing
-- of another tenant refers to it (every key leads with tenant_id). Setting it needs a superuser:
-- weld-admin runs this on the root connection, and it fails for anyone else.
--
-- The tenant's live sessions are revoked first, triggers on, so every server drops their access
-- tokens at once (a removal) ; a reset keeps users and their sessions. Returns the rows deleted
-- per table, the tables with none left out.
create or replace function weld_private.clear_tenant(tenant uuid, whole boolean)
  returns table (table_name text, deleted bigint)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  setup constant text[] := array[
    'weld_private.tenant_origins', 'weld_public.users', 'weld_private.user_credentials',
    'weld_private.sessions', 'weld_private.refresh_tokens', 'weld_private.known_addresses',
    'weld_private.login_throttle', 'weld_private.signing_keys', 'weld_private.tenant_secrets',
    'weld_private.reporting_logins', 'weld_public.tenant_settings',
    'weld_public.weld_transition_rules', 'weld_public.examination_rules',
    'weld_public.qualification_range_rules', 'weld_public.procedure_thickness_rules',
    'weld_public.p_number_rules', 'weld_public.heat_treatment_rules',
    'weld_private.report_refreshes', 'weld_hidden.webhooks'];
  tbl regclass;
  count bigint;
begin
  if not exists (select from weld_public.tenants t where t.id = tenant) then
    raise exception 'no tenant %', tenant using errcode = 'WD001';
  end if;
  if whole then
    update weld_private.sessions s set revoked_at = now(), revoked_reason = 'tenant-removed'
     where s.tenant_id = tenant and s.revoked_at is null;
  end if;

  perform set_config('session_replication_role', 'replica', true);
  for tbl in
    select c.oid::regclass
      from pg_catalog.pg_class c
      join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id'
                                     and not a.attisdropped
     where n.nspname in ('weld_public', 'weld_hidden', 'weld_private')
       and c.relkind in ('r', 'p')
       and (whole or c.oid::regclass::text <> all (setup))
     order by 1
  loop
    execute format('delete from %s where tenant_id = $1', tbl) using tenant;
    get diagnostics count = row_count;
    if count > 0 then
      table_name := tbl::text;
      deleted := count;
      return next;
    end if;
  end loop;
  if whole then
    delete from weld_public.tenants t where t.id = tenant;
    table_name := 'weld_public.tenants';
    deleted := 1;
    return next;
  end if;
  perform set_config('session_replication_role', 'origin', true);
end
$$;

comment on function weld_private.clear_tenant(uuid, boolean) is
  'Deletes a tenant''s data (whole: everything, and the tenant) with triggers off for the transaction; for weld-admin on a superuser connection.';
--! EndIncluded functions/weld_private.clear_tenant.sql
--! Included functions/weld_private.enable_user.sql
-- weld-admin user enable: the account signs in again (a new login, new sessions: the ones ended by
-- disabling stay ended). The user name compares as citext, as in login_begin.
create or replace function weld_private.enable_user(tenant uuid, user_name public.citext) returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with account as (
    update weld_public.users u set active = true
     where u.tenant_id = tenant and u.user_name operator(public.=) enable_user.user_name
    returning u.id
  )
  select exists (select from account)
$$;
--! EndIncluded functions/weld_private.enable_user.sql
--! Included functions/weld_private.set_user_role.sql
-- weld-admin user role: a user's new role. The triggers on users do the rest, as for any path that
-- changes it: a changed role ends the user's sessions (its tokens carry the old role), and an
-- admin no longer an admin pauses the webhooks it registered.
create or replace function weld_private.set_user_role(
  tenant uuid, user_name public.citext, role weld_public.user_role
) returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with account as (
    update weld_public.users u set role = set_user_role.role
     where u.tenant_id = tenant and u.user_name operator(public.=) set_user_role.user_name
    returning u.id
  )
  select exists (select from account)
$$;
--! EndIncluded functions/weld_private.set_user_role.sql
