--! Previous: sha1:a3f14888832d874908f2ab41705010375fe939a4
--! Hash: sha1:4ce244cd3194f6b4cb903770de6be60237902e87
--! Message: Kept report rows: second review's fixes

-- Issue F17, after a second review of 000035 from the attacker's side:
-- 1. Examination progress computes its noted lines one at a time, as the refresh does (lot_status
--    over many lines at once is quadratic: after a rules change, reads timed out).
-- 2. refresh_reports refuses a null tenant and gives the caller's tenant claim back at its end
--    (set_config lasts to the end of the transaction: a DBA refreshing by hand kept the tenant).
-- 3. A weld's update notes each side under its own tenant; a welder's is matched by tenant too.
-- 4. Comments: what each plan_cache_mode is for; why leftovers have kinds of their own.
--! Included functions/weld_private.tg__report_stale.sql
-- Keeps the cached reports (examination progress, the test package board, qualification expiry)
-- honest: every write to what they are computed from notes, in its own transaction, what it
-- changed (weld_private.mark_report_stale), naming only rows it wrote: which lots, packages and
-- welders that touches is worked out when the notes are read (weld_private.report_stale_parts),
-- in the reader's snapshot, so a write racing another (an ISO moved to another line while a weld
-- on it is examined) cannot be noted under a key the other made stale. The kinds:
--
-- - 'line': a line's lots (an ISO's line, RT percent or fluid service changed; its old and new line);
-- - 'iso': what a package holding the ISO reads of its welds (any field of any of them);
-- - 'lot_iso': that, and the lots of the ISO's line (a weld made, deleted, moved, retyped, its
--   welder or date or VOIDED-ness changed);
-- - 'weld': a weld's selections or examinations changed (its ISO's lots and packages);
-- - 'record': an NDT record's, film interval's or inspection's method, date or result changed
--   (the welds it covers);
-- - 'package': a package's members; 'wps', 'pqr': what a WPS or PQR says (the packages with welds
--   to it, and the welders whose continuity or qualifications it carries);
-- - 'welder': a welder's qualifications, continuity, or welds' dates and WPSs; 'welder_lots': its
--   stamp, which names its lots;
-- - 'all': the tenant's rules and settings (examination, P-number, thickness and range rules,
--   settings), and a TRUNCATE (every tenant).
-- (The refresh notes what it leaves for its next call as 'lot_line', 'package', 'qual_welder':
-- lines and welders as kinds of their own, since a 'line' or 'welder' note also reaches packages,
-- which the refresh has already listed; a package reaches nothing further, so it stays 'package'.)
--
-- Statement triggers, reading the statement's rows from its transition tables: a bulk write notes
-- once per kind, not once per row.
create or replace function weld_private.tg__report_stale() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  pair record;
  -- The statement's rows: an insert has only new rows, a delete only old ones.
  changed text := case tg_op when 'INSERT' then 'select * from new_rows'
                             when 'DELETE' then 'select * from old_rows'
                             else 'select * from new_rows union all select * from old_rows' end;
