// Authentication over real HTTP against a real database, checked line by line against
// ../shared/SECURITY.md: tokens, transports, CSRF, passwords and login, tenancy.
import { createHmac, randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { asAuthenticator, createPool } from '../../db/database.ts';
import { addTenant } from '../../db/tenants.ts';
import { disableUser } from '../../db/users.ts';
import { addSigningKey } from '../../db/signing-keys.ts';
import { issueAccessToken } from '../../server/auth/access-tokens.ts';
import type { Route } from '../../server/http/route.ts';
import type { TrustProxy } from '../../server/http/tenancy.ts';
import { addRoleUsers, cookieHeader, login, PASSWORD, setCookies } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { startServer, TEST_TOKEN_TTL } from '../helpers/server.ts';

const A = 'a.test';
const B = 'b.test';

/** An authenticated unsafe route only tests mount, to reach the CSRF rules of data requests. */
const whoAmI: Route = {
  method: 'PATCH',
  path: '/test/whoami',
  body: true,
  handler: (req, res) => {
    res.json({ via: req.identity!.via, role: req.identity!.role });
  },
};

async function setup(t: ExecutionContext, options: { trustProxy?: TrustProxy } = {}) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenantA = await addTenant(owner, {
    slug: 'alpha',
    origins: [`http://${A}`, `http://alt.${A}`],
  });
  const tenantB = await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  const server = await startServer(t, target, { extraRoutes: [whoAmI], ...options });
  return { ...server, owner, target, tenantA, tenantB };
}

const me = (port: number, headers: Record<string, string>, host = A) =>
  request(port, { path: '/auth/me', host, headers });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** A bearer-mode refresh at tenant A. */
const refreshWith = (port: number, token: string) =>
  request(port, { method: 'POST', path: '/auth/refresh', host: A, body: { refreshToken: token } });

function assert401(t: ExecutionContext, res: HttpResponse, label = ''): void {
  t.is(res.status, 401, `${label} ${res.text}`);
  t.regex(String(res.headers['content-type']), /application\/problem\+json/, label);
  t.regex(String(res.headers['www-authenticate']), /^Bearer/, label);
}

//------------------------------------------------------------------------------------------------
// Tokens

test('login returns the contract body; the access token is an ES256 at+jwt with the listed claims', async (t) => {
  const { port, tenantA } = await setup(t);
  const res = await login(port, A, 'inspector');
  t.is(res.status, 200);
  t.is(res.headers['cache-control'], 'no-store');
  t.deepEqual(Object.keys(res.json).sort(), [
    'accessToken',
    'expiresIn',
    'refreshToken',
    'tokenType',
    'user',
  ]);
  t.is(res.json.tokenType, 'Bearer');
  t.is(res.json.expiresIn, TEST_TOKEN_TTL.accessTokenTtl);
  t.like(res.json.user, {
    userName: 'inspector',
    displayName: 'inspector',
    role: 'inspector',
    tenant: { slug: 'alpha', name: 'alpha' },
  });

  const header = decodeProtectedHeader(res.json.accessToken);
  t.is(header.alg, 'ES256');
  t.is(header.typ, 'at+jwt');
  const jwks = await request(port, { path: '/.well-known/jwks.json', host: A });
  t.is(jwks.status, 200);
  t.true(
    jwks.json.keys.some((k: { kid: string }) => k.kid === header.kid),
    'kid is a published key',
  );
  t.false(JSON.stringify(jwks.json).includes('"d"'), 'no private key material published');

  const claims = decodeJwt(res.json.accessToken);
  t.is(claims.iss, `http://${A}`);
  t.is(claims.aud, `http://${A}`);
  t.is(claims.sub, res.json.user.id);
  t.is(claims.tid, tenantA.id);
  t.is(claims.role, 'inspector');
  t.regex(String(claims.sid), /^[0-9a-f-]{36}$/);
  t.is(claims.exp! - claims.iat!, TEST_TOKEN_TTL.accessTokenTtl);
  t.truthy(claims.jti);

  // The refresh token is opaque, 256 random bits after the session id, and stored only hashed.
  t.regex(res.json.refreshToken, /^[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}$/);
  t.true(res.json.refreshToken.startsWith(String(claims.sid)));

  const ok = await me(port, bearer(res.json.accessToken));
  t.is(ok.status, 200);
  t.deepEqual(ok.json, res.json.user);
});

