// GET /reports/<name> (F17): the report views over HTTP, as pages and as CSV, with the same
// numbers the view gives in SQL; filters, cursors, refusals, and another tenant's data unseen.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import test from 'ava';
import { createPool, withContext } from '../../db/database.ts';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import {
  REPORTS_PER_TENANT,
  REPORTS_PER_USER,
  reportsInFlightOf,
} from '../../rest-adapter/reports.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

interface Row {
  welderStamp: string;
  month: string;
  weldsMade: number;
  weldsExamined: number;
  weldsRejected: number;
  repairRatePercent: number | null;
  overThreshold: boolean;
}
interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

test('welder performance and weld progress: pages, filters and CSV give the numbers of the view', async (t) => {
  t.timeout(120_000);
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenantIds: Record<string, string> = {};
  for (const slug of ['rep', 'other']) {
    tenantIds[slug] = (await addTenant(owner, { slug, origins: [`http://${slug}.test`] })).id;
  }
  await seedTenant(owner, 'rep', { isos: 12, weldsPerIso: 40, seed: 7 });
  await seedTenant(owner, 'other', { isos: 3, weldsPerIso: 10, seed: 8 });
  await addRoleUsers(owner, 'rep');
  await addRoleUsers(owner, 'other');
  const { port } = await startServer(t, target);
  const session = async (slug: string) => {
    const token = (await login(port, `${slug}.test`, 'viewer')).json.accessToken as string;
    return (path: string, headers: Record<string, string> = {}) =>
      request(port, {
        path,
        host: `${slug}.test`,
        headers: { authorization: `Bearer ${token}`, ...headers },
      });
  };
  const get = await session('rep');

  // The view, read in SQL as the tenant, is what every answer below must equal.
  const pool = createPool(target.authenticatorUrl, { max: 1 });
  t.teardown(() => pool.end());
  const sql = await withContext(
    pool,
    { role: 'weld_viewer', tenantId: tenantIds.rep!, userId: null },
    async (c) =>
      (
        await c.query<Row>(
          `select welder_stamp as "welderStamp", month::text, welds_made as "weldsMade",
                  welds_examined as "weldsExamined", welds_rejected as "weldsRejected",
                  repair_rate_percent as "repairRatePercent", over_threshold as "overThreshold"
             from weld_reports.welder_performance order by month, welder_stamp`,
        )
      ).rows,
  );
  t.true(sql.length >= 10, `${sql.length} welder-months`);
  t.true(
    sql.some((r) => r.weldsRejected > 0),
    'the seed rejects some welds',
  );

  // One page of everything, and the same rows walked five at a time by the cursor.
  const all = await get('/reports/welder-performance?limit=500');
  t.is(all.status, 200, all.text);
  const items = (all.json as Page<Row>).items;
  t.is((all.json as Page<Row>).nextCursor, null);
  const pick = (r: Row) => ({
    welderStamp: r.welderStamp,
    month: r.month,
    weldsMade: r.weldsMade,
    weldsExamined: r.weldsExamined,
    weldsRejected: r.weldsRejected,
    repairRatePercent: r.repairRatePercent,
    overThreshold: r.overThreshold,
  });
  t.deepEqual(items.map(pick), sql);
  const walked: Row[] = [];
  let path: string | null = '/reports/welder-performance?limit=5';
  while (path) {
    const answer = await get(path);
    t.is(answer.status, 200);
    const body = answer.json as Page<Row>;
    walked.push(...body.items);
    path = body.nextCursor ? `/reports/welder-performance?limit=5&cursor=${body.nextCursor}` : null;
    if (body.nextCursor) t.regex(String(answer.headers.link), /rel="next"/);
  }
  t.deepEqual(walked, items);

  // Filters: one month; only the welders over the threshold.
  const month = sql[0]!.month;
  const ofMonth = (await get(`/reports/welder-performance?month=${month}`)).json as Page<Row>;
  t.deepEqual(
    ofMonth.items.map(pick),
    sql.filter((r) => r.month === month),
  );
  const flagged = (await get('/reports/welder-performance?overThreshold=true&limit=500'))
    .json as Page<Row>;
  t.deepEqual(
    flagged.items.map(pick),
    sql.filter((r) => r.overThreshold),
  );

  // CSV: a BOM, a header of the JSON members, one line per row, the same numbers.
  const csv = await get('/reports/welder-performance', { accept: 'text/csv' });
  t.is(csv.status, 200);
  t.regex(csv.headers['content-type']!, /^text\/csv/);
  t.regex(csv.headers['content-disposition']!, /welder-performance\.csv/);
  const lines = csv.text
    .replace(/^\uFEFF/, '')
    .trimEnd()
    .split('\n');
  const header = lines[0]!.split(',');
  t.deepEqual(header.slice(0, 5), ['welderId', 'welderStamp', 'welderName', 'month', 'weldsMade']);
  t.is(lines.length, sql.length + 1);
  const first = Object.fromEntries(header.map((name, i) => [name, lines[1]!.split(',')[i]]));
  t.is(first.welderStamp, sql[0]!.welderStamp);
  t.is(first.month, sql[0]!.month);
  t.is(Number(first.weldsRejected), sql[0]!.weldsRejected);
  t.is(first.overThreshold, String(sql[0]!.overThreshold));

  // GraphQL: the same view, the same numbers (what an analyst asks in GraphiQL).
  const token = (await login(port, 'rep.test', 'viewer')).json.accessToken as string;
  const graphql = await request(port, {
    method: 'POST',
    path: '/graphql',
    host: 'rep.test',
    headers: { authorization: `Bearer ${token}` },
    body: {
      query: `{ allWeldReportsWelderPerformances(first: 500, orderBy: [MONTH_ASC, WELDER_STAMP_ASC]) {
                  totalCount
                  nodes { welderStamp month weldsMade weldsExamined weldsRejected
                          repairRatePercent overThreshold } } }`,
    },
  });
  t.is(graphql.status, 200, graphql.text);
  const connection = (
    graphql.json as {
      data: { allWeldReportsWelderPerformances: { totalCount: number; nodes: Row[] } };
    }
  ).data.allWeldReportsWelderPerformances;
  t.is(connection.totalCount, sql.length);
  t.deepEqual(connection.nodes, sql);

  // Weld progress: summed over its weeks, an ISO's accepted welds are its accepted count now.
  const progress = (await get('/reports/weld-progress?limit=500')).json as Page<{
    isoId: string;
    accepted: number;
    welded: number;
  }>;
  const accepted = new Map<string, number>();
  for (const row of progress.items)
    accepted.set(row.isoId, (accepted.get(row.isoId) ?? 0) + row.accepted);
  const counts = await owner.query<{ iso_id: string; accepted: number }>(
    `select iso_id, accepted from weld_public.iso_weld_counts where tenant_id = $1 and accepted > 0`,
    [tenantIds.rep!],
  );
  t.true(counts.rows.length > 0);
  for (const row of counts.rows) t.is(accepted.get(row.iso_id), row.accepted, row.iso_id);

  // Refusals: a cursor not issued, pages asked of a CSV, a bad date, an unknown filter.
  for (const bad of [
    '/reports/welder-performance?cursor=bm90LWEta2V5',
    '/reports/welder-performance?format=csv&limit=5',
    '/reports/welder-performance?month=March',
    '/reports/welder-performance?welder=W01',
  ]) {
    const answer = await get(bad);
    t.is(answer.status, 422, bad);
    t.regex(answer.headers['content-type']!, /problem\+json/);
  }
  // Without a token: 401. Another tenant's viewer sees its own welders only.
  t.is(
    (await request(port, { path: '/reports/welder-performance', host: 'rep.test' })).status,
    401,
  );
  const theirs = (await (await session('other'))('/reports/welder-performance?limit=500'))
    .json as Page<Row>;
  const made = async (tenantId: string) =>
    (
      await owner.query<{ n: number }>(
        `select count(*)::int as n from weld_public.welds
          where tenant_id = $1 and status <> 'VOIDED' and welder_id is not null
            and welded_on is not null`,
        [tenantId],
      )
    ).rows[0]!.n;
  const sum = (rows: Row[]) => rows.reduce((total, r) => total + r.weldsMade, 0);
  t.is(sum(items), await made(tenantIds.rep!));
  t.is(sum(theirs.items), await made(tenantIds.other!));
  t.not(sum(theirs.items), sum(items));
});

