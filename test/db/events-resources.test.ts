// F8, events in SQL: the transactional outbox of migration 000010. Every resource kind announces
// its creation, change and deletion once per committing transaction, with the resource as REST
// shows it at commit.
import test from 'ava';
import { sorted, setup, onlyEvent, instants } from '../helpers/outbox-world.ts';

//------------------------------------------------------------------------------------------------
// One event per change, for every resource kind

test('iso: insert -> one iso.created (camelCase, no tenantId, instants as REST), update -> iso.updated, delete -> iso.deleted as last stored', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.isos (iso_number, line_number) values ('ISO-E1', 'L-E1') returning id`,
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, { type: 'iso.created', subject: id, actor: engineer });
  t.like(event.data, {
    isoNumber: 'ISO-E1',
    lineNumber: 'L-E1',
    revision: '0',
    fluidService: 'normal',
    rtPercent: 0,
    area: null,
    version: 1,
  });
  t.like(event.data, await instants(s.owner, 'isos', id));
  t.is(event.change, null);

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.isos set area = 'North' where id = $1`, [id]),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'iso.updated',
    subject: id,
    actor: engineer,
  });
  t.like(update.data, { area: 'North', isoNumber: 'ISO-E1', version: 2 });
  t.like(update.data, await instants(s.owner, 'isos', id));

  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) => c.query(`delete from weld_public.isos where id = $1`, [id])),
  );
  const gone = onlyEvent(t, deleted.events, { type: 'iso.deleted', subject: id, actor: engineer });
  t.like(gone.data, { area: 'North', isoNumber: 'ISO-E1', version: 2 });
});

test('weld: insert -> one weld.created, update of its fields -> one weld.updated with the final state', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.welds (iso_id, weld_number, type, size, welder_id)
       values ($1, 'W-E1', 'BW', 4, $2) returning id`,
      [a.isoId, a.welderId],
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'weld.created',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(event.data, {
    isoId: a.isoId,
    weldNumber: 'W-E1',
    type: 'BW',
    size: 4,
    welderId: a.welderId,
    wpsId: null,
    weldedOn: null,
    status: 'PENDING',
    repairCycle: 0,
    version: 1,
  });

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(
        `update weld_public.welds set material = 'A106-B', welded_on = '2026-03-01' where id = $1`,
        [id],
      ),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'weld.updated',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(update.data, {
    material: 'A106-B',
    weldedOn: '2026-03-01',
    status: 'PENDING',
    version: 2,
  });
  t.is(update.change, null);
});

test('welder: insert -> one welder.created, update -> one welder.updated', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.welders (stamp, name) values ('W77', 'Ann') returning id`,
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'welder.created',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(event.data, { stamp: 'W77', name: 'Ann', active: true });
  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.welders set active = false where id = $1`, [id]),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'welder.updated',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(update.data, { stamp: 'W77', active: false });
});

test('pqr: insert -> pqr.created (numbers as numbers, arrays as arrays), update -> pqr.updated, delete -> pqr.deleted', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.pqrs (pqr_number, process, p_numbers, thickness_tested_in)
       values ('PQR-1', 'GTAW+SMAW', '{1,1}', 0.5) returning id`,
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, { type: 'pqr.created', subject: id, actor: engineer });
  t.like(event.data, {
    pqrNumber: 'PQR-1',
    process: 'GTAW+SMAW',
    pNumbers: ['1', '1'],
    thicknessTestedIn: 0.5,
    diameterTestedIn: null,
  });
  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.pqrs set document_ref = 'DOC-9' where id = $1`, [id]),
    ),
  );
  t.like(onlyEvent(t, updated.events, { type: 'pqr.updated', subject: id, actor: engineer }).data, {
    documentRef: 'DOC-9',
  });
  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) => c.query(`delete from weld_public.pqrs where id = $1`, [id])),
  );
  t.like(onlyEvent(t, deleted.events, { type: 'pqr.deleted', subject: id, actor: engineer }).data, {
    documentRef: 'DOC-9',
    pqrNumber: 'PQR-1',
  });
});

test('wps: created with its pqrIds in one transaction -> one wps.created listing them; a change of the list alone -> wps.updated with the new list', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const pqr = (n: string) =>
    s.insert('pqrs', {
      tenant_id: a.tenantId,
      pqr_number: n,
      process: 'SMAW',
      p_numbers: '{1}',
      thickness_tested_in: 0.5,
    });
  const pqrIds = [await pqr('PQR-A'), await pqr('PQR-B')];
  const created = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      const { id } = (
        await c.query<{ id: string }>(
          `insert into weld_public.wps (wps_number, process) values ('WPS-1', 'SMAW') returning id`,
        )
      ).rows[0]!;
      await c.query(
        `insert into weld_public.wps_pqrs (wps_id, pqr_id) select $1, unnest($2::uuid[])`,
        [id, pqrIds],
      );
      return id;
    }),
  );
  const id = created.result;
  const event = onlyEvent(t, created.events, { type: 'wps.created', subject: id, actor: engineer });
  t.like(event.data, {
    wpsNumber: 'WPS-1',
    state: 'draft',
    thicknessMinIn: 0,
    thicknessMaxIn: null,
  });
  t.deepEqual(event.data.pqrIds, sorted(pqrIds));

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      // A range its PQRs support (QW-451.1: T 0.5 in. -> 3/16 to 1 in.), so it may be approved.
      await c.query(
        `update weld_public.wps set state = 'approved', thickness_min_in = 0.1875, thickness_max_in = 1 where id = $1`,
        [id],
      );
    }),
  );
  t.like(onlyEvent(t, updated.events, { type: 'wps.updated', subject: id, actor: engineer }).data, {
    state: 'approved',
  });
  // Only the list changes: the WPS's row is touched (version, updatedAt), so it is announced.
  const unlinked = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`delete from weld_public.wps_pqrs where wps_id = $1 and pqr_id = $2`, [
        id,
        pqrIds[0],
      ]),
    ),
  );
  const list = onlyEvent(t, unlinked.events, { type: 'wps.updated', subject: id, actor: engineer });
  t.deepEqual(list.data.pqrIds, [pqrIds[1]]);
});

test('welder_qualification: insert -> created, update -> updated, delete -> deleted', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.welder_qualifications (welder_id, process, positions, qualified_on)
       values ($1, 'SMAW', '{6G}', '2026-01-10') returning id`,
      [a.welderId],
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'welder_qualification.created',
    subject: id,
    actor: engineer,
  });
  t.like(event.data, {
    welderId: a.welderId,
    process: 'SMAW',
    positions: ['6G'],
    qualifiedOn: '2026-01-10',
    expiresOn: null,
  });
  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(
        `update weld_public.welder_qualifications set expires_on = '2028-01-10' where id = $1`,
        [id],
      ),
    ),
  );
  t.like(
    onlyEvent(t, updated.events, {
      type: 'welder_qualification.updated',
      subject: id,
      actor: engineer,
    }).data,
    { expiresOn: '2028-01-10' },
  );
  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`delete from weld_public.welder_qualifications where id = $1`, [id]),
    ),
  );
  t.like(
    onlyEvent(t, deleted.events, {
      type: 'welder_qualification.deleted',
      subject: id,
      actor: engineer,
    }).data,
    { expiresOn: '2028-01-10', welderId: a.welderId },
  );
});