test('refresh tokens are stored only as SHA-256 hashes', async (t) => {
  const { port, owner } = await setup(t);
  const { json } = await login(port, A, 'viewer');
  const rows = await owner.query<{ token_hash: Buffer }>(
    'select token_hash from weld_private.refresh_tokens',
  );
  t.is(rows.rowCount, 1);
  const { createHash } = await import('node:crypto');
  t.deepEqual(rows.rows[0]!.token_hash, createHash('sha256').update(json.refreshToken).digest());
  const dump = JSON.stringify(
    (await owner.query('select * from weld_private.refresh_tokens')).rows,
  );
  t.false(dump.includes(json.refreshToken.split('.')[1]));
});

test('tampered, expired, wrong-algorithm, alg:none, wrong-typ and foreign-key tokens are refused', async (t) => {
  const { port, ring, tenantA } = await setup(t);
  const { json } = await login(port, A, 'viewer');
  const good = json.accessToken as string;
  const [h, p, s] = good.split('.') as [string, string, string];
  const claims = decodeJwt(good);
  const kid = decodeProtectedHeader(good).kid!;
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

  const tampered = `${h}.${b64({ ...claims, role: 'admin' })}.${s}`;
  const none = `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${p}.`;
  const hs256 = (secret: Uint8Array) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid }).sign(secret);
  const publicJwk = (await ring.publicJwks(tenantA.id)).keys[0]!;
  const confused = await hs256(Buffer.from(JSON.stringify(publicJwk))); // public key as HMAC secret
  const expired = await issueAccessToken(
    ring,
    `http://${A}`,
    {
      userId: String(claims.sub),
      tenantId: tenantA.id,
      role: 'viewer',
      sessionId: String(claims.sid),
    },
    -60,
  );
  // Signed with the tenant's real key; only the header type is wrong.
  const realKey = await ring.signingKey(tenantA.id);
  const plainJwt = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: realKey.kid })
    .sign(realKey.key);
  const idToken = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: realKey.kid })
    .sign(realKey.key);
  const { privateKey } = await generateKeyPair('ES256');
  const foreignKey = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid })
    .sign(privateKey);

  for (const [label, token] of Object.entries({
    tampered,
    none,
    'HS256 with a guessed secret': await hs256(Buffer.from('secret')),
    'HS256 keyed with the public key': confused,
    expired,
    'signed by a key that is not ours': foreignKey,
    'no typ header': plainJwt,
    'typ JWT instead of at+jwt': idToken,
    garbage: 'not.a.jwt',
  })) {
    assert401(t, await me(port, bearer(token)), label);
    const res = await me(port, bearer(token));
    t.regex(String(res.headers['www-authenticate']), /error="invalid_token"/, label);
  }
  t.is((await me(port, bearer(good))).status, 200, 'the untouched token still works');
});

test('iss and aud are checked: a token issued at one origin is refused at another origin of the same tenant', async (t) => {
  const { port } = await setup(t);
  const { json } = await login(port, A, 'viewer');
  t.is((await me(port, bearer(json.accessToken), A)).status, 200);
  assert401(t, await me(port, bearer(json.accessToken), `alt.${A}`));
});

test("a token of tenant A is refused at tenant B's origin", async (t) => {
  const { port } = await setup(t);
  const { json } = await login(port, A, 'admin');
  assert401(t, await me(port, bearer(json.accessToken), B));
  const cookie = await login(port, A, 'admin');
  assert401(t, await me(port, { cookie: cookieHeader(cookie) }, B));
});

