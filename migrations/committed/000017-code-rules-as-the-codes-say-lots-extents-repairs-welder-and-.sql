--! Previous: sha1:083abf86bac6697150705e4e4c70586f224346fc
--! Hash: sha1:2301c7879d8c4d8d9b91a5ae4724816744cf8881
--! Message: Code rules as the codes say: lots, extents, repairs, welder and procedure qualification, dates, a release that stays released

-- Code rules as the codes say (issue F13): ASME B31.3 examination and repairs, ASME IX welder and
-- procedure qualification, dates that are real, and a release that stays released. Every rule
-- below names its paragraph; the rows a DBA edits are seeded with the codes' values.
--
--   1. Dates are calendar dates of this domain: 1900-01-01 to 2200-12-31 on every date column.
--   2. What welds and procedures record: miter (MW) and lap (LW) welds, the P-number of each
--      base metal of a weld, the P-numbers of a WPS, a PQR's P-numbers in ASME's form.
--   3. Tenant settings: the designated lot (B31.3 344.1.3), RT and UT interchangeable
--      (341.4.1(b)(1)).
--   4. Rule tables: the examination each fluid service requires, per weld type (341.4, M341.4,
--      K341.4); a welder's ranges (QW-452.1(b), QW-452.3); a procedure's thickness (QW-451.1)
--      and P-numbers (QW-424.1).
--   5. Welder qualifications: groove or fillet, the three-layers flag, revocation and renewal
--      (QW-322.1(b), QW-322.2); the continuity log (QW-322.1(a)).
--   6. Records follow reality: a weld is examined only once welded, never before it was welded.
--   7. Examinations as one list (NDT records and visual inspections), and which methods close
--      which requirement.
--   8. Welders on a date, per process; the weld checks (WELDER_NOT_QUALIFIED, WPS_*,
--      DATA_MISSING, REEXAMINATION_OPEN); a WPS's own checks and its approval.
--   9. Lots, draws and progressive examination (341.4.1, 341.3.4); selections listed in the
--      order they became visible.
--  10. Repairs (341.3.3): the re-examinations a repair owes.
--  11. Readiness, release, tested and closed; withdrawal with a reason; what a release was
--      judged on stays as it was (WD011).
--  12. The NDT and inspection functions: one lock order, and what follows an examination.
--
-- New SQLSTATEs (the server maps each to HTTP once):
--   WD011 a change would leave a released (tested, closed) test package not ready;
--         DETAIL {"packages": [{"testPackageId", "packageNumber", "state", "reasons", "reasonCount"}]}
--   WD012 a repaired weld accepted by hand while its re-examination is owed (refuse mode);
--         DETAIL {"checks": [{"code", "detail"}]}
--   WD013 a WPS approved (or an approved WPS changed) without what qualifies it;
--         DETAIL {"wpsId", "checks": [{"code", "detail"}]}
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.
--
-- Tables are the owner's; functions are weld_rules' (set role blocks), as in 000009: SECURITY
-- DEFINER ones act as weld_rules under row security, and only their owner may grant them.

grant create on schema weld_public, weld_hidden, weld_private to weld_rules;

--------------------------------------------------------------------------------------------------
-- 1. Dates are calendar dates of this domain (B31.3 records, ASME IX continuity): 1900-01-01 to
-- 2200-12-31. No 'infinity', no year 294276, no BC date: nothing the rules add months to can
-- leave PostgreSQL's range, and every export imports again. The check is the database's, so
-- REST, GraphQL, the CSV import and SQL refuse alike; its comment is the sentence a client sees.

-- Adds the check to a date column (again: replaces it). Rows from before that break it keep the
-- check NOT VALID, with a notice, until a DBA mends them and runs VALIDATE CONSTRAINT.
create or replace function weld_private.add_calendar_check(tbl regclass, col name) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  name text := (select c.relname from pg_class c where c.oid = tbl) || '_' || col || '_calendar';
  broken boolean;
begin
  execute format('alter table %s drop constraint if exists %I', tbl, name);
  execute format(
    'alter table %s add constraint %I check (%I between date %L and date %L) not valid',
    tbl, name, col, '1900-01-01', '2200-12-31');
  execute format('comment on constraint %I on %s is %L', name, tbl,
                 'must be a date from 1900-01-01 to 2200-12-31');
  execute format('select exists (select from %s where %I not between date %L and date %L)',
                 tbl, col, '1900-01-01', '2200-12-31') into broken;
  if broken then
    raise notice '% has dates outside 1900-01-01 .. 2200-12-31: % stays NOT VALID', tbl, name;
  else
    execute format('alter table %s validate constraint %I', tbl, name);
  end if;
end
$$;

select weld_private.add_calendar_check(c.tbl, c.col)
  from (values ('weld_public.welds'::regclass, 'welded_on'::name),
               ('weld_public.welder_qualifications', 'qualified_on'),
               ('weld_public.welder_qualifications', 'expires_on'),
               ('weld_public.welder_qualifications', 'last_continuity_on'),
               ('weld_public.ndt_records', 'examined_on'),
               ('weld_public.inspections', 'inspected_on')) as c (tbl, col);

