// OAuth2 scopes (F18), held by the database: a token that carries scopes may do only what one of
// them allows, over REST and GraphQL alike, whatever its role; a person's token (no scope) is held
// by its role alone, as before. Tokens here are signed with the tenant's own key, as the token
// endpoint signs a client's, each with the admin role so that only the scope can refuse.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { OAUTH_SCOPES, type OauthScope } from '../../db/vocabulary.ts';
import { issueAccessToken } from '../../rest-adapter/http/auth/access-tokens.ts';
import { bearerClient, request, type HttpResponse } from '../helpers/http.ts';
import { serviceDocument } from '../helpers/service-document.ts';
import { A, ok, world, type World } from '../helpers/rules-http.ts';

async function clientToken(w: World, scope: string, claims: Record<string, string> = {}) {
  return issueAccessToken(
    w.ring,
    `http://${A}`,
    {
      userId: w.userIds.admin,
      tenantId: w.tenantA,
      role: 'admin',
      sessionId: randomUUID(),
      clientId: 'test-client',
      scope,
      ...claims,
    },
    600,
  );
}

/** The project an area's calls work on: an ISO with a weld, a package, an event, a report row. */
async function project(w: World) {
  const iso = await w.make.iso('ISO-1', 'L-1');
  const weld = await w.make.weld({ isoId: iso.id, weldNumber: 'W-1' });
  const pkg = await w.make.testPackage('TP-1');
  return { iso, weld, pkg };
}

type Client = ReturnType<typeof bearerClient>;
/** A call as the client `c`; `person` (the tenant's admin) reads what the call needs first. */
type Call = (
  c: Client,
  p: Awaited<ReturnType<typeof project>>,
  n: number,
  person: Client,
) => Promise<HttpResponse>;

/** One call per area, each allowed by exactly the scopes listed (and by no scope at all). */
const CALLS: Array<{
  name: string;
  allowed: OauthScope[];
  call: Call;
  status: number;
  /** What the OpenAPI document says, where it asks more than this call needs. */
  documented?: string[][];
}> = [
  {
    name: 'GET /welds',
    allowed: ['welds:read', 'welds:write', 'ndt:write', 'packages:write', 'imports:write'],
    call: (c) => c.get('/welds'),
    status: 200,
  },
  {
    name: 'POST /isos',
    allowed: ['welds:write'],
    call: (c, _p, n) => c.post('/isos', { isoNumber: `ISO-N${n}`, lineNumber: 'L-9' }),
    status: 201,
  },
  {
    name: 'PATCH /welds/{id}/status',
    allowed: ['welds:write'],
    call: async (c, p, n, person) => {
      const weld = ok(
        await person.post('/welds', {
          isoId: p.iso.id,
          weldNumber: `W-S${n}`,
          type: 'BW',
          size: 2,
        }),
        201,
      );
      return c.patch(`/welds/${weld.id}/status`, {
        status: 'ACCEPTED',
        disposition: 'scope test',
      });
    },
    status: 200,
  },
  {
    name: 'POST /ndt-records',
    allowed: ['ndt:write'],
    call: (c, p, n) =>
      c.post('/ndt-records', {
        method: 'UT',
        reportNumber: `UT-${n}`,
        examinedOn: '2026-04-01',
        welds: [{ weldId: p.weld.id, result: 'accepted' }],
      }),
    status: 201,
  },
  {
    name: 'PATCH /test-packages/{id}',
    allowed: ['packages:write'],
    call: async (c, p, _n, person) => {
      const current = ok(await person.get(`/test-packages/${p.pkg.id}`));
      return c.patch(
        `/test-packages/${p.pkg.id}`,
        { testPressurePsig: 100 + current.version },
        { 'if-match': `"${current.version}"` },
      );
    },
    status: 200,
  },
  {
    name: 'POST /imports/welds?dryRun=true',
    allowed: ['imports:write'],
    call: (c) =>
      c.post(
        '/imports/welds?dryRun=true',
        'isoNumber,lineNumber,weldNumber,type,size\nISO-1,L-1,W-9,BW,2\n',
        {
          'content-type': 'text/csv',
        },
      ),
    status: 200,
    // (a dry run writes nothing; a real import writes welds, as the document says)
    documented: [['imports:write', 'welds:write']],
  },
  { name: 'GET /events', allowed: ['events:read'], call: (c) => c.get('/events'), status: 200 },
  {
    name: 'GET /webhooks',
    allowed: ['webhooks:write'],
    call: (c) => c.get('/webhooks'),
    status: 200,
  },
  {
    name: 'GET /reports/weld-progress',
    allowed: ['reports:read'],
    call: (c) => c.get('/reports/weld-progress'),
    status: 200,
  },
];

