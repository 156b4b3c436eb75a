--! Previous: sha1:93656b8959df00fc56c175233fb8ea9ea4ba2a53
--! Hash: sha1:0897012220529dac713d9346748bde0443dca1e3
--! Message: Report views for the QC manager's questions, on exact rollups

-- Issue F17. The reports are views in their own schema, weld_reports, the one source GraphQL,
-- REST (GET /reports/<name>) and the reporting logins read. Each view shows the rows of a
-- SECURITY DEFINER function of weld_rules (weld_hidden.report_<name>): the rules' private
-- functions (lot_status, outside_diameter) stay private, and row security still applies.
--
-- Welder performance and weld progress read rollups kept exact by triggers, as the ISO counts
-- are: computed from the welds and their examinations they took 10 to 20 s on a tenant of
-- 1,000,000 welds. Each weld's part in them (weld_report_facts) is kept beside them, so that a
-- change can take the old part out and put the new one in.
create schema weld_reports;
comment on schema weld_reports is
  'Reports that answer QC questions: each view is documented with what it answers.';
grant usage on schema weld_reports to weld_viewer, weld_reporting;
grant usage on schema weld_hidden to weld_reporting;

alter table weld_public.tenant_settings
  add column repair_rate_threshold_percent numeric not null default 5
    constraint tenant_settings_repair_rate_threshold_range
      check (repair_rate_threshold_percent >= 0 and repair_rate_threshold_percent <= 100);
comment on column weld_public.tenant_settings.repair_rate_threshold_percent is
  'A welder''s repair rate by joint (weld_reports.welder_performance) over this percent is flagged.';

--------------------------------------------------------------------------------------------------
-- The rollups

