// Welder alerts: the daily tick (weld_hidden.send_welder_alerts, called by each instance's
// housekeeping through sendWelderAlerts) announces a qualification 30, 14 and 3 days before it
// stops being in force, once each, then its lapse (announced or not), and a welder whose repair
// rate in a month examined passes the tenant's threshold with the minimum sample, once a month:
// exactly once though two instances tick at once, and late rather than never.
import test from 'ava';
import { createPool, withContext } from '../../db/database.ts';
import { sendWelderAlerts } from '../../server/housekeeping.ts';
import { twoTenants } from '../helpers/fixtures.ts';

interface Alert {
  type: string;
  subject_id: string;
  change: Record<string, unknown>;
  data: Record<string, unknown>;
}

async function alertWorld(t: Parameters<typeof twoTenants>[0]) {
  const world = await twoTenants(t);
  const { owner, target, a } = world;
  // A second instance: a pool of its own.
  const other = createPool(target.authenticatorUrl, { max: 2 });
  t.teardown(() => other.end());
  const alerts = async (tenantId = a.tenantId) =>
    (
      await owner.query<Alert>(
        `select type, subject_id, change, data from weld_hidden.pending_events
          where tenant_id = $1 and (type like 'qualification.%' or type = 'welder.repair_rate_exceeded')
          order by n`,
        [tenantId],
      )
    ).rows;
  /** The next day's tick: the days' rows of the tenants are the only thing that says it ran. */
  const nextDay = () => owner.query('delete from weld_private.alert_days');
  return { ...world, other, alerts, nextDay };
}

test('a qualification expiring in 14 days: one qualification.lapsing though two instances tick at once; the tick again sends nothing; at 3 days the next; once expired, qualification.lapsed, once', async (t) => {
  const w = await alertWorld(t);
  const { owner, a } = w;
  const q = (
    await owner.query<{ id: string }>(
      `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
       values ($1, $2, 'SMAW', current_date - 100, current_date + 14) returning id`,
      [a.tenantId, a.welderId],
    )
  ).rows[0]!.id;

  const [first, second] = await Promise.all([sendWelderAlerts(w.pool), sendWelderAlerts(w.other)]);
  t.deepEqual([...first.failed, ...second.failed], []);
  t.is(first.sent + second.sent, 1, 'one alert in all');
  const [lapsing] = await w.alerts();
  t.is((await w.alerts()).length, 1);
  t.is(lapsing!.type, 'qualification.lapsing');
  t.is(lapsing!.subject_id, q);
  t.like(lapsing!.change, { process: 'SMAW', daysLeft: 14, cause: 'expiry', threshold: 14 });
  t.is(lapsing!.data.id, q);
  t.false('tenantId' in lapsing!.data);

  // The same day again, or the next day with nothing new: nothing.
  t.is((await sendWelderAlerts(w.pool)).sent, 0);
  await w.nextDay();
  t.is((await sendWelderAlerts(w.pool)).sent, 0);
  t.is((await w.alerts()).length, 1);

  // Three days left: the 3-day alert, once.
  await owner.query(
    `update weld_public.welder_qualifications set expires_on = current_date + 3 where id = $1`,
    [q],
  );
  await w.nextDay();
  await Promise.all([sendWelderAlerts(w.pool), sendWelderAlerts(w.other)]);
  t.deepEqual(
    (await w.alerts()).map((e) => [e.type, e.change.threshold]),
    [
      ['qualification.lapsing', 14],
      ['qualification.lapsing', 3],
    ],
  );

  // Expired yesterday: lapsed, once (a use of the process after it does not revive it).
  await owner.query(
    `update weld_public.welder_qualifications set expires_on = current_date - 1 where id = $1`,
    [q],
  );
  await w.owner.query(
    `update weld_private.welder_alerts set on_date = current_date - 1 where subject_id = $1`,
    [q],
  );
  await w.nextDay();
  await Promise.all([sendWelderAlerts(w.pool), sendWelderAlerts(w.other)]);
  await w.nextDay();
  await sendWelderAlerts(w.pool);
  const lapsed = (await w.alerts()).filter((e) => e.type === 'qualification.lapsed');
  t.is(lapsed.length, 1);
  t.like(lapsed[0]!.change, { process: 'SMAW', state: 'expired' });
  // Tenant B heard nothing.
  t.deepEqual(await w.alerts(w.b.tenantId), []);
});

