--! Previous: sha1:2301c7879d8c4d8d9b91a5ae4724816744cf8881
--! Hash: sha1:b38129a10369a2d9f512b30d10a4413a5043a881
--! Message: integrity and resource control: import turns, definers, webhook pause and sealed secrets, fair lanes, typed event wakeups

-- F14: integrity and resource control.
--
--   1. The weld register import: one consistent unit. Imports of a tenant take turns; a file's
--      `version` column is checked; a weld changed between the check and the write is a conflict
--      (WD014), never silently overwritten.
--   2. Definer functions: the import's own move from the owner (BYPASSRLS) to weld_rules where
--      weld_rules may create temporary tables (bootstrap.sql grants it); advisory locks are taken
--      through functions that derive the tenant themselves.

-- weld_rules creates its functions here, and keeps no CREATE right after (see 000006).
grant create on schema weld_public, weld_hidden, weld_private to weld_rules;

--------------------------------------------------------------------------------------------------
-- 1. The weld register import.

set role weld_rules;

-- The import's turn: one per tenant, held to the commit.
create or replace function weld_hidden.lock_weld_imports() returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(
    weld_hidden.current_tenant_id()::text || '/weld-import', 0))
$$;
grant execute on function weld_hidden.lock_weld_imports() to weld_engineer;

-- A webhook registration's turn (rest-adapter/webhooks.ts counts a tenant's endpoints under it).
create or replace function weld_hidden.lock_webhook_registrations() returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('weld_hidden.webhooks'),
                                          pg_catalog.hashtext(weld_hidden.current_tenant_id()::text))
$$;
grant execute on function weld_hidden.lock_webhook_registrations() to weld_admin;

reset role;

-- The owner writes them, and section 2 hands them to weld_rules. Run again (graphile-migrate
-- watch), they are weld_rules' already: dropped as weld_rules first, and written anew.
do $$
begin
  if pg_catalog.pg_get_userbyid((select p.proowner from pg_catalog.pg_proc p
                                  where p.oid = 'weld_hidden.begin_weld_import()'::regprocedure))
     = 'weld_rules' then
    execute 'set role weld_rules';
    drop function weld_hidden.begin_weld_import(), weld_hidden.analyze_weld_import(),
                  weld_hidden.emit_weld_import_events();
    execute 'reset role';
  end if;
end
$$;

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
    base_metal_2   text not null,
    version        text not null
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
    version_text     text,
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
    -- The version the check read (the apply writes only over that one), and the file's own
    seen_version     integer,
    file_version     integer,
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

create or replace function weld_hidden.analyze_weld_import() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  analyze pg_temp.weld_import_plan;
end
$$;

