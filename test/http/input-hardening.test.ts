// Input a careless or hostile client sends, found by the F6 reviews and the F10 fuzzing: each got
// a 500 (or was taken for something it was not) before. Now each is a clear answer and writes
// nothing: numbers too large for their column, year 0, NUL characters, a path parameter that is
// no percent-encoding, weak tags in If-Match, thousands of bad ids, an idempotent replay under
// the other prefix, and the refusals the SQLSTATE table maps for GraphQL as for REST.
import test, { type ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { databaseProblem } from '../../rest-adapter/http/problem.ts';
import { MISS_LOOKUPS_PER_SECOND } from '../../rest-adapter/http/tenancy.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const HOST = 'hard.test';

async function world(t: ExecutionContext) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = await addTenant(owner, { slug: 'hard', origins: [`http://${HOST}`] });
  await addRoleUsers(owner, 'hard');
  const iso = (
    await owner.query<{ id: string }>(
      `insert into weld_public.isos (tenant_id, iso_number, line_number)
       values ($1, 'ISO-1', 'L-1') returning id`,
      [tenant.id],
    )
  ).rows[0]!.id;
  const weld = (
    await owner.query<{ id: string }>(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, welded_on)
       values ($1, $2, 'W1', 'BW', 4, '2026-01-01') returning id`,
      [tenant.id, iso],
    )
  ).rows[0]!.id;
  const { port } = await startServer(t, target);
  const token = async (role: string) => (await login(port, HOST, role)).json.accessToken as string;
  const engineer = await token('engineer');
  const inspector = await token('inspector');
  const call = (method: string, path: string, bearer: string, body?: unknown, headers = {}) =>
    request(port, {
      method,
      path,
      host: HOST,
      body,
      headers: { authorization: `Bearer ${bearer}`, ...headers },
    });
  const count = async (table: string) =>
    Number((await owner.query(`select count(*) from ${table}`)).rows[0].count);
  return { owner, iso, weld, engineer, inspector, call, count };
}

function refused(t: ExecutionContext, res: HttpResponse, status: number, type: string): void {
  t.is(res.status, status, res.text);
  t.is(res.json.type, type, res.text);
}

test('numbers too large for their column are 422 naming the field, not a 500', async (t) => {
  const w = await world(t);
  for (const [path, body, field] of [
    ['/welds', { isoId: w.iso, weldNumber: 'W9', type: 'BW', size: 123456789 }, '/size'],
    [
      '/pqrs',
      { pqrNumber: 'P1', process: 'GTAW', pNumbers: ['1'], thicknessTestedIn: 1e12 },
      '/thicknessTestedIn',
    ],
    [
      '/test-packages',
      { packageNumber: 'TP1', testMedium: 'hydro', testPressurePsig: 1e20 },
      '/testPressurePsig',
    ],
  ] as const) {
    const res = await w.call('POST', path, w.engineer, body);
    refused(t, res, 422, '/problems/validation-failed');
    t.deepEqual(
      res.json.errors.map((e: { pointer: string }) => e.pointer),
      [field],
      path,
    );
  }
  const patched = await w.call('PATCH', `/welds/${w.weld}`, w.engineer, { wallThickness: 1e308 });
  refused(t, patched, 422, '/problems/validation-failed');
  t.is(await w.count('weld_public.pqrs'), 0);
  t.is(await w.count('weld_public.test_packages'), 0);

  // GraphQL reaches the column without REST's bounds: the database's refusal, mapped the same.
  const gql = await w.call('POST', '/graphql', w.engineer, {
    query: `mutation { createPqr(input: {pqr: {pqrNumber: "P2", process: "GTAW", pNumbers: ["1"], thicknessTestedIn: "1000000000000"}}) { pqr { rowId } } }`,
  });
  t.is(gql.json.errors?.[0]?.extensions?.code, '/problems/validation-failed', gql.text);
  t.is(await w.count('weld_public.pqrs'), 0);
});

test('year 0 and NUL characters are 422, never a 500', async (t) => {
  const w = await world(t);
  const year0 = await w.call('PATCH', `/welds/${w.weld}`, w.engineer, { weldedOn: '0000-01-01' });
  refused(t, year0, 422, '/problems/validation-failed');
  t.is(year0.json.errors[0].pointer, '/weldedOn');

  const nulFilter = await w.call('GET', '/welds?weldNumber=%00', w.engineer);
  refused(t, nulFilter, 422, '/problems/validation-failed');
  const nulBody = await w.call('POST', '/inspections', w.inspector, {
    kind: 'visual',
    inspectedOn: '2026-11-01',
    result: 'accepted',
    notes: 'a\u0000b',
    weldIds: [w.weld],
  });
  refused(t, nulBody, 422, '/problems/validation-failed');
  t.is(await w.count('weld_public.inspections'), 0);
});

test('a path parameter that is no valid percent-encoding is 404, not a 500 (found by the fuzzer)', async (t) => {
  const w = await world(t);
  for (const [method, path] of [
    ['GET', '/welds/%ZZ'],
    ['PATCH', '/api/welds/%C0%AF'],
    ['GET', '/isos/%E0%A4%A/examination'],
    ['DELETE', '/isos/%'],
  ] as const) {
    const res = await w.call(method, path, w.engineer, method === 'PATCH' ? {} : undefined);
    refused(t, res, 404, 'about:blank');
    t.is(res.json.instance, path, path);
  }
});

test('If-Match compares strongly: a weak tag matches no version (RFC 9110)', async (t) => {
  const w = await world(t);
  const weak = await w.call(
    'PATCH',
    `/welds/${w.weld}`,
    w.engineer,
    { material: 'A106-B' },
    {
      'if-match': 'W/"1"',
    },
  );
  refused(t, weak, 412, '/problems/stale-version');
  const strong = await w.call(
    'PATCH',
    `/welds/${w.weld}`,
    w.engineer,
    { material: 'A106-B' },
    {
      'if-match': '"1"',
    },
  );
  t.is(strong.status, 200, strong.text);
  // If-None-Match compares weakly: W/"2" is the current version.
  const cached = await w.call('GET', `/welds/${w.weld}`, w.engineer, undefined, {
    'if-none-match': 'W/"2"',
  });
  t.is(cached.status, 304);
});

test('thousands of bad ids answer the first 20, and a replay names its own prefix', async (t) => {
  const w = await world(t);
  const bad = Array.from(
    { length: 3000 },
    (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  );
  const res = await w.call('POST', '/test-packages', w.engineer, {
    packageNumber: 'TP-1',
    testMedium: 'hydro',
    weldIds: bad,
  });
  refused(t, res, 422, '/problems/validation-failed');
  t.is(res.json.errors.length, 20);
  t.is(res.json.errors[0].pointer, '/weldIds/0');
  t.true(res.text.length < 5_000, `${res.text.length} bytes`);
  t.is(await w.count('weld_public.test_packages'), 0);

  const body = { stamp: 'K-1', name: 'Kim' };
  const key = { 'idempotency-key': 'welder-k-1' };
  const first = await w.call('POST', '/welders', w.engineer, body, key);
  const again = await w.call('POST', '/api/welders', w.engineer, body, key);
  t.is(first.headers.location, `/welders/${first.json.id}`);
  t.is(again.headers['idempotent-replayed'], 'true');
  t.is(again.headers.location, `/api/welders/${first.json.id}`);
  t.deepEqual(again.json, first.json);
});

test('deadlocks and serialization failures are 409 concurrent-change with Retry-After', (t) => {
  for (const code of ['40P01', '40001']) {
    const problem = databaseProblem({ message: 'deadlock detected', code })!;
    t.is(problem.status, 409);
    t.is(problem.type, '/problems/concurrent-change');
    t.is(problem.headers['Retry-After'], '1');
  }
  // JSON nested too deeply for PostgreSQL is the client's to fix too.
  t.is(databaseProblem({ message: 'stack depth limit exceeded', code: '54001' })?.status, 422);
});

test('a blank reason is no reason, a status reason is bounded over GraphQL too, and __proto__ is no field', async (t) => {
  const w = await world(t);
  const recorded = await w.call('POST', '/ndt-records', w.inspector, {
    method: 'UT',
    reportNumber: 'UT-1',
    examinedOn: '2026-11-01',
    welds: [{ weldId: w.weld, result: 'accepted' }],
  });
  t.is(recorded.status, 201, recorded.text);
  const blank = await w.call('PATCH', `/ndt-records/${recorded.json.id}`, w.inspector, {
    notes: 'x',
    reason: '\t\n\r',
  });
  refused(t, blank, 422, '/problems/reason-required');

  // A JSON body's "__proto__" is a key like any other: unknown here, so 422, and nothing set.
  const proto = await w.call(
    'PATCH',
    `/ndt-records/${recorded.json.id}`,
    w.inspector,
    '{"reason": "x", "__proto__": {"notes": "p"}}',
    { 'content-type': 'application/json' },
  );
  refused(t, proto, 422, '/problems/validation-failed');
  t.is(proto.json.errors[0].pointer, '/__proto__');
  t.is((await w.call('GET', `/ndt-records/${recorded.json.id}`, w.inspector)).json.notes, null);

  const engineer = await w.call('POST', '/graphql', w.engineer, {
    query: `mutation($weld: UUID!, $reason: String!) {
      changeWeldStatus(input: {weldId: $weld, newStatus: VOIDED, reason: $reason}) { clientMutationId }
    }`,
    variables: { weld: w.weld, reason: 'x'.repeat(2001) },
  });
  t.is(engineer.json.errors?.[0]?.extensions?.code, '/problems/validation-failed', engineer.text);
  t.is((await w.call('GET', `/welds/${w.weld}`, w.engineer)).json.status, 'ACCEPTED');
});

test('a body that is not UTF-8, holds a lone surrogate or nests too deep is 400 and writes nothing, over REST and GraphQL alike', async (t) => {
  const w = await world(t);
  const before = await w.count('weld_public.welds');
  const json = { 'content-type': 'application/json' };
  const post = (path: string, body: string | Buffer) =>
    w.call('POST', path, w.engineer, body, json);
  // Bytes that are not UTF-8 (Latin-1 for "Größe"), which express would store as U+FFFD.
  const latin1 = Buffer.concat([
    Buffer.from(`{"isoId":"${w.iso}","weldNumber":"Gr`),
    Buffer.from([0xf6, 0xdf, 0x65]),
    Buffer.from('","type":"BW","size":2}'),
  ]);
  let res = await post('/welds', latin1);
  refused(t, res, 400, 'about:blank');
  t.regex(res.json.detail, /not UTF-8 text/);
  // Valid UTF-8, but a \ud800 escape: no Unicode text.
  res = await post('/welds', `{"isoId":"${w.iso}","weldNumber":"W\\ud800","type":"BW","size":2}`);
  refused(t, res, 400, 'about:blank');
  t.regex(res.json.detail, /lone surrogate/);
  // GraphQL: the same, and a variable nested 20,000 deep (it overflowed the stack before).
  const deep = `${'['.repeat(20_000)}1${']'.repeat(20_000)}`;
  res = await post(
    '/graphql',
    `{"query":"query($v: JSON) { __typename }","variables":{"v":${deep}}}`,
  );
  refused(t, res, 400, 'about:blank');
  t.regex(res.json.detail, /nests deeper than 32 levels/);
  res = await post(
    '/graphql',
    Buffer.concat([
      Buffer.from('{"query":"{ __typename }","x":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]),
  );
  refused(t, res, 400, 'about:blank');
  t.is(await w.count('weld_public.welds'), before);
  // What a client may send stays fine: UTF-8 beyond ASCII, and a body 30 levels deep is only JSON.
  res = await post(
    '/welds',
    JSON.stringify({ isoId: w.iso, weldNumber: 'Größe-1', type: 'BW', size: 2 }),
  );
  t.is(res.status, 201, res.text);
  t.is(res.json.weldNumber, 'Größe-1');
});

test('made-up Hosts by the thousand cost the database a rationed few lookups; known origins keep answering, new ones are told to come back', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'hard', origins: [`http://${HOST}`] });
  // Tenants this instance has not served yet, to ask for during the flood (see below).
  for (let i = 0; i < 3; i++) {
    await addTenant(owner, { slug: `fresh-${i}`, origins: [`http://fresh-${i}.test`] });
  }
  const { port, pool } = await startServer(t, target);
  // Count the tenant lookups the server sends its (real) pool.
  let lookups = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as { query: unknown }).query = (...args: unknown[]) => {
    if (String(args[0]).includes('tenant_by_origin')) lookups++;
    return query(...args);
  };
  t.is(
    (await request(port, { path: '/auth/csrf', host: HOST })).status,
    401,
    'the tenant is known',
  );
  t.is(lookups, 1);
  const started = Date.now();
  let unknown = 0;
  for (let batch = 0; batch < 20; batch++) {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        request(port, { path: '/auth/csrf', host: `flood-${batch}-${i}.test` }),
      ),
    );
    unknown += answers.filter(
      (a) =>
        (a.status === 404 && a.json.type === '/problems/unknown-tenant') ||
        (a.status === 503 && a.json.type === '/problems/busy' && a.headers['retry-after'] === '1'),
    ).length;
  }
  t.is(unknown, 1000, 'each made-up Host is an unknown tenant, or rationed');

  // A real tenant this instance has not served yet, during the flood: 503 and Retry-After, never
  // 404; once the ration refills, its answer. On a slow machine the ration can refill between the
  // flood and the question (the tenant is then looked up and served, which is right too): so each
  // of up to three rounds floods again and asks for a tenant not asked for before.
  let rationed: string | undefined;
  for (let round = 0; round < 3 && !rationed; round++) {
    for (let batch = 0; batch < 4; batch++) {
      await Promise.all(
        Array.from({ length: MISS_LOOKUPS_PER_SECOND / 2 }, (_, i) =>
          request(port, { path: '/auth/csrf', host: `flood-again-${round}-${batch}-${i}.test` }),
        ),
      );
    }
    const host = `fresh-${round}.test`;
    const during = await request(port, { path: '/auth/csrf', host });
    if (during.status === 503) {
      t.is(during.json.type, '/problems/busy');
      t.is(during.headers['retry-after'], '1');
      rationed = host;
    } else {
      t.is(during.status, 401, `${host} during the flood: rationed (503) or served, never 404`);
    }
  }
  t.truthy(rationed, 'a tenant first asked for during the flood is told to come back');
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.is((await request(port, { path: '/auth/csrf', host: rationed! })).status, 401);
  const seconds = (Date.now() - started) / 1000;
  const allowed = MISS_LOOKUPS_PER_SECOND * (1 + Math.ceil(seconds));
  t.true(lookups - 1 <= allowed, `${lookups - 1} lookups for every made-up Host in ${seconds} s`);
  t.true(lookups - 1 >= 1, 'a Host never seen is looked up while the ration lasts');
  t.is((await request(port, { path: '/auth/csrf', host: HOST })).status, 401, 'still known');
});
