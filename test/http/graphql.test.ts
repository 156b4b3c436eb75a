// GraphQL for analysts over real HTTP: the same identity and row security as REST, the limits,
// the three analyst queries of docs/graphql.md, the database's refusals as clear errors, and the
// log of the errors it hides. The cost budget has its own file (graphql-cost.test.ts).
import test, { type ExecutionContext } from 'ava';
import { pino } from 'pino';
import { addTenant } from '../../db/tenants.ts';
import { GraphQLError, parse, Source } from 'postgraphile/graphql';
import {
  GraphqlColumnNaming,
  makeMaskError,
  withGraphqlLogger,
} from '../../server/graphql-errors.ts';
import { seedTenant } from '../../db/seed/index.ts';
import { addRoleUsers, cookieHeader, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { spawnServer, startServer } from '../helpers/server.ts';

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

test('node ids carry no tenant id; a node id of tenant A finds, changes and deletes nothing at tenant B', async (t) => {
  const { owner, token, gql } = await setup(t);
  const tenantIds = (await owner.query<{ id: string }>('select id from weld_public.tenants')).rows;
  const decode = (id: string) => JSON.parse(Buffer.from(id, 'base64').toString('utf8')) as unknown;

  const engineerA = await token('engineer');
  const engineerB = await token('engineer', B);
  const created = await gql(
    engineerA,
    'mutation { createIso(input: { iso: { isoNumber: "NODE-1", lineNumber: "L-N" } }) { iso { id rowId } } }',
  );
  t.is(created.json.errors, undefined, JSON.stringify(created.json.errors));
  const iso = created.json.data.createIso.iso as { id: string; rowId: string };
  t.deepEqual(decode(iso.id), ['Iso', iso.rowId], 'the type and the row id, nothing else');

  // Every id a reader sees: nodes of tables with one key and with two, cursors, relations.
  const read = await gql(
    await token('viewer'),
    `{ allWelds(first: 5) { nodes { id iso { id } } edges { cursor } pageInfo { endCursor } }
       allNdtRecordWelds(first: 5) { nodes { id } } allIsoWeldCounts(first: 5) { nodes { id } }
       allUsers(first: 5) { nodes { id } } }`,
  );
  t.is(read.json.errors, undefined, JSON.stringify(read.json.errors));
  t.true(read.json.data.allNdtRecordWelds.nodes.length > 0);
  for (const { id } of tenantIds) {
    t.false(read.text.includes(id), 'no tenant id in plain text');
    for (const encoded of read.text.match(/"[A-Za-z0-9+/]{20,}={0,2}"/g) ?? []) {
      t.false(JSON.stringify(decode(JSON.parse(encoded) as string)).includes(id), encoded);
    }
  }
  const [link] = read.json.data.allNdtRecordWelds.nodes as Array<{ id: string }>;
  t.is((decode(link!.id) as unknown[]).length, 3, 'NdtRecordWeld: its type, record and weld');
  // GraphQL shows no tenants table: no allTenants, no tenantByTenantId.
  const tenants = await gql(engineerA, '{ allTenants(first: 1) { nodes { rowId } } }');
  t.regex(tenants.json.errors?.[0]?.message ?? '', /Cannot query field "allTenants"/);

  // Tenant A reads it by its node id; tenant B finds nothing, and changes or deletes nothing.
  const lookup = `query ($id: ID!) { node(id: $id) { ... on Iso { isoNumber } } iso(id: $id) { rowId } }`;
  t.deepEqual((await gql(engineerA, lookup, { id: iso.id })).json.data, {
    node: { isoNumber: 'NODE-1' },
    iso: { rowId: iso.rowId },
  });
  t.deepEqual((await gql(engineerB, lookup, { id: iso.id }, B)).json.data, {
    node: null,
    iso: null,
  });
  const update = `mutation ($id: ID!) { updateIso(input: { id: $id, isoPatch: { lineNumber: "L-B" } }) { iso { rowId } } }`;
  const remove = `mutation ($id: ID!) { deleteIso(input: { id: $id }) { iso { rowId } } }`;
  for (const mutation of [update, remove]) {
    const res = await gql(engineerB, mutation, { id: iso.id }, B);
    const payload = Object.values(res.json.data ?? {})[0] as { iso?: unknown } | null;
    t.falsy(payload?.iso, JSON.stringify(res.json));
  }
  const row = await owner.query('select line_number from weld_public.isos where id = $1', [
    iso.rowId,
  ]);
  t.deepEqual(row.rows, [{ line_number: 'L-N' }], 'unchanged, not deleted');
  // At its own tenant the same id updates and deletes it.
  t.is((await gql(engineerA, update, { id: iso.id })).json.data.updateIso.iso.rowId, iso.rowId);
  t.is((await gql(engineerA, remove, { id: iso.id })).json.data.deleteIso.iso.rowId, iso.rowId);
  t.is((await owner.query('select from weld_public.isos where id = $1', [iso.rowId])).rowCount, 0);
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
    // The database's refusal, said plainly, with the type REST gives it.
    t.is(res.json.errors[0].extensions.code, '/problems/role-not-allowed', mutation);
    t.regex(res.json.errors[0].message, /role|needs the inspector/, mutation);
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
    `mutation { changeWeldStatus(input: { weldId: "${pending}", newStatus: REJECTED }) { result { status version } } }`,
  );
  t.is(ok.json.errors, undefined, JSON.stringify(ok.json.errors));
  t.is(ok.json.data.changeWeldStatus.result.status, 'REJECTED');
});

