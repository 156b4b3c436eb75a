--! Previous: sha1:ef13efb462a1f305887a2339697ffb71b14705c4
--! Hash: sha1:93656b8959df00fc56c175233fb8ea9ea4ba2a53
--! Message: A new endpoint places what waited when it began, no more

-- A third review: a new webhook endpoint placed its tenant's events "until none is left", inside
-- the admin's transaction, holding the tenant's relay; under a steady stream of writes that end
-- might not come before the statement timeout. It now places at most what was waiting when it
-- began (events committed after that are ones that happen from now on, which it receives).
--! Included functions/weld_private.tg_webhooks__position.sql
-- A new endpoint starts at the tenant's newest event: it receives what happens from now on.
-- Re-activating one clears its failure and tries again at once, from where it stopped. The acting
-- user becomes the author of a new endpoint, and of one whose URL, event types or secret they
-- change or which they resume (lock_webhook_author): an endpoint's author is who chose where it
-- points and who knows its secret, and it pauses when that one goes.
create or replace function weld_private.tg_webhooks__position() returns trigger
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  waiting bigint;
  placed bigint := 0;
  moved integer;
begin
  if tg_op = 'INSERT' then
    -- What committed before it is placed first (migration 000023), so "newest" is newest: all
    -- of it, a batch at a time (after a large import, several), and no more than was waiting
    -- when it began: under a steady stream of writes "until none is left" might never come,
    -- and this holds the tenant's relay until the registration commits.
    waiting := (select count(*) from weld_hidden.pending_events p where p.tenant_id = new.tenant_id);
    loop
      moved := weld_hidden.place_events(new.tenant_id);
      placed := placed + moved;
      exit when moved = 0 or placed >= waiting;
    end loop;
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

create or replace trigger _050_position before insert or update on weld_hidden.webhooks
  for each row execute function weld_private.tg_webhooks__position();
--! EndIncluded functions/weld_private.tg_webhooks__position.sql