test('a token of each scope is allowed exactly its area over REST; other areas are 403 insufficient_scope', async (t) => {
  const w = await world(t);
  const p = await project(w);
  let n = 0;
  for (const scope of OAUTH_SCOPES) {
    const c = bearerClient(w.port, A, await clientToken(w, scope));
    for (const { name, allowed, call, status } of CALLS) {
      const res = await call(c, p, ++n, w.a.admin);
      if (allowed.includes(scope)) {
        t.is(res.status, status, `${scope} ${name}: ${res.text}`);
      } else {
        t.is(res.status, 403, `${scope} ${name}: ${res.text}`);
        t.is(res.json.type, '/problems/insufficient-scope', `${scope} ${name}`);
        t.true(allowed.includes(res.json.scope), `${scope} ${name}: names ${res.json.scope}`);
        t.is(
          res.headers['www-authenticate'],
          `Bearer realm="weld-data-service", error="insufficient_scope", scope="${res.json.scope}"`,
        );
      }
    }
  }
  // Several scopes add up; a person's token (no scope) is held by its role alone, as before.
  const both = bearerClient(w.port, A, await clientToken(w, 'welds:read events:read'));
  t.is((await both.get('/welds')).status, 200);
  t.is((await both.get('/events')).status, 200);
  t.is((await both.post('/isos', { isoNumber: 'X', lineNumber: 'L' })).status, 403);
  for (const { name, call, status } of CALLS) {
    t.is((await call(w.a.admin, p, ++n, w.a.admin)).status, status, `a person: ${name}`);
  }
});

test('an empty area is refused too, and a write of an area needs its scope even where it finds no row', async (t) => {
  const w = await world(t);
  const c = bearerClient(w.port, A, await clientToken(w, 'welds:read'));
  // No webhook, no event, no such ISO: the scope is checked before any row is looked at.
  t.is((await c.get('/webhooks')).status, 403);
  t.is((await c.get('/events')).status, 403);
  t.is((await c.del(`/isos/${randomUUID()}`, { 'if-match': '"1"' })).status, 403);
  t.is((await c.get(`/isos/${randomUUID()}`)).status, 404, 'a read of its area is a plain 404');
});

test('GraphQL holds a client to its scopes as REST does', async (t) => {
  const w = await world(t);
  await project(w);
  const gql = async (scope: string, query: string) =>
    request(w.port, {
      method: 'POST',
      path: '/graphql',
      host: A,
      body: { query },
      headers: { authorization: `Bearer ${await clientToken(w, scope)}` },
    });
  const read = '{ allWelds(first: 5) { nodes { weldNumber } } }';
  const write =
    'mutation { createIso(input: { iso: { isoNumber: "G-1", lineNumber: "L-G" } }) { iso { isoNumber } } }';
  const reports = '{ allWeldReportsWeldProgresses(first: 5) { nodes { isoNumber } } }';

  // Every scope over a GraphQL read of the data: allowed exactly for the scopes that read it.
  const reads = CALLS.find((c) => c.name === 'GET /welds')!.allowed;
  for (const scope of OAUTH_SCOPES) {
    const res = await gql(scope, read);
    if (reads.includes(scope)) t.is(res.json.data?.allWelds?.nodes.length, 1, scope);
    else t.is(res.json.errors?.[0]?.extensions.code, '/problems/insufficient-scope', scope);
  }
  const allowed = await gql('welds:read', read);
  t.deepEqual(allowed.json.data.allWelds.nodes, [{ weldNumber: 'W-1' }]);
  const refused = await gql('events:read', read);
  t.is(refused.json.errors[0].extensions.code, '/problems/insufficient-scope');
  t.is(refused.json.data?.allWelds ?? null, null);

  const written = await gql('welds:write', write);
  t.is(written.json.data.createIso.iso.isoNumber, 'G-1', JSON.stringify(written.json));
  const notWritten = await gql('welds:read', write);
  t.is(notWritten.json.errors[0].extensions.code, '/problems/insufficient-scope');

  t.true(
    Array.isArray(
      (await gql('reports:read', reports)).json.data.allWeldReportsWeldProgresses.nodes,
    ),
  );
  const noReports = await gql('welds:read', reports);
  t.is(noReports.json.errors[0].extensions.code, '/problems/insufficient-scope');
});

