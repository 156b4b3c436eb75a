// The world of the code-rule tests over real HTTP (test/http/code-rules*.test.ts): two tenants on
// a server of their own, a client per role at each origin, GraphQL as tenant A's users, and
// makers that build tenant A's records over REST as a client would (its engineer; NDT records as
// its inspector). Every response is also checked against the OpenAPI document (helpers/http.ts).
import type { ExecutionContext } from 'ava';
import type pg from 'pg';
import type { AttachmentStore } from '../../db/attachment-store.ts';
import { addTenant } from '../../db/tenants.ts';
import type { KeyRing } from '../../rest-adapter/http/auth/keys.ts';
import { addRoleUsers, login } from './auth.ts';
import { migratedDatabase } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { bearerClient as client, request, type Client, type HttpResponse } from './http.ts';
import { startServer, worldSlots } from './server.ts';

export const A = 'a.test';
export const B = 'b.test';
export const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type Role = (typeof ROLES)[number];
export type Body = Record<string, unknown>;

// At most 4 worlds at once (helpers/server.ts).
const worldSlot = worldSlots(4);

export interface World {
  port: number;
  owner: pg.Client;
  tenantA: string;
  tenantB: string;
  userIds: Record<Role, string>;
  /** Tenant A's users at A's origin, and tenant B's at B's. */
  a: Record<Role, Client>;
  b: Record<Role, Client>;
  /** GraphQL at A's origin as one of A's users. */
  gql: (role: Role, query: string, variables?: object) => Promise<HttpResponse>;
  make: ReturnType<typeof makers>;
  /** The server's key ring: tests sign tokens of their own with the tenants' keys. */
  ring: KeyRing;
  /** Where the server keeps attachments. */
  attachmentStore: AttachmentStore;
  /** The server's pool (as its authenticator login). */
  pool: pg.Pool;
}

export async function world(
  t: ExecutionContext,
  serverOptions: Parameters<typeof startServer>[2] = {},
): Promise<World> {
  await worldSlot(t);
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenantA = (await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] })).id;
  const tenantB = (await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] })).id;
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  const { rows } = await owner.query<{ role: Role; id: string }>(
    'select role, id from weld_public.users where tenant_id = $1',
    [tenantA],
  );
  const userIds = Object.fromEntries(rows.map((r) => [r.role, r.id])) as Record<Role, string>;
  const { port, ring, attachmentStore, pool } = await startServer(t, target, serverOptions);
  const a = {} as Record<Role, Client>;
  const b = {} as Record<Role, Client>;
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) {
    tokens[role] = (await login(port, A, role)).json.accessToken;
    a[role] = client(port, A, tokens[role]);
    b[role] = client(port, B, (await login(port, B, role)).json.accessToken);
  }
  const gql: World['gql'] = (role, query, variables) =>
    request(port, {
      method: 'POST',
      path: '/graphql',
      host: A,
      body: { query, variables },
      headers: { authorization: `Bearer ${tokens[role]}` },
    });
  return {
    port,
    owner,
    tenantA,
    tenantB,
    userIds,
    a,
    b,
    gql,
    make: makers(a),
    ring,
    attachmentStore,
    pool,
  };
}

