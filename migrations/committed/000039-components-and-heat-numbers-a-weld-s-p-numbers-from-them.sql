--! Previous: sha1:c8ecf4c5e9dd1cae05cb03e0ea70e587239638cb
--! Hash: sha1:43285e84541e95d7a03a20a4de5be9a4451f76e9
--! Message: components and heat numbers; a weld's P-numbers from them

-- 5. Components: the pipe, fittings, flanges and valves a weld joins, with their material and the
-- heat they were made from (its mill test report), so that a recalled heat is traced to every
-- weld and ISO it touches. A weld names up to two (component_1_id, component_2_id: the second
-- null when the other side is something else, existing plant say); a side with a component takes
-- its P-number from it (weld_private.tg_welds__component_p_numbers).
create table if not exists weld_public.components (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  id            uuid not null default gen_random_uuid(),
  tag           text not null check (char_length(tag) between 1 and 100),
  kind          text not null check (kind in ('pipe', 'fitting', 'flange', 'valve')),
  description   text check (char_length(description) <= 200),
  material_spec text not null check (char_length(material_spec) between 1 and 50),
  grade         text check (char_length(grade) <= 20),
  p_number      text constraint components_p_number_format check (p_number ~ '^[0-9]{1,3}[A-Z]?$'),
  group_number  integer check (group_number between 1 and 9),
  size          numeric(6, 3) check (size > 0 and size <> 'NaN'),
  schedule      text constraint components_schedule_check
                  check (schedule ~ '^(5S|10S|40S|80S|160S|STD|XS|XXS|[0-9]{1,3})$'),
  heat_number   text check (char_length(heat_number) <= 50),
  mtr_ref       text check (char_length(mtr_ref) <= 500),
  version       integer not null default 1 check (version >= 1),
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  constraint components_tag_key unique (tenant_id, tag)
);
create index if not exists components_heat_number_idx on weld_public.components (tenant_id, heat_number);
comment on table weld_public.components is
  E'@aggregates on\nA pipe, fitting, flange or valve a weld joins: its material specification and grade, P-number, size and the heat it was made from.';
comment on column weld_public.components.tag is 'Its mark, unique in the tenant (a bill of materials item, a spool piece mark).';
comment on column weld_public.components.material_spec is 'The material specification, e.g. A106 or A105.';
comment on column weld_public.components.grade is 'The grade of the specification, e.g. B.';
comment on column weld_public.components.p_number is
  'ASME IX P-number of its material (QW-422), e.g. 1; a weld joining it takes it for its side.';
comment on column weld_public.components.group_number is 'ASME IX group number within its P-number (QW-422).';
comment on column weld_public.components.heat_number is 'The heat (melt) it was made from, as its mill test report names it.';
comment on column weld_public.components.mtr_ref is 'Its mill test report (certificate number or document reference).';
comment on constraint components_p_number_format on weld_public.components is
  'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)';
comment on constraint components_schedule_check on weld_public.components is
  'must be a pipe schedule (40, 80, XS, 10S, ...)';
select weld_private.secure_tenant_table('weld_public.components')
 where not exists (select from pg_catalog.pg_policy p
                    where p.polrelid = 'weld_public.components'::regclass and p.polname = 'tenant_isolation');
grant select on weld_public.components to weld_viewer, weld_rules;
grant insert (tag, kind, description, material_spec, grade, p_number, group_number, size, schedule,
              heat_number, mtr_ref),
      update (tag, kind, description, material_spec, grade, p_number, group_number, size, schedule,
              heat_number, mtr_ref),
      delete
   on weld_public.components to weld_engineer;

alter table weld_public.welds add column if not exists component_1_id uuid;
alter table weld_public.welds add column if not exists component_2_id uuid;
alter table weld_public.welds drop constraint if exists welds_component_1_fkey;
alter table weld_public.welds add constraint welds_component_1_fkey
  foreign key (tenant_id, component_1_id) references weld_public.components on delete restrict;
alter table weld_public.welds drop constraint if exists welds_component_2_fkey;
alter table weld_public.welds add constraint welds_component_2_fkey
  foreign key (tenant_id, component_2_id) references weld_public.components on delete restrict;
create index if not exists welds_component_1_idx on weld_public.welds (tenant_id, component_1_id)
  where component_1_id is not null;
create index if not exists welds_component_2_idx on weld_public.welds (tenant_id, component_2_id)
  where component_2_id is not null;
comment on column weld_public.welds.component_1_id is
  'The component on one side (base metal 1); its P-number is the weld''s base metal 1 P-number.';
comment on column weld_public.welds.component_2_id is
  'The component on the other side (base metal 2); null when that side is no recorded component.';
comment on constraint welds_component_1_fkey on weld_public.welds is
  E'@fieldName component1\n@foreignFieldName weldsOnSide1';
comment on constraint welds_component_2_fkey on weld_public.welds is
  E'@fieldName component2\n@foreignFieldName weldsOnSide2';
grant insert (component_1_id, component_2_id), update (component_1_id, component_2_id)
   on weld_public.welds to weld_engineer;

