--! Previous: sha1:d5eed798ac5af188ddb317383355dd95a92b67e6
--! Hash: sha1:e554ef8dfd96debf49aabe8b33797b6438c89e2d
--! Message: attachments, weld map, punch lists, PUNCH_A_OPEN, turnover dossier

-- F20, documents and turnover.
--
-- 1. Attachments: files (PDF, PNG, JPEG, CSV) attached to one record each. The bytes live in an
--    object store (S3, or files under DATA_DIR: rest-adapter/attachments.ts), keyed by tenant and
--    SHA-256: the same file attached twice is stored once. weld_hidden.attachment_files counts
--    what is stored; weld_public.attachments is what is attached where. Deleting a record deletes
--    its attachments (the rows); a file is removed from the store only when no attachment of its
--    tenant refers to it any more (weld_hidden.sweep_attachment_files, from the housekeeping).
create table if not exists weld_hidden.attachment_files (
  tenant_id    uuid not null default weld_hidden.current_tenant_id()
               references weld_public.tenants on delete cascade,
  sha256       text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  size_bytes   bigint not null check (size_bytes between 1 and 1073741824),
  content_type text not null
               check (content_type in ('application/pdf', 'image/png', 'image/jpeg', 'text/csv')),
  -- Set by every upload of the file: the sweep leaves a file put within the last hour alone, so an
  -- upload in flight (stored, its attachment not yet committed) never loses its bytes.
  put_at       timestamptz not null default now(),
  primary key (tenant_id, sha256)
);
comment on table weld_hidden.attachment_files is
  'The files in the attachment store, one per tenant and SHA-256 (content-addressed).';

create table if not exists weld_public.attachments (
  tenant_id                uuid not null default weld_hidden.current_tenant_id()
                           references weld_public.tenants on delete cascade,
  id                       uuid not null default gen_random_uuid(),
  sha256                   text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  file_name                text not null
                           check (char_length(file_name) between 1 and 255
                                  and file_name !~ '[[:cntrl:]/\\]' and file_name not in ('.', '..')),
  content_type             text not null
                           check (content_type in ('application/pdf', 'image/png', 'image/jpeg', 'text/csv')),
  size_bytes               bigint not null check (size_bytes between 1 and 1073741824),
  description              text check (char_length(description) <= 2000),
  -- What it is attached to: exactly one of these.
  iso_id                   uuid,
  weld_id                  uuid,
  ndt_record_id            uuid,
  inspection_id            uuid,
  test_package_id          uuid,
  pqr_id                   uuid,
  wps_id                   uuid,
  welder_qualification_id  uuid,
  punch_item_id            uuid,
  uploaded_by              uuid default weld_hidden.current_user_id(),
  version                  integer not null default 1 check (version >= 1),
  created_at               timestamptz not null default now(),
  updated_at               timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint attachments_one_record check (
    num_nonnulls(iso_id, weld_id, ndt_record_id, inspection_id, test_package_id, pqr_id, wps_id,
                 welder_qualification_id, punch_item_id) = 1),
  constraint attachments_file_fkey
    foreign key (tenant_id, sha256) references weld_hidden.attachment_files on delete restrict,
  constraint attachments_iso_fkey
    foreign key (tenant_id, iso_id) references weld_public.isos on delete cascade,
  constraint attachments_weld_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete cascade,
  constraint attachments_ndt_record_fkey
    foreign key (tenant_id, ndt_record_id) references weld_public.ndt_records on delete cascade,
  constraint attachments_inspection_fkey
    foreign key (tenant_id, inspection_id) references weld_public.inspections on delete cascade,
  constraint attachments_test_package_fkey
    foreign key (tenant_id, test_package_id) references weld_public.test_packages on delete cascade,
  constraint attachments_pqr_fkey
    foreign key (tenant_id, pqr_id) references weld_public.pqrs on delete cascade,
  constraint attachments_wps_fkey
    foreign key (tenant_id, wps_id) references weld_public.wps on delete cascade,
  constraint attachments_welder_qualification_fkey
    foreign key (tenant_id, welder_qualification_id) references weld_public.welder_qualifications on delete cascade,
  constraint attachments_uploaded_by_fkey
    foreign key (tenant_id, uploaded_by) references weld_public.users
);
-- One index per record kind (each list filters by one; each cascade deletes by one).
create index if not exists attachments_iso_idx on weld_public.attachments (tenant_id, iso_id) where iso_id is not null;
create index if not exists attachments_weld_idx on weld_public.attachments (tenant_id, weld_id) where weld_id is not null;
create index if not exists attachments_ndt_record_idx on weld_public.attachments (tenant_id, ndt_record_id) where ndt_record_id is not null;
create index if not exists attachments_inspection_idx on weld_public.attachments (tenant_id, inspection_id) where inspection_id is not null;
create index if not exists attachments_test_package_idx on weld_public.attachments (tenant_id, test_package_id) where test_package_id is not null;
create index if not exists attachments_pqr_idx on weld_public.attachments (tenant_id, pqr_id) where pqr_id is not null;
create index if not exists attachments_wps_idx on weld_public.attachments (tenant_id, wps_id) where wps_id is not null;
create index if not exists attachments_welder_qualification_idx on weld_public.attachments (tenant_id, welder_qualification_id) where welder_qualification_id is not null;
create index if not exists attachments_punch_item_idx on weld_public.attachments (tenant_id, punch_item_id) where punch_item_id is not null;
create index if not exists attachments_sha256_idx on weld_public.attachments (tenant_id, sha256);
comment on table weld_public.attachments is
  E'@aggregates on\nA file attached to one record: a PDF, PNG, JPEG or CSV, its type judged by its bytes. Uploaded by POST /attachments (multipart/form-data); its bytes are GET /attachments/{id}/content.';
comment on column weld_public.attachments.sha256 is 'The SHA-256 of its bytes, hex: the file''s name in the store.';
comment on column weld_public.attachments.iso_id is 'The ISO it is attached to, or null.';
comment on column weld_public.attachments.weld_id is 'The weld it is attached to, or null.';
comment on column weld_public.attachments.ndt_record_id is 'The NDT record it is attached to, or null.';
comment on column weld_public.attachments.inspection_id is 'The inspection it is attached to, or null.';
comment on column weld_public.attachments.test_package_id is 'The test package it is attached to, or null.';
comment on column weld_public.attachments.pqr_id is 'The PQR it is attached to, or null.';
comment on column weld_public.attachments.wps_id is 'The WPS it is attached to, or null.';
comment on column weld_public.attachments.welder_qualification_id is 'The welder qualification it is attached to, or null.';
comment on column weld_public.attachments.punch_item_id is 'The punch item it is attached to, or null.';
comment on column weld_public.attachments.file_name is 'The file''s name as uploaded, without its path.';
comment on column weld_public.attachments.content_type is 'What its bytes are: application/pdf, image/png, image/jpeg or text/csv.';
comment on column weld_public.attachments.size_bytes is 'Its size in bytes.';
comment on column weld_public.attachments.uploaded_by is 'The user who attached it.';
comment on constraint attachments_iso_fkey on weld_public.attachments is E'@fieldName iso\n@foreignFieldName attachments';
comment on constraint attachments_weld_fkey on weld_public.attachments is E'@fieldName weld\n@foreignFieldName attachments';
comment on constraint attachments_ndt_record_fkey on weld_public.attachments is E'@fieldName ndtRecord\n@foreignFieldName attachments';
comment on constraint attachments_inspection_fkey on weld_public.attachments is E'@fieldName inspection\n@foreignFieldName attachments';
comment on constraint attachments_test_package_fkey on weld_public.attachments is E'@fieldName testPackage\n@foreignFieldName attachments';
comment on constraint attachments_pqr_fkey on weld_public.attachments is E'@fieldName pqr\n@foreignFieldName attachments';
comment on constraint attachments_wps_fkey on weld_public.attachments is E'@fieldName wps\n@foreignFieldName attachments';
comment on constraint attachments_welder_qualification_fkey on weld_public.attachments is E'@fieldName welderQualification\n@foreignFieldName attachments';
comment on constraint attachments_uploaded_by_fkey on weld_public.attachments is E'@fieldName uploader\n@foreignFieldName attachmentsUploaded';
comment on constraint attachments_file_fkey on weld_public.attachments is '@omit';

