--! Previous: sha1:fee1ae38eec301760958ffa16cbc4881113ba0b7
--! Hash: sha1:03919d90382606e73c665ab5d96f396d227d2aa1
--! Message: Code rules in SQL: random and progressive examination, ASME IX welder checks, test package readiness

-- Code rules in SQL (issue F7): what must be examined, who was qualified to weld, and whether a
-- test package may go to its pressure test, each with the reasons. The rules are rows a DBA reads
-- and changes; the functions apply them; GraphQL shows them as computed columns and REST as
-- resources of their own.
--
--   1. Tenant settings: the lot definition, the QW-322 continuity period, and whether the weld
--      checks only show or refuse a weld's write.
--   2. Rule tables, seeded per tenant: the examination each fluid service requires (B31.3
--      341.4.1), and the sizes a welder's test coupon qualifies (ASME IX QW-452).
--   3. The WPQ test coupon on a welder qualification; a weld's outside diameter from its NPS.
--   4. Welder qualifications judged on a date: valid, expired, lapsed (QW-322), not yet valid.
--   5. Weld checks: WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, DATA_MISSING; shown, or
--      refusing the write (WD010) where the tenant says so.
--   6. Examination selections: random (341.4.1) drawn with a stored seed, progressive (341.3.4)
--      drawn automatically when an NDT record rejects a selected weld.
--   7. An ISO's examination: per method, required, selected, examined, shortfall.
--   8. Test package readiness, and its release refused (WD009) unless ready.
--
-- Missing data is never a pass: a weld without a welder, a qualification without a diameter
-- range, a non-standard pipe size each becomes a reason, never a silent "ok".
--
-- New SQLSTATEs (the server maps each to HTTP once):
--   WD009 test package not ready for release; DETAIL {"reasons": [first 100], "reasonCount": n}
--   WD010 weld refused by the code checks;      DETAIL {"checks": [{"code", "detail"}]}
--
-- Units as everywhere: inches. A weld's size is its NPS; every diameter (WPS, qualification, PQR,
-- coupon) is an outside diameter (OD), converted from the NPS per ASME B36.10.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

-- A clean slate for the objects this migration creates whole (their functions go with them).
drop table if exists weld_public.examination_selections cascade;
drop type if exists weld_public.qualification_status, weld_public.weld_check,
  weld_public.examination_status, weld_public.readiness_reason cascade;
drop function if exists weld_private.lock_lots(text, text);
drop function if exists weld_private.qualification_facts(uuid[]), weld_private.lot_candidates(text[], text[]),
  weld_private.lot_status(text[], text[], uuid[]), weld_private.qualification_facts(uuid[], weld_public.welds[]),
  weld_private.weld_problems(weld_public.welds[]), weld_private.weld_problems(weld_public.welds[], boolean);

grant create on schema weld_public, weld_private to weld_rules;

--------------------------------------------------------------------------------------------------
-- 1. Tenant settings (the row per tenant of 000008).

alter table weld_public.tenant_settings
  add column if not exists examination_lot text not null default 'welder_line',
  add column if not exists continuity_months integer not null default 6,
  add column if not exists weld_checks text not null default 'show';
alter table weld_public.tenant_settings drop constraint if exists tenant_settings_examination_lot_check;
alter table weld_public.tenant_settings add constraint tenant_settings_examination_lot_check
  check (examination_lot in ('welder_line', 'welder_iso'));
alter table weld_public.tenant_settings drop constraint if exists tenant_settings_continuity_months_check;
alter table weld_public.tenant_settings add constraint tenant_settings_continuity_months_check
  check (continuity_months between 1 and 24);
alter table weld_public.tenant_settings drop constraint if exists tenant_settings_weld_checks_check;
alter table weld_public.tenant_settings add constraint tenant_settings_weld_checks_check
  check (weld_checks in ('show', 'refuse'));
comment on column weld_public.tenant_settings.examination_lot is
  'What a lot of random and progressive examination is (B31.3 341.4.1, 341.3.4): one welder''s welds on one line for one NDT method (welder_line), or on one ISO (welder_iso).';
comment on column weld_public.tenant_settings.continuity_months is
  'ASME IX QW-322: a qualification lapses when the welder has not used its process for more than this many months.';
comment on column weld_public.tenant_settings.weld_checks is
  'show: the weld checks are reported only. refuse: a weld written with WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED or WPS_RANGE is refused (DATA_MISSING never refuses: welds are planned before they are welded).';

--------------------------------------------------------------------------------------------------
-- 2. Rule tables, one set of rows per tenant, seeded with the codes' defaults when the tenant is
-- created (like the transition rules). API roles read them; a DBA changes them in SQL, and the
-- next check, draw or readiness obeys.

-- The examination a fluid service requires, as a percentage of the welds of the given types.
-- An ISO requires, for a method, the greatest of its matching rule and, for RT, its own
-- rt_percent (set from its piping class, which may ask for more than the code).
create table if not exists weld_public.examination_rules (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  method        text not null check (method in ('RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT')),
  fluid_service text not null
                check (fluid_service in ('normal', 'category_d', 'category_m', 'severe_cyclic', 'high_pressure')),
  percent       numeric(5, 2) not null check (percent between 0 and 100),
  weld_types    text[] not null default '{BW}'
                check (cardinality(weld_types) > 0 and weld_types <@ array['BW', 'SW', 'FW', 'BR', 'TW']),
  note          text,
  primary key (tenant_id, method, fluid_service)
);
comment on table weld_public.examination_rules is
  E'The examination each fluid service requires (B31.3 341.4.1), per tenant; a DBA changes the rows:\nupdate weld_public.examination_rules set percent = 10 where tenant_id = ''...'' and method = ''RT'' and fluid_service = ''normal'';';

