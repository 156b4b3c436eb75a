// The report views, each shown by a worked example: a small tenant whose numbers are
// worked out by hand below, read as a request role under row security.
import test from 'ava';
import type pg from 'pg';
import { withContext } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

const read = <T extends pg.QueryResultRow>(pool: pg.Pool, fx: TenantFixture, sql: string) =>
  withContext(
    pool,
    { role: 'weld_viewer', tenantId: fx.tenantId, userId: fx.users.viewer },
    async (c) => (await c.query<T>(sql)).rows,
  );

/**
 * Welder W01 of tenant alpha: ten butt welds made in March 2026 (and one VOIDED, which does not
 * count), examined on 2026-04-01: the examinations count in April, the month examined. NPS 4
 * (OD 4.500 in., circumference pi x 4.5 = 14.137 in.), but W5 is NPS 2 (OD 2.375 in., 7.461 in.)
 * and W6 NPS 7, no standard size (length unknown).
 *   RT-1 covers W1..W4: W1 rejected with 1.5 in. of defect, W2..W4 accepted.
 *   RT-2 covers W5 and W6 with no result given; its film: an interval over W5 rejected
 *        (porosity, 0.5 in.), one over W6 accepted, so W5 is rejected and W6 accepted.
 *   PT-1 rejects W7: a surface method, not counted in the (volumetric) repair rate.
 * So in April 6 examined (W1..W6), 2 rejected (W1, W5): 33.3 %, over the 5 % threshold with the
 * tenant's minimum sample of 5 (set here; 10 by default). By length: examined 4 x 14.137 +
 * 7.461 = 64.009 in. (W6 unknown, counted in lengthUnknown), defects 1.5 + 0.5 = 2 in.: 3.125 %.
 * Welder W02: 2 welds made in March, one examined in April by UT and accepted: 0 %, not over.
 */