test('ndt_record: record_ndt -> one ndt_record.created with its welds and results, filmIntervals []; correct_ndt_record -> one ndt_record.updated', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const inspector = a.users.inspector;
  const weldId = await a.weld();
  const created = await s.eventsOf(a, () => s.recordNdt(a, 'UT', 'UT-1', [[weldId, 'accepted']]));
  const id = created.result.id;
  const records = created.events.filter((e) => e.type.startsWith('ndt_record.'));
  const event = onlyEvent(t, records, {
    type: 'ndt_record.created',
    subject: id,
    actor: inspector,
  });
  t.like(event.data, {
    method: 'UT',
    reportNumber: 'UT-1',
    examinedOn: '2026-02-10',
    result: 'accepted',
    recordedBy: inspector,
  });
  t.deepEqual(event.data.welds, [
    { weldId, result: 'accepted', defectLengthIn: null, acceptanceHeld: null },
  ]);
  t.deepEqual(event.data.filmIntervals, []);

  const corrected = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_ndt_record($1, $2, 'typo in the notes')`, [
        id,
        JSON.stringify({ notes: 'second pass' }),
      ]),
    ),
  );
  const update = onlyEvent(t, corrected.events, {
    type: 'ndt_record.updated',
    subject: id,
    actor: inspector,
  });
  t.like(update.data, { notes: 'second pass', version: 2 });
  t.deepEqual(update.data.welds, [
    { weldId, result: 'accepted', defectLengthIn: null, acceptanceHeld: null },
  ]);
});

test('ndt_record of RT with film: data.welds take their results from the film, data.filmIntervals list the intervals with their welds', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const [w1, w2] = [await a.weld(), await a.weld()];
  const { result, events } = await s.eventsOf(a, () =>
    s.one(a, 'inspector', 'select id from weld_public.record_ndt($1)', [
      JSON.stringify({
        method: 'RT',
        reportNumber: 'RT-F1',
        examinedOn: '2026-02-10',
        welds: [{ weldId: w1 }, { weldId: w2 }],
        filmIntervals: [
          { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [w1] },
          { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [w1, w2] },
        ],
      }),
    ]),
  );
  // (A rejection by RT may draw progressive selections too: only the record matters here.)
  const record = onlyEvent(
    t,
    events.filter((e) => e.type.startsWith('ndt_record.')),
    { type: 'ndt_record.created', subject: result.id, actor: a.users.inspector },
  );
  t.deepEqual(
    record.data.welds,
    sorted([w1, w2]).map((weldId) => ({
      weldId,
      result: weldId === w1 ? 'rejected' : 'accepted',
      defectLengthIn: null,
      acceptanceHeld: null,
    })),
  );
  const intervals = record.data.filmIntervals as Array<Record<string, unknown>>;
  t.deepEqual(
    intervals.map(({ id: _id, ...rest }) => rest),
    [
      {
        label: '0-1',
        result: 'rejected',
        defectCodes: ['PO'],
        defectLengthIn: null,
        weldIds: [w1],
      },
      {
        label: '1-2',
        result: 'accepted',
        defectCodes: [],
        defectLengthIn: null,
        weldIds: sorted([w1, w2]),
      },
    ],
  );
  const ids = await s.owner.query<{ id: string }>(
    `select id from weld_public.film_intervals where ndt_record_id = $1 order by label`,
    [result.id],
  );
  t.deepEqual(
    intervals.map((i) => i.id),
    ids.rows.map((r) => r.id),
  );
});

test('inspection: record_inspection -> one inspection.created with weldIds; correct_inspection -> one inspection.updated', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const inspector = a.users.inspector;
  const welds = [await a.weld(), await a.weld()];
  const created = await s.eventsOf(a, () =>
    s.one(a, 'inspector', 'select id from weld_public.record_inspection($1)', [
      JSON.stringify({
        kind: 'fit-up',
        inspectedOn: '2026-02-11',
        result: 'accepted',
        weldIds: welds,
      }),
    ]),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'inspection.created',
    subject: id,
    actor: inspector,
  });
  t.like(event.data, {
    kind: 'fit-up',
    inspectedOn: '2026-02-11',
    result: 'accepted',
    inspectorName: 'inspector of alpha',
  });
  t.deepEqual(event.data.weldIds, sorted(welds));

  const corrected = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_inspection($1, $2, 'one weld was not fitted')`, [
        id,
        JSON.stringify({ weldIds: [welds[1]] }),
      ]),
    ),
  );
  const update = onlyEvent(t, corrected.events, {
    type: 'inspection.updated',
    subject: id,
    actor: inspector,
  });
  t.deepEqual(update.data.weldIds, [welds[1]]);
});

