// Property-based fuzzing of the REST contract (issue F10): requests to every operation of the
// OpenAPI document, read from openapiDocument() (paths x methods), so a new operation is fuzzed
// without a line here. Each request mixes valid parts (a real token of the tenant, ids of real
// rows, a body that follows the operation's schema) with hostile ones (missing, garbage, tampered
// and foreign tokens; garbage, huge and duplicated cookies; If-Match, Content-Type and
// Idempotency-Key of every wrong kind; bodies with wrong types, huge strings, deep nesting, NUL
// characters, bytes that are no UTF-8, numbers out of range, extra properties, arrays instead of
// objects), and every answer is checked:
//
//   1. no 5xx (a documented 503 would be allowed; none is expected on a healthy database)
//   2. every 4xx is application/problem+json with type, title, status (= the HTTP status) and
//      detail (POST /graphql may answer what GraphQL refuses in GraphQL's own media types)
//   3. the answer matches the OpenAPI document (helpers/openapi.ts)
//   4. a refused write (POST, PUT, PATCH, DELETE answered other than 2xx) changed nothing: the
//      row count and a hash of the rows of every table are the same after it as before
//
// A request is first a plan, the value fast-check generates, shrinks and prints: ids are indexes
// into pools that follow what the fuzzer creates and deletes (IdRef), huge strings are their
// length (Huge), and only `materialize` makes the bytes that are sent.
//
// Requests stay within what node's HTTP parser takes (16 KiB of request line and headers):
// beyond, node itself answers 431 with no body, before the service sees the request.
import { randomInt } from 'node:crypto';
import http from 'node:http';
import type { ExecutionContext } from 'ava';
import * as fc from 'fast-check';
import type pg from 'pg';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addUser } from '../../db/users.ts';
import { openapiDocument } from '../../rest-adapter/openapi.ts';
import { addRoleUsers, cookieHeader, login, PASSWORD, setCookies } from './auth.ts';
import { migratedDatabase, type Teardown } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { request, type HttpResponse } from './http.ts';
import { assertMatchesContract } from './openapi.ts';
import { startServer } from './server.ts';

//------------------------------------------------------------------------------------------------
// Settings

export interface FuzzSettings {
  /** fast-check's seed: FUZZ_SEED (a number, or `random`), DEFAULT_SEED unless told. */
  seed: number;
  /** Requests in all, shared among the operations: FUZZ_RUNS, DEFAULT_RUNS unless told. */
  runs: number;
  /** FUZZ_PATH: replays one counterexample (with its seed), as a failure prints it. */
  path: string | undefined;
  /** FUZZ_TIMEOUT_MS: a request not answered within this fails (default 10 s). */
  timeoutMs: number;
  /** FUZZ_SHRINK_SECONDS: how long a failure is shrunk before it is reported (default 20). */
  shrinkMs: number;
}

export const DEFAULT_SEED = 20260301;
export const DEFAULT_RUNS = 2000;

export function fuzzSettings(env: NodeJS.ProcessEnv = process.env): FuzzSettings {
  const number = (name: string, fallback: number) => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new Error(`${name} must be a whole number, not ${JSON.stringify(text)}`);
    }
    return value;
  };
  return {
    seed: env.FUZZ_SEED === 'random' ? randomInt(2 ** 31) : number('FUZZ_SEED', DEFAULT_SEED),
    runs: number('FUZZ_RUNS', DEFAULT_RUNS),
    path: env.FUZZ_PATH || undefined,
    timeoutMs: number('FUZZ_TIMEOUT_MS', 10_000),
    shrinkMs: number('FUZZ_SHRINK_SECONDS', 20) * 1000,
  };
}

//------------------------------------------------------------------------------------------------
// The operations, from the OpenAPI document

/** The parts of JSON Schema the document's request schemas use. */
interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema: Schema;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Operation {
  method: Method;
  /** The path template, e.g. /welds/{id}/status. */
  template: string;
  /** '' for every operation, '/api' too for the data paths (auth, health, GraphQL: root only). */
  prefixes: string[];
  parameters: Parameter[];
  /** The documented body: its media type and schema (the CSV body has an example). */
  body?: { type: string; schema: Schema; example?: string };
  /** The pool {id} is drawn from: the path's first segment (welds for /welds/{id}/status). */
  pool: string;
}

const doc = openapiDocument() as unknown as {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, Schema> };
};

const METHODS: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const UNSAFE = new Set<Method>(['POST', 'PUT', 'PATCH', 'DELETE']);

export const describeOperation = (o: Operation) => `${o.method} ${o.template}`;

