// Authentication over real HTTP against a real database, checked line by line against
// ../shared/SECURITY.md: passwords and login (hashing, one answer, throttling) and tenancy.
import test from 'ava';
import { disableUser } from '../../db/users.ts';
import { login, PASSWORD } from '../helpers/auth.ts';
import { request } from '../helpers/http.ts';
import { A, B, setup, me } from '../helpers/auth-setup.ts';

//------------------------------------------------------------------------------------------------
// Passwords and login

test('passwords are stored as Argon2id with at least 19 MiB and 2 passes', async (t) => {
  const { owner } = await setup(t);
  const { rows } = await owner.query<{ password_hash: string }>(
    'select password_hash from weld_private.user_credentials',
  );
  t.is(rows.length, 8);
  for (const { password_hash } of rows) {
    const match = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=\d+\$/.exec(password_hash);
    t.truthy(match);
    t.true(Number(match![1]) >= 19_456 && Number(match![2]) >= 2);
  }
  t.is(
    new Set(rows.map((r) => r.password_hash)).size,
    8,
    'salted: equal passwords, different hashes',
  );
});

test('unknown user, wrong password and disabled account get one answer', async (t) => {
  const { port, owner } = await setup(t);
  await disableUser(owner, 'alpha', 'admin');
  const answers = [
    await login(port, A, 'nobody-at-all', PASSWORD),
    await login(port, A, 'viewer', 'wrong password!'),
    await login(port, A, 'admin', PASSWORD),
  ];
  const bodies = answers.map((res) => {
    t.is(res.status, 401);
    const { instance: _instance, ...rest } = res.json;
    return JSON.stringify(rest);
  });
  t.is(new Set(bodies).size, 1, 'identical problem bodies');
});

test('an unknown user is not answered faster than a wrong password (a dummy hash is computed)', async (t) => {
  const { port } = await setup(t);
  const timed = async (userName: string, password: string) => {
    const started = performance.now();
    t.is((await login(port, A, userName, password)).status, 401);
    return performance.now() - started;
  };
  await timed('warm-up', 'x');
  const unknown: number[] = [];
  const wrong: number[] = [];
  // Interleaved, each user name once (the per-user throttle starts at the 5th failure).
  for (const name of ['viewer', 'inspector', 'engineer']) {
    unknown.push(await timed(`ghost-${name}`, PASSWORD));
    wrong.push(await timed(name, 'wrong password!'));
  }
  const median = (values: number[]) => values.sort((x, y) => x - y)[1]!;
  // Skipping the hash would answer an unknown user in a few milliseconds instead of tens: that
  // is the leak this guards against. One-sided, so a busy machine does not make it flaky.
  t.true(
    median(unknown) > median(wrong) / 4,
    `unknown ${unknown.map(Math.round).join(',')} ms; wrong ${wrong.map(Math.round).join(',')} ms`,
  );
});

test('login throttling per user name: 429 with Retry-After, even for the right password, then recovery', async (t) => {
  const { port } = await setup(t);
  for (let i = 0; i < 5; i++) t.is((await login(port, A, 'viewer', 'wrong')).status, 401);
  // The 5th failure blocks the name for 1 s, the 6th for 2 s, the 7th for 4 s. A busy machine can
  // spend a second between two requests, so wait out the short blocks and fail twice more: the
  // right password that follows arrives well within a 4 s block.
  for (const seconds of [1, 2]) {
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000 + 100));
    t.is((await login(port, A, 'viewer', 'wrong')).status, 401);
  }
  const blocked = await login(port, A, 'viewer', PASSWORD);
  t.is(blocked.status, 429);
  t.is(blocked.json.type, '/problems/too-many-login-attempts');
  const wait = Number(blocked.headers['retry-after']);
  t.true(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
  // Another user is not affected.
  t.is((await login(port, A, 'engineer')).status, 200);
  await new Promise((resolve) => setTimeout(resolve, wait * 1000 + 100));
  t.is((await login(port, A, 'viewer')).status, 200, 'recovered');
  t.is((await login(port, A, 'viewer', 'wrong')).status, 401, 'and the count started over');
});

test('an attacker cannot lock a user out: the user signs in from an address it used before', async (t) => {
  const { port, owner, tenantA } = await setup(t, { trustProxy: 1 });
  const from = (address: string, password: string) =>
    login(port, A, 'viewer', password, { 'x-forwarded-for': address });
  t.is((await from('198.51.100.20', PASSWORD)).status, 200, 'the user, earlier, from home');
  // The attacker keeps the user name blocked from its own address.
  for (let i = 0; i < 8; i++) await from('203.0.113.66', 'guess');
  // An attacker who keeps at it holds the block; held here, since the first block lasts 1 s and a
  // busy machine can take that long over the requests below.
  const held = await owner.query(
    `update weld_private.login_throttle set blocked_until = now() + interval '10 minutes'
      where tenant_id = $1 and throttle_key = 'user:viewer'`,
    [tenantA.id],
  );
  t.is(held.rowCount, 1, 'the block is held');
  t.is((await from('203.0.113.66', PASSWORD)).status, 429, 'even the right password, from there');
  t.is((await from('192.0.2.33', PASSWORD)).status, 429, 'and from any new address');
  t.is((await from('198.51.100.20', PASSWORD)).status, 200, 'but not from where the user was');
});

