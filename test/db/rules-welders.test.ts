// ASME IX welder qualification in SQL: the ranges a coupon qualifies (QW-452.3 diameter,
// QW-452.1(b) weld metal thickness), groove and fillet (QW-303), continuity per process with the
// continuity log (QW-322.1(a)), revocation (QW-322.1(b)) and renewal (QW-322.2). Each test is a
// worked example named by its paragraph; a weld's WELDER_NOT_QUALIFIED check is the verdict.
import test from 'ava';
import { refusal, rulesWorld, type RulesWorld } from '../helpers/rules.ts';
import type { TenantFixture } from '../helpers/fixtures.ts';

/** A welder W1 with one qualification (`extra`), an SMAW WPS, and a function making their welds. */
async function welderWith(w: RulesWorld, extra: Record<string, unknown>, process = 'SMAW') {
  const fx = w.a;
  // A PQR of T 0.75 in. supports 3/16 to 1.5 in. (QW-451.1), so welds up to 1.5 in. are in range.
  const pqrId = await w.pqr(fx, 'PQR-1', process, { thickness_tested_in: 0.75 });
  const wpsId = await w.wps(fx, 'WPS-1', process, { thickness_max_in: 1.5 }, [pqrId]);
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const welderId = await w.welder(fx, 'W1');
  const qualificationId = await w.qualification(fx, welderId, { process, ...extra });
  let n = 0;
  const weld = (more: Record<string, unknown> = {}) =>
    w.weld(fx, isoId, `N-${++n}`, { welder_id: welderId, wps_id: wpsId, ...more });
  return { fx, wpsId, isoId, welderId, qualificationId, weld };
}

const qualified = async (w: RulesWorld, fx: TenantFixture, weldId: string) =>
  !(await w.codes(fx, weldId)).includes('WELDER_NOT_QUALIFIED');

const status = (w: RulesWorld, fx: TenantFixture, welderId: string, on: string) =>
  w.sqlAs<{ process: string; state: string; continuity_until: string | null; reasons: string[] }>(
    fx,
    'viewer',
    `select q.process, q.state, q.continuity_until::text, q.reasons
       from weld_public.welders w, weld_public.welders_qualification_status(w, $2::date) q
      where w.id = $1`,
    [welderId, on],
  );

test('QW-452.3: a 2 7/8 in. OD coupon (NPS 2 1/2) qualifies 1 in. and up, so it covers OD 1.9 in. (NPS 1 1/2) but not OD 0.84 in.', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { coupon_diameter_in: 2.875 });
  t.true(await qualified(w, q.fx, await q.weld({ size: 1.5, wall_thickness: 0.2 })));
  const small = await q.weld({ size: 0.5, wall_thickness: 0.109 });
  t.false(await qualified(w, q.fx, small));
  const [check] = (await w.checks(q.fx, small)).filter((c) => c.code === 'WELDER_NOT_QUALIFIED');
  t.regex(check!.detail, /covers OD 1 in\. and up, not OD 0\.84 in\. \(QW-452\.3\)/);
  t.notRegex(check!.detail, /thickness/, 'only the diameter fails, and only it is named');
});

test('QW-452.3: a 0.75 in. OD coupon qualifies its own size and up: NPS 1/2 (OD 0.840) yes, NPS 3/8 (OD 0.675) no', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { coupon_diameter_in: 0.75 });
  t.true(await qualified(w, q.fx, await q.weld({ size: 0.5, wall_thickness: 0.109 })));
  t.false(await qualified(w, q.fx, await q.weld({ size: 0.375, wall_thickness: 0.091 })));
});

test('QW-452.3: a 3 in. OD coupon qualifies 2 7/8 in. and up: NPS 2 1/2 (OD 2.875) yes, NPS 2 (OD 2.375) no', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { coupon_diameter_in: 3 });
  t.true(await qualified(w, q.fx, await q.weld({ size: 2.5, wall_thickness: 0.203 })));
  t.false(await qualified(w, q.fx, await q.weld({ size: 2, wall_thickness: 0.154 })));
});

test('QW-452.1(b): weld metal t = 0.25 in. qualifies up to 0.5 in.: a wall of 0.5 yes, 0.51 no', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { coupon_thickness_in: 0.25 });
  t.true(await qualified(w, q.fx, await q.weld({ wall_thickness: 0.5 })));
  t.false(await qualified(w, q.fx, await q.weld({ wall_thickness: 0.51 })));
});