/** The answer's JSON, or an error naming what was answered instead. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function ok(res: HttpResponse, status = 200): any {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.json;
}

/** Tenant A's records, made over REST as its engineer (NDT records as its inspector). */
export function makers(a: Record<Role, Client>) {
  const create = async (path: string, body: Body) =>
    ok(await a.engineer.post(path, body), 201) as Body & { id: string };
  return {
    iso: (isoNumber: string, lineNumber: string, extra: Body = {}) =>
      create('/isos', { isoNumber, lineNumber, ...extra }),
    welder: (stamp: string) => create('/welders', { stamp, name: `Welder ${stamp}` }),
    /** A GTAW PQR of P-No. 1 to 1, coupon T 0.5 in. (QW-451.1: 3/16 to 1 in.). */
    pqr: (pqrNumber: string, extra: Body = {}) =>
      create('/pqrs', {
        pqrNumber,
        process: 'GTAW',
        pNumbers: ['1'],
        thicknessTestedIn: 0.5,
        ...extra,
      }),
    /**
     * An approved GTAW WPS for P-No. 1 to 1, 3/16 to 1 in, from 2.875 in outside diameter up,
     * backed by a PQR of its own that supports that.
     */
    wps: async (wpsNumber: string, extra: Body = {}) =>
      create('/wps', {
        wpsNumber,
        process: 'GTAW',
        state: 'approved',
        pNumbers: ['1'],
        thicknessMinIn: 0.1875,
        thicknessMaxIn: 1,
        diameterMinIn: 2.875,
        diameterMaxIn: null,
        pqrIds: [
          (
            ok(
              await a.engineer.post('/pqrs', {
                pqrNumber: `PQR-${wpsNumber}`,
                process: extra.process ?? 'GTAW',
                pNumbers: ['1'],
                thicknessTestedIn: 0.5,
              }),
              201,
            ) as Body & { id: string }
          ).id,
        ],
        ...extra,
      }),
    /** A GTAW qualification from 2026-01-10, 2.875 in OD up, to 1 in thick. */
    qualification: (welderId: string, extra: Body = {}) =>
      create('/welder-qualifications', {
        welderId,
        process: 'GTAW',
        qualifiedOn: '2026-01-10',
        diameterMinIn: 2.875,
        thicknessMaxIn: 1,
        ...extra,
      }),
    /**
     * A butt weld, NPS 6, 0.28 in wall, P-No. 1 to 1, welded 2026-03-01 with 50 F preheat (B31.3
     * Table 330.1.1's minimum for it); the rest from `body`.
     */
    weld: (body: Body) =>
      create('/welds', {
        type: 'BW',
        size: 6,
        wallThickness: 0.28,
        weldedOn: '2026-03-01',
        baseMetal1PNumber: '1',
        baseMetal2PNumber: '1',
        preheatF: 50,
        ...body,
      }),
    testPackage: (packageNumber: string, extra: Body = {}) =>
      create('/test-packages', { packageNumber, testMedium: 'hydro', ...extra }),
    /** An RT record by A's inspector with the results given, weld by weld. */
    rt: async (reportNumber: string, results: Record<string, 'accepted' | 'rejected'>) =>
      ok(
        await a.inspector.post('/ndt-records', {
          method: 'RT',
          reportNumber,
          examinedOn: '2026-04-01',
          welds: Object.entries(results).map(([weldId, result]) => ({ weldId, result })),
        }),
        201,
      ) as Body & { id: string },
  };
}

/** Runs the calls `width` at a time, in order of the list. */
export async function inBatches<T>(items: T[], width: number, call: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map(call));
  }
}

export const sorted = <T>(list: T[]) => [...list].sort();
export const idsOf = (res: HttpResponse): string[] =>
  res.json.items.map((i: { id: string }) => i.id);
export const today = () => new Date().toISOString().slice(0, 10);

export function problemOf(
  t: ExecutionContext,
  res: HttpResponse,
  status: number,
  type?: string,
): void {
  t.is(res.status, status, res.text);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/);
  if (type) t.is(res.json.type, type, res.text);
}

/** What a 422 names: pointers and parameters, each once (a value may break two rules). */
export const named = (res: HttpResponse): string[] => [
  ...new Set<string>(
    (res.json?.errors ?? []).map(
      (e: { pointer?: string; parameter?: string }) => e.pointer ?? e.parameter,
    ),
  ),
];

/**
 * A test package of tenant A that is ready for release: an ISO on its own line with two welds by
 * a qualified welder to an approved WPS, both radiographed and visually inspected, accepted.
 * `prefix` keeps the numbers of several such packages apart.
 */
export async function readyPackage(w: World, prefix: string) {
  const iso = await w.make.iso(`${prefix}-ISO`, `${prefix}-L`);
  const welder = await w.make.welder(`${prefix}-W`);
  await w.make.qualification(welder.id);
  const wps = await w.make.wps(`${prefix}-WPS`);
  const welds = [
    await w.make.weld({
      isoId: iso.id,
      weldNumber: `${prefix}-1`,
      welderId: welder.id,
      wpsId: wps.id,
    }),
    await w.make.weld({
      isoId: iso.id,
      weldNumber: `${prefix}-2`,
      welderId: welder.id,
      wpsId: wps.id,
    }),
  ];
  const rt = await w.make.rt(`${prefix}-RT`, {
    [welds[0]!.id]: 'accepted',
    [welds[1]!.id]: 'accepted',
  });
  ok(
    await w.a.inspector.post('/inspections', {
      kind: 'visual',
      inspectedOn: '2026-03-02',
      result: 'accepted',
      weldIds: welds.map((weld) => weld.id),
    }),
    201,
  );
  const pkg = await w.make.testPackage(`${prefix}-TP`, { isoIds: [iso.id] });
  return { iso, welder, wps, welds, pkg, rt };
}
