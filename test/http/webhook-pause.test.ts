// Issue F14, finding 5 (webhooks outlive their owner): an endpoint keeps receiving the tenant's
// events after the admin who registered it is gone. Now it pauses, whatever path deactivates the
// author (weld-admin, GraphQL as an admin, SQL) or takes the admin role away: it receives
// nothing, a `webhook.paused` event says so (without the URL), its events wait, and an admin who
// resumes it becomes its author.
//
// The follow-up review: an admin who re-pointed another admin's endpoint, or set its secret, did
// not become its author, so deactivating them paused nothing; and a resume that committed after
// the resuming admin's deactivation left an active endpoint with a deactivated author.
import test from 'ava';
import { withContext } from '../../db/database.ts';
import { addUser, disableUser } from '../../db/users.ts';
import { PASSWORD, login } from '../helpers/auth.ts';
import { bearerClient, request } from '../helpers/http.ts';
import {
  A,
  acceptWeld,
  ok,
  receiver,
  sleep,
  until,
  worker,
  world,
  signatureValid,
  type Json,
  type World,
} from '../helpers/webhooks.ts';

/** A second admin of alpha, signed in; its id. */
async function secondAdmin(w: World, userName = 'admin2') {
  const user = await addUser(w.owner, {
    tenant: 'alpha',
    userName,
    role: 'admin',
    password: PASSWORD,
  });
  const token = ok(await login(w.server.port, A, userName)).accessToken as string;
  return { id: user.id, client: bearerClient(w.server.port, A, token), token };
}

/** Alpha's admin, as GraphQL sees it. */
function graphql(w: World, token: string) {
  return async (query: string) => {
    const res = await request(w.server.port, {
      method: 'POST',
      path: '/graphql',
      host: A,
      body: { query },
      headers: { authorization: `Bearer ${token}` },
    });
    if (res.status !== 200 || res.json?.errors) throw new Error(`${res.status} ${res.text}`);
    return res.json.data;
  };
}

test('an endpoint pauses when its author is deactivated (weld-admin), gets nothing, and resumes with its backlog', async (t) => {
  const w = await world(t);
  const author = await secondAdmin(w);
  const theirs = await receiver(t);
  const ours = await receiver(t);
  const hook = ok(
    await author.client.post('/webhooks', { url: theirs.url, eventTypes: ['weld.status_changed'] }),
    201,
  );
  t.is(hook.createdBy, author.id);
  const watcher = ok(
    await w.a.admin.post('/webhooks', {
      url: ours.url,
      eventTypes: ['weld.status_changed', 'webhook.paused'],
    }),
    201,
  );
  worker(t, w.server);
  const before = await acceptWeld(w, 1);
  await until(() => theirs.got.length >= 1 && ours.got.length >= 1, 'deliveries before');

  // `weld-admin user disable alpha admin2`.
  await disableUser(w.owner, 'alpha', 'admin2');
  const paused = ok(await w.a.admin.get(`/webhooks/${hook.id}`));
  t.truthy(paused.pausedAt);
  t.is(paused.pausedReason, 'its author admin2 was deactivated');
  t.true(paused.active, 'paused, not disabled: active is the admin\u2019s own switch');
  t.is(paused.version, hook.version + 1, 'the ETag moves');
  t.false(ok(await w.a.admin.get(`/webhooks/${watcher.id}`)).pausedAt !== null, 'others run');

  // The tenant hears of it, without the URL.
  await until(() => ours.got.some((r) => r.json.type === 'webhook.paused'), 'webhook.paused');
  const event = ours.got.find((r) => r.json.type === 'webhook.paused')!.json;
  t.like(event, { subjectId: hook.id, data: { id: hook.id, createdBy: author.id } });
  t.is(event.data.pausedReason, 'its author admin2 was deactivated');
  t.false(JSON.stringify(event).includes(theirs.url), 'no URL in the feed');

  // While paused: nothing is sent, not even a test message; the events wait.
  const during = [await acceptWeld(w, 2), await acceptWeld(w, 3)];
  await until(() => ours.got.length >= 4, 'the watcher gets the new events');
  await sleep(500); // several polls of the worker (100 ms): time to send, had it been allowed to
  t.is(theirs.got.length, 1, 'the paused endpoint received nothing');
  const ping = await w.a.admin.post(`/webhooks/${hook.id}/test`);
  t.is(ping.status, 409);
  t.is(ping.json.type, '/problems/webhook-paused');
  t.is(theirs.got.length, 1);

  // The deactivated author cannot resume it (its sessions ended); another role may not.
  t.is((await author.client.patch(`/webhooks/${hook.id}`, { active: true })).status, 401);
  t.is((await w.a.engineer.patch(`/webhooks/${hook.id}`, { active: true })).status, 403);

  // An admin resumes it: from where it stopped, in order; the admin is its author now.
  const resumed = ok(
    await w.a.admin.patch(
      `/webhooks/${hook.id}`,
      { active: true },
      { 'if-match': `"${paused.version}"` },
    ),
  );
  t.like(resumed, { pausedAt: null, pausedReason: null, active: true });
  const admin = ok(await w.a.admin.get('/auth/me'));
  t.is(resumed.createdBy, admin.id, 'the resuming admin is its author now');
  await until(() => theirs.got.length >= 3, 'the backlog');
  t.deepEqual(
    theirs.got.map((r) => r.json.subjectId),
    [before, ...during],
    'the events of the pause were kept, and delivered in order',
  );
});

