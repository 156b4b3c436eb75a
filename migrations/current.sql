-- F14 webhooks: integrity and resource control for webhook endpoints (issue F14, findings 3-5).
--
--   1. The receiver's answer is not kept (SSRF): webhook_deliveries loses `response`, and
--      finish_webhook_delivery its `answer` argument. The service keeps and shows a receiver's
--      status and timing only, never its body.
--   2. An endpoint pauses when its author is deactivated or stops being an admin: paused_at and
--      paused_reason, set at commit by a trigger on users (whatever path changed the user:
--      weld-admin, GraphQL, SQL), announced as a `webhook.paused` event. A paused endpoint gets
--      nothing; its events wait (its position stays) until an admin resumes it, who becomes its
--      author.
--   3. Secrets sealed at rest: secret_key_id and secret_sealed (AES-256-GCM, sealed and opened by
--      the server: db/webhook-secrets.ts; a migration never sees the key). `secret` keeps only
--      what is still in plain text until the next server start seals it; secret_set_at moves when
--      an admin sets a new secret (the ETag follows it, not a re-sealing under another key).
--   4. Fair between tenants: claim_webhook_deliveries claims one endpoint per call and takes
--      `per_tenant`, the most endpoints of one tenant an instance delivers to at once, serving the
--      tenant with the fewest deliveries in flight first, so one tenant's slow receivers cannot
--      hold every lane. Paused endpoints are not claimed.
--
-- graphile-migrate re-runs current.sql on every save, so every step here may run again.

--------------------------------------------------------------------------------------------------
-- 1. No receiver's answer in the delivery log

drop function if exists weld_hidden.finish_webhook_delivery(uuid, uuid, text, bigint, integer,
  integer, text, text, integer, integer);
alter table weld_hidden.webhook_deliveries drop column if exists response;

-- Records one attempt and moves the endpoint on: past the event on a 2xx answer; otherwise to
-- its next attempt after `retry_after_ms`, or disabled once it has failed for `give_up_seconds`.
-- Only the instance holding the lease may finish (returns false otherwise: the lease ran out and
-- another instance may have the endpoint now).
create or replace function weld_hidden.finish_webhook_delivery(
  tenant uuid, webhook uuid, instance text, delivered_event_id bigint, answer_status integer,
  took_ms integer, failure text, retry_after_ms integer, give_up_seconds integer
) returns boolean
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  endpoint weld_hidden.webhooks;
  ok boolean := answer_status between 200 and 299;
