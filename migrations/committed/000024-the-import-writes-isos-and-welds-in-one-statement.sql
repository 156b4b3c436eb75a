--! Previous: sha1:9deb12a3f92db3bc56dc7ba565bdf69531e88c40
--! Hash: sha1:5eca148066a4f17c87a27d33d56224e8ad003677
--! Message: The import writes ISOs and welds in one statement

-- Speed, round two: an import of 100,000 new welds.
-- - The import writes its ISOs and welds in one statement and keeps what each line created in a
--   narrow table, instead of writing the new ids back into its 100,000-row plan twice.
-- - Its sorts and hashes get the memory (work_mem 64MB, for these functions) to stay off disk.
-- - Its plan is ANALYZEd from a sample of 3,000 rows, not 30,000.
-- - It marks its transaction before writing, and the outbox triggers of welds and ISOs do not
--   even queue a change of a marked transaction (100,000 deferred calls at its commit).
--! Included functions/weld_hidden.begin_weld_import.sql
-- Owned by weld_rules where it may create temporary tables (migration 000018 moved it there),
-- by the owner elsewhere: it is written as its owner.
grant create on schema weld_hidden to weld_rules;
do $$
begin
  if pg_catalog.pg_get_userbyid((select p.proowner from pg_catalog.pg_proc p
                                  where p.oid = 'weld_hidden.begin_weld_import()'::regprocedure))
     = 'weld_rules' then
    execute 'set role weld_rules';
  end if;
end
$$;

create or replace function weld_hidden.begin_weld_import() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.require_role('engineer', 'importing welds');
  -- The import writes the events of its changes itself (emit_weld_import_events), in one
  -- statement: this marks the transaction, so the outbox triggers neither queue nor write them.
  create temporary table if not exists weld_bulk_evented () on commit drop;
  drop table if exists pg_temp.weld_import_rows, pg_temp.weld_import_plan,
    pg_temp.weld_import_errors, pg_temp.weld_import_created;
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
  -- What each line of the plan created (apply_weld_import), for the events.
  create temporary table weld_import_created (
    line       integer primary key,
    weld_id    uuid not null,
    new_iso_id uuid  -- the ISO the import created for it, if it did
  ) on commit drop;
  grant select, insert, update, delete, truncate
    on pg_temp.weld_import_rows, pg_temp.weld_import_plan, pg_temp.weld_import_errors,
       pg_temp.weld_import_created
    to weld_engineer;
end
$$;

