// The generic REST resources (rest-adapter/resource.ts) over real HTTP: ISOs, welds, welders, PQRs,
// WPSs, welder qualifications and test packages. Each is described once in CASES below (a valid
// create body, a change, one or more cases per list filter, its natural key, its references) and
// the same tests run against every description: the whole flow under '' and under /api, the
// refusals (roles, keys, references, tenants), and Idempotency-Key. The special rules (an ISO that
// holds welds, a referenced PQR, released test packages, weld history) have tests of their own.
//
// Every response is also checked against the OpenAPI document (helpers/http.ts): an undocumented
// status or a body that breaks its schema fails the request itself.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import type pg from 'pg';
import { hashPassword } from '../../db/passwords.ts';
import { addTenant } from '../../db/tenants.ts';
import { isos } from '../../rest-adapter/isos.ts';
import { pqrs } from '../../rest-adapter/pqrs.ts';
import type { Resource } from '../../rest-adapter/resource.ts';
import { testPackages } from '../../rest-adapter/test-packages.ts';
import { welderQualifications } from '../../rest-adapter/welder-qualifications.ts';
import { welders } from '../../rest-adapter/welders.ts';
import { welds } from '../../rest-adapter/welds.ts';
import { wps } from '../../rest-adapter/wps.ts';
import { login, PASSWORD } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { bearerClient as client, type Client, type HttpResponse } from '../helpers/http.ts';
import { startServer, worldSlots } from '../helpers/server.ts';

/**
 * The version an entity tag names: "<version>", or for an ISO "<version>.<version of its weld
 * counts>" (rest-adapter/isos.ts).
 */
const versionOf = (etag: string | undefined) => Number(/^"(\d+)(?:\.\d+)?"$/.exec(etag ?? '')?.[1]);

const A = 'a.test';
const B = 'b.test';
const PREFIXES = ['', '/api'] as const;
const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
type Role = (typeof ROLES)[number];

type Body = Record<string, unknown>;
type Item = Body & { id: string; version: number; createdAt: string; updatedAt: string };

// ------------------------------------------------------------------------------------------------
// The world of one test

/** Rows the bodies refer to, made by the owner: two of each, so two items can differ. */
interface Deps {
  isos: string[];
  welders: string[];
  pqrs: string[];
  wps: string[];
  welds: string[];
}

interface World {
  owner: pg.Client;
  tenantA: string;
  /** Tenant A's users, one per role, at A's origin. */
  a: Record<Role, Client>;
  userIds: Record<Role, string>;
  /** Tenant B's engineer, at B's origin. */
  b: Client;
  dA: Deps;
  dB: Deps;
}

// One password hash for every user of the file: Argon2id is slow on purpose, and hashing the same
// password for five users in each of ~30 worlds would be most of the run.
const passwordHash = hashPassword(PASSWORD);

// At most 6 worlds at once (helpers/server.ts).
const worldSlot = worldSlots(6);

