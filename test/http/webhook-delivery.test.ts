// Webhooks of issue F8 over real HTTP, with real receivers on loopback: admins register endpoints
// and see the secret once; receivers verify every signature the Standard Webhooks way; a 500 is
// retried with the same webhook-id and later events wait their turn; an endpoint failing for the
// give-up time is disabled with the reason and resumes when re-activated; two server instances
// deliver each event once, in order; the address rules refuse internal networks at registration
// and at delivery; and no tenant's events reach another tenant's endpoint.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { noAnswer } from '../../rest-adapter/http/webhook-delivery.ts';
import { cookieHeader, login } from '../helpers/auth.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';
import {
  A,
  acceptWeld,
  ok,
  receiver,
  signatureValid,
  until,
  worker,
  world,
  type Json,
} from '../helpers/webhooks.ts';

//------------------------------------------------------------------------------------------------

test('admins register endpoints: the secret is shown once; other roles and tenants get nothing', async (t) => {
  const w = await world(t);
  const created = await w.a.admin.post('/webhooks', {
    url: 'https://hooks.example.com/weld',
    eventTypes: ['weld.status_changed'],
    description: 'ERP',
  });
  const hook = ok(created, 201);
  t.regex(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.is(created.headers.location, `/webhooks/${hook.id}`);
  t.is(created.headers.etag, '"1"');
  const read = ok(await w.a.admin.get(`/webhooks/${hook.id}`));
  t.false('secret' in read, 'never shown again');
  t.false(JSON.stringify(ok(await w.a.admin.get('/webhooks'))).includes(hook.secret));
  const rotated = ok(await w.a.admin.post(`/webhooks/${hook.id}/rotate-secret`));
  t.not(rotated.secret, hook.secret);
  t.is(rotated.version, 2);

  // Refusals: unknown and repeated types, a stale If-Match.
  const bad = await w.a.admin.post('/webhooks', {
    url: 'https://x.example',
    eventTypes: ['weld.exploded'],
  });
  t.is(bad.status, 422);
  const twice = await w.a.admin.post('/webhooks', {
    url: 'https://x.example',
    eventTypes: ['iso.created', 'iso.created'],
  });
  t.is(twice.status, 422);
  const stale = await w.a.admin.patch(
    `/webhooks/${hook.id}`,
    { active: false },
    { 'if-match': '"1"' },
  );
  t.is(stale.status, 412);
  const paused = ok(
    await w.a.admin.patch(`/webhooks/${hook.id}`, { active: false }, { 'if-match': '"2"' }),
  );
  t.like(paused, { active: false, version: 3 });

  // Every other role: 403 on every route; tenant B's admin: the endpoint does not exist.
  for (const role of ['viewer', 'inspector', 'engineer'] as const) {
    t.is((await w.a[role].get('/webhooks')).status, 403, role);
    t.is((await w.a[role].get(`/webhooks/${hook.id}`)).status, 403, role);
    t.is((await w.a[role].post('/webhooks', { url: 'https://x.example' })).status, 403, role);
    t.is((await w.a[role].get(`/webhooks/${hook.id}/deliveries`)).status, 403, role);
  }
  t.deepEqual(ok(await w.b.admin.get('/webhooks')).items, []);
  for (const res of [
    await w.b.admin.get(`/webhooks/${hook.id}`),
    await w.b.admin.patch(`/webhooks/${hook.id}`, { active: true }),
    await w.b.admin.post(`/webhooks/${hook.id}/test`),
    await w.b.admin.post(`/webhooks/${hook.id}/rotate-secret`),
    await w.b.admin.get(`/webhooks/${hook.id}/deliveries`),
    await w.b.admin.del(`/webhooks/${hook.id}`),
  ]) {
    t.is(res.status, 404);
  }
  t.is((await w.a.admin.del(`/webhooks/${hook.id}`)).status, 204);
  t.is((await w.a.admin.get(`/webhooks/${hook.id}`)).status, 404);

  // 20 per tenant.
  for (let i = 0; i < 20; i++)
    ok(await w.a.admin.post('/webhooks', { url: `https://h${i}.example` }), 201);
  const more = await w.a.admin.post('/webhooks', { url: 'https://h21.example' });
  t.is(more.status, 409);
  t.is(more.json.type, '/problems/too-many-webhooks');

  // Cookie mode: registering is an unsafe request, so it needs the CSRF token.
  const session = await login(w.server.port, A, 'admin');
  const noCsrf = await request(w.server.port, {
    method: 'POST',
    path: '/webhooks',
    host: A,
    body: { url: 'https://x.example' },
    headers: { cookie: cookieHeader(session) },
  });
  t.is(noCsrf.status, 403);
});

test('internal addresses are refused at registration, and at delivery', async (t) => {
  const w = await world(t, { webhookAllowPrivate: false });
  for (const url of [
    'http://127.0.0.1:1/x',
    'http://localhost/x',
    'http://localhost./x', // the fully qualified form
    'http://[::127.0.0.1]/x', // IPv4-compatible IPv6
    'http://[::ffff:7f00:1]/x', // IPv4-mapped, in hex
    'http://10.0.0.1/x',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://2130706433/x', // 127.0.0.1 as one number
    'http://0x7f.1/x',
    'http://0.0.0.0/x',
    'ftp://example.com/x',
    'http://user:pw@example.com/x',
    'not a url',
  ]) {
    const res = await w.a.admin.post('/webhooks', { url });
    t.is(res.status, 422, url);
    t.is(res.json.errors?.[0]?.pointer, '/url', url);
  }
  // An endpoint that got in anyway (made by a DBA, or a name that resolves inward): the worker
  // checks the address it connects to, and never connects.
  const inside = await receiver(t);
  await w.owner.query(
    `insert into weld_hidden.webhooks (tenant_id, url, secret)
     select id, $1, 'whsec_' || rpad('', 43, 'A') || '=' from weld_public.tenants where slug = 'alpha'`,
    [inside.url],
  );
  worker(t, w.server, { allowPrivate: false });
  await acceptWeld(w, 1);
  await until(async () => {
    const { rows } = await w.owner.query('select error from weld_hidden.webhook_deliveries');
    return rows.length > 0;
  }, 'an attempt');
  const { rows } = await w.owner.query<{ error: string; status: number | null }>(
    'select error, status from weld_hidden.webhook_deliveries',
  );
  t.is(rows[0]!.error, noAnswer(2000), 'the one outcome of every failure');
  t.is(rows[0]!.status, null);
  t.is(inside.got.length, 0, 'the receiver was never reached');
});

test('messages are signed, in order, retried after a 500 with the same id, and only of their types', async (t) => {
  const w = await world(t);
  // The first two attempts fail.
  const r = await receiver(t, (n) => (n <= 2 ? 500 : 204));
  const hook = ok(
    await w.a.admin.post('/webhooks', { url: r.url, eventTypes: ['weld.status_changed'] }),
    201,
  );
  worker(t, w.server);
  const first = await acceptWeld(w, 1);
  const second = await acceptWeld(w, 2);
  ok(await w.a.engineer.patch(`/isos/${w.iso}`, { area: 'not subscribed' }));
  await until(() => r.got.length >= 4, 'four deliveries');

  // Attempts 1 and 2 failed, 3 delivered the first event; then the second.
  const ids = r.got.map((x) => String(x.headers['webhook-id']));
  t.is(ids[0], ids[1]);
  t.is(ids[1], ids[2]);
  t.true(BigInt(ids[3]!) > BigInt(ids[0]!), 'the later event waited for the earlier one');
  t.deepEqual(
    r.got.map((x) => x.json.subjectId),
    [first, first, first, second],
  );
  for (const x of r.got) {
    t.true(signatureValid(hook.secret, x), 'the signature verifies');
    t.is(x.json.type, 'weld.status_changed');
    t.is(x.json.id, x.headers['webhook-id']);
    t.true(Math.abs(Date.now() / 1000 - Number(x.headers['webhook-timestamp'])) < 60);
  }
  t.is(r.got[3]!.json.data.status, 'ACCEPTED');
  t.false(signatureValid('whsec_' + Buffer.alloc(32).toString('base64'), r.got[3]!), 'not any key');

  // The receiver answers before the worker records the answer: wait for the fourth record.
  let deliveries: Json = { items: [] };
  await until(async () => {
    deliveries = ok(await w.a.admin.get(`/webhooks/${hook.id}/deliveries`));
    return deliveries.items.length >= 4;
  }, 'four delivery records');
  t.deepEqual(
    deliveries.items.map((d: Json) => [d.attempt, d.status]),
    [
      [1, 204],
      [3, 204],
      [2, 500],
      [1, 500],
    ],
    'newest first',
  );
  const state = ok(await w.a.admin.get(`/webhooks/${hook.id}`));
  t.is(state.lastEventId, ids[3]);
  t.is(state.failingSince, null);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.is(r.got.length, 4, 'the ISO change was not sent');

  // A new secret signs what follows.
  const rotated = ok(await w.a.admin.post(`/webhooks/${hook.id}/rotate-secret`));
  await acceptWeld(w, 3);
  await until(() => r.got.length >= 5, 'the fifth delivery');
  t.true(signatureValid(rotated.secret, r.got[4]!));
  t.false(signatureValid(hook.secret, r.got[4]!));

  // A test message, signed too, answered with the attempt.
  const ping = ok(await w.a.admin.post(`/webhooks/${hook.id}/test`));
  t.like(ping, { eventType: 'webhook.test', status: 204, attempt: 1, eventId: null });
  const received = r.got.at(-1)!;
  t.is(received.json.type, 'webhook.test');
  t.regex(String(received.headers['webhook-id']), /^ping_/);
  t.true(signatureValid(rotated.secret, received));
});

test('an endpoint failing past the give-up time is disabled with the reason, and resumes', async (t) => {
  const w = await world(t);
  let healthy = false;
  const r = await receiver(t, () => (healthy ? 204 : 500));
  const hook = ok(await w.a.admin.post('/webhooks', { url: r.url }), 201);
  worker(t, w.server);
  await acceptWeld(w, 1);
  await until(() => r.got.length >= 1, 'a first attempt');
  // It has been failing for 25 hours (more than WEBHOOK_GIVE_UP_HOURS, 24).
  await w.owner.query(
    `update weld_hidden.webhooks set failing_since = now() - interval '25 hours', next_attempt_at = now()
      where id = $1`,
    [hook.id],
  );
  await until(
    async () => !ok(await w.a.admin.get(`/webhooks/${hook.id}`)).active,
    'the endpoint disabled',
  );
  const disabled = ok(await w.a.admin.get(`/webhooks/${hook.id}`));
  t.regex(disabled.disabledReason, /HTTP 500/);
  const attempts = r.got.length;
  await acceptWeld(w, 2);
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.is(r.got.length, attempts, 'a disabled endpoint gets nothing');

  healthy = true;
  const resumed = ok(
    await w.a.admin.patch(
      `/webhooks/${hook.id}`,
      { active: true },
      { 'if-match': `"${disabled.version}"` },
    ),
  );
  t.like(resumed, { active: true, disabledReason: null, failingSince: null });
  // Its four events: weld 1 created and accepted, weld 2 created and accepted.
  await until(() => r.got.length >= attempts + 4, 'the backlog');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const delivered = r.got.slice(attempts).map((x) => x.json);
  t.deepEqual(
    delivered.map((e: Json) => e.type),
    ['weld.created', 'weld.status_changed', 'weld.created', 'weld.status_changed'],
    'resumed where it stopped, in order, none twice',
  );
  t.is(delivered[0].id, r.got[0]!.json.id, 'the event that failed comes first');
});

test('two server instances deliver each event once, in order; other tenants get none of them', async (t) => {
  const w = await world(t);
  const second = await startServer(t, w.target);
  const r = await receiver(t);
  const rB = await receiver(t);
  ok(await w.a.admin.post('/webhooks', { url: r.url, eventTypes: ['iso.updated'] }), 201);
  ok(await w.b.admin.post('/webhooks', { url: rB.url }), 201);
  worker(t, w.server);
  worker(t, second);
  for (let i = 0; i < 30; i++) {
    ok(await w.a.engineer.patch(`/isos/${w.iso}`, { area: `Area ${i}` }));
  }
  await until(() => r.got.length >= 30, '30 deliveries');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const ids = r.got.map((x) => Number(x.json.id));
  t.is(ids.length, 30, 'none twice');
  t.deepEqual(
    ids,
    [...ids].sort((x, y) => x - y),
    'in order',
  );
  t.deepEqual(
    r.got.map((x) => x.json.data.area),
    Array.from({ length: 30 }, (_, i) => `Area ${i}`),
  );
  t.is(rB.got.length, 0, "tenant B's endpoint received none of A's events");
  const { rows } = await w.owner.query<{ n: number }>(
    'select count(*)::int as n from weld_hidden.webhook_deliveries',
  );
  t.is(rows[0]!.n, 30, 'one attempt each');
});

test('an answer with a NUL is not kept; concurrent registrations keep the limit; URLs are stored normalized', async (t) => {
  const w = await world(t);
  // A receiver whose answer PostgreSQL text could not hold: delivered, and the attempt recorded
  // (its status: the body is not kept at all).
  const server = http.createServer((_req, res) => res.writeHead(200).end('thanks\0'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const hook = ok(await w.a.admin.post('/webhooks', { url }), 201);
  worker(t, w.server);
  await acceptWeld(w, 1);
  await until(
    async () => ok(await w.a.admin.get(`/webhooks/${hook.id}/deliveries`)).items.length >= 2,
    'two deliveries',
  );
  const deliveries = ok(await w.a.admin.get(`/webhooks/${hook.id}/deliveries`)).items;
  t.deepEqual(
    deliveries.map((d: Json) => [d.attempt, d.status, d.error]),
    [
      [1, 200, null],
      [1, 200, null],
    ],
  );
  const ping = ok(await w.a.admin.post(`/webhooks/${hook.id}/test`));
  t.like(ping, { status: 200, error: null });
  t.false(JSON.stringify(ping).includes('thanks'));

  // 30 registrations at once where 19 places are left: exactly 19 are made.
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      w.a.admin.post('/webhooks', { url: `https://h${i}.example` }),
    ),
  );
  t.is(answers.filter((a) => a.status === 201).length, 19);
  t.true(answers.filter((a) => a.status !== 201).every((a) => a.status === 409));
  t.is(
    ok(await w.b.admin.post('/webhooks', { url: 'HTTP://Hooks.Example.COM' }), 201).url,
    'http://hooks.example.com/',
  );
});
