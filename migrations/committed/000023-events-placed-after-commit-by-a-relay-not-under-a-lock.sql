--! Previous: sha1:89ec3d8d31b1dc0f78fc16a7a42e3a3d87e9731c
--! Hash: sha1:9deb12a3f92db3bc56dc7ba565bdf69531e88c40
--! Message: Events placed after commit by a relay, not under a lock

-- Events without a commit-order lock (issue F16). Until now a transaction took its tenant's
-- advisory lock when it wrote its first event and held it through its commit, so that ids
-- followed commit order (000010); and it sent a NOTIFY, which PostgreSQL serializes through the
-- commit as well. So every writer of a tenant waited for the commit (the WAL flush) of the one
-- before it, and every notifying writer of the cluster for the last notifying one.
--
-- Now a transaction writes its events to weld_hidden.pending_events (in the order they are
-- written, at commit), takes no lock and sends no NOTIFY. weld_hidden.place_events, the relay,
-- moves committed ones to weld_public.events with their ids from weld_hidden.event_ids, a tenant
-- at a time, sets the
-- positions of the examination selections they open, and wakes the readers. Every server
-- instance runs it every few milliseconds, and each REST read of the feed or of the selections
-- runs it before reading, so a client reads its own writes at once. What readers rely on holds:
-- a reader of id > cursor never misses or repeats an event, and one resource's events come in the
-- order its changes committed (the function says why). weld_public.events holds placed events
-- only, written once each.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

alter table weld_public.events alter column id drop identity if exists;
alter table weld_public.events alter column id drop default;
create sequence if not exists weld_hidden.event_ids;
comment on sequence weld_hidden.event_ids is
  'Event ids as readers see them (and the positions of examination selections), given by weld_hidden.place_events.';
-- It continues after every id and position given so far (and never goes back when run again).
select pg_catalog.setval('weld_hidden.event_ids', greatest(
  (select last_value from weld_hidden.event_ids),
  (select max(id) from weld_public.events),
  (select max(position) from weld_public.examination_selections),
  (select max(purged_through) from weld_hidden.event_purges),
  (select max(last_event_id) from weld_hidden.webhooks)));

-- The waiting room: each transaction's events, written at its commit, until the relay moves them.
create table if not exists weld_hidden.pending_events (
  tenant_id   uuid not null references weld_public.tenants on delete cascade,
  -- The order they were written in, which is the order the relay gives ids in.
  n           bigint generated always as identity,
  type        text not null constraint pending_events_type_format check (type ~ '^[a-z_]+\.[a-z_]+$'),
  subject_id  uuid not null,
  actor_id    uuid,
  occurred_at timestamptz not null default now(),
  data        jsonb not null,
  change      jsonb,
  -- The writing transaction: what "this transaction's event" means to the outbox trigger.
  xid         bigint not null default pg_current_xact_id()::text::bigint,
  primary key (tenant_id, n)
);
comment on table weld_hidden.pending_events is
  'Events written by transactions, waiting for weld_hidden.place_events to give them their ids in weld_public.events.';
-- The outbox's "this transaction's event of this resource".
create index if not exists pending_events_subject_idx
  on weld_hidden.pending_events (tenant_id, subject_id);
-- Rows live milliseconds: vacuumed after a thousand dead ones, not after a fifth of the table.
alter table weld_hidden.pending_events set (
  autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
  autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);
do $$
begin
  if not exists (select from pg_catalog.pg_policies
                  where schemaname = 'weld_hidden' and tablename = 'pending_events') then
    perform weld_private.secure_tenant_table('weld_hidden.pending_events');
  end if;
end
$$;
grant insert on weld_hidden.pending_events to weld_rules; -- the import's events
-- ... which no longer writes (nor reads back) weld_public.events itself.
revoke select, insert on weld_public.events from weld_rules;

--! Included functions/weld_private.transaction_event.sql
-- This transaction's event of a resource, if it wrote one: still waiting for the relay in
-- weld_hidden.pending_events (the relay sees only committed ones), `id` being its place there.
create or replace function weld_private.transaction_event(tenant uuid, kind text, subject uuid)
  returns table (id bigint, type text)
  language sql stable
as $$
  select p.n, p.type
    from weld_hidden.pending_events p
   where p.tenant_id = tenant and p.subject_id = subject
     and p.xid = pg_current_xact_id()::text::bigint
     and p.type like kind || '.%'
$$;
--! EndIncluded functions/weld_private.transaction_event.sql
--! Included functions/weld_private.refresh_event.sql
-- A resource's event fired again in this transaction shows the resource as it is now. At commit
-- that changes nothing (the first firing saw the final state already); it matters when a session
-- fires the triggers early (SET CONSTRAINTS ALL IMMEDIATE) and changes the resource again. The
-- type stays the first firing's.
create or replace function weld_private.refresh_event(tenant uuid, kind text, subject uuid, data jsonb)
  returns void
  language sql volatile
as $$
  update weld_hidden.pending_events p set data = refresh_event.data
    from weld_private.transaction_event(tenant, kind, subject) this
   where p.tenant_id = tenant and p.n = this.id and p.data is distinct from refresh_event.data
$$;
--! EndIncluded functions/weld_private.refresh_event.sql
--! Included functions/weld_private.emit_event.sql
-- Events. A transaction writes its events to weld_hidden.pending_events; the relay
-- (weld_hidden.place_events, migration 000023) moves them to weld_public.events with their ids
-- after commit and wakes the readers: a writer takes no lock and sends no NOTIFY, so writers of a
-- tenant never wait for each other's commits.
create or replace function weld_private.emit_event(
  tenant uuid, event_type text, subject uuid, data jsonb, change jsonb
) returns boolean
  language plpgsql volatile