begin
  select * into endpoint from weld_hidden.webhooks w
   where w.tenant_id = tenant and w.id = webhook and w.leased_by = instance
     and w.lease_until >= now()
     for update;
  if not found then
    return false;
  end if;
  insert into weld_hidden.webhook_deliveries
    (tenant_id, webhook_id, message_id, event_id, event_type, attempt, status, error, duration_ms)
  select tenant, webhook, e.id::text, e.id, e.type, endpoint.attempt + 1, answer_status,
         left(failure, 1000), took_ms
    from weld_public.events e where e.tenant_id = tenant and e.id = delivered_event_id;
  if ok then
    update weld_hidden.webhooks w
       set last_event_id = delivered_event_id, attempt = 0, failing_since = null,
           next_attempt_at = now(), lease_until = null, leased_by = null
     where w.tenant_id = tenant and w.id = webhook;
  elsif coalesce(endpoint.failing_since, now()) < now() - make_interval(secs => give_up_seconds) then
    update weld_hidden.webhooks w
       set active = false, attempt = endpoint.attempt + 1, lease_until = null, leased_by = null,
           disabled_reason = format('failing since %s; the last attempt: %s',
             to_char(endpoint.failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
             coalesce('HTTP ' || answer_status, failure, 'no answer'))
     where w.tenant_id = tenant and w.id = webhook;
  else
    update weld_hidden.webhooks w
       set attempt = endpoint.attempt + 1, failing_since = coalesce(endpoint.failing_since, now()),
           next_attempt_at = now() + make_interval(secs => retry_after_ms / 1000.0),
           lease_until = null, leased_by = null
     where w.tenant_id = tenant and w.id = webhook;
  end if;
  return true;
end
$$;
grant execute on function weld_hidden.finish_webhook_delivery(uuid, uuid, text, bigint, integer,
  integer, text, integer, integer) to weld_authenticator;

--------------------------------------------------------------------------------------------------
-- 2. Pausing with the author

alter table weld_hidden.webhooks add column if not exists paused_at timestamptz;
alter table weld_hidden.webhooks add column if not exists paused_reason text;
alter table weld_hidden.webhooks drop constraint if exists webhooks_paused_reason;
alter table weld_hidden.webhooks add constraint webhooks_paused_reason
  check ((paused_at is null) = (paused_reason is null) and char_length(paused_reason) <= 500);

-- An admin resumes an endpoint by clearing both (REST: PATCH active=true).
grant update (paused_at, paused_reason) on weld_hidden.webhooks to weld_admin;

-- A new endpoint starts at the tenant's newest event: it receives what happens from now on.
-- Re-activating one clears its failure and tries again at once, from where it stopped. Resuming a
-- paused one makes the resuming user its author: an endpoint always has an author who may manage
-- it, and pauses again when that one goes.
create or replace function weld_private.tg_webhooks__position() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  if tg_op = 'INSERT' then
    new.last_event_id := coalesce(
      (select max(e.id) from weld_public.events e where e.tenant_id = new.tenant_id), 0);
    return new;
  end if;
  if new.active and not old.active then
    new.disabled_reason := null;
    new.failing_since := null;
    new.attempt := 0;
    new.next_attempt_at := now();
  end if;
  if old.paused_at is not null and new.paused_at is null then
    new.created_by := coalesce(weld_hidden.current_user_id(), new.created_by);
    new.next_attempt_at := least(new.next_attempt_at, now());
  end if;
  return new;
end
$$;

-- Pauses every endpoint `author_id` authored that is not paused yet, unless the author is an
-- active admin, and announces each with a `webhook.paused` event. Its data leaves the URL out:
-- every role of the tenant reads the feed, and only admins see endpoints. A delivery already
-- under way when the pause commits completes; nothing further is sent. Returns how many paused.
create or replace function weld_private.pause_webhooks_of(tenant uuid, author_id uuid)
  returns integer
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  author weld_public.users;
  endpoint record;
  paused integer := 0;
begin
  select * into author from weld_public.users u where u.tenant_id = tenant and u.id = author_id;
  if not found or (author.active and author.role = 'admin') then
    return 0;
  end if;
  for endpoint in
    update weld_hidden.webhooks w
       set paused_at = now(),
           paused_reason = format('its author %s %s', author.user_name,
             case when author.active then 'is no longer an admin' else 'was deactivated' end)
     where w.tenant_id = tenant and w.created_by = author_id and w.paused_at is null
    returning w.id, w.paused_at, w.paused_reason, w.created_by
  loop
    paused := paused + 1;
    if not weld_private.events_suppressed() then
      perform weld_private.emit_event(tenant, 'webhook.paused', endpoint.id,
        jsonb_build_object(
          'id', endpoint.id,
          'pausedAt', to_char(endpoint.paused_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'pausedReason', endpoint.paused_reason,
          'createdBy', endpoint.created_by),
        null);
    end if;
  end loop;
  return paused;
end
$$;

-- At commit, for a user who was deactivated or stopped being an admin in the transaction: if
-- they still are so at its end (not enabled again before commit), their endpoints pause.
create or replace function weld_private.tg_users__pause_webhooks() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform weld_private.pause_webhooks_of(new.tenant_id, new.id);
  return null;
end
$$;
drop trigger if exists _600_pause_webhooks on weld_public.users;
create constraint trigger _600_pause_webhooks after update of active, role on weld_public.users
  deferrable initially deferred
  for each row when ((old.active and not new.active) or (old.role = 'admin' and new.role <> 'admin'))
  execute function weld_private.tg_users__pause_webhooks();

-- Endpoints whose author was deactivated or demoted before this migration pause now.
select weld_private.pause_webhooks_of(w.tenant_id, w.created_by)
  from (select distinct tenant_id, created_by from weld_hidden.webhooks
         where created_by is not null and paused_at is null) w;

--------------------------------------------------------------------------------------------------
-- 3. Secrets sealed at rest

alter table weld_hidden.webhooks add column if not exists secret_key_id text;
alter table weld_hidden.webhooks add column if not exists secret_sealed bytea;
alter table weld_hidden.webhooks add column if not exists secret_set_at timestamptz not null default now();
alter table weld_hidden.webhooks alter column secret drop not null;
-- One secret, stored one way: plain (until sealed) or sealed with the id of its key.
alter table weld_hidden.webhooks drop constraint if exists webhooks_secret_stored;
alter table weld_hidden.webhooks add constraint webhooks_secret_stored check (
  (secret is null) <> (secret_sealed is null)
  and (secret_sealed is null) = (secret_key_id is null)
  and secret_key_id ~ '^[A-Za-z0-9_-]{1,64}$'
  and octet_length(secret_sealed) between 29 and 1000);

-- The REST create chooses the id (the sealed secret is bound to it) and writes the sealed secret;
-- a rotation writes a new one and clears a plain one. (`secret` keeps its grants: an instance of
-- the previous version writes plain secrets until it is replaced; the next start seals them.)
grant insert (id, secret_key_id, secret_sealed) on weld_hidden.webhooks to weld_admin;
grant update (secret_key_id, secret_sealed, secret_set_at) on weld_hidden.webhooks to weld_admin;

-- Its version (the ETag) and updated_at follow what an admin sees and sets, not the worker's
-- bookkeeping, so an If-Match taken a minute ago still holds while deliveries go on. A new secret
-- counts (secret_set_at), the same secret sealed again under another key does not; a pause is
-- something an admin sees: it moves the version, so a change based on the state before it is 412.
create or replace function weld_private.tg_webhooks__touch() returns trigger
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  if (new.url, new.event_types, new.description, new.active, new.secret_set_at,
      new.disabled_reason, new.paused_at, new.paused_reason)
     is distinct from
     (old.url, old.event_types, old.description, old.active, old.secret_set_at,
      old.disabled_reason, old.paused_at, old.paused_reason) then
    new.version := old.version + 1;
    new.updated_at := now();
  end if;
  return new;
end
$$;

--------------------------------------------------------------------------------------------------
-- 4. Fair claiming (the last section: the claim reads the columns of the others)

drop function if exists weld_hidden.claim_webhook_deliveries(text, integer, integer);

-- The worker (the authenticator, across tenants) claims one endpoint that is due and has an event
-- to deliver, with that next event and its stored secret, leasing it for `lease_seconds` (a lane
-- of the worker calls it whenever it is free, and opens the secret: db/webhook-secrets.ts): an
-- endpoint is worked on by one instance at a time, so its events go out one by one in order.
-- Paused endpoints are not claimed.
-- Fairness: a tenant whose endpoints this instance already delivers to `per_tenant` at once gets
-- no more here until one is finished, and among the rest the tenant with the fewest deliveries in
-- flight on this instance comes first (then the endpoint due longest). So a tenant with many slow
-- receivers holds at most `per_tenant` of the instance's lanes, and a newly due endpoint of
-- another tenant is taken by the next free lane. (The count is this instance's: the worker claims
-- one call at a time, so it is exact; each instance keeps its own bound.)
-- A lease outlives any delivery attempt (whose timeout is far shorter); one left by a crashed
-- instance expires and the endpoint is claimed again.
create or replace function weld_hidden.claim_webhook_deliveries(
  instance text, lease_seconds integer, per_tenant integer
) returns table (
  tenant_id uuid, webhook_id uuid, url text, secret text, secret_key_id text,
  secret_sealed bytea, attempt integer, event_id bigint, event_type text, subject_id uuid,
  actor_id uuid, occurred_at timestamptz, data jsonb, change jsonb
)
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with in_flight as (
    select w.tenant_id, count(*) as n
      from weld_hidden.webhooks w
     where w.leased_by = instance and w.lease_until >= now()
     group by w.tenant_id
  ), due as (
    select w.tenant_id, w.id, e.id as event_id
      from weld_hidden.webhooks w
      left join in_flight f on f.tenant_id = w.tenant_id
      cross join lateral (
        select e.id from weld_public.events e
         where e.tenant_id = w.tenant_id and e.id > w.last_event_id
           and (cardinality(w.event_types) = 0 or e.type = any(w.event_types))
         order by e.id
         limit 1) e
     where w.active and w.next_attempt_at <= now()
       and w.paused_at is null
       and (w.lease_until is null or w.lease_until < now())
       and coalesce(f.n, 0) < per_tenant
     order by coalesce(f.n, 0), w.next_attempt_at
     limit 1
       for update of w skip locked
  ), leased as (
    update weld_hidden.webhooks w
       set lease_until = now() + make_interval(secs => lease_seconds), leased_by = instance
      from due
     where w.tenant_id = due.tenant_id and w.id = due.id
    returning w.tenant_id, w.id, w.url, w.secret, w.secret_key_id, w.secret_sealed, w.attempt,
              due.event_id
  )
  select l.tenant_id, l.id, l.url, l.secret, l.secret_key_id, l.secret_sealed, l.attempt,
         e.id, e.type, e.subject_id, e.actor_id, e.occurred_at, e.data, e.change
    from leased l
    join weld_public.events e on e.tenant_id = l.tenant_id and e.id = l.event_id
$$;
grant execute on function weld_hidden.claim_webhook_deliveries(text, integer, integer)
  to weld_authenticator;
