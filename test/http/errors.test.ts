// Every error path of the HTTP layer answers RFC 9457 problem+json with the right status:
// unknown tenant, unknown route, wrong method (with Allow), and for routes that read a body: wrong
// content type, too large, malformed, invalid. Also the request id, a 500 that leaks nothing, the
// database going away (503), and the proxy headers that count only behind a trusted proxy.
import test, { type ExecutionContext } from 'ava';
import { z } from 'zod';
import type { Route } from '../../rest-adapter/http/route.ts';
import type { TrustProxy } from '../../rest-adapter/http/tenancy.ts';
import { connectClient } from '../../db/database.ts';
import { addTenant } from '../../db/tenants.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const HOST = 'errors.test';

/** A route only tests mount: it reads a JSON body through the same pipeline real routes use. */
const echo: Route = {
  method: 'POST',
  path: '/test/echo',
  anonymous: true,
  body: true,
  handler: (req, res) => {
    const body = z.object({ name: z.string().min(1), count: z.number().int() }).parse(req.body);
    res.json(body);
  },
};

const leaky: Route = {
  method: 'GET',
  path: '/test/fail',
  anonymous: true,
  handler: () => {
    throw new Error('select secret from weld_private.signing_keys -- internal detail');
  },
};

async function setup(t: ExecutionContext, options: { trustProxy?: TrustProxy } = {}) {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await connectClient(target.ownerUrl);
  await addTenant(owner, { slug: 'errors', origins: [`http://${HOST}`, `https://${HOST}`] });
  await owner.end();
  const server = await startServer(t, target, {
    extraRoutes: [echo, leaky],
    maxBodyBytes: 2048,
    ...options,
  });
  return { ...server, rootUrl };
}

function assertProblem(t: ExecutionContext, res: HttpResponse, status: number): void {
  t.is(res.status, status, res.text);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/);
  t.is(res.json.status, status);
  for (const member of ['type', 'title', 'detail']) {
    t.is(typeof res.json[member], 'string', `problem member ${member}`);
    t.true(res.json[member].length > 0);
  }
  t.notRegex(res.text, /\bat .*\.ts:\d+|select |weld_private/i, 'no stack trace or SQL');
}

test('an unknown Host is 404 problem+json before anything else', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, { path: '/health/live', host: 'stranger.test' });
  assertProblem(t, res, 404);
  t.is(res.json.type, '/problems/unknown-tenant');
  // Even a path that does not exist, or a wrong method, is answered as an unknown tenant.
  assertProblem(t, await request(port, { path: '/nowhere', host: 'stranger.test' }), 404);
  const post = await request(port, { method: 'POST', path: '/health/live', host: 'stranger.test' });
  t.is(post.json.type, '/problems/unknown-tenant');
});

test('the tenant is matched on the exact origin', async (t) => {
  const { port } = await setup(t);
  t.is((await request(port, { path: '/health/live', host: HOST })).status, 200);
  t.is((await request(port, { path: '/health/live', host: 'ERRORS.TEST' })).status, 200); // hosts are case-insensitive
  t.is((await request(port, { path: '/health/live', host: `${HOST}:8080` })).status, 404);
  t.is((await request(port, { path: '/health/live', host: `sub.${HOST}` })).status, 404);
  t.is((await request(port, { path: '/health/live', host: `${HOST}.evil` })).status, 404);
});

test('an unknown route is 404 problem+json', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, { path: '/no/such/thing', host: HOST });
  assertProblem(t, res, 404);
  t.is(res.json.type, 'about:blank');
  t.is(res.json.instance, '/no/such/thing');
});

test('a wrong method is 405 problem+json with Allow', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, { method: 'DELETE', path: '/health/live', host: HOST });
  assertProblem(t, res, 405);
  t.is(res.headers.allow, 'GET, HEAD, OPTIONS');
  const post = await request(port, { method: 'GET', path: '/test/echo', host: HOST });
  assertProblem(t, post, 405);
  t.is(post.headers.allow, 'POST, OPTIONS');
  // OPTIONS answers with the same Allow and no body.
  const options = await request(port, { method: 'OPTIONS', path: '/health/live', host: HOST });
  t.is(options.status, 204);
  t.is(options.headers.allow, 'GET, HEAD, OPTIONS');
});

test('a body that is not JSON is 415 problem+json', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, {
    method: 'POST',
    path: '/test/echo',
    host: HOST,
    body: 'name=x&count=1',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  assertProblem(t, res, 415);
  const untyped = await request(port, {
    method: 'POST',
    path: '/test/echo',
    host: HOST,
    body: '{}',
  });
  assertProblem(t, untyped, 415);
});

test('a body over the limit is 413 problem+json', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, {
    method: 'POST',
    path: '/test/echo',
    host: HOST,
    body: { name: 'x'.repeat(4096), count: 1 },
  });
  assertProblem(t, res, 413);
});

test('malformed JSON is 400 problem+json', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, {
    method: 'POST',
    path: '/test/echo',
    host: HOST,
    body: '{"name": "x", ',
    headers: { 'content-type': 'application/json' },
  });
  assertProblem(t, res, 400);
  t.regex(res.json.detail, /not valid JSON/);
});