test("a mutation's fields commit one by one, as separate requests would: two changes of a weld are two events", async (t) => {
  const { owner, token, gql } = await setup(t);
  const weld = (
    await owner.query<{ id: string; tenant_id: string }>(
      `select w.id, w.tenant_id from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id
      where t.slug = 'alpha' and w.status = 'PENDING' limit 1`,
    )
  ).rows[0]!;
  const engineer = await token('engineer');
  const res = await gql(
    engineer,
    `mutation {
      a: changeWeldStatus(input: { weldId: "${weld.id}", newStatus: REJECTED, reason: "porosity" }) { result { status } }
      b: changeWeldStatus(input: { weldId: "${weld.id}", newStatus: REPAIR, reason: "cut out" }) { result { status } }
      c: changeWeldStatus(input: { weldId: "${weld.id}", newStatus: ACCEPTED }) { result { status } }
    }`,
  );
  t.is(res.json.data.a?.result.status, 'REJECTED', JSON.stringify(res.json.errors));
  t.is(res.json.data.b?.result.status, 'REPAIR', JSON.stringify(res.json.errors));
  // The third is refused (a repair is not accepted by hand): the first two stand.
  t.is(res.json.data.c, null);
  t.true(res.json.errors.length === 1 && res.json.errors[0].path[0] === 'c');
  await owner.query('select weld_hidden.place_events()'); // what the server's relay does
  const { rows } = await owner.query<{ status: string }>(
    `select data ->> 'status' as status from weld_public.events
      where tenant_id = $1 and subject_id = $2 order by id`,
    [weld.tenant_id, weld.id],
  );
  t.deepEqual(
    rows.map((r) => r.status),
    ['REJECTED', 'REPAIR'],
    'each field its own transaction and event, with what it wrote',
  );
  t.is(
    (await owner.query('select status from weld_public.welds where id = $1', [weld.id])).rows[0]
      .status,
    'REPAIR',
  );
});

