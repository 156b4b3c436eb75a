// The code rules over real HTTP (issues F7, F13): what an ISO's lots require, a welder's
// qualifications on a date (QW-322 continuity), a weld's checks, a test package's readiness and
// the refusal to release one that is not ready, and the tenant switch that refuses welds failing
// the checks. The worlds are built as a client would (helpers/rules-http.ts, helpers/line-world.ts).
import test from 'ava';
import {
  idsOf,
  named,
  ok,
  problemOf,
  sorted,
  today,
  world,
  type Body,
} from '../helpers/rules-http.ts';
import { lineWorld } from '../helpers/line-world.ts';

//------------------------------------------------------------------------------------------------
// What an ISO requires

test('ISO examination: ISO-1 of L-100 (40 welds, 3 welders, 5% RT and VT) -> required 3 each (every welder), shortfall 3; after an RT draw 3 selected, 0 short; after an RT record 1 examined; category_d ISO -> VT 100% only (341.4.2), RT where its piping class asks it', async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const before = ok(await w.a.viewer.get(`/isos/${line.iso1}/examination`));
  t.deepEqual(
    {
      ...before,
      methods: before.methods.map((m: Body) => ({
        ...m,
        weldersNotCovered: sorted(m.weldersNotCovered as string[]),
      })),
    },
    {
      isoId: line.iso1,
      lineNumber: 'L-100',
      lotDefinition: 'line',
      methods: ['RT', 'VT'].map((method) => ({
        method,
        requiredPercent: 5,
        welds: 40,
        required: 3,
        selected: 0,
        examined: 0,
        shortfall: 3,
        progressiveOpen: 0,
        weldersNotCovered: sorted(line.welders),
      })),
    },
  );
  const iso200 = ok(await w.a.viewer.get(`/api/isos/${line.iso200}/examination`));
  t.like(iso200.methods[0], {
    method: 'RT',
    requiredPercent: 20,
    welds: 10,
    required: 2,
    shortfall: 2,
  });
  t.deepEqual(
    iso200.methods.map((m: Body) => [m.method, m.requiredPercent, m.welds]),
    [
      ['RT', 20, 10],
      ['VT', 5, 12],
    ],
    'RT of its 10 butt welds; visual of every weld, the 2 socket welds too',
  );

  const drawn = ok(
    await w.a.inspector.post('/examination-selections/draw', { method: 'RT', isoId: line.iso1 }),
  ).selections as Array<{ weldId: string }>;
  t.is(drawn.length, 3, 'one per welder of the lots ISO-1 touches');
  const after = ok(await w.a.viewer.get(`/isos/${line.iso1}/examination`));
  t.like(after.methods[0], {
    required: 3,
    selected: 3,
    examined: 0,
    shortfall: 0,
    progressiveOpen: 0,
    weldersNotCovered: [],
  });
  // ISO-2 shares the lots (the line's): covered too.
  t.like(ok(await w.a.viewer.get(`/isos/${line.iso2}/examination`)).methods[0], {
    selected: 3,
    shortfall: 0,
  });
  await w.make.rt('RT-1', { [drawn[0]!.weldId]: 'accepted' });
  t.like(ok(await w.a.viewer.get(`/isos/${line.iso1}/examination`)).methods[0], {
    selected: 3,
    examined: 1,
  });

  // Category D: the tenant's VT rule (100% of every weld type) and no RT (visual only), unless
  // the ISO's rtPercent asks it (its piping class).
  const isoD = (await w.make.iso('ISO-D', 'L-300', { fluidService: 'category_d' })).id;
  for (const [i, type] of ['BW', 'BW', 'BW', 'FW'].entries()) {
    await w.make.weld({
      isoId: isoD,
      weldNumber: `D-${i}`,
      type,
      welderId: line.welders[0],
      wpsId: line.wpsId,
    });
  }
  const d = ok(await w.a.viewer.get(`/isos/${isoD}/examination`));
  t.deepEqual(
    d.methods.map((m: Body) => [m.method, m.requiredPercent, m.welds, m.required]),
    [['VT', 100, 4, 4]],
  );
  ok(await w.a.engineer.patch(`/isos/${isoD}`, { rtPercent: 5 }));
  const asked = ok(await w.a.viewer.get(`/isos/${isoD}/examination`));
  t.deepEqual(
    asked.methods.map((m: Body) => [m.method, m.requiredPercent, m.welds, m.required]),
    [
      ['RT', 5, 3, 1],
      ['VT', 100, 4, 4],
    ],
  );
  problemOf(t, await w.a.viewer.get('/isos/00000000-0000-4000-8000-000000000000/examination'), 404);
  const param = await w.a.viewer.get(`/isos/${isoD}/examination?method=RT`);
  problemOf(t, param, 422);
  t.deepEqual(named(param), ['method']);
});

