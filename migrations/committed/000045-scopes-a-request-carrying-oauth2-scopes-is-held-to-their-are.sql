--! Previous: sha1:76db7bc7a81997c916215e76bdd322ba5d2f2d3b
--! Hash: sha1:8fe5edeb4cc270b7e5a116d80be2697abd8b8bcd
--! Message: scopes: a request carrying OAuth2 scopes is held to their areas

-- F18, OAuth2 clients (Wave 2). An OAuth2 client's token carries scopes, each an area of the API;
-- the database holds a request that carries them to those areas, beside its role (a person's
-- session carries none and is held by its role alone, as before). How: weld_hidden.require_scope,
-- called by restrictive row security policies on every table of an area, and by the SECURITY
-- DEFINER functions that write one (policies do not bind their owner).
--
-- The areas: the project's data is read with any of welds:read, welds:write, ndt:write,
-- packages:write and imports:write (a client that writes reads what it writes against), and
-- written with the area's own scope: welds:write (ISOs, welds and their status, welders and
-- qualifications, PQRs, WPSs, components, filler metal, the rule tables and settings), ndt:write
-- (NDT records, inspections, examination draws, PWHT and hardness), packages:write (test packages),
-- imports:write (the import endpoints, beside the write scope of what a file writes). The event
-- feed needs events:read, webhook endpoints webhooks:write (reading them too), reports
-- reports:read (in their functions).
--
-- Restrictive and only for the request roles (TO weld_viewer, which the others are members of):
-- the rules' own functions (weld_rules) and the owner are not bound by them.

--! Included functions/weld_hidden.require_scope.sql
-- OAuth2 scopes (F18): a request that carries scopes (an OAuth2 client's token, its `scope` claim
-- as jwt.claims.scope, space-separated) may do only what one of them allows; a request without
-- (a person's session, a DBA, a reporting login) is held by its role alone, as before. True when
-- one of `allowed` is among the request's scopes, or it carries none; otherwise it refuses with
-- WD015 (403 insufficient_scope), naming the first scope that would allow it.
--
-- The row security policies of migration 000045 call it through scoped_tenant_id (below), once per
-- statement, as it starts: a statement of an area the client has no scope for is refused even
-- where it would find no row.
create or replace function weld_hidden.require_scope(allowed text[]) returns boolean
  language plpgsql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
declare
  carried text := coalesce(current_setting('jwt.claims.scope', true), '');
begin
  if carried = '' or string_to_array(carried, ' ') && allowed then
    return true;
  end if;
  raise exception 'this needs the scope %', array_to_string(allowed, ' or ')
    using errcode = 'WD015', detail = json_build_object('scope', allowed[1])::text;
end
$$;

grant execute on function weld_hidden.require_scope(text[]) to weld_anonymous, weld_rules, weld_reporting;
--! EndIncluded functions/weld_hidden.require_scope.sql
--! Included functions/weld_hidden.scoped_tenant_id.sql
-- For the row security policies: the tenant of the request once require_scope has let it through.
-- A policy compares tenant_id with it, so the comparison stays a condition the planner can put
-- on an index, and the check runs when the statement starts, whether or not a row is found.
create or replace function weld_hidden.scoped_tenant_id(allowed text[]) returns uuid
  language sql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case when weld_hidden.require_scope(allowed) then weld_hidden.current_tenant_id() end
$$;

grant execute on function weld_hidden.scoped_tenant_id(text[]) to weld_anonymous, weld_rules;
--! EndIncluded functions/weld_hidden.scoped_tenant_id.sql

-- The rules' own writers check the scope of their area themselves; the reports in their views.
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
  -- An OAuth2 client's scopes (000045): a change an NDT record causes is the NDT area's.
  perform weld_hidden.require_scope(case when cause_ndt_record_id is null then '{welds:write}'
                                         else '{ndt:write}' end::text[]);
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
  perform weld_hidden.require_scope('{ndt:write}'); -- an OAuth2 client's scopes (000045)
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
  perform weld_hidden.require_scope('{ndt:write}'); -- an OAuth2 client's scopes (000045)
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
  perform weld_hidden.require_scope('{ndt:write}'); -- an OAuth2 client's scopes (000045)
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
  perform weld_hidden.require_scope('{ndt:write}'); -- an OAuth2 client's scopes (000045)
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
  -- A custom plan at every call: PostgreSQL 18 caches the plans of SQL functions per session, and
  -- after five calls on a pooled connection the generic one (tenant and package unknown) read
  -- whole tables: 0.8 to 1.1 s for an 800-weld package's readiness instead of 0.17 s.
  set plan_cache_mode = force_custom_plan
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  line text := draw_examination_selection.line_number;
  chosen bigint := draw_examination_selection.seed;
  made uuid[];
  counted record;
begin
  perform weld_hidden.require_scope('{ndt:write}'); -- an OAuth2 client's scopes (000045)
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
  perform weld_hidden.require_scope('{packages:write}'); -- an OAuth2 client's scopes (000045)
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
--! Included functions/weld_hidden.lock_weld_imports.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- The import's turn: one per tenant, held to the commit.
create or replace function weld_hidden.lock_weld_imports() returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  select weld_hidden.require_scope('{imports:write}'); -- an OAuth2 client's scopes (000045)
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(
    weld_hidden.current_tenant_id()::text || '/weld-import', 0))