-- 3. Punch lists: what a walkdown of a test package found. Category A blocks its release
--    (readiness PUNCH_A_OPEN); B is done later, the package released. Numbered per package.
create table if not exists weld_public.punch_items (
  tenant_id        uuid not null default weld_hidden.current_tenant_id()
                   references weld_public.tenants on delete cascade,
  id               uuid not null default gen_random_uuid(),
  test_package_id  uuid not null,
  item_number      integer not null check (item_number between 1 and 99999),
  category         text not null check (category in ('A', 'B')),
  description      text not null check (char_length(description) between 1 and 2000),
  raised_by        uuid default weld_hidden.current_user_id(),
  raised_on        date not null default current_date,
  closed_on        date,
  closed_by        uuid,
  closing_note     text check (char_length(closing_note) <= 2000),
  version          integer not null default 1 check (version >= 1),
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint punch_items_number_key unique (tenant_id, test_package_id, item_number),
  constraint punch_items_closed_after_raised check (closed_on >= raised_on),
  constraint punch_items_test_package_fkey
    foreign key (tenant_id, test_package_id) references weld_public.test_packages on delete cascade,
  constraint punch_items_raised_by_fkey
    foreign key (tenant_id, raised_by) references weld_public.users,
  constraint punch_items_closed_by_fkey
    foreign key (tenant_id, closed_by) references weld_public.users
);
comment on constraint punch_items_closed_after_raised on weld_public.punch_items is
  'must be on or after the day it was raised';
select weld_private.add_calendar_check('weld_public.punch_items', 'raised_on');
select weld_private.add_calendar_check('weld_public.punch_items', 'closed_on');
comment on table weld_public.punch_items is
  E'@aggregates on\nA punch item of a test package: category A must be closed before the package is released (readiness PUNCH_A_OPEN), B may be closed after.';
comment on column weld_public.punch_items.raised_on is 'The day it was raised (default today).';
comment on column weld_public.punch_items.item_number is E'@hasDefault\nIts number in the package: the next one unless given.';
comment on column weld_public.punch_items.category is 'A blocks the package''s release; B does not.';
comment on column weld_public.punch_items.raised_by is 'The user who raised it.';
comment on column weld_public.punch_items.closed_on is 'The day it was closed; null while open. Setting it records closed_by; null reopens it.';
comment on column weld_public.punch_items.closed_by is 'The user who closed it (set when closed_on is).';
comment on constraint punch_items_test_package_fkey on weld_public.punch_items is
  E'@fieldName testPackage\n@foreignFieldName punchItems';
comment on constraint punch_items_raised_by_fkey on weld_public.punch_items is
  E'@fieldName raiser\n@foreignFieldName punchItemsRaised';
comment on constraint punch_items_closed_by_fkey on weld_public.punch_items is
  E'@fieldName closer\n@foreignFieldName punchItemsClosed';

alter table weld_public.attachments drop constraint if exists attachments_punch_item_fkey;
alter table weld_public.attachments add constraint attachments_punch_item_fkey
  foreign key (tenant_id, punch_item_id) references weld_public.punch_items on delete cascade;
comment on constraint attachments_punch_item_fkey on weld_public.attachments is
  E'@fieldName punchItem\n@foreignFieldName attachments';

-- 2. The weld map: an ISO's drawing (an attachment of that ISO) and each weld's place on it, as
--    fractions of the page's width and height from its top-left corner.
-- (Held by triggers, not a foreign key: one from isos to attachments, which refer to isos, would
-- be a cycle, and a Citus deployment creates tables in the order their keys allow:
-- weld_private.tg_isos__drawing.)
alter table weld_public.isos add column if not exists drawing_id uuid;
comment on column weld_public.isos.drawing_id is
  'Its drawing: an attachment of this ISO (a PDF or an image) on which its welds are marked; set by a change, as an ISO being created has no attachments yet.';
grant insert (drawing_id), update (drawing_id) on weld_public.isos to weld_engineer;
-- (A drawing's attachment deleted, weld_rules clears it: weld_private.tg_attachments__drawing_gone.)
grant update (drawing_id) on weld_public.isos to weld_rules;

alter table weld_public.welds add column if not exists map_page integer;
alter table weld_public.welds add column if not exists map_x numeric(5, 4);
alter table weld_public.welds add column if not exists map_y numeric(5, 4);
alter table weld_public.welds drop constraint if exists welds_map_x_is_a_number;
alter table weld_public.welds add constraint welds_map_x_is_a_number check (map_x <> 'NaN');
alter table weld_public.welds drop constraint if exists welds_map_y_is_a_number;
alter table weld_public.welds add constraint welds_map_y_is_a_number check (map_y <> 'NaN');
alter table weld_public.welds drop constraint if exists welds_map_place;
alter table weld_public.welds add constraint welds_map_place check (
  num_nulls(map_page, map_x, map_y) in (0, 3)
  and map_page between 1 and 9999 and map_x between 0 and 1 and map_y between 0 and 1);
comment on constraint welds_map_place on weld_public.welds is
  'a place on the drawing is a page from 1 and x and y from 0 to 1, all three or none';
comment on column weld_public.welds.map_page is 'The page of its ISO''s drawing it is marked on (from 1).';
comment on column weld_public.welds.map_x is 'Its mark on the drawing: from the left edge, as a fraction of the page''s width (0 to 1).';
comment on column weld_public.welds.map_y is 'Its mark on the drawing: from the top edge, as a fraction of the page''s height (0 to 1).';
-- Inspectors place welds on the drawing as they walk the line (tapping in the web app).
grant update (map_page, map_x, map_y) on weld_public.welds to weld_inspector;
grant insert (map_page, map_x, map_y) on weld_public.welds to weld_engineer;

-- Each tenant's limit on one file, in bytes (the service's ATTACHMENT_MAX_BYTES caps it).
alter table weld_public.tenant_settings
  add column if not exists attachment_max_bytes bigint not null default 26214400
  check (attachment_max_bytes between 1 and 1073741824);
comment on column weld_public.tenant_settings.attachment_max_bytes is
  'The largest file the tenant may attach, in bytes (default 25 MiB; the service''s ATTACHMENT_MAX_BYTES caps it).';

