// The code rules of F13 over real HTTP, as a QC engineer and an integrator meet them: the
// continuity log, a WPS its PQRs must qualify, a release that stays released (and its withdrawal
// with a reason), a repaired weld's re-examination, and dates that are real calendar dates over
// REST, GraphQL and the CSV register alike. Every answer is checked against the OpenAPI document.
import test from 'ava';
import { login } from '../helpers/auth.ts';
import { request } from '../helpers/http.ts';
import { named, ok, problemOf, world, type Body, type World } from '../helpers/rules-http.ts';

/** ISO-1 on L-1 with 5 welds of W1 (qualified, on WPS-1), all accepted; one RT- and visually
 * examined, which meets both 5% lots: a package of the ISO, ready. */
async function readyPackage(w: World) {
  const isoId = (await w.make.iso('ISO-1', 'L-1')).id;
  const welderId = (await w.make.welder('W1')).id;
  const qualification = await w.make.qualification(welderId);
  const wpsId = (await w.make.wps('WPS-1')).id;
  const welds: string[] = [];
  for (let n = 1; n <= 5; n++) {
    welds.push((await w.make.weld({ isoId, welderId, wpsId, weldNumber: `N-${n}` })).id);
  }
  await w.make.rt('RT-1', { [welds[0]!]: 'accepted' });
  ok(
    await w.a.inspector.post('/inspections', {
      kind: 'visual',
      inspectedOn: '2026-03-02',
      result: 'accepted',
      weldIds: [welds[0]],
    }),
    201,
  );
  // The others accepted by hand on their visual inspection.
  const visual = ok(
    await w.a.inspector.post('/inspections', {
      kind: 'visual',
      inspectedOn: '2026-03-02',
      result: 'accepted',
      weldIds: welds.slice(1),
    }),
    201,
  );
  for (const id of welds.slice(1)) {
    ok(
      await w.a.inspector.patch(`/welds/${id}/status`, {
        status: 'ACCEPTED',
        inspectionId: visual.id,
      }),
    );
  }
  const packageId = (await w.make.testPackage('TP-1', { isoIds: [isoId] })).id;
  return { isoId, welderId, qualificationId: qualification.id, wpsId, welds, packageId };
}

test('QW-322.1(a): POST /welders/{id}/continuity records a documented use; GET lists it beside each weld per process, newest first, in pages; viewers, other tenants and bad dates are refused', async (t) => {
  const w = await world(t);
  const isoId = (await w.make.iso('ISO-1', 'L-1')).id;
  const welderId = (await w.make.welder('W1')).id;
  const wpsId = (await w.make.wps('WPS-1')).id;
  for (const [n, day] of ['2026-03-01', '2026-04-01', '2026-05-01'].entries()) {
    await w.make.weld({ isoId, welderId, wpsId, weldNumber: `N-${n}`, weldedOn: day });
  }
  const posted = ok(
    await w.a.inspector.post(`/welders/${welderId}/continuity`, {
      usedOn: '2026-06-15',
      process: 'SMAW',
      reference: 'shop log 17, page 4',
    }),
    201,
  );
  t.like(posted, {
    usedOn: '2026-06-15',
    process: 'SMAW',
    source: 'document',
    reference: 'shop log 17, page 4',
    weldId: null,
    recordedBy: w.userIds.inspector,
  });

  const seen: Body[] = [];
  let path: string | undefined = `/welders/${welderId}/continuity?limit=2`;
  while (path) {
    const page = ok(await w.a.viewer.get(path));
    seen.push(...(page.items as Body[]));
    path = page.nextCursor
      ? `/welders/${welderId}/continuity?limit=2&cursor=${page.nextCursor as string}`
      : undefined;
  }
  t.deepEqual(
    seen.map((u) => `${String(u.usedOn)} ${String(u.process)} ${String(u.source)}`),
    [
      '2026-06-15 SMAW document',
      '2026-05-01 GTAW weld',
      '2026-04-01 GTAW weld',
      '2026-03-01 GTAW weld',
    ],
  );
  t.deepEqual(
    ok(await w.a.viewer.get(`/welders/${welderId}/continuity?process=SMAW`)).items.length,
    1,
  );

  problemOf(
    t,
    await w.a.viewer.post(`/welders/${welderId}/continuity`, {
      usedOn: '2026-06-16',
      process: 'SMAW',
      reference: 'x',
    }),
    403,
  );
  const far = await w.a.inspector.post(`/welders/${welderId}/continuity`, {
    usedOn: '2999-01-01',
    process: 'SMAW',
    reference: 'x',
  });
  problemOf(t, far, 422, '/problems/validation-failed');
  t.deepEqual(named(far), ['/usedOn']);
  t.regex(far.text, /must be a date from 1900-01-01 to 2200-12-31/);
  problemOf(t, await w.b.viewer.get(`/welders/${welderId}/continuity`), 404);
  problemOf(
    t,
    await w.b.inspector.post(`/welders/${welderId}/continuity`, {
      usedOn: '2026-06-16',
      process: 'SMAW',
      reference: 'x',
    }),
    404,
  );
  problemOf(t, await w.a.viewer.get(`/welders/${welderId}/continuity?cursor=bm9wZQ`), 422);
  // A forged cursor of the right shape but no real date is the cursor's fault, not the database's.
  const forged = Buffer.from(
    '2026-13-45|document/SMAW/00000000-0000-4000-8000-000000000001',
  ).toString('base64url');
  const refused = await w.a.viewer.get(`/welders/${welderId}/continuity?cursor=${forged}`);
  problemOf(t, refused, 422, '/problems/validation-failed');
  t.regex(refused.text, /"parameter":"cursor","detail":"not a cursor this service issued"/);
});

