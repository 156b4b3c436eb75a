--! Previous: sha1:8fe5edeb4cc270b7e5a116d80be2697abd8b8bcd
--! Hash: sha1:d53483d15a4dff0be88d08530395b2d47a925cec
--! Message: OAuth2 clients: registration, client credentials, revocation

-- F18, OAuth2 clients (Wave 2). A client is registered by an admin (REST /oauth-clients) or
-- weld-admin, with scopes; it gets a token at POST /oauth/token with its id and secret (RFC 6749
-- section 4.4, client credentials). Each client has a user of its own (named by its client id, in
-- the role its scopes need), so its sessions, its audit trail and its deactivation are a
-- person's; the scopes are held by the database (migration 000045).

-- The clients. Secrets are 256-bit random values, stored as their SHA-256 only (a hash of that
-- much randomness cannot be searched back; a password hash's slowness would only cost every token
-- request). The previous secret keeps working until previous_secret_until (rotation overlap).
create table weld_private.oauth_clients (
  tenant_id             uuid not null,
  client_id             text not null constraint oauth_clients_client_id_format
                          check (client_id ~ '^wdc_[A-Za-z0-9_-]{22}$'),
  user_id               uuid not null,
  name                  text not null check (char_length(btrim(name)) between 1 and 100),
  scopes                text[] not null constraint oauth_clients_scopes_known check (
                          cardinality(scopes) between 1 and 8
                          and scopes <@ '{welds:read,welds:write,ndt:write,packages:write,imports:write,events:read,webhooks:write,reports:read}'::text[]),
  secret_hash           bytea not null check (octet_length(secret_hash) = 32),
  previous_secret_hash  bytea check (octet_length(previous_secret_hash) = 32),
  previous_secret_until timestamptz,
  created_at            timestamptz not null default now(),
  created_by            uuid,
  rotated_at            timestamptz,
  last_used_at          timestamptz,
  primary key (tenant_id, client_id),
  constraint oauth_clients_user_key unique (tenant_id, user_id),
  foreign key (tenant_id, user_id) references weld_public.users on delete cascade
);
comment on table weld_private.oauth_clients is
  'OAuth2 clients (client credentials): their scopes and the SHA-256 of their secrets.';
select weld_private.secure_tenant_table('weld_private.oauth_clients');
-- Written by the rules' functions only (weld_rules, as the caller's tenant); a client's user is
-- made, and deactivated, by them as well.
grant select, insert, update, delete on weld_private.oauth_clients to weld_rules;
grant insert (tenant_id, user_name, display_name, role), update (active)
  on weld_public.users to weld_rules;

-- One throttle for passwords and client secrets.
--! Included functions/weld_private.throttle_attempt.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_private to weld_rules;
set role weld_rules;

