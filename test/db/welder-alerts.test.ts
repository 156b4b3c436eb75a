// Welder alerts (issue F19): the daily tick (weld_hidden.send_welder_alerts, called by each
// instance's housekeeping through sendWelderAlerts) announces a qualification 30, 14 and 3 days
// before it stops being in force, once each, then its lapse, and a welder whose repair rate passes
// the tenant's threshold, once a month: exactly once though two instances tick at once.
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

test('a welder whose repair rate this month passes the threshold: welder.repair_rate_exceeded, once a month', async (t) => {
  const w = await alertWorld(t);
  const { owner, a } = w;
  const welds = [await a.weld(), await a.weld()];
  await owner.query(`update weld_public.welds set welded_on = current_date where id = any($1)`, [
    welds,
  ]);
  await owner.query(
    `with r as (insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
                values ($1, 'RT', 'RT-1', current_date, 'accepted') returning id)
     insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result)
     select $1, r.id, x.weld, x.result from r, unnest($2::uuid[], array['accepted', 'rejected']) as x (weld, result)`,
    [a.tenantId, welds],
  );
  await Promise.all([sendWelderAlerts(w.pool), sendWelderAlerts(w.other)]);
  const [alert, ...more] = await w.alerts();
  t.deepEqual(more, []);
  t.is(alert!.type, 'welder.repair_rate_exceeded');
  t.is(alert!.subject_id, a.welderId);
  t.like(alert!.change, {
    weldsExamined: 2,
    weldsRejected: 1,
    repairRatePercent: 50,
    thresholdPercent: 5,
  });
  t.is(alert!.data.stamp, 'W01');
  await w.nextDay();
  await sendWelderAlerts(w.pool);
  t.is((await w.alerts()).length, 1, 'once a month');
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
