// GraphQL for analysts over real HTTP: the same identity and row security as REST, the limits,
// and the README's three analyst queries.
import test, { type ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { seedTenant } from '../../db/seed.ts';
import { addRoleUsers, cookieHeader, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const A = 'a.test';
const B = 'b.test';

async function setup(t: ExecutionContext) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  for (const [slug, seed] of [
    ['alpha', 1],
    ['bravo', 2],
  ] as const) {
    await addTenant(owner, { slug, origins: [`http://${slug === 'alpha' ? A : B}`] });
    await addRoleUsers(owner, slug);
    await owner.query('begin');
    await seedTenant(owner, slug, { isos: 12, weldsPerIso: 25, seed });
    await owner.query('commit');
  }
  const { port } = await startServer(t, target);
  const token = async (role: string, host = A) =>
    (await login(port, host, role)).json.accessToken as string;
  const gql = (bearer: string, query: string, variables?: object, host = A) =>
    request(port, {
      method: 'POST',
      path: '/graphql',
      host,
      body: { query, variables },
      headers: { authorization: `Bearer ${bearer}` },
    });
  return { port, owner, token, gql };
}

test('GraphQL sees exactly what REST sees for the same user', async (t) => {
  const { port, token, gql } = await setup(t);
  const viewer = await token('viewer');
  const rest = await request(port, {
    path: '/welds?limit=500',
    host: A,
    headers: { authorization: `Bearer ${viewer}` },
  });
  const graph = await gql(
    viewer,
    '{ allWelds(first: 500, orderBy: PRIMARY_KEY_ASC) { totalCount nodes { rowId status version } } }',
  );
  t.is(graph.status, 200);
  t.is(graph.json.errors, undefined);
  const fromRest = rest.json.items.map((w: { id: string; status: string; version: number }) => [
    w.id,
    w.status,
    w.version,
  ]);
  const fromGraph = graph.json.data.allWelds.nodes.map(
    (w: { rowId: string; status: string; version: number }) => [w.rowId, w.status, w.version],
  );
  t.is(graph.json.data.allWelds.totalCount, 300, "tenant A's 300 welds, none of B's");
  t.deepEqual(fromGraph, fromRest);
  // And tenant B's user sees B's welds, not A's.
  const other = await gql(
    await token('viewer', B),
    '{ allWelds(first: 1) { nodes { rowId } } }',
    undefined,
    B,
  );
  t.false(fromRest.some((w: string[]) => w[0] === other.json.data.allWelds.nodes[0].rowId));
});

test('an analyst (viewer) cannot mutate through GraphQL; an inspector can change a status', async (t) => {
  const { owner, token, gql } = await setup(t);
  const viewer = await token('viewer');
  const pending = (
    await owner.query<{ id: string }>(
      `select w.id from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id
      where t.slug = 'alpha' and w.status = 'PENDING' limit 1`,
    )
  ).rows[0]!.id;
  const before = await owner.query('select count(*)::int as n from weld_public.isos');
  const attempts = [
    `mutation { createIso(input: { iso: { isoNumber: "X-1", lineNumber: "L" } }) { iso { rowId } } }`,
    `mutation { changeWeldStatus(input: { weldId: "${pending}", newStatus: ACCEPTED }) { result { status } } }`,
  ];
  for (const mutation of attempts) {
    const res = await gql(viewer, mutation);
    t.true(Array.isArray(res.json.errors) && res.json.errors.length > 0, mutation);
  }
  t.deepEqual(
    (await owner.query('select count(*)::int as n from weld_public.isos')).rows,
    before.rows,
  );
  t.is(
    (await owner.query('select status from weld_public.welds where id = $1', [pending])).rows[0]
      .status,
    'PENDING',
  );

  const inspector = await token('inspector');
  const ok = await gql(
    inspector,
    `mutation { changeWeldStatus(input: { weldId: "${pending}", newStatus: ACCEPTED }) { result { status version } } }`,
  );
  t.is(ok.json.errors, undefined, JSON.stringify(ok.json.errors));
  t.is(ok.json.data.changeWeldStatus.result.status, 'ACCEPTED');
});

test('GraphQL needs authentication, and CSRF in cookie mode', async (t) => {
  const { port, gql } = await setup(t);
  const query = { query: '{ allIsos(first: 1) { totalCount } }' };
  const none = await request(port, { method: 'POST', path: '/graphql', host: A, body: query });
  t.is(none.status, 401);
  const session = await login(port, A, 'viewer');
  const cookieOnly = await request(port, {
    method: 'POST',
    path: '/graphql',
    host: A,
    body: query,
    headers: { cookie: cookieHeader(session) },
  });
  t.is(cookieOnly.status, 403);
  t.is((await gql('garbage', query.query)).status, 401);
  const ide = await request(port, { path: '/graphiql', host: A });
  t.is(ide.status, 200);
  for (const asset of ide.text.match(/\/ruru-static\/[\w.-]+/g) ?? []) {
    t.is((await request(port, { path: asset, host: A })).status, 200, asset);
  }
  t.regex(ide.text, /\/ruru-static\/ruru\.js/);
  t.is((await request(port, { method: 'GET', path: '/graphql', host: A })).status, 405);
});

test('limits: page size 1 to 500 on connections that return rows, depth at most 10', async (t) => {
  const { token, gql } = await setup(t);
  const viewer = await token('viewer');
  const refused = async (query: string, variables?: object) => {
    const res = await gql(viewer, query, variables);
    t.is(res.status, 400, query);
    t.is(res.json.type, '/problems/query-too-large');
  };
  await refused('{ allWelds { nodes { rowId } } }');
  await refused('{ allWelds(first: 501) { nodes { rowId } } }');
  await refused('query ($n: Int) { allWelds(first: $n) { edges { node { rowId } } } }', {
    n: 100000,
  });
  await refused('{ allIsos(first: 1) { nodes { welds { nodes { rowId } } } } }');
  const deep = `{ allWelds(first: 1) { nodes { iso { welds(first: 1) { nodes { iso { welds(first: 1) { nodes { iso { welds(first: 1) { nodes { iso { isoNumber } } } } } } } } } } } } }`;
  await refused(deep);
  // Within the limits, and aggregates need no page size (they return no rows).
  const fine = await gql(viewer, 'query ($n: Int) { allWelds(first: $n) { nodes { rowId } } }', {
    n: 500,
  });
  t.is(fine.json.data.allWelds.nodes.length, 300);
  const counts = await gql(
    viewer,
    '{ allWelds { totalCount aggregates { distinctCount { rowId } } } }',
  );
  t.is(counts.json.data.allWelds.totalCount, 300);
});

test("the README's analyst queries run: status per ISO, repair rate per welder, NDT coverage per line", async (t) => {
  const { token, gql, owner } = await setup(t);
  const viewer = await token('viewer');

  const byIso = await gql(
    viewer,
    `{ allWelds { groupedAggregates(groupBy: [ISO_ID, STATUS]) { keys distinctCount { rowId } } } }`,
  );
  t.is(byIso.json.errors, undefined, JSON.stringify(byIso.json.errors));
  const total = byIso.json.data.allWelds.groupedAggregates.reduce(
    (sum: number, g: { distinctCount: { rowId: string } }) => sum + Number(g.distinctCount.rowId),
    0,
  );
  t.is(total, 300);

  const repair = await gql(
    viewer,
    `{
    examined: allWelds(filter: { status: { notIn: [PENDING, VOIDED] } }) {
      groupedAggregates(groupBy: WELDER_ID) { keys distinctCount { rowId } } }
    repaired: allWelds(filter: { repairCycle: { greaterThan: 0 } }) {
      groupedAggregates(groupBy: WELDER_ID) { keys distinctCount { rowId } } } }`,
  );
  t.is(repair.json.errors, undefined, JSON.stringify(repair.json.errors));
  const repairedSql = await owner.query(
    `select count(*)::int as n from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id where t.slug = 'alpha' and w.repair_cycle > 0`,
  );
  const repairedGraph = repair.json.data.repaired.groupedAggregates.reduce(
    (sum: number, g: { distinctCount: { rowId: string } }) => sum + Number(g.distinctCount.rowId),
    0,
  );
  t.is(repairedGraph, repairedSql.rows[0].n);

  const coverage = await gql(
    viewer,
    `{
    allIsos(first: 500, orderBy: LINE_NUMBER_ASC) { nodes { lineNumber isoNumber rtPercent
      buttWelds: welds(filter: { type: { in: ["BW", "TW"] }, status: { notEqualTo: VOIDED } }) { totalCount }
      radiographed: welds(filter: { type: { in: ["BW", "TW"] }, status: { notEqualTo: VOIDED }, ndtRecordWeldsExist: true }) { totalCount } } } }`,
  );
  t.is(coverage.json.errors, undefined, JSON.stringify(coverage.json.errors));
  const isos = coverage.json.data.allIsos.nodes as Array<{
    buttWelds: { totalCount: number };
    radiographed: { totalCount: number };
  }>;
  t.is(isos.length, 12);
  t.true(isos.every((i) => i.radiographed.totalCount <= i.buttWelds.totalCount));
  t.true(isos.some((i) => i.radiographed.totalCount > 0));
});
