--! Previous: sha1:ce29e3ed8b306f006fd2bb08564495b0f3711167
--! Hash: sha1:2ea765a16db9f45affcfca4d15aa0ae4d4dced2e
--! Message: Report rollups: one refresh per tenant at commit; limits tightened

-- Issue F17, after a review from the attacker's side.
--
-- 1. The rollup queue fired one deferred trigger per queued row, and each looked at the queue
--    again: a bulk update of N welds cost N^2 at commit. Now a transaction marks each tenant
--    pending once (report_facts_pending), and that mark's trigger refreshes the tenant's welds.
--    A refresh also writes only the rollup rows that moved (a status change: one ISO-week row).
-- 2. Reporting logins: the service ends a session that keeps one transaction open 15 minutes,
--    counts every state but idle as running, and ends the sessions of a login that no longer
--    exists; a tenant with reporting logins is not deleted (remove them first).
-- 3. GET /welds?sort= reads indexes in each order it offers.

--------------------------------------------------------------------------------------------------
-- 1. The rollup queue

-- The tenants a transaction has queued welds for, once each: its row's deferred trigger refreshes
-- them at commit. UNLOGGED, as the queue: no row outlives its transaction.
create unlogged table weld_private.report_facts_pending (
  tenant_id uuid not null,
  xact      xid8 not null default pg_catalog.pg_current_xact_id(),
  primary key (tenant_id, xact)
);
select weld_private.secure_tenant_table('weld_private.report_facts_pending');
drop trigger _500_refresh_report_facts on weld_private.report_facts_queue;

