// Demo data: a realistic, reproducible piping project for one tenant.
//
//   weld-admin seed <tenant-slug> [--isos N] [--welds-per-iso M] [--seed S] [--append]
//
// A tenant is seeded empty; with --append, a tenant that has ISOs gets one more project beside
// what it has: batch 2, 3, ... whose natural keys (ISO, line, stamp, PQR, WPS, report and package
// numbers) start with "B2-", "B3-", ..., and whose ids come from the batch as well, so nothing
// clashes with the rows already there, seeded or not.
//
// Reproducible: the same tenant slug and --seed give the same rows, ids included, in any
// database. Every number, date, choice and status depends on --seed alone, and the ids on the
// slug as well (random.ts): two tenants seeded with the same --seed hold identical data apart
// from their ids, and have no id in common.
//
// The project: PQRs backing approved WPSs, and welders with stamps and qualifications
// (procedures.ts); lines of one to four ISO sheets with line numbers, fluid services and the RT
// percentage B31.3 asks for, a test package per line and a visual inspection per ISO (lines.ts);
// welds whose type, size, schedule, wall thickness and material fit the line, with status
// histories that follow the default transition rules (accepted, rejected and repaired, a few
// voided) and RT records with film intervals, and defects where a weld failed (welds.ts).
//
// Rows go in as columnar batches through unnest() (tables.ts), a few thousand welds at a time,
// all in the caller's transaction (weld-admin opens one), written as the owner.
import type pg from 'pg';
import { addLines } from './lines.ts';
import { addProcedures, addWelders } from './procedures.ts';
import { random } from './random.ts';
import { flushTables, seedTables } from './tables.ts';

export interface SeedOptions {
  isos: number;
  weldsPerIso: number;
  seed: number;
  /** Add a project beside the tenant's data rather than require an empty tenant. */
  append?: boolean;
  /** Called after each batch with the welds written so far. */
  onProgress?: (written: number, total: number) => void;
}

export interface SeedSummary {
  isos: number;
  welds: number;
  welders: number;
  historyRows: number;
  ndtRecords: number;
  filmIntervals: number;
}

export class SeedError extends Error {}

/** Welds made before the rows so far are written (at the end of an ISO sheet). */
const BATCH_WELDS = 5000;

/** Writes the project; the session writes no events afterwards (see below). */
export async function seedTenant(
  db: pg.ClientBase,
  slug: string,
  options: SeedOptions,
): Promise<SeedSummary> {
  const { isos, weldsPerIso, seed } = options;
  if (!Number.isInteger(isos) || isos < 1 || isos > 100_000) {
    throw new SeedError('--isos must be a whole number from 1 to 100000');
  }
  if (!Number.isInteger(weldsPerIso) || weldsPerIso < 1 || weldsPerIso > 10_000) {
    throw new SeedError('--welds-per-iso must be a whole number from 1 to 10000');
  }
  const { tenantId, batch } = await seedBatch(db, slug, options.append ?? false);
  const prefix = batch === 1 ? '' : `B${batch}-`;

  const rng = random(batch === 1 ? slug : `${slug}#${batch}`, seed);
  const tables = seedTables();
  const total = isos * weldsPerIso;
  const summary: SeedSummary = {
    isos: 0,
    welds: 0,
    welders: 0,
    historyRows: 0,
    ndtRecords: 0,
    filmIntervals: 0,
  };
  const flush = async () => {
    const written = await flushTables(db, tenantId, tables, prefix);
    summary.isos += written.isos;
    summary.welds += written.welds;
    summary.welders += written.welders;
    summary.historyRows += written.history;
    summary.ndtRecords += written.ndt;
    summary.filmIntervals += written.films;
    options.onProgress?.(summary.welds, total);
  };

  // A generated history is no news: it writes no events, so the feed of a seeded tenant starts
  // empty. The outbox honours this for the owner's sessions only (migration 000010) and reads it
  // at commit, which the caller may hold back (a transaction around the seed), so it stays set
  // for the session: seed on a connection of its own.
  await db.query(`select set_config('weld.suppress_events', 'on', false)`);
  const wps = addProcedures(rng, tables);
  const welders = addWelders(rng, tables, wps, total);
  await flush();
  for (const _sheet of addLines(rng, tables, { isos, weldsPerIso, wps, welders })) {
    if (tables.welds.size >= BATCH_WELDS) await flush();
  }
  await flush();
  return summary;
}

/**
 * The tenant to seed and the batch: 1 for a tenant with no ISOs; with `append`, one more than the
 * highest batch its ISO numbers show (a tenant with ISOs of its own counts as batch 1).
 */
async function seedBatch(
  db: pg.ClientBase,
  slug: string,
  append: boolean,
): Promise<{ tenantId: string; batch: number }> {
  const tenant = (
    await db.query<{ id: string }>('select id from weld_public.tenants where slug = $1', [slug])
  ).rows[0];
  if (!tenant) throw new SeedError(`no tenant '${slug}'`);
  const { rows } = await db.query<{ any: boolean; batch: number | null }>(
    `select count(*) > 0 as any,
            max(substring(iso_number from '^B([0-9]{1,6})-')::int) as batch
       from weld_public.isos where tenant_id = $1`,
    [tenant.id],
  );
  const { any, batch } = rows[0]!;
  if (!any) return { tenantId: tenant.id, batch: 1 };
  if (!append) {
    throw new SeedError(
      `tenant '${slug}' already has ISOs; seed an empty tenant, or add a project beside them with --append`,
    );
  }
  return { tenantId: tenant.id, batch: Math.max(batch ?? 1, 1) + 1 };
}
