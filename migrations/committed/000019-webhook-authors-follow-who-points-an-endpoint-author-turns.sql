--! Previous: sha1:b38129a10369a2d9f512b30d10a4413a5043a881
--! Hash: sha1:aa02dfae4911bb43a5b84ee35013267655fc5cbd
--! Message: webhook authors follow who points an endpoint; author turns

-- F14 webhooks, follow-up: an endpoint's author is whoever last chose where it points.
--
-- Pausing an endpoint with its author (000018) left three ways around it: an admin who changed
-- the URL or the event types, or set a new secret, of another admin's endpoint did not become its
-- author, so deactivating them paused nothing; and a resume (or a registration) that committed
-- after the acting admin's deactivation left an active endpoint with a deactivated author.
--
-- Now a registration, a change of `url` or `event_types`, a new secret and a resume make the
-- acting user the endpoint's author, and each first takes that user's author turn (an advisory
-- lock held to the commit) and checks they are an active admin (WD003 otherwise). Pausing an
-- author's endpoints, at the commit of their deactivation or demotion, takes the same turn, so
-- the two serialize: a change that goes first is seen by the pause, which pauses the endpoint; a
-- deactivation that goes first is seen by the change, which fails. (An advisory lock rather than
-- the user's row FOR SHARE: that would need UPDATE on users for weld_rules.) The owner (SQL
-- without a user: a DBA, the worker, the server sealing secrets) changes no author.
-- Idempotent: functions are replaced.

grant create on schema weld_public, weld_hidden, weld_private to weld_rules;

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

-- Pauses every endpoint `author_id` authored that is not paused yet, unless the author is an
-- active admin, and announces each with a `webhook.paused` event. Its data leaves the URL out:
-- every role of the tenant reads the feed, and only admins see endpoints. A delivery already
-- under way when the pause commits completes; nothing further is sent. Returns how many paused.
-- It takes the author's turn first (lock_webhook_author): a change that made them an endpoint's
-- author and committed meanwhile is seen here.
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
  perform pg_advisory_xact_lock(
    hashtextextended(tenant::text || '/' || author_id::text || '/webhook-author', 0));
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

revoke create on schema weld_public, weld_hidden, weld_private from weld_rules;
