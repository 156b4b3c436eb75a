--! Previous: sha1:03919d90382606e73c665ab5d96f396d227d2aa1
--! Hash: sha1:3ccd9c5aa6e9628008ddce7040e527ee514daa07
--! Message: Events: a transactional outbox written at commit in commit order, its retention, and webhook endpoints with their deliveries

-- Events (issue F8): a transactional outbox of every resource change, the feed that reads it in
-- order, and the webhook endpoints that receive it with their delivery log.
--
--   1. weld_public.events: one row per resource change, written by a deferred trigger in the
--      changing transaction, so an event exists if and only if its change committed.
--   2. The contract JSON of each resource, built here so that an event carries the resource as
--      REST shows it at commit (the REST reads of NDT records share two of these functions).
--   3. The outbox trigger on every resource table, and the selection triggers.
--   4. Retention: purge_events(days), with a watermark per tenant so that a reader whose cursor
--      points into purged events is told to resync instead of silently missing them.
--   5. Webhook endpoints and their deliveries, and the functions the delivery worker claims and
--      finishes work with (several server instances share it without sending twice).
--
-- Order without loss. Event ids come from one sequence (cache 1), but a sequence alone is not
-- enough: transaction A may take id 10, transaction B id 11, and B commit first; a reader at that
-- moment sees 11, moves its cursor past 10, and never sees A's event. So ids are taken at commit:
-- the outbox trigger is DEFERRED (it runs when the transaction commits) and first takes the
-- tenant's transaction-scoped advisory lock, which it holds until the commit is complete and
-- visible. Within a tenant, id order is therefore commit order, and a reader that sees event n
-- sees every event of its tenant below n: `id > cursor` never skips. The cost is that the last
-- moments of a tenant's writing transactions (the outbox inserts and the commit itself) run one
-- at a time; NOTIFY, which wakes the readers, already serializes commits the same way.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

drop table if exists weld_public.events, weld_hidden.event_purges, weld_hidden.webhooks,
  weld_hidden.webhook_deliveries cascade;
drop function if exists weld_private.contract_json(jsonb),
  weld_private.transaction_event(uuid, text, uuid), weld_private.events_suppressed(),
  weld_private.refresh_event(uuid, text, uuid, jsonb),
  weld_private.event_data(text, uuid, uuid), weld_private.tg__outbox(),
  weld_private.tg__selection_outbox(), weld_private.tg__selection_closure(),
  weld_private.emit_event(uuid, text, uuid, jsonb, jsonb),
  weld_hidden.ndt_record_welds_json(weld_public.ndt_records),
  weld_hidden.ndt_record_film_json(weld_public.ndt_records),
  weld_hidden.purge_events(integer), weld_private.tg_webhooks__position(), weld_private.tg_webhooks__touch(),
  weld_hidden.claim_webhook_deliveries(text, integer, integer),
  weld_hidden.finish_webhook_delivery(uuid, uuid, text, bigint, integer, integer, text, text, integer, integer)
  cascade;

--------------------------------------------------------------------------------------------------
-- 1. The outbox

create table weld_public.events (
  tenant_id   uuid not null default weld_hidden.current_tenant_id()
              references weld_public.tenants on delete cascade,
  -- Taken at commit under the tenant's lock (see the header): commit order within a tenant.
  id          bigint not null generated always as identity (cache 1),
  type        text not null constraint events_type_format check (type ~ '^[a-z_]+\.[a-z_]+$'),
  subject_id  uuid not null,
  actor_id    uuid,
  occurred_at timestamptz not null default now(),
  data        jsonb not null,
  change      jsonb,
  -- The writing transaction: what "this transaction's event" means to the outbox trigger.
  xid         xid8 not null default pg_current_xact_id(),
  primary key (tenant_id, id)
);
-- A resource's events (REST ?subjectId=, GraphQL), and the outbox's once-per-transaction check.
create index events_subject_idx on weld_public.events (tenant_id, subject_id, id);
-- The purge finds old events by time; BRIN because time grows with the table and costs writers
-- almost nothing (tenant_id first, as every index here; BRIN uses either column alone).
create index events_occurred_at_idx on weld_public.events using brin (tenant_id, occurred_at);
comment on table weld_public.events is E'@aggregates on\nOne committed change of a resource, in commit order: its type, the resource''s id, who made it, when, and the resource as REST shows it after the change.';
comment on column weld_public.events.id is 'The cursor: within a tenant, ids follow commit order, so reading id > cursor never misses an event.';
comment on column weld_public.events.xid is '@behavior -*';
comment on column weld_public.events.type is E'@behavior +filterBy\nWhat happened: <resource>.created | updated | deleted, weld.status_changed, test_package.released, examination_selection.opened | closed | reopened.';
comment on column weld_public.events.subject_id is E'@behavior +filterBy\nThe id of the resource that changed.';
comment on column weld_public.events.actor_id is 'The user whose request made the change; null for changes made outside a request (a DBA, an import).';
comment on column weld_public.events.occurred_at is E'@behavior +filterBy\nThe time of the changing transaction (its start).';
comment on column weld_public.events.data is 'The resource as REST shows it at commit (for deleted: as it was last stored, without membership lists).';
comment on column weld_public.events.change is 'For weld.status_changed: from, to, reason, cause, ndtRecordId; for a test package''s state: from, to.';