begin
  if tg_op = 'TRUNCATE' then
    -- (A DBA's TRUNCATE fires no delete trigger: every tenant's reports are recomputed.)
    insert into weld_private.report_stale (tenant_id, kind, keys)
    select t.id, 'all', '{*}' from weld_public.tenants t;
    return null;
  end if;

  case tg_table_name
    when 'welds' then
      if tg_op = 'UPDATE' then
        -- Packages read every field; lots only some; a welder's continuity only what it chains.
        -- (Each side under its own tenant: a DBA's move of a weld to another tenant notes both.)
        for pair in
          select x.tenant_id,
                 array_agg(distinct x.iso_id::text) as isos,
                 array_agg(distinct x.iso_id::text) filter (
                   where (o.iso_id, o.type, o.welder_id, o.welded_on, o.status = 'VOIDED')
                         is distinct from (n.iso_id, n.type, n.welder_id, n.welded_on, n.status = 'VOIDED')
                 ) as lot_isos,
                 array_agg(distinct x.welder_id::text) filter (
                   where (o.welder_id, o.wps_id, o.welded_on, o.status = 'VOIDED')
                         is distinct from (n.welder_id, n.wps_id, n.welded_on, n.status = 'VOIDED')
                 ) as welders
            from new_rows n
            join old_rows o on o.id = n.id
            cross join lateral (values (o.tenant_id, o.iso_id, o.welder_id),
                                       (n.tenant_id, n.iso_id, n.welder_id)) as x (tenant_id, iso_id, welder_id)
           group by x.tenant_id
        loop
          perform weld_private.mark_report_stale(pair.tenant_id, 'iso', pair.isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'lot_iso', pair.lot_isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        end loop;
      else
        -- Made or deleted.
        for pair in execute format(
          'select r.tenant_id, array_agg(distinct r.iso_id::text) as isos,
                  array_agg(distinct r.welder_id::text) as welders
             from (%s) r group by r.tenant_id', changed)
        loop
          perform weld_private.mark_report_stale(pair.tenant_id, 'lot_iso', pair.isos);
          perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        end loop;
      end if;
    when 'isos' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as isos,
                array_agg(distinct r.line_number) as lines
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'iso', pair.isos);
        perform weld_private.mark_report_stale(pair.tenant_id, 'line', pair.lines);
      end loop;
    when 'examination_selections', 'ndt_record_welds', 'film_interval_welds', 'inspection_welds',
         'weld_reexaminations' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.weld_id::text) as welds from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'weld', pair.welds);
      end loop;
    when 'ndt_records', 'film_intervals', 'inspections' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as ids from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'record', pair.ids);
      end loop;
    when 'test_packages', 'test_package_welds', 'test_package_isos' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.%I::text) as packages from (%s) r group by r.tenant_id',
        case tg_table_name when 'test_packages' then 'id' else 'test_package_id' end, changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'package', pair.packages);
      end loop;
    when 'wps', 'wps_pqrs' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.%I::text) as wps from (%s) r group by r.tenant_id',
        case tg_table_name when 'wps' then 'id' else 'wps_id' end, changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'wps', pair.wps);
      end loop;
    when 'pqrs' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.id::text) as ids from (%s) r group by r.tenant_id',
        changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'pqr', pair.ids);
      end loop;
    when 'welder_qualifications', 'welder_continuity' then
      for pair in execute format(
        'select r.tenant_id, array_agg(distinct r.welder_id::text) as welders
           from (%s) r group by r.tenant_id', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
      end loop;
    when 'welders' then
      -- (Updates only.) Its qualifications' standing; and a new stamp names its lots.
      for pair in
        select n.tenant_id, array_agg(n.id::text) as welders,
               array_agg(n.id::text) filter (where o.stamp is distinct from n.stamp) as renamed
          from new_rows n join old_rows o on o.tenant_id = n.tenant_id and o.id = n.id
         group by n.tenant_id
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder', pair.welders);
        perform weld_private.mark_report_stale(pair.tenant_id, 'welder_lots', pair.renamed);
      end loop;
    else
      -- The tenant's rules and settings: examination_rules, p_number_rules,
      -- procedure_thickness_rules, qualification_range_rules, tenant_settings.
      for pair in execute format('select distinct r.tenant_id from (%s) r', changed)
      loop
        perform weld_private.mark_report_stale(pair.tenant_id, 'all', '{*}');
      end loop;
  end case;
  return null;
end
$$;

-- Per statement: each table's inserts, updates and deletes that can change what the reports read
-- (an ISO's insert cannot, nor a record's before its welds are linked), and its TRUNCATE.
create or replace trigger _520_report_stale_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.isos
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.isos
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.examination_selections
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.examination_selections
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.examination_selections
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.examination_selections
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.ndt_record_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.ndt_record_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.ndt_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.ndt_record_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.film_interval_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.film_interval_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.film_interval_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.film_interval_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.inspection_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.inspection_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.inspection_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.inspection_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.weld_reexaminations
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.weld_reexaminations
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.weld_reexaminations
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.weld_reexaminations
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.ndt_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.ndt_records
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.film_intervals
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.film_intervals
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.inspections
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.inspections
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_packages
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_packages
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_package_welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.test_package_welds
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.test_package_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_package_welds
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.test_package_isos
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.test_package_isos
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.test_package_isos
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.test_package_isos
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.wps
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.wps
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.wps_pqrs
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.wps_pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.wps_pqrs
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.wps_pqrs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.pqrs
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.pqrs
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.welder_qualifications
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welder_qualifications
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welder_qualifications
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welder_qualifications
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.welder_continuity
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welder_continuity
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.welder_continuity
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welder_continuity
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.welders
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.welders
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.examination_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.examination_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.examination_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.examination_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.p_number_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.p_number_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.p_number_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.p_number_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.procedure_thickness_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.procedure_thickness_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.procedure_thickness_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.procedure_thickness_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.qualification_range_rules
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.qualification_range_rules
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.qualification_range_rules
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.qualification_range_rules
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_insert after insert on weld_public.tenant_settings
  referencing new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_update after update on weld_public.tenant_settings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_delete after delete on weld_public.tenant_settings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__report_stale();
create or replace trigger _520_report_stale_truncate after truncate on weld_public.tenant_settings
  for each statement execute function weld_private.tg__report_stale();
--! EndIncluded functions/weld_private.tg__report_stale.sql
--! Included functions/weld_private.report_stale_parts.sql
-- What of the cached reports the notes in weld_private.report_stale (as this snapshot sees them)
-- say is out of date, for the current tenant: the lines whose lots, the packages whose readiness,
-- and the welders whose qualifications must be computed afresh. `wanted` names which of the three
-- the caller reads ('lines', 'packages', 'welders'); the others come back null.
--
-- The notes name the rows their writes wrote (weld_private.tg__report_stale lists the kinds);
-- what those reach is worked out here, in the reader's snapshot, which holds every write whose
-- note it sees. A note of 'all' (the tenant's rules or settings) is everything: every line, with
-- those whose lots are kept but have no ISO left; every package; every welder.
create or replace function weld_private.report_stale_parts(
  wanted text[], out lines text[], out packages uuid[], out welders uuid[]
)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  noted jsonb;
  welds uuid[];       -- welds whose selections or examinations changed
  lot_isos uuid[];    -- ISOs whose line's lots changed
  lots_changed text[];-- lines whose lots changed (not counting what the refresh left over)
  wps_ids uuid[];
  continuity uuid[];  -- welders whose qualifications' standing changed
begin
  -- Each kind's keys, distinct: {"line": [...], "iso": [...], ...}.
  select coalesce(jsonb_object_agg(k.kind, k.keys), '{}')
    into noted
    from (select s.kind, jsonb_agg(distinct x.key) as keys
            from weld_private.report_stale s
            cross join lateral unnest(s.keys) as x (key)
           where s.tenant_id = tenant
           group by s.kind) k;
  if noted = '{}' then
    lines := case when 'lines' = any(wanted) then '{}'::text[] end;
    packages := case when 'packages' = any(wanted) then '{}'::uuid[] end;
    welders := case when 'welders' = any(wanted) then '{}'::uuid[] end;
    return;
  end if;

  if noted ? 'all' then
    if 'lines' = any(wanted) then
      lines := array(select i.line_number from weld_public.isos i where i.tenant_id = tenant
                     union
                     select c.line_number from weld_private.lot_report_rows c where c.tenant_id = tenant);
    end if;
    if 'packages' = any(wanted) then
      packages := array(select p.id from weld_public.test_packages p where p.tenant_id = tenant);
    end if;
    if 'welders' = any(wanted) then
      welders := array(select v.id from weld_public.welders v where v.tenant_id = tenant);
    end if;
    return;
  end if;

  -- The welds whose examinations changed: those noted, and those a noted record covers.
  welds := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'weld') x
    union
    select l.weld_id from weld_public.ndt_record_welds l
     where l.tenant_id = tenant
       and l.ndt_record_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x)
    union
    select l.weld_id from weld_public.film_interval_welds l
     where l.tenant_id = tenant
       and l.film_interval_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x)
    union
    select l.weld_id from weld_public.inspection_welds l
     where l.tenant_id = tenant
       and l.inspection_id in (select x::uuid from jsonb_array_elements_text(noted -> 'record') x));
  lot_isos := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'lot_iso') x
    union
    select w.iso_id from weld_public.welds w where w.tenant_id = tenant and w.id = any(welds));
  lots_changed := array(
    select x from jsonb_array_elements_text(noted -> 'line') x
    union
    select i.line_number from weld_public.isos i
     where i.tenant_id = tenant and i.id = any(lot_isos)
    union
    -- A welder's new stamp is in the names of its lots.
    select i.line_number
      from weld_public.welds w
      join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
     where w.tenant_id = tenant
       and w.welder_id in (select x::uuid from jsonb_array_elements_text(noted -> 'welder_lots') x));
  if 'lines' = any(wanted) then
    lines := array(select x from unnest(lots_changed) x
                   union
                   select x from jsonb_array_elements_text(noted -> 'lot_line') x);
  end if;
  if not ('packages' = any(wanted) or 'welders' = any(wanted)) then
    return;
  end if;

  -- A WPS's or PQR's change reaches the welders whose continuity or qualifications it carries.
  wps_ids := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'wps') x
    union
    select l.wps_id from weld_public.wps_pqrs l
     where l.tenant_id = tenant
       and l.pqr_id in (select x::uuid from jsonb_array_elements_text(noted -> 'pqr') x));
  continuity := array(
    select x::uuid from jsonb_array_elements_text(noted -> 'welder') x
    union
    select q.welder_id from weld_public.welder_qualifications q
     where q.tenant_id = tenant
       and (q.pqr_id in (select x::uuid from jsonb_array_elements_text(noted -> 'pqr') x)
            or q.wps_id = any(wps_ids))
    union
    select w.welder_id from weld_public.welds w
     where w.tenant_id = tenant and w.wps_id = any(wps_ids) and w.welder_id is not null);
  if 'welders' = any(wanted) then
    welders := array(select x from unnest(continuity) x
                     union
                     select x::uuid from jsonb_array_elements_text(noted -> 'qual_welder') x);
  end if;
  if 'packages' = any(wanted) then
    packages := array(
      select x::uuid from jsonb_array_elements_text(noted -> 'package') x
      union
      select unnest(weld_private.packages_reading(
               lots_changed,
               array(select x::uuid from jsonb_array_elements_text(noted -> 'iso') x) || lot_isos,
               wps_ids,
               continuity)));
  end if;
