// The verdicts a QC department signs, over REST and GraphQL as integrators and the web app see
// them: a repair's welding recorded with its re-weld and corrected on /weld-repairs, an acceptance
// an NDT result could not give (the weld still owed its re-examination) said in the record's
// answer, a status change naming its basis, a WPS's additional joints, preheat and the code
// edition in a weld's checks, the register's acceptance column, the repair rate's new columns,
// and the tenant boundary of repairs. (The rules themselves: test/db/rules-verdicts.test.ts.)
import test from 'ava';
import { ok, problemOf, world, type World } from '../helpers/rules-http.ts';

/** An ISO with one weld by a qualified welder to an approved WPS; RT rejected it on 2026-04-01. */
async function rejectedWeld(w: World, prefix: string) {
  const iso = await w.make.iso(`${prefix}-ISO`, `${prefix}-L`);
  const welder = await w.make.welder(`${prefix}-W`);
  await w.make.qualification(welder.id);
  const wps = await w.make.wps(`${prefix}-WPS`);
  const weld = await w.make.weld({
    isoId: iso.id,
    weldNumber: `${prefix}-1`,
    welderId: welder.id,
    wpsId: wps.id,
  });
  await w.make.rt(`${prefix}-RT1`, { [weld.id]: 'rejected' });
  return { iso, welder, wps, weld };
}

test('a repair over REST: re-welded with its welding, held PENDING while its RT is owed (the MT record says why, by hand 409), accepted by the RT with that record as its basis', async (t) => {
  const w = await world(t);
  const { weld, welder } = await rejectedWeld(w, 'R');
  ok(await w.a.engineer.patch(`/welds/${weld.id}/status`, { status: 'REPAIR' }));
  // The repair's welding given with the re-weld; a bad day names its pointer.
  const early = await w.a.inspector.patch(`/welds/${weld.id}/status`, {
    status: 'PENDING',
    repair: { weldedOn: '2026-02-01', welderId: welder.id },
  });
  problemOf(t, early, 422, '/problems/validation-failed');
  t.deepEqual(early.json.errors, [
    {
      pointer: '/repair/weldedOn',
      detail: 'must be on or after 2026-03-01, when weld R-1 was made',
    },
  ]);
  const reweld = await w.a.inspector.patch(`/welds/${weld.id}/status`, {
    status: 'PENDING',
    repair: { weldedOn: '2026-04-03', welderId: welder.id, preheatF: 60 },
  });
  t.is(ok(reweld).status, 'PENDING');
  const repairs = ok(await w.a.viewer.get(`/weld-repairs?weldId=${weld.id}`));
  t.is(repairs.items.length, 1);
  t.like(repairs.items[0], {
    weldId: weld.id,
    repairCycle: 1,
    weldedOn: '2026-04-03',
    welderId: welder.id,
    wpsId: null,
    preheatF: 60,
  });
  t.truthy(repairs.items[0].reweldedAt);

  const mt = ok(
    await w.a.inspector.post('/ndt-records', {
      method: 'MT',
      reportNumber: 'R-MT1',
      examinedOn: '2026-04-04',
      welds: [{ weldId: weld.id, result: 'accepted' }],
    }),
    201,
  );
  t.deepEqual(mt.welds, [
    {
      weldId: weld.id,
      result: 'accepted',
      defectLengthIn: null,
      acceptanceHeld:
        'repair 1, welded on 2026-04-03, owes a new RT examination (RT or UT) dated on or after that day (B31.3 341.3.3)',
    },
  ]);
  t.is(ok(await w.a.viewer.get(`/welds/${weld.id}`)).status, 'PENDING');
  const byHand = await w.a.inspector.patch(`/welds/${weld.id}/status`, {
    status: 'ACCEPTED',
    ndtRecordId: mt.id,
  });
  problemOf(t, byHand, 409, '/problems/reexamination-open');
  t.is(byHand.json.checks[0].code, 'REEXAMINATION_OPEN');

  const rt = ok(
    await w.a.inspector.post('/ndt-records', {
      method: 'RT',
      reportNumber: 'R-RT2',
      examinedOn: '2026-04-05',
      welds: [{ weldId: weld.id, result: 'accepted' }],
    }),
    201,
  );
  const accepted = ok(await w.a.viewer.get(`/welds/${weld.id}`));
  t.like(accepted, {
    status: 'ACCEPTED',
    acceptanceNdtRecordId: rt.id,
    acceptanceInspectionId: null,
    acceptanceDisposition: null,
  });
  // The repair's record, once taken, is corrected on its own path (inspectors; If-Match).
  const repair = repairs.items[0];
  const corrected = await w.a.inspector.patch(`/weld-repairs/${repair.id}`, { preheatF: 75 });
  t.is(ok(corrected).preheatF, 75);
  const tooLate = await w.a.inspector.patch(`/weld-repairs/${repair.id}`, {
    weldedOn: '2026-04-06',
  });
  problemOf(t, tooLate, 422, '/problems/validation-failed');
  t.is(tooLate.json.errors[0].pointer, '/weldedOn');
  problemOf(t, await w.a.viewer.patch(`/weld-repairs/${repair.id}`, { preheatF: 80 }), 403);
  // Tenant B sees none of it.
  problemOf(t, await w.b.admin.get(`/weld-repairs/${repair.id}`), 404);
  t.deepEqual(ok(await w.b.admin.get(`/weld-repairs?weldId=${weld.id}`)).items, []);
});