test('QW-452.1(b): t = 1/2 in. in three layers qualifies any thickness (a 1.4 in. wall); without the flag up to 1 in.; t = 0.4 in three layers up to 0.8 only', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { coupon_thickness_in: 0.5, three_layers: true });
  t.true(await qualified(w, q.fx, await q.weld({ wall_thickness: 1.4 })));
  await w.dba('update weld_public.welder_qualifications set three_layers = false where id = $1', [
    q.qualificationId,
  ]);
  t.false(await qualified(w, q.fx, await q.weld({ wall_thickness: 1.01 })));
  await w.dba(
    'update weld_public.welder_qualifications set three_layers = true, coupon_thickness_in = 0.4 where id = $1',
    [q.qualificationId],
  );
  t.true(await qualified(w, q.fx, await q.weld({ wall_thickness: 0.8 })));
  t.false(await qualified(w, q.fx, await q.weld({ wall_thickness: 0.81 })));
});

test('QW-303.1: a socket weld on NPS 1 passes with a groove qualification of a 6.625 in. coupon: no groove range, of welder or WPS, applies to a fillet weld', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  await w.dba('update weld_public.wps set diameter_min_in = 2.875 where id = $1', [q.wpsId]);
  const socket = await q.weld({ type: 'SW', size: 1, wall_thickness: 0.133 });
  t.deepEqual(await w.checks(q.fx, socket), []);
  const groove = await q.weld({ type: 'BW', size: 1, wall_thickness: 0.2 });
  t.deepEqual((await w.codes(q.fx, groove)).sort(), ['WELDER_NOT_QUALIFIED', 'WPS_RANGE']);
  // (Only heat treatment and preheat ask for its wall: P-No. 1 needs PWHT over 3/4 in. and more
  // preheat from 1 in., so without a wall whether it does is unknown: rules-heat-treatment,
  // rules-verdicts.)
  const fillet = await q.weld({ type: 'FW', size: 1, wall_thickness: null });
  t.deepEqual(
    (await w.checks(q.fx, fillet)).filter((c) => !/PWHT|preheat/.test(c.detail)),
    [],
    'a fillet weld needs no wall thickness for these checks',
  );
});

test('QW-303.2: a fillet qualification covers fillet and socket welds only: a butt weld is not qualified', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { joint: 'fillet' });
  t.true(await qualified(w, q.fx, await q.weld({ type: 'SW', size: 1 })));
  const butt = await q.weld();
  t.false(await qualified(w, q.fx, butt));
  const [check] = (await w.checks(q.fx, butt)).filter((c) => c.code === 'WELDER_NOT_QUALIFIED');
  t.regex(check!.detail, /covers fillet welds only \(QW-303\.2\)/);
});

test('QW-322.1(a): a GTAW+SMAW qualification lapses per process: GTAW welds keep GTAW in force while SMAW lapses on 2026-07-11', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const gtaw = await w.wps(fx, 'WPS-G', 'GTAW');
  const both = await w.wps(fx, 'WPS-GS', 'GTAW+SMAW', {}, [await w.pqr(fx, 'PQR-GS', 'GTAW+SMAW')]);
  const welderId = await w.welder(fx, 'W1');
  await w.qualification(fx, welderId, { process: 'GTAW+SMAW' });
  for (const [n, day] of ['2026-03-01', '2026-06-01', '2026-08-20'].entries()) {
    await w.weld(fx, isoId, `G-${n}`, { welder_id: welderId, wps_id: gtaw, welded_on: day });
  }
  const later = await w.weld(fx, isoId, 'GS-1', {
    welder_id: welderId,
    wps_id: both,
    welded_on: '2026-09-01',
  });
  const [check] = (await w.checks(fx, later)).filter((c) => c.code === 'WELDER_NOT_QUALIFIED');
  t.is(
    check!.detail,
    'welder W1 holds no qualification in force on 2026-09-01 that covers this weld: for SMAW, GTAW+SMAW qualified 2026-01-10 lapsed for SMAW on 2026-07-11 (QW-322.1(a))',
    'GTAW is covered: only SMAW is named',
  );
  t.true(
    await qualified(
      w,
      fx,
      await w.weld(fx, isoId, 'G-9', {
        welder_id: welderId,
        wps_id: gtaw,
        welded_on: '2026-09-01',
      }),
    ),
  );

  const on = await status(w, fx, welderId, '2026-09-01');
  t.deepEqual(
    on.map((s) => [s.process, s.state, s.continuity_until]),
    [
      ['GTAW', 'valid', '2027-03-01'],
      ['SMAW', 'lapsed', '2026-07-10'],
    ],
  );
  t.regex(
    on[1]!.reasons[0]!,
    /^lapsed for SMAW on 2026-07-11: no SMAW use recorded for more than 6 months after 2026-01-10/,
  );
});