test('deactivation through GraphQL, and losing the admin role, pause too; a disable undone before commit does not', async (t) => {
  const w = await world(t);
  const gone = await secondAdmin(w, 'admin2');
  const demoted = await secondAdmin(w, 'admin3');
  const undone = await secondAdmin(w, 'admin4');
  const r = await receiver(t);
  const hooks = {
    gone: ok(await gone.client.post('/webhooks', { url: r.url }), 201).id as string,
    demoted: ok(await demoted.client.post('/webhooks', { url: r.url }), 201).id as string,
    undone: ok(await undone.client.post('/webhooks', { url: r.url }), 201).id as string,
    admins: ok(await w.a.admin.post('/webhooks', { url: r.url }), 201).id as string,
  };

  const adminToken = ok(await login(w.server.port, A, 'admin')).accessToken as string;
  const gql = graphql(w, adminToken);
  const nodeOf = async (userName: string) =>
    (await gql(`{ allUsers(first: 1, condition: { userName: "${userName}" }) { nodes { id } } }`))
      .allUsers.nodes[0].id as string;
  await gql(
    `mutation { updateUser(input: { id: "${await nodeOf('admin2')}", userPatch: { active: false } }) { user { active } } }`,
  );
  await gql(
    `mutation { updateUser(input: { id: "${await nodeOf('admin3')}", userPatch: { role: engineer } }) { user { role } } }`,
  );
  // Disabled and enabled again in one transaction (a DBA's correction): no pause.
  await w.owner.query('begin');
  await w.owner.query(`update weld_public.users set active = false where user_name = 'admin4'`);
  await w.owner.query(`update weld_public.users set active = true where user_name = 'admin4'`);
  await w.owner.query('commit');

  const state = async (id: string) => ok(await w.a.admin.get(`/webhooks/${id}`));
  t.is((await state(hooks.gone)).pausedReason, 'its author admin2 was deactivated');
  t.is((await state(hooks.demoted)).pausedReason, 'its author admin3 is no longer an admin');
  t.is((await state(hooks.undone)).pausedAt, null);
  t.is((await state(hooks.admins)).pausedAt, null);

  // The worker sends the next event to the two that run, and to neither paused one.
  worker(t, w.server);
  ok(await w.a.engineer.patch(`/isos/${w.iso}`, { area: 'after' }));
  await until(() => r.got.filter((x) => x.json.type === 'iso.updated').length >= 2, 'deliveries');
  await sleep(500);
  const { rows } = await w.owner.query<{ webhook_id: string }>(
    `select webhook_id from weld_hidden.webhook_deliveries where event_type = 'iso.updated'`,
  );
  t.deepEqual(rows.map((x) => x.webhook_id).sort(), [hooks.undone, hooks.admins].sort());
  // Each pause was announced once, to the endpoints listening for every type.
  await w.owner.query('select weld_hidden.place_events()'); // what the server's relay does
  const { rows: events } = await w.owner.query<{ subject_id: string }>(
    `select subject_id from weld_public.events where type = 'webhook.paused' order by id`,
  );
  t.deepEqual(events.map((e) => e.subject_id).sort(), [hooks.gone, hooks.demoted].sort());
});