test('a qualification renewed before its day is not announced as lapsed', async (t) => {
  const w = await alertWorld(t);
  const { owner, a } = w;
  const q = (
    await owner.query<{ id: string }>(
      `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
       values ($1, $2, 'GTAW', current_date - 100, current_date + 2) returning id`,
      [a.tenantId, a.welderId],
    )
  ).rows[0]!.id;
  await sendWelderAlerts(w.pool);
  t.deepEqual(
    (await w.alerts()).map((e) => [e.type, e.change.threshold]),
    [['qualification.lapsing', 3]],
  );
  // Its expiry moved a year on (renewed), and the day announced has passed: no lapse.
  await owner.query(
    `update weld_public.welder_qualifications set expires_on = current_date + 365 where id = $1`,
    [q],
  );
  await owner.query(
    `update weld_private.welder_alerts set on_date = current_date - 1 where subject_id = $1`,
    [q],
  );
  await w.nextDay();
  await sendWelderAlerts(w.pool);
  t.deepEqual(
    (await w.alerts()).map((e) => e.type),
    ['qualification.lapsing'],
  );
});

/**
 * `count` welds of the fixture's welder, welded `weldedAgo` days ago, examined by one RT report
 * dated `examinedAgo` days ago that rejects the first `rejected` of them (with `defect` inches of
 * defect each, when given); the welds' ids.
 */
async function examined(
  w: Awaited<ReturnType<typeof alertWorld>>,
  report: string,
  count: number,
  rejected: number,
  days: { weldedAgo: number; examinedAgo: number },
  defect: number | null = null,
) {
  const welds: string[] = [];
  for (let i = 0; i < count; i++) welds.push(await w.a.weld('PENDING', `${report}-${i + 1}`));
  await w.owner.query(
    `update weld_public.welds set welded_on = current_date - $2::integer where id = any($1)`,
    [welds, days.weldedAgo],
  );
  await w.owner.query(
    `with r as (insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
                values ($1, 'RT', $2, current_date - $4::integer, 'rejected') returning id)
     insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result, defect_length_in)
     select $1, r.id, x.weld,
            case when x.n <= $5 then 'rejected' else 'accepted' end,
            case when x.n <= $5 then $6::numeric end
       from r, unnest($3::uuid[]) with ordinality as x (weld, n)`,
    [w.a.tenantId, report, welds, days.examinedAgo, rejected, defect],
  );
  return welds;
}

test('a welder whose repair rate in a month examined passes the threshold with the minimum sample: welder.repair_rate_exceeded, once a month', async (t) => {
  const w = await alertWorld(t);
  const { a } = w;
  // Welded last month, examined this month: the rate is this month's (the month examined).
  await examined(w, 'RT-1', 12, 2, { weldedAgo: 45, examinedAgo: 0 });
  await Promise.all([sendWelderAlerts(w.pool), sendWelderAlerts(w.other)]);
  const [alert, ...more] = await w.alerts();
  t.deepEqual(more, []);
  t.is(alert!.type, 'welder.repair_rate_exceeded');
  t.is(alert!.subject_id, a.welderId);
  t.like(alert!.change, {
    weldsExamined: 12,
    weldsRejected: 2,
    thresholdPercent: 5,
    minimumExamined: 10,
  });
  t.is(Math.round(alert!.change.repairRatePercent as number), 17);
  const [month] = (
    await w.owner.query<{ month: string }>(
      `select to_char(date_trunc('month', current_date), 'YYYY-MM-DD') as month`,
    )
  ).rows;
  t.is(alert!.change.month, month!.month);
  t.is(alert!.data.stamp, 'W01');
  await w.nextDay();
  await sendWelderAlerts(w.pool);
  t.is((await w.alerts()).length, 1, 'once a month');
});

