// Sessions end when their user is disabled or changes role, whichever way that happens (an admin
// through GraphQL or SQL, weld-admin as the owner), and every revocation is announced on
// weld_session_revoked and listed by revoked_sessions(since) for a server that was not listening.
import { randomBytes, randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { asAuthenticator, connectClient, withContext } from '../../db/database.ts';
import { disableUser, setPassword } from '../../db/users.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

const setup = (t: ExecutionContext) => twoTenants(t);

/** Signs a user in the way the server does; returns the session id and its refresh token hash. */
async function signIn(pool: pg.Pool, fx: TenantFixture, userId: string) {
  const sessionId = randomUUID();
  const tokenHash = randomBytes(32);
  await asAuthenticator(pool, fx.tenantId, (c) =>
    c.query(`select weld_hidden.login_succeed($1, '192.0.2.1', $2, $3, '1 day')`, [
      userId,
      sessionId,
      tokenHash,
    ]),
  );
  return { sessionId, tokenHash };
}

async function sessions(owner: pg.Client, fx: TenantFixture) {
  const { rows } = await owner.query<{ id: string; revoked_reason: string | null }>(
    `select id, case when revoked_at is null then 'live' else revoked_reason end as revoked_reason
       from weld_private.sessions where tenant_id = $1`,
    [fx.tenantId],
  );
  return Object.fromEntries(rows.map((r) => [r.id, r.revoked_reason]));
}

test('an admin deactivating a user (plain SQL, as GraphQL does) revokes its live sessions, only its', async (t) => {
  const { owner, pool, a, b } = await setup(t);
  const first = await signIn(pool, a, a.users.inspector);
  const second = await signIn(pool, a, a.users.inspector);
  const loggedOut = await signIn(pool, a, a.users.inspector);
  await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select weld_hidden.logout($1)', [loggedOut.tokenHash]),
  );
  const colleague = await signIn(pool, a, a.users.engineer);
  const otherTenant = await signIn(pool, b, b.users.inspector);

  const updated = await withContext(
    pool,
    { role: 'weld_admin', tenantId: a.tenantId, userId: a.users.admin },
    (c) =>
      c.query('update weld_public.users set active = false where id = $1', [a.users.inspector]),
  );
  t.is(updated.rowCount, 1);

  t.deepEqual(await sessions(owner, a), {
    [first.sessionId]: 'user-disabled',
    [second.sessionId]: 'user-disabled',
    [loggedOut.sessionId]: 'logout',
    [colleague.sessionId]: 'live',
  });
  t.deepEqual(await sessions(owner, b), { [otherTenant.sessionId]: 'live' });

  // The revoked refresh token no longer works.
  const rotated = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query<{ outcome: string }>(
      `select outcome from weld_hidden.refresh_rotate($1, $2, $3, '10 seconds', '1 day')`,
      [first.tokenHash, randomBytes(32), randomBytes(48)],
    ),
  );
  t.is(rotated.rows[0]!.outcome, 'revoked');
});

test("changing a user's role revokes its sessions ('role-changed'); other updates do not", async (t) => {
  const { owner, pool, a } = await setup(t);
  const session = await signIn(pool, a, a.users.viewer);
  const asAdmin = (sql: string) =>
    withContext(pool, { role: 'weld_admin', tenantId: a.tenantId, userId: a.users.admin }, (c) =>
      c.query(sql, [a.users.viewer]),
    );
  await asAdmin(
    `update weld_public.users set display_name = 'Renamed', active = true where id = $1`,
  );
  await asAdmin(`update weld_public.users set role = 'viewer' where id = $1`);
  t.deepEqual(await sessions(owner, a), { [session.sessionId]: 'live' }, 'nothing changed');

  await asAdmin(`update weld_public.users set role = 'admin' where id = $1`);
  t.deepEqual(await sessions(owner, a), { [session.sessionId]: 'role-changed' });
});