test('test_package: created with isoIds and weldIds -> one test_package.created listing them; update -> updated; delete -> deleted without the lists', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const welds = [await a.weld(), await a.weld()];
  const created = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      const { id } = (
        await c.query<{ id: string }>(
          `insert into weld_public.test_packages (package_number, test_medium)
           values ('TP-1', 'hydro') returning id`,
        )
      ).rows[0]!;
      await c.query(
        `insert into weld_public.test_package_isos (test_package_id, iso_id) values ($1, $2)`,
        [id, a.isoId],
      );
      await c.query(
        `insert into weld_public.test_package_welds (test_package_id, weld_id)
         select $1, unnest($2::uuid[])`,
        [id, welds],
      );
      return id;
    }),
  );
  const id = created.result;
  const event = onlyEvent(t, created.events, {
    type: 'test_package.created',
    subject: id,
    actor: engineer,
  });
  t.like(event.data, { packageNumber: 'TP-1', testMedium: 'hydro', state: 'open' });
  t.deepEqual(event.data.isoIds, [a.isoId]);
  t.deepEqual(event.data.weldIds, sorted(welds));

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.test_packages set test_pressure_psig = 150.5 where id = $1`, [
        id,
      ]),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'test_package.updated',
    subject: id,
    actor: engineer,
  });
  t.like(update.data, { testPressurePsig: 150.5, state: 'open' });
  t.is(update.change, null, 'no state change');

  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`delete from weld_public.test_packages where id = $1`, [id]),
    ),
  );
  const gone = onlyEvent(t, deleted.events, {
    type: 'test_package.deleted',
    subject: id,
    actor: engineer,
  });
  t.like(gone.data, { testPressurePsig: 150.5, packageNumber: 'TP-1' });
  t.false('isoIds' in gone.data || 'weldIds' in gone.data, 'no membership lists');
});

test('a change made outside a request (the owner, a DBA) has no actor', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const { result: id, events } = await s.eventsOf(a, () =>
    s.insert('isos', { tenant_id: a.tenantId, iso_number: 'ISO-DBA', line_number: 'L-DBA' }),
  );
  onlyEvent(t, events, { type: 'iso.created', subject: id, actor: null });
});