test('the other four reports: pages in key order equal the view; CSV has a line per row; GraphQL aggregates', async (t) => {
  t.timeout(120_000);
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = (await addTenant(owner, { slug: 'four', origins: ['http://four.test'] })).id;
  await seedTenant(owner, 'four', { isos: 10, weldsPerIso: 30, seed: 3 });
  await addRoleUsers(owner, 'four');
  // A qualification about to lapse by its expiry date, so that report has a row to show.
  await owner.query(
    `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
     select tenant_id, id, 'SMAW', current_date - 100, current_date + 20
       from weld_public.welders where tenant_id = $1 limit 1`,
    [tenant],
  );
  const { port } = await startServer(t, target);
  const token = (await login(port, 'four.test', 'viewer')).json.accessToken as string;
  const get = (path: string, headers: Record<string, string> = {}) =>
    request(port, {
      path,
      host: 'four.test',
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
  const pool = createPool(target.authenticatorUrl, { max: 1 });
  t.teardown(() => pool.end());
  const sql = (text: string) =>
    withContext(
      pool,
      { role: 'weld_viewer', tenantId: tenant, userId: null },
      async (c) => (await c.query(text)).rows,
    );

  const cases = [
    ['examination-progress', 'examination_progress', ['method', 'lot']],
    ['test-package-board', 'test_package_board', ['package_number']],
    ['examination-backlog', 'examination_backlog', ['method']],
    [
      'qualification-expiry',
      'qualification_expiry',
      ['valid_until', 'welder_stamp', 'qualification_id', 'process'],
    ],
  ] as const;
  const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  for (const [path, view, key] of cases) {
    const rows = await sql(
      `select ${key.map((k) => `${k}::text as "${camel(k)}"`).join(', ')}
         from weld_reports.${view} order by ${key.join(', ')}`,
    );
    const answer = await get(`/reports/${path}?limit=500`);
    t.is(answer.status, 200, `${path}: ${answer.text}`);
    const items = (answer.json as Page<Record<string, unknown>>).items;
    t.deepEqual(
      items.map((item) => Object.fromEntries(key.map((k) => [camel(k), String(item[camel(k)])]))),
      rows,
      path,
    );
    const csv = await get(`/reports/${path}`, { accept: 'text/csv' });
    t.is(csv.status, 200);
    t.is(
      csv.text
        .replace(/^\uFEFF/, '')
        .trimEnd()
        .split('\n').length,
      rows.length + 1,
      path,
    );
  }
  // The seed has lots and packages to show, and the qualification put in above.
  t.true((await sql('select from weld_reports.examination_progress')).length > 0);
  t.true((await sql('select from weld_reports.test_package_board')).length > 0);
  const expiring = (await get('/reports/qualification-expiry?withinDays=30')).json as Page<{
    cause: string;
    daysLeft: number;
  }>;
  t.true(expiring.items.some((q) => q.cause === 'expiry' && q.daysLeft === 20));

  // GraphQL: the reports have aggregates (the views' smart tags are read): the package board's
  // welds summed equal the rows' sum.
  const graphql = await request(port, {
    method: 'POST',
    path: '/graphql',
    host: 'four.test',
    headers: { authorization: `Bearer ${token}` },
    body: {
      query: `{ allWeldReportsTestPackageBoards { aggregates { sum { welds weldsAccepted } }
                groupedAggregates(groupBy: [STATE]) { keys sum { welds } } } }`,
    },
  });
  t.is(graphql.status, 200, graphql.text);
  const board = (
    await sql('select sum(welds)::int as welds from weld_reports.test_package_board')
  )[0]!;
  const sums = (
    graphql.json as {
      data: { allWeldReportsTestPackageBoards: { aggregates: { sum: { welds: string } } } };
    }
  ).data.allWeldReportsTestPackageBoards.aggregates.sum;
  t.is(Number(sums.welds), board.welds);
});

test("the queries of docs/graphql.md's QC manager's questions run and answer", async (t) => {
  t.timeout(120_000);
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'cook', origins: ['http://cook.test'] });
  await seedTenant(owner, 'cook', { isos: 10, weldsPerIso: 30, seed: 5 });
  await addRoleUsers(owner, 'cook');
  const { port } = await startServer(t, target);
  const token = (await login(port, 'cook.test', 'viewer')).json.accessToken as string;

  const docs = fs.readFileSync(path.join(import.meta.dirname, '../../docs/graphql.md'), 'utf8');
  const section = docs.slice(docs.indexOf("## The QC manager's questions"));
  const queries = [...section.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);
  t.is(queries.length, 7);
  for (const query of queries) {
    const answer = await request(port, {
      method: 'POST',
      path: '/graphql',
      host: 'cook.test',
      headers: { authorization: `Bearer ${token}` },
      body: { query },
    });
    const title = query.split('\n')[0]!;
    t.is(answer.status, 200, `${title}: ${answer.text}`);
    const data = (answer.json as { data?: Record<string, unknown> }).data;
    t.truthy(data, title);
    for (const [field, value] of Object.entries(data!)) t.not(value, null, `${title}: ${field}`);
  }
});

