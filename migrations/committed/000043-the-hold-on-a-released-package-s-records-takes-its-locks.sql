--! Previous: sha1:255e01fa5b6fcd78192501e272a103368c27d9d0
--! Hash: sha1:d3f43776549b0cfa801e2e57895fe52a0552b7e8
--! Message: the hold on a released package's records takes its locks

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
  -- The packages' locks first (as every guard takes them): a release in flight is waited for,
  -- and its state then read as committed.
  perform weld_private.lock_packages_of(weld_ids);
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
