// The demo data generator: reproducible, consistent with the rules it claims to follow, and
// careful about where it writes. (Its speed is measured by bench/seed.ts, not here.)
import test from 'ava';
import type pg from 'pg';
import { seedTenant } from '../../db/seed.ts';
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

/** Every seeded row of a tenant, without the tenant id (and the history's generated key). */
async function snapshot(db: pg.Client, tenantId: string): Promise<Record<string, string[]>> {
  const result: Record<string, string[]> = {};
  for (const table of TABLES) {
    const { rows } = await db.query<{ row: string }>(
      `select (to_jsonb(t) - 'tenant_id' - 'id' || jsonb_build_object('id', case when '${table}' = 'weld_status_history' then null else to_jsonb(t)->'id' end))::text as row
         from weld_public.${table} t where tenant_id = $1 order by 1`,
      [tenantId],
    );
    result[table] = rows.map((r) => r.row);
  }
  return result;
}

async function seeded(db: pg.Client, slug: string, seed: number) {
  const tenant = await addTenant(db, { slug, origins: [`http://${slug}.test`] });
  await db.query('begin');
  const summary = await seedTenant(db, slug, { isos: 30, weldsPerIso: 20, seed });
  await db.query('commit');
  return { tenantId: tenant.id, summary };
}

test('the same --seed gives the same data, in any tenant; another seed gives other data', async (t) => {
  const { target } = await migratedDatabase(t);
  const db = await ownerClient(target);
  t.teardown(() => db.end());
  const a = await seeded(db, 'first', 42);
  const b = await seeded(db, 'second', 42);
  const c = await seeded(db, 'third', 43);
  t.is(a.summary.welds, 600);
  t.is(a.summary.isos, 30);
  const sa = await snapshot(db, a.tenantId);
  const sb = await snapshot(db, b.tenantId);
  const sc = await snapshot(db, c.tenantId);
  for (const table of TABLES) {
    t.true(sa[table]!.length > 0, `${table} has rows`);
    t.deepEqual(sa[table], sb[table], table);
  }
  t.notDeepEqual(sa.welds, sc.welds);
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
