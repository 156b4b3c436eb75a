--! Previous: sha1:684d08fce43610228af8aa256a80dd823b119817
--! Hash: sha1:fee1ae38eec301760958ffa16cbc4881113ba0b7
--! Message: Every resource over REST: versions, examinations through functions, NDT results move welds, idempotency keys

-- Every resource over REST (issue F6). REST gives every resource an If-Match version and writes
-- examinations through functions that hold the rules; this migration provides what that needs:
--
--   1. A version on every resource (welds had one), bumped by the touch trigger.
--   2. A change to a resource's lists (a WPS's PQRs, an NDT record's welds and film, an
--      inspection's welds, a test package's ISOs and welds) bumps the resource's version too,
--      once per transaction: a record created with its lists stays at version 1, and one
--      correction is one bump.
--   3. Per-weld NDT results: the one the inspector gave, or for RT the film intervals'.
--   4. Tenant settings, one row per tenant; the first says whether NDT results move welds.
--   5. Corrections of examinations carry a reason (at most 2000 characters), kept in
--      examination_changes.
--   6. Examinations are written only through record_ndt, correct_ndt_record, record_inspection
--      and correct_inspection, which validate their JSON themselves (GraphQL reaches them without
--      REST's checks), hold records to realistic sizes, and apply NDT results to the welds'
--      statuses through change_weld_status, or refuse the whole record. The inspector's direct
--      writes to those tables are revoked, so no generated GraphQL mutation can go around them;
--      and only they may name an NDT record as the cause of a weld's move.
--   7. A test package's ISOs and welds change, and the package is deleted, only while it is open;
--      its state moves forward only (or from released back to open).
--   8. WPSs are superseded, never deleted.
--   9. Idempotency keys for REST POSTs, and their purge.
--
-- The service's SQLSTATEs (the server maps each to an HTTP status once):
--   WD001 not found                    WD005 stale version; DETAIL {"version": n}
--   WD002 transition not allowed;      WD006 NDT results the rules refuse; DETAIL {"welds": [...]}
--         DETAIL {"allowed": [...]}    WD007 invalid input; DETAIL {"pointer": "/welds/1/result"}
--   WD003 role too low                 WD008 test package not open, or a move of its state
--   WD004 reason required                    that is not allowed
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

-- weld_rules creates functions below; it holds CREATE on these schemas only until the end of this
-- migration (see the last section).
grant create on schema weld_public, weld_private to weld_rules;

drop table if exists weld_public.tenant_settings, weld_hidden.idempotency_keys cascade;

--------------------------------------------------------------------------------------------------
-- 1. Versions on every resource. REST sends them as ETags and checks If-Match against them. The
-- old <table>_touch triggers called touch() without 'versioned'; _100_touch replaces them.

do $$
declare
  tbl regclass;
begin
  foreach tbl in array array[
    'weld_public.isos', 'weld_public.welders', 'weld_public.pqrs', 'weld_public.wps',
    'weld_public.welder_qualifications', 'weld_public.ndt_records', 'weld_public.inspections',
    'weld_public.test_packages'
  ]::regclass[] loop
    execute format(
      'alter table %s add column if not exists version integer not null default 1 check (version >= 1)', tbl);
    execute format('comment on column %s.version is %L', tbl,
      case when tbl in ('weld_public.wps', 'weld_public.ndt_records', 'weld_public.inspections',
                        'weld_public.test_packages')
           then 'Bumped by every change, and once per transaction by changes to its lists; send it back (If-Match) to change only what you saw.'
           else 'Bumped by every change; send it back (If-Match) to change only what you saw.' end);
    execute format('drop trigger if exists %I on %s',
      (select c.relname || '_touch' from pg_catalog.pg_class c where c.oid = tbl), tbl);
    execute format('drop trigger if exists _100_touch on %s', tbl);
    execute format(
      'create trigger _100_touch before update on %s for each row execute function weld_hidden.touch(%L)',
      tbl, 'versioned');
  end loop;
end
$$;

--------------------------------------------------------------------------------------------------
-- 2. A change to a resource's lists bumps the resource's version, once per transaction.
--
-- The lists are tables of their own, so changing them does not write the resource's row, and an
-- If-Match on the resource would not see it. This trigger touches the resource's row (its touch
-- trigger then bumps the version) unless this transaction created or touched it already: its
-- updated_at is then now(), the transaction's start. So a record created with its lists stays at
-- version 1, and a change of the row and its lists is one bump, if the row is written first (the
-- functions below do so).
--
-- SECURITY DEFINER as weld_rules, which may write updated_at (no API role may), under row
-- security; outside a tenant context (the owner: the seed generator, a DBA) it does nothing.
-- tg_argv: the resource's table and the list's column that holds the resource's id.

