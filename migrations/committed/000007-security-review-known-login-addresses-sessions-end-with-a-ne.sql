--! Previous: sha1:7b46654948b1238303e20dfcb5e022d6378fdefe
--! Hash: sha1:684d08fce43610228af8aa256a80dd823b119817
--! Message: Security review: known login addresses, sessions end with a new password, deleted sessions announced, revocation time, groupBy columns

-- Security review: a user name can no longer be locked out for good, a new password ends the
-- sessions of the old one, deleted sessions and late commits no longer slip past the revocation
-- list, and GraphQL no longer groups by columns that are (nearly) unique per row.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

-- weld_rules creates functions below; it holds CREATE on these schemas only until the end of this
-- migration (see the last section).
grant create on schema weld_hidden, weld_private to weld_rules;

--------------------------------------------------------------------------------------------------
-- Login throttling that cannot lock a user out.
--
-- Before: every attempt at a user name counted against 'user:<name>', whatever its address. An
-- attacker who knew the name kept the user blocked for good: 5 wrong passwords, then one a minute
-- from one address, kept the delay at 60 s for everybody, the user included, while the address
-- stayed far below its own limit (30 in 10 minutes).
--
-- Now the addresses a user has signed in from (successfully, within 30 days) are known addresses
-- of that user. An attempt from a known address skips the user-wide key: it is counted and
-- delayed on a key of its own, 'user-addr:<name>:<address>', with the same growing delays (from
-- the 5th consecutive failure 1, 2, 4 ... s, capped at 60 s; cleared by a success from that
-- address or an hour without failures). Every other attempt (unknown addresses, unknown user
-- names) uses 'user:<name>' as before. So an attacker's failures from elsewhere slow only the
-- unknown addresses, and the user signs in from home, the office or their phone as usual; an
-- attacker at a known address (one shared with the user) gets no more guesses than before: five,
-- then one per growing delay, on its own key.
--
-- The per-address limit (30 failures within 10 minutes) applies to every attempt, known address
-- or not, and is checked first; a blocked key still answers retry_after and counts nothing. Keys
-- are locked in a fixed order: the address, then the one user key of the attempt (login_succeed
-- too), and the known addresses last (only login_succeed writes them, after its keys).
--
-- A success from a known address clears that address's key only: the user-wide key, where the
-- failures from elsewhere are, stays, so the user's own logins do not hand an attacker five fresh
-- guesses. A success from an unknown address clears the user-wide key (that attempt counted
-- there) and makes the address known.
--
-- The address is the one the server determined (the socket's, or the entry a trusted proxy
-- added), compared as text.

drop table if exists weld_private.known_addresses cascade;
create table weld_private.known_addresses (
  tenant_id       uuid not null,
  user_id         uuid not null,
  address         text not null,
  last_success_at timestamptz not null default now(),
  primary key (tenant_id, user_id, address),
  foreign key (tenant_id, user_id) references weld_public.users on delete cascade
);
comment on table weld_private.known_addresses is
  'Addresses each user signed in from, for login throttling; forgotten 30 days after the last success.';
select weld_private.secure_tenant_table('weld_private.known_addresses');
grant select, insert, update on weld_private.known_addresses to weld_rules;

set role weld_rules;

-- Has this user signed in successfully from this address within 30 days? (False for no user.)
create or replace function weld_private.login_address_known(tenant uuid, user_id uuid, address text)
  returns boolean
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select exists (
    select from weld_private.known_addresses k
     where k.tenant_id = tenant and k.user_id = login_address_known.user_id
       and k.address = login_address_known.address
       and k.last_success_at > now() - interval '30 days')
$$;

