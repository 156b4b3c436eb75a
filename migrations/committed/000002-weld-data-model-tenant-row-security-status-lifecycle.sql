--! Previous: sha1:99789a11c9d48ce2e0e8c2d28179f387b3c38f9f
--! Hash: sha1:68e3d541070492faf1092c0ec8d4a01191b75ddc
--! Message: Weld data model, tenant row security, status lifecycle

-- The weld data model: every resource of the spec, tenant row security, and the weld status
-- lifecycle as rules in a table and one function that applies them.
--
-- Units: sizes, diameters and thicknesses in inches (NPS and ASME B31.3 / IX rules are stated in
-- inches); test pressure in psig.

-- graphile-migrate re-runs current.sql on every save, so it starts from a clean slate. (Dropping
-- welds drops change_weld_status() with it: the function returns the table's row type.)
drop table if exists
  weld_public.test_package_welds, weld_public.test_package_isos, weld_public.test_packages,
  weld_public.inspection_welds, weld_public.inspections,
  weld_public.film_interval_welds, weld_public.film_intervals,
  weld_public.ndt_record_welds, weld_public.ndt_records,
  weld_public.weld_status_history, weld_public.weld_transition_rules, weld_public.welds,
  weld_public.welder_qualifications, weld_public.wps_pqrs, weld_public.wps, weld_public.pqrs,
  weld_public.welders, weld_public.isos, weld_public.users
  cascade;
drop function if exists weld_private.secure_tenant_table(regclass);
drop function if exists weld_private.seed_transition_rules(uuid);
drop function if exists weld_private.tenants_seed_rules() cascade;
drop function if exists weld_hidden.touch() cascade;
drop function if exists weld_hidden.request_role();
drop type if exists weld_public.weld_status, weld_public.user_role;

--------------------------------------------------------------------------------------------------
-- Shared pieces

-- The weld status values, exactly as the spec spells them (section 3).
create type weld_public.weld_status as enum ('PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED');

-- A user's role, least first: the order is the privilege order (admin >= engineer >= ...).
create type weld_public.user_role as enum ('viewer', 'inspector', 'engineer', 'admin');

-- The caller's role as a user_role, read from the request role the server set (`role`); null
-- for anything else (anonymous, a DBA's own login). Inside a SECURITY DEFINER function
-- current_user is the function's owner, but the `role` setting is still the caller's.
create function weld_hidden.request_role() returns weld_public.user_role
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case pg_catalog.current_setting('role')
    when 'weld_viewer' then 'viewer'
    when 'weld_inspector' then 'inspector'
    when 'weld_engineer' then 'engineer'
    when 'weld_admin' then 'admin'
  end::weld_public.user_role
$$;
grant execute on function weld_hidden.request_role() to weld_anonymous, weld_rules;
grant usage on schema weld_public, weld_hidden to weld_rules;
grant create on schema weld_public to weld_rules;
grant execute on function weld_hidden.current_tenant_id(), weld_hidden.current_user_id() to weld_rules;

-- updated_at on every update; for tables with a version, the version too (optimistic locking).
create function weld_hidden.touch() returns trigger
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

-- Every tenant table gets the same protection: row security enabled and forced (so the owner is
-- subject to it too, unless it has BYPASSRLS), and one policy: rows of the current tenant only,
-- for reading and for writing. A test reads the catalog and fails for a table that skipped this.
--
-- And the same GraphQL face: tenant_id is implied by the session, so the column is hidden, and
-- so are the single-row lookups by keys that start with it (rows are reached through node(id)
-- and the filtered collections instead).
create function weld_private.secure_tenant_table(tbl regclass) returns void
  language plpgsql
as $$
declare
  key_name name;
begin
  execute format('alter table %s enable row level security', tbl);
  execute format('alter table %s force row level security', tbl);
  execute format(
    'create policy tenant_isolation on %s
       using (tenant_id = (select weld_hidden.current_tenant_id()))
       with check (tenant_id = (select weld_hidden.current_tenant_id()))', tbl);
  execute format('comment on column %s.tenant_id is %L', tbl, '@behavior -*');
  for key_name in
    select conname from pg_catalog.pg_constraint where conrelid = tbl and contype in ('p', 'u')
  loop
    execute format('comment on constraint %I on %s is %L', key_name, tbl, '@behavior -single -update -delete');
  end loop;
end
$$;

--------------------------------------------------------------------------------------------------
-- Users: the principals of a tenant. Their secrets (password hashes) live in weld_private.

create table weld_public.users (
  tenant_id    uuid not null default weld_hidden.current_tenant_id()
               references weld_public.tenants on delete cascade,
  id           uuid not null default gen_random_uuid(),
  user_name    public.citext not null
               constraint users_user_name_format check (user_name ~ '^[A-Za-z0-9._@-]{1,100}$'),
  display_name text not null check (char_length(display_name) between 1 and 200),
  role         weld_public.user_role not null,
  active       boolean not null default true,
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint users_user_name_key unique (tenant_id, user_name)
);
comment on table weld_public.users is 'A person who signs in to a tenant, with one role.';

--------------------------------------------------------------------------------------------------
-- Drawings and welds

create table weld_public.isos (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  id            uuid not null default gen_random_uuid(),
  iso_number    text not null check (char_length(iso_number) between 1 and 100),
  revision      text not null default '0' check (char_length(revision) between 1 and 20),
  line_number   text not null check (char_length(line_number) between 1 and 100),
  area          text check (char_length(area) <= 100),
  piping_class  text check (char_length(piping_class) <= 50),
  fluid_service text not null default 'normal'
                check (fluid_service in ('normal', 'category_d', 'category_m', 'severe_cyclic', 'high_pressure')),
  -- Required radiography, percent of butt welds (B31.3 341.4.1: 5 for normal service).
  rt_percent    numeric(5, 2) not null default 5 check (rt_percent between 0 and 100),
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint isos_iso_number_key unique (tenant_id, iso_number)
);
create index isos_line_number_idx on weld_public.isos (tenant_id, line_number);
comment on table weld_public.isos is 'An isometric drawing of a line or spool; holds many welds.';

create table weld_public.welders (
  tenant_id  uuid not null default weld_hidden.current_tenant_id()
             references weld_public.tenants on delete cascade,
  id         uuid not null default gen_random_uuid(),
  -- Stamps are never reused: welders are deactivated, never deleted (no DELETE grant).
  stamp      text not null check (stamp ~ '^[A-Za-z0-9-]{1,20}$'),
  name       text not null check (char_length(name) between 1 and 200),
  active     boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint welders_stamp_key unique (tenant_id, stamp)
);
comment on table weld_public.welders is 'A person who welds, known by a stamp that is never reused.';

create table weld_public.pqrs (
  tenant_id            uuid not null default weld_hidden.current_tenant_id()
                       references weld_public.tenants on delete cascade,
  id                   uuid not null default gen_random_uuid(),
  pqr_number           text not null check (char_length(pqr_number) between 1 and 100),
  -- One process or a combination, e.g. GTAW or GTAW+SMAW.
  process              text not null
                       check (process ~ '^(SMAW|GTAW|GMAW|FCAW|SAW|PAW)(\+(SMAW|GTAW|GMAW|FCAW|SAW|PAW))*$'),
  -- ASME IX P-numbers of the two base metals, e.g. {1,1} or {8,1}.
  p_numbers            text[] not null check (cardinality(p_numbers) between 1 and 2),
  thickness_tested_in  numeric(6, 3) not null check (thickness_tested_in > 0),
  diameter_tested_in   numeric(6, 3) check (diameter_tested_in > 0),
  document_ref         text,
  created_at           timestamptz not null default now(),
  updated_at           timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint pqrs_pqr_number_key unique (tenant_id, pqr_number)
);
comment on table weld_public.pqrs is 'Procedure Qualification Record: the test that qualifies a welding procedure.';

create table weld_public.wps (
  tenant_id        uuid not null default weld_hidden.current_tenant_id()
                   references weld_public.tenants on delete cascade,
  id               uuid not null default gen_random_uuid(),
  wps_number       text not null check (char_length(wps_number) between 1 and 100),
  revision         text not null default '0' check (char_length(revision) between 1 and 20),
  process          text not null
                   check (process ~ '^(SMAW|GTAW|GMAW|FCAW|SAW|PAW)(\+(SMAW|GTAW|GMAW|FCAW|SAW|PAW))*$'),
  state            text not null default 'draft' check (state in ('draft', 'approved', 'superseded')),
  thickness_min_in numeric(6, 3) not null default 0 check (thickness_min_in >= 0),
  thickness_max_in numeric(6, 3) check (thickness_max_in >= thickness_min_in), -- null: no upper limit
  diameter_min_in  numeric(6, 3) not null default 0 check (diameter_min_in >= 0),
  diameter_max_in  numeric(6, 3) check (diameter_max_in >= diameter_min_in),
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint wps_number_revision_key unique (tenant_id, wps_number, revision)
);
comment on table weld_public.wps is E'@name wps_document\nWelding Procedure Specification: the procedure a welder follows.';

create table weld_public.wps_pqrs (
  tenant_id uuid not null default weld_hidden.current_tenant_id(),
  wps_id    uuid not null,
  pqr_id    uuid not null,
  primary key (tenant_id, wps_id, pqr_id),
  foreign key (tenant_id, wps_id) references weld_public.wps on delete cascade,
  foreign key (tenant_id, pqr_id) references weld_public.pqrs on delete restrict
);
create index wps_pqrs_pqr_idx on weld_public.wps_pqrs (tenant_id, pqr_id);
comment on table weld_public.wps_pqrs is 'The PQRs that back a WPS.';

create table weld_public.welder_qualifications (
  tenant_id           uuid not null default weld_hidden.current_tenant_id(),
  id                  uuid not null default gen_random_uuid(),
  welder_id           uuid not null,
  -- Qualified to a WPS, or to a process (with the PQR of the test coupon, when there is one).
  wps_id              uuid,
  pqr_id              uuid,
  process             text check (process ~ '^(SMAW|GTAW|GMAW|FCAW|SAW|PAW)(\+(SMAW|GTAW|GMAW|FCAW|SAW|PAW))*$'),
  positions           text[] not null default '{}'
                      check (positions <@ array['1G','2G','3G','4G','5G','6G','1F','2F','3F','4F','5F']),
  diameter_min_in     numeric(6, 3) check (diameter_min_in >= 0),
  diameter_max_in     numeric(6, 3) check (diameter_max_in >= diameter_min_in),
  thickness_max_in    numeric(6, 3) check (thickness_max_in > 0),
  qualified_on        date not null,
  expires_on          date check (expires_on >= qualified_on),
  -- QW-322: lapses after 6 months without using the process; this is the last use on record.
  last_continuity_on  date check (last_continuity_on >= qualified_on),
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, welder_id) references weld_public.welders on delete restrict,
  foreign key (tenant_id, wps_id) references weld_public.wps on delete restrict,
  foreign key (tenant_id, pqr_id) references weld_public.pqrs on delete restrict,
  constraint welder_qualifications_basis check (wps_id is not null or process is not null)
);
create index welder_qualifications_welder_idx on weld_public.welder_qualifications (tenant_id, welder_id);
create index welder_qualifications_wps_idx on weld_public.welder_qualifications (tenant_id, wps_id);
create index welder_qualifications_pqr_idx on weld_public.welder_qualifications (tenant_id, pqr_id);
comment on table weld_public.welder_qualifications is 'What a welder may weld: a WPS or process, positions, ranges and dates.';

create table weld_public.welds (
  tenant_id      uuid not null default weld_hidden.current_tenant_id(),
  id             uuid not null default gen_random_uuid(),
  iso_id         uuid not null,
  weld_number    text not null check (char_length(weld_number) between 1 and 50),
  type           text not null check (type in ('BW', 'SW', 'FW', 'BR', 'TW')),
  size           numeric(6, 3) not null check (size > 0),          -- NPS, inches
  schedule       text check (schedule ~ '^(5S|10S|40S|80S|160S|STD|XS|XXS|[0-9]{1,3})$'),
  wall_thickness numeric(6, 3) check (wall_thickness > 0),         -- inches
  material       text check (char_length(material) <= 100),
  welder_id      uuid,
  wps_id         uuid,
  welded_on      date,
  -- Changed only by change_weld_status(): no API role may update these three.
  status         weld_public.weld_status not null default 'PENDING',
  repair_cycle   integer not null default 0 check (repair_cycle >= 0),
  version        integer not null default 1 check (version >= 1),
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint welds_weld_number_key unique (tenant_id, iso_id, weld_number),
  foreign key (tenant_id, iso_id) references weld_public.isos on delete restrict,
  foreign key (tenant_id, welder_id) references weld_public.welders on delete restrict,
  foreign key (tenant_id, wps_id) references weld_public.wps on delete restrict
);
create index welds_status_idx on weld_public.welds (tenant_id, status);
create index welds_updated_at_idx on weld_public.welds (tenant_id, updated_at, id);
create index welds_welder_idx on weld_public.welds (tenant_id, welder_id);
create index welds_wps_idx on weld_public.welds (tenant_id, wps_id);
create trigger welds_touch before update on weld_public.welds
  for each row execute function weld_hidden.touch('versioned');
comment on table weld_public.welds is E'@aggregates on\nOne joint on an ISO, moving through the status lifecycle.';
comment on column weld_public.welds.version is 'Bumped by every change; send it back (If-Match) to change only what you saw.';
comment on column weld_public.welds.repair_cycle is 'First examination 0; each repair released (REJECTED -> REPAIR) adds 1.';

--------------------------------------------------------------------------------------------------
-- The weld status lifecycle

-- Which status changes are allowed, by whom (least role) and whether a reason is required.
-- One set of rows per tenant, seeded with the defaults below when the tenant is created.
-- A DBA reads and changes them with plain SQL; the next change of status obeys them.
create table weld_public.weld_transition_rules (
  tenant_id       uuid not null default weld_hidden.current_tenant_id()
                  references weld_public.tenants on delete cascade,
  from_status     weld_public.weld_status not null,
  to_status       weld_public.weld_status not null,
  least_role      weld_public.user_role not null,
  reason_required boolean not null default false,
  note            text,
  primary key (tenant_id, from_status, to_status),
  constraint weld_transition_rules_not_to_itself check (from_status <> to_status)
);
comment on table weld_public.weld_transition_rules is 'Allowed weld status changes per tenant: who may make them, and whether a reason is required.';

-- The append-only audit trail of status changes. Written only by change_weld_status().
create table weld_public.weld_status_history (
  tenant_id      uuid not null default weld_hidden.current_tenant_id(),
  id             bigint generated always as identity,
  weld_id        uuid not null,
  from_status    weld_public.weld_status not null,
  to_status      weld_public.weld_status not null,
  reason         text,
  changed_by     uuid,            -- the user; null for changes made by the system (seed, import)
  changed_at     timestamptz not null default now(),
  repair_cycle   integer not null,
  -- What caused it: a user's action, or the NDT record whose result it records.
  cause          text not null default 'user' check (cause in ('user', 'ndt', 'system')),
  ndt_record_id  uuid,
  primary key (tenant_id, id),
  foreign key (tenant_id, weld_id) references weld_public.welds on delete cascade,
  foreign key (tenant_id, changed_by) references weld_public.users on delete restrict,
  constraint weld_status_history_ndt_cause check ((cause = 'ndt') = (ndt_record_id is not null))
);
create index weld_status_history_weld_idx on weld_public.weld_status_history (tenant_id, weld_id, id);
comment on table weld_public.weld_status_history is 'Every change of a weld''s status: who, when, from, to, why, and what caused it.';

-- The default rules of DOMAIN.md, for one tenant.
create function weld_private.seed_transition_rules(for_tenant uuid) returns void
  language sql
as $$
  insert into weld_public.weld_transition_rules
    (tenant_id, from_status, to_status, least_role, reason_required, note)
  values
    (for_tenant, 'PENDING',  'ACCEPTED', 'inspector', false, 'examination passed'),
    (for_tenant, 'PENDING',  'REJECTED', 'inspector', false, 'examination failed'),
    (for_tenant, 'ACCEPTED', 'REJECTED', 'inspector', true,  'a later examination found a defect'),
    (for_tenant, 'REJECTED', 'REPAIR',   'engineer',  false, 'repair released; repair cycle + 1'),
    (for_tenant, 'REPAIR',   'PENDING',  'inspector', false, 'repair welded, awaiting re-examination by the same method'),
    (for_tenant, 'PENDING',  'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design'),
    (for_tenant, 'ACCEPTED', 'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design'),
    (for_tenant, 'REJECTED', 'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design'),
    (for_tenant, 'REPAIR',   'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design')
  on conflict do nothing
$$;

create function weld_private.tenants_seed_rules() returns trigger
  language plpgsql
as $$
begin
  perform weld_private.seed_transition_rules(new.id);
  return new;
end
$$;
create trigger tenants_seed_rules after insert on weld_public.tenants
  for each row execute function weld_private.tenants_seed_rules();
-- Tenants created before this migration get the defaults too.
select weld_private.seed_transition_rules(id) from weld_public.tenants;

--------------------------------------------------------------------------------------------------
-- Examinations

create table weld_public.ndt_records (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  id            uuid not null default gen_random_uuid(),
  method        text not null check (method in ('RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT')),
  report_number text not null check (char_length(report_number) between 1 and 100),
  examined_on   date not null,
  technician    text check (char_length(technician) <= 200),
  result        text not null check (result in ('accepted', 'rejected')),
  notes         text,
  recorded_by   uuid,
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint ndt_records_report_key unique (tenant_id, method, report_number),
  -- Lets film intervals require an RT record by foreign key (see film_intervals).
  constraint ndt_records_method_key unique (tenant_id, id, method),
  foreign key (tenant_id, recorded_by) references weld_public.users on delete restrict
);
create index ndt_records_examined_on_idx on weld_public.ndt_records (tenant_id, examined_on);
comment on table weld_public.ndt_records is E'@aggregates on\nOne non-destructive examination report (RT, UT, ...) and the welds it covers.';

alter table weld_public.weld_status_history
  add foreign key (tenant_id, ndt_record_id) references weld_public.ndt_records on delete restrict;

create table weld_public.ndt_record_welds (
  tenant_id     uuid not null default weld_hidden.current_tenant_id(),
  ndt_record_id uuid not null,
  weld_id       uuid not null,
  primary key (tenant_id, ndt_record_id, weld_id),
  foreign key (tenant_id, ndt_record_id) references weld_public.ndt_records on delete cascade,
  foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict
);
create index ndt_record_welds_weld_idx on weld_public.ndt_record_welds (tenant_id, weld_id);
comment on table weld_public.ndt_record_welds is 'The welds an NDT record covers.';

-- A section of an RT film strip between location markers (e.g. 0-1, 1-2).
create table weld_public.film_intervals (
  tenant_id     uuid not null default weld_hidden.current_tenant_id(),
  id            uuid not null default gen_random_uuid(),
  ndt_record_id uuid not null,
  method        text not null default 'RT' check (method = 'RT'),
  label         text not null check (label ~ '^[0-9A-Za-z]{1,10}-[0-9A-Za-z]{1,10}$'),
  result        text not null check (result in ('accepted', 'rejected')),
  defect_codes  text[] not null default '{}',
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint film_intervals_label_key unique (tenant_id, ndt_record_id, label),
  constraint film_intervals_record_key unique (tenant_id, ndt_record_id, id),
  -- Only radiography has film.
  foreign key (tenant_id, ndt_record_id, method)
    references weld_public.ndt_records (tenant_id, id, method) on delete cascade,
  constraint film_intervals_rejected_has_defects check (result = 'accepted' or cardinality(defect_codes) > 0)
);
comment on table weld_public.film_intervals is 'A section of an RT film strip, with its result and defects, mapped to welds.';

-- A film interval maps to welds of its own NDT record (the composite keys make it so).
create table weld_public.film_interval_welds (
  tenant_id        uuid not null default weld_hidden.current_tenant_id(),
  ndt_record_id    uuid not null,
  film_interval_id uuid not null,
  weld_id          uuid not null,
  primary key (tenant_id, film_interval_id, weld_id),
  foreign key (tenant_id, ndt_record_id, film_interval_id)
    references weld_public.film_intervals (tenant_id, ndt_record_id, id) on delete cascade,
  foreign key (tenant_id, ndt_record_id, weld_id)
    references weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id) on delete cascade
);
create index film_interval_welds_record_weld_idx on weld_public.film_interval_welds (tenant_id, ndt_record_id, weld_id);
comment on table weld_public.film_interval_welds is 'The welds a film interval shows; each is a weld of the interval''s NDT record.';

create table weld_public.inspections (
  tenant_id      uuid not null default weld_hidden.current_tenant_id()
                 references weld_public.tenants on delete cascade,
  id             uuid not null default gen_random_uuid(),
  kind           text not null check (kind in ('fit-up', 'visual', 'dimensional', 'final')),
  inspector_name text not null check (char_length(inspector_name) between 1 and 200),
  inspected_on   date not null,
  result         text not null check (result in ('accepted', 'rejected')),
  notes          text,
  recorded_by    uuid,
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, recorded_by) references weld_public.users on delete restrict
);
create index inspections_inspected_on_idx on weld_public.inspections (tenant_id, inspected_on);
comment on table weld_public.inspections is E'@aggregates on\nAn examination other than NDT (fit-up, visual, dimensional, final) and the welds it covers.';

