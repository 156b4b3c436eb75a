// Authentication over real HTTP against a real database, checked line by line against
// ../shared/SECURITY.md: the transports (cookies, the Authorization header) and CSRF.
import { createHmac } from 'node:crypto';
import test from 'ava';
import { cookieHeader, login, PASSWORD, setCookies } from '../helpers/auth.ts';
import { request } from '../helpers/http.ts';
import { TEST_TOKEN_TTL } from '../helpers/server.ts';
import { A, setup, me, assert401 } from '../helpers/auth-setup.ts';

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
