// OAuth2 clients (F18, Wave 2) end to end: an admin registers a client, the client gets tokens by
// client credentials (Basic and in the form), calls the API within its scopes, rotates its secret
// with an overlap, revokes a token, and is removed; every refusal from the attacker's side (wrong
// secret, throttled, another tenant, a client managing clients, a removed or deactivated client).
// Wave 1 (a person's login) is unchanged: test/http/auth-*.test.ts.
import test from 'ava';
import { decodeJwt } from 'jose';
import { request, type HttpResponse } from '../helpers/http.ts';
import { A, B, ok, world, type World } from '../helpers/rules-http.ts';

/** A form POST to the token or revocation endpoint. */
function form(
  w: World,
  path: '/oauth/token' | '/oauth/revoke',
  fields: Record<string, string>,
  options: { basic?: [string, string]; host?: string; type?: string } = {},
): Promise<HttpResponse> {
  const headers: Record<string, string> = {
    'content-type': options.type ?? 'application/x-www-form-urlencoded',
  };
  if (options.basic) {
    const [id, secret] = options.basic.map((s) => encodeURIComponent(s));
    headers.authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  }
  return request(w.port, {
    method: 'POST',
    path,
    host: options.host ?? A,
    body: new URLSearchParams(fields).toString(),
    headers,
  });
}

