// The demo data generator: reproducible, consistent with the rules it claims to follow, and
// careful about where it writes. (Its speed is measured by bench/seed.ts, not here.)
import assert from 'node:assert/strict';
import test from 'ava';
import type pg from 'pg';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { runCli } from '../helpers/server.ts';

const TABLES = [
  'isos', 'welds', 'welders', 'pqrs', 'wps', 'wps_pqrs', 'welder_qualifications',
  'weld_status_history', 'ndt_records', 'ndt_record_welds', 'film_intervals',
  'film_interval_welds', 'inspections', 'inspection_welds', 'test_packages',
  'test_package_isos', 'test_package_welds',
]; // prettier-ignore

type Row = Record<string, unknown>;

/** Every seeded row of a tenant, without the tenant id (and the history's generated key). */
async function snapshot(db: pg.Client, tenantId: string): Promise<Record<string, Row[]>> {
  const result: Record<string, Row[]> = {};
  for (const table of TABLES) {
    const drop = table === 'weld_status_history' ? ` - 'id'` : '';
    const { rows } = await db.query<{ row: string }>(
      `select (to_jsonb(t) - 'tenant_id'${drop})::text as row
         from weld_public.${table} t where tenant_id = $1 order by 1`,
      [tenantId],
    );
    result[table] = rows.map((r) => JSON.parse(r.row) as Row);
  }
  return result;
}

/** The columns that name a row apart from its id; an id among them stands for its row's name. */
const NATURAL_KEYS: Record<string, string[]> = {
  pqrs: ['pqr_number'],
  wps: ['wps_number', 'revision'],
  welders: ['stamp'],
  welder_qualifications: ['welder_id', 'wps_id', 'coupon_diameter_in'],
  isos: ['iso_number'],
  welds: ['iso_id', 'weld_number'],
  ndt_records: ['method', 'report_number'],
  film_intervals: ['ndt_record_id', 'label'],
  test_packages: ['package_number'],
};
const isId = (column: string) => /(^|_)id$/.test(column);

/**
 * A snapshot with every id, and every reference to one, replaced by the name of its row (its
 * natural key; an inspection's is the welds it covers): equal for two tenants that hold the same
 * data under different ids.
 */
function withoutIds(rows: Record<string, Row[]>): Record<string, string[]> {
  const names = new Map<unknown, string>();
  const taken = new Set<string>();
  const name = (id: unknown) => names.get(id) ?? assert.fail(`no row has the id ${String(id)}`);
  const addName = (table: string, id: unknown, key: string[]) => {
    const named = `${table} ${key.join(' ')}`;
    assert.ok(!names.has(id) && !taken.has(named), `${table}: ${String(id)} is not ${named} alone`);
    names.set(id, named);
    taken.add(named);
  };
  for (const [table, columns] of Object.entries(NATURAL_KEYS)) {
    for (const row of rows[table]!) {
      addName(
        table,
        row.id,
        columns.map((column) => (isId(column) ? name(row[column]) : String(row[column]))),
      );
    }
  }
  for (const inspection of rows.inspections!) {
    const covered = rows.inspection_welds!.filter((r) => r.inspection_id === inspection.id);
    addName('inspections', inspection.id, covered.map((r) => name(r.weld_id)).sort());
  }
  return Object.fromEntries(
    TABLES.map((table) => [
      table,
      rows[table]!.map((row) =>
        JSON.stringify(
          Object.fromEntries(
            Object.entries(row).map(([column, value]) => [
              column,
              isId(column) && value !== null ? name(value) : value,
            ]),
          ),
        ),
      ).sort(),
    ]),
  );
}

/** Every id a tenant's seeded rows have. */
const idsOf = (rows: Record<string, Row[]>) =>
  Object.values(rows).flatMap((table) => table.map((row) => row.id).filter(Boolean));

async function seeded(db: pg.Client, slug: string, seed: number) {
  const tenant = await addTenant(db, { slug, origins: [`http://${slug}.test`] });
  await db.query('begin');
  const summary = await seedTenant(db, slug, { isos: 30, weldsPerIso: 20, seed });
  await db.query('commit');
  return { tenantId: tenant.id, summary };
}

test('the same tenant slug and --seed give the same rows, ids included, in another database', async (t) => {
  const snapshots = [];
  for (const _database of [1, 2]) {
    const { target } = await migratedDatabase(t);
    const db = await ownerClient(target);
    t.teardown(() => db.end());
    const { tenantId, summary } = await seeded(db, 'acme', 42);
    t.like(summary, { isos: 30, welds: 600 });
    // A generated history is no news: the seed writes no events.
    const events = await db.query('select count(*)::int as n from weld_public.events');
    t.is(events.rows[0].n, 0);
    snapshots.push(await snapshot(db, tenantId));
  }
  const [one, two] = snapshots;
  for (const table of TABLES) {
    t.true(one![table]!.length > 0, `${table} has rows`);
    t.deepEqual(two![table], one![table], table);
  }
});

test('the same --seed in another tenant gives the same data under ids of its own; another seed, other data', async (t) => {
  const { target } = await migratedDatabase(t);
  const db = await ownerClient(target);
  t.teardown(() => db.end());
  const a = await snapshot(db, (await seeded(db, 'first', 42)).tenantId);
  const b = await snapshot(db, (await seeded(db, 'second', 42)).tenantId);
  const c = await snapshot(db, (await seeded(db, 'third', 43)).tenantId);
  const [sa, sb, sc] = [a, b, c].map(withoutIds);
  for (const table of TABLES) {
    t.true(sa![table]!.length > 0, `${table} has rows`);
    t.deepEqual(sa![table], sb![table], table);
  }
  const idsOfB = new Set(idsOf(b));
  t.true(idsOfB.size > 600, 'the welds and more');
  t.deepEqual(
    idsOf(a).filter((id) => idsOfB.has(id)),
    [],
  );
  t.notDeepEqual(sa!.welds, sc!.welds);
});