grant select on weld_public.wps, weld_public.test_packages to weld_rules;
grant update (updated_at)
  on weld_public.wps, weld_public.ndt_records, weld_public.inspections, weld_public.test_packages
  to weld_rules;

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

drop trigger if exists _100_touch_parent on weld_public.wps_pqrs;
create trigger _100_touch_parent after insert or update or delete on weld_public.wps_pqrs
  for each row execute function weld_private.tg__touch_parent('weld_public.wps', 'wps_id');
drop trigger if exists _100_touch_parent on weld_public.ndt_record_welds;
create trigger _100_touch_parent after insert or update or delete on weld_public.ndt_record_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.ndt_records', 'ndt_record_id');
drop trigger if exists _100_touch_parent on weld_public.film_intervals;
create trigger _100_touch_parent after insert or update or delete on weld_public.film_intervals
  for each row execute function weld_private.tg__touch_parent('weld_public.ndt_records', 'ndt_record_id');
drop trigger if exists _100_touch_parent on weld_public.film_interval_welds;
create trigger _100_touch_parent after insert or update or delete on weld_public.film_interval_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.ndt_records', 'ndt_record_id');
drop trigger if exists _100_touch_parent on weld_public.inspection_welds;
create trigger _100_touch_parent after insert or update or delete on weld_public.inspection_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.inspections', 'inspection_id');
drop trigger if exists _100_touch_parent on weld_public.test_package_isos;
create trigger _100_touch_parent after insert or update or delete on weld_public.test_package_isos
  for each row execute function weld_private.tg__touch_parent('weld_public.test_packages', 'test_package_id');
drop trigger if exists _100_touch_parent on weld_public.test_package_welds;
create trigger _100_touch_parent after insert or update or delete on weld_public.test_package_welds
  for each row execute function weld_private.tg__touch_parent('weld_public.test_packages', 'test_package_id');

--------------------------------------------------------------------------------------------------
-- 3. Per-weld NDT results.

alter table weld_public.ndt_record_welds
  add column if not exists result text check (result in ('accepted', 'rejected'));
comment on column weld_public.ndt_record_welds.result is
  'The result the examiner gave this weld; null: derived from the film intervals that show it (RT only), rejected when any is.';

-- Existing rows: where the film shows the weld (RT), null derives the result as before; where
-- nothing can be derived (other methods, or RT without film for the weld), the record's result
-- is the only one recorded, so it is the weld's. The seed generator writes RT welds that its film
-- shows, with no result.
update weld_public.ndt_record_welds nw
   set result = r.result
  from weld_public.ndt_records r
 where r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id and nw.result is null
   and (r.method <> 'RT' or not exists (
     select from weld_public.film_interval_welds fw
      where fw.tenant_id = nw.tenant_id and fw.ndt_record_id = nw.ndt_record_id
        and fw.weld_id = nw.weld_id));

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
grant execute on function weld_public.ndt_record_welds_effective_result(weld_public.ndt_record_welds)
  to weld_viewer;

--------------------------------------------------------------------------------------------------
-- 4. Tenant settings: one row per tenant, created with the tenant. A DBA changes them in SQL;
-- API roles only read them. Later issues add columns here.

