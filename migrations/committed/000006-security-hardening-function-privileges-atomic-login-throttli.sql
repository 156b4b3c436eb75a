--! Previous: sha1:6879b6cc43d055992203201baff5ce1be285d425
--! Hash: sha1:7b46654948b1238303e20dfcb5e022d6378fdefe
--! Message: Security hardening: function privileges, atomic login throttling, authorship, session revocation

-- Security hardening: who may execute which function, login throttling that counts an attempt
-- before the password is checked, authorship that clients cannot supply, a history of changes to
-- examinations, and sessions that end when their user is disabled or changes role.
--
-- What 000001 got wrong. Its comment "New functions are not executable by PUBLIC" held only for
-- functions weld_owner creates: `alter default privileges` without `for role` applies to the role
-- that runs it. Every function created after `set role weld_rules` (000002: change_weld_status;
-- 000003: login_begin, login_fail, login_succeed, refresh_rotate, logout, tenant_signing_keys,
-- add_signing_key, tenant_csrf_key) kept PostgreSQL's default, EXECUTE for PUBLIC, so any role
-- (any request role among them) could read a tenant's private signing keys or mint a session.
-- Worse, the grants 000002 and 000003 made on those functions after `reset role` granted nothing:
-- weld_owner is a NOINHERIT member of weld_rules, so it holds no right to grant on weld_rules'
-- behalf, and PostgreSQL only warns. The functions worked through PUBLIC alone.
--
-- This migration fixes it: default privileges revoke EXECUTE from PUBLIC for both roles that
-- create functions (bootstrap.sql does the same, so a new database never has the gap); EXECUTE is
-- revoked from PUBLIC on every function of the three schemas; and each function is granted, by
-- its owner, to exactly the roles that call it (section "Function privileges" at the end).
-- weld_owner may execute weld_rules' functions, by default privilege too: it attaches the trigger
-- functions weld_rules owns (creating a trigger needs EXECUTE on its function), and on a new
-- database the grants of 000002 and 000003 would otherwise fail instead of warning.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

-- A role changes its own default privileges (weld_owner holds no right to do it for weld_rules:
-- its membership does not inherit), so weld_rules' run as weld_rules.
alter default privileges revoke execute on functions from public;
set role weld_rules;
alter default privileges revoke execute on functions from public;
alter default privileges grant execute on functions to weld_owner;
reset role;

-- weld_rules creates functions below; it holds CREATE on these schemas only until the end of this
-- migration (see the last section).
grant create on schema weld_hidden, weld_private to weld_rules;

drop function if exists weld_hidden.login_fail(public.citext, text);
drop table if exists weld_public.examination_changes cascade;

--------------------------------------------------------------------------------------------------
-- Login throttling, atomic.
--
-- Before: login_begin only read the counters, the server checked the password, and login_fail
-- counted the failure afterwards, so 40 parallel guesses all got a verdict before any was counted.
-- Now login_begin counts every attempt as a failure *before* the password is checked, in one
-- statement per key (an upsert, which takes the row lock, so concurrent attempts take turns), and
-- login_succeed takes the count back when the password was right. There is no login_fail: a
-- wrong password needs no second call, its attempt is counted already.
--
-- login_begin(name, address), for the keys 'addr:<address>' and then 'user:<lower name>':
--   - a key that is blocked answers retry_after (seconds) and counts nothing: no hash is returned,
--     and the address attempt counted just before a blocked user name is taken back;
--   - otherwise the attempt is counted, the block set when the new count reaches the threshold,
--     and the user (null when unknown, so the server hashes a dummy and answers the same) and its
--     password hash are returned.
-- login_succeed(user, address, ...) deletes the user key (a success clears it) and takes the
-- address attempt back (one less, never below 0; the block lifts if the count falls below it).
--
-- The numbers (documented in the README; DBAs may change them here):
--   per user name: from the 5th consecutive failure a delay of 1, 2, 4 ... seconds, capped at
--     60 s, so an attacker can slow a user's logins but never lock them out for long; a success,
--     or an hour without failures, clears it. At most 5 attempts get a verdict before the first
--     delay, however many arrive at once.
--   per address: 30 failures within 10 minutes block that address until the 10 minutes end.
--
-- Keys are always locked address first, then user name (in login_succeed too), so two logins
-- never wait for each other in opposite orders.