test('key rotation: new tokens use the new key, old tokens stay valid until they expire, JWKS publishes both', async (t) => {
  const { port, ring, tenantA, target, owner } = await setup(t);
  const before = await login(port, A, 'viewer');
  const oldKid = decodeProtectedHeader(before.json.accessToken).kid;

  const pool = createPool(target.authenticatorUrl, { max: 1, onError: () => {} });
  t.teardown(() => pool.end());
  const newKid = await asAuthenticator(pool, tenantA.id, (db) => addSigningKey(db, true));
  ring.forget(tenantA.id);

  const after = await login(port, A, 'viewer');
  t.is(decodeProtectedHeader(after.json.accessToken).kid, newKid);
  t.not(newKid, oldKid);
  t.is((await me(port, bearer(before.json.accessToken))).status, 200, 'old token still verifies');
  t.is((await me(port, bearer(after.json.accessToken))).status, 200);
  const jwks = await request(port, { path: '/.well-known/jwks.json', host: A });
  t.deepEqual(jwks.json.keys.map((k: { kid: string }) => k.kid).sort(), [newKid, oldKid].sort());
  t.regex(String(jwks.headers['content-type']), /application\/jwk-set\+json/);

  // Tenants have their own keys.
  const jwksB = await request(port, { path: '/.well-known/jwks.json', host: B });
  t.false(jwksB.json.keys.some((k: { kid: string }) => k.kid === newKid || k.kid === oldKid));

  // Once every token the old key signed has expired, it is neither trusted nor published.
  await owner.query(
    `update weld_private.signing_keys set retired_at = now() - interval '2 hours' where kid = $1`,
    [oldKid],
  );
  ring.forget(tenantA.id);
  assert401(t, await me(port, bearer(before.json.accessToken)), 'retired key no longer trusted');
  const later = await request(port, { path: '/.well-known/jwks.json', host: A });
  t.deepEqual(
    later.json.keys.map((k: { kid: string }) => k.kid),
    [newKid],
  );
});

//------------------------------------------------------------------------------------------------
// Refresh rotation and reuse detection

test('refresh rotates: a new pair each time, and the old refresh token no longer works', async (t) => {
  const { port } = await setup(t);
  const first = await login(port, A, 'engineer');
  const refresh = (token: string) => refreshWith(port, token);
  const second = await refresh(first.json.refreshToken);
  t.is(second.status, 200);
  t.deepEqual(Object.keys(second.json).sort(), [
    'accessToken',
    'expiresIn',
    'refreshToken',
    'tokenType',
    'user',
  ]);
  t.not(second.json.refreshToken, first.json.refreshToken);
  t.not(second.json.accessToken, first.json.accessToken);
  t.is(second.json.user.role, 'engineer');
  t.truthy(setCookies(second).svc_rt, 'fresh cookies too');
  const third = await refresh(second.json.refreshToken);
  t.is(third.status, 200);
  t.is((await me(port, bearer(third.json.accessToken))).status, 200);
});

test('replaying a used refresh token revokes the whole family, and that revocation is committed', async (t) => {
  const { port, owner } = await setup(t);
  const refresh = (token: string) => refreshWith(port, token);
  const first = await login(port, A, 'viewer');
  const second = await refresh(first.json.refreshToken);
  t.is(second.status, 200);
  // Later than the grace window: the old token is stolen and replayed.
  await owner.query(
    `update weld_private.refresh_tokens set used_at = now() - interval '1 minute' where used_at is not null`,
  );
  const replay = await refresh(first.json.refreshToken);
  assert401(t, replay, 'replay');
  t.is(replay.json.type, '/problems/invalid-refresh-token');
  // The legitimate holder's newer token died with the family.
  assert401(t, await refresh(second.json.refreshToken), 'family revoked');
  const session = await owner.query(`select revoked_reason from weld_private.sessions`);
  t.deepEqual(session.rows, [{ revoked_reason: 'reuse' }]);
});

test('two concurrent refreshes with the same token: one live family, both get the same successor', async (t) => {
  const { port, owner } = await setup(t);
  const first = await login(port, A, 'viewer');
  const refresh = (token: string) => refreshWith(port, token);
  const results = await Promise.all(
    Array.from({ length: 5 }, () => refresh(first.json.refreshToken)),
  );
  t.true(
    results.every((r) => r.status === 200),
    results.map((r) => r.status).join(','),
  );
  const successors = new Set(results.map((r) => r.json.refreshToken));
  t.is(successors.size, 1, 'the same successor for all');
  const counts = await owner.query(
    `select (select count(*)::int from weld_private.sessions where revoked_at is null) as live_sessions,
            (select count(*)::int from weld_private.refresh_tokens where used_at is null) as live_tokens`,
  );
  t.deepEqual(counts.rows[0], { live_sessions: 1, live_tokens: 1 });
  t.is((await refresh([...successors][0])).status, 200, 'the successor works once');
});