test('an acceptance over REST names its basis: none or two is 422, a disposition is an engineer\u2019s, a visual inspection is an inspector\u2019s', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('B-ISO', 'B-L');
  const [a, b] = [
    await w.make.weld({ isoId: iso.id, weldNumber: 'B-1' }),
    await w.make.weld({ isoId: iso.id, weldNumber: 'B-2' }),
  ];
  const none = await w.a.inspector.patch(`/welds/${a.id}/status`, { status: 'ACCEPTED' });
  problemOf(t, none, 422, '/problems/validation-failed');
  t.regex(none.json.detail, /an acceptance names its basis/);
  const visual = ok(
    await w.a.inspector.post('/inspections', {
      kind: 'visual',
      inspectedOn: '2026-03-02',
      result: 'accepted',
      weldIds: [a.id],
    }),
    201,
  );
  const two = await w.a.inspector.patch(`/welds/${a.id}/status`, {
    status: 'ACCEPTED',
    inspectionId: visual.id,
    disposition: 'and also this',
  });
  problemOf(t, two, 422);
  const onOther = await w.a.inspector.patch(`/welds/${b.id}/status`, {
    status: 'ACCEPTED',
    inspectionId: visual.id,
  });
  problemOf(t, onOther, 422);
  t.is(onOther.json.errors[0].pointer, '/inspectionId');
  problemOf(
    t,
    await w.a.inspector.patch(`/welds/${b.id}/status`, {
      status: 'ACCEPTED',
      disposition: 'NCR-3 use as is',
    }),
    403,
  );
  t.like(
    ok(
      await w.a.inspector.patch(`/welds/${a.id}/status`, {
        status: 'ACCEPTED',
        inspectionId: visual.id,
      }),
    ),
    { status: 'ACCEPTED', acceptanceInspectionId: visual.id },
  );
  t.like(
    ok(
      await w.a.engineer.patch(`/welds/${b.id}/status`, {
        status: 'ACCEPTED',
        disposition: 'NCR-3 use as is',
      }),
    ),
    { status: 'ACCEPTED', acceptanceDisposition: 'NCR-3 use as is' },
  );
  // The register says how each was accepted.
  const csv = await w.a.viewer.get(`/welds?isoId=${iso.id}&format=csv`);
  t.is(csv.status, 200);
  const lines = csv.text
    .replace(/^\ufeff/, '')
    .trim()
    .split(/\r?\n/);
  const header = lines[0]!.split(',');
  const column = header.indexOf('acceptance');
  t.true(column > 0, 'an acceptance column');
  t.deepEqual(
    lines.slice(1).map((line) => line.split(',')[column]),
    ['the visual inspection of 2026-03-02', 'disposition: NCR-3 use as is'],
  );
  // A basis with another status is refused.
  const rejecting = await w.a.inspector.patch(`/welds/${a.id}/status`, {
    status: 'REJECTED',
    reason: 'crack',
    inspectionId: visual.id,
  });
  problemOf(t, rejecting, 422);
});