/** Every operation of the document, in its order. */
export function operations(): Operation[] {
  return Object.entries(doc.paths).flatMap(([template, item]) =>
    METHODS.filter((m) => item[m.toLowerCase()]).map((method) => {
      const op = item[method.toLowerCase()] as {
        parameters?: Parameter[];
        requestBody?: { content: Record<string, { schema: Schema; example?: string }> };
      };
      const [type, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
      const operation: Operation = {
        method,
        template,
        prefixes: item.servers ? [''] : ['', '/api'],
        parameters: op.parameters ?? [],
        ...(type && media && { body: { type, schema: media.schema, example: media.example } }),
        pool: template.split('/')[1]!,
      };
      // fast-check prints plans: an operation as its method and path, not its schemas.
      Object.defineProperty(operation, fc.toStringMethod, {
        value: () => describeOperation(operation),
      });
      return operation;
    }),
  );
}

/** The operations grouped by the first segment of their path: one test each. */
export function operationGroups(): Array<{ name: string; operations: Operation[] }> {
  const groups = new Map<string, Operation[]>();
  for (const o of operations()) groups.set(`/${o.pool}`, [...(groups.get(`/${o.pool}`) ?? []), o]);
  return [...groups].map(([name, list]) => ({ name, operations: list }));
}

function resolve(schema: Schema): Schema {
  const name = schema.$ref?.replace('#/components/schemas/', '');
  return name ? resolve(doc.components.schemas[name]!) : schema;
}

//------------------------------------------------------------------------------------------------
// The world: two tenants, a seeded project, tokens, and what the fuzzer draws from

const ROLES = ['admin', 'engineer', 'inspector', 'viewer'] as const;
type Role = (typeof ROLES)[number];

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

const HOST = 'fuzz.test';
const OTHER_HOST = 'other.fuzz.test';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Auth bookkeeping a refused request changes by design: a failed login is counted before the
 * password is checked, and a reused refresh token ends its session although the answer is 401.
 */
const WRITTEN_WHEN_REFUSED = new Set([
  'weld_private.login_throttle',
  'weld_private.sessions',
  'weld_private.refresh_tokens',
]);

/**
 * One statement over every other table of the service's schemas (as the owner, past row
 * security): per table, its row count and the sum of a 64-bit hash of each row's text, which
 * any insert, update or delete changes.
 */
async function fingerprintSql(owner: pg.Client): Promise<string> {
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
async function items(port: number, host: string, token: string, path: string) {
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
  // for a reread of the keys (up to 5 s, on purpose: server/auth/keys.ts) and the run crawl.
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

  // What a seed does not make: a webhook (to a closed port on loopback: a test message fails,
  // after the webhook timeout as every failure does), an import, examination selections.
  const as = (role: Role, path: string, body: unknown, type = 'application/json') =>
    request(port, {
      method: 'POST',
      path,
      host: HOST,
      body,
      headers: { authorization: `Bearer ${tokens[role]}`, 'content-type': type },
    });
  const isos = await items(port, HOST, tokens.admin, '/isos');
  for (const res of [
    await as('admin', '/webhooks', { url: 'http://127.0.0.1:9/hook' }),
    await as(
      'engineer',
      '/imports/welds',
      'isoNumber,lineNumber,weldNumber,type,size\nFUZZ-ISO-1,FUZZ-L-1,FW-1,BW,4\n',
      'text/csv',
    ),
    await as('inspector', '/examination-selections/draw', { method: 'RT', isoId: isos[0]!.id }),
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
    const ids = mine.map((item) => String(item.id));
    if (ids.length) pools.set(o.pool, ids);
    for (const [key, value] of mine.flatMap((item) => Object.entries(item))) {
      if (typeof value !== 'string' || UUID.test(value) || key.endsWith('At')) continue;
      const known = values.get(key) ?? [];
      if (!known.includes(value) && known.length < 20) values.set(key, [...known, value]);
    }
    const theirs = await items(port, OTHER_HOST, foreignToken, o.template);
    foreign.push(...theirs.map((item) => String(item.id)).filter((id) => UUID.test(id)));
  }

  const sql = await fingerprintSql(owner);
  const fingerprint = async () => {
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

//------------------------------------------------------------------------------------------------
// Plans: what fast-check generates

/** A real id, drawn when the request is sent: the n-th of a pool (modulo its size). */
class IdRef {
  readonly pool: string;
  readonly n: number;
  /** upper: the same id in upper case; foreign: a row of tenant B. */
  readonly form: 'as-is' | 'upper' | 'foreign';
  constructor(pool: string, n: number, form: IdRef['form'] = 'as-is') {
    this.pool = pool;
    this.n = n;
    this.form = form;
  }
  [fc.toStringMethod](): string {
    const pool = this.form === 'foreign' ? 'foreign' : this.pool;
    return `id(${pool}#${this.n}${this.form === 'upper' ? ', upper case' : ''})`;
  }
}

/** A string too long to print: `unit` repeated `length` times. */
class Huge {
  readonly unit: string;
  readonly length: number;
  constructor(unit: string, length: number) {
    this.unit = unit;
    this.length = length;
  }
  [fc.toStringMethod](): string {
    return `huge(${JSON.stringify(this.unit)} x ${this.length})`;
  }
}

/** JSON text put into a body as it is: 1e999, -0, nesting thousands of levels deep. */
class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  [fc.toStringMethod](): string {
    const t = this.text;
    return `raw(${t.length > 40 ? `${t.slice(0, 20)}... ${t.length} chars` : t})`;
  }
}

type Text = string | Huge | IdRef;

type AuthPlan =
  | { kind: 'bearer'; role: Role }
  | { kind: 'cookie'; csrf: 'valid' | 'missing' | 'wrong' | 'cross-site' | 'other-origin' }
  | { kind: 'none' }
  | { kind: 'foreign' }
  | { kind: 'tampered'; how: 'signature' | 'payload' | 'alg-none' | 'truncated' | 'extra-part' }
  | { kind: 'garbage'; authorization: Text }
  | { kind: 'bad-cookie'; cookie: Text | Text[]; bearer: boolean };

type BodyPlan =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  /** The JSON with bytes that are no UTF-8 put into its first string. */
  | { kind: 'json-bad-utf8'; value: unknown; bytes: number[] }
  | { kind: 'text'; text: Text }
  | { kind: 'bytes'; bytes: number[] };

export interface RequestPlan {
  operation: Operation;
  prefix: string;
  host: 'tenant' | 'unknown' | 'other-tenant';
  auth: AuthPlan;
  id: Text | undefined;
  query: Array<[string, Text]>;
  headers: Array<[string, Text]>;
  /** Undefined: no Content-Type. */
  contentType: string | undefined;
  body: BodyPlan;
  /** Transfer-Encoding: chunked rather than Content-Length. */
  chunked: boolean;
}

/** What the generators read from the world when they are built (for one group's run). */
interface Draw {
  poolNames: string[];
  values: Map<string, string[]>;
  refreshTokens: string[];
}

//------------------------------------------------------------------------------------------------
// Generators

/** Field names whose values must look a certain way to get past the first check. */
const EXAMPLES: Record<string, string[]> = {
  url: ['http://127.0.0.1:9/hook', 'https://127.0.0.1:9/x?y=1', 'http://[::1]:9/'],
  query: [
    '{ __typename }',
    'query { allWelds(first: 3) { nodes { rowId weldNumber status } } }',
    '{ allWelds { nodes { rowId } } }',
    'query ($n: Int) { allIsos(first: $n) { totalCount nodes { isoNumber } } }',
    'mutation { createWelder(input: {welder: {stamp: "GQL-1", name: "G"}}) { welder { rowId } } }',
  ],
  userName: [...ROLES, 'nobody'],
  password: [PASSWORD, 'wrong password'],
  reason: ['fuzz', 'a reason'],
};

/** Strings that parse as something other than what they look like, or as nothing at all. */
// prettier-ignore
const NASTY_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\uffff', '\u202e', '🔥', 'null', 'undefined', 'true',
  '0', '-0', '-1', '1e308', '1e999', 'NaN', 'Infinity', '0x10', '2026-02-30', '0000-01-01',
  '9999-12-31', '10000-01-01', '2026-13-01T25:61:00Z', '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', "'; select pg_sleep(10); --", '"', '\\', '%s%n', '${x}',
  '<script>', '../../etc/passwd', 'now', '9223372036854775808',
];

/** Nasty strings; huge ones up to `max` characters (a URL or header must stay within 16 KiB). */
const nastyText = (max: number): fc.Arbitrary<Text> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
    { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...[101, 256, 2_001, 10_001, 100_000].filter((n) => n <= max)),
          fc.constantFrom('x', '\u0000', 'é', '🔥'),
        )
        .map(([n, unit]) => new Huge(unit, n)),
    },
  );
