--! Previous: sha1:d53483d15a4dff0be88d08530395b2d47a925cec
--! Hash: sha1:c92d0aee4c7cbba3f3a627b041dc507ee5458b2d
--! Message: scopes: users are people's; webhooks need events:read

-- F18, from an attacker-side review of the OAuth2 clients:
-- - users had no scope policy: a client acting as an admin (webhooks:write) could make a person
--   an admin. Writing users now needs a request without scopes; a client user's role follows its
--   scopes (no path may change it) and it gets no password.
-- - an endpoint receives every event it names: registering or re-pointing one needs events:read
--   beside webhooks:write.
-- - a client's failed secrets counted per client id from anywhere: anyone who knew the id could
--   keep the integration throttled. They count per client id and address now.
-- - tenant remove/reset: the tenant is locked first and a last pass finds nothing written
--   meanwhile; the superuser only sets replica mode and calls it as the owner; a reset keeps the
--   OAuth2 clients.

--! Included functions/weld_hidden.unscoped_tenant_id.sql
-- Users are managed by people (F18): for a request that carries OAuth2 scopes (a client's token),
-- whatever its role and scopes, writing users is refused (WD003), so no client can make a person
-- an admin, or demote one; otherwise the tenant of the request. The row security policies of
-- weld_public.users compare tenant_id with it for writes (migration 000047); reading stays open.
create or replace function weld_hidden.unscoped_tenant_id() returns uuid
  language plpgsql stable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  if coalesce(current_setting('jwt.claims.scope', true), '') <> '' then
    raise exception 'an OAuth2 client may not change users' using errcode = 'WD003';
  end if;
  return weld_hidden.current_tenant_id();
end
$$;

grant execute on function weld_hidden.unscoped_tenant_id() to weld_anonymous;
--! EndIncluded functions/weld_hidden.unscoped_tenant_id.sql

drop policy if exists scope_insert on weld_public.users;
drop policy if exists scope_update on weld_public.users;
drop policy if exists scope_delete on weld_public.users;
create policy scope_insert on weld_public.users as restrictive for insert to weld_viewer
  with check (tenant_id = (select weld_hidden.unscoped_tenant_id()));
create policy scope_update on weld_public.users as restrictive for update to weld_viewer
  using (tenant_id = (select weld_hidden.unscoped_tenant_id()));
create policy scope_delete on weld_public.users as restrictive for delete to weld_viewer
  using (tenant_id = (select weld_hidden.unscoped_tenant_id()));

--! Included functions/weld_private.tg_users__client_role.sql
-- An OAuth2 client's user acts in the role its scopes need (weld_private.oauth_scopes_role): a
-- change of that role by any path (GraphQL's updateUser, weld-admin user role, SQL) is refused,
-- so a client can never act beyond what its scopes were given for.
--
-- SECURITY DEFINER as the owner: an admin changing a user may not read weld_private.
create or replace function weld_private.tg_users__client_role() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if exists (select from weld_private.oauth_clients c
              where c.tenant_id = old.tenant_id and c.user_id = old.id) then
    raise exception 'the role of an OAuth2 client follows its scopes; register a client with other scopes'
      using errcode = 'WD003';
  end if;
  return new;
end
$$;

create or replace trigger _100_client_role before update of role on weld_public.users
  for each row when (old.role is distinct from new.role)
  execute function weld_private.tg_users__client_role();
--! EndIncluded functions/weld_private.tg_users__client_role.sql
--! Included functions/weld_private.set_user_password.sql
-- Setting a password finds the user by name case-insensitively too (citext's `=`, named for the
-- same reason as in login_begin: 000003 compared the names as text).
create or replace function weld_private.set_user_password(tenant uuid, user_name public.citext, password_hash text)
  returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  account weld_public.users;
begin
  select * into account from weld_public.users u
   where u.tenant_id = tenant and u.user_name operator(public.=) set_user_password.user_name;
  if not found then
    return null;
  end if;
  -- An OAuth2 client signs in with its secret, held to its scopes: never as a person (F18).
  if exists (select from weld_private.oauth_clients c
              where c.tenant_id = tenant and c.user_id = account.id) then
    raise exception 'user % is an OAuth2 client: it has a secret, not a password', account.user_name
      using errcode = 'WD003';
  end if;
  insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
  values (tenant, account.id, set_user_password.password_hash)
  on conflict (tenant_id, user_id) do update set password_hash = excluded.password_hash, updated_at = now();
  return true;
end
$$;
--! EndIncluded functions/weld_private.set_user_password.sql
--! Included functions/weld_hidden.lock_webhook_registrations.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- A webhook registration's turn (rest-adapter/webhooks.ts counts a tenant's endpoints under it).
create or replace function weld_hidden.lock_webhook_registrations() returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  -- An OAuth2 client's endpoint receives events: it needs events:read beside webhooks:write.
  select weld_hidden.require_scope('{events:read}');
  select pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('weld_hidden.webhooks'),
                                          pg_catalog.hashtext(weld_hidden.current_tenant_id()::text))