$$;

grant execute on function weld_hidden.lock_weld_imports() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.lock_weld_imports.sql
--! Included views/weld_reports.examination_backlog.sql
-- Examination backlog (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_examination_backlog()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/examination-backlog) and the reporting logins.
create or replace view weld_reports.examination_backlog with (security_invoker = true) as
  select * from weld_hidden.report_examination_backlog()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.examination_backlog is
  E'@primaryKey method\n@behavior +aggregates\nPer NDT method: selections drawn and not yet examined, by age in days since drawn (UTC), progressive ones counted apart, and the oldest.';
comment on column weld_reports.examination_backlog.progressive is
  'Of the open selections, those of progressive tiers (1, 2, full: B31.3 341.3.4).';

grant select on weld_reports.examination_backlog to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.examination_backlog.sql
--! Included views/weld_reports.examination_progress.sql
-- Examination progress (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_examination_progress()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/examination-progress) and the reporting logins.
create or replace view weld_reports.examination_progress with (security_invoker = true) as
  select * from weld_hidden.report_examination_progress()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.examination_progress is
  E'@primaryKey method,lot\n@behavior +aggregates\nPer designated lot and NDT method (B31.3 341.4.1, 344.1.3): candidates, required, drawn, examined, accepted, shortfall, open progressive selections and the welders not yet represented.';
comment on column weld_reports.examination_progress.lot is
  'The lot''s key: the line number, or line number and welder stamp where the tenant''s lots are per line and welder.';
comment on column weld_reports.examination_progress.lot_name is
  'The lot as a person reads it (line, and welder where lots are per welder).';
comment on column weld_reports.examination_progress.percent is
  'The percent the lot''s fluid service asks of this method (an ISO''s rtPercent when greater).';
comment on column weld_reports.examination_progress.candidates is
  'Welds of the lot that can be sampled: welded, not VOIDED, of a type the rule covers for the method.';
comment on column weld_reports.examination_progress.required is
  'ceil(percent x candidates / 100), and at least one weld of each welder (every weld at 100 %).';
comment on column weld_reports.examination_progress.drawn is
  'Selections of the lot for the method, of every tier (random, examined, progressive 1, 2 and full).';
comment on column weld_reports.examination_progress.examined is
  'Drawn welds examined by a method that closes the selection, on or after the date welded.';
comment on column weld_reports.examination_progress.accepted is
  'Examined welds whose latest such examination accepted them.';
comment on column weld_reports.examination_progress.shortfall is
  'Selections still owed: required minus drawn, or the welders not yet represented, whichever is more.';
comment on column weld_reports.examination_progress.progressive_open is
  'Progressive selections (tiers 1, 2, full: B31.3 341.3.4) not yet examined.';
comment on column weld_reports.examination_progress.welders_not_covered is
  'Stamps of the lot''s welders none of whose welds is drawn.';

grant select on weld_reports.examination_progress to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.examination_progress.sql
--! Included views/weld_reports.qualification_expiry.sql
-- Qualification expiry (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_qualification_expiry()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/qualification-expiry) and the reporting logins.
create or replace view weld_reports.qualification_expiry with (security_invoker = true) as
  select * from weld_hidden.report_qualification_expiry()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.qualification_expiry is
  E'@primaryKey qualification_id,process\n@behavior +aggregates\nQualifications of active welders in force today that stop within 90 days, by expiry or by continuity (QW-322.1(a)), whichever comes first.';