test('QW-322.1(a): a documented use in the continuity log extends its process; one after the lapse revives nothing', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  await w.sqlAs(
    q.fx,
    'inspector',
    `insert into weld_public.welder_continuity (welder_id, used_on, process, reference)
     values ($1, '2026-05-01', 'SMAW', 'shop log 17'), ($1, '2026-05-01', 'GTAW', 'shop log 17')`,
    [q.welderId],
  );
  t.is((await status(w, q.fx, q.welderId, '2026-10-01'))[0]!.continuity_until, '2026-11-01');
  t.true(await qualified(w, q.fx, await q.weld({ welded_on: '2026-10-15' })));

  await w.dba('delete from weld_public.welder_continuity where welder_id = $1', [q.welderId]);
  await w.dba('delete from weld_public.welds where welder_id = $1', [q.welderId]);
  await w.sqlAs(
    q.fx,
    'inspector',
    `insert into weld_public.welder_continuity (welder_id, used_on, process, reference)
     values ($1, '2026-08-01', 'SMAW', 'too late')`,
    [q.welderId],
  );
  const [after] = await status(w, q.fx, q.welderId, '2026-08-02');
  t.is(after!.state, 'lapsed', 'lapsed on 2026-07-11: a use on 2026-08-01 does not revive it');

  const log = await w.sqlAs<{
    used_on: string;
    process: string;
    source: string;
    reference: string;
  }>(
    q.fx,
    'viewer',
    `select c.used_on::text, c.process, c.source, c.reference
       from weld_public.welders w, weld_public.welders_continuity(w) c where w.id = $1`,
    [q.welderId],
  );
  t.deepEqual(log, [
    { used_on: '2026-08-01', process: 'SMAW', source: 'document', reference: 'too late' },
  ]);
  const recorded = await w.sqlAs<{ recorded_by: string }>(
    q.fx,
    'viewer',
    'select recorded_by from weld_public.welder_continuity',
  );
  t.is(recorded[0]!.recorded_by, q.fx.users.inspector, 'who recorded it is the signed-in user');
  const error = await refusal(
    t,
    w.sqlAs(q.fx, 'inspector', 'delete from weld_public.welder_continuity'),
  );
  t.is(error.code, '42501', 'the log is append-only');
});

test('QW-322.1(a): the continuity log lists each weld once per process of its WPS, newest first, beside documented uses', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const both = await w.wps(fx, 'WPS-GS', 'GTAW+SMAW');
  const welderId = await w.welder(fx, 'W1');
  await w.weld(fx, isoId, 'A-1', { welder_id: welderId, wps_id: both, welded_on: '2026-03-01' });
  await w.weld(fx, isoId, 'A-2', { welder_id: welderId, wps_id: both, welded_on: null });
  await w.insert('welder_continuity', {
    tenant_id: fx.tenantId,
    welder_id: welderId,
    used_on: '2026-04-01',
    process: 'FCAW',
    reference: 'log 1',
  });
  const log = await w.sqlAs<{ entry: string }>(
    fx,
    'viewer',
    `select c.used_on || ' ' || c.process || ' ' || c.source || ' ' || c.reference as entry
       from weld_public.welders w, weld_public.welders_continuity(w) c where w.id = $1`,
    [welderId],
  );
  t.deepEqual(
    log.map((r) => r.entry),
    [
      '2026-04-01 FCAW document log 1',
      '2026-03-01 SMAW weld weld A-1 on ISO ISO-1, WPS WPS-GS rev 0',
      '2026-03-01 GTAW weld weld A-1 on ISO ISO-1, WPS WPS-GS rev 0',
    ],
  );
});