test('40 concurrent wrong-password logins for one user: a handful of verdicts, the rest 429', async (t) => {
  const { port } = await setup(t);
  const started = Date.now();
  const answers = await Promise.all(
    Array.from({ length: 40 }, () => login(port, A, 'inspector', 'a wrong guess')),
  );
  const seconds = (Date.now() - started) / 1000;
  const statuses = answers.map((r) => r.status);
  const verdicts = statuses.filter((s) => s === 401).length;
  // The rest are refused without a verdict: 429, or on a loaded machine 503 busy (the login
  // waited past DB_POOL_WAIT_MS for a connection and was never judged).
  const busy = answers.filter((r) => r.status === 503);
  t.true(busy.every((r) => r.json.type === '/problems/busy'));
  t.is(statuses.filter((s) => s === 429).length + busy.length, 40 - verdicts, statuses.join(' '));
  // Five attempts get a verdict before the first delay; after that only an attempt that arrives
  // once a delay (1, 2, 4 ... s) has run out, so a burst of `seconds` allows a few more at most.
  const bound = 5 + Math.ceil(Math.log2(seconds + 1));
  t.true(verdicts >= 1 && verdicts <= bound, `${verdicts} verdicts in ${seconds} s`);
  // (The delays themselves are checked in test/db/auth-sql.test.ts.)
});

test('IPv6 clients are throttled by their /64: rotating addresses within it does not escape', async (t) => {
  const { port } = await setup(t, { trustProxy: 1 });
  const from = (address: string, userName: string, password = 'wrong') =>
    login(port, A, userName, password, { 'x-forwarded-for': address });
  for (let i = 0; i < 30; i++) {
    t.is((await from(`2001:db8:1:2::${(i + 1).toString(16)}`, `nobody${i}`)).status, 401);
  }
  t.is((await from('2001:db8:1:2:ffff::99', 'viewer', PASSWORD)).status, 429, 'same /64');
  t.is((await from('2001:db8:1:3::1', 'viewer', PASSWORD)).status, 200, 'another /64');
});

test('behind one trusted proxy, a client cannot choose its address with X-Forwarded-For', async (t) => {
  const { port } = await setup(t, { trustProxy: 1 });
  // The proxy appends the address it saw; whatever the client put before it does not count.
  const spoofing = (i: number) =>
    login(port, A, `nobody${i}`, 'wrong', { 'x-forwarded-for': `203.0.113.${i}, 198.51.100.9` });
  for (let i = 0; i < 30; i++) t.is((await spoofing(i)).status, 401);
  t.is((await spoofing(99)).status, 429, 'the proxy-added address is blocked');
  const other = await login(port, A, 'viewer', PASSWORD, {
    'x-forwarded-for': '198.51.100.9, 198.51.100.10',
  });
  t.is(other.status, 200, 'a client whose proxy-added address differs is not');
});

test('login throttling per address: many failures from one address block it, other addresses are unaffected', async (t) => {
  const { port, owner } = await setup(t, { trustProxy: 1 });
  const from = (address: string, userName: string, password = 'wrong') =>
    login(port, A, userName, password, { 'x-forwarded-for': address });
  for (let i = 0; i < 30; i++) t.is((await from('198.51.100.7', `nobody${i}`)).status, 401);
  const blocked = await from('198.51.100.7', 'viewer', PASSWORD);
  t.is(blocked.status, 429);
  t.true(Number(blocked.headers['retry-after']) > 0);
  t.is((await from('198.51.100.8', 'viewer', PASSWORD)).status, 200, 'another address');
  // Ten minutes later (moved back in time here) the address may try again.
  await owner.query(
    `update weld_private.login_throttle set window_start = window_start - interval '11 minutes',
            blocked_until = blocked_until - interval '11 minutes' where throttle_key like 'addr:%'`,
  );
  t.is((await from('198.51.100.7', 'viewer', PASSWORD)).status, 200, 'recovered');
});

test('login refuses a cross-site browser request (login CSRF) and validates its body', async (t) => {
  const { port } = await setup(t);
  t.is((await login(port, A, 'viewer', PASSWORD, { origin: 'http://evil.test' })).status, 403);
  t.is((await login(port, A, 'viewer', PASSWORD, { origin: `http://${A}` })).status, 200);
  const bad = await request(port, {
    method: 'POST',
    path: '/auth/login',
    host: A,
    body: { userName: 'viewer' },
  });
  t.is(bad.status, 422);
  t.deepEqual(
    bad.json.errors.map((e: { pointer: string }) => e.pointer),
    ['/password'],
  );
  const extra = await request(port, {
    method: 'POST',
    path: '/auth/login',
    host: A,
    body: { userName: 'viewer', password: PASSWORD, admin: true },
  });
  t.is(extra.status, 422);
});

//------------------------------------------------------------------------------------------------
// Tenancy

test('user names belong to a tenant: the same name with another tenant password fails', async (t) => {
  const { port, owner } = await setup(t);
  const { setPassword } = await import('../../db/users.ts');
  await setPassword(owner, 'bravo', 'viewer', 'bravo has its own password');
  t.is((await login(port, B, 'viewer', PASSWORD)).status, 401);
  t.is((await login(port, B, 'viewer', 'bravo has its own password')).status, 200);
  t.is((await login(port, A, 'viewer', PASSWORD)).status, 200);
});

test('an unknown Host is 404 before any authentication', async (t) => {
  const { port } = await setup(t);
  const res = await login(port, 'elsewhere.test', 'viewer');
  t.is(res.status, 404);
  t.is(res.json.type, '/problems/unknown-tenant');
  t.is((await me(port, {}, 'elsewhere.test')).status, 404);
});