end
$$;

-- Read by the report functions and the refresh, SECURITY DEFINER as weld_rules.
grant execute on function weld_private.report_stale_parts(text[]) to weld_rules;
--! EndIncluded functions/weld_private.report_stale_parts.sql
--! Included functions/weld_hidden.report_examination_progress.sql
-- Examination progress (F17): per designated lot and method, what B31.3 341.4.1 asks and where it
-- stands, as an auditor checks it: the lot's candidate welds, how many the percent requires (at
-- least one weld of each welder), how many are drawn (selected, every tier), examined, accepted,
-- the shortfall, progressive selections still open, and the welders not yet represented.
-- The numbers are weld_private.lot_status's: the same ones the draw, the ISO's examination and a
-- test package's readiness use, so this report cannot disagree with them. Computed for every line
-- they take seconds on a large tenant, so they are kept per line, and computed afresh only for
-- the lines changed since (see weld_private.tg__report_stale).
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
  -- A custom plan for each call of the rules (PostgreSQL 18 caches SQL functions' plans; a
  -- generic one, tenant unknown, reads whole tables).
  set plan_cache_mode = force_custom_plan
as $$
  -- Lots are kept per line in weld_private.lot_report_rows (weld_hidden.refresh_reports); the lines
  -- a write has changed since (weld_private.report_stale_parts) are computed here from the tables.
  with stale as (
    select s.lines from weld_private.report_stale_parts('{lines}') s
  )
  select c.method, c.lot, c.lot_name, c.percent::float8, c.welds, c.welders, c.required, c.selected,
         c.examined, c.accepted, c.shortfall, c.progressive_open, c.stamps_not_covered
    from weld_private.lot_report_rows c, stale
   where c.tenant_id = weld_hidden.current_tenant_id() and not c.line_number = any(stale.lines)
  union all
  -- (Line by line, as the refresh computes them: lot_status over many lines at once is quadratic.)
  select l.method, l.lot, l.lot_name, l.percent::float8, l.welds, l.welders, l.required, l.selected,
         l.examined, l.accepted, l.shortfall, l.progressive_open, l.stamps_not_covered
    from stale
    cross join lateral unnest(stale.lines) as x (line)
    cross join lateral weld_private.lot_status(weld_private.rule_methods(), array[x.line], null) l
