-- Superuser bootstrap: what migrations cannot do as the owner role.
--
-- Run as a role that may create roles and extensions (such as `postgres`), connected to the
-- service's database. The server runs it at every start when it has DATABASE_URL (or runs its
-- own embedded cluster); a DBA who keeps the owner and authenticator credentials apart runs it
-- once by hand:
--
--   psql "$ROOT_URL" -v ON_ERROR_STOP=1 -f migrations/bootstrap.sql
--   psql "$ROOT_URL" -c "alter role weld_owner password '...'; alter role weld_authenticator password '...'"
--
-- It is idempotent. Roles are cluster-wide, so every step checks before it acts: several
-- databases of one cluster (tests do this) can share the roles.
do $$
begin
  -- The owner of every object; runs the migrations. BYPASSRLS so that the few SECURITY DEFINER
  -- functions it owns (tenant lookup by origin, login) can read across the tenant boundary they
  -- exist to establish. It never serves API requests.
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_owner') then
    create role weld_owner login nosuperuser nocreatedb nocreaterole noinherit bypassrls;
  end if;

  -- The server's pool. NOINHERIT: it holds no table privilege of its own and must
  -- `set role` to one of the request roles below. NOBYPASSRLS: row security always applies.
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_authenticator') then
    create role weld_authenticator login nosuperuser nocreatedb nocreaterole noinherit nobypassrls;
  end if;

  -- Request roles, chosen per transaction; each is a member of the one before, so it has
  -- every privilege of the lesser roles.
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_anonymous') then
    create role weld_anonymous nologin nobypassrls;
  end if;
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_viewer') then
    create role weld_viewer nologin nobypassrls in role weld_anonymous;
  end if;
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_inspector') then
    create role weld_inspector nologin nobypassrls in role weld_viewer;
  end if;
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_engineer') then
    create role weld_engineer nologin nobypassrls in role weld_inspector;
  end if;
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_admin') then
    create role weld_admin nologin nobypassrls in role weld_engineer;
  end if;

  -- Owns the SECURITY DEFINER functions that act inside one tenant (the weld lifecycle):
  -- they need rights the request roles lack (update a weld's status, append history), but
  -- row security still applies to them, so even a bug in one cannot reach another tenant.
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_rules') then
    create role weld_rules nologin noinherit nobypassrls;
  end if;
  -- The owner creates those functions as weld_rules (`set role weld_rules` in a migration).
  if not pg_catalog.pg_has_role('weld_owner', 'weld_rules', 'member') then
    grant weld_rules to weld_owner;
  end if;
  -- What the reporting logins (`weld-admin reporting add`) share: SELECT on the report views
  -- (weld_reports) and the tables analysts join them with, and nothing else. Each login is a
  -- LOGIN role in this one, its tenant fixed by the login (weld_private.reporting_logins, read
  -- by weld_hidden.current_tenant_id).
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_reporting') then
    create role weld_reporting nologin noinherit nobypassrls;
  end if;
  -- Owns the one function that enforces the reporting logins' statement limit
  -- (weld_hidden.reap_reporting_sessions): it may see every session's state and cancel a
  -- non-superuser's statement. INHERIT, so its SECURITY DEFINER function has those rights.
  if not exists (select from pg_catalog.pg_roles where rolname = 'weld_reaper') then
    create role weld_reaper nologin inherit nobypassrls;
  end if;
  if not pg_catalog.pg_has_role('weld_reaper', 'pg_signal_backend', 'member') then
    grant pg_signal_backend to weld_reaper;
  end if;
  if not pg_catalog.pg_has_role('weld_reaper', 'pg_read_all_stats', 'member') then
    grant pg_read_all_stats to weld_reaper;
  end if;
  -- The owner creates that function as weld_reaper (`set role weld_reaper` in a migration).
  if not pg_catalog.pg_has_role('weld_owner', 'weld_reaper', 'member') then
    grant weld_reaper to weld_owner;
  end if;
end
$$;

-- The authenticator may become any request role (and nothing else).
do $$
declare
  request_role text;
begin
  foreach request_role in array array['weld_anonymous', 'weld_viewer', 'weld_inspector',
                                      'weld_engineer', 'weld_admin'] loop
    if not pg_catalog.pg_has_role('weld_authenticator', request_role, 'member') then
      execute format('grant %I to weld_authenticator', request_role);
    end if;
  end loop;
end
$$;

-- Database-level rights. PUBLIC loses CREATE and TEMP; the owner creates schemas, the
-- authenticator only connects.
do $$
begin
  execute format('revoke all on database %I from public', current_database());
  execute format('grant connect, create, temporary on database %I to weld_owner', current_database());
  execute format('grant connect on database %I to weld_authenticator', current_database());
  -- The import's SECURITY DEFINER functions (weld_rules') keep its rows in temporary tables.
  execute format('grant temporary on database %I to weld_rules', current_database());