test('logout revokes the family and clears the cookies; refresh after logout fails', async (t) => {
  const { port } = await setup(t);
  const session = await login(port, A, 'viewer');
  const out = await request(port, {
    method: 'POST',
    path: '/auth/logout',
    host: A,
    body: { refreshToken: session.json.refreshToken },
  });
  t.is(out.status, 204);
  t.is(out.text, '');
  const cleared = setCookies(out);
  for (const name of ['svc_at', 'svc_rt', 'svc_csrf']) {
    t.is(cleared[name]?.maxAge, 0, name);
    t.is(cleared[name]?.value, '', name);
  }
  t.is(cleared.svc_rt?.path, '/auth');
  const after = await request(port, {
    method: 'POST',
    path: '/auth/refresh',
    host: A,
    body: { refreshToken: session.json.refreshToken },
  });
  assert401(t, after);
});

test('unknown, malformed and other-tenant refresh tokens are 401', async (t) => {
  const { port } = await setup(t);
  const bSession = await login(port, B, 'viewer');
  for (const token of [
    `${randomUUID()}.${'A'.repeat(43)}`,
    'nonsense',
    bSession.json.refreshToken,
  ]) {
    assert401(
      t,
      await request(port, {
        method: 'POST',
        path: '/auth/refresh',
        host: A,
        body: { refreshToken: token },
      }),
      token,
    );
  }
  assert401(
    t,
    await request(port, { method: 'POST', path: '/auth/refresh', host: A }),
    'nothing presented',
  );
  const invalid = await request(port, {
    method: 'POST',
    path: '/auth/refresh',
    host: A,
    body: { refreshToken: 5 },
  });
  t.is(invalid.status, 422);
});

test('a disabled user cannot log in, and its sessions can no longer refresh', async (t) => {
  const { port, owner } = await setup(t);
  const session = await login(port, A, 'inspector');
  await disableUser(owner, 'alpha', 'inspector');
  assert401(t, await login(port, A, 'inspector'));
  assert401(
    t,
    await request(port, {
      method: 'POST',
      path: '/auth/refresh',
      host: A,
      body: { refreshToken: session.json.refreshToken },
    }),
  );
  assert401(t, await me(port, bearer(session.json.accessToken)), 'me refuses a disabled user');
});

//------------------------------------------------------------------------------------------------
// Transports

test('cookies: names and every attribute exactly as the spec says', async (t) => {
  const { port } = await setup(t);
  const cookies = setCookies(await login(port, A, 'viewer'));
  t.deepEqual(Object.keys(cookies).sort(), ['svc_at', 'svc_csrf', 'svc_rt']);
  t.like(cookies.svc_at, {
    path: '/',
    httpOnly: true,
    secure: true,
    sameSite: 'strict',
    maxAge: TEST_TOKEN_TTL.accessTokenTtl,
  });
  t.like(cookies.svc_rt, {
    path: '/auth',
    httpOnly: true,
    secure: true,
    sameSite: 'strict',
    maxAge: TEST_TOKEN_TTL.refreshTokenTtl,
  });
  t.like(cookies.svc_csrf, { path: '/', secure: true, sameSite: 'strict' });
  t.falsy(cookies.svc_csrf!.httpOnly, 'svc_csrf is readable by the web app');
});

test('cookie mode: the svc_at cookie alone authenticates a GET', async (t) => {
  const { port } = await setup(t);
  const session = await login(port, A, 'engineer');
  const res = await me(port, { cookie: cookieHeader(session, ['svc_at']) });
  t.is(res.status, 200);
  t.is(res.json.role, 'engineer');
});

test('the Authorization header is the only identity when present: invalid header beside a valid cookie is 401', async (t) => {
  const { port } = await setup(t);
  const session = await login(port, A, 'engineer');
  for (const authorization of ['Bearer not-a-token', 'Basic dXNlcjpwYXNz', 'Bearer']) {
    assert401(t, await me(port, { cookie: cookieHeader(session), authorization }), authorization);
  }
});

test('no credentials is 401 with a plain Bearer challenge; a token in the URL is ignored', async (t) => {
  const { port } = await setup(t);
  const session = await login(port, A, 'viewer');
  const none = await me(port, {});
  assert401(t, none);
  t.is(none.headers['www-authenticate'], 'Bearer realm="weld-data-service"');
  const inUrl = await request(port, {
    path: `/auth/me?access_token=${session.json.accessToken}`,
    host: A,
  });
  assert401(t, inUrl, 'query token');
});

