// The code rules over real HTTP (issues F7, F13): examination selections drawn by lot and seed,
// the progressive tiers a rejection causes, what an ISO's lots require, a welder's qualifications
// on a date (QW-322 continuity), a weld's checks, a test package's readiness and the refusal to
// release one that is not ready, the tenant switch that refuses welds failing the checks, the
// tenant boundary, and GraphQL answering as REST does. The worlds are built as a client would
// (helpers/rules-http.ts); the rest of F13's faces are in code-rules-f13.test.ts.
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
  today,
  world,
  type Body,
  type Role,
  type World,
} from '../helpers/rules-http.ts';

interface LineWorld {
  iso1: string;
  iso2: string;
  /** L-200: rtPercent 20, 10 butt welds and 2 socket welds, all of welder W1. */
  iso200: string;
  welders: string[];
  wpsId: string;
  welds: Array<{ id: string; weldNumber: string; welderId: string; isoId: string; type: string }>;
}

/**
 * Line L-100 with ISO-1 and ISO-2, 20 butt welds each, made by welders W1, W2 and W3 in turn
 * (14, 13 and 13 welds); and line L-200 with one ISO at rtPercent 20 (10 butt and 2 socket welds
 * of W1). All qualified, on an approved WPS.
 */
async function lineWorld(w: World): Promise<LineWorld> {
  const iso1 = (await w.make.iso('ISO-1', 'L-100')).id;
  const iso2 = (await w.make.iso('ISO-2', 'L-100')).id;
  const iso200 = (await w.make.iso('ISO-200', 'L-200', { rtPercent: 20 })).id;
  const welders: string[] = [];
  for (const stamp of ['W1', 'W2', 'W3']) welders.push((await w.make.welder(stamp)).id);
  const wpsId = (await w.make.wps('WPS-1')).id;
  for (const welderId of welders) await w.make.qualification(welderId);
  const welds: LineWorld['welds'] = [];
  const specs = [
    ...Array.from({ length: 40 }, (_, i) => ({
      isoId: i < 20 ? iso1 : iso2,
      weldNumber: `L100-${String(i + 1).padStart(2, '0')}`,
      welderId: welders[i % 3]!,
      type: 'BW',
    })),
    ...Array.from({ length: 12 }, (_, i) => ({
      isoId: iso200,
      weldNumber: `L200-${String(i + 1).padStart(2, '0')}`,
      welderId: welders[0]!,
      type: i < 10 ? 'BW' : 'SW',
    })),
  ];
  await inBatches(specs, 8, async (spec) => {
    const weld = await w.make.weld({ ...spec, wpsId });
    welds.push({ id: weld.id, ...spec });
  });
  return { iso1, iso2, iso200, welders, wpsId, welds };
}

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

//------------------------------------------------------------------------------------------------
// What an ISO requires

