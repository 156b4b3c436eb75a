// B31.3 examination in SQL: the designated lot (344.1.3), random examination (341.4.1), which
// welds each fluid service's extent covers (341.4.2, 341.4.3, M341.4, K341.4), RT and UT as
// equals (341.4.1(b)(1)), examinations recorded before a draw, and progressive examination
// (341.3.4). Each test is a worked example named by its paragraph.
import test from 'ava';
import { md5, refusal, rulesWorld, sqlstate, uuid, type RulesWorld } from '../helpers/rules.ts';
import type { TenantFixture } from '../helpers/fixtures.ts';

/** A line of `counts[i]` butt welds by welder W0i, on one ISO, every welder qualified. */
async function line(
  w: RulesWorld,
  fx: TenantFixture,
  lineNumber: string,
  counts: number[],
  isoExtra: Record<string, unknown> = {},
) {
  const wpsId = await w.wps(fx, `WPS-${lineNumber}`, 'SMAW');
  const isoId = await w.iso(fx, `ISO-${lineNumber}`, lineNumber, isoExtra);
  const welders: string[] = [];
  const welds: string[][] = [];
  for (const [i, count] of counts.entries()) {
    const welderId = await w.qualifiedWelder(fx, `W${i + 1}`, wpsId);
    welders.push(welderId);
    welds.push(
      await w.weldsOf(fx, isoId, welderId, `${lineNumber}-W${i + 1}`, count, { wps_id: wpsId }),
    );
  }
  return { wpsId, isoId, welders, welds };
}

const tiers = (selections: Array<{ tier: string }>) =>
  selections.reduce<Record<string, number>>(
    (n, s) => ({ ...n, [s.tier]: (n[s.tier] ?? 0) + 1 }),
    {},
  );

test("344.1.3: the designated lot is the line by default; tenants from before keep 'line_welder'", async (t) => {
  const w = await rulesWorld(t);
  const { rows } = await w.dba(
    'select examination_lot, volumetric_interchangeable from weld_public.tenant_settings where tenant_id = $1',
    [w.a.tenantId],
  );
  t.deepEqual(rows, [{ examination_lot: 'line', volumetric_interchangeable: true }]);
  await t.throwsAsync(w.setting(w.a, 'examination_lot', 'welder_iso'), {
    message: /check constraint/,
  });
});

test('341.4.1: the 40-weld, 3-welder line at 5% draws 3, one of each welder (ceil(5% x 40) = 2, raised to 3 welders)', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-100', [14, 13, 13]);
  const drawn = await w.draw(w.a, { line: 'L-100', seed: 42 });
  t.is(drawn.length, 3);
  t.true(drawn.every((s) => s.tier === 'random'));
  const byWelder = await w.sqlAs<{ welder_id: string }>(
    w.a,
    'viewer',
    'select w.welder_id from weld_public.examination_selections s join weld_public.welds w on w.id = s.weld_id',
  );
  t.deepEqual(byWelder.map((r) => r.welder_id).sort(), [...l.welders].sort());
  t.deepEqual(await w.draw(w.a, { line: 'L-100', seed: 7 }), [], 'the lot is drawn: nothing more');
});

test("344.1.3: 60 welds of 2 welders draw 3 with the lot 'line' (ceil(5% x 60)) and 4 with 'line_welder' (ceil(5% x 30) each)", async (t) => {
  const w = await rulesWorld(t);
  await line(w, w.a, 'L-1', [30, 30]);
  await line(w, w.b, 'L-1', [30, 30]);
  await w.setting(w.b, 'examination_lot', 'line_welder');
  t.is((await w.draw(w.a, { line: 'L-1', seed: 1 })).length, 3);
  t.is((await w.draw(w.b, { line: 'L-1', seed: 1 })).length, 4);
  const reasons = await w.sqlAs<{ reason: string }>(
    w.b,
    'viewer',
    'select reason from weld_public.examination_selections order by reason limit 1',
  );
  t.regex(reasons[0]!.reason, /RT 5% of welder W\d's welds on line L-1/);
});

test('341.4.1: only welds already made are sampled: 20 welded and 20 not yet (no weldedOn) by one welder -> ceil(5% x 20) = 1', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-2', [20]);
  await w.weldsOf(w.a, l.isoId, l.welders[0]!, 'PLANNED', 20, { wps_id: l.wpsId, welded_on: null });
  const drawn = await w.draw(w.a, { line: 'L-2', seed: 3 });
  t.is(drawn.length, 1);
  t.true(l.welds[0]!.includes(drawn[0]!.weld_id), 'the drawn weld is a welded one');
});

