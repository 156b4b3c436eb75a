// Benchmark: how long `weld-admin seed` takes to load a project (target: 100,000 welds in under a
// minute). Runs on a throwaway embedded cluster of its own (or DATABASE_URL, if set), prints the
// result and records it in bench/RESULTS.md.
//
//   npm run bench:seed [-- --isos 2000 --welds-per-iso 50]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadDatabaseConfig } from '../db/config.ts';
import { connectClient } from '../db/database.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';

const { values } = parseArgs({
  options: {
    isos: { type: 'string', default: '2000' },
    'welds-per-iso': { type: 'string', default: '50' },
  },
});
const isos = Number(values.isos);
const weldsPerIso = Number(values['welds-per-iso']);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-bench-seed-'));
const config = loadDatabaseConfig({
  ...process.env,
  DATA_DIR: process.env.DATABASE_URL ? '' : dataDir,
});
const target = await openMigratedDatabase(config.database, { migrate: true });
const db = await connectClient(target.ownerUrl);
try {
  const slug = `bench-${Date.now()}`;
  await addTenant(db, { slug, origins: [`http://${slug}.bench`] });
  const started = performance.now();
  await db.query('begin');
  const summary = await seedTenant(db, slug, { isos, weldsPerIso, seed: 1 });
  await db.query('commit');
  const seconds = (performance.now() - started) / 1000;
  const line =
    `| ${new Date().toISOString().slice(0, 10)} | ${summary.welds.toLocaleString('en')} | ` +
    `${(summary.historyRows + summary.filmIntervals).toLocaleString('en')} | ${seconds.toFixed(1)} s | ` +
    `${Math.round(summary.welds / seconds).toLocaleString('en')} | ${seconds < 60 ? 'met' : 'MISSED'} |`;
  console.log(
    `seeded ${summary.welds} welds (${JSON.stringify(summary)}) in ${seconds.toFixed(1)} s`,
  );
  recordResult(line);
} finally {
  await db.end();
  await target.release();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/** Keeps the newest runs of the seed table in bench/RESULTS.md (newest first). */
function recordResult(line: string): void {
  const file = path.join(import.meta.dirname, 'RESULTS.md');
  const header = [
    '## Seed: `weld-admin seed` (target: 100,000 welds in under 60 s)',
    '',
    'One transaction, embedded PostgreSQL 18, 2 cores. Rows also include status history, NDT records,',
    'film intervals, inspections and test package links, all with their foreign keys checked.',
    '',
    '| date | welds | history + film rows | time | welds/s | target |',
    '|---|---|---|---|---|---|',
  ];
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmark results\n';
  const start = text.indexOf(header[0]!);
  let rows: string[] = [];
  let before = text.trimEnd() + '\n\n';
  let after = '';
  if (start >= 0) {
    const end = text.indexOf('\n## ', start + 1);
    const section = text.slice(start, end < 0 ? undefined : end);
    rows = section.split('\n').filter((l) => /^\| \d{4}-/.test(l));
    before = text.slice(0, start);
    after = end < 0 ? '' : text.slice(end + 1);
  }
  const table = [...header, line, ...rows.slice(0, 9)].join('\n');
  fs.writeFileSync(file, `${before}${table}\n${after ? '\n' + after : ''}`);
}
