--! Previous: sha1:f1143f57d7c7de5f43511578e5f4c1e959d5e57d
--! Hash: sha1:6dd70ce8e5aa88229ed1a26fd584212458918204
--! Message: Weld register import: COPY, set-based checks by line, statement-level weld guards

-- The weld register import (POST /imports/welds, weld-admin import welds): a CSV file of welds,
-- upserted by (isoNumber, weldNumber), all or nothing, with every bad line named.
--
-- The server (db/weld-register.ts) parses the CSV and COPYs its rows, as text, into a temporary
-- table; everything else is the SQL below, run as the caller (row security and grants apply):
--
--   begin_weld_import()          the session's work tables (temporary, gone at commit)
--   check_weld_import(...)       every row validated and classified: create, update, unchanged;
--                                the errors by line and column; the counts
--   apply_weld_import(...)       ISOs created, welds inserted and updated, the events, the record
--
-- Two guards of weld writes become statement-level here so that a write of thousands of rows
-- costs one check, not one per row: a weld of a test package that is not open keeps its data
-- (WD008, 000011) and the refuse mode of the code checks (WD010, 000009). Both still hold every
-- request's write, an import's included; an import checks the same rules first to name the lines.

--------------------------------------------------------------------------------------------------
-- 1. The weld guards, once per statement