-- Row security, scopes and grants.
select weld_private.secure_tenant_table(t)
  from unnest(array['weld_hidden.attachment_files', 'weld_public.attachments',
                    'weld_public.punch_items']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');
do $$
declare
  data_read constant text := '{welds:read,welds:write,ndt:write,packages:write,imports:write}';
  data_write constant text := '{welds:write,ndt:write,packages:write}';
  area record;
begin
  for area in
    select t.tbl, t.read_scopes, t.write_scopes
      from (values
        ('weld_hidden.attachment_files', data_read, data_write),
        ('weld_public.attachments', data_read, data_write),
        ('weld_public.punch_items', data_read, '{packages:write}')
      ) as t (tbl, read_scopes, write_scopes)
  loop
    execute format('drop policy if exists scope_read on %1$s; drop policy if exists scope_insert on %1$s;
                    drop policy if exists scope_update on %1$s; drop policy if exists scope_delete on %1$s',
                   area.tbl);
    execute format(
      'create policy scope_read on %s as restrictive for select to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.read_scopes);
    execute format(
      'create policy scope_insert on %s as restrictive for insert to weld_viewer
         with check (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.write_scopes);
    execute format(
      'create policy scope_update on %s as restrictive for update to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.write_scopes);
    execute format(
      'create policy scope_delete on %s as restrictive for delete to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.write_scopes);
  end loop;
end
$$;

grant select on weld_hidden.attachment_files, weld_public.attachments, weld_public.punch_items
   to weld_viewer, weld_rules;
-- Inspectors attach files (an RT report, a photo of a weld); engineers remove them.
grant insert (sha256, size_bytes, content_type), update (put_at)
   on weld_hidden.attachment_files to weld_inspector;
grant insert (sha256, file_name, content_type, size_bytes, description, iso_id, weld_id, ndt_record_id,
              inspection_id, test_package_id, pqr_id, wps_id, welder_qualification_id, punch_item_id),
      update (file_name, description)
   on weld_public.attachments to weld_inspector;
grant delete on weld_public.attachments to weld_engineer;
-- Inspectors raise and close punch items on walkdowns; engineers delete them (while open).
grant insert (test_package_id, item_number, category, description, raised_on, closed_on, closing_note),
      update (category, description, raised_on, closed_on, closing_note)
   on weld_public.punch_items to weld_inspector;
grant delete on weld_public.punch_items to weld_engineer;

--! Included functions/weld_hidden.touch.sql
-- updated_at on every update; for tables with a version, the version too (optimistic locking).
create or replace function weld_hidden.touch() returns trigger
  language plpgsql
as $$
begin
  new.updated_at := now();
  if tg_nargs > 0 and tg_argv[0] = 'versioned' then
    new.version := old.version + 1;
  end if;
  return new;
end
$$;

create or replace trigger _100_touch before update on weld_public.inspections
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.isos
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.ndt_records
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.pqrs
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.tenant_settings
  for each row execute function weld_hidden.touch();
create or replace trigger _100_touch before update on weld_public.test_packages
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.welder_qualifications
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.welders
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.wps
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger film_intervals_touch before update on weld_public.film_intervals for each row execute function weld_hidden.touch();
create or replace trigger users_touch before update on weld_public.users for each row execute function weld_hidden.touch();
create or replace trigger welds_touch before update on weld_public.welds
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.pwht_records
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.hardness_readings
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.components
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.filler_lots
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.weld_fillers
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.attachments
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.punch_items
  for each row execute function weld_hidden.touch('versioned');
--! EndIncluded functions/weld_hidden.touch.sql
--! Included functions/weld_private.tg_isos__drawing.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- An ISO's drawing (isos.drawing_id) is one of its own attachments, a PDF or an image: set to
-- anything else, WD007 naming drawingId. Held here rather than by a foreign key (see the
-- migration that added the column).
create or replace function weld_private.tg_isos__drawing() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.drawing_id is not null and not exists (
       select from weld_public.attachments a
        where a.tenant_id = new.tenant_id and a.id = new.drawing_id and a.iso_id = new.id
          and a.content_type in ('application/pdf', 'image/png', 'image/jpeg')) then
    perform weld_private.invalid_input(
      'drawingId: must be a PDF or an image attached to this ISO', '/drawingId');
  end if;
  return new;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _150_drawing before insert or update of drawing_id on weld_public.isos
  for each row execute function weld_private.tg_isos__drawing();
--! EndIncluded functions/weld_private.tg_isos__drawing.sql
--! Included functions/weld_private.tg_attachments__drawing_gone.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A drawing's attachment deleted (itself, or with its ISO's deletion), the ISO has no drawing.
create or replace function weld_private.tg_attachments__drawing_gone() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update weld_public.isos i
     set drawing_id = null
   where i.tenant_id in (select o.tenant_id from old_rows o where o.iso_id is not null)
     and i.drawing_id in (select o.id from old_rows o where o.iso_id is not null);
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _700_drawing_gone after delete on weld_public.attachments
  referencing old table as old_rows
  for each statement execute function weld_private.tg_attachments__drawing_gone();
--! EndIncluded functions/weld_private.tg_attachments__drawing_gone.sql
--! Included functions/weld_private.tg_punch_items__number_and_closer.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
-- (SECURITY DEFINER: advisory locks are not the request roles' to take.)
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A punch item's number and who closed it, as it is written:
--   - raised without a number, it takes the next one of its package (one writer per package at a
--     time: an advisory lock, so two items raised at once get two numbers);
--   - closed (closed_on set), closed_by is the user closing it; reopened (closed_on cleared), it
--     is cleared. The client never writes closed_by itself.
create or replace function weld_private.tg_punch_items__number_and_closer() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' and new.item_number is null then
    perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(
      new.tenant_id::text || '/punch/' || new.test_package_id::text, 0));
    select coalesce(max(p.item_number), 0) + 1 into new.item_number
      from weld_public.punch_items p
     where p.tenant_id = new.tenant_id and p.test_package_id = new.test_package_id;
  end if;
  if new.closed_on is null then
    new.closed_by := null;
  elsif tg_op = 'INSERT' or old.closed_on is null then
    new.closed_by := weld_hidden.current_user_id();
  end if;
  return new;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_number_and_closer before insert or update on weld_public.punch_items
  for each row execute function weld_private.tg_punch_items__number_and_closer();
--! EndIncluded functions/weld_private.tg_punch_items__number_and_closer.sql
--! Included functions/weld_private.tg_punch_items__package_held.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A package's punch list after each statement that writes it:
--   - an open A item on a package that is released, tested or closed would leave it not ready
--     (PUNCH_A_OPEN): refused as every such change is (weld_private.hold_released_packages, WD011);
--   - an item is deleted only while its package is open (WD008): after that it is the record of
--     the walkdown; close it instead.
create or replace function weld_private.tg_punch_items__package_held() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  held_number text;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  if tg_op = 'DELETE' then
    select p.package_number into held_number
      from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id()
       and p.id in (select o.test_package_id from old_rows o)
       and p.state <> 'open'
     order by p.package_number
     limit 1;
    if found then
      raise exception 'test package % is not open: its punch items stay (close one instead of deleting it)',
        held_number using errcode = 'WD008';
    end if;
    return null;
  end if;
  perform weld_private.hold_released_packages(
    array(select distinct n.test_package_id from new_rows n
           where n.category = 'A' and n.closed_on is null),
    'an open category A punch item');
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _600_package_held_insert after insert on weld_public.punch_items
  referencing new table as new_rows
  for each statement execute function weld_private.tg_punch_items__package_held();
create or replace trigger _600_package_held_update after update on weld_public.punch_items
  referencing new table as new_rows
  for each statement execute function weld_private.tg_punch_items__package_held();
create or replace trigger _600_package_held_delete after delete on weld_public.punch_items
  referencing old table as old_rows
  for each statement execute function weld_private.tg_punch_items__package_held();
--! EndIncluded functions/weld_private.tg_punch_items__package_held.sql
--! Included functions/weld_hidden.sweep_attachment_files.sql
-- The files no attachment refers to any more, across tenants, at most `max_files`: deleted from
-- weld_hidden.attachment_files and returned, so that the caller (the housekeeping, server/
-- housekeeping.ts) removes each from the store before it commits. The rows stay locked until
-- then: an upload of the same file waits, and puts the bytes again after. A file put within the
-- last hour is left alone (an upload may have stored it and not yet committed its attachment).
-- SECURITY DEFINER as the owner (BYPASSRLS); granted to the authenticator only.
create or replace function weld_hidden.sweep_attachment_files(max_files integer default 100)
  returns table (tenant_id uuid, sha256 text)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with unused as (
    select f.tenant_id, f.sha256
      from weld_hidden.attachment_files f
     where f.put_at < now() - interval '1 hour'
       and not exists (select from weld_public.attachments a
                        where a.tenant_id = f.tenant_id and a.sha256 = f.sha256)
     order by f.put_at
     limit max_files
       for update skip locked
  )
  delete from weld_hidden.attachment_files f
   using unused u
   where f.tenant_id = u.tenant_id and f.sha256 = u.sha256
  returning f.tenant_id, f.sha256
$$;

grant execute on function weld_hidden.sweep_attachment_files(integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.sweep_attachment_files.sql
--! Included functions/weld_public.test_packages_readiness_reasons.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.test_packages_readiness_reasons(test_package weld_public.test_packages)
  returns setof weld_public.readiness_reason
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
  -- A custom plan at every call: PostgreSQL 18 caches the plans of SQL functions per session, and
  -- after five calls on a pooled connection the generic one (tenant and package unknown) read
  -- whole tables: 0.8 to 1.1 s for an 800-weld package's readiness instead of 0.17 s.
  set plan_cache_mode = force_custom_plan
as $$
  with members as (
    select pw.weld_id from weld_public.test_package_welds pw
     where pw.tenant_id = test_package.tenant_id and pw.test_package_id = test_package.id
    union
    select w.id
      from weld_public.test_package_isos pi
      join weld_public.welds w on w.tenant_id = pi.tenant_id and w.iso_id = pi.iso_id
     where pi.tenant_id = test_package.tenant_id and pi.test_package_id = test_package.id
  ), pw as (
    select w.*, w as weld, i.iso_number, i.line_number
      from members m
      join weld_public.welds w on w.tenant_id = test_package.tenant_id and w.id = m.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.status <> 'VOIDED'
  ), lots as (
    select * from weld_private.lot_status(
      weld_private.rule_methods(), array(select distinct pw.line_number from pw), array(select pw.id from pw))
  ), lot_welds as (
    -- The candidates of those lots, with their selections and whether each is met.
    select c.*, s.id as selection_id, s.tier, s.seed, s.reason,
           s.id is not null and not exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = test_package.tenant_id and e.weld_id = c.weld_id
                and e.method = any(c.closes) and e.examined_on >= c.welded_on) as open
      from weld_private.lot_candidates(array(select distinct l.method from lots l),
                                       array(select distinct pw.line_number from pw)) c
      join lots l on l.method = c.method and l.lot = c.lot
      left join weld_public.examination_selections s
        on s.tenant_id = test_package.tenant_id and s.method = c.method and s.weld_id = c.weld_id
  ), lot_isos as (
    -- Each lot's first ISO (by number) among the package's, to name in a shortfall.
    select distinct on (c.method, c.lot) c.method, c.lot, pw.iso_id
      from lot_welds c
      join pw on pw.id = c.weld_id
     order by c.method, c.lot, pw.iso_number
  ), reasons as (
    select 1 as rank, 'NO_WELDS' as code, null::uuid as weld_id, null::uuid as iso_id,
           'the package has no welds that are not VOIDED' as detail, '' as iso_number, '' as weld_number
     where not exists (select from pw)
    union all
    select 2, 'WELD_NOT_ACCEPTED', pw.id, pw.iso_id,
           format('weld %s on ISO %s is %s', pw.weld_number, pw.iso_number, pw.status), pw.iso_number, pw.weld_number
      from pw where pw.status <> 'ACCEPTED'
    union all
    select 3, 'EXAMINATION_SHORTFALL', null, li.iso_id,
           format('%s requires %s of its %s welds examined (%s%%%s) and has %s selected%s; draw a selection',
                  l.lot_name, l.required, l.welds, trim_scale(l.percent),
                  case when l.percent < 100 then ', every welder''s work represented' else '' end,
                  l.selected,
                  case when cardinality(l.stamps_not_covered) > 0
                       then ', none of welder ' || array_to_string(l.stamps_not_covered, ', ') else '' end),
           '', l.lot
      from lots l
      left join lot_isos li on li.method = l.method and li.lot = l.lot
     where l.shortfall > 0
    union all
    select 4, 'EXAMINATION_OPEN', pw.id, pw.iso_id,
           format('%s selection of weld %s on ISO %s (%s) is not yet examined by %s',
                  c.method, pw.weld_number, pw.iso_number,
                  case c.tier when 'random' then 'random, seed ' || c.seed else 'counted' end,
                  weld_private.methods_words(c.closes)),
           pw.iso_number, pw.weld_number
      from pw
      join lot_welds c on c.weld_id = pw.id
     where c.tier in ('random', 'examined') and c.open
    union all
    select 5, 'PROGRESSIVE_OPEN', c.weld_id, c.iso_id,
           format('%s progressive examination in %s is open: weld %s on ISO %s (tier %s) is not yet examined by %s; %s',
                  c.method, c.lot_name, c.weld_number, c.iso_number, c.tier,
                  weld_private.methods_words(c.closes), c.reason),
           c.iso_number, c.weld_number
      from lot_welds c
     where c.tier in ('1', '2', 'full') and c.open
    union all
    select 6, p.code, pw.id, pw.iso_id,
           format('weld %s on ISO %s: %s', pw.weld_number, pw.iso_number, p.detail), pw.iso_number, pw.weld_number
      from weld_private.weld_problems(array(select pw.weld from pw)) p
      join pw on pw.id = p.weld_id
    union all
    -- Its open category A punch items (B items do not keep it from its test).
    select 7, 'PUNCH_A_OPEN', null, null,
           format('punch item %s (category A) is open: %s', i.item_number,
                  case when char_length(i.description) > 200 then left(i.description, 199) || '…'
                       else i.description end),
           '', lpad(i.item_number::text, 5, '0')
      from weld_public.punch_items i
     where i.tenant_id = test_package.tenant_id and i.test_package_id = test_package.id
       and i.category = 'A' and i.closed_on is null
  )
  select r.code, r.weld_id, r.iso_id, r.detail
    from reasons r
   order by r.rank, r.code, r.iso_number, r.weld_number, r.detail
$$;

comment on function weld_public.test_packages_readiness_reasons(weld_public.test_packages) is
  'Why the package is not ready for its pressure test (none when it is): NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, the weld checks of its welds (REEXAMINATION_OPEN among them) and PUNCH_A_OPEN (an open category A punch item). VOIDED welds drop out.';

grant execute on function weld_public.test_packages_readiness_reasons(weld_public.test_packages) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.test_packages_readiness_reasons.sql
--! Included functions/weld_private.tg__report_stale.sql
-- Keeps the cached reports (examination progress, the test package board, qualification expiry)
-- honest: every write to what they are computed from notes, in its own transaction, what it
-- changed (weld_private.mark_report_stale), naming only rows it wrote: which lots, packages and
-- welders that touches is worked out when the notes are read (weld_private.report_stale_parts),
-- in the reader's snapshot, so a write racing another (an ISO moved to another line while a weld
-- on it is examined) cannot be noted under a key the other made stale. The kinds:
--
-- - 'line': a line's lots (an ISO's line, RT percent or fluid service changed; its old and new line);
-- - 'iso': what a package holding the ISO reads of its welds (any field of any of them);
-- - 'lot_iso': that, and the lots of the ISO's line (a weld made, deleted, moved, retyped, its
--   welder or date or VOIDED-ness changed);
-- - 'weld': a weld's selections, examinations, PWHT records, hardness readings or fillers changed
--   (its ISO's lots and packages);
-- - 'record': an NDT record's, film interval's, inspection's or PWHT record's method, date, result
--   or values changed, or a filler lot's (the welds it covers, or made);
-- - 'package': a package's members; 'wps', 'pqr': what a WPS or PQR says (the packages with welds
--   to it, and the welders whose continuity or qualifications it carries);
-- - 'welder': a welder's qualifications, continuity, or welds' dates and WPSs; 'welder_lots': its
--   stamp, which names its lots;
-- - 'all': the tenant's rules and settings (examination, P-number, thickness, range and heat
--   treatment rules, settings), and a TRUNCATE (every tenant).
-- (The refresh notes what it leaves for its next call as 'lot_line', 'package', 'qual_welder':
-- lines and welders as kinds of their own, since a 'line' or 'welder' note also reaches packages,
-- which the refresh has already listed; a package reaches nothing further, so it stays 'package'.)
--
-- Statement triggers, reading the statement's rows from its transition tables: a bulk write notes
-- once per kind, not once per row.
create or replace function weld_private.tg__report_stale() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  pair record;
  -- The statement's rows: an insert has only new rows, a delete only old ones.
  changed text := case tg_op when 'INSERT' then 'select * from new_rows'
                             when 'DELETE' then 'select * from old_rows'
                             else 'select * from new_rows union all select * from old_rows' end;
