// The web app's HTTP face (server/pwa.ts) and the rules it reads (GET /weld-transitions), over
// real HTTP: /app/ on a tenant's origin only, every asset under a CSP without inline scripts or
// styles, revalidated by ETag; and each tenant's transition rules to every role of that tenant
// only. The app itself is tested in a browser (test/browser/pwa.test.ts).
import test, { type ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const A = 'a.test';
const B = 'b.test';

async function world(t: ExecutionContext) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  const { port } = await startServer(t, target);
  return { port, owner };
}

test('the app is served at /app/ on a tenant origin, under a strict CSP, revalidated by ETag', async (t) => {
  const { port } = await world(t);
  const get = (path: string, host = A, headers: Record<string, string> = {}) =>
    request(port, { path, host, headers });

  const redirect = await get('/app');
  t.is(redirect.status, 308);
  t.is(redirect.headers.location, '/app/');

  const page = await get('/app/');
  t.is(page.status, 200);
  t.regex(page.headers['content-type']!, /^text\/html/);
  const csp = String(page.headers['content-security-policy']);
  t.regex(csp, /default-src 'none'/);
  t.regex(csp, /script-src 'self'(;|$)/);
  t.regex(csp, /style-src 'self'(;|$)/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.notRegex(csp, /unsafe-inline|unsafe-eval/);
  t.is(page.headers['x-content-type-options'], 'nosniff');
  // No inline script or style in the page: everything comes from files the CSP allows.
  t.notRegex(page.text, /<script(?![^>]*\bsrc=)[^>]*>/);
  t.notRegex(page.text, /<style|style=/);
  t.regex(page.text, /<script type="module" src="app.js"><\/script>/);

  for (const [file, type] of [
    ['app.js', /^text\/javascript/],
    ['sw.js', /^text\/javascript/],
    ['app.css', /^text\/css/],
    ['manifest.webmanifest', /^application\/manifest\+json/],
    ['icon-192.png', /^image\/png/],
    ['icon-512.png', /^image\/png/],
  ] as const) {
    const asset = await get(`/app/${file}`);
    t.is(asset.status, 200, file);
    t.regex(asset.headers['content-type']!, type, file);
    t.is(asset.headers['content-security-policy'], csp, file);
    t.is(asset.headers['cache-control'], 'no-cache', file);
    const again = await get(`/app/${file}`, A, { 'if-none-match': asset.headers.etag! });
    t.is(again.status, 304, `${file} revalidates`);
  }

  // The manifest makes it installable: a start URL and scope under /app/, icons of 192 and 512.
  const manifest = (await get('/app/manifest.webmanifest')).json;
  t.is(manifest.start_url, '/app/');
  t.is(manifest.scope, '/app/');
  t.is(manifest.display, 'standalone');
  t.deepEqual(
    manifest.icons
      .filter((i: { type: string }) => i.type === 'image/png')
      .map((i: { sizes: string }) => i.sizes),
    ['192x192', '512x512'],
  );

  // The service worker knows the build it caches: the shell's files, not the page under its own name.
  const worker = (await get('/app/sw.js')).text;
  t.regex(worker, /weld-shell-/);
  t.regex(worker, /"app\.js"/);

  t.is((await get('/app/nothing.js')).status, 404);
  t.is((await get('/app/index.html')).status, 404, 'the page is /app/ only');
  t.is((await get('/app/..%2Fpackage.json')).status, 404);
  t.is((await get('/app/', 'unknown.test')).status, 404, 'only on a tenant origin');
});

test('GET /weld-transitions: the tenant rules for every role of that tenant, none of another', async (t) => {
  const { port, owner } = await world(t);
  // Tenant B's rules differ: one more, and a reason now required from PENDING to ACCEPTED.
  await owner.query(
    `insert into weld_public.weld_transition_rules (tenant_id, from_status, to_status, least_role, reason_required, note)
     select id, 'REJECTED', 'ACCEPTED', 'engineer', true, 'a misread film corrected' from weld_public.tenants where slug = 'bravo'`,
  );
  await owner.query(
    `update weld_public.weld_transition_rules r set reason_required = true from weld_public.tenants t
      where t.id = r.tenant_id and t.slug = 'bravo' and r.from_status = 'PENDING' and r.to_status = 'ACCEPTED'`,
  );
  const rules = async (host: string, userName: string) => {
    const token = (await login(port, host, userName)).json.accessToken as string;
    return request(port, {
      path: '/weld-transitions',
      host,
      headers: { authorization: `Bearer ${token}` },
    });
  };

  for (const role of ['viewer', 'inspector', 'engineer', 'admin']) {
    const res = await rules(A, role);
    t.is(res.status, 200, role);
    t.is(res.json.items.length, 9, role);
  }
  const a = (await rules(A, 'viewer')).json.items;
  t.deepEqual(a[0], {
    fromStatus: 'PENDING',
    toStatus: 'ACCEPTED',
    leastRole: 'inspector',
    reasonRequired: false,
    note: 'examination passed',
  });
  t.deepEqual(
    a.map((r: { fromStatus: string }) => r.fromStatus),
    [...a.map((r: { fromStatus: string }) => r.fromStatus)].sort(
      (x: string, y: string) =>
        ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'].indexOf(x) -
        ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'].indexOf(y),
    ),
    'in lifecycle order',
  );

  const b = (await rules(B, 'viewer')).json.items;
  t.is(b.length, 10);
  t.true(
    b.some(
      (r: { fromStatus: string; toStatus: string }) =>
        r.fromStatus === 'REJECTED' && r.toStatus === 'ACCEPTED',
    ),
  );
  t.false(
    a.some(
      (r: { fromStatus: string; toStatus: string }) =>
        r.fromStatus === 'REJECTED' && r.toStatus === 'ACCEPTED',
    ),
  );
  t.true(b.find((r: { toStatus: string }) => r.toStatus === 'ACCEPTED').reasonRequired);

  // No token: 401; a token of tenant A on B's origin: 401 (a token is for the origin it was issued by).
  t.is((await request(port, { path: '/weld-transitions', host: A })).status, 401);
  const tokenA = (await login(port, A, 'admin')).json.accessToken as string;
  t.is(
    (
      await request(port, {
        path: '/weld-transitions',
        host: B,
        headers: { authorization: `Bearer ${tokenA}` },
      })
    ).status,
    401,
  );
  t.is((await request(port, { method: 'POST', path: '/weld-transitions', host: A })).status, 405);
  t.is((await request(port, { path: '/api/weld-transitions', host: A })).status, 401);
});