async function workedExample(owner: pg.Client, a: TenantFixture) {
  const one = async (sql: string, params: unknown[]) =>
    (await owner.query<{ id: string }>(sql, params)).rows[0]!.id;
  const w02 = await one(
    `insert into weld_public.welders (tenant_id, stamp, name) values ($1, 'W02', 'Second welder') returning id`,
    [a.tenantId],
  );
  const weld = (n: string, welder: string, size: number, status = 'PENDING', day = '2026-03-10') =>
    one(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status, welder_id, welded_on)
       values ($1, $2, $3, 'BW', $4, $5, $6, $7) returning id`,
      [a.tenantId, a.isoId, n, size, status, welder, day],
    );
  const w: string[] = [];
  for (let n = 1; n <= 10; n++) {
    w.push(await weld(`W${n}`, a.welderId, n === 5 ? 2 : n === 6 ? 7 : 4));
  }
  await weld('W11', a.welderId, 4, 'VOIDED');
  const x1 = await weld('X1', w02, 4, 'PENDING', '2026-03-31');
  await weld('X2', w02, 4, 'PENDING', '2026-03-02');
  const record = (method: string, number: string) =>
    one(
      `insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
       values ($1, $2, $3, '2026-04-01', 'accepted') returning id`,
      [a.tenantId, method, number],
    );
  const link = (recordId: string, weldId: string, result: string | null) =>
    owner.query(
      `insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result)
       values ($1, $2, $3, $4)`,
      [a.tenantId, recordId, weldId, result],
    );
  const rt1 = await record('RT', 'RT-1');
  await link(rt1, w[0]!, 'rejected');
  await owner.query(
    'update weld_public.ndt_record_welds set defect_length_in = 1.5 where ndt_record_id = $1 and weld_id = $2',
    [rt1, w[0]],
  );
  for (const n of [1, 2, 3]) await link(rt1, w[n]!, 'accepted');
  const rt2 = await record('RT', 'RT-2');
  await link(rt2, w[4]!, null);
  await link(rt2, w[5]!, null);
  const film = async (label: string, weldId: string, result: string, defects: string[]) => {
    const interval = await one(
      `insert into weld_public.film_intervals (tenant_id, ndt_record_id, label, result, defect_codes)
       values ($1, $2, $3, $4, $5) returning id`,
      [a.tenantId, rt2, label, result, defects],
    );
    await owner.query(
      `insert into weld_public.film_interval_welds (tenant_id, ndt_record_id, film_interval_id, weld_id)
       values ($1, $2, $3, $4)`,
      [a.tenantId, rt2, interval, weldId],
    );
  };
  await film('0-1', w[4]!, 'rejected', ['PO']);
  await owner.query(
    `update weld_public.film_intervals set defect_length_in = 0.5 where ndt_record_id = $1 and label = '0-1'`,
    [rt2],
  );
  await owner.query(
    'update weld_public.tenant_settings set repair_rate_min_examined = 5 where tenant_id = $1',
    [a.tenantId],
  );
  await film('1-2', w[5]!, 'accepted', []);
  await link(await record('PT', 'PT-1'), w[6]!, 'rejected');
  await link(await record('UT', 'UT-1'), x1, 'accepted');
  return { w, w02 };
}

test('welder performance: the worked example of repair rates by joint and by length', async (t) => {
  const { owner, pool, a, b } = await twoTenants(t);
  await workedExample(owner, a);
  const rows = await read(
    pool,
    a,
    `select welder_stamp, month::text, welds_made, welds_examined, welds_rejected,
            round(repair_rate_percent::numeric, 1)::float8 as rate,
            round(length_examined_in::numeric, 3)::float8 as examined_in,
            round(defect_length_in::numeric, 3)::float8 as defect_in,
            round(repair_rate_by_length_percent::numeric, 3)::float8 as rate_by_length,
            length_unknown, defect_length_unknown, threshold_percent, minimum_examined, over_threshold
       from weld_reports.welder_performance order by welder_stamp, month`,
  );
  t.deepEqual(rows, [
    {
      welder_stamp: 'W01',
      month: '2026-03-01',
      welds_made: 10,
      welds_examined: 0,
      welds_rejected: 0,
      rate: null,
      examined_in: 0,
      defect_in: 0,
      rate_by_length: null,
      length_unknown: 0,
      defect_length_unknown: 0,
      threshold_percent: 5,
      minimum_examined: 5,
      over_threshold: false,
    },
    {
      welder_stamp: 'W01',
      month: '2026-04-01',
      welds_made: 0,
      welds_examined: 6,
      welds_rejected: 2,
      rate: 33.3,
      examined_in: 64.009,
      defect_in: 2,
      rate_by_length: 3.125,
      length_unknown: 1,
      defect_length_unknown: 0,
      threshold_percent: 5,
      minimum_examined: 5,
      over_threshold: true,
    },
    {
      welder_stamp: 'W02',
      month: '2026-03-01',
      welds_made: 2,
      welds_examined: 0,
      welds_rejected: 0,
      rate: null,
      examined_in: 0,
      defect_in: 0,
      rate_by_length: null,
      length_unknown: 0,
      defect_length_unknown: 0,
      threshold_percent: 5,
      minimum_examined: 5,
      over_threshold: false,
    },
    {
      welder_stamp: 'W02',
      month: '2026-04-01',
      welds_made: 0,
      welds_examined: 1,
      welds_rejected: 0,
      rate: 0,
      examined_in: 14.137,
      defect_in: 0,
      rate_by_length: 0,
      length_unknown: 0,
      defect_length_unknown: 0,
      threshold_percent: 5,
      minimum_examined: 5,
      over_threshold: false,
    },
  ]);

  // The tenant raises its threshold to 40 %: W01 is no longer flagged.
  await owner.query(
    `insert into weld_public.tenant_settings (tenant_id, repair_rate_threshold_percent) values ($1, 40)
     on conflict (tenant_id) do update set repair_rate_threshold_percent = 40`,
    [a.tenantId],
  );
  const flagged = await read<{ over_threshold: boolean }>(
    pool,
    a,
    `select over_threshold from weld_reports.welder_performance where welder_stamp = 'W01' order by month`,
  );
  t.deepEqual(flagged, [{ over_threshold: false }, { over_threshold: false }]);

  // The film interval over W5 is read again as accepted: W01 falls to 1 of 6 rejected.
  await owner.query(
    `update weld_public.film_intervals set result = 'accepted', defect_codes = '{}' where label = '0-1' and tenant_id = $1`,
    [a.tenantId],
  );
  const after = await read<{ welds_rejected: number }>(
    pool,
    a,
    `select welds_rejected from weld_reports.welder_performance where welder_stamp = 'W01' order by month`,
  );
  t.deepEqual(after, [{ welds_rejected: 0 }, { welds_rejected: 1 }]);

  // Tenant bravo sees its own welder only; nothing of alpha's.
  const theirs = await read<{ welder_stamp: string }>(
    pool,
    b,
    `select welder_stamp from weld_reports.welder_performance`,
  );
  t.deepEqual(theirs, []);
});

test('weld progress: welds welded and accepted per ISO and Monday week', async (t) => {
  const { owner, pool, a } = await twoTenants(t);
  const { w } = await workedExample(owner, a);
  // W1 and W2 accepted (through the rules, so the history records the move).
  for (const id of [w[1]!, w[2]!]) {
    await withContext(
      pool,
      { role: 'weld_engineer', tenantId: a.tenantId, userId: a.users.engineer },
      (c) =>
        c.query(
          `select from weld_public.change_weld_status($1, 'ACCEPTED', 'RT-1', null, null, null, 'disposition: RT-1')`,
          [id],
        ),
    );
  }
  const today = (
    await owner.query<{ monday: string }>(
      `select (current_date - (extract(isodow from current_date)::integer - 1))::text as monday`,
    )
  ).rows[0]!.monday;
  const rows = await read(
    pool,
    a,
    `select iso_number, week::text, welded, accepted from weld_reports.weld_progress order by week`,
  );
  // 2026-03-10 is a Tuesday: its week starts on Monday 2026-03-09 (W1..W10); X2 of 2026-03-02
  // (a Monday) and X1 of 2026-03-31 (Tuesday, week of 2026-03-30). The VOIDED W11 counts nowhere.
  t.deepEqual(rows, [
    { iso_number: 'alpha-ISO-1', week: '2026-03-02', welded: 1, accepted: 0 },
    { iso_number: 'alpha-ISO-1', week: '2026-03-09', welded: 10, accepted: 0 },
    { iso_number: 'alpha-ISO-1', week: '2026-03-30', welded: 1, accepted: 0 },
    { iso_number: 'alpha-ISO-1', week: today, welded: 0, accepted: 2 },
  ]);
});