create table weld_public.tenant_settings (
  tenant_id                uuid primary key references weld_public.tenants on delete cascade,
  -- NDT results move the welds they cover to ACCEPTED or REJECTED (record_ndt, section 6).
  ndt_results_drive_status boolean not null default true,
  updated_at               timestamptz not null default now()
);
comment on table weld_public.tenant_settings is
  E'A tenant''s settings, one row per tenant, changed by a DBA in SQL. NDT results move welds to ACCEPTED or REJECTED unless switched off:\nupdate weld_public.tenant_settings set ndt_results_drive_status = false where tenant_id = ''...'';';
comment on column weld_public.tenant_settings.ndt_results_drive_status is
  'Whether recording or correcting an NDT record moves its welds to ACCEPTED or REJECTED through the transition rules.';
select weld_private.secure_tenant_table('weld_public.tenant_settings');
create trigger _100_touch before update on weld_public.tenant_settings
  for each row execute function weld_hidden.touch();
grant select on weld_public.tenant_settings to weld_viewer, weld_rules;

create or replace function weld_private.tg_tenants__seed_settings() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into weld_public.tenant_settings (tenant_id) values (new.id) on conflict do nothing;
  return null;
end
$$;
drop trigger if exists _100_seed_settings on weld_public.tenants;
create trigger _100_seed_settings after insert on weld_public.tenants
  for each row execute function weld_private.tg_tenants__seed_settings();
-- Tenants created before this migration get their row too.
insert into weld_public.tenant_settings (tenant_id)
select t.id from weld_public.tenants t
on conflict do nothing;

--------------------------------------------------------------------------------------------------
-- 5. Corrections carry a reason.
--
-- The correction functions set `weld.change_reason` for the transaction while they write (and
-- set it back after); a trigger on examination_changes copies it into each row the history
-- triggers of 000006 add, so those stay as they are. A reason is
-- at most 2000 characters (the functions refuse a longer one with WD007): it is copied into every
-- row a correction adds, up to a few thousand, so its size is multiplied. A weld's
-- given NDT result can now change too ('weld_updated'), and the rows of an NDT record's welds
-- carry the result: weld_added, weld_removed and weld_updated hold {"weld_id", "result"} for NDT
-- records ({"weld_id"} for inspections, as before).

alter table weld_public.examination_changes add column if not exists reason text;
-- A status change's reason is bounded the same way (REST caps it at 2000; GraphQL's
-- changeWeldStatus reaches the table without that cap).
alter table weld_public.weld_status_history drop constraint if exists weld_status_history_reason_check;
alter table weld_public.weld_status_history add constraint weld_status_history_reason_check
  check (char_length(reason) <= 2000);
alter table weld_public.examination_changes drop constraint if exists examination_changes_reason_check;
alter table weld_public.examination_changes add constraint examination_changes_reason_check
  check (char_length(reason) <= 2000);
comment on column weld_public.examination_changes.reason is
  'Why it was changed: the reason given with the correction (at most 2000 characters).';
alter table weld_public.examination_changes drop constraint if exists examination_changes_change_check;
alter table weld_public.examination_changes add constraint examination_changes_change_check
  check (change in (
    'updated', 'weld_added', 'weld_removed', 'weld_updated',
    'film_interval_added', 'film_interval_updated', 'film_interval_removed',
    'film_weld_added', 'film_weld_removed'));

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

drop trigger if exists _100_reason on weld_public.examination_changes;
create trigger _100_reason before insert on weld_public.examination_changes
  for each row execute function weld_private.tg_examination_changes__reason();

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

-- A weld's given result changes by an update of its link row.
drop trigger if exists _900_examination_change on weld_public.ndt_record_welds;
create trigger _900_examination_change after insert or update or delete on weld_public.ndt_record_welds
  for each row execute function weld_private.tg__examination_weld_link('ndt_record', 'ndt_record_id');