create or replace function weld_hidden.login_begin(user_name public.citext, address text)
  returns table (retry_after integer, user_id uuid, active boolean, password_hash text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  addr_key text := 'addr:' || login_begin.address;
  user_key text;
  account_id uuid;
  account_active boolean;
  account_hash text;
  blocked_for integer;
begin
  -- The user first (null when unknown): its known addresses decide which user key counts. User
  -- names compare as citext, case-insensitively: its `=` lives in schema public, which the pinned
  -- search_path leaves out, so it is named (a plain `=` would compare them as text).
  select u.id, u.active, c.password_hash into account_id, account_active, account_hash
    from weld_public.users u
    left join weld_private.user_credentials c on c.tenant_id = u.tenant_id and c.user_id = u.id
   where u.tenant_id = tenant and u.user_name operator(public.=) login_begin.user_name;
  if weld_private.login_address_known(tenant, account_id, login_begin.address) then
    user_key := 'user-addr:' || lower(login_begin.user_name) || ':' || login_begin.address;
  else
    user_key := 'user:' || lower(login_begin.user_name);
  end if;

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

  -- The user key (user-wide, or this known address's): the count starts over after an hour
  -- without failures.
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

  return query select null::integer, account_id, account_active, account_hash;
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
  -- Address first, then the user key the attempt counted on: the order login_begin locks them in.
  perform weld_private.login_take_back(tenant, login_succeed.address);
  if weld_private.login_address_known(tenant, login_succeed.user_id, login_succeed.address) then
    delete from weld_private.login_throttle t
     where t.tenant_id = tenant
       and t.throttle_key = 'user-addr:' || lower(name) || ':' || login_succeed.address;
  else
    delete from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = 'user:' || lower(name);
  end if;
  insert into weld_private.known_addresses as k (tenant_id, user_id, address, last_success_at)
    values (tenant, login_succeed.user_id, login_succeed.address, now())
    on conflict on constraint known_addresses_pkey do update set last_success_at = now();
  insert into weld_private.sessions (tenant_id, id, user_id)
    values (tenant, login_succeed.session_id, login_succeed.user_id);
  insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at)
    values (tenant, refresh_hash, login_succeed.session_id, now() + refresh_ttl);
end
$$;

reset role;

--------------------------------------------------------------------------------------------------
-- Housekeeping: as in 000006, and the user keys of known addresses (an hour after their last
-- failure, like user names) and known addresses 30 days after their last success. One more count
-- in the row it returns (deleted_known_addresses); the server logs the row as it is.
drop function if exists weld_hidden.purge_auth_bookkeeping();
create function weld_hidden.purge_auth_bookkeeping(
  out deleted_throttle_rows integer,
  out deleted_refresh_tokens integer,
  out deleted_sessions integer,
  out deleted_known_addresses integer
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
              when o.throttle_key like 'user:%' or o.throttle_key like 'user-addr:%'
                then o.last_failure_at <= now() - interval '1 hour'
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

  delete from weld_private.known_addresses k
   where (k.tenant_id, k.user_id, k.address) in (
     select o.tenant_id, o.user_id, o.address from weld_private.known_addresses o
      where o.last_success_at <= now() - interval '30 days'
        for update skip locked);
  get diagnostics deleted_known_addresses = row_count;
end
$$;
grant execute on function weld_hidden.purge_auth_bookkeeping() to weld_authenticator;

--------------------------------------------------------------------------------------------------
-- Sessions: a new password ends them, deletions are announced, and a revocation is stamped with
-- the moment it was made.

alter table weld_private.sessions drop constraint if exists sessions_revoked_reason_check;
alter table weld_private.sessions add constraint sessions_revoked_reason_check
  check (revoked_reason in ('logout', 'reuse', 'user-disabled', 'role-changed', 'password-changed'));

-- A new password (weld-admin user set-password, or any update of the hash) revokes the user's live
-- sessions: whoever held the old password may hold a refresh token too. SECURITY DEFINER as the
-- owner (BYPASSRLS), like tg_users__revoke_sessions: weld-admin sets passwords as the owner with
-- no tenant context. It touches only the sessions of the row being updated.
create or replace function weld_private.tg_user_credentials__revoke_sessions() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  update weld_private.sessions s
     set revoked_at = now(), revoked_reason = 'password-changed'
   where s.tenant_id = new.tenant_id and s.user_id = new.user_id and s.revoked_at is null;
  return null;
end
$$;

drop trigger if exists _500_revoke_sessions on weld_private.user_credentials;
create trigger _500_revoke_sessions after update of password_hash on weld_private.user_credentials
  for each row when (old.password_hash is distinct from new.password_hash)
  execute function weld_private.tg_user_credentials__revoke_sessions();

-- A session deleted while still live (its user deleted, a DBA's delete, or the purge of a session
-- nobody can refresh any more) is announced like a revocation, on the same channel with the same
-- JSON: its access tokens may still be in use. The function serves both triggers now: the new row
-- of an update, the old row of a delete. (A deleted session is not listed by revoked_sessions: a
-- server that was not listening learns of it only when the access tokens expire.)
create or replace function weld_private.tg_sessions__notify_revoked() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  session record;
begin
  if tg_op = 'DELETE' then
    session := old;
  else
    session := new;
  end if;
  perform pg_notify('weld_session_revoked', json_build_object(
    'tenantId', session.tenant_id, 'sessionId', session.id, 'userId', session.user_id)::text);
  return null;
end
$$;

drop trigger if exists _900_notify_deleted on weld_private.sessions;
create trigger _900_notify_deleted after delete on weld_private.sessions
  for each row when (old.revoked_at is null)
  execute function weld_private.tg_sessions__notify_revoked();

-- revoked_at is the moment of the revocation, not the start of its transaction. Every path set it
-- with now(), the transaction's start: a transaction that began more than a token lifetime before
-- it committed recorded a revocation that revoked_sessions(since) no longer listed to a server
-- reloading after a reconnect. Whatever path revokes (logout, reuse, user disabled, role changed,
-- password changed, a DBA), a value from the transaction's start on becomes clock_timestamp(); an
-- earlier value (a DBA backdating a revocation on purpose) is kept.
create or replace function weld_private.tg_sessions__stamp_revocation() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if new.revoked_at >= now() then
    new.revoked_at := greatest(new.revoked_at, clock_timestamp());
  end if;
  return new;
end
$$;

drop trigger if exists _100_stamp_revocation on weld_private.sessions;
create trigger _100_stamp_revocation before update of revoked_at on weld_private.sessions
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function weld_private.tg_sessions__stamp_revocation();

--------------------------------------------------------------------------------------------------
-- GraphQL: groupedAggregates only by columns reports group by.
--
-- @graphile/pg-aggregates offers groupBy for every column that can be ordered (the indexed ones)
-- unless it alone is unique, and ids here are unique only with tenant_id. So groupBy offered
-- ROW_ID, WELD_NUMBER, UPDATED_AT (and UPDATED_AT_TRUNCATED_TO_HOUR/_DAY), REPORT_NUMBER: one group
-- per row, a response of megabytes that the cost budget charges as 500 groups. The behavior
-- `-attribute:groupBy` removes a column (with its derivatives) from the enums; ordering and
-- filtering by it stay. Columns that are unique or nearly so get it, including those not indexed
-- today (created_at, notes), so that a future index cannot bring them back. What stays:
--   WeldGroupBy       ISO_ID, WELDER_ID, WPS_ID, STATUS
--   NdtRecordGroupBy  METHOD, EXAMINED_ON
--   InspectionGroupBy INSPECTED_ON
-- (A column becomes groupable only with ordering: `@behavior +orderBy`, at the price of a sort
-- without an index. None is added here.)
comment on column weld_public.welds.id is '@behavior -attribute:groupBy';
comment on column weld_public.welds.weld_number is '@behavior -attribute:groupBy';
comment on column weld_public.welds.created_at is '@behavior -attribute:groupBy';
comment on column weld_public.welds.updated_at is '@behavior -attribute:groupBy';
comment on column weld_public.ndt_records.id is '@behavior -attribute:groupBy';
comment on column weld_public.ndt_records.report_number is '@behavior -attribute:groupBy';
comment on column weld_public.ndt_records.notes is '@behavior -attribute:groupBy';
comment on column weld_public.ndt_records.created_at is '@behavior -attribute:groupBy';
comment on column weld_public.ndt_records.updated_at is '@behavior -attribute:groupBy';
comment on column weld_public.inspections.id is '@behavior -attribute:groupBy';
comment on column weld_public.inspections.notes is '@behavior -attribute:groupBy';
comment on column weld_public.inspections.created_at is '@behavior -attribute:groupBy';
comment on column weld_public.inspections.updated_at is '@behavior -attribute:groupBy';

--------------------------------------------------------------------------------------------------
-- weld_rules keeps no CREATE right on any schema (see 000006).
revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