//------------------------------------------------------------------------------------------------
// Welders, welds, test packages

test('qualification status: qualified 2026-01-10, unused -> valid on 2026-07-10, lapsed on 2026-07-11, not_yet_valid on 2026-01-09; a GTAW weld of 2026-06-01 -> valid to 2026-12-01 (an SMAW one does not count); expires 2026-09-30 -> expired on 2026-10-01', async (t) => {
  const w = await world(t);
  const welder = (await w.make.welder('W1')).id;
  const q1 = (await w.make.qualification(welder)).id;
  const status = async (on?: string) =>
    ok(await w.a.viewer.get(`/welders/${welder}/qualification-status${on ? `?on=${on}` : ''}`));
  const stateOn = async (on: string) =>
    (await status(on)).qualifications.map((q: Body) => q.state as string);

  const july10 = await status('2026-07-10');
  t.is(july10.welderId, welder);
  t.is(july10.on, '2026-07-10');
  t.is(july10.qualifications.length, 1);
  t.like(july10.qualifications[0], {
    qualificationId: q1,
    process: 'GTAW',
    wpsId: null,
    state: 'valid',
    qualifiedOn: '2026-01-10',
    expiresOn: null,
    continuityUntil: '2026-07-10',
  });
  t.true(july10.qualifications[0].reasons.length >= 1);
  t.deepEqual(await stateOn('2026-07-11'), ['lapsed']);
  t.deepEqual(await stateOn('2026-01-09'), ['not_yet_valid']);
  t.is((await status()).on, today(), "today's date in UTC by default");

  // A GTAW weld on 2026-06-01 carries continuity to 2026-12-01; an SMAW weld does not.
  const iso = (await w.make.iso('ISO-1', 'L-1')).id;
  const gtaw = (await w.make.wps('WPS-GTAW')).id;
  const smaw = (await w.make.wps('WPS-SMAW', { process: 'SMAW' })).id;
  await w.make.weld({
    isoId: iso,
    weldNumber: 'G-1',
    welderId: welder,
    wpsId: gtaw,
    weldedOn: '2026-06-01',
  });
  await w.make.weld({
    isoId: iso,
    weldNumber: 'S-1',
    welderId: welder,
    wpsId: smaw,
    weldedOn: '2026-11-20',
  });
  const july11 = await status('2026-07-11');
  t.like(july11.qualifications[0], {
    state: 'valid',
    lastUsedOn: '2026-06-01',
    continuityUntil: '2026-12-01',
  });
  t.deepEqual(await stateOn('2026-12-01'), ['valid']);
  t.deepEqual(await stateOn('2026-12-02'), ['lapsed'], 'the SMAW weld does not keep GTAW alive');

  // A second qualification that expires: expired comes before lapsed; order by qualifiedOn.
  const q2 = (
    await w.make.qualification(welder, { qualifiedOn: '2026-02-01', expiresOn: '2026-09-30' })
  ).id;
  const october = await status('2026-10-01');
  t.deepEqual(
    october.qualifications.map((q: Body) => [q.qualificationId, q.state]),
    [
      [q1, 'valid'],
      [q2, 'expired'],
    ],
  );

  for (const on of ['2026-02-30', '2026-7-1', 'yesterday', '0000-01-01']) {
    const res = await w.a.viewer.get(`/welders/${welder}/qualification-status?on=${on}`);
    problemOf(t, res, 422, '/problems/validation-failed');
    t.deepEqual(named(res), ['on'], on);
  }
  const unknown = await w.a.viewer.get(`/welders/${welder}/qualification-status?date=2026-01-01`);
  t.deepEqual(named(unknown), ['date']);
  problemOf(
    t,
    await w.a.viewer.get('/welders/00000000-0000-4000-8000-000000000000/qualification-status'),
    404,
  );
});

