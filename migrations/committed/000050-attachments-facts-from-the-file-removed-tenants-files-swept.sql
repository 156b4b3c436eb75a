--! Previous: sha1:e554ef8dfd96debf49aabe8b33797b6438c89e2d
--! Hash: sha1:0cfb9a52f962aa01fd48458281ecabfd0d943e04
--! Message: attachments: facts from the file, removed tenants' files swept

-- A review of F20 from the attacker's side.
--
-- 1. An attachment's size and type come from its file (weld_private.tg_attachments__file_facts),
--    and GraphQL creates none: files come in through POST /attachments, which judges their bytes.
--    (An inspector's createAttachment named any stored file with a type and size of its choosing:
--    a CSV served as a PDF, a download cut short, the dossier's size cap passed.)
comment on table weld_public.attachments is
  E'@aggregates on\n@behavior -insert\nA file attached to one record: a PDF, PNG, JPEG or CSV, its type judged by its bytes. Uploaded by POST /attachments (multipart/form-data); its bytes are GET /attachments/{id}/content.';

-- 2. The files of a removed tenant: its rows go with it, so the sweep kept no trace of what to
--    take from the store. weld_private.clear_tenant notes them here (a reset keeps the files'
--    rows: unreferenced, they are swept as any other).
create table if not exists weld_private.attachment_files_left (
  of_tenant uuid not null,
  sha256    text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  primary key (of_tenant, sha256)
);
comment on table weld_private.attachment_files_left is
  'Files of removed tenants still in the attachment store: the housekeeping removes them (weld_hidden.sweep_attachment_files).';

-- 3. Each record's attachments as GraphQL fields (Iso.attachments, ...): PostGraphile offers a
--    backward relation only over an index it can use, and a partial one is not.
drop index if exists weld_public.attachments_iso_idx;
drop index if exists weld_public.attachments_weld_idx;
drop index if exists weld_public.attachments_ndt_record_idx;
drop index if exists weld_public.attachments_inspection_idx;
drop index if exists weld_public.attachments_test_package_idx;
drop index if exists weld_public.attachments_pqr_idx;
drop index if exists weld_public.attachments_wps_idx;
drop index if exists weld_public.attachments_welder_qualification_idx;
drop index if exists weld_public.attachments_punch_item_idx;
create index if not exists attachments_iso_idx on weld_public.attachments (tenant_id, iso_id);
create index if not exists attachments_weld_idx on weld_public.attachments (tenant_id, weld_id);
create index if not exists attachments_ndt_record_idx on weld_public.attachments (tenant_id, ndt_record_id);
create index if not exists attachments_inspection_idx on weld_public.attachments (tenant_id, inspection_id);
create index if not exists attachments_test_package_idx on weld_public.attachments (tenant_id, test_package_id);
create index if not exists attachments_pqr_idx on weld_public.attachments (tenant_id, pqr_id);
create index if not exists attachments_wps_idx on weld_public.attachments (tenant_id, wps_id);
create index if not exists attachments_welder_qualification_idx
  on weld_public.attachments (tenant_id, welder_qualification_id);
create index if not exists attachments_punch_item_idx on weld_public.attachments (tenant_id, punch_item_id);

-- 4. A file name holds no invisible formatting characters either (a right-to-left override makes
--    report<RLO>fdp.exe read as reportexe.pdf).
alter table weld_public.attachments drop constraint if exists attachments_file_name_visible;
alter table weld_public.attachments add constraint attachments_file_name_visible
  check (file_name !~ '[\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]');
comment on constraint attachments_file_name_visible on weld_public.attachments is
  'must be a file name (no path, no control or formatting characters)';

--! Included functions/weld_private.tg_attachments__file_facts.sql
-- An attachment's size and type are its file's, whatever the writer said: a row written by SQL
-- (a DBA, a client of the tables) cannot claim a PDF of a CSV's bytes or a size the store does not
-- hold (GET /attachments/{id}/content sends that many bytes). The file's row is the one the
-- upload wrote after hashing and judging the bytes (rest-adapter/attachments.ts).
create or replace function weld_private.tg_attachments__file_facts() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  select f.size_bytes, f.content_type into new.size_bytes, new.content_type
    from weld_hidden.attachment_files f
   where f.tenant_id = new.tenant_id and f.sha256 = new.sha256;
  return new; -- (no file: the foreign key refuses the row)
end
$$;

create or replace trigger _100_file_facts before insert or update of sha256, size_bytes, content_type
  on weld_public.attachments
  for each row execute function weld_private.tg_attachments__file_facts();
--! EndIncluded functions/weld_private.tg_attachments__file_facts.sql
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
     where (l.of_tenant, l.sha256) in (
       select x.of_tenant, x.sha256 from weld_private.attachment_files_left x
        limit max_files
          for update skip locked)
    returning l.of_tenant, l.sha256
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
  select l.of_tenant, l.sha256 from left_behind l
$$;

grant execute on function weld_hidden.sweep_attachment_files(integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.sweep_attachment_files.sql
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
  if whole then
    -- Its files in the store, for the housekeeping to remove (nothing can put them again: the
    -- tenant is gone).
    insert into weld_private.attachment_files_left (of_tenant, sha256)
    select f.tenant_id, f.sha256 from weld_hidden.attachment_files f where f.tenant_id = tenant
        on conflict do nothing;
  end if;
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
