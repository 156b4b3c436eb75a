// The world of the code-rule tests (test/db/rules-*.test.ts): two tenants of a database of the
// test's own, rows written as a DBA would (the owner), examinations and draws through the SQL
// functions as the inspector, and the rules' answers read as the viewer.
//
// Its defaults are a weld in order under B31.3 and ASME IX, so that a test changes only what its
// paragraph is about: an ISO in normal service (5% RT, 5% VT); a PQR per process, P-No. 1 to 1,
// coupon T 0.5 in. (QW-451.1: 3/16 in. to 1 in.); an approved WPS backed by it with that range;
// a welder qualified on 2026-01-10 with a 6.625 in. OD, 0.5 in. coupon (QW-452.3: OD 2.875 in.
// and up; QW-452.1(b): up to 1 in.); a butt weld NPS 4 (OD 4.5 in.), wall 0.237 in., P-No. 1 to
// 1, welded on 2026-02-01 with 50 F preheat (B31.3 Table 330.1.1's minimum for it).
import { createHash } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from './fixtures.ts';

export type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';
/** What an acceptance rests on: one of the three (weld_public.change_weld_status). */
export interface Basis {
  ndtRecordId?: string;
  inspectionId?: string;
  disposition?: string;
}
export type Result = 'accepted' | 'rejected';
export type Row = Record<string, unknown>;

export interface Selection {
  id: string;
  weld_id: string;
  method: string;
  tier: string;
  seed: string | null;
  reason: string;
  cause_selection_id: string | null;
  cause_ndt_record_id: string | null;
  cause_inspection_id: string | null;
  weld_number: string;
  welder_id: string | null;
  state: string;
}

export interface Reason {
  code: string;
  weld_id: string | null;
  iso_id: string | null;
  detail: string;
}

/** A fixed UUID per number: the same in every tenant, so md5 rankings can be reproduced. */
export const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
export const md5 = (text: string) => createHash('md5').update(text).digest('hex');
export const sqlstate = (error: unknown) => (error as { code?: string } | undefined)?.code;
/** The JSON of a refusal's DETAIL. */
export const detailOf = (error: unknown) =>
  JSON.parse((error as { detail: string }).detail) as Record<string, unknown>;

