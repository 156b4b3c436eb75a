// Login throttling and the housekeeping of the authentication tables, at the SQL level, called the
// way the server calls them (asAuthenticator). From the attacker's side: parallel guesses, many
// user names from one address, and what a success may and may not clear.
import { randomBytes } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { asAuthenticator } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

interface Begin {
  retry_after: number | null;
  user_id: string | null;
  active: boolean | null;
  password_hash: string | null;
}

const FAKE_HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA';

async function setup(t: ExecutionContext, poolSize = 4) {
  const { owner, pool, a, b } = await twoTenants(t, poolSize);
  for (const fx of [a, b]) {
    await owner.query(
      `insert into weld_private.user_credentials (tenant_id, user_id, password_hash)
       select tenant_id, id, $2 from weld_public.users where tenant_id = $1`,
      [fx.tenantId, FAKE_HASH],
    );
  }
  return { owner, pool, a, b };
}

function begin(pool: pg.Pool, fx: TenantFixture, userName: string, address: string) {
  return asAuthenticator(pool, fx.tenantId, (c) =>
    c.query<Begin>('select * from weld_hidden.login_begin($1, $2)', [userName, address]),
  ).then((r) => {
    if (r.rows.length !== 1) throw new Error(`login_begin returned ${r.rowCount} rows`);
    return r.rows[0]!;
  });
}

function succeed(pool: pg.Pool, fx: TenantFixture, userId: string, address: string) {
  return asAuthenticator(pool, fx.tenantId, (c) =>
    c.query(`select weld_hidden.login_succeed($1, $2, gen_random_uuid(), $3, '1 day')`, [
      userId,
      address,
      randomBytes(32),
    ]),
  );
}

async function throttle(owner: pg.Client, fx: TenantFixture) {
  const { rows } = await owner.query<{
    throttle_key: string;
    failures: number;
    blocked: boolean;
    block_set: boolean;
  }>(
    `select throttle_key, failures, coalesce(blocked_until > now(), false) as blocked,
            blocked_until is not null as block_set
       from weld_private.login_throttle where tenant_id = $1 order by throttle_key`,
    [fx.tenantId],
  );
  return Object.fromEntries(rows.map((r) => [r.throttle_key, r]));
}

test('40 parallel guesses at one user name: at most 5 get a password verdict, the rest wait', async (t) => {
  const { owner, pool, a } = await setup(t, 40);
  // Every attempt on a connection of its own, all connected before the burst starts.
  const warm = await Promise.all(Array.from({ length: 40 }, () => pool.connect()));
  for (const client of warm) client.release();

  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) => begin(pool, a, 'Inspector-Alpha', `198.51.100.${i + 1}`)),
  );
  const verdicts = results.filter((r) => r.retry_after === null);
  const waiting = results.filter((r) => r.retry_after !== null);
  t.true(verdicts.length >= 1 && verdicts.length <= 5, `${verdicts.length} got a verdict`);
  t.log(`${verdicts.length} of 40 got a verdict`);
  t.deepEqual(
    verdicts.map((r) => [r.user_id, r.active, r.password_hash]),
    verdicts.map(() => [a.users.inspector, true, FAKE_HASH]),
  );
  t.is(waiting.length, 40 - verdicts.length);
  for (const r of waiting) {
    t.true(r.retry_after! > 0 && r.retry_after! <= 60, `retry_after ${r.retry_after}`);
    t.deepEqual([r.user_id, r.password_hash], [null, null], 'no hash for a refused attempt');
  }

  // Each attempt that got a verdict was counted, before its password could be checked; the
  // refused ones counted nowhere, not even against their addresses.
  const rows = await throttle(owner, a);
  t.is(rows['user:inspector-alpha']!.failures, verdicts.length);
  t.true(rows['user:inspector-alpha']!.block_set, 'the last of them set the block');
  const addressFailures = Object.values(rows)
    .filter((r) => r.throttle_key.startsWith('addr:'))
    .reduce((sum, r) => sum + r.failures, 0);
  t.is(addressFailures, verdicts.length);
});

