-- F14 webhooks: integrity and resource control for webhook endpoints (issue F14, findings 3-5).
--
--   1. The receiver's answer is not kept (SSRF): webhook_deliveries loses `response`, and
--      finish_webhook_delivery its `answer` argument. The service keeps and shows a receiver's
--      status and timing only, never its body.
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
