--! Previous: sha1:b8258cf21540c240a5ca13d065bbcf9aae63720e
--! Hash: sha1:255e01fa5b6fcd78192501e272a103368c27d9d0
--! Message: a released package's weld records are held; filler lots lock

-- The records of a weld in a package that is not open (its PWHT records, hardness readings,
-- fillers, components) are held as its data is (WD008, weld_private.tg__hold_weld_records),
-- rather than only when a change would leave the package not ready: a closed package is the
-- record of its test. So weld_private.tg__judged_on no longer judges them.
drop trigger if exists _700_judged_on_update on weld_public.pwht_records;
drop trigger if exists _700_judged_on_delete on weld_public.pwht_record_welds;
drop trigger if exists _700_judged_on_update on weld_public.hardness_readings;
drop trigger if exists _700_judged_on_delete on weld_public.hardness_readings;
drop trigger if exists _700_judged_on_update on weld_public.weld_fillers;
drop trigger if exists _700_judged_on_delete on weld_public.weld_fillers;

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
--! EndIncluded functions/weld_private.tg__judged_on.sql
--! Included functions/weld_private.tg__hold_weld_records.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- WD008 for the records of a weld, as for its data (weld_private.tg_welds__package_open): while a
-- package holding the weld is released, tested or closed, its PWHT records (their values and
-- welds), hardness readings, fillers and the components it joins are the record of what was
-- judged, and are not changed or deleted. A new record is still taken (a hardness reading found
-- later is a fact, and the package's readiness then names it); a PWHT record touched because a
-- weld was added to it (updated_at, version) is no change of its values. Requests only.
create or replace function weld_private.tg__hold_weld_records() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  weld_ids uuid[];
  package record;
begin
  if weld_hidden.request_role() is null then
    return null;
  end if;
  case tg_table_name
    when 'pwht_records' then
      weld_ids := array(
        select l.weld_id
          from new_rows n
          join old_rows o on o.id = n.id
          join weld_public.pwht_record_welds l on l.tenant_id = n.tenant_id and l.pwht_record_id = n.id
         where (n.record_number, n.treated_on, n.holding_temperature_f, n.hold_minutes,
                n.heating_rate_f_per_h, n.cooling_rate_f_per_h, n.chart_ref)
               is distinct from (o.record_number, o.treated_on, o.holding_temperature_f, o.hold_minutes,
                                 o.heating_rate_f_per_h, o.cooling_rate_f_per_h, o.chart_ref));
    when 'components' then
      weld_ids := array(
        select w.id
          from new_rows n
          join old_rows o on o.id = n.id
          join weld_public.welds w
            on w.tenant_id = n.tenant_id and (w.component_1_id = n.id or w.component_2_id = n.id)
         where (n.tag, n.kind, n.description, n.material_spec, n.grade, n.p_number, n.group_number,
                n.size, n.schedule, n.heat_number, n.mtr_ref)
               is distinct from (o.tag, o.kind, o.description, o.material_spec, o.grade, o.p_number,
                                 o.group_number, o.size, o.schedule, o.heat_number, o.mtr_ref));
    else
      -- pwht_record_welds, hardness_readings, weld_fillers: the welds of the rows written.
      if tg_op = 'DELETE' then
        weld_ids := array(select o.weld_id from old_rows o);
      else
        weld_ids := array(select n.weld_id from new_rows n union select o.weld_id from old_rows o);
      end if;
  end case;
  if coalesce(cardinality(weld_ids), 0) = 0 then
    return null;
  end if;
  select p.package_number, p.state into package
    from weld_public.test_packages p
   where p.tenant_id = weld_hidden.current_tenant_id() and p.state <> 'open'
     and (exists (select from weld_public.test_package_welds l
                   where l.tenant_id = p.tenant_id and l.test_package_id = p.id and l.weld_id = any(weld_ids))
          or exists (select from weld_public.test_package_isos l
                       join weld_public.welds w on w.tenant_id = l.tenant_id and w.iso_id = l.iso_id
                      where l.tenant_id = p.tenant_id and l.test_package_id = p.id and w.id = any(weld_ids)))
   order by p.package_number
   limit 1;
  if found then
    raise exception 'test package % is %; the records of its welds change only while it is open',
      package.package_number, package.state
      using errcode = 'WD008';
  end if;
  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;

create or replace trigger _700_hold_update after update on weld_public.pwht_records
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_delete after delete on weld_public.pwht_record_welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.hardness_readings
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_delete after delete on weld_public.hardness_readings
  referencing old table as old_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.weld_fillers
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_delete after delete on weld_public.weld_fillers
  referencing old table as old_rows
  for each statement execute function weld_private.tg__hold_weld_records();
create or replace trigger _700_hold_update after update on weld_public.components
  referencing old table as old_rows new table as new_rows
  for each statement execute function weld_private.tg__hold_weld_records();
--! EndIncluded functions/weld_private.tg__hold_weld_records.sql
--! Included functions/weld_private.tg__lock_packages_of_record.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A record re-dated (or an inspection made or unmade visual, a PWHT record's values or a filler
-- lot's F-number changed) may reopen what its welds owe: the same locks, for the welds it covers. (Row triggers: a column list allows no transition table,
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
  elsif tg_table_name = 'inspections' then
    perform weld_private.lock_packages_of(array(
      select iw.weld_id from weld_public.inspection_welds iw
       where iw.tenant_id = new.tenant_id and iw.inspection_id = new.id));
  elsif tg_table_name = 'pwht_records' then
    perform weld_private.lock_packages_of(array(
      select pw.weld_id from weld_public.pwht_record_welds pw
       where pw.tenant_id = new.tenant_id and pw.pwht_record_id = new.id));
  else -- filler_lots
    perform weld_private.lock_packages_of(array(
      select f.weld_id from weld_public.weld_fillers f
       where f.tenant_id = new.tenant_id and f.filler_lot_id = new.id));
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
create or replace trigger _600_lock_packages
  after update of treated_on, holding_temperature_f, hold_minutes on weld_public.pwht_records
  for each row when ((old.treated_on, old.holding_temperature_f, old.hold_minutes)
                     is distinct from (new.treated_on, new.holding_temperature_f, new.hold_minutes))
  execute function weld_private.tg__lock_packages_of_record();
create or replace trigger _600_lock_packages after update of f_number on weld_public.filler_lots
  for each row when (old.f_number is distinct from new.f_number)
  execute function weld_private.tg__lock_packages_of_record();
--! EndIncluded functions/weld_private.tg__lock_packages_of_record.sql