test('QW-200.2: approving a WPS that no PQR backs is 409 /problems/wps-not-qualified naming it; GET /wps/{id}/checks says why; backed by a PQR that supports its range, it is approved', async (t) => {
  const w = await world(t);
  const draft = ok(
    await w.a.engineer.post('/wps', {
      wpsNumber: 'WPS-9',
      process: 'GTAW',
      pNumbers: ['1'],
      thicknessMinIn: 0.1875,
      thicknessMaxIn: 1,
    }),
    201,
  );
  const refused = await w.a.engineer.patch(`/wps/${draft.id}`, { state: 'approved' });
  problemOf(t, refused, 409, '/problems/wps-not-qualified');
  t.is(refused.json.wpsId, draft.id);
  t.deepEqual(refused.json.checks, [
    {
      code: 'WPS_RANGE_UNSUPPORTED',
      detail: 'WPS WPS-9 rev 0 is backed by no PQR (QW-200.2)',
    },
  ]);
  t.is(ok(await w.a.viewer.get(`/wps/${draft.id}`)).state, 'draft', 'nothing written');
  t.like(ok(await w.a.viewer.get(`/wps/${draft.id}/checks`)), { wpsId: draft.id, ok: false });
  // Created approved without a PQR: refused, and no wpsId, for no WPS was written.
  const created = await w.a.engineer.post('/wps', {
    wpsNumber: 'WPS-10',
    process: 'GTAW',
    state: 'approved',
  });
  problemOf(t, created, 409, '/problems/wps-not-qualified');
  t.false('wpsId' in created.json);
  t.is(created.json.checks.length, 1);
  t.is(ok(await w.a.viewer.get('/wps?wpsNumber=WPS-10')).items.length, 0);

  const thin = (await w.make.pqr('PQR-T', { thicknessTestedIn: 0.25 })).id;
  const tooWide = await w.a.engineer.patch(`/wps/${draft.id}`, {
    state: 'approved',
    pqrIds: [thin],
  });
  problemOf(t, tooWide, 409, '/problems/wps-not-qualified');
  t.regex(tooWide.json.checks[0].detail, /its PQRs support 0\.063 to 0\.5 in\. \(QW-451\.1\)/);

  const approved = ok(
    await w.a.engineer.patch(`/wps/${draft.id}`, {
      state: 'approved',
      pqrIds: [(await w.make.pqr('PQR-1')).id],
    }),
  );
  t.is(approved.state, 'approved');
  t.deepEqual(ok(await w.a.viewer.get(`/wps/${draft.id}/checks`)), {
    wpsId: draft.id,
    ok: true,
    checks: [],
  });
  problemOf(t, await w.b.viewer.get(`/wps/${draft.id}/checks`), 404);
});