-- Counts one attempt to sign in (a password, or an OAuth2 client's secret) against the address
-- it came from and an account key ('user:<name>', 'user-addr:<name>:<address>' for a known
-- address, 'client:<client_id>'); null when it may go on, else the seconds until it may. The
-- caller takes the counts back when the attempt succeeds (login_succeed, oauth_token_issued).
-- Addresses: 30 failures in a 10-minute window block it for the rest of the window. Accounts:
-- from the 5th failure in an hour, blocked for 1, 2, 4, ... up to 60 seconds; the count starts
-- over after an hour without failures, so nobody can lock an account out for good.
create or replace function weld_private.throttle_attempt(tenant uuid, address text, account_key text)
  returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  addr_key text := 'addr:' || throttle_attempt.address;
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
    return blocked_for;
  end if;

  -- The account key (a user's, user-wide or this known address's; a client's): the count starts over after an hour
  -- without failures.
  insert into weld_private.login_throttle as t (tenant_id, throttle_key, failures, window_start, last_failure_at)
  values (tenant, account_key, 1, now(), now())
  on conflict on constraint login_throttle_pkey do update
    set (failures, last_failure_at, blocked_until) = (
          select f.failures, now(),
                 case when f.failures >= 5
                      then now() + least(power(2, f.failures - 5), 60) * interval '1 second' end
            from (select case when t.last_failure_at > now() - interval '1 hour'
                              then t.failures + 1 else 1 end) as f (failures))
    where not coalesce(t.blocked_until > now(), false);
  if not found then
    perform weld_private.login_take_back(tenant, throttle_attempt.address);
    select greatest(ceil(extract(epoch from t.blocked_until - now())), 1)::integer into blocked_for
      from weld_private.login_throttle t
     where t.tenant_id = tenant and t.throttle_key = account_key;
    return blocked_for;
  end if;

  return null;
end
$$;

reset role;
revoke create on schema weld_private from weld_rules;
--! EndIncluded functions/weld_private.throttle_attempt.sql
--! Included functions/weld_hidden.login_begin.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.login_begin(user_name public.citext, address text)
  returns table (retry_after integer, user_id uuid, active boolean, password_hash text)
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
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

  -- The attempt counts against the address and the user key (an OAuth2 client's secret is
  -- counted the same way: weld_hidden.oauth_token_begin).
  blocked_for := weld_private.throttle_attempt(tenant, login_begin.address, user_key);
  if blocked_for is not null then
    return query select blocked_for, null::uuid, null::boolean, null::text;
    return;
  end if;

  return query select null::integer, account_id, account_active, account_hash;
end
$$;

grant execute on function weld_hidden.login_begin(public.citext, text) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.login_begin.sql
--! Included functions/weld_hidden.purge_auth_bookkeeping.sql
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
--
-- Housekeeping: as in 000006, and the user keys of known addresses (an hour after their last
-- failure, like user names) and known addresses 30 days after their last success. One more count
-- in the row it returns (deleted_known_addresses); the server logs the row as it is. OAuth2
-- clients' keys (F18) go as user names do.
create or replace function weld_hidden.purge_auth_bookkeeping(
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
                   or o.throttle_key like 'client:%'
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
--! EndIncluded functions/weld_hidden.purge_auth_bookkeeping.sql

--! Included functions/weld_private.oauth_scopes_role.sql
-- The role an OAuth2 client acts as (F18): the least role that can do every area its scopes name.
-- webhooks:write is an admin's; welds:write, packages:write and imports:write an engineer's;
-- ndt:write an inspector's; reading a viewer's. The scopes then narrow what that role may do.
create or replace function weld_private.oauth_scopes_role(scopes text[]) returns weld_public.user_role
  language sql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
  select case
           when 'webhooks:write' = any (scopes) then 'admin'
           when scopes && '{welds:write,packages:write,imports:write}'::text[] then 'engineer'
           when 'ndt:write' = any (scopes) then 'inspector'
           else 'viewer'
         end::weld_public.user_role
$$;

grant execute on function weld_private.oauth_scopes_role(text[]) to weld_rules;
--! EndIncluded functions/weld_private.oauth_scopes_role.sql
--! Included functions/weld_private.oauth_client_json.sql
-- An OAuth2 client as the API shows it: never its secrets, which are stored hashed only.
create or replace function weld_private.oauth_client_json(client weld_private.oauth_clients)
  returns jsonb
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select jsonb_build_object(
           'clientId', client.client_id,
           'name', client.name,
           'scopes', to_jsonb(client.scopes),
           'role', u.role,
           'active', u.active,
           'createdAt', client.created_at,
           'rotatedAt', client.rotated_at,
           'previousSecretUntil',
             case when client.previous_secret_until > now() then client.previous_secret_until end,
           'lastUsedAt', client.last_used_at)
    from weld_public.users u
   where u.tenant_id = client.tenant_id and u.id = client.user_id
$$;

grant execute on function weld_private.oauth_client_json(weld_private.oauth_clients) to weld_rules;
--! EndIncluded functions/weld_private.oauth_client_json.sql
--! Included functions/weld_private.require_person.sql
-- OAuth2 clients are managed by people (an admin's session, or weld-admin): a request carrying
-- scopes (a client's token) is refused, whatever its role and scopes, so that no client can give
-- itself or another more than it was given.
create or replace function weld_private.require_person() returns void
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(current_setting('jwt.claims.scope', true), '') <> '' then
    raise exception 'an OAuth2 client may not manage OAuth2 clients' using errcode = 'WD003';
  end if;
end
$$;

grant execute on function weld_private.require_person() to weld_rules;
--! EndIncluded functions/weld_private.require_person.sql
--! Included functions/weld_hidden.oauth_client_add.sql
-- Registers an OAuth2 client of the caller's tenant (an admin over REST, weld-admin as the
-- owner): a user of its own, named by the client id and acting in the role its scopes need
-- (weld_private.oauth_scopes_role), so that sessions, audit trails and deactivation work as for
-- a person; and the client, its scopes and its secret's SHA-256 (the secret itself is shown once,
-- by the caller, and kept nowhere).
--
-- SECURITY DEFINER as weld_rules (row security binds it to the caller's tenant): an admin may
-- not write users or weld_private itself.
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_client_add(
  client_id text, name text, scopes text[], secret_hash bytea
) returns jsonb
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  account weld_public.users;
  client weld_private.oauth_clients;
begin
  perform weld_private.require_person();
  insert into weld_public.users (tenant_id, user_name, display_name, role)
    values (tenant, oauth_client_add.client_id, oauth_client_add.name,
            weld_private.oauth_scopes_role(oauth_client_add.scopes))
    returning * into account;
  insert into weld_private.oauth_clients as c
         (tenant_id, client_id, user_id, name, scopes, secret_hash, created_by)
    values (tenant, oauth_client_add.client_id, account.id, oauth_client_add.name,
            oauth_client_add.scopes, oauth_client_add.secret_hash, weld_hidden.current_user_id())
    returning * into client;
  return weld_private.oauth_client_json(client);
end
$$;

grant execute on function weld_hidden.oauth_client_add(text, text, text[], bytea) to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_client_add.sql
--! Included functions/weld_hidden.oauth_clients_list.sql
-- The caller's tenant's OAuth2 clients in client id order, `max` of them after the client id
-- `after` (a page; admins, see oauth_client_add).
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_clients_list(after text, max integer) returns setof jsonb
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.require_person();
  return query
    select weld_private.oauth_client_json(c)
      from weld_private.oauth_clients c
     where c.tenant_id = weld_hidden.current_tenant_id() and c.client_id > coalesce(after, '')
     order by c.client_id
     limit max;
end
$$;

grant execute on function weld_hidden.oauth_clients_list(text, integer) to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_clients_list.sql
--! Included functions/weld_hidden.oauth_client_rotate.sql
-- A new secret for an OAuth2 client (its SHA-256; the caller shows the secret once). The one it
-- replaces keeps working for `overlap` (0 to 7 days), so an integration can change over without a
-- failed call; a rotation within an overlap ends the older secret at once.
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_client_rotate(
  client_id text, secret_hash bytea, overlap interval
) returns jsonb
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  client weld_private.oauth_clients;
begin
  perform weld_private.require_person();
  if overlap < interval '0' or overlap > interval '7 days' then
    raise exception 'the overlap is from 0 to 7 days, not %', overlap using errcode = 'WD007',
      detail = json_build_object('pointer', '/overlapHours')::text;
  end if;
  update weld_private.oauth_clients c
     set previous_secret_hash = c.secret_hash,
         previous_secret_until = now() + overlap,
         secret_hash = oauth_client_rotate.secret_hash,
         rotated_at = now()
   where c.tenant_id = weld_hidden.current_tenant_id()
     and c.client_id = oauth_client_rotate.client_id
  returning * into client;
  if not found then
    raise exception 'oauth client % not found', client_id using errcode = 'WD001';
  end if;
  return weld_private.oauth_client_json(client);
end
$$;

grant execute on function weld_hidden.oauth_client_rotate(text, bytea, interval) to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_client_rotate.sql
--! Included functions/weld_hidden.oauth_client_remove.sql
-- Removes an OAuth2 client: its secrets go, and its user is deactivated (it stays, named in the
-- audit trails of what the client did), which ends its sessions and so its tokens at once
-- (weld_private.tg_users__revoke_sessions), as for a person. True when there was one.
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_client_remove(client_id text) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  account uuid;
begin
  perform weld_private.require_person();
  delete from weld_private.oauth_clients c
   where c.tenant_id = tenant and c.client_id = oauth_client_remove.client_id
  returning c.user_id into account;
  if not found then
    return false;
  end if;
  update weld_public.users u set active = false where u.tenant_id = tenant and u.id = account;
  return true;
end
$$;

grant execute on function weld_hidden.oauth_client_remove(text) to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_client_remove.sql
--! Included functions/weld_hidden.oauth_token_begin.sql
-- POST /oauth/token, client_credentials (F18), step 1: counts the attempt against the address and
-- the client id as a login counts a password (weld_private.throttle_attempt) and returns what the
-- server checks the secret against: the secret's SHA-256, and the one before it while its overlap
-- lasts. An unknown client id gives no row but the same work. Step 2 is oauth_token_issued.
-- SECURITY DEFINER as weld_rules; granted to the authenticator only, which calls it inside the
-- tenant of the request.
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_token_begin(client_id text, address text)
  returns table (
    retry_after integer, user_id uuid, active boolean, role weld_public.user_role,
    scopes text[], secret_hash bytea, previous_secret_hash bytea
  )
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  blocked_for integer;
begin
  blocked_for := weld_private.throttle_attempt(tenant, oauth_token_begin.address,
                                               'client:' || oauth_token_begin.client_id);
  if blocked_for is not null then
    return query select blocked_for, null::uuid, null::boolean, null::weld_public.user_role,
                        null::text[], null::bytea, null::bytea;
    return;
  end if;
  return query
    select null::integer, c.user_id, u.active, u.role, c.scopes, c.secret_hash,
           case when c.previous_secret_until > now() then c.previous_secret_hash end
      from weld_private.oauth_clients c
      join weld_public.users u on u.tenant_id = c.tenant_id and u.id = c.user_id
     where c.tenant_id = tenant and c.client_id = oauth_token_begin.client_id;
end
$$;

grant execute on function weld_hidden.oauth_token_begin(text, text) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_token_begin.sql
--! Included functions/weld_hidden.oauth_token_issued.sql
-- POST /oauth/token, step 2, once the secret matched: the attempt is taken back from the address
-- and the client id, and the token gets a session of its own (its `sid`), which revocation (RFC
-- 7009), removing the client or deactivating its user end; the client's last use is noted. With
-- no session (POST /oauth/revoke, which authenticates the client but issues nothing) the attempt
-- is only taken back.
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_token_issued(client_id text, address text, session_id uuid)
  returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  account uuid;
begin
  perform weld_private.login_take_back(tenant, oauth_token_issued.address);
  delete from weld_private.login_throttle t
   where t.tenant_id = tenant and t.throttle_key = 'client:' || oauth_token_issued.client_id;
  if session_id is null then
    return;
  end if;
  update weld_private.oauth_clients c set last_used_at = now()
   where c.tenant_id = tenant and c.client_id = oauth_token_issued.client_id
  returning c.user_id into account;
  if not found then
    raise exception 'oauth client % not found', client_id using errcode = 'WD001';
  end if;
  insert into weld_private.sessions (tenant_id, id, user_id)
    values (tenant, oauth_token_issued.session_id, account);
end
$$;

grant execute on function weld_hidden.oauth_token_issued(text, text, uuid) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_token_issued.sql
--! Included functions/weld_hidden.oauth_token_revoke.sql
-- POST /oauth/revoke (RFC 7009): ends the session of one of the client's own access tokens, which
-- every server then refuses at once (the revocation is announced as a logout's is). False when
-- there was nothing of this client's to end (RFC 7009 answers 200 all the same).
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

create or replace function weld_hidden.oauth_token_revoke(client_id text, session_id uuid)
  returns boolean
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  update weld_private.sessions s set revoked_at = now(), revoked_reason = 'logout'
    from weld_private.oauth_clients c
   where c.tenant_id = weld_hidden.current_tenant_id()
     and c.client_id = oauth_token_revoke.client_id
     and s.tenant_id = c.tenant_id and s.id = oauth_token_revoke.session_id
     and s.user_id = c.user_id and s.revoked_at is null
  returning true
$$;

grant execute on function weld_hidden.oauth_token_revoke(text, uuid) to weld_authenticator;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.oauth_token_revoke.sql