const nastyString = nastyText(100_000);
const nastyShort = nastyText(256);

/** JSON values of the wrong kind for any field. */
const nastyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: nastyString },
  {
    weight: 3,
    // prettier-ignore
    arbitrary: fc.constantFrom<unknown>(
      null, true, false, 0, -0, -1, 0.5, 1e308, -1e308, 5e-324, 2 ** 31, 2 ** 53 + 2, -(2 ** 63),
      1e21, [], {}, [null], [[]], { '': null },
    ),
  },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('1e999', '-1e999', '-0', '1E400', '123456789012345678901234567890', '0e0')
      .map((text) => new RawJson(text)),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(50, 1_000, 20_000), fc.constantFrom('[', '{"a":'))
      .map(([depth, open]) => {
        const close = open === '[' ? ']' : '}';
        return new RawJson(`${open.repeat(depth)}0${close.repeat(depth)}`);
      }),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

/** `weldIds` -> welds, `ndtRecordId` -> ndt-records; any pool (`*`) when no collection fits. */
function poolOf(name: string, pools: string[]): string {
  const stem = name.replace(/Ids?$/, '');
  if (!stem || stem === name) return '*';
  const kebab = stem.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return [kebab, `${kebab}s`].find((p) => pools.includes(p)) ?? '*';
}

const calendarDay = fc
  .date({ min: new Date('1900-01-01'), max: new Date('2100-12-31'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));

/** Parameters whose valid values make the server wait (a long-poll): kept short. */
const SLOW_PARAMETERS: Record<string, number> = { wait: 1 };

/** Values a schema accepts (mostly: a unique key may be taken, an id may be of the wrong row). */
function valid(schema: Schema, name: string, world: Draw): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (s.anyOf) {
    // A nullable field is given a value more often than null: null passes more checks.
    return fc.oneof(
      ...s.anyOf.map((branch) => ({
        weight: resolve(branch).type === 'null' ? 1 : 3,
        arbitrary: valid(branch, name, world),
      })),
    );
  }
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...s.enum);
  switch (s.type) {
    case 'string':
      return validString(s, name, world);
    case 'integer': {
      const min = s.minimum ?? -(2 ** 31);
      const max = Math.min(s.maximum ?? 2 ** 31, SLOW_PARAMETERS[name] ?? Infinity);
      const common = fc.integer({
        min: Math.max(min, -(2 ** 31)),
        max: Math.min(max, 2 ** 31 - 1),
      });
      return fc.oneof({ weight: 4, arbitrary: common }, fc.constantFrom(min, max));
    }
    case 'number': {
      const excluded = s.exclusiveMinimum !== undefined;
      const min = s.exclusiveMinimum ?? s.minimum ?? -1e6;
      const max = s.maximum ?? 1e6;
      return fc.oneof(
        { weight: 3, arbitrary: fc.double({ min, max, noNaN: true, minExcluded: excluded }) },
        { weight: 2, arbitrary: fc.integer({ min: Math.floor(min) + 1, max: Math.floor(max) }) },
        fc.constantFrom(max, excluded ? max : min),
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = s.minItems ?? 0;
      const maxLength = Math.min(s.maxItems ?? 4, Math.max(minLength, 4));
      return fc.array(valid(s.items ?? {}, name, world), { minLength, maxLength });
    }
    case 'object':
      if (!s.properties) {
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
          maxKeys: 3,
        });
      }
      return fc.record(
        Object.fromEntries(
          Object.entries(s.properties).map(([key, p]) => [key, valid(p, key, world)]),
        ),
        { requiredKeys: s.required ?? [] },
      );
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function validString(s: Schema, name: string, world: Draw): fc.Arbitrary<unknown> {
  if (s.format === 'uuid') {
    const pool = poolOf(name, world.poolNames);
    return fc.oneof(
      { weight: 9, arbitrary: fc.nat().map((n) => new IdRef(pool, n)) },
      { weight: 1, arbitrary: fc.uuid() },
    );
  }
  let base: fc.Arbitrary<string>;
  if (s.format === 'date') {
    base = fc.oneof(calendarDay, fc.constantFrom('0001-01-01', '9999-12-31', '2024-02-29'));
  } else if (s.format === 'date-time') {
    base = fc.oneof(
      calendarDay.map((day) => `${day}T08:00:00Z`),
      calendarDay.map((day) => `${day}T23:59:59.999+05:30`),
    );
  } else if (s.pattern) {
    const max = s.maxLength ?? Infinity;
    base = fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length <= max);
  } else {
    const minLength = s.minLength ?? 0;
    base = fc.string({
      minLength,
      maxLength: Math.max(minLength, Math.min(s.maxLength ?? 30, 30)),
    });
  }
  const known = world.values.get(name) ?? world.values.get(name.replace(/s$/, '')) ?? [];
  const examples = EXAMPLES[name] ?? (name === 'refreshToken' ? world.refreshTokens : []);
  return fc.oneof(
    { weight: 3, arbitrary: base },
    ...(known.length ? [{ weight: 3, arbitrary: fc.constantFrom(...known) }] : []),
    ...(examples.length ? [{ weight: 4, arbitrary: fc.constantFrom(...examples) }] : []),
    // the longest value allowed
    ...(s.maxLength && !s.pattern ? [fc.constant(new Huge('x', s.maxLength))] : []),
  );
}

