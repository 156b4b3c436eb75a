// Benchmark of the weld register import and export (db/weld-register.ts, migration 000013):
//
//   a 100,000-row dry run                          target < 10 s
//   a 100,000-row import (2,000 new ISOs)          target < 20 s (F9), < 8 s (F16)
//   its 102,000 events placed by the relay         (after the commit, as the server's loop does)
//   the same file again (100,000 unchanged)
//   100,000 welds changed (another material)
//   the export of those 100,000 welds as CSV
//
// The database (weld_import_bench in the bench cluster, bench/.data) is made afresh; each run is
// a new tenant with the welders and WPSs of a small seeded project, so runs do not depend on
// each other. The file is written to bench/.data first; the import reads it as the server reads
// an upload it has spooled (runImport, as an engineer: row security, grants, the events and all).
// PostgreSQL keeps its default durability. Peak RSS of this process is reported: memory must not grow with the file.
//
//   npm run bench:import [-- --rows 100000 --runs 3]
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { connectClient, createPool, withContext } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';
import { exportWelds, runImport, type ImportOutcome } from '../db/weld-register.ts';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
  },
});
const ROWS = Number(values.rows);
const RUNS = Number(values.runs);
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const log = (message: string) => console.log(`[bench:import] ${message}`);

fs.mkdirSync(DATA_DIR, { recursive: true });
const cluster = await openEmbeddedCluster({ dataDir: DATA_DIR, port: 0 });
// A fresh database each time: the numbers are of this build's migrations on an empty cluster.
const maintenance = await connectClient(embeddedUrl(cluster, 'postgres'));
await maintenance.query('drop database if exists weld_import_bench with (force)');
await maintenance.end();
const rootUrl = embeddedUrl(cluster, 'weld_import_bench');
const target = await openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: true });
const owner = await connectClient(target.ownerUrl);
const pool = createPool(target.authenticatorUrl, { max: 2 });
const results: Record<string, number[]> = {};
const measure = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  const result = await work();
  const seconds = (performance.now() - started) / 1000;
  (results[name] ??= []).push(seconds);
  log(`${name}: ${seconds.toFixed(2)} s`);
  return result;
};
let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);

try {
  for (let run = 1; run <= RUNS; run++) {
    const slug = `import-${Date.now().toString(36)}`;
    const tenantId = (await addTenant(owner, { slug, origins: [`http://${slug}.bench`] })).id;
    await owner.query('begin');
    await seedTenant(owner, slug, { isos: 2, weldsPerIso: 5, seed: run });
    await owner.query('commit');
    const context = { role: 'weld_engineer' as const, tenantId };
    const file = path.join(DATA_DIR, 'register.csv');
    await writeRegister(file, tenantId, 'A106-B');
    const importFile = (dryRun: boolean) =>
      runImport(pool, context, fs.createReadStream(file), { dryRun });

    expectCounts(await measure('dry run', () => importFile(true)), { created: ROWS });
    expectCounts(await measure('import', () => importFile(false)), { created: ROWS });
    // What the server's relay then does: give the import's events their ids in the feed.
    const placed = await measure('its events placed by the relay', () => placeAll(tenantId));
    if (placed !== ROWS + ROWS / 50) throw new Error(`placed ${placed} events`);
    expectCounts(await measure('same file again', () => importFile(false)), { unchanged: ROWS });
    await writeRegister(file, tenantId, 'A333-6');
    expectCounts(await measure('every weld changed', () => importFile(false)), { updated: ROWS });
    await placeAll(tenantId);
    const exported = await measure('export', () =>
      withContext(pool, context, (db) =>
        exportWelds(db, { sql: '', values: [] }, new Writable({ write: (_c, _e, done) => done() })),
      ),
    );
    if (exported < ROWS) throw new Error(`exported ${exported} welds, expected ${ROWS} or more`);
  }
  log(`peak RSS of this process: ${(peakRss / 1024 / 1024).toFixed(0)} MB`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`\n| ${ROWS.toLocaleString('en')} rows | median of ${RUNS} | runs |\n|---|---|---|`);
  for (const [name, xs] of Object.entries(results)) {
    console.log(
      `| ${name} | ${median(xs).toFixed(1)} s | ${xs.map((x) => x.toFixed(1)).join(', ')} |`,
    );
  }
} finally {
  clearInterval(sampler);
  await pool.end();
  await owner.end();
  await target.release();
  await cluster.stop();
}

/** Runs the relay for the tenant until nothing waits (as the server's loop would); the count. */
async function placeAll(tenantId: string): Promise<number> {
  let total = 0;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(
      'select weld_hidden.place_events($1, true) as n',
      [tenantId],
    );
    if (rows[0]!.n === 0) return total;
    total += rows[0]!.n;
  }
}

/** ROWS welds on ROWS / 50 new ISOs, with the tenant's welders and WPSs. */
async function writeRegister(file: string, tenantId: string, material: string): Promise<void> {
  const welders = await owner.query<{ stamp: string }>(
    'select stamp from weld_public.welders where tenant_id = $1 order by stamp',
    [tenantId],
  );
  const wps = await owner.query<{ wps_number: string; revision: string }>(
    'select wps_number, revision from weld_public.wps where tenant_id = $1 order by 1, 2',
    [tenantId],
  );
  const out = fs.createWriteStream(file);
  out.write(
    'isoNumber,lineNumber,weldNumber,type,size,schedule,wallThickness,material,welderStamp,wpsNumber,wpsRevision,weldedOn\n',
  );
  for (let i = 0; i < ROWS; i++) {
    const iso = Math.floor(i / 50);
    const welder = welders.rows[i % welders.rows.length]!.stamp;
    const procedure = wps.rows[i % wps.rows.length]!;
    const day = String(1 + (i % 28)).padStart(2, '0');
    const line =
      `ISO-${String(iso).padStart(5, '0')},L-${Math.floor(iso / 4)},W${String(i % 50).padStart(3, '0')},` +
      `${['BW', 'SW', 'FW'][i % 3]},${['2', '4', '0.75'][i % 3]},40,0.154,${material},${welder},` +
      `${procedure.wps_number},${procedure.revision},2026-03-${day}\n`;
    if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  out.end();
  await new Promise<void>((resolve) => out.once('close', () => resolve()));
}

function expectCounts(outcome: ImportOutcome, expected: Record<string, number>): void {
  if (!outcome.ok) throw new Error(`refused: ${JSON.stringify(outcome.errors.slice(0, 3))}`);
  const counts = outcome.dryRun ? outcome.counts : outcome.record;
  for (const [name, value] of Object.entries(expected)) {
    if (counts[name as keyof typeof counts] !== value) {
      throw new Error(`${name}: ${String(counts[name as keyof typeof counts])}, expected ${value}`);
    }
  }
}