test('an admin of another tenant cannot reach the user, so its sessions stay', async (t) => {
  const { owner, pool, a, b } = await setup(t);
  const session = await signIn(pool, a, a.users.viewer);
  const updated = await withContext(
    pool,
    { role: 'weld_admin', tenantId: b.tenantId, userId: b.users.admin },
    (c) => c.query('update weld_public.users set active = false where id = $1', [a.users.viewer]),
  );
  t.is(updated.rowCount, 0);
  t.deepEqual(await sessions(owner, a), { [session.sessionId]: 'live' });
});

test('weld-admin user disable (as the owner, no tenant context, any case of the name) revokes them too', async (t) => {
  const { owner, pool, a } = await setup(t);
  const session = await signIn(pool, a, a.users.engineer);
  await disableUser(owner, 'alpha', 'Engineer-Alpha');
  t.deepEqual(await sessions(owner, a), { [session.sessionId]: 'user-disabled' });
});

test('every revocation is announced on weld_session_revoked, and listed by revoked_sessions(since)', async (t) => {
  const { target, owner, pool, a, b } = await setup(t);
  const listener = new pg.Client({ connectionString: target.authenticatorUrl });
  listener.on('error', () => {});
  await listener.connect();
  t.teardown(() => listener.end());
  const received: unknown[] = [];
  listener.on('notification', (message) => {
    if (message.channel === 'weld_session_revoked') received.push(JSON.parse(message.payload!));
  });
  await listener.query('listen weld_session_revoked');
  const [{ since }] = (await owner.query<{ since: Date }>('select now() as since')).rows as [
    { since: Date },
  ];

  const disabled1 = await signIn(pool, a, a.users.inspector);
  const disabled2 = await signIn(pool, a, a.users.inspector);
  const loggedOut = await signIn(pool, a, a.users.viewer);
  const reused = await signIn(pool, b, b.users.engineer);
  const untouched = await signIn(pool, a, a.users.engineer);

  await withContext(
    pool,
    { role: 'weld_admin', tenantId: a.tenantId, userId: a.users.admin },
    (c) =>
      c.query('update weld_public.users set active = false where id = $1', [a.users.inspector]),
  );
  await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select weld_hidden.logout($1)', [loggedOut.tokenHash]),
  );
  // A refresh token used twice (outside the grace window): the session is revoked for reuse.
  const rotate = () =>
    asAuthenticator(pool, b.tenantId, (c) =>
      c.query<{ outcome: string }>(
        `select outcome from weld_hidden.refresh_rotate($1, $2, $3, '0 seconds', '1 day')`,
        [reused.tokenHash, randomBytes(32), randomBytes(48)],
      ),
    );
  t.is((await rotate()).rows[0]!.outcome, 'rotated');
  t.is((await rotate()).rows[0]!.outcome, 'reused');
  // Logging out a session that is already revoked announces nothing more.
  await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select weld_hidden.logout($1)', [disabled1.tokenHash]),
  );

  const expected = [
    { tenantId: a.tenantId, sessionId: disabled1.sessionId, userId: a.users.inspector },
    { tenantId: a.tenantId, sessionId: disabled2.sessionId, userId: a.users.inspector },
    { tenantId: a.tenantId, sessionId: loggedOut.sessionId, userId: a.users.viewer },
    { tenantId: b.tenantId, sessionId: reused.sessionId, userId: b.users.engineer },
  ];
  const bySession = (x: unknown, y: unknown) =>
    (x as { sessionId: string }).sessionId.localeCompare((y as { sessionId: string }).sessionId);
  for (let waited = 0; received.length < expected.length && waited < 5000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // A moment more, in case anything extra (a duplicate) were on its way.
  await listener.query('select 1');
  t.deepEqual([...received].sort(bySession), [...expected].sort(bySession));

  const listed = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query<{ tenant_id: string; session_id: string; revoked_at: Date }>(
      'select * from weld_hidden.revoked_sessions($1)',
      [since],
    ),
  );
  t.deepEqual(
    listed.rows.map((r) => ({ tenantId: r.tenant_id, sessionId: r.session_id })).sort(bySession),
    expected.map(({ tenantId, sessionId }) => ({ tenantId, sessionId })).sort(bySession),
    'across tenants, although the authenticator has a tenant set',
  );
  t.true(listed.rows.every((r) => r.revoked_at instanceof Date && r.revoked_at >= since));
  t.false(listed.rows.some((r) => r.session_id === untouched.sessionId));

  const later = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query(`select * from weld_hidden.revoked_sessions(now() + interval '1 minute')`),
  );
  t.deepEqual(later.rows, []);
});

