--! Previous: sha1:ff9389a6c0848c0433c41b4bf39a6600ba1b5fa2
--! Hash: sha1:dc4906f4729ffe4d578a5d510df5dccc36c55ffd
--! Message: The waiting room keeps no foreign key to tenants

-- The waiting room without its foreign key to tenants: the check cost every writer one lookup per
-- event (0.6 s of a 100,000-weld import). The relay locks a tenant's row before its events (which
-- also orders it before a deletion of the tenant, instead of the two deadlocking) and drops the
-- waiting events of a tenant that is gone.
alter table weld_hidden.pending_events drop constraint if exists pending_events_tenant_id_fkey;

--! Included functions/weld_hidden.place_events.sql
-- The relay (migration 000023): moves committed events from weld_hidden.pending_events to
-- weld_public.events, giving them their ids from weld_hidden.event_ids in the order they were
-- written (pending_events.n, taken at commit), one tenant at a time, at most `batch` events of a
-- tenant at a time (a transaction of more, an import, reaches the feed in parts, in order, each
-- call placing the next `batch`: a whole million-event transaction in one statement would outrun
-- the relay's statement timeout and place nothing, for ever); sets the positions of the
-- examination selections they open; and NOTIFYs weld_events "<tenant> <type>" once per tenant and
-- type it placed. Returns how many it placed.
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
  -- Its own events would be placed before they commit, and readers could pass them.
  if pg_current_xact_id_if_assigned() is not null
     and exists (select from weld_hidden.pending_events p
                  where p.xid = pg_current_xact_id_if_assigned()::text::bigint) then
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
      delete from weld_hidden.pending_events p where p.tenant_id = one;
      continue;
    end if;
    with waiting as materialized (
      select p.*
        from weld_hidden.pending_events p
       where p.tenant_id = one
       order by p.n
       limit batch
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
