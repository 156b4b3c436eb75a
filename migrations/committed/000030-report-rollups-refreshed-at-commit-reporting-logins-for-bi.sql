--! Previous: sha1:0897012220529dac713d9346748bde0443dca1e3
--! Hash: sha1:3e7c5514db0d2b1042a93ca4b52f561b05fc2634
--! Message: Report rollups refreshed at commit; reporting logins for BI

-- Issue F17, continued.
--
-- 1. The report rollups (migration 000029) are refreshed once per transaction, at commit, from a
--    queue the triggers fill: refreshed statement by statement, two transactions could take the
--    same rollup rows in opposite orders and deadlock (weld_private.tg__report_facts says more).
-- 2. The repair rate threshold gets a precision and a NaN check, as every numeric column.
-- 3. The report views' smart tags come first in their comments, where PostGraphile reads them:
--    each view gets its key and aggregates in GraphQL.
-- 4. Reporting logins (weld-admin reporting add): PostgreSQL logins for BI tools, each reading
--    one tenant's reports and the tables analysts join them with, read-only, with a statement
--    limit the service enforces.

--------------------------------------------------------------------------------------------------
-- 1. The queue

-- The welds each open transaction changed in what the reports count: rows live from the statement
-- that queues them to the commit that refreshes them. UNLOGGED: after a crash no transaction that
-- queued is left to commit.
create unlogged table weld_private.report_facts_queue (
  tenant_id uuid not null,
  xact      xid8 not null default pg_catalog.pg_current_xact_id(),
  id        bigint generated always as identity,
  weld_ids  uuid[] not null,
  primary key (tenant_id, xact, id)
);
select weld_private.secure_tenant_table('weld_private.report_facts_queue');

--! Included functions/weld_private.tg__report_facts.sql
-- Keeps the report rollups (weld_private.refresh_report_facts) exact: every write to what
-- weld_private.report_facts_of reads names the welds it touched, tenant by tenant, in the
-- transaction's queue (weld_private.report_facts_queue); at commit, one deferred trigger refreshes
-- them all at once (weld_private.tg_report_facts_queue__refresh).
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
    execute format(
      'insert into weld_private.report_facts_queue (tenant_id, weld_ids)
       select r.tenant_id, array_agg(distinct r.%I) from (%s) r %s group by r.tenant_id',
      tg_argv[0], statement_rows,
      -- (Only moves to ACCEPTED are read from the history.)
      case when tg_table_name = 'weld_status_history' then 'where r.to_status = ''ACCEPTED''' end);
    return null;
  end if;

  if tg_table_name = 'welds' then
    if old.tenant_id <> new.tenant_id then
      insert into weld_private.report_facts_queue (tenant_id, weld_ids)
      values (old.tenant_id, array[old.id]);
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
    insert into weld_private.report_facts_queue (tenant_id, weld_ids) values (new.tenant_id, ids);
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
-- At commit (a deferred trigger per queued row), the welds the transaction queued for the row's
-- tenant are refreshed (weld_private.refresh_report_facts), all of them by the first trigger to
-- fire; the others find nothing left and return. (pg_current_xact_id is the top transaction's
-- id, savepoints included; what a rolled-back savepoint queued is gone with it.)
create or replace function weld_private.tg_report_facts_queue__refresh() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  ids uuid[];
begin
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

drop trigger if exists _500_refresh_report_facts on weld_private.report_facts_queue;
create constraint trigger _500_refresh_report_facts
  after insert on weld_private.report_facts_queue
  deferrable initially deferred
  for each row execute function weld_private.tg_report_facts_queue__refresh();
--! EndIncluded functions/weld_private.tg_report_facts_queue__refresh.sql

--------------------------------------------------------------------------------------------------
-- 2. The threshold

alter table weld_public.tenant_settings
  alter column repair_rate_threshold_percent type numeric(5, 2),
  add constraint tenant_settings_repair_rate_threshold_is_a_number
    check (repair_rate_threshold_percent <> 'NaN');

--------------------------------------------------------------------------------------------------
-- 3. The views' comments

--! Included views/weld_reports.welder_performance.sql
-- Welder performance (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_welder_performance()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/welder-performance) and the reporting logins.
create or replace view weld_reports.welder_performance with (security_invoker = true) as
  select * from weld_hidden.report_welder_performance();

comment on view weld_reports.welder_performance is
  E'@primaryKey welder_id,month\n@behavior +aggregates\nPer welder and month welded: welds made, examined by RT or UT, rejected by any of those examinations, and the repair rate by joint and by length against the tenant''s threshold.';
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
  E'@primaryKey method,lot\n@behavior +aggregates\nPer designated lot and NDT method (B31.3 341.4.1, 344.1.3): candidates, required, drawn, examined, accepted, shortfall, open progressive selections and the welders not yet represented.';
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
  E'@primaryKey iso_id,week\n@behavior +aggregates\nPer ISO and week (weeks start on Monday): welds made and welds accepted, with the ISO''s area and line: the data of an S-curve.';
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
  E'@primaryKey test_package_id\n@behavior +aggregates\nPer test package: state, ready or not, the count of each readiness reason, and its welds (not VOIDED) and how many are ACCEPTED.';
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
  E'@primaryKey method\n@behavior +aggregates\nPer NDT method: selections drawn and not yet examined, by age in days since drawn (UTC), progressive ones counted apart, and the oldest.';
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
  E'@primaryKey qualification_id,process\n@behavior +aggregates\nQualifications of active welders in force today that stop within 90 days, by expiry or by continuity (QW-322.1(a)), whichever comes first.';
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

--------------------------------------------------------------------------------------------------
-- 4. Reporting logins