set role weld_rules;

-- Takes back one attempt login_begin counted against an address (the attempt succeeded, or was
-- refused for its user name and so was no attempt at all).
create or replace function weld_private.login_take_back(tenant uuid, address text) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  update weld_private.login_throttle t
     set failures = greatest(t.failures - 1, 0),
         blocked_until = case when t.failures - 1 >= 30 then t.blocked_until end
   where t.tenant_id = tenant and t.throttle_key = 'addr:' || address
$$;

create or replace function weld_hidden.login_begin(user_name public.citext, address text)
  returns table (retry_after integer, user_id uuid, active boolean, password_hash text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  addr_key text := 'addr:' || login_begin.address;
  user_key text := 'user:' || lower(login_begin.user_name);
  blocked_for integer;
begin
  -- The address: a new 10-minute window when the last one has ended. `where` skips the update of
  -- a blocked key; ON CONFLICT locks the row all the same, and no row comes back.
  insert into weld_private.login_throttle as t (tenant_id, throttle_key, failures, window_start, last_failure_at)
  values (tenant, addr_key, 1, now(), now())
  on conflict on constraint login_throttle_pkey do update
    set (failures, window_start, last_failure_at, blocked_until) = (
          select w.failures, w.window_start, now(),
                 case when w.failures >= 30 then w.window_start + interval '10 minutes' end
            from (select case when t.window_start > now() - interval '10 minutes'
                              then t.failures + 1 else 1 end,
                         case when t.window_start > now() - interval '10 minutes'
                              then t.window_start else now() end) as w (failures, window_start))
    where not coalesce(t.blocked_until > now(), false);
  if not found then
    select greatest(ceil(extract(epoch from t.blocked_until - now())), 1)::integer into blocked_for
      from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = addr_key;
    return query select blocked_for, null::uuid, null::boolean, null::text;
    return;
  end if;

  -- The user name: the count starts over after an hour without failures.
  insert into weld_private.login_throttle as t (tenant_id, throttle_key, failures, window_start, last_failure_at)
  values (tenant, user_key, 1, now(), now())
  on conflict on constraint login_throttle_pkey do update
    set (failures, last_failure_at, blocked_until) = (
          select f.failures, now(),
                 case when f.failures >= 5
                      then now() + least(power(2, f.failures - 5), 60) * interval '1 second' end
            from (select case when t.last_failure_at > now() - interval '1 hour'
                              then t.failures + 1 else 1 end) as f (failures))
    where not coalesce(t.blocked_until > now(), false);
  if not found then
    perform weld_private.login_take_back(tenant, login_begin.address);
    select greatest(ceil(extract(epoch from t.blocked_until - now())), 1)::integer into blocked_for
      from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = user_key;
    return query select blocked_for, null::uuid, null::boolean, null::text;
    return;
  end if;

  -- User names compare as citext, case-insensitively: its `=` lives in schema public, which the
  -- pinned search_path leaves out, so it is named (a plain `=` would compare them as text).
  return query
    select null::integer, u.id, u.active, c.password_hash
      from (select) as attempt
      left join weld_public.users u
        on u.tenant_id = tenant and u.user_name operator(public.=) login_begin.user_name
      left join weld_private.user_credentials c on c.tenant_id = u.tenant_id and c.user_id = u.id;
end
$$;

create or replace function weld_hidden.login_succeed(
  user_id uuid, address text, session_id uuid, refresh_hash bytea, refresh_ttl interval
) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  name public.citext;
begin
  select u.user_name into name from weld_public.users u
   where u.tenant_id = tenant and u.id = login_succeed.user_id and u.active;
  if not found then
    raise exception 'no active user %', user_id using errcode = 'WD001';
  end if;
  -- Address first, then the user name: the order login_begin locks them in.
  perform weld_private.login_take_back(tenant, login_succeed.address);
  delete from weld_private.login_throttle t
   where t.tenant_id = tenant and t.throttle_key = 'user:' || lower(name);
  insert into weld_private.sessions (tenant_id, id, user_id)
    values (tenant, login_succeed.session_id, login_succeed.user_id);
  insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at)
    values (tenant, refresh_hash, login_succeed.session_id, now() + refresh_ttl);