test('a user has at most REPORTS_PER_USER and a tenant REPORTS_PER_TENANT report requests in progress; one more is 429', async (t) => {
  t.timeout(120_000);
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const ids: Record<string, string> = {};
  for (const slug of ['busy', 'calm']) {
    ids[slug] = (await addTenant(owner, { slug, origins: [`http://${slug}.test`] })).id;
    await addRoleUsers(owner, slug);
  }
  const { port, pool } = await startServer(t, target);
  const session = async (slug: string, role: 'viewer' | 'inspector' | 'engineer' = 'viewer') => {
    const token = (await login(port, `${slug}.test`, role)).json.accessToken as string;
    return (path: string) =>
      request(port, { path, host: `${slug}.test`, headers: { authorization: `Bearer ${token}` } });
  };
  const busy = await session('busy');
  const busyInspector = await session('busy', 'inspector');
  const busyEngineer = await session('busy', 'engineer');
  const calm = await session('calm');

  // The board's kept rows locked by a DBA's transaction: the busy tenant's board requests wait,
  // two of its viewer's and two of its inspector's: the tenant's four places.
  const blocker = await ownerClient(target);
  t.teardown(() => blocker.end().catch(() => {}));
  await blocker.query('begin; lock table weld_private.package_board_rows in access exclusive mode');
  t.is(REPORTS_PER_TENANT, 2 * REPORTS_PER_USER);
  const waiting = [busy, busy, busyInspector, busyInspector].map((get) =>
    get('/reports/test-package-board'),
  );
  for (let i = 0; reportsInFlightOf(pool, ids.busy!) < REPORTS_PER_TENANT && i < 400; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  t.is(reportsInFlightOf(pool, ids.busy!), REPORTS_PER_TENANT);

  // The viewer has its two: a third is refused for the user; the engineer, for the tenant.
  const mine = await busy('/reports/examination-backlog');
  t.is(mine.status, 429, mine.text);
  t.like(mine.json, { type: '/problems/too-many-reports', limit: REPORTS_PER_USER, scope: 'user' });
  const refused = await busyEngineer('/reports/examination-backlog');
  t.is(refused.status, 429, refused.text);
  t.like(refused.json, {
    type: '/problems/too-many-reports',
    limit: REPORTS_PER_TENANT,
    scope: 'tenant',
  });
  t.is(refused.headers['retry-after'], '1');
  // The /api prefix is the same service: the same count.
  t.is((await busyEngineer('/api/reports/examination-backlog')).status, 429);
  // Another tenant's reports are its own.
  t.is((await calm('/reports/examination-backlog')).status, 200);

  await blocker.query('commit');
  for (const answer of await Promise.all(waiting)) t.is(answer.status, 200, answer.text);
  t.is(reportsInFlightOf(pool, ids.busy!), 0);
  t.is((await busy('/reports/examination-backlog')).status, 200);

  // Clients that go away, while the file's COPY waits for a lock or at any moment before: each
  // request gives back its place and its connection (a gone client never drains a write).
  const token = (await login(port, 'busy.test', 'viewer')).json.accessToken as string;
  const abandon = (delayMs: number) =>
    new Promise<void>((resolve) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        path: '/reports/test-package-board?format=csv',
        headers: { host: 'busy.test', authorization: `Bearer ${token}` },
        agent: false,
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.end();
      setTimeout(() => req.destroy(), delayMs);
    });
  await blocker.query('begin; lock table weld_private.package_board_rows in access exclusive mode');
  await Promise.all([0, 1, 2, 5, 10, 20, 50, 100].map(abandon));
  await blocker.query('commit');
  for (
    let i = 0;
    (reportsInFlightOf(pool, ids.busy!) > 0 || pool.idleCount < pool.totalCount) && i < 200;
    i++
  ) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  t.is(reportsInFlightOf(pool, ids.busy!), 0);
  t.is(pool.idleCount, pool.totalCount, 'every connection back in the pool');
  const after = await busy('/reports/test-package-board?format=csv');
  t.is(after.status, 200, after.text);
});