/** The webhook.paused events of an endpoint, from the table (every role reads them). */
async function pausedEvents(w: World, id: string) {
  await w.owner.query('select weld_hidden.place_events()'); // what the server's relay does
  const { rows } = await w.owner.query<{ data: Json }>(
    `select data from weld_public.events where type = 'webhook.paused' and subject_id = $1`,
    [id],
  );
  return rows.map((r) => r.data);
}

test("an admin who re-points another admin's endpoint becomes its author: it pauses when they go, and receives nothing", async (t) => {
  const w = await world(t);
  const admin = ok(await w.a.admin.get('/auth/me'));
  const admin2 = await secondAdmin(w);
  const legit = await receiver(t);
  const attacker = await receiver(t);
  const hook = ok(await w.a.admin.post('/webhooks', { url: legit.url }), 201);
  t.is(hook.createdBy, admin.id);
  worker(t, w.server);

  // admin2 points it at their own receiver, and is deactivated (the review's reproduction).
  const repointed = ok(
    await admin2.client.patch(`/webhooks/${hook.id}`, { url: attacker.url, description: 'x' }),
  );
  t.is(repointed.url, attacker.url);
  t.is(repointed.createdBy, admin2.id, 'who chose where it points is its author');
  await disableUser(w.owner, 'alpha', 'admin2');

  const paused = ok(await w.a.admin.get(`/webhooks/${hook.id}`));
  t.truthy(paused.pausedAt);
  t.is(paused.pausedReason, 'its author admin2 was deactivated');
  t.like(await pausedEvents(w, hook.id), [{ id: hook.id, createdBy: admin2.id }]);

  await acceptWeld(w, 1);
  await sleep(600); // several polls of the worker (100 ms)
  t.is(attacker.got.length, 0, "the deactivated admin's URL received nothing");
  t.is(legit.got.length, 0);

  // A change of the event types makes the caller the author as well; a description does not.
  const other = ok(await w.a.admin.post('/webhooks', { url: legit.url }), 201);
  const admin3 = await secondAdmin(w, 'admin3');
  t.is(
    ok(await admin3.client.patch(`/webhooks/${other.id}`, { description: 'notes' })).createdBy,
    admin.id,
  );
  t.is(
    ok(await admin3.client.patch(`/webhooks/${other.id}`, { eventTypes: ['iso.updated'] }))
      .createdBy,
    admin3.id,
  );
});

test('a rotated secret makes the caller the author; the author before no longer pauses it', async (t) => {
  const w = await world(t);
  const admin2 = await secondAdmin(w);
  const admin3 = await secondAdmin(w, 'admin3');
  const r = await receiver(t);
  // Both registered by admin3; admin2 rotates one secret and re-types the other.
  const rotated = ok(await admin3.client.post('/webhooks', { url: r.url }), 201);
  const retyped = ok(await admin3.client.post('/webhooks', { url: r.url }), 201);
  const untouched = ok(await admin3.client.post('/webhooks', { url: r.url }), 201);
  const renewed = ok(await admin2.client.post(`/webhooks/${rotated.id}/rotate-secret`));
  t.is(renewed.createdBy, admin2.id, 'who knows the secret is its author');
  t.is(
    ok(await admin2.client.patch(`/webhooks/${retyped.id}`, { eventTypes: ['iso.updated'] }))
      .createdBy,
    admin2.id,
  );

  // admin3, the author before, goes: only the endpoint still theirs pauses.
  await disableUser(w.owner, 'alpha', 'admin3');
  const state = async (id: string) => ok(await w.a.admin.get(`/webhooks/${id}`));
  t.is((await state(untouched.id)).pausedReason, 'its author admin3 was deactivated');
  t.is((await state(rotated.id)).pausedAt, null);
  t.is((await state(retyped.id)).pausedAt, null);

  // admin2, who holds the rotated secret, goes: both pause, each event naming admin2.
  await disableUser(w.owner, 'alpha', 'admin2');
  for (const id of [rotated.id, retyped.id]) {
    t.is((await state(id)).pausedReason, 'its author admin2 was deactivated');
    t.like(await pausedEvents(w, id), [{ createdBy: admin2.id }]);
  }
  worker(t, w.server);
  ok(await w.a.engineer.patch(`/isos/${w.iso}`, { area: 'after' }));
  await acceptWeld(w, 1);
  await sleep(600);
  t.false(
    r.got.some((x) => signatureValid(renewed.secret, x)),
    'nothing signed with the secret admin2 knows',
  );
  t.is(r.got.length, 0);
});

