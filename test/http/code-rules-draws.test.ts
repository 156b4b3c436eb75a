// The code rules over real HTTP (issues F7, F13): examination selections drawn by lot and seed,
// their listing, what an NDT record does to them, the progressive tiers a rejection causes, and
// the tenant boundary. The worlds are built as a client would (helpers/rules-http.ts,
// helpers/line-world.ts); the rest of F13's faces are in code-rules-f13.test.ts.
import test from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { bearerClient as client } from '../helpers/http.ts';
import {
  idsOf,
  inBatches,
  named,
  ok,
  problemOf,
  sorted,
  world,
  type Body,
  type Role,
} from '../helpers/rules-http.ts';
import { lineWorld } from '../helpers/line-world.ts';

//------------------------------------------------------------------------------------------------
// Drawing

test('draw by line: 40 BW welds of 3 welders at 5% on L-100 -> 3 random selections, one per welder; again -> 0; seed 42 on a copy with the same ids -> the same 3 weld numbers', async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const drawn = ok(
    await w.a.inspector.post(
      '/examination-selections/draw',
      { method: 'RT', lineNumber: 'L-100', seed: 42 },
      { 'Idempotency-Key': 'draw-L-100' },
    ),
  );
  t.is(drawn.method, 'RT');
  t.is(drawn.seed, 42);
  t.is(drawn.selections.length, 3, JSON.stringify(drawn));
  t.deepEqual(sorted(drawn.selections.map((s: Body) => s.welderId)), sorted(line.welders));
  const byId = new Map(line.welds.map((weld) => [weld.id, weld]));
  for (const s of drawn.selections) {
    const weld = byId.get(s.weldId)!;
    t.truthy(weld, 'a weld of the world');
    t.like(s, {
      welderId: weld.welderId,
      isoId: weld.isoId,
      lineNumber: 'L-100',
      method: 'RT',
      tier: 'random',
      seed: 42,
      causeSelectionId: null,
      causeNdtRecordId: null,
      ndtRecordId: null,
      state: 'open',
      selectedBy: w.userIds.inspector,
    });
    t.regex(s.reason, /42/, 'the reason names the seed');
  }
  // The same request again with the same key: the first answer, nothing drawn.
  const replay = await w.a.inspector.post(
    '/examination-selections/draw',
    { method: 'RT', lineNumber: 'L-100', seed: 42 },
    { 'Idempotency-Key': 'draw-L-100' },
  );
  t.is(replay.status, 200);
  t.is(replay.headers['idempotent-replayed'], 'true');
  t.deepEqual(replay.json, drawn);
  const reused = await w.a.inspector.post(
    '/examination-selections/draw',
    { method: 'RT', lineNumber: 'L-100', seed: 43 },
    { 'Idempotency-Key': 'draw-L-100' },
  );
  problemOf(t, reused, 422, '/problems/idempotency-key-reused');

  // Nothing is missing any more: another draw, with another seed or none, adds nothing.
  const again = ok(
    await w.a.engineer.post('/api/examination-selections/draw', {
      method: 'RT',
      lineNumber: 'L-100',
      seed: 7,
    }),
  );
  t.deepEqual(again, { method: 'RT', seed: 7, selections: [] });
  const unseeded = ok(
    await w.a.admin.post('/examination-selections/draw', { method: 'RT', lineNumber: 'L-100' }),
  );
  t.true(Number.isSafeInteger(unseeded.seed) && unseeded.seed >= 0, `seed ${unseeded.seed}`);
  t.deepEqual(unseeded.selections, []);
  t.is(idsOf(await w.a.viewer.get('/examination-selections?lineNumber=L-100')).length, 3);

  // A fresh tenant holding the same ISOs, welders and welds (same ids, copied by a DBA) draws
  // the same welds with the same seed.
  const gamma = (await addTenant(w.owner, { slug: 'gamma', origins: ['http://c.test'] })).id;
  await addRoleUsers(w.owner, 'gamma');
  await w.owner.query(
    `insert into weld_public.isos (tenant_id, id, iso_number, line_number, fluid_service, rt_percent)
     select $2, id, iso_number, line_number, fluid_service, rt_percent
       from weld_public.isos where tenant_id = $1`,
    [w.tenantA, gamma],
  );
  await w.owner.query(
    `insert into weld_public.welders (tenant_id, id, stamp, name)
     select $2, id, stamp, name from weld_public.welders where tenant_id = $1`,
    [w.tenantA, gamma],
  );
  await w.owner.query(
    `insert into weld_public.welds (tenant_id, id, iso_id, weld_number, type, size, wall_thickness,
                                    welder_id, welded_on)
     select $2, id, iso_id, weld_number, type, size, wall_thickness, welder_id, welded_on
       from weld_public.welds where tenant_id = $1`,
    [w.tenantA, gamma],
  );
  const inspectorC = client(
    w.port,
    'c.test',
    (await login(w.port, 'c.test', 'inspector')).json.accessToken,
  );
  const copy = ok(
    await inspectorC.post('/examination-selections/draw', {
      method: 'RT',
      lineNumber: 'L-100',
      seed: 42,
    }),
  );
  const numbers = (selections: Array<{ weldId: string }>) =>
    sorted(selections.map((s) => byId.get(s.weldId)!.weldNumber));
  t.is(copy.selections.length, 3);
  t.deepEqual(numbers(copy.selections), numbers(drawn.selections));
});

