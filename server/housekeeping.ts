// Periodic clean-up of bookkeeping that has outlived its use: login throttle rows whose windows
// have passed, used or expired refresh tokens, ended sessions, REST idempotency keys older
// than 24 hours, and events and webhook deliveries older than EVENT_RETENTION_DAYS. The rules of
// what is old enough are SQL (weld_hidden.purge_auth_bookkeeping, migrations 000006 and 000007;
// weld_hidden.purge_idempotency_keys, 000008; weld_hidden.purge_events, 000010); this only calls them,
// at start and then every PURGE_EVERY_MS, from every instance (the deletes are idempotent, so two
// instances purging at once do no harm).
//
// And every REAP_EVERY_MS, the reporting logins' limits (weld_hidden.reap_reporting_sessions): a BI
// tool's statement over its login's limit is cancelled, whatever statement_timeout the session set.
import type pg from 'pg';
import type { Logger } from '../rest-adapter/http/log.ts';

export const PURGE_EVERY_MS = 15 * 60_000;
export const REAP_EVERY_MS = 1_000;

export interface Housekeeping {
  /** Runs one purge now; resolves with what it deleted (deleted_sessions, ...). */
  purgeNow(): Promise<Record<string, number>>;
  stop(): void;
}

export function startHousekeeping(
  pool: pg.Pool,
  logger: Logger,
  options: {
    eventRetentionDays: number;
    everyMs?: number;
    reapEveryMs?: number;
    /** The pool the reaper uses (the health probes' small one: the request pool may be full). */
    reapPool?: pg.Pool;
  },
): Housekeeping {
  const everyMs = options.everyMs ?? PURGE_EVERY_MS;
  const reapEveryMs = options.reapEveryMs ?? REAP_EVERY_MS;
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
  let reaping = false;
  const reap = () => {
    if (reaping) return; // (a slow round is not overtaken by the next)
    reaping = true;
    (options.reapPool ?? pool)
      .query<{ cancelled: number; ended: number }>(
        'select * from weld_hidden.reap_reporting_sessions()',
      )
      .then(
        ({ rows }) => {
          if (rows[0]!.cancelled || rows[0]!.ended) {
            logger.info(rows[0], 'reporting sessions over their limits stopped');
          }
        },
        (error: unknown) => logger.warn({ err: error }, 'stopping reporting sessions failed'),
      )
      .finally(() => (reaping = false));
  };
  const first = setTimeout(run, 1_000);
  const timer = setInterval(run, everyMs);
  const reaper = setInterval(reap, reapEveryMs);
  first.unref();
  timer.unref();
  reaper.unref();
  return {
    purgeNow,
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
      clearInterval(reaper);
    },
  };
}