test('341.4.1: the same seed on the same welds draws the same welds in another tenant; a random seed is stored', async (t) => {
  const w = await rulesWorld(t);
  for (const fx of [w.a, w.b]) {
    const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
    const isoId = await w.iso(fx, 'ISO-1', 'L-7');
    const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
    for (let n = 1; n <= 40; n++) {
      await w.weld(fx, isoId, `N-${n}`, { id: uuid(n), welder_id: welderId, wps_id: wpsId });
    }
  }
  const inA = await w.draw(w.a, { line: 'L-7', seed: 42 });
  const inB = await w.draw(w.b, { line: 'L-7', seed: 42 });
  t.deepEqual(inA.map((s) => s.weld_id).sort(), inB.map((s) => s.weld_id).sort());
  // ceil(5% x 40) = 2: the first two by md5("42:<weld id>").
  const expected = Array.from({ length: 40 }, (_, i) => uuid(i + 1))
    .sort((x, y) => (md5(`42:${x}`) < md5(`42:${y}`) ? -1 : 1))
    .slice(0, 2);
  t.deepEqual(inA.map((s) => s.weld_id).sort(), expected.sort());

  const isoId = await w.iso(w.a, 'ISO-2', 'L-8');
  await w.weld(w.a, isoId, 'X-1');
  const drawn = await w.sqlAs<{ seed: string }>(
    w.a,
    'inspector',
    "select seed::text from weld_public.draw_examination_selection('RT', 'L-8', null, null)",
  );
  t.is(drawn.length, 1);
  t.true(Number(drawn[0]!.seed) >= 0 && Number(drawn[0]!.seed) <= Number.MAX_SAFE_INTEGER);
});

test('341.4.1(b)(1): a UT record meets an RT selection; with volumetric_interchangeable off, only RT does', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-3', [10]);
  const [drawn] = await w.draw(w.a, { line: 'L-3', seed: 5 });
  const others = l.welds[0]!.filter((id) => id !== drawn!.weld_id);
  await w.recordNdt(w.a, 'UT', 'UT-1', [[drawn!.weld_id, 'accepted']]);
  let selection = (await w.selections(w.a)).find((s) => s.weld_id === drawn!.weld_id)!;
  t.is(selection.state, 'done', 'UT meets RT');

  await w.setting(w.a, 'volumetric_interchangeable', false);
  selection = (await w.selections(w.a)).find((s) => s.weld_id === drawn!.weld_id)!;
  t.is(selection.state, 'open', 'off: UT no longer meets RT');
  await w.recordNdt(w.a, 'UT', 'UT-2', [[others[0]!, 'accepted']]);
  t.is((await w.selections(w.a)).length, 1, 'off: a UT record counts nothing toward an RT lot');
});

test('341.4.1: radiography before a draw counts toward the lot: 3 welds RT-examined, one of each welder -> the draw adds none', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-4', [14, 13, 13]);
  await w.recordNdt(
    w.a,
    'RT',
    'RT-1',
    l.welds.map((ids) => [ids[5]!, 'accepted'] as [string, 'accepted']),
  );
  const counted = await w.selections(w.a);
  t.is(counted.length, 3);
  t.true(counted.every((s) => s.tier === 'examined' && s.state === 'done' && s.seed === null));
  t.regex(
    counted[0]!.reason,
    /^examined: RT report RT-1 of 2026-02-10 counts toward RT 5% of line L-4$/,
  );
  t.deepEqual(await w.draw(w.a, { line: 'L-4', seed: 9 }), []);
});