-- The functions that read dates from JSON (record_ndt, record_inspection and their corrections)
-- say the same, with a pointer to the field.
set role weld_rules;
create or replace function weld_private.json_date(input jsonb, key text, pointer text) returns date
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> key;
begin
  if value is null then
    return null;
  end if;
  if jsonb_typeof(value) <> 'string' or (value #>> '{}') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'
     or not pg_input_is_valid(value #>> '{}', 'date')
     or (value #>> '{}')::date not between date '1900-01-01' and date '2200-12-31' then
    perform weld_private.invalid_input(
      format('%s must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31', key),
      weld_private.json_pointer(pointer, key));
  end if;
  return (value #>> '{}')::date;
end
$$;
reset role;

--------------------------------------------------------------------------------------------------
-- 2. What welds and procedures record.
--
-- Weld types: a miter weld (MW) is a circumferential butt weld of mitered pipe, examined as one
-- (B31.3 341.4.1(b)); a lap weld (LW) is the weld of a fabricated lap (Category M examines it,
-- M341.4). Socket (SW) and fillet (FW) welds are the fillet welds of ASME IX; the rest are
-- groove welds.
--
-- P-numbers (ASME IX QW-422) as the code writes them: a number, with a group letter where the
-- code has one (1, 3, 5A, 8, 10H, 15E, 43). A weld joins two base metals, each with its P-number
-- (QW-403.11 makes it an essential variable of the WPS); a PQR and a WPS record the joint they
-- were tested on or cover: one P-number (P-No. 1 to P-No. 1) or two (P-No. 1 to P-No. 8).

alter table weld_public.welds drop constraint if exists welds_type_check;
alter table weld_public.welds add constraint welds_type_check
  check (type in ('BW', 'SW', 'FW', 'BR', 'TW', 'MW', 'LW'));
comment on constraint welds_type_check on weld_public.welds is
  'must be BW (butt), SW (socket), FW (fillet), BR (branch), TW (tie-in), MW (miter) or LW (lap)';

-- Whether a weld type is a fillet weld (ASME IX: socket welds are fillet welds).
set role weld_rules;
create or replace function weld_private.is_fillet(weld_type text) returns boolean
  language sql immutable parallel safe
as $$
  select weld_type in ('SW', 'FW')
$$;
reset role;

alter table weld_public.welds
  add column if not exists base_metal_1_p_number text,
  add column if not exists base_metal_2_p_number text;
alter table weld_public.welds
  drop constraint if exists welds_base_metal_1_p_number_format,
  drop constraint if exists welds_base_metal_2_p_number_format;
alter table weld_public.welds
  add constraint welds_base_metal_1_p_number_format check (base_metal_1_p_number ~ '^[0-9]{1,3}[A-Z]?$'),
  add constraint welds_base_metal_2_p_number_format check (base_metal_2_p_number ~ '^[0-9]{1,3}[A-Z]?$');
comment on constraint welds_base_metal_1_p_number_format on weld_public.welds is
  'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)';
comment on constraint welds_base_metal_2_p_number_format on weld_public.welds is
  'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)';
comment on column weld_public.welds.base_metal_1_p_number is
  'ASME IX P-number of the base metal on one side (QW-422), e.g. 1; null: not recorded (DATA_MISSING).';
comment on column weld_public.welds.base_metal_2_p_number is
  'ASME IX P-number of the base metal on the other side, e.g. 8; null: not recorded (DATA_MISSING).';
grant insert (base_metal_1_p_number, base_metal_2_p_number),
      update (base_metal_1_p_number, base_metal_2_p_number)
  on weld_public.welds to weld_engineer;

-- A PQR's P-numbers get the same form (rows from before that break it: NOT VALID, as dates).
-- One dimension from 1, and no null element: array_to_string would skip a null and pass
-- {NULL,8}, which p_joint reads as no joint at all (a check silently switched off).
alter table weld_public.pqrs drop constraint if exists pqrs_p_numbers_format;
alter table weld_public.pqrs add constraint pqrs_p_numbers_format
  check (array_ndims(p_numbers) = 1 and array_lower(p_numbers, 1) = 1
         and array_to_string(p_numbers, ',', '?') ~ '^[0-9]{1,3}[A-Z]?(,[0-9]{1,3}[A-Z]?)?$') not valid;
comment on constraint pqrs_p_numbers_format on weld_public.pqrs is
  'must be one or two ASME IX P-numbers: digits with an optional group letter (1, 5A, 15E)';
do $$
begin
  if not exists (select from weld_public.pqrs
                  where array_ndims(p_numbers) is distinct from 1 or array_lower(p_numbers, 1) <> 1
                     or array_to_string(p_numbers, ',', '?') !~ '^[0-9]{1,3}[A-Z]?(,[0-9]{1,3}[A-Z]?)?$') then
    alter table weld_public.pqrs validate constraint pqrs_p_numbers_format;
  else
    raise notice 'PQRs with P-numbers in another form: pqrs_p_numbers_format stays NOT VALID';
  end if;
end
$$;
comment on column weld_public.pqrs.p_numbers is
  'The joint the coupon was welded on (ASME IX QW-422 P-numbers): one (P-No. 1 to P-No. 1) or two (P-No. 1 to P-No. 8).';

alter table weld_public.wps add column if not exists p_numbers text[];
alter table weld_public.wps drop constraint if exists wps_p_numbers_format;
alter table weld_public.wps add constraint wps_p_numbers_format
  check (array_ndims(p_numbers) = 1 and array_lower(p_numbers, 1) = 1
         and array_to_string(p_numbers, ',', '?') ~ '^[0-9]{1,3}[A-Z]?(,[0-9]{1,3}[A-Z]?)?$');
comment on constraint wps_p_numbers_format on weld_public.wps is
  'must be one or two ASME IX P-numbers: digits with an optional group letter (1, 5A, 15E)';
comment on column weld_public.wps.p_numbers is
  'The joint the WPS covers (QW-403.11): one P-number (P-No. 1 to P-No. 1) or two (P-No. 1 to P-No. 8); null: not recorded (DATA_MISSING).';
grant insert (p_numbers), update (p_numbers) on weld_public.wps to weld_engineer;

-- A joint as a sorted pair, so that 1 to 8 and 8 to 1 are one joint and {1} is 1 to 1; null when
-- a side is unknown. In words: "P-No. 1 to P-No. 8".
set role weld_rules;
create or replace function weld_private.p_joint(a text, b text) returns text[]
  language sql immutable parallel safe
as $$
  select case when a is not null and coalesce(b, a) is not null
              then array[least(a, coalesce(b, a)), greatest(a, coalesce(b, a))] end
$$;
create or replace function weld_private.p_joint_words(joint text[]) returns text
  language sql immutable parallel safe
as $$
  select 'P-No. ' || joint[1] || ' to P-No. ' || joint[2]
$$;
reset role;

--------------------------------------------------------------------------------------------------
-- 3. Tenant settings.
--
-- examination_lot, the designated lot (B31.3 344.1.3) random and progressive examination draw
-- from: 'line', every weld of a line for one examination extent (the code's); or 'line_welder',
-- one welder's welds of a line (finer, so stricter: each welder's work is a lot of its own).
-- Tenants from before this migration keep the lots they had ('welder_line', and 'welder_iso',
-- which is no longer offered, become 'line_welder'); new tenants get 'line'.
--
-- volumetric_interchangeable: B31.3 341.4.1(b)(1) asks for random radiography *or* random
-- ultrasonic examination, so an RT requirement is met by UT and the other way round (on by
-- default); off, each method is met only by itself.

alter table weld_public.tenant_settings drop constraint if exists tenant_settings_examination_lot_check;
update weld_public.tenant_settings set examination_lot = 'line_welder'
 where examination_lot in ('welder_line', 'welder_iso');
alter table weld_public.tenant_settings alter column examination_lot set default 'line';
alter table weld_public.tenant_settings add constraint tenant_settings_examination_lot_check
  check (examination_lot in ('line', 'line_welder'));
comment on column weld_public.tenant_settings.examination_lot is
  'The designated lot of random and progressive examination (B31.3 344.1.3): line (default: every weld of a line, for one examination extent) or line_welder (one welder''s welds of a line: stricter).';

alter table weld_public.tenant_settings
  add column if not exists volumetric_interchangeable boolean not null default true;
comment on column weld_public.tenant_settings.volumetric_interchangeable is
  'B31.3 341.4.1(b)(1): random RT or random UT. On (default): an RT requirement is met by a UT record and the other way round; off: each only by itself.';

--------------------------------------------------------------------------------------------------
-- 4. Rule tables: rows per tenant, seeded with the codes' values when the tenant is created. API
-- roles read them; a DBA changes them in SQL and the next check, draw or readiness obeys.

-- 4a. The examination each fluid service requires, one row per method and weld type: the percent
-- of those welds examined (a lot's sample rounds up), and the methods whose records meet it
-- besides the method itself (RT's volumetric equal, UT, comes from the tenant setting). An ISO
-- requires, for RT, the greater of these rows and its own rt_percent (its piping class may ask
-- for more); rt_percent applies to the weld types of the service's RT rows, or, where it has
-- none, to the circumferential butt welds (BW, MW, TW).
--
-- The rows of 000009 (one per method and service, with a list of types) become rows per type;
-- a percent a DBA changed carries over to every type of that method and service, and a default
-- row a DBA deleted stays deleted.
do $$
begin
  if exists (select from information_schema.columns
              where table_schema = 'weld_public' and table_name = 'examination_rules'
                and column_name = 'weld_types') then
    alter table weld_public.examination_rules rename to examination_rules_before_f13;
    alter table weld_public.examination_rules_before_f13 rename constraint examination_rules_pkey
      to examination_rules_before_f13_pkey;
  end if;
end
$$;

create table if not exists weld_public.examination_rules (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  fluid_service text not null
                check (fluid_service in ('normal', 'category_d', 'category_m', 'severe_cyclic', 'high_pressure')),
  method        text not null check (method in ('RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT')),
  weld_type     text not null check (weld_type in ('BW', 'SW', 'FW', 'BR', 'TW', 'MW', 'LW')),
  percent       numeric(5, 2) not null check (percent between 0 and 100 and percent <> 'NaN'),
  closed_by     text[] not null default '{}'
                check (closed_by <@ array['RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT']),
  clause        text not null check (char_length(clause) between 1 and 50),
  note          text check (char_length(note) <= 500),
  primary key (tenant_id, fluid_service, method, weld_type)
);
comment on table weld_public.examination_rules is
  E'@aggregates on\nThe examination each fluid service requires (B31.3 341.4, M341.4, K341.4), per tenant, method and weld type: the percent examined and the other methods that meet it. A DBA changes the rows, e.g.\nupdate weld_public.examination_rules set percent = 10 where tenant_id = ''...'' and fluid_service = ''normal'' and method = ''RT'';';
comment on column weld_public.examination_rules.closed_by is
  'Methods whose records meet this requirement besides the method itself (e.g. PT for MT); RT and UT meet each other when the tenant''s volumetric_interchangeable is on.';
comment on column weld_public.examination_rules.clause is 'The paragraph the row comes from, e.g. B31.3 341.4.1(b)(1).';
select weld_private.secure_tenant_table('weld_public.examination_rules')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.examination_rules'::regclass and p.polname = 'tenant_isolation');
grant select on weld_public.examination_rules to weld_viewer, weld_rules;

-- 4b. The sizes a welder's test coupon qualifies (ASME IX QW-452). A row matches a coupon inside
-- its `coupon` range (and, where three_layers, a qualification whose coupon was deposited in at
-- least three layers); where several match, the most generous wins.
--   diameter (QW-452.3, outside diameters): from min_in (null: the coupon's own OD) up to
--     max_factor x the coupon (null: no upper limit).
--   thickness (QW-452.1(b), weld metal deposited): up to max_factor x t (null: any thickness).
do $$
begin
  if exists (select from information_schema.columns
              where table_schema = 'weld_public' and table_name = 'qualification_range_rules'
                and column_name = 'coupon_from_in') then
    alter table weld_public.qualification_range_rules rename to qualification_range_rules_before_f13;
    alter table weld_public.qualification_range_rules_before_f13
      rename constraint qualification_range_rules_pkey to qualification_range_rules_before_f13_pkey;
  end if;
end
$$;

create table if not exists weld_public.qualification_range_rules (
  tenant_id    uuid not null default weld_hidden.current_tenant_id()
               references weld_public.tenants on delete cascade,
  dimension    text not null check (dimension in ('diameter', 'thickness')),
  coupon       numrange not null check (not isempty(coupon) and lower(coupon) >= 0),
  three_layers boolean not null default false,
  min_in       numeric(6, 3) check (min_in >= 0 and min_in <> 'NaN'),
  max_factor   numeric(5, 2) check (max_factor > 0 and max_factor <> 'NaN'),
  clause       text not null check (char_length(clause) between 1 and 50),
  note         text check (char_length(note) <= 500),
  primary key (tenant_id, dimension, coupon, three_layers),
  constraint qualification_range_rules_no_overlap exclude using gist
    (tenant_id with =, dimension with =, three_layers with =, coupon with &&)
);
comment on table weld_public.qualification_range_rules is
  E'@aggregates on\nThe sizes a welder''s test coupon qualifies (ASME IX QW-452.3 diameter, QW-452.1(b) thickness), per tenant; a DBA changes the rows.';
comment on column weld_public.qualification_range_rules.coupon is
  'The coupon sizes the row applies to (outside diameter or weld metal thickness, inches), with its bounds: [1,2.875] includes 2.875.';
comment on column weld_public.qualification_range_rules.three_layers is
  'The row applies only to a qualification whose coupon was deposited in at least three layers (QW-452.1(b)).';
select weld_private.secure_tenant_table('weld_public.qualification_range_rules')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.qualification_range_rules'::regclass
                      and p.polname = 'tenant_isolation');
grant select on weld_public.qualification_range_rules to weld_viewer, weld_rules;

-- 4c. The base-metal thickness a PQR supports, from its coupon thickness T (ASME IX QW-451.1):
-- from min_in (or min_factor x T) to max_in (or max_factor x T; where both, the smaller).
create table if not exists weld_public.procedure_thickness_rules (
  tenant_id  uuid not null default weld_hidden.current_tenant_id()
             references weld_public.tenants on delete cascade,
  coupon     numrange not null check (not isempty(coupon) and lower(coupon) >= 0),
  min_in     numeric(6, 3) check (min_in >= 0 and min_in <> 'NaN'),
  min_factor numeric(5, 2) check (min_factor > 0 and min_factor <> 'NaN'),
  max_in     numeric(6, 3) check (max_in > 0 and max_in <> 'NaN'),
  max_factor numeric(5, 2) check (max_factor > 0 and max_factor <> 'NaN'),
  clause     text not null check (char_length(clause) between 1 and 50),
  note       text check (char_length(note) <= 500),
  primary key (tenant_id, coupon),
  constraint procedure_thickness_rules_bounds
    check ((min_in is null) <> (min_factor is null) and (max_in is not null or max_factor is not null)),
  constraint procedure_thickness_rules_no_overlap exclude using gist (tenant_id with =, coupon with &&)
);
comment on table weld_public.procedure_thickness_rules is
  E'@aggregates on\nThe base-metal thickness a PQR''s coupon thickness T supports (ASME IX QW-451.1), per tenant; a WPS''s thickness range must lie within what its PQRs support. A DBA changes the rows.';

-- 4d. The joints a PQR's joint qualifies beyond itself (ASME IX QW-424.1): a PQR of P-No. 4 to
-- P-No. 4 also qualifies P-No. 4 to P-No. 3 and P-No. 4 to P-No. 1. Joints as sorted pairs.
create table if not exists weld_public.p_number_rules (
  tenant_id uuid not null default weld_hidden.current_tenant_id()
            references weld_public.tenants on delete cascade,
  tested    text[] not null,
  covers    text[] not null,
  clause    text not null check (char_length(clause) between 1 and 50),
  note      text check (char_length(note) <= 500),
  primary key (tenant_id, tested, covers),
  constraint p_number_rules_pairs check (
    cardinality(tested) = 2 and tested[1] <= tested[2] and cardinality(covers) = 2 and covers[1] <= covers[2]
    and array_to_string(tested || covers, ',') ~ '^([0-9]{1,3}[A-Z]?,){3}[0-9]{1,3}[A-Z]?$')
);
comment on table weld_public.p_number_rules is
  E'@aggregates on\nThe base-metal joints a PQR''s joint qualifies besides its own (ASME IX QW-424.1), as sorted P-number pairs, per tenant; a DBA changes the rows.';

select weld_private.secure_tenant_table(t)
  from unnest(array['weld_public.procedure_thickness_rules', 'weld_public.p_number_rules']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');
grant select on weld_public.procedure_thickness_rules, weld_public.p_number_rules to weld_viewer, weld_rules;

-- The codes' values, seeded for every tenant (and again: nothing a DBA changed is overwritten).
create or replace function weld_private.seed_code_rules(for_tenant uuid) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_public.examination_rules
    (tenant_id, fluid_service, method, weld_type, percent, closed_by, clause, note)
  select for_tenant, r.fluid_service, r.method, t.weld_type, r.percent, r.closed_by, r.clause, r.note
    from (values
      ('normal', 'RT', '{BW,MW,TW}'::text[], 5, '{}'::text[], 'B31.3 341.4.1(b)(1)',
       'random RT (or UT) of at least 5% of the circumferential butt and miter groove welds of each lot'),
      ('normal', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 5, '{}', 'B31.3 341.4.1(a)',
       'visual examination of at least 5% of the fabrication, each welder''s work represented'),
      ('category_d', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 341.4.2',
       'Category D: visual examination only'),
      ('category_m', 'RT', '{BW,MW,TW,LW,BR}', 20, '{}', 'B31.3 M341.4(b)',
       'Category M: at least 20% of the butt, miter, fabricated lap and branch welds by full RT'),
      ('category_m', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 M341.4(a)',
       'Category M: 100% visual examination'),
      ('severe_cyclic', 'RT', '{BW,MW,TW}', 100, '{}', 'B31.3 341.4.3(b)',
       'severe cyclic: 100% RT (or UT) of butt and miter welds'),
      ('severe_cyclic', 'RT', '{BR}', 100, '{MT,PT}', 'B31.3 341.4.3(b), (c)',
       'severe cyclic: 100% RT (or UT) of fabricated branch connection welds; a branch weld not radiographed gets MT or PT'),
      ('severe_cyclic', 'MT', '{SW}', 100, '{PT}', 'B31.3 341.4.3(c)',
       'severe cyclic: MT or PT of every socket weld'),
      ('severe_cyclic', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 341.4.3(a)',
       'severe cyclic: 100% visual examination'),
      ('high_pressure', 'RT', '{BW,MW,TW,BR}', 100, '{}', 'B31.3 K341.4.1(b)',
       'high pressure: 100% RT (or UT) of butt, miter and branch welds'),
      ('high_pressure', 'VT', '{BW,MW,TW,BR,LW,SW,FW}', 100, '{}', 'B31.3 K341.4.1(a)',
       'high pressure: 100% visual examination')
    ) as r (fluid_service, method, weld_types, percent, closed_by, clause, note)
    cross join lateral unnest(r.weld_types) as t (weld_type)
  on conflict do nothing;

  insert into weld_public.qualification_range_rules
    (tenant_id, dimension, coupon, three_layers, min_in, max_factor, clause, note)
  values
    (for_tenant, 'diameter', '[0,1)', false, null, null, 'ASME IX QW-452.3',
     'a coupon under 1 in. OD qualifies the size welded and up'),
    (for_tenant, 'diameter', '[1,2.875]', false, 1, null, 'ASME IX QW-452.3',
     '1 in. to 2 7/8 in. OD inclusive qualifies 1 in. and up'),
    (for_tenant, 'diameter', '(2.875,)', false, 2.875, null, 'ASME IX QW-452.3',
     'over 2 7/8 in. OD qualifies 2 7/8 in. and up'),
    (for_tenant, 'thickness', '[0,)', false, null, 2, 'ASME IX QW-452.1(b)',
     'weld metal t qualifies up to 2t'),
    (for_tenant, 'thickness', '[0.5,)', true, null, null, 'ASME IX QW-452.1(b)',
     't of 1/2 in. or more, in at least three layers, qualifies any thickness')
  on conflict do nothing;

  insert into weld_public.procedure_thickness_rules
    (tenant_id, coupon, min_in, min_factor, max_in, max_factor, clause, note)
  values
    (for_tenant, '[0,0.0625)', null, 1, null, 2, 'ASME IX QW-451.1', 'T under 1/16 in.: T to 2T'),
    (for_tenant, '[0.0625,0.375]', 0.0625, null, null, 2, 'ASME IX QW-451.1', '1/16 to 3/8 in.: 1/16 in. to 2T'),
    (for_tenant, '(0.375,1.5)', 0.1875, null, null, 2, 'ASME IX QW-451.1', 'over 3/8 in.: 3/16 in. to 2T'),
    (for_tenant, '[1.5,)', 0.1875, null, 8, null, 'ASME IX QW-451.1', '1 1/2 in. and over: 3/16 in. to 8 in.')
  on conflict do nothing;

  insert into weld_public.p_number_rules (tenant_id, tested, covers, clause, note)
  select for_tenant, r.tested, r.covers, 'ASME IX QW-424.1', r.note
    from (values
      ('{3,3}'::text[], '{1,3}'::text[], 'P-No. 3 to 3 also qualifies P-No. 3 to 1'),
      ('{4,4}', '{3,4}', 'P-No. 4 to 4 also qualifies P-No. 4 to 3 and 1'),
      ('{4,4}', '{1,4}', 'P-No. 4 to 4 also qualifies P-No. 4 to 3 and 1'),
      ('{3,4}', '{1,4}', 'P-No. 4 to 3 or 1 qualifies P-No. 4 to 3 and 1'),
      ('{1,4}', '{3,4}', 'P-No. 4 to 3 or 1 qualifies P-No. 4 to 3 and 1'),
      ('{5A,5A}', '{4,5A}', 'P-No. 5A to 5A also qualifies P-No. 5A to 4, 3 and 1'),
      ('{5A,5A}', '{3,5A}', 'P-No. 5A to 5A also qualifies P-No. 5A to 4, 3 and 1'),
      ('{5A,5A}', '{1,5A}', 'P-No. 5A to 5A also qualifies P-No. 5A to 4, 3 and 1'),
      ('{4,5A}', '{3,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{4,5A}', '{1,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{3,5A}', '{4,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{3,5A}', '{1,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{1,5A}', '{4,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{1,5A}', '{3,5A}', 'P-No. 5A to 4, 3 or 1 qualifies P-No. 5A to 4, 3 and 1'),
      ('{15E,15E}', '{15E,5B}', 'P-No. 15E to 15E also qualifies P-No. 15E or 5B to 15E or 5B'),
      ('{15E,15E}', '{5B,5B}', 'P-No. 15E to 15E also qualifies P-No. 15E or 5B to 15E or 5B')
    ) as r (tested, covers, note)
  on conflict do nothing;
$$;

-- Every tenant: the defaults, then what its DBA had changed in the tables of 000009.
select weld_private.seed_code_rules(t.id) from weld_public.tenants t;

do $$
begin
  if to_regclass('weld_public.examination_rules_before_f13') is not null then
    -- A percent a DBA changed applies to every weld type of that method and service.
    update weld_public.examination_rules r set percent = o.percent
      from weld_public.examination_rules_before_f13 o
     where o.tenant_id = r.tenant_id and o.fluid_service = r.fluid_service and o.method = r.method
       and o.percent <> r.percent;
    -- Types and rows a DBA had added.
    insert into weld_public.examination_rules
      (tenant_id, fluid_service, method, weld_type, percent, clause, note)
    select o.tenant_id, o.fluid_service, o.method, t.weld_type, o.percent, 'tenant rule', o.note
      from weld_public.examination_rules_before_f13 o
      cross join lateral unnest(o.weld_types) as t (weld_type)
    on conflict do nothing;
    -- Default rows a DBA had deleted stay deleted.
    delete from weld_public.examination_rules r
     using (values ('normal', 'RT'), ('category_m', 'RT'), ('severe_cyclic', 'RT'),
                   ('high_pressure', 'RT'), ('category_d', 'VT')) as d (fluid_service, method)
     where r.fluid_service = d.fluid_service and r.method = d.method
       and not exists (select from weld_public.examination_rules_before_f13 o
                        where o.tenant_id = r.tenant_id and o.fluid_service = d.fluid_service
                          and o.method = d.method);
    drop table weld_public.examination_rules_before_f13;
  end if;

  if to_regclass('weld_public.qualification_range_rules_before_f13') is not null then
    -- Rows a DBA changed replace the defaults of their dimension.
    delete from weld_public.qualification_range_rules r
     where exists (
       select from weld_public.qualification_range_rules_before_f13 o
        where o.tenant_id = r.tenant_id and o.dimension = r.dimension
          and not exists (
            select from (values ('diameter', 0, 1, null, null), ('diameter', 1, 2.875, 1, null),
                                ('diameter', 2.875, null, 2.875, null),
                                ('thickness', 0, 0.375, null, 2), ('thickness', 0.375, null, null, 2))
                        as d (dimension, coupon_from_in, coupon_below_in, min_in, max_factor)
             where (o.dimension, o.coupon_from_in, o.coupon_below_in, o.min_in, o.max_factor)
                   is not distinct from
                   (d.dimension, d.coupon_from_in::numeric, d.coupon_below_in::numeric,
                    d.min_in::numeric, d.max_factor::numeric)));
    insert into weld_public.qualification_range_rules
      (tenant_id, dimension, coupon, min_in, max_factor, clause, note)
    select o.tenant_id, o.dimension, numrange(o.coupon_from_in, o.coupon_below_in, '[)'),
           o.min_in, o.max_factor, o.clause, o.note
      from weld_public.qualification_range_rules_before_f13 o
     where not exists (select from weld_public.qualification_range_rules r
                        where r.tenant_id = o.tenant_id and r.dimension = o.dimension)
    on conflict do nothing;
    drop table weld_public.qualification_range_rules_before_f13;
  end if;
end
$$;

--------------------------------------------------------------------------------------------------
-- 5. Welder qualifications (ASME IX QW-300) and the continuity log.
--
-- joint: a groove qualification covers groove and fillet welds, a fillet welds of every size and
--   thickness (QW-303.1, QW-452.4 note); a fillet qualification covers fillet welds only (QW-303.2).
-- three_layers: the coupon's weld metal was deposited in at least three layers, so that t of
--   1/2 in. or more qualifies any thickness (QW-452.1(b)).
-- revoked_on, revocation_reason: revoked because there was a specific reason to question the
--   welder's ability (QW-322.1(b)); not valid from that day on.
-- renews_qualification_id: the qualification this one renews (QW-322.2): a new test, a new row
--   with its own date; the old one keeps its history.

alter table weld_public.welder_qualifications
  add column if not exists joint text not null default 'groove',
  add column if not exists three_layers boolean not null default false,
  add column if not exists revoked_on date,
  add column if not exists revocation_reason text,
  add column if not exists renews_qualification_id uuid;
alter table weld_public.welder_qualifications
  drop constraint if exists welder_qualifications_joint_check,
  drop constraint if exists welder_qualifications_revocation,
  drop constraint if exists welder_qualifications_revoked_after_qualified,
  drop constraint if exists welder_qualifications_renews_qualification_id_fkey,
  drop constraint if exists welder_qualifications_renews_another;
alter table weld_public.welder_qualifications
  add constraint welder_qualifications_joint_check check (joint in ('groove', 'fillet')),
  add constraint welder_qualifications_revocation check (
    (revoked_on is null) = (revocation_reason is null)
    and char_length(btrim(revocation_reason)) between 1 and 2000),
  add constraint welder_qualifications_revoked_after_qualified check (revoked_on >= qualified_on),
  add constraint welder_qualifications_renews_another check (renews_qualification_id <> id),
  add constraint welder_qualifications_renews_qualification_id_fkey
    foreign key (tenant_id, renews_qualification_id) references weld_public.welder_qualifications
    on delete restrict;
comment on constraint welder_qualifications_joint_check on weld_public.welder_qualifications is
  'must be groove or fillet';
comment on constraint welder_qualifications_revocation on weld_public.welder_qualifications is
  'revokedOn and revocationReason go together: a revocation has a date and a reason (at most 2000 characters)';
comment on constraint welder_qualifications_revoked_after_qualified on weld_public.welder_qualifications is
  'must be on or after qualifiedOn';
comment on constraint welder_qualifications_renews_another on weld_public.welder_qualifications is
  'a qualification cannot renew itself';
comment on constraint welder_qualifications_renews_qualification_id_fkey on weld_public.welder_qualifications is
  E'@fieldName renewsQualification\n@foreignFieldName renewals';
create index if not exists welder_qualifications_renews_idx
  on weld_public.welder_qualifications (tenant_id, renews_qualification_id);
select weld_private.add_calendar_check('weld_public.welder_qualifications', 'revoked_on');
comment on column weld_public.welder_qualifications.joint is
  'groove (default): covers groove welds and fillet welds of every size (QW-303.1); fillet: fillet welds only (QW-303.2).';
comment on column weld_public.welder_qualifications.three_layers is
  'The coupon''s weld metal was deposited in at least three layers: with t of 1/2 in. or more it qualifies any thickness (QW-452.1(b)).';
comment on column weld_public.welder_qualifications.revoked_on is
  'Revoked from this day on (QW-322.1(b)), with revocation_reason; null: not revoked.';
comment on column weld_public.welder_qualifications.revocation_reason is
  'Why it was revoked: the specific reason to question the welder''s ability (QW-322.1(b)).';
comment on column weld_public.welder_qualifications.renews_qualification_id is
  'The qualification of the same welder this one renews (QW-322.2).';
grant insert (joint, three_layers, revoked_on, revocation_reason, renews_qualification_id),
      update (joint, three_layers, revoked_on, revocation_reason, renews_qualification_id)
  on weld_public.welder_qualifications to weld_engineer;

-- A renewal renews a qualification of the same welder qualified before it: dates strictly rising
-- along a chain of renewals, so no chain comes back to where it began. Held from both ends: the
-- renewal's date and link, and the date of a qualification renewed.
set role weld_rules;
create or replace function weld_private.tg_welder_qualifications__renews() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  renewed weld_public.welder_qualifications;
begin
  if tg_op = 'UPDATE' and new.qualified_on > old.qualified_on and exists (
       select from weld_public.welder_qualifications q
        where q.tenant_id = new.tenant_id and q.renews_qualification_id = new.id
          and q.qualified_on <= new.qualified_on) then
    raise exception 'a renewal of this qualification was qualified on or before %: a qualification is renewed only after it was qualified',
                    new.qualified_on
      using errcode = 'WD007', detail = json_build_object('pointer', '/qualifiedOn')::text;
  end if;
  if new.renews_qualification_id is null then
    return new;
  end if;
  select * into renewed from weld_public.welder_qualifications q
   where q.tenant_id = new.tenant_id and q.id = new.renews_qualification_id;
  if found and (renewed.welder_id <> new.welder_id or renewed.qualified_on >= new.qualified_on) then
    raise exception 'a qualification renews one of the same welder qualified before itself'
      using errcode = 'WD007', detail = json_build_object('pointer', '/renewsQualificationId')::text;
  end if;
  return new;
end
$$;
reset role;
drop trigger if exists _200_renews on weld_public.welder_qualifications;
create trigger _200_renews before insert or update of renews_qualification_id, welder_id, qualified_on
  on weld_public.welder_qualifications
  for each row execute function weld_private.tg_welder_qualifications__renews();

-- The continuity log (QW-322.1(a)): documented uses of a process by a welder (a shop log, a
-- record from another project). Welds on record are uses too; welders_continuity() lists both.
-- Append-only: a use is a fact, corrected by nothing but another fact.
create table if not exists weld_public.welder_continuity (
  tenant_id   uuid not null default weld_hidden.current_tenant_id(),
  id          uuid not null default gen_random_uuid(),
  welder_id   uuid not null,
  used_on     date not null,
  process     text not null check (process in ('SMAW', 'GTAW', 'GMAW', 'FCAW', 'SAW', 'PAW')),
  reference   text not null check (char_length(btrim(reference)) between 1 and 500),
  recorded_by uuid default weld_hidden.current_user_id(),
  created_at  timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint welder_continuity_welder_id_fkey
    foreign key (tenant_id, welder_id) references weld_public.welders on delete restrict,
  constraint welder_continuity_recorded_by_fkey
    foreign key (tenant_id, recorded_by) references weld_public.users on delete restrict
);
create index if not exists welder_continuity_welder_idx
  on weld_public.welder_continuity (tenant_id, welder_id, process, used_on);
comment on table weld_public.welder_continuity is
  E'@aggregates on\nDocumented uses of a welding process by a welder (ASME IX QW-322.1(a)): each extends the welder''s qualifications for that process. Welds on record count as uses without a row here.';
comment on column weld_public.welder_continuity.process is 'One process (SMAW, GTAW, ...).';
comment on column weld_public.welder_continuity.reference is 'The document that shows the use (a log, a report number).';
comment on constraint welder_continuity_welder_id_fkey on weld_public.welder_continuity is
  E'@fieldName welder\n@foreignFieldName continuityUses';
comment on constraint welder_continuity_recorded_by_fkey on weld_public.welder_continuity is
  E'@fieldName recordedByUser\n@foreignFieldName continuityUses';
select weld_private.secure_tenant_table('weld_public.welder_continuity')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.welder_continuity'::regclass and p.polname = 'tenant_isolation');
select weld_private.add_calendar_check('weld_public.welder_continuity', 'used_on');
-- A use is recorded after it happened: not dated after the day it is recorded, in any time zone
-- (UTC+14 is the first to start a day), so a log entry cannot carry a qualification forward.
alter table weld_public.welder_continuity drop constraint if exists welder_continuity_used_on_recorded;
alter table weld_public.welder_continuity add constraint welder_continuity_used_on_recorded
  check (used_on <= (created_at at time zone 'Etc/GMT-14')::date);
comment on constraint welder_continuity_used_on_recorded on weld_public.welder_continuity is
  'must not be later than today: a use is recorded once it happened';
comment on constraint welder_continuity_reference_check on weld_public.welder_continuity is
  'must be 1 to 500 characters';
grant select on weld_public.welder_continuity to weld_viewer, weld_rules;
grant insert (welder_id, used_on, process, reference) on weld_public.welder_continuity to weld_inspector;
drop trigger if exists _100_set_recorded_by on weld_public.welder_continuity;
create trigger _100_set_recorded_by before insert on weld_public.welder_continuity
  for each row execute function weld_private.tg__set_recorded_by();

--------------------------------------------------------------------------------------------------
-- 6. Records follow reality: a weld is examined only once it is welded, and never before the day
-- it was welded. Whoever writes (a request, an import, a DBA), the database refuses (WD007 with
-- the field to fix): an NDT record or inspection of a weld with no date welded, one dated before
-- a weld it covers was welded, and a weld's date welded moved after, or taken off, an
-- examination that covers it. A fit-up inspection is the exception: it comes before the welding.

set role weld_rules;

-- The first weld of `links` (weld_id, examined_on, record) that breaks the rule, as a refusal.
-- `what`: 'ndt' or 'inspection', for the pointers.
create or replace function weld_private.refuse_unwelded_examinations(
  links jsonb, what text
) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  bad record;
begin
  select w.weld_number, i.iso_number, w.welded_on, (l ->> 'examinedOn')::date as examined_on,
         l ->> 'record' as record
    into bad
    from jsonb_array_elements(links) as l
    join weld_public.welds w
      on w.tenant_id = (l ->> 'tenantId')::uuid and w.id = (l ->> 'weldId')::uuid
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
   where w.welded_on is null or w.welded_on > (l ->> 'examinedOn')::date
   order by w.welded_on is not null, i.iso_number, w.weld_number
   limit 1;
  if not found then
    return;
  end if;
  if bad.welded_on is null then
    raise exception 'weld % on ISO % has no date welded: a weld is examined once it is welded (record its weldedOn first)',
      bad.weld_number, bad.iso_number
      using errcode = 'WD007',
            detail = json_build_object('pointer', case what when 'ndt' then '/welds' else '/weldIds' end)::text;
  end if;
  raise exception 'weld % on ISO % was welded on %, after % dated %',
    bad.weld_number, bad.iso_number, bad.welded_on, bad.record, bad.examined_on
    using errcode = 'WD007',
          detail = json_build_object('pointer', case what when 'ndt' then '/examinedOn' else '/inspectedOn' end)::text;
end
$$;

-- The links refuse_unwelded_examinations judges, for welds about to be examined on a day.
create or replace function weld_private.examination_links(weld_ids uuid[], examined_on date, record text)
  returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_agg(jsonb_build_object('tenantId', weld_hidden.current_tenant_id(), 'weldId', w,
                                      'examinedOn', examined_on, 'record', record))
    from unnest(weld_ids) as w
$$;

create or replace function weld_private.tg_ndt_record_welds__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', n.tenant_id, 'weldId', n.weld_id, 'examinedOn', r.examined_on,
             'record', format('%s report %s', r.method, r.report_number)))
      from new_links n
      join weld_public.ndt_records r on r.tenant_id = n.tenant_id and r.id = n.ndt_record_id), 'ndt');
  return null;
end
$$;

create or replace function weld_private.tg_ndt_records__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', nw.tenant_id, 'weldId', nw.weld_id, 'examinedOn', new.examined_on,
             'record', format('%s report %s', new.method, new.report_number)))
      from weld_public.ndt_record_welds nw
     where nw.tenant_id = new.tenant_id and nw.ndt_record_id = new.id), 'ndt');
  return null;
end
$$;

create or replace function weld_private.tg_inspection_welds__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', n.tenant_id, 'weldId', n.weld_id, 'examinedOn', i.inspected_on,
             'record', format('the %s inspection', i.kind)))
      from new_links n
      join weld_public.inspections i on i.tenant_id = n.tenant_id and i.id = n.inspection_id
     where i.kind <> 'fit-up'), 'inspection');
  return null;
end
$$;

create or replace function weld_private.tg_inspections__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', iw.tenant_id, 'weldId', iw.weld_id, 'examinedOn', new.inspected_on,
             'record', format('the %s inspection', new.kind)))
      from weld_public.inspection_welds iw
     where iw.tenant_id = new.tenant_id and iw.inspection_id = new.id and new.kind <> 'fit-up'),
    'inspection');
  return null;
end
$$;

-- A weld's date welded may not move after, or be taken off, an examination that covers it. A row
-- trigger WHEN the date changed: status changes, the hot path, never call it.
create or replace function weld_private.tg_welds__examined_after_welded() returns trigger
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  first record;
begin
  select x.record, x.examined_on into first
    from weld_private.weld_examinations x
   where x.tenant_id = new.tenant_id and x.weld_id = new.id
     and (new.welded_on is null or x.examined_on < new.welded_on)
   order by x.examined_on
   limit 1;
  if not found then
    return null;
  end if;
  if new.welded_on is null then
    raise exception 'weld % is covered by % of %: its date welded cannot be taken off',
      new.weld_number, first.record, first.examined_on
      using errcode = 'WD007', detail = json_build_object('pointer', '/weldedOn')::text;
  end if;
  raise exception 'weld % is covered by % of %: it was welded on or before that day, not on %',
    new.weld_number, first.record, first.examined_on, new.welded_on
    using errcode = 'WD007', detail = json_build_object('pointer', '/weldedOn')::text;
end
$$;

reset role;

drop trigger if exists _300_welded on weld_public.ndt_record_welds;
create trigger _300_welded after insert on weld_public.ndt_record_welds
  referencing new table as new_links
  for each statement execute function weld_private.tg_ndt_record_welds__welded();
drop trigger if exists _300_welded on weld_public.ndt_records;
create trigger _300_welded after update of examined_on on weld_public.ndt_records
  for each row when (old.examined_on is distinct from new.examined_on)
  execute function weld_private.tg_ndt_records__welded();
drop trigger if exists _300_welded on weld_public.inspection_welds;
create trigger _300_welded after insert on weld_public.inspection_welds
  referencing new table as new_links
  for each statement execute function weld_private.tg_inspection_welds__welded();
drop trigger if exists _300_welded on weld_public.inspections;
create trigger _300_welded after update of inspected_on, kind on weld_public.inspections
  for each row when ((old.inspected_on, old.kind) is distinct from (new.inspected_on, new.kind))
  execute function weld_private.tg_inspections__welded();
drop trigger if exists _300_examined_after_welded on weld_public.welds;
create trigger _300_examined_after_welded after update of welded_on on weld_public.welds
  for each row when (old.welded_on is distinct from new.welded_on)
  execute function weld_private.tg_welds__examined_after_welded();