$$;

comment on function weld_hidden.report_examination_progress() is
  'Examination progress per lot and method: the rows of the view weld_reports.examination_progress.';

grant execute on function weld_hidden.report_examination_progress() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_examination_progress.sql
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
  -- A custom plan for each call of the rules (PostgreSQL 18 caches SQL functions' plans; a
  -- generic one, tenant unknown, reads whole tables: readiness took 1.2 s a package, not 0.15).
  set plan_cache_mode = force_custom_plan
as $$
  select v.id as welder_id, v.stamp as welder_stamp, v.name as welder_name,
         q.qualification_id, q.process, q.wps_id, q.last_used_on, d.valid_until,
         case when q.expires_on is not null and q.expires_on <= q.continuity_until
              then 'expiry' else 'continuity' end as cause,
         d.valid_until - current_date as days_left,
         case when d.valid_until - current_date < 30 then 30
              when d.valid_until - current_date < 60 then 60 else 90 end as within_days
    from weld_public.welders v
    cross join (select s.welders from weld_private.report_stale_parts('{welders}') s) stale
    -- Kept per welder for a day in weld_private.welder_qualification_rows (weld_hidden.refresh_reports);
    -- a welder a write has changed since (weld_private.report_stale_parts), or not kept today, is
    -- computed here.
    left join weld_private.welder_qualification_rows c
      on c.tenant_id = v.tenant_id and c.welder_id = v.id and c.computed_on = current_date
     and not v.id = any(stale.welders)
    cross join lateral (
      select k.* from unnest(c.statuses) k where c.welder_id is not null
      union all
      select k.* from weld_public.welders_qualification_status(v) k where c.welder_id is null
    ) q
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
--! Included functions/weld_hidden.report_test_package_board.sql
-- Test package board (F17): per package its state, whether it is ready, how many reasons of each
-- code keep it from being ready, and its welds: total (not VOIDED) and accepted
-- (weld_private.package_board_row). Readiness takes a tenth of a second for a large package, so
-- each package's line is kept, and computed afresh only when a write has changed what it reads
-- (see weld_private.tg__report_stale).
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
  -- A custom plan for each call of the rules (PostgreSQL 18 caches SQL functions' plans; a
  -- generic one, tenant unknown, reads whole tables: readiness took 1.2 s a package, not 0.15).
  set plan_cache_mode = force_custom_plan
