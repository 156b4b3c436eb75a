// Periodic clean-up of authentication bookkeeping that has outlived its use: login throttle rows
// whose windows have passed, used or expired refresh tokens, and ended sessions. The rules of what
// is old enough are SQL (weld_hidden.purge_auth_bookkeeping, migration 000006); this only calls it,
// at start and then every PURGE_EVERY_MS, from every instance (the deletes are idempotent, so two
// instances purging at once do no harm).
import type pg from 'pg';
import type { Logger } from './http/log.ts';

export const PURGE_EVERY_MS = 15 * 60_000;

export interface Housekeeping {
  /** Runs one purge now; resolves with what it deleted. */
  purgeNow(): Promise<Record<string, number>>;
  stop(): void;
}

export function startHousekeeping(
  pool: pg.Pool,
  logger: Logger,
  everyMs = PURGE_EVERY_MS,
): Housekeeping {
  const purgeNow = async () => {
    const { rows } = await pool.query<Record<string, number>>(
      'select * from weld_hidden.purge_auth_bookkeeping()',
    );
    return rows[0]!;
  };
  const run = () => {
    purgeNow().then(
      (purged) => logger.debug({ purged }, 'purged authentication bookkeeping'),
      (error: unknown) => logger.warn({ err: error }, 'purging authentication bookkeeping failed'),
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
