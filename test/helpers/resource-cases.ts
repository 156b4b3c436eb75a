// The generic REST resources (rest-adapter/resource.ts) described once for their tests
// (test/http/resources-*.test.ts): ISOs, welds, welders, PQRs, WPSs, welder qualifications and
// test packages, each in CASES (a valid create body, a change, one or more cases per list filter,
// its natural key, its references); the world of one test, and the assertions they share.
import type { ExecutionContext } from 'ava';
import type pg from 'pg';
import { hashPassword } from '../../db/passwords.ts';
import { addTenant } from '../../db/tenants.ts';
import { components } from '../../rest-adapter/components.ts';
import { fillerLots, weldFillers } from '../../rest-adapter/fillers.ts';
import { hardnessReadings, pwhtRecords } from '../../rest-adapter/heat-treatment.ts';
import { isos } from '../../rest-adapter/isos.ts';
import { pqrs } from '../../rest-adapter/pqrs.ts';
import type { Resource } from '../../rest-adapter/resource.ts';
import { testPackages } from '../../rest-adapter/test-packages.ts';
import { welderQualifications } from '../../rest-adapter/welder-qualifications.ts';
import { welders } from '../../rest-adapter/welders.ts';
import { welds } from '../../rest-adapter/welds.ts';
import { wps } from '../../rest-adapter/wps.ts';
import { login, PASSWORD } from './auth.ts';
import { migratedDatabase } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { bearerClient as client, type Client, type HttpResponse } from './http.ts';
import { startServer, worldSlots } from './server.ts';

/**
 * The version an entity tag names: "<version>", or for an ISO "<version>.<version of its weld
 * counts>" (rest-adapter/isos.ts).
 */
export const versionOf = (etag: string | undefined) =>
  Number(/^"(\d+)(?:\.\d+)?"$/.exec(etag ?? '')?.[1]);

export const A = 'a.test';
export const B = 'b.test';
export const PREFIXES = ['', '/api'] as const;
export const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export type Body = Record<string, unknown>;
export type Item = Body & { id: string; version: number; createdAt: string; updatedAt: string };

// ------------------------------------------------------------------------------------------------
// The world of one test

/** Rows the bodies refer to, made by the owner: two of each, so two items can differ. */
export interface Deps {
  isos: string[];
  welders: string[];
  pqrs: string[];
  wps: string[];
  welds: string[];
  components: string[];
  fillerLots: string[];
}

export interface World {
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
export const passwordHash = hashPassword(PASSWORD);

// At most 6 worlds at once (helpers/server.ts).
export const worldSlot = worldSlots(6);

export async function backdrop(owner: pg.Client, tenant: string): Promise<Deps> {
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
    // Components of heats BD-HEAT-0 and BD-HEAT-1, which no backdrop weld joins.
    components: await ids(
      `insert into weld_public.components (tenant_id, tag, kind, material_spec, p_number, heat_number)
       select $1, 'BD-C-' || n, 'pipe', 'A106', '1', 'BD-HEAT-' || n from generate_series(0, 1) n
       order by n returning id`,
    ),
    fillerLots: await ids(
      `insert into weld_public.filler_lots (tenant_id, aws_classification, lot_number, f_number)
       select $1, 'E7018', 'BD-LOT-' || n, 4 from generate_series(0, 1) n order by n returning id`,
    ),
  };
}

