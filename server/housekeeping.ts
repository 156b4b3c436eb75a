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
//
// And every REFRESH_EVERY_MS, a round of the refresh of the slow reports' kept rows (examination
// progress, the package board, qualification expiry; migration 000035): one bounded call of
// weld_hidden.refresh_reports for each tenant with writes noted, or welders not computed today, so
// that no tenant waits for another's backlog; what a call leaves over, the next round takes. The
// reports are exact without it (they compute what is noted); it keeps them fast. Two instances
// never refresh one tenant at once (an advisory lock per tenant).
//
// And every ALERTS_EVERY_MS, the day's welder alerts of each tenant that has not had them
// (weld_hidden.send_welder_alerts: qualifications lapsing and lapsed, repair rates over the
// threshold): the first instance to ask on a day sends them; the others find them sent.
//
// And with each purge, the attachment files no attachment refers to any more: removed from the
// store, a batch at a time (sweepAttachmentFiles; weld_hidden.sweep_attachment_files).
import type pg from 'pg';
import type { AttachmentStore } from '../db/attachment-store.ts';
import { inTransaction, withQueryTimeout } from '../db/database.ts';
import type { Logger } from '../rest-adapter/http/log.ts';

export const PURGE_EVERY_MS = 15 * 60_000;
export const REAP_EVERY_MS = 1_000;
export const REFRESH_EVERY_MS = 1_000;
export const ALERTS_EVERY_MS = 60_000;

/** One call's limit: the function's chunks (100 lines, 20 packages, 100 welders) take seconds. */
const REFRESH_TIMEOUT_MS = 60_000;
/** A call's chunks, at full size (the function's defaults). */
const CHUNKS = { lines: 100, packages: 20, welders: 100 };

export interface RefreshRound {
  /** Tenants refreshed (not those another instance was refreshing). */
  tenants: number;
  lines: number;
  packages: number;
  welders: number;
  /** What the calls left for the next round. */
  leftOver: number;
  failed: Array<{ tenantId: string; error: unknown }>;
}

/**
 * One round: a call of weld_hidden.refresh_reports for each tenant that has something to
 * refresh, each in its own REPEATABLE READ transaction (the function requires it). A tenant whose
 * call fails is listed in `failed`, and the round goes on with the next; `stopped` ends it early.
 * `scales` (kept across rounds by the housekeeping) shrinks a tenant's chunks by half after each
 * failed call and grows them back after each that succeeds, so a tenant whose packages are too
 * large for a call's time still makes progress, a package at a time.
 */
export async function refreshReports(
  pool: pg.Pool,
  options: { stopped?: () => boolean; scales?: Map<string, number> } = {},
): Promise<RefreshRound> {
  const { stopped = () => false, scales = new Map<string, number>() } = options;
  const round: RefreshRound = {
    tenants: 0,
    lines: 0,
    packages: 0,
    welders: 0,
    leftOver: 0,
    failed: [],
  };
  const { rows } = await pool.query<{ tenant_id: string }>(
    'select t as tenant_id from weld_hidden.reports_due() t',
  );
  for (const { tenant_id: tenantId } of rows) {
    if (stopped()) break;
    const scale = scales.get(tenantId) ?? 1;
    try {
      const done = await refreshTenant(pool, tenantId, scale);
      if (!done) continue; // another instance is refreshing it
      if (scale * 2 < 1) scales.set(tenantId, scale * 2);
      else scales.delete(tenantId);
      round.tenants += 1;
      round.lines += done.lines;
      round.packages += done.packages;
      round.welders += done.welders;
      round.leftOver += done.left_over;
    } catch (error) {
      // (Overtaken by another instance's refresh, 40001, says nothing of the chunks' size.)
      if ((error as { code?: string }).code !== '40001') {
        scales.set(tenantId, Math.max(scale / 2, 1 / 128));
      }
      round.failed.push({ tenantId, error });
    }
  }
  return round;
}

async function refreshTenant(pool: pg.Pool, tenantId: string, scale: number) {
  const chunk = (size: number) => Math.max(1, Math.floor(size * scale));
  return inTransaction(pool, 'begin isolation level repeatable read', async (client) => {
    await client.query(`select set_config('statement_timeout', $1, true)`, [
      String(REFRESH_TIMEOUT_MS),
    ]);
    const result = await client.query<{
      lines: number;
      packages: number;
      welders: number;
      left_over: number;
    }>(
      withQueryTimeout(
        {
          text: 'select * from weld_hidden.refresh_reports($1, $2, $3, $4)',
          values: [tenantId, chunk(CHUNKS.lines), chunk(CHUNKS.packages), chunk(CHUNKS.welders)],
        },
        REFRESH_TIMEOUT_MS,
      ),
    );
    return result.rows[0];
  });
}

export interface Housekeeping {
  /** Runs one purge now; resolves with what it deleted (deleted_sessions, ...). */
  purgeNow(): Promise<Record<string, number>>;
  /** Stops the timers; resolves when the refresh call in flight has ended. */
  stop(): Promise<void>;
}

