--! Previous: sha1:646a5559cb2e4c44445481c0c3d7e6c91c87bb35
--! Hash: sha1:7ec7399f64ed3c2a738045d9e13633781e07eb4d
--! Message: ISO progress: weld counts by status per ISO, kept exact by triggers

-- ISO progress (issue F11): the welds of each ISO counted by status, kept exact in SQL.
--
-- weld_public.iso_weld_counts holds one row per ISO: total, pending, accepted, rejected, repair
-- and voided, and a version that every change of the row bumps (an ISO's REST answer carries the
-- counts, so its ETag must change when they do). Triggers keep it, in the transaction that
-- changes the welds, so the counts commit (or roll back) with the change itself and are exact at
-- every commit; no request role may write the table.
--
--   an ISO inserted       its row, all zeros (row-level: see below)
--   welds inserted        one statement-level trigger over the new rows: counted per ISO, one
--                         row update per ISO, however many welds the statement wrote (an import
--                         or a seed writes 100,000 in one statement)
--   welds deleted         the same over the old rows
--   a weld's status or    a row-level trigger, only when the status or the ISO really changes:
--   ISO changed           one UPDATE (the hot path: change_weld_status, NDT results)
--   an ISO deleted        its row goes with it (foreign key, on delete cascade)
--
-- Exact under concurrency: each change is `x = x + delta` under the row's lock, which the update
-- takes and holds to commit; no trigger reads a count and writes it back. Writers of one ISO
-- take turns from their trigger to their commit. Statements that touch several ISOs lock their
-- rows in (tenant_id, iso_id) order first, so two bulk statements never wait for each other in
-- opposite orders (NDT records, which move welds of several ISOs one by one, already take turns
-- by line: lock_line, 000009). What can still deadlock is a transaction that holds an ISO's counts
-- and then waits for one of its welds (an import that inserts welds and then updates others of
-- the same ISO) while a status change holds that weld and waits for the counts; PostgreSQL fails
-- one of the two (40P01: REST's 409 with Retry-After), and nothing is miscounted.
--
-- The trigger functions are SECURITY DEFINER as weld_owner, like the outbox's (000010): the owner
-- bypasses row security, which these need, since welds are also written outside any tenant
-- context (the seed generator, a DBA, a tenant's deletion), where a NOBYPASSRLS owner such as
-- weld_rules would see no counts row and silently count nothing. They read only the rows the
-- statement changed and write only the counts of those rows' tenants and ISOs.
--
-- graphile-migrate re-runs current.sql on every save, so it starts from a clean slate.

drop table if exists weld_public.iso_weld_counts cascade;
drop function if exists weld_private.tg_isos__weld_counts() cascade;
drop function if exists weld_private.tg_welds__iso_weld_counts() cascade;
drop function if exists weld_private.tg_welds__iso_weld_counts_move() cascade;

--------------------------------------------------------------------------------------------------
-- The table

create table weld_public.iso_weld_counts (
  tenant_id uuid not null,
  iso_id    uuid not null,
  total     integer not null default 0,
  pending   integer not null default 0,
  accepted  integer not null default 0,
  rejected  integer not null default 0,
  repair    integer not null default 0,
  voided    integer not null default 0,
  version   bigint not null default 1,
  primary key (tenant_id, iso_id),
  constraint iso_weld_counts_iso_fkey foreign key (tenant_id, iso_id)
    references weld_public.isos on delete cascade,
  -- A count that could only come from a lost or doubled change fails the writing statement
  -- instead of being stored.
  constraint iso_weld_counts_consistent check (
    least(pending, accepted, rejected, repair, voided) >= 0
    and total = pending + accepted + rejected + repair + voided)
);
comment on table weld_public.iso_weld_counts is
  E'@aggregates on\nThe welds of each ISO counted by status (ISO progress), exact at every commit: kept by triggers in the transaction that changes the welds. One row per ISO; no role writes it.';
comment on column weld_public.iso_weld_counts.iso_id is
  E'@behavior -attribute:groupBy\nThe ISO counted.';
comment on column weld_public.iso_weld_counts.total is
  E'@behavior +filterBy\nEvery weld of the ISO, voided ones included (total - voided: the welds still in the design).';
comment on column weld_public.iso_weld_counts.pending is E'@behavior +filterBy\nWelds PENDING: welded or planned, not yet accepted.';
comment on column weld_public.iso_weld_counts.accepted is E'@behavior +filterBy\nWelds ACCEPTED.';
comment on column weld_public.iso_weld_counts.rejected is E'@behavior +filterBy\nWelds REJECTED, awaiting a repair or voiding.';
comment on column weld_public.iso_weld_counts.repair is E'@behavior +filterBy\nWelds in REPAIR.';
comment on column weld_public.iso_weld_counts.voided is E'@behavior +filterBy\nWelds VOIDED: cut out or deleted from the design, kept for audit.';
comment on column weld_public.iso_weld_counts.version is
  E'@behavior -attribute:groupBy -attribute:aggregate\nBumped by every change of the counts: once per weld status change or move, once per statement inserting or deleting welds of the ISO.';
-- GraphQL: iso.weldCounts (one-to-one: the key is the ISO's) and isoWeldCount.iso.
comment on constraint iso_weld_counts_iso_fkey on weld_public.iso_weld_counts is
  E'@fieldName iso\n@foreignSingleFieldName weldCounts';

select weld_private.secure_tenant_table('weld_public.iso_weld_counts');
-- Read by every request role (they inherit from weld_viewer); written by the triggers alone.
grant select on weld_public.iso_weld_counts to weld_viewer;

--------------------------------------------------------------------------------------------------
-- The triggers

-- An ISO starts with a row of zeros. Row-level, not per statement: an ISO's row event is queued
-- before the events of any weld row that refers to it, even within one statement (a writable CTE
-- that inserts an ISO and moves welds to it), so no weld trigger can come first and miss the row;
-- per statement, the move was seen to come first. The price: about 50 us an ISO (an import of
-- 2,000 new ISOs, 0.1 s). (Weld inserts create a missing row themselves.)
create function weld_private.tg_isos__weld_counts() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into weld_public.iso_weld_counts (tenant_id, iso_id)
  values (new.tenant_id, new.id)
  on conflict (tenant_id, iso_id) do nothing;
  return null;
end
$$;

-- Welds inserted or deleted, once per statement: the statement's rows counted per ISO and status,
-- those ISOs' rows locked in key order, then each changed once. An insert also creates a row that
-- is missing (an ISO inserted by the same statement whose trigger has not run yet); a delete finds
-- no row only for an ISO that is being deleted itself, and has nothing to count.
create function weld_private.tg_welds__iso_weld_counts() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  deltas weld_public.iso_weld_counts[];
  tenant uuid;
begin
  -- (Each branch names only the transition table its event has.)
  if tg_op = 'TRUNCATE' then
    -- Every weld of every tenant is gone (a DBA's TRUNCATE fires no delete trigger).
    update weld_public.iso_weld_counts c
       set total = 0, pending = 0, accepted = 0, rejected = 0, repair = 0, voided = 0,
           version = c.version + 1
     where c.total <> 0;
    return null;
  elsif tg_op = 'INSERT' then
    select array_agg(row(d.*)::weld_public.iso_weld_counts order by d.tenant_id, d.iso_id)
      into deltas
      from (select n.tenant_id, n.iso_id, count(*)::integer,
                   count(*) filter (where n.status = 'PENDING')::integer,
                   count(*) filter (where n.status = 'ACCEPTED')::integer,
                   count(*) filter (where n.status = 'REJECTED')::integer,
                   count(*) filter (where n.status = 'REPAIR')::integer,
                   count(*) filter (where n.status = 'VOIDED')::integer,
                   0::bigint
              from new_rows n
             group by n.tenant_id, n.iso_id)
           as d (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided, version);
  else
    select array_agg(row(d.*)::weld_public.iso_weld_counts order by d.tenant_id, d.iso_id)
      into deltas
      from (select o.tenant_id, o.iso_id, -count(*)::integer,
                   -count(*) filter (where o.status = 'PENDING')::integer,
                   -count(*) filter (where o.status = 'ACCEPTED')::integer,
                   -count(*) filter (where o.status = 'REJECTED')::integer,
                   -count(*) filter (where o.status = 'REPAIR')::integer,
                   -count(*) filter (where o.status = 'VOIDED')::integer,
                   0::bigint
              from old_rows o
             group by o.tenant_id, o.iso_id)
           as d (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided, version);
  end if;
  if deltas is null then
    return null; -- the statement wrote no row
  end if;

  -- Tenant by tenant (a request writes one; the owner may write several), each statement naming
  -- its tenant as a parameter: the single-shard form, should the tables be distributed by tenant.
  for tenant in select distinct d.tenant_id from unnest(deltas) d order by 1 loop
    perform from weld_public.iso_weld_counts c
     where c.tenant_id = tenant
       and c.iso_id in (select d.iso_id from unnest(deltas) d where d.tenant_id = tenant)
     order by c.iso_id
       for no key update;
    if tg_op = 'INSERT' then
      insert into weld_public.iso_weld_counts as c
             (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided)
      select tenant, d.iso_id, d.total, d.pending, d.accepted, d.rejected, d.repair, d.voided
        from unnest(deltas) d
       where d.tenant_id = tenant
       order by d.iso_id
      on conflict (tenant_id, iso_id) do update
         set total = c.total + excluded.total, pending = c.pending + excluded.pending,
             accepted = c.accepted + excluded.accepted, rejected = c.rejected + excluded.rejected,
             repair = c.repair + excluded.repair, voided = c.voided + excluded.voided,
             version = c.version + 1;
    else
      update weld_public.iso_weld_counts c
         set total = c.total + d.total, pending = c.pending + d.pending,
             accepted = c.accepted + d.accepted, rejected = c.rejected + d.rejected,
             repair = c.repair + d.repair, voided = c.voided + d.voided,
             version = c.version + 1
        from unnest(deltas) d
       where c.tenant_id = tenant and d.tenant_id = tenant and c.iso_id = d.iso_id;
    end if;
  end loop;
  return null;
end
$$;

-- A weld's status or ISO changed (the trigger's WHEN leaves out updates that change neither).
-- A status change, the hot path (change_weld_status, NDT results: 1,500 a second is the target),
-- is one UPDATE of one row by its key. A move to another ISO (or tenant) leaves the old row and
-- enters the new one: both locked in key order, then one UPDATE of the two.
-- (Two statements rather than one for both: the plan of a key lookup is the same for every call,
-- so it is planned once per session; a single `(tenant_id, iso_id) in (old, new)` is planned
-- again on every call, since its custom plans, where old = new, always look cheaper, 0.4 ms.)
create function weld_private.tg_welds__iso_weld_counts_move() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if old.tenant_id = new.tenant_id and old.iso_id = new.iso_id then
    update weld_public.iso_weld_counts c
       set pending  = c.pending  + (new.status = 'PENDING')::integer  - (old.status = 'PENDING')::integer,
           accepted = c.accepted + (new.status = 'ACCEPTED')::integer - (old.status = 'ACCEPTED')::integer,
           rejected = c.rejected + (new.status = 'REJECTED')::integer - (old.status = 'REJECTED')::integer,
           repair   = c.repair   + (new.status = 'REPAIR')::integer   - (old.status = 'REPAIR')::integer,
           voided   = c.voided   + (new.status = 'VOIDED')::integer   - (old.status = 'VOIDED')::integer,
           version  = c.version + 1
     where c.tenant_id = new.tenant_id and c.iso_id = new.iso_id;
    return null;
  end if;

  perform from weld_public.iso_weld_counts c
   where (c.tenant_id, c.iso_id) in ((old.tenant_id, old.iso_id), (new.tenant_id, new.iso_id))
   order by c.tenant_id, c.iso_id
     for no key update;
  update weld_public.iso_weld_counts c
     set total    = c.total    + m.delta,
         pending  = c.pending  + m.delta * (m.status = 'PENDING')::integer,
         accepted = c.accepted + m.delta * (m.status = 'ACCEPTED')::integer,
         rejected = c.rejected + m.delta * (m.status = 'REJECTED')::integer,
         repair   = c.repair   + m.delta * (m.status = 'REPAIR')::integer,
         voided   = c.voided   + m.delta * (m.status = 'VOIDED')::integer,
         version  = c.version + 1
    from (values (old.tenant_id, old.iso_id, old.status, -1),
                 (new.tenant_id, new.iso_id, new.status, 1)) as m (tenant_id, iso_id, status, delta)
   where c.tenant_id = m.tenant_id and c.iso_id = m.iso_id;
  return null;
end
$$;

revoke execute on function weld_private.tg_isos__weld_counts(),
  weld_private.tg_welds__iso_weld_counts(), weld_private.tg_welds__iso_weld_counts_move()
  from public;

create trigger _500_weld_counts after insert on weld_public.isos
  for each row execute function weld_private.tg_isos__weld_counts();
create trigger _500_iso_weld_counts_insert after insert on weld_public.welds
  referencing new table as new_rows
  for each statement execute function weld_private.tg_welds__iso_weld_counts();
create trigger _500_iso_weld_counts_delete after delete on weld_public.welds
  referencing old table as old_rows
  for each statement execute function weld_private.tg_welds__iso_weld_counts();
create trigger _500_iso_weld_counts_truncate after truncate on weld_public.welds
  for each statement execute function weld_private.tg_welds__iso_weld_counts();
create trigger _500_iso_weld_counts_update after update of status, iso_id, tenant_id on weld_public.welds
  for each row
  when (old.status is distinct from new.status or old.iso_id is distinct from new.iso_id
        or old.tenant_id is distinct from new.tenant_id)
  execute function weld_private.tg_welds__iso_weld_counts_move();

--------------------------------------------------------------------------------------------------
-- The counts of the ISOs there are, from a full count of their welds. After the triggers: creating
-- them locked isos and welds against writers until this transaction commits, so no weld written
-- meanwhile can be missed by both this count and the triggers.

insert into weld_public.iso_weld_counts
       (tenant_id, iso_id, total, pending, accepted, rejected, repair, voided)
select i.tenant_id, i.id, count(w.id),
       count(*) filter (where w.status = 'PENDING'),
       count(*) filter (where w.status = 'ACCEPTED'),
       count(*) filter (where w.status = 'REJECTED'),
       count(*) filter (where w.status = 'REPAIR'),
       count(*) filter (where w.status = 'VOIDED')
  from weld_public.isos i
  left join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
 group by i.tenant_id, i.id;