-- One row per login: its role (LOGIN, in weld_reporting, named weld_bi_ and 12 random hex digits),
-- its tenant and name, and its statement limit. Written by weld-admin (db/reporting.ts) on the
-- root connection, which also creates and drops the roles; read by reporting_tenant_id (the
-- login's tenant) and reap_reporting_sessions (its limit).
create table weld_private.reporting_logins (
  tenant_id            uuid not null references weld_public.tenants on delete cascade,
  name                 text not null,
  role_name            name not null,
  statement_timeout_ms integer not null
    constraint reporting_logins_timeout_range check (statement_timeout_ms between 1000 and 600000),
  created_at           timestamptz not null default now(),
  primary key (tenant_id, name),
  -- Global, as roles are the cluster's.
  constraint reporting_logins_role_name_key unique (role_name),
  constraint reporting_logins_role_name_format check (role_name ~ '^weld_bi_[0-9a-f]{12}$')
);
comment on table weld_private.reporting_logins is
  'PostgreSQL logins for BI tools (weld-admin reporting add), each bound to one tenant.';
-- Row security, but not the tenant policy: a login's own row is how its tenant is known, so
-- reading it under a policy that asks current_tenant_id would ask for what it looks up. The
-- owner and root (weld-admin) bypass it.
alter table weld_private.reporting_logins enable row level security;
alter table weld_private.reporting_logins force row level security;
create policy own_login on weld_private.reporting_logins for select to weld_rules
  using (role_name = session_user);
create policy every_login on weld_private.reporting_logins for select to weld_reaper
  using (true);
grant select on weld_private.reporting_logins to weld_rules, weld_reaper;
grant usage on schema weld_private, weld_hidden to weld_reaper;

--! Included functions/weld_hidden.reporting_tenant_id.sql
-- The tenant of the session's reporting login (weld-admin reporting add), or null when the
-- session's user is none. session_user is the role that logged in: SET ROLE does not change it
-- and SET SESSION AUTHORIZATION needs a superuser, so a login cannot claim another's tenant.
-- weld_hidden.current_tenant_id calls it for sessions whose user is a reporting login.
--
-- SECURITY DEFINER as weld_rules, which alone reads the logins table; every role that may call
-- current_tenant_id may call it (PostgreSQL checks the right when it plans the call, even on the
-- CASE branch a session never takes).
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.reporting_tenant_id() returns uuid
  language sql stable parallel safe security definer
  set search_path = pg_catalog, pg_temp
as $$
  select l.tenant_id from weld_private.reporting_logins l where l.role_name = session_user
$$;

comment on function weld_hidden.reporting_tenant_id() is
  'The tenant of the session''s reporting login; null for any other session.';

grant execute on function weld_hidden.reporting_tenant_id()
  to weld_owner, weld_anonymous, weld_authenticator, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.reporting_tenant_id.sql
--! Included functions/weld_hidden.current_tenant_id.sql
-- The request context. The server sets these per transaction (db/database.ts, withContext);
-- policies compare with (select weld_hidden.current_tenant_id()) so the call is an initPlan,
-- evaluated once per statement. No context means null, and null matches no row.
--
-- A reporting login (weld-admin reporting add; its role is named weld_bi_...) has its tenant
-- fixed by the login, whatever the session sets (weld_hidden.reporting_tenant_id). The service
-- itself logs in as weld_authenticator, so its requests only ever take the first test's cheap
-- no.
create or replace function weld_hidden.current_tenant_id() returns uuid
  language sql stable parallel safe
as $$
  select case when pg_catalog.starts_with(session_user, 'weld_bi_')
              then weld_hidden.reporting_tenant_id()
              else nullif(pg_catalog.current_setting('jwt.claims.tenant_id', true), '')::uuid
         end
$$;

grant execute on function weld_hidden.current_tenant_id()
  to weld_anonymous, weld_authenticator, weld_rules, weld_reporting;
--! EndIncluded functions/weld_hidden.current_tenant_id.sql
--! Included functions/weld_hidden.reap_reporting_sessions.sql
-- The reporting logins' limits, enforced (F17). PostgreSQL lets any session SET its own
-- statement_timeout, so the timeout a login gets by default (ALTER ROLE ... SET) is no guard:
-- the service calls this every second (server/housekeeping.ts) and it cancels each statement of a
-- reporting login that has run longer than the login's limit, and ends each session that has sat
-- idle inside a transaction for over a minute (holding its snapshot and locks). It touches no
-- other session. Answers how many it cancelled and ended.
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
  with over_limit as materialized (
    select a.pid, a.state = 'active' as running
      from pg_catalog.pg_stat_activity a
      join weld_private.reporting_logins l on l.role_name = a.usename
     where (a.state = 'active'
            and a.query_start < clock_timestamp() - l.statement_timeout_ms * interval '1 ms')
        or (a.state in ('idle in transaction', 'idle in transaction (aborted)')
            and a.state_change < clock_timestamp() - interval '60 s')
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

-- What a reporting login reads besides the reports: the project's data an analyst joins them
-- with, under row security (its tenant's rows only). Not the users, sessions, events, webhooks,
-- imports or settings of the service.
grant usage on schema weld_public to weld_reporting;
grant select on
  weld_public.isos, weld_public.welds, weld_public.welders, weld_public.welder_qualifications,
  weld_public.welder_continuity, weld_public.wps, weld_public.pqrs, weld_public.wps_pqrs,
  weld_public.ndt_records, weld_public.ndt_record_welds, weld_public.film_intervals,
  weld_public.film_interval_welds, weld_public.inspections, weld_public.inspection_welds,
  weld_public.test_packages, weld_public.test_package_isos, weld_public.test_package_welds,
  weld_public.weld_status_history, weld_public.examination_selections,
  weld_public.iso_weld_counts
  to weld_reporting;
