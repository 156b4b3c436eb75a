// Issue F14, finding 5 (webhooks outlive their owner): an endpoint keeps receiving the tenant's
// events after the admin who registered it is gone. Now it pauses, whatever path deactivates the
// author (weld-admin, GraphQL as an admin, SQL) or takes the admin role away: it receives
// nothing, a `webhook.paused` event says so (without the URL), its events wait, and an admin who
// resumes it becomes its author.
import test from 'ava';
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
  const { rows: events } = await w.owner.query<{ subject_id: string }>(
    `select subject_id from weld_public.events where type = 'webhook.paused' order by id`,
  );
  t.deepEqual(events.map((e) => e.subject_id).sort(), [hooks.gone, hooks.demoted].sort());
});