comment on column weld_reports.qualification_expiry.valid_until is
  'The last day the qualification is in force for the process: its expiry date or its continuity''s end, the earlier.';
comment on column weld_reports.qualification_expiry.cause is
  'expiry (its expiry date comes first) or continuity (no recorded use of the process for the tenant''s continuity months).';
comment on column weld_reports.qualification_expiry.days_left is
  'valid_until minus today (0: today is the last day).';
comment on column weld_reports.qualification_expiry.within_days is
  'The window it falls in: 30 (0 to 29 days left), 60 (30 to 59) or 90 (60 to 89).';

grant select on weld_reports.qualification_expiry to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.qualification_expiry.sql
--! Included views/weld_reports.test_package_board.sql
-- Test package board (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_test_package_board()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/test-package-board) and the reporting logins.
create or replace view weld_reports.test_package_board with (security_invoker = true) as
  select * from weld_hidden.report_test_package_board()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.test_package_board is
  E'@primaryKey test_package_id\n@behavior +aggregates\nPer test package: state, ready or not, the count of each readiness reason, and its welds (not VOIDED) and how many are ACCEPTED.';
comment on column weld_reports.test_package_board.reasons_by_code is
  'The reasons the package is not ready, counted by code (NO_WELDS, WELD_NOT_ACCEPTED, EXAMINATION_SHORTFALL, EXAMINATION_OPEN, PROGRESSIVE_OPEN, and the weld checks'' codes).';
comment on column weld_reports.test_package_board.welds is
  'The package''s welds (its own and those of its ISOs), VOIDED ones left out.';

grant select on weld_reports.test_package_board to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.test_package_board.sql
--! Included views/weld_reports.weld_progress.sql
-- Weld progress (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_weld_progress()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/weld-progress) and the reporting logins.
create or replace view weld_reports.weld_progress with (security_invoker = true) as
  select * from weld_hidden.report_weld_progress()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.weld_progress is
  E'@primaryKey iso_id,week\n@behavior +aggregates\nPer ISO and week (weeks start on Monday): welds made and welds accepted, with the ISO''s area and line: the data of an S-curve.';
comment on column weld_reports.weld_progress.week is
  'The Monday of the week.';
comment on column weld_reports.weld_progress.welded is
  'Welds of the ISO welded that week (by date welded), VOIDED ones left out.';
comment on column weld_reports.weld_progress.accepted is
  'Welds of the ISO ACCEPTED now whose last move to ACCEPTED was that week.';

grant select on weld_reports.weld_progress to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.weld_progress.sql
--! Included views/weld_reports.welder_performance.sql
-- Welder performance (F17): the report as GraphQL, REST and SQL readers see it.
-- The rows are weld_hidden.report_welder_performance()'s (the rule and why it is computed so are there);
-- this view is its face for GraphQL, REST (GET /reports/welder-performance) and the reporting logins.
create or replace view weld_reports.welder_performance with (security_invoker = true) as
  select * from weld_hidden.report_welder_performance()
   where (select weld_hidden.require_scope('{reports:read}')); -- OAuth2 scopes (000045)

comment on view weld_reports.welder_performance is
  E'@primaryKey welder_id,month\n@behavior +aggregates\nPer welder and month welded: welds made, examined by RT or UT, rejected by any of those examinations, and the repair rate by joint and by length against the tenant''s threshold.';
comment on column weld_reports.welder_performance.month is
  'The first day of the month the welds were welded.';
comment on column weld_reports.welder_performance.welds_examined is
  'Welds covered by at least one RT or UT record.';
comment on column weld_reports.welder_performance.welds_rejected is
  'Welds that an RT or UT record rejected (its result, else its film''s), however repaired since.';
comment on column weld_reports.welder_performance.repair_rate_percent is
  'welds_rejected / welds_examined x 100; null when none was examined.';
comment on column weld_reports.welder_performance.length_examined_in is
  'The circumferences (pi x outside diameter, inches) of the welds examined, where the size is known.';
comment on column weld_reports.welder_performance.repair_rate_by_length_percent is
  'length_rejected_in / length_examined_in x 100.';
comment on column weld_reports.welder_performance.length_unknown is
  'Welds examined whose size has no known outside diameter: left out of the lengths.';