test('weld checks: a bare weld -> 4 DATA_MISSING (welder, WPS, date, wall thickness); qualified on an approved WPS -> ok; draft WPS -> WPS_NOT_APPROVED; NPS 1 on a WPS from 2.875 in OD -> WPS_RANGE; unqualified welder -> WELDER_NOT_QUALIFIED; a 1.9 in x 0.25 in coupon covers NPS 2 x 0.218 in, not 0.6 in', async (t) => {
  const w = await world(t);
  const iso = (await w.make.iso('ISO-1', 'L-1')).id;
  const qualified = (await w.make.welder('Q1')).id;
  await w.make.qualification(qualified);
  const unqualified = (await w.make.welder('U1')).id;
  const approved = (await w.make.wps('WPS-A')).id;
  const draft = (await w.make.wps('WPS-D', { state: 'draft' })).id;
  const checks = async (weldId: string) => ok(await w.a.viewer.get(`/welds/${weldId}/checks`));
  const codes = async (weldId: string) =>
    (await checks(weldId)).checks.map((c: { code: string }) => c.code) as string[];

  const bare = (
    await w.make.weld({ isoId: iso, weldNumber: 'BARE', wallThickness: null, weldedOn: null })
  ).id;
  const bareChecks = await checks(bare);
  t.is(bareChecks.weldId, bare);
  t.false(bareChecks.ok);
  t.deepEqual(
    bareChecks.checks.map((c: { code: string }) => c.code),
    ['DATA_MISSING', 'DATA_MISSING', 'DATA_MISSING', 'DATA_MISSING'],
  );
  const details = bareChecks.checks.map((c: { detail: string }) => c.detail).join(' | ');
  for (const what of [/welder/i, /WPS/, /date|welded/i, /wall thickness/i]) t.regex(details, what);

  const fine = (
    await w.make.weld({ isoId: iso, weldNumber: 'FINE', welderId: qualified, wpsId: approved })
  ).id;
  t.deepEqual(await checks(fine), { weldId: fine, ok: true, checks: [] });

  const onDraft = (
    await w.make.weld({ isoId: iso, weldNumber: 'DRAFT', welderId: qualified, wpsId: draft })
  ).id;
  t.deepEqual(await codes(onDraft), ['WPS_NOT_APPROVED']);

  const small = (
    await w.make.weld({
      isoId: iso,
      weldNumber: 'NPS1',
      size: 1,
      welderId: qualified,
      wpsId: approved,
    })
  ).id;
  const smallCodes = await codes(small);
  t.true(smallCodes.includes('WPS_RANGE'), smallCodes.join());
  t.false(smallCodes.includes('DATA_MISSING'));

  const byUnqualified = (
    await w.make.weld({ isoId: iso, weldNumber: 'UNQ', welderId: unqualified, wpsId: approved })
  ).id;
  t.deepEqual(await codes(byUnqualified), ['WELDER_NOT_QUALIFIED']);

  // A qualification stating no ranges: its test coupon gives them (QW-452.3: 1.9 in OD covers
  // 1 in up; QW-452.1: 0.25 in covers up to 0.5 in).
  const couponWelder = (await w.make.welder('C1')).id;
  const coupon = await w.make.qualification(couponWelder, {
    diameterMinIn: null,
    thicknessMaxIn: null,
    couponDiameterIn: 1.9,
    couponThicknessIn: 0.25,
  });
  t.like(coupon, { couponDiameterIn: 1.9, couponThicknessIn: 0.25, diameterMinIn: null });
  const smallWps = (await w.make.wps('WPS-S', { diameterMinIn: 1 })).id;
  const thin = (
    await w.make.weld({
      isoId: iso,
      weldNumber: 'C-THIN',
      size: 2,
      wallThickness: 0.218,
      welderId: couponWelder,
      wpsId: smallWps,
    })
  ).id;
  t.deepEqual(await codes(thin), []);
  const thick = (
    await w.make.weld({
      isoId: iso,
      weldNumber: 'C-THICK',
      size: 2,
      wallThickness: 0.6,
      welderId: couponWelder,
      wpsId: smallWps,
    })
  ).id;
  t.deepEqual(await codes(thick), ['WELDER_NOT_QUALIFIED']);
  // The coupon is a qualification's field like the others: changed, cleared, bounded.
  const patched = ok(
    await w.a.engineer.patch(`/welder-qualifications/${coupon.id}`, { couponThicknessIn: 0.5 }),
  );
  t.is(patched.couponThicknessIn, 0.5);
  t.deepEqual(await codes(thick), [], '0.5 in covers up to 1 in');
  const negative = await w.a.engineer.patch(`/welder-qualifications/${coupon.id}`, {
    couponDiameterIn: -1,
  });
  t.deepEqual(named(negative), ['/couponDiameterIn']);

  problemOf(t, await w.a.viewer.get('/welds/00000000-0000-4000-8000-000000000000/checks'), 404);
});

