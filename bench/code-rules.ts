// Benchmark of the code rules (migration 000009) on a tenant of 500,000 welds:
//
//   readiness of a test package of 5,000 welds        target < 200 ms
//   GET /isos/{id}/examination on a 2,000-weld line   target < 200 ms
//   drawing the random sample of a 2,000-weld line     target < 1 s
//
// Each is timed as the SQL the REST route runs, as an inspector under row security, after a
// warm-up (the pool's connections have planned it once, as in the service), and the numbers go to
// bench/RESULTS.md. The tenant is seeded once into bench/.data (as bench/run.ts does) and shaped
// as the owner: 40 ISO sheets put on one line of ~2,000 welds, and one package made of sheets
// until it holds 5,000 welds. Each draw runs in a transaction that is rolled back, so every
// repetition draws the whole line from nothing.
//
//   npm run bench:rules [-- --repetitions 20]
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { connectClient, createPool, sessionSettings, withContext } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';

const { values } = parseArgs({
  options: {
    repetitions: { type: 'string', default: '20' },
    welds: { type: 'string', default: '500000' },
  },
});
const REPETITIONS = Number(values.repetitions);
const WELDS = Number(values.welds);
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const SLUG = 'rules';
const LINE = 'BENCH-LINE-2000';
const PACKAGE = 'BENCH-TP-5000';
const log = (message: string) => console.log(`[bench:rules] ${message}`);

fs.mkdirSync(DATA_DIR, { recursive: true });
const cluster = await openEmbeddedCluster({ dataDir: DATA_DIR, port: 0 });
const target = await openMigratedDatabase(
  { kind: 'root', rootUrl: embeddedUrl(cluster, 'weld_rules_bench') },
  { migrate: true },
);
const owner = await connectClient(target.ownerUrl);
const pool = createPool(target.authenticatorUrl, { max: 2 });
try {
  const { tenantId, userId } = await tenantOfSize(WELDS);
  const { lineWelds, packageId, packageWelds, isoId } = await shapeData(tenantId);
  const context = { role: 'weld_inspector' as const, tenantId, userId };
  const as = <T>(work: (c: pg.PoolClient) => Promise<T>) => withContext(pool, context, work);

  const readiness = await timed('readiness', () =>
    as((c) =>
      c.query(
        `select count(*) from weld_public.test_packages p,
                weld_public.test_packages_readiness_reasons(p) r where p.id = $1`,
        [packageId],
      ),
    ),
  );
  // A draw first (committed), so the examination has selections to count.
  await as((c) =>
    c.query(`select count(*) from weld_public.draw_examination_selection('RT', $1, null, 1)`, [
      LINE,
    ]),
  );
  const examination = await timed('examination', () =>
    as((c) =>
      c.query(
        `select count(*) from weld_public.isos i, weld_public.isos_examination(i) e where i.id = $1`,
        [isoId],
      ),
    ),
  );
  await owner.query(
    `delete from weld_public.examination_selections where tenant_id = $1 and tier = 'random'`,
    [tenantId],
  );
  let drawn = 0;
  const draw = await timed('draw', () => drawRolledBack(context, (n) => (drawn = n)));

  const rows = [
    [`readiness of a package of ${packageWelds.toLocaleString('en')} welds`, readiness, 200],
    [
      `GET /isos/{id}/examination, line of ${lineWelds.toLocaleString('en')} welds`,
      examination,
      200,
    ],
    [`draw on a line of ${lineWelds.toLocaleString('en')} welds (${drawn} selected)`, draw, 1000],
  ] as const;
  for (const [name, t, limit] of rows) {
    log(
      `${name}: p50 ${t.p50.toFixed(1)} ms, p95 ${t.p95.toFixed(1)} ms, max ${t.max.toFixed(1)} ms (target < ${limit} ms)`,
    );
  }
  record(rows);
} finally {
  await pool.end();
  await owner.end();
  await target.release();
  await cluster.stop();
}

