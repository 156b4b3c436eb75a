--! Previous: sha1:769017681fc39d75e3576c6456046c67adac32fc
--! Hash: sha1:a64c71c51bc9bff128d0669d94c2b3ef5ea53413
--! Message: One home per SQL function: every function, view and trigger written again from its file under migrations/fixtures

-- One home per SQL function: every function, view and trigger of the service, written again from
-- its one file under migrations/fixtures/ (docs/database.md, "Where a rule lives") with the text
-- the catalog holds after 000020. Nothing changes: a body, a grant, a comment or a trigger each
-- come out as they were (test/db/sql-home.test.ts). From here on a function changes by an edit of
-- its file, included in the migration that changes it.

--! Included views/weld_private.weld_examinations.sql
-- Examinations as one list, and which methods meet which requirement.
--
-- Every weld's result in every NDT record (the one given, else its film intervals'), and every
-- visual inspection as method VT (B31.3 344.2: visual examination is an examination like any
-- other; an inspector records it as an NDT record of method VT or as a visual inspection).
-- security_invoker: it reads with the rights, and under the row security, of whoever queries it.
create or replace view weld_private.weld_examinations with (security_invoker = true) as
  select nw.tenant_id, nw.weld_id, r.method, r.examined_on,
         weld_public.ndt_record_welds_effective_result(nw) as result,
         r.id as ndt_record_id, null::uuid as inspection_id,
         format('%s report %s', r.method, r.report_number) as record, r.created_at
    from weld_public.ndt_record_welds nw
    join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
  union all
  select iw.tenant_id, iw.weld_id, 'VT', i.inspected_on, i.result, null, i.id,
         format('the visual inspection of %s', i.inspected_on), i.created_at
    from weld_public.inspection_welds iw
    join weld_public.inspections i on i.tenant_id = iw.tenant_id and i.id = iw.inspection_id
   where i.kind = 'visual';

comment on view weld_private.weld_examinations is
  'Every examination of every weld: NDT records (each weld''s result) and visual inspections (as VT).';

grant select on weld_private.weld_examinations to weld_rules;
--! EndIncluded views/weld_private.weld_examinations.sql
--! Included functions/weld_hidden.add_signing_key.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- Adds a signing key. rotate = false adds it only if the tenant has no active key (first use;
-- safe when two instances race); rotate = true retires the active key. Keys retired over a day
-- ago (far longer than any access token lives) are deleted.
create or replace function weld_hidden.add_signing_key(kid text, private_jwk jsonb, public_jwk jsonb, rotate boolean)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
begin
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('weld-signing-keys:' || tenant));
  if not rotate and exists (
    select from weld_private.signing_keys k where k.tenant_id = tenant and k.retired_at is null
  ) then
    return;
  end if;
  update weld_private.signing_keys k set retired_at = now()
   where k.tenant_id = tenant and k.retired_at is null;
  insert into weld_private.signing_keys (tenant_id, kid, private_jwk, public_jwk)
    values (tenant, add_signing_key.kid, add_signing_key.private_jwk, add_signing_key.public_jwk);
  delete from weld_private.signing_keys k
   where k.tenant_id = tenant and k.retired_at < now() - interval '1 day';
end
$$;

grant execute on function weld_hidden.add_signing_key(text, jsonb, jsonb, boolean) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.add_signing_key.sql
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
as $$
begin
  analyze pg_temp.weld_import_plan;
end
$$;

grant execute on function weld_hidden.analyze_weld_import() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.analyze_weld_import.sql
--! Included functions/weld_hidden.applied_migration.sql
-- The newest applied migration, for GET /health/ready: the server compares it with the newest
-- file in migrations/committed and reports not ready when the database is behind.
create or replace function weld_hidden.applied_migration() returns text
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select filename from graphile_migrate.migrations order by filename desc limit 1
$$;

grant execute on function weld_hidden.applied_migration() to weld_authenticator;
--! EndIncluded functions/weld_hidden.applied_migration.sql
--! Included functions/weld_hidden.apply_weld_import.sql
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

grant execute on function weld_hidden.apply_weld_import(text, bigint) to weld_engineer;
--! EndIncluded functions/weld_hidden.apply_weld_import.sql
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
--! Included functions/weld_hidden.claim_webhook_deliveries.sql
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

grant execute on function weld_hidden.claim_webhook_deliveries(text, integer, integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.claim_webhook_deliveries.sql
--! Included functions/weld_hidden.current_tenant_id.sql
-- The request context. The server sets these per transaction (db/database.ts, withContext);
-- policies compare with (select weld_hidden.current_tenant_id()) so the call is an initPlan,
-- evaluated once per statement. No context means null, and null matches no row.
create or replace function weld_hidden.current_tenant_id() returns uuid
  language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('jwt.claims.tenant_id', true), '')::uuid
$$;

grant execute on function weld_hidden.current_tenant_id() to weld_anonymous, weld_authenticator, weld_rules;
--! EndIncluded functions/weld_hidden.current_tenant_id.sql
--! Included functions/weld_hidden.current_user_id.sql
create or replace function weld_hidden.current_user_id() returns uuid
  language sql stable parallel safe
as $$
  select nullif(pg_catalog.current_setting('jwt.claims.user_id', true), '')::uuid
$$;

grant execute on function weld_hidden.current_user_id() to weld_anonymous, weld_rules;
--! EndIncluded functions/weld_hidden.current_user_id.sql
--! Included functions/weld_hidden.defer_webhook_delivery.sql
-- Only the instance holding the lease may hand it back (false otherwise, as finish does).
create or replace function weld_hidden.defer_webhook_delivery(
  tenant uuid, webhook uuid, instance text, retry_after_ms integer
) returns boolean
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with handed_back as (
    update weld_hidden.webhooks w
       set lease_until = null, leased_by = null,
           next_attempt_at = now() + make_interval(secs => retry_after_ms / 1000.0)
     where w.tenant_id = tenant and w.id = webhook and w.leased_by = instance
       and w.lease_until >= now()
    returning 1
  )
  select exists (select from handed_back)
$$;