//------------------------------------------------------------------------------------------------
// Migration 000007: a new password ends the sessions, a deleted live session is announced, and a
// revocation is stamped with the moment it was made.

const FAKE_HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA';

/** A listener on weld_session_revoked, as the server has; `received` fills as they arrive. */
async function listen(t: ExecutionContext, url: string) {
  const listener = await connectClient(url);
  t.teardown(() => listener.end());
  const received: Array<{ tenantId: string; sessionId: string; userId: string }> = [];
  listener.on('notification', (message) => {
    if (message.channel === 'weld_session_revoked') received.push(JSON.parse(message.payload!));
  });
  await listener.query('listen weld_session_revoked');
  return {
    received,
    /** Waits for `count` notifications (5 s at most), and a moment more for any extra. */
    settle: async (count: number) => {
      for (let waited = 0; received.length < count && waited < 5000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await listener.query('select 1');
      return [...received].sort((x, y) => x.sessionId.localeCompare(y.sessionId));
    },
  };
}

test("a new password (weld-admin user set-password) revokes the user's live sessions ('password-changed'), announced", async (t) => {
  const { target, owner, pool, a } = await setup(t);
  await owner.query(
    `insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
     select tenant_id, id, $2 from weld_public.users where tenant_id = $1`,
    [a.tenantId, FAKE_HASH],
  );
  const first = await signIn(pool, a, a.users.viewer);
  const second = await signIn(pool, a, a.users.viewer);
  const loggedOut = await signIn(pool, a, a.users.viewer);
  await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select weld_hidden.logout($1)', [loggedOut.tokenHash]),
  );
  const colleague = await signIn(pool, a, a.users.engineer);
  const { settle } = await listen(t, target.authenticatorUrl);

  // Touching the row without a new hash ends nothing.
  await owner.query(
    `update weld_private.user_credentials set password_hash = password_hash, updated_at = now()
      where tenant_id = $1 and user_id = $2`,
    [a.tenantId, a.users.viewer],
  );
  t.is((await sessions(owner, a))[first.sessionId], 'live');

  await setPassword(owner, 'alpha', 'Viewer-Alpha', 'a brand new passphrase');
  t.deepEqual(await sessions(owner, a), {
    [first.sessionId]: 'password-changed',
    [second.sessionId]: 'password-changed',
    [loggedOut.sessionId]: 'logout',
    [colleague.sessionId]: 'live',
  });
  const rotated = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query<{ outcome: string }>(
      `select outcome from weld_hidden.refresh_rotate($1, $2, $3, '10 seconds', '1 day')`,
      [second.tokenHash, randomBytes(32), randomBytes(48)],
    ),
  );
  t.is(rotated.rows[0]!.outcome, 'revoked', 'the old refresh token no longer rotates');

  const expected = [first, second].map(({ sessionId }) => ({
    tenantId: a.tenantId,
    sessionId,
    userId: a.users.viewer,
  }));
  t.deepEqual(
    await settle(2),
    expected.sort((x, y) => x.sessionId.localeCompare(y.sessionId)),
  );
});

