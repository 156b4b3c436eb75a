--! Previous: sha1:68e3d541070492faf1092c0ec8d4a01191b75ddc
--! Hash: sha1:6ac820554618c587e93afe79fbf6269eb79ccb3b
--! Message: Authentication: credentials, sessions, refresh tokens, throttling, keys

-- Authentication bookkeeping: password hashes, sessions and their rotating refresh tokens, login
-- throttling, and each tenant's signing and CSRF keys. All of it in weld_private, reached only
-- through the functions below, each of which works inside the caller's tenant (row security
-- applies to their owner, weld_rules, like to everyone else).
--
-- What stays in the server: hashing (Argon2id, node:crypto) and token cryptography (jose).

-- graphile-migrate re-runs current.sql on every save, so it starts from a clean slate.
drop table if exists
  weld_private.refresh_tokens, weld_private.sessions, weld_private.user_credentials,
  weld_private.login_throttle, weld_private.signing_keys, weld_private.tenant_secrets
  cascade;
drop function if exists weld_hidden.login_begin(public.citext, text);
drop function if exists weld_hidden.login_fail(public.citext, text);
drop function if exists weld_hidden.login_succeed(uuid, text, uuid, bytea, interval);
drop function if exists weld_hidden.refresh_rotate(bytea, bytea, bytea, interval, interval);
drop function if exists weld_hidden.logout(bytea);
drop function if exists weld_hidden.tenant_signing_keys();
drop function if exists weld_hidden.add_signing_key(text, jsonb, jsonb, boolean);
drop function if exists weld_hidden.tenant_csrf_key(bytea);
drop function if exists weld_private.create_user(uuid, public.citext, text, weld_public.user_role, text);
drop function if exists weld_private.set_user_password(uuid, public.citext, text);
drop function if exists weld_private.disable_user(uuid, public.citext);

--------------------------------------------------------------------------------------------------
-- Tables

create table weld_private.user_credentials (
  tenant_id     uuid not null,
  user_id       uuid not null,
  -- PHC string: $argon2id$v=19$m=...,t=...,p=...$salt$hash
  password_hash text not null check (password_hash like '$argon2id$%'),
  updated_at    timestamptz not null default now(),
  primary key (tenant_id, user_id),
  foreign key (tenant_id, user_id) references weld_public.users on delete cascade
);

-- A session is a refresh-token family: one login, and every token rotated from it.
create table weld_private.sessions (
  tenant_id      uuid not null,
  id             uuid not null default gen_random_uuid(),
  user_id        uuid not null,
  created_at     timestamptz not null default now(),
  refreshed_at   timestamptz,
  revoked_at     timestamptz,
  revoked_reason text check (revoked_reason in ('logout', 'reuse', 'user-disabled')),
  primary key (tenant_id, id),
  foreign key (tenant_id, user_id) references weld_public.users on delete cascade
);
create index sessions_user_idx on weld_private.sessions (tenant_id, user_id);

-- Refresh tokens, stored only as SHA-256 hashes. A used token records its successor; for a
-- few seconds (the grace window) the successor is also kept sealed with a key derived from the
-- used token itself, so a concurrent refresh with the same token gets the same successor,
-- and nobody without the old token can open it.
create table weld_private.refresh_tokens (
  tenant_id      uuid not null,
  token_hash     bytea not null check (octet_length(token_hash) = 32),
  session_id     uuid not null,
  issued_at      timestamptz not null default now(),
  expires_at     timestamptz not null,
  used_at        timestamptz,
  successor_hash bytea,
  successor_box  bytea,
  primary key (tenant_id, token_hash),
  foreign key (tenant_id, session_id) references weld_private.sessions on delete cascade
);
create index refresh_tokens_session_idx on weld_private.refresh_tokens (tenant_id, session_id);

-- Failed logins, per key: 'user:<name>' (growing delays) and 'addr:<address>' (a window).
create table weld_private.login_throttle (
  tenant_id       uuid not null references weld_public.tenants on delete cascade,
  throttle_key    text not null,
  failures        integer not null default 0,
  window_start    timestamptz not null default now(),
  last_failure_at timestamptz not null default now(),
  blocked_until   timestamptz,
  primary key (tenant_id, throttle_key)
);

