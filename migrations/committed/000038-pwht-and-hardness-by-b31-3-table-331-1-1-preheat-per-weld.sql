--! Previous: sha1:8cf7637a716b1c93e071f682c10c40a30aefa771
--! Hash: sha1:c8ecf4c5e9dd1cae05cb03e0ea70e587239638cb
--! Message: PWHT and hardness by B31.3 Table 331.1.1; preheat per weld

-- F19, heat treatment by the code. What B31.3 asks of a weld's heat treatment becomes data and
-- rules: the table's rows per tenant (a DBA edits them), PWHT records with their values covering
-- welds, hardness readings, and the minimum preheat recorded per weld. The weld checks
-- (weld_private.heat_treatment_problems) judge them: PWHT_REQUIRED, PWHT_OUT_OF_RANGE,
-- HARDNESS_HIGH, and so does a package's readiness.

-- 1. B31.3 Table 331.1.1, per tenant: per P-number, the nominal wall thickness over which PWHT is
-- required (0: every thickness), the holding temperature range, the minimum time at temperature,
-- and the highest Brinell hardness after treatment.
create table if not exists weld_public.heat_treatment_rules (
  tenant_id                  uuid not null default weld_hidden.current_tenant_id()
                             references weld_public.tenants on delete cascade,
  p_number                   text not null constraint heat_treatment_rules_p_number_format
                               check (p_number ~ '^[0-9]{1,3}[A-Z]?$'),
  -- PWHT is required when the weld's wall thickness is over this; null: never required.
  wall_over_in               numeric(6, 3) check (wall_over_in >= 0 and wall_over_in <> 'NaN'),
  temperature_min_f          integer check (temperature_min_f between 0 and 2500),
  temperature_max_f          integer check (temperature_max_f between 0 and 2500),
  -- Time at temperature: hold_minutes_per_in per inch of wall, at least hold_minutes_min, up to
  -- hold_break_in; beyond it, hold_minutes_per_in x hold_break_in plus hold_minutes_beyond per
  -- further inch (the table's "2 h plus 15 min for each additional inch over 2 in.").
  hold_minutes_per_in        integer check (hold_minutes_per_in >= 0),
  hold_minutes_min           integer check (hold_minutes_min >= 0),
  hold_break_in              numeric(6, 3) check (hold_break_in > 0 and hold_break_in <> 'NaN'),
  hold_minutes_beyond        integer check (hold_minutes_beyond >= 0),
  hardness_max_hb            integer check (hardness_max_hb between 1 and 1000),
  clause                     text not null check (char_length(clause) between 1 and 50),
  note                       text check (char_length(note) <= 500),
  primary key (tenant_id, p_number),
  constraint heat_treatment_rules_range check (
    wall_over_in is null
    or (temperature_min_f is not null and temperature_max_f is not null
        and temperature_min_f <= temperature_max_f
        and hold_minutes_per_in is not null and hold_minutes_min is not null
        and hold_break_in is not null and hold_minutes_beyond is not null))
);
comment on table weld_public.heat_treatment_rules is
  E'@aggregates on\nPostweld heat treatment and hardness by P-number (ASME B31.3 Table 331.1.1), per tenant: when PWHT is required, its holding temperature range and time at temperature, the highest hardness after it. A DBA changes the rows.';
comment on column weld_public.heat_treatment_rules.wall_over_in is
  'PWHT is required when the weld''s nominal wall thickness (inches) is over this; 0: at every thickness; null: never.';
comment on column weld_public.heat_treatment_rules.hold_minutes_per_in is
  'Minutes at temperature per inch of wall, up to hold_break_in (at least hold_minutes_min).';
comment on column weld_public.heat_treatment_rules.hold_minutes_beyond is
  'Minutes for each inch of wall beyond hold_break_in, added to hold_minutes_per_in x hold_break_in.';
comment on column weld_public.heat_treatment_rules.hardness_max_hb is
  'The highest Brinell hardness (HB) of the weld and heat affected zone after heat treatment; null: no limit.';
select weld_private.secure_tenant_table('weld_public.heat_treatment_rules')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.heat_treatment_rules'::regclass
                      and p.polname = 'tenant_isolation');
