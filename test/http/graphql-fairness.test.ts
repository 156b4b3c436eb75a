// GraphQL's share of the service (server/graphql-request.ts): one deadline for all the database
// work of a request, one connection and one transaction per request, and requests in flight
// bounded per user and per tenant, so that one of them cannot hold every connection while
// another tenant waits. Against the real process (server/main.ts), configured by environment.
import test, { type ExecutionContext } from 'ava';
import http from 'node:http';
import { addTenant } from '../../db/tenants.ts';
import { addUser } from '../../db/users.ts';
import { createPool } from '../../db/database.ts';
import {
  DEADLINE_MARGIN_MS,
  GraphqlRequests,
  GraphqlRequestSession,
} from '../../server/graphql-request.ts';
import { databaseProblem } from '../../rest-adapter/http/problem.ts';
import { addRoleUsers, login, PASSWORD } from '../helpers/auth.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { spawnServer } from '../helpers/server.ts';

const A = 'fa.test';
const B = 'fb.test';

/**
 * A database with tenants fa and fb (one user per role; fa also has viewer2 and viewer3), and
 * reports for the tests: slowReport(seconds, label) sleeps, reportSession(label) tells what the
 * statement sees (its backend, its transaction, its timeouts).
 */
async function database(t: ExecutionContext) {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  for (const slug of ['fa', 'fb']) {
    await addTenant(owner, { slug, origins: [`http://${slug}.test`] });
    await addRoleUsers(owner, slug);
  }
  for (const userName of ['viewer2', 'viewer3']) {
    await addUser(owner, { tenant: 'fa', userName, role: 'viewer', password: PASSWORD });
  }
  await owner.query(`
    create function weld_public.slow_report(seconds double precision, label text) returns text
      language sql stable as $$ select label from pg_sleep(seconds) $$;
    grant execute on function weld_public.slow_report(double precision, text) to weld_viewer;
    create function weld_public.report_session(label text) returns json
      language sql stable as $$
        select json_build_object('label', label, 'pid', pg_backend_pid(), 'started', now(),
          'statementTimeout', current_setting('statement_timeout'),
          'transactionTimeout', current_setting('transaction_timeout', true)) $$;
    grant execute on function weld_public.report_session(text) to weld_viewer`);
  return { rootUrl };
}

async function tokens(port: number, host: string, ...users: string[]) {
  const out: Record<string, string> = {};
  for (const user of users) out[user] = (await login(port, host, user)).json.accessToken as string;
  return out;
}

function post(port: number, host: string, token: string, query: string): Promise<HttpResponse> {
  return request(port, {
    method: 'POST',
    path: '/graphql',
    host,
    body: { query },
    headers: { authorization: `Bearer ${token}` },
  });
}

