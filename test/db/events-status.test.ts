// F8, events in SQL: weld status changes, test package releases and examination selections have
// events of their own.
import test from 'ava';
import { sorted, ISO_INSTANT, setup, type World, onlyEvent } from '../helpers/outbox-world.ts';

//------------------------------------------------------------------------------------------------
// Status changes, releases and examination selections

test('weld.status_changed: change_weld_status -> change {from, to, reason, cause user}; no weld.updated besides', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const weldId = await a.weld();
  const { events } = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.change_weld_status($1, 'REJECTED', 'porosity')`, [weldId]),
    ),
  );
  const event = onlyEvent(t, events, {
    type: 'weld.status_changed',
    subject: weldId,
    actor: a.users.inspector,
  });
  t.like(event.data, { status: 'REJECTED', version: 2 });
  t.deepEqual(event.change, {
    from: 'PENDING',
    to: 'REJECTED',
    reason: 'porosity',
    cause: 'user',
    ndtRecordId: null,
  });
});

test('an NDT record rejecting one weld and accepting another: ndt_record.created and one weld.status_changed per weld, cause ndt with the record id', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const [bad, good] = [await a.weld(), await a.weld()];
  const { result, events } = await s.eventsOf(a, () =>
    s.recordNdt(a, 'UT', 'UT-7', [
      [bad, 'rejected'],
      [good, 'accepted'],
    ]),
  );
  const byType = (type: string) => events.filter((e) => e.type === type);
  // The fixture's ISO requires 5% RT, which UT meets: both welds are counted toward the lot
  // (an examination_selection each, opened as done); the rejected one's welder has no other
  // weld on the line to draw for tier 1.
  t.deepEqual(
    sorted(events.map((e) => e.type)),
    ['examination_selection.opened', 'examination_selection.opened', 'ndt_record.created',
     'weld.status_changed', 'weld.status_changed'], // prettier-ignore
    JSON.stringify(events.map((e) => e.type)),
  );
  t.true(
    byType('examination_selection.opened').every(
      (e) => e.data.tier === 'examined' && e.data.state === 'done',
    ),
  );
  t.true(events.every((e) => e.actor_id === a.users.inspector));
  const record = byType('ndt_record.created')[0]!;
  t.is(record.subject_id, result.id);
  t.like(record.data, { result: 'rejected' });
  t.deepEqual(
    record.data.welds,
    sorted([bad, good]).map((weldId) => ({
      weldId,
      result: weldId === bad ? 'rejected' : 'accepted',
      defectLengthIn: null,
      acceptanceHeld: null,
    })),
  );
  const changes = Object.fromEntries(byType('weld.status_changed').map((e) => [e.subject_id, e]));
  for (const [weldId, to] of [
    [bad, 'REJECTED'],
    [good, 'ACCEPTED'],
  ] as const) {
    t.like(changes[weldId]!.change, {
      from: 'PENDING',
      to,
      cause: 'ndt',
      ndtRecordId: result.id,
    });
    t.is(changes[weldId]!.data.status, to);
  }
});

/**
 * The fixture's ISO made ready for release: an approved WPS backed by a PQR, a qualified welder,
 * three complete welds, a package of the ISO; its test then draws for RT (1 selection) and
 * examines the welds (RT, and visually for the ISO's 5% VT).
 */
async function readyWorld(s: World) {
  const { a } = s;
  const wpsId = await s.insert('wps', {
    tenant_id: a.tenantId,
    wps_number: 'WPS-R',
    process: 'SMAW',
    state: 'approved',
    p_numbers: '{1}',
    thickness_min_in: 0.1875,
    thickness_max_in: 1,
  });
  const pqrId = await s.insert('pqrs', {
    tenant_id: a.tenantId,
    pqr_number: 'PQR-R',
    process: 'SMAW',
    p_numbers: '{1}',
    thickness_tested_in: 0.5,
  });
  await s.owner.query(
    'insert into weld_public.wps_pqrs (tenant_id, wps_id, pqr_id) values ($1, $2, $3)',
    [a.tenantId, wpsId, pqrId],
  );
  await s.insert('welder_qualifications', {
    tenant_id: a.tenantId,
    welder_id: a.welderId,
    process: 'SMAW',
    qualified_on: '2026-01-10',
    coupon_diameter_in: 3,
    coupon_thickness_in: 0.5,
  });
  const welds: string[] = [];
  for (const n of ['R-1', 'R-2', 'R-3']) {
    welds.push(
      await s.insert('welds', {
        tenant_id: a.tenantId,
        iso_id: a.isoId,
        weld_number: n,
        type: 'BW',
        size: 4,
        welder_id: a.welderId,
        wps_id: wpsId,
        wall_thickness: 0.25,
        welded_on: '2026-02-01',
        base_metal_1_p_number: '1',
        base_metal_2_p_number: '1',
        preheat_f: 50,
      }),
    );
  }
  const packageId = await s.insert('test_packages', {
    tenant_id: a.tenantId,
    package_number: 'TP-R',
    test_medium: 'hydro',
  });
  await s.owner.query(
    `insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) values ($1, $2, $3)`,
    [a.tenantId, packageId, a.isoId],
  );
  const draw = () =>
    s.as(
      a,
      'inspector',
      async (c) =>
        (
          await c.query<{ id: string; weld_id: string }>(
            `select id, weld_id from weld_public.draw_examination_selection('RT', null, $1, 1)`,
            [a.isoId],
          )
        ).rows,
    );
  return { welds, packageId, draw };
}

test('test_package.released: a ready package moved open -> released by the engineer, change {from open, to released}; released -> tested is test_package.updated with its change', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const w = await readyWorld(s);
  await w.draw();
  await s.recordNdt(
    a,
    'RT',
    'RT-ALL',
    w.welds.map((id) => [id, 'accepted']),
  );
  await s.as(a, 'inspector', (c) =>
    c.query('select weld_public.record_inspection($1)', [
      JSON.stringify({
        kind: 'visual',
        inspectedOn: '2026-02-10',
        result: 'accepted',
        weldIds: w.welds,
      }),
    ]),
  );
  const move = (state: string) =>
    s.eventsOf(a, () =>
      s.as(a, 'engineer', (c) =>
        c.query(`update weld_public.test_packages set state = $2 where id = $1`, [
          w.packageId,
          state,
        ]),
      ),
    );
  const released = onlyEvent(t, (await move('released')).events, {
    type: 'test_package.released',
    subject: w.packageId,
    actor: a.users.engineer,
  });
  t.deepEqual(released.change, { from: 'open', to: 'released' });
  t.like(released.data, { state: 'released', packageNumber: 'TP-R' });
  t.deepEqual(released.data.isoIds, [a.isoId]);

  const tested = onlyEvent(t, (await move('tested')).events, {
    type: 'test_package.updated',
    subject: w.packageId,
    actor: a.users.engineer,
  });
  t.deepEqual(tested.change, { from: 'released', to: 'tested' });
});

test('examination_selection: opened when drawn, closed when an NDT record of its method covers the weld, reopened when a correction takes the weld off', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const inspector = a.users.inspector;
  const w = await readyWorld(s);
  const drawn = await s.eventsOf(a, w.draw);
  t.is(drawn.result.length, 1, 'ceil(5% x 3) = 1');
  const selection = drawn.result[0]!;
  const opened = onlyEvent(t, drawn.events, {
    type: 'examination_selection.opened',
    subject: selection.id,
    actor: inspector,
  });
  t.like(opened.data, {
    weldId: selection.weld_id,
    isoId: a.isoId,
    welderId: a.welderId,
    lineNumber: 'alpha-LINE-1',
    method: 'RT',
    tier: 'random',
    seed: 1,
    state: 'open',
    ndtRecordId: null,
    selectedBy: inspector,
  });
  t.regex(String(opened.data.selectedAt), ISO_INSTANT);

  // With RT and UT not interchangeable (a tenant setting), a UT record does not close an RT
  // selection (interchangeable, the default, it would: test/db/rules-examination.test.ts).
  await s.owner.query(
    'update weld_public.tenant_settings set volumetric_interchangeable = false where tenant_id = $1',
    [a.tenantId],
  );
  const ut = await s.eventsOf(a, () =>
    s.recordNdt(a, 'UT', 'UT-1', [[selection.weld_id, 'accepted']]),
  );
  t.false(ut.events.some((e) => e.type.startsWith('examination_selection.')));
  // Nor does it accept the weld: its RT is owed (the record says so).
  t.false(ut.events.some((e) => e.type === 'weld.status_changed'));
  t.regex(
    String(
      (
        ut.events.find((e) => e.type === 'ndt_record.created')!.data.welds as Array<{
          acceptanceHeld: string | null;
        }>
      )[0]!.acceptanceHeld,
    ),
    /^it is selected for RT \(random\)/,
  );

  const rt = await s.eventsOf(a, () =>
    s.recordNdt(
      a,
      'RT',
      'RT-1',
      w.welds.map((id) => [id, 'accepted']),
    ),
  );
  const closed = rt.events.filter((e) => e.type === 'examination_selection.closed');
  t.deepEqual(
    closed.map((e) => [e.type, e.subject_id, e.actor_id]),
    [['examination_selection.closed', selection.id, inspector]],
  );
  t.like(closed[0]!.data, { state: 'done', ndtRecordId: rt.result.id });
  t.deepEqual(
    sorted(rt.events.map((e) => e.type)),
    ['examination_selection.closed', 'examination_selection.opened', 'examination_selection.opened',
     'ndt_record.created', 'weld.status_changed', 'weld.status_changed', 'weld.status_changed'], // prettier-ignore
    'this record accepts the three (the UT acceptance of the selected one was held), and counts the two others toward the lot (opened as done)',
  );

  const others = w.welds.filter((id) => id !== selection.weld_id);
  const corrected = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_ndt_record($1, $2, 'wrong weld on the report')`, [
        rt.result.id,
        JSON.stringify({ welds: others.map((weldId) => ({ weldId, result: 'accepted' })) }),
      ]),
    ),
  );
  t.deepEqual(
    sorted(corrected.events.map((e) => `${e.type} ${e.subject_id}`)),
    sorted([
      `examination_selection.reopened ${selection.id}`,
      `ndt_record.updated ${rt.result.id}`,
    ]),
  );
  const reopened = corrected.events.find((e) => e.type === 'examination_selection.reopened')!;
  t.like(reopened.data, { state: 'open', ndtRecordId: null });
});