-- WD008: a request that writes a weld's data (not its status) while the weld belongs to a package
-- that is not open, directly or through its ISO, before or after the change. The packages are
-- locked FOR NO KEY UPDATE in id order, as before, so a release and a weld change queue.
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
             n.material, n.welder_id, n.wps_id, n.welded_on
        from new_rows n
    ), data_before as (
      select o.id, o.iso_id, o.weld_number, o.type, o.size, o.schedule, o.wall_thickness,
             o.material, o.welder_id, o.wps_id, o.welded_on
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

drop trigger if exists _100_package_open on weld_public.welds;
drop trigger if exists _100_package_open_insert on weld_public.welds;
drop trigger if exists _100_package_open_update on weld_public.welds;
create trigger _100_package_open_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__package_open();
create trigger _100_package_open_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg_welds__package_open();

grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD010, the tenant's weld_checks = 'refuse': a request's write of welds that leaves one with a
-- problem other than DATA_MISSING is refused, naming the first (by weld number) and its problems.
-- Only writes of what the checks read; a status change never is.
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
                      from (select n.id, n.type, n.size, n.wall_thickness, n.welder_id, n.wps_id, n.welded_on
                              from new_rows n
                            except
                            select o.id, o.type, o.size, o.wall_thickness, o.welder_id, o.wps_id, o.welded_on
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
   where p.code <> 'DATA_MISSING'
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
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;

drop trigger if exists _200_code_checks on weld_public.welds;
drop trigger if exists _200_code_checks_insert on weld_public.welds;
drop trigger if exists _200_code_checks_update on weld_public.welds;
create trigger _200_code_checks_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__code_checks();
create trigger _200_code_checks_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg_welds__code_checks();

-- The code problems of welds an import would write, for its error list (the import runs as the
-- caller, who may not read weld_private). Only in refuse mode: in show mode nothing is refused.
create or replace function weld_hidden.weld_import_code_problems(welds weld_public.welds[])
  returns table (weld_id uuid, code text, detail text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select p.weld_id, p.code, p.detail
    from weld_private.weld_problems(welds, true) p
   where p.code <> 'DATA_MISSING'
     and coalesce((select s.weld_checks from weld_public.tenant_settings s
                    where s.tenant_id = weld_hidden.current_tenant_id()), 'show') = 'refuse'
$$;
grant execute on function weld_hidden.weld_import_code_problems(weld_public.welds[]) to weld_engineer;

--------------------------------------------------------------------------------------------------
-- 2. The record of each import (GET /imports)

create table if not exists weld_hidden.imports (
  tenant_id    uuid not null default weld_hidden.current_tenant_id()
               references weld_public.tenants on delete cascade,
  id           uuid not null default gen_random_uuid(),
  kind         text not null check (kind in ('welds')),
  -- The user who imported; null: the weld-admin CLI.
  imported_by  uuid default weld_hidden.current_user_id(),
  imported_at  timestamptz not null default now(),
  file_sha256  text not null check (file_sha256 ~ '^[0-9a-f]{64}$'),
  file_bytes   bigint not null check (file_bytes >= 0),
  rows         integer not null check (rows >= 0),
  created      integer not null check (created >= 0),
  updated      integer not null check (updated >= 0),
  unchanged    integer not null check (unchanged >= 0),
  isos_created integer not null check (isos_created >= 0),
  primary key (tenant_id, id)
);
create index if not exists imports_imported_at_idx on weld_hidden.imports (tenant_id, imported_at, id);
alter table weld_hidden.imports enable row level security;
alter table weld_hidden.imports force row level security;
drop policy if exists tenant_isolation on weld_hidden.imports;
create policy tenant_isolation on weld_hidden.imports
  using (tenant_id = (select weld_hidden.current_tenant_id()))
  with check (tenant_id = (select weld_hidden.current_tenant_id()));
grant select on weld_hidden.imports to weld_viewer;
comment on table weld_hidden.imports is
  'One row per import that wrote: who, when, the file''s SHA-256 and size, and what it did.';

--------------------------------------------------------------------------------------------------
-- 3. The import

-- The session's work tables, dropped at commit: the rows as the file gave them (COPY target),
-- each row checked and resolved (the plan), and the errors. Created here, by the owner, because
-- request roles may not create temporary tables (bootstrap.sql); the caller may fill and read
-- them. WD003 unless the caller may write welds: a dry run writes nothing, but is refused alike.
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
    welded_on      text not null
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

-- ANALYZE of the plan: only its owner may, and the owner made it (begin_weld_import).
create or replace function weld_hidden.analyze_weld_import() returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  analyze pg_temp.weld_import_plan;
end
$$;

-- Validates and classifies the rows of weld_import_rows. `present`: the columns the file has
-- (contract names); a column it lacks leaves an existing weld's value as it is, a present but
-- empty cell clears it. `decimal_comma`: numbers may use a decimal comma (semicolon files from
-- spreadsheets set to such a locale). Answers {errors: the first `max_errors` by line,
-- errorCount, created, updated, unchanged, isosCreated}.
drop function if exists weld_hidden.check_weld_import(text[], boolean, integer);
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
  truncate pg_temp.weld_import_plan, pg_temp.weld_import_errors;

  -- Each row, trimmed, with the ISO, weld, welder and WPS it names, and the weld as the import
  -- would leave it: a given value where the file has the column (parsed where valid; invalid ones
  -- are errors below), the weld's own where it does not. One pass: this runs on 100,000 rows.
  insert into pg_temp.weld_import_plan (
    line, iso_number, weld_number, line_number, type_text, size_text, schedule_text, wall_text,
    material, welder_stamp, wps_number, wps_revision, welded_on_text,
    iso_id, iso_line_number, new_iso_line, weld_id, welder_id, wps_id, wps_matches, wps_revisions,
    type, size, schedule, wall_thickness, welded_on, action)
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
           nullif(btrim(r.welded_on), '') as welded_on_text
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
         x.wps_revision, x.welded_on_text,
         x.iso_id, x.iso_line_number, x.new_iso_line, x.weld_id, x.final_welder, x.final_wps,
         x.matches, x.revisions,
         x.final_type, x.final_size, x.final_schedule, x.final_wall, x.final_welded_on,
         case when x.weld_id is null then 'create'
              when (x.final_type, x.final_size, x.final_schedule, x.final_wall, x.final_material,
                    x.final_welder, x.final_wps, x.final_welded_on)
                   is not distinct from
                   ((x.existing).type, (x.existing).size, (x.existing).schedule,
                    (x.existing).wall_thickness, (x.existing).material, (x.existing).welder_id,
                    (x.existing).wps_id, (x.existing).welded_on)
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
     case when p.type_text is not null and p.type_text not in ('BW', 'SW', 'FW', 'BR', 'TW')
            then jsonb_build_array('type', p.type_text, 'must be one of BW, SW, FW, BR, TW')
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
            then jsonb_build_array('weldedOn', p.welded_on_text, 'must be a date, YYYY-MM-DD') end
   ], null)) as e;

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
                      'welded_on', p.welded_on, 'status', 'PENDING', 'repair_cycle', 0, 'version', 1))
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

-- Text a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a CR) is
-- exported with a leading apostrophe, which spreadsheets show as text (OWASP: CSV injection), and
-- imported without it, so an exported register imports unchanged.
create or replace function weld_hidden.spreadsheet_text(value text) returns text
  language sql immutable parallel safe
as $$
  select case when value ~ '^[=+@\t\r-]' then '''' || value else value end
$$;

create or replace function weld_hidden.from_spreadsheet_text(value text) returns text
  language sql immutable parallel safe
as $$
  select case when starts_with(value, '''') and value ~ '^''[=+@\t\r-]' then substr(value, 2)
              else value end
$$;

-- A length in inches as a file gives it ("2", "0.75", ".5"; "0,75" with a decimal comma), rounded
-- as numeric(6, 3) rounds it; null when it is not a number.
create or replace function weld_hidden.import_inches(value text, decimal_comma boolean)
  returns numeric
  language sql immutable parallel safe