/** The status of `call` once it is 401, or after 3 s (revocations reach servers by NOTIFY). */
async function refusedWithin(call: () => Promise<HttpResponse>): Promise<number> {
  let status = 0;
  for (let waited = 0; waited <= 3000; waited += 50) {
    status = (await call()).status;
    if (status === 401) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return status;
}

async function registered(w: World, scopes: string[], name = 'ERP sync') {
  return ok(await w.a.admin.post('/oauth-clients', { name, scopes }), 201) as {
    clientId: string;
    clientSecret: string;
    role: string;
  };
}

const bearer = (w: World, token: string, host = A) => ({
  get: (path: string) =>
    request(w.port, { path, host, headers: { authorization: `Bearer ${token}` } }),
  post: (path: string, body: unknown) =>
    request(w.port, {
      method: 'POST',
      path,
      host,
      body,
      headers: { authorization: `Bearer ${token}` },
    }),
});

test('client credentials end to end: register, token by Basic and by form, a call within its scopes', async (t) => {
  const w = await world(t);
  await w.make.iso('ISO-1', 'L-1');
  const client = await registered(w, ['welds:read', 'events:read']);
  t.regex(client.clientId, /^wdc_[A-Za-z0-9_-]{22}$/);
  t.regex(client.clientSecret, /^wds_[A-Za-z0-9_-]{43}$/);
  t.is(client.role, 'viewer', 'the least role its scopes need');
  // The secret is shown once: never listed, stored only as a hash.
  const listed = ok(await w.a.admin.get('/oauth-clients'));
  t.is(listed.items.length, 1);
  t.false(JSON.stringify(listed).includes(client.clientSecret));
  t.false('clientSecret' in listed.items[0]);
  const stored = await w.owner.query('select * from weld_private.oauth_clients');
  t.false(JSON.stringify(stored.rows).includes(client.clientSecret));

  const basic = await form(
    w,
    '/oauth/token',
    { grant_type: 'client_credentials' },
    { basic: [client.clientId, client.clientSecret] },
  );
  t.is(basic.status, 200, basic.text);
  t.is(basic.headers['cache-control'], 'no-store');
  t.like(basic.json, { token_type: 'Bearer', expires_in: 600, scope: 'welds:read events:read' });
  const claims = decodeJwt(basic.json.access_token);
  t.like(claims, { client_id: client.clientId, scope: 'welds:read events:read', role: 'viewer' });
  t.false('refresh_token' in basic.json, 'no refresh token');

  const posted = await form(w, '/oauth/token', {
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
    scope: 'welds:read',
  });
  t.is(posted.status, 200, posted.text);
  t.is(posted.json.scope, 'welds:read', 'a narrower scope on request');

  const api = bearer(w, posted.json.access_token);
  t.deepEqual(
    ok(await api.get('/isos')).items.map((i: { isoNumber: string }) => i.isoNumber),
    ['ISO-1'],
  );
  const refused = await api.get('/events');
  t.is(refused.status, 403, 'events:read was not asked for this token');
  t.is(refused.json.type, '/problems/insufficient-scope');
  t.is((await api.post('/isos', { isoNumber: 'X', lineNumber: 'L' })).status, 403);
  // GraphQL reads as the client too.
  const gql = await api.post('/graphql', {
    query: '{ allIsos(first: 10) { nodes { isoNumber } } }',
  });
  t.deepEqual(gql.json.data.allIsos.nodes, [{ isoNumber: 'ISO-1' }]);
  // last used is noted
  t.truthy(ok(await w.a.admin.get('/oauth-clients')).items[0].lastUsedAt);
});

test('the token endpoint refuses as RFC 6749 says, and throttles wrong secrets', async (t) => {
  const w = await world(t);
  const client = await registered(w, ['welds:read']);
  const good = { client_id: client.clientId, client_secret: client.clientSecret };
  const cases: Array<[string, Promise<HttpResponse>, number, string]> = [
    ['no grant_type', form(w, '/oauth/token', { ...good }), 400, 'invalid_request'],
    [
      'a password grant',
      form(w, '/oauth/token', { ...good, grant_type: 'password' }),
      400,
      'unsupported_grant_type',
    ],
    [
      'JSON',
      form(
        w,
        '/oauth/token',
        { ...good, grant_type: 'client_credentials' },
        { type: 'application/json' },
      ),
      400,
      'invalid_request',
    ],
    [
      'both methods',
      form(
        w,
        '/oauth/token',
        { ...good, grant_type: 'client_credentials' },
        { basic: [client.clientId, client.clientSecret] },
      ),
      400,
      'invalid_request',
    ],
    [
      'a scope it was not given',
      form(w, '/oauth/token', { ...good, grant_type: 'client_credentials', scope: 'welds:write' }),
      400,
      'invalid_scope',
    ],
    [
      'an unknown scope',
      form(w, '/oauth/token', { ...good, grant_type: 'client_credentials', scope: 'root' }),
      400,
      'invalid_scope',
    ],
    [
      'no credentials',
      form(w, '/oauth/token', { grant_type: 'client_credentials' }),
      401,
      'invalid_client',
    ],
    [
      'an unknown client',
      form(w, '/oauth/token', {
        grant_type: 'client_credentials',
        client_id: 'wdc_AAAAAAAAAAAAAAAAAAAAAA',
        client_secret: client.clientSecret,
      }),
      401,
      'invalid_client',
    ],
  ];
  for (const [label, pending, status, error] of cases) {
    const res = await pending;
    t.is(res.status, status, `${label}: ${res.text}`);
    t.is(res.json.error, error, label);
    t.is(typeof res.json.error_description, 'string', label);
    t.regex(String(res.headers['content-type']), /^application\/json/, label);
  }
  // A wrong secret by Basic is challenged by Basic (RFC 6749 5.2).
  const wrong = await form(
    w,
    '/oauth/token',
    { grant_type: 'client_credentials' },
    { basic: [client.clientId, 'wds_wrong'] },
  );
  t.is(wrong.status, 401);
  t.is(wrong.headers['www-authenticate'], 'Basic realm="weld-data-service"');
  // The right secret asking beyond the client's scopes is refused, and counts as no failure.
  for (let i = 0; i < 8; i++) {
    const beyond = await form(w, '/oauth/token', {
      ...good,
      grant_type: 'client_credentials',
      scope: 'welds:write',
    });
    t.is(beyond.status, 400, beyond.text);
  }
  t.is(
    (await form(w, '/oauth/token', { ...good, grant_type: 'client_credentials' })).status,
    200,
    'not throttled',
  );
  // Wrong secrets are throttled per client as logins are: from the 5th failure, 429.
  let throttled: HttpResponse | undefined;
  for (let i = 0; i < 8 && !throttled; i++) {
    const res = await form(w, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: `wds_guess${i}`,
    });
    if (res.status === 429) throttled = res;
    else t.is(res.status, 401);
  }
  t.truthy(throttled, 'throttled');
  t.regex(String(throttled!.headers['retry-after']), /^\d+$/);
  t.is(throttled!.json.error, 'invalid_client');
  // While throttled, even the right secret waits.
  t.is((await form(w, '/oauth/token', { ...good, grant_type: 'client_credentials' })).status, 429);
});