test('341.4.1: an examination from before the lot required it counts at the draw: RT while category D (no RT), then normal service', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-5', [20], { fluid_service: 'category_d', rt_percent: 0 });
  await w.recordNdt(w.a, 'RT', 'RT-1', [[l.welds[0]![0]!, 'accepted']]);
  t.is((await w.selections(w.a)).filter((s) => s.method === 'RT').length, 0, 'no RT lot then');
  await w.dba(
    "update weld_public.isos set fluid_service = 'normal', rt_percent = 5 where id = $1",
    [l.isoId],
  );
  const drawn = await w.draw(w.a, { line: 'L-5', seed: 11 });
  t.deepEqual(tiers(drawn), { examined: 1 }, 'the examined weld is the 1 of ceil(5% x 20)');
  t.is(drawn[0]!.weld_id, l.welds[0]![0]!);
});

test('341.3.4: a weld rejected before the draw is part of the sample: the draw counts it and draws its tier 1 (2 more of its welder)', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-6', [10, 10], { fluid_service: 'category_d', rt_percent: 0 });
  const rejected = l.welds[0]![0]!;
  await w.recordNdt(w.a, 'RT', 'RT-1', [[rejected, 'rejected']]);
  await w.dba(
    "update weld_public.isos set fluid_service = 'normal', rt_percent = 5 where id = $1",
    [l.isoId],
  );
  await w.draw(w.a, { line: 'L-6', seed: 2 });
  const all = await w.selections(w.a);
  t.deepEqual(tiers(all.filter((s) => s.method === 'RT')), { examined: 1, '1': 2, random: 1 });
  const tier1 = all.filter((s) => s.tier === '1');
  t.true(tier1.every((s) => s.welder_id === l.welders[0] && s.state === 'open'));
  t.true(tier1.every((s) => s.cause_selection_id === all.find((x) => x.weld_id === rejected)!.id));
});

test('341.3.4: an RT rejection of a weld not drawn counts it and draws 2 more of its welder at once', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-9', [10, 10]);
  const record = await w.recordNdt(w.a, 'RT', 'RT-9', [[l.welds[1]![3]!, 'rejected']]);
  const all = await w.selections(w.a);
  t.deepEqual(tiers(all), { examined: 1, '1': 2 });
  t.true(
    all
      .filter((s) => s.tier === '1')
      .every((s) => s.welder_id === l.welders[1] && s.cause_ndt_record_id === record),
  );
});

test('341.3.4: progressive +2 per rejection by the same welder, +2 for each rejected of those, then every weld of that welder in the lot', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-10', [14, 14]);
  const drawn = await w.draw(w.a, { line: 'L-10', seed: 42 });
  t.is(drawn.length, 2, 'ceil(5% x 28) = 2, one per welder');
  const first = drawn.find((s) => l.welds[0]!.includes(s.weld_id))!;
  await w.recordNdt(w.a, 'RT', 'RT-1', [[first.weld_id, 'rejected']]);
  let tier1 = (await w.selections(w.a)).filter((s) => s.tier === '1');
  t.is(tier1.length, 2);
  t.true(
    tier1.every((s) => s.welder_id === l.welders[0]),
    'the same welder',
  );

  await w.recordNdt(
    w.a,
    'RT',
    'RT-2',
    tier1.map((s) => [s.weld_id, 'rejected'] as [string, 'rejected']),
  );
  const tier2 = (await w.selections(w.a)).filter((s) => s.tier === '2');
  t.is(tier2.length, 4, '2 for each of the 2 rejected');
  t.true(tier2.every((s) => s.welder_id === l.welders[0]));

  await w.recordNdt(w.a, 'RT', 'RT-3', [[tier2[0]!.weld_id, 'rejected']]);
  const all = await w.selections(w.a);
  const full = all.filter((s) => s.tier === 'full');
  t.is(full.length, 14 - 1 - 2 - 4, 'every remaining weld of W1 in the lot');
  t.true(full.every((s) => s.welder_id === l.welders[0]));
  t.is(
    all.filter((s) => s.welder_id === l.welders[1]).length,
    1,
    "W2's welds: only its random one",
  );
  tier1 = all.filter((s) => s.tier === '1');
  t.true(tier1.every((s) => s.state === 'done'));
});