test('QW-322.1(b): a revoked qualification covers nothing welded from the day it was revoked; its status says why', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  await w.sqlAs(
    q.fx,
    'engineer',
    `update weld_public.welder_qualifications
        set revoked_on = '2026-03-01', revocation_reason = 'two rejected welds in a week' where id = $1`,
    [q.qualificationId],
  );
  t.true(await qualified(w, q.fx, await q.weld({ welded_on: '2026-02-28' })));
  const after = await q.weld({ welded_on: '2026-03-01' });
  const [check] = (await w.checks(q.fx, after)).filter((c) => c.code === 'WELDER_NOT_QUALIFIED');
  t.regex(check!.detail, /revoked on 2026-03-01 \(QW-322\.1\(b\)\)/);
  const [revoked] = await status(w, q.fx, q.welderId, '2026-03-02');
  t.is(revoked!.state, 'revoked');
  t.is(revoked!.reasons[0], 'revoked on 2026-03-01: two rejected welds in a week (QW-322.1(b))');
  const error = await refusal(
    t,
    w.sqlAs(
      q.fx,
      'engineer',
      "update weld_public.welder_qualifications set revoked_on = '2026-03-01', revocation_reason = null where id = $1",
      [q.qualificationId],
    ),
  );
  t.is(error.code, '23514', 'a revocation has a date and a reason');
});

test('QW-322.2: a renewal is a new dated qualification of the same welder; it covers welds from its date, and may not renew another welder', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  const lapsedWeld = await q.weld({ welded_on: '2026-09-01' });
  t.false(await qualified(w, q.fx, lapsedWeld), 'lapsed on 2026-07-11');
  const renewal = await w.sqlAs<{ id: string }>(
    q.fx,
    'engineer',
    `insert into weld_public.welder_qualifications
       (welder_id, process, qualified_on, coupon_diameter_in, coupon_thickness_in, renews_qualification_id)
     values ($1, 'SMAW', '2026-08-15', 6.625, 0.5, $2) returning id`,
    [q.welderId, q.qualificationId],
  );
  t.true(await qualified(w, q.fx, lapsedWeld));
  const other = await w.welder(q.fx, 'W2');
  const error = await refusal(
    t,
    w.sqlAs(
      q.fx,
      'engineer',
      `insert into weld_public.welder_qualifications (welder_id, process, qualified_on, renews_qualification_id)
     values ($1, 'SMAW', '2026-08-15', $2)`,
      [other, renewal[0]!.id],
    ),
  );
  t.is(error.code, 'WD007');
});

test("WELDER_NOT_QUALIFIED names at most three qualifications per process: 400 lapsed ones -> '(and 397 more)', under 1,000 characters", async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  await w.dba(
    `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on, coupon_diameter_in, coupon_thickness_in)
     select $1, $2, 'SMAW', date '2024-01-01' + n, 6.625, 0.5 from generate_series(1, 399) n`,
    [q.fx.tenantId, q.welderId],
  );
  const weldId = await q.weld({ welded_on: '2026-12-01' });
  const [check] = (await w.checks(q.fx, weldId)).filter((c) => c.code === 'WELDER_NOT_QUALIFIED');
  t.regex(check!.detail, /\(and 397 more\)$/);
  t.true(check!.detail.length < 1000, `${check!.detail.length} characters`);
});

test('continuity months: a DBA setting 3 makes an SMAW weld of 2026-03-01 keep the qualification until 2026-06-01, not 2026-09-01', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  await q.weld({ welded_on: '2026-03-01' });
  t.is((await status(w, q.fx, q.welderId, '2026-03-02'))[0]!.continuity_until, '2026-09-01');
  await w.setting(q.fx, 'continuity_months', 3);
  t.is((await status(w, q.fx, q.welderId, '2026-03-02'))[0]!.continuity_until, '2026-06-01');
});