end
$$;

reset role;

--------------------------------------------------------------------------------------------------
-- Housekeeping of the authentication tables, across all tenants.
--
-- The server calls it every 15 minutes (any interval from a minute to an hour works: throttle
-- rows live 10 minutes or an hour, refresh tokens days, and nothing here is urgent). It deletes
--   - throttle rows whose useful life has ended: user names an hour after their last failure,
--     addresses once their 10-minute window is over, in both cases with no block in force;
--   - refresh tokens past their expiry, used or not (a used token is kept until then so that
--     presenting it again is recognised as reuse and revokes its session);
--   - sessions revoked more than a day ago (the server needs revocations only for the lifetime
--     of an access token, minutes), and sessions older than a day without an unexpired refresh
--     token (nobody can use them any more; the day spares sessions being created right now).
-- Rows another transaction holds (a login, a refresh) are skipped, not waited for; the next run
-- takes them. Returns how many rows of each it deleted.
--
-- SECURITY DEFINER as the owner, which has BYPASSRLS: the work spans tenants. Granted to the
-- authenticator only. The scans are not indexed: the tables hold live bookkeeping only, which
-- this function keeps small.
create or replace function weld_hidden.purge_auth_bookkeeping(
  out deleted_throttle_rows integer,
  out deleted_refresh_tokens integer,
  out deleted_sessions integer
)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from weld_private.login_throttle t
   where (t.tenant_id, t.throttle_key) in (
     select o.tenant_id, o.throttle_key from weld_private.login_throttle o
      where (o.blocked_until is null or o.blocked_until <= now())
        and case
              when o.throttle_key like 'user:%' then o.last_failure_at <= now() - interval '1 hour'
              when o.throttle_key like 'addr:%' then o.window_start <= now() - interval '10 minutes'
              else false
            end
        for update skip locked);
  get diagnostics deleted_throttle_rows = row_count;

  delete from weld_private.refresh_tokens r
   where (r.tenant_id, r.token_hash) in (
     select o.tenant_id, o.token_hash from weld_private.refresh_tokens o
      where o.expires_at < now()
        for update skip locked);
  get diagnostics deleted_refresh_tokens = row_count;

  delete from weld_private.sessions s
   where (s.tenant_id, s.id) in (
     select o.tenant_id, o.id from weld_private.sessions o
      where o.revoked_at < now() - interval '1 day'
         or (o.created_at < now() - interval '1 day'
             and not exists (
               select from weld_private.refresh_tokens r
                where r.tenant_id = o.tenant_id and r.session_id = o.id and r.expires_at > now()))
        for update skip locked);
  get diagnostics deleted_sessions = row_count;
end
$$;

--------------------------------------------------------------------------------------------------
-- Authorship of examinations is the caller's, never the client's.
--
-- recorded_by was in the inspector's INSERT grant with no default, so a client could credit an
-- examination to anyone. Now it defaults to the signed-in user, no API role may write it, and a
-- trigger overwrites it for every request role anyway, so a careless future grant cannot reopen
-- it. Writes outside a request (the owner: seed generator, imports, a DBA) keep their value.

alter table weld_public.ndt_records alter column recorded_by set default weld_hidden.current_user_id();
alter table weld_public.inspections alter column recorded_by set default weld_hidden.current_user_id();

-- A table-level revoke takes the column grants with it; then the insert columns again, without
-- recorded_by (the update grants never had it).
revoke insert on weld_public.ndt_records, weld_public.inspections from weld_inspector;
grant insert (method, report_number, examined_on, technician, result, notes)
  on weld_public.ndt_records to weld_inspector;
grant insert (kind, inspector_name, inspected_on, result, notes)
  on weld_public.inspections to weld_inspector;

-- SECURITY INVOKER: it reads the caller's own request role and user.
create or replace function weld_private.tg__set_recorded_by() returns trigger
  language plpgsql volatile
as $$
begin
  if weld_hidden.request_role() is not null then
    new.recorded_by := weld_hidden.current_user_id();
  end if;
  return new;
