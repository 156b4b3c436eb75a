--! Previous: sha1:0cfb9a52f962aa01fd48458281ecabfd0d943e04
--! Hash: sha1:2171ba5c3155b6c5fc87f78fc3ac07ff4ca49270
--! Message: the files of removed tenants, led by tenant_id under row security

-- weld_private.attachment_files_left as every table of the service: tenant_id first, row security
-- enabled and forced (no request role reads it; the sweep runs as the owner), distributed by
-- tenant under Citus. weld_private.clear_tenant, which deletes every row with the tenant's
-- tenant_id, notes the files after its deletions.
drop table if exists weld_private.attachment_files_left;
create table weld_private.attachment_files_left (
  tenant_id uuid not null,
  sha256    text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  primary key (tenant_id, sha256)
);
comment on table weld_private.attachment_files_left is
  'Files of removed tenants still in the attachment store: the housekeeping removes them (weld_hidden.sweep_attachment_files).';
alter table weld_private.attachment_files_left enable row level security;
alter table weld_private.attachment_files_left force row level security;

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
    'weld_private.report_refreshes', 'weld_hidden.webhooks',
    -- (Kept, so that the housekeeping removes them from the store: unreferenced once the
    -- attachments are gone, an hour after they were put.)
    'weld_hidden.attachment_files'];
  tables regclass[];
  tbl regclass;
  count bigint;
  left_over boolean;
  files text[];
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
  -- Its files in the store, for the housekeeping to remove once the rows are gone (nothing can
  -- put them again: the tenant is gone).
  files := array(select f.sha256 from weld_hidden.attachment_files f where f.tenant_id = tenant);
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
    insert into weld_private.attachment_files_left (tenant_id, sha256)
    select tenant, f from unnest(files) f
        on conflict do nothing;
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
--! Included functions/weld_hidden.sweep_attachment_files.sql
-- The files no attachment refers to any more, across tenants, at most `max_files` (and as many of
-- the files of removed tenants, weld_private.attachment_files_left): deleted from their tables
-- and returned, so that the caller (the housekeeping, server/
-- housekeeping.ts) removes each from the store before it commits. The rows stay locked until
-- then: an upload of the same file waits, and puts the bytes again after. A file put within the
-- last hour is left alone (an upload may have stored it and not yet committed its attachment).
-- SECURITY DEFINER as the owner (BYPASSRLS); granted to the authenticator only.
create or replace function weld_hidden.sweep_attachment_files(max_files integer default 100)
  returns table (tenant_id uuid, sha256 text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with left_behind as (
    -- The files of tenants removed (weld_private.clear_tenant).
    delete from weld_private.attachment_files_left l
     where (l.tenant_id, l.sha256) in (
       select x.tenant_id, x.sha256 from weld_private.attachment_files_left x
        limit max_files
          for update skip locked)
    returning l.tenant_id, l.sha256
  ), unused as (
    select f.tenant_id, f.sha256
      from weld_hidden.attachment_files f
     where f.put_at < now() - interval '1 hour'
       and not exists (select from weld_public.attachments a
                        where a.tenant_id = f.tenant_id and a.sha256 = f.sha256)
     order by f.put_at
     limit max_files
       for update skip locked
  ), swept as (
    delete from weld_hidden.attachment_files f
     using unused u
     where f.tenant_id = u.tenant_id and f.sha256 = u.sha256
    returning f.tenant_id, f.sha256
  )
  select s.tenant_id, s.sha256 from swept s
  union all
  select l.tenant_id, l.sha256 from left_behind l
$$;

grant execute on function weld_hidden.sweep_attachment_files(integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.sweep_attachment_files.sql