grant execute on function weld_hidden.defer_webhook_delivery(uuid, uuid, text, integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.defer_webhook_delivery.sql
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

grant execute on function weld_hidden.emit_weld_import_events() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.emit_weld_import_events.sql
--! Included functions/weld_hidden.examination_selection_json.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- A selection as GET /examination-selections/{id} shows it: one shape for REST and the events.
create or replace function weld_hidden.examination_selection_json(s weld_public.examination_selections)
  returns jsonb
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'id', s.id, 'weldId', s.weld_id, 'isoId', w.iso_id, 'welderId', w.welder_id,
           'lineNumber', i.line_number, 'method', s.method, 'tier', s.tier, 'seed', s.seed,
           'reason', s.reason, 'causeSelectionId', s.cause_selection_id,
           'causeNdtRecordId', s.cause_ndt_record_id, 'causeInspectionId', s.cause_inspection_id,
           'ndtRecordId', e.ndt_record_id, 'inspectionId', e.inspection_id,
           'state', case when e.examined_on is null then 'open' else 'done' end,
           'selectedBy', s.selected_by,
           'selectedAt', to_char(s.selected_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    from weld_public.welds w
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
    left join lateral weld_private.selection_examination(s) e on true
   where w.tenant_id = s.tenant_id and w.id = s.weld_id
$$;

grant execute on function weld_hidden.examination_selection_json(weld_public.examination_selections) to weld_viewer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.examination_selection_json.sql
--! Included functions/weld_hidden.finish_webhook_delivery.sql
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

grant execute on function weld_hidden.finish_webhook_delivery(uuid, uuid, text, bigint, integer, integer, text, integer, integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.finish_webhook_delivery.sql
--! Included functions/weld_hidden.from_spreadsheet_text.sql
create or replace function weld_hidden.from_spreadsheet_text(value text) returns text
  language sql immutable parallel safe
as $$
  select case when starts_with(value, '''') and value ~ '^''[=+@\t\r-]' then substr(value, 2)
              else value end
$$;

grant execute on function weld_hidden.from_spreadsheet_text(text) to weld_engineer;
--! EndIncluded functions/weld_hidden.from_spreadsheet_text.sql
--! Included functions/weld_hidden.import_date.sql
create or replace function weld_hidden.import_date(value text) returns date
  language sql stable parallel safe
as $$
  select case when value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' and pg_input_is_valid(value, 'date')
               and value::date between date '1900-01-01' and date '2200-12-31'
              then value::date end
$$;

grant execute on function weld_hidden.import_date(text) to weld_engineer;
--! EndIncluded functions/weld_hidden.import_date.sql
--! Included functions/weld_hidden.import_inches.sql
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

grant execute on function weld_hidden.import_inches(text, boolean) to weld_engineer;
--! EndIncluded functions/weld_hidden.import_inches.sql
--! Included functions/weld_hidden.import_json.sql
-- An import's record as GET /imports shows it.
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

grant execute on function weld_hidden.import_json(weld_hidden.imports) to weld_viewer;
--! EndIncluded functions/weld_hidden.import_json.sql
--! Included functions/weld_hidden.lock_webhook_author.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- The acting user, as the next author of an endpoint of their tenant: takes their author turn
-- (held to the commit), then checks they are an active admin. Returns their id. REST calls it
-- before it locks the endpoint (rest-adapter/webhooks.ts), so its locks come in the order a
-- deactivation takes them (the turn, then the endpoints): the two never wait on each other in a
-- circle. The trigger below calls it again, for every other path.
create or replace function weld_hidden.lock_webhook_author() returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  me uuid := weld_hidden.current_user_id();
  author weld_public.users;
begin
  perform pg_advisory_xact_lock(
    hashtextextended(tenant::text || '/' || me::text || '/webhook-author', 0));
  -- A statement after the lock: it sees a deactivation that committed while we waited.
  select * into author from weld_public.users u where u.tenant_id = tenant and u.id = me;
  if not found or not author.active or author.role <> 'admin' then
    raise exception 'only an active admin may register, point, resume or re-key a webhook'
      using errcode = 'WD003';
  end if;
  return author.id;
end
$$;

grant execute on function weld_hidden.lock_webhook_author() to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.lock_webhook_author.sql
--! Included functions/weld_hidden.lock_webhook_registrations.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

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
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.lock_webhook_registrations.sql
--! Included functions/weld_hidden.lock_weld_imports.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
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

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.lock_weld_imports.sql
--! Included functions/weld_hidden.login_begin.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.login_begin(user_name public.citext, address text)
  returns table (retry_after integer, user_id uuid, active boolean, password_hash text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  addr_key text := 'addr:' || login_begin.address;
  user_key text;
  account_id uuid;
  account_active boolean;
  account_hash text;
  blocked_for integer;
begin
  -- The user first (null when unknown): its known addresses decide which user key counts. User
  -- names compare as citext, case-insensitively: its `=` lives in schema public, which the pinned
  -- search_path leaves out, so it is named (a plain `=` would compare them as text).
  select u.id, u.active, c.password_hash into account_id, account_active, account_hash
    from weld_public.users u
    left join weld_private.user_credentials c on c.tenant_id = u.tenant_id and c.user_id = u.id
   where u.tenant_id = tenant and u.user_name operator(public.=) login_begin.user_name;
  if weld_private.login_address_known(tenant, account_id, login_begin.address) then
    user_key := 'user-addr:' || lower(login_begin.user_name) || ':' || login_begin.address;
  else
    user_key := 'user:' || lower(login_begin.user_name);
  end if;

  -- The address: a new 10-minute window when the last one has ended. `where` skips the update of
  -- a blocked key; ON CONFLICT locks the row all the same, and no row comes back.
  insert into weld_private.login_throttle as t (tenant_id, throttle_key, failures, window_start, last_failure_at)
  values (tenant, addr_key, 1, now(), now())
  on conflict on constraint login_throttle_pkey do update
    set (failures, window_start, last_failure_at, blocked_until) = (
          select w.failures, w.window_start, now(),
                 case when w.failures >= 30 then w.window_start + interval '10 minutes' end
            from (select case when t.window_start > now() - interval '10 minutes'
                              then t.failures + 1 else 1 end,
                         case when t.window_start > now() - interval '10 minutes'
                              then t.window_start else now() end) as w (failures, window_start))
    where not coalesce(t.blocked_until > now(), false);
  if not found then
    select greatest(ceil(extract(epoch from t.blocked_until - now())), 1)::integer into blocked_for
      from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = addr_key;
    return query select blocked_for, null::uuid, null::boolean, null::text;
    return;
  end if;

  -- The user key (user-wide, or this known address's): the count starts over after an hour
  -- without failures.
  insert into weld_private.login_throttle as t (tenant_id, throttle_key, failures, window_start, last_failure_at)
  values (tenant, user_key, 1, now(), now())
  on conflict on constraint login_throttle_pkey do update
    set (failures, last_failure_at, blocked_until) = (
          select f.failures, now(),
                 case when f.failures >= 5
                      then now() + least(power(2, f.failures - 5), 60) * interval '1 second' end
            from (select case when t.last_failure_at > now() - interval '1 hour'
                              then t.failures + 1 else 1 end) as f (failures))
    where not coalesce(t.blocked_until > now(), false);
  if not found then
    perform weld_private.login_take_back(tenant, login_begin.address);
    select greatest(ceil(extract(epoch from t.blocked_until - now())), 1)::integer into blocked_for
      from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = user_key;
    return query select blocked_for, null::uuid, null::boolean, null::text;
    return;
  end if;

  return query select null::integer, account_id, account_active, account_hash;
end
$$;

grant execute on function weld_hidden.login_begin(public.citext, text) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.login_begin.sql
--! Included functions/weld_hidden.login_succeed.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.login_succeed(
  user_id uuid, address text, session_id uuid, refresh_hash bytea, refresh_ttl interval
) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  name public.citext;
begin
  select u.user_name into name from weld_public.users u
   where u.tenant_id = tenant and u.id = login_succeed.user_id and u.active;
  if not found then
    raise exception 'no active user %', user_id using errcode = 'WD001';
  end if;
  -- Address first, then the user key the attempt counted on: the order login_begin locks them in.
  perform weld_private.login_take_back(tenant, login_succeed.address);
  if weld_private.login_address_known(tenant, login_succeed.user_id, login_succeed.address) then
    delete from weld_private.login_throttle t
     where t.tenant_id = tenant
       and t.throttle_key = 'user-addr:' || lower(name) || ':' || login_succeed.address;
  else
    delete from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = 'user:' || lower(name);
  end if;
  insert into weld_private.known_addresses as k (tenant_id, user_id, address, last_success_at)
    values (tenant, login_succeed.user_id, login_succeed.address, now())
    on conflict on constraint known_addresses_pkey do update set last_success_at = now();
  insert into weld_private.sessions (tenant_id, id, user_id)
    values (tenant, login_succeed.session_id, login_succeed.user_id);
  insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at)
    values (tenant, refresh_hash, login_succeed.session_id, now() + refresh_ttl);
end
$$;

grant execute on function weld_hidden.login_succeed(uuid, text, uuid, bytea, interval) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.login_succeed.sql
--! Included functions/weld_hidden.logout.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- Logout: revoke the family of a refresh token. True when there was a live family to revoke.
create or replace function weld_hidden.logout(token_hash bytea) returns boolean
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  update weld_private.sessions s set revoked_at = now(), revoked_reason = 'logout'
    from weld_private.refresh_tokens r
   where r.tenant_id = weld_hidden.current_tenant_id() and r.token_hash = logout.token_hash
     and s.tenant_id = r.tenant_id and s.id = r.session_id and s.revoked_at is null
  returning true
$$;

grant execute on function weld_hidden.logout(bytea) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.logout.sql
--! Included functions/weld_hidden.ndt_record_film_json.sql
create or replace function weld_hidden.ndt_record_film_json(record weld_public.ndt_records) returns jsonb
  language sql stable parallel safe
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', f.id, 'label', f.label, 'result', f.result, 'defectCodes', f.defect_codes,
           'weldIds', array(select fw.weld_id from weld_public.film_interval_welds fw
                             where fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id
                             order by fw.weld_id)) order by f.label),
         '[]'::jsonb)
    from weld_public.film_intervals f
   where f.tenant_id = record.tenant_id and f.ndt_record_id = record.id
$$;

grant execute on function weld_hidden.ndt_record_film_json(weld_public.ndt_records) to weld_viewer;
--! EndIncluded functions/weld_hidden.ndt_record_film_json.sql
--! Included functions/weld_hidden.ndt_record_welds_json.sql
-- An NDT record's welds with their results (given, or derived from the film for RT), and its
-- film intervals: shared by the REST reads (rest-adapter/ndt-records.ts) and the events.
create or replace function weld_hidden.ndt_record_welds_json(record weld_public.ndt_records) returns jsonb
  language sql stable parallel safe
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'weldId', w.weld_id,
           'result', weld_public.ndt_record_welds_effective_result(w)) order by w.weld_id),
         '[]'::jsonb)
    from weld_public.ndt_record_welds w
   where w.tenant_id = record.tenant_id and w.ndt_record_id = record.id
$$;

grant execute on function weld_hidden.ndt_record_welds_json(weld_public.ndt_records) to weld_viewer;
--! EndIncluded functions/weld_hidden.ndt_record_welds_json.sql
--! Included functions/weld_hidden.purge_auth_bookkeeping.sql
-- Housekeeping of the authentication tables, across all tenants.
--
-- The server calls it every 15 minutes (any interval from a minute to an hour works: throttle
-- rows live 10 minutes or an hour, refresh tokens days, and nothing here is urgent). It deletes
--   - throttle rows whose useful life has ended: user names an hour after their last failure,
--     addresses once their 10-minute window is over, in both cases with no block in force;
--   - refresh tokens past their expiry, used or not (a used token is kept until then so that
--     presenting it again is recognised as reuse and revokes its session);
--   - sessions revoked more than a day ago (the server needs revocations only for the lifetime
--     of an access token, minutes), and sessions older than a day without an unexpired refresh
--     token (nobody can use them any more; the day spares sessions being created right now).
-- Rows another transaction holds (a login, a refresh) are skipped, not waited for; the next run
-- takes them. Returns how many rows of each it deleted.
--
-- SECURITY DEFINER as the owner, which has BYPASSRLS: the work spans tenants. Granted to the
-- authenticator only. The scans are not indexed: the tables hold live bookkeeping only, which
-- this function keeps small.
--
-- Housekeeping: as in 000006, and the user keys of known addresses (an hour after their last
-- failure, like user names) and known addresses 30 days after their last success. One more count
-- in the row it returns (deleted_known_addresses); the server logs the row as it is.
create or replace function weld_hidden.purge_auth_bookkeeping(
  out deleted_throttle_rows integer,
  out deleted_refresh_tokens integer,
  out deleted_sessions integer,
  out deleted_known_addresses integer
)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from weld_private.login_throttle t
   where (t.tenant_id, t.throttle_key) in (
     select o.tenant_id, o.throttle_key from weld_private.login_throttle o
      where (o.blocked_until is null or o.blocked_until <= now())
        and case
              when o.throttle_key like 'user:%' or o.throttle_key like 'user-addr:%'
                then o.last_failure_at <= now() - interval '1 hour'
              when o.throttle_key like 'addr:%' then o.window_start <= now() - interval '10 minutes'
              else false
            end
        for update skip locked);
  get diagnostics deleted_throttle_rows = row_count;

  delete from weld_private.refresh_tokens r
   where (r.tenant_id, r.token_hash) in (
     select o.tenant_id, o.token_hash from weld_private.refresh_tokens o
      where o.expires_at < now()
        for update skip locked);
  get diagnostics deleted_refresh_tokens = row_count;

  delete from weld_private.sessions s
   where (s.tenant_id, s.id) in (
     select o.tenant_id, o.id from weld_private.sessions o
      where o.revoked_at < now() - interval '1 day'
         or (o.created_at < now() - interval '1 day'
             and not exists (
               select from weld_private.refresh_tokens r
                where r.tenant_id = o.tenant_id and r.session_id = o.id and r.expires_at > now()))
        for update skip locked);
  get diagnostics deleted_sessions = row_count;

  delete from weld_private.known_addresses k
   where (k.tenant_id, k.user_id, k.address) in (
     select o.tenant_id, o.user_id, o.address from weld_private.known_addresses o
      where o.last_success_at <= now() - interval '30 days'
        for update skip locked);
  get diagnostics deleted_known_addresses = row_count;
end
$$;

grant execute on function weld_hidden.purge_auth_bookkeeping() to weld_authenticator;
--! EndIncluded functions/weld_hidden.purge_auth_bookkeeping.sql
--! Included functions/weld_hidden.purge_events.sql
-- Deletes events (and webhook deliveries) older than `keep_days`, remembering per tenant the
-- highest event id removed. Called by every server instance's housekeeping (EVENT_RETENTION_DAYS);
-- two purges at once do no harm.
create or replace function weld_hidden.purge_events(keep_days integer)
  returns table (deleted_events bigint, deleted_deliveries bigint)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  cutoff timestamptz := now() - make_interval(days => keep_days);
begin
  if keep_days is null or keep_days < 1 then
    raise exception 'keep_days must be 1 or more' using errcode = '22023';
  end if;
  with gone as (
    delete from weld_public.events e where e.occurred_at < cutoff
    returning e.tenant_id, e.id
  ), marks as (
    insert into weld_hidden.event_purges as p (tenant_id, purged_through)
    select g.tenant_id, max(g.id) from gone g group by g.tenant_id
    on conflict (tenant_id) do update
      set purged_through = greatest(p.purged_through, excluded.purged_through)
  )
  select count(*) into deleted_events from gone;
  delete from weld_hidden.webhook_deliveries d where d.attempted_at < cutoff;
  get diagnostics deleted_deliveries = row_count;
  return next;
end
$$;

grant execute on function weld_hidden.purge_events(integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.purge_events.sql
--! Included functions/weld_hidden.purge_idempotency_keys.sql
-- Keys older than 24 hours, across tenants; returns how many it deleted. The server calls it with
-- purge_auth_bookkeeping. SECURITY DEFINER as the owner (BYPASSRLS); granted to the authenticator
-- only. Keys another transaction holds are skipped, as there. Not indexed by age: the table holds
-- a day of keys, which this keeps it to.
create or replace function weld_hidden.purge_idempotency_keys() returns integer
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with purged as (
    delete from weld_hidden.idempotency_keys k
     where (k.tenant_id, k.user_id, k.idempotency_key) in (
       select o.tenant_id, o.user_id, o.idempotency_key from weld_hidden.idempotency_keys o
        where o.created_at < now() - interval '24 hours'
          for update skip locked)
    returning 1
  )
  select count(*)::integer from purged
$$;

grant execute on function weld_hidden.purge_idempotency_keys() to weld_authenticator;
--! EndIncluded functions/weld_hidden.purge_idempotency_keys.sql
--! Included functions/weld_hidden.refresh_rotate.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- Refresh: rotate a refresh token, with reuse detection (RFC 9700 4.14.2).
--
-- Outcomes (the server answers 200 for the first two, 401 for the rest):
--   rotated   the token was live: it is now used, and new_hash is its successor
--   replayed  it was used within the grace window and its successor is still unused: the same
--             successor again (sealed in successor_box), so two concurrent refreshes agree
--   reused    it was used before: the whole family is revoked. This is a normal return, not an
--             error, so the revocation commits although the request fails.
--   revoked   the family was revoked (logout, reuse, user disabled)
--   expired   past its expiry
--   unknown   never issued (or not this tenant's)
-- The row lock makes concurrent refreshes of one token take turns.
create or replace function weld_hidden.refresh_rotate(
  old_hash bytea, new_hash bytea, new_box bytea, grace interval, ttl interval
) returns table (outcome text, session_id uuid, user_id uuid, role weld_public.user_role, successor_box bytea)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  token weld_private.refresh_tokens;
  session weld_private.sessions;
  account weld_public.users;
begin
  select * into token from weld_private.refresh_tokens r
   where r.tenant_id = tenant and r.token_hash = old_hash
   for update;
  if not found then
    return query select 'unknown', null::uuid, null::uuid, null::weld_public.user_role, null::bytea;
    return;
  end if;
  select * into session from weld_private.sessions s
   where s.tenant_id = tenant and s.id = token.session_id
   for update;
  select * into account from weld_public.users u where u.tenant_id = tenant and u.id = session.user_id;

  if session.revoked_at is not null then
    return query select 'revoked', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;
  if not account.active then
    update weld_private.sessions s set revoked_at = now(), revoked_reason = 'user-disabled'
     where s.tenant_id = tenant and s.id = session.id;
    return query select 'revoked', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;

  if token.used_at is not null then
    if token.used_at > now() - grace and exists (
      select from weld_private.refresh_tokens n
       where n.tenant_id = tenant and n.token_hash = token.successor_hash and n.used_at is null
    ) then
      return query select 'replayed', session.id, session.user_id, account.role, token.successor_box;
      return;
    end if;
    update weld_private.sessions s set revoked_at = now(), revoked_reason = 'reuse'
     where s.tenant_id = tenant and s.id = session.id;
    return query select 'reused', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;

  if token.expires_at <= now() then
    return query select 'expired', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;

  update weld_private.refresh_tokens r
     set used_at = now(), successor_hash = new_hash, successor_box = new_box
   where r.tenant_id = tenant and r.token_hash = old_hash;
  insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at)
    values (tenant, new_hash, session.id, now() + ttl);
  update weld_private.sessions s set refreshed_at = now() where s.tenant_id = tenant and s.id = session.id;
  -- Sealed successors are only needed during the grace window.
  update weld_private.refresh_tokens r set successor_box = null
   where r.tenant_id = tenant and r.session_id = session.id
     and r.successor_box is not null and r.used_at < now() - grace;
  return query select 'rotated', session.id, session.user_id, account.role, null::bytea;
end
$$;

grant execute on function weld_hidden.refresh_rotate(bytea, bytea, bytea, interval, interval) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.refresh_rotate.sql
--! Included functions/weld_hidden.request_role.sql
-- The caller's role as a user_role, read from the request role the server set (`role`); null
-- for anything else (anonymous, a DBA's own login). Inside a SECURITY DEFINER function
-- current_user is the function's owner, but the `role` setting is still the caller's.
create or replace function weld_hidden.request_role() returns weld_public.user_role
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case pg_catalog.current_setting('role')
    when 'weld_viewer' then 'viewer'
    when 'weld_inspector' then 'inspector'
    when 'weld_engineer' then 'engineer'
    when 'weld_admin' then 'admin'
  end::weld_public.user_role
$$;

grant execute on function weld_hidden.request_role() to weld_anonymous, weld_rules;
--! EndIncluded functions/weld_hidden.request_role.sql
--! Included functions/weld_hidden.revoked_sessions.sql
-- What a server missed while it was not listening: the sessions revoked since a moment (the
-- lifetime of an access token ago), across all tenants. SECURITY DEFINER as the owner
-- (BYPASSRLS); granted to the authenticator only.
create or replace function weld_hidden.revoked_sessions(since timestamptz)
  returns table (tenant_id uuid, session_id uuid, revoked_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.tenant_id, s.id, s.revoked_at
    from weld_private.sessions s
   where s.revoked_at >= since
   order by s.revoked_at
$$;

grant execute on function weld_hidden.revoked_sessions(timestamp with time zone) to weld_authenticator;
--! EndIncluded functions/weld_hidden.revoked_sessions.sql
--! Included functions/weld_hidden.spreadsheet_text.sql
-- Text a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a CR) is
-- exported with a leading apostrophe, which spreadsheets show as text (OWASP: CSV injection), and
-- imported without it, so an exported register imports unchanged.
create or replace function weld_hidden.spreadsheet_text(value text) returns text
  language sql immutable parallel safe
as $$
  select case when value ~ '^[=+@\t\r-]' then '''' || value else value end
$$;

grant execute on function weld_hidden.spreadsheet_text(text) to weld_viewer;
--! EndIncluded functions/weld_hidden.spreadsheet_text.sql
--! Included functions/weld_hidden.tenant_by_origin.sql
-- Which tenant serves this origin. Called by the authenticator for every new Host it sees, before
-- any tenant context exists; SECURITY DEFINER (owner, BYPASSRLS) because it must look across
-- tenants, and it returns only the one matching row.
create or replace function weld_hidden.tenant_by_origin(request_origin text)
  returns table (id uuid, slug text, name text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select t.id, t.slug, t.name
  from weld_private.tenant_origins o
  join weld_public.tenants t on t.id = o.tenant_id
  where o.origin = request_origin
$$;

grant execute on function weld_hidden.tenant_by_origin(text) to weld_authenticator;
--! EndIncluded functions/weld_hidden.tenant_by_origin.sql
--! Included functions/weld_hidden.tenant_csrf_key.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- The tenant's CSRF key; the first caller's candidate (32 random bytes) becomes it.
create or replace function weld_hidden.tenant_csrf_key(candidate bytea) returns bytea
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  secret bytea;
begin
  insert into weld_private.tenant_secrets (tenant_id, csrf_key)
    values (tenant, candidate)
    on conflict do nothing;
  select s.csrf_key into secret from weld_private.tenant_secrets s where s.tenant_id = tenant;
  return secret;
end
$$;

grant execute on function weld_hidden.tenant_csrf_key(bytea) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.tenant_csrf_key.sql
--! Included functions/weld_hidden.tenant_signing_keys.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- Keys, for the server itself (granted to weld_authenticator only, never to a request role).
create or replace function weld_hidden.tenant_signing_keys()
  returns table (kid text, private_jwk jsonb, public_jwk jsonb, created_at timestamptz, retired_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.kid, k.private_jwk, k.public_jwk, k.created_at, k.retired_at
    from weld_private.signing_keys k
   where k.tenant_id = weld_hidden.current_tenant_id()
   order by k.created_at desc
$$;

grant execute on function weld_hidden.tenant_signing_keys() to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.tenant_signing_keys.sql
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
--! EndIncluded functions/weld_hidden.touch.sql
--! Included functions/weld_hidden.weld_examinations_before.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- The first examination of a weld dated before `welded_on` (any, when it is null): for the
-- import's check, which runs as the caller.
create or replace function weld_hidden.weld_examinations_before(weld_id uuid, welded_on date)
  returns table (record text, examined_on date)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select x.record, x.examined_on
    from weld_private.weld_examinations x
   where x.tenant_id = weld_hidden.current_tenant_id() and x.weld_id = weld_examinations_before.weld_id
     and (weld_examinations_before.welded_on is null or x.examined_on < weld_examinations_before.welded_on)
   order by x.examined_on
   limit 1
$$;

grant execute on function weld_hidden.weld_examinations_before(uuid, date) to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.weld_examinations_before.sql
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
   where p.code not in ('DATA_MISSING', 'REEXAMINATION_OPEN')
     and coalesce((select s.weld_checks from weld_public.tenant_settings s
                    where s.tenant_id = weld_hidden.current_tenant_id()), 'show') = 'refuse'
$$;

grant execute on function weld_hidden.weld_import_code_problems(weld_public.welds[]) to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.weld_import_code_problems.sql
--! Included functions/weld_private.add_calendar_check.sql
-- Adds the check to a date column (again: replaces it). Rows from before that break it keep the
-- check NOT VALID, with a notice, until a DBA mends them and runs VALIDATE CONSTRAINT.
create or replace function weld_private.add_calendar_check(tbl regclass, col name) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  name text := (select c.relname from pg_class c where c.oid = tbl) || '_' || col || '_calendar';
  broken boolean;
begin
  execute format('alter table %s drop constraint if exists %I', tbl, name);
  execute format(
    'alter table %s add constraint %I check (%I between date %L and date %L) not valid',
    tbl, name, col, '1900-01-01', '2200-12-31');
  execute format('comment on constraint %I on %s is %L', name, tbl,
                 'must be a date from 1900-01-01 to 2200-12-31');
  execute format('select exists (select from %s where %I not between date %L and date %L)',
                 tbl, col, '1900-01-01', '2200-12-31') into broken;
  if broken then
    raise notice '% has dates outside 1900-01-01 .. 2200-12-31: % stays NOT VALID', tbl, name;
  else
    execute format('alter table %s validate constraint %I', tbl, name);
  end if;
end
$$;
--! EndIncluded functions/weld_private.add_calendar_check.sql
--! Included functions/weld_private.camel_case.sql
-- snake_case -> camelCase, for GraphQL names.
create or replace function weld_private.camel_case(name text) returns text
  language sql immutable
as $$
  select string_agg(case when i = 1 then part else initcap(part) end, '' order by i)
    from unnest(string_to_array(name, '_')) with ordinality as p(part, i)
$$;
--! EndIncluded functions/weld_private.camel_case.sql
--! Included functions/weld_private.changed_columns.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The version is no change of an examination's content either (nor updated_at, as before): a
-- bump records nothing in examination_changes.
create or replace function weld_private.changed_columns(old_row jsonb, new_row jsonb)
  returns table (before jsonb, after jsonb)
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_object_agg(o.key, o.value), jsonb_object_agg(o.key, n.value)
    from jsonb_each(old_row) o
    join jsonb_each(new_row) n on n.key = o.key
   where o.value is distinct from n.value and o.key not in ('updated_at', 'version')
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.changed_columns.sql
--! Included functions/weld_private.check_correction.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- What every correction checks once it has locked the record (is_found: whether it exists; not
-- named `found`, which in PL/pgSQL is the function's own FOUND flag): the
-- record, the version the caller expects (WD005 with the current one), and the reason, which is
-- required (WD004) and at most 2000 characters, since every history row of the change keeps it.
-- Returns the reason, trimmed.
create or replace function weld_private.check_correction(
  what text, record_id uuid, is_found boolean, current_version integer, expected_version integer,
  reason text
) returns text
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  -- Blank is blank whatever the whitespace (btrim alone strips spaces only).
  why text := btrim(check_correction.reason, E' \t\n\r\v\f');
begin
  if not is_found then
    raise exception '% % not found', what, record_id using errcode = 'WD001';
  end if;
  if expected_version is not null and expected_version <> current_version then
    raise exception '% % is at version %, not %', what, record_id, current_version, expected_version
      using errcode = 'WD005', detail = json_build_object('version', current_version)::text;
  end if;
  if coalesce(why, '') = '' then
    raise exception 'a correction needs a reason' using errcode = 'WD004';
  end if;
  if char_length(why) > 2000 then
    perform weld_private.invalid_input('the reason is longer than 2000 characters', '/reason');
  end if;
  return why;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.check_correction.sql
--! Included functions/weld_private.check_object.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A JSON object with only the allowed keys, and every required one. `what` names it in messages.
create or replace function weld_private.check_object(
  input jsonb, pointer text, what text, allowed text[], required text[]
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  stray text;
begin
  if jsonb_typeof(input) is distinct from 'object' then
    perform weld_private.invalid_input(format('%s must be a JSON object', what), pointer);
  end if;
  select k into stray from jsonb_object_keys(input) as k where k <> all (allowed) order by k limit 1;
  if found then
    perform weld_private.invalid_input(format('%s has no field %s', what, stray),
                                       weld_private.json_pointer(pointer, stray));
  end if;
  select k into stray from unnest(required) with ordinality as r (k, n)
   where not input ? k order by n limit 1;
  if found then
    perform weld_private.invalid_input(format('%s needs %s', what, stray),
                                       weld_private.json_pointer(pointer, stray));
  end if;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.check_object.sql
--! Included functions/weld_private.closers.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The methods whose records meet a requirement of `method`: the method, the rule's closed_by,
-- and RT and UT for each other where the tenant has them interchangeable (341.4.1(b)(1)). The
-- pure part, for set-based use (lot_candidates), and the lookup for one weld.
create or replace function weld_private.closers(method text, closed_by text[], volumetric boolean)
  returns text[]
  language sql immutable parallel safe
as $$
  select array(select distinct m
                 from unnest(array[method] || coalesce(closed_by, '{}')
                             || case when volumetric and method in ('RT', 'UT') then array['RT', 'UT']
                                     else '{}' end) as m
                order by 1)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.closers.sql
--! Included functions/weld_private.closing_methods.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.closing_methods(
  tenant uuid, method text, fluid_service text, weld_type text
) returns text[]
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select weld_private.closers(
           closing_methods.method,
           (select r.closed_by from weld_public.examination_rules r
             where r.tenant_id = tenant and r.fluid_service = closing_methods.fluid_service
               and r.method = closing_methods.method and r.weld_type = closing_methods.weld_type),
           coalesce((select s.volumetric_interchangeable from weld_public.tenant_settings s
                      where s.tenant_id = tenant), true))
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.closing_methods.sql
--! Included functions/weld_private.contract_json.sql
-- A row as the REST contract names it: camelCase keys, no tenant_id, timestamps in UTC with
-- milliseconds (as JavaScript's Date renders them). Numerics stay JSON numbers and dates
-- YYYY-MM-DD text, as the REST reads give them.
create or replace function weld_private.contract_json(row_image jsonb) returns jsonb
  language sql immutable parallel safe
as $$
  select coalesce(jsonb_object_agg(
           lower(left(k, 1)) || substr(replace(initcap(replace(k, '_', ' ')), ' ', ''), 2),
           case when k like '%\_at' and jsonb_typeof(v) = 'string'
                then to_jsonb(to_char((v #>> '{}')::timestamptz at time zone 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                else v end), '{}'::jsonb)
    from jsonb_each(row_image - 'tenant_id') as e(k, v)
$$;

grant execute on function weld_private.contract_json(jsonb) to weld_rules;
--! EndIncluded functions/weld_private.contract_json.sql
--! Included functions/weld_private.create_tenant.sql
-- Creates a tenant with its origins in one statement, so a duplicate slug or origin leaves
-- nothing behind. Used by `weld-admin tenant add` as the owner.
create or replace function weld_private.create_tenant(slug text, name text, origins text[])
  returns weld_public.tenants
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant weld_public.tenants;
begin
  if coalesce(array_length(origins, 1), 0) = 0 then
    raise exception 'a tenant needs at least one origin' using errcode = '22023';
  end if;
  insert into weld_public.tenants (slug, name)
    values (create_tenant.slug, create_tenant.name)
    returning * into tenant;
  insert into weld_private.tenant_origins (tenant_id, origin)
    select tenant.id, o from unnest(origins) as o;
  return tenant;
end
$$;
--! EndIncluded functions/weld_private.create_tenant.sql
--! Included functions/weld_private.create_user.sql
-- User administration (weld-admin user ..., as the owner).
create or replace function weld_private.create_user(
  tenant uuid, user_name public.citext, display_name text, role weld_public.user_role, password_hash text
) returns weld_public.users
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  account weld_public.users;
begin
  insert into weld_public.users (tenant_id, user_name, display_name, role)
    values (tenant, create_user.user_name, create_user.display_name, create_user.role)
    returning * into account;
  insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
    values (tenant, account.id, create_user.password_hash);
  return account;
end
$$;
--! EndIncluded functions/weld_private.create_user.sql
--! Included functions/weld_private.diameter_words.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.diameter_words(known boolean, low numeric, high numeric)
  returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when not known then 'diameter range unknown (no range, coupon or PQR diameter recorded)'
              when high is null then 'OD ' || weld_private.inches(low) || ' and up'
              else 'OD ' || weld_private.inches(low) || ' to ' || weld_private.inches(high) end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.diameter_words.sql
--! Included functions/weld_private.disable_user.sql
-- The trigger above revokes the sessions now; disabling needs no revocation of its own. (And the
-- user name compares as citext, as in login_begin.)
create or replace function weld_private.disable_user(tenant uuid, user_name public.citext) returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with account as (
    update weld_public.users u set active = false
     where u.tenant_id = tenant and u.user_name operator(public.=) disable_user.user_name
    returning u.id
  )
  select exists (select from account)
$$;
--! EndIncluded functions/weld_private.disable_user.sql
--! Included functions/weld_private.draw_next_tier.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Progressive examination (341.3.4) for one selection whose weld an examination rejected: the
-- next tier from its lot, of the same welder. Nothing for a full tier, a weld already repaired
-- (original work only), or a selection that drew before. Returns the new selections' ids.
create or replace function weld_private.draw_next_tier(
  cause_id uuid, ndt_record_id uuid, inspection_id uuid, record text
) returns uuid[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  cause record;
  next_tier text;
  drawn uuid[];
begin
  select s.*, w.weld_number, w.welder_id, w.repair_cycle, i.iso_number, i.line_number into cause
    from weld_public.examination_selections s
    join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
   where s.tenant_id = weld_hidden.current_tenant_id() and s.id = cause_id;
  if not found or cause.tier = 'full' or cause.repair_cycle > 0 then
    return '{}';
  end if;
  perform weld_private.lock_line(cause.line_number);
  -- Checked after the lock: another transaction may have drawn for it meanwhile.
  if exists (select from weld_public.examination_selections c
              where c.tenant_id = cause.tenant_id and c.cause_selection_id = cause.id) then
    return '{}';
  end if;
  next_tier := case cause.tier when '1' then '2' when '2' then 'full' else '1' end;
  with candidates as (
    select * from weld_private.lot_candidates(array[cause.method], array[cause.line_number])
  ), picked as (
    insert into weld_public.examination_selections
      (weld_id, method, tier, seed, reason, cause_selection_id, cause_ndt_record_id,
       cause_inspection_id, selected_by)
    select c.weld_id, cause.method, next_tier, cause.seed,
           format('tier %s: %s rejected weld %s on ISO %s (%s selection); %s of welder %s in %s',
                  next_tier, record, cause.weld_number, cause.iso_number,
                  case when cause.tier in ('random', 'examined') then cause.tier else 'tier ' || cause.tier end,
                  case next_tier when 'full' then 'every remaining weld' else 'two more welds' end,
                  coalesce(c.welder_stamp, '(none recorded)'), c.lot_name),
           cause.id, ndt_record_id, inspection_id, weld_hidden.current_user_id()
      from candidates c
     where c.lot = (select x.lot from candidates x where x.weld_id = cause.weld_id)
       and c.welder_id is not distinct from cause.welder_id
       and not exists (select from weld_public.examination_selections s
                        where s.tenant_id = cause.tenant_id and s.method = cause.method
                          and s.weld_id = c.weld_id)
       and (next_tier = 'full' or not exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = cause.tenant_id and e.weld_id = c.weld_id and e.method = any(c.closes)))
     order by md5(coalesce(cause.seed::text, cause.id::text) || ':' || next_tier || ':'
                  || cause.weld_id::text || ':' || c.weld_id::text)
     limit case when next_tier = 'full' then null else 2 end
    returning id
  )
  select coalesce(array_agg(p.id), '{}') into drawn from picked p;
  return drawn;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.draw_next_tier.sql
--! Included functions/weld_private.draw_scope.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The candidates a draw works on: the lots of the line, or those of the ISO's welds.
create or replace function weld_private.draw_scope(method text, line text, iso_id uuid)
  returns table (
    method text, weld_id uuid, weld_number text, weld_type text, iso_id uuid, iso_number text,
    line_number text, welder_id uuid, welder_stamp text, welded_on date, repair_cycle integer,
    percent numeric, closes text[], lot text, lot_name text
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with c as (select * from weld_private.lot_candidates(array[method], array[line]))
  select * from c
   where draw_scope.iso_id is null
      or c.lot in (select x.lot from c x where x.iso_id = draw_scope.iso_id)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.draw_scope.sql
--! Included functions/weld_private.emit_event.sql
-- Events. A commit wakes only the readers of the types it wrote: the NOTIFY says the type
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
--! EndIncluded functions/weld_private.emit_event.sql
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
    when 'examination_selection' then
      select weld_hidden.examination_selection_json(s) into result
        from weld_public.examination_selections s
       where s.tenant_id = tenant and s.id = subject;
  end case;
  return result;
end
$$;
--! EndIncluded functions/weld_private.event_data.sql
--! Included functions/weld_private.events_suppressed.sql
-- Bulk loads by the owner (the demo and benchmark generators) may leave the feed out: the
-- setting counts only in the owner's own sessions, so no request role can hide its changes.
--
-- As 000010, and: nothing in a transaction whose changes a bulk writer evented itself.
create or replace function weld_private.events_suppressed() returns boolean
  language sql stable
as $$
  select (coalesce(current_setting('weld.suppress_events', true) = 'on', false)
          and pg_catalog.pg_has_role(session_user, 'weld_owner', 'member'))
      or pg_catalog.to_regclass('pg_temp.weld_bulk_evented') is not null
$$;
--! EndIncluded functions/weld_private.events_suppressed.sql
--! Included functions/weld_private.examination_created_in_this_transaction.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

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
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.examination_created_in_this_transaction.sql
--! Included functions/weld_private.examination_links.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The links refuse_unwelded_examinations judges, for welds about to be examined on a day.
create or replace function weld_private.examination_links(weld_ids uuid[], examined_on date, record text)
  returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_agg(jsonb_build_object('tenantId', weld_hidden.current_tenant_id(), 'weldId', w,
                                      'examinedOn', examined_on, 'record', record))
    from unnest(weld_ids) as w
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.examination_links.sql
--! Included functions/weld_private.first_unknown_weld.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The position of the first id in a JSON list that is no weld of the caller's tenant (under row
-- security, another tenant's weld is none); null when all are.
create or replace function weld_private.first_unknown_weld(weld_ids jsonb) returns integer
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select (e.n - 1)::integer
    from jsonb_array_elements_text(weld_ids) with ordinality as e (weld_id, n)
   where not exists (select from weld_public.welds w
                      where w.tenant_id = weld_hidden.current_tenant_id() and w.id = e.weld_id::uuid)
   order by e.n
   limit 1
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.first_unknown_weld.sql
--! Included functions/weld_private.follow_examination.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- What follows an examination of welds (an NDT record, or a visual inspection as VT), once it
-- is written and its results applied: each weld of original work it covers is counted toward
-- the lots whose method it meets (an 'examined' selection, when it has none), and each
-- selection of those welds it rejects draws its next tier. Returns the new selections' ids.
create or replace function weld_private.follow_examination(
  method text, weld_ids uuid[], ndt_record_id uuid, inspection_id uuid
) returns uuid[]
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  lines text[];
  made uuid[];
  rejected record;
begin
  lines := array(select distinct i.line_number
                   from weld_public.welds w
                   join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
                  where w.tenant_id = tenant and w.id = any(weld_ids));
  perform weld_private.lock_lines_of(weld_ids);

  with this as (
    select e.weld_id, e.record, e.examined_on
      from weld_private.weld_examinations e
     where e.tenant_id = tenant and e.weld_id = any(weld_ids)
       and (e.ndt_record_id = follow_examination.ndt_record_id
            or e.inspection_id = follow_examination.inspection_id)
  ), counted as (
    insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
    select c.weld_id, c.method, 'examined', null,
           format('examined: %s of %s counts toward %s', t.record, t.examined_on, c.lot_name),
           weld_hidden.current_user_id()
      from weld_private.lot_candidates(weld_private.rule_methods(), lines) c
      join this t on t.weld_id = c.weld_id
     where follow_examination.method = any(c.closes) and c.repair_cycle = 0
       and not exists (select from weld_public.examination_selections s
                        where s.tenant_id = tenant and s.method = c.method and s.weld_id = c.weld_id)
    returning id
  )
  select coalesce(array_agg(c.id), '{}') into made from counted c;

  for rejected in
    select s.id, e.record
      from weld_private.weld_examinations e
      join weld_public.welds w on w.tenant_id = e.tenant_id and w.id = e.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
      join weld_public.examination_selections s on s.tenant_id = e.tenant_id and s.weld_id = e.weld_id
     where e.tenant_id = tenant and e.weld_id = any(weld_ids) and e.result = 'rejected'
       and (e.ndt_record_id = follow_examination.ndt_record_id
            or e.inspection_id = follow_examination.inspection_id)
       and follow_examination.method = any(weld_private.closing_methods(tenant, s.method, i.fluid_service, w.type))
     order by i.line_number, s.weld_id, s.method
  loop
    made := made || weld_private.draw_next_tier(rejected.id, ndt_record_id, inspection_id, rejected.record);
  end loop;
  return made;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.follow_examination.sql
--! Included functions/weld_private.hold_released_packages.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Refuses (WD011) a change that leaves a released, tested or closed package not ready: the
-- packages are locked FOR SHARE (a release in flight waits, or is waited for) and judged again.
create or replace function weld_private.hold_released_packages(package_ids uuid[], change text)
  returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  package weld_public.test_packages;
  summary record;
  held jsonb := '[]';
begin
  if coalesce(cardinality(package_ids), 0) = 0 then
    return;
  end if;
  for package in
    select * from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id() and p.id = any(package_ids)
     order by p.id
       for share
  loop
    continue when package.state = 'open';
    select * into summary from weld_private.readiness_summary(package);
    if summary.reason_count > 0 then
      held := held || jsonb_build_array(jsonb_build_object(
        'testPackageId', package.id, 'packageNumber', package.package_number, 'state', package.state,
        'reasons', (select coalesce(jsonb_agg(r), '[]')
                      from (select r from jsonb_array_elements(summary.reasons) r limit 10) x),
        'reasonCount', summary.reason_count));
    end if;
  end loop;
  if jsonb_array_length(held) > 0 then
    -- A released package may be withdrawn; a tested or closed one is the record of its test:
    -- what it was judged on is revised as a new record (a new WPS revision, a new qualification).
    raise exception 'test package % is %: % would leave it not ready (%); %',
      held -> 0 ->> 'packageNumber', held -> 0 ->> 'state', change,
      held -> 0 -> 'reasons' -> 0 ->> 'detail',
      case when held -> 0 ->> 'state' = 'released' then 'withdraw it first'
           else 'it was tested on these records: record the change as a new one (a new WPS revision, a new qualification)' end
      using errcode = 'WD011', detail = jsonb_build_object('packages', held)::text;
  end if;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.hold_released_packages.sql
--! Included functions/weld_private.inches.sql
-- Inches as people write them: 2.875, 0.5, 14 (no trailing zeros).
-- These two have no SET clause so that PostgreSQL inlines them into the queries that call them
-- (thousands of rows at a time); they call only pg_catalog functions, and their callers pin
-- search_path.
create or replace function weld_private.inches(value numeric) returns text
  language sql immutable parallel safe
as $$
  select trim_scale(value)::text || ' in.'
$$;

grant execute on function weld_private.inches(numeric) to weld_rules;
--! EndIncluded functions/weld_private.inches.sql
--! Included functions/weld_private.inspection_write_welds.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Makes an inspection's welds the list weld_ids (a JSON list of UUIDs), writing only what differs.
create or replace function weld_private.inspection_write_welds(
  tenant uuid, inspection_id uuid, weld_ids jsonb
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from weld_public.inspection_welds iw
   where iw.tenant_id = tenant and iw.inspection_id = inspection_write_welds.inspection_id
     and not weld_ids ? iw.weld_id::text;
  insert into weld_public.inspection_welds (inspection_id, weld_id)
  select inspection_write_welds.inspection_id, w.weld_id::uuid
    from jsonb_array_elements_text(weld_ids) as w (weld_id)
   where not exists (select from weld_public.inspection_welds iw
                      where iw.tenant_id = tenant and iw.inspection_id = inspection_write_welds.inspection_id
                        and iw.weld_id = w.weld_id::uuid);
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.inspection_write_welds.sql
--! Included functions/weld_private.invalid_input.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD007: an invalid input, and where in it.
create or replace function weld_private.invalid_input(message text, pointer text) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  raise exception '%', message
    using errcode = 'WD007', detail = json_build_object('pointer', pointer)::text;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.invalid_input.sql
--! Included functions/weld_private.is_fillet.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Whether a weld type is a fillet weld (ASME IX: socket welds are fillet welds).
create or replace function weld_private.is_fillet(weld_type text) returns boolean
  language sql immutable parallel safe
as $$
  select weld_type in ('SW', 'FW')
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.is_fillet.sql
--! Included functions/weld_private.json_choice.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- One of the choices at input->key: null when absent (or JSON null, where nullable).
create or replace function weld_private.json_choice(
  input jsonb, key text, pointer text, choices text[], nullable boolean
) returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> key;
begin
  if value is null or (nullable and value = 'null') then
    return null;
  end if;
  if jsonb_typeof(value) <> 'string' or (value #>> '{}') <> all (choices) then
    perform weld_private.invalid_input(
      format('%s must be one of %s', key, array_to_string(choices, ', '))
        || case when nullable then ', or null' else '' end,
      weld_private.json_pointer(pointer, key));
  end if;
  return value #>> '{}';
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_choice.sql
--! Included functions/weld_private.json_date.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The functions that read dates from JSON (record_ndt, record_inspection and their corrections)
-- say the same, with a pointer to the field.
create or replace function weld_private.json_date(input jsonb, key text, pointer text) returns date
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> key;
begin
  if value is null then
    return null;
  end if;
  if jsonb_typeof(value) <> 'string' or (value #>> '{}') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'
     or not pg_input_is_valid(value #>> '{}', 'date')
     or (value #>> '{}')::date not between date '1900-01-01' and date '2200-12-31' then
    perform weld_private.invalid_input(
      format('%s must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31', key),
      weld_private.json_pointer(pointer, key));
  end if;
  return (value #>> '{}')::date;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_date.sql
--! Included functions/weld_private.json_list.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The list at input->key, of min_items to max_items.
create or replace function weld_private.json_list(
  input jsonb, key text, pointer text, min_items integer, max_items integer
) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> key;
begin
  -- Two steps: jsonb_array_length() fails on anything but a list.
  if jsonb_typeof(value) is distinct from 'array' then
    value := null;
  elsif jsonb_array_length(value) not between min_items and max_items then
    value := null;
  end if;
  if value is null then
    perform weld_private.invalid_input(
      case when min_items > 0
           then format('%s must be a list of %s to %s items', key, min_items, max_items)
           else format('%s must be a list of at most %s items', key, max_items) end,
      weld_private.json_pointer(pointer, key));
  end if;
  return value;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_list.sql
--! Included functions/weld_private.json_pointer.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A JSON Pointer one step further down (RFC 6901 escapes ~ and /).
create or replace function weld_private.json_pointer(base text, token text) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select base || '/' || replace(replace(token, '~', '~0'), '/', '~1')
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_pointer.sql
--! Included functions/weld_private.json_string.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The string input->key: null when absent (or JSON null, where nullable), else min_length to
-- max_length characters.
create or replace function weld_private.json_string(
  input jsonb, key text, pointer text, min_length integer, max_length integer, nullable boolean
) returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  value jsonb := input -> key;
begin
  if value is null or (nullable and value = 'null') then
    return null;
  end if;
  if jsonb_typeof(value) <> 'string'
     or char_length(value #>> '{}') not between min_length and max_length then
    perform weld_private.invalid_input(
      case when min_length > 0
           then format('%s must be a string of %s to %s characters', key, min_length, max_length)
           else format('%s must be a string of at most %s characters', key, max_length) end
        || case when nullable then ', or null' else '' end,
      weld_private.json_pointer(pointer, key));
  end if;
  return value #>> '{}';
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_string.sql
--! Included functions/weld_private.json_uuid.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A UUID, spelled as one (8-4-4-4-12 hex digits); `what` names it in the message.
create or replace function weld_private.json_uuid(value jsonb, pointer text, what text) returns uuid
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if jsonb_typeof(value) is distinct from 'string'
     or (value #>> '{}') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
    perform weld_private.invalid_input(format('%s must be a UUID', what), pointer);
  end if;
  return (value #>> '{}')::uuid;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_uuid.sql
--! Included functions/weld_private.json_uuid_list.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The list at input->key as distinct UUIDs, in canonical spelling: a JSON list of strings.
create or replace function weld_private.json_uuid_list(
  input jsonb, key text, pointer text, min_items integer, max_items integer
) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  list jsonb := weld_private.json_list(input, key, pointer, min_items, max_items);
  item jsonb;
  n integer;
  here text;
  id jsonb;
  ids jsonb := '[]';
begin
  for item, n in select e, o::integer - 1 from jsonb_array_elements(list) with ordinality as a (e, o) loop
    here := weld_private.json_pointer(weld_private.json_pointer(pointer, key), n::text);
    id := to_jsonb(weld_private.json_uuid(item, here, format('every item of %s', key)));
    if ids @> jsonb_build_array(id) then
      perform weld_private.invalid_input(format('%s lists %s twice', key, id #>> '{}'), here);
    end if;
    ids := ids || jsonb_build_array(id);
  end loop;
  return ids;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.json_uuid_list.sql
--! Included functions/weld_private.lock_line.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

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

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.lock_line.sql
--! Included functions/weld_private.lock_lines_of.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Lines take turns: draws, progressive examination and examinations of one line. Every writer
-- takes the locks of all its lines first, in order, before any weld lock, so none waits for
-- another in the opposite order.
create or replace function weld_private.lock_lines_of(weld_ids uuid[]) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select count(weld_private.lock_line(l.line_number))
    from (select distinct i.line_number
            from weld_public.welds w
            join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
           where w.tenant_id = weld_hidden.current_tenant_id() and w.id = any(weld_ids)
           order by 1) l
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.lock_lines_of.sql
--! Included functions/weld_private.lock_packages_of.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Every test package holding any of these welds (in its list, or through its ISO), locked FOR
-- SHARE in id order: whatever may make a package less ready (a weld leaving ACCEPTED, a new open
-- selection, a record taken off a weld) takes it, and a release (which updates the package, so
-- holds it FOR NO KEY UPDATE) waits for it, or it for the release. The release then judges what
-- committed; nothing slips in between its judgement and its commit.
create or replace function weld_private.lock_packages_of(weld_ids uuid[]) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select count(*)
    from (select p.id
            from weld_public.test_packages p
           where p.tenant_id = weld_hidden.current_tenant_id()
             and (p.id in (select l.test_package_id from weld_public.test_package_welds l
                            where l.tenant_id = p.tenant_id and l.weld_id = any(weld_ids))
                  or p.id in (select l.test_package_id
                                from weld_public.test_package_isos l
                                join weld_public.welds w on w.tenant_id = l.tenant_id and w.iso_id = l.iso_id
                               where l.tenant_id = p.tenant_id and w.id = any(weld_ids)))
           order by p.id
             for share of p) locked
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.lock_packages_of.sql
--! Included functions/weld_private.login_address_known.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Has this user signed in successfully from this address within 30 days? (False for no user.)
create or replace function weld_private.login_address_known(tenant uuid, user_id uuid, address text)
  returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select from weld_private.known_addresses k
     where k.tenant_id = tenant and k.user_id = login_address_known.user_id
       and k.address = login_address_known.address
       and k.last_success_at > now() - interval '30 days')
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.login_address_known.sql
--! Included functions/weld_private.login_take_back.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Takes back one attempt login_begin counted against an address (the attempt succeeded, or was
-- refused for its user name and so was no attempt at all).
create or replace function weld_private.login_take_back(tenant uuid, address text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  update weld_private.login_throttle t
     set failures = greatest(t.failures - 1, 0),
         blocked_until = case when t.failures - 1 >= 30 then t.blocked_until end
   where t.tenant_id = tenant and t.throttle_key = 'addr:' || address
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.login_take_back.sql
--! Included functions/weld_private.lot_candidates.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The candidates of the lots of `methods` on `lines`: each weld with its lot, the percent its
-- ISO requires and the methods that meet it. The one place lots are defined.
create or replace function weld_private.lot_candidates(methods text[], lines text[])
  returns table (
    method text, weld_id uuid, weld_number text, weld_type text, iso_id uuid, iso_number text,
    line_number text, welder_id uuid, welder_stamp text, welded_on date, repair_cycle integer,
    percent numeric, closes text[], lot text, lot_name text
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce(s.examination_lot, 'line') as lot_kind,
           coalesce(s.volumetric_interchangeable, true) as volumetric
      from (select) as one
      left join weld_public.tenant_settings s on s.tenant_id = weld_hidden.current_tenant_id()
  ), rt_types as (
    -- The weld types an ISO's rt_percent applies to: those of its service's RT rows, or the
    -- circumferential butt welds where it has none.
    select f.fluid_service,
           coalesce(array_agg(r.weld_type) filter (where r.weld_type is not null), '{BW,MW,TW}') as types
      from unnest(array['normal', 'category_d', 'category_m', 'severe_cyclic', 'high_pressure']) as f (fluid_service)
      left join weld_public.examination_rules r
        on r.tenant_id = weld_hidden.current_tenant_id() and r.fluid_service = f.fluid_service
       and r.method = 'RT'
     group by f.fluid_service
  )
  select m.method, w.id, w.weld_number, w.type, i.id, i.iso_number, i.line_number, w.welder_id,
         wr.stamp, w.welded_on, w.repair_cycle, p.percent,
         weld_private.closers(m.method, er.closed_by, st.volumetric),
         concat_ws('|', m.method, i.line_number, trim_scale(p.percent),
                   case st.lot_kind when 'line_welder' then coalesce(w.welder_id::text, '-') end),
         -- The lot in words: "RT 5% of line 3"-P-1059", "RT 5% of welder W004's welds on line 3"-P-1059".
         m.method || ' ' || trim_scale(p.percent) || '% of '
           || case st.lot_kind when 'line_welder'
                then coalesce('welder ' || wr.stamp || '''s welds', 'the welds without a welder') || ' on '
                else '' end
           || 'line ' || i.line_number
    from unnest(methods) as m (method)
    cross join settings st
    join weld_public.isos i
      on i.tenant_id = weld_hidden.current_tenant_id() and i.line_number = any(lines)
    join rt_types rt on rt.fluid_service = i.fluid_service
    join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
    left join weld_public.examination_rules er
      on er.tenant_id = i.tenant_id and er.fluid_service = i.fluid_service and er.method = m.method
     and er.weld_type = w.type
    left join weld_public.welders wr on wr.tenant_id = w.tenant_id and wr.id = w.welder_id
    cross join lateral (
      select greatest(er.percent, case when m.method = 'RT' and w.type = any(rt.types) then i.rt_percent end)
               as percent
    ) p
   where p.percent > 0 and w.status <> 'VOIDED' and w.welded_on is not null
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.lot_candidates.sql
--! Included functions/weld_private.lot_status.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Per lot of `methods` on `lines` (those touching weld_ids; every lot when null): its numbers.
create or replace function weld_private.lot_status(methods text[], lines text[], weld_ids uuid[])
  returns table (
    method text, lot text, lot_name text, percent numeric, welds integer, welders integer,
    required integer, selected integer, examined integer, shortfall integer,
    progressive_open integer, welders_not_covered uuid[], stamps_not_covered text[]
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with s as (
    select c.*, x.id as selection_id, x.tier,
           x.id is not null and exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = weld_hidden.current_tenant_id() and e.weld_id = c.weld_id
                and e.method = any(c.closes) and e.examined_on >= c.welded_on) as done
      from weld_private.lot_candidates(methods, lines) c
      left join weld_public.examination_selections x
        on x.tenant_id = weld_hidden.current_tenant_id() and x.method = c.method and x.weld_id = c.weld_id
  ), lots as (
    select s.method, s.lot, min(s.lot_name) as lot_name, max(s.percent) as percent,
           count(*)::integer as welds, count(distinct s.welder_id)::integer as welders,
           count(s.selection_id)::integer as selected, count(*) filter (where s.done)::integer as examined,
           count(*) filter (where s.tier in ('1', '2', 'full') and not s.done)::integer as progressive_open,
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
         n.ids, n.stamps
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
--! Included functions/weld_private.methods_words.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Methods in words: {MT,PT} -> "MT or PT".
create or replace function weld_private.methods_words(methods text[]) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when cardinality(methods) <= 1 then methods[1]
              else array_to_string(methods[1:cardinality(methods) - 1], ', ')
                   || ' or ' || methods[cardinality(methods)] end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.methods_words.sql
--! Included functions/weld_private.ndt_apply_status_changes.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Step 2, once the record is written: each move through change_weld_status, caused by the record.
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
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_apply_status_changes.sql
--! Included functions/weld_private.ndt_film_result.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The result the film gives a weld: rejected when any interval showing it is, accepted when all
-- are, null when none shows it.
create or replace function weld_private.ndt_film_result(intervals jsonb, weld_id text) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when bool_or(i ->> 'result' = 'rejected') then 'rejected'
              when count(*) > 0 then 'accepted' end
    from jsonb_array_elements(intervals) as i
   where i -> 'weldIds' ? weld_id
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_film_result.sql
--! Included functions/weld_private.ndt_intervals_input.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The film intervals of an NDT record as given (input->'filmIntervals'): up to 500 (a few per
-- weld), labels distinct, each showing 1 to 20 welds (one, or two where welds meet), at most
-- 1000 in all, as [{"label", "result", "defectCodes", "weldIds", "pointer"}].
create or replace function weld_private.ndt_intervals_input(input jsonb, pointer text) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  list jsonb := weld_private.json_list(input, 'filmIntervals', pointer, 0, 500);
  item jsonb;
  n integer;
  here text;
  interval_label text;
  verdict text;
  codes jsonb;
  code jsonb;
  k integer;
  weld_ids jsonb;
  mappings integer := 0;
  intervals jsonb := '[]';
begin
  for item, n in select e, o::integer - 1 from jsonb_array_elements(list) with ordinality as a (e, o) loop
    here := format('%s/filmIntervals/%s', pointer, n);
    perform weld_private.check_object(item, here, format('film interval %s', n + 1),
      '{label,result,defectCodes,weldIds}', '{label,result,defectCodes,weldIds}');
    interval_label := weld_private.json_string(item, 'label', here, 1, 21, false);
    if interval_label !~ '^[0-9A-Za-z]{1,10}-[0-9A-Za-z]{1,10}$' then
      perform weld_private.invalid_input('label must be two location markers, e.g. 0-1', here || '/label');
    end if;
    if intervals @> jsonb_build_array(jsonb_build_object('label', interval_label)) then
      perform weld_private.invalid_input(format('film interval %s is listed twice', interval_label),
                                         here || '/label');
    end if;
    verdict := weld_private.json_choice(item, 'result', here, '{accepted,rejected}', false);
    codes := weld_private.json_list(item, 'defectCodes', here, 0, 50);
    for code, k in select e, o::integer - 1 from jsonb_array_elements(codes) with ordinality as a (e, o) loop
      if jsonb_typeof(code) <> 'string' or char_length(code #>> '{}') not between 1 and 20 then
        perform weld_private.invalid_input('a defect code must be a string of 1 to 20 characters',
                                           format('%s/defectCodes/%s', here, k));
      end if;
    end loop;
    if verdict = 'rejected' and jsonb_array_length(codes) = 0 then
      perform weld_private.invalid_input(
        format('film interval %s is rejected, so it needs a defect code', interval_label),
        here || '/defectCodes');
    end if;
    weld_ids := weld_private.json_uuid_list(item, 'weldIds', here, 1, 20);
    mappings := mappings + jsonb_array_length(weld_ids);
    if mappings > 1000 then
      perform weld_private.invalid_input('the film intervals may show at most 1000 welds in all',
                                         pointer || '/filmIntervals');
    end if;
    intervals := intervals || jsonb_build_array(jsonb_build_object(
      'label', interval_label,
      'result', verdict,
      'defectCodes', codes,
      'weldIds', weld_ids,
      'pointer', here));
  end loop;
  return intervals;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_intervals_input.sql
--! Included functions/weld_private.ndt_results.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The results of an NDT record's welds, checked: film only on RT, film only of the record's welds,
-- welds that exist, a result for every weld (given, or derived for RT) and no given result its
-- film contradicts. welds and intervals as the *_input functions return them; an element without
-- a pointer was not in the input (a correction left that list as it was), and a problem with it
-- is reported at welds_pointer or intervals_pointer (the list the correction changed).
-- Returns [{"weldId", "result" (given), "effective"}].
create or replace function weld_private.ndt_results(
  method text, welds jsonb, intervals jsonb, welds_pointer text, intervals_pointer text
) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  problem record;
  item record;
  film text;
  rejecting record;
  unknown integer;
  name text;
  results jsonb := '[]';
begin
  if method <> 'RT' and jsonb_array_length(intervals) > 0 then
    perform weld_private.invalid_input(
      format('a %s record has no film intervals; only RT records do', method), intervals_pointer);
  end if;

  select e.i ->> 'label' as label, e.i ->> 'pointer' as pointer, w.weld_id, w.k into problem
    from jsonb_array_elements(intervals) with ordinality as e (i, n)
    cross join lateral jsonb_array_elements_text(e.i -> 'weldIds') with ordinality as w (weld_id, k)
   where not welds @> jsonb_build_array(jsonb_build_object('weldId', w.weld_id))
   order by e.n, w.k
   limit 1;
  if found then
    perform weld_private.invalid_input(
      format('film interval %s shows weld %s, which is not one of the record''s welds',
             problem.label, problem.weld_id),
      coalesce(problem.pointer || '/weldIds/' || (problem.k - 1), welds_pointer));
  end if;

  unknown := weld_private.first_unknown_weld(
    (select jsonb_agg(w -> 'weldId' order by n) from jsonb_array_elements(welds) with ordinality as e (w, n)));
  if unknown is not null then
    perform weld_private.invalid_input(format('there is no weld %s', welds -> unknown ->> 'weldId'),
                                       coalesce(welds -> unknown ->> 'pointer' || '/weldId', welds_pointer));
  end if;

  for item in
    select e.w ->> 'weldId' as weld_id, e.w ->> 'result' as given, e.w ->> 'pointer' as pointer, e.n
      from jsonb_array_elements(welds) with ordinality as e (w, n)
     order by e.n
  loop
    name := case when item.pointer is null then format('weld %s', item.weld_id)
                 else format('weld %s', item.n) end;
    film := weld_private.ndt_film_result(intervals, item.weld_id);
    if item.given is null and method <> 'RT' then
      perform weld_private.invalid_input(
        format('%s has no result; only RT results can be derived, from film intervals', name),
        coalesce(item.pointer || '/result', welds_pointer));
    elsif item.given is null and film is null then
      perform weld_private.invalid_input(
        format('%s has no result and no film interval shows it', name),
        coalesce(item.pointer || '/result', intervals_pointer));
    elsif item.given = 'accepted' and film = 'rejected' then
      select i ->> 'label' as label, i ->> 'pointer' as pointer into rejecting
        from jsonb_array_elements(intervals) with ordinality as e (i, n)
       where i -> 'weldIds' ? item.weld_id and i ->> 'result' = 'rejected'
       order by e.n limit 1;
      perform weld_private.invalid_input(
        format('%s is given accepted, but film interval %s shows it rejected', name, rejecting.label),
        coalesce(item.pointer || '/result', rejecting.pointer || '/result', intervals_pointer));
    elsif item.given = 'rejected' and film = 'accepted' then
      perform weld_private.invalid_input(
        format('%s is given rejected, but every film interval that shows it is accepted', name),
        coalesce(item.pointer || '/result', intervals_pointer));
    end if;
    results := results || jsonb_build_array(jsonb_build_object(
      'weldId', item.weld_id, 'result', item.given, 'effective', coalesce(item.given, film)));
  end loop;
  return results;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_results.sql
--! Included functions/weld_private.ndt_status_changes.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- NDT results to weld statuses, step 1, before anything is written: which welds must move, for
-- results [{"weldId", "effective"}] (the new ones). None when the tenant switched it off, nor a
-- weld already in its target status (ACCEPTED for accepted, REJECTED for rejected). Locks the
-- welds, in id order (two records never wait for each other in opposite orders), and refuses the
-- whole record (WD006) when the tenant's rules or the caller's role refuse any move; DETAIL
-- {"welds": [{"weldId", "weldNumber", "status", "result", "allowed"}]}, allowed being the statuses
-- the rules allow from the weld's current one. Returns [{"weldId", "status", "result"}].
--
-- NDT results to weld statuses, step 1 (as in 000009, without the line locks its callers now
-- take first): locks the welds, in id order, and refuses the whole record (WD006) when the
-- rules or the caller's role refuse a move.
create or replace function weld_private.ndt_status_changes(results jsonb) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  caller weld_public.user_role := weld_hidden.request_role();
  moves jsonb;
  refused jsonb;
begin
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

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_status_changes.sql
--! Included functions/weld_private.ndt_welds_input.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The welds of an NDT record as given (input->'welds'): 1 to 200 (an RT report covers a few
-- dozen), each once, as [{"weldId", "result" (null: derive it), "pointer"}].
create or replace function weld_private.ndt_welds_input(input jsonb, pointer text) returns jsonb
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  list jsonb := weld_private.json_list(input, 'welds', pointer, 1, 200);
  item jsonb;
  n integer;
  here text;
  weld jsonb;
  welds jsonb := '[]';
begin
  for item, n in select e, o::integer - 1 from jsonb_array_elements(list) with ordinality as a (e, o) loop
    here := format('%s/welds/%s', pointer, n);
    perform weld_private.check_object(item, here, format('weld %s', n + 1), '{weldId,result}', '{weldId}');
    weld := to_jsonb(weld_private.json_uuid(item -> 'weldId', here || '/weldId', 'weldId'));
    if welds @> jsonb_build_array(jsonb_build_object('weldId', weld)) then
      perform weld_private.invalid_input(format('weld %s is listed twice', weld #>> '{}'), here || '/weldId');
    end if;
    welds := welds || jsonb_build_array(jsonb_build_object(
      'weldId', weld,
      'result', weld_private.json_choice(item, 'result', here, '{accepted,rejected}', true),
      'pointer', here));
  end loop;
  return welds;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_welds_input.sql
--! Included functions/weld_private.ndt_write_lists.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Makes an NDT record's welds and film what `welds` and `intervals` say (as ndt_welds_input and
-- ndt_intervals_input return them), writing only what differs, so the history holds only real
-- changes: what goes first, then what changes, then what is new. A weld removed takes its film
-- mappings with it; an interval removed, its mappings.
create or replace function weld_private.ndt_write_lists(
  tenant uuid, record_id uuid, welds jsonb, intervals jsonb
) returns void
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from weld_public.film_interval_welds fw
   using weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
     and fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id
     and not exists (select from jsonb_array_elements(intervals) as i
                      where i ->> 'label' = f.label and i -> 'weldIds' ? fw.weld_id::text);
  delete from weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
     and not intervals @> jsonb_build_array(jsonb_build_object('label', f.label));
  delete from weld_public.ndt_record_welds nw
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt_write_lists.record_id
     and not welds @> jsonb_build_array(jsonb_build_object('weldId', nw.weld_id));

  update weld_public.ndt_record_welds nw
     set result = w ->> 'result'
    from jsonb_array_elements(welds) as w
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt_write_lists.record_id
     and nw.weld_id = (w ->> 'weldId')::uuid and nw.result is distinct from w ->> 'result';
  update weld_public.film_intervals f
     set result = i ->> 'result',
         defect_codes = array(select jsonb_array_elements_text(i -> 'defectCodes'))
    from jsonb_array_elements(intervals) as i
   where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
     and f.label = i ->> 'label'
     and (f.result, f.defect_codes) is distinct from
         (i ->> 'result', array(select jsonb_array_elements_text(i -> 'defectCodes')));

  insert into weld_public.ndt_record_welds (ndt_record_id, weld_id, result)
  select ndt_write_lists.record_id, (w ->> 'weldId')::uuid, w ->> 'result'
    from jsonb_array_elements(welds) as w
   where not exists (select from weld_public.ndt_record_welds nw
                      where nw.tenant_id = tenant and nw.ndt_record_id = ndt_write_lists.record_id
                        and nw.weld_id = (w ->> 'weldId')::uuid);
  insert into weld_public.film_intervals (ndt_record_id, label, result, defect_codes)
  select ndt_write_lists.record_id, i ->> 'label', i ->> 'result',
         array(select jsonb_array_elements_text(i -> 'defectCodes'))
    from jsonb_array_elements(intervals) as i
   where not exists (select from weld_public.film_intervals f
                      where f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id
                        and f.label = i ->> 'label');
  insert into weld_public.film_interval_welds (ndt_record_id, film_interval_id, weld_id)
  select ndt_write_lists.record_id, f.id, w.weld_id::uuid
    from jsonb_array_elements(intervals) as i
    join weld_public.film_intervals f
      on f.tenant_id = tenant and f.ndt_record_id = ndt_write_lists.record_id and f.label = i ->> 'label'
    cross join lateral jsonb_array_elements_text(i -> 'weldIds') as w (weld_id)
   where not exists (select from weld_public.film_interval_welds fw
                      where fw.tenant_id = tenant and fw.film_interval_id = f.id
                        and fw.weld_id = w.weld_id::uuid);
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.ndt_write_lists.sql
--! Included functions/weld_private.outside_diameter.sql
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

grant execute on function weld_private.outside_diameter(numeric) to weld_rules;
--! EndIncluded functions/weld_private.outside_diameter.sql
--! Included functions/weld_private.p_joint.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A joint as a sorted pair, so that 1 to 8 and 8 to 1 are one joint and {1} is 1 to 1; null when
-- a side is unknown. In words: "P-No. 1 to P-No. 8".
create or replace function weld_private.p_joint(a text, b text) returns text[]
  language sql immutable parallel safe
as $$
  select case when a is not null and coalesce(b, a) is not null
              then array[least(a, coalesce(b, a)), greatest(a, coalesce(b, a))] end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.p_joint.sql
--! Included functions/weld_private.p_joint_words.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.p_joint_words(joint text[]) returns text
  language sql immutable parallel safe
as $$
  select 'P-No. ' || joint[1] || ' to P-No. ' || joint[2]
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.p_joint_words.sql
--! Included functions/weld_private.packages_judged_on.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The not-open packages whose readiness reads these lines, WPSs or welders.
create or replace function weld_private.packages_judged_on(lines text[], wps_ids uuid[], welder_ids uuid[])
  returns uuid[]
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select w.id, w.iso_id
      from weld_public.welds w
     where w.tenant_id = weld_hidden.current_tenant_id()
       and (w.wps_id = any(wps_ids) or w.welder_id = any(welder_ids)
            or w.iso_id in (select i.id from weld_public.isos i
                             where i.tenant_id = weld_hidden.current_tenant_id() and i.line_number = any(lines)))
  )
  select array(
    select p.id
      from weld_public.test_packages p
     where p.tenant_id = weld_hidden.current_tenant_id() and p.state <> 'open'
       and (p.id in (select l.test_package_id from weld_public.test_package_welds l join w on w.id = l.weld_id
                      where l.tenant_id = p.tenant_id)
            or p.id in (select l.test_package_id from weld_public.test_package_isos l join w on w.iso_id = l.iso_id
                         where l.tenant_id = p.tenant_id))
     order by p.id)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.packages_judged_on.sql
--! Included functions/weld_private.pause_webhooks_of.sql
-- Pauses every endpoint `author_id` authored that is not paused yet, unless the author is an
-- active admin, and announces each with a `webhook.paused` event. Its data leaves the URL out:
-- every role of the tenant reads the feed, and only admins see endpoints. A delivery already
-- under way when the pause commits completes; nothing further is sent. Returns how many paused.
-- It takes the author's turn first (lock_webhook_author): a change that made them an endpoint's
-- author and committed meanwhile is seen here.
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
  perform pg_advisory_xact_lock(
    hashtextextended(tenant::text || '/' || author_id::text || '/webhook-author', 0));
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
--! EndIncluded functions/weld_private.pause_webhooks_of.sql
--! Included functions/weld_private.pqr_thickness_support.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The base-metal thickness a coupon of thickness t supports (QW-451.1), as a range.
create or replace function weld_private.pqr_thickness_support(tenant uuid, t numeric) returns numrange
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select numrange(coalesce(r.min_in, r.min_factor * t), least(r.max_in, r.max_factor * t), '[]')
    from weld_public.procedure_thickness_rules r
   where r.tenant_id = tenant and r.coupon @> t
   order by least(r.max_in, r.max_factor * t) desc
   limit 1
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.pqr_thickness_support.sql
--! Included functions/weld_private.qualification_facts.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.qualification_facts(
  welder_ids uuid[], pending weld_public.welds[] default '{}'
)
  returns table (
    qualification_id uuid, welder_id uuid, process text, processes text[], wps_id uuid,
    label text, joint text, qualified_on date, expires_on date, revoked_on date,
    revocation_reason text, last_continuity_on date, continuity_until date, lapse_after date,
    positions text[], diameter_known boolean, diameter_min numeric, diameter_max numeric,
    thickness_known boolean, thickness_max numeric
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with settings as (
    select coalesce((select s.continuity_months from weld_public.tenant_settings s
                      where s.tenant_id = weld_hidden.current_tenant_id()), 6) as months
  ), q as (
    select q.*, string_to_array(coalesce(q.process, qw.process), '+') as procs,
           coalesce(q.coupon_diameter_in, p.diameter_tested_in) as coupon_d,
           coalesce(q.coupon_thickness_in, p.thickness_tested_in) as coupon_t,
           coalesce('WPS ' || qw.wps_number || ' rev ' || qw.revision, q.process)
             || ' qualified ' || q.qualified_on as label
      from weld_public.welder_qualifications q
      left join weld_public.wps qw on qw.tenant_id = q.tenant_id and qw.id = q.wps_id
      left join weld_public.pqrs p on p.tenant_id = q.tenant_id and p.id = q.pqr_id
     where q.tenant_id = weld_hidden.current_tenant_id() and q.welder_id = any(welder_ids)
  ), qp as (
    select q.*, x.process as one from q cross join lateral unnest(q.procs) as x (process)
  ), days as (
    -- The days each welder used each process, once each: the welds on record (an index-only scan
    -- of welds_welder_wps_day_idx, the pending ones left out; a VOIDED weld is no use, as in the
    -- continuity log) and the continuity log.
    select distinct d.welder_id, x.process, d.day
      from (select distinct w.welder_id, w.wps_id, w.welded_on as day
              from weld_public.welds w
             where w.tenant_id = weld_hidden.current_tenant_id() and w.welder_id = any(welder_ids)
               and w.wps_id is not null and w.welded_on is not null and w.status <> 'VOIDED'
               and not w.id = any(array(select p.id from unnest(pending) p))) d
      join weld_public.wps ww on ww.tenant_id = weld_hidden.current_tenant_id() and ww.id = d.wps_id
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
    union
    select c.welder_id, c.process, c.used_on
      from weld_public.welder_continuity c
     where c.tenant_id = weld_hidden.current_tenant_id() and c.welder_id = any(welder_ids)
  ), islands as (
    -- Runs of those days without a gap longer than the continuity period, per welder and process:
    -- a welder's thousand welds become a few intervals.
    select r.welder_id, r.process, min(r.day) as start_on, max(r.day) as end_on
      from (select g.*, count(*) filter (where g.day > (g.previous + make_interval(months => s.months))::date)
                          over (partition by g.welder_id, g.process order by g.day) as run
              from (select d.*, lag(d.day) over (partition by d.welder_id, d.process order by d.day) as previous
                      from days d) g
              cross join settings s) r
     group by r.welder_id, r.process, r.run
     union all
    -- The pending welds, each a day of its own.
    select p.welder_id, x.process, p.welded_on, p.welded_on
      from unnest(pending) p
      join weld_public.wps ww on ww.tenant_id = p.tenant_id and ww.id = p.wps_id
      cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
     where p.welder_id = any(welder_ids) and p.welded_on is not null
  ), uses as (
    select qp.id, qp.one, qp.qualified_on as start_on, qp.qualified_on as end_on from qp
    union all
    select qp.id, qp.one, qp.last_continuity_on, qp.last_continuity_on
      from qp where qp.last_continuity_on is not null
    union all
    select qp.id, qp.one, greatest(i.start_on, qp.qualified_on), i.end_on
      from qp
      join islands i on i.welder_id = qp.welder_id and i.process = qp.one and i.end_on >= qp.qualified_on
  ), chained as (
    -- In order of start, how far the uses so far reach, and where the next one starts.
    select u.id, u.one,
           max(u.end_on) over (partition by u.id, u.one order by u.start_on, u.end_on rows unbounded preceding) as reach,
           lead(u.start_on) over (partition by u.id, u.one order by u.start_on, u.end_on) as next_start
      from uses u
  ), breaks as (
    -- The first gap longer than the continuity period (reach only grows, so the least reach).
    select c.id, c.one, min(c.reach) as lapse_after
      from chained c, settings s
     where c.next_start is null or c.next_start > (c.reach + make_interval(months => s.months))::date
     group by c.id, c.one
  )
  select qp.id, qp.welder_id, qp.one, qp.procs, qp.wps_id, qp.label, qp.joint, qp.qualified_on,
         qp.expires_on, qp.revoked_on, qp.revocation_reason, qp.last_continuity_on,
         (b.lapse_after + make_interval(months => s.months))::date, b.lapse_after, qp.positions,
         qp.diameter_min_in is not null or (qp.coupon_d is not null and dr.min_in is not null),
         coalesce(qp.diameter_min_in, dr.min_in),
         coalesce(qp.diameter_max_in, dr.max_factor * qp.coupon_d),
         qp.thickness_max_in is not null or (qp.coupon_t is not null and tr.found),
         coalesce(qp.thickness_max_in, tr.max_factor * qp.coupon_t)
    from qp
    cross join settings s
    join breaks b on b.id = qp.id and b.one = qp.one
    left join lateral (
      -- The most generous QW-452.3 row for the coupon: the smallest diameter it qualifies.
      select coalesce(r.min_in, qp.coupon_d) as min_in, r.max_factor
        from weld_public.qualification_range_rules r
       where r.tenant_id = qp.tenant_id and r.dimension = 'diameter' and r.coupon @> qp.coupon_d
         and (qp.three_layers or not r.three_layers)
       order by coalesce(r.min_in, qp.coupon_d), r.max_factor desc nulls first
       limit 1) dr on true
    left join lateral (
      -- The most generous QW-452.1(b) row: no limit first, then the largest factor.
      select true as found, r.max_factor
        from weld_public.qualification_range_rules r
       where r.tenant_id = qp.tenant_id and r.dimension = 'thickness' and r.coupon @> qp.coupon_t
         and (qp.three_layers or not r.three_layers)
       order by r.max_factor desc nulls first
       limit 1) tr on true
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.qualification_facts.sql
--! Included functions/weld_private.range_words.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Inches for a thickness range: "0.063 to 0.5 in.", "0.188 in. and up".
create or replace function weld_private.range_words(r numrange) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when upper_inf(r) then weld_private.inches(lower(r)) || ' and up'
              else trim_scale(lower(r))::text || ' to ' || weld_private.inches(upper(r)) end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.range_words.sql
--! Included functions/weld_private.readiness_summary.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The first 100 reasons as the refusals carry them, and how many there are.
create or replace function weld_private.readiness_summary(test_package weld_public.test_packages)
  returns table (reasons jsonb, reason_count integer)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
           'code', r.code, 'weldId', r.weld_id, 'isoId', r.iso_id, 'detail', r.detail)) order by r.n)
           filter (where r.n <= 100), '[]'),
         count(*)::integer
    from (select x.*, row_number() over () as n
            from weld_public.test_packages_readiness_reasons(test_package) x) r
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.readiness_summary.sql
--! Included functions/weld_private.reexaminations_of.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Each re-examination of the given welds with the examination that meets it (null: open). The
-- record must be of the method or its volumetric equal, and dated on or after the re-weld.
create or replace function weld_private.reexaminations_of(weld_ids uuid[])
  returns table (
    id uuid, weld_id uuid, method text, methods text[], repair_cycle integer, rewelded_on date,
    cause text, met_by text, met_on date
  )
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select r.id, r.weld_id, r.method, m.methods, r.repair_cycle, r.rewelded_on, r.cause,
         e.record, e.examined_on
    from weld_public.weld_reexaminations r
    cross join lateral (
      select weld_private.closing_methods(r.tenant_id, r.method, null, null) as methods) m
    left join lateral (
      select x.record, x.examined_on
        from weld_private.weld_examinations x
       where x.tenant_id = r.tenant_id and x.weld_id = r.weld_id and x.method = any(m.methods)
         and x.examined_on >= r.rewelded_on
       order by x.examined_on, x.created_at
       limit 1) e on true
   where r.tenant_id = weld_hidden.current_tenant_id() and r.weld_id = any(weld_ids)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.reexaminations_of.sql
--! Included functions/weld_private.refresh_event.sql
-- A resource's event fired again in this transaction shows the resource as it is now. At commit
-- that changes nothing (the first firing saw the final state already); it matters when a session
-- fires the triggers early (SET CONSTRAINTS ALL IMMEDIATE) and changes the resource again. The
-- type stays the first firing's.
create or replace function weld_private.refresh_event(tenant uuid, kind text, subject uuid, data jsonb)
  returns void
  language sql volatile
as $$
  update weld_public.events e set data = refresh_event.data
    from weld_private.transaction_event(tenant, kind, subject) this
   where e.tenant_id = tenant and e.id = this.id and e.data is distinct from refresh_event.data
$$;
--! EndIncluded functions/weld_private.refresh_event.sql
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
   where p.code not in ('DATA_MISSING', 'REEXAMINATION_OPEN')
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
--! Included functions/weld_private.refuse_unwelded_examinations.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The first weld of `links` (weld_id, examined_on, record) that breaks the rule, as a refusal.
-- `what`: 'ndt' or 'inspection', for the pointers.
create or replace function weld_private.refuse_unwelded_examinations(
  links jsonb, what text
) returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  bad record;
begin
  select w.weld_number, i.iso_number, w.welded_on, (l ->> 'examinedOn')::date as examined_on,
         l ->> 'record' as record
    into bad
    from jsonb_array_elements(links) as l
    join weld_public.welds w
      on w.tenant_id = (l ->> 'tenantId')::uuid and w.id = (l ->> 'weldId')::uuid
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
   where w.welded_on is null or w.welded_on > (l ->> 'examinedOn')::date
   order by w.welded_on is not null, i.iso_number, w.weld_number
   limit 1;
  if not found then
    return;
  end if;
  if bad.welded_on is null then
    raise exception 'weld % on ISO % has no date welded: a weld is examined once it is welded (record its weldedOn first)',
      bad.weld_number, bad.iso_number
      using errcode = 'WD007',
            detail = json_build_object('pointer', case what when 'ndt' then '/welds' else '/weldIds' end)::text;
  end if;
  raise exception 'weld % on ISO % was welded on %, after % dated %',
    bad.weld_number, bad.iso_number, bad.welded_on, bad.record, bad.examined_on
    using errcode = 'WD007',
          detail = json_build_object('pointer', case what when 'ndt' then '/examinedOn' else '/inspectedOn' end)::text;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.refuse_unwelded_examinations.sql
--! Included functions/weld_private.require_role.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD003 unless the caller's request role is at least least_role.
create or replace function weld_private.require_role(least_role weld_public.user_role, action text)
  returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(weld_hidden.request_role() < least_role, true) then
    raise exception '% needs the % role', action, least_role using errcode = 'WD003';
  end if;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.require_role.sql
--! Included functions/weld_private.rule_methods.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The methods any lot of the tenant may require: those of its rules, and RT (an ISO's rt_percent).
create or replace function weld_private.rule_methods() returns text[]
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select array(select m.method
                 from (select 'RT' as method
                       union
                       select r.method from weld_public.examination_rules r
                        where r.tenant_id = weld_hidden.current_tenant_id()) m
                order by 1)
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.rule_methods.sql
--! Included functions/weld_private.secure_tenant_table.sql
-- Every tenant table gets the same protection: row security enabled and forced (so the owner is
-- subject to it too, unless it has BYPASSRLS), and one policy: rows of the current tenant only,
-- for reading and for writing. A test reads the catalog and fails for a table that skipped this.
--
-- And the same GraphQL face: tenant_id is implied by the session, so the column is hidden, and
-- so are the single-row lookups by keys that start with it (rows are reached through node(id)
-- and the filtered collections instead).
create or replace function weld_private.secure_tenant_table(tbl regclass) returns void
  language plpgsql
as $$
declare
  key_name name;
begin
  execute format('alter table %s enable row level security', tbl);
  execute format('alter table %s force row level security', tbl);
  execute format(
    'create policy tenant_isolation on %s
       using (tenant_id = (select weld_hidden.current_tenant_id()))
       with check (tenant_id = (select weld_hidden.current_tenant_id()))', tbl);
  execute format('comment on column %s.tenant_id is %L', tbl, '@behavior -*');
  for key_name in
    select conname from pg_catalog.pg_constraint where conrelid = tbl and contype in ('p', 'u')
  loop
    execute format('comment on constraint %I on %s is %L', key_name, tbl, '@behavior -single -update -delete');
  end loop;
end
$$;
--! EndIncluded functions/weld_private.secure_tenant_table.sql
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
$$;
--! EndIncluded functions/weld_private.seed_code_rules.sql
--! Included functions/weld_private.seed_transition_rules.sql
-- The default rules of DOMAIN.md, for one tenant.
create or replace function weld_private.seed_transition_rules(for_tenant uuid) returns void
  language sql
as $$
  insert into weld_public.weld_transition_rules
    (tenant_id, from_status, to_status, least_role, reason_required, note)
  values
    (for_tenant, 'PENDING',  'ACCEPTED', 'inspector', false, 'examination passed'),
    (for_tenant, 'PENDING',  'REJECTED', 'inspector', false, 'examination failed'),
    (for_tenant, 'ACCEPTED', 'REJECTED', 'inspector', true,  'a later examination found a defect'),
    (for_tenant, 'REJECTED', 'REPAIR',   'engineer',  false, 'repair released; repair cycle + 1'),
    (for_tenant, 'REPAIR',   'PENDING',  'inspector', false, 'repair welded, awaiting re-examination by the same method'),
    (for_tenant, 'PENDING',  'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design'),
    (for_tenant, 'ACCEPTED', 'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design'),
    (for_tenant, 'REJECTED', 'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design'),
    (for_tenant, 'REPAIR',   'VOIDED',   'engineer',  true,  'weld cut out or deleted from the design')
  on conflict do nothing
$$;
--! EndIncluded functions/weld_private.seed_transition_rules.sql
--! Included functions/weld_private.selection_examination.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The examination that meets a selection (the earliest); none while it is open.
create or replace function weld_private.selection_examination(
  selection weld_public.examination_selections
) returns table (ndt_record_id uuid, inspection_id uuid, examined_on date, result text, record text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select e.ndt_record_id, e.inspection_id, e.examined_on, e.result, e.record
    from weld_public.welds w
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
    join weld_private.weld_examinations e
      on e.tenant_id = w.tenant_id and e.weld_id = w.id and e.examined_on >= w.welded_on
     and e.method = any(weld_private.closing_methods(w.tenant_id, selection.method, i.fluid_service, w.type))
   where w.tenant_id = selection.tenant_id and w.id = selection.weld_id
   order by e.examined_on, e.created_at, e.ndt_record_id, e.inspection_id
   limit 1
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.selection_examination.sql
--! Included functions/weld_private.set_user_password.sql
-- Setting a password finds the user by name case-insensitively too (citext's `=`, named for the
-- same reason as in login_begin: 000003 compared the names as text).
create or replace function weld_private.set_user_password(tenant uuid, user_name public.citext, password_hash text)
  returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
  select u.tenant_id, u.id, set_user_password.password_hash from weld_public.users u
   where u.tenant_id = tenant and u.user_name operator(public.=) set_user_password.user_name
  on conflict (tenant_id, user_id) do update set password_hash = excluded.password_hash, updated_at = now()
  returning true
$$;
--! EndIncluded functions/weld_private.set_user_password.sql
--! Included functions/weld_private.tenant_list.sql
create or replace function weld_private.tenant_list()
  returns table (id uuid, slug text, name text, origins text[], created_at timestamptz)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select t.id, t.slug, t.name,
         array(select o.origin from weld_private.tenant_origins o
               where o.tenant_id = t.id order by o.origin),
         t.created_at
  from weld_public.tenants t
  order by t.slug
$$;
--! EndIncluded functions/weld_private.tenant_list.sql
--! Included functions/weld_private.tenants_seed_rules.sql
create or replace function weld_private.tenants_seed_rules() returns trigger
  language plpgsql
as $$
begin
  perform weld_private.seed_transition_rules(new.id);
  return new;
end
$$;

create or replace trigger tenants_seed_rules after insert on weld_public.tenants
  for each row execute function weld_private.tenants_seed_rules();
--! EndIncluded functions/weld_private.tenants_seed_rules.sql
--! Included functions/weld_private.tg__approved_wps_qualified.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- An approved WPS is a qualified one (WD013). Checked at commit, when the WPS and its PQR list
-- are both written (REST writes the row, then its pqrIds): approving a WPS, changing an approved
-- one's ranges or P-numbers, taking a PQR off it, or changing a PQR that backs one. Requests
-- only: the seed generator and a DBA are not held to it (their WPSs show WPS_RANGE_UNSUPPORTED).
create or replace function weld_private.tg__approved_wps_qualified() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid;
  wps_ids uuid[];
  bad record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'wps' then
      tenant := new.tenant_id;
      wps_ids := array[new.id];
    when 'wps_pqrs' then
      tenant := old.tenant_id;
      wps_ids := array[old.wps_id];
    else -- pqrs
      tenant := new.tenant_id;
      wps_ids := array(select l.wps_id from weld_public.wps_pqrs l
                        where l.tenant_id = new.tenant_id and l.pqr_id = new.id);
  end case;
  select w.id, w.wps_number, w.revision,
         jsonb_agg(jsonb_build_object('code', 'WPS_RANGE_UNSUPPORTED', 'detail', p.detail)
                   order by p.aspect, p.detail) as checks
    into bad
    from weld_public.wps w
    join weld_private.wps_problems(wps_ids) p on p.wps_id = w.id
   where w.tenant_id = tenant and w.id = any(wps_ids) and w.state = 'approved'
   group by w.id, w.wps_number, w.revision
   order by w.wps_number, w.revision
   limit 1;
  if found then
    raise exception 'WPS % rev % is approved but not qualified by its PQRs: %', bad.wps_number, bad.revision,
      (bad.checks -> 0 ->> 'detail')
      -- wpsId names the WPS refused, unless the refusal is of its creation: then nothing exists.
      using errcode = 'WD013', detail = jsonb_strip_nulls(jsonb_build_object(
        'wpsId', case when not (tg_table_name = 'wps' and tg_op = 'INSERT') then bad.id end,
        'checks', bad.checks))::text;
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

drop trigger if exists _800_approved_wps_qualified on weld_public.pqrs;
create constraint trigger _800_approved_wps_qualified
  after update of process, p_numbers, thickness_tested_in on weld_public.pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__approved_wps_qualified();
drop trigger if exists _800_approved_wps_qualified on weld_public.wps;
create constraint trigger _800_approved_wps_qualified
  after insert or update of state, thickness_min_in, thickness_max_in, p_numbers on weld_public.wps
  deferrable initially deferred
  for each row when (new.state = 'approved')
  execute function weld_private.tg__approved_wps_qualified();
drop trigger if exists _800_approved_wps_qualified on weld_public.wps_pqrs;
create constraint trigger _800_approved_wps_qualified after delete on weld_public.wps_pqrs
  deferrable initially deferred
  for each row execute function weld_private.tg__approved_wps_qualified();
--! EndIncluded functions/weld_private.tg__approved_wps_qualified.sql
--! Included functions/weld_private.tg__examination_updated.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- An NDT record or inspection was updated.
create or replace function weld_private.tg__examination_updated() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  diff record;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  select * into diff from weld_private.changed_columns(to_jsonb(old), to_jsonb(new));
  if diff.before is not null then
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, tg_argv[0], new.id, 'updated', diff.before, diff.after,
            weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _900_examination_change after update on weld_public.inspections
  for each row execute function weld_private.tg__examination_updated('inspection');
create or replace trigger _900_examination_change after update on weld_public.ndt_records
  for each row execute function weld_private.tg__examination_updated('ndt_record');
--! EndIncluded functions/weld_private.tg__examination_updated.sql
--! Included functions/weld_private.tg__examination_weld_link.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The link without its tenant and record: {"weld_id"}, and "result" for NDT records.
create or replace function weld_private.tg__examination_weld_link() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link jsonb;
  record_id uuid;
  diff record;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'DELETE' then
    link := to_jsonb(old);
  else
    link := to_jsonb(new);
  end if;
  record_id := (link ->> tg_argv[1])::uuid;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction(tg_argv[0], new.tenant_id, record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes
      (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, tg_argv[0], record_id, 'weld_added', null,
            link - 'tenant_id' - tg_argv[1], weld_hidden.current_user_id());
  elsif tg_op = 'UPDATE' then
    select * into diff from weld_private.changed_columns(to_jsonb(old), to_jsonb(new));
    if diff.before is not null then
      insert into weld_public.examination_changes
        (tenant_id, subject, record_id, change, before, after, changed_by)
      values (new.tenant_id, tg_argv[0], record_id, 'weld_updated',
              jsonb_build_object('weld_id', old.weld_id) || diff.before,
              jsonb_build_object('weld_id', new.weld_id) || diff.after,
              weld_hidden.current_user_id());
    end if;
  else
    insert into weld_public.examination_changes
      (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, tg_argv[0], record_id, 'weld_removed',
            link - 'tenant_id' - tg_argv[1], null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _900_examination_change after insert or delete on weld_public.inspection_welds
  for each row execute function weld_private.tg__examination_weld_link('inspection', 'inspection_id');
create or replace trigger _900_examination_change after insert or update or delete on weld_public.ndt_record_welds
  for each row execute function weld_private.tg__examination_weld_link('ndt_record', 'ndt_record_id');
--! EndIncluded functions/weld_private.tg__examination_weld_link.sql
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
                               n.diameter_max_in, n.p_numbers)
                              is distinct from (o.state, o.thickness_min_in, o.thickness_max_in,
                                                o.diameter_min_in, o.diameter_max_in, o.p_numbers));
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
  end case;
  if cardinality(lines) + cardinality(wps_ids) + cardinality(welder_ids) = 0 then
    return null;
  end if;
  perform weld_private.hold_released_packages(
    weld_private.packages_judged_on(lines, wps_ids, welder_ids), change);
  if tg_table_name <> 'isos' then
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
--! EndIncluded functions/weld_private.tg__judged_on.sql
--! Included functions/weld_private.tg__lock_packages.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A new selection, or a record taken off a weld, may make a package less ready: its packages
-- are locked (section 12), once per statement.
create or replace function weld_private.tg__lock_packages() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    perform weld_private.lock_packages_of(array(select distinct n.weld_id from new_rows n));
  else
    perform weld_private.lock_packages_of(array(select distinct o.weld_id from old_rows o));
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
--! EndIncluded functions/weld_private.tg__lock_packages.sql
--! Included functions/weld_private.tg__lock_packages_of_record.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A record re-dated (or an inspection made or unmade visual) may reopen what its welds owe: the
-- same locks, for the welds it covers. (Row triggers: a column list allows no transition table,
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
  else
    perform weld_private.lock_packages_of(array(
      select iw.weld_id from weld_public.inspection_welds iw
       where iw.tenant_id = new.tenant_id and iw.inspection_id = new.id));
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
--! EndIncluded functions/weld_private.tg__lock_packages_of_record.sql
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
    perform pg_advisory_xact_lock(hashtext('weld_public.events'), hashtext(tenant::text));
    select e.id, e.type into earlier_id, earlier_type
      from weld_private.transaction_event(tenant, kind, subject) e;
    if earlier_type = kind || '.created' then
      delete from weld_public.events e where e.tenant_id = tenant and e.id = earlier_id;
    elsif earlier_id is not null then
      update weld_public.events e
         set type = kind || '.deleted', data = weld_private.contract_json(to_jsonb(old)), change = null
       where e.tenant_id = tenant and e.id = earlier_id;
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

drop trigger if exists _900_outbox on weld_public.inspections;
create constraint trigger _900_outbox after insert or delete or update on weld_public.inspections
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('inspection');
drop trigger if exists _900_outbox on weld_public.isos;
create constraint trigger _900_outbox after insert or delete or update on weld_public.isos
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('iso');
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
  for each row execute function weld_private.tg__outbox('weld');
drop trigger if exists _900_outbox on weld_public.wps;
create constraint trigger _900_outbox after insert or delete or update on weld_public.wps
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('wps');
--! EndIncluded functions/weld_private.tg__outbox.sql
--! Included functions/weld_private.tg__selection_closure.sql
-- A selection closes when an examination that meets it first covers its weld, and reopens when a
-- correction takes the weld off the last one (NDT record or visual inspection). At commit: an
-- examination this transaction did not touch (updated before now()) met it already, so nothing
-- changed for it.
create or replace function weld_private.tg__selection_closure() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link jsonb := to_jsonb(case tg_op when 'DELETE' then old else new end);
  tenant uuid := (link ->> 'tenant_id')::uuid;
  weld uuid := (link ->> 'weld_id')::uuid;
  ndt uuid := (link ->> 'ndt_record_id')::uuid;
  inspection uuid := (link ->> 'inspection_id')::uuid;
  selection record;
begin
  if weld_private.events_suppressed() then
    return null;
  end if;
  for selection in
    select s.id, weld_public.examination_selections_state(s) as state,
           weld_private.closing_methods(s.tenant_id, s.method, i.fluid_service, w.type) as methods
      from weld_public.examination_selections s
      join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where s.tenant_id = tenant and s.weld_id = weld
       -- A selection made in this transaction is announced once, as opened (with its state).
       and s.selected_at < now()
  loop
    -- Only selections this record's method meets.
    continue when not exists (
      select from weld_public.ndt_records r
       where r.tenant_id = tenant and r.id = ndt and r.method = any(selection.methods)
      union all
      select from weld_public.inspections x
       where x.tenant_id = tenant and x.id = inspection and x.kind = 'visual' and 'VT' = any(selection.methods));
    continue when exists (
      select from weld_public.ndt_record_welds nw
        join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
       where nw.tenant_id = tenant and nw.weld_id = weld and r.method = any(selection.methods)
         and r.id is distinct from ndt and r.updated_at < now()
      union all
      select from weld_public.inspection_welds iw
        join weld_public.inspections x on x.tenant_id = iw.tenant_id and x.id = iw.inspection_id
       where iw.tenant_id = tenant and iw.weld_id = weld and x.kind = 'visual' and 'VT' = any(selection.methods)
         and x.id is distinct from inspection and x.updated_at < now());
    if tg_op = 'INSERT' and selection.state = 'done' then
      perform weld_private.emit_event(tenant, 'examination_selection.closed', selection.id,
        weld_private.event_data('examination_selection', tenant, selection.id), null);
    elsif tg_op = 'DELETE' and selection.state = 'open' then
      perform weld_private.emit_event(tenant, 'examination_selection.reopened', selection.id,
        weld_private.event_data('examination_selection', tenant, selection.id), null);
    end if;
  end loop;
  return null;
end
$$;

drop trigger if exists _900_outbox_selections on weld_public.inspection_welds;
create constraint trigger _900_outbox_selections after insert or delete on weld_public.inspection_welds
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_closure();
drop trigger if exists _900_outbox_selections on weld_public.ndt_record_welds;
create constraint trigger _900_outbox_selections after insert or delete on weld_public.ndt_record_welds
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_closure();
--! EndIncluded functions/weld_private.tg__selection_closure.sql
--! Included functions/weld_private.tg__selection_outbox.sql
-- A selection is opened when it is made (drawn, counted or progressive); at that moment, under
-- the tenant's commit-order lock, it takes its event's id as its position, so lists in position
-- order never skip a selection that committed late. (Bulk loads that leave the feed out take a
-- number from the same sequence.)
create or replace function weld_private.tg__selection_outbox() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  announced bigint;
begin
  if weld_private.events_suppressed() then
    announced := nextval(pg_get_serial_sequence('weld_public.events', 'id'));
  else
    perform weld_private.emit_event(new.tenant_id, 'examination_selection.opened', new.id,
      coalesce(weld_private.event_data('examination_selection', new.tenant_id, new.id), '{}'), null);
    select e.id into announced
      from weld_private.transaction_event(new.tenant_id, 'examination_selection', new.id) e;
  end if;
  update weld_public.examination_selections s set position = announced
   where s.tenant_id = new.tenant_id and s.id = new.id;
  return null;
end
$$;

drop trigger if exists _900_outbox on weld_public.examination_selections;
create constraint trigger _900_outbox after insert on weld_public.examination_selections
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_outbox();
--! EndIncluded functions/weld_private.tg__selection_outbox.sql
--! Included functions/weld_private.tg__set_recorded_by.sql
-- SECURITY INVOKER: it reads the caller's own request role and user.
create or replace function weld_private.tg__set_recorded_by() returns trigger
  language plpgsql volatile
as $$
begin
  if weld_hidden.request_role() is not null then
    new.recorded_by := weld_hidden.current_user_id();
  end if;
  return new;
end
$$;

create or replace trigger _100_set_recorded_by before insert on weld_public.inspections
  for each row execute function weld_private.tg__set_recorded_by();
create or replace trigger _100_set_recorded_by before insert on weld_public.ndt_records
  for each row execute function weld_private.tg__set_recorded_by();
create or replace trigger _100_set_recorded_by before insert on weld_public.welder_continuity
  for each row execute function weld_private.tg__set_recorded_by();
--! EndIncluded functions/weld_private.tg__set_recorded_by.sql
--! Included functions/weld_private.tg__test_package_open.sql
-- A test package's ISOs and welds change, and the package is deleted, only while it is open
-- (WD008). A membership whose package is gone is deleted with it (the package's own delete
-- cascades). Its state moves forward only: open -> released -> tested -> closed, or from released
-- back to open (a release withdrawn before the test); anything else is WD008 too, so a closed
-- package cannot be reopened to change its members. Writes outside a request (the owner: the seed
-- generator writes released packages with their members, a DBA) are not held to these rules, as
-- for recorded_by in 000006.
--
-- SECURITY INVOKER: whoever may change a membership may read and update its package. The package
-- is locked FOR NO KEY UPDATE, so a release cannot slip in between the check and the commit, and
-- concurrent changes of one package's members queue: the touch trigger (section 2) then updates
-- the package in the same transaction, and a weaker lock (FOR SHARE), held by two of them, would
-- have each wait for the other to upgrade it: a deadlock.
create or replace function weld_private.tg__test_package_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  package weld_public.test_packages;
begin
  if weld_hidden.request_role() is not null then
    if tg_op = 'DELETE' then
      select * into package from weld_public.test_packages p
       where p.tenant_id = old.tenant_id and p.id = old.test_package_id
         for no key update;
    else
      select * into package from weld_public.test_packages p
       where p.tenant_id = new.tenant_id and p.id = new.test_package_id
         for no key update;
    end if;
    if found and package.state <> 'open' then
      raise exception 'test package % is %; its ISOs and welds change only while it is open',
        package.package_number, package.state
        using errcode = 'WD008';
    end if;
  end if;
  if tg_op = 'DELETE' then
    return old;
  end if;
  return new;
end
$$;

create or replace trigger _100_only_while_open before insert or delete on weld_public.test_package_isos
  for each row execute function weld_private.tg__test_package_open();
create or replace trigger _100_only_while_open before insert or delete on weld_public.test_package_welds
  for each row execute function weld_private.tg__test_package_open();
--! EndIncluded functions/weld_private.tg__test_package_open.sql
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
--! EndIncluded functions/weld_private.tg__touch_parent.sql
--! Included functions/weld_private.tg_examination_changes__reason.sql
-- Each row gets the reason of the correction that adds it, whichever history trigger of 000006
-- writes it (a row that brings its own reason keeps it). SECURITY INVOKER: it reads a setting.
create or replace function weld_private.tg_examination_changes__reason() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  new.reason := coalesce(new.reason,
                         nullif(pg_catalog.current_setting('weld.change_reason', true), ''));
  return new;
end
$$;

create or replace trigger _100_reason before insert on weld_public.examination_changes
  for each row execute function weld_private.tg_examination_changes__reason();
--! EndIncluded functions/weld_private.tg_examination_changes__reason.sql
--! Included functions/weld_private.tg_film_interval_welds__examination_change.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A weld was mapped to or unmapped from a film interval.
create or replace function weld_private.tg_film_interval_welds__examination_change() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction('ndt_record', new.tenant_id, new.ndt_record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, 'ndt_record', new.ndt_record_id, 'film_weld_added', null,
            jsonb_build_object('film_interval_id', new.film_interval_id, 'weld_id', new.weld_id),
            weld_hidden.current_user_id());
  else
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, 'ndt_record', old.ndt_record_id, 'film_weld_removed',
            jsonb_build_object('film_interval_id', old.film_interval_id, 'weld_id', old.weld_id),
            null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _900_examination_change after insert or delete on weld_public.film_interval_welds
  for each row execute function weld_private.tg_film_interval_welds__examination_change();
--! EndIncluded functions/weld_private.tg_film_interval_welds__examination_change.sql
--! Included functions/weld_private.tg_film_intervals__examination_change.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A film interval of an NDT record was added, changed or removed.
create or replace function weld_private.tg_film_intervals__examination_change() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  diff record;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction('ndt_record', new.tenant_id, new.ndt_record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, 'ndt_record', new.ndt_record_id, 'film_interval_added', null,
            jsonb_build_object('id', new.id, 'label', new.label, 'result', new.result,
                               'defect_codes', new.defect_codes),
            weld_hidden.current_user_id());
  elsif tg_op = 'UPDATE' then
    select * into diff from weld_private.changed_columns(to_jsonb(old), to_jsonb(new));
    if diff.before is not null then
      insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
      values (new.tenant_id, 'ndt_record', new.ndt_record_id, 'film_interval_updated',
              jsonb_build_object('id', old.id) || diff.before,
              jsonb_build_object('id', new.id) || diff.after,
              weld_hidden.current_user_id());
    end if;
  else
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, 'ndt_record', old.ndt_record_id, 'film_interval_removed',
            jsonb_build_object('id', old.id, 'label', old.label, 'result', old.result,
                               'defect_codes', old.defect_codes),
            null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _900_examination_change after insert or update or delete on weld_public.film_intervals
  for each row execute function weld_private.tg_film_intervals__examination_change();
--! EndIncluded functions/weld_private.tg_film_intervals__examination_change.sql
--! Included functions/weld_private.tg_inspection_welds__welded.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.tg_inspection_welds__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', n.tenant_id, 'weldId', n.weld_id, 'examinedOn', i.inspected_on,
             'record', format('the %s inspection', i.kind)))
      from new_links n
      join weld_public.inspections i on i.tenant_id = n.tenant_id and i.id = n.inspection_id
     where i.kind <> 'fit-up'), 'inspection');
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _300_welded after insert on weld_public.inspection_welds
  referencing new table as new_links
  for each statement execute function weld_private.tg_inspection_welds__welded();
--! EndIncluded functions/weld_private.tg_inspection_welds__welded.sql
--! Included functions/weld_private.tg_inspections__welded.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.tg_inspections__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', iw.tenant_id, 'weldId', iw.weld_id, 'examinedOn', new.inspected_on,
             'record', format('the %s inspection', new.kind)))
      from weld_public.inspection_welds iw
     where iw.tenant_id = new.tenant_id and iw.inspection_id = new.id and new.kind <> 'fit-up'),
    'inspection');
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _300_welded after update of inspected_on, kind on weld_public.inspections
  for each row when ((old.inspected_on, old.kind) is distinct from (new.inspected_on, new.kind))
  execute function weld_private.tg_inspections__welded();
--! EndIncluded functions/weld_private.tg_inspections__welded.sql
--! Included functions/weld_private.tg_isos__weld_counts.sql
-- An ISO starts with a row of zeros. Row-level, not per statement: an ISO's row event is queued
-- before the events of any weld row that refers to it, even within one statement (a writable CTE
-- that inserts an ISO and moves welds to it), so no weld trigger can come first and miss the row;
-- per statement, the move was seen to come first. The price: about 50 us an ISO (an import of
-- 2,000 new ISOs, 0.1 s). (Weld inserts create a missing row themselves.)
create or replace function weld_private.tg_isos__weld_counts() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into weld_public.iso_weld_counts (tenant_id, iso_id)
  values (new.tenant_id, new.id)
  on conflict (tenant_id, iso_id) do nothing;
  return null;
end
$$;

create or replace trigger _500_weld_counts after insert on weld_public.isos
  for each row execute function weld_private.tg_isos__weld_counts();
--! EndIncluded functions/weld_private.tg_isos__weld_counts.sql
--! Included functions/weld_private.tg_ndt_record_welds__welded.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.tg_ndt_record_welds__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', n.tenant_id, 'weldId', n.weld_id, 'examinedOn', r.examined_on,
             'record', format('%s report %s', r.method, r.report_number)))
      from new_links n
      join weld_public.ndt_records r on r.tenant_id = n.tenant_id and r.id = n.ndt_record_id), 'ndt');
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _300_welded after insert on weld_public.ndt_record_welds
  referencing new table as new_links
  for each statement execute function weld_private.tg_ndt_record_welds__welded();
--! EndIncluded functions/weld_private.tg_ndt_record_welds__welded.sql
--! Included functions/weld_private.tg_ndt_records__welded.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.tg_ndt_records__welded() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.refuse_unwelded_examinations((
    select jsonb_agg(jsonb_build_object(
             'tenantId', nw.tenant_id, 'weldId', nw.weld_id, 'examinedOn', new.examined_on,
             'record', format('%s report %s', new.method, new.report_number)))
      from weld_public.ndt_record_welds nw
     where nw.tenant_id = new.tenant_id and nw.ndt_record_id = new.id), 'ndt');
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _300_welded after update of examined_on on weld_public.ndt_records
  for each row when (old.examined_on is distinct from new.examined_on)
  execute function weld_private.tg_ndt_records__welded();
--! EndIncluded functions/weld_private.tg_ndt_records__welded.sql
--! Included functions/weld_private.tg_sessions__notify_revoked.sql
-- A session deleted while still live (its user deleted, a DBA's delete, or the purge of a session
-- nobody can refresh any more) is announced like a revocation, on the same channel with the same
-- JSON: its access tokens may still be in use. The function serves both triggers now: the new row
-- of an update, the old row of a delete. (A deleted session is not listed by revoked_sessions: a
-- server that was not listening learns of it only when the access tokens expire.)
create or replace function weld_private.tg_sessions__notify_revoked() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  session record;
begin
  if tg_op = 'DELETE' then
    session := old;
  else
    session := new;
  end if;
  perform pg_notify('weld_session_revoked', json_build_object(
    'tenantId', session.tenant_id, 'sessionId', session.id, 'userId', session.user_id)::text);
  return null;
end
$$;

create or replace trigger _900_notify_deleted after delete on weld_private.sessions
  for each row when (old.revoked_at is null)
  execute function weld_private.tg_sessions__notify_revoked();
create or replace trigger _900_notify_revoked after update of revoked_at on weld_private.sessions
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function weld_private.tg_sessions__notify_revoked();
--! EndIncluded functions/weld_private.tg_sessions__notify_revoked.sql
--! Included functions/weld_private.tg_sessions__stamp_revocation.sql
-- revoked_at is the moment of the revocation, not the start of its transaction. Every path set it
-- with now(), the transaction's start: a transaction that began more than a token lifetime before
-- it committed recorded a revocation that revoked_sessions(since) no longer listed to a server
-- reloading after a reconnect. Whatever path revokes (logout, reuse, user disabled, role changed,
-- password changed, a DBA), a value from the transaction's start on becomes clock_timestamp(); an
-- earlier value (a DBA backdating a revocation on purpose) is kept.
create or replace function weld_private.tg_sessions__stamp_revocation() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.revoked_at >= now() then
    new.revoked_at := greatest(new.revoked_at, clock_timestamp());
  end if;
  return new;
end
$$;

create or replace trigger _100_stamp_revocation before update of revoked_at on weld_private.sessions
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function weld_private.tg_sessions__stamp_revocation();
--! EndIncluded functions/weld_private.tg_sessions__stamp_revocation.sql
--! Included functions/weld_private.tg_tenants__seed_code_rules.sql
create or replace function weld_private.tg_tenants__seed_code_rules() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.seed_code_rules(new.id);
  return null;
end
$$;

create or replace trigger _200_seed_code_rules after insert on weld_public.tenants
  for each row execute function weld_private.tg_tenants__seed_code_rules();
--! EndIncluded functions/weld_private.tg_tenants__seed_code_rules.sql
--! Included functions/weld_private.tg_tenants__seed_settings.sql
create or replace function weld_private.tg_tenants__seed_settings() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into weld_public.tenant_settings (tenant_id) values (new.id) on conflict do nothing;
  return null;
end
$$;

create or replace trigger _100_seed_settings after insert on weld_public.tenants
  for each row execute function weld_private.tg_tenants__seed_settings();
--! EndIncluded functions/weld_private.tg_tenants__seed_settings.sql
--! Included functions/weld_private.tg_test_packages__delete_only_while_open.sql
-- A package that was ever released is a record: deleting it would erase its releases and the
-- reasons of its withdrawals. Requests delete only packages that never left open (WD008).
create or replace function weld_private.tg_test_packages__delete_only_while_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  released_at timestamptz;
begin
  if weld_hidden.request_role() is null then
    return old;
  end if;
  if old.state <> 'open' then
    raise exception 'test package % is %; only open packages may be deleted', old.package_number, old.state
      using errcode = 'WD008';
  end if;
  select min(c.changed_at) into released_at
    from weld_public.test_package_state_changes c
   where c.tenant_id = old.tenant_id and c.test_package_id = old.id;
  if released_at is not null then
    raise exception 'test package % was released on % and withdrawn; a package with a history is kept as the record of it',
                    old.package_number, (released_at at time zone 'UTC')::date
      using errcode = 'WD008';
  end if;
  return old;
end
$$;

create or replace trigger _100_delete_only_while_open before delete on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__delete_only_while_open();
--! EndIncluded functions/weld_private.tg_test_packages__delete_only_while_open.sql
--! Included functions/weld_private.tg_test_packages__release_when_ready.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Release, tested and closed by an API role only when ready (WD009 with the reasons; GET
-- readiness has them all). A package is created open (WD008), so none skips the release. The
-- UPDATE holds the package's row, and the statements here see what committed before it: a
-- change that makes a package less ready locks it first (lock_packages_of). Writes outside a
-- request are not held to it, as for the package's other rules (000008 section 7).
create or replace function weld_private.tg_test_packages__release_when_ready() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  summary record;
begin
  if weld_hidden.request_role() is not null and tg_op = 'INSERT' and new.state <> 'open' then
    raise exception 'test package % is created open; it is released when it is ready', new.package_number
      using errcode = 'WD008';
  end if;
  if weld_hidden.request_role() is not null and tg_op = 'UPDATE'
     and (old.state, new.state) in (('open', 'released'), ('released', 'tested'), ('tested', 'closed')) then
    select * into summary from weld_private.readiness_summary(new);
    if summary.reason_count > 0 then
      raise exception 'test package % is not ready to be %: % %', new.package_number, new.state,
        summary.reason_count, case when summary.reason_count = 1 then 'reason' else 'reasons' end
        using errcode = 'WD009',
              detail = jsonb_build_object('reasons', summary.reasons, 'reasonCount', summary.reason_count)::text;
    end if;
  end if;
  return new;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_release_when_ready before insert or update of state on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__release_when_ready();
--! EndIncluded functions/weld_private.tg_test_packages__release_when_ready.sql
--! Included functions/weld_private.tg_test_packages__state_history.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Every state change, kept; a withdrawal (released -> open) with its reason.
create or replace function weld_private.tg_test_packages__state_history() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  -- Outside a tenant context (the owner: the seed generator, a DBA) nothing is kept, as for the
  -- version bumps of lists (000008).
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  insert into weld_public.test_package_state_changes
    (tenant_id, test_package_id, from_state, to_state, reason, changed_by)
  values (new.tenant_id, new.id, old.state, new.state,
          nullif(pg_catalog.current_setting('weld.withdrawal_reason', true), ''),
          weld_hidden.current_user_id());
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _300_state_history after update of state on weld_public.test_packages
  for each row when (old.state is distinct from new.state)
  execute function weld_private.tg_test_packages__state_history();
--! EndIncluded functions/weld_private.tg_test_packages__state_history.sql
--! Included functions/weld_private.tg_test_packages__state_moves.sql
-- Setting the state it has is no move. Before _100_touch (name order): a refused move bumps
-- nothing.
--
-- Released -> open only through withdraw_test_package (which gives the reason); the other
-- moves as in 000008.
create or replace function weld_private.tg_test_packages__state_moves() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_hidden.request_role() is not null and new.state <> old.state
     and (old.state, new.state) not in (('open', 'released'), ('released', 'tested'),
                                        ('tested', 'closed'), ('released', 'open')) then
    raise exception 'test package % cannot go from % to %', old.package_number, old.state, new.state
      using errcode = 'WD008';
  end if;
  if weld_hidden.request_role() is not null and (old.state, new.state) = ('released', 'open')
     and coalesce(pg_catalog.current_setting('weld.withdrawal_reason', true), '') = '' then
    raise exception 'test package % is withdrawn to open with a reason: POST /test-packages/{id}/withdraw (GraphQL withdrawTestPackage)',
      old.package_number using errcode = 'WD008';
  end if;
  return new;
end
$$;

create or replace trigger _100_state_moves before update of state on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__state_moves();
--! EndIncluded functions/weld_private.tg_test_packages__state_moves.sql
--! Included functions/weld_private.tg_user_credentials__revoke_sessions.sql
-- A new password (weld-admin user set-password, or any update of the hash) revokes the user's live
-- sessions: whoever held the old password may hold a refresh token too. SECURITY DEFINER as the
-- owner (BYPASSRLS), like tg_users__revoke_sessions: weld-admin sets passwords as the owner with
-- no tenant context. It touches only the sessions of the row being updated.
create or replace function weld_private.tg_user_credentials__revoke_sessions() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update weld_private.sessions s
     set revoked_at = now(), revoked_reason = 'password-changed'
   where s.tenant_id = new.tenant_id and s.user_id = new.user_id and s.revoked_at is null;
  return null;
end
$$;

create or replace trigger _500_revoke_sessions after update of password_hash on weld_private.user_credentials
  for each row when (old.password_hash is distinct from new.password_hash)
  execute function weld_private.tg_user_credentials__revoke_sessions();
--! EndIncluded functions/weld_private.tg_user_credentials__revoke_sessions.sql
--! Included functions/weld_private.tg_users__pause_webhooks.sql
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
--! EndIncluded functions/weld_private.tg_users__pause_webhooks.sql
--! Included functions/weld_private.tg_users__revoke_sessions.sql
-- SECURITY DEFINER as the owner (BYPASSRLS): an admin may change a user but holds no right on
-- sessions, and weld-admin changes users as the owner with no tenant context, where weld_rules
-- would see no session at all. It touches only the sessions of the row being updated, which the
-- caller was allowed to update.
create or replace function weld_private.tg_users__revoke_sessions() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update weld_private.sessions s
     set revoked_at = now(),
         revoked_reason = case when old.active and not new.active then 'user-disabled'
                               else 'role-changed' end
   where s.tenant_id = new.tenant_id and s.user_id = new.id and s.revoked_at is null;
  return null;
end
$$;

create or replace trigger _500_revoke_sessions after update of active, role on weld_public.users
  for each row when ((old.active and not new.active) or old.role <> new.role)
  execute function weld_private.tg_users__revoke_sessions();
--! EndIncluded functions/weld_private.tg_users__revoke_sessions.sql
--! Included functions/weld_private.tg_webhooks__position.sql
-- A new endpoint starts at the tenant's newest event: it receives what happens from now on.
-- Re-activating one clears its failure and tries again at once, from where it stopped. The acting
-- user becomes the author of a new endpoint, and of one whose URL, event types or secret they
-- change or which they resume (lock_webhook_author): an endpoint's author is who chose where it
-- points and who knows its secret, and it pauses when that one goes.
create or replace function weld_private.tg_webhooks__position() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    new.last_event_id := coalesce(
      (select max(e.id) from weld_public.events e where e.tenant_id = new.tenant_id), 0);
    if weld_hidden.current_user_id() is not null then
      new.created_by := weld_hidden.lock_webhook_author();
    end if;
    return new;
  end if;
  if new.active and not old.active then
    new.disabled_reason := null;
    new.failing_since := null;
    new.attempt := 0;
    new.next_attempt_at := now();
  end if;
  if old.paused_at is not null and new.paused_at is null then
    new.next_attempt_at := least(new.next_attempt_at, now());
  end if;
  if weld_hidden.current_user_id() is not null
     and ((new.url, new.event_types, new.secret, new.secret_set_at)
          is distinct from (old.url, old.event_types, old.secret, old.secret_set_at)
          or (old.paused_at is not null and new.paused_at is null)) then
    new.created_by := weld_hidden.lock_webhook_author();
  end if;
  return new;
end
$$;

create or replace trigger _050_position before insert or update on weld_hidden.webhooks
  for each row execute function weld_private.tg_webhooks__position();
--! EndIncluded functions/weld_private.tg_webhooks__position.sql
--! Included functions/weld_private.tg_webhooks__touch.sql
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

create or replace trigger _100_touch before update on weld_hidden.webhooks
  for each row execute function weld_private.tg_webhooks__touch();
--! EndIncluded functions/weld_private.tg_webhooks__touch.sql
--! Included functions/weld_private.tg_weld_status_history__follow.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- After a status change: a weld leaving REPAIR owes what rejected it; a weld leaving ACCEPTED
-- (or VOIDED, which readiness passes over) locks its packages.
create or replace function weld_private.tg_weld_status_history__follow() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  last_reweld date;
begin
  if new.from_status in ('ACCEPTED', 'VOIDED') and new.to_status not in ('ACCEPTED', 'VOIDED') then
    perform weld_private.lock_packages_of(array[new.weld_id]);
  end if;
  if new.from_status = 'REPAIR' and new.to_status <> 'VOIDED' then
    -- The methods that rejected it since it was last re-welded (or ever, at the first repair).
    select (max(h.changed_at) at time zone 'UTC')::date into last_reweld
      from weld_public.weld_status_history h
     where h.tenant_id = new.tenant_id and h.weld_id = new.weld_id and h.from_status = 'REPAIR'
       and h.id < new.id;
    insert into weld_public.weld_reexaminations (tenant_id, weld_id, method, repair_cycle, rewelded_on, cause)
    select new.tenant_id, new.weld_id, e.method, new.repair_cycle, (new.changed_at at time zone 'UTC')::date,
           (array_agg(e.record || ' of ' || e.examined_on order by e.examined_on desc, e.created_at desc))[1]
      from weld_private.weld_examinations e
     where e.tenant_id = new.tenant_id and e.weld_id = new.weld_id and e.result = 'rejected'
       and (last_reweld is null or e.examined_on >= last_reweld)
     group by e.method
    on conflict do nothing;
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_follow after insert on weld_public.weld_status_history
  for each row
  when ((new.from_status in ('ACCEPTED', 'VOIDED') and new.to_status not in ('ACCEPTED', 'VOIDED'))
        or new.from_status = 'REPAIR')
  execute function weld_private.tg_weld_status_history__follow();
--! EndIncluded functions/weld_private.tg_weld_status_history__follow.sql
--! Included functions/weld_private.tg_weld_status_history__ndt_cause.sql
-- Only the NDT functions may name an NDT record as the cause of a weld's move. change_weld_status
-- takes a cause_ndt_record_id from its caller, so REST or GraphQL (changeWeldStatus) could write
-- a history row that looks like an NDT result; the history refuses (42501) a cause from a request
-- unless ndt_apply_status_changes is applying that very record, which it says in the
-- transaction-local setting weld.applying_ndt_record (the record's id; '' after). API callers
-- cannot set it: REST and GraphQL run only the statements the server writes. Writes outside a
-- request (the seed generator, a DBA) are not refused. SECURITY INVOKER: it reads settings only.
create or replace function weld_private.tg_weld_status_history__ndt_cause() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.ndt_record_id is not null and weld_hidden.request_role() is not null
     and new.ndt_record_id::text is distinct from
         nullif(pg_catalog.current_setting('weld.applying_ndt_record', true), '') then
    raise exception 'only recording an NDT result may name an NDT record as the cause'
      using errcode = '42501';
  end if;
  return new;
end
$$;

create or replace trigger _100_ndt_cause before insert on weld_public.weld_status_history
  for each row execute function weld_private.tg_weld_status_history__ndt_cause();
--! EndIncluded functions/weld_private.tg_weld_status_history__ndt_cause.sql
--! Included functions/weld_private.tg_weld_status_history__reexamined.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Refuse mode: a repaired weld is accepted by hand only once its re-examinations are met (WD012).
-- An NDT record may still accept it (its other methods are real results); readiness holds it.
create or replace function weld_private.tg_weld_status_history__reexamined() returns trigger
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  checks jsonb;
begin
  if weld_hidden.request_role() is null
     or coalesce((select s.weld_checks from weld_public.tenant_settings s
                   where s.tenant_id = new.tenant_id), 'show') <> 'refuse' then
    return new;
  end if;
  select jsonb_agg(jsonb_build_object('code', p.code, 'detail', p.detail) order by p.detail) into checks
    from weld_public.welds w
    cross join lateral weld_private.weld_problems(array[w], false, false) p
   where w.tenant_id = new.tenant_id and w.id = new.weld_id and p.code = 'REEXAMINATION_OPEN';
  if checks is not null then
    raise exception 'weld % owes a re-examination after its repair: %',
      (select w.weld_number from weld_public.welds w where w.tenant_id = new.tenant_id and w.id = new.weld_id),
      checks -> 0 ->> 'detail'
      using errcode = 'WD012', detail = jsonb_build_object('checks', checks)::text;
  end if;
  return new;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_reexamined before insert on weld_public.weld_status_history
  for each row when (new.to_status = 'ACCEPTED' and new.cause = 'user')
  execute function weld_private.tg_weld_status_history__reexamined();
--! EndIncluded functions/weld_private.tg_weld_status_history__reexamined.sql
--! Included functions/weld_private.tg_welder_qualifications__renews.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A renewal renews a qualification of the same welder qualified before it: dates strictly rising
-- along a chain of renewals, so no chain comes back to where it began. Held from both ends: the
-- renewal's date and link, and the date of a qualification renewed.
create or replace function weld_private.tg_welder_qualifications__renews() returns trigger
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  renewed weld_public.welder_qualifications;
begin
  if tg_op = 'UPDATE' and new.qualified_on > old.qualified_on and exists (
       select from weld_public.welder_qualifications q
        where q.tenant_id = new.tenant_id and q.renews_qualification_id = new.id
          and q.qualified_on <= new.qualified_on) then
    raise exception 'a renewal of this qualification was qualified on or before %: a qualification is renewed only after it was qualified',
                    new.qualified_on
      using errcode = 'WD007', detail = json_build_object('pointer', '/qualifiedOn')::text;
  end if;
  if new.renews_qualification_id is null then
    return new;
  end if;
  select * into renewed from weld_public.welder_qualifications q
   where q.tenant_id = new.tenant_id and q.id = new.renews_qualification_id;
  if found and (renewed.welder_id <> new.welder_id or renewed.qualified_on >= new.qualified_on) then
    raise exception 'a qualification renews one of the same welder qualified before itself'
      using errcode = 'WD007', detail = json_build_object('pointer', '/renewsQualificationId')::text;
  end if;
  return new;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _200_renews before insert or update of renews_qualification_id, welder_id, qualified_on
  on weld_public.welder_qualifications
  for each row execute function weld_private.tg_welder_qualifications__renews();
--! EndIncluded functions/weld_private.tg_welder_qualifications__renews.sql
--! Included functions/weld_private.tg_welds__code_checks.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD010, the tenant's weld_checks = 'refuse': a request's write of welds that leaves one with a
-- problem other than DATA_MISSING is refused, naming the first (by weld number) and its problems.
-- Only writes of what the checks read; a status change never is.
--
-- The weld guards of 000013 read the new columns too: a weld of a package that is not open keeps
-- its base metals (WD008), and refuse mode judges a change of them (WD010). REEXAMINATION_OPEN
-- is about examination, not the record, so it never refuses a write.
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
   where p.code not in ('DATA_MISSING', 'REEXAMINATION_OPEN')
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
--! Included functions/weld_private.tg_welds__examined_after_welded.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A weld's date welded may not move after, or be taken off, an examination that covers it. A row
-- trigger WHEN the date changed: status changes, the hot path, never call it.
create or replace function weld_private.tg_welds__examined_after_welded() returns trigger
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  first record;
begin
  select x.record, x.examined_on into first
    from weld_private.weld_examinations x
   where x.tenant_id = new.tenant_id and x.weld_id = new.id
     and (new.welded_on is null or x.examined_on < new.welded_on)
   order by x.examined_on
   limit 1;
  if not found then
    return null;
  end if;
  if new.welded_on is null then
    raise exception 'weld % is covered by % of %: its date welded cannot be taken off',
      new.weld_number, first.record, first.examined_on
      using errcode = 'WD007', detail = json_build_object('pointer', '/weldedOn')::text;
  end if;
  raise exception 'weld % is covered by % of %: it was welded on or before that day, not on %',
    new.weld_number, first.record, first.examined_on, new.welded_on
    using errcode = 'WD007', detail = json_build_object('pointer', '/weldedOn')::text;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _300_examined_after_welded after update of welded_on on weld_public.welds
  for each row when (old.welded_on is distinct from new.welded_on)
  execute function weld_private.tg_welds__examined_after_welded();
--! EndIncluded functions/weld_private.tg_welds__examined_after_welded.sql
--! Included functions/weld_private.tg_welds__iso_weld_counts.sql
-- Welds inserted or deleted, once per statement: the statement's rows counted per ISO and status,
-- those ISOs' rows locked in key order, then each changed once. An insert also creates a row that
-- is missing (an ISO inserted by the same statement whose trigger has not run yet); a delete finds
-- no row only for an ISO that is being deleted itself, and has nothing to count.
create or replace function weld_private.tg_welds__iso_weld_counts() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  deltas weld_public.iso_weld_counts[];
  tenant uuid;
begin
  -- (Each branch names only the transition table its event has.)
  if tg_op = 'TRUNCATE' then
    -- Every weld of every tenant is gone (a DBA's TRUNCATE fires no delete trigger).
    update weld_public.iso_weld_counts c
       set total = 0, pending = 0, accepted = 0, rejected = 0, repair = 0, voided = 0,
           version = c.version + 1
     where c.total <> 0;
    return null;
  elsif tg_op = 'INSERT' then
    select array_agg(row(d.*)::weld_public.iso_weld_counts order by d.tenant_id, d.iso_id)
      into deltas
      from (select n.tenant_id, n.iso_id, count(*)::integer,
                   count(*) filter (where n.status = 'PENDING')::integer,
                   count(*) filter (where n.status = 'ACCEPTED')::integer,
                   count(*) filter (where n.status = 'REJECTED')::integer,
                   count(*) filter (where n.status = 'REPAIR')::integer,
                   count(*) filter (where n.status = 'VOIDED')::integer,
                   0::bigint
              from new_rows n
             group by n.tenant_id, n.iso_id)
           as d (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided, version);
  else
    select array_agg(row(d.*)::weld_public.iso_weld_counts order by d.tenant_id, d.iso_id)
      into deltas
      from (select o.tenant_id, o.iso_id, -count(*)::integer,
                   -count(*) filter (where o.status = 'PENDING')::integer,
                   -count(*) filter (where o.status = 'ACCEPTED')::integer,
                   -count(*) filter (where o.status = 'REJECTED')::integer,
                   -count(*) filter (where o.status = 'REPAIR')::integer,
                   -count(*) filter (where o.status = 'VOIDED')::integer,
                   0::bigint
              from old_rows o
             group by o.tenant_id, o.iso_id)
           as d (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided, version);
  end if;
  if deltas is null then
    return null; -- the statement wrote no row
  end if;

  -- Tenant by tenant (a request writes one; the owner may write several), each statement naming
  -- its tenant as a parameter: the single-shard form, should the tables be distributed by tenant.
  for tenant in select distinct d.tenant_id from unnest(deltas) d order by 1 loop
    perform from weld_public.iso_weld_counts c
     where c.tenant_id = tenant
       and c.iso_id in (select d.iso_id from unnest(deltas) d where d.tenant_id = tenant)
     order by c.iso_id
       for no key update;
    if tg_op = 'INSERT' then
      insert into weld_public.iso_weld_counts as c
             (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided)
      select tenant, d.iso_id, d.total, d.pending, d.accepted, d.rejected, d.repair, d.voided
        from unnest(deltas) d
       where d.tenant_id = tenant
       order by d.iso_id
      on conflict (tenant_id, iso_id) do update
         set total = c.total + excluded.total, pending = c.pending + excluded.pending,
             accepted = c.accepted + excluded.accepted, rejected = c.rejected + excluded.rejected,
             repair = c.repair + excluded.repair, voided = c.voided + excluded.voided,
             version = c.version + 1;
    else
      update weld_public.iso_weld_counts c
         set total = c.total + d.total, pending = c.pending + d.pending,
             accepted = c.accepted + d.accepted, rejected = c.rejected + d.rejected,
             repair = c.repair + d.repair, voided = c.voided + d.voided,
             version = c.version + 1
        from unnest(deltas) d
       where c.tenant_id = tenant and d.tenant_id = tenant and c.iso_id = d.iso_id;
    end if;
  end loop;
  return null;
end
$$;

create or replace trigger _500_iso_weld_counts_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg_welds__iso_weld_counts();
create or replace trigger _500_iso_weld_counts_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__iso_weld_counts();
create or replace trigger _500_iso_weld_counts_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg_welds__iso_weld_counts();
--! EndIncluded functions/weld_private.tg_welds__iso_weld_counts.sql
--! Included functions/weld_private.tg_welds__iso_weld_counts_move.sql
-- A weld's status or ISO changed (the trigger's WHEN leaves out updates that change neither).
-- A status change, the hot path (change_weld_status, NDT results: 1,500 a second is the target),
-- is one UPDATE of one row by its key. A move to another ISO (or tenant) leaves the old row and
-- enters the new one: both locked in key order, then one UPDATE of the two.
-- (Two statements rather than one for both: the plan of a key lookup is the same for every call,
-- so it is planned once per session; a single `(tenant_id, iso_id) in (old, new)` is planned
-- again on every call, since its custom plans, where old = new, always look cheaper, 0.4 ms.)
create or replace function weld_private.tg_welds__iso_weld_counts_move() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if old.tenant_id = new.tenant_id and old.iso_id = new.iso_id then
    update weld_public.iso_weld_counts c
       set pending  = c.pending  + (new.status = 'PENDING')::integer  - (old.status = 'PENDING')::integer,
           accepted = c.accepted + (new.status = 'ACCEPTED')::integer - (old.status = 'ACCEPTED')::integer,
           rejected = c.rejected + (new.status = 'REJECTED')::integer - (old.status = 'REJECTED')::integer,
           repair   = c.repair   + (new.status = 'REPAIR')::integer   - (old.status = 'REPAIR')::integer,
           voided   = c.voided   + (new.status = 'VOIDED')::integer   - (old.status = 'VOIDED')::integer,
           version  = c.version + 1
     where c.tenant_id = new.tenant_id and c.iso_id = new.iso_id;
    return null;
  end if;

  perform from weld_public.iso_weld_counts c
   where (c.tenant_id, c.iso_id) in ((old.tenant_id, old.iso_id), (new.tenant_id, new.iso_id))
   order by c.tenant_id, c.iso_id
     for no key update;
  update weld_public.iso_weld_counts c
     set total    = c.total    + m.delta,
         pending  = c.pending  + m.delta * (m.status = 'PENDING')::integer,
         accepted = c.accepted + m.delta * (m.status = 'ACCEPTED')::integer,
         rejected = c.rejected + m.delta * (m.status = 'REJECTED')::integer,
         repair   = c.repair   + m.delta * (m.status = 'REPAIR')::integer,
         voided   = c.voided   + m.delta * (m.status = 'VOIDED')::integer,
         version  = c.version + 1
    from (values (old.tenant_id, old.iso_id, old.status, -1),
                 (new.tenant_id, new.iso_id, new.status, 1)) as m (tenant_id, iso_id, status, delta)
   where c.tenant_id = m.tenant_id and c.iso_id = m.iso_id;
  return null;
end
$$;

create or replace trigger _500_iso_weld_counts_update after update of status, iso_id, tenant_id on weld_public.welds
  for each row
  when (old.status is distinct from new.status or old.iso_id is distinct from new.iso_id
        or old.tenant_id is distinct from new.tenant_id)
  execute function weld_private.tg_welds__iso_weld_counts_move();
--! EndIncluded functions/weld_private.tg_welds__iso_weld_counts_move.sql
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
             n.base_metal_2_p_number
        from new_rows n
    ), data_before as (
      select o.id, o.iso_id, o.weld_number, o.type, o.size, o.schedule, o.wall_thickness,
             o.material, o.welder_id, o.wps_id, o.welded_on, o.base_metal_1_p_number,
             o.base_metal_2_p_number
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
--! Included functions/weld_private.thickness_words.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

create or replace function weld_private.thickness_words(known boolean, high numeric)
  returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select case when not known then 'thickness range unknown (no range, coupon or PQR thickness recorded)'
              when high is null then 'any thickness'
              else 'thickness up to ' || weld_private.inches(high) end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.thickness_words.sql
--! Included functions/weld_private.transaction_event.sql
create or replace function weld_private.transaction_event(tenant uuid, kind text, subject uuid)
  returns table (id bigint, type text)
  language sql stable
as $$
  select e.id, e.type
    from weld_public.events e
   where e.tenant_id = tenant and e.subject_id = subject
     and e.id >= coalesce(nullif(current_setting('weld.first_event_id', true), '')::bigint, 0)
     and e.xid = pg_current_xact_id()::text::bigint
     and e.type like kind || '.%'
$$;
--! EndIncluded functions/weld_private.transaction_event.sql
--! Included functions/weld_private.weld_ids_of.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- The weld ids of a welds input ([{"weldId", ...}]) or of a JSON list of ids.
create or replace function weld_private.weld_ids_of(list jsonb) returns uuid[]
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select coalesce(array_agg(distinct (case jsonb_typeof(e) when 'object' then e ->> 'weldId' else e #>> '{}' end)::uuid), '{}')
    from jsonb_array_elements(coalesce(list, '[]')) as e
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.weld_ids_of.sql
--! Included functions/weld_private.weld_json.sql
create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on,
    'baseMetal1PNumber', w.base_metal_1_p_number, 'baseMetal2PNumber', w.base_metal_2_p_number,
    'status', w.status,
    'repairCycle', w.repair_cycle, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

grant execute on function weld_private.weld_json(weld_public.welds) to weld_rules;
--! EndIncluded functions/weld_private.weld_json.sql
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
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.weld_problems.sql
--! Included functions/weld_private.wps_problems.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- What keeps each WPS from being qualified by its PQRs: (wps_id, aspect, detail), aspect one of
-- pqr, process, thickness, p_number; none for a qualified WPS.
create or replace function weld_private.wps_problems(wps_ids uuid[])
  returns table (wps_id uuid, aspect text, detail text)
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  with w as (
    select w.*, 'WPS ' || w.wps_number || ' rev ' || w.revision as name,
           weld_private.p_joint(w.p_numbers[1], w.p_numbers[2]) as joint,
           numrange(w.thickness_min_in, w.thickness_max_in, '[]') as thickness
      from weld_public.wps w
     where w.tenant_id = weld_hidden.current_tenant_id() and w.id = any(wps_ids)
  ), backing as (
    select w.id as wps_id, p.*, weld_private.p_joint(p.p_numbers[1], p.p_numbers[2]) as joint,
           weld_private.pqr_thickness_support(p.tenant_id, p.thickness_tested_in) as supports
      from w
      join weld_public.wps_pqrs l on l.tenant_id = w.tenant_id and l.wps_id = w.id
      join weld_public.pqrs p on p.tenant_id = l.tenant_id and p.id = l.pqr_id
  ), support as (
    select w.id,
           count(b.id) as pqrs,
           range_agg(b.supports) filter (where b.supports is not null) as thickness,
           array(select distinct x from unnest(array_agg(b.process)) as p (process),
                 unnest(string_to_array(p.process, '+')) as x order by 1) as processes,
           string_agg(distinct weld_private.p_joint_words(b.joint), ', ') as joints
      from w
      left join backing b on b.wps_id = w.id
     group by w.id
  )
  select w.id, 'pqr', format('%s is backed by no PQR (QW-200.2)', w.name)
    from w join support s on s.id = w.id
   where s.pqrs = 0
  union all
  select w.id, 'process',
         format('%s uses %s, and no PQR of it qualifies %s (QW-200.4)', w.name, w.process, x.process)
    from w
    join support s on s.id = w.id
    cross join lateral unnest(string_to_array(w.process, '+')) as x (process)
   where s.pqrs > 0 and not x.process = any(s.processes)
  union all
  select w.id, 'thickness',
         format('%s covers %s; its PQRs support %s (QW-451.1)', w.name,
                weld_private.range_words(w.thickness),
                coalesce((select string_agg(weld_private.range_words(r), ', ' order by lower(r))
                            from unnest(s.thickness) as r), 'no thickness'))
    from w join support s on s.id = w.id
   where s.pqrs > 0 and not coalesce(s.thickness @> w.thickness, false)
  union all
  select w.id, 'p_number',
         format('%s covers %s; its PQRs qualify %s (QW-424.1)', w.name,
                weld_private.p_joint_words(w.joint), s.joints)
    from w join support s on s.id = w.id
   where s.pqrs > 0 and w.joint is not null
     and not exists (
       select from backing b
        where b.wps_id = w.id
          and (b.joint = w.joint or exists (
                select from weld_public.p_number_rules r
                 where r.tenant_id = w.tenant_id and r.tested = b.joint and r.covers = w.joint)))
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.wps_problems.sql
--! Included functions/weld_private.written_by_this_transaction.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

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

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.written_by_this_transaction.sql
--! Included functions/weld_public.change_weld_status.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- The one way a weld's status changes.
--
-- Locks the weld, checks the expected version, the rule for (current -> new) and the caller's
-- role, requires a reason where the rule does, applies the change (the touch trigger bumps the
-- version; REJECTED -> REPAIR adds a repair cycle) and appends the history row. Refusals carry
-- the service's own SQLSTATEs, which the server maps to HTTP once:
--   WD001 weld not found (or not this tenant's)         -> 404
--   WD002 transition not allowed; DETAIL is JSON {"allowed": [...]}, the statuses the rules
--         allow from the current one                      -> 409
--   WD003 the caller's role may not make this change     -> 403
--   WD004 the rule requires a reason                      -> 422
--   WD005 the weld changed since expected_version; DETAIL {"version": n} -> 412
--
-- SECURITY DEFINER as weld_rules (NOBYPASSRLS): it may write what callers may not, and row
-- security keeps it inside the caller's tenant.
create or replace function weld_public.change_weld_status(
  weld_id uuid,
  new_status weld_public.weld_status,
  reason text default null,
  expected_version integer default null,
  cause_ndt_record_id uuid default null
) returns weld_public.welds
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld weld_public.welds;
  rule weld_public.weld_transition_rules;
  caller weld_public.user_role := weld_hidden.request_role();
  allowed text[];
begin
  select * into weld from weld_public.welds w
   where w.tenant_id = weld_hidden.current_tenant_id() and w.id = change_weld_status.weld_id
   for update;
  if not found then
    raise exception 'weld % not found', change_weld_status.weld_id using errcode = 'WD001';
  end if;

  if expected_version is not null and expected_version <> weld.version then
    raise exception 'weld % is at version %, not %', weld.id, weld.version, expected_version
      using errcode = 'WD005', detail = json_build_object('version', weld.version)::text;
  end if;

  select * into rule from weld_public.weld_transition_rules r
   where r.tenant_id = weld.tenant_id and r.from_status = weld.status and r.to_status = new_status;
  if not found then
    select coalesce(array_agg(r.to_status::text order by r.to_status), '{}') into allowed
      from weld_public.weld_transition_rules r
     where r.tenant_id = weld.tenant_id and r.from_status = weld.status;
    raise exception 'a weld cannot go from % to %', weld.status, new_status
      using errcode = 'WD002', detail = json_build_object('allowed', allowed)::text;
  end if;

  if caller is null or caller < rule.least_role then
    raise exception 'going from % to % needs the % role', weld.status, new_status, rule.least_role
      using errcode = 'WD003';
  end if;

  if rule.reason_required and coalesce(btrim(reason), '') = '' then
    raise exception 'going from % to % needs a reason', weld.status, new_status
      using errcode = 'WD004';
  end if;

  if cause_ndt_record_id is not null and not exists (
    select from weld_public.ndt_record_welds nw
     where nw.tenant_id = weld.tenant_id and nw.ndt_record_id = cause_ndt_record_id
       and nw.weld_id = weld.id
  ) then
    raise exception 'NDT record % does not cover weld %', cause_ndt_record_id, weld.id
      using errcode = '22023';
  end if;

  update weld_public.welds w
     set status = new_status,
         repair_cycle = w.repair_cycle
           + case when weld.status = 'REJECTED' and new_status = 'REPAIR' then 1 else 0 end
   where w.tenant_id = weld.tenant_id and w.id = weld.id
  returning * into weld;

  insert into weld_public.weld_status_history
    (tenant_id, weld_id, from_status, to_status, reason, changed_by, repair_cycle, cause, ndt_record_id)
  values
    (weld.tenant_id, weld.id, rule.from_status, rule.to_status, nullif(btrim(reason), ''),
     weld_hidden.current_user_id(), weld.repair_cycle,
     case when cause_ndt_record_id is null then 'user' else 'ndt' end, cause_ndt_record_id);

  return weld;
end
$$;

comment on function weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid) is
  'Moves a weld to a new status under the tenant''s transition rules, and records it in the history.';

grant execute on function weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.change_weld_status.sql
--! Included functions/weld_public.correct_inspection.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.correct_inspection(
  inspection_id uuid, changes jsonb, reason text, expected_version integer default null
) returns weld_public.inspections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  input jsonb := correct_inspection.changes;
  why text;
  previous_reason text := pg_catalog.current_setting('weld.change_reason', true);
  inspection weld_public.inspections;
  fixed weld_public.inspections;
  weld_ids jsonb;
  old_weld_ids uuid[];
  unknown integer;
begin
  perform weld_private.require_role('inspector', 'correcting an inspection');
  select * into inspection from weld_public.inspections r
   where r.tenant_id = tenant and r.id = correct_inspection.inspection_id
     for no key update; -- as correct_ndt_record: a selection citing it must not wait on it
  why := weld_private.check_correction('inspection', correct_inspection.inspection_id, found,
                                       inspection.version, expected_version, correct_inspection.reason);
  perform weld_private.check_object(input, '', 'a correction of an inspection',
    '{kind,inspectorName,inspectedOn,result,notes,weldIds}', '{}');

  fixed := inspection;
  if input ? 'kind' then
    fixed.kind := weld_private.json_choice(input, 'kind', '', '{fit-up,visual,dimensional,final}', false);
  end if;
  if input ? 'inspectorName' then
    fixed.inspector_name := weld_private.json_string(input, 'inspectorName', '', 1, 200, false);
  end if;
  if input ? 'inspectedOn' then
    fixed.inspected_on := weld_private.json_date(input, 'inspectedOn', '');
  end if;
  if input ? 'result' then
    fixed.result := weld_private.json_choice(input, 'result', '', '{accepted,rejected}', false);
  end if;
  if input ? 'notes' then
    fixed.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  end if;
  if input ? 'weldIds' then
    weld_ids := weld_private.json_uuid_list(input, 'weldIds', '', 1, 1000);
    unknown := weld_private.first_unknown_weld(weld_ids);
    if unknown is not null then
      perform weld_private.invalid_input(format('there is no weld %s', weld_ids ->> unknown),
                                         '/weldIds/' || unknown);
    end if;
  end if;
  old_weld_ids := array(select iw.weld_id from weld_public.inspection_welds iw
                         where iw.tenant_id = tenant and iw.inspection_id = inspection.id);
  if fixed.kind <> 'fit-up' then
    perform weld_private.refuse_unwelded_examinations(
      weld_private.examination_links(
        case when weld_ids is null then old_weld_ids else weld_private.weld_ids_of(weld_ids) end,
        fixed.inspected_on, format('the %s inspection', fixed.kind)), 'inspection');
  end if;
  if 'visual' in (inspection.kind, fixed.kind) then
    perform weld_private.lock_lines_of(old_weld_ids || weld_private.weld_ids_of(weld_ids));
  end if;

  -- The row first: its version is bumped once, and the weld list's changes then leave it.
  perform pg_catalog.set_config('weld.change_reason', why, true);
  if (fixed.kind, fixed.inspector_name, fixed.inspected_on, fixed.result, fixed.notes)
     is distinct from (inspection.kind, inspection.inspector_name, inspection.inspected_on,
                       inspection.result, inspection.notes) then
    update weld_public.inspections r
       set kind = fixed.kind, inspector_name = fixed.inspector_name,
           inspected_on = fixed.inspected_on, result = fixed.result, notes = fixed.notes
     where r.tenant_id = inspection.tenant_id and r.id = inspection.id;
  end if;
  if weld_ids is not null then
    perform weld_private.inspection_write_welds(inspection.tenant_id, inspection.id, weld_ids);
  end if;
  if fixed.kind = 'visual' then
    perform weld_private.follow_examination(
      'VT', case when weld_ids is null then old_weld_ids else weld_private.weld_ids_of(weld_ids) end,
      null, inspection.id);
  end if;
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.inspections r
   where r.tenant_id = inspection.tenant_id and r.id = inspection.id;
  return fixed;
end
$$;

comment on function weld_public.correct_inspection(uuid, jsonb, text, integer) is
  'Corrects an inspection (its welds are replaced as a whole), with a reason kept in the examination history.';

grant execute on function weld_public.correct_inspection(uuid, jsonb, text, integer) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.correct_inspection.sql
--! Included functions/weld_public.correct_ndt_record.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.correct_ndt_record(
  record_id uuid, changes jsonb, reason text, expected_version integer default null
) returns weld_public.ndt_records
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  input jsonb := correct_ndt_record.changes;
  why text;
  previous_reason text := pg_catalog.current_setting('weld.change_reason', true);
  ndt weld_public.ndt_records;
  fixed weld_public.ndt_records;
  old_welds jsonb;
  old_intervals jsonb;
  welds jsonb;
  intervals jsonb;
  results jsonb;
  moves jsonb;
begin
  perform weld_private.require_role('inspector', 'correcting an NDT record');
  select * into ndt from weld_public.ndt_records r
   where r.tenant_id = tenant and r.id = correct_ndt_record.record_id
     for no key update; -- not FOR UPDATE: a draw's selection citing it (KEY SHARE) must not wait on it
  why := weld_private.check_correction('ndt record', correct_ndt_record.record_id, found,
                                       ndt.version, expected_version, correct_ndt_record.reason);
  if jsonb_typeof(input) = 'object' and input ? 'method' then
    perform weld_private.invalid_input(
      'the method of an NDT record cannot be corrected; record a new report instead', '/method');
  end if;
  perform weld_private.check_object(input, '', 'a correction of an NDT record',
    '{reportNumber,examinedOn,technician,notes,welds,filmIntervals}', '{}');

  fixed := ndt;
  if input ? 'reportNumber' then
    fixed.report_number := weld_private.json_string(input, 'reportNumber', '', 1, 100, false);
  end if;
  if input ? 'examinedOn' then
    fixed.examined_on := weld_private.json_date(input, 'examinedOn', '');
  end if;
  if input ? 'technician' then
    fixed.technician := weld_private.json_string(input, 'technician', '', 0, 200, true);
  end if;
  if input ? 'notes' then
    fixed.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  end if;

  -- The lists as they are, in the shape of the inputs (without pointers: not in this input).
  select coalesce(jsonb_agg(jsonb_build_object('weldId', nw.weld_id, 'result', nw.result)
                            order by nw.weld_id), '[]')
    into old_welds
    from weld_public.ndt_record_welds nw
   where nw.tenant_id = tenant and nw.ndt_record_id = ndt.id;
  select coalesce(jsonb_agg(jsonb_build_object(
           'label', f.label, 'result', f.result, 'defectCodes', to_jsonb(f.defect_codes),
           'weldIds', (select coalesce(jsonb_agg(fw.weld_id order by fw.weld_id), '[]')
                         from weld_public.film_interval_welds fw
                        where fw.tenant_id = f.tenant_id and fw.film_interval_id = f.id))
         order by f.label), '[]')
    into old_intervals
    from weld_public.film_intervals f
   where f.tenant_id = tenant and f.ndt_record_id = ndt.id;

  welds := old_welds;
  if input ? 'welds' then
    welds := weld_private.ndt_welds_input(input, '');
  end if;
  intervals := old_intervals;
  if input ? 'filmIntervals' then
    intervals := weld_private.ndt_intervals_input(input, '');
  end if;
  results := weld_private.ndt_results(ndt.method, welds, intervals,
    case when input ? 'welds' then '/welds' when input ? 'filmIntervals' then '/filmIntervals' else '' end,
    case when input ? 'filmIntervals' then '/filmIntervals' when input ? 'welds' then '/welds' else '' end);
  fixed.result := case when results @> '[{"effective": "rejected"}]' then 'rejected' else 'accepted' end;

  perform weld_private.refuse_unwelded_examinations(
    weld_private.examination_links(weld_private.weld_ids_of(welds), fixed.examined_on,
                                   format('%s report %s', ndt.method, fixed.report_number)), 'ndt');
  -- Every line the record touches, before and after, before any weld lock.
  perform weld_private.lock_lines_of(weld_private.weld_ids_of(old_welds) || weld_private.weld_ids_of(welds));
  -- Only the welds whose result is new: added, or changed.
  moves := weld_private.ndt_status_changes((
    select coalesce(jsonb_agg(r order by n), '[]')
      from jsonb_array_elements(results) with ordinality as e (r, n)
     where not exists (
       select from jsonb_array_elements(old_welds) as o
        where o ->> 'weldId' = r ->> 'weldId'
          and coalesce(o ->> 'result', weld_private.ndt_film_result(old_intervals, o ->> 'weldId'))
              = r ->> 'effective')));

  -- The record's row first: its version is bumped once, and the lists' changes then leave it.
  perform pg_catalog.set_config('weld.change_reason', why, true);
  if (fixed.report_number, fixed.examined_on, fixed.technician, fixed.notes, fixed.result)
     is distinct from (ndt.report_number, ndt.examined_on, ndt.technician, ndt.notes, ndt.result) then
    update weld_public.ndt_records r
       set report_number = fixed.report_number, examined_on = fixed.examined_on,
           technician = fixed.technician, notes = fixed.notes, result = fixed.result
     where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  end if;
  if input ? 'welds' or input ? 'filmIntervals' then
    perform weld_private.ndt_write_lists(ndt.tenant_id, ndt.id, welds, intervals);
  end if;
  perform weld_private.ndt_apply_status_changes(fixed, moves);
  perform weld_private.follow_examination(ndt.method, weld_private.weld_ids_of(welds), ndt.id, null);
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.ndt_records r where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  return fixed;
end
$$;

comment on function weld_public.correct_ndt_record(uuid, jsonb, text, integer) is
  'Corrects an NDT record (welds and film intervals are replaced as a whole), with a reason kept in the examination history; welds whose result is new move under the transition rules.';

grant execute on function weld_public.correct_ndt_record(uuid, jsonb, text, integer) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.correct_ndt_record.sql
--! Included functions/weld_public.draw_examination_selection.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- Random examination (341.4.1) for a line, or for the lots of an ISO's welds: what a lot already
-- examined counts first, a rejected one drawing its tier 1 (an examination recorded before the
-- draw is part of the sample); then one weld of each welder not yet represented; then the rest
-- the lot requires. Returns every selection it made.
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
  made uuid[];
  counted record;
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

  -- 1. What the lots in scope already examined counts.
  made := '{}';
  for counted in
    with examined as (
      select d.*, e.record, e.examined_on, e.result, e.ndt_record_id, e.inspection_id
        from weld_private.draw_scope(draw_examination_selection.method, line, draw_examination_selection.iso_id) d
        cross join lateral (
          select x.record, x.examined_on, x.result, x.ndt_record_id, x.inspection_id
            from weld_private.weld_examinations x
           where x.tenant_id = tenant and x.weld_id = d.weld_id and x.method = any(d.closes)
             and x.examined_on >= d.welded_on
           order by x.examined_on, x.created_at
           limit 1) e
       where not exists (select from weld_public.examination_selections s
                          where s.tenant_id = tenant and s.method = draw_examination_selection.method
                            and s.weld_id = d.weld_id)
    ), inserted as (
      insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
      select x.weld_id, draw_examination_selection.method, 'examined', null,
             format('examined: %s of %s counts toward %s', x.record, x.examined_on, x.lot_name),
             weld_hidden.current_user_id()
        from examined x
      returning id, weld_id
    )
    select i.id, x.result, x.ndt_record_id, x.inspection_id, x.record
      from inserted i join examined x on x.weld_id = i.weld_id
  loop
    made := made || counted.id;
    if counted.result = 'rejected' then
      made := made || weld_private.draw_next_tier(counted.id, counted.ndt_record_id, counted.inspection_id,
                                                  counted.record);
    end if;
  end loop;

  -- 2. and 3. One weld of each welder not yet represented, then the rest each lot requires.
  with scope as (
    select d.*, exists (select from weld_public.examination_selections s
                         where s.tenant_id = tenant and s.method = draw_examination_selection.method
                           and s.weld_id = d.weld_id) as selected,
           md5(chosen::text || ':' || d.weld_id::text) as rank
      from weld_private.draw_scope(draw_examination_selection.method, line, draw_examination_selection.iso_id) d
  ), lots as (
    select s.lot, count(*) as welds, count(*) filter (where s.selected) as selected,
           case when max(s.percent) >= 100 then count(*)
                else least(count(*), greatest(ceil(max(s.percent) * count(*) / 100), count(distinct s.welder_id)))
           end as required
      from scope s
     group by s.lot
  ), representatives as (
    -- Per lot, the first-ranked weld of each welder with no selection in it.
    select distinct on (s.lot, s.welder_id) s.*
      from scope s
     where not s.selected and s.welder_id is not null
       and not exists (select from scope o where o.lot = s.lot and o.welder_id = s.welder_id and o.selected)
     order by s.lot, s.welder_id, s.rank
  ), others as (
    select s.*, row_number() over (partition by s.lot order by s.rank) as n
      from scope s
     where not s.selected and s.weld_id not in (select r.weld_id from representatives r)
  ), picks as (
    select r.weld_id, r.lot, r.lot_name, true as representative from representatives r
    union all
    select o.weld_id, o.lot, o.lot_name, false
      from others o
      join lots l on l.lot = o.lot
     where o.n <= l.required - l.selected
                  - (select count(*) from representatives r where r.lot = o.lot)
  ), drawn as (
    insert into weld_public.examination_selections (weld_id, method, tier, seed, reason, selected_by)
    select p.weld_id, draw_examination_selection.method, 'random', chosen,
           format('random: %s of the %s welds of %s required (each welder''s work represented), seed %s%s',
                  l.required, l.welds, p.lot_name, chosen,
                  case when p.representative then format('; drawn for welder %s', s.welder_stamp) else '' end),
           weld_hidden.current_user_id()
      from picks p
      join lots l on l.lot = p.lot
      join scope s on s.weld_id = p.weld_id
     order by p.lot, p.representative desc, s.rank
    returning id
  )
  select made || coalesce(array_agg(d.id), '{}') into made from drawn d;

  return query
  select s.* from weld_public.examination_selections s
   where s.tenant_id = tenant and s.id = any(made)
   order by s.selected_at, s.tier, s.id;
end
$$;

comment on function weld_public.draw_examination_selection(text, text, uuid, bigint) is
  'Random examination (B31.3 341.4.1) of a line''s lots (or those of an ISO''s welds): counts what they already examined (a rejection draws its tier 1), draws one weld of each welder not yet represented, then the rest to ceil(percent x candidates / 100), ranked by the seed (random when not given), which is stored. Returns the new selections. Inspector and up.';

grant execute on function weld_public.draw_examination_selection(text, text, uuid, bigint) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.draw_examination_selection.sql
--! Included functions/weld_public.examination_selections_inspection_id.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.examination_selections_inspection_id(
  selection weld_public.examination_selections
) returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select e.inspection_id from weld_private.selection_examination(selection) e
$$;

comment on function weld_public.examination_selections_inspection_id(weld_public.examination_selections) is
  'The visual inspection that met a VT selection (the earliest examination that meets it); null otherwise.';

grant execute on function weld_public.examination_selections_inspection_id(weld_public.examination_selections) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.examination_selections_inspection_id.sql
--! Included functions/weld_public.examination_selections_ndt_record_id.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.examination_selections_ndt_record_id(
  selection weld_public.examination_selections
) returns uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select e.ndt_record_id from weld_private.selection_examination(selection) e
$$;

comment on function weld_public.examination_selections_ndt_record_id(weld_public.examination_selections) is
  'The NDT record that met the selection (the earliest examination that meets it); null while it is open or when a visual inspection met it.';

grant execute on function weld_public.examination_selections_ndt_record_id(weld_public.examination_selections) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.examination_selections_ndt_record_id.sql
--! Included functions/weld_public.examination_selections_state.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.examination_selections_state(
  selection weld_public.examination_selections
) returns text
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select case when exists (select from weld_private.selection_examination(selection)) then 'done'
              else 'open' end
$$;

comment on function weld_public.examination_selections_state(weld_public.examination_selections) is
  'open until an examination that meets it (its method, or one the rules let stand for it: UT for RT, PT for MT, ...) covers the weld, then done.';

grant execute on function weld_public.examination_selections_state(weld_public.examination_selections) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.examination_selections_state.sql
--! Included functions/weld_public.isos_examination.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- An ISO's examination: per method, over the lots its welds belong to.
create or replace function weld_public.isos_examination(iso weld_public.isos)
  returns setof weld_public.examination_status
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  with lots as (
    select * from weld_private.lot_status(
      weld_private.rule_methods(), array[iso.line_number],
      array(select w.id from weld_public.welds w where w.tenant_id = iso.tenant_id and w.iso_id = iso.id))
  ), required as (
    select l.method, max(l.percent) as required_percent, sum(l.welds)::integer as welds,
           sum(l.required)::integer as required, sum(l.selected)::integer as selected,
           sum(l.examined)::integer as examined, sum(l.shortfall)::integer as shortfall,
           sum(l.progressive_open)::integer as progressive_open,
           array(select distinct u.welder_id
                   from lots x cross join lateral unnest(x.welders_not_covered) as u (welder_id)
                  where x.method = l.method
                  order by 1) as welders_not_covered
      from lots l
     group by l.method
  ), no_longer_required as (
    -- Selections of this ISO's welds for a method the ISO no longer requires (its fluid service
    -- or rt_percent changed since): shown, with nothing required.
    select s.method, 0::numeric, 0, 0, count(*)::integer,
           count(*) filter (where weld_public.examination_selections_state(s) = 'done')::integer, 0,
           count(*) filter (where s.tier in ('1', '2', 'full')
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

grant execute on function weld_public.isos_examination(weld_public.isos) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.isos_examination.sql
--! Included functions/weld_public.ndt_record_welds_effective_result.sql
-- The weld's result as it stands: the one given, else the film's (rejected when any interval
-- that shows the weld is). REST reads it for an NDT record's welds, and GraphQL shows it as
-- ndtRecordWeld.effectiveResult, so neither derives it again. (The recording functions apply the
-- same rule to the JSON they are given, before anything is written: ndt_film_result.)
create or replace function weld_public.ndt_record_welds_effective_result(link weld_public.ndt_record_welds)
  returns text
  language sql stable
as $$
  select coalesce(link.result, (
    select case when bool_or(f.result = 'rejected') then 'rejected'
                when count(*) > 0 then 'accepted' end
      from weld_public.film_interval_welds fw
      join weld_public.film_intervals f on f.tenant_id = fw.tenant_id and f.id = fw.film_interval_id
     where fw.tenant_id = link.tenant_id and fw.ndt_record_id = link.ndt_record_id
       and fw.weld_id = link.weld_id))
$$;

comment on function weld_public.ndt_record_welds_effective_result(weld_public.ndt_record_welds) is
  'The weld''s result in this record: the one given, else its film intervals'' (rejected when any is).';

grant execute on function weld_public.ndt_record_welds_effective_result(weld_public.ndt_record_welds) to weld_rules, weld_viewer;
--! EndIncluded functions/weld_public.ndt_record_welds_effective_result.sql
--! Included functions/weld_public.record_inspection.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.record_inspection(inspection jsonb) returns weld_public.inspections
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  input jsonb := record_inspection.inspection;
  fresh weld_public.inspections;
  weld_ids jsonb;
  unknown integer;
begin
  perform weld_private.require_role('inspector', 'recording an inspection');
  perform weld_private.check_object(input, '', 'an inspection',
    '{kind,inspectorName,inspectedOn,result,notes,weldIds}', '{kind,inspectedOn,result,weldIds}');
  fresh.kind := weld_private.json_choice(input, 'kind', '', '{fit-up,visual,dimensional,final}', false);
  fresh.inspector_name := weld_private.json_string(input, 'inspectorName', '', 1, 200, false);
  if fresh.inspector_name is null then
    select u.display_name into fresh.inspector_name
      from weld_public.users u
     where u.tenant_id = weld_hidden.current_tenant_id() and u.id = weld_hidden.current_user_id();
    if fresh.inspector_name is null then
      perform weld_private.invalid_input(
        'inspectorName is required: the signed-in user has no name on record', '/inspectorName');
    end if;
  end if;
  fresh.inspected_on := weld_private.json_date(input, 'inspectedOn', '');
  fresh.result := weld_private.json_choice(input, 'result', '', '{accepted,rejected}', false);
  fresh.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  weld_ids := weld_private.json_uuid_list(input, 'weldIds', '', 1, 1000);
  unknown := weld_private.first_unknown_weld(weld_ids);
  if unknown is not null then
    perform weld_private.invalid_input(format('there is no weld %s', weld_ids ->> unknown),
                                       '/weldIds/' || unknown);
  end if;
  if fresh.kind <> 'fit-up' then
    perform weld_private.refuse_unwelded_examinations(
      weld_private.examination_links(weld_private.weld_ids_of(weld_ids), fresh.inspected_on,
                                     format('the %s inspection', fresh.kind)), 'inspection');
  end if;
  if fresh.kind = 'visual' then
    perform weld_private.lock_lines_of(weld_private.weld_ids_of(weld_ids));
  end if;

  insert into weld_public.inspections (kind, inspector_name, inspected_on, result, notes)
  values (fresh.kind, fresh.inspector_name, fresh.inspected_on, fresh.result, fresh.notes)
  returning * into fresh;
  perform weld_private.inspection_write_welds(fresh.tenant_id, fresh.id, weld_ids);
  if fresh.kind = 'visual' then
    perform weld_private.follow_examination('VT', weld_private.weld_ids_of(weld_ids), null, fresh.id);
  end if;
  return fresh;
end
$$;

comment on function weld_public.record_inspection(jsonb) is
  'Records an inspection (fit-up, visual, dimensional, final) of welds; it does not move them. A visual inspection is a VT examination for the code rules.';

grant execute on function weld_public.record_inspection(jsonb) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.record_inspection.sql
--! Included functions/weld_public.record_ndt.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.record_ndt(record jsonb) returns weld_public.ndt_records
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  input jsonb := record_ndt.record;
  ndt weld_public.ndt_records;
  welds jsonb;
  intervals jsonb := '[]';
  results jsonb;
  moves jsonb;
begin
  perform weld_private.require_role('inspector', 'recording an NDT record');
  perform weld_private.check_object(input, '', 'an NDT record',
    '{method,reportNumber,examinedOn,technician,notes,welds,filmIntervals}',
    '{method,reportNumber,examinedOn,welds}');
  ndt.method := weld_private.json_choice(input, 'method', '', '{RT,UT,MT,PT,VT,PWHT,PMI,HT}', false);
  ndt.report_number := weld_private.json_string(input, 'reportNumber', '', 1, 100, false);
  ndt.examined_on := weld_private.json_date(input, 'examinedOn', '');
  ndt.technician := weld_private.json_string(input, 'technician', '', 0, 200, true);
  ndt.notes := weld_private.json_string(input, 'notes', '', 0, 10000, true);
  welds := weld_private.ndt_welds_input(input, '');
  if input ? 'filmIntervals' then
    intervals := weld_private.ndt_intervals_input(input, '');
  end if;
  results := weld_private.ndt_results(ndt.method, welds, intervals, '/welds', '/filmIntervals');
  ndt.result := case when results @> '[{"effective": "rejected"}]' then 'rejected' else 'accepted' end;
  -- Records follow reality, said before the rules are asked (the link trigger holds it anyway).
  perform weld_private.refuse_unwelded_examinations(
    weld_private.examination_links(weld_private.weld_ids_of(welds), ndt.examined_on,
                                   format('%s report %s', ndt.method, ndt.report_number)), 'ndt');
  perform weld_private.lock_lines_of(weld_private.weld_ids_of(welds));
  -- Every weld's result is new.
  moves := weld_private.ndt_status_changes(results);

  insert into weld_public.ndt_records (method, report_number, examined_on, technician, result, notes)
  values (ndt.method, ndt.report_number, ndt.examined_on, ndt.technician, ndt.result, ndt.notes)
  returning * into ndt;
  perform weld_private.ndt_write_lists(ndt.tenant_id, ndt.id, welds, intervals);
  perform weld_private.ndt_apply_status_changes(ndt, moves);
  perform weld_private.follow_examination(ndt.method, weld_private.weld_ids_of(welds), ndt.id, null);
  return ndt;
end
$$;

comment on function weld_public.record_ndt(jsonb) is
  'Records an NDT report with its welds (and for RT its film intervals), and moves the welds to ACCEPTED or REJECTED by their results under the transition rules.';

grant execute on function weld_public.record_ndt(jsonb) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.record_ndt.sql
--! Included functions/weld_public.test_packages_readiness_reasons.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
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
      weld_private.rule_methods(), array(select distinct pw.line_number from pw), array(select pw.id from pw))
  ), lot_welds as (
    -- The candidates of those lots, with their selections and whether each is met.
    select c.*, s.id as selection_id, s.tier, s.seed, s.reason,
           s.id is not null and not exists (
             select from weld_private.weld_examinations e
              where e.tenant_id = test_package.tenant_id and e.weld_id = c.weld_id
                and e.method = any(c.closes) and e.examined_on >= c.welded_on) as open
      from weld_private.lot_candidates(array(select distinct l.method from lots l),
                                       array(select distinct pw.line_number from pw)) c
      join lots l on l.method = c.method and l.lot = c.lot
      left join weld_public.examination_selections s
        on s.tenant_id = test_package.tenant_id and s.method = c.method and s.weld_id = c.weld_id
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
           format('%s requires %s of its %s welds examined (%s%%%s) and has %s selected%s; draw a selection',
                  l.lot_name, l.required, l.welds, trim_scale(l.percent),
                  case when l.percent < 100 then ', every welder''s work represented' else '' end,
                  l.selected,
                  case when cardinality(l.stamps_not_covered) > 0
                       then ', none of welder ' || array_to_string(l.stamps_not_covered, ', ') else '' end),
           '', l.lot
      from lots l
      left join lot_isos li on li.method = l.method and li.lot = l.lot
     where l.shortfall > 0
    union all
    select 4, 'EXAMINATION_OPEN', pw.id, pw.iso_id,
           format('%s selection of weld %s on ISO %s (%s) is not yet examined by %s',
                  c.method, pw.weld_number, pw.iso_number,
                  case c.tier when 'random' then 'random, seed ' || c.seed else 'counted' end,
                  weld_private.methods_words(c.closes)),
           pw.iso_number, pw.weld_number
      from pw
      join lot_welds c on c.weld_id = pw.id
     where c.tier in ('random', 'examined') and c.open
    union all
    select 5, 'PROGRESSIVE_OPEN', c.weld_id, c.iso_id,
           format('%s progressive examination in %s is open: weld %s on ISO %s (tier %s) is not yet examined by %s; %s',
                  c.method, c.lot_name, c.weld_number, c.iso_number, c.tier,
                  weld_private.methods_words(c.closes), c.reason),
           c.iso_number, c.weld_number
      from lot_welds c
     where c.tier in ('1', '2', 'full') and c.open
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
  'Why the package is not ready for its pressure test (none when it is): NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, and the weld checks of its welds (REEXAMINATION_OPEN among them). VOIDED welds drop out.';

grant execute on function weld_public.test_packages_readiness_reasons(weld_public.test_packages) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.test_packages_readiness_reasons.sql
--! Included functions/weld_public.test_packages_ready.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.test_packages_ready(test_package weld_public.test_packages)
  returns boolean
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select not exists (select from weld_public.test_packages_readiness_reasons(test_package))
$$;

comment on function weld_public.test_packages_ready(weld_public.test_packages) is
  'Whether the package may be released for its pressure test: no readiness reason.';

grant execute on function weld_public.test_packages_ready(weld_public.test_packages) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.test_packages_ready.sql
--! Included functions/weld_public.welders_continuity.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

create or replace function weld_public.welders_continuity(welder weld_public.welders)
  returns setof weld_public.continuity_use
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select u.*
    from (
      select c.used_on, c.process, 'document' as source, c.reference, null::uuid as weld_id,
             c.id as continuity_id, c.recorded_by
        from weld_public.welder_continuity c
       where c.tenant_id = welder.tenant_id and c.welder_id = welder.id
      union all
      select w.welded_on, x.process, 'weld', format('weld %s on ISO %s, WPS %s rev %s', w.weld_number,
             i.iso_number, ww.wps_number, ww.revision), w.id, null, null
        from weld_public.welds w
        join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
        join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
        cross join lateral unnest(string_to_array(ww.process, '+')) as x (process)
       where w.tenant_id = welder.tenant_id and w.welder_id = welder.id and w.welded_on is not null
         and w.status <> 'VOIDED'
    ) u
   order by u.used_on desc, u.source || '/' || u.process || '/' || coalesce(u.weld_id, u.continuity_id) desc
$$;

comment on function weld_public.welders_continuity(weld_public.welders) is
  'The welder''s uses of each process, newest first: every weld on record (per process of its WPS) and every documented use (QW-322.1(a)).';

grant execute on function weld_public.welders_continuity(weld_public.welders) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welders_continuity.sql
--! Included functions/weld_public.welders_qualification_status.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
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
           when 'revoked' then format('revoked on %s: %s (QW-322.1(b))', f.revoked_on, f.revocation_reason)
           when 'expired' then format('expired on %s', f.expires_on)
           when 'lapsed' then format(
             'lapsed for %s on %s: no %s use recorded for more than %s months after %s (QW-322.1(a))',
             f.process, f.continuity_until + 1, f.process, s.months, f.lapse_after)
           else format('valid for %s on %s: qualified on %s, %s, in force by continuity until %s (QW-322.1(a))',
             f.process, on_date, f.qualified_on,
             coalesce('expires on ' || f.expires_on, 'no expiry date'), f.continuity_until)
         end,
         case when f.joint = 'fillet'
              then 'covers ' || f.process || ' fillet welds only, of every size and thickness (QW-303.2)'
              else 'covers ' || f.process || ' groove welds of '
                   || weld_private.diameter_words(f.diameter_known, f.diameter_min, f.diameter_max) || ', '
                   || weld_private.thickness_words(f.thickness_known, f.thickness_max)
                   || ', and fillet welds of every size (QW-303.1)' end
         || coalesce(', positions ' || nullif(array_to_string(f.positions, ' '), ''), '')],
         f.revoked_on
    from weld_private.qualification_facts(array[welder.id]) f
    cross join lateral (
      select coalesce((select t.continuity_months from weld_public.tenant_settings t
                        where t.tenant_id = welder.tenant_id), 6) as months
    ) s
    cross join lateral (
      select case
               when on_date < f.qualified_on then 'not_yet_valid'
               when on_date >= f.revoked_on then 'revoked'
               when on_date > f.expires_on then 'expired'
               when on_date > f.continuity_until then 'lapsed'
               else 'valid'
             end as state,
             (select max(u.used_on) from (
                select f.last_continuity_on as used_on
                union all
                select c.used_on from weld_public.welder_continuity c
                 where c.tenant_id = welder.tenant_id and c.welder_id = welder.id and c.process = f.process
                union all
                select w.welded_on
                  from weld_public.welds w
                  join weld_public.wps ww on ww.tenant_id = w.tenant_id and ww.id = w.wps_id
                 where w.tenant_id = welder.tenant_id and w.welder_id = welder.id
                   and w.welded_on between f.qualified_on and on_date and w.status <> 'VOIDED'
                   and f.process = any(string_to_array(ww.process, '+'))) u
               where u.used_on between f.qualified_on and on_date) as last_used_on
    ) j
   order by f.qualified_on, f.qualification_id, f.process
$$;

comment on function weld_public.welders_qualification_status(weld_public.welders, date) is
  E'Each of the welder''s qualifications, per process, on a date (today by default): valid, expired, lapsed (QW-322.1(a): the process not used for more than the tenant''s continuity months, counted from the welds on record and the continuity log), revoked (QW-322.1(b)) or not_yet_valid, with the reasons and what it covers.';

grant execute on function weld_public.welders_qualification_status(weld_public.welders, date) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welders_qualification_status.sql
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
  'Every problem with the weld''s record under the code rules (ASME IX, B31.3 341.3.3, the WPS): WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, WPS_PNUMBER, WPS_RANGE_UNSUPPORTED, REEXAMINATION_OPEN, DATA_MISSING; none when it is in order.';

grant execute on function weld_public.welds_checks(weld_public.welds) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.welds_checks.sql
--! Included functions/weld_public.withdraw_test_package.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- Withdraws a released package to open, with the engineer's reason (kept in its state history).
create or replace function weld_public.withdraw_test_package(
  test_package_id uuid, reason text, expected_version integer default null
) returns weld_public.test_packages
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  package weld_public.test_packages;
  why text := btrim(withdraw_test_package.reason, E' \t\n\r\v\f');
begin
  perform weld_private.require_role('engineer', 'withdrawing a test package');
  select * into package from weld_public.test_packages p
   where p.tenant_id = weld_hidden.current_tenant_id() and p.id = withdraw_test_package.test_package_id
     for no key update;
  if not found then
    raise exception 'test package % not found', withdraw_test_package.test_package_id using errcode = 'WD001';
  end if;
  if expected_version is not null and expected_version <> package.version then
    raise exception 'test package % is at version %, not %', package.id, package.version, expected_version
      using errcode = 'WD005', detail = json_build_object('version', package.version)::text;
  end if;
  if coalesce(why, '') = '' then
    raise exception 'a withdrawal needs a reason' using errcode = 'WD004';
  end if;
  if char_length(why) > 2000 then
    perform weld_private.invalid_input('the reason is longer than 2000 characters', '/reason');
  end if;
  if package.state <> 'released' then
    raise exception 'test package % is %; only a released package is withdrawn', package.package_number,
      package.state using errcode = 'WD008';
  end if;
  perform pg_catalog.set_config('weld.withdrawal_reason', why, true);
  update weld_public.test_packages p set state = 'open'
   where p.tenant_id = package.tenant_id and p.id = package.id
  returning * into package;
  perform pg_catalog.set_config('weld.withdrawal_reason', '', true);
  return package;
end
$$;

comment on function weld_public.withdraw_test_package(uuid, text, integer) is
  'Withdraws a released test package to open (its welds may change again), with the reason, kept in its state history. Engineer and up.';

grant execute on function weld_public.withdraw_test_package(uuid, text, integer) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.withdraw_test_package.sql
--! Included functions/weld_public.wps_checks.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_public to weld_rules;
set role weld_rules;

-- A WPS's own checks: WPS_RANGE_UNSUPPORTED per aspect, DATA_MISSING without P-numbers.
create or replace function weld_public.wps_checks(wps weld_public.wps)
  returns setof weld_public.weld_check
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select c.code, c.detail
    from (
      select 'WPS_RANGE_UNSUPPORTED' as code, p.detail
        from weld_private.wps_problems(array[wps.id]) p
      union all
      select 'DATA_MISSING', format('WPS %s rev %s records no P-numbers', wps.wps_number, wps.revision)
       where wps.p_numbers is null
    ) c
   order by c.code, c.detail
$$;

comment on function weld_public.wps_checks(weld_public.wps) is
  'What keeps the WPS from being qualified by its PQRs (WPS_RANGE_UNSUPPORTED: no PQR, a process, its thickness range or its P-numbers unsupported; QW-200, QW-451.1, QW-424.1), and DATA_MISSING; none when it is in order.';

grant execute on function weld_public.wps_checks(weld_public.wps) to weld_viewer;

reset role;
revoke create on schema weld_public from weld_rules;
--! EndIncluded functions/weld_public.wps_checks.sql