--------------------------------------------------------------------------------------------------
-- 7. Examinations as one list, and which methods meet which requirement.
--
-- Every weld's result in every NDT record (the one given, else its film intervals'), and every
-- visual inspection as method VT (B31.3 344.2: visual examination is an examination like any
-- other; an inspector records it as an NDT record of method VT or as a visual inspection).
-- security_invoker: it reads with the rights, and under the row security, of whoever queries it.
create or replace view weld_private.weld_examinations with (security_invoker = true) as
  select nw.tenant_id, nw.weld_id, r.method, r.examined_on,
         weld_public.ndt_record_welds_effective_result(nw) as result,
         r.id as ndt_record_id, null::uuid as inspection_id,
         format('%s report %s', r.method, r.report_number) as record, r.created_at
    from weld_public.ndt_record_welds nw
    join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
  union all
  select iw.tenant_id, iw.weld_id, 'VT', i.inspected_on, i.result, null, i.id,
         format('the visual inspection of %s', i.inspected_on), i.created_at
    from weld_public.inspection_welds iw
    join weld_public.inspections i on i.tenant_id = iw.tenant_id and i.id = iw.inspection_id
   where i.kind = 'visual';
comment on view weld_private.weld_examinations is
  'Every examination of every weld: NDT records (each weld''s result) and visual inspections (as VT).';
grant select on weld_private.weld_examinations to weld_rules;
grant select on weld_public.wps_pqrs to weld_rules;

set role weld_rules;

-- The methods whose records meet a requirement of `method`: the method, the rule's closed_by,
-- and RT and UT for each other where the tenant has them interchangeable (341.4.1(b)(1)). The
-- pure part, for set-based use (lot_candidates), and the lookup for one weld.
create or replace function weld_private.closers(method text, closed_by text[], volumetric boolean)
  returns text[]
  language sql immutable parallel safe
as $$
  select array(select distinct m
                 from unnest(array[method] || coalesce(closed_by, '{}')
                             || case when volumetric and method in ('RT', 'UT') then array['RT', 'UT']
                                     else '{}' end) as m
                order by 1)
$$;

create or replace function weld_private.closing_methods(
  tenant uuid, method text, fluid_service text, weld_type text
) returns text[]
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select weld_private.closers(
           closing_methods.method,
           (select r.closed_by from weld_public.examination_rules r
             where r.tenant_id = tenant and r.fluid_service = closing_methods.fluid_service
               and r.method = closing_methods.method and r.weld_type = closing_methods.weld_type),
           coalesce((select s.volumetric_interchangeable from weld_public.tenant_settings s
                      where s.tenant_id = tenant), true))
$$;


-- Methods in words: {MT,PT} -> "MT or PT".
create or replace function weld_private.methods_words(methods text[]) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when cardinality(methods) <= 1 then methods[1]
              else array_to_string(methods[1:cardinality(methods) - 1], ', ')
                   || ' or ' || methods[cardinality(methods)] end
$$;

reset role;

--------------------------------------------------------------------------------------------------
-- 8. Repairs (B31.3 341.3.3): a repaired weld is examined again by the methods that rejected it.
-- When a weld leaves REPAIR (it was re-welded), each method whose examination rejected it since
-- its last re-weld is owed again: a row here. A record of that method (or its volumetric equal)
-- dated on or after the re-weld meets it (computed, so a correction can open it again). Until
-- then the weld's checks and its package's readiness say REEXAMINATION_OPEN, and where the
-- tenant refuses failing welds, accepting it by hand is refused (WD012). A repair starts no new
-- progressive round (341.3.4): section 9 draws only for original work.

create table if not exists weld_public.weld_reexaminations (
  tenant_id    uuid not null default weld_hidden.current_tenant_id(),
  id           uuid not null default gen_random_uuid(),
  weld_id      uuid not null,
  method       text not null check (method in ('RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT')),
  repair_cycle integer not null check (repair_cycle >= 1),
  rewelded_on  date not null,
  -- The examination that rejected the weld before the repair.
  cause        text not null check (char_length(cause) between 1 and 300),
  owed_since   timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint weld_reexaminations_once unique (tenant_id, weld_id, repair_cycle, method),
  constraint weld_reexaminations_weld_id_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict
);
comment on table weld_public.weld_reexaminations is
  E'@aggregates on\nWhat a repair owes (B31.3 341.3.3): the weld examined again, by each method that rejected it, on or after the day it was re-welded.';
comment on column weld_public.weld_reexaminations.rewelded_on is
  'The day the weld left REPAIR (UTC): a record of the method dated on or after it meets the requirement.';
comment on constraint weld_reexaminations_weld_id_fkey on weld_public.weld_reexaminations is
  E'@fieldName weld\n@foreignFieldName reexaminations';
select weld_private.secure_tenant_table('weld_public.weld_reexaminations')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.weld_reexaminations'::regclass and p.polname = 'tenant_isolation');
select weld_private.add_calendar_check('weld_public.weld_reexaminations', 'rewelded_on');
grant select on weld_public.weld_reexaminations to weld_viewer;
grant select, insert on weld_public.weld_reexaminations to weld_rules;

set role weld_rules;