end
$$;

-- Advisory locks are the service's: its functions take them (lines, imports, the outbox) through
-- the owner and weld_rules. A request role that could take them could hold them and stall others.
-- Every advisory-lock function of the catalog (lock, try, unlock; session and transaction; shared
-- or not), found rather than listed, so a PostgreSQL that adds one cannot leave it open.
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_catalog.pg_proc p
            where p.pronamespace = 'pg_catalog'::regnamespace and p.proname ~ '^pg_.*advisory'
  loop
    execute format('revoke execute on function %s from public', f);
    execute format('grant execute on function %s to weld_owner, weld_rules', f);
  end loop;
end
$$;

-- Large objects: the service keeps none. Whoever may create one owns it, may write into it
-- without any table's grant and fill the disk, and a role that owns one cannot be dropped (a
-- reporting login, `weld-admin reporting remove`), so no one but the owner may create them.
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_catalog.pg_proc p
            where p.pronamespace = 'pg_catalog'::regnamespace
              and p.proname in ('lo_create', 'lo_creat', 'lo_from_bytea', 'lo_import')
  loop
    execute format('revoke execute on function %s from public', f);
  end loop;
end
$$;

revoke all on schema public from public;
grant usage on schema public to weld_owner, weld_anonymous, weld_rules;

-- No function is executable by PUBLIC. PostgreSQL grants EXECUTE to PUBLIC on every new function
-- unless the default privileges of the role that creates it say otherwise, so they say so for
-- both roles that create functions: the owner, and weld_rules (migrations `set role weld_rules`
-- to create the SECURITY DEFINER functions it owns). Default privileges belong to one database,
-- so this runs here, before any migration; migration 000006 says the same for databases that
-- were bootstrapped before these lines existed.
--
-- The owner may execute what weld_rules creates. It attaches weld_rules' trigger functions to its
-- tables (creating a trigger needs EXECUTE on the function), and migrations 000002 and 000003
-- grant on weld_rules' functions as the owner: without the grant option that grants nothing and
-- only warns (000006 grants as weld_rules instead), but without any privilege it is an error.
alter default privileges for role weld_owner revoke execute on functions from public;
alter default privileges for role weld_rules revoke execute on functions from public;
alter default privileges for role weld_rules grant execute on functions to weld_owner;

-- Extensions live in `public`; functions that pin search_path name them as public.citext etc.
create extension if not exists citext with schema public;
create extension if not exists btree_gist with schema public;

-- PostgreSQL 15 has no pg_input_is_valid (it is 16's). Migrations 000008 to 000021 call it, and
-- a committed migration's text is fixed, so on 15 a stand-in by that name in `public` (on the
-- migrations' search_path) lets them run. Migration 000022 rewrote the functions that called it
-- (weld_private.is_date), so nothing calls the stand-in once the migrations are done.
do $$
begin
  if current_setting('server_version_num')::int < 160000 then
    create or replace function public.pg_input_is_valid(value text, type_name text) returns boolean
      language plpgsql stable
      set search_path = pg_catalog, pg_temp
    as $f$
    begin
      execute format('select %L::%s', value, type_name::regtype);
      return true;
    exception when data_exception then
      return false;
    end
    $f$;
    revoke execute on function public.pg_input_is_valid(text, text) from public;
    grant execute on function public.pg_input_is_valid(text, text) to weld_owner, weld_rules;
  end if;
end
$$;