begin
  if tg_op = 'TRUNCATE' then
    -- (A DBA's TRUNCATE fires no delete trigger: every tenant's reports are recomputed.)
    insert into weld_private.report_stale (tenant_id, kind, keys)
    select t.id, 'all', '{*}' from weld_public.tenants t;
    return null;
  end if;

  case tg_table_name
    when 'welds' then
      if tg_op = 'UPDATE' then
        -- Packages read every field; lots only some; a welder's continuity only what it chains.
        -- (Each side under its own tenant: a DBA's move of a weld to another tenant notes both.)
        for pair in
          select x.tenant_id,
                 array_agg(distinct x.iso_id::text) as isos,
                 array_agg(distinct x.iso_id::text) filter (
                   where (o.iso_id, o.type, o.welder_id, o.welded_on, o.status = 'VOIDED')
                         is distinct from (n.iso_id, n.type, n.welder_id, n.welded_on, n.status = 'VOIDED')
                 ) as lot_isos,
                 array_agg(distinct x.welder_id::text) filter (
                   where (o.welder_id, o.wps_id, o.welded_on, o.status = 'VOIDED')
                         is distinct from (n.welder_id, n.wps_id, n.welded_on, n.status = 'VOIDED')
                 ) as welders
            from new_rows n
            join old_rows o on o.id = n.id
            cross join lateral (values (o.tenant_id, o.iso_id, o.welder_id),
                                       (n.tenant_id, n.iso_id, n.welder_id)) as x (tenant_id, iso_id, welder_id)
           group by x.tenant_id
        loop
          perform weld_private.mark_report_stale(pair.tenant_id, 'iso', pair.isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'lot_iso', pair.lot_isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        end loop;
      else
        -- Made or deleted.
        for pair in execute format(
          'select r.tenant_id, array_agg(distinct r.iso_id::text) as isos,
                  array_agg(distinct r.welder_id::text) as welders
             from (%s) r group by r.tenant_id', changed)
        loop
          perform weld_private.mark_report_stale(pair.tenant_id, 'lot_iso', pair.isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        end loop;
      end if;
    when 'isos' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as isos,
                array_agg(distinct r.line_number) as lines
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'iso', pair.isos);
        perform weld_private.mark_report_stale(pair.tenant_id, 'line', pair.lines);
      end loop;
    when 'examination_selections', 'ndt_record_welds', 'film_interval_welds', 'inspection_welds',
         'weld_reexaminations', 'pwht_record_welds', 'hardness_readings', 'weld_fillers' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.weld_id::text) as welds from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'weld', pair.welds);
      end loop;
    when 'ndt_records', 'film_intervals', 'inspections', 'pwht_records', 'filler_lots' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as ids from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'record', pair.ids);
      end loop;
    when 'test_packages', 'test_package_welds', 'test_package_isos', 'punch_items' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.%I::text) as packages from (%s) r group by r.tenant_id',
        case tg_table_name when 'test_packages' then 'id' else 'test_package_id' end, changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'package', pair.packages);
      end loop;
    when 'wps', 'wps_pqrs' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.%I::text) as wps from (%s) r group by r.tenant_id',
        case tg_table_name when 'wps' then 'id' else 'wps_id' end, changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'wps', pair.wps);
      end loop;
    when 'pqrs' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as ids from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'pqr', pair.ids);
      end loop;
    when 'welder_qualifications', 'welder_continuity' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.welder_id::text) as welders
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
      end loop;
    when 'welders' then
      -- (Updates only.) Its qualifications' standing; and a new stamp names its lots.
      for pair in
        select n.tenant_id, array_agg(n.id::text) as welders,
               array_agg(n.id::text) filter (where o.stamp is distinct from n.stamp) as renamed
          from new_rows n join old_rows o on o.tenant_id = n.tenant_id and o.id = n.id
         group by n.tenant_id
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder_lots', pair.renamed);
      end loop;
    else
      -- The tenant's rules and settings: examination_rules, p_number_rules,
      -- procedure_thickness_rules, qualification_range_rules, heat_treatment_rules, tenant_settings.
      for pair in execute format('select distinct r.tenant_id from (%s) r', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'all', '{*}');
      end loop;
  end case;
  return null;