--! Included functions/weld_private.report_facts_of.sql
-- What the reports count of each weld of `weld_ids`,
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
  -- (No SET search_path, so PostgreSQL inlines it into its one caller, refresh_report_facts,
  -- whose search_path is pinned; every name here is qualified or pg_catalog's.)
  language sql stable
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
   where w.tenant_id = tenant and w.id = any(weld_ids)
$$;
--! EndIncluded functions/weld_private.report_facts_of.sql
--! Included functions/weld_private.refresh_report_facts.sql
-- Brings the report facts of the welds `weld_ids` of `tenant` (every weld of it when null) up to
-- date with weld_private.report_facts_of, and moves each changed part in the rollups: the old
-- facts of a weld are taken out of the counts, the new ones put in. Called at commit for the
-- welds the transaction changed (weld_private.tg_report_facts_queue__refresh), so the rollups are
-- exact at every commit, like the ISO counts.
--
-- The old facts are locked first (a concurrent change of the same weld waits), then the rollup
-- rows in key order, welder-months before ISO-weeks, so two writers cannot deadlock here.
-- Only what moved is written: a status change to ACCEPTED touches one ISO-week row, an NDT result
-- one welder-month row (a status change is on the hot path: bench/RESULTS.md, "Reports").
-- Rows that fall to zero stay (a weld moved to another month leaves one); the reports skip them.
create or replace function weld_private.refresh_report_facts(tenant uuid, weld_ids uuid[])
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- Planned once per session: left to choose, PostgreSQL planned the facts query again at every
  -- call (its custom plans look cheaper for a few ids), most of a refresh's time.
  set plan_cache_mode = force_generic_plan
as $$
declare
  before weld_private.weld_report_facts[];
  after weld_private.weld_report_facts[];
  chunk uuid[];
begin
  if weld_ids is null then
    -- The whole tenant (the migration that made the rollups; a DBA's repair): counted afresh,
    -- 10,000 welds at a time through the path below.
    delete from weld_private.welder_month_counts c where c.tenant_id = tenant;
    delete from weld_private.iso_week_counts c where c.tenant_id = tenant;
    delete from weld_private.weld_report_facts f where f.tenant_id = tenant;
    for chunk in
      select array_agg(w.id)
        from (select w.id, (row_number() over (order by w.id) - 1) / 10000 as n
                from weld_public.welds w where w.tenant_id = tenant) w
       group by w.n
    loop
      perform weld_private.refresh_report_facts(tenant, chunk);
    end loop;
    return;
  end if;

  select coalesce(array_agg(f order by f.weld_id), '{}') into before
    from (select * from weld_private.weld_report_facts f
           where f.tenant_id = tenant and f.weld_id = any(weld_ids)
           order by f.weld_id
             for update) f;
  select coalesce(array_agg(f order by f.weld_id), '{}') into after
    from weld_private.report_facts_of(tenant, weld_ids) f;
  if before = after then
    return; -- nothing the reports count moved
  end if;

  -- The facts, written in place, not deleted and inserted again: a writer waiting on the lock
  -- above then reads the row as this one left it (a deleted row would be skipped, its part lost).
  insert into weld_private.weld_report_facts as f
  select * from unnest(after)
  on conflict (tenant_id, weld_id) do update
     set iso_id = excluded.iso_id, welder_id = excluded.welder_id,
         made_month = excluded.made_month, welded_week = excluded.welded_week,
         accepted_week = excluded.accepted_week, examined = excluded.examined,
         rejected = excluded.rejected, length_in = excluded.length_in
   where (f.*) is distinct from (excluded.*);
  if exists (select from unnest(before) b
              where b.weld_id <> all (array(select a.weld_id from unnest(after) a))) then
    -- Welds deleted: their facts go.
    delete from weld_private.weld_report_facts f
     where f.tenant_id = tenant and f.weld_id = any(weld_ids)
       and f.weld_id <> all (array(select a.weld_id from unnest(after) a));
  end if;

  -- The welder-months, when what they count moved: the old facts with -1, the new with +1.
  if array(select row(b.welder_id, b.made_month, b.examined, b.rejected, b.length_in)
             from unnest(before) b)
     is distinct from
     array(select row(a.welder_id, a.made_month, a.examined, a.rejected, a.length_in)
             from unnest(after) a) then
    with change as (
      select -1 as sign, b.* from unnest(before) b
      union all
      select 1, a.* from unnest(after) a
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
  end if;

  -- The ISO-weeks, likewise.
  if array(select row(b.iso_id, b.welded_week, b.accepted_week) from unnest(before) b)
     is distinct from
     array(select row(a.iso_id, a.welded_week, a.accepted_week) from unnest(after) a) then
    with change as (
      select -1 as sign, b.* from unnest(before) b
      union all
      select 1, a.* from unnest(after) a
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
  end if;
end
$$;
--! EndIncluded functions/weld_private.refresh_report_facts.sql
--! Included functions/weld_private.queue_report_facts.sql
-- Notes that the transaction changed what the reports count of the welds `ids` of `tenant`
-- (weld_private.tg__report_facts calls it): the ids go to the queue, and the first note of a
-- tenant in a transaction marks it pending, which at commit runs the one deferred trigger that
-- refreshes them all (weld_private.tg_report_facts_queue__refresh). One deferred event per tenant
-- and transaction, however many welds: a bulk update of 100,000 welds queues 100,000 ids, not
-- 100,000 events that would each look at the queue again.
create or replace function weld_private.queue_report_facts(tenant uuid, ids uuid[]) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_private.report_facts_queue (tenant_id, weld_ids) values (tenant, ids);
  insert into weld_private.report_facts_pending (tenant_id) values (tenant)
  on conflict do nothing;
$$;
--! EndIncluded functions/weld_private.queue_report_facts.sql
--! Included functions/weld_private.tg__report_facts.sql
-- Keeps the report rollups (weld_private.refresh_report_facts) exact: every write to what
-- weld_private.report_facts_of reads names the welds it touched, tenant by tenant, in the
-- transaction's queue (weld_private.queue_report_facts); at commit, one deferred trigger per
-- tenant refreshes them all at once (weld_private.tg_report_facts_queue__refresh).
--
-- Why at commit, once: a transaction that refreshed at each statement took rollup rows in the
-- order of its statements (an NDT record's welds, then their status changes), and two such
-- transactions over the same welder-months and ISO-weeks could deadlock. Refreshed once, in key
-- order, they queue instead. (A change to ACCEPTED is also refreshed once, not at the weld's update
-- and again at its history row.)
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
  ids uuid[];
  pair record;
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
      'select r.tenant_id, array_agg(distinct r.%I) as ids from (%s) r %s group by r.tenant_id',
      tg_argv[0], statement_rows,
      -- (Only moves to ACCEPTED are read from the history.)
      case when tg_table_name = 'weld_status_history' then 'where r.to_status = ''ACCEPTED''' end)
    loop
      perform weld_private.queue_report_facts(pair.tenant_id, pair.ids);
    end loop;
    return null;
  end if;

  if tg_table_name = 'welds' then
    if old.tenant_id <> new.tenant_id then
      perform weld_private.queue_report_facts(old.tenant_id, array[old.id]);
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
    perform weld_private.queue_report_facts(new.tenant_id, ids);
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
--! Included functions/weld_private.tg_report_facts_queue__refresh.sql
-- At commit (the deferred trigger of the tenant's pending mark, weld_private.queue_report_facts),
-- the welds the transaction queued for the tenant are refreshed (weld_private.refresh_report_facts)
-- and the mark goes, so a statement after an early firing (SET CONSTRAINTS ... IMMEDIATE) marks
-- the tenant again. (pg_current_xact_id is the top transaction's id, savepoints included; what a
-- rolled-back savepoint queued is gone with it.)
create or replace function weld_private.tg_report_facts_queue__refresh() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  ids uuid[];
begin
  delete from weld_private.report_facts_pending p
   where p.tenant_id = new.tenant_id and p.xact = new.xact;
  with taken as (
    delete from weld_private.report_facts_queue q
     where q.tenant_id = new.tenant_id and q.xact = pg_catalog.pg_current_xact_id()
    returning q.weld_ids
  )
  select array_agg(distinct w.id order by w.id) into ids
    from taken t cross join lateral unnest(t.weld_ids) as w (id);
  if ids is not null then
    perform weld_private.refresh_report_facts(new.tenant_id, ids);
  end if;
  return null;
end
$$;

drop trigger if exists _500_refresh_report_facts on weld_private.report_facts_pending;
create constraint trigger _500_refresh_report_facts
  after insert on weld_private.report_facts_pending
  deferrable initially deferred
  for each row execute function weld_private.tg_report_facts_queue__refresh();
--! EndIncluded functions/weld_private.tg_report_facts_queue__refresh.sql

--------------------------------------------------------------------------------------------------
-- 2. Reporting logins

alter table weld_private.reporting_logins
  drop constraint reporting_logins_tenant_id_fkey,
  add constraint reporting_logins_tenant_id_fkey foreign key (tenant_id)
    references weld_public.tenants on delete restrict;

--! Included functions/weld_hidden.reap_reporting_sessions.sql
-- The reporting logins' limits, enforced (F17). PostgreSQL lets any session SET its own
-- statement_timeout, so the timeout a login gets by default (ALTER ROLE ... SET) is no guard:
-- the service calls this every second (server/housekeeping.ts) and it cancels each statement of a
-- reporting login that has run longer than the login's limit, and ends each session that has sat
-- idle inside a transaction for over a minute, or kept one transaction open for 15 minutes
-- (holding its snapshot and locks), and each session of a login that no longer exists. It touches
-- only reporting logins' sessions of this database. Answers how many it cancelled and ended.
--
-- SECURITY DEFINER as weld_reaper, which may read every session's state (pg_read_all_stats) and
-- signal non-superuser sessions (pg_signal_backend): the server's role calls it, nothing else.
grant create on schema weld_hidden to weld_reaper;
set role weld_reaper;

create or replace function weld_hidden.reap_reporting_sessions()
  returns table (cancelled integer, ended integer)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  -- The sessions to stop are chosen first (MATERIALIZED: PostgreSQL may otherwise test a WHERE's
  -- conditions in any order, and a signal sent before the time is checked would stop anyone's).
  with sessions as materialized (
    select a.pid, a.state, a.query_start, a.state_change, a.xact_start, l.statement_timeout_ms,
           l.role_name is null as orphan
      from pg_catalog.pg_stat_activity a
      left join weld_private.reporting_logins l on l.role_name = a.usename
     where a.datname = pg_catalog.current_database()
       and pg_catalog.starts_with(a.usename, 'weld_bi_')
  ), over_limit as materialized (
    select s.pid,
           -- A statement running past the limit is cancelled; the session goes on.
           not s.orphan
             and s.state not in ('idle', 'idle in transaction', 'idle in transaction (aborted)')
             and s.query_start < clock_timestamp() - s.statement_timeout_ms * interval '1 ms'
             as running
      from sessions s
     where s.orphan -- a login removed, or whose tenant went: its sessions end
        or (s.state not in ('idle', 'idle in transaction', 'idle in transaction (aborted)')
            and s.query_start < clock_timestamp() - s.statement_timeout_ms * interval '1 ms')
        -- Idle inside a transaction for a minute, or one transaction for 15 minutes (short
        -- statements one after another, holding its snapshot): the session ends.
        or (s.state in ('idle in transaction', 'idle in transaction (aborted)')
            and s.state_change < clock_timestamp() - interval '60 s')
        or s.xact_start < clock_timestamp() - interval '15 min'
  )
  select (count(*) filter (where s.running and s.sent))::integer,
         (count(*) filter (where not s.running and s.sent))::integer
    from (select o.running,
                 case when o.running then pg_catalog.pg_cancel_backend(o.pid)
                      else pg_catalog.pg_terminate_backend(o.pid) end as sent
            from over_limit o) s
$$;

comment on function weld_hidden.reap_reporting_sessions() is
  'Cancels reporting logins'' statements over their limit; ends their sessions idle in a transaction over 60 s.';

revoke execute on function weld_hidden.reap_reporting_sessions() from public;
grant execute on function weld_hidden.reap_reporting_sessions() to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_reaper;
--! EndIncluded functions/weld_hidden.reap_reporting_sessions.sql

--------------------------------------------------------------------------------------------------
-- 3. The weld list's orders (rest-adapter/welds.ts, sorts): each (key, id), the tenant first.

create index welds_weld_number_idx on weld_public.welds (tenant_id, weld_number, id);
create index welds_welded_on_idx
  on weld_public.welds (tenant_id, (coalesce(welded_on, 'infinity'::date)), id);
-- (tenant_id, status) becomes (tenant_id, status, id): the same writes, and the order's key.
drop index weld_public.welds_status_idx;
create index welds_status_idx on weld_public.welds (tenant_id, status, id);