test('a body that fails its schema is 422 problem+json with errors pointing at the fields', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, {
    method: 'POST',
    path: '/test/echo',
    host: HOST,
    body: { name: '', count: 1.5 },
  });
  assertProblem(t, res, 422);
  t.is(res.json.type, '/problems/validation-failed');
  const pointers = (res.json.errors as Array<{ pointer: string; detail: string }>).map(
    (e) => e.pointer,
  );
  t.deepEqual(pointers.sort(), ['/count', '/name']);
  // In plain words, one per field, and the detail names each field (no zod jargon).
  t.deepEqual(res.json.errors, [
    { pointer: '/name', detail: 'must not be empty' },
    { pointer: '/count', detail: 'must be a whole number' },
  ]);
  t.is(res.json.detail, 'name must not be empty; count must be a whole number');
  // The same route with a valid body works, so the 422 came from the schema.
  const ok = await request(port, {
    method: 'POST',
    path: '/test/echo',
    host: HOST,
    body: { name: 'a', count: 2 },
  });
  t.is(ok.status, 200);
  t.deepEqual(ok.json, { name: 'a', count: 2 });
});

test('an unexpected error is 500 problem+json that reveals nothing', async (t) => {
  const { port } = await setup(t);
  const res = await request(port, { path: '/test/fail', host: HOST });
  assertProblem(t, res, 500);
  t.notRegex(res.text, /secret|signing_keys/);
});

test('every response carries a request id; a sane incoming one is kept', async (t) => {
  const { port } = await setup(t);
  const fresh = await request(port, { path: '/health/live', host: HOST });
  t.regex(String(fresh.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  const kept = await request(port, {
    path: '/health/live',
    host: HOST,
    headers: { 'x-request-id': 'trace-42.abc' },
  });
  t.is(kept.headers['x-request-id'], 'trace-42.abc');
  const replaced = await request(port, {
    path: '/nowhere',
    host: HOST,
    headers: { 'x-request-id': 'bad id\twith spaces' },
  });
  t.regex(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/);
});

test('health: live and ready are 200 {"status":"ok"}; ready answers on any Host', async (t) => {
  const { port } = await setup(t);
  const live = await request(port, { path: '/health/live', host: HOST });
  t.is(live.status, 200);
  t.deepEqual(live.json, { status: 'ok' });
  const ready = await request(port, { path: '/health/ready', host: 'load-balancer.internal' });
  t.is(ready.status, 200);
  t.deepEqual(ready.json, { status: 'ok' });
});

test('when the database refuses connections, health answers 503 problem+json', async (t) => {
  const { port, rootUrl, pool } = await setup(t);
  t.is((await request(port, { path: '/health/live', host: HOST })).status, 200);
  const name = new URL(rootUrl).pathname.slice(1);
  const maintenance = new URL(rootUrl);
  maintenance.pathname = '/postgres';
  await superuserQuery(maintenance.href, `alter database ${name} allow_connections false`);
  await superuserQuery(
    maintenance.href,
    `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1`,
    [name],
  );
  t.teardown(() =>
    superuserQuery(maintenance.href, `alter database ${name} allow_connections true`),
  );
  const live = await request(port, { path: '/health/live', host: HOST });
  assertProblem(t, live, 503);
  t.is(live.json.type, '/problems/database-unavailable');
  t.is(live.headers['retry-after'], '5');
  assertProblem(t, await request(port, { path: '/health/ready', host: HOST }), 503);

  // And it recovers once the database takes connections again.
  await superuserQuery(maintenance.href, `alter database ${name} allow_connections true`);
  t.is((await request(port, { path: '/health/live', host: HOST })).status, 200);
  t.true(pool.totalCount >= 1);
});

test('readiness is 503 when the database schema is behind this build', async (t) => {
  const { port, rootUrl } = await setup(t);
  await superuserQuery(rootUrl, `delete from graphile_migrate.migrations`);
  const res = await request(port, { path: '/health/ready', host: HOST });
  assertProblem(t, res, 503);
  t.is(res.json.type, '/problems/schema-behind');
});

test('forwarded headers choose the tenant only behind a trusted proxy', async (t) => {
  const untrusting = await setup(t);
  const forwarded = { 'x-forwarded-host': HOST, 'x-forwarded-proto': 'https' };
  const ignored = await request(untrusting.port, {
    path: '/health/live',
    host: 'proxy.internal',
    headers: forwarded,
  });
  t.is(ignored.status, 404);

  const trusting = await setup(t, { trustProxy: 1 });
  const honoured = await request(trusting.port, {
    path: '/health/live',
    host: 'proxy.internal',
    headers: forwarded,
  });
  t.is(honoured.status, 200);
  // https://errors.test is a separate origin of the tenant; an unregistered scheme is not.
  const wrongScheme = await request(trusting.port, {
    path: '/health/live',
    host: 'proxy.internal',
    headers: { 'x-forwarded-host': HOST, 'x-forwarded-proto': 'ftp' },
  });
  t.is(wrongScheme.status, 404);
});
