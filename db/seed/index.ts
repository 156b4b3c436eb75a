// Demo data: a realistic, reproducible piping project for one tenant.
//
//   weld-admin seed <tenant-slug> [--isos N] [--welds-per-iso M] [--seed S]
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
  const tenantId = await emptyTenant(db, slug);

  const rng = random(slug, seed);
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
    const written = await flushTables(db, tenantId, tables);
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

/** The id of the tenant to seed, which must have no ISOs yet. */
async function emptyTenant(db: pg.ClientBase, slug: string): Promise<string> {
  const tenant = (
    await db.query<{ id: string }>('select id from weld_public.tenants where slug = $1', [slug])
  ).rows[0];
  if (!tenant) throw new SeedError(`no tenant '${slug}'`);
  const hasData = await db.query('select 1 from weld_public.isos where tenant_id = $1 limit 1', [
    tenant.id,
  ]);
  if (hasData.rowCount) {
    throw new SeedError(`tenant '${slug}' already has ISOs; seed an empty tenant`);
  }
  return tenant.id;
}
