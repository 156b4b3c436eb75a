// B31.3 341.3.3 in SQL: a repaired weld is examined again by the methods that rejected it, by a
// record dated on or after the repair was welded; until then REEXAMINATION_OPEN (checks,
// readiness), and no acceptance, by hand (WD012) or by a record of another method (held).
import test from 'ava';
import { refusal, rulesWorld, type RulesWorld } from '../helpers/rules.ts';

/** One weld in order (ISO-1 on L-1, welder W1, SMAW), rejected by RT, repaired and re-welded. */
async function repaired(w: RulesWorld, rejectedBy: string[] = ['RT']) {
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
  const weldId = await w.weld(fx, isoId, 'N-1', { welder_id: welderId, wps_id: wpsId });
  for (const method of rejectedBy) {
    if (method === 'visual') await w.recordInspection(fx, 'visual', [weldId], 'rejected');
    else await w.recordNdt(fx, method, `${method}-1`, [[weldId, 'rejected']]);
  }
  await w.repair(fx, weldId);
  const owed = await w.sqlAs<{
    method: string;
    rewelded_on: string;
    repair_cycle: number;
    cause: string;
  }>(
    fx,
    'viewer',
    'select method, rewelded_on::text, repair_cycle, cause from weld_public.weld_reexaminations order by method',
  );
  return { fx, isoId, weldId, owed, reweldedOn: owed[0]?.rewelded_on ?? '' };
}

test('341.3.3: a weld rejected by RT and repaired owes RT: REEXAMINATION_OPEN until an RT dated on or after the re-weld', async (t) => {
  const w = await rulesWorld(t);
  const r = await repaired(w);
  t.deepEqual(
    r.owed.map((o) => [o.method, o.repair_cycle, o.cause]),
    [['RT', 1, 'RT report RT-1 of 2026-02-10']],
  );
  t.is(r.reweldedOn, new Date().toISOString().slice(0, 10), 'the day it left REPAIR (UTC)');
  const [open] = (await w.checks(r.fx, r.weldId)).filter((c) => c.code === 'REEXAMINATION_OPEN');
  t.is(
    open!.detail,
    `repair 1, welded on ${r.reweldedOn}, owes a new RT examination (RT or UT) dated on or after that day (B31.3 341.3.3); RT report RT-1 of 2026-02-10 rejected it`,
  );

  // Another method accepts it: the weld stays PENDING, since the RT is still owed.
  await w.recordNdt(r.fx, 'MT', 'MT-1', [[r.weldId, 'accepted']], r.reweldedOn);
  t.deepEqual(await w.statuses(r.weldId), ['PENDING']);
  t.true((await w.codes(r.fx, r.weldId)).includes('REEXAMINATION_OPEN'));
  // An RT dated before the re-weld is no re-examination; records are never dated before the
  // weld was made, but the re-weld is later than that.
  await w.recordNdt(r.fx, 'RT', 'RT-0', [[r.weldId, 'accepted']], '2026-02-20');
  t.true((await w.codes(r.fx, r.weldId)).includes('REEXAMINATION_OPEN'));
  await w.recordNdt(r.fx, 'RT', 'RT-2', [[r.weldId, 'accepted']], r.reweldedOn);
  t.false((await w.codes(r.fx, r.weldId)).includes('REEXAMINATION_OPEN'));
});

test("341.3.3: UT, RT's volumetric equal, closes an RT re-examination; a weld rejected by RT and visually owes both", async (t) => {
  const w = await rulesWorld(t);
  const r = await repaired(w, ['RT', 'visual']);
  t.deepEqual(
    r.owed.map((o) => o.method),
    ['RT', 'VT'],
  );
  await w.recordNdt(r.fx, 'UT', 'UT-1', [[r.weldId, 'accepted']], r.reweldedOn);
  const open = (await w.checks(r.fx, r.weldId)).filter((c) => c.code === 'REEXAMINATION_OPEN');
  t.deepEqual(
    open.map((c) => /owes a new (\w+)/.exec(c.detail)![1]),
    ['VT'],
  );
  await w.recordInspection(r.fx, 'visual', [r.weldId], 'accepted', r.reweldedOn);
  t.false((await w.codes(r.fx, r.weldId)).includes('REEXAMINATION_OPEN'));
});

test('341.3.3: accepting a repaired weld by hand while its RT is owed is WD012, whatever the tenant\u2019s mode; readiness holds it', async (t) => {
  const w = await rulesWorld(t);
  const r = await repaired(w);
  const inspection = await w.recordInspection(r.fx, 'visual', [r.weldId], 'accepted', r.reweldedOn);
  for (const mode of ['refuse', 'show']) {
    await w.setting(r.fx, 'weld_checks', mode);
    const error = await refusal(
      t,
      w.moveWeld(r.fx, 'inspector', r.weldId, 'ACCEPTED', null, { inspectionId: inspection }),
    );
    t.is(error.code, 'WD012', mode);
    t.regex(error.message, /^weld N-1 is not accepted: repair 1/);
    t.deepEqual(
      (JSON.parse(error.detail!) as { checks: Array<{ code: string }> }).checks.map((c) => c.code),
      ['REEXAMINATION_OPEN'],
    );
    t.deepEqual(await w.statuses(r.weldId), ['PENDING'], 'nothing written');
  }
  const packageId = await w.testPackage(r.fx, 'TP-1', { welds: [r.weldId] });
  t.true(
    (await w.readiness(r.fx, packageId)).some(
      (x) => x.code === 'REEXAMINATION_OPEN' && x.weld_id === r.weldId,
    ),
  );
});

test('341.3.3: a second repair owes only what rejected the weld since the first re-weld', async (t) => {
  const w = await rulesWorld(t);
  const r = await repaired(w, ['RT', 'MT']);
  t.deepEqual(
    r.owed.map((o) => o.method),
    ['MT', 'RT'],
  );
  await w.recordNdt(r.fx, 'RT', 'RT-2', [[r.weldId, 'rejected']], r.reweldedOn);
  await w.repair(r.fx, r.weldId);
  const second = await w.sqlAs<{ method: string }>(
    r.fx,
    'viewer',
    'select method from weld_public.weld_reexaminations where repair_cycle = 2',
  );
  t.deepEqual(
    second.map((o) => o.method),
    ['RT'],
  );
});
