// The three kept reports (F17), as the views answer and as their rules compute them, and the
// refresh as the housekeeping runs it: what test/db/report-cache*.test.ts compare.
import type pg from 'pg';
import { withContext } from '../../db/database.ts';
import { asOwner, type TenantFixture } from './fixtures.ts';

/** The three reports as the views answer (kept rows where nothing is noted). */
export async function reported(pool: pg.Pool, fx: TenantFixture) {
  return withContext(
    pool,
    { role: 'weld_viewer', tenantId: fx.tenantId, userId: fx.users.viewer },
    async (c) => ({
      lots: (await c.query(`select * from weld_reports.examination_progress order by method, lot`))
        .rows,
      board: (
        await c.query(`select * from weld_reports.test_package_board order by test_package_id`)
      ).rows,
      qualifications: (
        await c.query(
          `select welder_id, welder_stamp, qualification_id, process, wps_id, last_used_on::text,
                  valid_until::text, cause
             from weld_reports.qualification_expiry order by welder_id, qualification_id, process`,
        )
      ).rows,
    }),
  );
}

/** The same three, computed from the tables by the rules themselves (as weld_rules, the tenant's). */
export async function computed(ownerPool: pg.Pool, fx: TenantFixture) {
  return asOwner(ownerPool, async (c) => {
    await c.query(`select set_config('jwt.claims.tenant_id', $1, true)`, [fx.tenantId]);
    await c.query('set local role weld_rules');
    const lots = await c.query(
      `select l.method, l.lot, l.lot_name, l.percent::float8 as percent, l.welds as candidates,
              l.welders, l.required, l.selected as drawn, l.examined, l.accepted, l.shortfall,
              l.progressive_open, l.stamps_not_covered as welders_not_covered
         from weld_private.lot_status(weld_private.rule_methods(),
                array(select distinct line_number from weld_public.isos where line_number is not null),
                null) l
        order by 1, 2`,
    );
    const board = await c.query(
      `select p.id as test_package_id, p.package_number, p.test_medium, p.state,
              b.reasons = 0 as ready, b.reasons, b.reasons_by_code, b.welds, b.welds_accepted
         from weld_public.test_packages p, weld_private.package_board_row(p) b
        order by p.id`,
    );
    const qualifications = await c.query(
      `select v.id as welder_id, v.stamp as welder_stamp, q.qualification_id, q.process, q.wps_id,
              q.last_used_on::text, least(q.expires_on, q.continuity_until)::text as valid_until,
              case when q.expires_on <= q.continuity_until then 'expiry' else 'continuity' end as cause
         from weld_public.welders v, weld_public.welders_qualification_status(v) q
        where v.active and q.state = 'valid'
          and least(q.expires_on, q.continuity_until) - current_date < 90
        order by 1, 3, 4`,
    );
    return { lots: lots.rows, board: board.rows, qualifications: qualifications.rows };
  });
}

/** weld_hidden.refresh_reports as the housekeeping runs it: REPEATABLE READ, as the authenticator. */
export async function refresh(
  pool: pg.Pool,
  tenantId: string,
  limits: { lines?: number; packages?: number; welders?: number } = {},
) {
  const c = await pool.connect();
  try {
    await c.query('begin isolation level repeatable read');
    const { rows } = await c.query('select * from weld_hidden.refresh_reports($1, $2, $3, $4)', [
      tenantId,
      limits.lines ?? 100,
      limits.packages ?? 20,
      limits.welders ?? 100,
    ]);
    await c.query('commit');
    return rows[0] as
      { lines: number; packages: number; welders: number; left_over: number } | undefined;
  } catch (error) {
    await c.query('rollback');
    throw error;
  } finally {
    c.release();
  }
}

export async function notes(owner: pg.ClientBase, tenantId: string) {
  const { rows } = await owner.query<{ n: string }>(
    `select count(*) as n from weld_private.report_stale where tenant_id = $1`,
    [tenantId],
  );
  return Number(rows[0]!.n);
}

/** What the views answer, and what the rules compute, side by side. */
export async function agree(pool: pg.Pool, ownerPool: pg.Pool, fx: TenantFixture) {
  const [views, rules] = [await reported(pool, fx), await computed(ownerPool, fx)];
  return {
    lots: [views.lots, rules.lots] as const,
    board: [views.board, rules.board] as const,
    qualifications: [views.qualifications, rules.qualifications] as const,
  };
}