$$;

grant execute on function weld_hidden.lock_webhook_registrations() to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.lock_webhook_registrations.sql
--! Included functions/weld_hidden.lock_webhook_author.sql
-- Owned by weld_rules: written as weld_rules, which may create in the schema only for this.
grant create on schema weld_hidden to weld_rules;
set role weld_rules;

-- The acting user, as the next author of an endpoint of their tenant: takes their author turn
-- (held to the commit), then checks they are an active admin. Returns their id. REST calls it
-- before it locks the endpoint (rest-adapter/webhooks.ts), so its locks come in the order a
-- deactivation takes them (the turn, then the endpoints): the two never wait on each other in a
-- circle. The trigger below calls it again, for every other path.
create or replace function weld_hidden.lock_webhook_author() returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  tenant uuid := weld_hidden.current_tenant_id();
  me uuid := weld_hidden.current_user_id();
  author weld_public.users;
begin
  -- An OAuth2 client's endpoint receives events: it needs events:read beside webhooks:write.
  perform weld_hidden.require_scope('{events:read}');
  perform pg_advisory_xact_lock(
    hashtextextended(tenant::text || '/' || me::text || '/webhook-author', 0));
  -- A statement after the lock: it sees a deactivation that committed while we waited.
  select * into author from weld_public.users u where u.tenant_id = tenant and u.id = me;
  if not found or not author.active or author.role <> 'admin' then
    raise exception 'only an active admin may register, point, resume or re-key a webhook'
      using errcode = 'WD003';
  end if;
  return author.id;
end
$$;

grant execute on function weld_hidden.lock_webhook_author() to weld_admin;

