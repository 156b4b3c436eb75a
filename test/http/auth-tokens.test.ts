// Authentication over real HTTP against a real database, checked line by line against
// ../shared/SECURITY.md: access tokens (claims, signatures, keys, tenants) and refresh token
// rotation with reuse detection. Transports and CSRF: auth-csrf.test.ts; passwords, login and
// tenancy: auth-login.test.ts.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { asAuthenticator, createPool } from '../../db/database.ts';
import { disableUser } from '../../db/users.ts';
import { addSigningKey } from '../../db/signing-keys.ts';
import { issueAccessToken } from '../../rest-adapter/http/auth/access-tokens.ts';
import { cookieHeader, login, setCookies } from '../helpers/auth.ts';
import { request } from '../helpers/http.ts';
import { TEST_TOKEN_TTL } from '../helpers/server.ts';
import { A, B, setup, me, bearer, refreshWith, assert401 } from '../helpers/auth-setup.ts';

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
    // An expired token says so (the client refreshes); any other is invalid (sign in again).
    t.regex(
      String(res.headers['www-authenticate']),
      label === 'expired'
        ? /error_description="The access token expired"/
        : /error_description="The access token is invalid or its session has ended"/,
      label,
    );
    t.regex(res.json.detail, label === 'expired' ? /has expired: refresh it/ : /sign in again/);
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
