--! Previous: sha1:43285e84541e95d7a03a20a4de5be9a4451f76e9
--! Hash: sha1:49463a9d33f7fd8f7c541b2eb4e380f7f94e9b69
--! Message: filler metal lots per weld and process; FILLER_NOT_COVERED

-- 6. Filler metal (F19): the lots of electrode and wire a weld was made with, per process, and the
-- F-numbers a WPS qualifies (ASME IX QW-404.4: the F-number is an essential variable). A weld's
-- filler outside its WPS's F-numbers, or for a process its WPS does not use, is FILLER_NOT_COVERED
-- (weld_private.filler_problems).
create table if not exists weld_public.filler_lots (
  tenant_id          uuid not null default weld_hidden.current_tenant_id()
                     references weld_public.tenants on delete cascade,
  id                 uuid not null default gen_random_uuid(),
  aws_classification text not null check (char_length(aws_classification) between 1 and 30),
  lot_number         text not null check (char_length(lot_number) between 1 and 50),
  spec               text check (char_length(spec) <= 20),
  f_number           integer not null check (f_number between 1 and 99),
  a_number           integer check (a_number between 1 and 99),
  certificate_ref    text check (char_length(certificate_ref) <= 500),
  version            integer not null default 1 check (version >= 1),
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint filler_lots_lot_key unique (tenant_id, aws_classification, lot_number)
);
comment on table weld_public.filler_lots is
  E'@aggregates on\nA lot (or heat) of filler metal: its AWS classification, F-number and A-number (ASME IX QW-432, QW-442) and its certificate.';
comment on column weld_public.filler_lots.aws_classification is 'The AWS classification, e.g. E7018 or ER70S-2.';
comment on column weld_public.filler_lots.lot_number is 'The lot or heat number on its certificate.';
comment on column weld_public.filler_lots.spec is 'The SFA specification, e.g. SFA-5.1.';
comment on column weld_public.filler_lots.f_number is 'ASME IX F-number (QW-432), e.g. 4 for E7018, 6 for ER70S-2.';
comment on column weld_public.filler_lots.a_number is 'ASME IX A-number of the weld metal analysis (QW-442).';
comment on column weld_public.filler_lots.certificate_ref is 'Its certificate of conformance (number or document reference).';

create table if not exists weld_public.weld_fillers (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  id            uuid not null default gen_random_uuid(),
  weld_id       uuid not null,
  process       text not null check (process in ('SMAW', 'GTAW', 'GMAW', 'FCAW', 'SAW', 'PAW')),
  filler_lot_id uuid not null,
  version       integer not null default 1 check (version >= 1),
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint weld_fillers_key unique (tenant_id, weld_id, process, filler_lot_id),
  constraint weld_fillers_weld_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict,
  constraint weld_fillers_lot_fkey
    foreign key (tenant_id, filler_lot_id) references weld_public.filler_lots on delete restrict
);
create index if not exists weld_fillers_lot_idx on weld_public.weld_fillers (tenant_id, filler_lot_id);
comment on table weld_public.weld_fillers is
  E'@aggregates on\nA filler lot a weld was made with, for one process (a GTAW root and SMAW fill are two rows).';
comment on column weld_public.weld_fillers.process is 'The process the filler was used with: one of the weld''s WPS.';
comment on constraint weld_fillers_weld_fkey on weld_public.weld_fillers is
  E'@fieldName weld\n@foreignFieldName fillers';
comment on constraint weld_fillers_lot_fkey on weld_public.weld_fillers is
  E'@fieldName fillerLot\n@foreignFieldName weldFillers';