select weld_private.secure_tenant_table('weld_public.events');
grant select on weld_public.events to weld_viewer;

-- The highest event id a purge has removed, per tenant: a cursor below it has lost events.
create table weld_hidden.event_purges (
  tenant_id      uuid primary key references weld_public.tenants on delete cascade,
  purged_through bigint not null
);
select weld_private.secure_tenant_table('weld_hidden.event_purges');
grant select on weld_hidden.event_purges to weld_viewer;

--------------------------------------------------------------------------------------------------
-- 2. Contract JSON

-- A row as the REST contract names it: camelCase keys, no tenant_id, timestamps in UTC with
-- milliseconds (as JavaScript's Date renders them). Numerics stay JSON numbers and dates
-- YYYY-MM-DD text, as the REST reads give them.
create function weld_private.contract_json(row_image jsonb) returns jsonb
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

-- An NDT record's welds with their results (given, or derived from the film for RT), and its
-- film intervals: shared by the REST reads (rest-adapter/ndt-records.ts) and the events.
create function weld_hidden.ndt_record_welds_json(record weld_public.ndt_records) returns jsonb
  language sql stable parallel safe
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'weldId', w.weld_id,
           'result', weld_public.ndt_record_welds_effective_result(w)) order by w.weld_id),
         '[]'::jsonb)
    from weld_public.ndt_record_welds w
   where w.tenant_id = record.tenant_id and w.ndt_record_id = record.id
$$;

create function weld_hidden.ndt_record_film_json(record weld_public.ndt_records) returns jsonb
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
grant execute on function weld_hidden.ndt_record_welds_json(weld_public.ndt_records),
  weld_hidden.ndt_record_film_json(weld_public.ndt_records) to weld_viewer;

