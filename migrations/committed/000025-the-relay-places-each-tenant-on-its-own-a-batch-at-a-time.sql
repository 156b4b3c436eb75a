--! Previous: sha1:5eca148066a4f17c87a27d33d56224e8ad003677
--! Hash: sha1:ff9389a6c0848c0433c41b4bf39a6600ba1b5fa2
--! Message: The relay places each tenant on its own, a batch at a time

-- The relay (000023), after an attacker-side review: one very large transaction (a million-row
-- import) could stop it for every tenant. A whole transaction was placed in one statement, which
-- could outrun the relay's statement timeout and place nothing, ever; and the server's loop placed
-- every tenant in one transaction, so one tenant's failure rolled back all the others' and held
-- their relay locks (their feed readers waiting) until it ended.
-- - place_events places at most `batch` events of a tenant per call, a large transaction in parts.
-- - weld_hidden.waiting_tenants() lists the tenants with events waiting; the server's loop places
--   each in a transaction of its own, and reports a tenant's failure once.
-- - The loop's calls (wait false) give up after 100 ms on a waiting event someone holds locked.
-- - The import checks that every weld it created was matched to its line (for its event).
--! Included functions/weld_hidden.waiting_tenants.sql
-- The tenants with events waiting for the relay (weld_hidden.place_events), in id order: one
-- probe of the waiting room's key per such tenant, not a scan of the table, whose pages hold the
-- dead rows of every event moved since the last vacuum. The server's relay loop places each of
-- them in a transaction of its own, so one tenant's failure or backlog holds up no other.
create or replace function weld_hidden.waiting_tenants() returns setof uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
  set enable_seqscan = off -- (as place_events: by key, a look at an empty room stays a look)
as $$
  with recursive waiting_tenant as (
    (select p.tenant_id from weld_hidden.pending_events p order by p.tenant_id limit 1)
    union all
    select (select p.tenant_id from weld_hidden.pending_events p
             where p.tenant_id > w.tenant_id order by p.tenant_id limit 1)
      from waiting_tenant w where w.tenant_id is not null
  )
  select w.tenant_id from waiting_tenant w where w.tenant_id is not null
$$;

revoke execute on function weld_hidden.waiting_tenants() from public;
grant execute on function weld_hidden.waiting_tenants() to weld_authenticator;
--! EndIncluded functions/weld_hidden.waiting_tenants.sql
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
--! Included functions/weld_hidden.apply_weld_import.sql
create or replace function weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
  set enable_nestloop = off -- as check_weld_import; the plan's statistics predate its new ids
  set work_mem = '64MB' -- its sorts and hashes of 100,000 rows stay in memory
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  done weld_hidden.imports;
  conflicts jsonb;
  conflict_count integer;
  created_count bigint;
begin
  if exists (select from pg_temp.weld_import_errors) then
    raise exception 'the import has errors' using errcode = 'WD007';
  end if;

  -- The welds it updates, locked in id order, as they are now. One whose version moved since the
  -- check (a PATCH in between) would get the values the check computed from the old one: a
  -- conflict, named by line, and nothing is written (WD014). Locked, none moves until the commit.
  perform from pg_temp.weld_import_plan p
    join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
   where p.action = 'update'
   order by w.id
     for update of w;
  -- (A statement of its own: the locks are all taken, and this one reads what they hold.)
  select count(*)::integer,
         jsonb_agg(x.error order by x.line) filter (where x.n <= 200)
    into conflict_count, conflicts
    from (select p.line, row_number() over (order by p.line) as n,
                 jsonb_build_object(
                   'line', p.line, 'column', null, 'value', null,
                   'detail', format('weld %s of ISO %s changed while the file was checked '
                                    '(version %s, now %s): upload the file again',
                                    p.weld_number, p.iso_number, p.seen_version, w.version)) as error
            from pg_temp.weld_import_plan p
            join weld_public.welds w on w.tenant_id = tenant and w.id = p.weld_id
           where p.action = 'update' and w.version <> p.seen_version) x;
  if conflict_count > 0 then
    raise exception '% weld% of the file changed while it was checked', conflict_count,
      case when conflict_count = 1 then '' else 's' end
      using errcode = 'WD014',
            detail = jsonb_build_object('errors', conflicts, 'errorCount', conflict_count)::text;
  end if;

  -- The welds it changes first: the statement below reads them back for their events.
  update weld_public.welds w
     set type = p.type, size = p.size, schedule = p.schedule, wall_thickness = p.wall_thickness,
         material = p.material, welder_id = p.welder_id, wps_id = p.wps_id, welded_on = p.welded_on,
         base_metal_1_p_number = p.base_metal_1_p_number,
         base_metal_2_p_number = p.base_metal_2_p_number
    from pg_temp.weld_import_plan p
   where p.action = 'update' and w.tenant_id = tenant and w.id = p.weld_id;

  -- The ISOs and welds it creates, in one statement, keeping what each line created (for the
  -- events) in a narrow table: writing the new ids back into the plan rewrote 100,000 wide rows.
  -- (The welds' foreign keys and statement triggers run at its end, and see the new ISOs.)
  with new_isos as (
    insert into weld_public.isos (iso_number, line_number)
    select distinct on (p.iso_number) p.iso_number, p.new_iso_line
      from pg_temp.weld_import_plan p
     where p.iso_id is null
     order by p.iso_number, p.line
    returning id, iso_number
  ), line_iso as (
    select p.line, p.weld_number, coalesce(p.iso_id, i.id) as iso_id, i.id as new_iso_id
      from pg_temp.weld_import_plan p
      left join new_isos i on p.iso_id is null and i.iso_number = p.iso_number
     where p.action = 'create'
  ), new_welds as (
    insert into weld_public.welds (iso_id, weld_number, type, size, schedule, wall_thickness,
                                   material, welder_id, wps_id, welded_on, base_metal_1_p_number,
                                   base_metal_2_p_number)
    select l.iso_id, p.weld_number, p.type, p.size, p.schedule, p.wall_thickness, p.material,
           p.welder_id, p.wps_id, p.welded_on, p.base_metal_1_p_number, p.base_metal_2_p_number
      from line_iso l
      join pg_temp.weld_import_plan p on p.line = l.line
    returning id, iso_id, weld_number
  )
  insert into pg_temp.weld_import_created (line, weld_id, new_iso_id)
  select l.line, w.id, l.new_iso_id
    from line_iso l
    join new_welds w on w.iso_id = l.iso_id and w.weld_number = l.weld_number;
  -- Every weld created has its line, or its event would be missing (the outbox stands down).
  get diagnostics created_count = row_count;
  if created_count <> (select count(*) from pg_temp.weld_import_plan p where p.action = 'create') then
    raise exception 'the import matched % created welds to their lines, of % planned', created_count,
      (select count(*) from pg_temp.weld_import_plan p where p.action = 'create');
  end if;

  perform weld_hidden.emit_weld_import_events();

  insert into weld_hidden.imports (kind, file_sha256, file_bytes, rows, created, updated,
                                   unchanged, isos_created)
  select 'welds', apply_weld_import.file_sha256, apply_weld_import.file_bytes, count(*),
         count(*) filter (where p.action = 'create'), count(*) filter (where p.action = 'update'),
         count(*) filter (where p.action = 'unchanged'),
         count(distinct p.iso_number) filter (where p.new_iso_line is not null)
    from pg_temp.weld_import_plan p
  returning * into done;
  return weld_hidden.import_json(done);
end
$$;

grant execute on function weld_hidden.apply_weld_import(text, bigint) to weld_engineer;
--! EndIncluded functions/weld_hidden.apply_weld_import.sql
