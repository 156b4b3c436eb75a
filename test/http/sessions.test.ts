// Ended sessions end their access tokens at once, on every server instance: logout, a user disabled
// or given another role (through GraphQL or plain SQL), with the revocation listener surviving a
// lost connection. And the server purges stale authentication bookkeeping by itself.
import test, { type ExecutionContext } from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { addTenant } from '../../db/tenants.ts';
import { setPassword } from '../../db/users.ts';
import { SessionRevocations } from '../../rest-adapter/http/auth/revocations.ts';
import { startHousekeeping } from '../../server/housekeeping.ts';
import { createLogger } from '../../rest-adapter/http/log.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const A = 'a.test';

async function setup(t: ExecutionContext) {
  const { target, rootUrl } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  owner.on('error', () => {});
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  await addRoleUsers(owner, 'alpha');
  const first = await startServer(t, target);
  const second = await startServer(t, target);
  return { owner, rootUrl, target, first, second };
}

/** A data request, which (unlike GET /auth/me) does not look at the user's row. */
const me = (port: number, token: string) =>
  request(port, { path: '/isos', host: A, headers: { authorization: `Bearer ${token}` } });

/** A bearer-mode refresh. */
const refreshWith = (port: number, refreshToken: string) =>
  request(port, { method: 'POST', path: '/auth/refresh', host: A, body: { refreshToken } });

/** The status of GET /isos once it is `wanted`, or the last one after two seconds. */
async function eventually(port: number, token: string, wanted: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 40 && status !== wanted; i++) {
    status = (await me(port, token)).status;
    if (status !== wanted) await sleep(50);
  }
  return status;
}

test('logout ends the access token at once, on this instance and on another', async (t) => {
  const { first, second } = await setup(t);
  const session = (await login(first.port, A, 'viewer')).json;
  const other = (await login(first.port, A, 'viewer')).json;
  t.is((await me(second.port, session.accessToken)).status, 200, 'cached as verified first');
  const out = await request(first.port, {
    method: 'POST',
    path: '/auth/logout',
    host: A,
    body: { refreshToken: session.refreshToken },
  });
  t.is(out.status, 204);
  t.is(await eventually(first.port, session.accessToken, 401), 401);
  t.is(await eventually(second.port, session.accessToken, 401), 401);
  t.is((await me(second.port, other.accessToken)).status, 200, 'another session of the user');
});

test('an admin disabling a user through GraphQL ends its sessions; others keep theirs', async (t) => {
  const { first, second } = await setup(t);
  const admin = (await login(first.port, A, 'admin')).json.accessToken as string;
  const inspector = (await login(first.port, A, 'inspector')).json;
  const viewer = (await login(first.port, A, 'viewer')).json.accessToken as string;
  const gql = (query: string) =>
    request(first.port, {
      method: 'POST',
      path: '/graphql',
      host: A,
      body: { query },
      headers: { authorization: `Bearer ${admin}` },
    });
  const found = await gql(
    '{ allUsers(first: 10, condition: { userName: "inspector" }) { nodes { id } } }',
  );
  const nodeId = found.json.data.allUsers.nodes[0].id as string;
  const updated = await gql(
    `mutation { updateUser(input: { id: "${nodeId}", userPatch: { active: false } }) { user { active } } }`,
  );
  t.deepEqual(updated.json, { data: { updateUser: { user: { active: false } } } });
  t.is(await eventually(second.port, inspector.accessToken, 401), 401);
  t.is(await eventually(first.port, inspector.accessToken, 401), 401);
  t.is((await refreshWith(first.port, inspector.refreshToken)).status, 401);
  t.is((await me(first.port, viewer)).status, 200);
});