/** The bench tenant, seeded once (reruns reuse it), with an inspector to act as. */
async function tenantOfSize(welds: number): Promise<{ tenantId: string; userId: string }> {
  const found = await owner.query<{ id: string; n: number }>(
    `select t.id, (select count(*)::int from weld_public.welds w where w.tenant_id = t.id) as n
       from weld_public.tenants t where t.slug = $1`,
    [SLUG],
  );
  let tenantId = found.rows[0]?.id;
  if (!tenantId)
    tenantId = (await addTenant(owner, { slug: SLUG, origins: [`http://${SLUG}.bench`] })).id;
  if ((found.rows[0]?.n ?? 0) === 0) {
    log(`seeding ${welds.toLocaleString('en')} welds (once; kept in bench/.data)`);
    const started = Date.now();
    await owner.query('begin');
    await seedTenant(owner, SLUG, { isos: welds / 50, weldsPerIso: 50, seed: 11 });
    await owner.query('commit');
    await owner.query('analyze');
    log(`seeded in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  const user = await owner.query<{ id: string }>(
    `insert into weld_public.users (tenant_id, user_name, display_name, role)
     values ($1, 'bench-inspector', 'Bench inspector', 'inspector')
     on conflict (tenant_id, user_name) do update set active = true
     returning id`,
    [tenantId],
  );
  return { tenantId, userId: user.rows[0]!.id };
}

/**
 * One line of about 2,000 welds (the first 40 sheets moved onto it) and one open package of
 * sheets holding 5,000 welds (the next ones), made once.
 */
async function shapeData(tenantId: string) {
  await owner.query(
    `update weld_public.isos set line_number = $2
      where tenant_id = $1 and line_number <> $2
        and id in (select id from weld_public.isos where tenant_id = $1 order by iso_number limit 40)
        and not exists (select from weld_public.isos where tenant_id = $1 and line_number = $2)`,
    [tenantId, LINE],
  );
  const pkg = await owner.query<{ id: string }>(
    `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
     values ($1, $2, 'hydro')
     on conflict (tenant_id, package_number) do update set state = 'open' returning id`,
    [tenantId, PACKAGE],
  );
  const packageId = pkg.rows[0]!.id;
  await owner.query(
    `with sheets as (
       select i.id, i.iso_number, count(w.id) as welds
         from weld_public.isos i
         join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
        where i.tenant_id = $1 and i.line_number <> $3
        group by i.id, i.iso_number
        order by i.iso_number offset 100
     ), running as (
       select s.id, sum(s.welds) over (order by s.iso_number) as upto from sheets s
     )
     insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id)
     select $1, $2, r.id from running r
      where r.upto <= 5000
        and not exists (select from weld_public.test_package_isos
                         where tenant_id = $1 and test_package_id = $2)`,
    [tenantId, packageId, LINE],
  );
  const counts = await owner.query<{ line: number; package: number; iso: string }>(
    `select (select count(*)::int from weld_public.welds w join weld_public.isos i
               on i.tenant_id = w.tenant_id and i.id = w.iso_id
             where w.tenant_id = $1 and i.line_number = $3) as line,
            (select count(*)::int from weld_public.test_package_isos pi join weld_public.welds w
               on w.tenant_id = pi.tenant_id and w.iso_id = pi.iso_id
             where pi.tenant_id = $1 and pi.test_package_id = $2) as package,
            (select id from weld_public.isos where tenant_id = $1 and line_number = $3
              order by iso_number limit 1) as iso`,
    [tenantId, packageId, LINE],
  );
  const c = counts.rows[0]!;
  log(`line ${LINE}: ${c.line} welds; package ${PACKAGE}: ${c.package} welds`);
  return { lineWelds: c.line, packageId, packageWelds: c.package, isoId: c.iso };
}

/** A draw of the whole line in a transaction rolled back afterwards. */
async function drawRolledBack(
  context: Parameters<typeof sessionSettings>[0],
  count: (n: number) => void,
): Promise<void> {
  const client = await pool.connect();
  try {
    const settings = Object.entries(sessionSettings(context));
    await client.query('begin');
    await client.query(
      `select ${settings.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(', ')}`,
      settings.flat(),
    );
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from weld_public.draw_examination_selection('RT', $1, null, 42)`,
      [LINE],
    );
    count(rows[0]!.n);
  } finally {
    await client.query('rollback');
    client.release();
  }
}

interface Timing {
  p50: number;
  p95: number;
  max: number;
}

/** Three warm-up runs, then REPETITIONS timed ones. */
async function timed(name: string, run: () => Promise<unknown>): Promise<Timing> {
  for (let i = 0; i < 3; i++) await run();
  const times: number[] = [];
  for (let i = 0; i < REPETITIONS; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  log(`${name}: ${times.length} runs`);
  return { p50: at(0.5), p95: at(0.95), max: times[times.length - 1]! };
}

/** Replaces the code-rules section of bench/RESULTS.md with this run. */
function record(rows: ReadonlyArray<readonly [string, Timing, number]>): void {
  const file = path.join(ROOT, 'bench', 'RESULTS.md');
  const title = '## Code rules (`npm run bench:rules`)';
  const lines = [
    title,
    '',
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, a tenant of ${WELDS.toLocaleString('en')} seeded welds,`,
    `embedded PostgreSQL 18 on a 2-core VM, the SQL each REST route runs, as an inspector under row`,
    `security, in a transaction of its own; ${REPETITIONS} runs after 3 warm-up runs.`,
    '',
    '| case | p50 ms | p95 ms | max ms | target | met |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      ([name, t, limit]) =>
        `| ${name} | ${t.p50.toFixed(1)} | ${t.p95.toFixed(1)} | ${t.max.toFixed(1)} | < ${limit} ms | ${t.p95 < limit ? 'yes' : '**no**'} |`,
    ),
  ].join('\n');
  const text = fs.readFileSync(file, 'utf8');
  const start = text.indexOf(title);
  const next = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
  const updated =
    start < 0
      ? `${text.trimEnd()}\n\n${lines}\n`
      : `${text.slice(0, start)}${lines}\n${next < 0 ? '' : text.slice(next)}`;
  fs.writeFileSync(file, updated);
}
