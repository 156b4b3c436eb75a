--! Previous: sha1:49463a9d33f7fd8f7c541b2eb4e380f7f94e9b69
--! Hash: sha1:b8258cf21540c240a5ca13d065bbcf9aae63720e
--! Message: welder alerts: lapsing and lapsed qualifications, repair rates

-- 7. Welder alerts (F19): events that warn before a welder's qualification stops being in force
-- (qualification.lapsing, 30, 14 and 3 days before, once each), say when it did
-- (qualification.lapsed), and when a welder's repair rate passes the tenant's threshold
-- (welder.repair_rate_exceeded), through the feed and webhooks like every event. A daily tick
-- per tenant (weld_hidden.send_welder_alerts) sends them, once across instances.

-- What was sent, so each alert is sent once: per qualification, process, the day it stops being
-- in force and the threshold (lapsing); per qualification, process and that day (lapsed); per
-- welder and month (repair_rate, on_date the month's first day).
create table if not exists weld_private.welder_alerts (
  tenant_id  uuid not null references weld_public.tenants on delete cascade,
  subject_id uuid not null,
  process    text not null default '',
  kind       text not null check (kind in ('lapsing', 'lapsed', 'repair_rate')),
  on_date    date not null,
  threshold  integer not null default 0,
  sent_at    timestamptz not null default now(),
  primary key (tenant_id, subject_id, process, kind, on_date, threshold)
);
comment on table weld_private.welder_alerts is
  'The welder alerts sent (weld_hidden.send_welder_alerts), so that each is sent once.';

-- The days each tenant's alerts were sent: the first instance to insert the day's row sends them.
create table if not exists weld_private.alert_days (
  tenant_id uuid not null references weld_public.tenants on delete cascade,
  day       date not null,
  primary key (tenant_id, day)
);
comment on table weld_private.alert_days is
  'The days a tenant''s welder alerts were sent: one instance a day sends them.';

select weld_private.secure_tenant_table(t)
  from unnest(array['weld_private.welder_alerts', 'weld_private.alert_days']::regclass[]) as t
 where not exists (select from pg_catalog.pg_policy p where p.polrelid = t and p.polname = 'tenant_isolation');

--! Included functions/weld_hidden.send_welder_alerts.sql
-- A tenant's welder alerts for today, once across instances: the first call of the day inserts
-- the day's row in weld_private.alert_days and sends; a call on another instance at the same
-- moment waits for that insert's commit and then finds the row (0 sent). Each alert is sent once
-- (weld_private.welder_alerts): a tick that runs again, or a day missed, sends nothing twice.
--
--   qualification.lapsing  a qualification in force today stops being in force for a process
--                          (by its expiry or by continuity, QW-322.1(a): the qualification
--                          expiry report's valid_until) within 30, 14 or 3 days: the smallest of
--                          those it is within, once each (a band a missed day skipped is not sent
--                          late); change: process, validUntil, daysLeft, cause, threshold
--   qualification.lapsed   one that was announced as lapsing is no longer in force for that
--                          process on a day after its valid_until (not if a use or a renewal kept
--                          it); change: process, validUntil, state
--   welder.repair_rate_exceeded
--                          a welder's repair rate by joint this month or last is over the
--                          tenant's threshold (the welder performance report), once per month;
--                          change: month, weldsExamined, weldsRejected, repairRatePercent,
--                          thresholdPercent
--
-- `data` is the qualification (or welder) as its GET shows it. SECURITY DEFINER as the owner,
-- which writes the events and reads the resources' JSON (weld_private.event_data); every query
-- names the tenant, and the reports it reads run with the tenant's claim, set here and given back.
create or replace function weld_hidden.send_welder_alerts(tenant uuid) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  caller_tenant text := current_setting('jwt.claims.tenant_id', true);
  sent integer := 0;
  n integer;
begin
  if tenant is null then
    raise exception 'send_welder_alerts needs a tenant' using errcode = '22004';
  end if;
  perform set_config('jwt.claims.tenant_id', tenant::text, true);
  insert into weld_private.alert_days (tenant_id, day) values (tenant, current_date)
  on conflict do nothing;
  get diagnostics n = row_count;
  if n = 0 then
    perform set_config('jwt.claims.tenant_id', coalesce(caller_tenant, ''), true);
    return 0; -- sent today already, here or by another instance
  end if;

  with due as (
    select q.qualification_id, q.process, q.valid_until, q.cause, q.days_left,
           (select min(t) from unnest(array[30, 14, 3]) as t where q.days_left <= t) as threshold
      from weld_hidden.report_qualification_expiry() q
     where q.days_left <= 30
  ), fresh as (
    insert into weld_private.welder_alerts (tenant_id, subject_id, process, kind, on_date, threshold)
    select tenant, d.qualification_id, d.process, 'lapsing', d.valid_until, d.threshold from due d
    on conflict do nothing
    returning subject_id, process, on_date, threshold
  ), events as (
    insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
    select tenant, 'qualification.lapsing', d.qualification_id, null,
           weld_private.event_data('welder_qualification', tenant, d.qualification_id),
           jsonb_build_object('process', d.process, 'validUntil', d.valid_until, 'daysLeft', d.days_left,
                              'cause', d.cause, 'threshold', d.threshold)
      from due d
      join fresh f on f.subject_id = d.qualification_id and f.process = d.process
                  and f.on_date = d.valid_until and f.threshold = d.threshold
    returning 1
  )
  select sent + count(*) into sent from events;

  with announced as (
    -- Lapsing alerts whose day has passed and whose lapse is not yet said.
    select distinct a.subject_id, a.process, a.on_date
      from weld_private.welder_alerts a
     where a.tenant_id = tenant and a.kind = 'lapsing' and a.on_date < current_date
       and not exists (select from weld_private.welder_alerts l
                        where l.tenant_id = tenant and l.kind = 'lapsed' and l.subject_id = a.subject_id
                          and l.process = a.process and l.on_date = a.on_date)
  ), lapsed as (
    select n.subject_id, n.process, n.on_date, s.state
      from announced n
      join weld_public.welder_qualifications q on q.tenant_id = tenant and q.id = n.subject_id
      join weld_public.welders w on w.tenant_id = tenant and w.id = q.welder_id
      cross join lateral weld_public.welders_qualification_status(w, current_date) s
     where s.qualification_id = n.subject_id and s.process = n.process and s.state <> 'valid'
  ), fresh as (
    insert into weld_private.welder_alerts (tenant_id, subject_id, process, kind, on_date)
    select tenant, l.subject_id, l.process, 'lapsed', l.on_date from lapsed l
    on conflict do nothing
    returning subject_id, process, on_date
  ), events as (
    insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
    select tenant, 'qualification.lapsed', l.subject_id, null,
           weld_private.event_data('welder_qualification', tenant, l.subject_id),
           jsonb_build_object('process', l.process, 'validUntil', l.on_date, 'state', l.state)
      from lapsed l
      join fresh f on f.subject_id = l.subject_id and f.process = l.process and f.on_date = l.on_date
    returning 1
  )
  select sent + count(*) into sent from events;

  with over as (
    select p.welder_id, p.month, p.welds_examined, p.welds_rejected, p.repair_rate_percent,
           p.threshold_percent
      from weld_hidden.report_welder_performance() p
     where p.over_threshold and p.month >= date_trunc('month', current_date - interval '1 month')::date
  ), fresh as (
    insert into weld_private.welder_alerts (tenant_id, subject_id, kind, on_date)
    select tenant, o.welder_id, 'repair_rate', o.month from over o
    on conflict do nothing
    returning subject_id, on_date
  ), events as (
    insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
    select tenant, 'welder.repair_rate_exceeded', o.welder_id, null,
           weld_private.event_data('welder', tenant, o.welder_id),
           jsonb_build_object('month', o.month, 'weldsExamined', o.welds_examined,
                              'weldsRejected', o.welds_rejected, 'repairRatePercent', o.repair_rate_percent,
                              'thresholdPercent', o.threshold_percent)
      from over o
      join fresh f on f.subject_id = o.welder_id and f.on_date = o.month
    returning 1
  )
  select sent + count(*) into sent from events;

  perform set_config('jwt.claims.tenant_id', coalesce(caller_tenant, ''), true);
  return sent;
end
$$;

revoke execute on function weld_hidden.send_welder_alerts(uuid) from public;
grant execute on function weld_hidden.send_welder_alerts(uuid) to weld_authenticator;
--! EndIncluded functions/weld_hidden.send_welder_alerts.sql
--! Included functions/weld_hidden.alerts_due.sql
-- The tenants whose welder alerts have not been sent today (weld_hidden.send_welder_alerts): what
-- the housekeeping of each instance asks every ALERTS_EVERY_MS.
create or replace function weld_hidden.alerts_due() returns setof uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select t.id
    from weld_public.tenants t
   where not exists (select from weld_private.alert_days d where d.tenant_id = t.id and d.day = current_date)
   order by t.id
$$;

revoke execute on function weld_hidden.alerts_due() from public;
grant execute on function weld_hidden.alerts_due() to weld_authenticator;
--! EndIncluded functions/weld_hidden.alerts_due.sql
--! Included functions/weld_private.tg_welds__component_p_numbers.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A weld side that names a component takes the component's P-number (when it has one): the
-- material is the component's, so the P-number checks (QW-403.11, B31.3 Table 331.1.1) read it
-- from there. A write that gives the side another P-number, or clears it, is refused (WD007,
-- naming the field) rather than silently replaced; one that leaves it alone gets the component's.
-- SECURITY DEFINER as weld_rules, which reads the tenant's components under row security.
create or replace function weld_private.tg_welds__component_p_numbers() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  side integer;
  component_id uuid;
  given text;
  said boolean;
  component record;
begin
  for side in 1 .. 2 loop
    component_id := case side when 1 then new.component_1_id else new.component_2_id end;
    continue when component_id is null;
    select c.tag, c.p_number into component
      from weld_public.components c
     where c.tenant_id = new.tenant_id and c.id = component_id;
    -- (No such component: the foreign key refuses the write.)
    continue when not found or component.p_number is null;
    given := case side when 1 then new.base_metal_1_p_number else new.base_metal_2_p_number end;
    -- What the write itself says: on an insert, a value; on an update, a change (null included).
    if tg_op = 'INSERT' then
      said := given is not null;
    elsif side = 1 then
      said := given is distinct from old.base_metal_1_p_number;
    else
      said := given is distinct from old.base_metal_2_p_number;
    end if;
    if said and given is distinct from component.p_number then
      perform weld_private.invalid_input(
        format('base metal %s is component %s, P-No. %s: a weld naming a component takes its P-number',
               side, component.tag, component.p_number),
        format('/baseMetal%sPNumber', side));
    end if;
    if side = 1 then
      new.base_metal_1_p_number := component.p_number;
    else
      new.base_metal_2_p_number := component.p_number;
    end if;
  end loop;
  return new;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _050_component_p_numbers
  before insert or update of component_1_id, component_2_id, base_metal_1_p_number, base_metal_2_p_number
  on weld_public.welds
  for each row execute function weld_private.tg_welds__component_p_numbers();
--! EndIncluded functions/weld_private.tg_welds__component_p_numbers.sql
--! Included functions/weld_hidden.check_weld_import.sql
create or replace function weld_hidden.check_weld_import(
  present text[], decimal_comma boolean, max_errors integer
) returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  -- Every join here pairs tens of thousands of rows, some of them just written: a nested loop,
  -- which an estimate off by a little picks, would take hours; hash joins take seconds.
  set enable_nestloop = off
  -- Its sorts and hashes of 100,000 rows stay in memory (4 MB spilled them to disk).
  set work_mem = '64MB'
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  answer json;
begin
  -- Imports of a tenant take turns from here to their commit: the second checks what the first
  -- wrote, instead of both checking the same state and the second undoing the first.
  perform weld_hidden.lock_weld_imports();
  truncate pg_temp.weld_import_plan, pg_temp.weld_import_errors;

  -- Each row, trimmed, with the ISO, weld, welder and WPS it names, and the weld as the import
  -- would leave it: a given value where the file has the column (parsed where valid; invalid ones
  -- are errors below), the weld's own where it does not. One pass: this runs on 100,000 rows.
  insert into pg_temp.weld_import_plan (
    line, iso_number, weld_number, line_number, type_text, size_text, schedule_text, wall_text,
    material, welder_stamp, wps_number, wps_revision, welded_on_text, base_metal_1_text,
    base_metal_2_text, version_text, seen_version, file_version,
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
           upper(nullif(btrim(r.base_metal_2), '')) as base_metal_2_text,
           nullif(btrim(r.version), '') as version_text
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
         x.version_text, (x.existing).version,
         case when x.version_text ~ '^[0-9]{1,9}$' then x.version_text::integer end,
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

  -- A weld side that names a component has the component's P-number: the file may give it as it
  -- is, not another one, nor clear it (weld_private.tg_welds__component_p_numbers).
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, s.field, s.given,
         format('weld %s of ISO %s names component %s here, P-No. %s: a weld naming a component takes its P-number',
                p.weld_number, p.iso_number, c.tag, c.p_number)
    from pg_temp.weld_import_plan p
    join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
    cross join lateral (values ('baseMetal1PNumber', w.component_1_id, p.base_metal_1_p_number, p.base_metal_1_text),
                               ('baseMetal2PNumber', w.component_2_id, p.base_metal_2_p_number, p.base_metal_2_text))
         as s (field, component_id, final, given)
    join weld_public.components c on c.tenant_id = tenant and c.id = s.component_id
   where p.action = 'update' and s.field = any(present) and c.p_number is not null
     and s.final is distinct from c.p_number;

  -- A file that carries versions (an export, edited) changes only the welds still at the version
  -- it was exported at: a weld changed since is a conflict, never silently overwritten. Rows the
  -- import leaves unchanged are not judged (importing the same file twice changes nothing).
  insert into pg_temp.weld_import_errors (line, "column", value, detail)
  select p.line, 'version', p.version_text,
         case when p.file_version is null
              then 'must be a whole number: the weld''s version, as the export wrote it (or empty)'
              else format('weld %s of ISO %s is at version %s, changed since this file''s version %s: '
                          'export it again, or empty this cell to overwrite',
                          p.weld_number, p.iso_number, p.seen_version, p.file_version) end
    from pg_temp.weld_import_plan p
   where 'version' = any(present) and p.version_text is not null
     and (p.file_version is null or (p.action = 'update' and p.file_version <> p.seen_version));

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

grant execute on function weld_hidden.check_weld_import(text[], boolean, integer) to weld_engineer;
--! EndIncluded functions/weld_hidden.check_weld_import.sql
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
  iso_ids uuid[] := '{}';
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
    when 'filler_lots' then
      -- A lot's F-number is what its welds' fillers are judged by: the ISOs of those welds.
      change := 'this change of a filler lot';
      iso_ids := array(select distinct w.iso_id
                         from new_rows n
                         join old_rows o on o.id = n.id
                         join weld_public.weld_fillers f on f.tenant_id = n.tenant_id and f.filler_lot_id = n.id
                         join weld_public.welds w on w.tenant_id = f.tenant_id and w.id = f.weld_id
                        where n.f_number is distinct from o.f_number);
    when 'pwht_records' then
      -- A record of the work, changed after the fact (a new record is a finding, and taken):
      -- the ISOs of the welds it covers.
      change := 'this change of a PWHT record';
      iso_ids := array(select distinct w.iso_id
                         from new_rows n
                         join weld_public.pwht_record_welds l
                           on l.tenant_id = n.tenant_id and l.pwht_record_id = n.id
                         join weld_public.welds w on w.tenant_id = l.tenant_id and w.id = l.weld_id);
    when 'pwht_record_welds', 'hardness_readings', 'weld_fillers' then
      change := case when tg_op = 'DELETE' then 'deleting ' else 'this change of ' end
                || case tg_table_name when 'pwht_record_welds' then 'a PWHT record''s welds'
                                      when 'hardness_readings' then 'a hardness reading'
                                      else 'a weld''s filler' end;
      if tg_op = 'DELETE' then
        iso_ids := array(select distinct w.iso_id
                           from old_rows o
                           join weld_public.welds w on w.tenant_id = o.tenant_id and w.id = o.weld_id);
      else
        iso_ids := array(select distinct w.iso_id
                           from (select n.tenant_id, n.weld_id from new_rows n
                                 union select o.tenant_id, o.weld_id from old_rows o) x
                           join weld_public.welds w on w.tenant_id = x.tenant_id and w.id = x.weld_id);
      end if;
  end case;
  if cardinality(lines) + cardinality(wps_ids) + cardinality(welder_ids) + cardinality(iso_ids) = 0 then
    return null;
  end if;
  perform weld_private.hold_released_packages(
    weld_private.packages_judged_on(lines, wps_ids, welder_ids)
    || array(select p.id
               from weld_public.test_packages p
              where p.tenant_id = weld_hidden.current_tenant_id() and p.state <> 'open'
                and p.id = any(weld_private.packages_reading('{}', iso_ids, '{}', '{}'))),
    change);
  if tg_table_name in ('wps', 'wps_pqrs', 'pqrs', 'welder_qualifications') then
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
create or replace trigger _700_judged_on_update after update on weld_public.filler_lots
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.pwht_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_delete after delete on weld_public.pwht_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.hardness_readings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_delete after delete on weld_public.hardness_readings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_update after update on weld_public.weld_fillers
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__judged_on();
create or replace trigger _700_judged_on_delete after delete on weld_public.weld_fillers
  referencing old table as old_rows
  for each statement execute function weld_private.tg__judged_on();
--! EndIncluded functions/weld_private.tg__judged_on.sql
--! Included functions/weld_private.tg_welds__package_open.sql
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
             n.base_metal_2_p_number, n.component_1_id, n.component_2_id, n.preheat_f
        from new_rows n
    ), data_before as (
      select o.id, o.iso_id, o.weld_number, o.type, o.size, o.schedule, o.wall_thickness,
             o.material, o.welder_id, o.wps_id, o.welded_on, o.base_metal_1_p_number,
             o.base_metal_2_p_number, o.component_1_id, o.component_2_id, o.preheat_f
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

create or replace trigger _100_package_open_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__package_open();
create or replace trigger _100_package_open_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg_welds__package_open();
--! EndIncluded functions/weld_private.tg_welds__package_open.sql
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
create or replace trigger _600_lock_packages_insert after insert on weld_public.pwht_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__lock_packages();
--! EndIncluded functions/weld_private.tg__lock_packages.sql