test('1 rejected weld of 1 examined is no alert: below the minimum sample (tenant_settings.repair_rate_min_examined, 10)', async (t) => {
  const w = await alertWorld(t);
  await examined(w, 'RT-1', 1, 1, { weldedAgo: 3, examinedAgo: 1 });
  t.is((await sendWelderAlerts(w.pool)).sent, 0);
  // The tenant lowers its minimum to 1: the same month alerts, late but once.
  await w.owner.query(
    'update weld_public.tenant_settings set repair_rate_min_examined = 1 where tenant_id = $1',
    [w.a.tenantId],
  );
  await w.nextDay();
  t.is((await sendWelderAlerts(w.pool)).sent, 1);
  t.like((await w.alerts())[0]!.change, { weldsExamined: 1, weldsRejected: 1, minimumExamined: 1 });
});

test('the tick catches up: a month examined three months ago over the threshold, never alerted, is alerted once', async (t) => {
  const w = await alertWorld(t);
  await examined(w, 'RT-OLD', 10, 3, { weldedAgo: 100, examinedAgo: 95 });
  await sendWelderAlerts(w.pool);
  const alerts = await w.alerts();
  t.is(alerts.length, 1);
  t.like(alerts[0]!.change, { weldsExamined: 10, weldsRejected: 3, repairRatePercent: 30 });
  await w.nextDay();
  t.is((await sendWelderAlerts(w.pool)).sent, 0);
});

test('the repair rate counts random examinations of original work: a progressive tier’s rejections and a repair’s re-shoot are left out, and the report says so', async (t) => {
  const w = await alertWorld(t);
  const { owner, a } = w;
  const welds = await examined(w, 'RT-1', 10, 0, { weldedAgo: 20, examinedAgo: 10 });
  // An eleventh weld, examined as a progressive tier and rejected: not a random examination.
  const tierWeld = await a.weld('PENDING', 'TIER-1');
  const random = (
    await owner.query<{ id: string }>(
      `insert into weld_public.examination_selections (tenant_id, weld_id, method, tier, reason)
       values ($1, $2, 'RT', 'random', 'drawn') returning id`,
      [a.tenantId, welds[0]],
    )
  ).rows[0]!.id;
  const rejecting = (
    await owner.query<{ id: string }>(
      `insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
       values ($1, 'RT', 'RT-T', current_date - 10, 'rejected') returning id`,
      [a.tenantId],
    )
  ).rows[0]!.id;
  await owner.query(
    `insert into weld_public.examination_selections
       (tenant_id, weld_id, method, tier, reason, cause_selection_id, cause_ndt_record_id)
     values ($1, $2, 'RT', '1', 'tier 1', $3, $4)`,
    [a.tenantId, tierWeld, random, rejecting],
  );
  await owner.query(`update weld_public.welds set welded_on = current_date - 20 where id = $1`, [
    tierWeld,
  ]);
  await owner.query(
    `insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result)
     values ($1, $2, $3, 'rejected')`,
    [a.tenantId, rejecting, tierWeld],
  );
  // A repair's re-shoot of the second weld, rejected: not original work.
  await owner.query(
    `insert into weld_public.weld_repairs (tenant_id, weld_id, repair_cycle, released_at, rewelded_at, welded_on)
     values ($1, $2, 1, now() - interval '8 days', now() - interval '6 days', current_date - 6)`,
    [a.tenantId, welds[1]],
  );
  await owner.query(
    `with r as (insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
                values ($1, 'RT', 'RT-R', current_date - 5, 'rejected') returning id)
     insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result)
     select $1, r.id, $2, 'rejected' from r`,
    [a.tenantId, welds[1]],
  );
  const rows = (
    await withContext(
      w.pool,
      { role: 'weld_viewer', tenantId: a.tenantId, userId: a.users.viewer },
      (c) =>
        c.query<{ welds_examined: number; welds_rejected: number; over_threshold: boolean }>(
          'select welds_examined, welds_rejected, over_threshold from weld_reports.welder_performance where welds_examined > 0',
        ),
    )
  ).rows;
  t.deepEqual(rows, [{ welds_examined: 10, welds_rejected: 0, over_threshold: false }]);
  t.is((await sendWelderAlerts(w.pool)).sent, 0);
});