-- Each re-examination of the given welds with the examination that meets it (null: open). The
-- record must be of the method or its volumetric equal, and dated on or after the re-weld.
create or replace function weld_private.reexaminations_of(weld_ids uuid[])
  returns table (
    id uuid, weld_id uuid, method text, methods text[], repair_cycle integer, rewelded_on date,
    cause text, met_by text, met_on date
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select r.id, r.weld_id, r.method, m.methods, r.repair_cycle, r.rewelded_on, r.cause,
         e.record, e.examined_on
    from weld_public.weld_reexaminations r
    cross join lateral (
      select weld_private.closing_methods(r.tenant_id, r.method, null, null) as methods) m
    left join lateral (
      select x.record, x.examined_on
        from weld_private.weld_examinations x
       where x.tenant_id = r.tenant_id and x.weld_id = r.weld_id and x.method = any(m.methods)
         and x.examined_on >= r.rewelded_on
       order by x.examined_on, x.created_at
       limit 1) e on true
   where r.tenant_id = weld_hidden.current_tenant_id() and r.weld_id = any(weld_ids)
$$;

reset role;

--------------------------------------------------------------------------------------------------
-- 9. Welders on a date (ASME IX QW-322, QW-452), per process.
--
-- A qualification covers the processes of its own `process`, else those of its WPS (GTAW+SMAW
-- is two), and lapses per process (QW-322.1(a)): its uses of a process are the day it was
-- qualified, last_continuity_on (a use recorded on the qualification), the documented uses of
-- the continuity log, and every weld of the welder not VOIDED (a weld cut out of the scope is no
-- evidence of welding), on or after the day it was qualified, whose WPS has that process. It stays in force for the process while each use follows the one before
-- within the tenant's continuity months; the first use not followed in time is where it lapses
-- (continuity_until = that use + the months). A use after the lapse revives nothing: the welder
-- is tested again (QW-322.2), a new qualification that may say which one it renews.
--
-- Ranges: diameters from diameter_min_in / diameter_max_in where given, else from the coupon's
-- OD by the tenant's QW-452.3 rows; weld metal thickness up to thickness_max_in where given, else
-- by the QW-452.1(b) rows (three layers of 1/2 in. or more: any). The coupon is coupon_*_in, else
-- the PQR's tested size; unknown when neither is recorded (the *_known columns say so).
--
-- `pending`: welds about to be written (the refuse-mode check), which count as they will be.

-- The welds that are uses, as an index-only scan reads them: with the status, so VOIDED ones are
-- left out without reading the table. (Not a partial index: its columns are also what GraphQL
-- groups welds by, and PostGraphile offers only columns of a whole index.)
drop index if exists weld_public.welds_welder_wps_day_idx;
create index welds_welder_wps_day_idx on weld_public.welds (tenant_id, welder_id, wps_id, welded_on)
  include (id, status);

set role weld_rules;

drop function if exists weld_private.qualification_facts(uuid[], weld_public.welds[]);
create function weld_private.qualification_facts(
  welder_ids uuid[], pending weld_public.welds[] default '{}'
)
  returns table (
    qualification_id uuid, welder_id uuid, process text, processes text[], wps_id uuid,
    label text, joint text, qualified_on date, expires_on date, revoked_on date,
    revocation_reason text, last_continuity_on date, continuity_until date, lapse_after date,
    positions text[], diameter_known boolean, diameter_min numeric, diameter_max numeric,
    thickness_known boolean, thickness_max numeric
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce((select s.continuity_months from weld_public.tenant_settings s
                      where s.tenant_id = weld_hidden.current_tenant_id()), 6) as months
  ), q as (
    select q.*, string_to_array(coalesce(q.process, qw.process), '+') as procs,
           coalesce(q.coupon_diameter_in, p.diameter_tested_in) as coupon_d,
           coalesce(q.coupon_thickness_in, p.thickness_tested_in) as coupon_t,
           coalesce('WPS ' || qw.wps_number || ' rev ' || qw.revision, q.process)
             || ' qualified ' || q.qualified_on as label
      from weld_public.welder_qualifications q
      left join weld_public.wps qw on qw.tenant_id = q.tenant_id and qw.id = q.wps_id
      left join weld_public.pqrs p on p.tenant_id = q.tenant_id and p.id = q.pqr_id
     where q.tenant_id = weld_hidden.current_tenant_id() and q.welder_id = any(welder_ids)
  ), qp as (
    select q.*, x.process as one from q cross join lateral unnest(q.procs) as x (process)
  ), days as (
    -- The days each welder used each process, once each: the welds on record (an index-only scan
    -- of welds_welder_wps_day_idx, the pending ones left out; a VOIDED weld is no use, as in the
    -- continuity log) and the continuity log.
    select distinct d.welder_id, x.process, d.day
      from (select distinct w.welder_id, w.wps_id, w.welded_on as day
              from weld_public.welds w
             where w.tenant_id = weld_hidden.current_tenant_id() and w.welder_id = any(welder_ids)
               and w.wps_id is not null and w.welded_on is not null and w.status <> 'VOIDED'
               and not w.id = any(array(select p.id from unnest(pending) p))) d
      join weld_public.wps ww on ww.tenant_id = weld_hidden.current_tenant_id() and ww.id = d.wps_id
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
    union
    select c.welder_id, c.process, c.used_on
      from weld_public.welder_continuity c
     where c.tenant_id = weld_hidden.current_tenant_id() and c.welder_id = any(welder_ids)
  ), islands as (
    -- Runs of those days without a gap longer than the continuity period, per welder and process:
    -- a welder's thousand welds become a few intervals.
    select r.welder_id, r.process, min(r.day) as start_on, max(r.day) as end_on
      from (select g.*, count(*) filter (where g.day > (g.previous + make_interval(months => s.months))::date)
                          over (partition by g.welder_id, g.process order by g.day) as run
              from (select d.*, lag(d.day) over (partition by d.welder_id, d.process order by d.day) as previous
                      from days d) g
              cross join settings s) r
     group by r.welder_id, r.process, r.run
     union all
    -- The pending welds, each a day of its own.
    select p.welder_id, x.process, p.welded_on, p.welded_on
      from unnest(pending) p
      join weld_public.wps ww on ww.tenant_id = p.tenant_id and ww.id = p.wps_id
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
     where p.welder_id = any(welder_ids) and p.welded_on is not null
  ), uses as (
    select qp.id, qp.one, qp.qualified_on as start_on, qp.qualified_on as end_on from qp
    union all
    select qp.id, qp.one, qp.last_continuity_on, qp.last_continuity_on
      from qp where qp.last_continuity_on is not null
    union all
    select qp.id, qp.one, greatest(i.start_on, qp.qualified_on), i.end_on
      from qp
      join islands i on i.welder_id = qp.welder_id and i.process = qp.one and i.end_on >= qp.qualified_on
  ), chained as (
    -- In order of start, how far the uses so far reach, and where the next one starts.
    select u.id, u.one,
           max(u.end_on) over (partition by u.id, u.one order by u.start_on, u.end_on rows unbounded preceding) as reach,
           lead(u.start_on) over (partition by u.id, u.one order by u.start_on, u.end_on) as next_start
      from uses u
  ), breaks as (
    -- The first gap longer than the continuity period (reach only grows, so the least reach).
    select c.id, c.one, min(c.reach) as lapse_after
      from chained c, settings s
     where c.next_start is null or c.next_start > (c.reach + make_interval(months => s.months))::date
     group by c.id, c.one
  )
  select qp.id, qp.welder_id, qp.one, qp.procs, qp.wps_id, qp.label, qp.joint, qp.qualified_on,
         qp.expires_on, qp.revoked_on, qp.revocation_reason, qp.last_continuity_on,
         (b.lapse_after + make_interval(months => s.months))::date, b.lapse_after, qp.positions,
         qp.diameter_min_in is not null or (qp.coupon_d is not null and dr.min_in is not null),
         coalesce(qp.diameter_min_in, dr.min_in),
         coalesce(qp.diameter_max_in, dr.max_factor * qp.coupon_d),
         qp.thickness_max_in is not null or (qp.coupon_t is not null and tr.found),
         coalesce(qp.thickness_max_in, tr.max_factor * qp.coupon_t)
    from qp
    cross join settings s
    join breaks b on b.id = qp.id and b.one = qp.one
    left join lateral (
      -- The most generous QW-452.3 row for the coupon: the smallest diameter it qualifies.
      select coalesce(r.min_in, qp.coupon_d) as min_in, r.max_factor
        from weld_public.qualification_range_rules r
       where r.tenant_id = qp.tenant_id and r.dimension = 'diameter' and r.coupon @> qp.coupon_d
         and (qp.three_layers or not r.three_layers)
       order by coalesce(r.min_in, qp.coupon_d), r.max_factor desc nulls first
       limit 1) dr on true
    left join lateral (
      -- The most generous QW-452.1(b) row: no limit first, then the largest factor.
      select true as found, r.max_factor
        from weld_public.qualification_range_rules r
       where r.tenant_id = qp.tenant_id and r.dimension = 'thickness' and r.coupon @> qp.coupon_t
         and (qp.three_layers or not r.three_layers)
       order by r.max_factor desc nulls first
       limit 1) tr on true
$$;

-- What a qualification covers, in words, each dimension on its own.
drop function if exists weld_private.qualification_ranges(boolean, numeric, numeric, boolean, numeric);
create or replace function weld_private.diameter_words(known boolean, low numeric, high numeric)
  returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when not known then 'diameter range unknown (no range, coupon or PQR diameter recorded)'
              when high is null then 'OD ' || weld_private.inches(low) || ' and up'
              else 'OD ' || weld_private.inches(low) || ' to ' || weld_private.inches(high) end
$$;
create or replace function weld_private.thickness_words(known boolean, high numeric)
  returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when not known then 'thickness range unknown (no range, coupon or PQR thickness recorded)'
              when high is null then 'any thickness'
              else 'thickness up to ' || weld_private.inches(high) end
$$;

reset role;
do $$
begin
  if not exists (select from pg_attribute
                  where attrelid = 'weld_public.qualification_status'::regclass and attname = 'revoked_on') then
    alter type weld_public.qualification_status add attribute revoked_on date;
  end if;
end
$$;
comment on type weld_public.qualification_status is
  'A welder qualification for one of its processes, judged on a date: valid, expired, lapsed (QW-322.1(a)), revoked (QW-322.1(b)) or not_yet_valid, with the reasons.';
set role weld_rules;

create or replace function weld_public.welders_qualification_status(
  welder weld_public.welders, on_date date default current_date
) returns setof weld_public.qualification_status
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select f.qualification_id, f.process, f.wps_id, j.state, f.qualified_on, f.expires_on,
         j.last_used_on, f.continuity_until,
         array[case j.state
           when 'not_yet_valid' then format('not yet valid on %s: qualified on %s', on_date, f.qualified_on)
           when 'revoked' then format('revoked on %s: %s (QW-322.1(b))', f.revoked_on, f.revocation_reason)
           when 'expired' then format('expired on %s', f.expires_on)
           when 'lapsed' then format(
             'lapsed for %s on %s: no %s use recorded for more than %s months after %s (QW-322.1(a))',
             f.process, f.continuity_until + 1, f.process, s.months, f.lapse_after)
           else format('valid for %s on %s: qualified on %s, %s, in force by continuity until %s (QW-322.1(a))',
             f.process, on_date, f.qualified_on,
             coalesce('expires on ' || f.expires_on, 'no expiry date'), f.continuity_until)
         end,
         case when f.joint = 'fillet'
              then 'covers ' || f.process || ' fillet welds only, of every size and thickness (QW-303.2)'
              else 'covers ' || f.process || ' groove welds of '
                   || weld_private.diameter_words(f.diameter_known, f.diameter_min, f.diameter_max) || ', '
                   || weld_private.thickness_words(f.thickness_known, f.thickness_max)
                   || ', and fillet welds of every size (QW-303.1)' end
         || coalesce(', positions ' || nullif(array_to_string(f.positions, ' '), ''), '')],
         f.revoked_on
    from weld_private.qualification_facts(array[welder.id]) f
    cross join lateral (
      select coalesce((select t.continuity_months from weld_public.tenant_settings t
                        where t.tenant_id = welder.tenant_id), 6) as months
    ) s
    cross join lateral (
      select case
               when on_date < f.qualified_on then 'not_yet_valid'
               when on_date >= f.revoked_on then 'revoked'
               when on_date > f.expires_on then 'expired'
               when on_date > f.continuity_until then 'lapsed'
               else 'valid'
             end as state,
             (select max(u.used_on) from (
                select f.last_continuity_on as used_on
                union all
                select c.used_on from weld_public.welder_continuity c
                 where c.tenant_id = welder.tenant_id and c.welder_id = welder.id and c.process = f.process
                union all
                select w.welded_on
                  from weld_public.welds w
                  join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
                 where w.tenant_id = welder.tenant_id and w.welder_id = welder.id
                   and w.welded_on between f.qualified_on and on_date and w.status <> 'VOIDED'
                   and f.process = any(string_to_array(ww.process, '+'))) u
               where u.used_on between f.qualified_on and on_date) as last_used_on
    ) j
   order by f.qualified_on, f.qualification_id, f.process
$$;
comment on function weld_public.welders_qualification_status(weld_public.welders, date) is
  E'Each of the welder''s qualifications, per process, on a date (today by default): valid, expired, lapsed (QW-322.1(a): the process not used for more than the tenant''s continuity months, counted from the welds on record and the continuity log), revoked (QW-322.1(b)) or not_yet_valid, with the reasons and what it covers.';

-- The welder's continuity log: the documented uses, and one use per process of each weld on
-- record (its WPS's processes), newest first.
reset role;
drop type if exists weld_public.continuity_use cascade;
create type weld_public.continuity_use as (
  used_on       date,
  process       text,
  source        text,
  reference     text,
  weld_id       uuid,
  continuity_id uuid,
  recorded_by   uuid
);
comment on type weld_public.continuity_use is
  'One use of a welding process by a welder (ASME IX QW-322.1(a)): a weld on record (source weld) or a documented use (source document).';
set role weld_rules;

create or replace function weld_public.welders_continuity(welder weld_public.welders)
  returns setof weld_public.continuity_use
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select u.*
    from (
      select c.used_on, c.process, 'document' as source, c.reference, null::uuid as weld_id,
             c.id as continuity_id, c.recorded_by
        from weld_public.welder_continuity c
       where c.tenant_id = welder.tenant_id and c.welder_id = welder.id
      union all
      select w.welded_on, x.process, 'weld', format('weld %s on ISO %s, WPS %s rev %s', w.weld_number,
             i.iso_number, ww.wps_number, ww.revision), w.id, null, null
        from weld_public.welds w
        join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
        join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
        cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
       where w.tenant_id = welder.tenant_id and w.welder_id = welder.id and w.welded_on is not null
         and w.status <> 'VOIDED'
    ) u
   order by u.used_on desc, u.source || '/' || u.process || '/' || coalesce(u.weld_id, u.continuity_id) desc
$$;
comment on function weld_public.welders_continuity(weld_public.welders) is
  'The welder''s uses of each process, newest first: every weld on record (per process of its WPS) and every documented use (QW-322.1(a)).';

reset role;

--------------------------------------------------------------------------------------------------
-- 10. Procedures (ASME IX QW-200, QW-451.1, QW-424.1) and the weld checks.
--
-- A WPS is qualified by its PQRs: at least one (QW-200.2); each of its processes in one of them
-- (a combination of processes may be supported by several PQRs, QW-200.4); its base-metal
-- thickness range within what their coupons support (QW-451.1, the procedure_thickness_rules);
-- its P-number joint one of theirs or one they qualify by QW-424.1 (the p_number_rules). What is
-- missing is WPS_RANGE_UNSUPPORTED, one row per aspect; a WPS without P-numbers is DATA_MISSING.
-- A groove-qualified WPS covers fillet welds of every thickness, so the thickness aspect does not
-- apply to a fillet weld.

set role weld_rules;

-- The base-metal thickness a coupon of thickness t supports (QW-451.1), as a range.
create or replace function weld_private.pqr_thickness_support(tenant uuid, t numeric) returns numrange
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select numrange(coalesce(r.min_in, r.min_factor * t), least(r.max_in, r.max_factor * t), '[]')
    from weld_public.procedure_thickness_rules r
   where r.tenant_id = tenant and r.coupon @> t
   order by least(r.max_in, r.max_factor * t) desc
   limit 1
$$;

-- Inches for a thickness range: "0.063 to 0.5 in.", "0.188 in. and up".
create or replace function weld_private.range_words(r numrange) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when upper_inf(r) then weld_private.inches(lower(r)) || ' and up'
              else trim_scale(lower(r))::text || ' to ' || weld_private.inches(upper(r)) end
$$;

-- What keeps each WPS from being qualified by its PQRs: (wps_id, aspect, detail), aspect one of
-- pqr, process, thickness, p_number; none for a qualified WPS.
create or replace function weld_private.wps_problems(wps_ids uuid[])
  returns table (wps_id uuid, aspect text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select w.*, 'WPS ' || w.wps_number || ' rev ' || w.revision as name,
           weld_private.p_joint(w.p_numbers[1], w.p_numbers[2]) as joint,
           numrange(w.thickness_min_in, w.thickness_max_in, '[]') as thickness
      from weld_public.wps w
     where w.tenant_id = weld_hidden.current_tenant_id() and w.id = any(wps_ids)
  ), backing as (
    select w.id as wps_id, p.*, weld_private.p_joint(p.p_numbers[1], p.p_numbers[2]) as joint,
           weld_private.pqr_thickness_support(p.tenant_id, p.thickness_tested_in) as supports
      from w
      join weld_public.wps_pqrs l on l.tenant_id = w.tenant_id and l.wps_id = w.id
      join weld_public.pqrs p on p.tenant_id = l.tenant_id and p.id = l.pqr_id
  ), support as (
    select w.id,
           count(b.id) as pqrs,
           range_agg(b.supports) filter (where b.supports is not null) as thickness,
           array(select distinct x from unnest(array_agg(b.process)) as p (process),
                 unnest(string_to_array(p.process, '+')) as x order by 1) as processes,
           string_agg(distinct weld_private.p_joint_words(b.joint), ', ') as joints
      from w
      left join backing b on b.wps_id = w.id
     group by w.id
  )
  select w.id, 'pqr', format('%s is backed by no PQR (QW-200.2)', w.name)
    from w join support s on s.id = w.id
   where s.pqrs = 0
  union all
  select w.id, 'process',
         format('%s uses %s, and no PQR of it qualifies %s (QW-200.4)', w.name, w.process, x.process)
    from w
    join support s on s.id = w.id
    cross join lateral unnest(string_to_array(w.process, '+')) as x (process)
   where s.pqrs > 0 and not x.process = any(s.processes)
  union all
  select w.id, 'thickness',
         format('%s covers %s; its PQRs support %s (QW-451.1)', w.name,
                weld_private.range_words(w.thickness),
                coalesce((select string_agg(weld_private.range_words(r), ', ' order by lower(r))
                            from unnest(s.thickness) as r), 'no thickness'))
    from w join support s on s.id = w.id
   where s.pqrs > 0 and not coalesce(s.thickness @> w.thickness, false)
  union all
  select w.id, 'p_number',
         format('%s covers %s; its PQRs qualify %s (QW-424.1)', w.name,
                weld_private.p_joint_words(w.joint), s.joints)
    from w join support s on s.id = w.id
   where s.pqrs > 0 and w.joint is not null
     and not exists (
       select from backing b
        where b.wps_id = w.id
          and (b.joint = w.joint or exists (
                select from weld_public.p_number_rules r
                 where r.tenant_id = w.tenant_id and r.tested = b.joint and r.covers = w.joint)))
$$;

-- A WPS's own checks: WPS_RANGE_UNSUPPORTED per aspect, DATA_MISSING without P-numbers.
create or replace function weld_public.wps_checks(wps weld_public.wps)
  returns setof weld_public.weld_check
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.code, c.detail
    from (
      select 'WPS_RANGE_UNSUPPORTED' as code, p.detail
        from weld_private.wps_problems(array[wps.id]) p
      union all
      select 'DATA_MISSING', format('WPS %s rev %s records no P-numbers', wps.wps_number, wps.revision)
       where wps.p_numbers is null
    ) c
   order by c.code, c.detail
$$;
comment on function weld_public.wps_checks(weld_public.wps) is
  'What keeps the WPS from being qualified by its PQRs (WPS_RANGE_UNSUPPORTED: no PQR, a process, its thickness range or its P-numbers unsupported; QW-200, QW-451.1, QW-424.1), and DATA_MISSING; none when it is in order.';

--------------------------------------------------------------------------------------------------
-- The weld checks. One set-based function judges any number of welds (a weld's checks, its
-- write, a package's readiness), so the rules are written once:
--
--   DATA_MISSING           one row per missing fact: welder, WPS, date welded, the P-number of
--                          either base metal, the WPS's P-numbers; for a groove weld also its
--                          wall thickness and a size that is no standard NPS (its OD unknown)
--   WPS_NOT_APPROVED       the WPS is a draft (a superseded WPS was approved when it was current)
--   WPS_RANGE              a groove weld's OD or wall thickness outside the WPS's ranges
--   WPS_PNUMBER            the weld's base metals are not the joint its WPS covers (QW-403.11)
--   WPS_RANGE_UNSUPPORTED  its WPS is not qualified by its PQRs (above)
--   WELDER_NOT_QUALIFIED   for a process of the WPS, no qualification of the welder in force for
--                          it on the date welded (not yet valid, revoked, expired, lapsed) that
--                          covers the weld: a fillet qualification covers fillet welds only; a
--                          groove one covers a groove weld within its diameter and thickness and
--                          every fillet weld. Judged when welder, WPS and date are known; the
--                          detail names at most three qualifications per process.
--   REEXAMINATION_OPEN     a repair's re-examination not yet met (section 8)
--
-- Positions are not judged: a weld records none (a qualification's positions are shown).
-- `include_welders` false leaves WELDER_NOT_QUALIFIED out (a WPS change cannot change it).

drop function if exists weld_private.weld_problems(weld_public.welds[], boolean);
create or replace function weld_private.weld_problems(
  welds weld_public.welds[], pending boolean default false, include_welders boolean default true
) returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select x.*, weld_private.outside_diameter(x.size) as od, weld_private.is_fillet(x.type) as fillet,
           weld_private.p_joint(x.base_metal_1_p_number, x.base_metal_2_p_number) as joint
      from unnest(welds) as x
     where x.tenant_id = weld_hidden.current_tenant_id() -- rows are the caller's to give: only its tenant's
  ), wp as (
    select w.*, p.wps_number, p.revision as wps_revision, p.state as wps_state, p.process as wps_process,
           p.diameter_min_in as wps_d_min, p.diameter_max_in as wps_d_max,
           p.thickness_min_in as wps_t_min, p.thickness_max_in as wps_t_max, p.p_numbers as wps_p_numbers,
           weld_private.p_joint(p.p_numbers[1], p.p_numbers[2]) as wps_joint
      from w
      left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = w.wps_id
  ), facts as (
    select * from weld_private.qualification_facts(
      case when include_welders
           then array(select distinct w.welder_id from w where w.welder_id is not null) else '{}' end,
      case when pending then welds else '{}' end)
  ), needed as (
    -- Each process each judged weld needs a qualification for.
    select wp.id, wp.welded_on, wp.welder_id, wp.fillet, wp.od, wp.wall_thickness, x.process
      from wp
      cross join lateral unnest(string_to_array(wp.wps_process, '+')) as x (process)
     where include_welders and wp.welder_id is not null and wp.wps_id is not null
       and wp.welded_on is not null
  ), judged as (
    -- Each qualification of the welder for that process, with what keeps it from covering.
    select n.id, n.process, f.label, f.qualified_on,
           array_remove(array[
             case when n.welded_on < f.qualified_on then 'not yet valid on ' || n.welded_on end,
             case when n.welded_on >= f.revoked_on then 'revoked on ' || f.revoked_on || ' (QW-322.1(b))' end,
             case when n.welded_on > f.expires_on then 'expired on ' || f.expires_on end,
             case when n.welded_on >= f.qualified_on and n.welded_on <= coalesce(f.expires_on, n.welded_on)
                   and n.welded_on > f.continuity_until
                  then 'lapsed for ' || n.process || ' on ' || (f.continuity_until + 1) || ' (QW-322.1(a))' end,
             case when f.joint = 'fillet' and not n.fillet then 'covers fillet welds only (QW-303.2)' end,
             case when n.fillet or f.joint = 'fillet' then null
                  when not f.diameter_known then 'diameter range unknown (no range, coupon or PQR diameter recorded)'
                  when n.od < f.diameter_min or n.od > f.diameter_max
                  then 'covers ' || weld_private.diameter_words(true, f.diameter_min, f.diameter_max)
                       || ', not OD ' || weld_private.inches(n.od) || ' (QW-452.3)' end,
             case when n.fillet or f.joint = 'fillet' then null
                  when not f.thickness_known then 'thickness range unknown (no range, coupon or PQR thickness recorded)'
                  when n.wall_thickness > f.thickness_max
                  then 'covers ' || weld_private.thickness_words(true, f.thickness_max) || ', not '
                       || weld_private.inches(n.wall_thickness) || ' (QW-452.1(b))' end
           ], null) as failures
      from needed n
      join facts f on f.welder_id = n.welder_id and f.process = n.process
  ), uncovered as (
    -- The processes of judged welds that no qualification covers.
    select n.id, n.process
      from needed n
      left join judged j on j.id = n.id and j.process = n.process and cardinality(j.failures) = 0
     group by n.id, n.process
    having count(j.id) = 0
  ), why as (
    -- Why, per process: the three latest qualifications and how many more.
    select u.id,
           string_agg('for ' || u.process || ', ' || coalesce(r.why, 'none is recorded'), '; '
                      order by u.process) as why
      from uncovered u
      left join lateral (
        select string_agg(x.label || ' ' || array_to_string(x.failures, ', '), '; '
                          order by x.qualified_on desc, x.label) filter (where x.n <= 3)
               || case when count(*) > 3 then format(' (and %s more)', count(*) - 3) else '' end as why
          from (select j.*, row_number() over (order by j.qualified_on desc, j.label) as n
                  from judged j where j.id = u.id and j.process = u.process) x) r on true
     group by u.id
  )
  -- (Each sentence below is built only where its case holds: CASE evaluates lazily.)
  select wp.id, 'DATA_MISSING', m.detail
    from wp
    cross join lateral unnest(array_remove(array[
      case when wp.welder_id is null then 'no welder is recorded' end,
      case when wp.wps_id is null then 'no WPS is recorded' end,
      case when wp.welded_on is null then 'no date welded is recorded' end,
      case when wp.wall_thickness is null and not wp.fillet then 'no wall thickness is recorded' end,
      case when wp.od is null and not wp.fillet
           then 'size ' || trim_scale(wp.size) || ' is no standard NPS: its outside diameter is unknown' end,
      case when wp.base_metal_1_p_number is null then 'no P-number is recorded for base metal 1' end,
      case when wp.base_metal_2_p_number is null then 'no P-number is recorded for base metal 2' end,
      case when wp.wps_id is not null and wp.wps_p_numbers is null
           then format('WPS %s rev %s records no P-numbers', wp.wps_number, wp.wps_revision) end
    ], null)) as m (detail)
  union all
  select wp.id, 'WPS_NOT_APPROVED',
         format('WPS %s rev %s is a %s, not approved', wp.wps_number, wp.wps_revision, wp.wps_state)
    from wp
   where wp.wps_state = 'draft'
  union all
  select wp.id, 'WPS_RANGE', r.detail
    from wp
    cross join lateral unnest(array_remove(array[
      case when wp.od < wp.wps_d_min or wp.od > wp.wps_d_max
           then format('OD %s (NPS %s) is outside WPS %s''s diameters, %s to %s', weld_private.inches(wp.od),
                       trim_scale(wp.size), wp.wps_number, weld_private.inches(wp.wps_d_min),
                       coalesce(weld_private.inches(wp.wps_d_max), 'any')) end,
      case when wp.wall_thickness < wp.wps_t_min or wp.wall_thickness > wp.wps_t_max
           then format('wall thickness %s is outside WPS %s''s thicknesses, %s to %s',
                       weld_private.inches(wp.wall_thickness), wp.wps_number,
                       weld_private.inches(wp.wps_t_min), coalesce(weld_private.inches(wp.wps_t_max), 'any')) end
    ], null)) as r (detail)
   where wp.wps_id is not null and not wp.fillet
  union all
  select wp.id, 'WPS_PNUMBER',
         format('%s is not the joint WPS %s rev %s covers (%s; QW-403.11)', weld_private.p_joint_words(wp.joint),
                wp.wps_number, wp.wps_revision, weld_private.p_joint_words(wp.wps_joint))
    from wp
   where wp.joint is not null and wp.wps_joint is not null and wp.joint <> wp.wps_joint
  union all
  select wp.id, 'WPS_RANGE_UNSUPPORTED', p.detail
    from wp
    join weld_private.wps_problems(array(select distinct wp.wps_id from wp where wp.wps_id is not null)) p
      on p.wps_id = wp.wps_id
   where not (wp.fillet and p.aspect = 'thickness')
  union all
  select wp.id, 'WELDER_NOT_QUALIFIED',
         format('welder %s holds no qualification in force on %s that covers this weld: %s',
                coalesce(wr.stamp, '?'), wp.welded_on, y.why)
    from why y
    join wp on wp.id = y.id
    left join weld_public.welders wr on wr.tenant_id = wp.tenant_id and wr.id = wp.welder_id
  union all
  select r.weld_id, 'REEXAMINATION_OPEN',
         format('repair %s, re-welded on %s, owes a new %s examination (%s) dated on or after that day (B31.3 341.3.3); %s rejected it',
                r.repair_cycle, r.rewelded_on, r.method, weld_private.methods_words(r.methods), r.cause)
    from weld_private.reexaminations_of(array(select wp.id from wp)) r
   where r.met_by is null
$$;

create or replace function weld_public.welds_checks(weld weld_public.welds)
  returns setof weld_public.weld_check
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.code, p.detail from weld_private.weld_problems(array[weld]) p order by p.code, p.detail
$$;
comment on function weld_public.welds_checks(weld_public.welds) is
  'Every problem with the weld''s record under the code rules (ASME IX, B31.3 341.3.3, the WPS): WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, WPS_PNUMBER, WPS_RANGE_UNSUPPORTED, REEXAMINATION_OPEN, DATA_MISSING; none when it is in order.';

reset role;

-- An approved WPS is a qualified one (WD013). Checked at commit, when the WPS and its PQR list
-- are both written (REST writes the row, then its pqrIds): approving a WPS, changing an approved
-- one's ranges or P-numbers, taking a PQR off it, or changing a PQR that backs one. Requests
-- only: the seed generator and a DBA are not held to it (their WPSs show WPS_RANGE_UNSUPPORTED).
set role weld_rules;

create or replace function weld_private.tg__approved_wps_qualified() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid;
  wps_ids uuid[];
  bad record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'wps' then
      tenant := new.tenant_id;
      wps_ids := array[new.id];
    when 'wps_pqrs' then
      tenant := old.tenant_id;
      wps_ids := array[old.wps_id];
    else -- pqrs
      tenant := new.tenant_id;
      wps_ids := array(select l.wps_id from weld_public.wps_pqrs l
                        where l.tenant_id = new.tenant_id and l.pqr_id = new.id);
  end case;
  select w.id, w.wps_number, w.revision,
         jsonb_agg(jsonb_build_object('code', 'WPS_RANGE_UNSUPPORTED', 'detail', p.detail)
                   order by p.aspect, p.detail) as checks
    into bad
    from weld_public.wps w
    join weld_private.wps_problems(wps_ids) p on p.wps_id = w.id
   where w.tenant_id = tenant and w.id = any(wps_ids) and w.state = 'approved'
   group by w.id, w.wps_number, w.revision
   order by w.wps_number, w.revision
   limit 1;
  if found then
    raise exception 'WPS % rev % is approved but not qualified by its PQRs: %', bad.wps_number, bad.revision,
      (bad.checks -> 0 ->> 'detail')
      -- wpsId names the WPS refused, unless the refusal is of its creation: then nothing exists.
      using errcode = 'WD013', detail = jsonb_strip_nulls(jsonb_build_object(
        'wpsId', case when not (tg_table_name = 'wps' and tg_op = 'INSERT') then bad.id end,
        'checks', bad.checks))::text;
  end if;
  return null;
end
$$;

reset role;

drop trigger if exists _800_approved_wps_qualified on weld_public.wps;
create constraint trigger _800_approved_wps_qualified
  after insert or update of state, thickness_min_in, thickness_max_in, p_numbers on weld_public.wps
  deferrable initially deferred
  for each row when (new.state = 'approved')
  execute function weld_private.tg__approved_wps_qualified();
drop trigger if exists _800_approved_wps_qualified on weld_public.wps_pqrs;
create constraint trigger _800_approved_wps_qualified after delete on weld_public.wps_pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__approved_wps_qualified();
drop trigger if exists _800_approved_wps_qualified on weld_public.pqrs;
create constraint trigger _800_approved_wps_qualified
  after update of process, p_numbers, thickness_tested_in on weld_public.pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__approved_wps_qualified();

-- The weld guards of 000013 read the new columns too: a weld of a package that is not open keeps
-- its base metals (WD008), and refuse mode judges a change of them (WD010). REEXAMINATION_OPEN
-- is about examination, not the record, so it never refuses a write.
set role weld_rules;

create or replace function weld_private.tg_welds__code_checks() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  checked weld_public.welds[];
  refused record;
begin
  if weld_hidden.request_role() is null
     or coalesce((select s.weld_checks from weld_public.tenant_settings s
                   where s.tenant_id = weld_hidden.current_tenant_id()), 'show') <> 'refuse' then
    return null;
  end if;
  -- The welds whose checked columns the statement wrote (EXCEPT: see tg_welds__package_open).
  if tg_op = 'INSERT' then
    select array_agg(n) into checked from new_rows n;
  else
    select array_agg(w) into checked
      from weld_public.welds w
     where w.tenant_id = weld_hidden.current_tenant_id()
       and w.id in (select c.id
                      from (select n.id, n.type, n.size, n.wall_thickness, n.welder_id, n.wps_id,
                                   n.welded_on, n.base_metal_1_p_number, n.base_metal_2_p_number
                              from new_rows n
                            except
                            select o.id, o.type, o.size, o.wall_thickness, o.welder_id, o.wps_id,
                                   o.welded_on, o.base_metal_1_p_number, o.base_metal_2_p_number
                              from old_rows o) c);
  end if;
  if checked is null then
    return null;
  end if;
  select w.weld_number,
         jsonb_agg(jsonb_build_object('code', p.code, 'detail', p.detail) order by p.code, p.detail) as checks
    into refused
    from weld_private.weld_problems(checked, true) p
    join unnest(checked) w on w.id = p.weld_id
   where p.code not in ('DATA_MISSING', 'REEXAMINATION_OPEN')
   group by w.weld_number, w.id
   order by w.weld_number, w.id
   limit 1;
  if found then
    raise exception 'weld % fails the code checks: %', refused.weld_number,
      (select string_agg(distinct c ->> 'code', ', ') from jsonb_array_elements(refused.checks) c)
      using errcode = 'WD010', detail = jsonb_build_object('checks', refused.checks)::text;
  end if;
  return null;
end
$$;


reset role;

-- Owned by weld_rules from now on (000013 made it the owner's, who passes row security: rows of
-- another tenant given to it were judged against that tenant's WPSs and welders).
alter function weld_hidden.weld_import_code_problems(weld_public.welds[]) owner to weld_rules;
set role weld_rules;
create or replace function weld_hidden.weld_import_code_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.weld_id, p.code, p.detail
    from weld_private.weld_problems(welds, true) p
   where p.code not in ('DATA_MISSING', 'REEXAMINATION_OPEN')
     and coalesce((select s.weld_checks from weld_public.tenant_settings s
                    where s.tenant_id = weld_hidden.current_tenant_id()), 'show') = 'refuse'
$$;
reset role;

create or replace function weld_private.tg_welds__package_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld_ids uuid[];
  iso_ids uuid[];
  package record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  -- The welds whose data the statement wrote, and their ISOs before and after. (Each branch names
  -- only the transition tables its event has. EXCEPT, not a join of the two: the planner knows
  -- nothing of transition tables, and a nested loop over 100,000 rows of each never ends.)
  if tg_op = 'INSERT' then
    weld_ids := '{}'; -- a weld just made is in no package's list yet
    select array_agg(distinct n.iso_id) into iso_ids from new_rows n;
  else
    with data_after as (
      select n.id, n.iso_id, n.weld_number, n.type, n.size, n.schedule, n.wall_thickness,
             n.material, n.welder_id, n.wps_id, n.welded_on, n.base_metal_1_p_number,
             n.base_metal_2_p_number
        from new_rows n
    ), data_before as (
      select o.id, o.iso_id, o.weld_number, o.type, o.size, o.schedule, o.wall_thickness,
             o.material, o.welder_id, o.wps_id, o.welded_on, o.base_metal_1_p_number,
             o.base_metal_2_p_number
        from old_rows o
    ), changed_after as (
      select * from data_after except select * from data_before
    ), changed_before as (
      select * from data_before except select * from data_after
    )
    select array(select c.id from changed_after c),
           array(select c.iso_id from changed_after c union select c.iso_id from changed_before c)
      into weld_ids, iso_ids;
  end if;
  if coalesce(cardinality(iso_ids), 0) = 0 then
    return null;
  end if;
  for package in
    select p.package_number, p.state
      from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id()
       and (p.id in (select l.test_package_id from weld_public.test_package_isos l
                      where l.tenant_id = p.tenant_id and l.iso_id in (select unnest(iso_ids)))
            or p.id in (select l.test_package_id from weld_public.test_package_welds l
                         where l.tenant_id = p.tenant_id
                           and l.weld_id in (select unnest(weld_ids))))
     order by p.id
       for no key update
  loop
    if package.state <> 'open' then
      raise exception 'test package % is %; the data of its welds changes only while it is open',
        package.package_number, package.state
        using errcode = 'WD008';
    end if;
  end loop;
  return null;
end
$$;

--------------------------------------------------------------------------------------------------
-- 11. Lots, draws and progressive examination (B31.3 341.4.1, 341.3.4, 344.1.3).
--
-- A lot is the welds of one line that one examination extent covers: the same method at the
-- same percent (with the tenant's 'line_welder', of one welder too). Its candidates are its welds
-- already welded (nothing is sampled before it exists), not VOIDED, of a type the method's rule
-- covers. It requires ceil(percent x candidates / 100) examined, and at least one weld of every
-- welder whose welds are in it (341.4.1(a), (b)(1): each welder's work represented): 100% lots
-- require every weld.
--
-- Selections, per weld and method:
--   random    drawn: the welders not yet represented first, one each, then the rest of what the
--             lot requires, ranked by md5(seed:weld id) (the same seed on the same data draws
--             the same welds; the seed is stored).
--   examined  counted, not drawn: a weld of original work that an examination meeting the lot's
--             method already covered (341.4.1: any method that meets the requirement, RT or UT
--             alike where the tenant says so). Counted when the record is written, and by a draw
--             for examinations recorded before the lot required them.
--   1, 2      progressive (341.3.4): a rejected weld of the sample (random, examined) draws two
--             more of the same welder from its lot (tier 1); each rejected tier-1 weld two more
--             (tier 2); a rejected tier-2 weld every remaining weld of that welder in the lot
--   full      (full). Tiers 1 and 2 take welds neither selected nor yet examined, ranked by the
--             causing selection's seed. Each selection draws once; a weld already repaired draws
--             nothing (repairs start no new round: they owe a re-examination, section 8).
-- A selection is open until an examination that meets it covers the weld (dated on or after
-- the weld was welded), then done; computed, so a correction that takes the weld off opens it.

alter table weld_public.examination_selections drop constraint if exists examination_selections_tier_check;
alter table weld_public.examination_selections add constraint examination_selections_tier_check
  check (tier in ('random', 'examined', '1', '2', 'full'));
alter table weld_public.examination_selections alter column seed drop not null;
alter table weld_public.examination_selections add column if not exists cause_inspection_id uuid;
alter table weld_public.examination_selections add column if not exists position bigint;
alter table weld_public.examination_selections
  drop constraint if exists examination_selections_cause,
  drop constraint if exists examination_selections_cause_inspection_id_fkey;
alter table weld_public.examination_selections
  add constraint examination_selections_cause check (
    case when tier in ('random', 'examined')
         then cause_selection_id is null and cause_ndt_record_id is null and cause_inspection_id is null
         else cause_selection_id is not null and num_nonnulls(cause_ndt_record_id, cause_inspection_id) = 1 end),
  add constraint examination_selections_cause_inspection_id_fkey
    foreign key (tenant_id, cause_inspection_id) references weld_public.inspections on delete restrict;
comment on constraint examination_selections_cause_inspection_id_fkey on weld_public.examination_selections is
  E'@fieldName causeInspection\n@foreignFieldName causedSelections';
create index if not exists examination_selections_cause_inspection_idx
  on weld_public.examination_selections (tenant_id, cause_inspection_id);
create index if not exists examination_selections_position_idx
  on weld_public.examination_selections (tenant_id, position, id);
comment on table weld_public.examination_selections is
  E'@aggregates on\nA weld selected for examination by a method: drawn at random (with the seed), counted because an examination already covered it (examined), or drawn by progressive examination (tier 1, 2 or full, with the rejection that caused it).';
comment on column weld_public.examination_selections.seed is
  'The draw''s seed (progressive tiers: their cause''s); null for a counted (examined) selection and the tiers it causes.';
comment on column weld_public.examination_selections.position is
  E'@behavior -*\nThe order selections became visible in: the id of the event that announced it (commit order within a tenant); lists page by it.';
grant select on weld_public.inspections to weld_rules;

set role weld_rules;

-- The methods any lot of the tenant may require: those of its rules, and RT (an ISO's rt_percent).
create or replace function weld_private.rule_methods() returns text[]
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select array(select m.method
                 from (select 'RT' as method
                       union
                       select r.method from weld_public.examination_rules r
                        where r.tenant_id = weld_hidden.current_tenant_id()) m
                order by 1)
$$;

-- The candidates of the lots of `methods` on `lines`: each weld with its lot, the percent its
-- ISO requires and the methods that meet it. The one place lots are defined.
drop function if exists weld_private.lot_candidates(text[], text[]);
create function weld_private.lot_candidates(methods text[], lines text[])
  returns table (
    method text, weld_id uuid, weld_number text, weld_type text, iso_id uuid, iso_number text,
    line_number text, welder_id uuid, welder_stamp text, welded_on date, repair_cycle integer,
    percent numeric, closes text[], lot text, lot_name text
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce(s.examination_lot, 'line') as lot_kind,
           coalesce(s.volumetric_interchangeable, true) as volumetric
      from (select) as one
      left join weld_public.tenant_settings s on s.tenant_id = weld_hidden.current_tenant_id()
  ), rt_types as (
    -- The weld types an ISO's rt_percent applies to: those of its service's RT rows, or the
    -- circumferential butt welds where it has none.
    select f.fluid_service,
           coalesce(array_agg(r.weld_type) filter (where r.weld_type is not null), '{BW,MW,TW}') as types
      from unnest(array['normal', 'category_d', 'category_m', 'severe_cyclic', 'high_pressure']) as f (fluid_service)
      left join weld_public.examination_rules r
        on r.tenant_id = weld_hidden.current_tenant_id() and r.fluid_service = f.fluid_service
       and r.method = 'RT'
     group by f.fluid_service
  )
  select m.method, w.id, w.weld_number, w.type, i.id, i.iso_number, i.line_number, w.welder_id,
         wr.stamp, w.welded_on, w.repair_cycle, p.percent,
         weld_private.closers(m.method, er.closed_by, st.volumetric),
         concat_ws('|', m.method, i.line_number, trim_scale(p.percent),
                   case st.lot_kind when 'line_welder' then coalesce(w.welder_id::text, '-') end),
         -- The lot in words: "RT 5% of line 3"-P-1059", "RT 5% of welder W004's welds on line 3"-P-1059".
         m.method || ' ' || trim_scale(p.percent) || '% of '
           || case st.lot_kind when 'line_welder'
                then coalesce('welder ' || wr.stamp || '''s welds', 'the welds without a welder') || ' on '
                else '' end
           || 'line ' || i.line_number
    from unnest(methods) as m (method)
    cross join settings st
    join weld_public.isos i
      on i.tenant_id = weld_hidden.current_tenant_id() and i.line_number = any(lines)
    join rt_types rt on rt.fluid_service = i.fluid_service
    join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
    left join weld_public.examination_rules er
      on er.tenant_id = i.tenant_id and er.fluid_service = i.fluid_service and er.method = m.method
     and er.weld_type = w.type
    left join weld_public.welders wr on wr.tenant_id = w.tenant_id and wr.id = w.welder_id
    cross join lateral (
      select greatest(er.percent, case when m.method = 'RT' and w.type = any(rt.types) then i.rt_percent end)
               as percent
    ) p
   where p.percent > 0 and w.status <> 'VOIDED' and w.welded_on is not null
$$;

-- Per lot of `methods` on `lines` (those touching weld_ids; every lot when null): its numbers.
drop function if exists weld_private.lot_status(text[], text[], uuid[]);
create function weld_private.lot_status(methods text[], lines text[], weld_ids uuid[])
  returns table (
    method text, lot text, lot_name text, percent numeric, welds integer, welders integer,
    required integer, selected integer, examined integer, shortfall integer,
    progressive_open integer, welders_not_covered uuid[], stamps_not_covered text[]
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with s as (
    select c.*, x.id as selection_id, x.tier,
           x.id is not null and exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = weld_hidden.current_tenant_id() and e.weld_id = c.weld_id
                and e.method = any(c.closes) and e.examined_on >= c.welded_on) as done
      from weld_private.lot_candidates(methods, lines) c
      left join weld_public.examination_selections x
        on x.tenant_id = weld_hidden.current_tenant_id() and x.method = c.method and x.weld_id = c.weld_id
  ), lots as (
    select s.method, s.lot, min(s.lot_name) as lot_name, max(s.percent) as percent,
           count(*)::integer as welds, count(distinct s.welder_id)::integer as welders,
           count(s.selection_id)::integer as selected, count(*) filter (where s.done)::integer as examined,
           count(*) filter (where s.tier in ('1', '2', 'full') and not s.done)::integer as progressive_open,
           coalesce(bool_or(s.weld_id = any(weld_ids)), false) as touched
      from s
     group by s.method, s.lot
  ), welders as (
    select s.method, s.lot, s.welder_id, min(s.welder_stamp) as stamp
      from s
     where s.welder_id is not null
     group by s.method, s.lot, s.welder_id
    having count(s.selection_id) = 0
  )
  select l.method, l.lot, l.lot_name, l.percent, l.welds, l.welders, r.required, l.selected,
         l.examined, greatest(r.required - l.selected, cardinality(n.ids))::integer, l.progressive_open,
         n.ids, n.stamps
    from lots l
    cross join lateral (
      select case when l.percent >= 100 then l.welds
                  else least(l.welds, greatest(ceil(l.percent * l.welds / 100)::integer, l.welders)) end
               as required
    ) r
    cross join lateral (
      select coalesce(array_agg(u.welder_id order by u.stamp), '{}') as ids,
             coalesce(array_agg(u.stamp order by u.stamp), '{}') as stamps
        from welders u where u.method = l.method and u.lot = l.lot
    ) n
   where weld_ids is null or l.touched
$$;

-- The examination that meets a selection (the earliest); none while it is open.
drop function if exists weld_private.selection_examination(weld_public.examination_selections);
create function weld_private.selection_examination(
  selection weld_public.examination_selections
) returns table (ndt_record_id uuid, inspection_id uuid, examined_on date, result text, record text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select e.ndt_record_id, e.inspection_id, e.examined_on, e.result, e.record
    from weld_public.welds w
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
    join weld_private.weld_examinations e
      on e.tenant_id = w.tenant_id and e.weld_id = w.id and e.examined_on >= w.welded_on
     and e.method = any(weld_private.closing_methods(w.tenant_id, selection.method, i.fluid_service, w.type))
   where w.tenant_id = selection.tenant_id and w.id = selection.weld_id
   order by e.examined_on, e.created_at, e.ndt_record_id, e.inspection_id
   limit 1
$$;

create or replace function weld_public.examination_selections_state(
  selection weld_public.examination_selections
) returns text
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select case when exists (select from weld_private.selection_examination(selection)) then 'done'
              else 'open' end
$$;
comment on function weld_public.examination_selections_state(weld_public.examination_selections) is
  'open until an examination that meets it (its method, or one the rules let stand for it: UT for RT, PT for MT, ...) covers the weld, then done.';

create or replace function weld_public.examination_selections_ndt_record_id(
  selection weld_public.examination_selections
) returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select e.ndt_record_id from weld_private.selection_examination(selection) e
$$;
comment on function weld_public.examination_selections_ndt_record_id(weld_public.examination_selections) is
  'The NDT record that met the selection (the earliest examination that meets it); null while it is open or when a visual inspection met it.';

create or replace function weld_public.examination_selections_inspection_id(
  selection weld_public.examination_selections
) returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select e.inspection_id from weld_private.selection_examination(selection) e
$$;
comment on function weld_public.examination_selections_inspection_id(weld_public.examination_selections) is
  'The visual inspection that met a VT selection (the earliest examination that meets it); null otherwise.';

-- Lines take turns: draws, progressive examination and examinations of one line. Every writer
-- takes the locks of all its lines first, in order, before any weld lock, so none waits for
-- another in the opposite order.
create or replace function weld_private.lock_lines_of(weld_ids uuid[]) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select count(weld_private.lock_line(l.line_number))
    from (select distinct i.line_number
            from weld_public.welds w
            join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
           where w.tenant_id = weld_hidden.current_tenant_id() and w.id = any(weld_ids)
           order by 1) l
$$;

-- Progressive examination (341.3.4) for one selection whose weld an examination rejected: the
-- next tier from its lot, of the same welder. Nothing for a full tier, a weld already repaired
-- (original work only), or a selection that drew before. Returns the new selections' ids.
create or replace function weld_private.draw_next_tier(
  cause_id uuid, ndt_record_id uuid, inspection_id uuid, record text
) returns uuid[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  cause record;
  next_tier text;
  drawn uuid[];
begin
  select s.*, w.weld_number, w.welder_id, w.repair_cycle, i.iso_number, i.line_number into cause
    from weld_public.examination_selections s
    join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
   where s.tenant_id = weld_hidden.current_tenant_id() and s.id = cause_id;
  if not found or cause.tier = 'full' or cause.repair_cycle > 0 then
    return '{}';
  end if;
  perform weld_private.lock_line(cause.line_number);
  -- Checked after the lock: another transaction may have drawn for it meanwhile.
  if exists (select from weld_public.examination_selections c
              where c.tenant_id = cause.tenant_id and c.cause_selection_id = cause.id) then
    return '{}';
  end if;
  next_tier := case cause.tier when '1' then '2' when '2' then 'full' else '1' end;
  with candidates as (
    select * from weld_private.lot_candidates(array[cause.method], array[cause.line_number])
  ), picked as (
    insert into weld_public.examination_selections
      (weld_id, method, tier, seed, reason, cause_selection_id, cause_ndt_record_id,
       cause_inspection_id, selected_by)
    select c.weld_id, cause.method, next_tier, cause.seed,
           format('tier %s: %s rejected weld %s on ISO %s (%s selection); %s of welder %s in %s',
                  next_tier, record, cause.weld_number, cause.iso_number,
                  case when cause.tier in ('random', 'examined') then cause.tier else 'tier ' || cause.tier end,
                  case next_tier when 'full' then 'every remaining weld' else 'two more welds' end,
                  coalesce(c.welder_stamp, '(none recorded)'), c.lot_name),
           cause.id, ndt_record_id, inspection_id, weld_hidden.current_user_id()
      from candidates c
     where c.lot = (select x.lot from candidates x where x.weld_id = cause.weld_id)
       and c.welder_id is not distinct from cause.welder_id
       and not exists (select from weld_public.examination_selections s
                        where s.tenant_id = cause.tenant_id and s.method = cause.method
                          and s.weld_id = c.weld_id)
       and (next_tier = 'full' or not exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = cause.tenant_id and e.weld_id = c.weld_id and e.method = any(c.closes)))
     order by md5(coalesce(cause.seed::text, cause.id::text) || ':' || next_tier || ':'
                  || cause.weld_id::text || ':' || c.weld_id::text)
     limit case when next_tier = 'full' then null else 2 end
    returning id
  )
  select coalesce(array_agg(p.id), '{}') into drawn from picked p;
  return drawn;
end
$$;

-- What follows an examination of welds (an NDT record, or a visual inspection as VT), once it
-- is written and its results applied: each weld of original work it covers is counted toward
-- the lots whose method it meets (an 'examined' selection, when it has none), and each
-- selection of those welds it rejects draws its next tier. Returns the new selections' ids.
create or replace function weld_private.follow_examination(
  method text, weld_ids uuid[], ndt_record_id uuid, inspection_id uuid
) returns uuid[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  lines text[];
  made uuid[];
  rejected record;
begin
  lines := array(select distinct i.line_number
                   from weld_public.welds w
                   join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
                  where w.tenant_id = tenant and w.id = any(weld_ids));
  perform weld_private.lock_lines_of(weld_ids);

  with this as (
    select e.weld_id, e.record, e.examined_on
      from weld_private.weld_examinations e
     where e.tenant_id = tenant and e.weld_id = any(weld_ids)
       and (e.ndt_record_id = follow_examination.ndt_record_id
            or e.inspection_id = follow_examination.inspection_id)
  ), counted as (
    insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
    select c.weld_id, c.method, 'examined', null,
           format('examined: %s of %s counts toward %s', t.record, t.examined_on, c.lot_name),
           weld_hidden.current_user_id()
      from weld_private.lot_candidates(weld_private.rule_methods(), lines) c
      join this t on t.weld_id = c.weld_id
     where follow_examination.method = any(c.closes) and c.repair_cycle = 0
       and not exists (select from weld_public.examination_selections s
                        where s.tenant_id = tenant and s.method = c.method and s.weld_id = c.weld_id)
    returning id
  )
  select coalesce(array_agg(c.id), '{}') into made from counted c;

  for rejected in
    select s.id, e.record
      from weld_private.weld_examinations e
      join weld_public.welds w on w.tenant_id = e.tenant_id and w.id = e.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
      join weld_public.examination_selections s on s.tenant_id = e.tenant_id and s.weld_id = e.weld_id
     where e.tenant_id = tenant and e.weld_id = any(weld_ids) and e.result = 'rejected'
       and (e.ndt_record_id = follow_examination.ndt_record_id
            or e.inspection_id = follow_examination.inspection_id)
       and follow_examination.method = any(weld_private.closing_methods(tenant, s.method, i.fluid_service, w.type))
     order by i.line_number, s.weld_id, s.method
  loop
    made := made || weld_private.draw_next_tier(rejected.id, ndt_record_id, inspection_id, rejected.record);
  end loop;
  return made;
end
$$;

-- The candidates a draw works on: the lots of the line, or those of the ISO's welds.
create or replace function weld_private.draw_scope(method text, line text, iso_id uuid)
  returns table (
    method text, weld_id uuid, weld_number text, weld_type text, iso_id uuid, iso_number text,
    line_number text, welder_id uuid, welder_stamp text, welded_on date, repair_cycle integer,
    percent numeric, closes text[], lot text, lot_name text
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with c as (select * from weld_private.lot_candidates(array[method], array[line]))
  select * from c
   where draw_scope.iso_id is null
      or c.lot in (select x.lot from c x where x.iso_id = draw_scope.iso_id)
$$;

-- Random examination (341.4.1) for a line, or for the lots of an ISO's welds: what a lot already
-- examined counts first, a rejected one drawing its tier 1 (an examination recorded before the
-- draw is part of the sample); then one weld of each welder not yet represented; then the rest
-- the lot requires. Returns every selection it made.
create or replace function weld_public.draw_examination_selection(
  method text, line_number text default null, iso_id uuid default null, seed bigint default null
) returns setof weld_public.examination_selections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  line text := draw_examination_selection.line_number;
  chosen bigint := draw_examination_selection.seed;
  made uuid[];
  counted record;
begin
  perform weld_private.require_role('inspector', 'drawing an examination selection');
  if method is null or not method = any('{RT,UT,MT,PT,VT,PWHT,PMI,HT}') then
    perform weld_private.invalid_input(
      format('method must be one of RT, UT, MT, PT, VT, PWHT, PMI, HT, not %s', coalesce(method, 'null')),
      '/method');
  end if;
  if (line is null) = (iso_id is null) then
    perform weld_private.invalid_input('give either lineNumber or isoId, not both or neither', '/lineNumber');
  end if;
  if chosen is not null and chosen not between 0 and 9007199254740991 then
    perform weld_private.invalid_input('seed must be a whole number from 0 to 9007199254740991', '/seed');
  end if;
  if iso_id is not null then
    select i.line_number into line from weld_public.isos i where i.tenant_id = tenant and i.id = iso_id;
    if line is null then
      raise exception 'iso % not found', iso_id using errcode = 'WD001';
    end if;
  elsif not exists (select from weld_public.isos i where i.tenant_id = tenant and i.line_number = line) then
    raise exception 'line % not found', line using errcode = 'WD001';
  end if;
  chosen := coalesce(chosen, floor(random() * 9007199254740991)::bigint);
  perform weld_private.lock_line(line);

  -- 1. What the lots in scope already examined counts.
  made := '{}';
  for counted in
    with examined as (
      select d.*, e.record, e.examined_on, e.result, e.ndt_record_id, e.inspection_id
        from weld_private.draw_scope(draw_examination_selection.method, line, draw_examination_selection.iso_id) d
        cross join lateral (
          select x.record, x.examined_on, x.result, x.ndt_record_id, x.inspection_id
            from weld_private.weld_examinations x
           where x.tenant_id = tenant and x.weld_id = d.weld_id and x.method = any(d.closes)
             and x.examined_on >= d.welded_on
           order by x.examined_on, x.created_at
           limit 1) e
       where not exists (select from weld_public.examination_selections s
                          where s.tenant_id = tenant and s.method = draw_examination_selection.method
                            and s.weld_id = d.weld_id)
    ), inserted as (
      insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
      select x.weld_id, draw_examination_selection.method, 'examined', null,
             format('examined: %s of %s counts toward %s', x.record, x.examined_on, x.lot_name),
             weld_hidden.current_user_id()
        from examined x
      returning id, weld_id
    )
    select i.id, x.result, x.ndt_record_id, x.inspection_id, x.record
      from inserted i join examined x on x.weld_id = i.weld_id
  loop
    made := made || counted.id;
    if counted.result = 'rejected' then
      made := made || weld_private.draw_next_tier(counted.id, counted.ndt_record_id, counted.inspection_id,
                                                  counted.record);
    end if;
  end loop;

  -- 2. and 3. One weld of each welder not yet represented, then the rest each lot requires.
  with scope as (
    select d.*, exists (select from weld_public.examination_selections s
                         where s.tenant_id = tenant and s.method = draw_examination_selection.method
                           and s.weld_id = d.weld_id) as selected,
           md5(chosen::text || ':' || d.weld_id::text) as rank
      from weld_private.draw_scope(draw_examination_selection.method, line, draw_examination_selection.iso_id) d
  ), lots as (
    select s.lot, count(*) as welds, count(*) filter (where s.selected) as selected,
           case when max(s.percent) >= 100 then count(*)
                else least(count(*), greatest(ceil(max(s.percent) * count(*) / 100), count(distinct s.welder_id)))
           end as required
      from scope s
     group by s.lot
  ), representatives as (
    -- Per lot, the first-ranked weld of each welder with no selection in it.
    select distinct on (s.lot, s.welder_id) s.*
      from scope s
     where not s.selected and s.welder_id is not null
       and not exists (select from scope o where o.lot = s.lot and o.welder_id = s.welder_id and o.selected)
     order by s.lot, s.welder_id, s.rank
  ), others as (
    select s.*, row_number() over (partition by s.lot order by s.rank) as n
      from scope s
     where not s.selected and s.weld_id not in (select r.weld_id from representatives r)
  ), picks as (
    select r.weld_id, r.lot, r.lot_name, true as representative from representatives r
    union all
    select o.weld_id, o.lot, o.lot_name, false
      from others o
      join lots l on l.lot = o.lot
     where o.n <= l.required - l.selected
                  - (select count(*) from representatives r where r.lot = o.lot)
  ), drawn as (
    insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
    select p.weld_id, draw_examination_selection.method, 'random', chosen,
           format('random: %s of the %s welds of %s required (each welder''s work represented), seed %s%s',
                  l.required, l.welds, p.lot_name, chosen,
                  case when p.representative then format('; drawn for welder %s', s.welder_stamp) else '' end),
           weld_hidden.current_user_id()
      from picks p
      join lots l on l.lot = p.lot
      join scope s on s.weld_id = p.weld_id
     order by p.lot, p.representative desc, s.rank
    returning id
  )
  select made || coalesce(array_agg(d.id), '{}') into made from drawn d;

  return query
  select s.* from weld_public.examination_selections s
   where s.tenant_id = tenant and s.id = any(made)
   order by s.selected_at, s.tier, s.id;
end
$$;
comment on function weld_public.draw_examination_selection(text, text, uuid, bigint) is
  'Random examination (B31.3 341.4.1) of a line''s lots (or those of an ISO''s welds): counts what they already examined (a rejection draws its tier 1), draws one weld of each welder not yet represented, then the rest to ceil(percent x candidates / 100), ranked by the seed (random when not given), which is stored. Returns the new selections. Inspector and up.';

reset role;

--------------------------------------------------------------------------------------------------
-- 12. What a repair owes, and the locks a status change takes (the table: section 8).

grant select on weld_public.weld_status_history to weld_rules;
grant update (state) on weld_public.test_packages to weld_rules;

set role weld_rules;

-- Every test package holding any of these welds (in its list, or through its ISO), locked FOR
-- SHARE in id order: whatever may make a package less ready (a weld leaving ACCEPTED, a new open
-- selection, a record taken off a weld) takes it, and a release (which updates the package, so
-- holds it FOR NO KEY UPDATE) waits for it, or it for the release. The release then judges what
-- committed; nothing slips in between its judgement and its commit.
create or replace function weld_private.lock_packages_of(weld_ids uuid[]) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select count(*)
    from (select p.id
            from weld_public.test_packages p
           where p.tenant_id = weld_hidden.current_tenant_id()
             and (p.id in (select l.test_package_id from weld_public.test_package_welds l
                            where l.tenant_id = p.tenant_id and l.weld_id = any(weld_ids))
                  or p.id in (select l.test_package_id
                                from weld_public.test_package_isos l
                                join weld_public.welds w on w.tenant_id = l.tenant_id and w.iso_id = l.iso_id
                               where l.tenant_id = p.tenant_id and w.id = any(weld_ids)))
           order by p.id
             for share of p) locked
$$;

-- After a status change: a weld leaving REPAIR owes what rejected it; a weld leaving ACCEPTED
-- (or VOIDED, which readiness passes over) locks its packages.
create or replace function weld_private.tg_weld_status_history__follow() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  last_reweld date;
begin
  if new.from_status in ('ACCEPTED', 'VOIDED') and new.to_status not in ('ACCEPTED', 'VOIDED') then
    perform weld_private.lock_packages_of(array[new.weld_id]);
  end if;
  if new.from_status = 'REPAIR' and new.to_status <> 'VOIDED' then
    -- The methods that rejected it since it was last re-welded (or ever, at the first repair).
    select (max(h.changed_at) at time zone 'UTC')::date into last_reweld
      from weld_public.weld_status_history h
     where h.tenant_id = new.tenant_id and h.weld_id = new.weld_id and h.from_status = 'REPAIR'
       and h.id < new.id;
    insert into weld_public.weld_reexaminations (tenant_id, weld_id, method, repair_cycle, rewelded_on, cause)
    select new.tenant_id, new.weld_id, e.method, new.repair_cycle, (new.changed_at at time zone 'UTC')::date,
           (array_agg(e.record || ' of ' || e.examined_on order by e.examined_on desc, e.created_at desc))[1]
      from weld_private.weld_examinations e
     where e.tenant_id = new.tenant_id and e.weld_id = new.weld_id and e.result = 'rejected'
       and (last_reweld is null or e.examined_on >= last_reweld)
     group by e.method
    on conflict do nothing;
  end if;
  return null;
end
$$;

-- Refuse mode: a repaired weld is accepted by hand only once its re-examinations are met (WD012).
-- An NDT record may still accept it (its other methods are real results); readiness holds it.
create or replace function weld_private.tg_weld_status_history__reexamined() returns trigger
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  checks jsonb;
begin
  if weld_hidden.request_role() is null
     or coalesce((select s.weld_checks from weld_public.tenant_settings s
                   where s.tenant_id = new.tenant_id), 'show') <> 'refuse' then
    return new;
  end if;
  select jsonb_agg(jsonb_build_object('code', p.code, 'detail', p.detail) order by p.detail) into checks
    from weld_public.welds w
    cross join lateral weld_private.weld_problems(array[w], false, false) p
   where w.tenant_id = new.tenant_id and w.id = new.weld_id and p.code = 'REEXAMINATION_OPEN';
  if checks is not null then
    raise exception 'weld % owes a re-examination after its repair: %',
      (select w.weld_number from weld_public.welds w where w.tenant_id = new.tenant_id and w.id = new.weld_id),
      checks -> 0 ->> 'detail'
      using errcode = 'WD012', detail = jsonb_build_object('checks', checks)::text;
  end if;
  return new;
end
$$;

reset role;

drop trigger if exists _200_follow on weld_public.weld_status_history;
create trigger _200_follow after insert on weld_public.weld_status_history
  for each row
  when ((new.from_status in ('ACCEPTED', 'VOIDED') and new.to_status not in ('ACCEPTED', 'VOIDED'))
        or new.from_status = 'REPAIR')
  execute function weld_private.tg_weld_status_history__follow();
drop trigger if exists _200_reexamined on weld_public.weld_status_history;
create trigger _200_reexamined before insert on weld_public.weld_status_history
  for each row when (new.to_status = 'ACCEPTED' and new.cause = 'user')
  execute function weld_private.tg_weld_status_history__reexamined();

--------------------------------------------------------------------------------------------------
-- 13. Readiness, release, tested and closed; withdrawal; a release that stays released.
--
-- Readiness (none of these reasons: ready):
--   NO_WELDS               nothing to test
--   WELD_NOT_ACCEPTED      a weld not ACCEPTED
--   EXAMINATION_SHORTFALL  a lot of its welds has fewer examined or selected than it requires, or
--                          a welder of the lot is not represented (draw a selection)
--   EXAMINATION_OPEN       a random or counted selection of one of its welds not yet met
--   PROGRESSIVE_OPEN       a progressive selection open in a lot of its welds (the lot's other
--                          welds are in doubt until it closes, wherever they are)
--   and every weld check of its welds (REEXAMINATION_OPEN and DATA_MISSING included).
-- VOIDED welds drop out. Release (open -> released), tested and closed are each judged again;
-- released -> open is a withdrawal, with a reason (withdraw_test_package). Every state change is
-- kept in test_package_state_changes.
--
-- While a package is released, tested or closed, what it was judged on stays: its welds' data
-- (000011), and a change of an ISO (fluid service, RT percent, line), a WPS (state, ranges,
-- P-numbers, PQRs), a PQR or a welder's qualification that would leave it not ready is refused
-- (WD011, naming the package and the reasons): withdraw the package first. The tenant's rule
-- tables and settings are a DBA's, outside requests, and not held to it.

create table if not exists weld_public.test_package_state_changes (
  tenant_id       uuid not null default weld_hidden.current_tenant_id(),
  id              bigint not null generated always as identity,
  test_package_id uuid not null,
  from_state      text not null,
  to_state        text not null,
  reason          text check (char_length(reason) between 1 and 2000),
  changed_by      uuid,
  changed_at      timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint test_package_state_changes_test_package_id_fkey
    foreign key (tenant_id, test_package_id) references weld_public.test_packages on delete cascade,
  constraint test_package_state_changes_changed_by_fkey
    foreign key (tenant_id, changed_by) references weld_public.users on delete restrict
);
create index if not exists test_package_state_changes_package_idx
  on weld_public.test_package_state_changes (tenant_id, test_package_id, id);
comment on table weld_public.test_package_state_changes is
  E'@aggregates on\nEvery state change of a test package: who, when, from, to, and the reason a withdrawal gives.';
comment on constraint test_package_state_changes_test_package_id_fkey on weld_public.test_package_state_changes is
  E'@fieldName testPackage\n@foreignFieldName stateChanges';
comment on constraint test_package_state_changes_changed_by_fkey on weld_public.test_package_state_changes is
  E'@fieldName changedByUser\n@foreignFieldName testPackageStateChanges';
select weld_private.secure_tenant_table('weld_public.test_package_state_changes')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.test_package_state_changes'::regclass
                      and p.polname = 'tenant_isolation');
grant select on weld_public.test_package_state_changes to weld_viewer;
grant select, insert on weld_public.test_package_state_changes to weld_rules;

-- A package that was ever released is a record: deleting it would erase its releases and the
-- reasons of its withdrawals. Requests delete only packages that never left open (WD008).
create or replace function weld_private.tg_test_packages__delete_only_while_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  released_at timestamptz;
begin
  if weld_hidden.request_role() is null then
    return old;
  end if;
  if old.state <> 'open' then
    raise exception 'test package % is %; only open packages may be deleted', old.package_number, old.state
      using errcode = 'WD008';
  end if;
  select min(c.changed_at) into released_at
    from weld_public.test_package_state_changes c
   where c.tenant_id = old.tenant_id and c.test_package_id = old.id;
  if released_at is not null then
    raise exception 'test package % was released on % and withdrawn; a package with a history is kept as the record of it',
                    old.package_number, (released_at at time zone 'UTC')::date
      using errcode = 'WD008';
  end if;
  return old;
end
$$;

set role weld_rules;

create or replace function weld_public.test_packages_readiness_reasons(test_package weld_public.test_packages)
  returns setof weld_public.readiness_reason
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
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
  )
  select r.code, r.weld_id, r.iso_id, r.detail
    from reasons r
   order by r.rank, r.code, r.iso_number, r.weld_number, r.detail
$$;
comment on function weld_public.test_packages_readiness_reasons(weld_public.test_packages) is
  'Why the package is not ready for its pressure test (none when it is): NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, and the weld checks of its welds (REEXAMINATION_OPEN among them). VOIDED welds drop out.';

-- The first 100 reasons as the refusals carry them, and how many there are.
create or replace function weld_private.readiness_summary(test_package weld_public.test_packages)
  returns table (reasons jsonb, reason_count integer)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'code', r.code, 'weldId', r.weld_id, 'isoId', r.iso_id, 'detail', r.detail)) order by r.n)
           filter (where r.n <= 100), '[]'),
         count(*)::integer
    from (select x.*, row_number() over () as n
            from weld_public.test_packages_readiness_reasons(test_package) x) r
$$;

-- Release, tested and closed by an API role only when ready (WD009 with the reasons; GET
-- readiness has them all). A package is created open (WD008), so none skips the release. The
-- UPDATE holds the package's row, and the statements here see what committed before it: a
-- change that makes a package less ready locks it first (lock_packages_of). Writes outside a
-- request are not held to it, as for the package's other rules (000008 section 7).
create or replace function weld_private.tg_test_packages__release_when_ready() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  summary record;
begin
  if weld_hidden.request_role() is not null and tg_op = 'INSERT' and new.state <> 'open' then
    raise exception 'test package % is created open; it is released when it is ready', new.package_number
      using errcode = 'WD008';
  end if;
  if weld_hidden.request_role() is not null and tg_op = 'UPDATE'
     and (old.state, new.state) in (('open', 'released'), ('released', 'tested'), ('tested', 'closed')) then
    select * into summary from weld_private.readiness_summary(new);
    if summary.reason_count > 0 then
      raise exception 'test package % is not ready to be %: % %', new.package_number, new.state,
        summary.reason_count, case when summary.reason_count = 1 then 'reason' else 'reasons' end
        using errcode = 'WD009',
              detail = jsonb_build_object('reasons', summary.reasons, 'reasonCount', summary.reason_count)::text;
    end if;
  end if;
  return new;
end
$$;

-- Every state change, kept; a withdrawal (released -> open) with its reason.
create or replace function weld_private.tg_test_packages__state_history() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- Outside a tenant context (the owner: the seed generator, a DBA) nothing is kept, as for the
  -- version bumps of lists (000008).
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  insert into weld_public.test_package_state_changes
    (tenant_id, test_package_id, from_state, to_state, reason, changed_by)
  values (new.tenant_id, new.id, old.state, new.state,
          nullif(pg_catalog.current_setting('weld.withdrawal_reason', true), ''),
          weld_hidden.current_user_id());
  return null;
end
$$;

-- Withdraws a released package to open, with the engineer's reason (kept in its state history).
create or replace function weld_public.withdraw_test_package(
  test_package_id uuid, reason text, expected_version integer default null
) returns weld_public.test_packages
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  package weld_public.test_packages;
  why text := btrim(withdraw_test_package.reason, E' \t\n\r\v\f');
begin
  perform weld_private.require_role('engineer', 'withdrawing a test package');
  select * into package from weld_public.test_packages p
   where p.tenant_id = weld_hidden.current_tenant_id() and p.id = withdraw_test_package.test_package_id
     for no key update;
  if not found then
    raise exception 'test package % not found', withdraw_test_package.test_package_id using errcode = 'WD001';
  end if;
  if expected_version is not null and expected_version <> package.version then
    raise exception 'test package % is at version %, not %', package.id, package.version, expected_version
      using errcode = 'WD005', detail = json_build_object('version', package.version)::text;
  end if;
  if coalesce(why, '') = '' then
    raise exception 'a withdrawal needs a reason' using errcode = 'WD004';
  end if;
  if char_length(why) > 2000 then
    perform weld_private.invalid_input('the reason is longer than 2000 characters', '/reason');
  end if;
  if package.state <> 'released' then
    raise exception 'test package % is %; only a released package is withdrawn', package.package_number,
      package.state using errcode = 'WD008';
  end if;
  perform pg_catalog.set_config('weld.withdrawal_reason', why, true);
  update weld_public.test_packages p set state = 'open'
   where p.tenant_id = package.tenant_id and p.id = package.id
  returning * into package;
  perform pg_catalog.set_config('weld.withdrawal_reason', '', true);
  return package;
end
$$;
comment on function weld_public.withdraw_test_package(uuid, text, integer) is
  'Withdraws a released test package to open (its welds may change again), with the reason, kept in its state history. Engineer and up.';

-- The not-open packages whose readiness reads these lines, WPSs or welders.
create or replace function weld_private.packages_judged_on(lines text[], wps_ids uuid[], welder_ids uuid[])
  returns uuid[]
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select w.id, w.iso_id
      from weld_public.welds w
     where w.tenant_id = weld_hidden.current_tenant_id()
       and (w.wps_id = any(wps_ids) or w.welder_id = any(welder_ids)
            or w.iso_id in (select i.id from weld_public.isos i
                             where i.tenant_id = weld_hidden.current_tenant_id() and i.line_number = any(lines)))
  )
  select array(
    select p.id
      from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id() and p.state <> 'open'
       and (p.id in (select l.test_package_id from weld_public.test_package_welds l join w on w.id = l.weld_id
                      where l.tenant_id = p.tenant_id)
            or p.id in (select l.test_package_id from weld_public.test_package_isos l join w on w.iso_id = l.iso_id
                         where l.tenant_id = p.tenant_id))
     order by p.id)
$$;

-- Refuses (WD011) a change that leaves a released, tested or closed package not ready: the
-- packages are locked FOR SHARE (a release in flight waits, or is waited for) and judged again.
create or replace function weld_private.hold_released_packages(package_ids uuid[], change text)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  package weld_public.test_packages;
  summary record;
  held jsonb := '[]';
begin
  if coalesce(cardinality(package_ids), 0) = 0 then
    return;
  end if;
  for package in
    select * from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id() and p.id = any(package_ids)
     order by p.id
       for share
  loop
    continue when package.state = 'open';
    select * into summary from weld_private.readiness_summary(package);
    if summary.reason_count > 0 then
      held := held || jsonb_build_array(jsonb_build_object(
        'testPackageId', package.id, 'packageNumber', package.package_number, 'state', package.state,
        'reasons', (select coalesce(jsonb_agg(r), '[]')
                      from (select r from jsonb_array_elements(summary.reasons) r limit 10) x),
        'reasonCount', summary.reason_count));
    end if;
  end loop;
  if jsonb_array_length(held) > 0 then
    -- A released package may be withdrawn; a tested or closed one is the record of its test:
    -- what it was judged on is revised as a new record (a new WPS revision, a new qualification).
    raise exception 'test package % is %: % would leave it not ready (%); %',
      held -> 0 ->> 'packageNumber', held -> 0 ->> 'state', change,
      held -> 0 -> 'reasons' -> 0 ->> 'detail',
      case when held -> 0 ->> 'state' = 'released' then 'withdraw it first'
           else 'it was tested on these records: record the change as a new one (a new WPS revision, a new qualification)' end
      using errcode = 'WD011', detail = jsonb_build_object('packages', held)::text;
  end if;
end
$$;

-- Refuse mode (defect of F7: only a weld's own write was judged): a change of a WPS, a PQR or a
-- qualification that leaves a weld using it failing the checks is refused too (WD010, naming the
-- first such weld).
create or replace function weld_private.refuse_failing_welds(wps_ids uuid[], welder_ids uuid[], change text)
  returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  judged weld_public.welds[];
  refused record;
begin
  if coalesce((select s.weld_checks from weld_public.tenant_settings s
                where s.tenant_id = weld_hidden.current_tenant_id()), 'show') <> 'refuse' then
    return;
  end if;
  select array_agg(w) into judged
    from weld_public.welds w
   where w.tenant_id = weld_hidden.current_tenant_id() and w.status <> 'VOIDED'
     and (w.wps_id = any(wps_ids) or w.welder_id = any(welder_ids));
  if judged is null then
    return;
  end if;
  select w.weld_number, i.iso_number,
         jsonb_agg(jsonb_build_object('code', p.code, 'detail', p.detail) order by p.code, p.detail) as checks
    into refused
    from weld_private.weld_problems(judged, false, coalesce(cardinality(welder_ids), 0) > 0) p
    join unnest(judged) w on w.id = p.weld_id
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
   where p.code not in ('DATA_MISSING', 'REEXAMINATION_OPEN')
   group by i.iso_number, w.weld_number, w.id
   order by i.iso_number, w.weld_number, w.id
   limit 1;
  if found then
    raise exception '% would leave weld % on ISO % failing the code checks: %', change,
      refused.weld_number, refused.iso_number,
      (select string_agg(distinct c ->> 'code', ', ') from jsonb_array_elements(refused.checks) c)
      using errcode = 'WD010', detail = jsonb_build_object('checks', refused.checks)::text;
  end if;
end
$$;

-- The guards, once per statement, for requests only.
create or replace function weld_private.tg__judged_on() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  lines text[] := '{}';
  wps_ids uuid[] := '{}';
  welder_ids uuid[] := '{}';
  change text;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'isos' then
      change := 'this change of an ISO';
      lines := array(select n.line_number from new_rows n join old_rows o on o.id = n.id
                      where (n.fluid_service, n.rt_percent, n.line_number)
                            is distinct from (o.fluid_service, o.rt_percent, o.line_number)
                     union
                     select o.line_number from new_rows n join old_rows o on o.id = n.id
                      where (n.fluid_service, n.rt_percent, n.line_number)
                            is distinct from (o.fluid_service, o.rt_percent, o.line_number));
    when 'wps' then
      change := 'this change of a WPS';
      wps_ids := array(select n.id from new_rows n join old_rows o on o.id = n.id
                        where (n.state, n.thickness_min_in, n.thickness_max_in, n.diameter_min_in,
                               n.diameter_max_in, n.p_numbers)
                              is distinct from (o.state, o.thickness_min_in, o.thickness_max_in,
                                                o.diameter_min_in, o.diameter_max_in, o.p_numbers));
    when 'wps_pqrs' then
      change := 'this change of a WPS''s PQRs';
      if tg_op = 'INSERT' then
        wps_ids := array(select distinct n.wps_id from new_rows n);
      else
        wps_ids := array(select distinct o.wps_id from old_rows o);
      end if;
    when 'pqrs' then
      change := 'this change of a PQR';
      wps_ids := array(select distinct l.wps_id
                         from new_rows n
                         join weld_public.wps_pqrs l on l.tenant_id = n.tenant_id and l.pqr_id = n.id);
      welder_ids := array(select distinct q.welder_id
                            from new_rows n
                            join weld_public.welder_qualifications q
                              on q.tenant_id = n.tenant_id and q.pqr_id = n.id);
    when 'welder_qualifications' then
      change := case tg_op when 'DELETE' then 'deleting a qualification' else 'this change of a qualification' end;
      if tg_op = 'DELETE' then
        welder_ids := array(select distinct o.welder_id from old_rows o);
      else
        welder_ids := array(select n.welder_id from new_rows n union select o.welder_id from old_rows o);
      end if;
  end case;
  if cardinality(lines) + cardinality(wps_ids) + cardinality(welder_ids) = 0 then
    return null;
  end if;
  perform weld_private.hold_released_packages(
    weld_private.packages_judged_on(lines, wps_ids, welder_ids), change);
  if tg_table_name <> 'isos' then
    perform weld_private.refuse_failing_welds(wps_ids, welder_ids, change);
  end if;
  return null;
end
$$;

reset role;

drop trigger if exists _200_release_when_ready on weld_public.test_packages;
create trigger _200_release_when_ready before insert or update of state on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__release_when_ready();
drop trigger if exists _300_state_history on weld_public.test_packages;
create trigger _300_state_history after update of state on weld_public.test_packages
  for each row when (old.state is distinct from new.state)
  execute function weld_private.tg_test_packages__state_history();

-- Released -> open only through withdraw_test_package (which gives the reason); the other
-- moves as in 000008.
create or replace function weld_private.tg_test_packages__state_moves() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_hidden.request_role() is not null and new.state <> old.state
     and (old.state, new.state) not in (('open', 'released'), ('released', 'tested'),
                                        ('tested', 'closed'), ('released', 'open')) then
    raise exception 'test package % cannot go from % to %', old.package_number, old.state, new.state
      using errcode = 'WD008';
  end if;
  if weld_hidden.request_role() is not null and (old.state, new.state) = ('released', 'open')
     and coalesce(pg_catalog.current_setting('weld.withdrawal_reason', true), '') = '' then
    raise exception 'test package % is withdrawn to open with a reason: POST /test-packages/{id}/withdraw (GraphQL withdrawTestPackage)',
      old.package_number using errcode = 'WD008';
  end if;
  return new;
end
$$;

do $$
declare
  guarded record;
begin
  for guarded in
    select * from (values ('weld_public.isos', 'update'), ('weld_public.wps', 'update'),
                          ('weld_public.wps_pqrs', 'delete'),
                          ('weld_public.pqrs', 'update'),
                          ('weld_public.welder_qualifications', 'update'),
                          ('weld_public.welder_qualifications', 'delete')) as g (tbl, op)
  loop
    execute format('drop trigger if exists %I on %s', '_700_judged_on_' || guarded.op, guarded.tbl);
    execute format(
      'create trigger %I after %s on %s referencing %s for each statement execute function weld_private.tg__judged_on()',
      '_700_judged_on_' || guarded.op, guarded.op, guarded.tbl,
      case guarded.op when 'update' then 'old table as old_rows new table as new_rows'
                      when 'insert' then 'new table as new_rows'
                      else 'old table as old_rows' end);
  end loop;
end
$$;
drop trigger if exists _700_judged_on_insert on weld_public.wps_pqrs;

--------------------------------------------------------------------------------------------------
-- 14. The NDT and inspection functions of 000008, with one lock order and what follows.
--
-- Lock order, the same for every writer of a line: the lines of every weld involved (a
-- correction's old and new welds alike), in order; then the welds, in id order; then the test
-- packages. Before, a correction locked only the lines of welds whose result changed, and took
-- another line's lock later (progressive examination) while holding weld locks: with a new
-- record on that line, each waited for the other.

set role weld_rules;

-- NDT results to weld statuses, step 1 (as in 000009, without the line locks its callers now
-- take first): locks the welds, in id order, and refuses the whole record (WD006) when the
-- rules or the caller's role refuse a move.
create or replace function weld_private.ndt_status_changes(results jsonb) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  caller weld_public.user_role := weld_hidden.request_role();
  moves jsonb;
  refused jsonb;
begin
  if not coalesce((select s.ndt_results_drive_status from weld_public.tenant_settings s
                    where s.tenant_id = tenant), true) then
    return '[]';
  end if;

  perform from weld_public.welds w
   where w.tenant_id = tenant
     and w.id in (select (r ->> 'weldId')::uuid from jsonb_array_elements(results) as r)
   order by w.id
     for update;

  with wanted as (
    select (e.r ->> 'weldId')::uuid as weld_id, e.r ->> 'effective' as result,
           upper(e.r ->> 'effective')::weld_public.weld_status as target, e.n
      from jsonb_array_elements(results) with ordinality as e (r, n)
  ), judged as (
    select x.*, w.weld_number, w.status,
           coalesce(caller >= rule.least_role, false) as allowed
      from wanted x
      join weld_public.welds w on w.tenant_id = tenant and w.id = x.weld_id
      left join weld_public.weld_transition_rules rule
        on rule.tenant_id = tenant and rule.from_status = w.status and rule.to_status = x.target
     where w.status <> x.target
  )
  select jsonb_agg(jsonb_build_object('weldId', j.weld_id, 'status', j.target, 'result', j.result)
                   order by j.n) filter (where j.allowed),
         jsonb_agg(jsonb_build_object(
                     'weldId', j.weld_id, 'weldNumber', j.weld_number, 'status', j.status,
                     'result', j.result,
                     'allowed', array(select r.to_status from weld_public.weld_transition_rules r
                                       where r.tenant_id = tenant and r.from_status = j.status
                                       order by r.to_status))
                   order by j.n) filter (where not j.allowed)
    into moves, refused
    from judged j;

  if refused is not null then
    raise exception 'the NDT results cannot be applied to % %', jsonb_array_length(refused),
      case when jsonb_array_length(refused) = 1 then 'weld' else 'welds' end
      using errcode = 'WD006', detail = jsonb_build_object('welds', refused)::text;
  end if;
  return coalesce(moves, '[]');
end
$$;

-- Step 2, once the record is written: each move through change_weld_status, caused by the record.
create or replace function weld_private.ndt_apply_status_changes(
  ndt weld_public.ndt_records, moves jsonb
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_catalog.set_config('weld.applying_ndt_record', ndt.id::text, true);
  perform count(*)
     from jsonb_array_elements(moves) as m,
          weld_public.change_weld_status(
            (m ->> 'weldId')::uuid, (m ->> 'status')::weld_public.weld_status,
            format('%s report %s: %s', ndt.method, ndt.report_number, m ->> 'result'),
            null, ndt.id);
  perform pg_catalog.set_config('weld.applying_ndt_record', '', true);
end
$$;
drop function if exists weld_private.progressive_examination(weld_public.ndt_records);

-- The weld ids of a welds input ([{"weldId", ...}]) or of a JSON list of ids.
create or replace function weld_private.weld_ids_of(list jsonb) returns uuid[]
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(array_agg(distinct (case jsonb_typeof(e) when 'object' then e ->> 'weldId' else e #>> '{}' end)::uuid), '{}')
    from jsonb_array_elements(coalesce(list, '[]')) as e
$$;

create or replace function weld_public.record_ndt(record jsonb) returns weld_public.ndt_records
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  input jsonb := record_ndt.record;
  ndt weld_public.ndt_records;
  welds jsonb;
  intervals jsonb := '[]';
  results jsonb;
  moves jsonb;
begin
  perform weld_private.require_role('inspector', 'recording an NDT record');
  perform weld_private.check_object(input, '', 'an NDT record',
    '{method,reportNumber,examinedOn,technician,notes,welds,filmIntervals}',
    '{method,reportNumber,examinedOn,welds}');
  ndt.method := weld_private.json_choice(input, 'method', '', '{RT,UT,MT,PT,VT,PWHT,PMI,HT}', false);
  ndt.report_number := weld_private.json_string(input, 'reportNumber', '', 1, 100, false);
  ndt.examined_on := weld_private.json_date(input, 'examinedOn', '');
  ndt.technician := weld_private.json_string(input, 'technician', '', 0, 200, true);
  ndt.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  welds := weld_private.ndt_welds_input(input, '');
  if input ? 'filmIntervals' then
    intervals := weld_private.ndt_intervals_input(input, '');
  end if;
  results := weld_private.ndt_results(ndt.method, welds, intervals, '/welds', '/filmIntervals');
  ndt.result := case when results @> '[{"effective": "rejected"}]' then 'rejected' else 'accepted' end;
  -- Records follow reality, said before the rules are asked (the link trigger holds it anyway).
  perform weld_private.refuse_unwelded_examinations(
    weld_private.examination_links(weld_private.weld_ids_of(welds), ndt.examined_on,
                                   format('%s report %s', ndt.method, ndt.report_number)), 'ndt');
  perform weld_private.lock_lines_of(weld_private.weld_ids_of(welds));
  -- Every weld's result is new.
  moves := weld_private.ndt_status_changes(results);

  insert into weld_public.ndt_records (method, report_number, examined_on, technician, result, notes)
  values (ndt.method, ndt.report_number, ndt.examined_on, ndt.technician, ndt.result, ndt.notes)
  returning * into ndt;
  perform weld_private.ndt_write_lists(ndt.tenant_id, ndt.id, welds, intervals);
  perform weld_private.ndt_apply_status_changes(ndt, moves);
  perform weld_private.follow_examination(ndt.method, weld_private.weld_ids_of(welds), ndt.id, null);
  return ndt;
end
$$;

create or replace function weld_public.correct_ndt_record(
  record_id uuid, changes jsonb, reason text, expected_version integer default null
) returns weld_public.ndt_records
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  input jsonb := correct_ndt_record.changes;
  why text;
  previous_reason text := pg_catalog.current_setting('weld.change_reason', true);
  ndt weld_public.ndt_records;
  fixed weld_public.ndt_records;
  old_welds jsonb;
  old_intervals jsonb;
  welds jsonb;
  intervals jsonb;
  results jsonb;
  moves jsonb;
begin
  perform weld_private.require_role('inspector', 'correcting an NDT record');
  select * into ndt from weld_public.ndt_records r
   where r.tenant_id = tenant and r.id = correct_ndt_record.record_id
     for no key update; -- not FOR UPDATE: a draw's selection citing it (KEY SHARE) must not wait on it
  why := weld_private.check_correction('ndt record', correct_ndt_record.record_id, found,
                                       ndt.version, expected_version, correct_ndt_record.reason);
  if jsonb_typeof(input) = 'object' and input ? 'method' then
    perform weld_private.invalid_input(
      'the method of an NDT record cannot be corrected; record a new report instead', '/method');
  end if;
  perform weld_private.check_object(input, '', 'a correction of an NDT record',
    '{reportNumber,examinedOn,technician,notes,welds,filmIntervals}', '{}');

  fixed := ndt;
  if input ? 'reportNumber' then
    fixed.report_number := weld_private.json_string(input, 'reportNumber', '', 1, 100, false);
  end if;
  if input ? 'examinedOn' then
    fixed.examined_on := weld_private.json_date(input, 'examinedOn', '');
  end if;
  if input ? 'technician' then
    fixed.technician := weld_private.json_string(input, 'technician', '', 0, 200, true);
  end if;
  if input ? 'notes' then
    fixed.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  end if;

  -- The lists as they are, in the shape of the inputs (without pointers: not in this input).
  select coalesce(jsonb_agg(jsonb_build_object('weldId', nw.weld_id, 'result', nw.result)
                            order by nw.weld_id), '[]')
    into old_welds
    from weld_public.ndt_record_welds nw
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt.id;
  select coalesce(jsonb_agg(jsonb_build_object(
           'label', f.label, 'result', f.result, 'defectCodes', to_jsonb(f.defect_codes),
           'weldIds', (select coalesce(jsonb_agg(fw.weld_id order by fw.weld_id), '[]')
                         from weld_public.film_interval_welds fw
                        where fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id))
         order by f.label), '[]')
    into old_intervals
    from weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt.id;

  welds := old_welds;
  if input ? 'welds' then
    welds := weld_private.ndt_welds_input(input, '');
  end if;
  intervals := old_intervals;
  if input ? 'filmIntervals' then
    intervals := weld_private.ndt_intervals_input(input, '');
  end if;
  results := weld_private.ndt_results(ndt.method, welds, intervals,
    case when input ? 'welds' then '/welds' when input ? 'filmIntervals' then '/filmIntervals' else '' end,
    case when input ? 'filmIntervals' then '/filmIntervals' when input ? 'welds' then '/welds' else '' end);
  fixed.result := case when results @> '[{"effective": "rejected"}]' then 'rejected' else 'accepted' end;

  perform weld_private.refuse_unwelded_examinations(
    weld_private.examination_links(weld_private.weld_ids_of(welds), fixed.examined_on,
                                   format('%s report %s', ndt.method, fixed.report_number)), 'ndt');
  -- Every line the record touches, before and after, before any weld lock.
  perform weld_private.lock_lines_of(weld_private.weld_ids_of(old_welds) || weld_private.weld_ids_of(welds));
  -- Only the welds whose result is new: added, or changed.
  moves := weld_private.ndt_status_changes((
    select coalesce(jsonb_agg(r order by n), '[]')
      from jsonb_array_elements(results) with ordinality as e (r, n)
     where not exists (
       select from jsonb_array_elements(old_welds) as o
        where o ->> 'weldId' = r ->> 'weldId'
          and coalesce(o ->> 'result', weld_private.ndt_film_result(old_intervals, o ->> 'weldId'))
              = r ->> 'effective')));

  -- The record's row first: its version is bumped once, and the lists' changes then leave it.
  perform pg_catalog.set_config('weld.change_reason', why, true);
  if (fixed.report_number, fixed.examined_on, fixed.technician, fixed.notes, fixed.result)
     is distinct from (ndt.report_number, ndt.examined_on, ndt.technician, ndt.notes, ndt.result) then
    update weld_public.ndt_records r
       set report_number = fixed.report_number, examined_on = fixed.examined_on,
           technician = fixed.technician, notes = fixed.notes, result = fixed.result
     where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  end if;
  if input ? 'welds' or input ? 'filmIntervals' then
    perform weld_private.ndt_write_lists(ndt.tenant_id, ndt.id, welds, intervals);
  end if;
  perform weld_private.ndt_apply_status_changes(fixed, moves);
  perform weld_private.follow_examination(ndt.method, weld_private.weld_ids_of(welds), ndt.id, null);
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.ndt_records r where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  return fixed;
end
$$;

create or replace function weld_public.record_inspection(inspection jsonb) returns weld_public.inspections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  input jsonb := record_inspection.inspection;
  fresh weld_public.inspections;
  weld_ids jsonb;
  unknown integer;
begin
  perform weld_private.require_role('inspector', 'recording an inspection');
  perform weld_private.check_object(input, '', 'an inspection',
    '{kind,inspectorName,inspectedOn,result,notes,weldIds}', '{kind,inspectedOn,result,weldIds}');
  fresh.kind := weld_private.json_choice(input, 'kind', '', '{fit-up,visual,dimensional,final}', false);
  fresh.inspector_name := weld_private.json_string(input, 'inspectorName', '', 1, 200, false);
  if fresh.inspector_name is null then
    select u.display_name into fresh.inspector_name
      from weld_public.users u
     where u.tenant_id = weld_hidden.current_tenant_id() and u.id = weld_hidden.current_user_id();
    if fresh.inspector_name is null then
      perform weld_private.invalid_input(
        'inspectorName is required: the signed-in user has no name on record', '/inspectorName');
    end if;
  end if;
  fresh.inspected_on := weld_private.json_date(input, 'inspectedOn', '');
  fresh.result := weld_private.json_choice(input, 'result', '', '{accepted,rejected}', false);
  fresh.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  weld_ids := weld_private.json_uuid_list(input, 'weldIds', '', 1, 1000);
  unknown := weld_private.first_unknown_weld(weld_ids);
  if unknown is not null then
    perform weld_private.invalid_input(format('there is no weld %s', weld_ids ->> unknown),
                                       '/weldIds/' || unknown);
  end if;
  if fresh.kind <> 'fit-up' then
    perform weld_private.refuse_unwelded_examinations(
      weld_private.examination_links(weld_private.weld_ids_of(weld_ids), fresh.inspected_on,
                                     format('the %s inspection', fresh.kind)), 'inspection');
  end if;
  if fresh.kind = 'visual' then
    perform weld_private.lock_lines_of(weld_private.weld_ids_of(weld_ids));
  end if;

  insert into weld_public.inspections (kind, inspector_name, inspected_on, result, notes)
  values (fresh.kind, fresh.inspector_name, fresh.inspected_on, fresh.result, fresh.notes)
  returning * into fresh;
  perform weld_private.inspection_write_welds(fresh.tenant_id, fresh.id, weld_ids);
  if fresh.kind = 'visual' then
    perform weld_private.follow_examination('VT', weld_private.weld_ids_of(weld_ids), null, fresh.id);
  end if;
  return fresh;
end
$$;
comment on function weld_public.record_inspection(jsonb) is
  'Records an inspection (fit-up, visual, dimensional, final) of welds; it does not move them. A visual inspection is a VT examination for the code rules.';

create or replace function weld_public.correct_inspection(
  inspection_id uuid, changes jsonb, reason text, expected_version integer default null
) returns weld_public.inspections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  input jsonb := correct_inspection.changes;
  why text;
  previous_reason text := pg_catalog.current_setting('weld.change_reason', true);
  inspection weld_public.inspections;
  fixed weld_public.inspections;
  weld_ids jsonb;
  old_weld_ids uuid[];
  unknown integer;
begin
  perform weld_private.require_role('inspector', 'correcting an inspection');
  select * into inspection from weld_public.inspections r
   where r.tenant_id = tenant and r.id = correct_inspection.inspection_id
     for no key update; -- as correct_ndt_record: a selection citing it must not wait on it
  why := weld_private.check_correction('inspection', correct_inspection.inspection_id, found,
                                       inspection.version, expected_version, correct_inspection.reason);
  perform weld_private.check_object(input, '', 'a correction of an inspection',
    '{kind,inspectorName,inspectedOn,result,notes,weldIds}', '{}');

  fixed := inspection;
  if input ? 'kind' then
    fixed.kind := weld_private.json_choice(input, 'kind', '', '{fit-up,visual,dimensional,final}', false);
  end if;
  if input ? 'inspectorName' then
    fixed.inspector_name := weld_private.json_string(input, 'inspectorName', '', 1, 200, false);
  end if;
  if input ? 'inspectedOn' then
    fixed.inspected_on := weld_private.json_date(input, 'inspectedOn', '');
  end if;
  if input ? 'result' then
    fixed.result := weld_private.json_choice(input, 'result', '', '{accepted,rejected}', false);
  end if;
  if input ? 'notes' then
    fixed.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  end if;
  if input ? 'weldIds' then
    weld_ids := weld_private.json_uuid_list(input, 'weldIds', '', 1, 1000);
    unknown := weld_private.first_unknown_weld(weld_ids);
    if unknown is not null then
      perform weld_private.invalid_input(format('there is no weld %s', weld_ids ->> unknown),
                                         '/weldIds/' || unknown);
    end if;
  end if;
  old_weld_ids := array(select iw.weld_id from weld_public.inspection_welds iw
                         where iw.tenant_id = tenant and iw.inspection_id = inspection.id);
  if fixed.kind <> 'fit-up' then
    perform weld_private.refuse_unwelded_examinations(
      weld_private.examination_links(
        case when weld_ids is null then old_weld_ids else weld_private.weld_ids_of(weld_ids) end,
        fixed.inspected_on, format('the %s inspection', fixed.kind)), 'inspection');
  end if;
  if 'visual' in (inspection.kind, fixed.kind) then
    perform weld_private.lock_lines_of(old_weld_ids || weld_private.weld_ids_of(weld_ids));
  end if;

  -- The row first: its version is bumped once, and the weld list's changes then leave it.
  perform pg_catalog.set_config('weld.change_reason', why, true);
  if (fixed.kind, fixed.inspector_name, fixed.inspected_on, fixed.result, fixed.notes)
     is distinct from (inspection.kind, inspection.inspector_name, inspection.inspected_on,
                       inspection.result, inspection.notes) then
    update weld_public.inspections r
       set kind = fixed.kind, inspector_name = fixed.inspector_name,
           inspected_on = fixed.inspected_on, result = fixed.result, notes = fixed.notes
     where r.tenant_id = inspection.tenant_id and r.id = inspection.id;
  end if;
  if weld_ids is not null then
    perform weld_private.inspection_write_welds(inspection.tenant_id, inspection.id, weld_ids);
  end if;
  if fixed.kind = 'visual' then
    perform weld_private.follow_examination(
      'VT', case when weld_ids is null then old_weld_ids else weld_private.weld_ids_of(weld_ids) end,
      null, inspection.id);
  end if;
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.inspections r
   where r.tenant_id = inspection.tenant_id and r.id = inspection.id;
  return fixed;
end
$$;

reset role;

--------------------------------------------------------------------------------------------------
-- 15. Selections as REST and the events show them, their order, and their events.

set role weld_rules;

-- A selection as GET /examination-selections/{id} shows it: one shape for REST and the events.
create or replace function weld_hidden.examination_selection_json(s weld_public.examination_selections)
  returns jsonb
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'id', s.id, 'weldId', s.weld_id, 'isoId', w.iso_id, 'welderId', w.welder_id,
           'lineNumber', i.line_number, 'method', s.method, 'tier', s.tier, 'seed', s.seed,
           'reason', s.reason, 'causeSelectionId', s.cause_selection_id,
           'causeNdtRecordId', s.cause_ndt_record_id, 'causeInspectionId', s.cause_inspection_id,
           'ndtRecordId', e.ndt_record_id, 'inspectionId', e.inspection_id,
           'state', case when e.examined_on is null then 'open' else 'done' end,
           'selectedBy', s.selected_by,
           'selectedAt', to_char(s.selected_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    from weld_public.welds w
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
    left join lateral weld_private.selection_examination(s) e on true
   where w.tenant_id = s.tenant_id and w.id = s.weld_id
$$;
grant execute on function weld_hidden.examination_selection_json(weld_public.examination_selections)
  to weld_viewer;

reset role;

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
    when 'examination_selection' then
      select weld_hidden.examination_selection_json(s) into result
        from weld_public.examination_selections s
       where s.tenant_id = tenant and s.id = subject;
  end case;
  return result;
end
$$;

-- A selection is opened when it is made (drawn, counted or progressive); at that moment, under
-- the tenant's commit-order lock, it takes its event's id as its position, so lists in position
-- order never skip a selection that committed late. (Bulk loads that leave the feed out take a
-- number from the same sequence.)
create or replace function weld_private.tg__selection_outbox() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  announced bigint;
begin
  if weld_private.events_suppressed() then
    announced := nextval(pg_get_serial_sequence('weld_public.events', 'id'));
  else
    perform weld_private.emit_event(new.tenant_id, 'examination_selection.opened', new.id,
      coalesce(weld_private.event_data('examination_selection', new.tenant_id, new.id), '{}'), null);
    select e.id into announced
      from weld_private.transaction_event(new.tenant_id, 'examination_selection', new.id) e;
  end if;
  update weld_public.examination_selections s set position = announced
   where s.tenant_id = new.tenant_id and s.id = new.id;
  return null;
end
$$;

-- A selection closes when an examination that meets it first covers its weld, and reopens when a
-- correction takes the weld off the last one (NDT record or visual inspection). At commit: an
-- examination this transaction did not touch (updated before now()) met it already, so nothing
-- changed for it.
create or replace function weld_private.tg__selection_closure() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link jsonb := to_jsonb(case tg_op when 'DELETE' then old else new end);
  tenant uuid := (link ->> 'tenant_id')::uuid;
  weld uuid := (link ->> 'weld_id')::uuid;
  ndt uuid := (link ->> 'ndt_record_id')::uuid;
  inspection uuid := (link ->> 'inspection_id')::uuid;
  selection record;
begin
  if weld_private.events_suppressed() then
    return null;
  end if;
  for selection in
    select s.id, weld_public.examination_selections_state(s) as state,
           weld_private.closing_methods(s.tenant_id, s.method, i.fluid_service, w.type) as methods
      from weld_public.examination_selections s
      join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where s.tenant_id = tenant and s.weld_id = weld
       -- A selection made in this transaction is announced once, as opened (with its state).
       and s.selected_at < now()
  loop
    -- Only selections this record's method meets.
    continue when not exists (
      select from weld_public.ndt_records r
       where r.tenant_id = tenant and r.id = ndt and r.method = any(selection.methods)
      union all
      select from weld_public.inspections x
       where x.tenant_id = tenant and x.id = inspection and x.kind = 'visual' and 'VT' = any(selection.methods));
    continue when exists (
      select from weld_public.ndt_record_welds nw
        join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
       where nw.tenant_id = tenant and nw.weld_id = weld and r.method = any(selection.methods)
         and r.id is distinct from ndt and r.updated_at < now()
      union all
      select from weld_public.inspection_welds iw
        join weld_public.inspections x on x.tenant_id = iw.tenant_id and x.id = iw.inspection_id
       where iw.tenant_id = tenant and iw.weld_id = weld and x.kind = 'visual' and 'VT' = any(selection.methods)
         and x.id is distinct from inspection and x.updated_at < now());
    if tg_op = 'INSERT' and selection.state = 'done' then
      perform weld_private.emit_event(tenant, 'examination_selection.closed', selection.id,
        weld_private.event_data('examination_selection', tenant, selection.id), null);
    elsif tg_op = 'DELETE' and selection.state = 'open' then
      perform weld_private.emit_event(tenant, 'examination_selection.reopened', selection.id,
        weld_private.event_data('examination_selection', tenant, selection.id), null);
    end if;
  end loop;
  return null;
end
$$;
drop trigger if exists _900_outbox_selections on weld_public.inspection_welds;
create constraint trigger _900_outbox_selections after insert or delete on weld_public.inspection_welds
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_closure();

-- A new selection, or a record taken off a weld, may make a package less ready: its packages
-- are locked (section 12), once per statement.
set role weld_rules;
create or replace function weld_private.tg__lock_packages() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    perform weld_private.lock_packages_of(array(select distinct n.weld_id from new_rows n));
  else
    perform weld_private.lock_packages_of(array(select distinct o.weld_id from old_rows o));
  end if;
  return null;
end
$$;
reset role;
drop trigger if exists _600_lock_packages on weld_public.examination_selections;
create trigger _600_lock_packages after insert on weld_public.examination_selections
  referencing new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
drop trigger if exists _600_lock_packages on weld_public.ndt_record_welds;
create trigger _600_lock_packages after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__lock_packages();
drop trigger if exists _600_lock_packages on weld_public.inspection_welds;
create trigger _600_lock_packages after delete on weld_public.inspection_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__lock_packages();

-- A record re-dated (or an inspection made or unmade visual) may reopen what its welds owe: the
-- same locks, for the welds it covers. (Row triggers: a column list allows no transition table,
-- and a correction changes one record.)
set role weld_rules;
create or replace function weld_private.tg__lock_packages_of_record() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_table_name = 'ndt_records' then
    perform weld_private.lock_packages_of(array(
      select nw.weld_id from weld_public.ndt_record_welds nw
       where nw.tenant_id = new.tenant_id and nw.ndt_record_id = new.id));
  else
    perform weld_private.lock_packages_of(array(
      select iw.weld_id from weld_public.inspection_welds iw
       where iw.tenant_id = new.tenant_id and iw.inspection_id = new.id));
  end if;
  return null;
end
$$;
reset role;
drop trigger if exists _600_lock_packages on weld_public.ndt_records;
create trigger _600_lock_packages after update of examined_on on weld_public.ndt_records
  for each row when (old.examined_on is distinct from new.examined_on)
  execute function weld_private.tg__lock_packages_of_record();
drop trigger if exists _600_lock_packages on weld_public.inspections;
create trigger _600_lock_packages after update of kind, inspected_on on weld_public.inspections
  for each row when ((old.kind, old.inspected_on) is distinct from (new.kind, new.inspected_on))
  execute function weld_private.tg__lock_packages_of_record();

-- Selections from before this migration take positions in the order they were listed in.
update weld_public.examination_selections s set position = o.n
  from (select x.tenant_id, x.id, row_number() over (order by x.selected_at, x.id) as n
          from weld_public.examination_selections x where x.position is null) o
 where o.tenant_id = s.tenant_id and o.id = s.id;

--------------------------------------------------------------------------------------------------
-- 16. An ISO's examination: per method, over the lots its welds belong to.

set role weld_rules;

create or replace function weld_public.isos_examination(iso weld_public.isos)
  returns setof weld_public.examination_status
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  with lots as (
    select * from weld_private.lot_status(
      weld_private.rule_methods(), array[iso.line_number],
      array(select w.id from weld_public.welds w where w.tenant_id = iso.tenant_id and w.iso_id = iso.id))
  ), required as (
    select l.method, max(l.percent) as required_percent, sum(l.welds)::integer as welds,
           sum(l.required)::integer as required, sum(l.selected)::integer as selected,
           sum(l.examined)::integer as examined, sum(l.shortfall)::integer as shortfall,
           sum(l.progressive_open)::integer as progressive_open,
           array(select distinct u.welder_id
                   from lots x cross join lateral unnest(x.welders_not_covered) as u (welder_id)
                  where x.method = l.method
                  order by 1) as welders_not_covered
      from lots l
     group by l.method
  ), no_longer_required as (
    -- Selections of this ISO's welds for a method the ISO no longer requires (its fluid service
    -- or rt_percent changed since): shown, with nothing required.
    select s.method, 0::numeric, 0, 0, count(*)::integer,
           count(*) filter (where weld_public.examination_selections_state(s) = 'done')::integer, 0,
           count(*) filter (where s.tier in ('1', '2', 'full')
                              and weld_public.examination_selections_state(s) = 'open')::integer,
           '{}'::uuid[]
      from weld_public.examination_selections s
      join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
     where w.tenant_id = iso.tenant_id and w.iso_id = iso.id
       and s.method not in (select r.method from required r)
     group by s.method
  )
  select * from required
  union all
  select * from no_longer_required
  order by 1
$$;

grant execute on function
  weld_public.wps_checks(weld_public.wps),
  weld_public.welders_continuity(weld_public.welders),
  weld_public.examination_selections_inspection_id(weld_public.examination_selections),
  weld_public.withdraw_test_package(uuid, text, integer)
  to weld_viewer;

reset role;

--------------------------------------------------------------------------------------------------
-- 17. The weld register (000013) reads and writes the new columns: baseMetal1PNumber and
-- baseMetal2PNumber, the miter and lap weld types, dates in the calendar; and names the line of a
-- weldedOn that would move after an examination of the weld.

set role weld_rules;

-- The first examination of a weld dated before `welded_on` (any, when it is null): for the
-- import's check, which runs as the caller.
create or replace function weld_hidden.weld_examinations_before(weld_id uuid, welded_on date)
  returns table (record text, examined_on date)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select x.record, x.examined_on
    from weld_private.weld_examinations x
   where x.tenant_id = weld_hidden.current_tenant_id() and x.weld_id = weld_examinations_before.weld_id
     and (weld_examinations_before.welded_on is null or x.examined_on < weld_examinations_before.welded_on)
   order by x.examined_on
   limit 1
$$;
grant execute on function weld_hidden.weld_examinations_before(uuid, date) to weld_engineer;

reset role;

create or replace function weld_hidden.begin_weld_import() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.require_role('engineer', 'importing welds');
  drop table if exists pg_temp.weld_import_rows, pg_temp.weld_import_plan,
    pg_temp.weld_import_errors;
  create temporary table weld_import_rows (
    line           integer not null,
    iso_number     text not null,
    line_number    text not null,
    weld_number    text not null,
    type           text not null,
    size           text not null,
    schedule       text not null,
    wall_thickness text not null,
    material       text not null,
    welder_stamp   text not null,
    wps_number     text not null,
    wps_revision   text not null,
    welded_on      text not null,
    base_metal_1   text not null,
    base_metal_2   text not null
  ) on commit drop;
  create temporary table weld_import_plan (
    line             integer primary key,
    -- As given (trimmed; null when empty)
    iso_number       text,
    weld_number      text,
    line_number      text,
    type_text        text,
    size_text        text,
    schedule_text    text,
    wall_text        text,
    material         text,
    welder_stamp     text,
    wps_number       text,
    wps_revision     text,
    welded_on_text   text,
    base_metal_1_text text,
    base_metal_2_text text,
    -- What they name
    iso_id           uuid,
    iso_line_number  text,
    new_iso_line     text,  -- the line number a new ISO is created with
    weld_id          uuid,
    welder_id        uuid,
    wps_id           uuid,
    wps_matches      integer,
    wps_revisions    text,
    -- The weld as the import leaves it
    type             text,
    size             numeric,
    schedule         text,
    wall_thickness   numeric,
    welded_on        date,
    base_metal_1_p_number text,
    base_metal_2_p_number text,
    check_id         uuid not null default gen_random_uuid(),
    action           text check (action in ('create', 'update', 'unchanged'))
  ) on commit drop;
  create temporary table weld_import_errors (
    line     integer not null,
    "column" text,
    value    text,
    detail   text not null
  ) on commit drop;
  grant select, insert, update, delete, truncate
    on pg_temp.weld_import_rows, pg_temp.weld_import_plan, pg_temp.weld_import_errors
    to weld_engineer;
end
$$;

create or replace function weld_hidden.check_weld_import(
  present text[], decimal_comma boolean, max_errors integer
) returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  -- Every join here pairs tens of thousands of rows, some of them just written: a nested loop,
  -- which an estimate off by a little picks, would take hours; hash joins take seconds.
  set enable_nestloop = off
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  answer json;
begin
  truncate pg_temp.weld_import_plan, pg_temp.weld_import_errors;

  -- Each row, trimmed, with the ISO, weld, welder and WPS it names, and the weld as the import
  -- would leave it: a given value where the file has the column (parsed where valid; invalid ones
  -- are errors below), the weld's own where it does not. One pass: this runs on 100,000 rows.
  insert into pg_temp.weld_import_plan (
    line, iso_number, weld_number, line_number, type_text, size_text, schedule_text, wall_text,
    material, welder_stamp, wps_number, wps_revision, welded_on_text, base_metal_1_text,
    base_metal_2_text,
    iso_id, iso_line_number, new_iso_line, weld_id, welder_id, wps_id, wps_matches, wps_revisions,
    type, size, schedule, wall_thickness, welded_on, base_metal_1_p_number, base_metal_2_p_number,
    action)
  with given as (
    select r.line,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.iso_number), '')) as iso_number,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.weld_number), '')) as weld_number,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.line_number), '')) as line_number,
           upper(nullif(btrim(r.type), '')) as type_text,
           nullif(btrim(r.size), '') as size_text,
           upper(nullif(btrim(r.schedule), '')) as schedule_text,
           nullif(btrim(r.wall_thickness), '') as wall_text,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.material), '')) as material,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.welder_stamp), '')) as welder_stamp,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.wps_number), '')) as wps_number,
           weld_hidden.from_spreadsheet_text(nullif(btrim(r.wps_revision), '')) as wps_revision,
           nullif(btrim(r.welded_on), '') as welded_on_text,
           upper(nullif(btrim(r.base_metal_1), '')) as base_metal_1_text,
           upper(nullif(btrim(r.base_metal_2), '')) as base_metal_2_text
      from pg_temp.weld_import_rows r
  ), wanted_wps as (
    select distinct g.wps_number, g.wps_revision from given g where g.wps_number is not null
  ), found_wps as (
    select x.wps_number, x.wps_revision, count(p.id)::integer as matches,
           (array_agg(p.id))[1] as wps_id,
           string_agg(p.revision, ', ' order by p.revision) as revisions
      from wanted_wps x
      left join weld_public.wps p
        on p.tenant_id = tenant and p.wps_number = x.wps_number
       and (x.wps_revision is null or p.revision = x.wps_revision)
     group by x.wps_number, x.wps_revision
  ), resolved as (
    select g.*, i.id as iso_id, i.line_number as iso_line_number,
           -- A new ISO's line number: the first its rows give.
           case when i.id is null
                then first_value(g.line_number) over (
                       partition by g.iso_number order by g.line_number is null, g.line) end
             as new_iso_line,
           w.id as weld_id, wr.id as welder_id, fw.wps_id, fw.matches, fw.revisions,
           case when 'type' = any(present) then g.type_text else w.type end as final_type,
           case when 'size' = any(present) then weld_hidden.import_inches(g.size_text, decimal_comma)
                else w.size end as final_size,
           case when 'schedule' = any(present) then g.schedule_text else w.schedule end as final_schedule,
           case when 'wallThickness' = any(present)
                then weld_hidden.import_inches(g.wall_text, decimal_comma)
                else w.wall_thickness end as final_wall,
           case when 'material' = any(present) then g.material else w.material end as final_material,
           case when 'welderStamp' = any(present) then wr.id else w.welder_id end as final_welder,
           case when 'wpsNumber' = any(present) then fw.wps_id else w.wps_id end as final_wps,
           case when 'weldedOn' = any(present) then weld_hidden.import_date(g.welded_on_text)
                else w.welded_on end as final_welded_on,
           case when 'baseMetal1PNumber' = any(present) then g.base_metal_1_text
                else w.base_metal_1_p_number end as final_base_metal_1,
           case when 'baseMetal2PNumber' = any(present) then g.base_metal_2_text
                else w.base_metal_2_p_number end as final_base_metal_2,
           w as existing
      from given g
      left join weld_public.isos i on i.tenant_id = tenant and i.iso_number = g.iso_number
      left join weld_public.welds w
        on w.tenant_id = tenant and w.iso_id = i.id and w.weld_number = g.weld_number
      left join weld_public.welders wr on wr.tenant_id = tenant and wr.stamp = g.welder_stamp
      left join found_wps fw
        on fw.wps_number = g.wps_number and fw.wps_revision is not distinct from g.wps_revision
  )
  select x.line, x.iso_number, x.weld_number, x.line_number, x.type_text, x.size_text,
         x.schedule_text, x.wall_text, x.final_material, x.welder_stamp, x.wps_number,
         x.wps_revision, x.welded_on_text, x.base_metal_1_text, x.base_metal_2_text,
         x.iso_id, x.iso_line_number, x.new_iso_line, x.weld_id, x.final_welder, x.final_wps,
         x.matches, x.revisions,
         x.final_type, x.final_size, x.final_schedule, x.final_wall, x.final_welded_on,
         x.final_base_metal_1, x.final_base_metal_2,
         case when x.weld_id is null then 'create'
              when (x.final_type, x.final_size, x.final_schedule, x.final_wall, x.final_material,
                    x.final_welder, x.final_wps, x.final_welded_on, x.final_base_metal_1,
                    x.final_base_metal_2)
                   is not distinct from
                   ((x.existing).type, (x.existing).size, (x.existing).schedule,
                    (x.existing).wall_thickness, (x.existing).material, (x.existing).welder_id,
                    (x.existing).wps_id, (x.existing).welded_on, (x.existing).base_metal_1_p_number,
                    (x.existing).base_metal_2_p_number)
                then 'unchanged'
              else 'update' end
    from resolved x;

  -- The plan's statistics, so that what follows (and apply_weld_import) is planned for its real
  -- size: without them the planner guesses a few hundred rows and may scan it once per weld.
  perform weld_hidden.analyze_weld_import();

  -- What is wrong, by line and column. (Each check builds its error only where it fails, so a
  -- valid row costs twelve NULLs, not twelve rows.)
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, e ->> 0, e ->> 1, e ->> 2
    from pg_temp.weld_import_plan p
   cross join lateral unnest(array_remove(array[
     case when p.iso_number is null then jsonb_build_array('isoNumber', null, 'is required')
          when char_length(p.iso_number) > 100
            then jsonb_build_array('isoNumber', p.iso_number, 'is longer than 100 characters') end,
     case when p.weld_number is null then jsonb_build_array('weldNumber', null, 'is required')
          when char_length(p.weld_number) > 50
            then jsonb_build_array('weldNumber', p.weld_number, 'is longer than 50 characters') end,
     case when char_length(p.line_number) > 100
            then jsonb_build_array('lineNumber', p.line_number, 'is longer than 100 characters')
          when p.iso_id is not null and p.line_number <> p.iso_line_number
            then jsonb_build_array('lineNumber', p.line_number,
                   format('ISO %s is on line %s; an import does not move ISOs', p.iso_number, p.iso_line_number))
          when p.iso_id is null and p.iso_number is not null and p.new_iso_line is null
            then jsonb_build_array('lineNumber', null,
                   format('is required: ISO %s does not exist and is created by this import', p.iso_number))
          when p.iso_id is null and p.line_number <> p.new_iso_line
            then jsonb_build_array('lineNumber', p.line_number,
                   format('ISO %s is given line %s on an earlier line', p.iso_number, p.new_iso_line)) end,
     case when p.type_text is not null and p.type_text not in ('BW', 'SW', 'FW', 'BR', 'TW', 'MW', 'LW')
            then jsonb_build_array('type', p.type_text, 'must be one of BW, SW, FW, BR, TW, MW, LW')
          when p.type is null and (p.weld_id is null or 'type' = any(present))
            then jsonb_build_array('type', null, 'is required') end,
     case when p.size_text is not null and p.size is null
            then jsonb_build_array('size', p.size_text, 'must be a number of inches (NPS), such as 2 or 0.75')
          when p.size is not null and not (p.size > 0 and p.size <= 999.999)
            then jsonb_build_array('size', p.size_text, 'must be more than 0 and at most 999.999')
          when p.size is null and (p.weld_id is null or 'size' = any(present))
            then jsonb_build_array('size', null, 'is required') end,
     case when p.schedule_text !~ '^(5S|10S|40S|80S|160S|STD|XS|XXS|[0-9]{1,3})$'
            then jsonb_build_array('schedule', p.schedule_text, 'must be a pipe schedule (40, 80, XS, 10S, ...)') end,
     case when p.wall_text is not null and p.wall_thickness is null
            then jsonb_build_array('wallThickness', p.wall_text, 'must be a number of inches, such as 0.154')
          when not (p.wall_thickness > 0 and p.wall_thickness <= 999.999)
            then jsonb_build_array('wallThickness', p.wall_text, 'must be more than 0 and at most 999.999') end,
     case when char_length(p.material) > 100
            then jsonb_build_array('material', p.material, 'is longer than 100 characters') end,
     case when p.welder_stamp is not null and p.welder_id is null
            then jsonb_build_array('welderStamp', p.welder_stamp, 'no welder has this stamp') end,
     case when p.wps_matches = 0 and p.wps_revision is null
            then jsonb_build_array('wpsNumber', p.wps_number, format('no WPS %s', p.wps_number))
          when p.wps_matches = 0
            then jsonb_build_array('wpsNumber', p.wps_number,
                   format('no WPS %s revision %s', p.wps_number, p.wps_revision))
          when p.wps_matches > 1
            then jsonb_build_array('wpsNumber', p.wps_number,
                   format('WPS %s has revisions %s: give wpsRevision', p.wps_number, p.wps_revisions)) end,
     case when p.wps_revision is not null and p.wps_number is null
            then jsonb_build_array('wpsRevision', p.wps_revision, 'needs a wpsNumber') end,
     case when p.welded_on_text is not null and p.welded_on is null
            then jsonb_build_array('weldedOn', p.welded_on_text,
                                   'must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31') end,
     case when p.base_metal_1_text !~ '^[0-9]{1,3}[A-Z]?$'
            then jsonb_build_array('baseMetal1PNumber', p.base_metal_1_text,
                                   'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)') end,
     case when p.base_metal_2_text !~ '^[0-9]{1,3}[A-Z]?$'
            then jsonb_build_array('baseMetal2PNumber', p.base_metal_2_text,
                                   'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)') end
   ], null)) as e;

  -- Records follow reality: a weld examined keeps a date welded no later than its examinations.
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, 'weldedOn', p.welded_on_text,
         case when p.welded_on is null
              then format('weld %s of ISO %s is covered by %s of %s: its date welded cannot be taken off',
                          p.weld_number, p.iso_number, e.record, e.examined_on)
              else format('weld %s of ISO %s is covered by %s of %s: it was welded on or before that day',
                          p.weld_number, p.iso_number, e.record, e.examined_on) end
    from pg_temp.weld_import_plan p
    cross join lateral (
      select x.record, x.examined_on
        from weld_hidden.weld_examinations_before(p.weld_id, p.welded_on) x) e
   where p.action = 'update' and 'weldedOn' = any(present)
     and (p.welded_on is not null or p.welded_on_text is null);

  -- The same weld twice: the later lines are wrong.
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select d.line, 'weldNumber', d.weld_number,
         format('weld %s of ISO %s is also on line %s', d.weld_number, d.iso_number, d.first_line)
    from (select p.line, p.iso_number, p.weld_number,
                 min(p.line) over (partition by p.iso_number, p.weld_number) as first_line
            from pg_temp.weld_import_plan p
           where p.iso_number is not null and p.weld_number is not null) d
   where d.line > d.first_line;

  -- The rules the database holds every write to, for the rows that would write: a weld of a test
  -- package that is not open keeps its data (WD008); in refuse mode, the code checks (WD010).
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select distinct on (p.line) p.line, null, null,
         format('test package %s is %s; the data of its welds changes only while it is open',
                t.package_number, t.state)
    from pg_temp.weld_import_plan p
    join weld_public.test_packages t on t.tenant_id = tenant and t.state <> 'open'
   where p.action in ('create', 'update')
     and (t.id in (select l.test_package_id from weld_public.test_package_isos l
                    where l.tenant_id = tenant and l.iso_id = p.iso_id)
          or t.id in (select l.test_package_id from weld_public.test_package_welds l
                       where l.tenant_id = tenant and l.weld_id = p.weld_id))
   order by p.line, t.package_number;

  if coalesce((select s.weld_checks from weld_public.tenant_settings s where s.tenant_id = tenant),
              'show') = 'refuse' then
    insert into pg_temp.weld_import_errors (line, "column", value, detail)
    select p.line, null, null, format('fails the code check %s: %s', c.code, c.detail)
      from weld_hidden.weld_import_code_problems(array(
             select jsonb_populate_record(null::weld_public.welds, jsonb_build_object(
                      'tenant_id', tenant, 'id', coalesce(p.weld_id, p.check_id), 'iso_id', p.iso_id,
                      'weld_number', p.weld_number, 'type', p.type, 'size', p.size,
                      'schedule', p.schedule, 'wall_thickness', p.wall_thickness,
                      'material', p.material, 'welder_id', p.welder_id, 'wps_id', p.wps_id,
                      'welded_on', p.welded_on, 'base_metal_1_p_number', p.base_metal_1_p_number,
                      'base_metal_2_p_number', p.base_metal_2_p_number,
                      'status', 'PENDING', 'repair_cycle', 0, 'version', 1))
               from pg_temp.weld_import_plan p
              where p.action in ('create', 'update'))) c
      join pg_temp.weld_import_plan p on coalesce(p.weld_id, p.check_id) = c.weld_id;
  end if;

  select json_build_object(
           'errors', coalesce((
             select json_agg(json_build_object('line', e.line, 'column', e."column",
                                               'value', left(e.value, 200), 'detail', e.detail)
                             order by e.line, e."column" nulls first, e.detail)
               from (select * from pg_temp.weld_import_errors
                      order by line, "column" nulls first, detail limit max_errors) e), '[]'::json),
           'errorCount', (select count(*) from pg_temp.weld_import_errors),
           'created', count(*) filter (where p.action = 'create'),
           'updated', count(*) filter (where p.action = 'update'),
           'unchanged', count(*) filter (where p.action = 'unchanged'),
           'isosCreated', count(distinct p.iso_number) filter (where p.iso_id is null))
    into answer
    from pg_temp.weld_import_plan p;
  return answer;
end
$$;

create or replace function weld_hidden.import_date(value text) returns date
  language sql stable parallel safe
as $$
  select case when value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' and pg_input_is_valid(value, 'date')
               and value::date between date '1900-01-01' and date '2200-12-31'
              then value::date end
$$;

create or replace function weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set enable_nestloop = off -- as check_weld_import; the plan's statistics predate its new ids
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  done weld_hidden.imports;
begin
  if exists (select from pg_temp.weld_import_errors) then
    raise exception 'the import has errors' using errcode = 'WD007';
  end if;

  with created as (
    insert into weld_public.isos (iso_number, line_number)
    select distinct on (p.iso_number) p.iso_number, p.new_iso_line
      from pg_temp.weld_import_plan p
     where p.iso_id is null
     order by p.iso_number, p.line
    returning id, iso_number
  )
  update pg_temp.weld_import_plan p set iso_id = c.id
    from created c
   where p.iso_id is null and p.iso_number = c.iso_number;

  with created as (
    insert into weld_public.welds (iso_id, weld_number, type, size, schedule, wall_thickness,
                                   material, welder_id, wps_id, welded_on, base_metal_1_p_number,
                                   base_metal_2_p_number)
    select p.iso_id, p.weld_number, p.type, p.size, p.schedule, p.wall_thickness, p.material,
           p.welder_id, p.wps_id, p.welded_on, p.base_metal_1_p_number, p.base_metal_2_p_number
      from pg_temp.weld_import_plan p
     where p.action = 'create'
    returning id, iso_id, weld_number
  )
  update pg_temp.weld_import_plan p set weld_id = c.id
    from created c
   where p.action = 'create' and p.iso_id = c.iso_id and p.weld_number = c.weld_number;

  update weld_public.welds w
     set type = p.type, size = p.size, schedule = p.schedule, wall_thickness = p.wall_thickness,
         material = p.material, welder_id = p.welder_id, wps_id = p.wps_id, welded_on = p.welded_on,
         base_metal_1_p_number = p.base_metal_1_p_number,
         base_metal_2_p_number = p.base_metal_2_p_number
    from pg_temp.weld_import_plan p
   where p.action = 'update' and w.tenant_id = tenant and w.id = p.weld_id;

  perform weld_hidden.emit_weld_import_events();

  insert into weld_hidden.imports (kind, file_sha256, file_bytes, rows, created, updated,
                                   unchanged, isos_created)
  select 'welds', apply_weld_import.file_sha256, apply_weld_import.file_bytes, count(*),
         count(*) filter (where p.action = 'create'), count(*) filter (where p.action = 'update'),
         count(*) filter (where p.action = 'unchanged'),
         count(distinct p.iso_number) filter (where p.new_iso_line is not null)
    from pg_temp.weld_import_plan p
  returning * into done;
  return weld_hidden.import_json(done);
end
$$;

create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on,
    'baseMetal1PNumber', w.base_metal_1_p_number, 'baseMetal2PNumber', w.base_metal_2_p_number,
    'status', w.status,
    'repairCycle', w.repair_cycle, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;


--------------------------------------------------------------------------------------------------
-- weld_rules keeps no CREATE right on any schema (see 000006).
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