create table weld_public.inspection_welds (
  tenant_id     uuid not null default weld_hidden.current_tenant_id(),
  inspection_id uuid not null,
  weld_id       uuid not null,
  primary key (tenant_id, inspection_id, weld_id),
  foreign key (tenant_id, inspection_id) references weld_public.inspections on delete cascade,
  foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict
);
create index inspection_welds_weld_idx on weld_public.inspection_welds (tenant_id, weld_id);
comment on table weld_public.inspection_welds is 'The welds an inspection covers.';

--------------------------------------------------------------------------------------------------
-- Test packages

create table weld_public.test_packages (
  tenant_id          uuid not null default weld_hidden.current_tenant_id()
                     references weld_public.tenants on delete cascade,
  id                 uuid not null default gen_random_uuid(),
  package_number     text not null check (char_length(package_number) between 1 and 100),
  test_medium        text not null check (test_medium in ('hydro', 'pneumatic', 'service')),
  test_pressure_psig numeric(8, 2) check (test_pressure_psig >= 0),
  state              text not null default 'open' check (state in ('open', 'released', 'tested', 'closed')),
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint test_packages_number_key unique (tenant_id, package_number)
);
comment on table weld_public.test_packages is 'ISOs and welds released together for a pressure test.';

create table weld_public.test_package_isos (
  tenant_id       uuid not null default weld_hidden.current_tenant_id(),
  test_package_id uuid not null,
  iso_id          uuid not null,
  primary key (tenant_id, test_package_id, iso_id),
  foreign key (tenant_id, test_package_id) references weld_public.test_packages on delete cascade,
  foreign key (tenant_id, iso_id) references weld_public.isos on delete restrict
);
create index test_package_isos_iso_idx on weld_public.test_package_isos (tenant_id, iso_id);

