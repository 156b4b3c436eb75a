// `npm run bench:status-sql`: what one weld status change costs PostgreSQL, and what each trigger
// on its way adds. One session, no HTTP, no WAL flush (synchronous_commit off), the deferred
// triggers fired at each statement (SET CONSTRAINTS ALL IMMEDIATE), so the time is PostgreSQL's
// CPU for the change: weld_public.change_weld_status as an inspector of tenant t01 on PENDING
// welds of the data `npm run bench` seeds (bench/.data, or --data). Then once more with each
// trigger disabled in turn. Everything runs in one transaction that is rolled back: the data is
// left as it was.
//
//   npm run bench:status-sql [-- --changes 300 --rounds 3 --data <dir>]
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectClient } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';

const { values } = parseArgs({
  options: {
    changes: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '3' },
    data: { type: 'string', default: path.join(import.meta.dirname, '.data') },
  },
});
const CHANGES = Number(values.changes);
const ROUNDS = Number(values.rounds);
const WARM_UP = 20;

/** The triggers a status change meets, by table, as the variants disable them. */
const VARIANTS: Array<[string, string[]]> = [
  ['everything', []],
  ['without package_open (released packages)', ['weld_public.welds:_100_package_open_update']],
  ['without code_checks (refuse mode)', ['weld_public.welds:_200_code_checks_update']],
  ['without iso_weld_counts (the ISO rollup)', ['weld_public.welds:_500_iso_weld_counts_update']],
  ['without the outbox (no event)', ['weld_public.welds:_900_outbox']],
  [
    'without the report rollups (F17)',
    [
      'weld_public.welds:_510_report_facts_update',
      'weld_public.weld_status_history:_510_report_facts_insert',
    ],
  ],
  ['without the report notes (F17 kept rows)', ['weld_public.welds:_520_report_stale_update']],
  [
    'without the history triggers',
    [
      'weld_public.weld_status_history:_100_ndt_cause',
      'weld_public.weld_status_history:_200_reexamined',
      'weld_public.weld_status_history:_200_follow',
    ],
  ],
];

const cluster = await openEmbeddedCluster({ dataDir: values.data, port: 0 });
const db = await connectClient(embeddedUrl(cluster, 'weld_bench'));
try {
  const { rows: tenants } = await db.query<{ tenant: string; inspector: string }>(
    `select t.id as tenant,
            (select u.id from weld_public.users u where u.tenant_id = t.id and u.role = 'inspector' limit 1) as inspector
       from weld_public.tenants t where t.slug = 't01'`,
  );
  const t01 = tenants[0];
  if (!t01) throw new Error('no tenant t01: run `npm run bench` once to seed bench/.data');
  const { rows: welds } = await db.query<{ id: string }>(
    `select id from weld_public.welds where tenant_id = $1 and status = 'PENDING' limit $2`,
    [t01.tenant, CHANGES + WARM_UP],
  );
  if (welds.length < CHANGES + WARM_UP) throw new Error('not enough PENDING welds in t01');

  /** ms per status change with `disabled` triggers off, in a transaction rolled back after. */
  const measure = async (disabled: string[]) => {
    await db.query('begin');
    try {
      await db.query('set local synchronous_commit = off');
      for (const name of disabled) {
        const [table, trigger] = name.split(':') as [string, string];
        await db.query(`alter table ${table} disable trigger ${trigger}`);
      }
      await db.query('set constraints all immediate');
      await db.query(
        `select set_config('role', 'weld_inspector', true),
                set_config('jwt.claims.tenant_id', $1, true),
                set_config('jwt.claims.user_id', $2, true)`,
        [t01.tenant, t01.inspector],
      );
      const change = (id: string) =>
        db.query(`select 1 from weld_public.change_weld_status($1, 'ACCEPTED')`, [id]);
      for (const { id } of welds.slice(0, WARM_UP)) await change(id);
      const start = process.hrtime.bigint();
      for (const { id } of welds.slice(WARM_UP)) await change(id);
      return Number(process.hrtime.bigint() - start) / 1e6 / CHANGES;
    } finally {
      await db.query('rollback');
    }
  };

  console.log(`| case | ms per status change (median of ${ROUNDS}) | each round |`);
  console.log('|---|---|---|');
  for (const [name, disabled] of VARIANTS) {
    const rounds: number[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await measure(disabled));
    const median = [...rounds].sort((x, y) => x - y)[Math.floor(ROUNDS / 2)]!;
    console.log(
      `| ${name} | ${median.toFixed(2)} | ${rounds.map((x) => x.toFixed(2)).join(', ')} |`,
    );
  }
} finally {
  await db.end();
  await cluster.stop();
}
