// The OpenAPI document: valid OpenAPI 3.1 by a standard validator, served at both bases, covering
// every route the service mounts; and the reference page.
import { Validator } from '@seriousme/openapi-schema-validator';
import test from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';
import { inertServiceRoutes, serviceDocument } from '../helpers/service-document.ts';

test('the document is valid OpenAPI 3.1 (standard validator)', async (t) => {
  const validator = new Validator();
  const result = await validator.validate(
    JSON.parse(JSON.stringify(serviceDocument())) as Parameters<Validator['validate']>[0],
  );
  t.true(result.valid, JSON.stringify(result.errors, null, 2));
  t.is(validator.version, '3.1');
});

test('served at /openapi.json and /api/openapi.json; bare paths canonical, /api the second base; every path documented', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'docs', origins: ['http://docs.test'] });
  const { port } = await startServer(t, target);
  const bare = await request(port, { path: '/openapi.json', host: 'docs.test' });
  const api = await request(port, { path: '/api/openapi.json', host: 'docs.test' });
  t.is(bare.status, 200);
  t.deepEqual(api.json, bare.json);
  t.deepEqual(
    bare.json.servers.map((s: { url: string }) => s.url),
    ['/', '/api'],
  );
  for (const path of [
    '/welds',
    '/welds/{id}',
    '/welds/{id}/status',
    '/isos',
    '/auth/login',
    '/auth/refresh',
    '/auth/logout',
    '/auth/me',
    '/auth/csrf',
    '/health/live',
    '/health/ready',
    '/graphql',
    '/.well-known/jwks.json',
    '/examination-selections',
    '/examination-selections/draw',
    '/examination-selections/{id}',
    '/isos/{id}/examination',
    '/welders/{id}/qualification-status',
    '/welds/{id}/checks',
    '/test-packages/{id}/readiness',
  ]) {
    t.truthy(bare.json.paths[path], path);
  }
  // Every problem type the service answers is in the Problem schema's table (docs/api.md's too).
  for (const type of ['/problems/package-not-ready', '/problems/weld-checks-failed']) {
    t.true(bare.json.components.schemas.Problem.description.includes(`| ${type} |`), type);
  }
  t.deepEqual(
    bare.json.paths['/auth/login'].servers,
    [{ url: '/' }],
    'auth lives at the root only',
  );
  t.is(bare.json.paths['/welds'].servers, undefined, 'data paths use both bases');
  const docs = await request(port, { path: '/docs', host: 'docs.test' });
  t.is(docs.status, 200);
  t.regex(docs.text, /swagger-ui-bundle\.js/);
  t.is(
    (await request(port, { path: '/docs/assets/swagger-ui-bundle.js', host: 'docs.test' })).status,
    200,
  );
  t.is(
    (await request(port, { path: '/docs/assets/..%2Fpackage.json', host: 'docs.test' })).status,
    404,
  );
});

test('every route the service mounts is a documented operation, and every operation a route', (t) => {
  const routes = inertServiceRoutes();
  const documented = serviceDocument().paths;
  const operation = (method: string, path: string) =>
    `${method} ${path.replace(/^\/api(?=\/)/, '').replace(/:([a-z]+)/g, '{$1}')}`;
  const served = new Set(
    routes
      // The reference page and the web app are pages, not API operations.
      .filter((r) => !/^\/(docs|app)(\/|$)/.test(r.path) && r.path !== '/api/openapi.json')
      .filter((r) => !['/graphiql', '/ruru-static/*asset', '/openapi.json'].includes(r.path))
      .map((r) => operation(r.method, r.path)),
  );
  const inDocument = new Set(
    Object.entries(documented).flatMap(([path, item]) =>
      ['get', 'post', 'put', 'patch', 'delete']
        .filter((method) => item[method])
        .map((method) => operation(method.toUpperCase(), path)),
    ),
  );
  t.true(served.size > 30, `${served.size} operations`);
  t.deepEqual([...served].filter((o) => !inDocument.has(o)).sort(), [], 'served, not documented');
  t.deepEqual([...inDocument].filter((o) => !served.has(o)).sort(), [], 'documented, not served');
});

test('an operation needs no token exactly when its route is anonymous; data routes never are', (t) => {
  const routes = inertServiceRoutes().filter((r) => r.doc);
  t.true(routes.length > 30);
  t.deepEqual(
    routes
      .filter((r) => (r.anonymous === true) !== (JSON.stringify(r.doc!.security) === '[]'))
      .map((r) => `${r.method} ${r.path}`),
    [],
    'security [] in the document, and anonymous on the route, go together',
  );
  t.deepEqual(
    routes.filter((r) => r.data && (r.anonymous || r.tenant === false)).map((r) => r.path),
    [],
    'a data path is served at /api after tenant resolution too: it must need both',
  );
});