test('ranges: stated ranges win over the coupon; the PQR stands in for a missing coupon; neither recorded is unknown, never a pass', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, { diameter_min_in: 0.5 });
  t.true(await qualified(w, q.fx, await q.weld({ size: 0.5, wall_thickness: 0.109 })));
  await w.dba(
    'update weld_public.welder_qualifications set diameter_min_in = null, coupon_diameter_in = null, coupon_thickness_in = null, pqr_id = $2 where id = $1',
    [
      q.qualificationId,
      await w.pqr(q.fx, 'PQR-X', 'SMAW', { diameter_tested_in: 3.5, thickness_tested_in: 0.25 }),
    ],
  );
  t.true(await qualified(w, q.fx, await q.weld({ size: 2.5, wall_thickness: 0.5 })));
  t.false(await qualified(w, q.fx, await q.weld({ size: 2.5, wall_thickness: 0.51 })));
  await w.dba('update weld_public.welder_qualifications set pqr_id = null where id = $1', [
    q.qualificationId,
  ]);
  const unknown = await q.weld();
  const [check] = (await w.checks(q.fx, unknown)).filter((c) => c.code === 'WELDER_NOT_QUALIFIED');
  t.regex(check!.detail, /diameter range unknown/);
});

test('QW-322.1(a): a VOIDED weld is no use: voiding the weld of 2026-06-01 takes back the continuity it gave', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  const june = await q.weld({ welded_on: '2026-06-01' });
  const october = await q.weld({ welded_on: '2026-10-01' });
  t.is((await status(w, q.fx, q.welderId, '2026-09-30'))[0]!.state, 'valid');
  t.true(await qualified(w, q.fx, october));

  await w.moveWeld(q.fx, 'engineer', june, 'VOIDED', 'cut out: line rerouted');
  const [after] = await w.sqlAs<{ state: string; last_used_on: string }>(
    q.fx,
    'viewer',
    `select q.state, q.last_used_on::text
       from weld_public.welders w, weld_public.welders_qualification_status(w, '2026-09-30') q
      where w.id = $1`,
    [q.welderId],
  );
  t.deepEqual(after, { state: 'lapsed', last_used_on: null }, 'no use since it was qualified');
  t.false(await qualified(w, q.fx, october), 'lapsed on 2026-07-11 again');
});

test('QW-322.1(a): a documented use is recorded after it happened: one dated tomorrow in every time zone is refused', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  const insert = (day: string) =>
    w.sqlAs(
      q.fx,
      'inspector',
      `insert into weld_public.welder_continuity (welder_id, used_on, process, reference)
       values ($1, $2::date, 'SMAW', 'shop log')`,
      [q.welderId, day],
    );
  const [{ today, beyond }] = (
    await w.dba(`select (now() at time zone 'Etc/GMT-14')::date::text as today,
                        ((now() at time zone 'Etc/GMT-14')::date + 1)::text as beyond`)
  ).rows as [{ today: string; beyond: string }];
  await insert(today);
  const error = await refusal(t, insert(beyond));
  t.is(error.code, '23514');
  t.is(
    (error as { constraint?: string }).constraint,
    'welder_continuity_used_on_recorded',
    'named, so the API says "must not be later than today"',
  );
});

test('QW-322.2: a renewal comes after what it renews: the same day is refused, and so is moving the renewed one to or past its renewal', async (t) => {
  const w = await rulesWorld(t);
  const q = await welderWith(w, {});
  const renew = (qualifiedOn: string, renews: string) =>
    w.sqlAs<{ id: string }>(
      q.fx,
      'engineer',
      `insert into weld_public.welder_qualifications (welder_id, process, qualified_on, renews_qualification_id)
       values ($1, 'SMAW', $2::date, $3) returning id`,
      [q.welderId, qualifiedOn, renews],
    );
  let error = await refusal(t, renew('2026-01-10', q.qualificationId));
  t.is(error.code, 'WD007', 'qualified the same day as the one it renews');
  const [renewal] = await renew('2026-08-15', q.qualificationId);
  error = await refusal(
    t,
    w.sqlAs(
      q.fx,
      'engineer',
      "update weld_public.welder_qualifications set qualified_on = '2026-08-15' where id = $1",
      [q.qualificationId],
    ),
  );
  t.is(error.code, 'WD007');
  t.is(JSON.parse(error.detail!).pointer, '/qualifiedOn');
  error = await refusal(
    t,
    w.sqlAs(
      q.fx,
      'engineer',
      'update weld_public.welder_qualifications set renews_qualification_id = $2 where id = $1',
      [q.qualificationId, renewal!.id],
    ),
  );
  t.is(error.code, 'WD007', 'no chain of renewals comes back to where it began');
});
