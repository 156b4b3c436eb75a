// Part of the REST contract fuzzer (helpers/fuzz.ts, which describes it and re-exports what its
// users need): the world, two tenants and a seeded project, the tokens and what
// the fuzzer draws from, and the fingerprint of the rows that a refused write must not change.
import type { ExecutionContext } from 'ava';
import type pg from 'pg';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addUser } from '../../db/users.ts';
import { addRoleUsers, cookieHeader, login, PASSWORD, setCookies } from './auth.ts';
import { migratedDatabase, type Teardown } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { request } from './http.ts';
import { startServer } from './server.ts';
import { operations } from './fuzz-operations.ts';

//------------------------------------------------------------------------------------------------
// The world: two tenants, a seeded project, tokens, and what the fuzzer draws from

export const ROLES = ['admin', 'engineer', 'inspector', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export interface FuzzWorld {
  port: number;
  /** Tenant A's origin (the one fuzzed) and tenant B's. */
  host: string;
  otherHost: string;
  /** Access tokens of tenant A, one per role, and of tenant B's engineer. */
  tokens: Record<Role, string>;
  foreignToken: string;
  /** A cookie session of A's engineer: svc_at and svc_csrf (its svc_rt is kept from the fuzzer). */
  cookie: { header: string; csrf: string };
  /** Sessions the fuzzer may refresh, reuse and end: their refresh tokens and cookies. */
  spare: Array<{ refreshToken: string; cookie: string; csrf: string }>;
  /** Ids of tenant A by collection (isos, welds, ...), kept up to date as the fuzzer writes. */
  pools: Map<string, string[]>;
  /** Ids of tenant B: real rows the caller may not see. */
  foreign: string[];
  /** String values of A's items by field name (lineNumber, status, ...): filters that match. */
  values: Map<string, string[]>;
  /** Every table's row count and a hash of its rows, by table. */
  fingerprint(): Promise<Map<string, string>>;
}

export const HOST = 'fuzz.test';
export const OTHER_HOST = 'other.fuzz.test';
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Auth bookkeeping a refused request changes by design: a failed login is counted before the
 * password is checked, and a reused refresh token ends its session although the answer is 401.
 */
export const WRITTEN_WHEN_REFUSED = new Set([
  'weld_private.login_throttle',
  'weld_private.sessions',
  'weld_private.refresh_tokens',
]);

/**
 * One statement over every other table of the service's schemas (as the owner, past row
 * security): per table, its row count and the sum of a 64-bit hash of each row's text, which
 * any insert, update or delete changes.
 */
export async function fingerprintSql(owner: pg.Client): Promise<string> {
  const { rows } = await owner.query<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p') and n.nspname in ('weld_public', 'weld_hidden', 'weld_private')
      order by 1`,
  );
  return rows
    .filter((r) => !WRITTEN_WHEN_REFUSED.has(r.name))
    .map(
      (r) =>
        `select '${r.name}' as name, count(*) || ':' ||
                coalesce(sum(hashtextextended(t::text, 0)::numeric), 0) as print
           from ${r.name} t`,
    )
    .join('\nunion all\n');
}

/** The items of a collection's first page (500), read with the token given. */
export async function items(port: number, host: string, token: string, path: string) {
  const res = await request(port, {
    path: `${path}?limit=500`,
    host,
    headers: { authorization: `Bearer ${token}` },
  });
  return (res.status === 200 && Array.isArray(res.json?.items) ? res.json.items : []) as Array<
    Record<string, unknown>
  >;
}

/**
 * Tenant A ("fuzz": a seeded project, a user per role, a webhook, an import, examination
 * selections) and tenant B ("other": a smaller project and an engineer), the server in this
 * process, and what the fuzzer draws from. Lives as long as `t`.
 */
export async function fuzzWorld(t: Teardown): Promise<FuzzWorld> {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'fuzz', origins: [`http://${HOST}`] });
  await addTenant(owner, { slug: 'other', origins: [`http://${OTHER_HOST}`] });
  await addRoleUsers(owner, 'fuzz');
  await addUser(owner, {
    tenant: 'other',
    userName: 'engineer',
    role: 'engineer',
    password: PASSWORD,
  });
  await owner.query('begin');
  await seedTenant(owner, 'fuzz', { isos: 8, weldsPerIso: 6, seed: 1 });
  await seedTenant(owner, 'other', { isos: 1, weldsPerIso: 4, seed: 1 });
  await owner.query('commit');

  // Tokens for an hour: a long run (FUZZ_RUNS=20000) takes minutes and must not end in 401s.
  const { port } = await startServer(t as unknown as ExecutionContext, target, {
    accessTokenTtl: 3600,
  });
  const signIn = async (host: string, role: Role) => {
    const res = await login(port, host, role);
    if (res.status !== 200) throw new Error(`login ${role}@${host}: ${res.status} ${res.text}`);
    return res;
  };
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await signIn(HOST, role)).json.accessToken as string;
  // Tenant B signs with a copy of A's key, so that its tokens are refused by their claims
  // (issuer, audience, tenant) rather than by a key A has not read, which makes a request wait
  // for a reread of the keys (up to 5 s, on purpose: rest-adapter/http/auth/keys.ts) and the run crawl.
  await owner.query(
    `insert into weld_private.signing_keys (tenant_id, kid, private_jwk, public_jwk)
     select (select id from weld_public.tenants where slug = 'other'), kid, private_jwk, public_jwk
       from weld_private.signing_keys
      where tenant_id = (select id from weld_public.tenants where slug = 'fuzz')`,
  );
  const foreignToken = (await signIn(OTHER_HOST, 'engineer')).json.accessToken as string;
  const session = await signIn(HOST, 'engineer');
  const cookie = {
    header: cookieHeader(session, ['svc_at', 'svc_csrf']),
    csrf: setCookies(session).svc_csrf!.value!,
  };
  const spare = [];
  for (const role of ['inspector', 'viewer', 'engineer'] as const) {
    const res = await signIn(HOST, role);
    spare.push({
      refreshToken: res.json.refreshToken as string,
      cookie: cookieHeader(res),
      csrf: setCookies(res).svc_csrf!.value!,
    });
  }

  // What a seed does not make: a punch item and an attachment, a webhook (to a closed port on loopback: a test message fails,
  // after the webhook timeout as every failure does), an import, examination selections, a PWHT
  // record, a hardness reading, a component and a filler lot used on a weld, an OAuth2 client.
  const as = (role: Role, path: string, body: unknown, type = 'application/json') =>
    request(port, {
      method: 'POST',
      path,
      host: HOST,
      body,
      headers: { authorization: `Bearer ${tokens[role]}`, 'content-type': type },
    });
  const credentials: string[] = [];
  const isos = await items(port, HOST, tokens.admin, '/isos');
  const welds = await items(port, HOST, tokens.admin, '/welds');
  for (const res of [
    await as('admin', '/webhooks', { url: 'http://127.0.0.1:9/hook' }),
    await as(
      'engineer',
      '/imports/welds',
      'isoNumber,lineNumber,weldNumber,type,size\nFUZZ-ISO-1,FUZZ-L-1,FW-1,BW,4\n',
      'text/csv',
    ),
    await as('inspector', '/examination-selections/draw', { method: 'RT', isoId: isos[0]!.id }),
    await as('inspector', '/pwht-records', {
      recordNumber: 'FUZZ-PW-1',
      treatedOn: '2026-03-10',
      holdingTemperatureF: 1150,
      holdMinutes: 60,
      weldIds: [welds[0]!.id],
    }),
    await as('engineer', '/filler-lots', {
      awsClassification: 'E7018',
      lotNumber: 'FUZZ-LOT-1',
      fNumber: 4,
    }).then(async (lot) =>
      lot.status === 201
        ? as('inspector', '/weld-fillers', {
            weldId: welds[0]!.id,
            process: 'SMAW',
            fillerLotId: lot.json.id,
          })
        : lot,
    ),
    await as('engineer', '/components', {
      tag: 'FUZZ-C-1',
      kind: 'pipe',
      materialSpec: 'A106',
      heatNumber: 'FUZZ-HEAT-1',
    }),
    await as('admin', '/oauth-clients', { name: 'Fuzz client', scopes: ['welds:read'] }).then(
      (client) => {
        // Its credentials, for the token and revocation endpoints' forms.
        if (client.status === 201) credentials.push(client.json.clientId, client.json.clientSecret);
        return client;
      },
    ),
    await as('inspector', '/hardness-readings', {
      weldId: welds[0]!.id,
      measuredOn: '2026-03-12',
      hardnessHb: 180,
    }),
    await as('inspector', '/punch-items', {
      testPackageId: (await items(port, HOST, tokens.admin, '/test-packages'))[0]!.id,
      category: 'B',
      description: 'Fuzz punch item',
    }),
    await multipart({ isoId: String(isos[0]!.id) }, 'drawing.pdf', '%PDF-1.4\n%%EOF\n').then(
      ({ body, type }) => as('inspector', '/attachments', body, type),
    ),
  ]) {
    if (res.status >= 300) throw new Error(`fuzz world: ${res.status} ${res.text}`);
  }

  // Every collection (a GET without parameters that answers {items}) gives ids and values.
  const pools = new Map<string, string[]>();
  const values = new Map<string, string[]>();
  const foreign: string[] = [];
  for (const o of operations()) {
    if (o.method !== 'GET' || o.template.includes('{')) continue;
    const mine = await items(port, HOST, tokens.admin, o.template);
    // (An OAuth2 client is named by its clientId.)
    const ids = mine.map((item) => String(item.id ?? item.clientId));
    if (ids.length) pools.set(o.pool, ids);
    for (const [key, value] of mine.flatMap((item) => Object.entries(item))) {
      if (typeof value !== 'string' || UUID.test(value) || key.endsWith('At')) continue;
      const known = values.get(key) ?? [];
      if (!known.includes(value) && known.length < 20) values.set(key, [...known, value]);
    }
    const theirs = await items(port, OTHER_HOST, foreignToken, o.template);
    foreign.push(...theirs.map((item) => String(item.id)).filter((id) => UUID.test(id)));
  }

  values.set('client_id', [credentials[0]!]);
  values.set('client_secret', [credentials[1]!]);
  values.set('scope', ['welds:read']);

  const sql = await fingerprintSql(owner);
  const fingerprint = async () => {
    // What has committed placed first, as the server's relay would at any moment.
    await owner.query('select weld_hidden.place_events()');
    const { rows } = await owner.query<{ name: string; print: string }>(sql);
    return new Map(rows.map((r) => [r.name, r.print]));
  };
  return {
    port,
    host: HOST,
    otherHost: OTHER_HOST,
    tokens,
    foreignToken,
    cookie,
    spare,
    pools,
    foreign,
    values,
    fingerprint,
  };
}

/** A multipart/form-data body of the fields and one file, as a browser's form sends it. */
async function multipart(fields: Record<string, string>, fileName: string, content: string) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([content]), fileName);
  const encoded = new Response(form);
  return {
    body: Buffer.from(await encoded.arrayBuffer()),
    type: encoded.headers.get('content-type')!,
  };
}