--------------------------------------------------------------------------------------------------
-- 6. Examinations are written only through four functions.
--
--   record_ndt(record jsonb)                 correct_ndt_record(record_id, changes, reason,
--   record_inspection(inspection jsonb)        expected_version)
--                                            correct_inspection(inspection_id, changes, reason,
--                                              expected_version)
--
-- The JSON is REST's body, camelCase (record_ndt: method, reportNumber, examinedOn, technician,
-- notes, welds [{weldId, result}], filmIntervals [{label, result, defectCodes, weldIds}];
-- record_inspection: kind, inspectorName, inspectedOn, result, notes, weldIds). REST validates it
-- first, but GraphQL callers reach the functions directly, so they check everything themselves:
-- anything wrong is WD007 with a plain message and DETAIL {"pointer": ...}, a JSON Pointer (RFC
-- 6901) into the input (for the corrections, into `changes`, which is the PATCH body), never an
-- unexpected error. Welds that do not exist in the caller's tenant are WD007 too (under row
-- security another tenant's weld is no weld). A duplicate report number (method + number) stays
-- the unique violation 23505.
--
-- Sizes are held to what real reports need, with room to spare, as each weld, interval and
-- mapping is a row with triggers, and checking them is quadratic in places: an RT report covers a
-- few dozen welds (at most 200), its film a few intervals per weld (at most 500), an interval
-- shows one weld, or two where welds meet (at most 20), and the intervals show at most 1000 welds
-- in all. An inspection lists at most 1000 welds. A bigger input is WD007 at the list.
--
-- A weld's NDT result is the one given or, for RT, the film's: rejected when any interval showing
-- the weld is, accepted when all are. The record's result is rejected when any weld's is.
--
-- NDT results drive weld status (unless the tenant's ndt_results_drive_status is off): each weld
-- whose result is new (every weld of a new record; in a correction, the welds added and those
-- whose result changed; an unchanged result is never applied again, as the weld may have been
-- repaired since) goes to ACCEPTED or REJECTED through change_weld_status, caused by the record,
-- unless it is there already. All of them are checked against the tenant's rules and the caller's
-- role before anything is written; if any would be refused, so is the whole record (WD006). A
-- weld removed from a record stays where it is.
--
-- Corrections need a reason (WD004) of at most 2000 characters (WD007, pointer "/reason": the
-- one pointer not into `changes`), which the examination history keeps, and refuse a stale
-- expected_version (WD005). Each function refuses callers below inspector (WD003) and works as
-- weld_rules under row security, inside the caller's tenant.

revoke insert, update, delete
  on weld_public.ndt_records, weld_public.ndt_record_welds, weld_public.film_intervals,
     weld_public.film_interval_welds, weld_public.inspections, weld_public.inspection_welds
  from weld_inspector;

grant select on weld_public.film_intervals, weld_public.film_interval_welds,
                weld_public.inspection_welds
  to weld_rules;
grant insert (method, report_number, examined_on, technician, result, notes),
      update (report_number, examined_on, technician, result, notes)
  on weld_public.ndt_records to weld_rules;
grant insert (ndt_record_id, weld_id, result), update (result), delete
  on weld_public.ndt_record_welds to weld_rules;
grant insert (ndt_record_id, label, result, defect_codes), update (result, defect_codes), delete
  on weld_public.film_intervals to weld_rules;
grant insert (ndt_record_id, film_interval_id, weld_id), delete
  on weld_public.film_interval_welds to weld_rules;
grant insert (kind, inspector_name, inspected_on, result, notes),
      update (kind, inspector_name, inspected_on, result, notes)
  on weld_public.inspections to weld_rules;
grant insert (inspection_id, weld_id), delete on weld_public.inspection_welds to weld_rules;

set role weld_rules;

drop function if exists weld_public.record_ndt(jsonb);
drop function if exists weld_public.correct_ndt_record(uuid, jsonb, text, integer);
drop function if exists weld_public.record_inspection(jsonb);
drop function if exists weld_public.correct_inspection(uuid, jsonb, text, integer);

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

-- A JSON Pointer one step further down (RFC 6901 escapes ~ and /).
create or replace function weld_private.json_pointer(base text, token text) returns text
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select base || '/' || replace(replace(token, '~', '~0'), '/', '~1')
$$;

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

-- The date at input->key, YYYY-MM-DD (absent: null).
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
     or not pg_input_is_valid(value #>> '{}', 'date') then
    perform weld_private.invalid_input(format('%s must be a date, YYYY-MM-DD', key),
                                       weld_private.json_pointer(pointer, key));
  end if;
  return (value #>> '{}')::date;
end
$$;

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

-- NDT results to weld statuses, step 1, before anything is written: which welds must move, for
-- results [{"weldId", "effective"}] (the new ones). None when the tenant switched it off, nor a
-- weld already in its target status (ACCEPTED for accepted, REJECTED for rejected). Locks the
-- welds, in id order (two records never wait for each other in opposite orders), and refuses the
-- whole record (WD006) when the tenant's rules or the caller's role refuse any move; DETAIL
-- {"welds": [{"weldId", "weldNumber", "status", "result", "allowed"}]}, allowed being the statuses
-- the rules allow from the weld's current one. Returns [{"weldId", "status", "result"}].
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


-- Step 2, once the record is written: each move through change_weld_status, caused by the record
-- (its history row says cause 'ndt' and the record's id), with a reason naming the report. The
-- setting that lets the history take the record as the cause (section 7) holds only meanwhile.
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

-- What every correction checks once it has locked the record (is_found: whether it exists; not
-- named `found`, which in PL/pgSQL is the function's own FOUND flag): the
-- record, the version the caller expects (WD005 with the current one), and the reason, which is
-- required (WD004) and at most 2000 characters, since every history row of the change keeps it.
-- Returns the reason, trimmed.
drop function if exists weld_private.check_correction(text, uuid, boolean, integer, integer, text);
create function weld_private.check_correction(
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

create function weld_public.record_ndt(record jsonb) returns weld_public.ndt_records
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
  -- Every weld's result is new.
  moves := weld_private.ndt_status_changes(results);

  insert into weld_public.ndt_records (method, report_number, examined_on, technician, result, notes)
  values (ndt.method, ndt.report_number, ndt.examined_on, ndt.technician, ndt.result, ndt.notes)
  returning * into ndt;
  perform weld_private.ndt_write_lists(ndt.tenant_id, ndt.id, welds, intervals);
  perform weld_private.ndt_apply_status_changes(ndt, moves);
  return ndt;
end
$$;
comment on function weld_public.record_ndt(jsonb) is
  'Records an NDT report with its welds (and for RT its film intervals), and moves the welds to ACCEPTED or REJECTED by their results under the transition rules.';

create function weld_public.correct_ndt_record(
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
     for update;
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
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.ndt_records r where r.tenant_id = ndt.tenant_id and r.id = ndt.id;
  return fixed;
end
$$;
comment on function weld_public.correct_ndt_record(uuid, jsonb, text, integer) is
  'Corrects an NDT record (welds and film intervals are replaced as a whole), with a reason kept in the examination history; welds whose result is new move under the transition rules.';

create function weld_public.record_inspection(inspection jsonb) returns weld_public.inspections
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

  insert into weld_public.inspections (kind, inspector_name, inspected_on, result, notes)
  values (fresh.kind, fresh.inspector_name, fresh.inspected_on, fresh.result, fresh.notes)
  returning * into fresh;
  perform weld_private.inspection_write_welds(fresh.tenant_id, fresh.id, weld_ids);
  return fresh;
end
$$;
comment on function weld_public.record_inspection(jsonb) is
  'Records an inspection (fit-up, visual, dimensional, final) of welds; it does not move them.';

create function weld_public.correct_inspection(
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
  unknown integer;
begin
  perform weld_private.require_role('inspector', 'correcting an inspection');
  select * into inspection from weld_public.inspections r
   where r.tenant_id = tenant and r.id = correct_inspection.inspection_id
     for update;
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
  perform pg_catalog.set_config('weld.change_reason', coalesce(previous_reason, ''), true);

  select * into fixed from weld_public.inspections r
   where r.tenant_id = inspection.tenant_id and r.id = inspection.id;
  return fixed;
end
$$;
comment on function weld_public.correct_inspection(uuid, jsonb, text, integer) is
  'Corrects an inspection (its welds are replaced as a whole), with a reason kept in the examination history.';

-- Viewers and up: the functions decide who may (WD003), like change_weld_status.
grant execute on function
  weld_public.record_ndt(jsonb),
  weld_public.correct_ndt_record(uuid, jsonb, text, integer),
  weld_public.record_inspection(jsonb),
  weld_public.correct_inspection(uuid, jsonb, text, integer)
  to weld_viewer;

reset role;

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

drop trigger if exists _100_ndt_cause on weld_public.weld_status_history;
create trigger _100_ndt_cause before insert on weld_public.weld_status_history
  for each row execute function weld_private.tg_weld_status_history__ndt_cause();

--------------------------------------------------------------------------------------------------
-- 7. A test package's ISOs and welds change, and the package is deleted, only while it is open
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

create or replace function weld_private.tg_test_packages__delete_only_while_open() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_hidden.request_role() is not null and old.state <> 'open' then
    raise exception 'test package % is %; only open packages may be deleted', old.package_number, old.state
      using errcode = 'WD008';
  end if;
  return old;
end
$$;

drop trigger if exists _100_only_while_open on weld_public.test_package_isos;
create trigger _100_only_while_open before insert or delete on weld_public.test_package_isos
  for each row execute function weld_private.tg__test_package_open();
drop trigger if exists _100_only_while_open on weld_public.test_package_welds;
create trigger _100_only_while_open before insert or delete on weld_public.test_package_welds
  for each row execute function weld_private.tg__test_package_open();
drop trigger if exists _100_delete_only_while_open on weld_public.test_packages;
create trigger _100_delete_only_while_open before delete on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__delete_only_while_open();

-- Setting the state it has is no move. Before _100_touch (name order): a refused move bumps
-- nothing.
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
  return new;
end
$$;

drop trigger if exists _100_state_moves on weld_public.test_packages;
create trigger _100_state_moves before update of state on weld_public.test_packages
  for each row execute function weld_private.tg_test_packages__state_moves();

--------------------------------------------------------------------------------------------------
-- 8. Never deleted: WPSs are superseded (state), so the engineer loses DELETE. Welds, welders,
-- NDT records and inspections never had a DELETE grant (welds are voided, welders deactivated,
-- examinations corrected).

revoke delete on weld_public.wps from weld_engineer;

-- A WPS's number, revision and process are its identity: a new revision is a new WPS, so they
-- are set when it is created and never changed (REST and GraphQL alike).
revoke update (wps_number, revision, process) on weld_public.wps from weld_engineer;

--------------------------------------------------------------------------------------------------
-- 9. Idempotency keys for REST POSTs: a client that lost an answer retries with the same key and
-- gets the stored answer instead of a second item. Keys belong to one user of one tenant and live
-- 24 hours. The REST layer claims a key as the caller (an upsert that takes over only an expired
-- key), reads it, and stores the answer, all in the request's transaction.

create table weld_hidden.idempotency_keys (
  tenant_id        uuid not null default weld_hidden.current_tenant_id()
                   references weld_public.tenants on delete cascade,
  user_id          uuid not null default weld_hidden.current_user_id(),
  idempotency_key  text not null check (char_length(idempotency_key) between 1 and 255),
  -- Of method, path and body: the same key for another request is refused.
  request_hash     text not null,
  response_status  integer,
  response_body    jsonb,
  response_headers jsonb,
  created_at       timestamptz not null default now(),
  primary key (tenant_id, user_id, idempotency_key)
);
comment on table weld_hidden.idempotency_keys is
  'The Idempotency-Key of each REST POST of the last 24 hours, per user, with the answer to replay.';

-- Row security: a user's own keys only (not the tenant's: a key is the user's).
alter table weld_hidden.idempotency_keys enable row level security;
alter table weld_hidden.idempotency_keys force row level security;
create policy own_keys on weld_hidden.idempotency_keys
  using (tenant_id = (select weld_hidden.current_tenant_id())
         and user_id = (select weld_hidden.current_user_id()))
  with check (tenant_id = (select weld_hidden.current_tenant_id())
              and user_id = (select weld_hidden.current_user_id()));
grant select,
      insert (idempotency_key, request_hash),
      update (request_hash, created_at, response_status, response_body, response_headers)
  on weld_hidden.idempotency_keys to weld_viewer;

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

--------------------------------------------------------------------------------------------------
-- weld_rules keeps no CREATE right on any schema (see 000006).
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