test('341.3.4: a repair starts no new round: the repaired weld rejected again draws nothing more (1 + 2)', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-11', [14]);
  const [drawn] = await w.draw(w.a, { line: 'L-11', seed: 1 });
  await w.recordNdt(w.a, 'RT', 'RT-1', [[drawn!.weld_id, 'rejected']]);
  await w.repair(w.a, drawn!.weld_id);
  await w.recordNdt(w.a, 'RT', 'RT-2', [[drawn!.weld_id, 'rejected']], '2026-02-20');
  t.deepEqual(tiers(await w.selections(w.a)), { random: 1, '1': 2 });
  t.is(l.welds[0]!.length, 14);
});

test('M341.4: category M counts branch welds: 5 BW + 5 BR + 5 SW at 20% -> ceil(20% x 10) = 2 of the BW and BR, no SW', async (t) => {
  const w = await rulesWorld(t);
  const wpsId = await w.wps(w.a, 'WPS-M', 'GTAW');
  const isoId = await w.iso(w.a, 'ISO-M', 'L-M', { fluid_service: 'category_m' });
  const welderId = await w.qualifiedWelder(w.a, 'W1', wpsId);
  const common = { welder_id: welderId, wps_id: wpsId };
  const butt = await w.weldsOf(w.a, isoId, null, 'BW', 5, common);
  const branch = await w.weldsOf(w.a, isoId, null, 'BR', 5, { ...common, type: 'BR' });
  const socket = await w.weldsOf(w.a, isoId, null, 'SW', 5, { ...common, type: 'SW', size: 1 });
  const drawn = await w.draw(w.a, { line: 'L-M', seed: 13 });
  t.is(drawn.length, 2);
  t.true(drawn.every((s) => [...butt, ...branch].includes(s.weld_id)));
  t.false(drawn.some((s) => socket.includes(s.weld_id)));
  const lots = await w
    .sqlAs<{ welds: number; required: number }>(
      w.a,
      'viewer',
      "select l.welds, l.required from weld_private.lot_status('{RT}', '{L-M}', null) l",
    )
    .catch(() => null);
  t.is(lots, null, 'lot_status is private: the viewer reads the ISO examination instead');
  const [examination] = await w.sqlAs<{ welds: number; required: number }>(
    w.a,
    'viewer',
    "select e.welds, e.required from weld_public.isos i, weld_public.isos_examination(i) e where i.id = $1 and e.method = 'RT'",
    [isoId],
  );
  t.deepEqual(examination, { welds: 10, required: 2 });
});

test('341.4.3: severe cyclic asks MT or PT of every socket weld; a PT record meets MT; a branch weld not radiographed is met by MT', async (t) => {
  const w = await rulesWorld(t);
  const wpsId = await w.wps(w.a, 'WPS-S', 'GTAW');
  const isoId = await w.iso(w.a, 'ISO-S', 'L-S', { fluid_service: 'severe_cyclic' });
  const welderId = await w.qualifiedWelder(w.a, 'W1', wpsId);
  const common = { welder_id: welderId, wps_id: wpsId };
  const sockets = await w.weldsOf(w.a, isoId, null, 'SW', 3, { ...common, type: 'SW', size: 1 });
  const [branch] = await w.weldsOf(w.a, isoId, null, 'BR', 1, { ...common, type: 'BR' });
  const mt = await w.draw(w.a, { method: 'MT', line: 'L-S', seed: 1 });
  t.deepEqual(await w.weldNumbers(mt.map((s) => s.weld_id)), ['SW-01', 'SW-02', 'SW-03']);
  const rt = await w.draw(w.a, { method: 'RT', line: 'L-S', seed: 1 });
  t.deepEqual(
    rt.map((s) => s.weld_id),
    [branch],
    '100% RT of the branch weld',
  );

  await w.recordNdt(
    w.a,
    'PT',
    'PT-1',
    sockets.map((id) => [id, 'accepted'] as [string, 'accepted']),
  );
  await w.recordNdt(w.a, 'MT', 'MT-1', [[branch!, 'accepted']]);
  const states = (await w.selections(w.a)).map((s) => `${s.weld_number} ${s.method} ${s.state}`);
  t.deepEqual(states, ['BR-01 RT done', 'SW-01 MT done', 'SW-02 MT done', 'SW-03 MT done']);
});