//------------------------------------------------------------------------------------------------
// CSRF

async function cookieSession(port: number) {
  const session = await login(port, A, 'inspector');
  return { session, cookie: cookieHeader(session), csrf: setCookies(session).svc_csrf!.value! };
}

test('cookie-authenticated PATCH: CSRF header missing or wrong is 403; right is 200; bearer needs none', async (t) => {
  const { port } = await setup(t);
  const { session, cookie, csrf } = await cookieSession(port);
  const patch = (headers: Record<string, string>) =>
    request(port, { method: 'PATCH', path: '/test/whoami', host: A, body: {}, headers });

  const missing = await patch({ cookie });
  t.is(missing.status, 403);
  t.is(missing.json.type, '/problems/csrf-rejected');
  t.regex(String(missing.headers['content-type']), /application\/problem\+json/);
  t.is(
    (await patch({ cookie, 'x-csrf-token': csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A') }))
      .status,
    403,
  );
  const right = await patch({ cookie, 'x-csrf-token': csrf });
  t.is(right.status, 200);
  t.deepEqual(right.json, { via: 'cookie', role: 'inspector' });

  const viaBearer = await patch({ authorization: `Bearer ${session.json.accessToken}` });
  t.is(viaBearer.status, 200);
  t.deepEqual(viaBearer.json, { via: 'bearer', role: 'inspector' });
  // GET needs no CSRF token.
  t.is((await me(port, { cookie })).status, 200);
});

test('a malformed CSRF header or cookie is 403, never a 500 (non-ASCII of the same length)', async (t) => {
  const { port } = await setup(t);
  const { session, cookie, csrf } = await cookieSession(port);
  // No body: node then writes the header block in latin1, so 'é' arrives as one character.
  const patch = (headers: Record<string, string>) =>
    request(port, { method: 'PATCH', path: '/test/whoami', host: A, headers });
  // 'é' is one character (and one latin1 byte on the wire), but two bytes in UTF-8.
  const sameLength = csrf.slice(0, -1) + '\u00e9';
  t.is(sameLength.length, csrf.length);
  for (const headers of [
    { cookie, 'x-csrf-token': sameLength },
    { cookie, 'x-csrf-token': '\u00e9'.repeat(csrf.length) },
    {
      cookie: `${cookieHeader(session, ['svc_at'])}; svc_csrf=${sameLength}`,
      'x-csrf-token': sameLength,
    },
    { cookie, 'x-csrf-token': `${csrf}.extra` },
    { cookie, 'x-csrf-token': '.' },
  ]) {
    const res = await patch(headers);
    t.is(res.status, 403, headers['x-csrf-token']);
    t.is(res.json.type, '/problems/csrf-rejected');
  }
  t.is((await patch({ cookie, 'x-csrf-token': csrf })).status, 200);
});

test('signed double-submit: a planted cookie and header pair that is not signed for this session is refused', async (t) => {
  const { port } = await setup(t);
  const victim = await cookieSession(port);
  const attacker = await cookieSession(port);
  const withCsrf = (value: string) => ({
    cookie: `${cookieHeader(victim.session, ['svc_at'])}; svc_csrf=${value}`,
    'x-csrf-token': value,
  });
  const patch = (headers: Record<string, string>) =>
    request(port, { method: 'PATCH', path: '/test/whoami', host: A, body: {}, headers });
  // The attacker's own valid token, planted (e.g. by a sibling subdomain) beside the victim's session.
  t.is((await patch(withCsrf(attacker.csrf))).status, 403);
  // A value the attacker made up, equal in cookie and header.
  const forged = `${'n'.repeat(22)}.${createHmac('sha256', 'guess').update('x').digest('base64url')}`;
  t.is((await patch(withCsrf(forged))).status, 403);
  t.is((await patch(withCsrf(victim.csrf))).status, 200);
});

test('cross-site Sec-Fetch-Site and a foreign Origin are refused for cookie-authenticated unsafe requests', async (t) => {
  const { port } = await setup(t);
  const { cookie, csrf } = await cookieSession(port);
  const patch = (headers: Record<string, string>) =>
    request(port, {
      method: 'PATCH',
      path: '/test/whoami',
      host: A,
      body: {},
      headers: { cookie, 'x-csrf-token': csrf, ...headers },
    });
  t.is((await patch({ 'sec-fetch-site': 'cross-site' })).status, 403);
  t.is((await patch({ 'sec-fetch-site': 'same-site' })).status, 403, 'a sibling subdomain');
  t.is((await patch({ origin: 'http://evil.a.test' })).status, 403);
  t.is((await patch({ origin: 'null' })).status, 403);
  t.is((await patch({ 'sec-fetch-site': 'same-origin', origin: `http://${A}` })).status, 200);
});

test('cookie refresh and logout need the CSRF token; GET /auth/csrf rotates it', async (t) => {
  const { port } = await setup(t);
  const { session, cookie, csrf } = await cookieSession(port);
  const post = (path: string, headers: Record<string, string>) =>
    request(port, { method: 'POST', path, host: A, headers });

  t.is((await post('/auth/refresh', { cookie })).status, 403);
  t.is((await post('/auth/logout', { cookie })).status, 403);

  const rotated = await request(port, { path: '/auth/csrf', host: A, headers: { cookie } });
  t.is(rotated.status, 200);
  const fresh = rotated.json.csrfToken as string;
  t.not(fresh, csrf);
  t.is(setCookies(rotated).svc_csrf?.value, fresh);
  t.like(setCookies(rotated).svc_csrf, { path: '/', secure: true, sameSite: 'strict' });

  const nextCookie = `${cookieHeader(session, ['svc_at', 'svc_rt'])}; svc_csrf=${fresh}`;
  const refreshed = await post('/auth/refresh', { cookie: nextCookie, 'x-csrf-token': fresh });
  t.is(refreshed.status, 200);
  t.truthy(setCookies(refreshed).svc_at?.value);
  // Cookie mode: the new tokens are in the HttpOnly cookies only, never in what script reads.
  t.is(refreshed.json.accessToken, undefined);
  t.is(refreshed.json.refreshToken, undefined);
  t.false(refreshed.text.includes(setCookies(refreshed).svc_rt!.value!));
  t.false(refreshed.text.includes(setCookies(refreshed).svc_at!.value!));
  t.like(refreshed.json, { tokenType: 'Bearer', expiresIn: 600, user: { userName: 'inspector' } });
  const out = await post('/auth/logout', {
    cookie: cookieHeader(refreshed),
    'x-csrf-token': setCookies(refreshed).svc_csrf!.value!,
  });
  t.is(out.status, 204);
  // GET /auth/csrf needs a session.
  assert401(t, await request(port, { path: '/auth/csrf', host: A }));
});

test('a cookieOnly login puts the tokens in the HttpOnly cookies only; a bearer login in the body too', async (t) => {
  const { port } = await setup(t);
  const cookieMode = await request(port, {
    method: 'POST',
    path: '/auth/login',
    host: A,
    body: { userName: 'inspector', password: PASSWORD, cookieOnly: true },
  });
  t.is(cookieMode.status, 200);
  const jar = setCookies(cookieMode);
  t.is(cookieMode.json.accessToken, undefined);
  t.is(cookieMode.json.refreshToken, undefined);
  t.false(cookieMode.text.includes(jar.svc_at!.value!));
  t.false(cookieMode.text.includes(jar.svc_rt!.value!));
  t.true(jar.svc_at!.httpOnly);
  t.true(jar.svc_rt!.httpOnly);
  t.like(cookieMode.json, { tokenType: 'Bearer', expiresIn: 600, user: { role: 'inspector' } });
  const me = await request(port, {
    path: '/auth/me',
    host: A,
    headers: { cookie: cookieHeader(cookieMode) },
  });
  t.is(me.status, 200);
  const bearerMode = await login(port, A, 'inspector');
  t.truthy(bearerMode.json.accessToken);
  t.truthy(bearerMode.json.refreshToken);
  const bad = await request(port, {
    method: 'POST',
    path: '/auth/login',
    host: A,
    body: { userName: 'inspector', password: PASSWORD, cookieOnly: 'yes' },
  });
  t.is(bad.status, 422);
});

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
  t.is(statuses.filter((s) => s === 429).length, 40 - verdicts, statuses.join(' '));
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