test('draw by ISO: ISO-200 at rtPercent 20 with 10 BW + 2 SW welds of 1 welder -> 2 selections, both BW; the 40 welds of L-100 untouched', async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const drawn = ok(
    await w.a.inspector.post('/examination-selections/draw', {
      method: 'RT',
      isoId: line.iso200,
      seed: 1,
    }),
  );
  t.is(drawn.selections.length, 2, JSON.stringify(drawn));
  const byId = new Map(line.welds.map((weld) => [weld.id, weld]));
  for (const s of drawn.selections) {
    t.is(s.isoId, line.iso200);
    t.is(s.lineNumber, 'L-200');
    t.is(s.welderId, line.welders[0]);
    t.is(byId.get(s.weldId)!.type, 'BW', 'socket welds are not sampled for RT');
  }
  t.not(drawn.selections[0].weldId, drawn.selections[1].weldId);
  t.deepEqual(idsOf(await w.a.viewer.get('/examination-selections?lineNumber=L-100')), []);
  const again = ok(
    await w.a.inspector.post('/examination-selections/draw', { method: 'RT', isoId: line.iso200 }),
  );
  t.deepEqual(again.selections, []);
});

test("designated lot (B31.3 344.1.3): L-100 with 3 welders x 30 welds draws ceil(5% x 90) = 5 with 'line', and ceil(5% x 30) = 2 per welder, 6, with 'line_welder'", async (t) => {
  const w = await world(t);
  const wpsId = (await w.make.wps('WPS-1')).id;
  const welds = async (line: string) => {
    const isoId = (await w.make.iso(`ISO-${line}`, line)).id;
    for (const stamp of ['W1', 'W2', 'W3']) {
      const welderId = (await w.make.welder(`${stamp}-${line}`)).id;
      await w.make.qualification(welderId);
      await inBatches(
        Array.from({ length: 30 }, (_, k) => k),
        10,
        (k) => w.make.weld({ isoId, welderId, wpsId, weldNumber: `${stamp}-${k + 1}` }),
      );
    }
    return isoId;
  };
  const first = await welds('L-100');
  const examination = ok(await w.a.viewer.get(`/isos/${first}/examination`));
  t.is(examination.lotDefinition, 'line');
  t.like(examination.methods[0], { method: 'RT', welds: 90, required: 5, shortfall: 5 });
  const drawn = ok(
    await w.a.inspector.post('/examination-selections/draw', { method: 'RT', lineNumber: 'L-100' }),
  );
  t.is(drawn.selections.length, 5);
  t.is(new Set(drawn.selections.map((s: Body) => s.welderId)).size, 3, 'every welder represented');

  await w.owner.query(
    `update weld_public.tenant_settings set examination_lot = 'line_welder' where tenant_id = $1`,
    [w.tenantA],
  );
  await welds('L-200');
  const perWelder = ok(
    await w.a.inspector.post('/examination-selections/draw', { method: 'RT', lineNumber: 'L-200' }),
  );
  t.is(perWelder.selections.length, 6);
  t.regex(perWelder.selections[0].reason, /RT 5% of welder W\d-L-200's welds on line L-200/);
});

test('draw refusals: 422 for neither or both of lineNumber and isoId, method XX, seed -1, 2^53, 1.5, "42" and unknown fields; 404 unknown ISO and 2 unknown lines; 403 viewer; 405 GET', async (t) => {
  const w = await world(t);
  const iso = (await w.make.iso('ISO-1', 'L-100')).id;
  const welder = (await w.make.welder('W1')).id;
  await w.make.weld({ isoId: iso, welderId: welder, weldNumber: 'W-1' });
  const draw = (body: unknown, role: Role = 'inspector') =>
    w.a[role].post('/examination-selections/draw', body);

  const neither = await draw({ method: 'RT' });
  problemOf(t, neither, 422, '/problems/validation-failed');
  t.deepEqual(sorted(named(neither)), ['/isoId', '/lineNumber']);
  const both = await draw({ method: 'RT', lineNumber: 'L-100', isoId: iso });
  problemOf(t, both, 422, '/problems/validation-failed');
  t.deepEqual(sorted(named(both)), ['/isoId', '/lineNumber']);
  const method = await draw({ method: 'XX', lineNumber: 'L-100' });
  problemOf(t, method, 422);
  t.deepEqual(named(method), ['/method']);
  for (const seed of [-1, 2 ** 53, 1.5, '42']) {
    const res = await draw({ method: 'RT', lineNumber: 'L-100', seed });
    problemOf(t, res, 422, '/problems/validation-failed');
    t.deepEqual(named(res), ['/seed'], `seed ${String(seed)}`);
  }
  const unknown = await draw({ method: 'RT', lineNumber: 'L-100', count: 3 });
  problemOf(t, unknown, 422);
  t.deepEqual(named(unknown), ['/count']);
  const longLine = await draw({ method: 'RT', lineNumber: 'L'.repeat(101) });
  t.deepEqual(named(longLine), ['/lineNumber']);
  problemOf(t, await draw({ method: 'RT', isoId: 'not-a-uuid' }), 422);

  const noIso = await draw({ method: 'RT', isoId: '00000000-0000-4000-8000-000000000000' });
  problemOf(t, noIso, 404);
  t.is(noIso.json.detail, 'No such ISO.');
  for (const lineNumber of ['L-404', 'L 404 spaced']) {
    const noLine = await draw({ method: 'RT', lineNumber });
    problemOf(t, noLine, 404);
    t.is(noLine.json.detail, 'No such line.', lineNumber);
  }

  const viewer = await draw({ method: 'RT', lineNumber: 'L-100', seed: 1 }, 'viewer');
  problemOf(t, viewer, 403, '/problems/role-not-allowed');
  t.deepEqual(idsOf(await w.a.viewer.get('/examination-selections')), [], 'nothing drawn');
  const get = await w.a.viewer.get('/examination-selections/draw');
  t.is(get.status, 405);
  t.regex(String(get.headers.allow), /POST/);
  // The inspector may: the same body works.
  t.is(ok(await draw({ method: 'RT', lineNumber: 'L-100', seed: 1 })).selections.length, 1);
});

test("tenants: B's users get 404 for A's ISO examination, welder status, weld checks, package readiness, selection and draws; B lists 0 of A's 3 selections", async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const drawn = ok(
    await w.a.inspector.post('/examination-selections/draw', { method: 'RT', lineNumber: 'L-100' }),
  );
  t.is(drawn.selections.length, 3);
  const selection = drawn.selections[0].id as string;
  const pkg = (await w.make.testPackage('TP-1', { isoIds: [line.iso1] })).id;
  for (const path of [
    `/isos/${line.iso1}/examination`,
    `/welders/${line.welders[0]}/qualification-status`,
    `/welds/${line.welds[0]!.id}/checks`,
    `/test-packages/${pkg}/readiness`,
    `/examination-selections/${selection}`,
    `/api/examination-selections/${selection}`,
  ]) {
    const res = await w.b.engineer.get(path);
    problemOf(t, res, 404);
    t.regex(
      res.json.detail,
      /^No such (ISO|welder|weld|test package|examination selection)\.$/,
      path,
    );
  }
  problemOf(
    t,
    await w.b.inspector.post('/examination-selections/draw', { method: 'RT', isoId: line.iso1 }),
    404,
  );
  problemOf(
    t,
    await w.b.inspector.post('/examination-selections/draw', { method: 'RT', lineNumber: 'L-100' }),
    404,
  );
  t.deepEqual(idsOf(await w.b.admin.get('/examination-selections')), []);
  t.deepEqual(idsOf(await w.b.admin.get(`/examination-selections?isoId=${line.iso1}`)), []);
  // Tenant A's selections are as they were.
  t.is(idsOf(await w.a.viewer.get('/examination-selections')).length, 3);
});