test('a live session deleted in SQL (its user deleted, or the session itself) is announced; an ended one is not', async (t) => {
  const { target, owner, pool, a, b } = await setup(t);
  const viewerLive = await signIn(pool, a, a.users.viewer);
  const viewerEnded = await signIn(pool, a, a.users.viewer);
  await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select weld_hidden.logout($1)', [viewerEnded.tokenHash]),
  );
  const engineerLive = await signIn(pool, b, b.users.engineer);
  const untouched = await signIn(pool, a, a.users.engineer);
  const { settle } = await listen(t, target.authenticatorUrl);

  // A DBA deletes a user (its sessions go with it, by cascade) and another tenant's session.
  await owner.query('delete from weld_public.users where tenant_id = $1 and id = $2', [
    a.tenantId,
    a.users.viewer,
  ]);
  await owner.query('delete from weld_private.sessions where tenant_id = $1 and id = $2', [
    b.tenantId,
    engineerLive.sessionId,
  ]);

  const expected = [
    { tenantId: a.tenantId, sessionId: viewerLive.sessionId, userId: a.users.viewer },
    { tenantId: b.tenantId, sessionId: engineerLive.sessionId, userId: b.users.engineer },
  ];
  t.deepEqual(
    await settle(2),
    expected.sort((x, y) => x.sessionId.localeCompare(y.sessionId)),
  );
  t.deepEqual(await sessions(owner, a), { [untouched.sessionId]: 'live' });
});

test('revoked_at is the moment of the revocation, not the start of its transaction', async (t) => {
  const { owner, pool, a } = await setup(t);
  const loggedOut = await signIn(pool, a, a.users.viewer);
  const disabled = await signIn(pool, a, a.users.inspector);

  // Logout, in a transaction that began a second before it revokes.
  const times = await asAuthenticator(pool, a.tenantId, async (c) => {
    const { rows } = await c.query<{ started: Date }>('select now() as started');
    await c.query('select pg_sleep(1)');
    const before = await c.query<{ at: Date }>('select clock_timestamp() as at');
    await c.query('select weld_hidden.logout($1)', [loggedOut.tokenHash]);
    return { started: rows[0]!.started, before: before.rows[0]!.at };
  });
  // Disabling a user (the trigger on users), likewise.
  const disabledBefore = await withContext(
    pool,
    { role: 'weld_admin', tenantId: a.tenantId, userId: a.users.admin },
    async (c) => {
      await c.query('select pg_sleep(1)');
      const { rows } = await c.query<{ at: Date }>('select clock_timestamp() as at');
      await c.query('update weld_public.users set active = false where id = $1', [
        a.users.inspector,
      ]);
      return rows[0]!.at;
    },
  );

  const revokedAt = async (sessionId: string) =>
    (
      await owner.query<{ revoked_at: Date }>(
        'select revoked_at from weld_private.sessions where id = $1',
        [sessionId],
      )
    ).rows[0]!.revoked_at;
  const logoutAt = await revokedAt(loggedOut.sessionId);
  t.true(logoutAt >= times.before, `${logoutAt.toISOString()} >= ${times.before.toISOString()}`);
  t.true(logoutAt.getTime() - times.started.getTime() >= 1000, 'not the transaction start');
  const disabledAt = await revokedAt(disabled.sessionId);
  t.true(disabledAt >= disabledBefore, `${disabledAt.toISOString()}`);

  // So a server reloading the revocations made since a moment inside that transaction sees both.
  const listed = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query<{ session_id: string }>('select session_id from weld_hidden.revoked_sessions($1)', [
      times.before,
    ]),
  );
  t.deepEqual(
    listed.rows.map((r) => r.session_id).sort(),
    [loggedOut.sessionId, disabled.sessionId].sort(),
  );

  // A DBA backdating a revocation on purpose keeps the time it gave.
  const backdated = await signIn(pool, a, a.users.engineer);
  await owner.query(
    `update weld_private.sessions set revoked_at = now() - interval '2 days', revoked_reason = 'logout'
      where id = $1`,
    [backdated.sessionId],
  );
  const backdatedAt = await revokedAt(backdated.sessionId);
  t.true(Date.now() - backdatedAt.getTime() > 47 * 3600 * 1000);
});