end
$$;

drop trigger if exists _100_set_recorded_by on weld_public.ndt_records;
create trigger _100_set_recorded_by before insert on weld_public.ndt_records
  for each row execute function weld_private.tg__set_recorded_by();
drop trigger if exists _100_set_recorded_by on weld_public.inspections;
create trigger _100_set_recorded_by before insert on weld_public.inspections
  for each row execute function weld_private.tg__set_recorded_by();

--------------------------------------------------------------------------------------------------
-- The history of examinations.
--
-- Inspectors may correct an NDT record or an inspection (its result, its welds, its film) after
-- the fact, but not silently: every change after the transaction that created the record is kept
-- here, append-only, with what it was before and after, who made it and when.
--
--   subject     change                  before / after
--   ndt_record  updated                 the changed columns only (updated_at aside)
--   inspection  updated                 the same
--   both        weld_added/_removed     {"weld_id"}
--   ndt_record  film_interval_added     the interval: {"id", "label", "result", "defect_codes"}
--               film_interval_updated   {"id"} and the changed columns
--               film_interval_removed   the interval
--               film_weld_added/_removed {"film_interval_id", "weld_id"}
--
-- Rows linked in the transaction that created their record (an NDT record with its welds and
-- film in one go) are part of creating it, not changes. Removing a row that other rows hang on
-- (a weld link, a film interval) records those removals too. Changes made outside a tenant
-- context (the owner: migrations, the seed generator, a DBA) are not requests and are not
-- recorded: row security would refuse the rows, and the owner can rewrite this table anyway.

create table weld_public.examination_changes (
  tenant_id  uuid not null default weld_hidden.current_tenant_id()
             references weld_public.tenants on delete cascade,
  id         bigint generated always as identity,
  subject    text not null check (subject in ('ndt_record', 'inspection')),
  record_id  uuid not null,
  change     text not null check (change in (
               'updated', 'weld_added', 'weld_removed',
               'film_interval_added', 'film_interval_updated', 'film_interval_removed',
               'film_weld_added', 'film_weld_removed')),
  before     jsonb,
  after      jsonb,
  changed_by uuid default weld_hidden.current_user_id(),
  changed_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, changed_by) references weld_public.users on delete restrict
);
create index examination_changes_record_idx
  on weld_public.examination_changes (tenant_id, subject, record_id, id);
comment on table weld_public.examination_changes is
  'Every change to an NDT record or inspection after it was created: what, before and after, who and when.';

select weld_private.secure_tenant_table('weld_public.examination_changes');
-- Readable by everyone of the tenant; written only by the triggers below (as weld_rules).
grant select on weld_public.examination_changes to weld_viewer;
grant insert on weld_public.examination_changes to weld_rules;
-- The triggers read the record a link belongs to (was it created in this transaction?).
grant select on weld_public.ndt_records, weld_public.inspections to weld_rules;

set role weld_rules;

-- Was this record created by the current transaction? Its row's xmin is the transaction that
-- wrote the row version we see; when that is ours (pg_current_xact_id() is the 64-bit id, xmin
-- the 32-bit one: xid() converts), we wrote it. But an UPDATE writes a new version too, so xmin
-- alone would also call a record new that this transaction merely changed, and a weld linked in
-- the same transaction as a correction would go unrecorded: created_at (now() when it was
-- inserted, and no API role may set it) must also be this transaction's start time. A record
-- inserted in a subtransaction (a savepoint) has the subtransaction's xid and counts as older;
-- its links are then recorded as changes, which errs on the side of the record.
create or replace function weld_private.examination_created_in_this_transaction(
  subject text, tenant uuid, record_id uuid
) returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select case examination_created_in_this_transaction.subject
    when 'ndt_record' then exists (
      select from weld_public.ndt_records r
       where r.tenant_id = tenant and r.id = record_id
         and r.xmin = xid(pg_current_xact_id_if_assigned()) and r.created_at = now())
    when 'inspection' then exists (
      select from weld_public.inspections r
       where r.tenant_id = tenant and r.id = record_id
         and r.xmin = xid(pg_current_xact_id_if_assigned()) and r.created_at = now())
  end