test('a token naming an unknown scope, or a client without scopes, is refused as invalid (401)', async (t) => {
  const w = await world(t);
  for (const scope of ['admin:all', '', 'welds:read  events:read', 'WELDS:READ']) {
    const c = bearerClient(w.port, A, await clientToken(w, scope));
    const res = await c.get('/welds');
    t.is(res.status, 401, JSON.stringify(scope));
    t.regex(String(res.headers['www-authenticate']), /error="invalid_token"/);
  }
});

test('the OpenAPI document names the scopes that allow each area, as the database holds them', (t) => {
  const document = serviceDocument() as {
    paths: Record<string, Record<string, { security?: Array<Record<string, string[]>> }>>;
    components: {
      securitySchemes: { oauth2: { flows: { clientCredentials: { scopes: object } } } };
    };
  };
  t.deepEqual(
    Object.keys(document.components.securitySchemes.oauth2.flows.clientCredentials.scopes),
    [...OAUTH_SCOPES],
  );
  for (const { name, allowed, documented } of CALLS) {
    const [method, target] = name.split(' ') as [string, string];
    const template = target.split('?')[0]!;
    const security = document.paths[template]![method.toLowerCase()]!.security!;
    const alternatives = security.filter((s) => 'oauth2' in s).map((s) => s.oauth2);
    t.deepEqual(alternatives, documented ?? allowed.map((scope) => [scope]), name);
    t.deepEqual(security.slice(0, 2), [{ bearer: [] }, { cookie: [] }], `${name}: persons too`);
  }
  // Registering an endpoint also needs events:read (it receives events); testing one does not.
  const hooks = document.paths['/webhooks']!.post!.security!.filter((s) => 'oauth2' in s);
  t.deepEqual(hooks, [{ oauth2: ['webhooks:write', 'events:read'] }]);
  // Managing clients is a person's: no scope allows it.
  const clients = document.paths['/oauth-clients']!.post!.security;
  t.true(clients === undefined || !clients.some((s) => 'oauth2' in s));
});

test('no scope writes the rules or settings, or reads users, beyond the data scopes', async (t) => {
  const w = await world(t);
  await project(w);
  const gql = async (scope: string, query: string) =>
    request(w.port, {
      method: 'POST',
      path: '/graphql',
      host: A,
      body: { query },
      headers: { authorization: `Bearer ${await clientToken(w, scope)}` },
    });
  // (An admin-role token: only the scope can refuse.) The transition rules every weld is judged by.
  const rules = await w.gql('admin', '{ allWeldTransitionRules(first: 1) { nodes { id } } }');
  const rule = rules.json.data.allWeldTransitionRules.nodes[0].id as string;
  const loosen = `mutation { updateWeldTransitionRule(input: { id: "${rule}", weldTransitionRulePatch: { reasonRequired: false } }) { weldTransitionRule { id } } }`;
  const refused = await gql('welds:write', loosen);
  t.is(refused.json.errors?.[0]?.extensions?.code, '/problems/role-not-allowed', refused.text);
  t.truthy(
    (await w.gql('admin', loosen)).json.data?.updateWeldTransitionRule,
    'a person admin may',
  );
  // Users: read with a data scope (histories name them), not with events:read alone.
  const users = '{ allUsers(first: 5) { nodes { userName } } }';
  t.true((await gql('welds:read', users)).json.data.allUsers.nodes.length > 0);
  t.is(
    (await gql('events:read', users)).json.errors?.[0]?.extensions?.code,
    '/problems/insufficient-scope',
  );
});