-- Each tenant's ES256 signing keys (JWK). The newest unretired key signs; retired keys stay
-- published (JWKS) and trusted until the tokens they signed have expired.
create table weld_private.signing_keys (
  tenant_id   uuid not null references weld_public.tenants on delete cascade,
  kid         text not null,
  private_jwk jsonb not null,
  public_jwk  jsonb not null,
  created_at  timestamptz not null default now(),
  retired_at  timestamptz,
  primary key (tenant_id, kid)
);

-- The key of the tenant's signed double-submit CSRF tokens (HMAC-SHA-256).
create table weld_private.tenant_secrets (
  tenant_id  uuid not null references weld_public.tenants on delete cascade,
  csrf_key   bytea not null check (octet_length(csrf_key) = 32),
  created_at timestamptz not null default now(),
  primary key (tenant_id)
);

select weld_private.secure_tenant_table(t)
from unnest(array[
  'weld_private.user_credentials', 'weld_private.sessions', 'weld_private.refresh_tokens',
  'weld_private.login_throttle', 'weld_private.signing_keys', 'weld_private.tenant_secrets'
]::regclass[]) as t;

grant usage on schema weld_private to weld_rules;
grant create on schema weld_hidden to weld_rules;
grant select, insert, update, delete on
  weld_private.user_credentials, weld_private.sessions, weld_private.refresh_tokens,
  weld_private.login_throttle, weld_private.signing_keys, weld_private.tenant_secrets
  to weld_rules;
grant select on weld_public.users, weld_public.tenants to weld_rules;
grant execute on function weld_hidden.current_tenant_id() to weld_authenticator;

--------------------------------------------------------------------------------------------------
-- Login. The server calls, as weld_anonymous with the tenant set:
--   login_begin(name, address)  -> throttled? else the user and its hash (null when unknown,
--                                  so the server hashes a dummy and answers the same)
--   login_fail(name, address)   -> counts the failure
--   login_succeed(user, address, session, refresh hash, ttl) -> the session and its first token
--                                  (the server makes the session id: the refresh token carries it)
--
-- Throttling (documented in the README; DBAs may change the numbers here):
--   per user name: from the 5th consecutive failure, a delay of 1, 2, 4 ... seconds, capped at
--     60 s, so an attacker can slow a user's logins but never lock them out for long; a
--     success, or an hour without failures, clears it.
--   per address: 30 failures within 10 minutes block that address until the 10 minutes end.

set role weld_rules;

create function weld_hidden.login_begin(user_name public.citext, address text)
  returns table (retry_after integer, user_id uuid, active boolean, password_hash text)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  with blocked as (
    select max(ceil(extract(epoch from t.blocked_until - now())))::integer as seconds
      from weld_private.login_throttle t
     where t.tenant_id = weld_hidden.current_tenant_id()
       and t.throttle_key in ('user:' || lower(login_begin.user_name), 'addr:' || address)
       and t.blocked_until > now()
  )
  select b.seconds, u.id, u.active, c.password_hash
    from blocked b
    left join weld_public.users u
      on b.seconds is null and u.tenant_id = weld_hidden.current_tenant_id()
     and u.user_name = login_begin.user_name
    left join weld_private.user_credentials c on c.tenant_id = u.tenant_id and c.user_id = u.id
$$;

create function weld_hidden.login_fail(user_name public.citext, address text) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_private.login_throttle as t (tenant_id, throttle_key, failures)
  values (weld_hidden.current_tenant_id(), 'user:' || lower(login_fail.user_name), 1),
         (weld_hidden.current_tenant_id(), 'addr:' || address, 1)
  on conflict (tenant_id, throttle_key) do update
    set failures = case
          when t.throttle_key like 'user:%' and t.last_failure_at > now() - interval '1 hour' then t.failures + 1
          when t.throttle_key like 'addr:%' and t.window_start > now() - interval '10 minutes' then t.failures + 1
          else 1 end,
        window_start = case
          when t.throttle_key like 'addr:%' and t.window_start <= now() - interval '10 minutes' then now()
          else t.window_start end,
        last_failure_at = now();
  update weld_private.login_throttle t
     set blocked_until = case
           when t.throttle_key like 'user:%' and t.failures >= 5
             then now() + least(power(2, t.failures - 5), 60) * interval '1 second'
           when t.throttle_key like 'addr:%' and t.failures >= 30
             then t.window_start + interval '10 minutes'
         end
   where t.tenant_id = weld_hidden.current_tenant_id()
     and t.throttle_key in ('user:' || lower(login_fail.user_name), 'addr:' || address);
