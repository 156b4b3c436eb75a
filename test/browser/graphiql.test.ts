// GraphiQL signs in (issue F17), in a real browser: Debian's Chromium against the real service on
// a loopback origin. Signed in to the web app, /graphiql runs as that user: its own requests
// (introspection, a query) answer 200, where they used to be 403 csrf-rejected; when the access
// cookie is gone, one refresh of the session and the query goes through. Anonymous, it says how to
// sign in and its requests are 401. From the attacker's side: the same cookies without the
// X-CSRF-Token header, or with a forged one, are still refused, and no other page may frame it.
import test, { type ExecutionContext } from 'ava';
import type { BrowserContext, Page, Response } from 'playwright-core';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, PASSWORD } from '../helpers/auth.ts';
import {
  browserForTests,
  DESKTOP,
  screenshot,
  signInToApp,
  watchPage,
} from '../helpers/browser.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const browser = browserForTests(test);

interface World {
  origin: string;
  isos: number;
  context: BrowserContext;
  page: Page;
  problems: string[];
}

/** A service with a seeded tenant, and a fresh browser context on its origin. */
async function world(t: ExecutionContext): Promise<World> {
  const { target } = await migratedDatabase(t);
  const { port } = await startServer(t, target);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const origin = `http://127.0.0.1:${port}`;
  await addTenant(owner, { slug: 'site', name: 'Site project', origins: [origin] });
  // The page waits for the GraphQL schema, which a test server builds on first use: seconds of
  // CPU, many more on a loaded machine. Built first (once the origin is a tenant's: an unknown
  // one is remembered as such for a while), the browser's bounds time the page alone.
  await request(port, { path: '/graphiql' });
  await seedTenant(owner, 'site', { isos: 3, weldsPerIso: 4, seed: 5 });
  await addRoleUsers(owner, 'site');
  const context = await browser().newContext({ baseURL: origin, viewport: DESKTOP });
  t.teardown(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  watchPage(page, problems);
  return { origin, isos: 3, context, page, problems };
}

async function signInToTheApp(page: Page): Promise<void> {
  await page.goto('/app/');
  await signInToApp(page, 'viewer', PASSWORD);
}

const isGraphqlPost = (r: Response) =>
  r.url().endsWith('/graphql') && r.request().method() === 'POST';

/**
 * Opens /graphiql and returns the answer to GraphiQL's own first request (introspection). Its
 * bundle is 1.2 MB of script: on a loaded machine Chromium takes its time, and these tests judge
 * what the page does, not how fast (so the bounds are generous, and the tests run one at a time).
 */
async function openGraphiql(page: Page): Promise<Response> {
  const introspection = page.waitForResponse(isGraphqlPost, { timeout: 90_000 });
  await page.goto('/graphiql', { timeout: 90_000 });
  return introspection;
}

/** A query sent by the page's fetch (the one GraphiQL uses), as GraphiQL sends it. */
function queryFromThePage(page: Page, query: string): Promise<{ status: number; body: unknown }> {
  return page.evaluate(
    `fetch('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: ${JSON.stringify(query)} }) })
       .then(async (r) => ({ status: r.status, body: await r.json() }))`,
  );
}

const COUNT = '{ allIsos(first: 1) { totalCount } }';

test.serial(
  'signed in to the web app, GraphiQL runs as that user: its requests answer 200, not 403',
  async (t) => {
    const w = await world(t);
    await signInToTheApp(w.page);
    const introspection = await openGraphiql(w.page);
    t.is(introspection.status(), 200, await introspection.text());
    t.true(
      ((await introspection.json()) as { data?: { __schema?: unknown } }).data?.__schema !==
        undefined,
    );
    const csrf = (await w.context.cookies()).find((c) => c.name === 'svc_csrf')?.value;
    t.truthy(csrf);
    t.is(introspection.request().headers()['x-csrf-token'], decodeURIComponent(csrf!));
    t.true(await w.page.locator('#weld-signin').isHidden());

    const answer = await queryFromThePage(w.page, COUNT);
    t.is(answer.status, 200);
    t.deepEqual(answer.body, { data: { allIsos: { totalCount: w.isos } } });
    await screenshot(w.page, 'graphiql-signed-in');
    t.deepEqual(w.problems, []);
  },
);

test.serial(
  'the access cookie gone, GraphiQL refreshes the session once and the query goes through',
  async (t) => {
    const w = await world(t);
    await signInToTheApp(w.page);
    await openGraphiql(w.page);
    await w.context.clearCookies({ name: 'svc_at' });

    const refreshes: number[] = [];
    w.page.on('response', (r) => {
      if (r.url().endsWith('/auth/refresh')) refreshes.push(r.status());
    });
    const answer = await queryFromThePage(w.page, COUNT);
    t.is(answer.status, 200);
    t.deepEqual(answer.body, { data: { allIsos: { totalCount: w.isos } } });
    t.deepEqual(refreshes, [200]);
    const cookies = await w.context.cookies();
    t.true(
      cookies.some((c) => c.name === 'svc_at'),
      'a new access cookie',
    );
    t.deepEqual(w.problems, []);
  },
);

test.serial('anonymous, GraphiQL says how to sign in, and its requests are 401', async (t) => {
  const w = await world(t);
  const introspection = await openGraphiql(w.page);
  t.is(introspection.status(), 401);
  const note = w.page.locator('#weld-signin');
  await note.waitFor();
  t.regex(await note.innerText(), /Not signed in\. Sign in to the web app/);
  t.regex(await note.innerText(), /Authorization/);
  await screenshot(w.page, 'graphiql-anonymous');
  const answer = await queryFromThePage(w.page, COUNT);
  t.is(answer.status, 401);
  t.deepEqual(w.problems, []);
});

test.serial(
  'attacker: the session cookies without X-CSRF-Token are refused; no page may frame GraphiQL',
  async (t) => {
    const w = await world(t);
    await signInToTheApp(w.page);
    // The browser's cookies, sent without the header (what a form or fetch of another site sends).
    const bare = await w.context.request.post(`${w.origin}/graphql`, {
      headers: { 'content-type': 'application/json' },
      data: { query: COUNT },
    });
    t.is(bare.status(), 403);
    t.is(((await bare.json()) as { type: string }).type, '/problems/csrf-rejected');
    // A wrong token is no better.
    const forged = await w.context.request.post(`${w.origin}/graphql`, {
      headers: { 'content-type': 'application/json', 'x-csrf-token': 'forged.token' },
      data: { query: COUNT },
    });
    t.is(forged.status(), 403);
    // The page runs as the signed-in user, so no other page may frame it.
    const page = await w.context.request.get(`${w.origin}/graphiql`);
    t.is(page.status(), 200);
    t.is(page.headers()['content-security-policy'], "frame-ancestors 'none'");
    t.is(page.headers()['x-frame-options'], 'DENY');
    // A page of another origin that frames it gets nothing rendered (Chromium refuses the frame).
    const framer = await w.context.newPage();
    const refusal = framer.waitForEvent('console', (m) =>
      /frame-ancestors|Refused to (display|frame)/i.test(m.text()),
    );
    await framer.setContent(`<iframe src="${w.origin}/graphiql"></iframe>`);
    t.regex((await refusal).text(), /frame-ancestors 'none'/);
  },
);