select weld_private.secure_tenant_table(t)
  from unnest(array['weld_public.filler_lots', 'weld_public.weld_fillers']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');
grant select on weld_public.filler_lots, weld_public.weld_fillers to weld_viewer, weld_rules;
grant insert (aws_classification, lot_number, spec, f_number, a_number, certificate_ref),
      update (aws_classification, lot_number, spec, f_number, a_number, certificate_ref),
      delete
   on weld_public.filler_lots to weld_engineer;
-- Who welded with what is recorded at the weld, by inspectors as by engineers.
grant insert (weld_id, process, filler_lot_id), update (process, filler_lot_id), delete
   on weld_public.weld_fillers to weld_inspector;

alter table weld_public.wps add column if not exists f_numbers integer[];
alter table weld_public.wps drop constraint if exists wps_f_numbers_count;
alter table weld_public.wps add constraint wps_f_numbers_count
  check (cardinality(f_numbers) >= 1 and cardinality(f_numbers) <= 10);
alter table weld_public.wps drop constraint if exists wps_f_numbers_items;
alter table weld_public.wps add constraint wps_f_numbers_items
  check (array_position(f_numbers, null) is null and 1 <= all (f_numbers) and 99 >= all (f_numbers));
comment on column weld_public.wps.f_numbers is
  'The filler F-numbers the WPS qualifies (ASME IX QW-404.4); null: not recorded (a weld''s fillers are then DATA_MISSING).';
comment on constraint wps_f_numbers_count on weld_public.wps is 'must be 1 to 10 F-numbers';
comment on constraint wps_f_numbers_items on weld_public.wps is 'must be F-numbers from 1 to 99';
grant insert (f_numbers), update (f_numbers) on weld_public.wps to weld_engineer;

--! Included functions/weld_private.filler_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Filler metal against the WPS (ASME IX QW-404.4: the F-number is an essential variable), for any
-- number of welds; part of the weld checks (weld_private.weld_problems):
--
--   FILLER_NOT_COVERED  a filler lot recorded for the weld whose F-number is not among its WPS's
--                       F-numbers, or recorded for a process its WPS does not use
--   DATA_MISSING        the weld has fillers and its WPS records no F-numbers: they are not judged
--
-- A weld with no filler recorded is not judged here (fillers are recorded as the work is; the
-- other checks name a missing WPS). The F-numbers are the WPS's, whatever process: a WPS that
-- qualifies F-No. 6 for its GTAW root and F-No. 4 for its SMAW fill lists both.
create or replace function weld_private.filler_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with used as (
    select x.id as weld_id, f.process, l.aws_classification, l.lot_number, l.f_number,
           p.wps_number, p.revision, p.process as wps_process, p.f_numbers
      from unnest(welds) as x
      join weld_public.weld_fillers f on f.tenant_id = x.tenant_id and f.weld_id = x.id
      join weld_public.filler_lots l on l.tenant_id = f.tenant_id and l.id = f.filler_lot_id
      join weld_public.wps p on p.tenant_id = x.tenant_id and p.id = x.wps_id
     where x.tenant_id = weld_hidden.current_tenant_id()
  )
  select u.weld_id, 'FILLER_NOT_COVERED',
         format('filler %s lot %s is recorded for %s, which WPS %s rev %s (%s) does not use',
                u.aws_classification, u.lot_number, u.process, u.wps_number, u.revision, u.wps_process)
    from used u
   where not (u.process = any(string_to_array(u.wps_process, '+')))
  union all
  select u.weld_id, 'FILLER_NOT_COVERED',
         format('filler %s lot %s (F-No. %s) for %s is not among the F-numbers of WPS %s rev %s (%s; QW-404.4)',
                u.aws_classification, u.lot_number, u.f_number, u.process, u.wps_number, u.revision,
                array_to_string(u.f_numbers, ', '))
    from used u
   where u.f_numbers is not null and not (u.f_number = any(u.f_numbers))
  union all
  select distinct u.weld_id, 'DATA_MISSING',
         format('WPS %s rev %s records no F-numbers: the weld''s fillers are not judged (QW-404.4)',
                u.wps_number, u.revision)
    from used u
   where u.f_numbers is null
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.filler_problems.sql
--! Included functions/weld_private.check_refuses.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The weld checks a write is refused for when the tenant's weld_checks is 'refuse': the record's
-- own problems. Not what is unknown yet (DATA_MISSING) nor what is owed after welding: a repair's
-- re-examination, its heat treatment, a hardness finding, its fillers (recorded later, on other
-- records).
create or replace function weld_private.check_refuses(code text) returns boolean
  language sql immutable parallel safe
as $$
  select code not in ('DATA_MISSING', 'REEXAMINATION_OPEN', 'PWHT_REQUIRED', 'PWHT_OUT_OF_RANGE', 'HARDNESS_HIGH',
                      'FILLER_NOT_COVERED')
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.check_refuses.sql
--! Included functions/weld_private.weld_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

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
--   PWHT_REQUIRED, PWHT_OUT_OF_RANGE, HARDNESS_HIGH
--                          heat treatment and hardness by B31.3 Table 331.1.1
--                          (weld_private.heat_treatment_problems)
--   FILLER_NOT_COVERED     a filler outside the WPS's F-numbers or processes (QW-404.4;
--                          weld_private.filler_problems)
--
-- Positions are not judged: a weld records none (a qualification's positions are shown).
-- `include_welders` false leaves WELDER_NOT_QUALIFIED out (a WPS change cannot change it).
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
  union all
  select h.weld_id, h.code, h.detail
    from weld_private.heat_treatment_problems(welds) h
  union all
  select f.weld_id, f.code, f.detail
    from weld_private.filler_problems(welds) f
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.weld_problems.sql
--! Included functions/weld_public.welds_checks.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.welds_checks(weld weld_public.welds)
  returns setof weld_public.weld_check
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.code, p.detail from weld_private.weld_problems(array[weld]) p order by p.code, p.detail
$$;

comment on function weld_public.welds_checks(weld_public.welds) is
  'Every problem with the weld''s record under the code rules (ASME IX, B31.3 341.3.3 and Table 331.1.1, the WPS): WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, WPS_PNUMBER, WPS_RANGE_UNSUPPORTED, REEXAMINATION_OPEN, PWHT_REQUIRED, PWHT_OUT_OF_RANGE, HARDNESS_HIGH (B31.3 Table 331.1.1), FILLER_NOT_COVERED (QW-404.4), DATA_MISSING; none when it is in order.';

grant execute on function weld_public.welds_checks(weld_public.welds) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welds_checks.sql
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
--! EndIncluded functions/weld_hidden.touch.sql
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
--! EndIncluded functions/weld_private.tg__outbox.sql
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
    when 'test_packages', 'test_package_welds', 'test_package_isos' then
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
--! EndIncluded functions/weld_private.tg__report_stale.sql
--! Included functions/weld_private.report_stale_parts.sql
-- What of the cached reports the notes in weld_private.report_stale (as this snapshot sees them)
-- say is out of date, for the current tenant: the lines whose lots, the packages whose readiness,
-- and the welders whose qualifications must be computed afresh. `wanted` names which of the three
-- the caller reads ('lines', 'packages', 'welders'); the others come back null.
--
-- The notes name the rows their writes wrote (weld_private.tg__report_stale lists the kinds);
-- what those reach is worked out here, in the reader's snapshot, which holds every write whose
-- note it sees. A note of 'all' (the tenant's rules or settings) is everything: every line, with
-- those whose lots are kept but have no ISO left; every package; every welder.
create or replace function weld_private.report_stale_parts(
  wanted text[], out lines text[], out packages uuid[], out welders uuid[]
)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  noted jsonb;
  welds uuid[];       -- welds whose selections or examinations changed
  lot_isos uuid[];    -- ISOs whose line's lots changed
  lots_changed text[];-- lines whose lots changed (not counting what the refresh left over)
  wps_ids uuid[];
  continuity uuid[];  -- welders whose qualifications' standing changed
begin
  -- Each kind's keys, distinct: {"line": [...], "iso": [...], ...}.
  select coalesce(jsonb_object_agg(k.kind, k.keys), '{}')
    into noted
    from (select s.kind, jsonb_agg(distinct x.key) as keys
            from weld_private.report_stale s
            cross join lateral unnest(s.keys) as x (key)
           where s.tenant_id = tenant
           group by s.kind) k;
  if noted = '{}' then
    lines := case when 'lines' = any(wanted) then '{}'::text[] end;
    packages := case when 'packages' = any(wanted) then '{}'::uuid[] end;
    welders := case when 'welders' = any(wanted) then '{}'::uuid[] end;
    return;
  end if;

  if noted ? 'all' then
    if 'lines' = any(wanted) then
      lines := array(select i.line_number from weld_public.isos i where i.tenant_id = tenant
                     union
                     select c.line_number from weld_private.lot_report_rows c where c.tenant_id = tenant);
    end if;
    if 'packages' = any(wanted) then
      packages := array(select p.id from weld_public.test_packages p where p.tenant_id = tenant);
    end if;
    if 'welders' = any(wanted) then
      welders := array(select v.id from weld_public.welders v where v.tenant_id = tenant);
    end if;
    return;
  end if;

  -- The welds whose examinations or heat treatment changed: those noted, and those a noted record
  -- covers.
  welds := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'weld') x
    union
    select l.weld_id from weld_public.ndt_record_welds l
     where l.tenant_id = tenant
       and l.ndt_record_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x)
    union
    select l.weld_id from weld_public.film_interval_welds l
     where l.tenant_id = tenant
       and l.film_interval_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x)
    union
    select l.weld_id from weld_public.inspection_welds l
     where l.tenant_id = tenant
       and l.inspection_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x)
    union
    select l.weld_id from weld_public.pwht_record_welds l
     where l.tenant_id = tenant
       and l.pwht_record_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x)
    union
    select l.weld_id from weld_public.weld_fillers l
     where l.tenant_id = tenant
       and l.filler_lot_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x));
  lot_isos := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'lot_iso') x
    union
    select w.iso_id from weld_public.welds w where w.tenant_id = tenant and w.id = any(welds));
  lots_changed := array(
    select x from jsonb_array_elements_text(noted -> 'line') x
    union
    select i.line_number from weld_public.isos i
     where i.tenant_id = tenant and i.id = any(lot_isos)
    union
    -- A welder's new stamp is in the names of its lots.
    select i.line_number
      from weld_public.welds w
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.tenant_id = tenant
       and w.welder_id in (select x::uuid from jsonb_array_elements_text(noted -> 'welder_lots') x));
  if 'lines' = any(wanted) then
    lines := array(select x from unnest(lots_changed) x
                   union
                   select x from jsonb_array_elements_text(noted -> 'lot_line') x);
  end if;
  if not ('packages' = any(wanted) or 'welders' = any(wanted)) then
    return;
  end if;

  -- A WPS's or PQR's change reaches the welders whose continuity or qualifications it carries.
  wps_ids := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'wps') x
    union
    select l.wps_id from weld_public.wps_pqrs l
     where l.tenant_id = tenant
       and l.pqr_id in (select x::uuid from jsonb_array_elements_text(noted -> 'pqr') x));
  continuity := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'welder') x
    union
    select q.welder_id from weld_public.welder_qualifications q
     where q.tenant_id = tenant
       and (q.pqr_id in (select x::uuid from jsonb_array_elements_text(noted -> 'pqr') x)
            or q.wps_id = any(wps_ids))
    union
    select w.welder_id from weld_public.welds w
     where w.tenant_id = tenant and w.wps_id = any(wps_ids) and w.welder_id is not null);
  if 'welders' = any(wanted) then
    welders := array(select x from unnest(continuity) x
                     union
                     select x::uuid from jsonb_array_elements_text(noted -> 'qual_welder') x);
  end if;
  if 'packages' = any(wanted) then
    packages := array(
      select x::uuid from jsonb_array_elements_text(noted -> 'package') x
      union
      select unnest(weld_private.packages_reading(
               lots_changed,
               array(select x::uuid from jsonb_array_elements_text(noted -> 'iso') x) || lot_isos,
               wps_ids,
               continuity)));
  end if;