test('a release stays released: after the release, the ISO to severe cyclic is 409 /problems/package-released naming TP-1; withdrawn with a reason (kept in its history) the change goes through, and the release is judged again', async (t) => {
  const w = await world(t);
  const p = await readyPackage(w);
  t.like(ok(await w.a.viewer.get(`/test-packages/${p.packageId}/readiness`)), { ready: true });
  ok(await w.a.engineer.patch(`/test-packages/${p.packageId}`, { state: 'released' }));

  const held = await w.a.engineer.patch(`/isos/${p.isoId}`, { fluidService: 'severe_cyclic' });
  problemOf(t, held, 409, '/problems/package-released');
  t.like(held.json.packages[0], {
    testPackageId: p.packageId,
    packageNumber: 'TP-1',
    state: 'released',
  });
  t.regex(held.json.packages[0].reasons[0].detail, /RT 100% of line L-1 requires 5 of its 5 welds/);
  t.is(ok(await w.a.viewer.get(`/isos/${p.isoId}`)).fluidService, 'normal');
  problemOf(
    t,
    await w.a.engineer.del(`/welder-qualifications/${p.qualificationId}`),
    409,
    '/problems/package-released',
  );

  // Back to open only with a reason, by an engineer.
  problemOf(
    t,
    await w.a.engineer.patch(`/test-packages/${p.packageId}`, { state: 'open' }),
    409,
    '/problems/state-conflict',
  );
  problemOf(
    t,
    await w.a.inspector.post(`/test-packages/${p.packageId}/withdraw`, { reason: 'x' }),
    403,
  );
  for (const body of [{ reason: ' ' }, {}]) {
    problemOf(
      t,
      await w.a.engineer.post(`/test-packages/${p.packageId}/withdraw`, body),
      422,
      '/problems/reason-required',
    );
  }
  const withdrawn = await w.a.engineer.post(`/test-packages/${p.packageId}/withdraw`, {
    reason: 'the line becomes severe cyclic service',
  });
  t.is(ok(withdrawn).state, 'open');
  t.truthy(withdrawn.headers.etag);
  const history = ok(await w.a.viewer.get(`/test-packages/${p.packageId}/history`)).items;
  t.deepEqual(
    history.map((h: Body) => [h.fromState, h.toState, h.reason, h.changedBy]),
    [
      ['open', 'released', null, w.userIds.engineer],
      ['released', 'open', 'the line becomes severe cyclic service', w.userIds.engineer],
    ],
  );
  ok(await w.a.engineer.patch(`/isos/${p.isoId}`, { fluidService: 'severe_cyclic' }));
  const judged = await w.a.engineer.patch(`/test-packages/${p.packageId}`, { state: 'released' });
  problemOf(t, judged, 409, '/problems/package-not-ready');
  t.true(
    judged.json.reasons.some((r: Body) => r.code === 'EXAMINATION_SHORTFALL'),
    'severe cyclic: 100% RT',
  );
  problemOf(
    t,
    await w.b.engineer.post(`/test-packages/${p.packageId}/withdraw`, { reason: 'x' }),
    404,
  );
});

test("B31.3 341.3.3 over REST: a repaired weld's checks name REEXAMINATION_OPEN; accepting it by hand is 409 /problems/reexamination-open, in every tenant, until an RT dated on or after the repair", async (t) => {
  const w = await world(t);
  const isoId = (await w.make.iso('ISO-1', 'L-1')).id;
  const welderId = (await w.make.welder('W1')).id;
  await w.make.qualification(welderId);
  const wpsId = (await w.make.wps('WPS-1')).id;
  const weldId = (await w.make.weld({ isoId, welderId, wpsId, weldNumber: 'N-1' })).id;
  await w.make.rt('RT-1', { [weldId]: 'rejected' });
  // Fixed days, inside the welder's continuity: the RT of 2026-04-01 rejects, the repair follows.
  const repairedOn = '2026-04-10';
  ok(await w.a.engineer.patch(`/welds/${weldId}/status`, { status: 'REPAIR' }));
  ok(
    await w.a.inspector.patch(`/welds/${weldId}/status`, {
      status: 'PENDING',
      repair: { weldedOn: repairedOn, welderId, preheatF: 50 },
    }),
  );
  const checks = ok(await w.a.viewer.get(`/welds/${weldId}/checks`)).checks as Body[];
  t.deepEqual(
    checks.map((c) => c.code),
    ['REEXAMINATION_OPEN'],
  );
  t.regex(String(checks[0]!.detail), /owes a new RT examination \(RT or UT\)/);

  const visual = ok(
    await w.a.inspector.post('/inspections', {
      kind: 'visual',
      inspectedOn: repairedOn,
      result: 'accepted',
      weldIds: [weldId],
    }),
    201,
  );
  for (const mode of ['show', 'refuse']) {
    await w.owner.query(
      `update weld_public.tenant_settings set weld_checks = $2 where tenant_id = $1`,
      [w.tenantA, mode],
    );
    const refused = await w.a.inspector.patch(`/welds/${weldId}/status`, {
      status: 'ACCEPTED',
      inspectionId: visual.id,
    });
    problemOf(t, refused, 409, '/problems/reexamination-open');
    t.is(refused.json.checks[0].code, 'REEXAMINATION_OPEN', mode);
  }
  ok(
    await w.a.inspector.post('/ndt-records', {
      method: 'UT',
      reportNumber: 'UT-2',
      examinedOn: '2026-04-15',
      welds: [{ weldId, result: 'accepted' }],
    }),
    201,
  );
  t.deepEqual(ok(await w.a.viewer.get(`/welds/${weldId}/checks`)).checks, []);
  t.is(
    ok(await w.a.viewer.get(`/welds/${weldId}`)).status,
    'ACCEPTED',
    'the UT record accepted it',
  );
});