test('GraphQL: changeWeldStatus names its basis, Weld.acceptance says it in words, Weld.repairs lists the repairs', async (t) => {
  const w = await world(t);
  const { weld, welder } = await rejectedWeld(w, 'G');
  const gql = async (role: 'inspector' | 'engineer' | 'viewer', query: string) => {
    const res = await w.gql(role, query);
    t.is(res.status, 200, res.text);
    return res.json;
  };
  await gql(
    'engineer',
    `mutation { changeWeldStatus(input: { weldId: "${weld.id}", newStatus: REPAIR }) { result { status } } }`,
  );
  const reweld = await gql(
    'inspector',
    `mutation { changeWeldStatus(input: { weldId: "${weld.id}", newStatus: PENDING,
        repair: { weldedOn: "2026-04-03", welderId: "${welder.id}" } }) { result { status repairCycle } } }`,
  );
  t.deepEqual(reweld.data, { changeWeldStatus: { result: { status: 'PENDING', repairCycle: 1 } } });
  const noBasis = await gql(
    'inspector',
    `mutation { changeWeldStatus(input: { weldId: "${weld.id}", newStatus: ACCEPTED }) { result { status } } }`,
  );
  t.is(noBasis.errors[0].extensions.code, '/problems/validation-failed');
  const rt = ok(
    await w.a.inspector.post('/ndt-records', {
      method: 'UT',
      reportNumber: 'G-UT2',
      examinedOn: '2026-04-05',
      welds: [{ weldId: weld.id, result: 'accepted' }],
    }),
    201,
  );
  t.is(rt.welds[0].acceptanceHeld, null);
  const read = await gql(
    'viewer',
    `{ allWelds(first: 1, condition: { rowId: "${weld.id}" }) { nodes { status acceptance
        repairs(first: 5) { nodes { repairCycle weldedOn welderId } } } } }`,
  );
  t.deepEqual(read.data.allWelds.nodes, [
    {
      status: 'ACCEPTED',
      acceptance: 'UT report G-UT2 of 2026-04-05',
      repairs: { nodes: [{ repairCycle: 1, weldedOn: '2026-04-03', welderId: welder.id }] },
    },
  ]);
});