export async function rulesWorld(t: ExecutionContext) {
  const { owner, pool, a, b } = await twoTenants(t);
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );

  const columns = (row: Row) => {
    const keys = Object.keys(row);
    return {
      names: keys.join(', '),
      params: keys.map((_, i) => `$${i + 1}`).join(', '),
      values: Object.values(row),
    };
  };
  /** Inserts a row as the owner (a DBA) and returns its id. */
  const insert = async (table: string, row: Row) => {
    const { names, params, values } = columns(row);
    const { rows } = await owner.query<{ id: string }>(
      `insert into weld_public.${table} (${names}) values (${params}) returning id`,
      values,
    );
    return rows[0]!.id;
  };
  /** Inserts a row of a link table (it has no id) as the owner. */
  const link = async (table: string, row: Row) => {
    const { names, params, values } = columns(row);
    await owner.query(`insert into weld_public.${table} (${names}) values (${params})`, values);
  };
  /** Runs SQL as an API user of the tenant. */
  const sqlAs = async <R extends pg.QueryResultRow = Row>(
    fx: TenantFixture,
    role: Role,
    sql: string,
    params: unknown[] = [],
  ) => as(fx, role, async (c) => (await c.query<R>(sql, params)).rows);

  const iso = (fx: TenantFixture, number: string, line: string, extra: Row = {}) =>
    insert('isos', { tenant_id: fx.tenantId, iso_number: number, line_number: line, ...extra });
  const welder = (fx: TenantFixture, stamp: string, extra: Row = {}) =>
    insert('welders', { tenant_id: fx.tenantId, stamp, name: `Welder ${stamp}`, ...extra });
  const pqr = (fx: TenantFixture, number: string, process: string, extra: Row = {}) =>
    insert('pqrs', {
      tenant_id: fx.tenantId,
      pqr_number: number,
      process,
      p_numbers: ['1'],
      thickness_tested_in: 0.5,
      diameter_tested_in: 6.625,
      ...extra,
    });
  /** An approved WPS backed by `pqrs` (default: a new PQR of its process, P-No. 1, T 0.5 in.). */
  const wps = async (
    fx: TenantFixture,
    number: string,
    process: string,
    extra: Row = {},
    pqrIds?: string[],
  ) => {
    const id = await insert('wps', {
      tenant_id: fx.tenantId,
      wps_number: number,
      process,
      state: 'approved',
      p_numbers: ['1'],
      thickness_min_in: 0.1875,
      thickness_max_in: 1,
      ...extra,
    });
    for (const pqrId of pqrIds ?? [await pqr(fx, `PQR-${number}`, process)]) {
      await link('wps_pqrs', { tenant_id: fx.tenantId, wps_id: id, pqr_id: pqrId });
    }
    return id;
  };
  const qualification = (fx: TenantFixture, welderId: string, extra: Row = {}) =>
    insert('welder_qualifications', {
      tenant_id: fx.tenantId,
      welder_id: welderId,
      qualified_on: '2026-01-10',
      coupon_diameter_in: 6.625,
      coupon_thickness_in: 0.5,
      ...extra,
    });
  const weld = (fx: TenantFixture, isoId: string, number: string, extra: Row = {}) =>
    insert('welds', {
      tenant_id: fx.tenantId,
      iso_id: isoId,
      weld_number: number,
      type: 'BW',
      size: 4,
      wall_thickness: 0.237,
      base_metal_1_p_number: '1',
      base_metal_2_p_number: '1',
      welded_on: '2026-02-01',
      preheat_f: 50,
      ...extra,
    });
  /** `count` welds numbered prefix-01, prefix-02, ... of one welder on one ISO. */
  const weldsOf = async (
    fx: TenantFixture,
    isoId: string,
    welderId: string | null,
    prefix: string,
    count: number,
    extra: Row = {},
  ) => {
    const ids: string[] = [];
    for (let i = 1; i <= count; i++) {
      const number = `${prefix}-${String(i).padStart(2, '0')}`;
      ids.push(await weld(fx, isoId, number, { welder_id: welderId, ...extra }));
    }
    return ids;
  };
  /** A welder qualified for `process` (SMAW by default), and the WPS they weld with. */
  const qualifiedWelder = async (
    fx: TenantFixture,
    stamp: string,
    wpsId: string,
    extra: Row = {},
  ) => {
    const id = await welder(fx, stamp);
    const { rows } = await owner.query<{ process: string }>(
      'select process from weld_public.wps where id = $1',
      [wpsId],
    );
    await qualification(fx, id, { process: rows[0]!.process, ...extra });
    return id;
  };
  const dba = (sql: string, params: unknown[] = []) => owner.query(sql, params);
  const setting = (fx: TenantFixture, name: string, value: unknown) =>
    dba(`update weld_public.tenant_settings set ${name} = $2 where tenant_id = $1`, [
      fx.tenantId,
      value,
    ]);

  const draw = async (
    fx: TenantFixture,
    args: { method?: string; line?: string | null; iso?: string | null; seed?: number | null },
    role: Role = 'inspector',
  ) =>
    sqlAs<{ id: string; weld_id: string; tier: string }>(
      fx,
      role,
      'select id, weld_id, tier from weld_public.draw_examination_selection($1, $2, $3, $4)',
      [args.method ?? 'RT', args.line ?? null, args.iso ?? null, args.seed ?? null],
    );
  const recordNdt = async (
    fx: TenantFixture,
    method: string,
    reportNumber: string,
    welds: Array<[string, Result]>,
    examinedOn = '2026-02-10',
    role: Role = 'inspector',
  ) =>
    (
      await sqlAs<{ id: string }>(fx, role, 'select id from weld_public.record_ndt($1)', [
        JSON.stringify({
          method,
          reportNumber,
          examinedOn,
          welds: welds.map(([weldId, result]) => ({ weldId, result })),
        }),
      ])
    )[0]!.id;
  const recordInspection = async (
    fx: TenantFixture,
    kind: string,
    weldIds: string[],
    result: Result = 'accepted',
    inspectedOn = '2026-02-10',
  ) =>
    (
      await sqlAs<{ id: string }>(
        fx,
        'inspector',
        'select id from weld_public.record_inspection($1)',
        [JSON.stringify({ kind, inspectorName: 'QC', inspectedOn, result, weldIds })],
      )
    )[0]!.id;
  /**
   * A status change through the lifecycle function, with what it may carry: the basis of an
   * acceptance, a re-weld's repair welding.
   */
  const moveWeld = (
    fx: TenantFixture,
    role: Role,
    weldId: string,
    to: string,
    reason?: string | null,
    more: Basis & { repair?: Row } = {},
  ) =>
    sqlAs(
      fx,
      role,
      'select weld_public.change_weld_status($1, $2, $3, null, $4, $5, $6, $7::jsonb)',
      [
        weldId,
        to,
        reason ?? null,
        more.ndtRecordId ?? null,
        more.inspectionId ?? null,
        more.disposition ?? null,
        more.repair ? JSON.stringify(more.repair) : null,
      ],
    );
  /** Released for repair and re-welded: REJECTED -> REPAIR -> PENDING, with the repair's welding. */
  const repair = async (fx: TenantFixture, weldId: string, welding?: Row) => {
    await moveWeld(fx, 'engineer', weldId, 'REPAIR');
    await moveWeld(fx, 'inspector', weldId, 'PENDING', null, welding ? { repair: welding } : {});
  };
  /** Accepted by hand on a visual inspection of `on` that accepted it (the inspector's basis). */
  const acceptOnVisual = async (fx: TenantFixture, weldId: string, on = '2026-02-10') => {
    const inspectionId = await recordInspection(fx, 'visual', [weldId], 'accepted', on);
    await moveWeld(fx, 'inspector', weldId, 'ACCEPTED', null, { inspectionId });
    return inspectionId;
  };

  /** The tenant's selections as its viewer sees them, by weld number and method. */
  const selections = (fx: TenantFixture) =>
    sqlAs<Selection>(
      fx,
      'viewer',
      `select s.id, s.weld_id, s.method, s.tier, s.seed::text, s.reason, s.cause_selection_id,
              s.cause_ndt_record_id, s.cause_inspection_id, w.weld_number, w.welder_id,
              weld_public.examination_selections_state(s) as state
         from weld_public.examination_selections s
         join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
        order by w.weld_number, s.method, s.tier`,
    );
  const checks = (fx: TenantFixture, weldId: string) =>
    sqlAs<{ code: string; detail: string }>(
      fx,
      'viewer',
      'select c.code, c.detail from weld_public.welds w, weld_public.welds_checks(w) c where w.id = $1',
      [weldId],
    );
  const codes = async (fx: TenantFixture, weldId: string) =>
    (await checks(fx, weldId)).map((c) => c.code);
  const readiness = (fx: TenantFixture, packageId: string) =>
    sqlAs<Reason>(
      fx,
      'viewer',
      `select r.code, r.weld_id, r.iso_id, r.detail
         from weld_public.test_packages p, weld_public.test_packages_readiness_reasons(p) r
        where p.id = $1`,
      [packageId],
    );
  /** A test package of the given ISOs and welds, open. */
  const testPackage = async (
    fx: TenantFixture,
    number: string,
    members: { isos?: string[]; welds?: string[] },
  ) => {
    const id = await insert('test_packages', {
      tenant_id: fx.tenantId,
      package_number: number,
      test_medium: 'hydro',
    });
    for (const isoId of members.isos ?? []) {
      await link('test_package_isos', {
        tenant_id: fx.tenantId,
        test_package_id: id,
        iso_id: isoId,
      });
    }
    for (const weldId of members.welds ?? []) {
      await link('test_package_welds', {
        tenant_id: fx.tenantId,
        test_package_id: id,
        weld_id: weldId,
      });
    }
    return id;
  };
  const packageState = (fx: TenantFixture, packageId: string, state: string) =>
    sqlAs(fx, 'engineer', 'update weld_public.test_packages set state = $2 where id = $1', [
      packageId,
      state,
    ]);
  const weldNumbers = async (ids: string[]) =>
    (
      await owner.query<{ weld_number: string }>(
        'select weld_number from weld_public.welds where id = any($1) order by weld_number',
        [ids],
      )
    ).rows.map((r) => r.weld_number);
  const statuses = async (...weldIds: string[]) =>
    (
      await owner.query<{ status: string }>(
        `select w.status from unnest($1::uuid[]) with ordinality as x (id, n)
           join weld_public.welds w on w.id = x.id order by x.n`,
        [weldIds],
      )
    ).rows.map((r) => r.status);

  return {
    owner,
    pool,
    a,
    b,
    as,
    sqlAs,
    insert,
    link,
    iso,
    welder,
    pqr,
    wps,
    qualification,
    qualifiedWelder,
    weld,
    weldsOf,
    dba,
    setting,
    draw,
    recordNdt,
    recordInspection,
    moveWeld,
    repair,
    acceptOnVisual,
    selections,
    checks,
    codes,
    readiness,
    testPackage,
    packageState,
    weldNumbers,
    statuses,
  };
}
export type RulesWorld = Awaited<ReturnType<typeof rulesWorld>>;

/** Catches a rejected promise's error (ava's throwsAsync, typed for pg errors). */
export async function refusal(t: ExecutionContext, work: Promise<unknown>) {
  const error = await t.throwsAsync(work);
  return error as Error & { code?: string; detail?: string };
}