reset role;
revoke create on schema weld_hidden from weld_rules;
--! EndIncluded functions/weld_hidden.lock_webhook_author.sql
--! Included functions/weld_hidden.oauth_token_begin.sql
-- POST /oauth/token, client_credentials (F18), step 1: counts the attempt against the address and
-- the client id from that address, as a login counts a password (weld_private.throttle_attempt;
-- per address, so that nobody who knows a client id can lock the integration out from elsewhere:
-- a 256-bit secret cannot be guessed anyway) and returns what the
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
                                               'client:' || oauth_token_begin.client_id || ':' || oauth_token_begin.address);
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
   where t.tenant_id = tenant
     and t.throttle_key = 'client:' || oauth_token_issued.client_id || ':' || oauth_token_issued.address;
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
--! Included functions/weld_private.clear_tenant.sql
-- Empties a tenant for `weld-admin tenant remove` and `tenant reset` (F18): every row of every
-- table with a tenant_id (whole = true, then the tenant itself), or, for a reset, every row but
-- the tenant's setup: its origins, users and their credentials and sessions, signing keys,
-- settings, rule tables, webhook endpoints, OAuth2 clients and reporting logins. A table added
-- later is data unless it is named here, so a reset never leaves project rows behind.
--
-- Why triggers are off: the rules refuse what a removal must do (a released package's records are
-- held, welds hold their ISO by RESTRICT, history is append-only) and each deleted row would write
-- an event. The caller runs it with session_replication_role = replica for its transaction, so no
-- trigger fires, the foreign keys' own included; that is safe because every row of the tenant
-- goes, and nothing of another tenant refers to it (every key leads with tenant_id). Only a
-- superuser may set that: weld-admin sets it on the root connection and then becomes the owner
-- (SET LOCAL ROLE) to call this, so the superuser runs no code the owner could have changed.
--
-- Writes of the tenant in flight: the tenant's row is locked first (FOR UPDATE waits for every
-- transaction that wrote a row naming the tenant, and holds back any new one), and a last pass
-- finds every table empty of the tenant (or of its data), else nothing is deleted.
--
-- A removal announces the end of the tenant's live sessions (as the revocation trigger would),
-- so every server drops their access tokens at once. Returns the rows deleted per table, the
-- tables with none left out.
create or replace function weld_private.clear_tenant(tenant uuid, whole boolean)
  returns table (table_name text, deleted bigint)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  setup constant text[] := array[
    'weld_private.tenant_origins', 'weld_public.users', 'weld_private.user_credentials',
    'weld_private.sessions', 'weld_private.refresh_tokens', 'weld_private.known_addresses',
    'weld_private.login_throttle', 'weld_private.signing_keys', 'weld_private.tenant_secrets',
    'weld_private.reporting_logins', 'weld_private.oauth_clients', 'weld_public.tenant_settings',
    'weld_public.weld_transition_rules', 'weld_public.examination_rules',
    'weld_public.qualification_range_rules', 'weld_public.procedure_thickness_rules',
    'weld_public.p_number_rules', 'weld_public.heat_treatment_rules',
    'weld_private.report_refreshes', 'weld_hidden.webhooks'];
  tables regclass[];
  tbl regclass;
  count bigint;
  left_over boolean;
begin
  if current_setting('session_replication_role') <> 'replica' then
    raise exception 'clear_tenant runs with session_replication_role = replica (weld-admin tenant remove or reset)'
      using errcode = '55000';
  end if;
  perform from weld_public.tenants t where t.id = tenant for update;
  if not found then
    raise exception 'no tenant %', tenant using errcode = 'WD001';
  end if;
  if whole then
    perform pg_notify('weld_session_revoked', json_build_object(
              'tenantId', s.tenant_id, 'sessionId', s.id, 'userId', s.user_id)::text)
       from weld_private.sessions s
      where s.tenant_id = tenant and s.revoked_at is null;
  end if;

  select array_agg(c.oid::regclass order by c.oid::regclass::text) into tables
    from pg_catalog.pg_class c
    join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id'
                                   and not a.attisdropped
   where n.nspname in ('weld_public', 'weld_hidden', 'weld_private')
     and c.relkind in ('r', 'p')
     and (whole or c.oid::regclass::text <> all (setup));
  foreach tbl in array tables loop
    execute format('delete from %s where tenant_id = $1', tbl) using tenant;
    get diagnostics count = row_count;
    if count > 0 then
      table_name := tbl::text;
      deleted := count;
      return next;
    end if;
  end loop;
  foreach tbl in array tables loop
    execute format('select exists (select from %s where tenant_id = $1)', tbl) into left_over
      using tenant;
    if left_over then
      raise exception 'rows of the tenant were written in % while it was being emptied; nothing was deleted: run it again', tbl
        using errcode = '40001';
    end if;
  end loop;
  if whole then
    delete from weld_public.tenants t where t.id = tenant;
    table_name := 'weld_public.tenants';
    deleted := 1;
    return next;
  end if;
end
$$;

comment on function weld_private.clear_tenant(uuid, boolean) is
  'Deletes a tenant''s data (whole: everything, and the tenant) in a transaction with triggers off (session_replication_role = replica, set by weld-admin as a superuser).';
--! EndIncluded functions/weld_private.clear_tenant.sql