end
$$;

-- Read by the report functions and the refresh, SECURITY DEFINER as weld_rules.
grant execute on function weld_private.report_stale_parts(text[]) to weld_rules;
--! EndIncluded functions/weld_private.report_stale_parts.sql
--! Included functions/weld_private.tg__lock_packages.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A new selection, a record taken off a weld, a hardness reading or a filler may make a package
-- less ready: its packages are locked (section 12), once per statement.
create or replace function weld_private.tg__lock_packages() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    perform weld_private.lock_packages_of(array(select distinct n.weld_id from new_rows n));
  elsif tg_op = 'DELETE' then
    perform weld_private.lock_packages_of(array(select distinct o.weld_id from old_rows o));
  else
    perform weld_private.lock_packages_of(array(select n.weld_id from new_rows n
                                                union select o.weld_id from old_rows o));
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _600_lock_packages after insert on weld_public.examination_selections
  referencing new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages after delete on weld_public.inspection_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages after delete on weld_public.pwht_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages after insert on weld_public.hardness_readings
  referencing new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages_update after update on weld_public.hardness_readings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages after insert on weld_public.weld_fillers
  referencing new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
create or replace trigger _600_lock_packages_update after update on weld_public.weld_fillers
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
--! EndIncluded functions/weld_private.tg__lock_packages.sql
--! Included functions/weld_private.tg__judged_on.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

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
                               n.diameter_max_in, n.p_numbers, n.f_numbers)
                              is distinct from (o.state, o.thickness_min_in, o.thickness_max_in,
                                                o.diameter_min_in, o.diameter_max_in, o.p_numbers,
                                                o.f_numbers));
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
revoke create on schema weld_private from weld_rules;

create or replace trigger _700_judged_on_delete after delete on weld_public.welder_qualifications
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_delete after delete on weld_public.wps_pqrs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.welder_qualifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.wps
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
--! EndIncluded functions/weld_private.tg__judged_on.sql