end
$$;

-- Per statement: each table's inserts, updates and deletes that can change what the reports read
-- (an ISO's insert cannot, nor a record's before its welds are linked), and its TRUNCATE.
create or replace trigger _520_report_stale_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.isos
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.isos
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.examination_selections
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.examination_selections
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.examination_selections
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.examination_selections
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.ndt_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.ndt_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.ndt_record_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.film_interval_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.film_interval_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.film_interval_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.film_interval_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.inspection_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.inspection_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.inspection_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.inspection_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.weld_reexaminations
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.weld_reexaminations
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.weld_reexaminations
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.weld_reexaminations
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.ndt_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.ndt_records
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.film_intervals
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.film_intervals
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.inspections
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.inspections
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_packages
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_packages
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_package_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.test_package_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.test_package_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_package_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_package_isos
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.test_package_isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.test_package_isos
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_package_isos
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.wps
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.wps
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.wps_pqrs
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.wps_pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.wps_pqrs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.wps_pqrs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pqrs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.welder_qualifications
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welder_qualifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welder_qualifications
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welder_qualifications
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.welder_continuity
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welder_continuity
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welder_continuity
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welder_continuity
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welders
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welders
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.examination_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.examination_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.examination_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.examination_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.p_number_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.p_number_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.p_number_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.p_number_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.procedure_thickness_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.procedure_thickness_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.procedure_thickness_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.procedure_thickness_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.qualification_range_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.qualification_range_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.qualification_range_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.qualification_range_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.tenant_settings
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.tenant_settings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.tenant_settings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.tenant_settings
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.pwht_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pwht_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.pwht_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pwht_record_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.hardness_readings
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.hardness_readings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.hardness_readings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.hardness_readings
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pwht_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pwht_records
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.heat_treatment_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.heat_treatment_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.heat_treatment_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.heat_treatment_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.weld_fillers
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.weld_fillers
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.weld_fillers
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.weld_fillers
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.filler_lots
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.filler_lots
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.punch_items
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.punch_items
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.punch_items
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.punch_items
  for each statement execute function weld_private.tg__report_stale();