/** Waits until `n` statements running slow_report are active in the database (at most 60 s). */
async function slowReportsRunning(rootUrl: string, n: number): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    const [row] = await superuserQuery<{ n: number }>(
      rootUrl,
      `select count(*)::int as n from pg_stat_activity
        where state = 'active' and query like '%slow_report%' and pid <> pg_backend_pid()`,
    );
    if (row!.n >= n) return;
    if (Date.now() > until) throw new Error(`${n} slow reports never ran at once (${row!.n})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('one deadline for all the statements of a request; one connection, one transaction', async (t) => {
  const { rootUrl } = await database(t);
  const deadlineMs = 1500;
  const server = await spawnServer(t, {
    DATABASE_URL: rootUrl,
    GRAPHQL_DEADLINE_MS: String(deadlineMs),
    GRAPHQL_STATEMENT_TIMEOUT_MS: '10000',
  });
  const { viewer, engineer } = await tokens(server.port, A, 'viewer', 'engineer');

  // Five statements of 0.6 s: each well within the statement timeout, 3 s together. Before, each
  // ran on a connection of its own and all answered; now the request's deadline ends the rest.
  const aliases = [0, 1, 2, 3, 4].map((i) => `r${i}: slowReport(seconds: 0.6, label: "r${i}")`);
  const started = Date.now();
  const res = await post(server.port, A, viewer!, `{ ${aliases.join(' ')} }`);
  const took = Date.now() - started;
  t.is(res.status, 200);
  const answered = Object.values(res.json.data as Record<string, string | null>).filter(Boolean);
  t.true(answered.length >= 1 && answered.length <= 3, JSON.stringify(res.json.data));
  t.is(res.json.errors?.length, 5 - answered.length);
  for (const error of res.json.errors) {
    t.like(error, {
      message: 'The request took too long and was cancelled.',
      extensions: { code: '/problems/timeout', status: 503 },
    });
  }
  t.true(took < 3000 + 5000, `answered after ${took} ms`); // the 3 s of work never all ran

  // What each statement of one request sees: the same connection and transaction, and
  // statement_timeout no longer than what was left of the deadline; on PostgreSQL 17+ the
  // transaction's own timeout is the deadline and a margin.
  const seen = await post(
    server.port,
    A,
    viewer!,
    '{ a: reportSession(label: "a") b: reportSession(label: "b") c: slowReport(seconds: 0.2, label: "c") d: reportSession(label: "d") }',
  );
  t.is(seen.json.errors, undefined, JSON.stringify(seen.json.errors));
  type Seen = {
    pid: number;
    started: string;
    statementTimeout: string;
    transactionTimeout: string;
  };
  const sessions = ['a', 'b', 'd'].map((key) => seen.json.data[key] as Seen);
  t.is(new Set(sessions.map((s) => s.pid)).size, 1, 'one connection');
  t.is(new Set(sessions.map((s) => s.started)).size, 1, 'one transaction');
  const ms = (setting: string) => {
    const match = /^(\d+)(ms|s)?$/.exec(setting);
    return match ? Number(match[1]) * (match[2] === 's' ? 1000 : 1) : NaN;
  };
  for (const session of sessions) {
    t.true(ms(session.statementTimeout) <= deadlineMs, session.statementTimeout);
    t.true(ms(session.statementTimeout) > 0, session.statementTimeout);
  }
  // d ran after the 0.2 s of c: less of the deadline was left for it.
  t.true(ms(sessions[2]!.statementTimeout) < ms(sessions[0]!.statementTimeout));
  const [version] = await superuserQuery<{ v: number }>(
    rootUrl,
    `select current_setting('server_version_num')::int as v`,
  );
  if (version!.v >= 170000) {
    const backstop = ms(sessions[0]!.transactionTimeout);
    t.true(backstop > 0 && backstop <= deadlineMs + DEADLINE_MARGIN_MS, String(backstop));
  }

  // Mutations of one request: each in its own savepoint, so one refused keeps the others, which
  // are committed before the answer says so.
  const create = (alias: string, number: string) =>
    `${alias}: createIso(input: { iso: { isoNumber: "${number}", lineNumber: "L" } }) { iso { isoNumber } }`;
  const both = await post(
    server.port,
    A,
    engineer!,
    `mutation { ${create('first', 'DL-1')} ${create('again', 'DL-1')} ${create('third', 'DL-3')} }`,
  );
  t.deepEqual(both.json.data, {
    first: { iso: { isoNumber: 'DL-1' } },
    again: null,
    third: { iso: { isoNumber: 'DL-3' } },
  });
  t.is(both.json.errors?.[0]?.extensions?.code, '/problems/conflict');
  const read = await post(
    server.port,
    A,
    viewer!,
    '{ allIsos(first: 5, orderBy: ISO_NUMBER_ASC) { nodes { isoNumber } } }',
  );
  t.deepEqual(read.json.data.allIsos.nodes, [{ isoNumber: 'DL-1' }, { isoNumber: 'DL-3' }]);
  t.is(await server.stop(), 0);
});

test('requests in flight per user and per tenant: 429 beyond; another tenant answers meanwhile', async (t) => {
  const { rootUrl } = await database(t);
  // Four connections: a tenant may hold three (the default, the pool's but one), a user two.
  const server = await spawnServer(t, { DATABASE_URL: rootUrl, GRAPHQL_POOL_MAX: '4' });
  const a = await tokens(server.port, A, 'viewer', 'viewer2', 'viewer3');
  const b = await tokens(server.port, B, 'viewer');
  const report = (seconds: number, label: string) =>
    `{ slowReport(seconds: ${seconds}, label: "${label}") }`;

  // Tenant A takes its three: viewer two, viewer2 one.
  let settled = 0;
  const held = [
    post(server.port, A, a.viewer!, report(6, 'v1')),
    post(server.port, A, a.viewer!, report(6, 'v2')),
    post(server.port, A, a.viewer2!, report(6, 'w1')),
  ].map((pending) => pending.finally(() => settled++));
  await slowReportsRunning(rootUrl, 3);

  const userFull = await post(server.port, A, a.viewer!, report(0, 'v3'));
  t.is(userFull.status, 429);
  t.regex(String(userFull.headers['content-type']), /^application\/problem\+json/);
  t.is(userFull.headers['retry-after'], '1');
  t.like(userFull.json, {
    type: '/problems/too-many-graphql-requests',
    status: 429,
    limit: 2,
    scope: 'user',
  });
  const tenantFull = await post(server.port, A, a.viewer3!, report(0, 'x1'));
  t.is(tenantFull.status, 429);
  t.like(tenantFull.json, {
    type: '/problems/too-many-graphql-requests',
    limit: 3,
    scope: 'tenant',
  });

  // Tenant B's GraphQL and REST answer while tenant A holds all it may.
  const other = await post(server.port, B, b.viewer!, report(0, 'b1'));
  t.deepEqual(other.json, { data: { slowReport: 'b1' } });
  const rest = await request(server.port, {
    path: '/isos?limit=1',
    host: B,
    headers: { authorization: `Bearer ${b.viewer}` },
  });
  t.is(rest.status, 200);
  t.is(settled, 0, "tenant B was answered before any of tenant A's reports ended");

  const answers = await Promise.all(held);
  t.deepEqual(
    answers.map((res) => res.json.data?.slowReport),
    ['v1', 'v2', 'w1'],
  );
  // Their places are free again.
  t.deepEqual((await post(server.port, A, a.viewer!, report(0, 'v4'))).json, {
    data: { slowReport: 'v4' },
  });
  t.is(await server.stop(), 0);
});

test('a client that hangs up keeps its place until its query has ended', async (t) => {
  const { rootUrl } = await database(t);
  const server = await spawnServer(t, { DATABASE_URL: rootUrl });
  const { viewer } = await tokens(server.port, A, 'viewer');
  // Two reports of 3 s from sockets that close as soon as the reports run.
  const sockets = [1, 2].map((i) => {
    const body = JSON.stringify({ query: `{ slowReport(seconds: 3, label: "gone${i}") }` });
    const req = http.request({
      host: '127.0.0.1',
      port: server.port,
      method: 'POST',
      path: '/graphql',
      headers: {
        host: A,
        authorization: `Bearer ${viewer}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
    });
    req.on('error', () => {}); // destroyed below
    req.end(body);
    return req;
  });
  await slowReportsRunning(rootUrl, 2);
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 200)); // the server sees both closes
  const meanwhile = await post(server.port, A, viewer!, '{ slowReport(seconds: 0, label: "now") }');
  t.is(meanwhile.status, 429, 'the two places are still taken: their queries still run');
  // Once the database is done with them, the places are free.
  const until = Date.now() + 60_000;
  let after: HttpResponse;
  do {
    await new Promise((resolve) => setTimeout(resolve, 200));
    after = await post(server.port, A, viewer!, '{ slowReport(seconds: 0, label: "later") }');
  } while (after.status === 429 && Date.now() < until);
  t.deepEqual(after.json, { data: { slowReport: 'later' } });
  t.is(await server.stop(), 0);
});