test('readiness: 2 pending welds -> WELD_NOT_ACCEPTED x2 + EXAMINATION_SHORTFALL for RT and VT; release 409 package-not-ready with those 4; after an RT draw EXAMINATION_OPEN; after RT accepts both and a visual inspection, ready and released; empty -> NO_WELDS; 30 bare welds -> the 409 carries 100 of 150+ reasons', async (t) => {
  const w = await world(t);
  const iso = (await w.make.iso('ISO-1', 'L-500')).id;
  const welder = (await w.make.welder('W1')).id;
  await w.make.qualification(welder);
  const wps = (await w.make.wps('WPS-1')).id;
  const welds = [
    (await w.make.weld({ isoId: iso, weldNumber: 'P-1', welderId: welder, wpsId: wps })).id,
    (await w.make.weld({ isoId: iso, weldNumber: 'P-2', welderId: welder, wpsId: wps })).id,
  ];
  const pkg = (await w.make.testPackage('TP-1', { isoIds: [iso] })).id;
  const readiness = async () => ok(await w.a.viewer.get(`/test-packages/${pkg}/readiness`));
  const summary = (reasons: Array<Body>) =>
    sorted(reasons.map((r) => `${String(r.code)} ${(r.weldId ?? r.isoId ?? '-') as string}`));

  const before = await readiness();
  t.like(before, { testPackageId: pkg, state: 'open', ready: false });
  t.deepEqual(
    summary(before.reasons),
    sorted([
      `WELD_NOT_ACCEPTED ${welds[0]}`,
      `WELD_NOT_ACCEPTED ${welds[1]}`,
      `EXAMINATION_SHORTFALL ${iso}`, // RT 5%
      `EXAMINATION_SHORTFALL ${iso}`, // VT 5%
    ]),
  );
  for (const reason of before.reasons) t.is(typeof reason.detail, 'string');

  const refused = await w.a.engineer.patch(`/test-packages/${pkg}`, { state: 'released' });
  problemOf(t, refused, 409, '/problems/package-not-ready');
  t.is(refused.json.title, 'Test package not ready');
  t.is(refused.json.reasonCount, 4);
  t.deepEqual(summary(refused.json.reasons), summary(before.reasons));
  t.is(ok(await w.a.viewer.get(`/test-packages/${pkg}`)).state, 'open', 'nothing changed');

  const drawn = ok(
    await w.a.inspector.post('/examination-selections/draw', { method: 'RT', isoId: iso }),
  ).selections;
  t.is(drawn.length, 1);
  t.deepEqual(
    summary((await readiness()).reasons),
    sorted([
      `WELD_NOT_ACCEPTED ${welds[0]}`,
      `WELD_NOT_ACCEPTED ${welds[1]}`,
      `EXAMINATION_OPEN ${drawn[0].weldId}`,
      `EXAMINATION_SHORTFALL ${iso}`, // VT
    ]),
  );

  await w.make.rt('RT-1', { [welds[0]!]: 'accepted', [welds[1]!]: 'accepted' });
  t.deepEqual(summary((await readiness()).reasons), [`EXAMINATION_SHORTFALL ${iso}`]);
  // A visual inspection of the welds counts toward the 5% VT lot (B31.3 341.4.1(a)).
  ok(
    await w.a.inspector.post('/inspections', {
      kind: 'visual',
      inspectedOn: '2026-03-02',
      result: 'accepted',
      weldIds: welds,
    }),
    201,
  );
  t.deepEqual(await readiness(), { testPackageId: pkg, state: 'open', ready: true, reasons: [] });
  const released = ok(await w.a.engineer.patch(`/api/test-packages/${pkg}`, { state: 'released' }));
  t.is(released.state, 'released');
  t.like(await readiness(), { state: 'released', ready: true });

  const empty = (await w.make.testPackage('TP-EMPTY')).id;
  t.deepEqual(
    ok(await w.a.viewer.get(`/test-packages/${empty}/readiness`)).reasons.map((r: Body) => r.code),
    ['NO_WELDS'],
  );

  // Many reasons: 30 bare welds, made by a DBA (5 reasons each at least).
  const bigIso = (await w.make.iso('ISO-BIG', 'L-600')).id;
  await w.owner.query(
    `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
     select $1, $2, 'B-' || n, 'BW', 6 from generate_series(1, 30) n`,
    [w.tenantA, bigIso],
  );
  const big = (await w.make.testPackage('TP-BIG', { isoIds: [bigIso] })).id;
  const all = ok(await w.a.viewer.get(`/test-packages/${big}/readiness`)).reasons as Body[];
  t.true(all.length >= 150, `${all.length} reasons`);
  const capped = await w.a.engineer.patch(`/test-packages/${big}`, { state: 'released' });
  problemOf(t, capped, 409, '/problems/package-not-ready');
  t.is(capped.json.reasons.length, 100);
  t.is(capped.json.reasonCount, all.length);
  // The same reasons (keys in any order), the first 100 of them in the same order.
  const canonical = (r: Body) => JSON.stringify(Object.entries(r).sort());
  t.deepEqual(capped.json.reasons.map(canonical), all.slice(0, 100).map(canonical));

  problemOf(
    t,
    await w.a.viewer.get('/test-packages/00000000-0000-4000-8000-000000000000/readiness'),
    404,
  );
});