async function backdrop(owner: pg.Client, tenant: string): Promise<Deps> {
  const ids = async (sql: string, params: unknown[] = []) =>
    (await owner.query<{ id: string }>(sql, [tenant, ...params])).rows.map((r) => r.id);
  const isoIds = await ids(
    `insert into weld_public.isos (tenant_id, iso_number, line_number)
     select $1, 'BD-ISO-' || n, 'BD-L-' || n from generate_series(0, 1) n returning id`,
  );
  return {
    isos: isoIds,
    welders: await ids(
      `insert into weld_public.welders (tenant_id, stamp, name)
       select $1, 'BD-' || n, 'Backdrop welder ' || n from generate_series(0, 1) n returning id`,
    ),
    pqrs: await ids(
      // GTAW, and GTAW+SMAW: each backs the WPSs below (QW-200.4), T 0.5 in. (QW-451.1: 3/16 to 1 in.).
      `insert into weld_public.pqrs (tenant_id, pqr_number, process, p_numbers, thickness_tested_in)
       select $1, 'BD-PQR-' || n, case n when 0 then 'GTAW' else 'GTAW+SMAW' end, '{1,1}', 0.5
         from generate_series(0, 1) n order by n returning id`,
    ),
    wps: await ids(
      `insert into weld_public.wps (tenant_id, wps_number, process)
       select $1, 'BD-WPS-' || n, 'GTAW' from generate_series(0, 1) n returning id`,
    ),
    welds: await ids(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
       select $1, iso, 'BD-W-' || n, 'BW', 4 from unnest($2::uuid[]) with ordinality u(iso, n)
       returning id`,
      [isoIds],
    ),
  };
}

/** Tenant A (four users, one per role) and tenant B (an engineer), each with its backdrop. */
async function world(t: ExecutionContext): Promise<World> {
  await worldSlot(t);
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenantA = (await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] })).id;
  const tenantB = (await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] })).id;
  const addUser = async (tenant: string, role: Role) =>
    (
      await owner.query<{ id: string }>(
        'select id from weld_private.create_user($1, $2, $3, $4, $5)',
        [tenant, role, `${role} user`, role, await passwordHash],
      )
    ).rows[0]!.id;
  const userIds = {} as World['userIds'];
  for (const role of ROLES) userIds[role] = await addUser(tenantA, role);
  await addUser(tenantB, 'engineer');
  const dA = await backdrop(owner, tenantA);
  const dB = await backdrop(owner, tenantB);

  const { port } = await startServer(t, target);
  const signIn = async (host: string, role: Role) => {
    const res = await login(port, host, role);
    if (res.status !== 200) throw new Error(`login ${role}@${host}: ${res.status} ${res.text}`);
    return client(port, host, res.json.accessToken);
  };
  const a = {} as World['a'];
  for (const role of ROLES) a[role] = await signIn(A, role);
  return { owner, tenantA, a, userIds, b: await signIn(B, 'engineer'), dA, dB };
}

// ------------------------------------------------------------------------------------------------
// Assertions shared by the tests

function problem(
  t: ExecutionContext,
  res: HttpResponse,
  status: number,
  type?: string,
  label = '',
): void {
  t.is(res.status, status, `${label}: ${res.text}`);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/, label);
  if (type) t.is(res.json?.type, type, label);
}

/** The JSON Pointers a 422 or 409 names, in its order. */
const pointers = (res: HttpResponse): string[] =>
  (res.json?.errors ?? []).map((e: { pointer?: string }) => e.pointer);

const sorted = (values: string[]) => [...values].sort();
/** Lists of ids come back in id order, so compare them as sets. */
const normal = (value: unknown) =>
  Array.isArray(value) ? [...(value as unknown[])].map(String).sort() : value;
const ids = (res: HttpResponse): string[] => res.json.items.map((i: Item) => i.id);

/** POSTs and insists on 201 (a failure here would only confuse the assertions after it). */
async function create(client: Client, path: string, body: Body): Promise<Item> {
  const res = await client.post(path, body);
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
  return res.json as Item;
}

/** Insists on 200 from a request that only prepares a test. */
async function expect200(response: Promise<HttpResponse>): Promise<void> {
  const res = await response;
  if (res.status !== 200) throw new Error(`expected 200: ${res.status} ${res.text}`);
}

/** The tenant's rows in a table, counted as the owner (beside the API, past row security). */
async function countRows(w: World, table: string, where = 'true', params: unknown[] = []) {
  const { rows } = await w.owner.query<{ n: number }>(
    `select count(*)::int as n from ${table} where tenant_id = $1 and ${where}`,
    [w.tenantA, ...params],
  );
  return rows[0]!.n;
}

// ------------------------------------------------------------------------------------------------
// The resources, described once

/** A list filter's case: `query` must return `a` (or `b`) and not the other. */
interface FilterCase {
  query(a: Item, b: Item): string;
  wants?: 'b';
  /** True of every item the query may return (the backdrop's rows too). */
  matches(item: Item, a: Item, b: Item): boolean;
}

/** The filter of a field, matching equal values: `a`'s value finds `a`. */
const equal = (name: string): FilterCase => ({
  query: (a) => `${name}=${encodeURIComponent(String(a[name]))}`,
  matches: (item, a) => item[name] === a[name],
});

interface Reference {
  field: string;
  to: keyof Deps;
  /** An id list (pqrIds): a bad member is named by its index. */
  list?: true;
}

interface ResourceCase {
  resource: Resource;
  /** A valid create body; `n` keeps natural keys apart, and bodies 0 and 1 differ in every filter. */
  body(d: Deps, n: number): Body;
  /** A valid PATCH of item 0. */
  change(d: Deps): Body;
  /** Every list filter of the resource (the test checks none is missing), with its cases. */
  filters: Record<string, FilterCase | FilterCase[]>;
  /** Brings items 0 and 1 apart where a create cannot (a status, a state); `base` is the path. */
  beforeFilters?(w: World, base: string, a: Item, b: Item): Promise<void>;
  /** Known fields a client may not send, beyond id, version, createdAt and updatedAt. */
  readOnly: { post: string[]; patch: string[] };
  /** The fields a duplicate names (409 /problems/conflict). */
  naturalKey?: string[];
  references: Reference[];
  deletable: boolean;
}

/** In force on `day`: qualified on or before it, and not expired. */
const inForce = (item: Item, day: string) =>
  (item.qualifiedOn as string) <= day &&
  (item.expiresOn === null || (item.expiresOn as string) >= day);

const CASES: ResourceCase[] = [
  {
    resource: isos,
    body: (_d, n) => ({
      isoNumber: `ISO-${n}`,
      revision: 'B',
      lineNumber: `L-${n}`,
      area: n % 2 ? 'South' : 'North',
      pipingClass: 'A1A',
      fluidService: n % 2 ? 'category_d' : 'normal',
      rtPercent: n % 2 ? 10 : 5,
    }),
    change: () => ({ area: 'East', pipingClass: null, rtPercent: 20 }),
    filters: {
      isoNumber: equal('isoNumber'),
      lineNumber: equal('lineNumber'),
      area: equal('area'),
      fluidService: equal('fluidService'),
    },
    readOnly: { post: ['weldCounts'], patch: ['weldCounts'] },
    naturalKey: ['isoNumber'],
    references: [],
    deletable: true,
  },
  {
    resource: welds,
    body: (d, n) => ({
      isoId: d.isos[n % 2],
      weldNumber: `W-${n}`,
      type: n % 2 ? 'SW' : 'BW',
      size: n % 2 ? 2 : 4,
      schedule: '40',
      wallThickness: 0.237,
      material: 'A106-B',
      welderId: d.welders[n % 2],
      wpsId: d.wps[n % 2],
      weldedOn: '2026-03-01',
    }),
    change: (d) => ({ size: 6, schedule: 'XS', material: null, welderId: d.welders[1] }),
    filters: {
      isoId: equal('isoId'),
      weldNumber: equal('weldNumber'),
      type: equal('type'),
      welderId: equal('welderId'),
      wpsId: equal('wpsId'),
      status: [
        { query: () => 'status=PENDING', matches: (i) => i.status === 'PENDING' },
        {
          query: () => 'status=REJECTED,PENDING',
          matches: (i) => i.status === 'REJECTED' || i.status === 'PENDING',
        },
        { query: () => 'status=ACCEPTED', wants: 'b', matches: (i) => i.status === 'ACCEPTED' },
      ],
    },
    // Every weld starts PENDING: the inspector accepts weld 1 (the status has its own path).
    beforeFilters: (w, base, _a, b) =>
      expect200(w.a.inspector.patch(`${base}/${b.id}/status`, { status: 'ACCEPTED' })),
    readOnly: { post: ['status', 'repairCycle'], patch: ['status', 'repairCycle'] },
    naturalKey: ['isoId', 'weldNumber'],
    references: [
      { field: 'isoId', to: 'isos' },
      { field: 'welderId', to: 'welders' },
      { field: 'wpsId', to: 'wps' },
    ],
    deletable: false,
  },
  {
    resource: welders,
    body: (_d, n) => ({ stamp: `S-${n}`, name: `Welder ${n}`, active: n % 2 === 0 }),
    change: () => ({ name: 'Renamed Welder', active: false }),
    filters: {
      stamp: equal('stamp'),
      active: [
        { query: () => 'active=true', matches: (i) => i.active === true },
        { query: () => 'active=false', wants: 'b', matches: (i) => i.active === false },
      ],
    },
    readOnly: { post: [], patch: ['stamp'] },
    naturalKey: ['stamp'],
    references: [],
    deletable: false,
  },
  {
    resource: pqrs,
    body: (_d, n) => ({
      pqrNumber: `PQR-${n}`,
      process: n % 2 ? 'SMAW' : 'GTAW+SMAW',
      pNumbers: ['1', '8'],
      thicknessTestedIn: 0.5,
      diameterTestedIn: 2.875,
      documentRef: `doc-${n}.pdf`,
    }),
    change: () => ({ documentRef: null, thicknessTestedIn: 0.75, pNumbers: ['1'] }),
    filters: { pqrNumber: equal('pqrNumber'), process: equal('process') },
    readOnly: { post: [], patch: [] },
    naturalKey: ['pqrNumber'],
    references: [],
    deletable: true,
  },
  {
    resource: wps,
    body: (d, n) => ({
      wpsNumber: `WPS-${n}`,
      revision: '2',
      process: n % 2 ? 'SMAW' : 'GTAW',
      state: n % 2 ? 'approved' : 'draft',
      thicknessMinIn: 0.188, // 3/16 in. as numeric(6, 3) holds it
      thicknessMaxIn: 1,
      diameterMinIn: 0,
      diameterMaxIn: null,
      pqrIds: [d.pqrs[n % 2]],
    }),
    // pqrIds is replaced as a whole, not added to; an approved WPS stays within what its PQRs
    // support (QW-451.1).
    change: (d) => ({ state: 'approved', thicknessMaxIn: 0.75, pqrIds: [d.pqrs[1]] }),
    filters: { wpsNumber: equal('wpsNumber'), state: equal('state'), process: equal('process') },
    readOnly: { post: [], patch: ['wpsNumber', 'revision', 'process'] },
    naturalKey: ['wpsNumber', 'revision'],
    references: [{ field: 'pqrIds', to: 'pqrs', list: true }],
    deletable: false,
  },
  {
    resource: welderQualifications,
    body: (d, n) => ({
      welderId: d.welders[n % 2],
      wpsId: n % 2 ? null : d.wps[0],
      pqrId: d.pqrs[0],
      process: n % 2 ? 'SMAW' : 'GTAW',
      positions: ['6G'],
      diameterMinIn: 1,
      diameterMaxIn: 4,
      thicknessMaxIn: 0.5,
      qualifiedOn: n % 2 ? '2022-01-01' : '2020-01-01',
      expiresOn: n % 2 ? null : '2021-01-01',
      lastContinuityOn: null,
    }),
    change: () => ({
      positions: ['1G', '2G'],
      expiresOn: '2030-01-01',
      lastContinuityOn: '2020-06-01',
    }),
    filters: {
      welderId: equal('welderId'),
      process: equal('process'),
      validOn: [
        { query: () => 'validOn=2020-06-01', matches: (i) => inForce(i, '2020-06-01') },
        // The day it expires is still in force.
        { query: () => 'validOn=2021-01-01', matches: (i) => inForce(i, '2021-01-01') },
        // No expiry: in force for good.
        { query: () => 'validOn=2030-01-01', wants: 'b', matches: (i) => inForce(i, '2030-01-01') },
      ],
    },
    readOnly: { post: [], patch: ['welderId'] },
    references: [
      { field: 'welderId', to: 'welders' },
      { field: 'wpsId', to: 'wps' },
      { field: 'pqrId', to: 'pqrs' },
    ],
    deletable: true,
  },
  {
    resource: testPackages,
    body: (d, n) => ({
      packageNumber: `TP-${n}`,
      testMedium: n % 2 ? 'pneumatic' : 'hydro',
      testPressurePsig: 150,
      isoIds: [d.isos[n % 2]],
      weldIds: [d.welds[n % 2]],
    }),
    change: (d) => ({ testPressurePsig: 225.5, isoIds: [d.isos[0], d.isos[1]], weldIds: [] }),
    filters: {
      packageNumber: equal('packageNumber'),
      state: [
        { query: () => 'state=open', matches: (i) => i.state === 'open' },
        { query: () => 'state=released', wants: 'b', matches: (i) => i.state === 'released' },
      ],
    },
    // Packages are created open: release package 1, as a DBA (the API releases only a package
    // that is ready, which code-rules.test.ts covers).
    beforeFilters: async (w, _base, _a, b) => {
      await w.owner.query(`update weld_public.test_packages set state = 'released' where id = $1`, [
        b.id,
      ]);
    },
    readOnly: { post: [], patch: [] },
    naturalKey: ['packageNumber'],
    references: [
      { field: 'isoIds', to: 'isos', list: true },
      { field: 'weldIds', to: 'welds', list: true },
    ],
    deletable: true,
  },
];

const caseOf = (resource: Resource) => CASES.find((c) => c.resource === resource)!;
const writableOnUpdate = (c: ResourceCase, field: string) =>
  Boolean(c.resource.patchBody && field in c.resource.patchBody.shape);
// Not filters: paging, the change filter, and the list's format (JSON or, for welds, CSV: imports.test.ts).
const LIST_PARAMETERS = ['limit', 'cursor', 'updatedSince', 'format'];

// ------------------------------------------------------------------------------------------------
// The whole flow of each resource, under '' and under /api

for (const prefix of PREFIXES) {
  for (const c of CASES) {
    const path = `${prefix}/${c.resource.path}`;
    // The same item is also read under the other prefix: /x and /api/x are one API.
    const elsewhere = `${prefix ? '' : '/api'}/${c.resource.path}`;

    test(`${path}: create, read, list and filter, page, update, delete, replay`, async (t) => {
      const w = await world(t);
      const d = w.dA;
      const eng = w.a.engineer;

      // Create: 201 with Location and ETag; the body is the item as GET returns it, as sent.
      const made: Item[] = [];
      for (const n of [0, 1]) {
        if (n) await sleep(20); // so updatedSince can tell item 0 from item 1 (ms precision)
        const body = c.body(d, n);
        const res = await eng.post(path, body);
        t.is(res.status, 201, res.text);
        const item = res.json as Item;
        t.is(res.headers.location, `${path}/${item.id}`);
        t.is(versionOf(res.headers.etag), item.version);
        t.is(res.headers['idempotent-replayed'], undefined, 'not a replay');
        for (const [field, value] of Object.entries(body)) {
          t.deepEqual(normal(item[field]), normal(value), `${field} as sent`);
        }
        const read = await eng.get(res.headers.location!);
        t.is(read.status, 200);
        t.deepEqual(read.json, item, 'POST answers the item as GET reads it');
        t.is(read.headers.etag, res.headers.etag);
        t.deepEqual((await w.a.viewer.get(`${elsewhere}/${item.id}`)).json, item, elsewhere);
        made.push(item);
      }
      const [a, b] = made as [Item, Item];

      // Read: If-None-Match with the current tag is 304 without a body; another tag reads it.
      const tag = (await eng.get(`${path}/${a.id}`)).headers.etag!;
      t.is(versionOf(tag), a.version);
      const cached = await eng.get(`${path}/${a.id}`, { 'if-none-match': tag });
      t.is(cached.status, 304);
      t.is(cached.text, '');
      t.is(cached.headers.etag, tag);
      const other = await eng.get(`${path}/${a.id}`, { 'if-none-match': `"${a.version + 7}"` });
      t.is(other.status, 200);
      for (const id of [randomUUID(), 'not-a-uuid']) {
        problem(t, await eng.get(`${path}/${id}`), 404, undefined, `GET ${id}`);
      }

      // List: both items; updatedSince from item 1's creation finds it and not item 0.
      const all = await w.a.viewer.get(`${path}?limit=500`);
      t.is(all.status, 200);
      t.true(ids(all).includes(a.id) && ids(all).includes(b.id), 'the list holds both');
      const since = (item: Item) => `${path}?updatedSince=${encodeURIComponent(item.createdAt)}`;
      t.deepEqual(ids(await eng.get(since(b))), [b.id], 'updatedSince: only the newer');
      const future = encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString());
      t.deepEqual(ids(await eng.get(`${path}?updatedSince=${future}`)), []);

      // Filters: every filter the resource offers has a case, and each narrows the list.
      const offered = Object.keys(c.resource.listQuery.shape).filter(
        (name) => !LIST_PARAMETERS.includes(name),
      );
      t.deepEqual(sorted(Object.keys(c.filters)), sorted(offered), 'each filter has a case');
      await c.beforeFilters?.(w, path, a, b);
      const [a1, b1] = [
        (await eng.get(`${path}/${a.id}`)).json as Item,
        (await eng.get(`${path}/${b.id}`)).json as Item,
      ];
      for (const [name, cases] of Object.entries(c.filters)) {
        for (const f of [cases].flat()) {
          const query = f.query(a1, b1);
          const res = await w.a.viewer.get(`${path}?${query}&limit=500`);
          t.is(res.status, 200, `${query}: ${res.text}`);
          const [wanted, unwanted] = f.wants === 'b' ? [b1, a1] : [a1, b1];
          t.true(ids(res).includes(wanted.id), `${name}: ${query} finds its item`);
          t.false(ids(res).includes(unwanted.id), `${name}: ${query} leaves the other out`);
          for (const item of res.json.items as Item[]) {
            t.true(f.matches(item, a1, b1), `${name}: ${query} returned ${JSON.stringify(item)}`);
          }
        }
      }

      // Paging: limit=1 walks every item once, following Link rel=next.
      const seen: string[] = [];
      let next: string | undefined = `${path}?limit=1`;
      while (next) {
        const res = await w.a.viewer.get(next);
        t.is(res.status, 200);
        t.is(res.json.items.length, 1);
        seen.push(...ids(res));
        const cursor = res.json.nextCursor as string | null;
        const link = res.headers.link as string | undefined;
        t.is(
          link,
          cursor === null ? undefined : `<${path}?limit=1&cursor=${cursor}>; rel="next"`,
          'Link rel=next exactly when there is a next page',
        );
        next = /^<([^>]+)>; rel="next"$/.exec(link ?? '')?.[1];
      }
      t.deepEqual(seen, ids(all), 'the pages, in order, are the whole list');

      // Update with a fresh If-Match: the change, a new version, the rest kept.
      const change = c.change(d);
      const updated = await eng.patch(`${path}/${a.id}`, change, { 'if-match': `"${a1.version}"` });
      t.is(updated.status, 200, updated.text);
      const a2 = updated.json as Item;
      t.is(a2.version, a1.version + 1);
      t.is(versionOf(updated.headers.etag), a2.version);
      for (const [field, value] of Object.entries(a1)) {
        if (field === 'version' || field === 'updatedAt') continue;
        const expected = field in change ? change[field] : value;
        t.deepEqual(normal(a2[field]), normal(expected), `${field} after the change`);
      }
      t.deepEqual((await eng.get(`${elsewhere}/${a.id}`)).json, a2, 'GET reads the change');
      t.true(ids(await eng.get(since(b))).includes(a.id), 'updatedSince sees the change');

      // A stale If-Match: 412 with the current version, and nothing changed.
      const stale = await eng.patch(`${path}/${a.id}`, change, { 'if-match': `"${a1.version}"` });
      problem(t, stale, 412, '/problems/stale-version', 'stale If-Match');
      t.is(stale.json.version, a2.version);
      problem(t, await eng.patch(`${path}/${a.id}`, change, { 'if-match': 'x' }), 412);
      // "<version>.<n>" is a tag only ISOs issue (their weld counts' version after the dot):
      // elsewhere it names nothing, even when its version part is the current one.
      if (!path.endsWith('/isos')) {
        const dotted = { 'if-match': `"${a2.version}.1"` };
        problem(t, await eng.patch(`${path}/${a.id}`, change, dotted), 412, undefined, 'N.M tag');
      }
      problem(t, await eng.patch(`${path}/${randomUUID()}`, change), 404, undefined, 'PATCH ?');

      // Read-only fields, sent back as GET returned them: 422 naming each, in PATCH and POST.
      const readOnlyPatch = ['id', 'version', 'createdAt', 'updatedAt', ...c.readOnly.patch];
      const echoed = await eng.patch(
        `${path}/${a.id}`,
        Object.fromEntries(readOnlyPatch.map((f) => [f, a2[f]])),
      );
      problem(t, echoed, 422, '/problems/validation-failed', 'read-only in PATCH');
      t.deepEqual(sorted(pointers(echoed)), sorted(readOnlyPatch.map((f) => `/${f}`)));
      t.true(echoed.json.errors.every((e: { detail: string }) => e.detail === 'is read-only here'));
      const readOnlyPost = ['id', 'version', 'createdAt', ...c.readOnly.post];
      const rows = await countRows(w, c.resource.table);
      const posted = await eng.post(path, {
        ...c.body(d, 5),
        ...Object.fromEntries(readOnlyPost.map((f) => [f, a2[f]])),
      });
      problem(t, posted, 422, '/problems/validation-failed', 'read-only in POST');
      t.deepEqual(sorted(pointers(posted)), sorted(readOnlyPost.map((f) => `/${f}`)));
      // Unknown fields are named as such.
      for (const res of [
        await eng.patch(`${path}/${a.id}`, { colour: 'red' }),
        await eng.post(path, { ...c.body(d, 6), colour: 'red' }),
      ]) {
        problem(t, res, 422, '/problems/validation-failed', 'unknown field');
        t.deepEqual(res.json.errors, [
          { pointer: '/colour', detail: 'is not a field of this object' },
        ]);
      }
      t.is(await countRows(w, c.resource.table), rows, 'the refused POSTs wrote nothing');
      t.is((await eng.get(`${path}/${a.id}`)).json.version, a2.version, 'nor the PATCHes');

      // Idempotency-Key: the same POST again replays the first answer and writes one row.
      const key = { 'idempotency-key': `flow-${randomUUID()}` };
      const first = await eng.post(path, c.body(d, 2), key);
      const again = await eng.post(path, c.body(d, 2), key);
      t.is(first.status, 201, first.text);
      t.is(again.status, 201, again.text);
      t.deepEqual(again.json, first.json);
      t.is(again.headers.location, first.headers.location);
      t.is(again.headers.etag, first.headers.etag);
      t.is(first.headers['idempotent-replayed'], undefined);
      t.is(again.headers['idempotent-replayed'], 'true');
      t.is(await countRows(w, c.resource.table), rows + 1, 'one row for the two POSTs');

      // Delete where the resource allows it (If-Match honoured), 405 where it does not.
      if (c.deletable) {
        const staleDelete = await eng.del(`${path}/${a.id}`, { 'if-match': `"${a1.version}"` });
        problem(t, staleDelete, 412, '/problems/stale-version', 'stale DELETE');
        t.is(staleDelete.json.version, a2.version);
        t.is((await eng.get(`${path}/${a.id}`)).status, 200, 'the stale DELETE deleted nothing');
        const gone = await eng.del(`${elsewhere}/${a.id}`, { 'if-match': `"${a2.version}"` });
        t.is(gone.status, 204, gone.text);
        t.is(gone.text, '');
        problem(t, await eng.get(`${path}/${a.id}`), 404, undefined, 'GET after DELETE');
        problem(t, await eng.del(`${path}/${a.id}`), 404, undefined, 'DELETE again');
        t.is(await countRows(w, c.resource.table, 'id = $2', [a.id]), 0);
      } else {
        const refused = await eng.del(`${path}/${a.id}`);
        problem(t, refused, 405, undefined, 'DELETE');
        t.false(String(refused.headers.allow).includes('DELETE'), 'Allow leaves DELETE out');
        t.true(String(refused.headers.allow).includes('PATCH'));
        t.is((await eng.get(`${path}/${a.id}`)).status, 200, 'still there');
      }
    });
  }
}

// ------------------------------------------------------------------------------------------------
// Refusals of each resource: roles, duplicate keys, references, other tenants

for (const c of CASES) {
  const path = `/${c.resource.path}`;

  test(`${path}: roles, duplicate keys, bad references and other tenants are refused`, async (t) => {
    const w = await world(t);
    const d = w.dA;
    const eng = w.a.engineer;
    const a = await create(eng, path, c.body(d, 0));
    const b = await create(eng, path, c.body(d, 1));
    const rows = await countRows(w, c.resource.table);

    // viewer and inspector may not write these; nothing is written, A stays as it was.
    for (const role of ['viewer', 'inspector'] as const) {
      const user = w.a[role];
      problem(
        t,
        await user.post(path, c.body(d, 2), { 'idempotency-key': `k-${role}` }),
        403,
        '/problems/role-not-allowed',
        `${role} POST`,
      );
      problem(
        t,
        await user.patch(`${path}/${a.id}`, c.change(d)),
        403,
        '/problems/role-not-allowed',
        `${role} PATCH`,
      );
      if (c.deletable) {
        problem(
          t,
          await user.del(`${path}/${a.id}`),
          403,
          '/problems/role-not-allowed',
          `${role} DELETE`,
        );
      }
    }
    t.is(await countRows(w, c.resource.table), rows, 'the refused roles wrote nothing');
    t.deepEqual((await eng.get(`${path}/${a.id}`)).json, a, 'item 0 unchanged');
    // The admin has the engineer's grants (so the 403s above were the role, not the request).
    t.is((await w.a.admin.post(path, c.body(d, 3))).status, 201);

    // A duplicate natural key: 409 naming its field(s), by POST and, where they may change, PATCH.
    if (c.naturalKey) {
      const key = c.naturalKey.map((f) => `/${f}`);
      const dup = await eng.post(path, c.body(d, 0));
      problem(t, dup, 409, '/problems/conflict', 'duplicate POST');
      t.deepEqual(sorted(pointers(dup)), sorted(key));
      if (c.naturalKey.every((f) => writableOnUpdate(c, f))) {
        const clash = await eng.patch(
          `${path}/${b.id}`,
          Object.fromEntries(c.naturalKey.map((f) => [f, a[f]])),
        );
        problem(t, clash, 409, '/problems/conflict', 'duplicate PATCH');
        t.deepEqual(sorted(pointers(clash)), sorted(key));
        t.deepEqual((await eng.get(`${path}/${b.id}`)).json, b, 'item 1 unchanged');
      }
    }

    // A reference to no row, or to another tenant's (invisible, so the same): 422 naming it.
    for (const ref of c.references) {
      const { field } = ref;
      const ours = d[ref.to][0]!;
      const theirs = w.dB[ref.to][0]!;
      const attempts: Array<[unknown, string, string]> = ref.list
        ? [
            [[randomUUID()], `/${field}/0`, 'a missing id'],
            [[ours, theirs], `/${field}/1`, "another tenant's id"],
          ]
        : [
            [randomUUID(), `/${field}`, 'a missing id'],
            [theirs, `/${field}`, "another tenant's id"],
          ];
      for (const [value, pointer, what] of attempts) {
        const label = `${field}: ${what}`;
        const posted = await eng.post(path, { ...c.body(d, 4), [field]: value });
        problem(t, posted, 422, '/problems/validation-failed', `POST ${label}`);
        t.deepEqual(pointers(posted), [pointer], `POST ${label}`);
        if (writableOnUpdate(c, field)) {
          const patched = await eng.patch(`${path}/${a.id}`, { [field]: value });
          problem(t, patched, 422, '/problems/validation-failed', `PATCH ${label}`);
          t.deepEqual(pointers(patched), [pointer], `PATCH ${label}`);
        }
      }
    }
    t.is(await countRows(w, c.resource.table), rows + 1, 'only the admin wrote a row');
    t.deepEqual((await eng.get(`${path}/${a.id}`)).json, a, 'item 0 still unchanged');

    // Another tenant's item (same natural key: keys are per tenant) is not found by its id.
    const theirs = await create(w.b, path, c.body(w.dB, 0));
    problem(t, await eng.get(`${path}/${theirs.id}`), 404, undefined, 'GET theirs');
    problem(t, await eng.patch(`${path}/${theirs.id}`, c.change(d)), 404, undefined, 'PATCH');
    if (c.deletable) problem(t, await eng.del(`${path}/${theirs.id}`), 404, undefined, 'DELETE');
    t.false(ids(await eng.get(`${path}?limit=500`)).includes(theirs.id), 'nor listed');
    problem(t, await w.b.get(`${path}/${a.id}`), 404, undefined, 'nor ours by them');
    t.deepEqual((await w.b.get(`${path}/${theirs.id}`)).json, theirs, 'theirs unchanged');
  });
}

// ------------------------------------------------------------------------------------------------
// The rules of particular resources

test('DELETE /isos/{id}: 409 still-referenced while it holds a weld, 204 once it holds none', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const iso = await create(eng, '/isos', caseOf(isos).body(w.dA, 0));
  const weld = await create(eng, '/welds', { ...caseOf(welds).body(w.dA, 0), isoId: iso.id });
  const refused = await eng.del(`/isos/${iso.id}`);
  problem(t, refused, 409, '/problems/still-referenced');
  t.deepEqual(
    (await eng.get(`/isos/${iso.id}`)).json,
    { ...iso, weldCounts: { ...zeroCounts, total: 1, pending: 1 } },
    'still there, unchanged but for the weld it holds',
  );
  // Only the weld held it: moved to another ISO, the delete goes through.
  t.is((await eng.patch(`/welds/${weld.id}`, { isoId: w.dA.isos[0] })).status, 200);
  t.is((await eng.del(`/api/isos/${iso.id}`)).status, 204);
});

const zeroCounts = { total: 0, pending: 0, accepted: 0, rejected: 0, repair: 0, voided: 0 };

test('GET /isos and /isos/{id}: weldCounts follow the welds, a PATCH /welds/{id}/status included', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const iso = await create(eng, '/isos', caseOf(isos).body(w.dA, 0));
  t.deepEqual(iso.weldCounts, zeroCounts, 'a new ISO counts no weld');
  const made: Item[] = [];
  for (const n of [0, 1, 2]) {
    made.push(await create(eng, '/welds', { ...caseOf(welds).body(w.dA, n), isoId: iso.id }));
  }
  const counts = async () => {
    const one = await w.a.viewer.get(`/isos/${iso.id}`);
    t.is(one.status, 200);
    const listed = await w.a.viewer.get(`/api/isos?isoNumber=${iso.isoNumber as string}`);
    t.is(listed.status, 200);
    t.deepEqual(listed.json.items, [one.json], 'the list shows what GET /isos/{id} shows');
    return one.json.weldCounts as Record<string, number>;
  };
  t.deepEqual(await counts(), { ...zeroCounts, total: 3, pending: 3 });

  const [first, second, third] = made as [Item, Item, Item];
  const status = (role: 'inspector' | 'engineer', weld: Item, body: Body) =>
    w.a[role].patch(`/welds/${weld.id}/status`, body);
  t.is((await status('inspector', first, { status: 'ACCEPTED' })).status, 200);
  t.deepEqual(await counts(), { ...zeroCounts, total: 3, pending: 2, accepted: 1 });
  t.is((await status('inspector', second, { status: 'REJECTED' })).status, 200);
  t.is((await status('engineer', second, { status: 'REPAIR' })).status, 200);
  t.is((await status('engineer', third, { status: 'VOIDED', reason: 'cut out' })).status, 200);
  t.deepEqual(await counts(), {
    total: 3,
    pending: 0,
    accepted: 1,
    rejected: 0,
    repair: 1,
    voided: 1,
  });
  // A refused change counts nothing.
  problem(t, await status('inspector', first, { status: 'PENDING' }), 409);
  t.deepEqual(await counts(), {
    total: 3,
    pending: 0,
    accepted: 1,
    rejected: 0,
    repair: 1,
    voided: 1,
  });
  // A weld moved to another ISO leaves this one's counts for the other's.
  const before = (await w.a.viewer.get(`/isos/${w.dA.isos[0]}`)).json.weldCounts;
  t.is((await eng.patch(`/welds/${first.id}`, { isoId: w.dA.isos[0] })).status, 200);
  t.deepEqual(await counts(), {
    total: 2,
    pending: 0,
    accepted: 0,
    rejected: 0,
    repair: 1,
    voided: 1,
  });
  t.deepEqual((await w.a.viewer.get(`/isos/${w.dA.isos[0]}`)).json.weldCounts, {
    ...before,
    total: before.total + 1,
    accepted: before.accepted + 1,
  });
  // Another tenant's ISO list carries its own counts only.
  const theirs = (await w.b.get('/isos?limit=500')).json.items as Item[];
  t.false(theirs.some((item) => item.id === iso.id));
});

test('DELETE /pqrs/{id}: 409 still-referenced while a WPS or a qualification refers to it', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const pqr = await create(eng, '/pqrs', caseOf(pqrs).body(w.dA, 0));
  const procedure = await create(eng, '/wps', { ...caseOf(wps).body(w.dA, 0), pqrIds: [pqr.id] });
  problem(t, await eng.del(`/pqrs/${pqr.id}`), 409, '/problems/still-referenced', 'by a WPS');
  t.is((await eng.get(`/pqrs/${pqr.id}`)).status, 200);
  const unlinked = await eng.patch(`/wps/${procedure.id}`, { pqrIds: [] });
  t.is(unlinked.status, 200);
  t.deepEqual(unlinked.json.pqrIds, []);
  // A change of the list alone is a change: a new version, so a cached copy is not "current".
  t.is(unlinked.json.version, procedure.version + 1, 'pqrIds alone bump the version');
  const cached = await eng.get(`/wps/${procedure.id}`, {
    'if-none-match': `"${procedure.version}"`,
  });
  t.is(cached.status, 200, 'the old ETag no longer matches');

  const qualification = await create(eng, '/welder-qualifications', {
    ...caseOf(welderQualifications).body(w.dA, 0),
    pqrId: pqr.id,
  });
  problem(t, await eng.del(`/pqrs/${pqr.id}`), 409, '/problems/still-referenced', 'by a WQ');
  t.is((await eng.del(`/welder-qualifications/${qualification.id}`)).status, 204);
  t.is((await eng.del(`/pqrs/${pqr.id}`)).status, 204, 'free at last');
});

test('test packages: once released, members cannot change and it cannot be deleted; open ones can', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const d = w.dA;
  const links = (id: string) =>
    countRows(
      w,
      '(select tenant_id, test_package_id from weld_public.test_package_isos union all select tenant_id, test_package_id from weld_public.test_package_welds) l',
      'test_package_id = $2',
      [id],
    );
  const pkg = await create(eng, '/test-packages', caseOf(testPackages).body(d, 0));
  t.is(await links(pkg.id), 2);
  // Not ready (its welds are not accepted), so the API refuses the release; a DBA releases it.
  const refused = await eng.patch(
    `/test-packages/${pkg.id}`,
    { state: 'released' },
    { 'if-match': `"${pkg.version}"` },
  );
  problem(t, refused, 409, '/problems/package-not-ready', 'release');
  await w.owner.query(`update weld_public.test_packages set state = 'released' where id = $1`, [
    pkg.id,
  ]);
  const released = await eng.get(`/test-packages/${pkg.id}`);
  t.is(released.json.state, 'released');

  for (const change of [
    { weldIds: [] },
    { weldIds: [d.welds[0], d.welds[1]] },
    { isoIds: [d.isos[1]] },
    { isoIds: [] },
  ]) {
    const res = await eng.patch(`/test-packages/${pkg.id}`, change);
    problem(t, res, 409, '/problems/state-conflict', JSON.stringify(change));
  }
  problem(t, await eng.del(`/test-packages/${pkg.id}`), 409, '/problems/state-conflict', 'DELETE');
  t.deepEqual((await eng.get(`/test-packages/${pkg.id}`)).json, released.json, 'unchanged');
  t.is(await links(pkg.id), 2, 'members unchanged');

  // An open package with members: its members may change, and it may be deleted with them.
  const open = await create(eng, '/test-packages', caseOf(testPackages).body(d, 1));
  const regrouped = await eng.patch(`/test-packages/${open.id}`, {
    weldIds: [d.welds[0], d.welds[1]],
  });
  t.is(regrouped.status, 200, regrouped.text);
  t.deepEqual(sorted(regrouped.json.weldIds), sorted([d.welds[0]!, d.welds[1]!]));
  t.is(regrouped.json.version, open.version + 1, 'weldIds alone bump the version');
  t.is((await eng.del(`/test-packages/${open.id}`)).status, 204);
  t.is(await links(open.id), 0, 'its links went with it');
  problem(t, await eng.get(`/test-packages/${open.id}`), 404);
});

test('GET /welds/{id}/history: oldest first, in pages with Link; 404 for unknown, foreign and bad ids', async (t) => {
  const w = await world(t);
  const { inspector, engineer } = w.a;
  const weld = await create(engineer, '/welds', caseOf(welds).body(w.dA, 0));
  const steps = [
    [inspector, { status: 'REJECTED', reason: 'RT: porosity' }],
    [engineer, { status: 'REPAIR' }],
    [inspector, { status: 'PENDING' }],
  ] as const;
  for (const [user, change] of steps) {
    const res = await user.patch(`/welds/${weld.id}/status`, change);
    t.is(res.status, 200, res.text);
  }

  const full = await w.a.viewer.get(`/welds/${weld.id}/history`);
  t.is(full.status, 200);
  t.is(full.json.nextCursor, null);
  t.is(full.headers.link, undefined);
  t.deepEqual(
    full.json.items.map((h: Item) => [h.fromStatus, h.toStatus, h.reason, h.changedBy, h.cause]),
    [
      ['PENDING', 'REJECTED', 'RT: porosity', w.userIds.inspector, 'user'],
      ['REJECTED', 'REPAIR', null, w.userIds.engineer, 'user'],
      ['REPAIR', 'PENDING', null, w.userIds.inspector, 'user'],
    ],
  );
  t.true(full.json.items.every((h: Item) => h.ndtRecordId === null));

  for (const prefix of PREFIXES) {
    const base = `${prefix}/welds/${weld.id}/history`;
    const first = await w.a.viewer.get(`${base}?limit=2`);
    t.is(first.status, 200);
    t.deepEqual(first.json.items, full.json.items.slice(0, 2));
    t.truthy(first.json.nextCursor);
    t.is(first.headers.link, `<${base}?limit=2&cursor=${first.json.nextCursor}>; rel="next"`);
    const second = await w.a.viewer.get(/^<([^>]+)>/.exec(String(first.headers.link))![1]!);
    t.deepEqual(second.json.items, full.json.items.slice(2));
    t.is(second.json.nextCursor, null);
    t.is(second.headers.link, undefined);
  }

  const untouched = await create(engineer, '/welds', caseOf(welds).body(w.dA, 1));
  t.deepEqual((await w.a.viewer.get(`/welds/${untouched.id}/history`)).json, {
    items: [],
    nextCursor: null,
  });
  for (const id of [randomUUID(), w.dB.welds[0]!, 'not-a-uuid']) {
    problem(t, await w.a.viewer.get(`/welds/${id}/history`), 404, undefined, id);
  }
  for (const [query, parameter] of [
    ['limit=0', 'limit'],
    ['cursor=abc', 'cursor'],
    ['since=1', 'since'],
  ] as const) {
    const res = await w.a.viewer.get(`/welds/${weld.id}/history?${query}`);
    problem(t, res, 422, '/problems/validation-failed', query);
    t.is(res.json.errors[0].parameter, parameter, query);
  }
});

// ------------------------------------------------------------------------------------------------
// Idempotency-Key (each resource's replay is in its flow above; the rest is the same code)

const isoBody = (w: World, n: number) => caseOf(isos).body(w.dA, n);
const ISOS = 'weld_public.isos';
const withKey = (key: string) => ({ 'idempotency-key': key });

test('Idempotency-Key reused for another request: 422 idempotency-key-reused, nothing written', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const first = await eng.post('/isos', isoBody(w, 0), withKey('reused'));
  t.is(first.status, 201);
  const rows = await countRows(w, ISOS);
  for (const [path, body] of [
    ['/isos', isoBody(w, 1)], // another body
    ['/api/isos', isoBody(w, 1)],
    ['/welders', caseOf(welders).body(w.dA, 0)], // another resource
  ] as const) {
    const res = await eng.post(path, body, withKey('reused'));
    problem(t, res, 422, '/problems/idempotency-key-reused', path);
    t.deepEqual(
      res.json.errors.map((e: { parameter: string }) => e.parameter),
      ['Idempotency-Key'],
    );
  }
  t.is(await countRows(w, ISOS), rows);
  t.is(await countRows(w, 'weld_public.welders', "stamp = 'S-0'"), 0);
  // The first request itself still replays.
  const again = await eng.post('/isos', isoBody(w, 0), withKey('reused'));
  t.is(again.headers['idempotent-replayed'], 'true');
  t.deepEqual(again.json, first.json);
});

test('Idempotency-Key belongs to the user and the tenant: the same key elsewhere is independent', async (t) => {
  const w = await world(t);
  const mine = await w.a.engineer.post('/isos', isoBody(w, 0), withKey('shared'));
  // ISOs have a natural key, so the other users send other bodies.
  const admins = await w.a.admin.post('/isos', isoBody(w, 1), withKey('shared'));
  t.is(admins.status, 201, admins.text);
  t.is(admins.headers['idempotent-replayed'], undefined);
  t.not(admins.json.id, mine.json.id);
  const tenantB = await w.b.post('/isos', caseOf(isos).body(w.dB, 0), withKey('shared'));
  t.is(tenantB.status, 201, tenantB.text);
  t.is(tenantB.headers['idempotent-replayed'], undefined);
  t.is(await countRows(w, ISOS, "iso_number in ('ISO-0', 'ISO-1')"), 2);

  // Without a natural key the very same body makes a row per user, and replays per user.
  const table = 'weld_public.welder_qualifications';
  const body = caseOf(welderQualifications).body(w.dA, 0);
  const path = '/welder-qualifications';
  const q1 = await w.a.engineer.post(path, body, withKey('same'));
  const q2 = await w.a.admin.post(path, body, withKey('same'));
  t.is(q1.status, 201);
  t.is(q2.status, 201);
  t.not(q2.json.id, q1.json.id, "the admin's own qualification, not the engineer's answer");
  t.is(q2.headers['idempotent-replayed'], undefined);
  const q3 = await w.a.engineer.post(path, body, withKey('same'));
  t.is(q3.json.id, q1.json.id);
  t.is(q3.headers['idempotent-replayed'], 'true');
  t.is(await countRows(w, table), 2);
});

test('Idempotency-Key of a refused request is not used up: the corrected request succeeds with it', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  await create(eng, '/isos', isoBody(w, 0));
  const clash = await eng.post('/isos', isoBody(w, 0), withKey('retry'));
  problem(t, clash, 409, '/problems/conflict', 'the duplicate');
  const fixed = await eng.post('/isos', isoBody(w, 1), withKey('retry'));
  t.is(fixed.status, 201, fixed.text);
  t.is(fixed.headers['idempotent-replayed'], undefined);
  const again = await eng.post('/isos', isoBody(w, 1), withKey('retry'));
  t.is(again.status, 201);
  t.is(again.headers['idempotent-replayed'], 'true');
  t.deepEqual(again.json, fixed.json);
  t.is(await countRows(w, ISOS, "iso_number = 'ISO-1'"), 1);
});

test('Idempotency-Key: 1 to 255 visible ASCII characters, else 422 and nothing written', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const rows = await countRows(w, ISOS);
  for (const key of ['k'.repeat(256), 'two words', '']) {
    const res = await eng.post('/isos', isoBody(w, 0), withKey(key));
    problem(t, res, 422, '/problems/validation-failed', `key of ${key.length}`);
    t.deepEqual(
      res.json.errors.map((e: { parameter: string }) => e.parameter),
      ['Idempotency-Key'],
    );
  }
  t.is(await countRows(w, ISOS), rows, 'nothing written');
  const longest = 'k'.repeat(255);
  const first = await eng.post('/isos', isoBody(w, 0), withKey(longest));
  t.is(first.status, 201, first.text);
  const again = await eng.post('/isos', isoBody(w, 0), withKey(longest));
  t.is(again.headers['idempotent-replayed'], 'true');
  t.is(await countRows(w, ISOS), rows + 1);
});

test('Idempotency-Key: two concurrent POSTs with one key make one row and get one answer', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const rows = await countRows(w, 'weld_public.welder_qualifications');
  // A few rounds, so the race is run, not just the sequential case.
  for (let round = 0; round < 4; round++) {
    const body = caseOf(welderQualifications).body(w.dA, round);
    const send = () => eng.post('/welder-qualifications', body, withKey(`race-${round}`));
    const [x, y] = await Promise.all([send(), send()]);
    t.is(x.status, 201, x.text);
    t.is(y.status, 201, y.text);
    t.deepEqual(y.json, x.json, 'the same item');
    t.is(y.headers.location, x.headers.location);
    t.is(y.headers.etag, x.headers.etag);
    t.is(
      [x, y].filter((r) => r.headers['idempotent-replayed'] === 'true').length,
      1,
      'one wrote, the other replayed',
    );
  }
  t.is(await countRows(w, 'weld_public.welder_qualifications'), rows + 4);
});