test('a WPS over REST records its additional joints (QW-424.1), its preheat and PWHT condition; a weld\u2019s checks judge preheat by the tenant\u2019s edition', async (t) => {
  const w = await world(t);
  const pqr = ok(
    await w.a.engineer.post('/pqrs', {
      pqrNumber: 'PQR-4',
      process: 'GTAW',
      pNumbers: ['4'],
      thicknessTestedIn: 1,
    }),
    201,
  );
  const body = {
    wpsNumber: 'WPS-4',
    process: 'GTAW',
    state: 'approved',
    pNumbers: ['4'],
    additionalJoints: ['4-3', '4-1'],
    preheatMinF: 325,
    pwhtRequired: true,
    thicknessMinIn: 0.1875,
    thicknessMaxIn: 2,
    pqrIds: [pqr.id],
  };
  const bad = await w.a.engineer.post('/wps', { ...body, additionalJoints: ['4 to 1'] });
  problemOf(t, bad, 422);
  t.is(bad.json.errors[0].pointer, '/additionalJoints/0');
  const unqualified = await w.a.engineer.post('/wps', { ...body, additionalJoints: ['4-8'] });
  problemOf(t, unqualified, 409, '/problems/wps-not-qualified');
  const wps = ok(await w.a.engineer.post('/wps', body), 201);
  t.like(wps, { additionalJoints: ['4-3', '4-1'], preheatMinF: 325, pwhtRequired: true });

  const iso = await w.make.iso('P-ISO', 'P-L');
  const weld = await w.make.weld({
    isoId: iso.id,
    weldNumber: 'P-1',
    wpsId: wps.id,
    baseMetal1PNumber: '4',
    baseMetal2PNumber: '1',
    wallThickness: 0.6,
    preheatF: 310,
  });
  const checks = ok(await w.a.viewer.get(`/welds/${weld.id}/checks`));
  const by = (code: string) =>
    checks.checks
      .filter((c: { code: string }) => c.code === code)
      .map((c: { detail: string }) => c.detail);
  t.deepEqual(by('WPS_PNUMBER'), [], 'P-No. 1 to 4 is one of its joints');
  t.deepEqual(by('PREHEAT_LOW'), ['a preheat of 310 °F is below the 325 °F WPS WPS-4 rev 0 asks']);
  t.deepEqual(by('PWHT_REQUIRED').length, 1);
});

test('the repair rate report over REST: examined by month examined, the defects\u2019 length, the minimum sample', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('M-ISO', 'M-L');
  const welder = await w.make.welder('M-W');
  const welds = [];
  for (let i = 1; i <= 10; i++) {
    welds.push(
      await w.make.weld({
        isoId: iso.id,
        weldNumber: `M-${i}`,
        welderId: welder.id,
        weldedOn: '2026-03-20',
      }),
    );
  }
  ok(
    await w.a.inspector.post('/ndt-records', {
      method: 'RT',
      reportNumber: 'M-RT',
      examinedOn: '2026-04-02',
      welds: welds.map((weld, i) =>
        i === 0
          ? { weldId: weld.id, result: 'rejected', defectLengthIn: 1.5 }
          : { weldId: weld.id, result: 'accepted' },
      ),
    }),
    201,
  );
  const rows = ok(await w.a.viewer.get(`/reports/welder-performance?welderStamp=M-W`)).items;
  t.like(
    rows.map((r: Record<string, unknown>) => ({
      month: r.month,
      weldsMade: r.weldsMade,
      weldsExamined: r.weldsExamined,
      weldsRejected: r.weldsRejected,
      defectLengthIn: r.defectLengthIn,
      minimumExamined: r.minimumExamined,
      overThreshold: r.overThreshold,
    })),
    [
      {
        month: '2026-03-01',
        weldsMade: 10,
        weldsExamined: 0,
        weldsRejected: 0,
        defectLengthIn: 0,
        minimumExamined: 10,
        overThreshold: false,
      },
      {
        month: '2026-04-01',
        weldsMade: 0,
        weldsExamined: 10,
        weldsRejected: 1,
        defectLengthIn: 1.5,
        minimumExamined: 10,
        overThreshold: true,
      },
    ],
  );
  const defect = await w.a.inspector.post('/ndt-records', {
    method: 'RT',
    reportNumber: 'M-RT2',
    examinedOn: '2026-04-03',
    welds: [{ weldId: welds[1]!.id, result: 'accepted', defectLengthIn: 1 }],
  });
  problemOf(t, defect, 422);
  t.is(defect.json.errors[0].pointer, '/welds/0/defectLengthIn');
  // Left to the film, a weld's result is not given: its lengths go on the rejected intervals.
  const filmed = await w.a.inspector.post('/ndt-records', {
    method: 'RT',
    reportNumber: 'M-RT3',
    examinedOn: '2026-04-03',
    welds: [{ weldId: welds[1]!.id, defectLengthIn: 1 }],
    filmIntervals: [{ label: '0-1', result: 'accepted', defectCodes: [], weldIds: [welds[1]!.id] }],
  });
  problemOf(t, filmed, 422);
  t.deepEqual(filmed.json.errors, [
    {
      pointer: '/welds/0/defectLengthIn',
      detail:
        'defectLengthIn is the length of rejected defects: give it with a rejected result (for results from the film, on its rejected intervals)',
    },
  ]);
});