test('a resume racing its admin\u2019s deactivation: the deactivation waits and pauses it again', async (t) => {
  const w = await world(t);
  const admin2 = await secondAdmin(w);
  const r = await receiver(t);
  const hook = ok(await w.a.admin.post('/webhooks', { url: r.url }), 201);
  const { rows } = await w.owner.query<{ id: string }>(
    `select id from weld_public.tenants where slug = 'alpha'`,
  );
  const tenantId = rows[0]!.id;
  // Paused as if its author had gone (admin is still around; the state is what matters).
  await w.owner.query(
    `update weld_hidden.webhooks set paused_at = now(), paused_reason = 'its author x was deactivated'
      where id = $1`,
    [hook.id],
  );

  // admin2 resumes it in a transaction of theirs (any path: the table's trigger), and before it
  // commits, a DBA deactivates admin2.
  let disabled = false;
  let disabling: Promise<void> | undefined;
  await withContext(
    w.server.pool,
    { role: 'weld_admin', tenantId, userId: admin2.id },
    async (db) => {
      await db.query(
        'update weld_hidden.webhooks set paused_at = null, paused_reason = null where id = $1',
        [hook.id],
      );
      disabling = disableUser(w.owner, 'alpha', 'admin2').then(() => {
        disabled = true;
      });
      await sleep(400);
      t.false(disabled, 'the deactivation waits for the resume');
    },
  );
  await disabling;
  const after = ok(await w.a.admin.get(`/webhooks/${hook.id}`));
  t.is(after.createdBy, admin2.id);
  t.is(after.pausedReason, 'its author admin2 was deactivated', 'paused again at its commit');
});

test('changes racing their admin\u2019s deactivation: they fail, or the endpoint pauses after them', async (t) => {
  const w = await world(t);
  const admin2 = await secondAdmin(w);
  const admin3 = await secondAdmin(w, 'admin3');
  const legit = await receiver(t);
  const attacker = await receiver(t);
  const hook = ok(await w.a.admin.post('/webhooks', { url: legit.url }), 201);
  const changes = (who: typeof admin2) => [
    who.client.patch(`/webhooks/${hook.id}`, { url: attacker.url }),
    who.client.post(`/webhooks/${hook.id}/rotate-secret`),
    who.client.patch(`/webhooks/${hook.id}`, { active: true }),
  ];

  // The deactivation goes first: its pause has run (SET CONSTRAINTS ... IMMEDIATE runs the
  // deferred trigger now) but not committed while admin2's changes come in (a new URL, a new
  // secret, a resume). Each waits for it, and fails.
  await w.owner.query('begin');
  await w.owner.query(`update weld_public.users set active = false where user_name = 'admin2'`);
  await w.owner.query('set constraints all immediate');
  const refused = changes(admin2);
  await sleep(400);
  await w.owner.query('commit');
  for (const res of await Promise.all(refused)) {
    t.is(res.status, 403, res.text);
    t.is(res.json.type, '/problems/role-not-allowed');
  }
  t.like(ok(await w.a.admin.get(`/webhooks/${hook.id}`)), {
    url: legit.url,
    pausedAt: null,
    version: hook.version,
  });

  // admin3's changes go first: they pass, and the deactivation's commit pauses the endpoint.
  await w.owner.query('begin');
  await w.owner.query(`update weld_public.users set active = false where user_name = 'admin3'`);
  for (const res of await Promise.all(changes(admin3))) t.is(res.status, 200, res.text);
  await w.owner.query('commit');
  t.like(ok(await w.a.admin.get(`/webhooks/${hook.id}`)), {
    url: attacker.url,
    createdBy: admin3.id,
    pausedReason: 'its author admin3 was deactivated',
  });
});