$$;

create function weld_hidden.login_succeed(
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
  delete from weld_private.login_throttle t
   where t.tenant_id = tenant and t.throttle_key = 'user:' || lower(name);
  insert into weld_private.sessions (tenant_id, id, user_id)
    values (tenant, login_succeed.session_id, login_succeed.user_id);
  insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at)
    values (tenant, refresh_hash, login_succeed.session_id, now() + refresh_ttl);
end
$$;

--------------------------------------------------------------------------------------------------
-- Refresh: rotate a refresh token, with reuse detection (RFC 9700 4.14.2).
--
-- Outcomes (the server answers 200 for the first two, 401 for the rest):
--   rotated   the token was live: it is now used, and new_hash is its successor
--   replayed  it was used within the grace window and its successor is still unused: the same
--             successor again (sealed in successor_box), so two concurrent refreshes agree
--   reused    it was used before: the whole family is revoked. This is a normal return, not an
--             error, so the revocation commits although the request fails.
--   revoked   the family was revoked (logout, reuse, user disabled)
--   expired   past its expiry
--   unknown   never issued (or not this tenant's)
-- The row lock makes concurrent refreshes of one token take turns.

create function weld_hidden.refresh_rotate(
  old_hash bytea, new_hash bytea, new_box bytea, grace interval, ttl interval
) returns table (outcome text, session_id uuid, user_id uuid, role weld_public.user_role, successor_box bytea)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  token weld_private.refresh_tokens;
  session weld_private.sessions;
  account weld_public.users;
begin
  select * into token from weld_private.refresh_tokens r
   where r.tenant_id = tenant and r.token_hash = old_hash
   for update;
  if not found then
    return query select 'unknown', null::uuid, null::uuid, null::weld_public.user_role, null::bytea;
    return;
  end if;
  select * into session from weld_private.sessions s
   where s.tenant_id = tenant and s.id = token.session_id
   for update;
  select * into account from weld_public.users u where u.tenant_id = tenant and u.id = session.user_id;

  if session.revoked_at is not null then
    return query select 'revoked', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;
  if not account.active then
    update weld_private.sessions s set revoked_at = now(), revoked_reason = 'user-disabled'
     where s.tenant_id = tenant and s.id = session.id;
    return query select 'revoked', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;

  if token.used_at is not null then
    if token.used_at > now() - grace and exists (
      select from weld_private.refresh_tokens n
       where n.tenant_id = tenant and n.token_hash = token.successor_hash and n.used_at is null
    ) then
      return query select 'replayed', session.id, session.user_id, account.role, token.successor_box;
      return;
    end if;
    update weld_private.sessions s set revoked_at = now(), revoked_reason = 'reuse'
     where s.tenant_id = tenant and s.id = session.id;
    return query select 'reused', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;

  if token.expires_at <= now() then
    return query select 'expired', session.id, session.user_id, account.role, null::bytea;
    return;
  end if;

  update weld_private.refresh_tokens r
     set used_at = now(), successor_hash = new_hash, successor_box = new_box
   where r.tenant_id = tenant and r.token_hash = old_hash;
  insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at)
    values (tenant, new_hash, session.id, now() + ttl);
  update weld_private.sessions s set refreshed_at = now() where s.tenant_id = tenant and s.id = session.id;
  -- Sealed successors are only needed during the grace window.
  update weld_private.refresh_tokens r set successor_box = null
   where r.tenant_id = tenant and r.session_id = session.id
     and r.successor_box is not null and r.used_at < now() - grace;
  return query select 'rotated', session.id, session.user_id, account.role, null::bytea;
end
$$;

-- Logout: revoke the family of a refresh token. True when there was a live family to revoke.
create function weld_hidden.logout(token_hash bytea) returns boolean
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  update weld_private.sessions s set revoked_at = now(), revoked_reason = 'logout'
    from weld_private.refresh_tokens r
   where r.tenant_id = weld_hidden.current_tenant_id() and r.token_hash = logout.token_hash
     and s.tenant_id = r.tenant_id and s.id = r.session_id and s.revoked_at is null
  returning true