test('rotation keeps the old secret for the overlap; revocation and removal end tokens at once', async (t) => {
  const w = await world(t);
  await w.make.iso('ISO-1', 'L-1');
  const client = await registered(w, ['welds:read']);
  const token = async (secret: string) =>
    form(w, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: secret,
    });

  const rotated = ok(
    await w.a.admin.post(`/oauth-clients/${client.clientId}/rotate`, { overlapHours: 1 }),
  );
  t.not(rotated.clientSecret, client.clientSecret);
  t.truthy(rotated.previousSecretUntil);
  t.is((await token(client.clientSecret)).status, 200, 'the old secret works in the overlap');
  t.is((await token(rotated.clientSecret)).status, 200, 'the new one works');
  const again = ok(
    await w.a.admin.post(`/oauth-clients/${client.clientId}/rotate`, { overlapHours: 0 }),
  );
  t.is((await token(client.clientSecret)).status, 401, 'a second rotation ends the oldest');
  t.is((await token(rotated.clientSecret)).status, 401, 'overlap 0: the previous one ends now');
  const secret = again.clientSecret as string;
  const bad = await w.a.admin.post(`/oauth-clients/${client.clientId}/rotate`, {
    overlapHours: 1000,
  });
  t.is(bad.status, 422);

  // Revocation (RFC 7009): the token is refused at once; 200 whatever was sent.
  const first = ok(await token(secret)).access_token as string;
  const second = ok(await token(secret)).access_token as string;
  t.is((await bearer(w, first).get('/isos')).status, 200);
  const revoked = await form(w, '/oauth/revoke', {
    token: first,
    client_id: client.clientId,
    client_secret: secret,
  });
  t.is(revoked.status, 200, revoked.text);
  // Every server hears of it (NOTIFY) and refuses the token within moments.
  t.is(await refusedWithin(() => bearer(w, first).get('/isos')), 401, 'the revoked token');
  t.is((await bearer(w, second).get('/isos')).status, 200, 'its other token lives');
  t.is(
    (
      await form(w, '/oauth/revoke', {
        token: 'not-a-token',
        client_id: client.clientId,
        client_secret: secret,
      })
    ).status,
    200,
  );
  t.is(
    (
      await form(w, '/oauth/revoke', {
        token: second,
        client_id: client.clientId,
        client_secret: 'x',
      })
    ).status,
    401,
    'only the client itself revokes',
  );

  // Removal: its secrets go and its tokens end; its user stays for the audit trail, inactive.
  t.is((await w.a.admin.del(`/oauth-clients/${client.clientId}`)).status, 204);
  t.is(await refusedWithin(() => bearer(w, second).get('/isos')), 401);
  t.is((await token(secret)).status, 401);
  t.deepEqual(ok(await w.a.admin.get('/oauth-clients')).items, []);
  const user = await w.owner.query('select active from weld_public.users where user_name = $1', [
    client.clientId,
  ]);
  t.deepEqual(user.rows, [{ active: false }]);
  t.is((await w.a.admin.del(`/oauth-clients/${client.clientId}`)).status, 404);
});

test('a deactivated client ends its tokens as a deactivated user does', async (t) => {
  const w = await world(t);
  const client = await registered(w, ['welds:read']);
  const token = ok(
    await form(w, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }),
  ).access_token as string;
  t.is((await bearer(w, token).get('/isos')).status, 200);
  await w.owner.query('update weld_public.users set active = false where user_name = $1', [
    client.clientId,
  ]);
  t.is(await refusedWithin(() => bearer(w, token).get('/isos')), 401);
  const refused = await form(w, '/oauth/token', {
    grant_type: 'client_credentials',
    client_id: client.clientId,
    client_secret: client.clientSecret,
  });
  t.is(refused.status, 401);
});

test('from the attacker side: only admins manage clients, never a client, never across tenants', async (t) => {
  const w = await world(t);
  const client = await registered(w, ['webhooks:write', 'welds:read']);
  t.is(client.role, 'admin');
  t.is(
    (await w.a.engineer.post('/oauth-clients', { name: 'x', scopes: ['welds:read'] })).status,
    403,
  );
  t.is((await w.a.engineer.get('/oauth-clients')).status, 403);
  // A client with the admin role may not give itself (or another) more.
  const token = ok(
    await form(w, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }),
  ).access_token as string;
  const self = bearer(w, token);
  const escalate = await self.post('/oauth-clients', { name: 'more', scopes: ['welds:write'] });
  t.is(escalate.status, 403, escalate.text);
  t.is((await self.get('/oauth-clients')).status, 403);
  t.is(
    (await self.post(`/oauth-clients/${client.clientId}/rotate`, {})).status,
    403,
    'nor rotate its own secret',
  );
  // Tenant B sees none of A's clients, and A's client has no token at B's origin.
  t.deepEqual(ok(await w.b.admin.get('/oauth-clients')).items, []);
  t.is((await w.b.admin.del(`/oauth-clients/${client.clientId}`)).status, 404);
  t.is((await w.b.admin.post(`/oauth-clients/${client.clientId}/rotate`, {})).status, 404);
  const atB = await form(
    w,
    '/oauth/token',
    {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    },
    { host: B },
  );
  t.is(atB.status, 401);
  t.is((await bearer(w, token, B).get('/isos')).status, 401, "A's token at B");
  // webhooks:write makes an admin: it goes with read scopes only.
  const mixed = ok(
    await w.a.admin.post('/oauth-clients', {
      name: 'x',
      scopes: ['webhooks:write', 'welds:write'],
    }),
    422,
  );
  t.regex(mixed.detail, /webhooks:write goes with read scopes only/);
  // Bad registrations are named in plain words.
  const bad = ok(await w.a.admin.post('/oauth-clients', { name: '', scopes: ['root'] }), 422);
  t.deepEqual(
    bad.errors.map((e: { pointer: string }) => e.pointer),
    ['/name', '/scopes/0'],
  );
});