as $$
  -- Kept per package in weld_private.package_board_rows (weld_hidden.refresh_reports); a package
  -- a write has changed since (weld_private.report_stale_parts), or not kept yet, is computed here.
  with stale as (
    select s.packages from weld_private.report_stale_parts('{packages}') s
  )
  select p.id as test_package_id, p.package_number, p.test_medium, p.state,
         b.reasons = 0 as ready, b.reasons, b.reasons_by_code, b.welds, b.welds_accepted
    from weld_public.test_packages p
    cross join stale
    left join weld_private.package_board_rows c
      on c.tenant_id = p.tenant_id and c.test_package_id = p.id and not p.id = any(stale.packages)
    cross join lateral (
      select c.reasons, c.reasons_by_code, c.welds, c.welds_accepted where c.test_package_id is not null
      union all
      select * from weld_private.package_board_row(p) where c.test_package_id is null
    ) b
$$;

comment on function weld_hidden.report_test_package_board() is
  'The test package board: the rows of the view weld_reports.test_package_board.';

grant execute on function weld_hidden.report_test_package_board() to weld_viewer, weld_reporting;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.report_test_package_board.sql
--! Included functions/weld_hidden.refresh_reports.sql
-- Brings the cached reports of `tenant` up to date with what its writes have noted
-- (weld_private.report_stale), a bounded part at a time: the lots of at most `max_lines` noted
-- lines (weld_private.lot_report_rows), the board lines of at most `max_packages` packages
-- (weld_private.package_board_rows), the qualifications of at most `max_welders` welders noted or
-- not computed today (weld_private.welder_qualification_rows). What is left over is noted again,
-- as itself ('lot_line', 'package', 'qual_welder'), for the next call. Returns how many of each
-- it computed and how many are left.
--
-- Called by every server instance's housekeeping (server/housekeeping.ts), each call in its own
-- REPEATABLE READ transaction, which it requires: the notes it clears must be exactly those its
-- snapshot saw, so that a write committed meanwhile stays noted, and a refresh from an older
-- snapshot cannot overwrite a newer one. One refresh per tenant at a time: an advisory lock (a
-- second instance's call returns at once, with no row); and each refresh counts itself in the
-- tenant's row of weld_private.report_refreshes, so a call whose snapshot is older than a refresh
-- committed meanwhile fails to serialize (40001) before it writes anything.
--
-- SECURITY DEFINER as weld_rules, under row security with `tenant` as the transaction's tenant;
-- granted to the authenticator alone.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.refresh_reports(
  tenant uuid, max_lines integer default 100, max_packages integer default 20,
  max_welders integer default 100
)
  returns table (lines integer, packages integer, welders integer, left_over integer)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- A custom plan for each call of the rules it runs: PostgreSQL 18 caches SQL functions' plans,
  -- and a generic one (tenant and package unknown) reads whole tables: readiness took 1.2 s a
  -- package, not 0.15.
  set plan_cache_mode = force_custom_plan
as $$
declare
  -- The caller's tenant claim, given back at the end (set_config lasts to the transaction's end).
  caller_tenant text := current_setting('jwt.claims.tenant_id', true);
  parts record;
  due uuid[];
  todo_lines text[];
  todo_packages uuid[];
  todo_welders uuid[];