comment on column weld_reports.welder_performance.over_threshold is
  'The repair rate by joint is over threshold_percent (tenant_settings.repair_rate_threshold_percent).';

grant select on weld_reports.welder_performance to weld_viewer, weld_reporting;
--! EndIncluded views/weld_reports.welder_performance.sql

do $$
declare
  data_read constant text := '{welds:read,welds:write,ndt:write,packages:write,imports:write}';
  area record;
begin
  for area in
    select t.tbl, t.read_scopes, t.write_scopes
      from (values
        ('weld_public.isos', data_read, '{welds:write}'),
        ('weld_public.welds', data_read, '{welds:write}'),
        ('weld_public.weld_status_history', data_read, '{welds:write}'),
        ('weld_public.iso_weld_counts', data_read, '{welds:write}'),
        ('weld_public.welders', data_read, '{welds:write}'),
        ('weld_public.welder_qualifications', data_read, '{welds:write}'),
        ('weld_public.welder_continuity', data_read, '{welds:write}'),
        ('weld_public.pqrs', data_read, '{welds:write}'),
        ('weld_public.wps', data_read, '{welds:write}'),
        ('weld_public.wps_pqrs', data_read, '{welds:write}'),
        ('weld_public.components', data_read, '{welds:write}'),
        ('weld_public.filler_lots', data_read, '{welds:write}'),
        ('weld_public.weld_fillers', data_read, '{welds:write}'),
        ('weld_public.tenant_settings', data_read, '{welds:write}'),
        ('weld_public.weld_transition_rules', data_read, '{welds:write}'),
        ('weld_public.examination_rules', data_read, '{welds:write}'),
        ('weld_public.qualification_range_rules', data_read, '{welds:write}'),
        ('weld_public.procedure_thickness_rules', data_read, '{welds:write}'),
        ('weld_public.p_number_rules', data_read, '{welds:write}'),
        ('weld_public.heat_treatment_rules', data_read, '{welds:write}'),
        ('weld_public.ndt_records', data_read, '{ndt:write}'),
        ('weld_public.ndt_record_welds', data_read, '{ndt:write}'),
        ('weld_public.film_intervals', data_read, '{ndt:write}'),
        ('weld_public.film_interval_welds', data_read, '{ndt:write}'),
        ('weld_public.inspections', data_read, '{ndt:write}'),
        ('weld_public.inspection_welds', data_read, '{ndt:write}'),
        ('weld_public.examination_selections', data_read, '{ndt:write}'),
        ('weld_public.examination_changes', data_read, '{ndt:write}'),
        ('weld_public.weld_reexaminations', data_read, '{ndt:write}'),
        ('weld_public.pwht_records', data_read, '{ndt:write}'),
        ('weld_public.pwht_record_welds', data_read, '{ndt:write}'),
        ('weld_public.hardness_readings', data_read, '{ndt:write}'),
        ('weld_public.test_packages', data_read, '{packages:write}'),
        ('weld_public.test_package_isos', data_read, '{packages:write}'),
        ('weld_public.test_package_welds', data_read, '{packages:write}'),
        ('weld_public.test_package_state_changes', data_read, '{packages:write}'),
        ('weld_hidden.imports', data_read, '{imports:write}'),
        ('weld_public.events', '{events:read}', '{events:read}'),
        ('weld_hidden.event_purges', '{events:read}', '{events:read}'),
        ('weld_hidden.webhooks', '{webhooks:write}', '{webhooks:write}'),
        ('weld_hidden.webhook_deliveries', '{webhooks:write}', '{webhooks:write}')
      ) as t (tbl, read_scopes, write_scopes)
  loop
    execute format('drop policy if exists scope_read on %1$s; drop policy if exists scope_insert on %1$s;
                    drop policy if exists scope_update on %1$s; drop policy if exists scope_delete on %1$s',
                   area.tbl);
    execute format(
      'create policy scope_read on %s as restrictive for select to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.read_scopes);
    execute format(
      'create policy scope_insert on %s as restrictive for insert to weld_viewer
         with check (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.write_scopes);
    execute format(
      'create policy scope_update on %s as restrictive for update to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.write_scopes);
    execute format(
      'create policy scope_delete on %s as restrictive for delete to weld_viewer
         using (tenant_id = (select weld_hidden.scoped_tenant_id(%L)))', area.tbl, area.write_scopes);
  end loop;
end
$$;