-- The resource `kind` with this id as REST shows it now; null when it does not exist. One plain
-- statement per kind, so each is planned once per session.
create function weld_private.event_data(kind text, tenant uuid, subject uuid) returns jsonb
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
      -- As GET /examination-selections/{id} shows it (rest-adapter/code-rules.ts).
      select jsonb_build_object(
               'id', s.id, 'weldId', s.weld_id, 'isoId', w.iso_id, 'welderId', w.welder_id,
               'lineNumber', i.line_number, 'method', s.method, 'tier', s.tier,
               'seed', s.seed, 'reason', s.reason, 'causeSelectionId', s.cause_selection_id,
               'causeNdtRecordId', s.cause_ndt_record_id,
               'ndtRecordId', weld_public.examination_selections_ndt_record_id(s),
               'state', weld_public.examination_selections_state(s),
               'selectedBy', s.selected_by,
               'selectedAt', to_char(s.selected_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        into result
        from weld_public.examination_selections s
        join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
        join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
       where s.tenant_id = tenant and s.id = subject;
  end case;
  return result;
end
$$;

--------------------------------------------------------------------------------------------------
-- 3. Writing events

-- The functions below run only inside the SECURITY DEFINER triggers, which pin search_path, so
-- they do not pin it again (each SET costs every call, and keeps SQL functions from inlining).

-- This transaction's event of the resource `kind` with this id, if it has one. The setting
-- weld.first_event_id (this transaction's first event id) only narrows the search; xid decides,
-- so a setting forged by a session can neither hide a change nor reach a committed event.
create function weld_private.transaction_event(tenant uuid, kind text, subject uuid)
  returns table (id bigint, type text)
  language sql stable
as $$
  select e.id, e.type
    from weld_public.events e
   where e.tenant_id = tenant and e.subject_id = subject
     and e.id >= coalesce(nullif(current_setting('weld.first_event_id', true), '')::bigint, 0)
     and e.xid = pg_current_xact_id()
     and e.type like kind || '.%'
$$;

-- Bulk loads by the owner (the demo and benchmark generators) may leave the feed out: the
-- setting counts only in the owner's own sessions, so no request role can hide its changes.
create function weld_private.events_suppressed() returns boolean
  language sql stable
as $$
  select coalesce(current_setting('weld.suppress_events', true) = 'on', false)
     and pg_catalog.pg_has_role(session_user, 'weld_owner', 'member')
$$;

-- Appends one event for `subject` in this transaction, or, when the transaction already has one
-- for it, leaves that one (it was built at commit, so it already shows the final state) and
-- returns false. Takes the tenant's lock first (commit order: see the header) and wakes the
-- readers (NOTIFY is delivered at commit, once per tenant per transaction).
create function weld_private.emit_event(
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
  perform pg_notify('weld_events', tenant::text);
  return true;
end
$$;

-- A resource's event fired again in this transaction shows the resource as it is now. At commit
-- that changes nothing (the first firing saw the final state already); it matters when a session
-- fires the triggers early (SET CONSTRAINTS ALL IMMEDIATE) and changes the resource again. The
-- type stays the first firing's.
create function weld_private.refresh_event(tenant uuid, kind text, subject uuid, data jsonb)
  returns void
  language sql volatile
as $$
  update weld_public.events e set data = refresh_event.data
    from weld_private.transaction_event(tenant, kind, subject) this
   where e.tenant_id = tenant and e.id = this.id and e.data is distinct from refresh_event.data
$$;

-- The outbox trigger of a resource table (argument: the resource's kind, e.g. 'weld'). DEFERRED:
-- it runs at commit, once for each row change in the order they happened, so the first firing for
-- a resource sees its state before the transaction (OLD) and its final state (the table now).
-- A resource created and deleted in one transaction leaves no event; created and changed is one
-- `created`; changed and deleted is one `deleted`.
create function weld_private.tg__outbox() returns trigger
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

-- Every resource table: one event per resource per committing transaction.
do $$
declare
  resource record;
begin
  for resource in
    select * from (values
      ('weld_public.isos', 'iso'), ('weld_public.welds', 'weld'),
      ('weld_public.welders', 'welder'), ('weld_public.pqrs', 'pqr'), ('weld_public.wps', 'wps'),
      ('weld_public.welder_qualifications', 'welder_qualification'),
      ('weld_public.ndt_records', 'ndt_record'), ('weld_public.inspections', 'inspection'),
      ('weld_public.test_packages', 'test_package')) as r(tbl, kind)
  loop
    execute format('drop trigger if exists _900_outbox on %s', resource.tbl);
    execute format(
      'create constraint trigger _900_outbox after insert or update or delete on %s
         deferrable initially deferred
         for each row execute function weld_private.tg__outbox(%L)', resource.tbl, resource.kind);
  end loop;
end
$$;

-- A selection is opened when it is drawn (random, or a progressive tier).
create function weld_private.tg__selection_outbox() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_private.events_suppressed() then
    return null;
  end if;
  perform weld_private.emit_event(new.tenant_id, 'examination_selection.opened', new.id,
    coalesce(weld_private.event_data('examination_selection', new.tenant_id, new.id), '{}'), null);
  return null;
end
$$;
create constraint trigger _900_outbox after insert on weld_public.examination_selections
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_outbox();

-- A selection closes when an NDT record of its method first covers its weld, and reopens when a
-- correction takes the weld off the last such record. At commit: a record this transaction did
-- not touch (updated_at before now()) covered the weld already, so nothing changed for it.
create function weld_private.tg__selection_closure() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link weld_public.ndt_record_welds := case tg_op when 'DELETE' then old else new end;
  selection record;
  covered_before boolean;
begin
  if weld_private.events_suppressed() then
    return null;
  end if;
  select s.id, weld_public.examination_selections_state(s) as state into selection
    from weld_public.examination_selections s
    join weld_public.ndt_records r on r.tenant_id = link.tenant_id and r.id = link.ndt_record_id
   where s.tenant_id = link.tenant_id and s.weld_id = link.weld_id and s.method = r.method;
  if selection.id is null then
    return null;
  end if;
  select exists (
    select from weld_public.ndt_record_welds nw
      join weld_public.ndt_records r on r.tenant_id = nw.tenant_id and r.id = nw.ndt_record_id
      join weld_public.ndt_records this on this.tenant_id = link.tenant_id and this.id = link.ndt_record_id
     where nw.tenant_id = link.tenant_id and nw.weld_id = link.weld_id
       and r.method = this.method and r.id <> link.ndt_record_id and r.updated_at < now())
    into covered_before;
  if covered_before then
    return null;
  end if;
  if tg_op = 'INSERT' and selection.state = 'done' then
    perform weld_private.emit_event(link.tenant_id, 'examination_selection.closed', selection.id,
      weld_private.event_data('examination_selection', link.tenant_id, selection.id), null);
  elsif tg_op = 'DELETE' and selection.state = 'open' then
    perform weld_private.emit_event(link.tenant_id, 'examination_selection.reopened', selection.id,
      weld_private.event_data('examination_selection', link.tenant_id, selection.id), null);
  end if;
  return null;
end
$$;
create constraint trigger _900_outbox_selections after insert or delete on weld_public.ndt_record_welds
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_closure();

--------------------------------------------------------------------------------------------------
-- 4. Retention

-- Deletes events (and webhook deliveries) older than `keep_days`, remembering per tenant the
-- highest event id removed. Called by every server instance's housekeeping (EVENT_RETENTION_DAYS);
-- two purges at once do no harm.
create function weld_hidden.purge_events(keep_days integer)
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

--------------------------------------------------------------------------------------------------
-- 5. Webhooks

-- An endpoint that receives the tenant's events (all, or the listed types), in event order, at
-- least once. The worker's position is last_event_id; a failing endpoint waits until
-- next_attempt_at (exponential backoff) and is disabled after failing for 24 hours.
create table weld_hidden.webhooks (
  tenant_id       uuid not null default weld_hidden.current_tenant_id()
                  references weld_public.tenants on delete cascade,
  id              uuid not null default gen_random_uuid(),
  url             text not null
                  constraint webhooks_url_format check (url ~ '^https?://[^\s]+$' and char_length(url) <= 2000),
  event_types     text[] not null default '{}',
  description     text constraint webhooks_description_length check (char_length(description) <= 500),
  active          boolean not null default true,
  -- Standard Webhooks: whsec_ and 32 random bytes in base64 (made by the server's CSPRNG); the
  -- HMAC key is the bytes.
  secret          text not null
                  constraint webhooks_secret_format check (secret ~ '^whsec_[A-Za-z0-9+/]{43}=$'),
  disabled_reason text,
  -- Where delivery stands: events up to last_event_id are delivered (or not wanted).
  last_event_id   bigint not null default 0,
  attempt         integer not null default 0,
  failing_since   timestamptz,
  next_attempt_at timestamptz not null default now(),
  lease_until     timestamptz,
  leased_by       text,
  created_by      uuid default weld_hidden.current_user_id(),
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  version         integer not null default 1,
  primary key (tenant_id, id),
  foreign key (tenant_id, created_by) references weld_public.users on delete set null (created_by)
);
-- No index for the worker's scan of due endpoints: a tenant has at most 20 (REST refuses more),
-- so the table stays small enough to read whole.
select weld_private.secure_tenant_table('weld_hidden.webhooks');
-- Its version (the ETag) and updated_at follow what an admin sees and sets, not the worker's
-- bookkeeping, so an If-Match taken a minute ago still holds while deliveries go on.
create function weld_private.tg_webhooks__touch() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if (new.url, new.event_types, new.description, new.active, new.secret, new.disabled_reason)
     is distinct from
     (old.url, old.event_types, old.description, old.active, old.secret, old.disabled_reason) then
    new.version := old.version + 1;
    new.updated_at := now();
  end if;
  return new;
end
$$;
create trigger _100_touch before update on weld_hidden.webhooks
  for each row execute function weld_private.tg_webhooks__touch();

-- A new endpoint starts at the tenant's newest event: it receives what happens from now on.
-- Re-activating one clears its failure and tries again at once, from where it stopped.
create function weld_private.tg_webhooks__position() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    new.last_event_id := coalesce(
      (select max(e.id) from weld_public.events e where e.tenant_id = new.tenant_id), 0);
  elsif new.active and not old.active then
    new.disabled_reason := null;
    new.failing_since := null;
    new.attempt := 0;
    new.next_attempt_at := now();
  end if;
  return new;
end
$$;
create trigger _050_position before insert or update on weld_hidden.webhooks
  for each row execute function weld_private.tg_webhooks__position();

-- Admins manage endpoints; the secret is readable by the admin role only so that the REST create
-- can return it once (REST never shows it again, and GraphQL does not show this schema).
grant select, delete on weld_hidden.webhooks to weld_admin;
grant insert (url, event_types, description, active, secret) on weld_hidden.webhooks to weld_admin;
grant update (url, event_types, description, active, secret) on weld_hidden.webhooks to weld_admin;

-- Every attempt to deliver an event (or a test ping) to an endpoint, with the answer.
create table weld_hidden.webhook_deliveries (
  tenant_id     uuid not null default weld_hidden.current_tenant_id()
                references weld_public.tenants on delete cascade,
  id            bigint generated always as identity,
  webhook_id    uuid not null,
  message_id    text not null,                -- webhook-id: the event id, or ping_<uuid>
  event_id      bigint,                       -- null for a ping
  event_type    text not null,
  attempt       integer not null,             -- 1 for the first try of this message
  status        integer,                      -- the HTTP status; null: no answer (see error)
  response      text,                         -- the first 1,000 characters of the answer
  error         text,                         -- why no answer was usable (timeout, refused, ...)
  duration_ms   integer not null,
  attempted_at  timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, webhook_id) references weld_hidden.webhooks on delete cascade
);
create index webhook_deliveries_webhook_idx on weld_hidden.webhook_deliveries (tenant_id, webhook_id, id);
create index webhook_deliveries_attempted_at_idx on weld_hidden.webhook_deliveries
  using brin (tenant_id, attempted_at);
select weld_private.secure_tenant_table('weld_hidden.webhook_deliveries');
-- The worker records its attempts through finish_webhook_delivery; a test ping (POST
-- /webhooks/{id}/test) is sent by the admin's own request, which records it.
grant select on weld_hidden.webhook_deliveries to weld_admin;
grant insert (webhook_id, message_id, event_type, attempt, status, response, error, duration_ms)
  on weld_hidden.webhook_deliveries to weld_admin;

-- The worker (the authenticator, across tenants) claims up to `max_endpoints` endpoints that are
-- due and have an event to deliver, each with that next event, leasing them for `lease_seconds`:
-- an endpoint is worked on by one instance at a time, so its events go out one by one in order.
-- A lease outlives any delivery attempt (whose timeout is far shorter); one left by a crashed
-- instance expires and the endpoint is claimed again.
create function weld_hidden.claim_webhook_deliveries(
  instance text, lease_seconds integer, max_endpoints integer
) returns table (
  tenant_id uuid, webhook_id uuid, url text, secret text, attempt integer,
  event_id bigint, event_type text, subject_id uuid, actor_id uuid, occurred_at timestamptz,
  data jsonb, change jsonb
)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with due as (
    select w.tenant_id, w.id, e.id as event_id
      from weld_hidden.webhooks w
      cross join lateral (
        select e.id from weld_public.events e
         where e.tenant_id = w.tenant_id and e.id > w.last_event_id
           and (cardinality(w.event_types) = 0 or e.type = any(w.event_types))
         order by e.id
         limit 1) e
     where w.active and w.next_attempt_at <= now()
       and (w.lease_until is null or w.lease_until < now())
     order by w.next_attempt_at
     limit max_endpoints
       for update of w skip locked
  ), leased as (
    update weld_hidden.webhooks w
       set lease_until = now() + make_interval(secs => lease_seconds), leased_by = instance
      from due
     where w.tenant_id = due.tenant_id and w.id = due.id
    returning w.tenant_id, w.id, w.url, w.secret, w.attempt, due.event_id
  )
  select l.tenant_id, l.id, l.url, l.secret, l.attempt,
         e.id, e.type, e.subject_id, e.actor_id, e.occurred_at, e.data, e.change
    from leased l
    join weld_public.events e on e.tenant_id = l.tenant_id and e.id = l.event_id
$$;
grant execute on function weld_hidden.claim_webhook_deliveries(text, integer, integer)
  to weld_authenticator;

-- Records one attempt and moves the endpoint on: past the event on a 2xx answer; otherwise to
-- its next attempt after `retry_after_ms`, or disabled once it has failed for `give_up_seconds`.
-- Only the instance holding the lease may finish (returns false otherwise: the lease ran out and
-- another instance may have the endpoint now).
create function weld_hidden.finish_webhook_delivery(
  tenant uuid, webhook uuid, instance text, delivered_event_id bigint, answer_status integer,
  took_ms integer, answer text, failure text, retry_after_ms integer, give_up_seconds integer
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
    (tenant_id, webhook_id, message_id, event_id, event_type, attempt, status, response, error, duration_ms)
  select tenant, webhook, e.id::text, e.id, e.type, endpoint.attempt + 1, answer_status,
         left(answer, 1000), left(failure, 1000), took_ms
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
  integer, text, text, integer, integer) to weld_authenticator;