test('341.4.1(a): visual examination of 5% in normal service, each welder represented; a visual inspection meets VT', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-12', [30, 10]);
  const drawn = await w.draw(w.a, { method: 'VT', line: 'L-12', seed: 8 });
  t.is(drawn.length, 2, 'ceil(5% x 40) = 2, one of each welder');
  await w.recordInspection(
    w.a,
    'visual',
    drawn.map((s) => s.weld_id),
  );
  t.true((await w.selections(w.a)).every((s) => s.state === 'done'));
  // A visual rejection of a weld not drawn counts it, and draws 2 more of its welder (341.3.4).
  // (Weld ids are random, so which of welder 1's welds the seed drew is too.)
  const notDrawn = l.welds[0]!.find((id) => !drawn.some((s) => s.weld_id === id))!;
  await w.recordInspection(w.a, 'visual', [notDrawn], 'rejected');
  t.deepEqual(tiers((await w.selections(w.a)).filter((s) => s.method === 'VT')), {
    random: 2,
    examined: 1,
    '1': 2,
  });
});

test('341.4.1: a DBA raising normal RT to 20% makes a 14-weld lot of one welder require ceil(2.8) = 3: the next draw adds 2', async (t) => {
  const w = await rulesWorld(t);
  await line(w, w.a, 'L-13', [14]);
  t.is((await w.draw(w.a, { line: 'L-13', seed: 1 })).length, 1);
  await w.dba(
    "update weld_public.examination_rules set percent = 20 where tenant_id = $1 and fluid_service = 'normal' and method = 'RT'",
    [w.a.tenantId],
  );
  t.is((await w.draw(w.a, { line: 'L-13', seed: 1 })).length, 2);
});

test('draw refusals: viewer WD003; bad method, scope, seed WD007 with pointers; unknown ISO and line WD001; nothing written', async (t) => {
  const w = await rulesWorld(t);
  await line(w, w.a, 'L-14', [5]);
  t.is(sqlstate(await refusal(t, w.draw(w.a, { line: 'L-14' }, 'viewer'))), 'WD003');
  const bad = [
    [{ method: 'XX', line: 'L-14' }, '/method'],
    [{ line: null, iso: null }, '/lineNumber'],
    [{ line: 'L-14', seed: -1 }, '/seed'],
  ] as const;
  for (const [args, pointer] of bad) {
    const error = await refusal(t, w.draw(w.a, args));
    t.is(error.code, 'WD007');
    t.is((JSON.parse(error.detail!) as { pointer: string }).pointer, pointer);
  }
  t.is(sqlstate(await refusal(t, w.draw(w.a, { line: 'NOPE' }))), 'WD001');
  t.is(sqlstate(await refusal(t, w.draw(w.a, { iso: uuid(999) }))), 'WD001');
  t.deepEqual(await w.selections(w.a), []);
});

test('selections are written only through the functions: no API role may insert, update or delete one', async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-15', [5]);
  await w.draw(w.a, { line: 'L-15', seed: 1 });
  for (const role of ['inspector', 'engineer', 'admin'] as const) {
    for (const sql of [
      "insert into weld_public.examination_selections (weld_id, method, tier, seed, reason) values ($1, 'RT', 'random', 1, 'x')",
      "update weld_public.examination_selections set tier = 'full' where weld_id <> $1",
      'delete from weld_public.examination_selections where weld_id <> $1',
    ]) {
      t.is(sqlstate(await refusal(t, w.sqlAs(w.a, role, sql, [l.welds[0]![0]]))), '42501');
    }
  }
});

test("tenancy: tenant B, with the same ids and line numbers, sees none of A's selections and cannot draw on A's ISO", async (t) => {
  const w = await rulesWorld(t);
  const l = await line(w, w.a, 'L-16', [10]);
  await w.draw(w.a, { line: 'L-16', seed: 4 });
  t.deepEqual(await w.selections(w.b), []);
  t.is(sqlstate(await refusal(t, w.draw(w.b, { iso: l.isoId }))), 'WD001');
  t.is(sqlstate(await refusal(t, w.draw(w.b, { line: 'L-16' }))), 'WD001');
});