test('a new password (weld-admin user set-password) ends the sessions', async (t) => {
  const { first, owner } = await setup(t);
  const session = (await login(first.port, A, 'inspector')).json;
  t.is((await me(first.port, session.accessToken)).status, 200);
  await setPassword(owner, 'alpha', 'inspector', 'a brand new passphrase');
  t.is(await eventually(first.port, session.accessToken, 401), 401);
  t.is((await refreshWith(first.port, session.refreshToken)).status, 401);
});

test('a role changed in plain SQL ends the sessions, even after the listener lost its connection', async (t) => {
  const { first, owner, rootUrl } = await setup(t);
  const engineer = (await login(first.port, A, 'engineer')).json.accessToken as string;
  t.is((await me(first.port, engineer)).status, 200);
  // A database restart, as far as the listener can tell: its connection is killed.
  const killed = await superuserQuery<{ ok: boolean }>(
    rootUrl,
    `select pg_terminate_backend(pid) as ok from pg_stat_activity
      where application_name = 'weld-revocations' and datname = current_database()`,
  );
  t.true(killed.length >= 2, 'both instances listen');
  await owner.query(`update weld_public.users set role = 'viewer' where user_name = 'engineer'`);
  // Reconnecting, it reloads the revocations it missed.
  t.is(await eventually(first.port, engineer, 401), 401);
  const again = await login(first.port, A, 'engineer');
  t.is(again.json.user.role, 'viewer', 'a new login carries the new role');
});

test('the server purges stale throttle rows, used refresh tokens and ended sessions by itself', async (t) => {
  const { first, owner } = await setup(t);
  const session = (await login(first.port, A, 'viewer')).json;
  await login(first.port, A, 'nobody', 'wrong');
  const count = async (sql: string) => Number((await owner.query(sql)).rows[0].count);
  t.is(await count('select count(*) from weld_private.login_throttle'), 2);
  // Age what there is: the failure an hour and more ago, the session ended two days ago.
  await owner.query(`update weld_private.login_throttle
                        set window_start = now() - interval '2 hours',
                            last_failure_at = now() - interval '2 hours', blocked_until = null`);
  await owner.query(`update weld_private.sessions set revoked_at = now() - interval '2 days',
                            revoked_reason = 'logout'`);
  const housekeeping = startHousekeeping(first.pool, createLogger('silent'), {
    eventRetentionDays: 30,
    everyMs: 100,
  });
  t.teardown(() => housekeeping.stop());
  let left = -1;
  for (let i = 0; i < 60 && left !== 0; i++) {
    await sleep(100);
    left =
      (await count('select count(*) from weld_private.login_throttle')) +
      (await count('select count(*) from weld_private.sessions'));
  }
  t.is(left, 0);
  t.is(await count('select count(*) from weld_private.refresh_tokens'), 0);
  t.truthy(session.refreshToken);
});

test('a revocation whose notification never came is found by the periodic reload', async (t) => {
  const { target, owner } = await setup(t);
  const revocations = new SessionRevocations(target.authenticatorUrl, {
    accessTokenTtl: 600,
    reloadEveryMs: 200,
  });
  await revocations.start();
  t.teardown(() => revocations.stop());
  const { rows } = await owner.query<{ tenant_id: string; id: string }>(
    `insert into weld_private.sessions (tenant_id, user_id)
     select tenant_id, id from weld_public.users where user_name = 'viewer'
     returning tenant_id, id`,
  );
  const { tenant_id: tenantId, id: sessionId } = rows[0]!;
  // A lost notification, as far as the listener can tell: the announcing trigger is off.
  await owner.query('alter table weld_private.sessions disable trigger _900_notify_revoked');
  await owner.query(
    `update weld_private.sessions set revoked_at = now(), revoked_reason = 'logout' where id = $1`,
    [sessionId],
  );
  t.false(revocations.isRevoked(tenantId, sessionId), 'not announced');
  let seen = false;
  for (let i = 0; i < 30 && !seen; i++) {
    await sleep(100);
    seen = revocations.isRevoked(tenantId, sessionId);
  }
  t.true(seen);
});