test('ISO examination: ISO-1 of L-100 (40 welds, 3 welders, 5% RT and VT) -> required 3 each (every welder), shortfall 3; after an RT draw 3 selected, 0 short; after an RT record 1 examined; category_d ISO -> RT 5% and VT 100%', async (t) => {
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

  // Category D: the tenant's VT rule (100% of every weld type) and RT from rtPercent (5%).
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

//------------------------------------------------------------------------------------------------
// GraphQL

interface GqlField {
  name: string;
  args: string[];
  /** A connection (nodes, needs first) rather than a plain list. */
  connection: boolean;
}
interface TypeRef {
  kind: string;
  name: string | null;
  ofType?: TypeRef | null;
}
const namedType = (type: TypeRef): string =>
  type.name ?? (type.ofType ? namedType(type.ofType) : '');

async function fieldsOf(w: World, type: string): Promise<Map<string, GqlField>> {
  const res = await w.gql(
    'viewer',
    `query ($name: String!) { __type(name: $name) { fields { name args { name }
       type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }`,
    { name: type },
  );
  const fields = (res.json?.data?.__type?.fields ?? []) as Array<{
    name: string;
    args: Array<{ name: string }>;
    type: TypeRef;
  }>;
  return new Map(
    fields.map((f) => [
      f.name,
      {
        name: f.name,
        args: f.args.map((a) => a.name),
        connection: namedType(f.type).endsWith('Connection'),
      },
    ]),
  );
}

/** A selection of a field that yields rows, whether PostGraphile made it a list or a connection. */
function rowsOf(field: GqlField, selection: string, args: string[] = []): string {
  const all = field.connection ? ['first: 500', ...args] : args;
  const call = all.length ? `${field.name}(${all.join(', ')})` : field.name;
  return field.connection ? `${call} { nodes { ${selection} } }` : `${call} { ${selection} }`;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function rowsIn(field: GqlField, value: any): any[] {
  return (field.connection ? value?.nodes : value) ?? [];
}

test('GraphQL answers as REST: Weld.checks (4 codes), TestPackage.ready and readinessReasons, Iso.examination, Welder.qualificationStatus(onDate), the 3 selections; drawExaminationSelection draws 3 for an inspector and refuses a viewer', async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const bare = (
    await w.make.weld({
      isoId: line.iso200,
      weldNumber: 'BARE',
      wallThickness: null,
      weldedOn: null,
    })
  ).id;
  const pkg = (await w.make.testPackage('TP-1', { isoIds: [line.iso200] })).id;

  const gqlOk = async (role: Role, query: string, variables?: object) => {
    const res = await w.gql(role, query, variables);
    if (res.status !== 200 || res.json?.errors) throw new Error(`${query}: ${res.text}`);
    return res.json.data;
  };
  const weldFields = await fieldsOf(w, 'Weld');
  const packageFields = await fieldsOf(w, 'TestPackage');
  const isoFields = await fieldsOf(w, 'Iso');
  const welderFields = await fieldsOf(w, 'Welder');
  for (const [fields, name] of [
    [weldFields, 'checks'],
    [packageFields, 'ready'],
    [packageFields, 'readinessReasons'],
    [isoFields, 'examination'],
    [welderFields, 'qualificationStatus'],
  ] as const) {
    t.truthy(fields.get(name), `${name} in the GraphQL schema`);
  }
  t.true(welderFields.get('qualificationStatus')?.args.includes('onDate'));

  // Weld.checks
  const checks = weldFields.get('checks')!;
  const weldData = await gqlOk(
    'viewer',
    `query ($id: UUID!) { allWelds(first: 1, condition: { rowId: $id }) { nodes { ${rowsOf(checks, 'code detail')} } } }`,
    { id: bare },
  );
  const restChecks = ok(await w.a.viewer.get(`/welds/${bare}/checks`)).checks;
  t.is(restChecks.length, 4);
  t.deepEqual(rowsIn(checks, weldData.allWelds.nodes[0].checks), restChecks);

  // TestPackage.ready and readinessReasons
  const reasons = packageFields.get('readinessReasons')!;
  const packageData = await gqlOk(
    'viewer',
    `query ($id: UUID!) { allTestPackages(first: 1, condition: { rowId: $id }) { nodes { ready ${rowsOf(reasons, 'code weldId isoId detail')} } } }`,
    { id: pkg },
  );
  const restReadiness = ok(await w.a.viewer.get(`/test-packages/${pkg}/readiness`));
  const node = packageData.allTestPackages.nodes[0];
  t.is(node.ready, restReadiness.ready);
  t.false(node.ready);
  const stripNulls = (r: Body) =>
    Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null));
  t.deepEqual(rowsIn(reasons, node.readinessReasons).map(stripNulls), restReadiness.reasons);
  t.true(restReadiness.reasons.length >= 3, JSON.stringify(restReadiness.reasons));

  // drawExaminationSelection: a viewer is refused, an inspector draws.
  const mutationField = (await fieldsOf(w, 'Mutation')).get('drawExaminationSelection');
  t.truthy(mutationField, 'drawExaminationSelection in the schema');
  const draw = `mutation ($input: DrawExaminationSelectionInput!) { drawExaminationSelection(input: $input) { clientMutationId } }`;
  const input = { method: 'RT', lineNumber: 'L-100', seed: '42' };
  const viewer = await w.gql('viewer', draw, { input });
  t.is(viewer.json.errors?.[0]?.extensions?.code, '/problems/role-not-allowed', viewer.text);
  t.deepEqual(idsOf(await w.a.viewer.get('/examination-selections')), []);
  const neither = await w.gql('inspector', draw, { input: { method: 'RT' } });
  t.is(neither.json.errors?.[0]?.extensions?.code, '/problems/validation-failed', neither.text);
  await gqlOk('inspector', draw, { input });
  const restSelections = ok(await w.a.viewer.get('/examination-selections')).items as Body[];
  t.is(restSelections.length, 3);
  for (const s of restSelections)
    t.like(s, { seed: 42, selectedBy: w.userIds.inspector, tier: 'random' });

  // The selections' collection: found by its fields, never guessed.
  const schema = await gqlOk(
    'viewer',
    `{ __schema { queryType { fields { name type { kind name ofType { kind name } } } } } }`,
  );
  const collections = (
    schema.__schema.queryType.fields as Array<{ name: string; type: TypeRef }>
  ).filter((f) => f.name.startsWith('all') && namedType(f.type).endsWith('Connection'));
  let selectionsField: string | undefined;
  for (const f of collections) {
    const fields = await fieldsOf(w, namedType(f.type).slice(0, -'Connection'.length));
    if (fields.has('tier') && fields.has('causeSelectionId')) selectionsField = f.name;
  }
  t.truthy(selectionsField, 'a collection of examination selections');
  const selectionData = await gqlOk(
    'viewer',
    `{ ${selectionsField!}(first: 500) { nodes { rowId weldId method tier seed state ndtRecordId causeSelectionId selectedBy } } }`,
  );
  const fromGraphql = (selectionData[selectionsField!].nodes as Body[]).map((s): Body => ({
    ...s,
    id: s.rowId,
    seed: Number(s.seed),
  }));
  t.deepEqual(
    sorted(
      fromGraphql.map((s) =>
        JSON.stringify([
          s.id,
          s.weldId,
          s.method,
          s.tier,
          s.seed,
          s.state,
          s.ndtRecordId,
          s.causeSelectionId,
          s.selectedBy,
        ]),
      ),
    ),
    sorted(
      restSelections.map((s) =>
        JSON.stringify([
          s.id,
          s.weldId,
          s.method,
          s.tier,
          s.seed,
          s.state,
          s.ndtRecordId,
          s.causeSelectionId,
          s.selectedBy,
        ]),
      ),
    ),
  );

  // Iso.examination, after the draw.
  const examination = isoFields.get('examination')!;
  const isoData = await gqlOk(
    'viewer',
    `query ($id: UUID!) { allIsos(first: 1, condition: { rowId: $id }) { nodes { ${rowsOf(examination, 'method requiredPercent welds required selected examined shortfall progressiveOpen weldersNotCovered')} } } }`,
    { id: line.iso1 },
  );
  const restExamination = ok(await w.a.viewer.get(`/isos/${line.iso1}/examination`)).methods;
  t.deepEqual(
    rowsIn(examination, isoData.allIsos.nodes[0].examination).map((m: Body) => ({
      ...m,
      requiredPercent: Number(m.requiredPercent),
      weldersNotCovered: m.weldersNotCovered ?? [],
    })),
    restExamination,
  );
  t.like(restExamination[0], { method: 'RT', selected: 3, shortfall: 0 });

  // Welder.qualificationStatus(onDate)
  const qualification = welderFields.get('qualificationStatus')!;
  for (const on of ['2026-07-10', '2026-07-11']) {
    const welderData = await gqlOk(
      'viewer',
      `query ($id: UUID!, $on: Date) { allWelders(first: 1, condition: { rowId: $id }) { nodes { ${rowsOf(qualification, 'qualificationId process wpsId state qualifiedOn expiresOn revokedOn lastUsedOn continuityUntil reasons', ['onDate: $on'])} } } }`,
      { id: line.welders[1], on },
    );
    const rest = ok(
      await w.a.viewer.get(`/welders/${line.welders[1]}/qualification-status?on=${on}`),
    );
    t.deepEqual(
      rowsIn(qualification, welderData.allWelders.nodes[0].qualificationStatus),
      rest.qualifications,
      on,
    );
    t.is(rest.qualifications.length, 1);
  }
});
