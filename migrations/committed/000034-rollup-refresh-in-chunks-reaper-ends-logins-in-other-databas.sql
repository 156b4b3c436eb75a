--! Previous: sha1:2ea765a16db9f45affcfca4d15aa0ae4d4dced2e
--! Hash: sha1:c9a3f3b9658f55572bc8291e1820323d323ca757
--! Message: Rollup refresh in chunks; reaper ends logins in other databases

-- Issue F17, after a second review from the attacker's side.
-- 1. refresh_report_facts takes a bulk write (an import) 10,000 welds at a time, and finds the
--    deleted welds with a hashed anti-join instead of testing each id against all the others.
-- 2. reap_reporting_sessions also ends this database's reporting logins' sessions in the
--    cluster's other databases, where no limit of theirs holds.
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
  if cardinality(weld_ids) > 10000 then
    -- A bulk write (an import): 10,000 welds at a time, so the arrays below stay small.
    for chunk in
      select array_agg(u.id) from (select u.id, (row_number() over () - 1) / 10000 as n
                                     from unnest(weld_ids) as u (id)) u
       group by u.n
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
  -- Welds deleted: their facts go (an anti-join, hashed: not a test of each against all).
  delete from weld_private.weld_report_facts f
   where f.tenant_id = tenant
     and f.weld_id in (select b.weld_id from unnest(before) b
                       except select a.weld_id from unnest(after) a);

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
--! Included functions/weld_hidden.reap_reporting_sessions.sql
-- The reporting logins' limits, enforced (F17). PostgreSQL lets any session SET its own
-- statement_timeout, so the timeout a login gets by default (ALTER ROLE ... SET) is no guard:
-- the service calls this every second (server/housekeeping.ts) and it cancels each statement of a
-- reporting login that has run longer than the login's limit, and ends each session that has sat
-- idle inside a transaction for over a minute, or kept one transaction open for 15 minutes
-- (holding its snapshot and locks), and each session of a login that no longer exists. It touches
-- only this database's reporting logins' sessions, and ends those connected to another database of
-- the cluster (where none of this holds). Answers how many it cancelled and ended.
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
           l.role_name is null as orphan,
           a.datname is distinct from pg_catalog.current_database() as elsewhere
      from pg_catalog.pg_stat_activity a
      left join weld_private.reporting_logins l on l.role_name = a.usename
     where pg_catalog.starts_with(a.usename, 'weld_bi_')
       -- This database's logins anywhere in the cluster; another database's logins, never.
       and (a.datname = pg_catalog.current_database() or l.role_name is not null)
  ), over_limit as materialized (
    select s.pid,
           -- A statement running past the limit is cancelled; the session goes on.
           not s.orphan and not s.elsewhere
             and s.state not in ('idle', 'idle in transaction', 'idle in transaction (aborted)')
             and s.query_start < clock_timestamp() - s.statement_timeout_ms * interval '1 ms'
             as running
      from sessions s
     where s.orphan -- a login removed, or whose tenant went: its sessions end
        or s.elsewhere -- connected to another database (where no limit holds): it ends
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