test('on PostgreSQL 17+, transaction_timeout ends a request that outlives its deadline even if this process stalls', async (t) => {
  const { rootUrl } = await database(t);
  const [version] = await superuserQuery<{ v: number }>(
    rootUrl,
    `select current_setting('server_version_num')::int as v`,
  );
  if (version!.v < 170000) {
    t.pass('PostgreSQL 15 and 16 have no transaction_timeout: the process clock alone bounds it');
    return;
  }
  const pool = createPool(rootUrl, { max: 1, onError: () => {} });
  t.teardown(() => pool.end());
  // A deadline of 1 s (room for a busy machine to connect within it) and a backstop 200 ms after
  // it; the unit begins at once, then holds the transaction (as a stalled process would) past both.
  const session = new GraphqlRequestSession(
    pool,
    { deadlineMs: 1_000, statementTimeoutMs: 10_000 },
    200,
  );
  let ran = false;
  const failure = await session
    .withPgClient(null, async (client) => {
      ran = true;
      await client.query({ text: 'select 1' });
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return client.query({ text: 'select 2' });
    })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  t.true(ran, 'the unit began within its deadline');
  t.truthy(failure, 'the second statement found its transaction ended');
  t.is(databaseProblem(failure)?.type, '/problems/timeout', String(failure));
  t.truthy(await session.end(true), 'nothing to commit: the transaction is gone');
  // The pool replaced the ended connection.
  t.deepEqual((await pool.query('select 1 as one')).rows, [{ one: 1 }]);
});

test('a client that hangs up before its request is admitted leaves no place taken', async (t) => {
  // The pool is never used: a request whose client has gone runs nothing.
  const pool = createPool('postgres://unused@127.0.0.1:1/none', { max: 1, onError: () => {} });
  t.teardown(() => pool.end());
  const requests = new GraphqlRequests(pool, {
    deadlineMs: 1_000,
    statementTimeoutMs: 1_000,
    requestsPerUser: 1,
    requestsPerTenant: 1,
  });
  const admitted = new Promise<void>((resolve) => {
    const server = http.createServer((req, res) => {
      // As when the token check or the tenant lookup was still pending when the client left:
      // admission comes after the response has closed.
      res.once('close', () => {
        Object.assign(req, { tenant: { id: 'tenant-1' }, identity: { userId: 'user-1' } });
        requests.admit(req as never, res as never);
        server.close();
        resolve();
      });
    });
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as import('node:net').AddressInfo;
      const client = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/graphql' });
      client.on('error', () => {});
      client.end('{}', () => setTimeout(() => client.destroy(), 50));
    });
  });
  await admitted;
  t.is(requests.count('tenant-1'), 0, 'the tenant has its place');
  t.is(requests.count('tenant-1 user-1'), 0, 'and the user too');
});