test('GraphQL refuses NaN and Infinity in a number: 422 naming the field, nothing written', async (t) => {
  const { owner, token, gql } = await setup(t);
  const engineer = await token('engineer');
  // A weld of its own, on a new ISO (seeded welds may be in a released test package).
  const iso = await gql(
    engineer,
    'mutation { createIso(input: { iso: { isoNumber: "NAN-1", lineNumber: "L-NAN" } }) { iso { rowId } } }',
  );
  const created = await gql(
    engineer,
    `mutation { createWeld(input: { weld: { isoId: "${iso.json.data.createIso.iso.rowId}", weldNumber: "W1", type: "BW", size: "4" } }) { weld { id rowId size } } }`,
  );
  t.is(created.json.errors, undefined, JSON.stringify(created.json.errors));
  const node = created.json.data.createWeld.weld as { id: string; rowId: string; size: string };
  const weld = { id: node.rowId, size: node.size };
  const nodeId = node.id;
  for (const size of ['NaN', 'Infinity', '-Infinity']) {
    const res = await gql(
      engineer,
      `mutation { updateWeld(input: { id: "${nodeId}", weldPatch: { size: "${size}" } }) { weld { size } } }`,
    );
    t.is(res.json.data?.updateWeld ?? null, null, size);
    t.is(
      res.json.errors?.[0]?.extensions?.code,
      '/problems/validation-failed',
      `${size}: ${JSON.stringify(res.json)}`,
    );
  }
  t.is(
    (await owner.query('select size::text from weld_public.welds where id = $1', [weld.id])).rows[0]
      .size,
    weld.size,
  );
  t.not(weld.size, '6.500');
  // A number still goes through.
  const ok = await gql(
    engineer,
    `mutation { updateWeld(input: { id: "${nodeId}", weldPatch: { size: "6.5" } }) { weld { size } } }`,
  );
  t.is(ok.json.errors, undefined, JSON.stringify(ok.json.errors));
  t.is(ok.json.data.updateWeld.weld.size, '6.500');
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

test('the analyst queries of docs/graphql.md run: status per ISO, repair rate per welder, NDT coverage per line', async (t) => {
  const { token, gql, owner } = await setup(t);
  const viewer = await token('viewer');

  const byIso = await gql(
    viewer,
    `{ allWelds { groupedAggregates(groupBy: [ISO_ID, STATUS]) { keys count { rowId } distinctCount { rowId } } } }`,
  );
  t.is(byIso.json.errors, undefined, JSON.stringify(byIso.json.errors));
  type Group = { keys: string[]; count: { rowId: string }; distinctCount: { rowId: string } };
  const groups = byIso.json.data.allWelds.groupedAggregates as Group[];
  const bySql = await owner.query<{ iso_id: string; status: string; n: string }>(
    `select w.iso_id, w.status::text, count(*)::text as n from weld_public.welds w
       join weld_public.tenants t on t.id = w.tenant_id where t.slug = 'alpha' group by 1, 2`,
  );
  const key = (iso: string, status: string) => `${iso} ${status}`;
  t.deepEqual(
    Object.fromEntries(groups.map((g) => [key(g.keys[0]!, g.keys[1]!), g.count.rowId])),
    Object.fromEntries(bySql.rows.map((r) => [key(r.iso_id, r.status), r.n])),
  );
  // count (no distinct) and distinctCount agree on a key: the same numbers, the cheaper query.
  for (const g of groups) t.is(g.count.rowId, g.distinctCount.rowId);

  const repair = await gql(
    viewer,
    `{
    examined: allWelds(filter: { status: { notIn: [PENDING, VOIDED] } }) {
      groupedAggregates(groupBy: WELDER_ID) { keys count { rowId } } }
    repaired: allWelds(filter: { repairCycle: { greaterThan: 0 } }) {
      groupedAggregates(groupBy: WELDER_ID) { keys count { rowId } } } }`,
  );
  t.is(repair.json.errors, undefined, JSON.stringify(repair.json.errors));
  const repairedSql = await owner.query(
    `select count(*)::int as n from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id where t.slug = 'alpha' and w.repair_cycle > 0`,
  );
  const repairedGraph = repair.json.data.repaired.groupedAggregates.reduce(
    (sum: number, g: { count: { rowId: string } }) => sum + Number(g.count.rowId),
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

type WeldCounts = Record<
  'total' | 'pending' | 'accepted' | 'rejected' | 'repair' | 'voided',
  number
>;

test('ISO progress: allIsos { weldCounts } and allIsoWeldCounts give the welds counted by status, as REST does, after a change too', async (t) => {
  const { port, token, gql, owner } = await setup(t);
  const viewer = await token('viewer');
  const PROGRESS = `{
    allIsos(first: 500, orderBy: ISO_NUMBER_ASC) {
      nodes { rowId isoNumber weldCounts { total pending accepted rejected repair voided } }
    }
    allIsoWeldCounts { aggregates { sum { total accepted voided } } }
  }`;
  // The seed's welds of tenant A, counted by status per ISO.
  const expected = async () =>
    Object.fromEntries(
      (
        await owner.query<{ iso: string; counts: WeldCounts }>(
          `select i.id as iso, json_build_object('total', count(w.id),
                    'pending', count(*) filter (where w.status = 'PENDING'),
                    'accepted', count(*) filter (where w.status = 'ACCEPTED'),
                    'rejected', count(*) filter (where w.status = 'REJECTED'),
                    'repair', count(*) filter (where w.status = 'REPAIR'),
                    'voided', count(*) filter (where w.status = 'VOIDED')) as counts
             from weld_public.isos i join weld_public.tenants t on t.id = i.tenant_id
             left join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
            where t.slug = 'alpha' group by i.id`,
        )
      ).rows.map((row) => [row.iso, row.counts]),
    );
  const progress = async () => {
    const res = await gql(viewer, PROGRESS);
    t.is(res.json.errors, undefined, JSON.stringify(res.json.errors));
    const nodes = res.json.data.allIsos.nodes as Array<{ rowId: string; weldCounts: WeldCounts }>;
    return {
      byIso: Object.fromEntries(nodes.map((n) => [n.rowId, n.weldCounts])),
      sum: res.json.data.allIsoWeldCounts.aggregates.sum as Record<string, string>,
    };
  };
  const first = await progress();
  t.is(Object.keys(first.byIso).length, 12, "tenant A's 12 ISOs, none of B's");
  t.deepEqual(first.byIso, await expected());
  t.is(first.sum.total, '300');
  t.true(Object.values(first.byIso).some((c) => c.accepted > 0 && c.pending > 0));
  // REST's weldCounts are the same numbers.
  const rest = await request(port, {
    path: '/isos?limit=500',
    host: A,
    headers: { authorization: `Bearer ${viewer}` },
  });
  t.deepEqual(
    Object.fromEntries(
      (rest.json.items as Array<{ id: string; weldCounts: object }>).map((i) => [
        i.id,
        i.weldCounts,
      ]),
    ),
    first.byIso,
  );

  // An engineer accepts a pending weld over GraphQL, on a disposition: the next read counts it.
  const { rows } = await owner.query<{ id: string; iso_id: string }>(
    `select w.id, w.iso_id from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id
      where t.slug = 'alpha' and w.status = 'PENDING' order by w.id limit 1`,
  );
  const weld = rows[0]!;
  const changed = await gql(
    await token('engineer'),
    `mutation { changeWeldStatus(input: { weldId: "${weld.id}", newStatus: ACCEPTED,
        disposition: "NCR-7 use as is" }) { result { status } } }`,
  );
  t.is(changed.json.errors, undefined, JSON.stringify(changed.json.errors));
  const after = await progress();
  const was = first.byIso[weld.iso_id]!;
  t.deepEqual(after.byIso[weld.iso_id], {
    ...was,
    pending: was.pending - 1,
    accepted: was.accepted + 1,
  });
  t.deepEqual(after.byIso, await expected());
  t.is(Number(after.sum.accepted), Number(first.sum.accepted) + 1);
});

test("the database's refusals reach GraphQL as clear errors carrying REST's problem type", async (t) => {
  const { owner, token, gql } = await setup(t);
  const viewer = await token('viewer');
  const inspector = await token('inspector');
  const engineer = await token('engineer');
  const weldIn = async (status: string) =>
    (
      await owner.query<{ id: string; version: number }>(
        `select w.id, w.version from weld_public.welds w join weld_public.tenants t on t.id = w.tenant_id
          where t.slug = 'alpha' and w.status = $1 order by w.id limit 1`,
        [status],
      )
    ).rows[0]!;
  const error = async (bearer: string, query: string, variables?: object) => {
    const res = await gql(bearer, query, variables);
    t.is(res.status, 200, query);
    t.is(res.json.errors?.length, 1, JSON.stringify(res.json));
    return res.json.errors[0];
  };
  const change = (input: string) =>
    `mutation { changeWeldStatus(input: { ${input} }) { result { status version } } }`;

  // 42501: a viewer has no INSERT on isos.
  t.like(
    await error(
      viewer,
      'mutation { createIso(input: { iso: { isoNumber: "X-1", lineNumber: "L" } }) { iso { rowId } } }',
    ),
    {
      message: 'Your role may not do this.',
      path: ['createIso'],
      extensions: { code: '/problems/role-not-allowed', status: 403 },
    },
  );

  // 23505: the ISO number is taken (within the caller's tenant: keys lead with tenant_id).
  const taken = (
    await owner.query<{ iso_number: string }>(
      `select i.iso_number from weld_public.isos i join weld_public.tenants t on t.id = i.tenant_id
        where t.slug = 'alpha' limit 1`,
    )
  ).rows[0]!.iso_number;
  const createIso = (fields: string) =>
    `mutation { createIso(input: { iso: { ${fields} } }) { iso { rowId isoNumber } } }`;
  t.like(await error(engineer, createIso(`isoNumber: "${taken}", lineNumber: "L-9"`)), {
    message: 'Another record already has this isoNumber.',
    extensions: {
      code: '/problems/conflict',
      status: 409,
      errors: [{ pointer: '/isoNumber', detail: 'is already in use' }],
    },
  });
  // ...and the same number in the other tenant is no conflict.
  const bravo = await gql(
    await token('engineer', B),
    createIso(`isoNumber: "${taken}", lineNumber: "L-9"`),
    undefined,
    B,
  );
  t.is(bravo.json.errors, undefined, JSON.stringify(bravo.json.errors));

  // 23514, 23502, 23503, 22P02: validation-failed, naming the field as GraphQL spells it.
  t.like(await error(engineer, createIso('isoNumber: "X-2", lineNumber: "L", rtPercent: "150"')), {
    message: 'rtPercent: not an allowed value (isos_rt_percent_check).',
    extensions: {
      code: '/problems/validation-failed',
      status: 422,
      errors: [{ pointer: '/rtPercent' }],
    },
  });
  t.like(await error(engineer, createIso('isoNumber: "X-3", lineNumber: "L", revision: null')), {
    message: 'revision: is required.',
    extensions: { code: '/problems/validation-failed', errors: [{ pointer: '/revision' }] },
  });
  const missingIso = '00000000-0000-4000-8000-000000000000';
  t.like(
    await error(
      engineer,
      `mutation { createWeld(input: { weld: { isoId: "${missingIso}", weldNumber: "W-X", type: "BW", size: "4" } }) { weld { rowId } } }`,
    ),
    {
      message: 'isoId: no such record.',
      extensions: { code: '/problems/validation-failed', errors: [{ pointer: '/isoId' }] },
    },
  );
  t.like(await error(viewer, '{ allWelds(filter: { size: { equalTo: "abc" } }) { totalCount } }'), {
    message: 'invalid input syntax for type numeric: "abc".',
    extensions: { code: '/problems/validation-failed' },
  });

  // The connection filter refuses some inputs itself: they are the client's to fix, not hidden.
  t.like(
    await error(viewer, '{ allWelds(first: 1, filter: { status: {} }) { nodes { rowId } } }'),
    {
      message: 'Empty objects are forbidden in filter argument input.',
      extensions: { code: '/problems/validation-failed', status: 422 },
    },
  );

  // The lifecycle function's own refusals, with allowed and version where REST gives them.
  const pending = await weldIn('PENDING');
  const refusedTransition = await error(
    inspector,
    change(`weldId: "${pending.id}", newStatus: REPAIR`),
  );
  t.like(refusedTransition, {
    message: 'a weld cannot go from PENDING to REPAIR.',
    extensions: { code: '/problems/transition-not-allowed', status: 409 },
  });
  t.deepEqual(refusedTransition.extensions.allowed, ['ACCEPTED', 'REJECTED', 'VOIDED']);
  t.like(
    await error(inspector, change(`weldId: "${pending.id}", newStatus: VOIDED, reason: "cut out"`)),
    {
      message: 'going from PENDING to VOIDED needs the engineer role.',
      extensions: { code: '/problems/role-not-allowed', status: 403 },
    },
  );
  t.like(await error(engineer, change(`weldId: "${pending.id}", newStatus: VOIDED`)), {
    message: 'going from PENDING to VOIDED needs a reason.',
    extensions: { code: '/problems/reason-required', status: 422 },
  });
  t.like(
    await error(
      inspector,
      change(
        `weldId: "${pending.id}", newStatus: REJECTED, expectedVersion: ${pending.version + 5}`,
      ),
    ),
    {
      message: `It has changed since that version (weld ${pending.id} is at version ${pending.version}, not ${pending.version + 5}); read it again.`,
      extensions: { code: '/problems/stale-version', status: 412, version: pending.version },
    },
  );
  // Nothing changed, and a correct request still goes through.
  // An acceptance naming no basis is refused as REST refuses it.
  t.like(await error(inspector, change(`weldId: "${pending.id}", newStatus: ACCEPTED`)), {
    extensions: { code: '/problems/validation-failed', status: 422 },
  });
  const ok = await gql(
    inspector,
    change(`weldId: "${pending.id}", newStatus: REJECTED, expectedVersion: ${pending.version}`),
  );
  t.deepEqual(ok.json, {
    data: { changeWeldStatus: { result: { status: 'REJECTED', version: pending.version + 1 } } },
  });
});

test('an unexpected error: the client gets a masked message with an id, the log one JSON line with it', async (t) => {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'logs', origins: ['http://logs.test'] });
  await addRoleUsers(owner, 'logs');
  // A report that fails in a way no mapping covers (SQLSTATE XX001, data_corrupted).
  await owner.query(`
    create function weld_public.broken_report(label text) returns integer
      language plpgsql stable as $$
      begin
        raise exception 'the report broke' using errcode = 'XX001';
      end $$;
    grant execute on function weld_public.broken_report(text) to weld_viewer`);

  const server = await spawnServer(t, { DATABASE_URL: rootUrl });
  const viewer = (await login(server.port, 'logs.test', 'viewer')).json.accessToken as string;
  const secret = 'variable-value-4f1c9e';
  const res = await request(server.port, {
    method: 'POST',
    path: '/graphql',
    host: 'logs.test',
    body: {
      query: 'query Marker_7d2a($label: String) { broken_alias_7d2a: brokenReport(label: $label) }',
      variables: { label: secret },
    },
    headers: { authorization: `Bearer ${viewer}` },
  });
  t.is(res.status, 200);
  const [hidden] = res.json.errors;
  const match = /^An error occurred \(logged with hash: '([^']+)', id: '([^']+)'\)$/.exec(
    hidden.message,
  );
  t.truthy(match, hidden.message);
  t.deepEqual(hidden.extensions, { errorId: match![2] });
  t.false(res.text.includes(secret), 'nothing of the database error reaches the client');

  // A refused request: its log line names the problem type (and who asked).
  const refused = await request(server.port, {
    path: '/welds?limit=x',
    host: 'logs.test',
    headers: { authorization: `Bearer ${viewer}` },
  });
  t.is(refused.status, 422);

  // An OAuth2 client's request: its line names the client as well.
  const admin = (await login(server.port, 'logs.test', 'admin')).json.accessToken as string;
  const registered = await request(server.port, {
    method: 'POST',
    path: '/oauth-clients',
    host: 'logs.test',
    body: { name: 'Log reader', scopes: ['welds:read'] },
    headers: { authorization: `Bearer ${admin}` },
  });
  t.is(registered.status, 201);
  const { clientId, clientSecret } = registered.json as { clientId: string; clientSecret: string };
  const issued = await request(server.port, {
    method: 'POST',
    path: '/oauth/token',
    host: 'logs.test',
    body: `grant_type=client_credentials&client_id=${clientId}&client_secret=${clientSecret}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.is(issued.status, 200, issued.text);
  const clientCall = await request(server.port, {
    path: '/isos',
    host: 'logs.test',
    headers: { authorization: `Bearer ${issued.json.access_token}` },
  });
  t.is(clientCall.status, 200);

  // The requests' log lines come when the responses have closed; wait for them.
  const deadline = Date.now() + 5000;
  while (
    !(
      /"msg":"request"[^\n]*"path":"\/graphql"/.test(server.output()) &&
      /"msg":"request"[^\n]*"path":"\/welds"/.test(server.output()) &&
      /"msg":"request"[^\n]*"path":"\/isos"/.test(server.output())
    ) &&
    Date.now() < deadline
  ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.is(await server.stop(), 0);

  const lines = server
    .output()
    .split('\n')
    .filter((line) => line.trim() !== '');
  const entries = lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      t.fail(`not a JSON log line: ${line}`);
      return {};
    }
  });
  const logged = entries.filter((e) => e.errorId === match![2]);
  t.is(logged.length, 1, 'one line, at info level the document is not logged');
  t.like(logged[0], {
    level: 50,
    hash: match![1],
    path: ['broken_alias_7d2a'],
    msg: 'GraphQL error hidden from the client',
    error: { type: 'DatabaseError', code: 'XX001', message: 'the report broke' },
  });
  // The request's own line carries the same request id.
  const requestLine = entries.find((e) => e.msg === 'request' && e.path === '/graphql');
  t.is(requestLine?.reqId, logged[0]!.reqId);
  // Access lines say who asked (user id and role, never the token) and why a 4xx was refused.
  t.like(requestLine, { role: 'viewer', status: 200 });
  t.regex(String(requestLine?.user), /^[0-9a-f-]{36}$/);
  t.false('problem' in requestLine!, 'a 200 names no problem');
  const refusedLine = entries.find((e) => e.msg === 'request' && e.path === '/welds');
  t.like(refusedLine, {
    status: 422,
    role: 'viewer',
    user: requestLine?.user,
    problem: '/problems/validation-failed',
  });
  t.false(server.output().includes(viewer), 'no token in the log');
  const clientLine = entries.find((e) => e.msg === 'request' && e.path === '/isos');
  t.like(clientLine, { status: 200, client: clientId, role: 'viewer' });
  for (const secret of [clientSecret, issued.json.access_token as string]) {
    t.false(server.output().includes(secret), "no client secret or client's token in the log");
  }
  // Variables never reach the log; the document only at debug level.
  t.false(server.output().includes(secret), 'no variable value in the log');
  t.false(server.output().includes('Marker_7d2a'), 'no document at info level');
});

test("what PostGraphile prints while serving goes to the request's logger as one JSON line", (t) => {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
  const printed = withGraphqlLogger(logger, () => {
    console.error('Error occurred during query planning: \n%s', new Error('multi\nline').stack);
    console.log('Planning took %dms', 12);
    return lines.length;
  });
  t.is(printed, 2);
  t.true(lines.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n')));
  const [error, info] = lines.map((line) => JSON.parse(line));
  t.like(error, { level: 50, component: 'postgraphile' });
  t.regex(error.msg, /^Error occurred during query planning: \nError: multi\nline\n {4}at /);
  t.like(info, { level: 30, component: 'postgraphile', msg: 'Planning took 12ms' });
  // Outside GraphQL work, the console is the console.
  const original = process.stdout.write.bind(process.stdout);
  let written = '';
  process.stdout.write = (chunk: string | Uint8Array) => {
    written += String(chunk);
    return true;
  };
  try {
    console.log('plain');
  } finally {
    process.stdout.write = original;
  }
  t.is(written, 'plain\n');
  t.is(lines.length, 2);
});

test('a hidden error is one line at info; the document only at debug, never the variables', (t) => {
  const source = new Source('query Report($token: String) { brokenReport(label: $token) }');
  const field = parse(source).definitions[0]!;
  const failure = Object.assign(new Error('the report broke'), { code: 'XX001' });
  const hide = (level: string) => {
    const lines: string[] = [];
    const logger = pino({ level }, { write: (line: string) => lines.push(line) });
    const error = new GraphQLError(failure.message, {
      nodes: [field],
      source,
      path: ['brokenReport'],
      originalError: failure,
    });
    const masked = makeMaskError(new GraphqlColumnNaming(), logger)(error) as GraphQLError;
    return { masked, entries: lines.map((line) => JSON.parse(line)) };
  };
  const info = hide('info');
  t.regex(info.masked.message, /^An error occurred \(logged with hash: '[\w-]+', id: '[\w-]+'\)$/);
  t.deepEqual(info.masked.path, ['brokenReport']);
  t.is(info.entries.length, 1);
  t.is(info.entries[0].errorId, info.masked.extensions.errorId);
  t.false(JSON.stringify(info.entries).includes('query Report'));
  const debug = hide('debug');
  t.is(debug.entries.length, 2);
  t.like(debug.entries[1], {
    level: 20,
    errorId: debug.masked.extensions.errorId,
    query: source.body,
  });
  // One fault, one hash: it groups occurrences, the id tells them apart.
  t.is(info.entries[0].hash, debug.entries[0].hash);
  t.not(info.entries[0].errorId, debug.entries[0].errorId);
});