begin
  if tenant is null then
    raise exception 'weld_hidden.refresh_reports needs a tenant id' using errcode = '22023';
  end if;
  if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
    raise exception 'weld_hidden.refresh_reports runs in a REPEATABLE READ transaction'
      using errcode = '25000';
  end if;
  if not pg_try_advisory_xact_lock(hashtext('weld_hidden.refresh_reports'), hashtext(tenant::text)) then
    return;
  end if;
  perform set_config('jwt.claims.tenant_id', tenant::text, true);
  insert into weld_private.report_refreshes as r (tenant_id, refreshes, refreshed_at)
  values (tenant, 1, now())
  on conflict (tenant_id) do update set refreshes = r.refreshes + 1, refreshed_at = now();
  parts := weld_private.report_stale_parts('{lines,packages,welders}');
  -- Welders are also due when not computed today (their qualifications depend on the date).
  due := array(select v.id
                 from weld_public.welders v
                 left join weld_private.welder_qualification_rows c
                   on c.tenant_id = v.tenant_id and c.welder_id = v.id
                where v.tenant_id = tenant
                  and (v.id = any(parts.welders) or c.computed_on is distinct from current_date)
                order by v.id);
  todo_lines := parts.lines[1:greatest(max_lines, 1)];
  todo_packages := parts.packages[1:greatest(max_packages, 1)];
  todo_welders := due[1:greatest(max_welders, 1)];

  -- Lots, line by line, as the draw and readiness compute them.
  delete from weld_private.lot_report_rows c
   where c.tenant_id = tenant and c.line_number = any(todo_lines);
  insert into weld_private.lot_report_rows
  select tenant, x.line, l.method, l.lot, l.lot_name, l.percent, l.welds, l.welders, l.required,
         l.selected, l.examined, l.accepted, l.shortfall, l.progressive_open, l.stamps_not_covered
    from unnest(todo_lines) as x (line)
    cross join lateral weld_private.lot_status(weld_private.rule_methods(), array[x.line], null) l;

  -- Board lines (and none of packages deleted since).
  delete from weld_private.package_board_rows c
   where c.tenant_id = tenant
     and (c.test_package_id = any(todo_packages)
          or not exists (select from weld_public.test_packages p
                          where p.tenant_id = tenant and p.id = c.test_package_id));
  insert into weld_private.package_board_rows
  select tenant, p.id, b.reasons, b.reasons_by_code, b.welds, b.welds_accepted
    from weld_public.test_packages p
    cross join lateral weld_private.package_board_row(p) b
   where p.tenant_id = tenant and p.id = any(todo_packages);

  -- Qualifications (and none of welders deleted since).
  delete from weld_private.welder_qualification_rows c
   where c.tenant_id = tenant
     and (c.welder_id = any(todo_welders)
          or not exists (select from weld_public.welders v where v.tenant_id = tenant and v.id = c.welder_id));
  insert into weld_private.welder_qualification_rows
  select tenant, v.id, current_date, array(select q from weld_public.welders_qualification_status(v) q)
    from weld_public.welders v
   where v.tenant_id = tenant and v.id = any(todo_welders);

  -- The notes this snapshot saw are done (a REPEATABLE READ delete touches no later one); what is
  -- left over is noted again, as itself.
  delete from weld_private.report_stale s where s.tenant_id = tenant;
  perform weld_private.mark_report_stale(tenant, 'lot_line', parts.lines[greatest(max_lines, 1) + 1:]);
  perform weld_private.mark_report_stale(tenant, 'package',
                                         parts.packages[greatest(max_packages, 1) + 1:]::text[]);
  perform weld_private.mark_report_stale(tenant, 'qual_welder', due[greatest(max_welders, 1) + 1:]::text[]);

  perform set_config('jwt.claims.tenant_id', coalesce(caller_tenant, ''), true);
  return query select cardinality(todo_lines), cardinality(todo_packages), cardinality(todo_welders),
                      cardinality(parts.lines) - cardinality(todo_lines)
                      + cardinality(parts.packages) - cardinality(todo_packages)
                      + cardinality(due) - cardinality(todo_welders);
end
$$;

comment on function weld_hidden.refresh_reports(uuid, integer, integer, integer) is
  'Brings the cached reports of a tenant up to date with the writes noted since (server housekeeping).';

grant execute on function weld_hidden.refresh_reports(uuid, integer, integer, integer) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.refresh_reports.sql