test('attacker: a repair dated before the RT that rejected the weld cannot let that RT meet its own re-examination, over REST, /weld-repairs or GraphQL; a defect length that rounds to nothing is 422 at its place', async (t) => {
  const w = await world(t);
  const { weld, welder } = await rejectedWeld(w, 'X');
  ok(await w.a.engineer.patch(`/welds/${weld.id}/status`, { status: 'REPAIR' }));
  // The weld was made on 2026-03-01 and RT X-RT1 of 2026-04-01 rejected it: a repair of
  // 2026-03-01 would be older than the defect it mends.
  const backDated = await w.a.inspector.patch(`/welds/${weld.id}/status`, {
    status: 'PENDING',
    repair: { weldedOn: '2026-03-01', welderId: welder.id },
  });
  problemOf(t, backDated, 422, '/problems/validation-failed');
  t.deepEqual(backDated.json.errors, [
    {
      pointer: '/repair/weldedOn',
      detail:
        'must be on or after 2026-04-01, when RT report X-RT1 examined the weld before its release for repair 1',
    },
  ]);
  t.is(ok(await w.a.viewer.get(`/welds/${weld.id}`)).status, 'REPAIR', 'nothing written');

  // Re-welded without a day, then back-dated on the repair itself, or through GraphQL.
  ok(await w.a.inspector.patch(`/welds/${weld.id}/status`, { status: 'PENDING' }));
  const repair = ok(await w.a.viewer.get(`/weld-repairs?weldId=${weld.id}`)).items[0];
  const patched = await w.a.inspector.patch(`/weld-repairs/${repair.id}`, {
    weldedOn: '2026-03-15',
  });
  problemOf(t, patched, 422, '/problems/validation-failed');
  t.is(patched.json.errors[0].pointer, '/weldedOn');
  const node = (
    await w.gql(
      'viewer',
      'query ($id: UUID!) { allWeldRepairs(first: 1, condition: { rowId: $id }) { nodes { id } } }',
      { id: repair.id },
    )
  ).json.data.allWeldRepairs.nodes[0].id as string;
  const viaGraphql = await w.gql(
    'inspector',
    'mutation ($id: ID!) { updateWeldRepair(input: { id: $id, weldRepairPatch: { weldedOn: "2026-03-15" } }) { weldRepair { weldedOn } } }',
    { id: node },
  );
  t.is(
    viaGraphql.json.errors?.[0]?.extensions?.code,
    '/problems/validation-failed',
    viaGraphql.text,
  );
  t.is(ok(await w.a.viewer.get(`/weld-repairs/${repair.id}`)).weldedOn, null);
  // The re-examination stays owed: the RT that rejected the weld never meets it.
  const checks = ok(await w.a.viewer.get(`/welds/${weld.id}/checks`)).checks as Array<{
    code: string;
  }>;
  t.true(checks.some((c) => c.code === 'REEXAMINATION_OPEN'));

  const tiny = await w.a.inspector.post('/ndt-records', {
    method: 'RT',
    reportNumber: 'X-RT9',
    examinedOn: '2026-04-10',
    welds: [{ weldId: weld.id, result: 'rejected', defectLengthIn: 0.0001 }],
  });
  problemOf(t, tiny, 422, '/problems/validation-failed');
  t.deepEqual(tiny.json.errors, [
    {
      pointer: '/welds/0/defectLengthIn',
      detail: 'defectLengthIn must be a length in inches from 0.001 to 999.999',
    },
  ]);
});