grant select on weld_public.heat_treatment_rules to weld_viewer, weld_rules;

-- 2. Preheat: the minimum temperature the weld was preheated to (B31.3 330), as recorded.
alter table weld_public.welds add column if not exists preheat_f integer
  constraint welds_preheat_f_check check (preheat_f between 0 and 1500);
comment on column weld_public.welds.preheat_f is
  'The minimum preheat temperature recorded for the weld, in degrees Fahrenheit (B31.3 330).';
grant insert (preheat_f), update (preheat_f) on weld_public.welds to weld_engineer;

-- 3. PWHT records: one heat treatment cycle (a furnace load or a local treatment), its values as
-- the chart shows them, and the welds it covers.
create table if not exists weld_public.pwht_records (
  tenant_id             uuid not null default weld_hidden.current_tenant_id()
                        references weld_public.tenants on delete cascade,
  id                    uuid not null default gen_random_uuid(),
  record_number         text not null check (char_length(record_number) between 1 and 100),
  treated_on            date not null,
  holding_temperature_f integer not null check (holding_temperature_f between 0 and 2500),
  hold_minutes          integer not null check (hold_minutes between 0 and 100000),
  heating_rate_f_per_h  integer check (heating_rate_f_per_h between 0 and 10000),
  cooling_rate_f_per_h  integer check (cooling_rate_f_per_h between 0 and 10000),
  chart_ref             text check (char_length(chart_ref) <= 500),
  version               integer not null default 1 check (version >= 1),
  created_at            timestamptz not null default now(),
  updated_at            timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint pwht_records_number_key unique (tenant_id, record_number)
);
comment on table weld_public.pwht_records is
  E'@aggregates on\nA postweld heat treatment cycle as its chart shows it (B31.3 331): holding temperature, time at temperature, heating and cooling rates, the chart, and the welds it covers.';
comment on column weld_public.pwht_records.holding_temperature_f is
  'The holding temperature reached, in degrees Fahrenheit: the lowest of the hold (the chart''s band).';
comment on column weld_public.pwht_records.hold_minutes is 'Time at the holding temperature, in minutes.';
comment on column weld_public.pwht_records.chart_ref is 'The temperature chart (its number or document reference).';
select weld_private.add_calendar_check('weld_public.pwht_records', 'treated_on');

create table if not exists weld_public.pwht_record_welds (
  tenant_id      uuid not null default weld_hidden.current_tenant_id(),
  pwht_record_id uuid not null,
  weld_id        uuid not null,
  primary key (tenant_id, pwht_record_id, weld_id),
  constraint pwht_record_welds_record_fkey
    foreign key (tenant_id, pwht_record_id) references weld_public.pwht_records on delete cascade,
  constraint pwht_record_welds_weld_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict
);
create index if not exists pwht_record_welds_weld_idx on weld_public.pwht_record_welds (tenant_id, weld_id);
comment on table weld_public.pwht_record_welds is 'The welds a PWHT record covers.';
comment on constraint pwht_record_welds_record_fkey on weld_public.pwht_record_welds is
  E'@fieldName pwhtRecord\n@foreignFieldName pwhtRecordWelds';
comment on constraint pwht_record_welds_weld_fkey on weld_public.pwht_record_welds is
  E'@fieldName weld\n@foreignFieldName pwhtRecordWelds';

-- 4. Hardness readings of a weld (B31.3 331.1.7), with where they were taken.
create table if not exists weld_public.hardness_readings (
  tenant_id   uuid not null default weld_hidden.current_tenant_id()
              references weld_public.tenants on delete cascade,
  id          uuid not null default gen_random_uuid(),
  weld_id     uuid not null,
  measured_on date not null,
  location    text not null default 'weld' check (location in ('weld', 'haz', 'base')),
  hardness_hb integer not null check (hardness_hb between 1 and 1000),
  report_ref  text check (char_length(report_ref) <= 500),
  version     integer not null default 1 check (version >= 1),
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint hardness_readings_weld_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict
);
create index if not exists hardness_readings_weld_idx on weld_public.hardness_readings (tenant_id, weld_id);
comment on table weld_public.hardness_readings is
  E'@aggregates on\nA Brinell hardness reading of a weld (B31.3 331.1.7). Readings taken on or after its latest PWHT are judged against the lowest limit of its P-numbers in B31.3 Table 331.1.1.';
