// The webhook delivery worker: runs inside every server instance and sends each endpoint its
// events, in event order, at least once (migration 000010, section 5, holds the state).
//
//   claim    weld_hidden.claim_webhook_deliveries leases one endpoint that is due and has an
//            event waiting (FOR UPDATE SKIP LOCKED: instances never claim the same endpoint), with
//            its next event
//   send     rest-adapter/http/webhook-delivery.ts: signed POST, outside any transaction
//   finish   weld_hidden.finish_webhook_delivery records the attempt and moves the endpoint past
//            the event on a 2xx, or schedules the retry (exponential backoff), or disables it after
//            failing for WEBHOOK_GIVE_UP_HOURS
//
// Lanes, fair between tenants: the instance delivers to at most `concurrency` endpoints at once,
// and to at most `tenantConcurrency` of one tenant's (the claim enforces it, and serves the
// tenant with the fewest deliveries in flight first). A lane is free as soon as its delivery
// ends, and claims again at once: no lane waits for another, so a tenant's slow receivers hold
// its own lanes only, and another tenant's event goes out on the next free one.
//
// It claims whenever a commit is announced (db/event-notifications.ts), whenever a lane comes
// free, and at least every pollMs, for retries that come due and commits announced while the
// listener was away. An instance that dies mid-send leaves a lease that runs out; the event is
// then sent again (at least once), with the same webhook-id so the receiver can tell.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { EventNotifications } from '../db/event-notifications.ts';
import type { WebhookSecretKeys } from '../db/webhook-secrets.ts';
import type { Logger } from '../rest-adapter/http/log.ts';
import type { TargetRules } from '../rest-adapter/http/webhook-address.ts';
import { signedDelivery } from '../rest-adapter/http/webhook-delivery.ts';

export interface WebhookWorkerOptions extends TargetRules {
  timeoutMs: number;
  /** The first retry's delay; each further one doubles, up to an hour. */
  retryBaseMs: number;
  giveUpHours: number;
  pollMs: number;
  /** Endpoints this instance delivers to at once (its lanes). */
  concurrency: number;
  /** Endpoints of one tenant this instance delivers to at once (fewer than concurrency). */
  tenantConcurrency: number;
  /** Opens the endpoints' sealed secrets. */
  secretKeys: WebhookSecretKeys;
}

const MAX_RETRY_MS = 3_600_000;
/** When an attempt that never got a lookup slot is tried again. */
const DEFERRED_RETRY_MS = 1_000;

interface Claimed {
  tenant_id: string;
  webhook_id: string;
  url: string;
  secret: string | null;
  secret_key_id: string | null;
  secret_sealed: Buffer | null;
  attempt: number;
  event_id: string;
  event_type: string;
  subject_id: string;
  actor_id: string | null;
  occurred_at: Date;
  data: unknown;
  change: unknown;
}

/** The delay before retry number `attempt` (1 = the first retry): base, 2 x base, ... 1 h. */
export function retryDelayMs(attempt: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(attempt - 1, 0), MAX_RETRY_MS);
}

export interface WebhookWorker {
  /** Resolves when the in-flight deliveries are done. */
  stop(): Promise<void>;
}

export function startWebhookWorker(
  pool: pg.Pool,
  notifications: EventNotifications,
  logger: Logger,
  options: WebhookWorkerOptions,
): WebhookWorker {
  const instance = `${process.pid}-${randomUUID()}`;
  // A lease outlasts the longest attempt by far, so it never runs out under a live sender.
  const leaseSeconds = Math.ceil((options.timeoutMs * 3) / 1000) + 30;
  const stopping = new AbortController();
  const watch = notifications.watch('*');

  const deliver = async (job: Claimed): Promise<void> => {
    const body = JSON.stringify({
      id: job.event_id,
      type: job.event_type,
      subjectId: job.subject_id,
      actorId: job.actor_id,
      occurredAt: job.occurred_at.toISOString(),
      data: job.data,
      change: job.change,
    });
    const send = () =>
      signedDelivery(
        options.secretKeys,
        job,
        { tenantId: job.tenant_id, webhookId: job.webhook_id },
        { url: job.url, messageId: job.event_id, body },
        {
          ...options,
          // The cause stays here: the endpoint's admin sees one outcome for every failure.
          onFailure: (cause) =>
            logger.info(
              { tenantId: job.tenant_id, webhookId: job.webhook_id, cause },
              'webhook delivery got no answer',
            ),
        },
        logger,
      );
    const answer = await send();
    if (answer.deferred) {
      // It never began (other tenants' slow names held every lookup slot): not this endpoint's
      // failure. The lease goes back and the lane is free; the endpoint is due again shortly.
      await pool.query('select weld_hidden.defer_webhook_delivery($1, $2, $3, $4)', [
        job.tenant_id,
        job.webhook_id,
        instance,
        DEFERRED_RETRY_MS,
      ]);
      return;
    }
    const retryMs = retryDelayMs(job.attempt + 1, options.retryBaseMs);
    await pool.query(
      'select weld_hidden.finish_webhook_delivery($1, $2, $3, $4, $5, $6, $7, $8, $9)',
      [
        job.tenant_id,
        job.webhook_id,
        instance,
        job.event_id,
        answer.status ?? null,
        answer.durationMs,
        answer.error ?? null,
        retryMs,
        options.giveUpHours * 3600,
      ],
    );
  };

  /** Deliveries in flight; each frees its lane when it ends. */
  const inFlight = new Set<Promise<void>>();
  let wake = new AbortController();

  /** Claims (one call at a time, so the claim's per-tenant count is exact) while a lane is free. */
  const claim = async () => {
    while (inFlight.size < options.concurrency && !stopping.signal.aborted) {
      const { rows } = await pool.query<Claimed>(
        'select * from weld_hidden.claim_webhook_deliveries($1, $2, $3)',
        [instance, leaseSeconds, options.tenantConcurrency],
      );
      if (rows.length === 0) return;
      const delivery = deliver(rows[0]!)
        // A failure here (the database gone) ends this delivery only; its lease runs out and the
        // event is sent again later: at least once.
        .catch((error: unknown) => logger.warn({ err: error }, 'webhook delivery failed'))
        .finally(() => {
          inFlight.delete(delivery);
          wake.abort(); // a lane is free: claim again
        });
      inFlight.add(delivery);
    }
  };

  const loop = (async () => {
    while (!stopping.signal.aborted) {
      // A fresh wake-up before claiming: a lane freed or a commit announced meanwhile is seen.
      wake = new AbortController();
      try {
        await claim();
      } catch (error) {
        logger.warn({ err: error }, 'webhook claim failed');
      }
      await watch.wait(options.pollMs, AbortSignal.any([stopping.signal, wake.signal]));
    }
    await Promise.allSettled([...inFlight]);
  })();

  return {
    stop: async () => {
      stopping.abort();
      watch.close();
      await loop;
    },
  };
}