grant execute on function weld_hidden.begin_weld_import() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.begin_weld_import.sql
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
--! Included functions/weld_hidden.apply_weld_import.sql
create or replace function weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set enable_nestloop = off -- as check_weld_import; the plan's statistics predate its new ids
  set work_mem = '64MB' -- its sorts and hashes of 100,000 rows stay in memory
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

  -- The welds it changes first: the statement below reads them back for their events.
  update weld_public.welds w
     set type = p.type, size = p.size, schedule = p.schedule, wall_thickness = p.wall_thickness,
         material = p.material, welder_id = p.welder_id, wps_id = p.wps_id, welded_on = p.welded_on,
         base_metal_1_p_number = p.base_metal_1_p_number,
         base_metal_2_p_number = p.base_metal_2_p_number
    from pg_temp.weld_import_plan p
   where p.action = 'update' and w.tenant_id = tenant and w.id = p.weld_id;

  -- The ISOs and welds it creates, in one statement, keeping what each line created (for the
  -- events) in a narrow table: writing the new ids back into the plan rewrote 100,000 wide rows.
  -- (The welds' foreign keys and statement triggers run at its end, and see the new ISOs.)
  with new_isos as (
    insert into weld_public.isos (iso_number, line_number)
    select distinct on (p.iso_number) p.iso_number, p.new_iso_line
      from pg_temp.weld_import_plan p
     where p.iso_id is null
     order by p.iso_number, p.line
    returning id, iso_number
  ), line_iso as (
    select p.line, p.weld_number, coalesce(p.iso_id, i.id) as iso_id, i.id as new_iso_id
      from pg_temp.weld_import_plan p
      left join new_isos i on p.iso_id is null and i.iso_number = p.iso_number
     where p.action = 'create'
  ), new_welds as (
    insert into weld_public.welds (iso_id, weld_number, type, size, schedule, wall_thickness,
                                   material, welder_id, wps_id, welded_on, base_metal_1_p_number,
                                   base_metal_2_p_number)
    select l.iso_id, p.weld_number, p.type, p.size, p.schedule, p.wall_thickness, p.material,
           p.welder_id, p.wps_id, p.welded_on, p.base_metal_1_p_number, p.base_metal_2_p_number
      from line_iso l
      join pg_temp.weld_import_plan p on p.line = l.line
    returning id, iso_id, weld_number
  )
  insert into pg_temp.weld_import_created (line, weld_id, new_iso_id)
  select l.line, w.id, l.new_iso_id
    from line_iso l
    join new_welds w on w.iso_id = l.iso_id and w.weld_number = l.weld_number;

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

grant execute on function weld_hidden.apply_weld_import(text, bigint) to weld_engineer;
--! EndIncluded functions/weld_hidden.apply_weld_import.sql
--! Included functions/weld_hidden.emit_weld_import_events.sql
-- Owned by weld_rules where it may create temporary tables (migration 000018 moved it there),
-- by the owner elsewhere: it is written as its owner.
grant create on schema weld_hidden to weld_rules;
do $$
begin
  if pg_catalog.pg_get_userbyid((select p.proowner from pg_catalog.pg_proc p
                                  where p.oid = 'weld_hidden.emit_weld_import_events()'::regprocedure))
     = 'weld_rules' then
    execute 'set role weld_rules';
  end if;
end
$$;

create or replace function weld_hidden.emit_weld_import_events() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  set work_mem = '64MB' -- the sort of 100,000 events stays in memory
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
begin
  -- (begin_weld_import marked the transaction: the outbox triggers leave its changes to this.)
  -- In line order, ISOs first: the relay moves them to weld_public.events in this order, and wakes
  -- the readers.
  insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data)
  select tenant, x.type, x.subject, weld_hidden.current_user_id(), x.data
    from (select 'iso.created' as type, i.id as subject,
                 weld_private.contract_json(to_jsonb(i)) as data, 0 as kind_order, c.line
            from (select distinct on (c.new_iso_id) c.new_iso_id, c.line
                    from pg_temp.weld_import_created c
                   where c.new_iso_id is not null
                   order by c.new_iso_id, c.line) c
            join weld_public.isos i on i.tenant_id = tenant and i.id = c.new_iso_id
          union all
          select 'weld.created', w.id, weld_private.weld_json(w), 1, c.line
            from pg_temp.weld_import_created c
            join weld_public.welds w on w.tenant_id = tenant and w.id = c.weld_id
          union all
          select 'weld.updated', w.id, weld_private.weld_json(w), 1, p.line
            from pg_temp.weld_import_plan p
            join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
           where p.action = 'update') x
   order by x.kind_order, x.line;
end
$$;

grant execute on function weld_hidden.emit_weld_import_events() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.emit_weld_import_events.sql
--! Included functions/weld_hidden.analyze_weld_import.sql
-- Owned by weld_rules where it may create temporary tables (migration 000018 moved it there),
-- by the owner elsewhere: it is written as its owner.
grant create on schema weld_hidden to weld_rules;
do $$
begin
  if pg_catalog.pg_get_userbyid((select p.proowner from pg_catalog.pg_proc p
                                  where p.oid = 'weld_hidden.analyze_weld_import()'::regprocedure))
     = 'weld_rules' then
    execute 'set role weld_rules';
  end if;
end
$$;

create or replace function weld_hidden.analyze_weld_import() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- A sample of 3,000 rows tells what the plans need (how many of each action, how many ISOs);
  -- the default 30,000 took a third of a second on a 100,000-row plan.
  set default_statistics_target = 10
as $$
begin
  analyze pg_temp.weld_import_plan;
end
$$;

grant execute on function weld_hidden.analyze_weld_import() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.analyze_weld_import.sql
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
    -- A whole tenant being deleted announces nothing (and its events go with it).
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
--! EndIncluded functions/weld_private.tg__outbox.sql