--! EndIncluded functions/weld_private.tg__report_stale.sql
--! Included functions/weld_private.event_data.sql
create or replace function weld_private.event_data(kind text, tenant uuid, subject uuid) returns jsonb
  language plpgsql stable
as $$
declare
  result jsonb;
begin
  case kind
    when 'iso' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.isos r where r.tenant_id = tenant and r.id = subject;
    when 'weld' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.welds r where r.tenant_id = tenant and r.id = subject;
    when 'welder' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.welders r where r.tenant_id = tenant and r.id = subject;
    when 'pqr' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.pqrs r where r.tenant_id = tenant and r.id = subject;
    when 'wps' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('pqrIds', array(
               select l.pqr_id from weld_public.wps_pqrs l
                where l.tenant_id = r.tenant_id and l.wps_id = r.id order by l.pqr_id))
        into result
        from weld_public.wps r where r.tenant_id = tenant and r.id = subject;
    when 'welder_qualification' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.welder_qualifications r where r.tenant_id = tenant and r.id = subject;
    when 'ndt_record' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object(
               'welds', weld_hidden.ndt_record_welds_json(r),
               'filmIntervals', weld_hidden.ndt_record_film_json(r))
        into result
        from weld_public.ndt_records r where r.tenant_id = tenant and r.id = subject;
    when 'inspection' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('weldIds', array(
               select l.weld_id from weld_public.inspection_welds l
                where l.tenant_id = r.tenant_id and l.inspection_id = r.id order by l.weld_id))
        into result
        from weld_public.inspections r where r.tenant_id = tenant and r.id = subject;
    when 'test_package' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object(
               'isoIds', array(select l.iso_id from weld_public.test_package_isos l
                                where l.tenant_id = r.tenant_id and l.test_package_id = r.id
                                order by l.iso_id),
               'weldIds', array(select l.weld_id from weld_public.test_package_welds l
                                 where l.tenant_id = r.tenant_id and l.test_package_id = r.id
                                 order by l.weld_id))
        into result
        from weld_public.test_packages r where r.tenant_id = tenant and r.id = subject;
    when 'pwht_record' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('weldIds', array(
               select l.weld_id from weld_public.pwht_record_welds l
                where l.tenant_id = r.tenant_id and l.pwht_record_id = r.id order by l.weld_id))
        into result
        from weld_public.pwht_records r where r.tenant_id = tenant and r.id = subject;
    when 'hardness_reading' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.hardness_readings r where r.tenant_id = tenant and r.id = subject;
    when 'component' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.components r where r.tenant_id = tenant and r.id = subject;
    when 'filler_lot' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.filler_lots r where r.tenant_id = tenant and r.id = subject;
    when 'weld_filler' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.weld_fillers r where r.tenant_id = tenant and r.id = subject;
    when 'punch_item' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.punch_items r where r.tenant_id = tenant and r.id = subject;
    when 'attachment' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.attachments r where r.tenant_id = tenant and r.id = subject;
    when 'examination_selection' then
      select weld_hidden.examination_selection_json(s) into result
        from weld_public.examination_selections s
       where s.tenant_id = tenant and s.id = subject;
  end case;
  return result;