test('dates are calendar dates (1900-01-01 to 2200-12-31) over REST, GraphQL and the CSV register; an examination needs a weld already welded, on or after that day', async (t) => {
  const w = await world(t);
  const isoId = (await w.make.iso('ISO-1', 'L-1')).id;
  const weldId = (await w.make.weld({ isoId, weldNumber: 'N-1' })).id;
  const planned = (await w.make.weld({ isoId, weldNumber: 'N-2', weldedOn: null })).id;

  const rest = await w.a.engineer.patch(`/welds/${weldId}`, { weldedOn: '2999-01-01' });
  problemOf(t, rest, 422, '/problems/validation-failed');
  t.deepEqual(named(rest), ['/weldedOn']);
  t.regex(rest.text, /must be a date from 1900-01-01 to 2200-12-31/);

  // GraphQL has no zod in front: the database's check answers, with the same words.
  const found = await w.gql(
    'viewer',
    'query ($id: UUID!) { allWelds(first: 1, condition: { rowId: $id }) { nodes { id } } }',
    { id: weldId },
  );
  const node = found.json.data.allWelds.nodes[0].id as string;
  for (const day of ['infinity', '294276-12-31', '2999-01-01', '1899-12-31']) {
    const res = await w.gql(
      'engineer',
      `mutation ($id: ID!, $day: Date) { updateWeld(input: { id: $id, weldPatch: { weldedOn: $day } }) { weld { weldedOn } } }`,
      { id: node, day },
    );
    const error = res.json.errors?.[0];
    t.truthy(error, `${day}: ${res.text}`);
    // A value GraphQL's Date cannot parse is refused before the database; the rest by its check.
    t.true(
      error?.extensions?.code === '/problems/validation-failed' ||
        /date|Date/.test(String(error?.message)),
      `${day}: ${res.text}`,
    );
  }
  t.is(ok(await w.a.viewer.get(`/welds/${weldId}`)).weldedOn, '2026-03-01', 'nothing written');

  // Before the weld was made, or of a weld not yet made: 422 naming the field to fix.
  const early = await w.a.inspector.post('/ndt-records', {
    method: 'RT',
    reportNumber: 'RT-1',
    examinedOn: '2026-02-28',
    welds: [{ weldId, result: 'accepted' }],
  });
  problemOf(t, early, 422, '/problems/validation-failed');
  t.deepEqual(named(early), ['/examinedOn']);
  t.regex(
    early.text,
    /weld N-1 on ISO ISO-1 was welded on 2026-03-01, after RT report RT-1 dated 2026-02-28/,
  );
  const unwelded = await w.a.inspector.post('/ndt-records', {
    method: 'RT',
    reportNumber: 'RT-2',
    examinedOn: '2026-03-05',
    welds: [{ weldId: planned, result: 'accepted' }],
  });
  problemOf(t, unwelded, 422);
  t.regex(unwelded.text, /weld N-2 on ISO ISO-1 has no date welded/);

  // The register: a far date is refused at its line and column.
  const csv =
    'isoNumber,lineNumber,weldNumber,type,size,weldedOn\n' +
    'ISO-1,L-1,N-3,BW,2,2999-01-01\n' +
    'ISO-1,L-1,N-4,MW,2,2026-03-01\n';
  const imported = await request(w.port, {
    method: 'POST',
    path: '/imports/welds',
    host: 'a.test',
    body: csv,
    headers: {
      authorization: `Bearer ${(await login(w.port, 'a.test', 'engineer')).json.accessToken as string}`,
      'content-type': 'text/csv; charset=utf-8',
    },
  });
  problemOf(t, imported, 422, '/problems/import-invalid');
  t.deepEqual(imported.json.errors, [
    {
      line: 2,
      column: 'weldedOn',
      value: '2999-01-01',
      detail: 'must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31',
    },
  ]);
});