comment on column weld_public.hardness_readings.location is
  'Where it was taken: weld (the weld metal), haz (heat affected zone) or base (base metal).';
comment on column weld_public.hardness_readings.hardness_hb is 'Brinell hardness (HB).';
comment on constraint hardness_readings_weld_fkey on weld_public.hardness_readings is
  E'@fieldName weld\n@foreignFieldName hardnessReadings';
select weld_private.add_calendar_check('weld_public.hardness_readings', 'measured_on');

select weld_private.secure_tenant_table(t)
  from unnest(array['weld_public.pwht_records', 'weld_public.pwht_record_welds',
                    'weld_public.hardness_readings']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');

-- Inspectors record heat treatment and hardness, as they record examinations; engineers too.
grant select on weld_public.pwht_records, weld_public.pwht_record_welds, weld_public.hardness_readings
  to weld_viewer, weld_rules;
grant insert (record_number, treated_on, holding_temperature_f, hold_minutes, heating_rate_f_per_h,
              cooling_rate_f_per_h, chart_ref),
      update (record_number, treated_on, holding_temperature_f, hold_minutes, heating_rate_f_per_h,
              cooling_rate_f_per_h, chart_ref),
      delete
   on weld_public.pwht_records to weld_inspector;
grant insert, delete on weld_public.pwht_record_welds to weld_inspector;
grant insert (weld_id, measured_on, location, hardness_hb, report_ref),
      update (measured_on, location, hardness_hb, report_ref),
      delete
   on weld_public.hardness_readings to weld_inspector;

-- The list's writes touch the record (weld_private.tg__touch_parent), as weld_rules.
grant update (updated_at) on weld_public.pwht_records to weld_rules;

--! Included functions/weld_private.seed_code_rules.sql
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

  -- B31.3 Table 331.1.1 (2016 edition), US customary units: the nominal wall over which PWHT is
  -- required, the holding temperature range, and time at temperature (1 h/in., 1 h minimum, up
  -- to 2 in.; 2 h plus 15 min for each further inch). The Brinell limits are those of the 2014
  -- and earlier editions' column, which 2016 dropped: a tenant bound to an edition edits the rows.
  insert into weld_public.heat_treatment_rules
    (tenant_id, p_number, wall_over_in, temperature_min_f, temperature_max_f, hold_minutes_per_in,
     hold_minutes_min, hold_break_in, hold_minutes_beyond, hardness_max_hb, clause, note)
  select for_tenant, r.p_number, r.wall_over_in, r.t_min, r.t_max, 60, 60, 2, 15, r.hb,
         'B31.3 Table 331.1.1', r.note
    from (values
      ('1', 0.75, 1100, 1200, null::integer, 'carbon steel: PWHT over 3/4 in. nominal wall'),
      ('3', 0.75, 1100, 1325, 225, 'alloy steels, Cr 3/4% max.: PWHT over 3/4 in.'),
      ('4', 0.5, 1200, 1375, 225, '1 1/4 Cr - 1/2 Mo and similar: PWHT over 1/2 in.'),
      ('5A', 0.5, 1250, 1400, 241, '2 1/4 Cr - 1 Mo and similar: PWHT over 1/2 in.'),
      ('5B', 0, 1250, 1400, 241, '5 Cr to 9 Cr: PWHT at every thickness'),
      ('6', 0, 1400, 1475, 241, 'martensitic stainless steels: PWHT at every thickness'),
      ('9A', 0.75, 1100, 1200, null, 'nickel alloy steels (2 1/2 Ni): PWHT over 3/4 in.'),
      ('9B', 0.625, 1100, 1175, null, 'nickel alloy steels (3 1/2 Ni): PWHT over 5/8 in.'),
      ('15E', 0, 1300, 1425, null, '9 Cr - 1 Mo - V: PWHT at every thickness')
    ) as r (p_number, wall_over_in, t_min, t_max, hb, note)
  on conflict do nothing;
$$;
--! EndIncluded functions/weld_private.seed_code_rules.sql
select weld_private.seed_code_rules(t.id) from weld_public.tenants t;
--! Included functions/weld_private.heat_treatment_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Heat treatment and hardness by B31.3 Table 331.1.1 (the tenant's weld_public.heat_treatment_rules),
-- for any number of welds; part of the weld checks (weld_private.weld_problems):
--
--   PWHT_REQUIRED      a P-number of the weld's joint requires PWHT at its wall thickness (over the
--                      row's wall_over_in; 0: at every thickness) and no PWHT record dated on or
--                      after the day it was welded covers it
--   PWHT_OUT_OF_RANGE  the weld's latest such record held outside the temperature range, or for
--                      less than the time its wall needs (1 h per inch, at least 1 h, up to 2 in.;
--                      beyond, 15 min per further inch: the row's hold_* columns). For a joint of
--                      two P-numbers, the range is the higher of the two (B31.3 331.2.3(a))
--   HARDNESS_HIGH      a reading over the lowest hardness_max_hb of the joint's P-numbers, taken on
--                      or after the latest covering PWHT (a reading before it no longer tells)
--   DATA_MISSING       a fillet weld with no wall thickness whose P-number needs PWHT over some
--                      thickness: whether it does is unknown (a groove weld's missing wall is
--                      named by the other checks already)
--
-- A P-number with no row (P-No. 8, say) asks for nothing; an unknown P-number is DATA_MISSING of
-- the other checks. A record judged is judged whether PWHT was required or not: it says the weld
-- was treated, so it must have been treated as the table says.
create or replace function weld_private.heat_treatment_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select x.id, x.tenant_id, x.welded_on, x.wall_thickness, weld_private.is_fillet(x.type) as fillet,
           weld_private.p_joint(x.base_metal_1_p_number, x.base_metal_2_p_number) as joint
      from unnest(welds) as x
     where x.tenant_id = weld_hidden.current_tenant_id()
  ), sides as (
    -- The table's row of each P-number of the joint, and whether it asks for PWHT at this wall
    -- (null: the wall is unknown and the row has a threshold).
    select w.id, r.*,
           case when r.wall_over_in is null then false
                when r.wall_over_in = 0 then true
                else w.wall_thickness > r.wall_over_in end as requires
      from w
      join weld_public.heat_treatment_rules r on r.tenant_id = w.tenant_id and r.p_number = any(w.joint)
  ), judged as (
    select w.*, g.p_number as range_p_number, g.temperature_min_f, g.temperature_max_f,
           -- The time at temperature the weld's wall needs.
           case when w.wall_thickness <= g.hold_break_in
                then greatest(g.hold_minutes_min, ceil(g.hold_minutes_per_in * w.wall_thickness))
                else g.hold_minutes_per_in * g.hold_break_in + ceil(g.hold_minutes_beyond * (w.wall_thickness - g.hold_break_in))
           end::integer as hold_needed,
           (select s.p_number from sides s where s.id = w.id and s.requires order by s.p_number limit 1) as required_by,
           (select s.wall_over_in from sides s where s.id = w.id and s.requires order by s.p_number limit 1) as required_over,
           (select s.p_number from sides s where s.id = w.id and s.requires is null order by s.p_number limit 1) as unknown_for,
           (select s.wall_over_in from sides s where s.id = w.id and s.requires is null order by s.p_number limit 1) as unknown_over,
           h.p_number as hardness_p_number, h.hardness_max_hb,
           p.record_number, p.treated_on, p.holding_temperature_f, p.hold_minutes
      from w
      -- The governing range: the higher of the joint's (B31.3 331.2.3(a)).
      left join lateral (
        select s.* from sides s
         where s.id = w.id and s.temperature_min_f is not null
         order by s.temperature_min_f desc, s.temperature_max_f desc, s.p_number
         limit 1) g on true
      -- The lowest hardness limit of the joint.
      left join lateral (
        select s.p_number, s.hardness_max_hb from sides s
         where s.id = w.id and s.hardness_max_hb is not null
         order by s.hardness_max_hb, s.p_number
         limit 1) h on true
      -- The latest PWHT record covering the weld since it was welded.
      left join lateral (
        select r.record_number, r.treated_on, r.holding_temperature_f, r.hold_minutes
          from weld_public.pwht_record_welds l
          join weld_public.pwht_records r on r.tenant_id = l.tenant_id and r.id = l.pwht_record_id
         where l.tenant_id = w.tenant_id and l.weld_id = w.id and r.treated_on >= w.welded_on
         order by r.treated_on desc, r.created_at desc, r.id
         limit 1) p on true
  )
  select j.id, 'PWHT_REQUIRED',
         format('%s at a wall of %s requires PWHT (P-No. %s over %s; B31.3 Table 331.1.1): %s to %s °F for at least %s min; no PWHT record dated on or after %s covers it',
                weld_private.p_joint_words(j.joint), weld_private.inches(j.wall_thickness), j.required_by,
                weld_private.inches(j.required_over), j.temperature_min_f, j.temperature_max_f,
                coalesce(j.hold_needed::text, '?'), coalesce(j.welded_on::text, 'the day it is welded'))
    from judged j
   where j.required_by is not null and j.record_number is null
  union all
  select j.id, 'PWHT_OUT_OF_RANGE', o.detail
    from judged j
    cross join lateral unnest(array_remove(array[
      case when j.holding_temperature_f < j.temperature_min_f or j.holding_temperature_f > j.temperature_max_f
           then format('PWHT record %s of %s held %s °F, outside the %s to %s °F of P-No. %s (B31.3 Table 331.1.1)',
                       j.record_number, j.treated_on, j.holding_temperature_f, j.temperature_min_f,
                       j.temperature_max_f, j.range_p_number) end,
      case when j.hold_minutes < j.hold_needed
           then format('PWHT record %s of %s held %s min at temperature, less than the %s min a wall of %s needs (B31.3 Table 331.1.1)',
                       j.record_number, j.treated_on, j.hold_minutes, j.hold_needed,
                       weld_private.inches(j.wall_thickness)) end
    ], null)) as o (detail)
   where j.record_number is not null and j.range_p_number is not null
  union all
  select j.id, 'HARDNESS_HIGH',
         format('%s hardness of %s HB on %s is over the %s HB of P-No. %s (B31.3 Table 331.1.1)',
                case r.location when 'haz' then 'heat affected zone' when 'base' then 'base metal' else 'weld metal' end,
                r.hardness_hb, r.measured_on, j.hardness_max_hb, j.hardness_p_number)
    from judged j
    join weld_public.hardness_readings r on r.tenant_id = j.tenant_id and r.weld_id = j.id
   where r.hardness_hb > j.hardness_max_hb
     and r.measured_on >= coalesce(j.treated_on, r.measured_on)
  union all
  select j.id, 'DATA_MISSING',
         format('no wall thickness is recorded: whether P-No. %s needs PWHT (over %s) is unknown',
                j.unknown_for, weld_private.inches(j.unknown_over))
    from judged j
   where j.fillet and j.unknown_for is not null and j.required_by is null
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.heat_treatment_problems.sql
--! Included functions/weld_private.check_refuses.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The weld checks a write is refused for when the tenant's weld_checks is 'refuse': the record's
-- own problems. Not what is unknown yet (DATA_MISSING) nor what is owed after welding: a repair's
-- re-examination, its heat treatment, a hardness finding (recorded later, on other records).
create or replace function weld_private.check_refuses(code text) returns boolean
  language sql immutable parallel safe
as $$
  select code not in ('DATA_MISSING', 'REEXAMINATION_OPEN', 'PWHT_REQUIRED', 'PWHT_OUT_OF_RANGE', 'HARDNESS_HIGH')
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
  'Every problem with the weld''s record under the code rules (ASME IX, B31.3 341.3.3 and Table 331.1.1, the WPS): WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, WPS_PNUMBER, WPS_RANGE_UNSUPPORTED, REEXAMINATION_OPEN, PWHT_REQUIRED, PWHT_OUT_OF_RANGE, HARDNESS_HIGH (B31.3 Table 331.1.1), DATA_MISSING; none when it is in order.';

grant execute on function weld_public.welds_checks(weld_public.welds) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welds_checks.sql
--! Included functions/weld_private.tg_welds__code_checks.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD010, the tenant's weld_checks = 'refuse': a request's write of welds that leaves one with a
-- problem weld_private.check_refuses names is refused, naming the first (by weld number) and its problems.
-- Only writes of what the checks read; a status change never is.
--
-- The weld guards of 000013 read the new columns too: a weld of a package that is not open keeps
-- its base metals (WD008), and refuse mode judges a change of them (WD010). REEXAMINATION_OPEN
-- is about examination, not the record, so it never refuses a write (nor do heat treatment and
-- hardness, recorded after welding).
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
   where weld_private.check_refuses(p.code)
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
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_code_checks_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__code_checks();
create or replace trigger _200_code_checks_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg_welds__code_checks();
--! EndIncluded functions/weld_private.tg_welds__code_checks.sql
--! Included functions/weld_private.refuse_failing_welds.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

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
   where weld_private.check_refuses(p.code)
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

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.refuse_failing_welds.sql
--! Included functions/weld_hidden.weld_import_code_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.weld_import_code_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.weld_id, p.code, p.detail
    from weld_private.weld_problems(welds, true) p
   where weld_private.check_refuses(p.code)
     and coalesce((select s.weld_checks from weld_public.tenant_settings s
                    where s.tenant_id = weld_hidden.current_tenant_id()), 'show') = 'refuse'
$$;

grant execute on function weld_hidden.weld_import_code_problems(weld_public.welds[]) to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.weld_import_code_problems.sql
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
--! EndIncluded functions/weld_hidden.touch.sql
--! Included functions/weld_private.weld_json.sql
create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on,
    'baseMetal1PNumber', w.base_metal_1_p_number, 'baseMetal2PNumber', w.base_metal_2_p_number,
    'preheatF', w.preheat_f,
    'status', w.status,
    'repairCycle', w.repair_cycle, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

grant execute on function weld_private.weld_json(weld_public.welds) to weld_rules;
--! EndIncluded functions/weld_private.weld_json.sql
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
-- - 'weld': a weld's selections, examinations, PWHT records or hardness readings changed (its
--   ISO's lots and packages);
-- - 'record': an NDT record's, film interval's, inspection's or PWHT record's method, date, result
--   or values changed (the welds it covers);
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
         'weld_reexaminations', 'pwht_record_welds', 'hardness_readings' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.weld_id::text) as welds from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'weld', pair.welds);
      end loop;
    when 'ndt_records', 'film_intervals', 'inspections', 'pwht_records' then
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
--! EndIncluded functions/weld_private.tg__report_stale.sql
--! Included functions/weld_private.tg__lock_packages.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A new selection, a record taken off a weld, or a hardness reading may make a package less
-- ready: its packages are locked (section 12), once per statement.
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
--! EndIncluded functions/weld_private.tg__lock_packages.sql
--! Included functions/weld_private.tg__lock_packages_of_record.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A record re-dated (or an inspection made or unmade visual, a PWHT record's values changed) may
-- reopen what its welds owe: the same locks, for the welds it covers. (Row triggers: a column list allows no transition table,
-- and a correction changes one record.)
create or replace function weld_private.tg__lock_packages_of_record() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_table_name = 'ndt_records' then
    perform weld_private.lock_packages_of(array(
      select nw.weld_id from weld_public.ndt_record_welds nw
       where nw.tenant_id = new.tenant_id and nw.ndt_record_id = new.id));
  elsif tg_table_name = 'inspections' then
    perform weld_private.lock_packages_of(array(
      select iw.weld_id from weld_public.inspection_welds iw
       where iw.tenant_id = new.tenant_id and iw.inspection_id = new.id));
  else
    perform weld_private.lock_packages_of(array(
      select pw.weld_id from weld_public.pwht_record_welds pw
       where pw.tenant_id = new.tenant_id and pw.pwht_record_id = new.id));
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _600_lock_packages after update of kind, inspected_on on weld_public.inspections
  for each row when ((old.kind, old.inspected_on) is distinct from (new.kind, new.inspected_on))
  execute function weld_private.tg__lock_packages_of_record();
create or replace trigger _600_lock_packages after update of examined_on on weld_public.ndt_records
  for each row when (old.examined_on is distinct from new.examined_on)
  execute function weld_private.tg__lock_packages_of_record();
create or replace trigger _600_lock_packages
  after update of treated_on, holding_temperature_f, hold_minutes on weld_public.pwht_records
  for each row when ((old.treated_on, old.holding_temperature_f, old.hold_minutes)
                     is distinct from (new.treated_on, new.holding_temperature_f, new.hold_minutes))
  execute function weld_private.tg__lock_packages_of_record();
--! EndIncluded functions/weld_private.tg__lock_packages_of_record.sql
--! Included functions/weld_private.tg__touch_parent.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.tg__touch_parent() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link jsonb;
  tenant uuid;
  parent uuid;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  -- An update touches the resource of the new row and, if it moved, of the old one.
  foreach link in array case tg_op
    when 'INSERT' then array[to_jsonb(new)]
    when 'DELETE' then array[to_jsonb(old)]
    else array[to_jsonb(new), to_jsonb(old)]
  end loop
    tenant := (link ->> 'tenant_id')::uuid;
    parent := (link ->> tg_argv[1])::uuid;
    -- One plain statement per resource table, planned once per session (EXECUTE would plan
    -- again for every row); another table is an error (case_not_found).
    case tg_argv[0]
      when 'weld_public.wps' then
        update weld_public.wps p set updated_at = now()
         where p.tenant_id = tenant and p.id = parent and p.updated_at <> now();
      when 'weld_public.ndt_records' then
        update weld_public.ndt_records p set updated_at = now()
         where p.tenant_id = tenant and p.id = parent and p.updated_at <> now();
      when 'weld_public.inspections' then
        update weld_public.inspections p set updated_at = now()
         where p.tenant_id = tenant and p.id = parent and p.updated_at <> now();
      when 'weld_public.test_packages' then
        update weld_public.test_packages p set updated_at = now()
         where p.tenant_id = tenant and p.id = parent and p.updated_at <> now();
      when 'weld_public.pwht_records' then
        update weld_public.pwht_records p set updated_at = now()
         where p.tenant_id = tenant and p.id = parent and p.updated_at <> now();
    end case;
  end loop;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _100_touch_parent after insert or update or delete on weld_public.film_interval_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.ndt_records', 'ndt_record_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.film_intervals
  for each row execute function weld_private.tg__touch_parent('weld_public.ndt_records', 'ndt_record_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.inspection_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.inspections', 'inspection_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.ndt_record_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.ndt_records', 'ndt_record_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.test_package_isos
  for each row execute function weld_private.tg__touch_parent('weld_public.test_packages', 'test_package_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.test_package_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.test_packages', 'test_package_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.wps_pqrs
  for each row execute function weld_private.tg__touch_parent('weld_public.wps', 'wps_id');
create or replace trigger _100_touch_parent after insert or update or delete on weld_public.pwht_record_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.pwht_records', 'pwht_record_id');
--! EndIncluded functions/weld_private.tg__touch_parent.sql
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
       and l.pwht_record_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x));
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