as $$
begin
  if exists (select from weld_private.transaction_event(tenant, split_part(event_type, '.', 1), subject)) then
    return false;
  end if;
  insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data, change)
  values (tenant, event_type, subject, weld_hidden.current_user_id(), data, change);
  return true;
end
$$;
--! EndIncluded functions/weld_private.emit_event.sql
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
--! Included functions/weld_private.tg__selection_outbox.sql
-- A selection is opened when it is made (drawn, counted or progressive). Its position is the id
-- its event is given by the relay (weld_hidden.place_events sets it then), so lists in position
-- order never skip a selection that committed late; until then it has none. Bulk loads that leave the feed out take a
-- number from the same sequence at once.
create or replace function weld_private.tg__selection_outbox() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_private.events_suppressed() then
    update weld_public.examination_selections s
       set position = nextval('weld_hidden.event_ids')
     where s.tenant_id = new.tenant_id and s.id = new.id;
  else
    perform weld_private.emit_event(new.tenant_id, 'examination_selection.opened', new.id,
      coalesce(weld_private.event_data('examination_selection', new.tenant_id, new.id), '{}'), null);
  end if;
  return null;
end
$$;

drop trigger if exists _900_outbox on weld_public.examination_selections;
create constraint trigger _900_outbox after insert on weld_public.examination_selections
  deferrable initially deferred
  for each row execute function weld_private.tg__selection_outbox();
--! EndIncluded functions/weld_private.tg__selection_outbox.sql
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
begin
  create temporary table if not exists weld_bulk_evented () on commit drop;
  -- In line order, ISOs first: the relay moves them to weld_public.events in this order, and wakes
  -- the readers.
  insert into weld_hidden.pending_events (tenant_id, type, subject_id, actor_id, data)
  select tenant, x.type, x.subject, weld_hidden.current_user_id(), x.data
    from (select 'iso.created' as type, i.id as subject,
                 weld_private.contract_json(to_jsonb(i)) as data, 0 as kind_order, p.line
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
           where p.action in ('create', 'update')) x
   order by x.kind_order, x.line;
end
$$;

grant execute on function weld_hidden.emit_weld_import_events() to weld_engineer;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.emit_weld_import_events.sql
--! Included functions/weld_hidden.place_events.sql
-- The relay (migration 000023): moves committed events from weld_hidden.pending_events to
-- weld_public.events, giving them their ids from weld_hidden.event_ids in the order they were
-- written (pending_events.n, taken at commit), one tenant at a time, at most `batch` events of a
-- tenant at a time (and always every event of a transaction it takes one of); sets the positions
-- of the examination selections they open; and NOTIFYs weld_events "<tenant> <type>" once per
-- tenant and type it placed. Returns how many it placed.
--
-- `tenant`: that tenant's events only (a reader of the feed, which waits for no other tenant's
-- backlog); null: every tenant's (the server's loop). One relay per tenant runs at a time (a
-- transaction-scoped advisory lock of the tenant): `wait` true waits for one that is running (a
-- reader that must see what committed before it read), false skips that tenant (the loop).
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
begin
  -- Its own events would be placed before they commit, and readers could pass them.
  if pg_current_xact_id_if_assigned() is not null
     and exists (select from weld_hidden.pending_events p
                  where p.xid = pg_current_xact_id_if_assigned()::text::bigint) then
    raise exception 'place_events must run outside a transaction that wrote events'
      using errcode = '25000';
  end if;
  for one in
    -- One tenant: a probe of its key (a reader's call). Every tenant (the loop's): one probe of
    -- the key per tenant that has events waiting, not a scan of the table, whose pages hold the
    -- dead rows of every event moved since the last vacuum.
    with recursive waiting_tenant as (
      (select p.tenant_id from weld_hidden.pending_events p
        where tenant is null order by p.tenant_id limit 1)
      union all
      select (select p.tenant_id from weld_hidden.pending_events p
               where p.tenant_id > w.tenant_id order by p.tenant_id limit 1)
        from waiting_tenant w where w.tenant_id is not null
    )
    select tenant where tenant is not null
       and exists (select from weld_hidden.pending_events p where p.tenant_id = tenant)
    union all
    select w.tenant_id from waiting_tenant w where w.tenant_id is not null
  loop
    if wait then
      perform pg_advisory_xact_lock(hashtext('weld_hidden.place_events'), hashtext(one::text));
    elsif not pg_try_advisory_xact_lock(hashtext('weld_hidden.place_events'), hashtext(one::text)) then
      continue;
    end if;
    with first as materialized (
      select p.n, p.xid
        from weld_hidden.pending_events p
       where p.tenant_id = one
       order by p.n
       limit batch
    ), waiting as materialized (
      -- Whole transactions: a reader never sees part of one.
      select p.*
        from weld_hidden.pending_events p
       where p.tenant_id = one
         and (p.n <= (select max(f.n) from first f) or p.xid in (select f.xid from first f))
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
    -- What committed before it is placed first (migration 000023), so "newest" is newest.
    perform weld_hidden.place_events(new.tenant_id);
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

comment on table weld_public.events is E'@aggregates on\nOne committed change of a resource, in the order ids are given after commit: its type, the resource''s id, who made it, when, and the resource as REST shows it after the change.';
comment on column weld_public.events.id is 'The cursor: ids are given after commit, in order, so reading id > cursor never misses or repeats an event, and one resource''s events come in the order its changes committed.';