test('the repair rate by length is the defects’ length over the length examined; unknown while a rejection records none', async (t) => {
  const w = await alertWorld(t);
  // 10 NPS 4 welds (OD 4.5 in.: 14.137 in. each), one rejected with 2 in. of defect.
  await examined(w, 'RT-1', 10, 1, { weldedAgo: 5, examinedAgo: 2 }, 2);
  const read = () =>
    withContext(
      w.pool,
      { role: 'weld_viewer', tenantId: w.a.tenantId, userId: w.a.users.viewer },
      async (c) =>
        (
          await c.query<{
            length_examined_in: number;
            defect_length_in: number;
            repair_rate_by_length_percent: number | null;
            defect_length_unknown: number;
          }>(
            `select length_examined_in, defect_length_in, repair_rate_by_length_percent, defect_length_unknown
               from weld_reports.welder_performance where welds_examined > 0`,
          )
        ).rows,
    );
  const [row] = await read();
  t.is(row!.length_examined_in, 141.37);
  t.is(row!.defect_length_in, 2);
  t.is(row!.defect_length_unknown, 0);
  t.is(Math.round(row!.repair_rate_by_length_percent! * 1000) / 1000, 1.415);
  // Another rejection without a length: the rate by length is unknown, never the circumference.
  await examined(w, 'RT-2', 1, 1, { weldedAgo: 5, examinedAgo: 2 });
  const [after] = await read();
  t.is(after!.defect_length_unknown, 1);
  t.is(after!.repair_rate_by_length_percent, null);
});

test('a lapse that happened before the tick ran, never announced as lapsing, is alerted once; a welder still qualified for the process by another is not', async (t) => {
  const w = await alertWorld(t);
  const { owner, a } = w;
  const lapsedOne = (
    await owner.query<{ id: string }>(
      `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
       values ($1, $2, 'SMAW', current_date - 400, current_date - 20) returning id`,
      [a.tenantId, a.welderId],
    )
  ).rows[0]!.id;
  // GTAW lapsed too, but a renewal keeps the welder qualified for it.
  await owner.query(
    `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, expires_on)
     values ($1, $2, 'GTAW', current_date - 400, current_date - 30),
            ($1, $2, 'GTAW', current_date - 31, current_date + 300)`,
    [a.tenantId, a.welderId],
  );
  await sendWelderAlerts(w.pool);
  const lapsed = (await w.alerts()).filter((e) => e.type === 'qualification.lapsed');
  t.is(lapsed.length, 1);
  t.is(lapsed[0]!.subject_id, lapsedOne);
  t.like(lapsed[0]!.change, { process: 'SMAW', state: 'expired' });
  await w.nextDay();
  await sendWelderAlerts(w.pool);
  t.is((await w.alerts()).filter((e) => e.type === 'qualification.lapsed').length, 1, 'once');
});

test('only the authenticator may tick, and a tick needs a tenant', async (t) => {
  const w = await alertWorld(t);
  const error = await t.throwsAsync(w.pool.query('select weld_hidden.send_welder_alerts(null)'));
  t.is((error as { code?: string }).code, '22004');
  const denied = await t.throwsAsync(
    withContext(
      w.pool,
      { role: 'weld_admin', tenantId: w.a.tenantId, userId: w.a.users.admin },
      (c) => c.query('select weld_hidden.send_welder_alerts($1)', [w.a.tenantId]),
    ),
  );
  t.is((denied as { code?: string }).code, '42501');
});