test('seeded histories follow the default transition rules, and welds agree with them', async (t) => {
  const { target } = await migratedDatabase(t);
  const db = await ownerClient(target);
  t.teardown(() => db.end());
  const { tenantId } = await seeded(db, 'rules', 7);

  // Every step is a rule of the tenant's, with a reason where the rule requires one.
  const unruly = await db.query(
    `select h.from_status, h.to_status from weld_public.weld_status_history h
       left join weld_public.weld_transition_rules r
         on r.tenant_id = h.tenant_id and r.from_status = h.from_status and r.to_status = h.to_status
      where h.tenant_id = $1 and (r.tenant_id is null or (r.reason_required and h.reason is null))`,
    [tenantId],
  );
  t.deepEqual(unruly.rows, []);

  // Each weld's chain starts at PENDING, links up, and ends at the weld's status; its version
  // counts the changes and its repair cycle counts the repairs released.
  const broken = await db.query(
    `with chain as (
       select w.id, w.status, w.version, w.repair_cycle,
              array_agg(h.from_status::text order by h.id) as froms,
              array_agg(h.to_status::text order by h.id) as tos,
              count(h.id) as changes,
              count(*) filter (where h.to_status = 'REPAIR') as repairs
         from weld_public.welds w
         left join weld_public.weld_status_history h on h.tenant_id = w.tenant_id and h.weld_id = w.id
        where w.tenant_id = $1
        group by w.tenant_id, w.id)
     select id from chain
      where version <> 1 + changes
         or repair_cycle <> repairs
         or (changes = 0 and status <> 'PENDING')
         or (changes > 0 and (froms[1] <> 'PENDING' or tos[changes] <> status::text
              or froms[2:changes] <> tos[1:changes - 1]))`,
    [tenantId],
  );
  t.deepEqual(broken.rows, []);

  // The mix looks like a project: mostly accepted, some rejected and repaired, a few voided.
  const mix = await db.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from weld_public.welds where tenant_id = $1 group by status`,
    [tenantId],
  );
  const count = Object.fromEntries(mix.rows.map((r) => [r.status, r.n]));
  t.true(count.ACCEPTED! > 300, JSON.stringify(count));
  t.true(count.PENDING! > 0 && count.REJECTED! > 0, JSON.stringify(count));
  const repaired = await db.query(
    `select count(*)::int as n from weld_public.welds where tenant_id = $1 and repair_cycle > 0`,
    [tenantId],
  );
  t.true(repaired.rows[0].n > 0);

  // NDT-caused changes point at an RT record that covers the weld; rejected films name defects.
  const orphans = await db.query(
    `select 1 from weld_public.weld_status_history h
      where h.tenant_id = $1 and h.cause = 'ndt'
        and not exists (select from weld_public.ndt_record_welds n
                         where n.tenant_id = h.tenant_id and n.ndt_record_id = h.ndt_record_id and n.weld_id = h.weld_id)`,
    [tenantId],
  );
  t.is(orphans.rowCount, 0);
});

test('seed refuses an unknown tenant, a tenant with data, and bad sizes, writing nothing', async (t) => {
  const { target } = await migratedDatabase(t);
  const db = await ownerClient(target);
  t.teardown(() => db.end());
  await t.throwsAsync(seedTenant(db, 'nobody', { isos: 1, weldsPerIso: 1, seed: 1 }), {
    message: /no tenant 'nobody'/,
  });
  await seeded(db, 'full', 1);
  await t.throwsAsync(seedTenant(db, 'full', { isos: 1, weldsPerIso: 1, seed: 1 }), {
    message: /already has ISOs/,
  });
  await addTenant(db, { slug: 'empty', origins: ['http://empty.test'] });
  await t.throwsAsync(seedTenant(db, 'empty', { isos: 0, weldsPerIso: 1, seed: 1 }), {
    message: /--isos/,
  });
  await t.throwsAsync(seedTenant(db, 'empty', { isos: 1, weldsPerIso: 1.5, seed: 1 }), {
    message: /--welds-per-iso/,
  });
});

test('weld-admin seed writes a project and says what it wrote; errors exit 1', async (t) => {
  const { rootUrl, target } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  t.is((await runCli(['tenant', 'add', 'cli', '--origin', 'http://cli.test'], env)).code, 0);
  const run = await runCli(
    ['seed', 'cli', '--isos', '5', '--welds-per-iso', '8', '--seed', '3'],
    env,
  );
  t.is(run.code, 0, run.output);
  t.regex(
    run.stdout,
    /^seeded cli: 5 ISOs, 40 welds, 5 welders, \d+ status changes, \d+ NDT records, \d+ film intervals in [\d.]+ s$/m,
  );
  const db = await ownerClient(target);
  t.teardown(() => db.end());
  const { rows } = await db.query(
    `select count(*)::int as n from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id where t.slug = 'cli'`,
  );
  t.is(rows[0].n, 40);

  const again = await runCli(['seed', 'cli'], env);
  t.is(again.code, 1);
  t.regex(again.stderr, /already has ISOs/);
  const bad = await runCli(['seed', 'cli', '--isos', 'many'], env);
  t.is(bad.code, 2, 'a malformed option is a usage error');
  t.regex(bad.stderr, /--isos must be a whole number/);
});