test("weld_checks 'refuse': POST /welds by an unqualified welder -> 422 weld-checks-failed naming WELDER_NOT_QUALIFIED, nothing written; a weld missing its welder is still created; PATCH onto a draft WPS -> 422 WPS_NOT_APPROVED; 'show' writes both", async (t) => {
  const w = await world(t);
  const iso = (await w.make.iso('ISO-1', 'L-1')).id;
  const qualified = (await w.make.welder('Q1')).id;
  await w.make.qualification(qualified);
  const unqualified = (await w.make.welder('U1')).id;
  const approved = (await w.make.wps('WPS-A')).id;
  const draft = (await w.make.wps('WPS-D', { state: 'draft' })).id;

  // 'show' (the default): written, and the checks say what is wrong.
  const shown = await w.make.weld({
    isoId: iso,
    weldNumber: 'SHOW',
    welderId: unqualified,
    wpsId: approved,
  });
  t.is(
    ok(await w.a.viewer.get(`/welds/${shown.id}/checks`)).checks[0].code,
    'WELDER_NOT_QUALIFIED',
  );

  await w.owner.query(
    `update weld_public.tenant_settings set weld_checks = 'refuse' where tenant_id = $1`,
    [w.tenantA],
  );
  const refused = await w.a.engineer.post('/welds', {
    isoId: iso,
    weldNumber: 'REFUSED',
    type: 'BW',
    size: 6,
    wallThickness: 0.28,
    welderId: unqualified,
    wpsId: approved,
    weldedOn: '2026-03-01',
  });
  problemOf(t, refused, 422, '/problems/weld-checks-failed');
  t.is(refused.json.title, 'Weld fails the code checks');
  t.deepEqual(
    refused.json.checks.map((c: { code: string }) => c.code),
    ['WELDER_NOT_QUALIFIED'],
  );
  t.is(typeof refused.json.checks[0].detail, 'string');
  t.deepEqual(idsOf(await w.a.viewer.get(`/welds?weldNumber=REFUSED`)), [], 'nothing written');

  const planned = await w.a.engineer.post('/welds', {
    isoId: iso,
    weldNumber: 'PLANNED',
    type: 'BW',
    size: 6,
  });
  t.is(planned.status, 201, planned.text);

  const fine = await w.make.weld({
    isoId: iso,
    weldNumber: 'FINE',
    welderId: qualified,
    wpsId: approved,
  });
  const onDraft = await w.a.engineer.patch(`/api/welds/${fine.id}`, { wpsId: draft });
  problemOf(t, onDraft, 422, '/problems/weld-checks-failed');
  t.deepEqual(
    onDraft.json.checks.map((c: { code: string }) => c.code),
    ['WPS_NOT_APPROVED'],
  );
  t.is(ok(await w.a.viewer.get(`/welds/${fine.id}`)).wpsId, approved, 'unchanged');
  // A change of a field the checks do not read is not judged.
  t.is((await w.a.engineer.patch(`/welds/${shown.id}`, { material: 'A106-B' })).status, 200);

  // GraphQL is refused alike, with the same problem type and checks.
  const gql = await w.gql(
    'engineer',
    `mutation ($weld: WeldInput!) { createWeld(input: { weld: $weld }) { clientMutationId } }`,
    {
      weld: {
        isoId: iso,
        weldNumber: 'GQL',
        type: 'BW',
        size: '6',
        wallThickness: '0.28',
        welderId: unqualified,
        wpsId: approved,
        weldedOn: '2026-03-01',
      },
    },
  );
  const error = gql.json.errors?.[0];
  t.is(error?.extensions?.code, '/problems/weld-checks-failed', gql.text);
  t.deepEqual(
    (error?.extensions?.checks ?? []).map((c: { code: string }) => c.code),
    ['WELDER_NOT_QUALIFIED'],
  );

  await w.owner.query(
    `update weld_public.tenant_settings set weld_checks = 'show' where tenant_id = $1`,
    [w.tenantA],
  );
  t.is((await w.a.engineer.patch(`/welds/${fine.id}`, { wpsId: draft })).status, 200);
});