$$;

--------------------------------------------------------------------------------------------------
-- Keys, for the server itself (granted to weld_authenticator only, never to a request role).

create function weld_hidden.tenant_signing_keys()
  returns table (kid text, private_jwk jsonb, public_jwk jsonb, created_at timestamptz, retired_at timestamptz)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.kid, k.private_jwk, k.public_jwk, k.created_at, k.retired_at
    from weld_private.signing_keys k
   where k.tenant_id = weld_hidden.current_tenant_id()
   order by k.created_at desc
$$;

-- Adds a signing key. rotate = false adds it only if the tenant has no active key (first use;
-- safe when two instances race); rotate = true retires the active key. Keys retired over a day
-- ago (far longer than any access token lives) are deleted.
create function weld_hidden.add_signing_key(kid text, private_jwk jsonb, public_jwk jsonb, rotate boolean)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
begin
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('weld-signing-keys:' || tenant));
  if not rotate and exists (
    select from weld_private.signing_keys k where k.tenant_id = tenant and k.retired_at is null
  ) then
    return;
  end if;
  update weld_private.signing_keys k set retired_at = now()
   where k.tenant_id = tenant and k.retired_at is null;
  insert into weld_private.signing_keys (tenant_id, kid, private_jwk, public_jwk)
    values (tenant, add_signing_key.kid, add_signing_key.private_jwk, add_signing_key.public_jwk);
  delete from weld_private.signing_keys k
   where k.tenant_id = tenant and k.retired_at < now() - interval '1 day';
end
$$;

-- The tenant's CSRF key; the first caller's candidate (32 random bytes) becomes it.
create function weld_hidden.tenant_csrf_key(candidate bytea) returns bytea
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  secret bytea;
begin
  insert into weld_private.tenant_secrets (tenant_id, csrf_key)
    values (tenant, candidate)
    on conflict do nothing;
  select s.csrf_key into secret from weld_private.tenant_secrets s where s.tenant_id = tenant;
  return secret;
end
$$;

reset role;

grant execute on function
  weld_hidden.login_begin(public.citext, text),
  weld_hidden.login_fail(public.citext, text),
  weld_hidden.login_succeed(uuid, text, uuid, bytea, interval),
  weld_hidden.refresh_rotate(bytea, bytea, bytea, interval, interval),
  weld_hidden.logout(bytea)
  to weld_anonymous;
grant execute on function
  weld_hidden.tenant_signing_keys(),
  weld_hidden.add_signing_key(text, jsonb, jsonb, boolean),
  weld_hidden.tenant_csrf_key(bytea)
  to weld_authenticator;

--------------------------------------------------------------------------------------------------
-- User administration (weld-admin user ..., as the owner).

create function weld_private.create_user(
  tenant uuid, user_name public.citext, display_name text, role weld_public.user_role, password_hash text
) returns weld_public.users
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  account weld_public.users;
begin
  insert into weld_public.users (tenant_id, user_name, display_name, role)
    values (tenant, create_user.user_name, create_user.display_name, create_user.role)
    returning * into account;
  insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
    values (tenant, account.id, create_user.password_hash);
  return account;
end
$$;

create function weld_private.set_user_password(tenant uuid, user_name public.citext, password_hash text)
  returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
  select u.tenant_id, u.id, set_user_password.password_hash from weld_public.users u
   where u.tenant_id = tenant and u.user_name = set_user_password.user_name
  on conflict (tenant_id, user_id) do update set password_hash = excluded.password_hash, updated_at = now()
  returning true
$$;

-- Disabling a user also revokes every session it has.
create function weld_private.disable_user(tenant uuid, user_name public.citext) returns boolean
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with account as (
    update weld_public.users u set active = false
     where u.tenant_id = tenant and u.user_name = disable_user.user_name
    returning u.tenant_id, u.id
  ), revoked as (
    update weld_private.sessions s set revoked_at = now(), revoked_reason = 'user-disabled'
      from account a where s.tenant_id = a.tenant_id and s.user_id = a.id and s.revoked_at is null
  )
  select exists (select from account)
$$;
