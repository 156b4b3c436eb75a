// The world of the tests of examinations in SQL (test/db/ndt-results-*.test.ts): two tenants,
// welds made as the owner, the functions record_ndt, correct_ndt_record, record_inspection and
// correct_inspection called as a request role, and the records they take.
import type { ExecutionContext } from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from './fixtures.ts';

export type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';

export interface NdtRow {
  id: string;
  method: string;
  report_number: string;
  result: string;
  notes: string | null;
  version: number;
  recorded_by: string;
}

export async function setup(t: ExecutionContext) {
  const { owner, pool, a, b } = await twoTenants(t);
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );
  const recordNdt = (fx: TenantFixture, role: Role, record: unknown) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<NdtRow>('select * from weld_public.record_ndt($1)', [
            JSON.stringify(record),
          ])
        ).rows[0]!,
    );
  const correctNdt = (
    fx: TenantFixture,
    role: Role,
    id: string,
    changes: unknown,
    reason: string | null = 'corrected',
    expectedVersion: number | null = null,
  ) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<NdtRow>('select * from weld_public.correct_ndt_record($1, $2, $3, $4)', [
            id,
            JSON.stringify(changes),
            reason,
            expectedVersion,
          ])
        ).rows[0]!,
    );
  /** Each weld's status, by id. */
  const statuses = async (...weldIds: string[]) =>
    (
      await owner.query<{ status: string }>(
        `select w.status from unnest($1::uuid[]) with ordinality as x (id, n)
           join weld_public.welds w on w.id = x.id order by x.n`,
        [weldIds],
      )
    ).rows.map((r) => r.status);
  const history = async (fx: TenantFixture) =>
    (
      await owner.query<{
        weld_id: string;
        move: string;
        cause: string;
        ndt_record_id: string | null;
        reason: string | null;
        changed_by: string | null;
      }>(
        `select weld_id, from_status || '>' || to_status as move, cause, ndt_record_id, reason, changed_by
           from weld_public.weld_status_history where tenant_id = $1 order by id`,
        [fx.tenantId],
      )
    ).rows;
  const count = async (table: string, fx: TenantFixture) =>
    (
      await owner.query<{ n: number }>(
        `select count(*)::int as n from weld_public.${table} where tenant_id = $1`,
        [fx.tenantId],
      )
    ).rows[0]!.n;
  return { owner, pool, a, b, as, recordNdt, correctNdt, statuses, history, count };
}

export const sqlstate = (error: unknown) => (error as { code?: string }).code;
export const detailOf = (error: unknown): unknown =>
  JSON.parse((error as { detail: string }).detail);

/** An RT record of the given welds, results left to the film. */
export function rt(reportNumber: string, welds: unknown[], filmIntervals: unknown[]) {
  return { method: 'RT', reportNumber, examinedOn: '2026-11-02', welds, filmIntervals };
}
export const film = (
  label: string,
  result: string,
  weldIds: string[],
  defectCodes: string[] = [],
) => ({
  label,
  result,
  defectCodes: result === 'rejected' && defectCodes.length === 0 ? ['PO'] : defectCodes,
  weldIds,
});
