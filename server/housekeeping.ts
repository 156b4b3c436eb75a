// Periodic clean-up of bookkeeping that has outlived its use: login throttle rows whose windows
// have passed, used or expired refresh tokens, ended sessions, REST idempotency keys older
// than 24 hours, and events and webhook deliveries older than EVENT_RETENTION_DAYS. The rules of
// what is old enough are SQL (weld_hidden.purge_auth_bookkeeping, migrations 000006 and 000007;
// weld_hidden.purge_idempotency_keys, 000008; weld_hidden.purge_events, 000010); this only calls them,
// at start and then every PURGE_EVERY_MS, from every instance (the deletes are idempotent, so two
// instances purging at once do no harm).
import type pg from 'pg';
import type { Logger } from '../rest-adapter/http/log.ts';

export const PURGE_EVERY_MS = 15 * 60_000;

export interface Housekeeping {
  /** Runs one purge now; resolves with what it deleted (deleted_sessions, ...). */
  purgeNow(): Promise<Record<string, number>>;
  stop(): void;
}

export function startHousekeeping(
  pool: pg.Pool,
  logger: Logger,
  options: { eventRetentionDays: number; everyMs?: number },
): Housekeeping {
  const everyMs = options.everyMs ?? PURGE_EVERY_MS;
  const purgeNow = async () => {
    // One row: the counts of purge_auth_bookkeeping, deleted_idempotency_keys, and the counts of
    // purge_events.
    const { rows } = await pool.query<Record<string, number>>(
      `select auth.*, weld_hidden.purge_idempotency_keys() as deleted_idempotency_keys,
              events.deleted_events::int as deleted_events,
              events.deleted_deliveries::int as deleted_deliveries
         from weld_hidden.purge_auth_bookkeeping() auth, weld_hidden.purge_events($1) events`,
      [options.eventRetentionDays],
    );
    return rows[0]!;
  };
  const run = () => {
    purgeNow().then(
      (purged) => logger.debug({ purged }, 'purged expired bookkeeping'),
      (error: unknown) => logger.warn({ err: error }, 'purging expired bookkeeping failed'),
    );
  };
  const first = setTimeout(run, 1_000);
  const timer = setInterval(run, everyMs);
  first.unref();
  timer.unref();
  return {
    purgeNow,
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