-- The sizes a welder's test coupon qualifies. Diameter rows (QW-452.3, outside diameters): a
-- coupon in [coupon_from_in, coupon_below_in) qualifies from min_in (null: the coupon's own OD)
-- up to max_factor x the coupon (null: no upper limit). Thickness rows (QW-452.1): up to
-- max_factor x the coupon's thickness (null: no upper limit). A qualification's own
-- diameter_min_in, diameter_max_in and thickness_max_in, where given, take precedence.
create table if not exists weld_public.qualification_range_rules (
  tenant_id       uuid not null default weld_hidden.current_tenant_id()
                  references weld_public.tenants on delete cascade,
  dimension       text not null check (dimension in ('diameter', 'thickness')),
  coupon_from_in  numeric(6, 3) not null check (coupon_from_in >= 0),
  coupon_below_in numeric(6, 3) check (coupon_below_in > coupon_from_in),
  min_in          numeric(6, 3) check (min_in >= 0),
  max_factor      numeric(5, 2) check (max_factor > 0),
  clause          text not null,
  note            text,
  primary key (tenant_id, dimension, coupon_from_in)
);
comment on table weld_public.qualification_range_rules is
  E'The sizes a welder''s test coupon qualifies (ASME IX QW-452.3 diameter, QW-452.1 thickness), per tenant; a DBA changes the rows.';

select weld_private.secure_tenant_table(t)
  from unnest(array['weld_public.examination_rules', 'weld_public.qualification_range_rules']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');
grant select on weld_public.examination_rules, weld_public.qualification_range_rules
  to weld_viewer, weld_rules;

create or replace function weld_private.seed_code_rules(for_tenant uuid) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_public.examination_rules (tenant_id, method, fluid_service, percent, weld_types, note)
  values
    (for_tenant, 'RT', 'normal',        5,   '{BW}', 'B31.3 341.4.1: random radiography of 5% of the butt welds'),
    (for_tenant, 'RT', 'category_m',    20,  '{BW}', 'B31.3 M341.4: 20% of the butt welds'),
    (for_tenant, 'RT', 'severe_cyclic', 100, '{BW}', 'B31.3 341.4.3: 100% radiography of the butt welds'),
    (for_tenant, 'RT', 'high_pressure', 100, '{BW}', 'B31.3 K341.4: 100% radiography of the butt welds'),
    (for_tenant, 'VT', 'category_d',    100, '{BW,SW,FW,BR,TW}', 'B31.3 341.4.2: visual examination of every weld')
  on conflict do nothing;
  insert into weld_public.qualification_range_rules
    (tenant_id, dimension, coupon_from_in, coupon_below_in, min_in, max_factor, clause, note)
  values
    (for_tenant, 'diameter',  0,     1,     null,  null, 'QW-452.3', 'a coupon under 1 in. OD qualifies its own size and up'),
    (for_tenant, 'diameter',  1,     2.875, 1,     null, 'QW-452.3', '1 in. to under 2 7/8 in. OD qualifies 1 in. and up'),
    (for_tenant, 'diameter',  2.875, null,  2.875, null, 'QW-452.3', '2 7/8 in. OD and over qualifies 2 7/8 in. and up'),
    (for_tenant, 'thickness', 0,     0.375, null,  2,    'QW-452.1', 'a coupon under 3/8 in. qualifies up to twice its thickness'),
    (for_tenant, 'thickness', 0.375, null,  null,  2,    'QW-452.1', '3/8 in. and over: twice the coupon; set max_factor to null where the WPQ qualifies unlimited thickness')
  on conflict do nothing;
$$;

create or replace function weld_private.tg_tenants__seed_code_rules() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.seed_code_rules(new.id);
  return null;
end
$$;
drop trigger if exists _200_seed_code_rules on weld_public.tenants;
create trigger _200_seed_code_rules after insert on weld_public.tenants
  for each row execute function weld_private.tg_tenants__seed_code_rules();
-- Tenants created before this migration get the defaults too.
select weld_private.seed_code_rules(t.id) from weld_public.tenants t;

--------------------------------------------------------------------------------------------------
-- 3. The WPQ test coupon, from which QW-452 derives a qualification's ranges. Where it is not
-- recorded, the PQR's tested sizes stand in (a welder who welds a PQR coupon is qualified by it).

alter table weld_public.welder_qualifications
  add column if not exists coupon_diameter_in numeric(6, 3),
  add column if not exists coupon_thickness_in numeric(6, 3);
alter table weld_public.welder_qualifications
  drop constraint if exists welder_qualifications_coupon_diameter_in_check,
  drop constraint if exists welder_qualifications_coupon_thickness_in_check;
alter table weld_public.welder_qualifications
  add constraint welder_qualifications_coupon_diameter_in_check check (coupon_diameter_in > 0),
  add constraint welder_qualifications_coupon_thickness_in_check check (coupon_thickness_in > 0);
comment on column weld_public.welder_qualifications.coupon_diameter_in is
  'Outside diameter of the test coupon (in.); QW-452.3 derives the qualified diameters from it.';
comment on column weld_public.welder_qualifications.coupon_thickness_in is
  'Thickness of the test coupon (in.); QW-452.1 derives the qualified thickness from it.';
grant insert (coupon_diameter_in, coupon_thickness_in), update (coupon_diameter_in, coupon_thickness_in)
  on weld_public.welder_qualifications to weld_engineer;

-- The outside diameter of a pipe size (NPS), per ASME B36.10: from NPS 14 on, the NPS itself;
-- below, the table; null for a size that is no standard NPS (its OD is unknown, never guessed).
create or replace function weld_private.outside_diameter(nps numeric) returns numeric
  language sql immutable parallel safe
as $$
  select case when nps >= 14 then nps else (
    select t.od from (values
      (0.125, 0.405), (0.25, 0.540), (0.375, 0.675), (0.5, 0.840), (0.75, 1.050), (1, 1.315),
      (1.25, 1.660), (1.5, 1.900), (2, 2.375), (2.5, 2.875), (3, 3.500), (3.5, 4.000),
      (4, 4.500), (5, 5.563), (6, 6.625), (8, 8.625), (10, 10.750), (12, 12.750)
    ) as t (nps, od)
    where t.nps = outside_diameter.nps) end
$$;

-- Inches as people write them: 2.875, 0.5, 14 (no trailing zeros).
-- These two have no SET clause so that PostgreSQL inlines them into the queries that call them
-- (thousands of rows at a time); they call only pg_catalog functions, and their callers pin
-- search_path.
create or replace function weld_private.inches(value numeric) returns text
  language sql immutable parallel safe
as $$
  select trim_scale(value)::text || ' in.'
$$;

--------------------------------------------------------------------------------------------------
-- Everything below runs as weld_rules: the public functions are SECURITY DEFINER so that viewers
-- (and GraphQL's computed columns) reach the private helpers without holding EXECUTE on them, and
-- row security keeps them inside the caller's tenant.

grant select on weld_public.isos, weld_public.welders, weld_public.pqrs, weld_public.wps,
                weld_public.welder_qualifications, weld_public.test_package_isos,
                weld_public.test_package_welds
  to weld_rules;
grant execute on function weld_public.ndt_record_welds_effective_result(weld_public.ndt_record_welds),
                          weld_private.outside_diameter(numeric), weld_private.inches(numeric)
  to weld_rules;

set role weld_rules;

--------------------------------------------------------------------------------------------------
-- 4. Welder qualifications on a date.
--
-- A qualification covers the processes of its own `process`, else those of its WPS (GTAW+SMAW is
-- two). Continuity (QW-322): its uses are the day it was qualified, last_continuity_on (a use
-- recorded elsewhere), and every weld the service knows of the welder, on or after that day,
-- whose WPS shares a process with it. It stays in force while each use follows the one before
-- within continuity_months; the first use not followed in time is where it lapses:
-- continuity_until = that use + continuity_months (valid on that day, lapsed the day after).
-- Uses after a lapse do not revive it (the welder must requalify), which is why the first gap,
-- not the last use, decides.
--
-- Ranges: diameters from diameter_min_in / diameter_max_in where given, else from the coupon's
-- OD by the tenant's QW-452.3 rows; thickness up to thickness_max_in where given, else
-- max_factor x the coupon's thickness by the QW-452.1 rows. The coupon is coupon_*_in, else the
-- PQR's tested size. Unknown when neither is recorded (the *_known columns say so).
--
-- `pending`: welds about to be written (a trigger's NEW), which count as they will be rather than
-- as they are stored.
create or replace function weld_private.qualification_facts(
  welder_ids uuid[], pending weld_public.welds[] default '{}'
)
  returns table (
    qualification_id uuid, welder_id uuid, process text, processes text[], wps_id uuid,
    label text, qualified_on date, expires_on date, last_continuity_on date,
    continuity_until date, lapse_after date, positions text[],
    diameter_known boolean, diameter_min numeric, diameter_max numeric,
    thickness_known boolean, thickness_max numeric
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce((select s.continuity_months from weld_public.tenant_settings s
                      where s.tenant_id = weld_hidden.current_tenant_id()), 6) as months
  ), q as (
    select q.*, coalesce(q.process, qw.process) as covered,
           string_to_array(coalesce(q.process, qw.process), '+') as procs,
           coalesce(q.coupon_diameter_in, p.diameter_tested_in) as coupon_d,
           coalesce(q.coupon_thickness_in, p.thickness_tested_in) as coupon_t,
           coalesce('WPS ' || qw.wps_number || ' rev ' || qw.revision, q.process)
             || ' qualified ' || q.qualified_on as label
      from weld_public.welder_qualifications q
      left join weld_public.wps qw on qw.tenant_id = q.tenant_id and qw.id = q.wps_id
      left join weld_public.pqrs p on p.tenant_id = q.tenant_id and p.id = q.pqr_id
     where q.tenant_id = weld_hidden.current_tenant_id() and q.welder_id = any(welder_ids)
  ), days as (
    -- The days each welder welded with each WPS, once each: the welds on record (an index-only
    -- scan of welds_welder_wps_day_idx, in this order), the pending ones left out.
    select distinct w.welder_id, w.wps_id, w.welded_on as day
      from weld_public.welds w
     where w.tenant_id = weld_hidden.current_tenant_id() and w.welder_id = any(welder_ids)
       and w.wps_id is not null and w.welded_on is not null
       and not w.id = any(array(select p.id from unnest(pending) p))
  ), islands as (
    -- Runs of those days without a gap longer than the continuity period, per welder and WPS:
    -- a welder's thousand welds become a few intervals.
    select r.welder_id, r.wps_id, min(r.day) as start_on, max(r.day) as end_on
      from (select g.*, count(*) filter (where g.day > (g.previous + make_interval(months => s.months))::date)
                          over (partition by g.welder_id, g.wps_id order by g.day) as run
              from (select d.*, lag(d.day) over (partition by d.welder_id, d.wps_id order by d.day) as previous
                      from days d) g
              cross join settings s) r
     group by r.welder_id, r.wps_id, r.run
     union all
    -- The pending welds, each a day of its own.
    select p.welder_id, p.wps_id, p.welded_on, p.welded_on
      from unnest(pending) p
     where p.welder_id = any(welder_ids) and p.wps_id is not null and p.welded_on is not null
  ), uses as (
    -- A qualification's uses, as intervals: the day it was qualified, last_continuity_on, and the
    -- runs of its welder's welds under a WPS with a process it covers, from the day it was
    -- qualified.
    select q.id, q.qualified_on as start_on, q.qualified_on as end_on from q
    union all
    select q.id, q.last_continuity_on, q.last_continuity_on from q where q.last_continuity_on is not null
    union all
    select q.id, greatest(i.start_on, q.qualified_on), i.end_on
      from q
      join islands i on i.welder_id = q.welder_id and i.end_on >= q.qualified_on
      join weld_public.wps ww on ww.tenant_id = q.tenant_id and ww.id = i.wps_id
     where string_to_array(ww.process, '+') && q.procs
  ), chained as (
    -- In order of start, how far the uses so far reach, and where the next one starts.
    select u.id,
           max(u.end_on) over (partition by u.id order by u.start_on, u.end_on rows unbounded preceding) as reach,
           lead(u.start_on) over (partition by u.id order by u.start_on, u.end_on) as next_start
      from uses u
  ), breaks as (
    -- The first gap longer than the continuity period (reach only grows, so the least reach).
    select c.id, min(c.reach) as lapse_after
      from chained c, settings s
     where c.next_start is null or c.next_start > (c.reach + make_interval(months => s.months))::date
     group by c.id
  )
  select q.id, q.welder_id, q.covered, q.procs, q.wps_id, q.label, q.qualified_on, q.expires_on,
         q.last_continuity_on,
         (b.lapse_after + make_interval(months => s.months))::date, b.lapse_after, q.positions,
         q.diameter_min_in is not null or (q.coupon_d is not null and dr.dimension is not null),
         coalesce(q.diameter_min_in, case when dr.dimension is not null then coalesce(dr.min_in, q.coupon_d) end),
         coalesce(q.diameter_max_in, dr.max_factor * q.coupon_d),
         q.thickness_max_in is not null or (q.coupon_t is not null and tr.dimension is not null),
         coalesce(q.thickness_max_in, tr.max_factor * q.coupon_t)
    from q
    cross join settings s
    join breaks b on b.id = q.id
    left join weld_public.qualification_range_rules dr
      on dr.tenant_id = q.tenant_id and dr.dimension = 'diameter' and q.coupon_d >= dr.coupon_from_in
     and (dr.coupon_below_in is null or q.coupon_d < dr.coupon_below_in)
    left join weld_public.qualification_range_rules tr
      on tr.tenant_id = q.tenant_id and tr.dimension = 'thickness' and q.coupon_t >= tr.coupon_from_in
     and (tr.coupon_below_in is null or q.coupon_t < tr.coupon_below_in)
$$;

-- What a qualification covers, in words: "OD 2.875 in. and up, thickness up to 1.104 in."
create or replace function weld_private.qualification_ranges(
  diameter_known boolean, diameter_min numeric, diameter_max numeric,
  thickness_known boolean, thickness_max numeric
) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case
           when not diameter_known then 'diameter range unknown (no range, coupon or PQR diameter recorded)'
           when diameter_max is null then 'OD ' || weld_private.inches(diameter_min) || ' and up'
           else 'OD ' || weld_private.inches(diameter_min) || ' to ' || weld_private.inches(diameter_max)
         end || ', ' ||
         case
           when not thickness_known then 'thickness range unknown (no range, coupon or PQR thickness recorded)'
           when thickness_max is null then 'any thickness'
           else 'thickness up to ' || weld_private.inches(thickness_max)
         end
$$;

reset role;
create type weld_public.qualification_status as (
  qualification_id uuid,
  process          text,
  wps_id           uuid,
  state            text,
  qualified_on     date,
  expires_on       date,
  last_used_on     date,
  continuity_until date,
  reasons          text[]
);
comment on type weld_public.qualification_status is
  'A welder qualification judged on a date: valid, expired, lapsed (QW-322) or not_yet_valid, with the reasons.';
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
           when 'expired' then format('expired on %s', f.expires_on)
           when 'lapsed' then format(
             'lapsed on %s: no use of %s recorded for more than %s months after %s (QW-322)',
             f.continuity_until + 1, f.process, s.months, f.lapse_after)
           else format('valid on %s: qualified on %s, %s, in force by continuity until %s (QW-322)',
             on_date, f.qualified_on,
             coalesce('expires on ' || f.expires_on, 'no expiry date'), f.continuity_until)
         end,
         'covers ' || f.process || ', ' || weld_private.qualification_ranges(
           f.diameter_known, f.diameter_min, f.diameter_max, f.thickness_known, f.thickness_max)
         || coalesce(', positions ' || nullif(array_to_string(f.positions, ' '), ''), '')]
    from weld_private.qualification_facts(array[welder.id]) f
    cross join lateral (
      select coalesce((select t.continuity_months from weld_public.tenant_settings t
                        where t.tenant_id = welder.tenant_id), 6) as months
    ) s
    cross join lateral (
      select case
               when on_date < f.qualified_on then 'not_yet_valid'
               when on_date > f.expires_on then 'expired'
               when on_date > f.continuity_until then 'lapsed'
               else 'valid'
             end as state,
             (select max(u.used_on) from (
                select f.last_continuity_on as used_on
                union all
                select w.welded_on
                  from weld_public.welds w
                  join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
                 where w.tenant_id = welder.tenant_id and w.welder_id = welder.id
                   and w.welded_on between f.qualified_on and on_date
                   and string_to_array(ww.process, '+') && f.processes) u
               where u.used_on <= on_date) as last_used_on
    ) j
   order by f.qualified_on, f.qualification_id
$$;
comment on function weld_public.welders_qualification_status(weld_public.welders, date) is
  E'Each of the welder''s qualifications on a date (today by default): valid, expired, lapsed (QW-322: the process not used for more than the tenant''s continuity period, counted from the welds on record) or not_yet_valid, with the reasons and the ranges it covers.';

--------------------------------------------------------------------------------------------------
-- 5. Weld checks. One set-based function judges any number of welds (one for a weld's checks or
-- its write, thousands for a package's readiness), so the rules are written once:
--
--   DATA_MISSING          one row per missing fact: welder, WPS, date welded, wall thickness, or
--                         a size that is no standard NPS (its OD unknown)
--   WPS_NOT_APPROVED      the WPS is a draft (a superseded WPS was approved when it was current)
--   WPS_RANGE             the weld's OD or wall thickness is outside the WPS's ranges
--   WELDER_NOT_QUALIFIED  no qualification of the welder is valid on the date welded (not yet
--                         valid, expired, lapsed) for every process of the WPS, with the weld's
--                         OD and thickness in its ranges; the detail says why each one fails.
--                         Judged when welder, WPS and date are known. The weld's own unknown OD
--                         or thickness is DATA_MISSING (never a pass) and is not judged here, so
--                         it does not refuse a write; a qualification without ranges fails.
--
-- Positions are not judged: a weld records none (a qualification's positions are shown).
reset role;
create type weld_public.weld_check as (
  code   text,
  detail text
);
comment on type weld_public.weld_check is 'A problem with a weld''s record under the code rules: a code and a sentence.';
set role weld_rules;

create or replace function weld_private.weld_problems(
  welds weld_public.welds[], pending boolean default false
) returns table (weld_id uuid, code text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select x.*, weld_private.outside_diameter(x.size) as od
      from unnest(welds) as x
  ), wp as (
    select w.*, p.wps_number, p.revision as wps_revision, p.state as wps_state, p.process as wps_process,
           p.diameter_min_in as wps_d_min, p.diameter_max_in as wps_d_max,
           p.thickness_min_in as wps_t_min, p.thickness_max_in as wps_t_max
      from w
      left join weld_public.wps p on p.tenant_id = w.tenant_id and p.id = w.wps_id
  ), facts as (
    select * from weld_private.qualification_facts(
      array(select distinct w.welder_id from w where w.welder_id is not null),
      case when pending then welds else '{}' end)
  ), judged as (
    -- Each qualification of the weld's welder, with what keeps it from covering the weld.
    select wp.id as weld_id, f.label,
           array_remove(array[
             case when wp.welded_on < f.qualified_on then 'not yet valid on ' || wp.welded_on end,
             case when wp.welded_on > f.expires_on then 'expired on ' || f.expires_on end,
             case when wp.welded_on <= coalesce(f.expires_on, wp.welded_on) and wp.welded_on >= f.qualified_on
                   and wp.welded_on > f.continuity_until
                  then 'lapsed on ' || (f.continuity_until + 1) || ' (QW-322)' end,
             case when not string_to_array(wp.wps_process, '+') <@ f.processes
                  then 'is for ' || f.process || ', the WPS needs ' || wp.wps_process end,
             case when not f.diameter_known then 'diameter range unknown (no range, coupon or PQR diameter recorded)'
                  when wp.od < f.diameter_min or wp.od > f.diameter_max
                  then 'covers ' || weld_private.qualification_ranges(true, f.diameter_min, f.diameter_max, true, null)
                       || ', not OD ' || weld_private.inches(wp.od) end,
             case when not f.thickness_known then 'thickness range unknown (no range, coupon or PQR thickness recorded)'
                  when wp.wall_thickness > f.thickness_max
                  then 'covers thickness up to ' || weld_private.inches(f.thickness_max) || ', not '
                       || weld_private.inches(wp.wall_thickness) end
           ], null) as failures
      from wp
      join facts f on f.welder_id = wp.welder_id
     where wp.welded_on is not null and wp.wps_id is not null
  ), unqualified as (
    -- The welds judged (welder, WPS and date known) that no qualification covers.
    select wp.id
      from wp
      left join (select j.weld_id, bool_or(cardinality(j.failures) = 0) as covered
                   from judged j group by j.weld_id) v on v.weld_id = wp.id
     where wp.welder_id is not null and wp.wps_id is not null and wp.welded_on is not null
       and not coalesce(v.covered, false)
  ), why as (
    -- Why none does, in words; built for those welds only.
    select j.weld_id, string_agg(j.label || ' ' || array_to_string(j.failures, '; '), '. ' order by j.label) as why
      from judged j
      join unqualified u on u.id = j.weld_id
     group by j.weld_id
  )
  -- (Each sentence below is built only where its case holds: CASE evaluates lazily.)
  select wp.id, 'DATA_MISSING', m.detail
    from wp
    cross join lateral unnest(array_remove(array[
      case when wp.welder_id is null then 'no welder is recorded' end,
      case when wp.wps_id is null then 'no WPS is recorded' end,
      case when wp.welded_on is null then 'no date welded is recorded' end,
      case when wp.wall_thickness is null then 'no wall thickness is recorded' end,
      case when wp.od is null
           then 'size ' || trim_scale(wp.size) || ' is no standard NPS: its outside diameter is unknown' end
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
   where wp.wps_id is not null
  union all
  select wp.id, 'WELDER_NOT_QUALIFIED',
         format('welder %s holds no qualification for %s that covers this weld on %s: %s',
                coalesce(wr.stamp, '?'), wp.wps_process, wp.welded_on, coalesce(y.why, 'none is recorded'))
    from unqualified u
    join wp on wp.id = u.id
    left join why y on y.weld_id = u.id
    left join weld_public.welders wr on wr.tenant_id = wp.tenant_id and wr.id = wp.welder_id
$$;

create or replace function weld_public.welds_checks(weld weld_public.welds)
  returns setof weld_public.weld_check
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.code, p.detail from weld_private.weld_problems(array[weld]) p order by p.code, p.detail
$$;
comment on function weld_public.welds_checks(weld_public.welds) is
  'Every problem with the weld''s record under the code rules (ASME IX, the WPS): WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, DATA_MISSING; none when it is in order.';

-- The tenant's weld_checks = 'refuse': a write of a weld by an API role that leaves it with a
-- problem other than DATA_MISSING is refused (WD010), naming them. Only writes of what the checks
-- read; a status change never is. Writes outside a request (the seed generator, a DBA) are not.
create or replace function weld_private.tg_welds__code_checks() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  refused jsonb;
begin
  if weld_hidden.request_role() is null
     or coalesce((select s.weld_checks from weld_public.tenant_settings s where s.tenant_id = new.tenant_id),
                 'show') <> 'refuse'
     or (tg_op = 'UPDATE'
         and (new.type, new.size, new.wall_thickness, new.welder_id, new.wps_id, new.welded_on)
             is not distinct from
             (old.type, old.size, old.wall_thickness, old.welder_id, old.wps_id, old.welded_on)) then
    return new;
  end if;
  select jsonb_agg(jsonb_build_object('code', p.code, 'detail', p.detail) order by p.code, p.detail)
    into refused
    from weld_private.weld_problems(array[new], true) p
   where p.code <> 'DATA_MISSING';
  if refused is not null then
    raise exception 'weld % fails the code checks: %', new.weld_number,
      (select string_agg(distinct c ->> 'code', ', ') from jsonb_array_elements(refused) c)
      using errcode = 'WD010', detail = jsonb_build_object('checks', refused)::text;
  end if;
  return new;
end
$$;

--------------------------------------------------------------------------------------------------
-- 6. Examination selections.
--
-- A lot is one welder's welds of one method on one line (or one ISO: the tenant's
-- examination_lot); welds without a welder form a lot of their own. Its candidates are the
-- welds not VOIDED whose type the rule samples and whose ISO requires more than 0% of the
-- method. It requires ceil(the highest percent of its ISOs x its candidates / 100) selections,
-- at least one per welder wherever anything is required.
--
-- Random (B31.3 341.4.1): a draw for a line or an ISO tops up every lot it touches, choosing
-- among candidates not yet selected for the method in the order of md5(seed:weld id): the same
-- seed on the same data selects the same welds, and the seed is stored with each selection.
--
-- Progressive (341.3.4): when an NDT record rejects a weld selected for its method, the same
-- transaction draws from the weld's lot: two more (tier 1) for a random selection, two more
-- (tier 2) for each rejected tier-1 weld, and every remaining weld (tier full) for a rejected
-- tier-2 weld. Tiers 1 and 2 take welds neither selected nor yet examined by the method, ranked
-- by the causing selection's seed; each selection draws once (a repaired weld rejected again does
-- not draw again). Each selection records its cause.
--
-- A selection is open until an NDT record of its method covers the weld, then done (computed,
-- so a correction that takes the weld off the record opens it again).

reset role;
create table weld_public.examination_selections (
  tenant_id           uuid not null default weld_hidden.current_tenant_id()
                      references weld_public.tenants on delete cascade,
  id                  uuid not null default gen_random_uuid(),
  weld_id             uuid not null,
  method              text not null check (method in ('RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT')),
  tier                text not null check (tier in ('random', '1', '2', 'full')),
  -- A JavaScript-safe integer, so every client can send it back.
  seed                bigint not null check (seed between 0 and 9007199254740991),
  reason              text not null check (char_length(reason) between 1 and 2000),
  cause_selection_id  uuid,
  cause_ndt_record_id uuid,
  selected_by         uuid,
  selected_at         timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint examination_selections_weld_key unique (tenant_id, method, weld_id),
  constraint examination_selections_weld_id_fkey
    foreign key (tenant_id, weld_id) references weld_public.welds on delete restrict,
  constraint examination_selections_cause_selection_id_fkey
    foreign key (tenant_id, cause_selection_id) references weld_public.examination_selections on delete restrict,
  constraint examination_selections_cause_ndt_record_id_fkey
    foreign key (tenant_id, cause_ndt_record_id) references weld_public.ndt_records on delete restrict,
  constraint examination_selections_selected_by_fkey
    foreign key (tenant_id, selected_by) references weld_public.users on delete restrict,
  constraint examination_selections_cause check (
    (tier = 'random') = (cause_selection_id is null) and (tier = 'random') = (cause_ndt_record_id is null))
);
create index examination_selections_weld_idx on weld_public.examination_selections (tenant_id, weld_id);
create index examination_selections_cause_idx on weld_public.examination_selections (tenant_id, cause_selection_id);
create index examination_selections_selected_at_idx on weld_public.examination_selections (tenant_id, selected_at, id);
comment on table weld_public.examination_selections is
  E'@aggregates on\nA weld selected for examination by a method: at random (with the seed that chose it) or by progressive examination (tier 1, 2 or full, with the rejection that caused it).';
select weld_private.secure_tenant_table('weld_public.examination_selections');
-- GraphQL relation names in the style of 000004: selection.weld, weld.examinationSelections,
-- selection.causeSelection, selection.causedSelections, selection.causeNdtRecord,
-- ndtRecord.causedSelections, selection.selectedByUser.
comment on constraint examination_selections_weld_id_fkey on weld_public.examination_selections is
  E'@fieldName weld\n@foreignFieldName examinationSelections';
comment on constraint examination_selections_cause_selection_id_fkey on weld_public.examination_selections is
  E'@fieldName causeSelection\n@foreignFieldName causedSelections';
comment on constraint examination_selections_cause_ndt_record_id_fkey on weld_public.examination_selections is
  E'@fieldName causeNdtRecord\n@foreignFieldName causedSelections';
comment on constraint examination_selections_selected_by_fkey on weld_public.examination_selections is
  E'@fieldName selectedByUser\n@foreignFieldName examinationSelections';
comment on column weld_public.examination_selections.tier is '@behavior +filterBy';
grant select on weld_public.examination_selections to weld_viewer;
grant select, insert on weld_public.examination_selections to weld_rules;
set role weld_rules;

create or replace function weld_public.examination_selections_ndt_record_id(
  selection weld_public.examination_selections
) returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select r.id
    from weld_public.ndt_record_welds nw
    join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
   where nw.tenant_id = selection.tenant_id and nw.weld_id = selection.weld_id
     and r.method = selection.method
   order by r.examined_on, r.created_at, r.id
   limit 1
$$;
comment on function weld_public.examination_selections_ndt_record_id(weld_public.examination_selections) is
  'The NDT record of the selection''s method that covers the weld (the earliest); null while the selection is open.';

create or replace function weld_public.examination_selections_state(
  selection weld_public.examination_selections
) returns text
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select case when exists (
    select from weld_public.ndt_record_welds nw
      join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
     where nw.tenant_id = selection.tenant_id and nw.weld_id = selection.weld_id
       and r.method = selection.method) then 'done' else 'open' end
$$;
comment on function weld_public.examination_selections_state(weld_public.examination_selections) is
  'open until an NDT record of the selection''s method covers the weld, then done.';

-- The candidates of the lots of `methods` on `lines`, with each weld's lot and the percent its ISO
-- requires. The one place lots are defined.
create or replace function weld_private.lot_candidates(methods text[], lines text[])
  returns table (
    method text, weld_id uuid, weld_number text, iso_id uuid, iso_number text, line_number text,
    welder_id uuid, welder_stamp text, lot text, lot_name text, percent numeric
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select m.method, w.id, w.weld_number, i.id, i.iso_number, i.line_number, w.welder_id, wr.stamp,
         coalesce(w.welder_id::text, 'no welder') || '/' ||
           case s.examination_lot when 'welder_iso' then i.id::text else i.line_number end,
         -- The lot in words: "welder W004 on line 3"-P-1059" or "the welds without a welder on ISO X".
         coalesce('welder ' || wr.stamp, 'the welds without a welder') || ' on ' ||
           case s.examination_lot when 'welder_iso' then 'ISO ' || i.iso_number else 'line ' || i.line_number end,
         r.percent
    from unnest(methods) as m (method)
    cross join (select coalesce((select t.examination_lot from weld_public.tenant_settings t
                                  where t.tenant_id = weld_hidden.current_tenant_id()),
                                'welder_line') as examination_lot) s
    join weld_public.isos i
      on i.tenant_id = weld_hidden.current_tenant_id() and i.line_number = any(lines)
    left join weld_public.examination_rules er
      on er.tenant_id = i.tenant_id and er.method = m.method and er.fluid_service = i.fluid_service
    cross join lateral (
      select greatest(case when m.method = 'RT' then i.rt_percent end, er.percent) as percent,
             coalesce(er.weld_types, '{BW}') as weld_types
    ) r
    join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
    left join weld_public.welders wr on wr.tenant_id = w.tenant_id and wr.id = w.welder_id
   where r.percent > 0 and w.status <> 'VOIDED' and w.type = any(r.weld_types)
$$;

-- Draws, progressive examination and NDT records of one line take turns: two draws at once would
-- each top up the same lot, and an NDT record locks its welds, which a draw's selections refer to
-- (each takes this lock before any weld lock, so neither waits for the other in the opposite order).
create or replace function weld_private.lock_line(line_number text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(
    weld_hidden.current_tenant_id()::text || '/line/' || line_number, 0))
$$;

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

  return query
  with candidates as (
    select * from weld_private.lot_candidates(array[method], array[line])
  ), lots as (
    select c.lot, count(*) as welds, max(c.percent) as percent,
           ceil(max(c.percent) * count(*) / 100)::integer as required,
           count(s.id) as selected, min(c.lot_name) as lot_name
      from candidates c
      left join weld_public.examination_selections s
        on s.tenant_id = tenant and s.method = draw_examination_selection.method and s.weld_id = c.weld_id
     group by c.lot
    having draw_examination_selection.iso_id is null or bool_or(c.iso_id = draw_examination_selection.iso_id)
  ), ranked as (
    select c.*, row_number() over (partition by c.lot order by md5(chosen::text || ':' || c.weld_id::text)) as draw_order
      from candidates c
     where not exists (select from weld_public.examination_selections s
                        where s.tenant_id = tenant and s.method = draw_examination_selection.method
                          and s.weld_id = c.weld_id)
  ), drawn as (
    insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
    select r.weld_id, draw_examination_selection.method, 'random', chosen,
           format('random: %s for %s of the %s candidate welds (%s%%) of %s, seed %s',
                  draw_examination_selection.method, l.required, l.welds, trim_scale(l.percent),
                  l.lot_name, chosen),
           weld_hidden.current_user_id()
      from ranked r
      join lots l on l.lot = r.lot
     where r.draw_order <= l.required - l.selected
     order by r.lot, r.draw_order
    returning *
  )
  select * from drawn;
end
$$;
comment on function weld_public.draw_examination_selection(text, text, uuid, bigint) is
  'Random examination (B31.3 341.4.1): tops up every lot of the line (or of the ISO''s welds) to ceil(required % x candidate welds), at least one weld per welder, chosen by the seed (random when not given), which is stored. Returns the new selections. Inspector and up.';

-- Progressive examination for an NDT record (its lists written): every weld it rejects that has
-- a selection of its method, not tier full, that has drawn nothing yet, draws the next tier.
create or replace function weld_private.progressive_examination(ndt weld_public.ndt_records) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  cause record;
  next_tier text;
begin
  for cause in
    select s.*, w.weld_number, i.iso_number, i.line_number,
           coalesce(w.welder_id::text, 'no welder') || '/' ||
             case coalesce((select t.examination_lot from weld_public.tenant_settings t
                             where t.tenant_id = s.tenant_id), 'welder_line')
               when 'welder_iso' then i.id::text else i.line_number end as lot
      from weld_public.ndt_record_welds nw
      join weld_public.examination_selections s
        on s.tenant_id = nw.tenant_id and s.method = ndt.method and s.weld_id = nw.weld_id
      join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where nw.tenant_id = ndt.tenant_id and nw.ndt_record_id = ndt.id
       and weld_public.ndt_record_welds_effective_result(nw) = 'rejected'
       and s.tier <> 'full'
     order by i.line_number, s.weld_id
  loop
    perform weld_private.lock_line(cause.line_number);
    -- Checked after the lock: another transaction may have drawn for it meanwhile.
    continue when exists (select from weld_public.examination_selections c
                           where c.tenant_id = cause.tenant_id and c.cause_selection_id = cause.id);
    next_tier := case cause.tier when 'random' then '1' when '1' then '2' else 'full' end;
    insert into weld_public.examination_selections
      (weld_id, method, tier, seed, reason, cause_selection_id, cause_ndt_record_id, selected_by)
    select c.weld_id, ndt.method, next_tier, cause.seed,
           format('tier %s: %s report %s rejected weld %s on ISO %s (%s selection); %s of the lot of %s',
                  next_tier, ndt.method, ndt.report_number, cause.weld_number, cause.iso_number,
                  case cause.tier when 'random' then 'random' else 'tier ' || cause.tier end,
                  case next_tier when 'full' then 'every remaining weld' else 'two more welds' end,
                  c.lot_name),
           cause.id, ndt.id, weld_hidden.current_user_id()
      from weld_private.lot_candidates(array[ndt.method::text], array[cause.line_number]) c
     where c.lot = cause.lot
       and not exists (select from weld_public.examination_selections s
                        where s.tenant_id = cause.tenant_id and s.method = ndt.method and s.weld_id = c.weld_id)
       and (next_tier = 'full' or not exists (
             select from weld_public.ndt_record_welds nw
               join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
              where nw.tenant_id = cause.tenant_id and nw.weld_id = c.weld_id and r.method = ndt.method))
     order by md5(cause.seed::text || ':' || next_tier || ':' || cause.weld_id::text || ':' || c.weld_id::text)
     limit case when next_tier = 'full' then null else 2 end;
  end loop;
end
$$;

-- The NDT functions of 000008 check their results here before writing anything (000008 section
-- 6, unchanged but for the line locks taken first).
create or replace function weld_private.ndt_status_changes(results jsonb) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  caller weld_public.user_role := weld_hidden.request_role();
  moves jsonb;
  refused jsonb;
  line text;
begin
  -- The lines of these welds first, in order, then the welds: a draw holds its line's lock while it
  -- writes selections of those welds (whose foreign key waits for the weld locks below), and
  -- progressive examination takes the same line locks later in this transaction.
  for line in
    select distinct i.line_number
      from weld_public.welds w
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.tenant_id = tenant
       and w.id in (select (r ->> 'weldId')::uuid from jsonb_array_elements(results) as r)
     order by 1
  loop
    perform weld_private.lock_line(line);
  end loop;
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

-- The NDT functions of 000008 end every record and correction here, once its lists are written;
-- progressive examination joins the status moves (whether or not results drive statuses).
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
  perform weld_private.progressive_examination(ndt);
end
$$;

--------------------------------------------------------------------------------------------------
-- 7. An ISO's examination: per method, over the lots its welds belong to (with welder_line lots,
-- those run along its line): candidate welds, required, selected (any tier), examined (selections
-- done), shortfall (what a draw would add), open progressive selections, and the welders whose
-- lot needs a selection and has none.

reset role;
create type weld_public.examination_status as (
  method              text,
  required_percent    numeric,
  welds               integer,
  required            integer,
  selected            integer,
  examined            integer,
  shortfall           integer,
  progressive_open    integer,
  welders_not_covered uuid[]
);
comment on type weld_public.examination_status is
  'The examination of the lots an ISO''s welds belong to, for one method.';
set role weld_rules;

-- Per lot touched by the given welds (any lot of `lines` when weld_ids is null): its numbers.
create or replace function weld_private.lot_status(methods text[], lines text[], weld_ids uuid[])
  returns table (
    method text, lot text, lot_name text, welder_id uuid, percent numeric,
    welds integer, required integer, selected integer, examined integer, progressive_open integer
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with c as (
    select c.*, s.id as selection_id, s.tier,
           s.id is not null and weld_public.examination_selections_state(s) = 'done' as done
      from weld_private.lot_candidates(methods, lines) c
      left join weld_public.examination_selections s
        on s.tenant_id = weld_hidden.current_tenant_id() and s.method = c.method and s.weld_id = c.weld_id
  )
  select c.method, c.lot, min(c.lot_name), min(c.welder_id::text)::uuid, max(c.percent), count(*)::integer, ceil(max(c.percent) * count(*) / 100)::integer,
         count(c.selection_id)::integer, count(*) filter (where c.done)::integer,
         count(*) filter (where c.tier <> 'random' and not c.done)::integer
    from c
   group by c.method, c.lot
  having weld_ids is null or bool_or(c.weld_id = any(weld_ids))
$$;

create or replace function weld_public.isos_examination(iso weld_public.isos)
  returns setof weld_public.examination_status
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  with lots as (
    select * from weld_private.lot_status(
      array(select m.method from (
              select 'RT' as method
              union select r.method from weld_public.examination_rules r where r.tenant_id = iso.tenant_id
            ) m order by 1),
      array[iso.line_number],
      array(select w.id from weld_public.welds w where w.tenant_id = iso.tenant_id and w.iso_id = iso.id))
  ), required as (
    select l.method, max(l.percent) as required_percent, sum(l.welds)::integer as welds,
           sum(l.required)::integer as required, sum(l.selected)::integer as selected,
           sum(l.examined)::integer as examined,
           sum(greatest(l.required - l.selected, 0))::integer as shortfall,
           sum(l.progressive_open)::integer as progressive_open,
           coalesce(array_agg(distinct l.welder_id order by l.welder_id)
                      filter (where l.selected = 0 and l.welder_id is not null), '{}') as welders_not_covered
      from lots l
     group by l.method
  ), no_longer_required as (
    -- Selections of this ISO's welds for a method the ISO no longer requires (its fluid service
    -- or rt_percent changed since): shown, with nothing required.
    select s.method, 0::numeric, 0, 0, count(*)::integer,
           count(*) filter (where weld_public.examination_selections_state(s) = 'done')::integer, 0,
           count(*) filter (where s.tier <> 'random'
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
comment on function weld_public.isos_examination(weld_public.isos) is
  'Per NDT method, the examination of the lots this ISO''s welds belong to: candidate welds, required, selected, examined, shortfall, open progressive selections, and the welders not yet covered.';

--------------------------------------------------------------------------------------------------
-- 8. Test package readiness. The package's welds are its welds and those of its ISOs, VOIDED
-- ones left out. It is ready when there is no reason:
--
--   NO_WELDS               nothing to test
--   WELD_NOT_ACCEPTED      a weld not ACCEPTED
--   EXAMINATION_SHORTFALL  a lot of its welds has fewer selections than required (draw one)
--   EXAMINATION_OPEN       a random selection of one of its welds not yet examined
--   PROGRESSIVE_OPEN       a progressive selection open in a lot of its welds (the lot's other
--                          welds are in doubt until it closes, wherever they are)
--   and every weld check of its welds (WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE,
--   DATA_MISSING): missing data is never a pass.

reset role;
create type weld_public.readiness_reason as (
  code    text,
  weld_id uuid,
  iso_id  uuid,
  detail  text
);
comment on type weld_public.readiness_reason is 'Why a test package is not ready for its pressure test.';
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
      array(select m.method from (
              select 'RT' as method
              union select r.method from weld_public.examination_rules r where r.tenant_id = test_package.tenant_id
            ) m order by 1),
      array(select distinct pw.line_number from pw),
      array(select pw.id from pw))
  ), lot_welds as (
    -- The candidates of those lots, to find their progressive selections.
    select c.*
      from weld_private.lot_candidates(array(select distinct l.method from lots l),
                                       array(select distinct pw.line_number from pw)) c
      join lots l on l.method = c.method and l.lot = c.lot
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
           format('%s: the lot of %s needs %s of its %s candidate welds selected (%s%%) and has %s; draw a selection',
                  l.method, l.lot_name, l.required, l.welds, trim_scale(l.percent), l.selected),
           '', l.lot
      from lots l
      left join lot_isos li on li.method = l.method and li.lot = l.lot
     where l.selected < l.required
    union all
    select 4, 'EXAMINATION_OPEN', pw.id, pw.iso_id,
           format('%s selection of weld %s on ISO %s (random, seed %s) is not yet examined',
                  s.method, pw.weld_number, pw.iso_number, s.seed), pw.iso_number, pw.weld_number
      from pw
      join weld_public.examination_selections s on s.tenant_id = pw.tenant_id and s.weld_id = pw.id
     where s.tier = 'random' and weld_public.examination_selections_state(s) = 'open'
    union all
    select 5, 'PROGRESSIVE_OPEN', c.weld_id, c.iso_id,
           format('%s progressive examination of the lot of %s is open: weld %s on ISO %s (tier %s) is not yet examined; %s',
                  s.method, c.lot_name, c.weld_number, c.iso_number, s.tier, s.reason),
           c.iso_number, c.weld_number
      from lot_welds c
      join weld_public.examination_selections s
        on s.tenant_id = test_package.tenant_id and s.method = c.method and s.weld_id = c.weld_id
     where s.tier <> 'random' and weld_public.examination_selections_state(s) = 'open'
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
  'Why the package is not ready for its pressure test (none when it is): NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, and the weld checks of its welds. VOIDED welds drop out.';

create or replace function weld_public.test_packages_ready(test_package weld_public.test_packages)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select not exists (select from weld_public.test_packages_readiness_reasons(test_package))
$$;
comment on function weld_public.test_packages_ready(weld_public.test_packages) is
  'Whether the package may be released for its pressure test: no readiness reason.';

-- Release (open -> released) by an API role only when ready: WD009 with the reasons (the first
-- 100; GET readiness has them all); and a package is created open (WD008), so none skips it. Writes outside a request are not held to it, as for the
-- package's other rules (000008 section 7). After _100_state_moves (name order), which refuses
-- moves that are not allowed at all.
create or replace function weld_private.tg_test_packages__release_when_ready() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  reasons jsonb;
  reason_count integer;
begin
  -- Created open, so that every release passes here (a package created released never would).
  if weld_hidden.request_role() is not null and tg_op = 'INSERT' and new.state <> 'open' then
    raise exception 'test package % is created open; it is released when it is ready', new.package_number
      using errcode = 'WD008';
  end if;
  if weld_hidden.request_role() is not null and tg_op = 'UPDATE'
     and old.state = 'open' and new.state = 'released' then
    select count(*), coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
             'code', r.code, 'weldId', r.weld_id, 'isoId', r.iso_id, 'detail', r.detail)) order by r.n)
             filter (where r.n <= 100), '[]')
      into reason_count, reasons
      from (select x.*, row_number() over () as n
              from weld_public.test_packages_readiness_reasons(new) x) r;
    if reason_count > 0 then
      raise exception 'test package % is not ready for release: % %', new.package_number, reason_count,
        case when reason_count = 1 then 'reason' else 'reasons' end
        using errcode = 'WD009',
              detail = jsonb_build_object('reasons', reasons, 'reasonCount', reason_count)::text;
    end if;
  end if;
  return new;
end
$$;

-- Grants: viewers and up read the computed rules (GraphQL computed columns); inspectors and up
-- draw (the function refuses viewers itself, WD003, like the NDT functions).
grant execute on function
  weld_public.welders_qualification_status(weld_public.welders, date),
  weld_public.welds_checks(weld_public.welds),
  weld_public.examination_selections_state(weld_public.examination_selections),
  weld_public.examination_selections_ndt_record_id(weld_public.examination_selections),
  weld_public.isos_examination(weld_public.isos),
  weld_public.test_packages_readiness_reasons(weld_public.test_packages),
  weld_public.test_packages_ready(weld_public.test_packages),
  weld_public.draw_examination_selection(text, text, uuid, bigint)
  to weld_viewer;
reset role;

drop trigger if exists _200_code_checks on weld_public.welds;
create trigger _200_code_checks
  before insert or update of type, size, wall_thickness, welder_id, wps_id, welded_on on weld_public.welds
  for each row execute function weld_private.tg_welds__code_checks();
drop trigger if exists _200_release_when_ready on weld_public.test_packages;
create trigger _200_release_when_ready before insert or update of state on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__release_when_ready();

-- Continuity (QW-322) reads the days each welder welded with each WPS: an index-only scan of this
-- index, in its order (id included, to leave out the welds being written). It also serves the
-- welder's foreign key, so it replaces the one by welder.
drop index if exists weld_public.welds_welder_welded_on_idx;
drop index if exists weld_public.welds_welder_wps_day_idx;
create index welds_welder_wps_day_idx on weld_public.welds (tenant_id, welder_id, wps_id, welded_on) include (id);
drop index if exists weld_public.welds_welder_idx;

--------------------------------------------------------------------------------------------------
-- weld_rules keeps no CREATE right on any schema (see 000006).
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