as $$
  select case when (case when decimal_comma then replace(value, ',', '.') else value end)
                   ~ '^([0-9]{1,9}(\.[0-9]*)?|\.[0-9]+)$'
              then round((case when decimal_comma then replace(value, ',', '.') else value end)::numeric, 3)
         end
$$;

-- A date as YYYY-MM-DD, year 1 to 9999; null when it is not one. (These helpers run once per
-- row of a file: they pin no search_path, so PostgreSQL inlines them; this one is STABLE, as the
-- date input it uses is, because an IMMUTABLE one calling it would not be inlined.)
create or replace function weld_hidden.import_date(value text) returns date
  language sql stable parallel safe
as $$
  select case when value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' and pg_input_is_valid(value, 'date')
              then value::date end
$$;

drop function if exists weld_hidden.apply_weld_import(text, bigint);
create or replace function weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set enable_nestloop = off -- as check_weld_import; the plan's statistics predate its new ids
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  done weld_hidden.imports;
begin
  if exists (select from pg_temp.weld_import_errors) then
    raise exception 'the import has errors' using errcode = 'WD007';
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
                                   material, welder_id, wps_id, welded_on)
    select p.iso_id, p.weld_number, p.type, p.size, p.schedule, p.wall_thickness, p.material,
           p.welder_id, p.wps_id, p.welded_on
      from pg_temp.weld_import_plan p
     where p.action = 'create'
    returning id, iso_id, weld_number
  )
  update pg_temp.weld_import_plan p set weld_id = c.id
    from created c
   where p.action = 'create' and p.iso_id = c.iso_id and p.weld_number = c.weld_number;

  update weld_public.welds w
     set type = p.type, size = p.size, schedule = p.schedule, wall_thickness = p.wall_thickness,
         material = p.material, welder_id = p.welder_id, wps_id = p.wps_id, welded_on = p.welded_on
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

-- An import's record as GET /imports shows it.
drop function if exists weld_hidden.import_json(weld_hidden.imports);
create or replace function weld_hidden.import_json(record weld_hidden.imports) returns json
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select json_build_object(
    'id', record.id, 'kind', record.kind, 'importedBy', record.imported_by,
    'importedAt', to_char(record.imported_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'fileSha256', record.file_sha256, 'fileBytes', record.file_bytes, 'rows', record.rows,
    'created', record.created, 'updated', record.updated, 'unchanged', record.unchanged,
    'isosCreated', record.isos_created)
$$;

grant execute on function
  weld_hidden.begin_weld_import(),
  weld_hidden.analyze_weld_import(),
  weld_hidden.check_weld_import(text[], boolean, integer),
  weld_hidden.import_inches(text, boolean),
  weld_hidden.import_date(text),
  weld_hidden.from_spreadsheet_text(text),
  weld_hidden.apply_weld_import(text, bigint)
  to weld_engineer;
grant execute on function weld_hidden.spreadsheet_text(text) to weld_viewer;
grant execute on function weld_hidden.import_json(weld_hidden.imports) to weld_viewer;
grant insert on weld_hidden.imports to weld_engineer;

--------------------------------------------------------------------------------------------------
-- 4. The import's events, set-based

-- A weld as the REST contract shows it, built column by column: the same JSON as
-- contract_json(to_jsonb(weld)) (000010; a test holds the two equal), five times faster, which
-- matters for 100,000 events in one statement.
create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on, 'status', w.status,
    'repairCycle', w.repair_cycle, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

-- One event per ISO created and weld created or changed, as the outbox triggers would write them
-- (000010: the REST JSON of the final row; ids taken under the tenant's lock, held to commit, so
-- commit order holds), in one statement instead of one trigger firing each. The rows are then
-- marked as evented: pg_temp.weld_bulk_evented tells the outbox triggers of this transaction to
-- stand down (events_suppressed below). Only a SECURITY DEFINER function of the owner can create
-- it (request roles may not create temporary tables), and only this one does, as the last write
-- of its transaction but the import's record, which has no event.
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
    perform pg_notify('weld_events', tenant::text);
  end if;
end
$$;
grant execute on function weld_hidden.emit_weld_import_events() to weld_engineer;

-- As 000010, and: nothing in a transaction whose changes a bulk writer evented itself.
create or replace function weld_private.events_suppressed() returns boolean
  language sql stable
as $$
  select (coalesce(current_setting('weld.suppress_events', true) = 'on', false)
          and pg_catalog.pg_has_role(session_user, 'weld_owner', 'member'))
      or pg_catalog.to_regclass('pg_temp.weld_bulk_evented') is not null
$$;