/** One change at a place in a JSON value (the `at`-th, modulo their number). */
interface Mutation {
  at: number;
  /** flood: thousands of array items, or of extra keys. */
  kind: 'replace' | 'delete' | 'add' | 'wrap' | 'repeat' | 'flood';
  key: string;
  value: unknown;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: fc.oneof(
    { weight: 3, arbitrary: fc.constant('replace' as const) },
    fc.constantFrom('delete', 'add', 'wrap', 'repeat', 'flood'),
  ),
  key: fc.oneof(
    fc.constantFrom('id', 'version', 'status', 'tenantId', '__proto__', 'constructor'),
    fc.string({ maxLength: 8 }),
  ),
  value: nastyJson,
});

/** An object as JSON has them (fast-check's records may have no prototype at all). */
const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  [Object.prototype, null].includes(Object.getPrototypeOf(value) as object | null);

/** Every place in a JSON value (a path of keys and indexes), the root first. */
function places(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  const inner = Array.isArray(value)
    ? value.flatMap((item, i) => places(item, [...path, i]))
    : isPlainObject(value)
      ? Object.entries(value).flatMap(([key, v]) => places(v, [...path, key]))
      : [];
  return [path, ...inner];
}

/** A copy with the key set; `__proto__` becomes a key like any other, as JSON.parse makes it. */
function withKey(object: Record<string, unknown>, key: string, value: unknown) {
  const copy = { ...object };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** The value with the mutation applied (a copy: plans are never changed in place). */
function mutate(value: unknown, m: Mutation): unknown {
  const all = places(value);
  const change = (node: unknown): unknown => {
    const list = Array.isArray(node) ? (node as unknown[]) : undefined;
    const object = isPlainObject(node) ? node : undefined;
    switch (m.kind) {
      case 'replace':
        return m.value;
      case 'delete':
        return node;
      case 'wrap':
        return [node];
      case 'repeat':
        return list?.length ? [...list, list[0]] : node;
      case 'add':
        return list ? [...list, m.value] : object ? withKey(object, m.key, m.value) : m.value;
      case 'flood':
        if (list) return Array<unknown>(5_001).fill(list[0] ?? m.value);
        if (!object) return m.value;
        return {
          ...object,
          ...Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${i}`, i])),
        };
    }
  };
  const at = (node: unknown, rest: Array<string | number>): unknown => {
    if (rest.length === 0) return change(node);
    const [head, ...tail] = rest;
    const remove = m.kind === 'delete' && tail.length === 0;
    if (Array.isArray(node)) {
      return remove
        ? node.filter((_, i) => i !== head)
        : node.map((item, i) => (i === head ? at(item, tail) : item));
    }
    const object = node as Record<string, unknown>;
    if (remove) return Object.fromEntries(Object.entries(object).filter(([k]) => k !== head));
    return withKey(object, String(head), at(object[String(head)], tail));
  };
  return at(value, all[m.at % all.length]!);
}

/** Whole bodies of the wrong kind. */
// prettier-ignore
const NASTY_BODIES = [
  '', ' ', '{', '{"a":}', "{'a': 1}", 'null', 'true', '0', '-0', '"text"', '[]', '[{}]', '{}',
  '\ufeff{}', '{"__proto__": {"isAdmin": true}}', '{"constructor": {"prototype": {"x": 1}}}',
  '{"a": 1, "a": 2}', 'NaN', '{"a": NaN}', '1e999', '{"a": 1}garbage', '{"a": "\\u0000"}',
  '{"a": "\\ud800"}', '{"a": "\u0001"}',
];
const nastyBody = fc
  .constantFrom(...NASTY_BODIES)
  .map((text): BodyPlan => ({ kind: 'text', text }));

/** Byte sequences that are no UTF-8 (overlong, surrogates, past U+10FFFF, cut short). */
// prettier-ignore
const BAD_UTF8 = [[0xff, 0xfe], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80], [0x00], [0xe2, 0x82]];

function bodyPlan(o: Operation, world: Draw): fc.Arbitrary<BodyPlan> {
  // A body where none belongs, now and then.
  if (!o.body) return fc.oneof({ weight: 19, arbitrary: fc.constant({ kind: 'none' }) }, nastyBody);
  if (!o.body.type.endsWith('json')) return csvBody(o.body.example ?? 'a\n1\n', world);
  const good = valid(o.body.schema, '', world);
  const json = (value: unknown): BodyPlan => ({ kind: 'json', value });
  return fc.oneof(
    { weight: 7, arbitrary: good.map(json) },
    {
      weight: 9,
      arbitrary: fc
        .tuple(good, fc.array(mutation, { minLength: 1, maxLength: 3 }))
        .map(([value, changes]) => json(changes.reduce(mutate, value))),
    },
    fc
      .tuple(good, fc.constantFrom(...BAD_UTF8))
      .map(([value, bytes]): BodyPlan => ({ kind: 'json-bad-utf8', value, bytes })),
    fc.array(good, { maxLength: 2 }).map(json),
    nastyBody,
    nastyJson.map(json),
    fc
      .oneof(fc.constantFrom(...BAD_UTF8), fc.array(fc.nat(255), { maxLength: 40 }))
      .map((bytes): BodyPlan => ({ kind: 'bytes', bytes })),
    fc.constant<BodyPlan>({ kind: 'none' }),
  );
}

/**
 * A CSV body with the columns of the documented example. A clean file has them all, in order,
 * with values that exist (ISO, line and weld numbers, stamps: an update or a new weld) or the
 * example's own; a dirty one has some of them in any order, an unknown one now and then, and
 * nasty values. Comma or semicolon, quoted where needed.
 */
function csvBody(example: string, world: Draw): fc.Arbitrary<BodyPlan> {
  const [head = '', row = ''] = example.split('\n');
  const columns = head.split(',').map((name, i) => ({ name, sample: row.split(',')[i] ?? '' }));
  const cell = (c: (typeof columns)[number], clean: boolean): fc.Arbitrary<string> => {
    // welderStamp: the welders' stamps, wpsRevision: the WPSs' revisions
    const lastWord = c.name.replace(/^.*[a-z](?=[A-Z])/, '').toLowerCase();
    const known = world.values.get(c.name) ?? world.values.get(lastWord) ?? [c.sample];
    return clean
      ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, fc.constant(c.sample))
      : fc.oneof(
          { weight: 3, arbitrary: fc.constantFrom(...known, c.sample) },
          { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
          fc.constantFrom('', ' ', '"', '=1+1', '-1', '1e308', 'NaN', '\u0000', 'x'.repeat(300)),
        );
  };
  const quote = (value: string, delimiter: string) =>
    /["\n\r]/.test(value) || value.includes(delimiter) ? `"${value.replaceAll('"', '""')}"` : value;
  const file = (clean: boolean) =>
    fc
      .tuple(
        clean ? fc.constant(columns) : fc.shuffledSubarray(columns, { minLength: 1 }),
        fc.constantFrom(...(clean ? [''] : ['', '', 'colour'])),
        fc.constantFrom(',', ';'),
        fc.nat(4),
      )
      .chain(([picked, extra, delimiter, rows]) => {
        const header = [...picked.map((c) => c.name), ...(extra ? [extra] : [])];
        const line = fc.tuple(...picked.map((c) => cell(c, clean)), fc.constant('red'));
        return fc
          .array(line, { minLength: rows, maxLength: rows })
          .map((lines) =>
            [header, ...lines.map((cells) => cells.slice(0, header.length))]
              .map((cells) => cells.map((v) => quote(v, delimiter)).join(delimiter))
              .join('\n'),
          )
          .map((text): BodyPlan => ({ kind: 'text', text: `${text}\n` }));
      });
  return fc.oneof(
    { weight: 4, arbitrary: file(true) },
    { weight: 4, arbitrary: file(false) },
    nastyBody,
    fc
      .constantFrom(...BAD_UTF8)
      .map((bytes): BodyPlan => ({ kind: 'bytes', bytes: [...Buffer.from(example), ...bytes] })),
    fc.constant<BodyPlan>({ kind: 'none' }),
  );
}

const authPlan: fc.Arbitrary<AuthPlan> = fc.oneof(
  { weight: 25, arbitrary: fc.constant<AuthPlan>({ kind: 'bearer', role: 'admin' }) },
  { weight: 20, arbitrary: fc.constant<AuthPlan>({ kind: 'bearer', role: 'engineer' }) },
  { weight: 12, arbitrary: fc.constant<AuthPlan>({ kind: 'bearer', role: 'inspector' }) },
  { weight: 6, arbitrary: fc.constant<AuthPlan>({ kind: 'bearer', role: 'viewer' }) },
  {
    weight: 10,
    arbitrary: fc
      .constantFrom('valid', 'valid', 'valid', 'missing', 'wrong', 'cross-site', 'other-origin')
      .map((csrf): AuthPlan => ({ kind: 'cookie', csrf })),
  },
  { weight: 4, arbitrary: fc.constant<AuthPlan>({ kind: 'none' }) },
  { weight: 3, arbitrary: fc.constant<AuthPlan>({ kind: 'foreign' }) },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom('signature', 'payload', 'alg-none', 'truncated', 'extra-part')
      .map((how): AuthPlan => ({ kind: 'tampered', how })),
  },
  {
    weight: 3,
    arbitrary: fc
      .oneof(
        fc.constantFrom<Text>(
          'Bearer',
          'Bearer ',
          'Basic dXNlcjpwYXNz',
          'Bearer x.y',
          'Bearer a b',
        ),
        nastyShort.map((v) => (typeof v === 'string' ? `Bearer ${v}` : v)),
      )
      .map((authorization): AuthPlan => ({ kind: 'garbage', authorization })),
  },
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.oneof(
          fc.constantFrom<Text | Text[]>(
            'svc_at=garbage',
            'svc_at=',
            '=; ;;=x; svc_at',
            'svc_at="quoted"; svc_csrf=%ZZ',
            'svc_at=a; svc_at=b; svc_at=c',
            ['svc_at=garbage', 'svc_csrf=garbage'],
          ),
          fc.constantFrom(500, 7_000).map((n): Text => new Huge('a', n)),
          nastyShort,
        ),
        fc.boolean(),
      )
      .map(([cookie, bearer]): AuthPlan => ({ kind: 'bad-cookie', cookie, bearer })),
  },
);

/** Values of the headers the operations document: ones the service takes, and ones it refuses. */
// prettier-ignore
const HEADER_VALUES: Record<string, { valid: Text[]; invalid: Text[] }> = {
  'If-Match': {
    valid: ['"1"', '"2"', '"3"', '*'],
    invalid: ['W/"1"', '"1", "2"', '"abc"', '"-1"', '"9999999999"', 'x', ''],
  },
  'If-None-Match': { valid: ['"1"', '"2"', '*', 'W/"1"', '"1", "2"'], invalid: ['garbage', ''] },
  'Idempotency-Key': {
    valid: ['fuzz-key-1', 'fuzz-key-2', 'fuzz-key-3', new Huge('k', 255)],
    invalid: ['', ' ', new Huge('k', 256), new Huge('k', 5000), 'ключ', 'a b', 'key\u00ff'],
  },
  'Last-Event-ID': { valid: ['0', '1', 'now'], invalid: ['-1', '99999999999999999999', 'garbage'] },
};

/** Headers any request may carry. */
// prettier-ignore
const EXTRA_HEADERS: Array<[string, Text[]]> = [
  ['Accept', ['text/csv', 'application/json', '*/*', 'text/html', 'x', 'text/csv;q=0.1, */*']],
  ['X-Request-Id', ['abc', new Huge('r', 500), 'a b\u00e9']],
  ['Origin', ['http://evil.test', `http://${HOST}`, 'null']],
  ['Sec-Fetch-Site', ['cross-site', 'same-site', 'same-origin']],
  ['X-CSRF-Token', ['garbage', '']],
  ['X-Forwarded-For', ['1.2.3.4', 'garbage']],
];

// prettier-ignore
const CONTENT_TYPES = [
  'text/plain', 'application/json; charset=latin1', 'application/json; charset=utf-16',
  'application/json; charset="utf-8"', 'application/json;charset=UTF-8', 'application/json; charset=🐍',
  'application/merge-patch+json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
  'text/csv', 'text/csv; charset=latin1', 'APPLICATION/JSON', 'application/json, text/plain', '',
];

/** A documented header's value: mostly one the service takes. */
function headerValue(name: string): fc.Arbitrary<Text> {
  const values = HEADER_VALUES[name] ?? { valid: ['x'], invalid: [''] };
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...values.valid) },
    fc.constantFrom(...values.invalid),
    nastyShort,
  );
}