create table weld_public.test_package_welds (
  tenant_id       uuid not null default weld_hidden.current_tenant_id(),
  test_package_id uuid not null,
  weld_id         uuid not null,
  primary key (tenant_id, test_package_id, weld_id),
  foreign key (tenant_id, test_package_id) references weld_public.test_packages on delete cascade,
  foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict
);
create index test_package_welds_weld_idx on weld_public.test_package_welds (tenant_id, weld_id);

--------------------------------------------------------------------------------------------------
-- Row security, timestamps and grants, table by table

select weld_private.secure_tenant_table(t)
from unnest(array[
  'weld_public.users', 'weld_public.isos', 'weld_public.welders', 'weld_public.pqrs',
  'weld_public.wps', 'weld_public.wps_pqrs', 'weld_public.welder_qualifications',
  'weld_public.welds', 'weld_public.weld_transition_rules', 'weld_public.weld_status_history',
  'weld_public.ndt_records', 'weld_public.ndt_record_welds', 'weld_public.film_intervals',
  'weld_public.film_interval_welds', 'weld_public.inspections', 'weld_public.inspection_welds',
  'weld_public.test_packages', 'weld_public.test_package_isos', 'weld_public.test_package_welds'
]::regclass[]) as t;

create trigger users_touch before update on weld_public.users for each row execute function weld_hidden.touch();
create trigger isos_touch before update on weld_public.isos for each row execute function weld_hidden.touch();
create trigger welders_touch before update on weld_public.welders for each row execute function weld_hidden.touch();
create trigger pqrs_touch before update on weld_public.pqrs for each row execute function weld_hidden.touch();
create trigger wps_touch before update on weld_public.wps for each row execute function weld_hidden.touch();
create trigger welder_qualifications_touch before update on weld_public.welder_qualifications for each row execute function weld_hidden.touch();
create trigger ndt_records_touch before update on weld_public.ndt_records for each row execute function weld_hidden.touch();
create trigger film_intervals_touch before update on weld_public.film_intervals for each row execute function weld_hidden.touch();
create trigger inspections_touch before update on weld_public.inspections for each row execute function weld_hidden.touch();
create trigger test_packages_touch before update on weld_public.test_packages for each row execute function weld_hidden.touch();