/**
 * The day's welder alerts for every tenant that has not had them: one transaction per tenant, so
 * one that fails (logged by the caller) leaves the others sent and is asked again next time.
 */
export async function sendWelderAlerts(
  pool: pg.Pool,
): Promise<{ sent: number; failed: Array<{ tenantId: string; error: unknown }> }> {
  const { rows } = await pool.query<{ tenant_id: string }>(
    'select t as tenant_id from weld_hidden.alerts_due() t',
  );
  let sent = 0;
  const failed: Array<{ tenantId: string; error: unknown }> = [];
  for (const { tenant_id: tenantId } of rows) {
    try {
      sent += await inTransaction(pool, 'begin', async (db) => {
        const { rows: done } = await db.query<{ sent: number }>(
          'select weld_hidden.send_welder_alerts($1) as sent',
          [tenantId],
        );
        return done[0]!.sent;
      });
    } catch (error) {
      failed.push({ tenantId, error });
    }
  }
  return { sent, failed };
}

/**
 * Removes from the store the files no attachment refers to any more (put over an hour ago), a
 * batch of `batch` per transaction until none is left: each batch's rows are deleted and the files
 * removed before it commits, so an upload of the same file waits for it and stores the bytes
 * again. A file the store cannot remove rolls its batch back (tried again next time). Returns how
 * many files were removed.
 */
export async function sweepAttachmentFiles(
  pool: pg.Pool,
  store: AttachmentStore,
  batch = 100,
): Promise<number> {
  let removed = 0;
  for (;;) {
    const swept = await inTransaction(pool, 'begin', async (db) => {
      const { rows } = await db.query<{ tenant_id: string; sha256: string }>(
        'select tenant_id, sha256 from weld_hidden.sweep_attachment_files($1)',
        [batch],
      );
      for (const row of rows) await store.delete({ tenantId: row.tenant_id, sha256: row.sha256 });
      return rows.length;
    });
    removed += swept;
    if (swept < batch) return removed;
  }
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
    refreshEveryMs?: number;
    alertsEveryMs?: number;
    /** Where attachments live: files no attachment refers to leave it with each purge. */
    attachmentStore?: AttachmentStore;
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
    const swept = options.attachmentStore
      ? await sweepAttachmentFiles(pool, options.attachmentStore)
      : 0;
    return { ...rows[0]!, deleted_attachment_files: swept };
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
  let stopped = false;
  let refreshing: Promise<void> | undefined;
  const scales = new Map<string, number>();
  // A tenant whose refresh keeps failing is said once a minute, not every second.
  const warned = new Map<string, number>();
  const refresh = () => {
    if (refreshing || stopped) return; // (a slow round is not overtaken by the next)
    refreshing = refreshReports(pool, { stopped: () => stopped, scales })
      .then(
        (round) => {
          if (round.tenants) {
            logger.debug({ refreshed: { ...round, failed: undefined } }, 'report rows refreshed');
          }
          for (const { tenantId, error } of round.failed) {
            // Overtaken by another instance's refresh of the tenant (40001): the next round
            // runs it again.
            const code = (error as { code?: string }).code;
            const last = warned.get(tenantId) ?? 0;
            if (code === '40001' || Date.now() - last < 60_000) {
              logger.debug({ err: error, tenantId }, 'report refresh failed; next round');
            } else {
              warned.set(tenantId, Date.now());
              logger.warn(
                { err: error, tenantId, scale: scales.get(tenantId) },
                'refreshing report rows failed; smaller chunks next round',
              );
            }
          }
        },
        (error: unknown) => logger.warn({ err: error }, 'refreshing report rows failed'),
      )
      .finally(() => (refreshing = undefined));
  };
  let alerting: Promise<void> | undefined;
  const alert = () => {
    if (alerting || stopped) return;
    alerting = sendWelderAlerts(pool)
      .then(
        ({ sent, failed }) => {
          if (sent) logger.info({ sent }, 'welder alerts sent');
          for (const { tenantId, error } of failed) {
            logger.warn({ err: error, tenantId }, 'sending welder alerts failed; next time');
          }
        },
        (error: unknown) => logger.warn({ err: error }, 'sending welder alerts failed'),
      )
      .finally(() => (alerting = undefined));
  };
  const firstAlerts = setTimeout(alert, 5_000);
  const alerter = setInterval(alert, options.alertsEveryMs ?? ALERTS_EVERY_MS);
  firstAlerts.unref();
  alerter.unref();
  const first = setTimeout(run, 1_000);
  const refresher = setInterval(refresh, options.refreshEveryMs ?? REFRESH_EVERY_MS);
  refresher.unref();
  const timer = setInterval(run, everyMs);
  const reaper = setInterval(reap, reapEveryMs);
  first.unref();
  timer.unref();
  reaper.unref();
  return {
    purgeNow,
    stop: async () => {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      clearInterval(reaper);
      clearInterval(refresher);
      clearTimeout(firstAlerts);
      clearInterval(alerter);
      await refreshing; // the call in flight ends; the round stops there
      await alerting;
    },
  };
}