/** Present in about `weight` requests of 10. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight = 3) =>
  fc.oneof({ weight: 10 - weight, arbitrary: fc.constant(undefined) }, { weight, arbitrary });

const given = <T>(entries: Array<[string, T | undefined]>) =>
  entries.filter((e): e is [string, T] => e[1] !== undefined);

/** A request to an operation: mostly valid parts, each with its hostile variants. */
export function requestPlan(o: Operation, world: Draw): fc.Arbitrary<RequestPlan> {
  const query = o.parameters.filter((p) => p.in === 'query');
  const headers = o.parameters.filter((p) => p.in === 'header');
  const queryValue = (p: Parameter): fc.Arbitrary<Text> =>
    fc.oneof(
      {
        weight: 4,
        arbitrary: valid(p.schema, p.name, world).map((v) =>
          v instanceof IdRef || v instanceof Huge ? v : String(v),
        ),
      },
      { weight: 1, arbitrary: nastyShort },
    );
  const named = <T>(name: string, value: fc.Arbitrary<T | undefined>) =>
    value.map((v) => [name, v] as [string, T | undefined]);
  const extraName = fc.oneof(
    fc.constantFrom(...query.map((p) => p.name), 'colour', '__proto__', 'constructor', 'limit[]'),
    fc.string(),
  );
  return fc.record({
    operation: fc.constant(o),
    prefix: fc.constantFrom(...o.prefixes),
    host: fc.oneof(
      { weight: 48, arbitrary: fc.constant('tenant' as const) },
      fc.constantFrom('unknown' as const, 'other-tenant' as const),
    ),
    auth: authPlan,
    id: o.template.includes('{id}')
      ? fc.oneof(
          { weight: 16, arbitrary: fc.nat().map((n): Text => new IdRef(o.pool, n)) },
          fc.nat().map((n): Text => new IdRef(o.pool, n, 'upper')),
          fc.nat().map((n): Text => new IdRef(o.pool, n, 'foreign')),
          {
            weight: 2,
            arbitrary: fc.oneof(
              fc.uuid(),
              nastyShort,
              fc.constantFrom('draw', '..', '.', '%2F', '%00', '%ZZ', '%C0%AF', 'x;y', 'a%20b'),
            ),
          },
        )
      : fc.constant(undefined),
    query: fc
      .tuple(
        fc.tuple(...query.map((p) => named(p.name, sometimes(queryValue(p))))),
        sometimes(fc.array(fc.tuple(extraName, nastyShort), { minLength: 1, maxLength: 2 }), 1),
      )
      .map(([documented, extra]) => [...given(documented), ...(extra ?? [])]),
    headers: fc
      .tuple(
        ...headers.map((p) => named(p.name, sometimes(headerValue(p.name), 4))),
        ...EXTRA_HEADERS.map(([name, values]) =>
          named(name, sometimes(fc.constantFrom(...values), 1)),
        ),
      )
      .map((entries) => given(entries)),
    contentType: fc.oneof(
      { weight: 12, arbitrary: fc.constant(o.body?.type ?? 'application/json') },
      fc.constant(undefined),
      { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
    ),
    body: bodyPlan(o, world),
    chunked: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
  });
}

//------------------------------------------------------------------------------------------------
// From a plan to bytes

/** A request as sent. */
export interface SentRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body: Buffer | undefined;
  chunked: boolean;
  /** What the Authorization or Cookie are, in words (a token is long and says nothing). */
  identity: string;
}