-- viewer: reads everything of its tenant.
grant select on all tables in schema weld_public to weld_viewer;
grant execute on function weld_hidden.touch() to weld_anonymous;

-- inspector: records examinations (NDT, film, inspections) and accepts / rejects through
-- change_weld_status(); records are corrected, not deleted, apart from their weld lists.
grant insert (method, report_number, examined_on, technician, result, notes, recorded_by),
      update (report_number, examined_on, technician, result, notes)
  on weld_public.ndt_records to weld_inspector;
grant insert, delete on weld_public.ndt_record_welds to weld_inspector;
grant insert (ndt_record_id, label, result, defect_codes),
      update (label, result, defect_codes)
  on weld_public.film_intervals to weld_inspector;
grant insert, delete on weld_public.film_interval_welds to weld_inspector;
grant insert (kind, inspector_name, inspected_on, result, notes, recorded_by),
      update (kind, inspector_name, inspected_on, result, notes)
  on weld_public.inspections to weld_inspector;
grant insert, delete on weld_public.inspection_welds to weld_inspector;

-- engineer: manages drawings, welds (never their status), procedures, welders, qualifications
-- and test packages; voids welds through change_weld_status().
grant insert (iso_number, revision, line_number, area, piping_class, fluid_service, rt_percent),
      update (iso_number, revision, line_number, area, piping_class, fluid_service, rt_percent),
      delete
  on weld_public.isos to weld_engineer;