test('from the attacker side: a client may not change users, act beyond its role, or get events through a webhook', async (t) => {
  const w = await world(t);
  const client = await registered(w, ['webhooks:write', 'welds:read']);
  const token = ok(
    await form(w, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: client.clientId,
      client_secret: client.clientSecret,
    }),
  ).access_token as string;
  const self = bearer(w, token);
  // Acting as an admin (its scopes need it), it may still not make a person an admin.
  const viewer = ok(
    await w.gql(
      'admin',
      `{ allUsers(first: 1, condition: { userName: "viewer" }) { nodes { id } } }`,
    ),
  ).data.allUsers.nodes[0];
  t.truthy(viewer, 'the viewer exists');
  const promote = `mutation { updateUser(input: { id: "${viewer?.id}", userPatch: { role: admin } }) { user { role } } }`;
  const refused = await self.post('/graphql', { query: promote });
  t.is(refused.json.errors?.[0]?.extensions?.code, '/problems/role-not-allowed', refused.text);
  const create = `mutation { createUser(input: { user: { userName: "mole", displayName: "Mole", role: admin } }) { user { id } } }`;
  t.is(
    (await self.post('/graphql', { query: create })).json.errors?.[0]?.extensions?.code,
    '/problems/role-not-allowed',
  );
  // A person admin can, as before.
  t.is(ok(await w.gql('admin', promote)).data.updateUser.user.role, 'admin');

  // An endpoint receives the events it names: registering one needs events:read as well.
  const hook = { url: 'https://hooks.example.com/weld', eventTypes: ['weld.status_changed'] };
  const noEvents = await self.post('/webhooks', hook);
  t.is(noEvents.status, 403, noEvents.text);
  t.is(noEvents.json.scope, 'events:read');
  const both = await registered(w, ['webhooks:write', 'events:read'], 'Hooks');
  const hooks = bearer(
    w,
    ok(
      await form(w, '/oauth/token', {
        grant_type: 'client_credentials',
        client_id: both.clientId,
        client_secret: both.clientSecret,
      }),
    ).access_token,
  );
  t.is((await hooks.post('/webhooks', hook)).status, 201);

  // A client's role follows its scopes: no path changes it, and it gets no password.
  const clientUser = ok(
    await w.gql(
      'admin',
      `{ allUsers(first: 1, condition: { userName: "${client.clientId}" }) { nodes { id } } }`,
    ),
  ).data.allUsers.nodes[0];
  const demote = `mutation { updateUser(input: { id: "${clientUser.id}", userPatch: { role: viewer } }) { user { role } } }`;
  t.is(
    (await w.gql('admin', demote)).json.errors?.[0]?.extensions?.code,
    '/problems/role-not-allowed',
  );
  await t.throwsAsync(
    w.owner.query(
      `select weld_private.set_user_password(u.tenant_id, u.user_name, 'x') from weld_public.users u where u.user_name = $1`,
      [client.clientId],
    ),
    { message: /is an OAuth2 client: it has a secret, not a password/ },
  );
});

test("wrong secrets are counted per client and address: another address's integration is not locked out", async (t) => {
  const w = await world(t);
  const client = await registered(w, ['welds:read']);
  const begin = async (address: string) => {
    await w.owner.query('begin');
    try {
      await w.owner.query("select set_config('jwt.claims.tenant_id', $1, true)", [w.tenantA]);
      const { rows } = await w.owner.query<{ retry_after: number | null }>(
        'select retry_after from weld_hidden.oauth_token_begin($1, $2)',
        [client.clientId, address],
      );
      await w.owner.query('commit');
      return rows[0]?.retry_after ?? null;
    } catch (error) {
      await w.owner.query('rollback');
      throw error;
    }
  };
  const attacker = [];
  for (let i = 0; i < 8; i++) attacker.push(await begin('203.0.113.9'));
  t.true(
    attacker.some((r) => r !== null),
    'the guessing address is throttled',
  );
  t.is(await begin('198.51.100.7'), null, "the integration's address is not");
});
