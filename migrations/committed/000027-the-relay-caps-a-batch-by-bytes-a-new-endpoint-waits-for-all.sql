--! Previous: sha1:dc4906f4729ffe4d578a5d510df5dccc36c55ffd
--! Hash: sha1:ef13efb462a1f305887a2339697ffb71b14705c4
--! Message: The relay caps a batch by bytes; a new endpoint waits for all

-- The relay after a second review:
-- - A batch is at most 10,000 events and 4 MB of their stored data (always one): 10,000 events of
--   an NDT record naming 1,000 welds each could outrun the relay's statement timeout, for ever.
-- - A deleted tenant's waiting events are dropped a batch at a time.
-- - place_events refuses to run unless its owner bypasses row security (a tenant it could not see
--   would look deleted), and its guard against a writing transaction looks only at its tenant.
-- - A new webhook endpoint places every waiting event of its tenant, not one batch, before it takes
--   the newest as its start (after a large import it would otherwise receive the import's events).
--! Included functions/weld_hidden.place_events.sql
-- The relay (migration 000023): moves committed events from weld_hidden.pending_events to
-- weld_public.events, giving them their ids from weld_hidden.event_ids in the order they were
-- written (pending_events.n, taken at commit), one tenant at a time, at most `batch` events (and
-- 4 MB of their data) of a tenant at a time: a transaction of more, an import, reaches the feed
-- in parts, in order, each call placing the next ones (a million-event transaction in one
-- statement would outrun the relay's statement timeout and place nothing, for ever). Sets the
-- positions of the examination selections they open, and NOTIFYs weld_events "<tenant> <type>"
-- once per tenant and type it placed. Returns how many it placed (a caller that must see every
-- event committed before it calls until it places none).
--
-- `tenant`: that tenant's events only (a reader of the feed, which waits for no other tenant's
-- backlog; the server's loop, one transaction per tenant of weld_hidden.waiting_tenants()); null:
-- every tenant's, in this one transaction (a DBA's or a test's call). One relay per tenant runs at
-- a time (a transaction-scoped advisory lock of the tenant): `wait` true waits for one that is
-- running (a reader that must see what committed before it read); false skips that tenant, and
-- gives up after 100 ms on a waiting event someone else holds locked (the loop: it comes back).
--
-- Why no event is skipped: a relay of a tenant places only events it sees committed, and every
-- later relay of that tenant gives larger ids, so an event placed after a reader read has a larger
-- id than any it saw. Why one resource's events keep their commit order: a change of a row waits
-- for the last writer of that row to commit, so its own event's n is taken after that writer's
-- event was written.
create or replace function weld_hidden.place_events(
  tenant uuid default null, wait boolean default true, batch integer default 10000
) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
  -- Every statement here reads by key. The waiting room's statistics are of a moment (empty, or
  -- a 100,000-event import waiting), and a scan of it reads every page an earlier batch left
  -- until they are vacuumed away: by key, a look at an empty room stays a look.
  set enable_seqscan = off
as $$
declare
  one uuid;
  placed integer := 0;
  moved_here integer;
  woke integer; -- (tenant, type) pairs notified
  lock_wait text := current_setting('lock_timeout');
begin
  -- A tenant it cannot see would look deleted, and its events be dropped: its owner must see all.
  if not (select r.rolbypassrls from pg_catalog.pg_roles r where r.rolname = current_user) then
    raise exception 'place_events must belong to a role that bypasses row security';
  end if;
  -- Its own events would be placed before they commit, and readers could pass them.
  if pg_current_xact_id_if_assigned() is not null
     and exists (select from weld_hidden.pending_events p
                  where (tenant is null or p.tenant_id = tenant)
                    and p.xid = pg_current_xact_id_if_assigned()::text::bigint) then
    raise exception 'place_events must run outside a transaction that wrote events'
      using errcode = '25000';
  end if;
  if not wait then
    perform set_config('lock_timeout', '100ms', true);
  end if;
  for one in
    -- One tenant: a probe of its key. Every tenant: one probe per tenant with events waiting.
    select tenant where tenant is not null
       and exists (select from weld_hidden.pending_events p where p.tenant_id = tenant)
    union all
    select w from weld_hidden.waiting_tenants() w where tenant is null
  loop
    if wait then
      perform pg_advisory_xact_lock(hashtext('weld_hidden.place_events'), hashtext(one::text));
    elsif not pg_try_advisory_xact_lock(hashtext('weld_hidden.place_events'), hashtext(one::text)) then
      continue;
    end if;
    -- The tenant first (a deletion of it waits for this relay, or this relay for it, and never
    -- the other way round), then its events. The waiting room has no foreign key to tenants (one
    -- check per event written, for every writer): the events of a tenant that is gone go here.
    perform from weld_public.tenants t where t.id = one for key share;
    if not found then
      delete from weld_hidden.pending_events p
       where p.tenant_id = one
         and p.n in (select q.n from weld_hidden.pending_events q
                      where q.tenant_id = one order by q.n limit batch);
      continue;
    end if;
    with chosen as materialized (
      -- The next events in order: at most `batch` of them, and at most 4 MB of stored data (but
      -- always one), so a call stays far inside the relay's statement timeout whatever they carry
      -- (an NDT record's event names up to 1,000 welds).
      select c.n
        from (select f.n,
                     row_number() over (order by f.n) as k,
                     sum(f.bytes) over (order by f.n) as upto
                from (select p.n, pg_column_size(p.data) + coalesce(pg_column_size(p.change), 0) as bytes
                        from weld_hidden.pending_events p
                       where p.tenant_id = one
                       order by p.n
                       limit batch) f) c
       where c.k = 1 or c.upto <= 4194304
    ), waiting as materialized (
      select p.*
        from weld_hidden.pending_events p
       where p.tenant_id = one and p.n in (select c.n from chosen c)
       order by p.n
         for update
    ), numbered as materialized (
      -- nextval row by row in the order of `waiting` (a CTE scan keeps it).
      select w.*, nextval('weld_hidden.event_ids') as id
        from waiting w
    ), moved as (
      insert into weld_public.events
        (tenant_id, id, type, subject_id, actor_id, occurred_at, data, change, xid)
      select x.tenant_id, x.id, x.type, x.subject_id, x.actor_id, x.occurred_at, x.data,
             x.change, x.xid
        from numbered x
      returning tenant_id, id, type, subject_id
    ), gone as (
      delete from weld_hidden.pending_events p using waiting w
       where p.tenant_id = w.tenant_id and p.n = w.n
    ), opened as (
      update weld_public.examination_selections s set position = m.id
        from moved m
       where m.type = 'examination_selection.opened'
         and s.tenant_id = m.tenant_id and s.id = m.subject_id
    ), woken as (
      select pg_notify('weld_events', d.tenant_id::text || ' ' || d.type)
        from (select distinct m.tenant_id, m.type from moved m) d
    )
    select (select count(*) from moved), (select count(*) from woken) into moved_here, woke;
    placed := placed + moved_here;
  end loop;
  perform set_config('lock_timeout', lock_wait, true);
  return placed;
end
$$;

grant execute on function weld_hidden.place_events(uuid, boolean, integer) to weld_authenticator;
--! EndIncluded functions/weld_hidden.place_events.sql
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
    -- What committed before it is placed first (migration 000023), so "newest" is newest: all
    -- of it, a batch at a time (after a large import, several).
    loop
      exit when weld_hidden.place_events(new.tenant_id) = 0;
    end loop;
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
--! EndIncluded functions/weld_private.tg__outbox.sql