end
$$;
--! EndIncluded functions/weld_private.event_data.sql
--! Included functions/weld_private.tg__outbox.sql
-- The outbox trigger of a resource table (argument: the resource's kind, e.g. 'weld'). DEFERRED:
-- it runs at commit, once for each row change in the order they happened, so the first firing for
-- a resource sees its state before the transaction (OLD) and its final state (the table now).
-- A resource created and deleted in one transaction leaves no event; created and changed is one
-- `created`; changed and deleted is one `deleted`.
create or replace function weld_private.tg__outbox() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  kind text := tg_argv[0];
  subject uuid;
  tenant uuid;
  data jsonb;
  before jsonb;
  change jsonb;
  event_type text;
  earlier_id bigint;
  earlier_type text;
begin
  if weld_private.events_suppressed() then
    return null;
  end if;
  if tg_op = 'DELETE' then
    subject := old.id;
    tenant := old.tenant_id;
  else
    subject := new.id;
    tenant := new.tenant_id;
  end if;

  if tg_op = 'DELETE' then
    select e.id, e.type into earlier_id, earlier_type
      from weld_private.transaction_event(tenant, kind, subject) e;
    if earlier_type = kind || '.created' then
      delete from weld_hidden.pending_events p where p.tenant_id = tenant and p.n = earlier_id;
    elsif earlier_id is not null then
      update weld_hidden.pending_events p
         set type = kind || '.deleted', data = weld_private.contract_json(to_jsonb(old)), change = null
       where p.tenant_id = tenant and p.n = earlier_id;
    -- A whole tenant being deleted announces nothing (its events go with it, and the relay drops
    -- those still waiting).
    elsif exists (select from weld_public.tenants t where t.id = tenant) then
      perform weld_private.emit_event(tenant, kind || '.deleted', subject,
                                      weld_private.contract_json(to_jsonb(old)), null);
    end if;
    return null;
  end if;

  data := weld_private.event_data(kind, tenant, subject);
  if tg_op = 'INSERT' then
    -- Gone again before commit: a placeholder the DELETE firing that follows removes.
    if not weld_private.emit_event(tenant, kind || '.created', subject, coalesce(data, '{}'), null)
       and data is not null then
      perform weld_private.refresh_event(tenant, kind, subject, data);
    end if;
    return null;
  end if;
  if data is null then
    return null; -- deleted later in this transaction: its DELETE firing speaks for it
  end if;
  event_type := kind || '.updated';
  before := to_jsonb(old);
  if kind = 'weld' and before ->> 'status' is distinct from data ->> 'status' then
    event_type := 'weld.status_changed';
    -- Why: the history row this transaction wrote (change_weld_status and the NDT functions
    -- write one). A status set by a plain UPDATE (a DBA) has none: cause 'system'.
    select jsonb_build_object('from', before ->> 'status', 'to', data ->> 'status',
                              'reason', h.reason, 'cause', coalesce(h.cause, 'system'),
                              'ndtRecordId', h.ndt_record_id)
      into change
      from (select) as always_one_row
      left join lateral (
        select h.reason, h.cause, h.ndt_record_id
          from weld_public.weld_status_history h
         where h.tenant_id = tenant and h.weld_id = subject and h.changed_at >= now()
         order by h.id desc
         limit 1) h on true;
  elsif kind = 'test_package' and before ->> 'state' is distinct from data ->> 'state' then
    event_type := case data ->> 'state' when 'released' then 'test_package.released'
                                        else 'test_package.updated' end;
    change := jsonb_build_object('from', before ->> 'state', 'to', data ->> 'state');
  end if;
  if not weld_private.emit_event(tenant, event_type, subject, data, change) then
    perform weld_private.refresh_event(tenant, kind, subject, data);
  end if;
  return null;
end
$$;

-- The tables an import writes (100,000 rows at a time) skip even queueing a row whose
-- transaction the import marked (begin_weld_import): a constraint trigger's WHEN is judged when
-- the row is written, not at commit, and 100,000 deferred calls cost the commit 0.4 s.
drop trigger if exists _900_outbox on weld_public.inspections;
create constraint trigger _900_outbox after insert or delete or update on weld_public.inspections
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('inspection');
drop trigger if exists _900_outbox on weld_public.isos;
create constraint trigger _900_outbox after insert or delete or update on weld_public.isos
  deferrable initially deferred
  for each row when (pg_catalog.to_regclass('pg_temp.weld_bulk_evented') is null)
  execute function weld_private.tg__outbox('iso');
drop trigger if exists _900_outbox on weld_public.ndt_records;
create constraint trigger _900_outbox after insert or delete or update on weld_public.ndt_records
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('ndt_record');
drop trigger if exists _900_outbox on weld_public.pqrs;
create constraint trigger _900_outbox after insert or delete or update on weld_public.pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('pqr');
drop trigger if exists _900_outbox on weld_public.test_packages;
create constraint trigger _900_outbox after insert or delete or update on weld_public.test_packages
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('test_package');
drop trigger if exists _900_outbox on weld_public.welder_qualifications;
create constraint trigger _900_outbox after insert or delete or update on weld_public.welder_qualifications
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('welder_qualification');
drop trigger if exists _900_outbox on weld_public.welders;
create constraint trigger _900_outbox after insert or delete or update on weld_public.welders
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('welder');
drop trigger if exists _900_outbox on weld_public.welds;
create constraint trigger _900_outbox after insert or delete or update on weld_public.welds
  deferrable initially deferred
  for each row when (pg_catalog.to_regclass('pg_temp.weld_bulk_evented') is null)
  execute function weld_private.tg__outbox('weld');
drop trigger if exists _900_outbox on weld_public.wps;
create constraint trigger _900_outbox after insert or delete or update on weld_public.wps
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('wps');
drop trigger if exists _900_outbox on weld_public.pwht_records;
create constraint trigger _900_outbox after insert or delete or update on weld_public.pwht_records
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('pwht_record');
drop trigger if exists _900_outbox on weld_public.hardness_readings;
create constraint trigger _900_outbox after insert or delete or update on weld_public.hardness_readings
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('hardness_reading');
drop trigger if exists _900_outbox on weld_public.components;
create constraint trigger _900_outbox after insert or delete or update on weld_public.components
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('component');
drop trigger if exists _900_outbox on weld_public.filler_lots;
create constraint trigger _900_outbox after insert or delete or update on weld_public.filler_lots
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('filler_lot');
drop trigger if exists _900_outbox on weld_public.weld_fillers;
create constraint trigger _900_outbox after insert or delete or update on weld_public.weld_fillers
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('weld_filler');
drop trigger if exists _900_outbox on weld_public.punch_items;
create constraint trigger _900_outbox after insert or delete or update on weld_public.punch_items
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('punch_item');
drop trigger if exists _900_outbox on weld_public.attachments;
create constraint trigger _900_outbox after insert or delete or update on weld_public.attachments
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('attachment');
--! EndIncluded functions/weld_private.tg__outbox.sql
--! Included functions/weld_hidden.test_package_dossier.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- What the turnover dossier of a test package says (GET /test-packages/{id}/dossier renders it,
-- rest-adapter/dossier.ts): one JSON document of the package, its ISOs, its weld log (welder, WPS,
-- dates, status, repair cycles, examinations, the welder's qualifications in force on the day it
-- was welded, PWHT and hardness), the NDT lots per method against what was required, its punch
-- list, its readiness and its last release, and the files attached to any of them.
--
-- Only a package that was released (released, tested or closed: WD008) is handed over, and only
-- engineers and admins hand it over (WD003). A null: no such package in the caller's tenant.
-- Welds VOIDED drop out, as from readiness. Every list is in a fixed order, so the same package
-- gives the same document (the dossier is reproducible).
create or replace function weld_hidden.test_package_dossier(package_id uuid) returns jsonb
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
  set plan_cache_mode = force_custom_plan
as $$
declare
  package weld_public.test_packages;
  result jsonb;
begin
  perform weld_private.require_role('engineer', 'the turnover dossier');
  perform weld_hidden.require_scope('{welds:read,welds:write,ndt:write,packages:write,imports:write}');
  select * into package from weld_public.test_packages p
   where p.tenant_id = weld_hidden.current_tenant_id() and p.id = package_id;
  if not found then
    return null;
  end if;
  if package.state = 'open' then
    raise exception 'test package % is open: a dossier is of a released package (release it when ready)',
      package.package_number using errcode = 'WD008';
  end if;

  with members as (
    select pw.weld_id from weld_public.test_package_welds pw
     where pw.tenant_id = package.tenant_id and pw.test_package_id = package.id
    union
    select w.id
      from weld_public.test_package_isos pi
      join weld_public.welds w on w.tenant_id = pi.tenant_id and w.iso_id = pi.iso_id
     where pi.tenant_id = package.tenant_id and pi.test_package_id = package.id
  ), w as (
    select w.*, i.iso_number, i.line_number
      from members m
      join weld_public.welds w on w.tenant_id = package.tenant_id and w.id = m.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.status <> 'VOIDED'
  ), iso_ids as (
    select w.iso_id as id from w
    union
    select pi.iso_id from weld_public.test_package_isos pi
     where pi.tenant_id = package.tenant_id and pi.test_package_id = package.id
  ), weld_log as (
    select w.id, w.iso_id, w.iso_number, w.weld_number, jsonb_build_object(
             'weldNumber', w.weld_number, 'isoNumber', w.iso_number, 'type', w.type,
             'size', trim_scale(w.size)::text || '"'
                     || case when w.schedule is not null then ' sch ' || w.schedule else '' end,
             'welder', s.stamp, 'wps', p.wps_number || ' rev ' || p.revision,
             'weldedOn', w.welded_on::text, 'status', w.status, 'repairCycles', w.repair_cycle,
             'examinations', array(
               select e.method || ' ' || e.examined_on || ' ' || e.result
                      || case when e.record is not null then ' (' || e.record || ')' else '' end
                 from weld_private.weld_examinations e
                where e.tenant_id = w.tenant_id and e.weld_id = w.id
                order by e.examined_on, e.method, e.record, e.result),
             'qualifications', array(
               select coalesce(q.process, qp.wps_number || ' rev ' || qp.revision, 'WPS') || ' '
                      || q.joint || ', qualified ' || q.qualified_on
                      || coalesce(' to ' || q.expires_on, '')
                 from weld_public.welder_qualifications q
                 left join weld_public.wps qp on qp.tenant_id = q.tenant_id and qp.id = q.wps_id
                where q.tenant_id = w.tenant_id and q.welder_id = w.welder_id
                  and w.welded_on is not null and q.qualified_on <= w.welded_on
                  and (q.expires_on is null or q.expires_on >= w.welded_on)
                  and (q.revoked_on is null or q.revoked_on > w.welded_on)
                order by q.qualified_on, q.process, q.id),
             'pwht', (select string_agg(r.record_number || ' ' || r.treated_on || ', '
                                        || trim_scale(r.holding_temperature_f) || ' °F, '
                                        || r.hold_minutes || ' min', '; '
                                        order by r.treated_on, r.record_number)
                        from weld_public.pwht_record_welds l
                        join weld_public.pwht_records r on r.tenant_id = l.tenant_id and r.id = l.pwht_record_id
                       where l.tenant_id = w.tenant_id and l.weld_id = w.id),
             'hardness', (select string_agg('HB ' || trim_scale(h.hardness_hb) || ' ' || h.measured_on
                                            || coalesce(' ' || h.location, ''), '; '
                                            order by h.measured_on, h.id)
                            from weld_public.hardness_readings h
                           where h.tenant_id = w.tenant_id and h.weld_id = w.id)
           ) as entry
      from w
      left join weld_public.welders s on s.tenant_id = w.tenant_id and s.id = w.welder_id
      left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = w.wps_id
  ), lots as (
    select l.* from weld_private.lot_status(
      weld_private.rule_methods(), array(select distinct w.line_number from w), array(select w.id from w)) l
  ), punch as (
    select i.*, r.user_name as raised_by_name, c.user_name as closed_by_name
      from weld_public.punch_items i
      left join weld_public.users r on r.tenant_id = i.tenant_id and r.id = i.raised_by
      left join weld_public.users c on c.tenant_id = i.tenant_id and c.id = i.closed_by
     where i.tenant_id = package.tenant_id and i.test_package_id = package.id
  ), released as (
    select h.changed_at, u.user_name
      from weld_public.test_package_state_changes h
      left join weld_public.users u on u.tenant_id = h.tenant_id and u.id = h.changed_by
     where h.tenant_id = package.tenant_id and h.test_package_id = package.id and h.to_state = 'released'
     order by h.changed_at desc, h.id desc
     limit 1
  ), files as (
    -- The files of the package, its ISOs, welds, their examinations, its punch items, and the
    -- WPSs, PQRs and qualifications its welds were made under.
    select a.*, case
             when a.test_package_id is not null then 'test package ' || package.package_number
             when a.iso_id is not null then 'ISO ' || (select i.iso_number from weld_public.isos i
                                                        where i.tenant_id = a.tenant_id and i.id = a.iso_id)
             when a.weld_id is not null then (select 'weld ' || l.weld_number || ' on ISO ' || l.iso_number
                                                from weld_log l where l.id = a.weld_id)
             when a.ndt_record_id is not null then (select r.method || ' report ' || r.report_number
                                                      from weld_public.ndt_records r
                                                     where r.tenant_id = a.tenant_id and r.id = a.ndt_record_id)
             when a.inspection_id is not null then (select r.kind || ' inspection of ' || r.inspected_on
                                                      from weld_public.inspections r
                                                     where r.tenant_id = a.tenant_id and r.id = a.inspection_id)
             when a.punch_item_id is not null then 'punch item ' || (select p.item_number from punch p where p.id = a.punch_item_id)
             when a.wps_id is not null then 'WPS ' || (select p.wps_number || ' rev ' || p.revision from weld_public.wps p
                                                       where p.tenant_id = a.tenant_id and p.id = a.wps_id)
             when a.pqr_id is not null then 'PQR ' || (select p.pqr_number from weld_public.pqrs p
                                                       where p.tenant_id = a.tenant_id and p.id = a.pqr_id)
             else 'welder qualification of ' || (select s.stamp from weld_public.welder_qualifications q
                                                   join weld_public.welders s on s.tenant_id = q.tenant_id and s.id = q.welder_id
                                                  where q.tenant_id = a.tenant_id and q.id = a.welder_qualification_id)
           end as attached_to
      from weld_public.attachments a
     where a.tenant_id = package.tenant_id
       and (a.test_package_id = package.id
            or a.iso_id in (select id from iso_ids)
            or a.weld_id in (select w.id from w)
            or a.ndt_record_id in (select l.ndt_record_id from weld_public.ndt_record_welds l
                                    where l.tenant_id = package.tenant_id and l.weld_id in (select w.id from w))
            or a.inspection_id in (select l.inspection_id from weld_public.inspection_welds l
                                    where l.tenant_id = package.tenant_id and l.weld_id in (select w.id from w))
            or a.punch_item_id in (select p.id from punch p)
            or a.wps_id in (select w.wps_id from w)
            or a.pqr_id in (select x.pqr_id from weld_public.wps_pqrs x
                             where x.tenant_id = package.tenant_id and x.wps_id in (select w.wps_id from w))
            or a.welder_qualification_id in (
                 select q.id from weld_public.welder_qualifications q
                  where q.tenant_id = package.tenant_id and q.welder_id in (select w.welder_id from w)))
  )
  select jsonb_build_object(
    'tenantName', (select t.name from weld_public.tenants t where t.id = package.tenant_id),
    'package', jsonb_build_object(
      'packageNumber', package.package_number, 'state', package.state,
      'testMedium', package.test_medium, 'testPressurePsig', package.test_pressure_psig::float8,
      'releasedAt', (select to_char(r.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') from released r),
      'releasedBy', (select r.user_name from released r)),
    'readiness', (select jsonb_build_object(
                           'ready', count(*) = 0,
                           'reasons', coalesce(jsonb_agg(jsonb_build_object('code', x.code, 'detail', x.detail)
                                                         order by x.n), '[]'))
                    from weld_public.test_packages_readiness_reasons(package)
                         with ordinality as x (code, weld_id, iso_id, detail, n)),
    'isos', coalesce((select jsonb_agg(jsonb_build_object(
                               'isoNumber', i.iso_number, 'revision', i.revision, 'lineNumber', i.line_number,
                               'pipingClass', i.piping_class, 'fluidService', i.fluid_service,
                               'welds', (select count(*) from w where w.iso_id = i.id)) order by i.iso_number)
                        from weld_public.isos i
                       where i.tenant_id = package.tenant_id and i.id in (select id from iso_ids)), '[]'),
    'welds', coalesce((select jsonb_agg(l.entry order by l.iso_number, l.weld_number, l.id) from weld_log l), '[]'),
    'ndtSummary', coalesce((select jsonb_agg(jsonb_build_object(
                                     'method', m.method, 'lots', m.lots, 'required', m.required,
                                     'examined', m.examined,
                                     'note', case when m.shortfall > 0 then m.shortfall || ' more to examine' end)
                                   order by m.method)
                              from (select l.method, count(*)::integer as lots, sum(l.required)::integer as required,
                                           sum(l.examined)::integer as examined, sum(l.shortfall)::integer as shortfall
                                      from lots l group by l.method) m), '[]'),
    'punchItems', coalesce((select jsonb_agg(jsonb_build_object(
                                     'itemNumber', p.item_number, 'category', p.category,
                                     'description', p.description, 'raisedBy', p.raised_by_name,
                                     'raisedOn', p.raised_on::text, 'closedOn', p.closed_on::text,
                                     'closedBy', p.closed_by_name) order by p.item_number)
                              from punch p), '[]'),
    'attachments', coalesce((select jsonb_agg(jsonb_build_object(
                                      'id', f.id, 'fileName', f.file_name, 'contentType', f.content_type,
                                      'sizeBytes', f.size_bytes, 'sha256', f.sha256, 'attachedTo', f.attached_to)
                                    order by f.attached_to, f.file_name, f.sha256, f.id)
                               from files f), '[]'))
    into result;
  return result;
end
$$;

comment on function weld_hidden.test_package_dossier(uuid) is
  'The turnover dossier of a released test package, as JSON (engineers and admins).';
grant execute on function weld_hidden.test_package_dossier(uuid) to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.test_package_dossier.sql
--! Included functions/weld_private.weld_json.sql
create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on,
    'baseMetal1PNumber', w.base_metal_1_p_number, 'baseMetal2PNumber', w.base_metal_2_p_number,
    'preheatF', w.preheat_f, 'component1Id', w.component_1_id, 'component2Id', w.component_2_id,
    'mapPage', w.map_page, 'mapX', w.map_x, 'mapY', w.map_y, 'status', w.status,
    'repairCycle', w.repair_cycle, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

grant execute on function weld_private.weld_json(weld_public.welds) to weld_rules;
--! EndIncluded functions/weld_private.weld_json.sql