$$;

-- The columns that differ between two versions of a row (updated_at aside), as two objects: the
-- old values and the new. Nulls when nothing differs.
create or replace function weld_private.changed_columns(old_row jsonb, new_row jsonb)
  returns table (before jsonb, after jsonb)
  language sql immutable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_object_agg(o.key, o.value), jsonb_object_agg(o.key, n.value)
    from jsonb_each(old_row) o
    join jsonb_each(new_row) n on n.key = o.key
   where o.value is distinct from n.value and o.key <> 'updated_at'
$$;

-- The triggers' functions: SECURITY DEFINER as weld_rules, which may insert into the history
-- (no API role may), under row security like everyone. tg_argv[0] is the subject.

-- An NDT record or inspection was updated.
create or replace function weld_private.tg__examination_updated() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  diff record;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  select * into diff from weld_private.changed_columns(to_jsonb(old), to_jsonb(new));
  if diff.before is not null then
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, tg_argv[0], new.id, 'updated', diff.before, diff.after,
            weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

-- A weld was linked to or unlinked from an NDT record or inspection; tg_argv[1] names the
-- link's column that holds the record's id.
create or replace function weld_private.tg__examination_weld_link() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  link jsonb;
  record_id uuid;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'INSERT' then
    link := to_jsonb(new);
  else
    link := to_jsonb(old);
  end if;
  record_id := (link ->> tg_argv[1])::uuid;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction(tg_argv[0], new.tenant_id, record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, tg_argv[0], record_id, 'weld_added', null,
            jsonb_build_object('weld_id', link -> 'weld_id'), weld_hidden.current_user_id());
  else
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, tg_argv[0], record_id, 'weld_removed',
            jsonb_build_object('weld_id', link -> 'weld_id'), null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

-- A film interval of an NDT record was added, changed or removed.
create or replace function weld_private.tg_film_intervals__examination_change() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  diff record;
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction('ndt_record', new.tenant_id, new.ndt_record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, 'ndt_record', new.ndt_record_id, 'film_interval_added', null,
            jsonb_build_object('id', new.id, 'label', new.label, 'result', new.result,
                               'defect_codes', new.defect_codes),
            weld_hidden.current_user_id());
  elsif tg_op = 'UPDATE' then
    select * into diff from weld_private.changed_columns(to_jsonb(old), to_jsonb(new));
    if diff.before is not null then
      insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
      values (new.tenant_id, 'ndt_record', new.ndt_record_id, 'film_interval_updated',
              jsonb_build_object('id', old.id) || diff.before,
              jsonb_build_object('id', new.id) || diff.after,
              weld_hidden.current_user_id());
    end if;
  else
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, 'ndt_record', old.ndt_record_id, 'film_interval_removed',
            jsonb_build_object('id', old.id, 'label', old.label, 'result', old.result,
                               'defect_codes', old.defect_codes),
            null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

-- A weld was mapped to or unmapped from a film interval.
create or replace function weld_private.tg_film_interval_welds__examination_change() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if weld_hidden.current_tenant_id() is null then
    return null;
  end if;
  if tg_op = 'INSERT' then
    if weld_private.examination_created_in_this_transaction('ndt_record', new.tenant_id, new.ndt_record_id) then
      return null;
    end if;
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (new.tenant_id, 'ndt_record', new.ndt_record_id, 'film_weld_added', null,
            jsonb_build_object('film_interval_id', new.film_interval_id, 'weld_id', new.weld_id),
            weld_hidden.current_user_id());
  else
    insert into weld_public.examination_changes (tenant_id, subject, record_id, change, before, after, changed_by)
    values (old.tenant_id, 'ndt_record', old.ndt_record_id, 'film_weld_removed',
            jsonb_build_object('film_interval_id', old.film_interval_id, 'weld_id', old.weld_id),
            null, weld_hidden.current_user_id());
  end if;
  return null;
end
$$;

reset role;