/** Tenant A (four users, one per role) and tenant B (an engineer), each with its backdrop. */
export async function world(t: ExecutionContext): Promise<World> {
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

export function problem(
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
export const pointers = (res: HttpResponse): string[] =>
  (res.json?.errors ?? []).map((e: { pointer?: string }) => e.pointer);

export const sorted = (values: string[]) => [...values].sort();
/** Lists of ids come back in id order, so compare them as sets. */
export const normal = (value: unknown) =>
  Array.isArray(value) ? [...(value as unknown[])].map(String).sort() : value;
export const ids = (res: HttpResponse): string[] => res.json.items.map((i: Item) => i.id);

/** POSTs and insists on 201 (a failure here would only confuse the assertions after it). */
export async function create(client: Client, path: string, body: Body): Promise<Item> {
  const res = await client.post(path, body);
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
  return res.json as Item;
}

/** Insists on 200 from a request that only prepares a test. */
export async function expect200(response: Promise<HttpResponse>): Promise<void> {
  const res = await response;
  if (res.status !== 200) throw new Error(`expected 200: ${res.status} ${res.text}`);
}

/** The tenant's rows in a table, counted as the owner (beside the API, past row security). */
export async function countRows(w: World, table: string, where = 'true', params: unknown[] = []) {
  const { rows } = await w.owner.query<{ n: number }>(
    `select count(*)::int as n from ${table} where tenant_id = $1 and ${where}`,
    [w.tenantA, ...params],
  );
  return rows[0]!.n;
}

// ------------------------------------------------------------------------------------------------
// The resources, described once

/** A list filter's case: `query` must return `a` (or `b`) and not the other. */
export interface FilterCase {
  query(a: Item, b: Item): string;
  wants?: 'b';
  /** True of every item the query may return (the backdrop's rows too). */
  matches(item: Item, a: Item, b: Item): boolean;
}

/** The filter of a field, matching equal values: `a`'s value finds `a`. */
export const equal = (name: string): FilterCase => ({
  query: (a) => `${name}=${encodeURIComponent(String(a[name]))}`,
  matches: (item, a) => item[name] === a[name],
});

export interface Reference {
  field: string;
  to: keyof Deps;
  /** An id list (pqrIds): a bad member is named by its index. */
  list?: true;
}

export interface ResourceCase {
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
  /** The roles refused every write (403); default viewer and inspector (engineers write). */
  refused?: Role[];
}

/** In force on `day`: qualified on or before it, and not expired. */
export const inForce = (item: Item, day: string) =>
  (item.qualifiedOn as string) <= day &&
  (item.expiresOn === null || (item.expiresOn as string) >= day);

export const CASES: ResourceCase[] = [
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
      // ISO 1 holds a weld joining component 0 (of heat BD-HEAT-0); ISO 0 is deleted later.
      heatNumber: {
        query: () => 'heatNumber=BD-HEAT-0',
        wants: 'b',
        matches: (item, _a, b) => item.id === b.id,
      },
    },
    beforeFilters: async (w, _base, _a, b) => {
      await w.owner.query(
        `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, component_1_id)
         values ($1, $2, 'HEAT-W', 'BW', 4, $3)`,
        [w.tenantA, b.id, w.dA.components[0]],
      );
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
      preheatF: 50 + n,
      component1Id: d.components[n % 2],
    }),
    change: (d) => ({
      size: 6,
      schedule: 'XS',
      material: null,
      welderId: d.welders[1],
      preheatF: 200,
      component1Id: null,
    }),
    filters: {
      isoId: equal('isoId'),
      weldNumber: equal('weldNumber'),
      type: equal('type'),
      welderId: equal('welderId'),
      wpsId: equal('wpsId'),
      // Weld 0 joins component 0, of heat BD-HEAT-0 (weld 1 component 1; the backdrop's none).
      heatNumber: {
        query: () => 'heatNumber=BD-HEAT-0',
        matches: (item, a) => item.component1Id === a.component1Id,
      },
      status: [
        { query: () => 'status=PENDING', matches: (i) => i.status === 'PENDING' },
        {
          query: () => 'status=REJECTED,PENDING',
          matches: (i) => i.status === 'REJECTED' || i.status === 'PENDING',
        },
        { query: () => 'status=ACCEPTED', wants: 'b', matches: (i) => i.status === 'ACCEPTED' },
      ],
    },
    // Every weld starts PENDING: the engineer accepts weld 1 on a disposition (the status has its
    // own path, and an acceptance names its basis).
    beforeFilters: (w, base, _a, b) =>
      expect200(
        w.a.engineer.patch(`${base}/${b.id}/status`, {
          status: 'ACCEPTED',
          disposition: 'NCR-1 use as is',
        }),
      ),
    readOnly: {
      post: ['status', 'repairCycle', 'acceptanceDisposition'],
      patch: ['status', 'repairCycle', 'acceptanceNdtRecordId'],
    },
    naturalKey: ['isoId', 'weldNumber'],
    references: [
      { field: 'isoId', to: 'isos' },
      { field: 'welderId', to: 'welders' },
      { field: 'wpsId', to: 'wps' },
      { field: 'component1Id', to: 'components' },
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
      fNumbers: n % 2 ? [6] : [4, 6],
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
    // that is ready, which code-rules-checks.test.ts covers).
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
  {
    resource: pwhtRecords,
    body: (d, n) => ({
      recordNumber: `PW-${n}`,
      treatedOn: n % 2 ? '2026-03-11' : '2026-03-10',
      holdingTemperatureF: 1150,
      holdMinutes: 60 + n,
      heatingRateFPerH: 400,
      coolingRateFPerH: n % 2 ? null : 500,
      chartRef: `chart-${n}.pdf`,
      weldIds: [d.welds[n % 2]],
    }),
    change: (d) => ({
      holdingTemperatureF: 1175,
      chartRef: null,
      weldIds: [d.welds[0], d.welds[1]],
    }),
    filters: {
      recordNumber: equal('recordNumber'),
      treatedOn: equal('treatedOn'),
      weldId: {
        query: (a) => `weldId=${(a.weldIds as string[])[0]}`,
        matches: (item, a) => (item.weldIds as string[]).includes((a.weldIds as string[])[0]!),
      },
    },
    readOnly: { post: [], patch: [] },
    naturalKey: ['recordNumber'],
    references: [{ field: 'weldIds', to: 'welds', list: true }],
    deletable: true,
    refused: ['viewer'],
  },
  {
    resource: hardnessReadings,
    body: (d, n) => ({
      weldId: d.welds[n % 2],
      measuredOn: '2026-03-12',
      location: n % 2 ? 'haz' : 'weld',
      hardnessHb: 180 + n,
      reportRef: n % 2 ? null : `HT-${n}`,
    }),
    change: () => ({ hardnessHb: 210, location: 'base', reportRef: 'HT-9' }),
    filters: { weldId: equal('weldId'), location: equal('location') },
    readOnly: { post: [], patch: ['weldId'] },
    references: [{ field: 'weldId', to: 'welds' }],
    deletable: true,
    refused: ['viewer'],
  },
  {
    resource: components,
    body: (_d, n) => ({
      tag: `C-${n}`,
      kind: n % 2 ? 'fitting' : 'pipe',
      description: n % 2 ? 'Elbow 90 LR' : null,
      materialSpec: n % 2 ? 'A234' : 'A106',
      grade: n % 2 ? 'WPB' : 'B',
      pNumber: n % 2 ? '1' : '5A',
      groupNumber: n % 2 ? 2 : 1,
      size: 8,
      schedule: '40',
      heatNumber: `HEAT-${n}`,
      mtrRef: `MTR-${n}`,
    }),
    change: () => ({ heatNumber: 'HEAT-9', description: 'Pipe, re-marked', groupNumber: null }),
    filters: {
      tag: equal('tag'),
      kind: equal('kind'),
      materialSpec: equal('materialSpec'),
      pNumber: equal('pNumber'),
      heatNumber: equal('heatNumber'),
    },
    readOnly: { post: [], patch: [] },
    naturalKey: ['tag'],
    references: [],
    deletable: true,
  },
  {
    resource: fillerLots,
    body: (_d, n) => ({
      awsClassification: n % 2 ? 'ER70S-2' : 'E7018',
      lotNumber: `LOT-${n}`,
      spec: n % 2 ? 'SFA-5.18' : 'SFA-5.1',
      fNumber: n % 2 ? 6 : 4,
      aNumber: 1,
      certificateRef: n % 2 ? null : `CERT-${n}`,
    }),
    change: () => ({ certificateRef: 'CERT-9', aNumber: null }),
    filters: {
      awsClassification: equal('awsClassification'),
      lotNumber: equal('lotNumber'),
    },
    readOnly: { post: [], patch: [] },
    naturalKey: ['awsClassification', 'lotNumber'],
    references: [],
    deletable: true,
  },
  {
    resource: weldFillers,
    body: (d, n) => ({
      weldId: d.welds[n % 2],
      process: ['SMAW', 'GTAW', 'PAW', 'FCAW'][n % 4],
      fillerLotId: d.fillerLots[n % 2],
    }),
    change: (d) => ({ process: 'GMAW', fillerLotId: d.fillerLots[1] }),
    filters: {
      weldId: equal('weldId'),
      process: equal('process'),
      fillerLotId: equal('fillerLotId'),
    },
    readOnly: { post: [], patch: ['weldId'] },
    naturalKey: ['weldId', 'process', 'fillerLotId'],
    references: [
      { field: 'weldId', to: 'welds' },
      { field: 'fillerLotId', to: 'fillerLots' },
    ],
    deletable: true,
    refused: ['viewer'],
  },
];

export const caseOf = (resource: Resource) => CASES.find((c) => c.resource === resource)!;
export const writableOnUpdate = (c: ResourceCase, field: string) =>
  Boolean(c.resource.patchBody && field in c.resource.patchBody.shape);
// Not filters: paging, the change filter, the list's format (JSON or, for welds, CSV:
// imports.test.ts) and its order (GET /welds?sort=: welds.test.ts).
export const LIST_PARAMETERS = ['limit', 'cursor', 'updatedSince', 'format', 'sort'];
