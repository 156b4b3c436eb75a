--! Previous: sha1:aa02dfae4911bb43a5b84ee35013267655fc5cbd
--! Hash: sha1:769017681fc39d75e3576c6456046c67adac32fc
--! Message: a webhook attempt that never got a lookup slot hands its lease back

-- F14 follow-up: a webhook attempt that never began is not an attempt.
--
-- An attempt whose name lookup never got a slot (other tenants' slow names held every one:
-- server/http/webhook-address.ts) sent nothing. Recorded as a failure it counted towards the
-- endpoint's backoff and, kept up for WEBHOOK_GIVE_UP_HOURS, disabled it: one tenant's DNS could
-- run up another's failures. Now the worker hands such a lease back: the endpoint is due again
-- shortly, its attempt count, failing_since and delivery log unchanged. Idempotent.

-- Only the instance holding the lease may hand it back (false otherwise, as finish does).
create or replace function weld_hidden.defer_webhook_delivery(
  tenant uuid, webhook uuid, instance text, retry_after_ms integer
) returns boolean
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with handed_back as (
    update weld_hidden.webhooks w
       set lease_until = null, leased_by = null,
           next_attempt_at = now() + make_interval(secs => retry_after_ms / 1000.0)
     where w.tenant_id = tenant and w.id = webhook and w.leased_by = instance
       and w.lease_until >= now()
    returning 1
  )
  select exists (select from handed_back)
$$;
revoke execute on function weld_hidden.defer_webhook_delivery(uuid, uuid, text, integer)
  from public;
grant execute on function weld_hidden.defer_webhook_delivery(uuid, uuid, text, integer)
  to weld_authenticator;