-- One row per weld: what the reports count of it, as weld_private.report_facts_of computes it
-- from the weld, its status history and its RT / UT examinations. No foreign key: a weld's
-- delete must find its row to take its part out of the counts (weld_private.refresh_report_facts).
create table weld_private.weld_report_facts (
  tenant_id     uuid not null,
  weld_id       uuid not null,
  iso_id        uuid not null,
  welder_id     uuid,
  -- The month the weld was welded, when it is a welder's work: welded, by a welder, not VOIDED.
  made_month    date,
  -- The Monday of the week it was welded (not VOIDED), and of the week it last became ACCEPTED.
  welded_week   date,
  accepted_week date,
  -- Covered by an RT or UT record; rejected by one of them (its result, else its film's).
  examined      boolean not null,
  rejected      boolean not null,
  -- pi x the outside diameter, inches, to 3 places (sums stay exact); null for an unknown size.
  length_in     numeric(10, 3),
  primary key (tenant_id, weld_id)
);

-- Per welder and month welded: the sums of the facts of the welds counted there.
create table weld_private.welder_month_counts (
  tenant_id          uuid not null,
  welder_id          uuid not null,
  month              date not null,
  welds_made         integer not null,
  welds_examined     integer not null,
  welds_rejected     integer not null,
  length_examined_in numeric not null,
  length_rejected_in numeric not null,
  length_unknown     integer not null,
  primary key (tenant_id, welder_id, month)
);

-- Per ISO and week: welds welded that week, and welds that became ACCEPTED that week.
create table weld_private.iso_week_counts (
  tenant_id uuid not null,
  iso_id    uuid not null,
  week      date not null,
  welded    integer not null,
  accepted  integer not null,
  primary key (tenant_id, iso_id, week)
);
-- (No CHECK that counts stay >= 0, unlike iso_weld_counts: the rollups are written by
-- INSERT ... ON CONFLICT DO UPDATE with signed changes, and a CHECK is tried on the row proposed
-- for insert, negative when a weld leaves. test/db/report-rollups.test.ts shows them exact.)

select weld_private.secure_tenant_table('weld_private.weld_report_facts');
select weld_private.secure_tenant_table('weld_private.welder_month_counts');
select weld_private.secure_tenant_table('weld_private.iso_week_counts');
-- Read by the report functions (weld_rules, under row security); written by the triggers alone.
grant select on weld_private.welder_month_counts, weld_private.iso_week_counts to weld_rules;

--! Included functions/weld_private.report_facts_of.sql
-- What the reports count of each weld of `weld_ids` (every weld of the tenant when null),
-- computed from the sources: the weld, its status history, its RT and UT examinations. It is the
-- definition of the rollups weld_private.welder_month_counts and iso_week_counts: those hold,
-- at every commit, the sums of these rows (weld_private.refresh_report_facts keeps them so).
--
-- - made_month: a welder's work is a weld welded, by a welder, not VOIDED.
-- - welded_week / accepted_week: Mondays. A weld ACCEPTED now counts as accepted in the week of
--   its last move to ACCEPTED in the history, or of its creation when it came in ACCEPTED.
-- - examined / rejected: some RT or UT record covers the weld / rejects it, however it was
--   repaired since (the repair rate a code's progressive examination looks at). A record's result
--   for the weld is the one given, else its film's (ndt_record_welds_effective_result).
-- - length_in: pi x the outside diameter of the NPS (inches, 3 places); null when the size is
--   no standard NPS, never guessed.
-- Dates are the calendar's, weeks and months taken without a time zone; accepted_at, a moment,
-- is read in UTC.
create or replace function weld_private.report_facts_of(tenant uuid, weld_ids uuid[])
  returns setof weld_private.weld_report_facts
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select w.tenant_id, w.id, w.iso_id, w.welder_id,
         case when w.status <> 'VOIDED' and w.welder_id is not null and w.welded_on is not null
              then date_trunc('month', w.welded_on::timestamp)::date end as made_month,
         case when w.status <> 'VOIDED'
              then w.welded_on - (extract(isodow from w.welded_on)::integer - 1) end as welded_week,
         a.day - (extract(isodow from a.day)::integer - 1) as accepted_week,
         x.weld_id is not null as examined,
         coalesce(x.rejected, false) as rejected,
         round(pi()::numeric * weld_private.outside_diameter(w.size), 3) as length_in
    from weld_public.welds w
    left join lateral (
      select (coalesce(max(h.changed_at), w.created_at) at time zone 'UTC')::date as day
        from weld_public.weld_status_history h
       where h.tenant_id = w.tenant_id and h.weld_id = w.id and h.to_status = 'ACCEPTED'
    ) a on w.status = 'ACCEPTED'
    left join lateral (
      select nw.weld_id,
             bool_or(weld_public.ndt_record_welds_effective_result(nw) = 'rejected') as rejected
        from weld_public.ndt_record_welds nw
        join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
       where nw.tenant_id = w.tenant_id and nw.weld_id = w.id and r.method in ('RT', 'UT')
       group by nw.weld_id
    ) x on true
   where w.tenant_id = tenant and (weld_ids is null or w.id = any(weld_ids))
$$;
--! EndIncluded functions/weld_private.report_facts_of.sql
--! Included functions/weld_private.refresh_report_facts.sql
-- Brings the report facts of the welds `weld_ids` of `tenant` (every weld of it when null) up to
-- date with weld_private.report_facts_of, and moves each changed part in the rollups: the old
-- facts of a weld are taken out of the counts, the new ones put in. Called by the triggers on
-- everything the facts are computed from (weld_private.tg__report_facts), so the rollups are
-- exact at every commit, like the ISO counts.
--
-- The old facts are locked first (a concurrent change of the same weld waits), then the rollup
-- rows in key order, welder-months before ISO-weeks, so two writers cannot deadlock here.
-- Rows that fall to zero stay (a weld moved to another month leaves one); the reports skip them.
create or replace function weld_private.refresh_report_facts(tenant uuid, weld_ids uuid[])
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  before weld_private.weld_report_facts[];
begin
  if weld_ids is null then
    -- The whole tenant (the migration that made the rollups; a DBA's repair): counted afresh.
    delete from weld_private.welder_month_counts c where c.tenant_id = tenant;
    delete from weld_private.iso_week_counts c where c.tenant_id = tenant;
    delete from weld_private.weld_report_facts f where f.tenant_id = tenant;
    before := '{}';
  else
    select coalesce(array_agg(f), '{}') into before
      from (select * from weld_private.weld_report_facts f
             where f.tenant_id = tenant and f.weld_id = any(weld_ids)
             order by f.weld_id
               for update) f;
  end if;

  -- Written in place, not deleted and inserted again: a writer waiting on the lock above then
  -- reads the row as the one before it left it (a deleted row would be skipped, its part lost).
  insert into weld_private.weld_report_facts as f
  select * from weld_private.report_facts_of(tenant, weld_ids)
  on conflict (tenant_id, weld_id) do update
     set iso_id = excluded.iso_id, welder_id = excluded.welder_id,
         made_month = excluded.made_month, welded_week = excluded.welded_week,
         accepted_week = excluded.accepted_week, examined = excluded.examined,
         rejected = excluded.rejected, length_in = excluded.length_in
   where (f.*) is distinct from (excluded.*);
  -- The facts of welds deleted go.
  delete from weld_private.weld_report_facts f
   where f.tenant_id = tenant and f.weld_id = any(weld_ids)
     and not exists (select from weld_public.welds w where w.tenant_id = tenant and w.id = f.weld_id);

  -- (The two statements below read the same change: the old facts with -1, the new with +1.)
  with change as (
    select -1 as sign, b.* from unnest(before) b
    union all
    select 1, f.* from weld_private.weld_report_facts f
     where f.tenant_id = tenant and (weld_ids is null or f.weld_id = any(weld_ids))
  ), delta as (
    select d.welder_id, d.made_month,
           sum(d.sign)::integer as made,
           coalesce(sum(d.sign) filter (where d.examined), 0)::integer as examined,
           coalesce(sum(d.sign) filter (where d.rejected), 0)::integer as rejected,
           coalesce(sum(d.sign * d.length_in) filter (where d.examined), 0) as length_examined,
           coalesce(sum(d.sign * d.length_in) filter (where d.rejected), 0) as length_rejected,
           coalesce(sum(d.sign) filter (where d.examined and d.length_in is null), 0)::integer
             as unknown
      from change d
     where d.made_month is not null
     group by d.welder_id, d.made_month
  )
  insert into weld_private.welder_month_counts as c
         (tenant_id, welder_id, month, welds_made, welds_examined, welds_rejected,
          length_examined_in, length_rejected_in, length_unknown)
  select tenant, d.welder_id, d.made_month, d.made, d.examined, d.rejected,
         d.length_examined, d.length_rejected, d.unknown
    from delta d
   where (d.made, d.examined, d.rejected, d.length_examined, d.length_rejected, d.unknown)
         <> (0, 0, 0, 0, 0, 0)
   order by d.welder_id, d.made_month
  on conflict (tenant_id, welder_id, month) do update
     set welds_made = c.welds_made + excluded.welds_made,
         welds_examined = c.welds_examined + excluded.welds_examined,
         welds_rejected = c.welds_rejected + excluded.welds_rejected,
         length_examined_in = c.length_examined_in + excluded.length_examined_in,
         length_rejected_in = c.length_rejected_in + excluded.length_rejected_in,
         length_unknown = c.length_unknown + excluded.length_unknown;

  with change as (
    select -1 as sign, b.* from unnest(before) b
    union all
    select 1, f.* from weld_private.weld_report_facts f
     where f.tenant_id = tenant and (weld_ids is null or f.weld_id = any(weld_ids))
  ), delta as (
    select e.iso_id, e.week, sum(e.welded)::integer as welded, sum(e.accepted)::integer as accepted
      from (select d.iso_id, d.welded_week as week, d.sign as welded, 0 as accepted
              from change d where d.welded_week is not null
            union all
            select d.iso_id, d.accepted_week, 0, d.sign
              from change d where d.accepted_week is not null) e
     group by e.iso_id, e.week
  )
  insert into weld_private.iso_week_counts as c (tenant_id, iso_id, week, welded, accepted)
  select tenant, d.iso_id, d.week, d.welded, d.accepted
    from delta d
   where (d.welded, d.accepted) <> (0, 0)
   order by d.iso_id, d.week
  on conflict (tenant_id, iso_id, week) do update
     set welded = c.welded + excluded.welded, accepted = c.accepted + excluded.accepted;
end
$$;
--! EndIncluded functions/weld_private.refresh_report_facts.sql
--! Included functions/weld_private.tg__report_facts.sql
-- Keeps the report rollups (weld_private.refresh_report_facts) exact: every write to what
-- weld_private.report_facts_of reads names the welds it touched, tenant by tenant.
--
-- Statement triggers (inserts, deletes, the updates of NDT results) read the statement's rows
-- from its transition tables; tg_argv[0] names the column that holds the weld. Row triggers,
-- narrowed by WHEN to the columns the facts read, serve the hot paths: a weld's status change
-- (only to or from ACCEPTED or VOIDED matters), an NDT record's method, a film interval's result.
create or replace function weld_private.tg__report_facts() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  statement_rows text;
  pair record;
  ids uuid[];
begin
  if tg_op = 'TRUNCATE' then
    -- Every weld of every tenant is gone (a DBA's TRUNCATE fires no delete trigger).
    truncate weld_private.weld_report_facts, weld_private.welder_month_counts,
             weld_private.iso_week_counts;
    return null;
  end if;

  if tg_level = 'STATEMENT' then
    statement_rows := case tg_op
      when 'INSERT' then 'select * from new_rows'
      when 'DELETE' then 'select * from old_rows'
      else 'select * from new_rows union all select * from old_rows' end;
    for pair in execute format(
      'select r.tenant_id, array_agg(distinct r.%I) as ids from (%s) r %s
        group by r.tenant_id order by r.tenant_id',
      tg_argv[0], statement_rows,
      -- (Only moves to ACCEPTED are read from the history.)
      case when tg_table_name = 'weld_status_history' then 'where r.to_status = ''ACCEPTED''' end)
    loop
      perform weld_private.refresh_report_facts(pair.tenant_id, pair.ids);
    end loop;
    return null;
  end if;

  if tg_table_name = 'welds' then
    if old.tenant_id <> new.tenant_id then
      perform weld_private.refresh_report_facts(old.tenant_id, array[old.id]);
    end if;
    ids := array[new.id];
  elsif tg_table_name = 'ndt_records' then
    select array_agg(nw.weld_id) into ids
      from weld_public.ndt_record_welds nw
     where nw.tenant_id = new.tenant_id and nw.ndt_record_id = new.id;
  else -- film_intervals
    select array_agg(fw.weld_id) into ids
      from weld_public.film_interval_welds fw
     where fw.tenant_id = new.tenant_id and fw.film_interval_id = new.id;
  end if;
  if ids is not null then
    perform weld_private.refresh_report_facts(new.tenant_id, ids);
  end if;
  return null;
end
$$;

-- Welds: made or deleted (per statement), changed in what the facts read (per row), truncated.
create or replace trigger _510_report_facts_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('id');
create or replace trigger _510_report_facts_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('id');
create or replace trigger _510_report_facts_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg__report_facts();
create or replace trigger _510_report_facts_update
  after update of status, welder_id, welded_on, size, iso_id, tenant_id on weld_public.welds
  for each row
  when ((old.status = 'ACCEPTED') <> (new.status = 'ACCEPTED')
        or (old.status = 'VOIDED') <> (new.status = 'VOIDED')
        or old.welder_id is distinct from new.welder_id
        or old.welded_on is distinct from new.welded_on
        or old.size <> new.size or old.iso_id <> new.iso_id or old.tenant_id <> new.tenant_id)
  execute function weld_private.tg__report_facts();

-- The status history: when a weld last became ACCEPTED.
create or replace trigger _510_report_facts_insert after insert on weld_public.weld_status_history
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.weld_status_history
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');

-- The welds an NDT record covers, and their results.
create or replace trigger _510_report_facts_insert after insert on weld_public.ndt_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_update after update on weld_public.ndt_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');

-- An NDT record's method (RT and UT count) and its film: which welds an interval shows, and its
-- result (a weld's result in the record when none was given).
create or replace trigger _510_report_facts_update
  after update of method on weld_public.ndt_records
  for each row when (old.method <> new.method)
  execute function weld_private.tg__report_facts();
create or replace trigger _510_report_facts_insert after insert on weld_public.film_interval_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_delete after delete on weld_public.film_interval_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_facts('weld_id');
create or replace trigger _510_report_facts_update
  after update of result on weld_public.film_intervals
  for each row when (old.result <> new.result)
  execute function weld_private.tg__report_facts();
--! EndIncluded functions/weld_private.tg__report_facts.sql

-- The rollups of the welds there are, tenant by tenant (the same function the triggers use).
select weld_private.refresh_report_facts(t.id, null) from weld_public.tenants t;

--------------------------------------------------------------------------------------------------
-- The reports

-- lot_status returns `accepted` too now (a new column: the function is made again).
drop function weld_private.lot_status(text[], text[], uuid[]);
--! Included functions/weld_private.lot_status.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Per lot of `methods` on `lines` (those touching weld_ids; every lot when null): its numbers.
create or replace function weld_private.lot_status(methods text[], lines text[], weld_ids uuid[])
  returns table (
    method text, lot text, lot_name text, percent numeric, welds integer, welders integer,
    required integer, selected integer, examined integer, shortfall integer,
    progressive_open integer, welders_not_covered uuid[], stamps_not_covered text[],
    accepted integer
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with s as (
    -- done: a selection examined by a method that closes it, on or after the weld was made;
    -- accepted: and the latest such examination accepted it (a repair's re-examination included).
    select c.*, x.id as selection_id, x.tier, last.result is not null as done,
           last.result = 'accepted' as accepted
      from weld_private.lot_candidates(methods, lines) c
      left join weld_public.examination_selections x
        on x.tenant_id = weld_hidden.current_tenant_id() and x.method = c.method and x.weld_id = c.weld_id
      left join lateral (
        select coalesce(e.result, 'unknown') as result
          from weld_private.weld_examinations e
         where e.tenant_id = weld_hidden.current_tenant_id() and e.weld_id = c.weld_id
           and e.method = any(c.closes) and e.examined_on >= c.welded_on
         order by e.examined_on desc, e.created_at desc
         limit 1
      ) last on x.id is not null
  ), lots as (
    select s.method, s.lot, min(s.lot_name) as lot_name, max(s.percent) as percent,
           count(*)::integer as welds, count(distinct s.welder_id)::integer as welders,
           count(s.selection_id)::integer as selected, count(*) filter (where s.done)::integer as examined,
           count(*) filter (where s.tier in ('1', '2', 'full') and not s.done)::integer as progressive_open,
           count(*) filter (where s.accepted)::integer as accepted,
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
         n.ids, n.stamps, l.accepted
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

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.lot_status.sql

--! Included functions/weld_hidden.report_welder_performance.sql
-- Welder performance (F17): per welder and month welded, the welds made, those examined by a
-- volumetric method (RT or UT: the examinations a repair rate is quoted on), those rejected by any
-- of them, and the repair rate by joint and by length against the tenant's threshold
-- (tenant_settings.repair_rate_threshold_percent, 5 by default).
--
-- A weld counts in the month it was welded, once: examined when any RT or UT record covers it,
-- rejected when any of those records rejects it (its result, else its film's: the effective
-- result), however it was repaired since. VOIDED welds drop out, as from every count; welds with
-- no date welded or no welder are not anyone's work yet. Length is the weld's circumference,
-- pi x the outside diameter of its NPS (weld_private.outside_diameter); a size that table does not
-- know leaves the length unknown, counted in length_unknown rather than guessed.
--
-- The counts are the rollup weld_private.welder_month_counts, whose rows are defined (and the rules
-- above written) by weld_private.report_facts_of; the rates are worked out here.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.welder_performance is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_welder_performance()
  returns table (
    welder_id uuid,
    welder_stamp text,
    welder_name text,
    month date,
    welds_made integer,
    welds_examined integer,
    welds_rejected integer,
    repair_rate_percent float8,
    length_examined_in float8,
    length_rejected_in float8,
    repair_rate_by_length_percent float8,
    length_unknown integer,
    threshold_percent float8,
    over_threshold boolean
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.welder_id, v.stamp as welder_stamp, v.name as welder_name, c.month,
         c.welds_made, c.welds_examined, c.welds_rejected,
         (100.0 * c.welds_rejected / nullif(c.welds_examined, 0))::float8 as repair_rate_percent,
         c.length_examined_in::float8, c.length_rejected_in::float8,
         (100.0 * c.length_rejected_in / nullif(c.length_examined_in, 0))::float8
           as repair_rate_by_length_percent,
         c.length_unknown,
         s.threshold::float8 as threshold_percent,
         coalesce(100.0 * c.welds_rejected / nullif(c.welds_examined, 0) > s.threshold, false)
           as over_threshold
    from weld_private.welder_month_counts c
    join weld_public.welders v on v.tenant_id = c.tenant_id and v.id = c.welder_id
    cross join (
      select coalesce(max(ts.repair_rate_threshold_percent), 5) as threshold
        from weld_public.tenant_settings ts
    ) s
   where c.welds_made > 0
$$;

comment on function weld_hidden.report_welder_performance() is
  'Welder performance per welder and month: the rows of the view weld_reports.welder_performance.';

grant execute on function weld_hidden.report_welder_performance() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_welder_performance.sql
--! Included functions/weld_hidden.report_examination_progress.sql
-- Examination progress (F17): per designated lot and method, what B31.3 341.4.1 asks and where it
-- stands, as an auditor checks it: the lot's candidate welds, how many the percent requires (at
-- least one weld of each welder), how many are drawn (selected, every tier), examined, accepted,
-- the shortfall, progressive selections still open, and the welders not yet represented.
-- The numbers are weld_private.lot_status's: the same ones the draw, the ISO's examination and a
-- test package's readiness use, so this report cannot disagree with them.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.examination_progress is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_examination_progress()
  returns table (
    method text,
    lot text,
    lot_name text,
    percent float8,
    candidates integer,
    welders integer,
    required integer,
    drawn integer,
    examined integer,
    accepted integer,
    shortfall integer,
    progressive_open integer,
    welders_not_covered text[]
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select l.method, l.lot, l.lot_name, l.percent::float8 as percent, l.welds as candidates,
         l.welders, l.required, l.selected as drawn, l.examined, l.accepted, l.shortfall,
         l.progressive_open, l.stamps_not_covered as welders_not_covered
    from weld_private.lot_status(weld_private.rule_methods(), null, null) l
$$;

comment on function weld_hidden.report_examination_progress() is
  'Examination progress per lot and method: the rows of the view weld_reports.examination_progress.';

grant execute on function weld_hidden.report_examination_progress() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_examination_progress.sql
--! Included functions/weld_hidden.report_weld_progress.sql
-- Weld progress (F17): per ISO and week, the welds made (by date welded) and the welds accepted
-- (by the week of their last move to ACCEPTED, for the welds ACCEPTED now), with the ISO's line and
-- area: the data of an S-curve. Summed over weeks, `accepted` is the ISO's accepted count now and
-- `welded` its welds made, VOIDED ones left out as from every count. Weeks start on Monday.
--
-- The counts are the rollup weld_private.iso_week_counts (its rows defined by
-- weld_private.report_facts_of), kept exact by triggers.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.weld_progress is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_weld_progress()
  returns table (
    area text,
    line_number text,
    iso_id uuid,
    iso_number text,
    week date,
    welded integer,
    accepted integer
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select i.area, i.line_number, c.iso_id, i.iso_number, c.week, c.welded, c.accepted
    from weld_private.iso_week_counts c
    join weld_public.isos i on i.tenant_id = c.tenant_id and i.id = c.iso_id
   where (c.welded, c.accepted) <> (0, 0)
$$;

comment on function weld_hidden.report_weld_progress() is
  'Weld progress per ISO and week: the rows of the view weld_reports.weld_progress.';

grant execute on function weld_hidden.report_weld_progress() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_weld_progress.sql
--! Included functions/weld_hidden.report_test_package_board.sql
-- Test package board (F17): per package its state, whether it is ready, how many reasons of each
-- code keep it from being ready (weld_public.test_packages_readiness_reasons: the same reasons a
-- release is refused with), and its welds: total (not VOIDED) and accepted.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.test_package_board is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_test_package_board()
  returns table (
    test_package_id uuid,
    package_number text,
    test_medium text,
    state text,
    ready boolean,
    reasons integer,
    reasons_by_code jsonb,
    welds integer,
    welds_accepted integer
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.id as test_package_id, p.package_number, p.test_medium, p.state,
         coalesce(r.reasons, 0) = 0 as ready, coalesce(r.reasons, 0) as reasons,
         coalesce(r.by_code, '{}') as reasons_by_code,
         coalesce(w.total, 0) as welds, coalesce(w.accepted, 0) as welds_accepted
    from weld_public.test_packages p
    left join lateral (
      select sum(c.n)::integer as reasons, jsonb_object_agg(c.code, c.n) as by_code
        from (select x.code, count(*)::integer as n
                from weld_public.test_packages_readiness_reasons(p) x
               group by x.code) c
    ) r on true
    left join lateral (
      select count(*)::integer as total,
             count(*) filter (where m.status = 'ACCEPTED')::integer as accepted
        from weld_public.welds m
       where m.status <> 'VOIDED'
         and (m.id in (select pw.weld_id from weld_public.test_package_welds pw
                        where pw.test_package_id = p.id)
              or m.iso_id in (select pi.iso_id from weld_public.test_package_isos pi
                               where pi.test_package_id = p.id))
    ) w on true
$$;

comment on function weld_hidden.report_test_package_board() is
  'The test package board: the rows of the view weld_reports.test_package_board.';

grant execute on function weld_hidden.report_test_package_board() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_test_package_board.sql
--! Included functions/weld_hidden.report_examination_backlog.sql
-- Examination backlog (F17): per NDT method, the selections still open (drawn and not examined:
-- weld_public.examination_selections_state), by age since they were drawn, and the oldest.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.examination_backlog is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_examination_backlog()
  returns table (
    method text,
    open integer,
    progressive integer,
    age_0_7_days integer,
    age_8_30_days integer,
    age_31_90_days integer,
    age_over_90_days integer,
    oldest_selected_at timestamptz
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.method,
         count(*)::integer as open,
         count(*) filter (where s.tier in ('1', '2', 'full'))::integer as progressive,
         count(*) filter (where s.age_days <= 7)::integer as age_0_7_days,
         count(*) filter (where s.age_days between 8 and 30)::integer as age_8_30_days,
         count(*) filter (where s.age_days between 31 and 90)::integer as age_31_90_days,
         count(*) filter (where s.age_days > 90)::integer as age_over_90_days,
         min(s.selected_at) as oldest_selected_at
    from (
      select x.method, x.tier, x.selected_at, (current_date - (x.selected_at at time zone 'UTC')::date) as age_days
        from weld_public.examination_selections x
       where weld_public.examination_selections_state(x) = 'open'
    ) s
   group by s.method
$$;

comment on function weld_hidden.report_examination_backlog() is
  'The open examination backlog per method: the rows of the view weld_reports.examination_backlog.';

grant execute on function weld_hidden.report_examination_backlog() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_examination_backlog.sql
--! Included functions/weld_hidden.report_qualification_expiry.sql
-- Qualification expiry (F17): the qualifications of active welders in force today that stop being
-- in force within 90 days, by expiry date or by continuity (ASME IX QW-322.1(a): a process lapses
-- after the tenant's continuity months without a recorded use), whichever comes first. The dates
-- are weld_public.welders_qualification_status's, the same a weld's checks use. `within_days` puts
-- each in the 30, 60 or 90-day window.
--
-- SECURITY DEFINER as weld_rules, which may use the rules' private functions: the reader needs
-- only EXECUTE (weld_viewer and the reporting logins have it); row security still applies, with
-- the reader's tenant. The view weld_reports.qualification_expiry is how readers see it.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.report_qualification_expiry()
  returns table (
    welder_id uuid,
    welder_stamp text,
    welder_name text,
    qualification_id uuid,
    process text,
    wps_id uuid,
    last_used_on date,
    valid_until date,
    cause text,
    days_left integer,
    within_days integer
  )
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select v.id as welder_id, v.stamp as welder_stamp, v.name as welder_name,
         q.qualification_id, q.process, q.wps_id, q.last_used_on, d.valid_until,
         case when q.expires_on is not null and q.expires_on <= q.continuity_until
              then 'expiry' else 'continuity' end as cause,
         d.valid_until - current_date as days_left,
         case when d.valid_until - current_date < 30 then 30
              when d.valid_until - current_date < 60 then 60 else 90 end as within_days
    from weld_public.welders v
    cross join lateral weld_public.welders_qualification_status(v) q
    cross join lateral (
      select least(q.expires_on, q.continuity_until) as valid_until
    ) d
   where v.active and q.state = 'valid' and d.valid_until - current_date < 90
$$;

comment on function weld_hidden.report_qualification_expiry() is
  'Qualifications lapsing within 90 days: the rows of the view weld_reports.qualification_expiry.';

grant execute on function weld_hidden.report_qualification_expiry() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_qualification_expiry.sql

--! Included views/weld_reports.welder_performance.sql
-- Welder performance (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_welder_performance()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/welder-performance) and the reporting logins.
create or replace view weld_reports.welder_performance with (security_invoker = true) as
  select * from weld_hidden.report_welder_performance();

comment on view weld_reports.welder_performance is
  E'Per welder and month welded: welds made, examined by RT or UT, rejected by any of those examinations, and the repair rate by joint and by length against the tenant''s threshold.\n@primaryKey welder_id,month\n@aggregates on\n@name welder_performance';
comment on column weld_reports.welder_performance.month is
  'The first day of the month the welds were welded.';
comment on column weld_reports.welder_performance.welds_examined is
  'Welds covered by at least one RT or UT record.';
comment on column weld_reports.welder_performance.welds_rejected is
  'Welds that an RT or UT record rejected (its result, else its film''s), however repaired since.';
comment on column weld_reports.welder_performance.repair_rate_percent is
  'welds_rejected / welds_examined x 100; null when none was examined.';
comment on column weld_reports.welder_performance.length_examined_in is
  'The circumferences (pi x outside diameter, inches) of the welds examined, where the size is known.';
comment on column weld_reports.welder_performance.repair_rate_by_length_percent is
  'length_rejected_in / length_examined_in x 100.';
comment on column weld_reports.welder_performance.length_unknown is
  'Welds examined whose size has no known outside diameter: left out of the lengths.';
comment on column weld_reports.welder_performance.over_threshold is
  'The repair rate by joint is over threshold_percent (tenant_settings.repair_rate_threshold_percent).';

grant select on weld_reports.welder_performance to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.welder_performance.sql
--! Included views/weld_reports.examination_progress.sql
-- Examination progress (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_examination_progress()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/examination-progress) and the reporting logins.
create or replace view weld_reports.examination_progress with (security_invoker = true) as
  select * from weld_hidden.report_examination_progress();

comment on view weld_reports.examination_progress is
  E'Per designated lot and NDT method (B31.3 341.4.1, 344.1.3): candidates, required, drawn, examined, accepted, shortfall, open progressive selections and the welders not yet represented.\n@primaryKey method,lot\n@aggregates on\n@name examination_progress';
comment on column weld_reports.examination_progress.lot is
  'The lot''s key: the line number, or line number and welder stamp where the tenant''s lots are per line and welder.';
comment on column weld_reports.examination_progress.lot_name is
  'The lot as a person reads it (line, and welder where lots are per welder).';
comment on column weld_reports.examination_progress.percent is
  'The percent the lot''s fluid service asks of this method (an ISO''s rtPercent when greater).';
comment on column weld_reports.examination_progress.candidates is
  'Welds of the lot that can be sampled: welded, not VOIDED, of a type the rule covers for the method.';
comment on column weld_reports.examination_progress.required is
  'ceil(percent x candidates / 100), and at least one weld of each welder (every weld at 100 %).';
comment on column weld_reports.examination_progress.drawn is
  'Selections of the lot for the method, of every tier (random, examined, progressive 1, 2 and full).';
comment on column weld_reports.examination_progress.examined is
  'Drawn welds examined by a method that closes the selection, on or after the date welded.';
comment on column weld_reports.examination_progress.accepted is
  'Examined welds whose latest such examination accepted them.';
comment on column weld_reports.examination_progress.shortfall is
  'Selections still owed: required minus drawn, or the welders not yet represented, whichever is more.';
comment on column weld_reports.examination_progress.progressive_open is
  'Progressive selections (tiers 1, 2, full: B31.3 341.3.4) not yet examined.';
comment on column weld_reports.examination_progress.welders_not_covered is
  'Stamps of the lot''s welders none of whose welds is drawn.';

grant select on weld_reports.examination_progress to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.examination_progress.sql
--! Included views/weld_reports.weld_progress.sql
-- Weld progress (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_weld_progress()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/weld-progress) and the reporting logins.
create or replace view weld_reports.weld_progress with (security_invoker = true) as
  select * from weld_hidden.report_weld_progress();

comment on view weld_reports.weld_progress is
  E'Per ISO and week (weeks start on Monday): welds made and welds accepted, with the ISO''s area and line: the data of an S-curve.\n@primaryKey iso_id,week\n@aggregates on\n@name weld_progress';
comment on column weld_reports.weld_progress.week is
  'The Monday of the week.';
comment on column weld_reports.weld_progress.welded is
  'Welds of the ISO welded that week (by date welded), VOIDED ones left out.';
comment on column weld_reports.weld_progress.accepted is
  'Welds of the ISO ACCEPTED now whose last move to ACCEPTED was that week.';

grant select on weld_reports.weld_progress to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.weld_progress.sql
--! Included views/weld_reports.test_package_board.sql
-- Test package board (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_test_package_board()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/test-package-board) and the reporting logins.
create or replace view weld_reports.test_package_board with (security_invoker = true) as
  select * from weld_hidden.report_test_package_board();

comment on view weld_reports.test_package_board is
  E'Per test package: state, ready or not, the count of each readiness reason, and its welds (not VOIDED) and how many are ACCEPTED.\n@primaryKey test_package_id\n@aggregates on\n@name test_package_board';
comment on column weld_reports.test_package_board.reasons_by_code is
  'The reasons the package is not ready, counted by code (NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, and the weld checks'' codes).';
comment on column weld_reports.test_package_board.welds is
  'The package''s welds (its own and those of its ISOs), VOIDED ones left out.';

grant select on weld_reports.test_package_board to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.test_package_board.sql
--! Included views/weld_reports.examination_backlog.sql
-- Examination backlog (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_examination_backlog()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/examination-backlog) and the reporting logins.
create or replace view weld_reports.examination_backlog with (security_invoker = true) as
  select * from weld_hidden.report_examination_backlog();

comment on view weld_reports.examination_backlog is
  E'Per NDT method: selections drawn and not yet examined, by age in days since drawn (UTC), progressive ones counted apart, and the oldest.\n@primaryKey method\n@aggregates on\n@name examination_backlog';
comment on column weld_reports.examination_backlog.progressive is
  'Of the open selections, those of progressive tiers (1, 2, full: B31.3 341.3.4).';

grant select on weld_reports.examination_backlog to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.examination_backlog.sql
--! Included views/weld_reports.qualification_expiry.sql
-- Qualification expiry (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_qualification_expiry()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/qualification-expiry) and the reporting logins.
create or replace view weld_reports.qualification_expiry with (security_invoker = true) as
  select * from weld_hidden.report_qualification_expiry();

comment on view weld_reports.qualification_expiry is
  E'Qualifications of active welders in force today that stop within 90 days, by expiry or by continuity (QW-322.1(a)), whichever comes first.\n@primaryKey qualification_id,process\n@aggregates on\n@name qualification_expiry';
comment on column weld_reports.qualification_expiry.valid_until is
  'The last day the qualification is in force for the process: its expiry date or its continuity''s end, the earlier.';
comment on column weld_reports.qualification_expiry.cause is
  'expiry (its expiry date comes first) or continuity (no recorded use of the process for the tenant''s continuity months).';
comment on column weld_reports.qualification_expiry.days_left is
  'valid_until minus today (0: today is the last day).';
comment on column weld_reports.qualification_expiry.within_days is
  'The window it falls in: 30 (0 to 29 days left), 60 (30 to 59) or 90 (60 to 89).';

grant select on weld_reports.qualification_expiry to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.qualification_expiry.sql
