// The kept rows of the slow reports (F17, migration 000035): examination progress per line,
// the test package board per package, qualification expiry per welder. Each write notes what it
// changed (weld_private.report_stale); a report reads kept rows where nothing is noted and computes
// the rest; weld_hidden.refresh_reports recomputes what is noted and clears the notes.
//
// Here: the refresh, its chunks and rounds, a write racing it, and a worked example for each kind
// of note. The randomized run over every kind of write is report-cache-random.test.ts.
import test from 'ava';
import { createPool, withContext } from '../../db/database.ts';
import { refreshReports } from '../../server/housekeeping.ts';
import { twoTenants } from '../helpers/fixtures.ts';
import { computed, notes, refresh, reported } from '../helpers/report-cache.ts';

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
           (select id from weld_public.welds order by weld_number limit 1), 'ACCEPTED', 'VT',
           null, null, null, 'NCR-4 use as is')`,
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
          c.query(
            `select from weld_public.change_weld_status($1, 'ACCEPTED', 'VT', null, null, null, 'disposition: VT')`,
            [welds[0]],
          ),
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

test('heat treatment: a PWHT record, its values, its welds, a hardness reading and the table each change the package board at once, and the refresh keeps it', async (t) => {
  const { owner, pool, a, target } = await twoTenants(t);
  const ownerPool = createPool(target.ownerUrl, { max: 2 });
  t.teardown(() => ownerPool.end());
  const tenant = a.tenantId;
  const q = (sql: string, params: unknown[] = []) => owner.query(sql, [tenant, ...params]);
  // A P-No. 1 weld of 0.787 in. wall (over 3/4 in.: PWHT required) in a package holding its ISO.
  const weld = await a.weld('ACCEPTED');
  await q(
    `update weld_public.welds set wall_thickness = 0.787, base_metal_1_p_number = '1',
            base_metal_2_p_number = '1', welded_on = '2026-02-01'
      where tenant_id = $1 and id = $2`,
    [weld],
  );
  await q(
    `with p as (insert into weld_public.test_packages (tenant_id, package_number, test_medium)
                values ($1, 'TP-HT', 'hydro') returning id)
     insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id)
     select $1, p.id, $2 from p`,
    [a.isoId],
  );
  const codes = async () =>
    Object.keys((await reported(pool, a)).board[0].reasons_by_code).filter((code) =>
      /^(PWHT|HARDNESS)/.test(code),
    );
  const step = async (what: string, write: () => Promise<unknown>, wanted: string[]) => {
    await refresh(pool, tenant);
    t.is(await notes(owner, tenant), 0, what);
    await write();
    t.true((await notes(owner, tenant)) > 0, `${what}: noted`);
    t.deepEqual(await codes(), wanted, `${what}: at once`);
    await refresh(pool, tenant);
    t.deepEqual(await codes(), wanted, `${what}: kept`);
    t.deepEqual((await reported(pool, a)).board, (await computed(ownerPool, a)).board, what);
  };
  await refresh(pool, tenant);
  t.deepEqual(await codes(), ['PWHT_REQUIRED']);

  const record = (
    await q(
      `insert into weld_public.pwht_records (tenant_id, record_number, treated_on, holding_temperature_f, hold_minutes)
       values ($1, 'PW-1', '2026-02-10', 1000, 60) returning id`,
    )
  ).rows[0].id as string;
  await step(
    'weld (a PWHT record covers it)',
    () =>
      q(
        `insert into weld_public.pwht_record_welds (tenant_id, pwht_record_id, weld_id) values ($1, $2, $3)`,
        [record, weld],
      ),
    ['PWHT_OUT_OF_RANGE'],
  );
  await step(
    'record (its temperature)',
    () =>
      q(
        `update weld_public.pwht_records set holding_temperature_f = 1150 where tenant_id = $1 and id = $2`,
        [record],
      ),
    [],
  );
  await step(
    'all (the table)',
    () =>
      q(
        `update weld_public.heat_treatment_rules set hardness_max_hb = 200 where tenant_id = $1 and p_number = '1'`,
      ),
    // A limit asks a hardness test of the treated weld.
    ['HARDNESS_REQUIRED'],
  );
  await step(
    'weld (a hardness reading)',
    () =>
      q(
        `insert into weld_public.hardness_readings (tenant_id, weld_id, measured_on, hardness_hb)
         values ($1, $2, '2026-02-12', 250)`,
        [weld],
      ),
    ['HARDNESS_HIGH'],
  );
  await step(
    'weld (the record taken off it)',
    () => q(`delete from weld_public.pwht_record_welds where tenant_id = $1`),
    ['HARDNESS_HIGH', 'PWHT_REQUIRED'],
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
    (c) =>
      c.query(
        `select from weld_public.change_weld_status($1, 'ACCEPTED', 'VT', null, null, null, 'disposition: VT')`,
        [weld],
      ),
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
