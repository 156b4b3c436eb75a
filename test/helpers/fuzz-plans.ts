// Part of the REST contract fuzzer (helpers/fuzz.ts, which describes it and re-exports what its
// users need): the plans, the values fast-check generates, shrinks and prints
// (ids are indexes into pools, huge strings their length), and their generators: valid parts
// mixed with hostile ones.
import * as fc from 'fast-check';
import { PASSWORD } from './auth.ts';
import { type Schema, type Parameter, type Operation, resolve } from './fuzz-operations.ts';
import { ROLES, type Role, HOST } from './fuzz-world.ts';

//------------------------------------------------------------------------------------------------
// Plans: what fast-check generates

/** A real id, drawn when the request is sent: the n-th of a pool (modulo its size). */
export class IdRef {
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
export class Huge {
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
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  [fc.toStringMethod](): string {
    const t = this.text;
    return `raw(${t.length > 40 ? `${t.slice(0, 20)}... ${t.length} chars` : t})`;
  }
}

export type Text = string | Huge | IdRef;

export type AuthPlan =
  | { kind: 'bearer'; role: Role }
  | { kind: 'cookie'; csrf: 'valid' | 'missing' | 'wrong' | 'cross-site' | 'other-origin' }
  | { kind: 'none' }
  | { kind: 'foreign' }
  | { kind: 'tampered'; how: 'signature' | 'payload' | 'alg-none' | 'truncated' | 'extra-part' }
  | { kind: 'garbage'; authorization: Text }
  | { kind: 'bad-cookie'; cookie: Text | Text[]; bearer: boolean };

export type BodyPlan =
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
export interface Draw {
  poolNames: string[];
  values: Map<string, string[]>;
  refreshTokens: string[];
}

//------------------------------------------------------------------------------------------------
// Generators

/** Field names whose values must look a certain way to get past the first check. */
export const EXAMPLES: Record<string, string[]> = {
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
export const NASTY_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\uffff', '\u202e', '🔥', 'null', 'undefined', 'true',
  '0', '-0', '-1', '1e308', '1e999', 'NaN', 'Infinity', '0x10', '2026-02-30', '0000-01-01',
  '9999-12-31', '10000-01-01', '2026-13-01T25:61:00Z', '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', "'; select pg_sleep(10); --", '"', '\\', '%s%n', '${x}',
  '<script>', '../../etc/passwd', 'now', '9223372036854775808',
];

/** Nasty strings; huge ones up to `max` characters (a URL or header must stay within 16 KiB). */
export const nastyText = (max: number): fc.Arbitrary<Text> =>
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
export const nastyString = nastyText(100_000);
export const nastyShort = nastyText(256);

/** JSON values of the wrong kind for any field. */
export const nastyJson: fc.Arbitrary<unknown> = fc.oneof(
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
export function poolOf(name: string, pools: string[]): string {
  const stem = name.replace(/Ids?$/, '');
  if (!stem || stem === name) return '*';
  const kebab = stem.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return [kebab, `${kebab}s`].find((p) => pools.includes(p)) ?? '*';
}

export const calendarDay = fc
  .date({ min: new Date('1900-01-01'), max: new Date('2100-12-31'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));

/** Parameters whose valid values make the server wait (a long-poll): kept short. */
export const SLOW_PARAMETERS: Record<string, number> = { wait: 1 };

/** Values a schema accepts (mostly: a unique key may be taken, an id may be of the wrong row). */
export function valid(schema: Schema, name: string, world: Draw): fc.Arbitrary<unknown> {
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

export function validString(s: Schema, name: string, world: Draw): fc.Arbitrary<unknown> {
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
  // A client's id and secret are guessed together or not at all: known ones mostly.
  const knownWeight = name === 'client_id' || name === 'client_secret' ? 12 : 3;
  return fc.oneof(
    { weight: 3, arbitrary: base },
    ...(known.length ? [{ weight: knownWeight, arbitrary: fc.constantFrom(...known) }] : []),
    ...(examples.length ? [{ weight: 4, arbitrary: fc.constantFrom(...examples) }] : []),
    // the longest value allowed
    ...(s.maxLength && !s.pattern ? [fc.constant(new Huge('x', s.maxLength))] : []),
  );
}

/** One change at a place in a JSON value (the `at`-th, modulo their number). */
export interface Mutation {
  at: number;
  /** flood: thousands of array items, or of extra keys. */
  kind: 'replace' | 'delete' | 'add' | 'wrap' | 'repeat' | 'flood';
  key: string;
  value: unknown;
}

export const mutation: fc.Arbitrary<Mutation> = fc.record({
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
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  [Object.prototype, null].includes(Object.getPrototypeOf(value) as object | null);

/** Every place in a JSON value (a path of keys and indexes), the root first. */
export function places(
  value: unknown,
  path: Array<string | number> = [],
): Array<Array<string | number>> {
  const inner = Array.isArray(value)
    ? value.flatMap((item, i) => places(item, [...path, i]))
    : isPlainObject(value)
      ? Object.entries(value).flatMap(([key, v]) => places(v, [...path, key]))
      : [];
  return [path, ...inner];
}

/** A copy with the key set; `__proto__` becomes a key like any other, as JSON.parse makes it. */
export function withKey(object: Record<string, unknown>, key: string, value: unknown) {
  const copy = { ...object };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** The value with the mutation applied (a copy: plans are never changed in place). */
export function mutate(value: unknown, m: Mutation): unknown {
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
export const NASTY_BODIES = [
  '', ' ', '{', '{"a":}', "{'a': 1}", 'null', 'true', '0', '-0', '"text"', '[]', '[{}]', '{}',
  '\ufeff{}', '{"__proto__": {"isAdmin": true}}', '{"constructor": {"prototype": {"x": 1}}}',
  '{"a": 1, "a": 2}', 'NaN', '{"a": NaN}', '1e999', '{"a": 1}garbage', '{"a": "\\u0000"}',
  '{"a": "\\ud800"}', '{"a": "\u0001"}',
];
export const nastyBody = fc
  .constantFrom(...NASTY_BODIES)
  .map((text): BodyPlan => ({ kind: 'text', text }));

/** Byte sequences that are no UTF-8 (overlong, surrogates, past U+10FFFF, cut short). */
// prettier-ignore
export const BAD_UTF8 = [[0xff, 0xfe], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80], [0x00], [0xe2, 0x82]];

export function bodyPlan(o: Operation, world: Draw): fc.Arbitrary<BodyPlan> {
  // A body where none belongs, now and then.
  if (!o.body) return fc.oneof({ weight: 19, arbitrary: fc.constant({ kind: 'none' }) }, nastyBody);
  // A form (the OAuth2 endpoints) is made of the same values as JSON, form-encoded when sent.
  const structured =
    o.body.type.endsWith('json') || o.body.type === 'application/x-www-form-urlencoded';
  if (!structured) return csvBody(o.body.example ?? 'a\n1\n', world);
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
export function csvBody(example: string, world: Draw): fc.Arbitrary<BodyPlan> {
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

export const authPlan: fc.Arbitrary<AuthPlan> = fc.oneof(
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
export const HEADER_VALUES: Record<string, { valid: Text[]; invalid: Text[] }> = {
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
export const EXTRA_HEADERS: Array<[string, Text[]]> = [
  ['Accept', ['text/csv', 'application/json', '*/*', 'text/html', 'x', 'text/csv;q=0.1, */*']],
  ['X-Request-Id', ['abc', new Huge('r', 500), 'a b\u00e9']],
  ['Origin', ['http://evil.test', `http://${HOST}`, 'null']],
  ['Sec-Fetch-Site', ['cross-site', 'same-site', 'same-origin']],
  ['X-CSRF-Token', ['garbage', '']],
  ['X-Forwarded-For', ['1.2.3.4', 'garbage']],
];

// prettier-ignore
export const CONTENT_TYPES = [
  'text/plain', 'application/json; charset=latin1', 'application/json; charset=utf-16',
  'application/json; charset="utf-8"', 'application/json;charset=UTF-8', 'application/json; charset=🐍',
  'application/merge-patch+json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
  'text/csv', 'text/csv; charset=latin1', 'APPLICATION/JSON', 'application/json, text/plain', '',
];

/** A documented header's value: mostly one the service takes. */
export function headerValue(name: string): fc.Arbitrary<Text> {
  const values = HEADER_VALUES[name] ?? { valid: ['x'], invalid: [''] };
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...values.valid) },
    fc.constantFrom(...values.invalid),
    nastyShort,
  );
}

/** Present in about `weight` requests of 10. */
export const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weight = 3) =>
  fc.oneof({ weight: 10 - weight, arbitrary: fc.constant(undefined) }, { weight, arbitrary });

export const given = <T>(entries: Array<[string, T | undefined]>) =>
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