grant insert (iso_id, weld_number, type, size, schedule, wall_thickness, material, welder_id, wps_id, welded_on),
      update (iso_id, weld_number, type, size, schedule, wall_thickness, material, welder_id, wps_id, welded_on)
  on weld_public.welds to weld_engineer;
grant insert (stamp, name, active), update (name, active) on weld_public.welders to weld_engineer;
grant insert (pqr_number, process, p_numbers, thickness_tested_in, diameter_tested_in, document_ref),
      update (pqr_number, process, p_numbers, thickness_tested_in, diameter_tested_in, document_ref),
      delete
  on weld_public.pqrs to weld_engineer;
grant insert (wps_number, revision, process, state, thickness_min_in, thickness_max_in, diameter_min_in, diameter_max_in),
      update (wps_number, revision, process, state, thickness_min_in, thickness_max_in, diameter_min_in, diameter_max_in),
      delete
  on weld_public.wps to weld_engineer;
grant insert, delete on weld_public.wps_pqrs to weld_engineer;
grant insert (welder_id, wps_id, pqr_id, process, positions, diameter_min_in, diameter_max_in,
              thickness_max_in, qualified_on, expires_on, last_continuity_on),
      update (wps_id, pqr_id, process, positions, diameter_min_in, diameter_max_in,
              thickness_max_in, qualified_on, expires_on, last_continuity_on),
      delete
  on weld_public.welder_qualifications to weld_engineer;