-- The owner attaches these (it may execute weld_rules' functions, by default privilege).

drop trigger if exists _900_examination_change on weld_public.ndt_records;
create trigger _900_examination_change after update on weld_public.ndt_records
  for each row execute function weld_private.tg__examination_updated('ndt_record');
drop trigger if exists _900_examination_change on weld_public.inspections;
create trigger _900_examination_change after update on weld_public.inspections
  for each row execute function weld_private.tg__examination_updated('inspection');
drop trigger if exists _900_examination_change on weld_public.ndt_record_welds;
create trigger _900_examination_change after insert or delete on weld_public.ndt_record_welds
  for each row execute function weld_private.tg__examination_weld_link('ndt_record', 'ndt_record_id');
drop trigger if exists _900_examination_change on weld_public.inspection_welds;
create trigger _900_examination_change after insert or delete on weld_public.inspection_welds
  for each row execute function weld_private.tg__examination_weld_link('inspection', 'inspection_id');
drop trigger if exists _900_examination_change on weld_public.film_intervals;
create trigger _900_examination_change after insert or update or delete on weld_public.film_intervals
  for each row execute function weld_private.tg_film_intervals__examination_change();
drop trigger if exists _900_examination_change on weld_public.film_interval_welds;
create trigger _900_examination_change after insert or delete on weld_public.film_interval_welds
  for each row execute function weld_private.tg_film_interval_welds__examination_change();

--------------------------------------------------------------------------------------------------
-- Sessions end when their user is disabled or changes role, however that happens (GraphQL, SQL,
-- weld-admin), and every revocation is announced.

alter table weld_private.sessions drop constraint if exists sessions_revoked_reason_check;
alter table weld_private.sessions add constraint sessions_revoked_reason_check
  check (revoked_reason in ('logout', 'reuse', 'user-disabled', 'role-changed'));

-- SECURITY DEFINER as the owner (BYPASSRLS): an admin may change a user but holds no right on
-- sessions, and weld-admin changes users as the owner with no tenant context, where weld_rules
-- would see no session at all. It touches only the sessions of the row being updated, which the
-- caller was allowed to update.
create or replace function weld_private.tg_users__revoke_sessions() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update weld_private.sessions s
     set revoked_at = now(),
         revoked_reason = case when old.active and not new.active then 'user-disabled'
                               else 'role-changed' end
   where s.tenant_id = new.tenant_id and s.user_id = new.id and s.revoked_at is null;
  return null;
end
$$;

drop trigger if exists _500_revoke_sessions on weld_public.users;
create trigger _500_revoke_sessions after update of active, role on weld_public.users
  for each row when ((old.active and not new.active) or old.role <> new.role)
  execute function weld_private.tg_users__revoke_sessions();

-- The trigger above revokes the sessions now; disabling needs no revocation of its own. (And the
-- user name compares as citext, as in login_begin.)
create or replace function weld_private.disable_user(tenant uuid, user_name public.citext) returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with account as (
    update weld_public.users u set active = false
     where u.tenant_id = tenant and u.user_name operator(public.=) disable_user.user_name
    returning u.id
  )
  select exists (select from account)
$$;

-- Setting a password finds the user by name case-insensitively too (citext's `=`, named for the
-- same reason as in login_begin: 000003 compared the names as text).
create or replace function weld_private.set_user_password(tenant uuid, user_name public.citext, password_hash text)
  returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
  select u.tenant_id, u.id, set_user_password.password_hash from weld_public.users u
   where u.tenant_id = tenant and u.user_name operator(public.=) set_user_password.user_name
  on conflict (tenant_id, user_id) do update set password_hash = excluded.password_hash, updated_at = now()
  returning true
$$;

-- Every revocation (logout, reuse, user disabled, role changed) is announced on the channel
-- weld_session_revoked, JSON {"tenantId", "sessionId", "userId"}, when its transaction commits:
-- servers listen and refuse the session's access tokens at once instead of when they expire.
-- SECURITY INVOKER: pg_notify needs no privilege.
create or replace function weld_private.tg_sessions__notify_revoked() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_notify('weld_session_revoked', json_build_object(
    'tenantId', new.tenant_id, 'sessionId', new.id, 'userId', new.user_id)::text);
  return null;
end
$$;

drop trigger if exists _900_notify_revoked on weld_private.sessions;
create trigger _900_notify_revoked after update of revoked_at on weld_private.sessions
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function weld_private.tg_sessions__notify_revoked();

-- What a server missed while it was not listening: the sessions revoked since a moment (the
-- lifetime of an access token ago), across all tenants. SECURITY DEFINER as the owner
-- (BYPASSRLS); granted to the authenticator only.
create or replace function weld_hidden.revoked_sessions(since timestamptz)
  returns table (tenant_id uuid, session_id uuid, revoked_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.tenant_id, s.id, s.revoked_at
    from weld_private.sessions s
   where s.revoked_at >= since
   order by s.revoked_at
$$;

--------------------------------------------------------------------------------------------------
-- Function privileges.
--
-- No function of the three schemas is executable by PUBLIC (extension functions aside, which
-- belong to their extension). A privilege can only be revoked by the role that granted it, here
-- each function's owner, so the revoke runs as that owner. weld_rules' functions created before
-- this migration get the owner's EXECUTE that newer ones get by default.
do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as signature, pg_catalog.pg_get_userbyid(p.proowner) as owner
      from pg_catalog.pg_proc p
      join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     where n.nspname in ('weld_public', 'weld_hidden', 'weld_private')
       and not exists (
         select from pg_catalog.pg_depend d
          where d.classid = 'pg_catalog.pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
  loop
    execute format('set local role %I', f.owner);
    execute format('revoke execute on function %s from public', f.signature);
    if f.owner = 'weld_rules' then
      execute format('grant execute on function %s to weld_owner', f.signature);
    end if;
  end loop;
  reset role;
end
$$;

-- Each function to exactly the roles that call it. The owner's functions:
--   current_tenant_id, current_user_id, request_role: request roles (policies, defaults) and
--     weld_rules (its functions); current_tenant_id also the authenticator (as granted before)
--   tenant_by_origin, applied_migration, purge_auth_bookkeeping, revoked_sessions: the server
--     itself, as weld_authenticator
--   everything in weld_private: the owner only (weld-admin, migrations, triggers)
--   touch and the other trigger functions: nobody; a trigger's function is not checked when it
--     fires, only when the trigger is created (by the owner)
revoke execute on function weld_hidden.touch() from weld_anonymous, weld_rules;
grant execute on function
  weld_hidden.purge_auth_bookkeeping(),
  weld_hidden.revoked_sessions(timestamptz)
  to weld_authenticator;

-- weld_rules' functions, granted as weld_rules (and executable by the owner, see above). The
-- authentication functions go to the authenticator only (the server calls them with
-- asAuthenticator()): granted to weld_anonymous, which every request role is a member of, any
-- request could mint a session.
--
-- change_weld_status goes to viewers and up (000002 meant inspectors, but its grant granted
-- nothing): the transition rules are data a DBA may change, and may name any role down to
-- viewer, so the function itself decides who may make a change, and refuses with WD003.
set role weld_rules;
grant execute on function
  weld_public.change_weld_status(uuid, weld_public.weld_status, text, integer, uuid)
  to weld_viewer;
revoke execute on function
  weld_hidden.login_begin(public.citext, text),
  weld_hidden.login_succeed(uuid, text, uuid, bytea, interval),
  weld_hidden.refresh_rotate(bytea, bytea, bytea, interval, interval),
  weld_hidden.logout(bytea)
  from weld_anonymous;
grant execute on function
  weld_hidden.login_begin(public.citext, text),
  weld_hidden.login_succeed(uuid, text, uuid, bytea, interval),
  weld_hidden.refresh_rotate(bytea, bytea, bytea, interval, interval),
  weld_hidden.logout(bytea),
  weld_hidden.tenant_signing_keys(),
  weld_hidden.add_signing_key(text, jsonb, jsonb, boolean),
  weld_hidden.tenant_csrf_key(bytea)
  to weld_authenticator;
reset role;

--------------------------------------------------------------------------------------------------
-- weld_rules keeps no CREATE right on any schema: a role that owns SECURITY DEFINER functions
-- must not be able to add more at run time. A future migration that creates functions as
-- weld_rules grants CREATE on the schema it needs just before its `set role weld_rules` block
-- and revokes it again right after `reset role`, as this one does.
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