create or replace function weld_hidden.emit_weld_import_events() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  first_id bigint;
begin
  create temporary table if not exists weld_bulk_evented () on commit drop;
  perform pg_advisory_xact_lock(hashtext('weld_public.events'), hashtext(tenant::text));
  with written as (
    select 'iso.created' as type, i.id as subject, weld_private.contract_json(to_jsonb(i)) as data,
           0 as kind_order, p.line
      from (select distinct on (q.iso_id) q.iso_id, q.line
              from pg_temp.weld_import_plan q
             where q.new_iso_line is not null
             order by q.iso_id, q.line) p
      join weld_public.isos i on i.tenant_id = tenant and i.id = p.iso_id
    union all
    select case p.action when 'create' then 'weld.created' else 'weld.updated' end, w.id,
           weld_private.weld_json(w), 1, p.line
      from pg_temp.weld_import_plan p
      join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
     where p.action in ('create', 'update')
  ), inserted as (
    insert into weld_public.events (tenant_id, type, subject_id, actor_id, data)
    select tenant, x.type, x.subject, weld_hidden.current_user_id(), x.data
      from written x
     order by x.kind_order, x.line
    returning id
  )
  select min(id) into first_id from inserted;
  if first_id is not null then
    if coalesce(current_setting('weld.first_event_id', true), '') = '' then
      perform set_config('weld.first_event_id', first_id::text, true);
    end if;
    -- Each type it wrote (it holds the tenant's event lock: the events from first_id are its own).
    perform pg_notify('weld_events', tenant::text || ' ' || t.type)
       from (select distinct e.type from weld_public.events e
              where e.tenant_id = tenant and e.id >= first_id) t;
  end if;
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

create or replace function weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set enable_nestloop = off -- as check_weld_import; the plan's statistics predate its new ids
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  done weld_hidden.imports;
  conflicts jsonb;
  conflict_count integer;
begin
  if exists (select from pg_temp.weld_import_errors) then
    raise exception 'the import has errors' using errcode = 'WD007';
  end if;

  -- The welds it updates, locked in id order, as they are now. One whose version moved since the
  -- check (a PATCH in between) would get the values the check computed from the old one: a
  -- conflict, named by line, and nothing is written (WD014). Locked, none moves until the commit.
  perform from pg_temp.weld_import_plan p
    join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
   where p.action = 'update'
   order by w.id
     for update of w;
  -- (A statement of its own: the locks are all taken, and this one reads what they hold.)
  select count(*)::integer,
         jsonb_agg(x.error order by x.line) filter (where x.n <= 200)
    into conflict_count, conflicts
    from (select p.line, row_number() over (order by p.line) as n,
                 jsonb_build_object(
                   'line', p.line, 'column', null, 'value', null,
                   'detail', format('weld %s of ISO %s changed while the file was checked '
                                    '(version %s, now %s): upload the file again',
                                    p.weld_number, p.iso_number, p.seen_version, w.version)) as error
            from pg_temp.weld_import_plan p
            join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
           where p.action = 'update' and w.version <> p.seen_version) x;
  if conflict_count > 0 then
    raise exception '% weld% of the file changed while it was checked', conflict_count,
      case when conflict_count = 1 then '' else 's' end
      using errcode = 'WD014',
            detail = jsonb_build_object('errors', conflicts, 'errorCount', conflict_count)::text;
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

--------------------------------------------------------------------------------------------------
-- 2. The import's definer functions run as weld_rules (NOBYPASSRLS), not as the owner, where
-- weld_rules may create temporary tables: migrations/bootstrap.sql grants it TEMP, and runs at
-- every start where the service owns the database. Elsewhere (a DBA's database, bootstrapped once)
-- they stay the owner's until a superuser runs bootstrap.sql again and a later migration moves
-- them; they read no table either way (the events join welds of the current tenant only).

grant select, insert on weld_public.events to weld_rules; -- select: the insert returns its ids
grant select on weld_public.welds, weld_public.isos to weld_rules;
grant execute on function weld_private.contract_json(jsonb), weld_private.weld_json(weld_public.welds)
  to weld_rules;

grant execute on function weld_hidden.begin_weld_import(), weld_hidden.analyze_weld_import(),
                          weld_hidden.emit_weld_import_events()
  to weld_engineer;

do $$
begin
  if pg_catalog.has_database_privilege('weld_rules', pg_catalog.current_database(), 'TEMP') then
    alter function weld_hidden.begin_weld_import() owner to weld_rules;
    alter function weld_hidden.analyze_weld_import() owner to weld_rules;
    alter function weld_hidden.emit_weld_import_events() owner to weld_rules;
  else
    raise notice 'weld_rules may not create temporary tables here: the import''s functions stay '
                 'the owner''s. To move them: run migrations/bootstrap.sql as a superuser, then as the '
                 'owner alter function weld_hidden.begin_weld_import(), analyze_weld_import() and '
                 'emit_weld_import_events() owner to weld_rules';
  end if;
end
$$;

--------------------------------------------------------------------------------------------------
-- 3. Events. A commit wakes only the readers of the types it wrote: the NOTIFY says the type
-- ("<tenant> <type>", once per type per transaction). A reader of one rare type reads by an
-- index of its own instead of the whole feed.

create or replace function weld_private.emit_event(
  tenant uuid, event_type text, subject uuid, data jsonb, change jsonb
) returns boolean
  language plpgsql volatile
as $$
declare
  new_id bigint;
begin
  perform pg_advisory_xact_lock(hashtext('weld_public.events'), hashtext(tenant::text));
  if exists (select from weld_private.transaction_event(tenant, split_part(event_type, '.', 1), subject)) then
    return false;
  end if;
  insert into weld_public.events (tenant_id, type, subject_id, actor_id, data, change)
  values (tenant, event_type, subject, weld_hidden.current_user_id(), data, change)
  returning id into new_id;
  if current_setting('weld.first_event_id', true) is null
     or current_setting('weld.first_event_id', true) = '' then
    perform set_config('weld.first_event_id', new_id::text, true);
  end if;
  -- The type too: readers of other types sleep on (db/event-notifications.ts).
  perform pg_notify('weld_events', tenant::text || ' ' || event_type);
  return true;
end
$$;

create index if not exists events_type_idx on weld_public.events (tenant_id, type, id);

--------------------------------------------------------------------------------------------------


-- F14 webhooks: integrity and resource control for webhook endpoints (issue F14, findings 3-5).
--
--   1. The receiver's answer is not kept (SSRF): webhook_deliveries loses `response`, and
--      finish_webhook_delivery its `answer` argument. The service keeps and shows a receiver's
--      status and timing only, never its body.
--   2. An endpoint pauses when its author is deactivated or stops being an admin: paused_at and
--      paused_reason, set at commit by a trigger on users (whatever path changed the user:
--      weld-admin, GraphQL, SQL), announced as a `webhook.paused` event. A paused endpoint gets
--      nothing; its events wait (its position stays) until an admin resumes it, who becomes its
--      author.
--   3. Secrets sealed at rest: secret_key_id and secret_sealed (AES-256-GCM, sealed and opened by
--      the server: db/webhook-secrets.ts; a migration never sees the key). `secret` keeps only
--      what is still in plain text until the next server start seals it; secret_set_at moves when
--      an admin sets a new secret (the ETag follows it, not a re-sealing under another key).
--   4. Fair between tenants: claim_webhook_deliveries claims one endpoint per call and takes
--      `per_tenant`, the most endpoints of one tenant an instance delivers to at once, serving the
--      tenant with the fewest deliveries in flight first, so one tenant's slow receivers cannot
--      hold every lane. Paused endpoints are not claimed.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

--------------------------------------------------------------------------------------------------
-- 1. No receiver's answer in the delivery log

drop function if exists weld_hidden.finish_webhook_delivery(uuid, uuid, text, bigint, integer,
  integer, text, text, integer, integer);
alter table weld_hidden.webhook_deliveries drop column if exists response;

-- Records one attempt and moves the endpoint on: past the event on a 2xx answer; otherwise to
-- its next attempt after `retry_after_ms`, or disabled once it has failed for `give_up_seconds`.
-- Only the instance holding the lease may finish (returns false otherwise: the lease ran out and
-- another instance may have the endpoint now).
create or replace function weld_hidden.finish_webhook_delivery(
  tenant uuid, webhook uuid, instance text, delivered_event_id bigint, answer_status integer,
  took_ms integer, failure text, retry_after_ms integer, give_up_seconds integer
) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  endpoint weld_hidden.webhooks;
  ok boolean := answer_status between 200 and 299;
begin
  select * into endpoint from weld_hidden.webhooks w
   where w.tenant_id = tenant and w.id = webhook and w.leased_by = instance
     and w.lease_until >= now()
     for update;
  if not found then
    return false;
  end if;
  insert into weld_hidden.webhook_deliveries
    (tenant_id, webhook_id, message_id, event_id, event_type, attempt, status, error, duration_ms)
  select tenant, webhook, e.id::text, e.id, e.type, endpoint.attempt + 1, answer_status,
         left(failure, 1000), took_ms
    from weld_public.events e where e.tenant_id = tenant and e.id = delivered_event_id;
  if ok then
    update weld_hidden.webhooks w
       set last_event_id = delivered_event_id, attempt = 0, failing_since = null,
           next_attempt_at = now(), lease_until = null, leased_by = null
     where w.tenant_id = tenant and w.id = webhook;
  elsif coalesce(endpoint.failing_since, now()) < now() - make_interval(secs => give_up_seconds) then
    update weld_hidden.webhooks w
       set active = false, attempt = endpoint.attempt + 1, lease_until = null, leased_by = null,
           disabled_reason = format('failing since %s; the last attempt: %s',
             to_char(endpoint.failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             coalesce('HTTP ' || answer_status, failure, 'no answer'))
     where w.tenant_id = tenant and w.id = webhook;
  else
    update weld_hidden.webhooks w
       set attempt = endpoint.attempt + 1, failing_since = coalesce(endpoint.failing_since, now()),
           next_attempt_at = now() + make_interval(secs => retry_after_ms / 1000.0),
           lease_until = null, leased_by = null
     where w.tenant_id = tenant and w.id = webhook;
  end if;
  return true;
end
$$;
grant execute on function weld_hidden.finish_webhook_delivery(uuid, uuid, text, bigint, integer,
  integer, text, integer, integer) to weld_authenticator;

--------------------------------------------------------------------------------------------------
-- 2. Pausing with the author

alter table weld_hidden.webhooks add column if not exists paused_at timestamptz;
alter table weld_hidden.webhooks add column if not exists paused_reason text;
alter table weld_hidden.webhooks drop constraint if exists webhooks_paused_reason;
alter table weld_hidden.webhooks add constraint webhooks_paused_reason
  check ((paused_at is null) = (paused_reason is null) and char_length(paused_reason) <= 500);

-- An admin resumes an endpoint by clearing both (REST: PATCH active=true).
grant update (paused_at, paused_reason) on weld_hidden.webhooks to weld_admin;

-- A new endpoint starts at the tenant's newest event: it receives what happens from now on.
-- Re-activating one clears its failure and tries again at once, from where it stopped. Resuming a
-- paused one makes the resuming user its author: an endpoint always has an author who may manage
-- it, and pauses again when that one goes.
create or replace function weld_private.tg_webhooks__position() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    new.last_event_id := coalesce(
      (select max(e.id) from weld_public.events e where e.tenant_id = new.tenant_id), 0);
    return new;
  end if;
  if new.active and not old.active then
    new.disabled_reason := null;
    new.failing_since := null;
    new.attempt := 0;
    new.next_attempt_at := now();
  end if;
  if old.paused_at is not null and new.paused_at is null then
    new.created_by := coalesce(weld_hidden.current_user_id(), new.created_by);
    new.next_attempt_at := least(new.next_attempt_at, now());
  end if;
  return new;
end
$$;

-- Pauses every endpoint `author_id` authored that is not paused yet, unless the author is an
-- active admin, and announces each with a `webhook.paused` event. Its data leaves the URL out:
-- every role of the tenant reads the feed, and only admins see endpoints. A delivery already
-- under way when the pause commits completes; nothing further is sent. Returns how many paused.
create or replace function weld_private.pause_webhooks_of(tenant uuid, author_id uuid)
  returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  author weld_public.users;
  endpoint record;
  paused integer := 0;
begin
  select * into author from weld_public.users u where u.tenant_id = tenant and u.id = author_id;
  if not found or (author.active and author.role = 'admin') then
    return 0;
  end if;
  for endpoint in
    update weld_hidden.webhooks w
       set paused_at = now(),
           paused_reason = format('its author %s %s', author.user_name,
             case when author.active then 'is no longer an admin' else 'was deactivated' end)
     where w.tenant_id = tenant and w.created_by = author_id and w.paused_at is null
    returning w.id, w.paused_at, w.paused_reason, w.created_by
  loop
    paused := paused + 1;
    if not weld_private.events_suppressed() then
      perform weld_private.emit_event(tenant, 'webhook.paused', endpoint.id,
        jsonb_build_object(
          'id', endpoint.id,
          'pausedAt', to_char(endpoint.paused_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'pausedReason', endpoint.paused_reason,
          'createdBy', endpoint.created_by),
        null);
    end if;
  end loop;
  return paused;
end
$$;

-- At commit, for a user who was deactivated or stopped being an admin in the transaction: if
-- they still are so at its end (not enabled again before commit), their endpoints pause.
create or replace function weld_private.tg_users__pause_webhooks() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.pause_webhooks_of(new.tenant_id, new.id);
  return null;
end
$$;
drop trigger if exists _600_pause_webhooks on weld_public.users;
create constraint trigger _600_pause_webhooks after update of active, role on weld_public.users
  deferrable initially deferred
  for each row when ((old.active and not new.active) or (old.role = 'admin' and new.role <> 'admin'))
  execute function weld_private.tg_users__pause_webhooks();

-- Endpoints whose author was deactivated or demoted before this migration pause now.
select weld_private.pause_webhooks_of(w.tenant_id, w.created_by)
  from (select distinct tenant_id, created_by from weld_hidden.webhooks
         where created_by is not null and paused_at is null) w;

--------------------------------------------------------------------------------------------------
-- 3. Secrets sealed at rest

alter table weld_hidden.webhooks add column if not exists secret_key_id text;
alter table weld_hidden.webhooks add column if not exists secret_sealed bytea;
alter table weld_hidden.webhooks add column if not exists secret_set_at timestamptz not null default now();
alter table weld_hidden.webhooks alter column secret drop not null;
-- One secret, stored one way: plain (until sealed) or sealed with the id of its key.
alter table weld_hidden.webhooks drop constraint if exists webhooks_secret_stored;
alter table weld_hidden.webhooks add constraint webhooks_secret_stored check (
  (secret is null) <> (secret_sealed is null)
  and (secret_sealed is null) = (secret_key_id is null)
  and secret_key_id ~ '^[A-Za-z0-9_-]{1,64}$'
  and octet_length(secret_sealed) between 29 and 1000);

-- The REST create chooses the id (the sealed secret is bound to it) and writes the sealed secret;
-- a rotation writes a new one and clears a plain one. (`secret` keeps its grants: an instance of
-- the previous version writes plain secrets until it is replaced; the next start seals them.)
grant insert (id, secret_key_id, secret_sealed) on weld_hidden.webhooks to weld_admin;
grant update (secret_key_id, secret_sealed, secret_set_at) on weld_hidden.webhooks to weld_admin;

-- Its version (the ETag) and updated_at follow what an admin sees and sets, not the worker's
-- bookkeeping, so an If-Match taken a minute ago still holds while deliveries go on. A new secret
-- counts (secret_set_at), the same secret sealed again under another key does not; a pause is
-- something an admin sees: it moves the version, so a change based on the state before it is 412.
create or replace function weld_private.tg_webhooks__touch() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if (new.url, new.event_types, new.description, new.active, new.secret_set_at,
      new.disabled_reason, new.paused_at, new.paused_reason)
     is distinct from
     (old.url, old.event_types, old.description, old.active, old.secret_set_at,
      old.disabled_reason, old.paused_at, old.paused_reason) then
    new.version := old.version + 1;
    new.updated_at := now();
  end if;
  return new;
end
$$;

--------------------------------------------------------------------------------------------------
-- 4. Fair claiming (the last section: the claim reads the columns of the others)

drop function if exists weld_hidden.claim_webhook_deliveries(text, integer, integer);

-- The worker (the authenticator, across tenants) claims one endpoint that is due and has an event
-- to deliver, with that next event and its stored secret, leasing it for `lease_seconds` (a lane
-- of the worker calls it whenever it is free, and opens the secret: db/webhook-secrets.ts): an
-- endpoint is worked on by one instance at a time, so its events go out one by one in order.
-- Paused endpoints are not claimed.
-- Fairness: a tenant whose endpoints this instance already delivers to `per_tenant` at once gets
-- no more here until one is finished, and among the rest the tenant with the fewest deliveries in
-- flight on this instance comes first (then the endpoint due longest). So a tenant with many slow
-- receivers holds at most `per_tenant` of the instance's lanes, and a newly due endpoint of
-- another tenant is taken by the next free lane. (The count is this instance's: the worker claims
-- one call at a time, so it is exact; each instance keeps its own bound.)
-- A lease outlives any delivery attempt (whose timeout is far shorter); one left by a crashed
-- instance expires and the endpoint is claimed again.
create or replace function weld_hidden.claim_webhook_deliveries(
  instance text, lease_seconds integer, per_tenant integer
) returns table (
  tenant_id uuid, webhook_id uuid, url text, secret text, secret_key_id text,
  secret_sealed bytea, attempt integer, event_id bigint, event_type text, subject_id uuid,
  actor_id uuid, occurred_at timestamptz, data jsonb, change jsonb
)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with in_flight as (
    select w.tenant_id, count(*) as n
      from weld_hidden.webhooks w
     where w.leased_by = instance and w.lease_until >= now()
     group by w.tenant_id
  ), due as (
    select w.tenant_id, w.id, e.id as event_id
      from weld_hidden.webhooks w
      left join in_flight f on f.tenant_id = w.tenant_id
      cross join lateral (
        select e.id from weld_public.events e
         where e.tenant_id = w.tenant_id and e.id > w.last_event_id
           and (cardinality(w.event_types) = 0 or e.type = any(w.event_types))
         order by e.id
         limit 1) e
     where w.active and w.next_attempt_at <= now()
       and w.paused_at is null
       and (w.lease_until is null or w.lease_until < now())
       and coalesce(f.n, 0) < per_tenant
     order by coalesce(f.n, 0), w.next_attempt_at
     limit 1
       for update of w skip locked
  ), leased as (
    update weld_hidden.webhooks w
       set lease_until = now() + make_interval(secs => lease_seconds), leased_by = instance
      from due
     where w.tenant_id = due.tenant_id and w.id = due.id
    returning w.tenant_id, w.id, w.url, w.secret, w.secret_key_id, w.secret_sealed, w.attempt,
              due.event_id
  )
  select l.tenant_id, l.id, l.url, l.secret, l.secret_key_id, l.secret_sealed, l.attempt,
         e.id, e.type, e.subject_id, e.actor_id, e.occurred_at, e.data, e.change
    from leased l
    join weld_public.events e on e.tenant_id = l.tenant_id and e.id = l.event_id
$$;
grant execute on function weld_hidden.claim_webhook_deliveries(text, integer, integer)
  to weld_authenticator;

--------------------------------------------------------------------------------------------------
-- F14 GraphQL: a row written under a savepoint is still this transaction's.
--
-- GraphQL now runs every unit of a request as a savepoint of one transaction
-- (server/graphql-request.ts). A row written under a savepoint carries the subtransaction's id as
-- its xmin, never pg_current_xact_id(), so "was this record created in this transaction?" (links
-- made as a record is created are not logged as changes of it) answered no, and a record created
-- over GraphQL logged its own welds as added afterwards.
--
-- Subtransaction ids are handed out after their transaction's own, so an xmin of ours lies after
-- our id, less than 2^31 ahead of it (xids compare modulo 2^32), and widening it to 64 bits is our
-- id plus that distance. An xmin before ours is another transaction's. Of the ids after ours,
-- pg_xact_status() says 'in progress' of running transactions only, and of those a row is visible
-- solely to the one that wrote it. Both are weld_rules' (000006).
set role weld_rules;

create or replace function weld_private.written_by_this_transaction(row_xmin xid)
  returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case
           when ours.top is null then false  -- this transaction has written nothing
           when ours.ahead >= 2147483648 then false  -- before our id: another transaction's
           else pg_xact_status((ours.top + ours.ahead)::text::xid8) = 'in progress'
         end
    from (select top, (row_xmin::text::bigint - (top & 4294967295) + 4294967296) % 4294967296 as ahead
            from (select pg_current_xact_id_if_assigned()::text::bigint as top) assigned) ours
$$;

create or replace function weld_private.examination_created_in_this_transaction(
  subject text, tenant uuid, record_id uuid
) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case examination_created_in_this_transaction.subject
    when 'ndt_record' then exists (
      select from weld_public.ndt_records r
       where r.tenant_id = tenant and r.id = record_id
         -- now() first: a row of another day may be old enough to be frozen
         and case when r.created_at = now()
                  then weld_private.written_by_this_transaction(r.xmin) else false end)
    when 'inspection' then exists (
      select from weld_public.inspections r
       where r.tenant_id = tenant and r.id = record_id
         -- now() first: a row of another day may be old enough to be frozen
         and case when r.created_at = now()
                  then weld_private.written_by_this_transaction(r.xmin) else false end)
  end
$$;

reset role;

--------------------------------------------------------------------------------------------------
-- F14 GraphQL: the tenant's id never appears in GraphQL (README, "GraphQL for analysts").
--
-- Node ids leave tenant_id out (server/graphql.ts, TenantlessNodeIdPlugin). The tenants table
-- itself would still show it: allTenants { rowId }, and tenantByTenantId { rowId } on every tenant
-- table. The session implies the tenant, so GraphQL shows no tenants table at all, and with it go
-- the relations to it (tenantByTenantId, and Tenant's weldsByTenantId ... which read a whole
-- table). REST's /tenants routes are untouched. Idempotent: a comment replaces the one before.
comment on table weld_public.tenants is
  E'@behavior -*\nA customer of the service: one project owner, served from its own origins.';

--------------------------------------------------------------------------------------------------
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