/**
 * A header value holds a tab and bytes 0x20 to 0xff (node refuses to send others): text beyond
 * goes as its UTF-8 bytes, control characters are left out.
 */
const headerSafe = (text: string) =>
  [...Buffer.from(text, 'utf8').toString('latin1')]
    .filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f'))
    .join('');

/** Percent-encoding of the UTF-8 bytes (a lone surrogate becomes U+FFFD, as in any UTF-8). */
const percent = (value: string) =>
  [...Buffer.from(value, 'utf8')]
    .map((byte) => {
      const c = String.fromCharCode(byte);
      return /[A-Za-z0-9._~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    })
    .join('');

function pick(world: FuzzWorld, ref: IdRef): string {
  const list =
    ref.form === 'foreign'
      ? world.foreign
      : ref.pool === '*'
        ? [...world.pools.values()].flat()
        : (world.pools.get(ref.pool) ?? []);
  const id = list.length
    ? list[ref.n % list.length]!
    : `00000000-0000-4000-8000-${String(ref.n % 1e12).padStart(12, '0')}`;
  return ref.form === 'upper' ? id.toUpperCase() : id;
}

function text(world: FuzzWorld, value: Text): string {
  if (value instanceof IdRef) return pick(world, value);
  if (value instanceof Huge) return value.unit.repeat(value.length);
  return value;
}

/** JSON text of a plan's value: ids drawn, huge strings built, raw JSON put in as it is. */
function jsonText(world: FuzzWorld, value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof IdRef || value instanceof Huge) return JSON.stringify(text(world, value));
  if (Array.isArray(value)) return `[${value.map((v) => jsonText(world, v)).join(',')}]`;
  if (isPlainObject(value)) {
    const members = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(world, v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A token with one part changed: its signature no longer fits, or it claims no algorithm. */
function tamper(token: string, how: Extract<AuthPlan, { kind: 'tampered' }>['how']): string {
  const [header = '', payload = '', signature = ''] = token.split('.');
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as object;
  switch (how) {
    case 'signature':
      return `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    case 'payload':
      return `${header}.${part({ ...claims, role: 'admin', exp: 4102444800 })}.${signature}`;
    case 'alg-none':
      return `${part({ alg: 'none', typ: 'at+jwt' })}.${payload}.`;
    case 'truncated':
      return token.slice(0, -12);
    case 'extra-part':
      return `${token}.e30`;
  }
}

function credentials(world: FuzzWorld, auth: AuthPlan, headers: SentRequest['headers']): string {
  switch (auth.kind) {
    case 'bearer':
      headers.authorization = `Bearer ${world.tokens[auth.role]}`;
      return `the ${auth.role}'s access token (Bearer)`;
    case 'cookie':
      headers.cookie = world.cookie.header;
      if (auth.csrf === 'wrong') headers['x-csrf-token'] = world.spare[0]!.csrf;
      else if (auth.csrf !== 'missing') headers['x-csrf-token'] = world.cookie.csrf;
      if (auth.csrf === 'cross-site') headers['sec-fetch-site'] = 'cross-site';
      if (auth.csrf === 'other-origin') headers.origin = 'http://evil.test';
      return `the engineer's session cookies, CSRF token ${auth.csrf}`;
    case 'none':
      return 'no credentials';
    case 'foreign':
      headers.authorization = `Bearer ${world.foreignToken}`;
      return "another tenant's access token";
    case 'tampered':
      headers.authorization = `Bearer ${tamper(world.tokens.viewer, auth.how)}`;
      return `the viewer's access token, tampered (${auth.how})`;
    case 'garbage':
      headers.authorization = headerSafe(text(world, auth.authorization));
      return 'a garbage Authorization header';
    case 'bad-cookie':
      headers.cookie = (Array.isArray(auth.cookie) ? auth.cookie : [auth.cookie]).map((c) =>
        headerSafe(text(world, c)),
      );
      if (auth.bearer) headers.authorization = `Bearer ${world.tokens.admin}`;
      return `garbage cookies${auth.bearer ? " beside the admin's access token" : ''}`;
  }
}

export function materialize(world: FuzzWorld, plan: RequestPlan): SentRequest {
  const o = plan.operation;
  const hosts = {
    tenant: world.host,
    unknown: 'nobody.fuzz.test',
    'other-tenant': world.otherHost,
  };
  const headers: SentRequest['headers'] = { host: hosts[plan.host] };
  const identity = credentials(world, plan.auth, headers);
  for (const [name, value] of plan.headers) {
    headers[name.toLowerCase()] = headerSafe(text(world, value));
  }

  let path = plan.prefix + o.template;
  if (plan.id !== undefined) {
    // The plan's own oddities (%2F, %ZZ, ..) go as they are; anything else is encoded.
    const id = text(world, plan.id);
    path = path.replace('{id}', /^[\x21-\x7e]+$/.test(id) && !/[/?#]/.test(id) ? id : percent(id));
  }
  if (plan.query.length) {
    path += '?' + plan.query.map(([k, v]) => `${percent(k)}=${percent(text(world, v))}`).join('&');
  }

  const b = plan.body;
  let body: Buffer | undefined;
  if (b.kind === 'json') body = Buffer.from(jsonText(world, b.value));
  if (b.kind === 'text') body = Buffer.from(text(world, b.text));
  if (b.kind === 'bytes') body = Buffer.from(b.bytes);
  if (b.kind === 'json-bad-utf8') {
    const json = Buffer.from(jsonText(world, b.value));
    const at = json.indexOf('":"') + 3; // into the first string value
    const bytes = Buffer.from(b.bytes);
    body = at > 2 ? Buffer.concat([json.subarray(0, at), bytes, json.subarray(at)]) : json;
  }
  if (body !== undefined && plan.contentType !== undefined) {
    headers['content-type'] = headerSafe(plan.contentType);
  }
  return { method: o.method, path, headers, body, chunked: plan.chunked, identity };
}

//------------------------------------------------------------------------------------------------
// Sending

export type FuzzResponse = HttpResponse;

/**
 * Sends a request over loopback and reads the whole answer (its first MiB is kept), or only the
 * head of an event stream, which does not end. No answer within `timeoutMs` is an error.
 */
export function send(port: number, req: SentRequest, timeoutMs: number): Promise<FuzzResponse> {
  const headers = { ...req.headers };
  if (req.body !== undefined && req.chunked) headers['transfer-encoding'] = 'chunked';
  else if (req.body !== undefined) headers['content-length'] = String(req.body.length);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      { host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const answer = () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        };
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          res.destroy();
          answer();
          return;
        }
        res.on('data', (chunk: Buffer) => {
          if (kept < 1 << 20) chunks.push(chunk);
          kept += chunk.length;
        });
        res.on('end', answer);
        res.on('error', fail);
      },
    );
    const timer = setTimeout(
      () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    function fail(error: Error) {
      clearTimeout(timer);
      reject(error);
    }
    outgoing.on('error', fail);
    outgoing.end(req.body);
  });
}

//------------------------------------------------------------------------------------------------
// The invariants

/** GraphQL over HTTP: POST /graphql answers what GraphQL refuses in GraphQL's media types. */
const GRAPHQL_TYPES = ['application/graphql-response+json', 'application/json'];

/** What is wrong with an answer (invariants 1 to 3); empty when nothing is. */
export function violations(o: Operation, req: SentRequest, res: FuzzResponse): string[] {
  const found: string[] = [];
  if (res.status >= 500) found.push(`${res.status}: no 5xx may be answered here`);
  const type = String(res.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim();
  const body = res.json as Record<string, unknown> | undefined;
  if (res.status >= 400) {
    if (o.template === '/graphql' && GRAPHQL_TYPES.includes(type)) {
      if (!Array.isArray(body?.errors)) found.push('a GraphQL error answer without `errors`');
    } else if (type !== 'application/problem+json') {
      found.push(`a ${res.status} as ${type || 'no content type'}, not application/problem+json`);
    } else {
      for (const member of ['type', 'title', 'detail']) {
        if (typeof body?.[member] !== 'string' || !body[member]) {
          found.push(`a problem without ${member}`);
        }
      }
      if (body?.status !== res.status) {
        found.push(`a problem whose status ${String(body?.status)} is not ${res.status}`);
      }
    }
  }
  try {
    assertMatchesContract(req.method, req.path, res);
  } catch (error) {
    found.push((error as Error).message);
  }
  return found;
}

/**
 * Failures found and reported whose fix is outside test/ and rest-adapter/: each is known by its
 * request and answer, and counted (the report names it) rather than failing the run. Remove the
 * entry with the fix, and the run proves it.
 */
export const KNOWN_ISSUES: Array<{
  name: string;
  matches(req: SentRequest, res: FuzzResponse): boolean;
}> = [
  {
    // Grafserv fails on an Accept header it cannot parse (x, application/json;q=x) with a 500;
    // server/graphql.ts should answer 406 before handing the request to it.
    name: 'POST /graphql with a malformed Accept header is a 500 (Grafserv)',
    matches: (req, res) =>
      res.status === 500 &&
      req.path.split('?')[0] === '/graphql' &&
      req.headers.accept !== undefined,
  },
];

const excerpt = (value: string, length = 600) =>
  JSON.stringify(
    value.length > length ? `${value.slice(0, length)}... (${value.length} chars)` : value,
  );

/** The request and the answer, in full enough to replay with curl. */
export function describeExchange(req: SentRequest, res?: FuzzResponse): string {
  const headers = Object.entries(req.headers).map(([name, value]) => {
    const v = Array.isArray(value) ? value.join(' | ') : value;
    return `  ${name}: ${excerpt(v, name === 'authorization' || name === 'cookie' ? 120 : 300)}`;
  });
  const body =
    req.body === undefined
      ? '  (no body)'
      : `  body (${req.body.length} bytes${req.chunked ? ', chunked' : ''}): ${excerpt(req.body.toString('latin1'))}`;
  const answer = res
    ? `response: ${res.status} ${String(res.headers['content-type'] ?? '(no content type)')}\n  ${excerpt(res.text, 1500)}`
    : 'response: none';
  return [
    `request: ${req.method} ${excerpt(req.path, 1000)}`,
    `  as ${req.identity}`,
    ...headers,
    body,
    answer,
  ].join('\n');
}

//------------------------------------------------------------------------------------------------
// The run

export interface FuzzReport {
  requests: number;
  /** Answers by operation and status. */
  statuses: Map<string, Map<number, number>>;
  /** Milliseconds waiting for answers, and taking fingerprints. */
  answerMs: number;
  fingerprintMs: number;
  /** The slowest requests: milliseconds, method and path. */
  slowest: Array<[number, string]>;
  /** Requests that met a known issue (KNOWN_ISSUES), by its name. */
  known: Map<string, number>;
  /** The failure fast-check found (and shrank), in words, and its path, if any. */
  failure: string | undefined;
  path: string | undefined;
}

/** Keeps the pools what the service holds: a created item joins, a deleted one leaves. */
function follow(world: FuzzWorld, o: Operation, req: SentRequest, res: FuzzResponse): void {
  const pool = world.pools.get(o.pool) ?? [];
  const id = (res.json as { id?: unknown } | undefined)?.id;
  if (res.status === 201 && typeof id === 'string' && UUID.test(id)) {
    world.pools.set(o.pool, [...pool, id]);
  }
  if (req.method === 'DELETE' && res.status === 204) {
    const gone = req.path.split('/').at(-1)!.toLowerCase();
    const kept = pool.filter((p) => p !== gone);
    world.pools.set(o.pool, kept);
  }
}

/**
 * Sends `runs` requests to the operations (each request to one drawn at random), checking the
 * invariants on every answer. The first failure is shrunk for up to `settings.shrinkMs`, then
 * reported with the request and the answer, the seed and the path that replay it.
 */
export async function fuzz(
  world: FuzzWorld,
  list: Operation[],
  runs: number,
  settings: FuzzSettings,
): Promise<FuzzReport> {
  const report: FuzzReport = {
    requests: 0,
    statuses: new Map(),
    answerMs: 0,
    fingerprintMs: 0,
    slowest: [],
    known: new Map(),
    failure: undefined,
    path: undefined,
  };
  const draw: Draw = {
    poolNames: [...world.pools.keys()],
    values: world.values,
    refreshTokens: world.spare.map((s) => s.refreshToken),
  };
  const fingerprint = async () => {
    const started = Date.now();
    const print = await world.fingerprint();
    report.fingerprintMs += Date.now() - started;
    return print;
  };
  let failedAt: number | undefined;
  const fail = (message: string) => {
    failedAt ??= Date.now();
    throw new Error(message);
  };

  // Deletes are drawn less often: they end the rows the other operations draw on.
  const plans = list.map((o) => ({
    weight: o.method === 'DELETE' ? 1 : 3,
    arbitrary: requestPlan(o, draw),
  }));
  const property = fc.asyncProperty(fc.oneof(...plans), async (plan) => {
    // Shrinking sends each smaller candidate; past its time, the candidates pass untried, so
    // the smallest failure found so far is the one reported.
    if (failedAt !== undefined && Date.now() - failedAt > settings.shrinkMs) return;
    const o = plan.operation;
    const req = materialize(world, plan);
    const before = UNSAFE.has(o.method) ? await fingerprint() : undefined;
    const started = Date.now();
    let res: FuzzResponse;
    try {
      res = await send(world.port, req, settings.timeoutMs);
    } catch (error) {
      return fail(`- ${(error as Error).message}\n${describeExchange(req)}`);
    }
    const took = Date.now() - started;
    report.answerMs += took;
    report.slowest.push([took, `${req.method} ${req.path.slice(0, 120)} ${res.status}`]);
    report.slowest = report.slowest.sort(([a], [b]) => b - a).slice(0, 5);
    report.requests++;
    const byStatus = report.statuses.get(describeOperation(o)) ?? new Map<number, number>();
    byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
    report.statuses.set(describeOperation(o), byStatus);

    const known = KNOWN_ISSUES.find((issue) => issue.matches(req, res));
    if (known) report.known.set(known.name, (report.known.get(known.name) ?? 0) + 1);
    const found = known ? [] : violations(o, req, res);
    if (before && (res.status < 200 || res.status > 299)) {
      const after = await fingerprint();
      const changed = [...after].filter(([table, print]) => before.get(table) !== print);
      if (changed.length) {
        found.push(`a refused ${o.method} changed ${changed.map(([table]) => table).join(', ')}`);
      }
    }
    if (found.length) {
      fail(`${found.map((f) => `- ${f}`).join('\n')}\n${describeExchange(req, res)}`);
    }
    follow(world, o, req, res);
  });

  const details = await fc.check(property, {
    seed: settings.seed,
    numRuns: runs,
    ...(settings.path && { path: settings.path }),
  });
  if (details.failed) {
    const [plan] = details.counterexample!;
    report.path = details.counterexamplePath ?? undefined;
    report.failure = [
      `${describeOperation(plan.operation)} broke an invariant (fast-check seed ${details.seed}, ` +
        `path "${details.counterexamplePath}", after ${details.numRuns} runs and ${details.numShrinks} shrinks):`,
      (details.errorInstance as Error | undefined)?.message ?? String(details.errorInstance),
      `plan: ${fc.stringify(plan)}`,
    ].join('\n');
  }
  return report;
}

/** Answers by status, e.g. "200 x 31, 404 x 2, 422 x 17". */
export function statusLine(byStatus: Map<number, number>): string {
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status} x ${n}`)
    .join(', ');
}