grant insert (package_number, test_medium, test_pressure_psig, state),
      update (package_number, test_medium, test_pressure_psig, state),
      delete
  on weld_public.test_packages to weld_engineer;
grant insert, delete on weld_public.test_package_isos, weld_public.test_package_welds to weld_engineer;

-- admin: manages users and the transition rules.
grant insert (user_name, display_name, role, active), update (display_name, role, active)
  on weld_public.users to weld_admin;
grant insert, update (least_role, reason_required, note), delete
  on weld_public.weld_transition_rules to weld_admin;

-- The lifecycle function's owner: reads what it checks, writes only the status columns and history.
grant select on weld_public.welds, weld_public.weld_transition_rules, weld_public.ndt_record_welds
  to weld_rules;
grant update (status, repair_cycle) on weld_public.welds to weld_rules;
grant insert on weld_public.weld_status_history to weld_rules;
grant execute on function weld_hidden.touch() to weld_rules;

--------------------------------------------------------------------------------------------------
-- The one way a weld's status changes.
--
-- Locks the weld, checks the expected version, the rule for (current -> new) and the caller's
-- role, requires a reason where the rule does, applies the change (the touch trigger bumps the
-- version; REJECTED -> REPAIR adds a repair cycle) and appends the history row. Refusals carry
-- the service's own SQLSTATEs, which the server maps to HTTP once:
--   WD001 weld not found (or not this tenant's)         -> 404
--   WD002 transition not allowed; DETAIL is JSON {"allowed": [...]}, the statuses the rules
--         allow from the current one                      -> 409
--   WD003 the caller's role may not make this change     -> 403
--   WD004 the rule requires a reason                      -> 422
--   WD005 the weld changed since expected_version; DETAIL {"version": n} -> 412
--
-- SECURITY DEFINER as weld_rules (NOBYPASSRLS): it may write what callers may not, and row
-- security keeps it inside the caller's tenant.
set role weld_rules;
create function weld_public.change_weld_status(
  weld_id uuid,
  new_status weld_public.weld_status,
  reason text default null,
  expected_version integer default null,
  cause_ndt_record_id uuid default null
) returns weld_public.welds
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld weld_public.welds;
  rule weld_public.weld_transition_rules;
  caller weld_public.user_role := weld_hidden.request_role();
  allowed text[];
begin
  select * into weld from weld_public.welds w
   where w.tenant_id = weld_hidden.current_tenant_id() and w.id = change_weld_status.weld_id
   for update;
  if not found then
    raise exception 'weld % not found', change_weld_status.weld_id using errcode = 'WD001';
  end if;

  if expected_version is not null and expected_version <> weld.version then
    raise exception 'weld % is at version %, not %', weld.id, weld.version, expected_version
      using errcode = 'WD005', detail = json_build_object('version', weld.version)::text;
  end if;

  select * into rule from weld_public.weld_transition_rules r
   where r.tenant_id = weld.tenant_id and r.from_status = weld.status and r.to_status = new_status;
  if not found then
    select coalesce(array_agg(r.to_status::text order by r.to_status), '{}') into allowed
      from weld_public.weld_transition_rules r
     where r.tenant_id = weld.tenant_id and r.from_status = weld.status;
    raise exception 'a weld cannot go from % to %', weld.status, new_status
      using errcode = 'WD002', detail = json_build_object('allowed', allowed)::text;
  end if;

  if caller is null or caller < rule.least_role then
    raise exception 'going from % to % needs the % role', weld.status, new_status, rule.least_role
      using errcode = 'WD003';
  end if;

  if rule.reason_required and coalesce(btrim(reason), '') = '' then
    raise exception 'going from % to % needs a reason', weld.status, new_status
      using errcode = 'WD004';
  end if;

  if cause_ndt_record_id is not null and not exists (
    select from weld_public.ndt_record_welds nw
     where nw.tenant_id = weld.tenant_id and nw.ndt_record_id = cause_ndt_record_id
       and nw.weld_id = weld.id
  ) then
    raise exception 'NDT record % does not cover weld %', cause_ndt_record_id, weld.id
      using errcode = '22023';
  end if;

  update weld_public.welds w
     set status = new_status,
         repair_cycle = w.repair_cycle
           + case when weld.status = 'REJECTED' and new_status = 'REPAIR' then 1 else 0 end
   where w.tenant_id = weld.tenant_id and w.id = weld.id
  returning * into weld;

  insert into weld_public.weld_status_history
    (tenant_id, weld_id, from_status, to_status, reason, changed_by, repair_cycle, cause, ndt_record_id)
  values
    (weld.tenant_id, weld.id, rule.from_status, rule.to_status, nullif(btrim(reason), ''),
     weld_hidden.current_user_id(), weld.repair_cycle,
     case when cause_ndt_record_id is null then 'user' else 'ndt' end, cause_ndt_record_id);

  return weld;
end
$$;
comment on function weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid) is
  'Moves a weld to a new status under the tenant''s transition rules, and records it in the history.';
reset role;
grant execute on function weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid)
  to weld_inspector;
