// The kept rows of the slow reports (F17, migration 000035): examination progress per line,
// the test package board per package, qualification expiry per welder. Each write notes what it
// changed (weld_private.report_stale); a report reads kept rows where nothing is noted and computes
// the rest; weld_hidden.refresh_reports recomputes what is noted and clears the notes.
//
// The test that matters: refresh (nothing noted), one write of any kind the reports depend on,
// then each report must equal its rules computed afresh from the tables. A write that forgot to
// note what it changed leaves a kept row out of date, and the comparison finds it.
import test from 'ava';
import type pg from 'pg';
import { createPool, withContext } from '../../db/database.ts';
import { refreshReports } from '../../server/housekeeping.ts';
import { asOwner, prng, twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

/** The three reports as the views answer (kept rows where nothing is noted). */
async function reported(pool: pg.Pool, fx: TenantFixture) {
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
async function computed(ownerPool: pg.Pool, fx: TenantFixture) {
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
async function refresh(
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

async function notes(owner: pg.ClientBase, tenantId: string) {
  const { rows } = await owner.query<{ n: string }>(
    `select count(*) as n from weld_private.report_stale where tenant_id = $1`,
    [tenantId],
  );
  return Number(rows[0]!.n);
}

/** What the views answer, and what the rules compute, side by side. */
async function agree(pool: pg.Pool, ownerPool: pg.Pool, fx: TenantFixture) {
  const [views, rules] = [await reported(pool, fx), await computed(ownerPool, fx)];
  return {
    lots: [views.lots, rules.lots] as const,
    board: [views.board, rules.board] as const,
    qualifications: [views.qualifications, rules.qualifications] as const,
  };
}

//------------------------------------------------------------------------------------------------

test('the refresh keeps each report, noted writes compute afresh, and clears the notes it read', async (t) => {
  const { owner, pool, a, target } = await twoTenants(t);
  const ownerPool = createPool(target.ownerUrl, { max: 2 });
  t.teardown(() => ownerPool.end());
  await owner.query(`update weld_public.isos set rt_percent = 10 where tenant_id = $1`, [
    a.tenantId,
  ]);
  for (let n = 0; n < 12; n++) await a.weld('PENDING');
  await owner.query(
    `with p as (insert into weld_public.test_packages (tenant_id, package_number, test_medium)
                values ($1, 'TP-1', 'hydro') returning id)
     insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) select $1, p.id, $2 from p`,
    [a.tenantId, a.isoId],
  );

  // Before any refresh every tenant is noted ('all' from the migration, and these writes).
  t.true((await notes(owner, a.tenantId)) > 0);
  const first = await refresh(pool, a.tenantId);
  t.like(first, { lines: 1, packages: 1, welders: 1, left_over: 0 });
  t.is(await notes(owner, a.tenantId), 0);
  const kept = await owner.query(
    `select (select count(*) from weld_private.lot_report_rows where tenant_id = $1)::int as lots,
            (select count(*) from weld_private.package_board_rows where tenant_id = $1)::int as packages,
            (select count(*) from weld_private.welder_qualification_rows where tenant_id = $1)::int as welders`,
    [a.tenantId],
  );
  t.like(kept.rows[0], { packages: 1, welders: 1 });
  t.true(kept.rows[0].lots >= 1);
  let views = await reported(pool, a);
  t.like(
    views.lots.find((lot) => lot.method === 'RT'),
    { candidates: 12, required: 2, drawn: 0, shortfall: 2 },
  );
  t.like(views.board[0], { welds: 12, welds_accepted: 0, ready: false });

  // A kept row is what the view shows: changed behind the notes' back (as no write can), the view
  // shows the change, so the view is reading the kept row, not computing.
  await owner.query(`update weld_private.package_board_rows set welds = 999 where tenant_id = $1`, [
    a.tenantId,
  ]);
  views = await reported(pool, a);
  t.is(views.board[0].welds, 999);
  // A write notes the package's ISO: the view computes it afresh at once, before any refresh.
  await withContext(
    pool,
    { role: 'weld_engineer', tenantId: a.tenantId, userId: a.users.engineer },
    (c) =>
      c.query(
        `select from weld_public.change_weld_status(
           (select id from weld_public.welds order by weld_number limit 1), 'ACCEPTED', 'VT')`,
      ),
  );
  views = await reported(pool, a);
  t.like(views.board[0], { welds: 12, welds_accepted: 1 });
  t.true((await notes(owner, a.tenantId)) > 0);
  await refresh(pool, a.tenantId);
  t.is(await notes(owner, a.tenantId), 0);
  t.like((await reported(pool, a)).board[0], { welds: 12, welds_accepted: 1 });

  // The other tenant's notes are its own: refreshing alpha left bravo's.
  t.true(
    (await notes(
      owner,
      (await owner.query(`select id from weld_public.tenants where slug = 'bravo'`)).rows[0].id,
    )) > 0,
  );
});

test('the refresh takes packages a chunk at a time and notes the rest as packages', async (t) => {
  const { owner, pool, a } = await twoTenants(t);
  await owner.query(
    `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
     select $1, 'TP-' || n, 'hydro' from generate_series(1, 5) n`,
    [a.tenantId],
  );
  t.like(await refresh(pool, a.tenantId, { packages: 2 }), { packages: 2, left_over: 3 });
  const left = await owner.query(
    `select kind, cardinality(keys) as n from weld_private.report_stale where tenant_id = $1`,
    [a.tenantId],
  );
  t.deepEqual(left.rows, [{ kind: 'package', n: 3 }]);
  t.like(await refresh(pool, a.tenantId, { packages: 2 }), { packages: 2, left_over: 1 });
  t.like(await refresh(pool, a.tenantId, { packages: 2 }), { packages: 1, left_over: 0 });
  t.is(await notes(owner, a.tenantId), 0);
});

test('the housekeeping refreshes each tenant a chunk a round, skips one that fails, until none is left', async (t) => {
  const { owner, pool, a, b } = await twoTenants(t);
  await owner.query(
    `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
     select $1, 'TP-' || n, 'hydro' from generate_series(1, 45) n`,
    [a.tenantId],
  );
  await b.weld('PENDING');
  const due = async () =>
    (
      await owner.query<{ t: string }>('select t from weld_hidden.reports_due() t order by 1')
    ).rows.map((row) => row.t);
  t.deepEqual(await due(), [a.tenantId, b.tenantId].sort());

  // A round is one call per tenant: bravo is done in the first, while alpha's 45 packages take
  // three (20 a call), so a tenant with a backlog never holds the others up.
  const first = await refreshReports(pool);
  t.like(first, { tenants: 2, packages: 20, welders: 2, leftOver: 25, failed: [] });
  t.deepEqual(await due(), [a.tenantId]);
  t.like(await refreshReports(pool), { tenants: 1, packages: 20, leftOver: 5 });
  t.like(await refreshReports(pool), { tenants: 1, packages: 5, leftOver: 0 });
  t.deepEqual(await due(), []);
  t.is(await notes(owner, a.tenantId), 0);

  // A tenant another instance is refreshing is skipped (its lock is held); the others are done.
  await a.weld('PENDING');
  await b.weld('PENDING');
  // (As the owner, who may take advisory locks: the refresh's lock, as another instance holds it.)
  const lock = `hashtext('weld_hidden.refresh_reports'), hashtext($1)`;
  await owner.query(`select pg_advisory_lock(${lock})`, [a.tenantId]);
  t.like(await refreshReports(pool), { tenants: 1, failed: [] });
  t.deepEqual(await due(), [a.tenantId]);
  await owner.query(`select pg_advisory_unlock(${lock})`, [a.tenantId]);

  // A tenant whose refresh fails (here a note no write could make) is reported, and the round
  // goes on: bravo is refreshed all the same.
  await b.weld('PENDING');
  await owner.query(
    `insert into weld_private.report_stale (tenant_id, kind, keys) values ($1, 'iso', '{not-a-uuid}')`,
    [a.tenantId],
  );
  await owner.query(
    `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
     select $1, 'TQ-' || n, 'hydro' from generate_series(1, 30) n`,
    [a.tenantId],
  );
  const scales = new Map<string, number>();
  const failing = await refreshReports(pool, { scales });
  t.is(failing.failed.length, 1);
  t.is(failing.failed[0]!.tenantId, a.tenantId);
  t.is((failing.failed[0]!.error as { code?: string }).code, '22P02');
  t.deepEqual(await due(), [a.tenantId]);
  // Its next call takes half the chunks (a call too large for its time makes progress), and the
  // one after that the whole again.
  t.is(scales.get(a.tenantId), 0.5);
  await owner.query(`delete from weld_private.report_stale where keys = '{not-a-uuid}'`);
  t.like(await refreshReports(pool, { scales }), { packages: 10, leftOver: 20, failed: [] });
  t.false(scales.has(a.tenantId));
  t.like(await refreshReports(pool, { scales }), { packages: 20, leftOver: 0 });

  // A welder computed on another day is due again (the qualifications depend on the date).
  await refreshReports(pool);
  await owner.query(
    `update weld_private.welder_qualification_rows set computed_on = computed_on - 1 where tenant_id = $1`,
    [b.tenantId],
  );
  t.deepEqual(await due(), [b.tenantId]);
  t.like(await refreshReports(pool), { tenants: 1, welders: 1, packages: 0 });
});

test('each kind of note, a worked example: the write changes the report at once, and the refresh keeps it', async (t) => {
  const { owner, pool, a, target } = await twoTenants(t);
  const ownerPool = createPool(target.ownerUrl, { max: 2 });
  t.teardown(() => ownerPool.end());
  const tenant = a.tenantId;
  const q = (sql: string, params: unknown[] = []) => owner.query(sql, [tenant, ...params]);
  // One line of 10 welds on the fixture's ISO at RT 10 %: one weld to draw. A package holds the ISO.
  await q(`update weld_public.isos set rt_percent = 10 where tenant_id = $1`);
  const welds: string[] = [];
  for (let n = 0; n < 10; n++) welds.push(await a.weld('PENDING'));
  await q(
    `with p as (insert into weld_public.test_packages (tenant_id, package_number, test_medium)
                values ($1, 'TP-1', 'hydro') returning id)
     insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id)
     select $1, p.id, $2 from p`,
    [a.isoId],
  );
  const drawn = await withContext(
    pool,
    { role: 'weld_engineer', tenantId: tenant, userId: a.users.engineer },
    (c) =>
      c.query<{ weld_id: string }>(
        `select weld_id from weld_public.draw_examination_selection('RT', $1, null, 7)`,
        ['alpha-LINE-1'],
      ),
  );
  const weld = drawn.rows[0]!.weld_id;
  // RT-1 accepts the drawn weld; RT-2, later, covers it with no result given: its film's counts.
  const recordOf = async (number: string, day: string, result: string | null) =>
    (
      await q(
        `with r as (insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
                    values ($1, 'RT', $2, $3, 'accepted') returning id)
         insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result)
         select $1, r.id, $4, $5 from r returning ndt_record_id as id`,
        [number, day, weld, result],
      )
    ).rows[0].id as string;
  const first = await recordOf('RT-1', '2026-02-01', 'accepted');
  const rt = async () => (await reported(pool, a)).lots.find((lot) => lot.method === 'RT');
  const board = async () => (await reported(pool, a)).board[0];
  const step = async (
    what: string,
    write: () => Promise<unknown>,
    check: () => Promise<unknown>,
  ) => {
    await refresh(pool, tenant);
    t.is(await notes(owner, tenant), 0, what);
    await write();
    t.true((await notes(owner, tenant)) > 0, `${what}: noted`);
    await check(); // computed at read, before any refresh
    await refresh(pool, tenant);
    await check(); // kept
  };
  await refresh(pool, tenant);
  t.like(await rt(), { drawn: 1, examined: 1, accepted: 1, shortfall: 0 });

  // 'record': RT-1 was in fact an MT record: it no longer examines the RT selection.
  await step(
    'record',
    () =>
      q(`update weld_public.ndt_records set method = 'MT' where tenant_id = $1 and id = $2`, [
        first,
      ]),
    async () => t.like(await rt(), { examined: 0, accepted: 0 }),
  );
  // 'weld': RT-2 covers the weld, no result given and no film yet.
  let second = '';
  await step(
    'weld',
    async () => (second = await recordOf('RT-2', '2026-03-01', null)),
    async () => t.like(await rt(), { examined: 1, accepted: 0 }),
  );
  // 'weld' (its film): an interval of RT-2 showing the weld, accepted.
  let interval = '';
  await step(
    'weld (film)',
    async () =>
      (interval = (
        await q(
          `with f as (insert into weld_public.film_intervals (tenant_id, ndt_record_id, label, result, defect_codes)
                      values ($1, $2, 'F-1', 'accepted', '{}') returning id)
           insert into weld_public.film_interval_welds (tenant_id, ndt_record_id, film_interval_id, weld_id)
           select $1, $2, f.id, $3 from f returning film_interval_id as id`,
          [second, weld],
        )
      ).rows[0].id),
    async () => t.like(await rt(), { examined: 1, accepted: 1 }),
  );
  // 'record' (a film interval's result): rejected now.
  await step(
    'record (film result)',
    () =>
      q(
        `update weld_public.film_intervals set result = 'rejected', defect_codes = '{PO}' where tenant_id = $1 and id = $2`,
        [interval],
      ),
    async () => t.like(await rt(), { examined: 1, accepted: 0 }),
  );
  // 'lot_iso': a weld made on the line is one more candidate.
  await step(
    'lot_iso',
    () => a.weld('PENDING'),
    async () => t.like(await rt(), { candidates: 11 }),
  );
  // 'iso': a status change is in the package's accepted welds (and not in the lots).
  await step(
    'iso',
    () =>
      withContext(
        pool,
        { role: 'weld_engineer', tenantId: tenant, userId: a.users.engineer },
        (c) =>
          c.query(`select from weld_public.change_weld_status($1, 'ACCEPTED', 'VT')`, [welds[0]]),
      ),
    async () => t.like(await board(), { welds: 11, welds_accepted: 1 }),
  );
  // 'line': the ISO moves to another line: the old line's lot is gone, the new line's is there.
  await step(
    'line',
    () =>
      q(
        `update weld_public.isos set line_number = 'alpha-LINE-2' where tenant_id = $1 and id = $2`,
        [a.isoId],
      ),
    async () => {
      const lots = (await reported(pool, a)).lots.filter((lot) => lot.method === 'RT');
      t.deepEqual(
        lots.map((lot) => lot.lot),
        ['RT|alpha-LINE-2|10'],
      );
    },
  );
  // 'pqr': the PQR behind the WPS a weld of the package was made to now qualifies another
  // process: the weld's checks (and so the package's reasons) change.
  const wpsP = (
    await q(
      `insert into weld_public.wps (tenant_id, wps_number, process) values ($1, 'WPS-P', 'SMAW') returning id`,
    )
  ).rows[0].id;
  const pqr = (
    await q(
      `insert into weld_public.pqrs (tenant_id, pqr_number, process, p_numbers, thickness_tested_in)
       values ($1, 'PQR-P', 'SMAW', '{1,1}', 0.5) returning id`,
    )
  ).rows[0].id;
  await q(`insert into weld_public.wps_pqrs (tenant_id, wps_id, pqr_id) values ($1, $2, $3)`, [
    wpsP,
    pqr,
  ]);
  await q(`update weld_public.welds set wps_id = $2 where tenant_id = $1 and id = $3`, [
    wpsP,
    welds[1],
  ]);
  await refresh(pool, tenant);
  const before = await board();
  await step(
    'pqr',
    () => q(`update weld_public.pqrs set process = 'GTAW' where tenant_id = $1 and id = $2`, [pqr]),
    async () => {
      t.notDeepEqual((await board()).reasons_by_code, before.reasons_by_code);
      t.deepEqual((await reported(pool, a)).board, (await computed(ownerPool, a)).board);
    },
  );
  // 'wps': a WPS's process is what a weld made to it continues: W01's SMAW qualification lapses
  // by continuity in 30 days, until its GTAW weld of 10 days ago turns out to be SMAW.
  await q(
    `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
     values ($1, $2, 'SMAW', current_date - 150, current_date + 400)`,
    [a.welderId],
  );
  const wpsG = (
    await q(
      `insert into weld_public.wps (tenant_id, wps_number, process) values ($1, 'WPS-G', 'GTAW') returning id`,
    )
  ).rows[0].id;
  await q(
    `update weld_public.welds set wps_id = $2, welded_on = current_date - 10
      where tenant_id = $1 and id = $3`,
    [wpsG, welds[2]],
  );
  await refresh(pool, tenant);
  const smaw = async () =>
    (await reported(pool, a)).qualifications.filter((row) => row.process === 'SMAW');
  t.is((await smaw()).length, 1);
  await step(
    'wps',
    () => q(`update weld_public.wps set process = 'SMAW' where tenant_id = $1 and id = $2`, [wpsG]),
    async () => t.deepEqual(await smaw(), []),
  );

  // 'welder_lots': lots per welder name the welder by stamp; a new stamp renames its lot.
  await step(
    'welder_lots',
    async () => {
      await q(
        `insert into weld_public.tenant_settings (tenant_id, examination_lot) values ($1, 'line_welder')
         on conflict (tenant_id) do update set examination_lot = excluded.examination_lot`,
      );
      await refresh(pool, tenant);
      await q(`update weld_public.welders set stamp = 'W99' where tenant_id = $1 and id = $2`, [
        a.welderId,
      ]);
    },
    async () => t.regex((await rt())!.lot_name, /welder W99's welds/),
  );
});

test('a write committed while a refresh runs stays noted: the refresh clears only what its snapshot saw', async (t) => {
  const { owner, pool, a } = await twoTenants(t);
  const weld = await a.weld('PENDING');
  await owner.query(
    `with p as (insert into weld_public.test_packages (tenant_id, package_number, test_medium)
                values ($1, 'TP-1', 'hydro') returning id)
     insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) select $1, p.id, $2 from p`,
    [a.tenantId, a.isoId],
  );
  await refresh(pool, a.tenantId);
  t.is(await notes(owner, a.tenantId), 0);

  // The refresh's snapshot is taken; then a status change commits; then the refresh computes.
  const r = await pool.connect();
  t.teardown(() => r.release());
  await r.query('begin isolation level repeatable read');
  await r.query('select 1');
  await withContext(
    pool,
    { role: 'weld_engineer', tenantId: a.tenantId, userId: a.users.engineer },
    (c) => c.query(`select from weld_public.change_weld_status($1, 'ACCEPTED', 'VT')`, [weld]),
  );
  await r.query('select * from weld_hidden.refresh_reports($1)', [a.tenantId]);
  await r.query('commit');

  // The kept row is of the older snapshot, but the write's note is still there: the board shows
  // the acceptance, and the next refresh keeps it.
  t.true((await notes(owner, a.tenantId)) > 0);
  t.like((await reported(pool, a)).board[0], { welds: 1, welds_accepted: 1 });
  const kept = await owner.query(
    `select welds_accepted from weld_private.package_board_rows where tenant_id = $1`,
    [a.tenantId],
  );
  t.is(kept.rows[0].welds_accepted, 0);
  await refresh(pool, a.tenantId);
  t.is(await notes(owner, a.tenantId), 0);
  t.like((await reported(pool, a)).board[0], { welds: 1, welds_accepted: 1 });
});

test('the refresh refuses a READ COMMITTED transaction, and only the authenticator may call it', async (t) => {
  const { pool, a } = await twoTenants(t);
  const error = await t.throwsAsync(
    pool.query('select * from weld_hidden.refresh_reports($1)', [a.tenantId]),
  );
  t.is((error as { code?: string }).code, '25000');
  const denied = await t.throwsAsync(
    withContext(pool, { role: 'weld_admin', tenantId: a.tenantId, userId: a.users.admin }, (c) =>
      c.query('select * from weld_hidden.refresh_reports($1)', [a.tenantId]),
    ),
  );
  t.is((denied as { code?: string }).code, '42501');
});

test('after a refresh, every kind of write the reports read leaves them equal to their rules', async (t) => {
  t.timeout(6 * 60_000);
  const { owner, pool, a, target } = await twoTenants(t, 4);
  const ownerPool = createPool(target.ownerUrl, { max: 4 });
  t.teardown(() => ownerPool.end());
  const seed = Number(process.env.REPORT_CACHE_SEED ?? 20261127);
  const r = prng(seed);
  t.log(`seed ${seed} (REPORT_CACHE_SEED=${seed} replays it)`);
  const tenant = a.tenantId;

  // A small world: 4 ISOs on 2 lines, 3 welders with qualifications, 2 WPSs, 2 packages.
  await owner.query(
    `insert into weld_public.isos (tenant_id, iso_number, line_number, rt_percent, fluid_service)
     select $1, 'RC-ISO-' || n, 'RC-LINE-' || (n % 2), 5 * (n % 3), 'normal' from generate_series(1, 4) n`,
    [tenant],
  );
  await owner.query(
    `insert into weld_public.welders (tenant_id, stamp, name)
     select $1, 'RC' || n, 'Cache welder ' || n from generate_series(1, 3) n`,
    [tenant],
  );
  await owner.query(
    `insert into weld_public.wps (tenant_id, wps_number, process)
     values ($1, 'RC-WPS-1', 'SMAW'), ($1, 'RC-WPS-2', 'GTAW')`,
    [tenant],
  );
  await owner.query(
    `insert into weld_public.pqrs (tenant_id, pqr_number, process, p_numbers, thickness_tested_in)
     values ($1, 'RC-PQR-1', 'SMAW', '{1,1}', 0.5)`,
    [tenant],
  );
  await owner.query(
    `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
     select $1, v.id, p.process, current_date - 150, current_date + 20 + 30 * (row_number() over ())::int
       from weld_public.welders v, (values ('SMAW'), ('GTAW')) p (process)
      where v.tenant_id = $1`,
    [tenant],
  );
  await owner.query(
    `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
     values ($1, 'RC-TP-1', 'hydro'), ($1, 'RC-TP-2', 'pneumatic')`,
    [tenant],
  );
  const ids = async (table: string) =>
    (
      await owner.query<{ id: string }>(
        `select id from weld_public.${table} where tenant_id = $1 order by id`,
        [tenant],
      )
    ).rows.map((x) => x.id);
  const engineer = <T>(work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(pool, { role: 'weld_engineer', tenantId: tenant, userId: a.users.engineer }, work);
  const owned = (sql: string, params: unknown[] = []) =>
    asOwner(ownerPool, (c) => c.query(sql, [tenant, ...params]));
  let serial = 0;
  const DAYS = [
    'current_date - 200',
    'current_date - 100',
    'current_date - 20',
    'current_date - 3',
  ];

  type Operation = [string, () => Promise<unknown>];
  const operations = async (): Promise<Operation[]> => {
    const isos = await ids('isos');
    const welders = await ids('welders');
    const wps = await ids('wps');
    const packages = await ids('test_packages');
    const welds = await ids('welds');
    const records = await ids('ndt_records');
    const inspections = await ids('inspections');
    const qualifications = await ids('welder_qualifications');
    const someWelds = () => [...new Set(Array.from({ length: 1 + r.int(4) }, () => r.pick(welds)))];
    const all: Array<Operation | false> = [
      [
        'weld made (owner: any status, type, welder, WPS, day)',
        () =>
          owned(
            `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status, welder_id, wps_id, welded_on)
           values ($1, $2, $3, $4, 4, $5, $6, $7, ${r.pick(DAYS)})`,
            [
              r.pick(isos),
              `RC-${++serial}`,
              r.pick(['BW', 'BW', 'SW', 'FW']),
              r.pick(['PENDING', 'PENDING', 'ACCEPTED', 'VOIDED']),
              r.pick([...welders, null]),
              r.pick([...wps, null]),
            ],
          ),
      ],
      welds.length > 0 && [
        'status change (engineer)',
        () =>
          engineer((c) =>
            c.query(`select from weld_public.change_weld_status($1, $2, 'cache')`, [
              r.pick(welds),
              r.pick(['ACCEPTED', 'REJECTED', 'REPAIR', 'PENDING', 'VOIDED']),
            ]),
          ),
      ],
      welds.length > 0 && [
        'weld edited: welder, WPS, day, type or size (owner)',
        () => {
          const column = r.pick(['welder_id', 'wps_id', 'welded_on', 'type', 'size']);
          const value = {
            welder_id: r.pick([...welders, null]),
            wps_id: r.pick([...wps, null]),
            welded_on: null,
            type: r.pick(['BW', 'SW']),
            size: r.pick([2, 4, 8]),
          }[column];
          return owned(
            column === 'welded_on'
              ? `update weld_public.welds set welded_on = ${r.pick(DAYS)} where tenant_id = $1 and id = $2`
              : `update weld_public.welds set ${column} = $3 where tenant_id = $1 and id = $2`,
            column === 'welded_on' ? [r.pick(welds)] : [r.pick(welds), value],
          );
        },
      ],
      welds.length > 0 && [
        'weld moved to another ISO (owner)',
        () =>
          owned(`update weld_public.welds set iso_id = $3 where tenant_id = $1 and id = $2`, [
            r.pick(welds),
            r.pick(isos),
          ]),
      ],
      welds.length > 0 && [
        'weld deleted with its links (owner)',
        () =>
          asOwner(ownerPool, async (c) => {
            const gone = r.pick(welds);
            for (const table of [
              'ndt_record_welds',
              'inspection_welds',
              'examination_selections',
              'test_package_welds',
              'weld_reexaminations',
              'film_interval_welds',
            ]) {
              await c.query(`delete from weld_public.${table} where weld_id = $1`, [gone]);
            }
            await c.query(`delete from weld_public.weld_status_history where weld_id = $1`, [gone]);
            await c.query(`delete from weld_public.welds where id = $1`, [gone]);
          }),
      ],
      [
        'ISO: line, RT percent or fluid service (owner)',
        () => {
          const column = r.pick(['line_number', 'rt_percent', 'fluid_service']);
          const value = {
            line_number: r.pick(['RC-LINE-0', 'RC-LINE-1', 'RC-LINE-2']),
            rt_percent: r.pick([0, 5, 10, 100]),
            fluid_service: r.pick(['normal', 'category_m']),
          }[column];
          return owned(
            `update weld_public.isos set ${column} = $3 where tenant_id = $1 and id = $2`,
            [r.pick(isos), value],
          );
        },
      ],
      [
        'examination rule added, changed or removed (owner)',
        () =>
          r.next() < 0.6
            ? owned(
                `insert into weld_public.examination_rules (tenant_id, fluid_service, method, weld_type, percent, clause)
             values ($1, 'normal', $2, $3, $4, 'test')
             on conflict (tenant_id, fluid_service, method, weld_type) do update set percent = excluded.percent`,
                [r.pick(['RT', 'MT']), r.pick(['BW', 'SW']), r.pick([5, 10, 20])],
              )
            : owned(
                `delete from weld_public.examination_rules where tenant_id = $1 and method = $2`,
                [r.pick(['RT', 'MT'])],
              ),
      ],
      [
        'settings: lots per line or per welder, continuity months (owner)',
        () =>
          owned(
            `insert into weld_public.tenant_settings (tenant_id, examination_lot, continuity_months)
           values ($1, $2, $3)
           on conflict (tenant_id) do update
             set examination_lot = excluded.examination_lot, continuity_months = excluded.continuity_months`,
            [r.pick(['line', 'line_welder']), r.pick([3, 6])],
          ),
      ],
      [
        'selection drawn (engineer)',
        () =>
          engineer((c) =>
            c.query(`select from weld_public.draw_examination_selection($1, $2, null, $3)`, [
              r.pick(['RT', 'MT']),
              r.pick(['RC-LINE-0', 'RC-LINE-1']),
              1 + r.int(1000),
            ]),
          ),
      ],
      [
        'selection withdrawn (owner)',
        () =>
          owned(`delete from weld_public.examination_selections
                where tenant_id = $1 and id = (select id from weld_public.examination_selections
                                                where tenant_id = $1 order by random() limit 1)`),
      ],
      welds.length > 0 && [
        'NDT record over welds, results given or not (owner)',
        () =>
          owned(
            `with rec as (insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
                        values ($1, $2, $3, current_date, $4) returning id)
           insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result)
           select $1, rec.id, w, $5 from rec, unnest($6::uuid[]) w`,
            [
              r.pick(['RT', 'MT', 'UT']),
              `RC-R-${++serial}`,
              r.pick(['accepted', 'rejected']),
              r.pick([null, 'accepted', 'rejected']),
              someWelds(),
            ],
          ),
      ],
      records.length > 0 && [
        'NDT record: method, date or result (owner)',
        () =>
          owned(
            `update weld_public.ndt_records
              set method = case when $3 = 0 then $4 else method end,
                  examined_on = case when $3 = 1 then examined_on - 400 else examined_on end,
                  result = case when $3 = 2 then 'rejected' else result end
            where tenant_id = $1 and id = $2`,
            [r.pick(records), r.int(3), r.pick(['RT', 'MT'])],
          ),
      ],
      records.length > 0 && [
        'NDT record deleted (owner)',
        () =>
          owned(`delete from weld_public.ndt_records where tenant_id = $1 and id = $2`, [
            r.pick(records),
          ]),
      ],
      welds.length > 0 && [
        'visual inspection over welds (owner)',
        () =>
          owned(
            `with i as (insert into weld_public.inspections (tenant_id, kind, inspector_name, inspected_on, result)
                      values ($1, 'visual', 'RC', current_date, $2) returning id)
           insert into weld_public.inspection_welds (tenant_id, inspection_id, weld_id)
           select $1, i.id, w from i, unnest($3::uuid[]) w`,
            [r.pick(['accepted', 'rejected']), someWelds()],
          ),
      ],
      inspections.length > 0 && [
        'inspection result changed (owner)',
        () =>
          owned(
            `update weld_public.inspections
              set result = case result when 'accepted' then 'rejected' else 'accepted' end
            where tenant_id = $1 and id = $2`,
            [r.pick(inspections)],
          ),
      ],
      packages.length > 0 && [
        'package takes or gives up an ISO or a weld (owner)',
        () =>
          r.next() < 0.5
            ? owned(
                `insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id)
                   values ($1, $2, $3) on conflict do nothing`,
                [r.pick(packages), r.pick(isos)],
              )
            : welds.length > 0 && r.next() < 0.5
              ? owned(
                  `insert into weld_public.test_package_welds (tenant_id, test_package_id, weld_id)
                     values ($1, $2, $3) on conflict do nothing`,
                  [r.pick(packages), r.pick(welds)],
                )
              : owned(
                  `delete from weld_public.test_package_isos where tenant_id = $1 and iso_id = $2`,
                  [r.pick(isos)],
                ),
      ],
      [
        'package made (owner)',
        () =>
          owned(
            `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
               values ($1, $2, 'hydro')`,
            [`RC-TP-${++serial}`],
          ),
      ],
      [
        'qualification added (owner)',
        () =>
          owned(
            `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
           values ($1, $2, $3, current_date - $4::int, current_date + $5::int)`,
            [r.pick(welders), r.pick(['SMAW', 'GTAW']), 10 + r.int(300), 5 + r.int(120)],
          ),
      ],
      qualifications.length > 0 && [
        'qualification: expiry moved (owner)',
        () =>
          owned(
            `update weld_public.welder_qualifications set expires_on = current_date + $3::int
            where tenant_id = $1 and id = $2`,
            [r.pick(qualifications), 5 + r.int(120)],
          ),
      ],
      qualifications.length > 0 && [
        'qualification deleted (owner)',
        () =>
          owned(`delete from weld_public.welder_qualifications where tenant_id = $1 and id = $2`, [
            r.pick(qualifications),
          ]),
      ],
      [
        'continuity logged (owner)',
        () =>
          owned(
            `insert into weld_public.welder_continuity (tenant_id, welder_id, used_on, process, reference)
           values ($1, $2, current_date - $3::int, $4, 'log')`,
            [r.pick(welders), r.int(60), r.pick(['SMAW', 'GTAW'])],
          ),
      ],
      [
        'WPS process changed (owner)',
        () =>
          owned(`update weld_public.wps set process = $3 where tenant_id = $1 and id = $2`, [
            r.pick(wps),
            r.pick(['SMAW', 'GTAW', 'GTAW+SMAW']),
          ]),
      ],
      [
        'welder renamed (owner)',
        () =>
          owned(`update weld_public.welders set stamp = $3 where tenant_id = $1 and id = $2`, [
            r.pick(welders),
            `RS${++serial}`,
          ]),
      ],
      [
        'PQR: thickness tested changed (owner)',
        () =>
          owned(`update weld_public.pqrs set thickness_tested_in = $2 where tenant_id = $1`, [
            r.pick([0.25, 0.5, 1.5]),
          ]),
      ],
      [
        'WPS: PQR linked or unlinked (owner)',
        () =>
          r.next() < 0.5
            ? owned(
                `insert into weld_public.wps_pqrs (tenant_id, wps_id, pqr_id)
                 select $1, $2, p.id from weld_public.pqrs p where p.tenant_id = $1
                 on conflict do nothing`,
                [r.pick(wps)],
              )
            : owned(`delete from weld_public.wps_pqrs where tenant_id = $1 and wps_id = $2`, [
                r.pick(wps),
              ]),
      ],
      [
        'WPS: state or thickness range changed (owner)',
        () =>
          owned(
            `update weld_public.wps
                set state = case when $3 then $4 else state end,
                    thickness_max_in = case when $3 then thickness_max_in else $5 end
              where tenant_id = $1 and id = $2`,
            [r.pick(wps), r.next() < 0.5, r.pick(['draft', 'approved']), r.pick([0.5, 1, 3])],
          ),
      ],
      records.length > 0 && [
        'film interval over a weld of a record (owner)',
        () =>
          owned(
            `with l as (select ndt_record_id, weld_id from weld_public.ndt_record_welds
                         where tenant_id = $1 and ndt_record_id = $2 limit 1),
                  f as (insert into weld_public.film_intervals (tenant_id, ndt_record_id, label, result, defect_codes)
                        select $1, l.ndt_record_id, $3, $4, $5 from l returning id, ndt_record_id)
             insert into weld_public.film_interval_welds (tenant_id, ndt_record_id, film_interval_id, weld_id)
             select $1, f.ndt_record_id, f.id, l.weld_id from f, l`,
            [
              r.pick(records),
              `F-${++serial}`,
              ...(r.next() < 0.5 ? ['rejected', ['PO']] : ['accepted', []]),
            ],
          ),
      ],
      [
        'film interval result changed (owner)',
        () =>
          owned(
            `update weld_public.film_intervals
                set result = case result when 'accepted' then 'rejected' else 'accepted' end,
                    defect_codes = case result when 'accepted' then '{IP}'::text[] else '{}' end
              where tenant_id = $1
                and id = (select id from weld_public.film_intervals where tenant_id = $1
                           order by random() limit 1)`,
          ),
      ],
      [
        'ISO made, or an ISO without welds deleted (owner)',
        () =>
          r.next() < 0.5
            ? owned(
                `insert into weld_public.isos (tenant_id, iso_number, line_number, rt_percent)
                 values ($1, $2, $3, 10)`,
                [`RC-ISO-${++serial}`, r.pick(['RC-LINE-0', 'RC-LINE-1', 'RC-LINE-3'])],
              )
            : owned(
                `delete from weld_public.isos i
                  where i.tenant_id = $1
                    and i.id = (select x.id from weld_public.isos x
                                 where x.tenant_id = $1
                                   and not exists (select from weld_public.welds w where w.iso_id = x.id)
                                 order by random() limit 1)`,
              ),
      ],
      packages.length > 0 && [
        'package deleted (owner)',
        () =>
          owned(`delete from weld_public.test_packages where tenant_id = $1 and id = $2`, [
            r.pick(packages),
          ]),
      ],
      [
        'thickness, range or P-number rules changed (owner)',
        () =>
          owned(
            r.pick([
              `update weld_public.procedure_thickness_rules set max_factor = $2
                where tenant_id = $1 and max_factor is not null`,
              `update weld_public.qualification_range_rules set max_factor = $2
                where tenant_id = $1 and max_factor is not null`,
              `update weld_public.p_number_rules set note = 'changed ' || $2 where tenant_id = $1`,
            ]),
            [r.pick([1.5, 2, 3])],
          ),
      ],
    ];
    // The writes that change a lot only when they touch a drawn weld come up more often.
    const often = [
      'selection drawn (engineer)',
      'NDT record over welds, results given or not (owner)',
      'NDT record: method, date or result (owner)',
      'film interval result changed (owner)',
      'inspection result changed (owner)',
      'film interval over a weld of a record (owner)',
    ];
    return all
      .filter((x): x is Operation => x !== false)
      .flatMap((x) => (often.includes(x[0]) ? [x, x, x] : [x]));
  };

  const done: Record<string, number> = {};
  const refused: Record<string, number> = {};
  const withRows = { lots: 0, board: 0, qualifications: 0 };
  // What a rule may refuse of a random write (WD...), a key taken or still referred to, a check.
  // What a rule may refuse of a random write (WD...), a key taken or still referred to, a check;
  // and of writes run at once, a deadlock or a refresh overtaken.
  const EXPECTED = /^(WD\d\d\d|23505|23503|23001|23514|22023|P0001|40P01|40001)$/;
  const attempt = async ([name, write]: Operation) => {
    try {
      await write();
      done[name] = (done[name] ?? 0) + 1;
    } catch (error) {
      const code = String((error as { code?: string }).code);
      if (!EXPECTED.test(code)) throw error;
      refused[name] = (refused[name] ?? 0) + 1;
    }
  };
  const ALL = { lines: 1000, packages: 1000, welders: 1000 };
  let concurrent = 0;
  for (let step = 0; step < 160; step++) {
    await refresh(pool, tenant, ALL);
    t.is(await notes(owner, tenant), 0, `step ${step}: the refresh cleared the notes`);
    // One to three writes: one after the other, or at once with a refresh running beside them.
    const offered = await operations();
    const batch = Array.from({ length: 1 + r.int(3) }, () => r.pick(offered));
    const name = batch.map(([n]) => n).join(' + ');
    if (r.next() < 0.3) {
      concurrent += 1;
      await Promise.all([
        ...batch.map(attempt),
        attempt(['refresh', () => refresh(pool, tenant, ALL)]),
      ]);
    } else {
      for (const operation of batch) await attempt(operation);
    }
    const { lots, board, qualifications } = await agree(pool, ownerPool, a);
    withRows.lots += lots[1].length > 0 ? 1 : 0;
    withRows.board += board[1].length > 0 ? 1 : 0;
    withRows.qualifications += qualifications[1].length > 0 ? 1 : 0;
    t.deepEqual(lots[0], lots[1], `step ${step}, after "${name}": examination progress`);
    t.deepEqual(board[0], board[1], `step ${step}, after "${name}": the package board`);
    t.deepEqual(
      qualifications[0],
      qualifications[1],
      `step ${step}, after "${name}": qualification expiry`,
    );
  }
  t.log('done', done, 'batches run beside a refresh', concurrent);
  t.log('refused', refused);
  // Every kind of write ran, and the reports had something to show.
  t.true(Object.keys(done).length >= 28, Object.keys(done).join(', '));
  // And each report had rows to compare in most steps (the comparison was not of empty lists).
  t.log('steps with rows', withRows);
  t.true(withRows.lots > 30 && withRows.board > 30 && withRows.qualifications > 30);
});