//------------------------------------------------------------------------------------------------
// Listing, and what an NDT record does to selections

test('list: 5 selections in pages of 2 (2 + 2 + 1), every filter; an RT record covering 1 -> done with its ndtRecordId; 422 for bad parameters; read by id, 404 unknown', async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const first = ok(
    await w.a.inspector.post('/examination-selections/draw', {
      method: 'RT',
      lineNumber: 'L-100',
      seed: 5,
    }),
  ).selections;
  const second = ok(
    await w.a.inspector.post('/examination-selections/draw', {
      method: 'RT',
      isoId: line.iso200,
      seed: 5,
    }),
  ).selections;
  t.is(first.length + second.length, 5);
  const all = [...first, ...second] as Array<Body & { id: string; weldId: string }>;

  // Pages of 2, oldest first (the L-100 draw before the L-200 one), Link to the next.
  const pages: string[][] = [];
  let path: string | undefined = '/examination-selections?limit=2';
  while (path) {
    const res = await w.a.viewer.get(path);
    ok(res);
    pages.push(idsOf(res));
    if (res.json.nextCursor) {
      t.regex(String(res.headers.link), /rel="next"/);
      path = `/examination-selections?limit=2&cursor=${res.json.nextCursor as string}`;
    } else path = undefined;
  }
  t.deepEqual(
    pages.map((p) => p.length),
    [2, 2, 1],
  );
  const walked = pages.flat();
  t.deepEqual(sorted(walked), sorted(all.map((s) => s.id)));
  t.deepEqual(sorted(walked.slice(0, 3)), sorted(first.map((s: Body) => s.id as string)));
  t.deepEqual(sorted(walked.slice(3)), sorted(second.map((s: Body) => s.id as string)));

  /** How many the filter finds, the same under both prefixes. */
  const count = async (query: string) => {
    const bare = await w.a.viewer.get(`/examination-selections?${query}`);
    const api = await w.a.viewer.get(`/api/examination-selections?${query}`);
    ok(bare);
    t.deepEqual(idsOf(api), idsOf(bare), query);
    return idsOf(bare).length;
  };
  t.is(await count('method=RT'), 5);
  t.is(await count('method=UT'), 0);
  t.is(await count('tier=random'), 5);
  t.is(await count('tier=1'), 0);
  t.is(await count('state=open'), 5);
  t.is(await count('state=done'), 0);
  t.is(await count('lineNumber=L-200'), 2);
  t.is(await count(`isoId=${line.iso200}`), 2);
  t.is(await count(`welderId=${line.welders[0]}`), 3, "W1's lot on each line");
  t.is(await count(`welderId=${line.welders[1]}&lineNumber=L-100`), 1);
  t.is(await count(`weldId=${all[0]!.weldId}`), 1);

  // An accepted RT record covering one selected weld makes it done, naming the record.
  const covered = all[0]!;
  const record = await w.make.rt('RT-1', { [covered.weldId]: 'accepted' });
  const done = ok(await w.a.viewer.get('/examination-selections?state=done')).items;
  t.is(done.length, 1);
  t.like(done[0], { id: covered.id, state: 'done', ndtRecordId: record.id });
  t.is(await count('state=open'), 4);
  t.like(ok(await w.a.viewer.get(`/examination-selections/${covered.id}`)), {
    id: covered.id,
    state: 'done',
    ndtRecordId: record.id,
  });
  // A UT record of another selected weld makes its RT selection done too (B31.3 341.4.1(b)(1):
  // random RT or UT), naming the UT record.
  const ut = await ok(
    await w.a.inspector.post('/ndt-records', {
      method: 'UT',
      reportNumber: 'UT-1',
      examinedOn: '2026-04-02',
      welds: [{ weldId: all[1]!.weldId, result: 'accepted' }],
    }),
    201,
  );
  t.is(await count('state=open'), 3, 'UT meets RT');
  t.like(ok(await w.a.viewer.get(`/examination-selections/${all[1]!.id}`)), {
    state: 'done',
    ndtRecordId: ut.id,
    inspectionId: null,
  });

  for (const [query, parameter] of [
    ['colour=red', 'colour'],
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['tier=3', 'tier'],
    ['state=closed', 'state'],
    ['method=XX', 'method'],
    ['isoId=abc', 'isoId'],
    ['cursor=nope', 'cursor'],
  ] as const) {
    const res = await w.a.viewer.get(`/examination-selections?${query}`);
    problemOf(t, res, 422, '/problems/validation-failed');
    t.deepEqual(named(res), [parameter], query);
  }
  problemOf(
    t,
    await w.a.viewer.get('/examination-selections/00000000-0000-4000-8000-000000000000'),
    404,
  );
  const notUuid = await w.a.viewer.get('/examination-selections/123');
  problemOf(t, notUuid, 404);
  t.is(notUuid.json.detail, 'No such examination selection.');
});