--! Included functions/weld_private.tg_welds__component_p_numbers.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- A weld side that names a component takes the component's P-number (when it has one): the
-- material is the component's, so the P-number checks (QW-403.11, B31.3 Table 331.1.1) read it
-- from there. A write that gives the side another P-number is refused (WD007, naming the field)
-- rather than silently replaced; one that leaves it alone gets the component's.
-- SECURITY DEFINER as weld_rules, which reads the tenant's components under row security.
create or replace function weld_private.tg_welds__component_p_numbers() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  side integer;
  component_id uuid;
  given text;
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
    if given is distinct from component.p_number and given is not null
       and (tg_op = 'INSERT'
            or given is distinct from case side when 1 then old.base_metal_1_p_number
                                                 else old.base_metal_2_p_number end) then
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
--! Included functions/weld_private.tg_components__p_number_to_welds.sql
-- A component's P-number, changed, is the P-number of every weld side that names it: the welds
-- are updated as the caller, so what guards a weld's base metals still holds (a weld of a
-- package that is not open keeps them: WD008; refuse mode judges the change: WD010).
create or replace function weld_private.tg_components__p_number_to_welds() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.p_number is null then
    return null; -- the welds keep what they had: a component that no longer says is no news
  end if;
  update weld_public.welds w set base_metal_1_p_number = new.p_number
   where w.tenant_id = new.tenant_id and w.component_1_id = new.id
     and w.base_metal_1_p_number is distinct from new.p_number;
  update weld_public.welds w set base_metal_2_p_number = new.p_number
   where w.tenant_id = new.tenant_id and w.component_2_id = new.id
     and w.base_metal_2_p_number is distinct from new.p_number;
  return null;
end
$$;

create or replace trigger _200_p_number_to_welds after update of p_number on weld_public.components
  for each row when (old.p_number is distinct from new.p_number)
  execute function weld_private.tg_components__p_number_to_welds();
--! EndIncluded functions/weld_private.tg_components__p_number_to_welds.sql
--! Included functions/weld_public.components_welds.sql
-- Component.welds over GraphQL: the welds that join it, on either side, by weld number. With
-- allComponents(condition: { heatNumber }) it answers a recalled heat's welds and their ISOs.
create or replace function weld_public.components_welds(component weld_public.components)
  returns setof weld_public.welds
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select w.*
    from weld_public.welds w
   where w.tenant_id = component.tenant_id and w.component_1_id = component.id
  union
  select w.*
    from weld_public.welds w
   where w.tenant_id = component.tenant_id and w.component_2_id = component.id
$$;

comment on function weld_public.components_welds(weld_public.components) is
  'The welds that join this component, on either side.';

grant execute on function weld_public.components_welds(weld_public.components) to weld_viewer;
--! EndIncluded functions/weld_public.components_welds.sql
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
create or replace trigger _100_touch before update on weld_public.pwht_records
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.hardness_readings
  for each row execute function weld_hidden.touch('versioned');
create or replace trigger _100_touch before update on weld_public.components
  for each row execute function weld_hidden.touch('versioned');
--! EndIncluded functions/weld_hidden.touch.sql
--! Included functions/weld_private.weld_json.sql
create or replace function weld_private.weld_json(w weld_public.welds) returns jsonb
  language sql stable parallel safe
as $$
  select jsonb_build_object(
    'id', w.id, 'isoId', w.iso_id, 'weldNumber', w.weld_number, 'type', w.type, 'size', w.size,
    'schedule', w.schedule, 'wallThickness', w.wall_thickness, 'material', w.material,
    'welderId', w.welder_id, 'wpsId', w.wps_id, 'weldedOn', w.welded_on,
    'baseMetal1PNumber', w.base_metal_1_p_number, 'baseMetal2PNumber', w.base_metal_2_p_number,
    'preheatF', w.preheat_f, 'component1Id', w.component_1_id, 'component2Id', w.component_2_id,
    'status', w.status,
    'repairCycle', w.repair_cycle, 'version', w.version,
    'createdAt', to_char(w.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'updatedAt', to_char(w.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;

grant execute on function weld_private.weld_json(weld_public.welds) to weld_rules;
--! EndIncluded functions/weld_private.weld_json.sql
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
    when 'pwht_record' then
      select weld_private.contract_json(to_jsonb(r)) || jsonb_build_object('weldIds', array(
               select l.weld_id from weld_public.pwht_record_welds l
                where l.tenant_id = r.tenant_id and l.pwht_record_id = r.id order by l.weld_id))
        into result
        from weld_public.pwht_records r where r.tenant_id = tenant and r.id = subject;
    when 'hardness_reading' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.hardness_readings r where r.tenant_id = tenant and r.id = subject;
    when 'component' then
      select weld_private.contract_json(to_jsonb(r)) into result
        from weld_public.components r where r.tenant_id = tenant and r.id = subject;
    when 'examination_selection' then
      select weld_hidden.examination_selection_json(s) into result
        from weld_public.examination_selections s
       where s.tenant_id = tenant and s.id = subject;
  end case;
  return result;
end
$$;
--! EndIncluded functions/weld_private.event_data.sql
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
    -- A whole tenant being deleted announces nothing (its events go with it, and the relay drops
    -- those still waiting).
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
drop trigger if exists _900_outbox on weld_public.pwht_records;
create constraint trigger _900_outbox after insert or delete or update on weld_public.pwht_records
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('pwht_record');
drop trigger if exists _900_outbox on weld_public.hardness_readings;
create constraint trigger _900_outbox after insert or delete or update on weld_public.hardness_readings
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('hardness_reading');
drop trigger if exists _900_outbox on weld_public.components;
create constraint trigger _900_outbox after insert or delete or update on weld_public.components
  deferrable initially deferred
  for each row execute function weld_private.tg__outbox('component');
--! EndIncluded functions/weld_private.tg__outbox.sql