test('per-user delays grow from the 5th failure (1, 2, 4 ... s) and are capped at 60 s', async (t) => {
  const { owner, pool, a } = await setup(t);
  const delays: number[] = [];
  for (let i = 0; i < 14; i++) {
    const result = await begin(pool, a, 'victim', '192.0.2.1');
    t.is(result.retry_after, null, `attempt ${i + 1} is not blocked (the block was waited out)`);
    const { rows } = await owner.query<{ seconds: number | null }>(
      `select extract(epoch from blocked_until - last_failure_at)::float8 as seconds
         from weld_private.login_throttle where throttle_key = 'user:victim'`,
    );
    delays.push(Math.round(rows[0]?.seconds ?? 0));
    // Wait the block out (moved back in time here) before the next attempt.
    await owner.query(
      `update weld_private.login_throttle set blocked_until = blocked_until - interval '61 seconds'
        where throttle_key = 'user:victim' and blocked_until is not null`,
    );
  }
  t.deepEqual(delays, [0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
});

test('a blocked user name answers retry_after even for the right password; a success clears it', async (t) => {
  const { owner, pool, a } = await setup(t);
  for (let i = 0; i < 5; i++) {
    t.is((await begin(pool, a, 'viewer-alpha', '192.0.2.7')).retry_after, null);
  }
  const blocked = await begin(pool, a, 'viewer-alpha', '192.0.2.7');
  t.true(blocked.retry_after! >= 1);
  t.is(blocked.password_hash, null);
  // Another user name is not affected.
  t.is((await begin(pool, a, 'admin-alpha', '192.0.2.8')).retry_after, null);

  // The delay passes; the next attempt is counted (6th) and gets the hash; the password was right.
  await owner.query(
    `update weld_private.login_throttle set blocked_until = now() - interval '1 second'
      where throttle_key = 'user:viewer-alpha'`,
  );
  const allowed = await begin(pool, a, 'viewer-alpha', '192.0.2.7');
  t.is(allowed.retry_after, null);
  t.is(allowed.user_id, a.users.viewer);
  t.is((await throttle(owner, a))['user:viewer-alpha']!.failures, 6);
  t.true((await throttle(owner, a))['user:viewer-alpha']!.blocked, 'blocked again meanwhile');
  await succeed(pool, a, a.users.viewer, '192.0.2.7');

  const after = await throttle(owner, a);
  t.is(after['user:viewer-alpha'], undefined, 'the success cleared the user name');
  // 6 attempts from the address, 1 of them good: 5 failures remain (the refused one never counted).
  t.is(after['addr:192.0.2.7']!.failures, 5);
  const again = await begin(pool, a, 'viewer-alpha', '192.0.2.7');
  t.is(again.retry_after, null);
  // The count started over, on the key of an address the user now signed in from (see below).
  const counted = await throttle(owner, a);
  t.is(counted['user-addr:viewer-alpha:192.0.2.7']!.failures, 1);
  t.is(counted['user:viewer-alpha'], undefined);
});

test('per address: 30 attempts within 10 minutes block it until the window ends; others are not affected', async (t) => {
  const { owner, pool, a, b } = await setup(t);
  for (let i = 0; i < 30; i++) {
    const result = await begin(pool, a, `nobody${i}`, '203.0.113.9');
    t.is(result.retry_after, null, `attempt ${i + 1}`);
  }
  const blocked = await begin(pool, a, 'viewer-alpha', '203.0.113.9');
  t.true(blocked.retry_after! > 0 && blocked.retry_after! <= 600, `${blocked.retry_after}`);
  t.is(blocked.password_hash, null);
  const rows = await throttle(owner, a);
  t.is(rows['addr:203.0.113.9']!.failures, 30, 'a refused attempt is not counted');
  t.is(rows['user:viewer-alpha'], undefined, 'nor against the user name it tried');

  t.is((await begin(pool, a, 'viewer-alpha', '203.0.113.10')).retry_after, null, 'another address');
  t.is((await begin(pool, b, 'viewer-bravo', '203.0.113.9')).retry_after, null, 'another tenant');

  // A success from the address takes back one attempt, and the block with it (29 < 30).
  await owner.query(
    `update weld_private.login_throttle set blocked_until = null, failures = 29
      where throttle_key = 'addr:203.0.113.9' and tenant_id = $1`,
    [a.tenantId],
  );
  const thirtieth = await begin(pool, a, 'viewer-alpha', '203.0.113.9');
  t.is(thirtieth.retry_after, null);
  t.true((await throttle(owner, a))['addr:203.0.113.9']!.blocked, 'the 30th attempt blocks');
  await succeed(pool, a, a.users.viewer, '203.0.113.9');
  const taken = (await throttle(owner, a))['addr:203.0.113.9']!;
  t.deepEqual([taken.failures, taken.blocked], [29, false]);

  // Ten minutes later (moved back in time here) the window starts over.
  await owner.query(
    `update weld_private.login_throttle set failures = 30,
            window_start = window_start - interval '11 minutes',
            blocked_until = window_start - interval '1 minute'
      where throttle_key = 'addr:203.0.113.9'`,
  );
  t.is((await begin(pool, a, 'nobody99', '203.0.113.9')).retry_after, null, 'recovered');
  t.is((await throttle(owner, a))['addr:203.0.113.9']!.failures, 1);
});

test('an unknown user name gets the same answer shape, and is throttled the same', async (t) => {
  const { owner, pool, a } = await setup(t);
  const unknown = await begin(pool, a, 'ghost', '192.0.2.50');
  t.deepEqual(unknown, { retry_after: null, user_id: null, active: null, password_hash: null });
  t.is((await throttle(owner, a))['user:ghost']!.failures, 1);
});

//------------------------------------------------------------------------------------------------
// Known addresses: an attacker cannot lock a user out of the addresses it signs in from.

/** A login the way the server makes one with the right password: begin, then succeed. */
async function signIn(pool: pg.Pool, fx: TenantFixture, userName: string, address: string) {
  const started = await begin(pool, fx, userName, address);
  if (started.retry_after !== null || !started.user_id) {
    throw new Error(`${userName} from ${address}: ${JSON.stringify(started)}`);
  }
  await succeed(pool, fx, started.user_id, address);
}

/** Fails (retry_after null: the attempt was counted and got a verdict) n times. */
async function fail(
  t: ExecutionContext,
  pool: pg.Pool,
  fx: TenantFixture,
  userName: string,
  address: string,
  n: number,
) {
  for (let i = 0; i < n; i++) {
    t.is((await begin(pool, fx, userName, address)).retry_after, null, `failure ${i + 1}`);
  }
}

const HOME = '192.0.2.20';
const ATTACKER = '198.51.100.66';
const ELSEWHERE = '203.0.113.5';
const HOME_KEY = `user-addr:viewer-alpha:${HOME}`;

test("an attacker's failures from elsewhere block the user name for unknown addresses only; the user signs in from a known one", async (t) => {
  const { owner, pool, a } = await setup(t);
  await signIn(pool, a, 'viewer-alpha', HOME);
  const known = await owner.query(
    `select user_id, address from weld_private.known_addresses where tenant_id = $1`,
    [a.tenantId],
  );
  t.deepEqual(
    known.rows,
    [{ user_id: a.users.viewer, address: HOME }],
    'the success is remembered',
  );

  // The attacker: 5 wrong passwords, then the user name is blocked (and kept so, one a minute).
  await fail(t, pool, a, 'viewer-alpha', ATTACKER, 5);
  t.true((await begin(pool, a, 'viewer-alpha', ATTACKER)).retry_after! >= 1);
  // The first block lasts 1 s, and a busy machine can take that long over the steps below; an
  // attacker who keeps at it holds the block much longer, so hold it here (the block lengths have
  // a test of their own).
  const held = await owner.query(
    `update weld_private.login_throttle set blocked_until = now() + interval '10 minutes'
      where tenant_id = $1 and throttle_key = 'user:viewer-alpha'`,
    [a.tenantId],
  );
  t.is(held.rowCount, 1, 'the block is held');

  // An unknown address is blocked, even with the right password, and its attempt not counted.
  const unknown = await begin(pool, a, 'Viewer-Alpha', ELSEWHERE);
  t.true(unknown.retry_after! >= 1, 'an unknown address waits');
  t.is(unknown.password_hash, null);
  let rows = await throttle(owner, a);
  t.is(rows[`addr:${ELSEWHERE}`]!.failures, 0, 'its address attempt was taken back');
  t.is(rows['user:viewer-alpha']!.failures, 5);

  // The user's own address skips the user-wide delay: a verdict, and with the right password a
  // session.
  const home = await begin(pool, a, 'VIEWER-ALPHA', HOME);
  t.deepEqual(
    [home.retry_after, home.user_id, home.password_hash],
    [null, a.users.viewer, FAKE_HASH],
  );
  t.is((await throttle(owner, a))[HOME_KEY]!.failures, 1, 'counted on its own key');
  await succeed(pool, a, a.users.viewer, HOME);

  // The success clears its own key only: the attacker's failures still hold the user-wide key.
  rows = await throttle(owner, a);
  t.is(rows[HOME_KEY], undefined);
  t.is(rows['user:viewer-alpha']!.failures, 5);
  t.true(rows['user:viewer-alpha']!.blocked);
  t.true((await begin(pool, a, 'viewer-alpha', ATTACKER)).retry_after! >= 1, 'still blocked');
  const sessions = await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_private.sessions where tenant_id = $1 and user_id = $2`,
    [a.tenantId, a.users.viewer],
  );
  t.is(sessions.rows[0]!.n, 2);
});

test('a known address gets the same growing delays on its own key: 5 attempts, then 1, 2, 4 ... 60 s', async (t) => {
  const { owner, pool, a } = await setup(t);
  await signIn(pool, a, 'viewer-alpha', HOME);

  await fail(t, pool, a, 'viewer-alpha', HOME, 5);
  const blocked = await begin(pool, a, 'viewer-alpha', HOME);
  t.true(blocked.retry_after! >= 1, 'the 6th waits');
  t.is(blocked.password_hash, null);
  const rows = await throttle(owner, a);
  t.deepEqual([rows[HOME_KEY]!.failures, rows[HOME_KEY]!.blocked], [5, true]);
  t.is(rows['user:viewer-alpha'], undefined, 'not counted against the user name elsewhere');
  t.is(rows[`addr:${HOME}`]!.failures, 5, 'and counted against the address, as every attempt');
  // Another address of the user is not slowed by this one's failures.
  t.is((await begin(pool, a, 'viewer-alpha', ELSEWHERE)).retry_after, null);

  // The delays, each waited out (moved back in time here).
  const delays: number[] = [];
  for (let i = 0; i < 8; i++) {
    await owner.query(
      `update weld_private.login_throttle set blocked_until = blocked_until - interval '61 seconds'
        where throttle_key = $1 and blocked_until is not null`,
      [HOME_KEY],
    );
    t.is((await begin(pool, a, 'viewer-alpha', HOME)).retry_after, null);
    const { rows: delay } = await owner.query<{ seconds: number }>(
      `select extract(epoch from blocked_until - last_failure_at)::float8 as seconds
         from weld_private.login_throttle where throttle_key = $1`,
      [HOME_KEY],
    );
    delays.push(Math.round(delay[0]!.seconds));
  }
  t.deepEqual(delays, [2, 4, 8, 16, 32, 60, 60, 60]);
});

test('the per-address limit applies to known addresses too', async (t) => {
  const { owner, pool, a } = await setup(t);
  await signIn(pool, a, 'viewer-alpha', HOME);
  await fail(t, pool, a, 'viewer-alpha', HOME, 3);
  for (let i = 0; i < 27; i++) {
    t.is((await begin(pool, a, `nobody${i}`, HOME)).retry_after, null);
  }
  const blocked = await begin(pool, a, 'viewer-alpha', HOME);
  t.true(blocked.retry_after! > 0 && blocked.retry_after! <= 600, `${blocked.retry_after}`);
  t.is(blocked.password_hash, null);
  const rows = await throttle(owner, a);
  t.is(rows[`addr:${HOME}`]!.failures, 30);
  t.is(rows[HOME_KEY]!.failures, 3, 'a refused attempt is not counted on the user key');
});

for (const known of [false, true]) {
  test(`40 parallel guesses from one ${known ? 'known' : 'unknown'} address: at most 5 get a verdict`, async (t) => {
    const { owner, pool, a } = await setup(t, 40);
    if (known) await signIn(pool, a, 'inspector-alpha', HOME);
    const warm = await Promise.all(Array.from({ length: 40 }, () => pool.connect()));
    for (const client of warm) client.release();

    const address = known ? HOME : ATTACKER;
    const results = await Promise.all(
      Array.from({ length: 40 }, () => begin(pool, a, 'inspector-alpha', address)),
    );
    const verdicts = results.filter((r) => r.retry_after === null);
    t.true(verdicts.length >= 1 && verdicts.length <= 5, `${verdicts.length} got a verdict`);
    for (const r of results.filter((r) => r.retry_after !== null)) {
      t.deepEqual([r.user_id, r.password_hash], [null, null]);
    }
    const rows = await throttle(owner, a);
    const key = known ? `user-addr:inspector-alpha:${HOME}` : 'user:inspector-alpha';
    t.is(rows[key]!.failures, verdicts.length);
    t.is(rows[known ? 'user:inspector-alpha' : `user-addr:inspector-alpha:${HOME}`], undefined);
    t.is(rows[`addr:${address}`]!.failures, verdicts.length);
  });
}

test('an address is known for 30 days after its last success', async (t) => {
  const { owner, pool, a } = await setup(t);
  await signIn(pool, a, 'viewer-alpha', HOME);
  await owner.query(
    `update weld_private.known_addresses set last_success_at = now() - interval '31 days'`,
  );
  await begin(pool, a, 'viewer-alpha', HOME);
  let rows = await throttle(owner, a);
  t.is(rows['user:viewer-alpha']!.failures, 1, 'forgotten: counted user-wide');
  t.is(rows[HOME_KEY], undefined);

  // A success from it makes it known again (and clears the user-wide key its attempt counted on).
  await succeed(pool, a, a.users.viewer, HOME);
  rows = await throttle(owner, a);
  t.is(rows['user:viewer-alpha'], undefined);
  await begin(pool, a, 'viewer-alpha', HOME);
  t.is((await throttle(owner, a))[HOME_KEY]!.failures, 1, 'known again');
});

//------------------------------------------------------------------------------------------------
// Housekeeping

test('purge_auth_bookkeeping deletes what has served its purpose, in every tenant, and keeps the rest', async (t) => {
  const { owner, pool, a, b } = await setup(t);
  for (const fx of [a, b]) {
    await owner.query(
      `insert into weld_private.login_throttle
         (tenant_id, throttle_key, failures, window_start, last_failure_at, blocked_until)
       values ($1, 'user:old',          3, now() - interval '2 hours',  now() - interval '2 hours',  null),
              ($1, 'user:old-blocked', 20, now() - interval '2 hours',  now() - interval '2 hours',  now() + interval '1 minute'),
              ($1, 'user:recent',       2, now() - interval '10 minutes', now() - interval '10 minutes', null),
              ($1, 'addr:old',         12, now() - interval '11 minutes', now() - interval '11 minutes', null),
              ($1, 'addr:current',     12, now() - interval '5 minutes',  now() - interval '5 minutes',  null),
              ($1, 'user-addr:old:192.0.2.1',    4, now() - interval '2 hours', now() - interval '2 hours', null),
              ($1, 'user-addr:recent:192.0.2.1', 4, now() - interval '10 minutes', now() - interval '10 minutes', null)`,
      [fx.tenantId],
    );
    await owner.query(
      `insert into weld_private.known_addresses (tenant_id, user_id, address, last_success_at)
       values ($1, $2, '192.0.2.1', now() - interval '31 days'),
              ($1, $2, '192.0.2.2', now() - interval '29 days')`,
      [fx.tenantId, fx.users.viewer],
    );
    await owner.query(
      `insert into weld_private.sessions (tenant_id, id, user_id, created_at, revoked_at, revoked_reason)
       values ($1, $2::uuid, $3, now() - interval '3 days', now() - interval '2 days', 'logout'),
              ($1, $4::uuid, $3, now() - interval '3 days', now() - interval '1 hour', 'logout'),
              ($1, $5::uuid, $3, now() - interval '3 days', null, null),
              ($1, $6::uuid, $3, now() - interval '3 days', null, null),
              ($1, $7::uuid, $3, now(), null, null)`,
      [
        fx.tenantId,
        sessionId(fx, 1),
        fx.users.inspector,
        sessionId(fx, 2),
        sessionId(fx, 3),
        sessionId(fx, 4),
        sessionId(fx, 5),
      ],
    );
    await owner.query(
      `insert into weld_private.refresh_tokens (tenant_id, token_hash, session_id, expires_at, used_at)
       values ($1, sha256('1'::bytea), $2::uuid, now() + interval '1 day', null),
              ($1, sha256('2'::bytea), $3::uuid, now() + interval '1 day', null),
              ($1, sha256('3a'::bytea), $4::uuid, now() - interval '1 day', now() - interval '2 days'),
              ($1, sha256('3b'::bytea), $4::uuid, now() - interval '1 minute', null),
              ($1, sha256('4a'::bytea), $5::uuid, now() - interval '1 day', now() - interval '2 days'),
              ($1, sha256('4b'::bytea), $5::uuid, now() + interval '1 day', null)`,
      [fx.tenantId, sessionId(fx, 1), sessionId(fx, 2), sessionId(fx, 3), sessionId(fx, 4)],
    );
  }

  const purged = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select * from weld_hidden.purge_auth_bookkeeping()'),
  );
  t.deepEqual(purged.rows, [
    // Per tenant: user:old, addr:old, user-addr:old; tokens 3a, 3b, 4a; sessions 1 (revoked 2
    // days ago, its token going with it) and 3 (no unexpired token left); the address unused for
    // 31 days.
    {
      deleted_throttle_rows: 6,
      deleted_refresh_tokens: 6,
      deleted_sessions: 4,
      deleted_known_addresses: 2,
    },
  ]);

  for (const fx of [a, b]) {
    const throttleKeys = await owner.query<{ throttle_key: string }>(
      `select throttle_key from weld_private.login_throttle where tenant_id = $1 order by 1`,
      [fx.tenantId],
    );
    t.deepEqual(
      throttleKeys.rows.map((r) => r.throttle_key),
      ['addr:current', 'user-addr:recent:192.0.2.1', 'user:old-blocked', 'user:recent'],
    );
    const addresses = await owner.query<{ address: string }>(
      `select address from weld_private.known_addresses where tenant_id = $1`,
      [fx.tenantId],
    );
    t.deepEqual(
      addresses.rows.map((r) => r.address),
      ['192.0.2.2'],
    );
    const sessions = await owner.query<{ id: string }>(
      `select id from weld_private.sessions where tenant_id = $1 order by created_at, id`,
      [fx.tenantId],
    );
    t.deepEqual(
      sessions.rows.map((r) => r.id).sort(),
      [sessionId(fx, 2), sessionId(fx, 4), sessionId(fx, 5)].sort(),
    );
    const tokens = await owner.query<{ n: number }>(
      `select count(*)::int as n from weld_private.refresh_tokens where tenant_id = $1`,
      [fx.tenantId],
    );
    t.is(tokens.rows[0]!.n, 2, 'the live tokens of sessions 2 and 4');
  }

  const again = await asAuthenticator(pool, a.tenantId, (c) =>
    c.query('select * from weld_hidden.purge_auth_bookkeeping()'),
  );
  t.deepEqual(again.rows, [
    {
      deleted_throttle_rows: 0,
      deleted_refresh_tokens: 0,
      deleted_sessions: 0,
      deleted_known_addresses: 0,
    },
  ]);
});

/** Stable session ids per tenant fixture, for readable expectations. */
function sessionId(fx: TenantFixture, n: number): string {
  const tenant = fx.tenantId.replace(/-/g, '').slice(0, 8);
  return `${tenant}-0000-4000-8000-${String(n).padStart(12, '0')}`;
}