test("progressive: an RT rejection of W1's random selection -> exactly 2 tier-1 of W1's L-100 lot; a tier-1 rejection -> 2 tier-2; a tier-2 rejection -> full: the other 9 of its 14 welds", async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const [w1, w2, w3] = line.welders as [string, string, string];
  const drawn = ok(
    await w.a.inspector.post('/examination-selections/draw', {
      method: 'RT',
      lineNumber: 'L-100',
      seed: 11,
    }),
  ).selections as Array<Body & { id: string; weldId: string }>;
  const random = drawn.find((s) => s.welderId === w1)!;
  const lotOfW1 = line.welds.filter((x) => x.welderId === w1 && x.weldNumber.startsWith('L100'));
  t.is(lotOfW1.length, 14);

  const rejected1 = await w.make.rt('RT-REJ-1', { [random.weldId]: 'rejected' });
  const tier1 = ok(await w.a.viewer.get('/examination-selections?tier=1')).items as Array<
    Body & { id: string; weldId: string }
  >;
  t.is(tier1.length, 2, JSON.stringify(tier1));
  for (const s of tier1) {
    t.like(s, {
      method: 'RT',
      welderId: w1,
      lineNumber: 'L-100',
      causeSelectionId: random.id,
      causeNdtRecordId: rejected1.id,
      seed: 11,
      state: 'open',
      selectedBy: w.userIds.inspector,
    });
    t.not(s.weldId, random.weldId);
    t.regex(String(s.reason), /RT-REJ-1/, 'the reason names the report');
  }
  t.like(ok(await w.a.viewer.get(`/examination-selections/${random.id}`)), { state: 'done' });
  t.is(idsOf(await w.a.viewer.get(`/examination-selections?welderId=${w2}`)).length, 1);
  t.is(idsOf(await w.a.viewer.get(`/examination-selections?welderId=${w3}`)).length, 1);
  const examination = ok(await w.a.viewer.get(`/isos/${line.iso1}/examination`));
  t.like(examination.methods[0], { method: 'RT', selected: 5, progressiveOpen: 2, examined: 1 });

  const rejected2 = await w.make.rt('RT-REJ-2', { [tier1[0]!.weldId]: 'rejected' });
  const tier2 = ok(await w.a.viewer.get('/examination-selections?tier=2')).items as Array<
    Body & { weldId: string }
  >;
  t.is(tier2.length, 2);
  for (const s of tier2) {
    t.like(s, { welderId: w1, causeSelectionId: tier1[0]!.id, causeNdtRecordId: rejected2.id });
  }
  const taken = new Set([
    random.weldId,
    ...tier1.map((s) => s.weldId),
    ...tier2.map((s) => s.weldId),
  ]);
  t.is(taken.size, 5, 'no weld selected twice');

  const rejected3 = await w.make.rt('RT-REJ-3', { [tier2[0]!.weldId]: 'rejected' });
  const full = ok(await w.a.viewer.get('/examination-selections?tier=full&limit=500'))
    .items as Array<Body & { weldId: string }>;
  t.is(full.length, 9);
  t.deepEqual(
    sorted(full.map((s) => s.weldId)),
    sorted(lotOfW1.map((x) => x.id).filter((id) => !taken.has(id))),
  );
  for (const s of full) t.like(s, { causeNdtRecordId: rejected3.id, tier: 'full' });
  // The other lots, and W1's lot on L-200, are as the draw left them.
  t.is(
    idsOf(await w.a.viewer.get(`/examination-selections?welderId=${w1}&lineNumber=L-200`)).length,
    0,
  );
  t.is(idsOf(await w.a.viewer.get('/examination-selections?limit=500')).length, 3 + 2 + 2 + 9);
});
