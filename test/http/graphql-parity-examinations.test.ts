// GraphQL may do what REST may, for the same role, and no more (issue F6): examinations are
// recorded and corrected only through the SQL functions that move welds, so the generated writes
// that would skip them (examinations and their link tables, a weld's status) must be absent or
// refused for every role. The shared machinery is in helpers/graphql-parity.ts.
import test from 'ava';
import {
  ROLES,
  type Role,
  COMPARED,
  type Attempt,
  type World,
  world,
  restAttempt,
  mutate,
  inputOf,
  payloadField,
  create,
  update,
  remove,
  nodeIdOf,
  compare,
  inspectorWrites,
} from '../helpers/graphql-parity.ts';

//------------------------------------------------------------------------------------------------
// Examinations: only through the functions that move welds

/** The examination tables of the tenant, row by row, to see that nothing was written. */
async function examinationSnapshot(w: World): Promise<unknown> {
  const snapshot: Record<string, unknown> = {};
  for (const table of [
    'ndt_records',
    'ndt_record_welds',
    'film_intervals',
    'film_interval_welds',
    'inspections',
    'inspection_welds',
    'welds',
    'weld_status_history',
  ]) {
    // prettier-ignore
    const { rows } = await w.owner.query(
      `select to_jsonb(x) as row from weld_public.${table} x where tenant_id = $1 order by 1`,
      [w.tenant],
    );
    snapshot[table] = rows.map((r: { row: unknown }) => r.row);
  }
  return snapshot;
}

/** The id field of a custom mutation's input (recordId, inspectionId, ...), from the schema. */
function idField(w: World, mutation: string): string {
  const fields = [...inputOf(w, mutation).keys()];
  const ids = fields.filter((f) => /Id$/.test(f) && f !== 'clientMutationId');
  if (ids.length !== 1) throw new Error(`${mutation}: which field is the id? ${fields.join(', ')}`);
  return ids[0]!;
}

test('NDT records and inspections: recorded and corrected over GraphQL exactly when over REST', async (t) => {
  const w = await world(t);
  for (const name of ['recordNdt', 'correctNdtRecord', 'recordInspection', 'correctInspection']) {
    t.true(w.schema.mutations.has(name), `the schema offers ${name}`);
  }
  const ndt = (weldId: string, report: string) => ({
    method: 'UT',
    reportNumber: report,
    examinedOn: '2026-06-01',
    welds: [{ weldId, result: 'accepted' }],
  });
  const inspection = (weldId: string) => ({
    kind: 'visual',
    inspectedOn: '2026-06-01',
    result: 'accepted',
    weldIds: [weldId],
  });
  for (const role of COMPARED) {
    const expected = inspectorWrites(role);
    const [weldR, weldG] = [await w.make.weld(), await w.make.weld()];
    compare(
      t,
      `record NDT as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'POST', '/ndt-records', ndt(weldR, `R-${role}`))),
      await mutate(w, role, 'recordNdt', { record: ndt(weldG, `G-${role}`) }),
    );
    // Whoever recorded it, the weld moved only if the record was written.
    const moved = expected === 'allowed' ? 'ACCEPTED' : 'PENDING';
    for (const weldId of [weldR, weldG]) {
      t.is((await w.rest('viewer', 'GET', `/welds/${weldId}`)).json.status, moved, role);
    }

    const record = await w.rest(
      'admin',
      'POST',
      '/ndt-records',
      ndt(await w.make.weld(), w.make.uniq('ADM')),
    );
    t.is(record.status, 201, record.text);
    compare(
      t,
      `correct NDT as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/ndt-records/${record.json.id}`, {
          reason: 'REST correction',
          notes: 'R',
        }),
      ),
      await mutate(w, role, 'correctNdtRecord', {
        [idField(w, 'correctNdtRecord')]: record.json.id,
        changes: { notes: 'G' },
        reason: 'GraphQL correction',
      }),
    );

    compare(
      t,
      `record inspection as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'POST', '/api/inspections', inspection(await w.make.weld()))),
      await mutate(w, role, 'recordInspection', { inspection: inspection(await w.make.weld()) }),
    );
    const existing = await w.rest('admin', 'POST', '/inspections', inspection(await w.make.weld()));
    t.is(existing.status, 201, existing.text);
    compare(
      t,
      `correct inspection as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/inspections/${existing.json.id}`, {
          reason: 'REST correction',
          notes: 'R',
        }),
      ),
      await mutate(w, role, 'correctInspection', {
        [idField(w, 'correctInspection')]: existing.json.id,
        changes: { notes: 'G' },
        reason: 'GraphQL correction',
      }),
    );
  }
  // The corrections that went through are the ones REST and GraphQL were allowed, with reasons.
  const { rows } = await w.owner.query<{ reason: string; n: number }>(
    `select reason, count(distinct record_id)::int as n from weld_public.examination_changes
      where tenant_id = $1 group by reason order by reason`,
    [w.tenant],
  );
  t.deepEqual(rows, [
    { reason: 'GraphQL correction', n: 4 }, // inspector and engineer, NDT and inspection
    { reason: 'REST correction', n: 4 },
  ]);
});

test('the generated writes of examinations and their links are absent or refused for every role', async (t) => {
  const w = await world(t);
  // An RT record with two welds, one on its film interval, and an inspection, made through REST.
  const [onFilm, offFilm, loose] = [await w.make.weld(), await w.make.weld(), await w.make.weld()];
  const rt = await w.rest('inspector', 'POST', '/ndt-records', {
    method: 'RT',
    reportNumber: 'RT-GEN',
    examinedOn: '2026-06-02',
    welds: [
      { weldId: onFilm, result: 'accepted' },
      { weldId: offFilm, result: 'accepted' },
    ],
    filmIntervals: [{ label: '0-1', result: 'accepted', defectCodes: [], weldIds: [onFilm] }],
  });
  t.is(rt.status, 201, rt.text);
  const recordId = rt.json.id as string;
  const intervalId = rt.json.filmIntervals[0].id as string;
  const inspection = await w.rest('inspector', 'POST', '/inspections', {
    kind: 'final',
    inspectedOn: '2026-06-02',
    result: 'accepted',
    weldIds: [onFilm],
  });
  t.is(inspection.status, 201, inspection.text);
  const inspectionId = inspection.json.id as string;

  const nodes = {
    ndtRecord: await nodeIdOf(w, 'ndtRecord', { rowId: recordId }),
    filmInterval: await nodeIdOf(w, 'filmInterval', { rowId: intervalId }),
    inspection: await nodeIdOf(w, 'inspection', { rowId: inspectionId }),
    ndtRecordWeld: await nodeIdOf(w, 'ndtRecordWeld', { ndtRecordId: recordId, weldId: offFilm }),
    filmIntervalWeld: await nodeIdOf(w, 'filmIntervalWeld', {
      filmIntervalId: intervalId,
      weldId: onFilm,
    }),
    inspectionWeld: await nodeIdOf(w, 'inspectionWeld', { inspectionId, weldId: onFilm }),
  };
  // Each generated write, with an input valid for its type: if it exists, only the database's
  // refusal may stop it (a GraphQL validation error would prove nothing).
  const attempts: Array<[string, (role: Role) => Promise<Attempt>]> = [
    ['createNdtRecord', (role) => create(w, role, 'ndtRecord', { method: 'UT', reportNumber: w.make.uniq('FORGED'), examinedOn: '2026-06-03', result: 'rejected' })], // prettier-ignore
    ['updateNdtRecord', (role) => update(w, role, 'ndtRecord', nodes.ndtRecord, { result: 'rejected' })], // prettier-ignore
    ['deleteNdtRecord', (role) => remove(w, role, 'ndtRecord', nodes.ndtRecord)],
    ['createNdtRecordWeld', (role) => create(w, role, 'ndtRecordWeld', { ndtRecordId: recordId, weldId: loose })], // prettier-ignore
    ['deleteNdtRecordWeld', (role) => remove(w, role, 'ndtRecordWeld', nodes.ndtRecordWeld)],
    ['createFilmInterval', (role) => create(w, role, 'filmInterval', { ndtRecordId: recordId, label: w.make.uniq('9'), result: 'rejected', defectCodes: ['PO'] })], // prettier-ignore
    ['updateFilmInterval', (role) => update(w, role, 'filmInterval', nodes.filmInterval, { result: 'rejected', defectCodes: ['CR'] })], // prettier-ignore
    ['deleteFilmInterval', (role) => remove(w, role, 'filmInterval', nodes.filmInterval)],
    ['createFilmIntervalWeld', (role) => create(w, role, 'filmIntervalWeld', { ndtRecordId: recordId, filmIntervalId: intervalId, weldId: offFilm })], // prettier-ignore
    ['deleteFilmIntervalWeld', (role) => remove(w, role, 'filmIntervalWeld', nodes.filmIntervalWeld)], // prettier-ignore
    ['createInspection', (role) => create(w, role, 'inspection', { kind: 'final', inspectorName: 'Forged', inspectedOn: '2026-06-03', result: 'accepted' })], // prettier-ignore
    ['updateInspection', (role) => update(w, role, 'inspection', nodes.inspection, { result: 'rejected' })], // prettier-ignore
    ['deleteInspection', (role) => remove(w, role, 'inspection', nodes.inspection)],
    ['createInspectionWeld', (role) => create(w, role, 'inspectionWeld', { inspectionId, weldId: loose })], // prettier-ignore
    ['deleteInspectionWeld', (role) => remove(w, role, 'inspectionWeld', nodes.inspectionWeld)],
  ];
  const before = await examinationSnapshot(w);
  for (const [label, attempt] of attempts) {
    for (const role of ROLES) {
      const result = await attempt(role);
      t.true(
        result.outcome === 'absent' || result.outcome === 'refused',
        `${label} as ${role} must be absent or refused: ${result.detail}`,
      );
    }
  }
  t.deepEqual(await examinationSnapshot(w), before, 'no examination row, weld or history changed');
  // And REST does not offer them either: records are corrected, never deleted.
  t.is((await w.rest('admin', 'DELETE', `/ndt-records/${recordId}`)).status, 405);
  t.is((await w.rest('admin', 'DELETE', `/api/inspections/${inspectionId}`)).status, 405);
});

//------------------------------------------------------------------------------------------------
// Welds move through recordNdt and changeWeldStatus only

test('recordNdt over GraphQL moves welds exactly like POST /ndt-records', async (t) => {
  const w = await world(t);
  const rtRecord = (report: string, failed: string, passed: string) => ({
    method: 'RT',
    reportNumber: report,
    examinedOn: '2026-07-01',
    technician: 'T. Ray',
    welds: [{ weldId: failed }, { weldId: passed }],
    filmIntervals: [
      { label: '0-1', result: 'rejected', defectCodes: ['IP'], weldIds: [failed] },
      { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [passed] },
    ],
  });
  const [failedR, passedR, failedG, passedG] = [
    await w.make.weld(),
    await w.make.weld('ACCEPTED'),
    await w.make.weld(),
    await w.make.weld('ACCEPTED'),
  ];
  // passed* were ACCEPTED already: an accepted result leaves them (no second history row).
  const viaRest = await w.rest(
    'inspector',
    'POST',
    '/ndt-records',
    rtRecord('RT-R', failedR, passedR),
  );
  t.is(viaRest.status, 201, viaRest.text);
  const viaGraphql = await mutate(w, 'inspector', 'recordNdt', {
    record: rtRecord('RT-G', failedG, passedG),
  });
  t.is(viaGraphql.outcome, 'allowed', viaGraphql.detail);
  const found = await w.rest('viewer', 'GET', `/ndt-records?weldId=${failedG}`);
  t.is(found.json.items.length, 1, 'the GraphQL record, readable over REST');
  const graphqlRecord = found.json.items[0];

  // The two records read alike, ids aside, and are the inspector's.
  interface RecordJson {
    method: string;
    result: string;
    technician: string | null;
    recordedBy: string;
    welds: Array<{ weldId: string; result: string }>;
    filmIntervals: Array<{ label: string; result: string; weldIds: string[] }>;
  }
  const comparable = (r: RecordJson, failed: string, passed: string) => ({
    method: r.method,
    result: r.result,
    technician: r.technician,
    recordedBy: r.recordedBy,
    welds: Object.fromEntries(
      r.welds.map((x) => [
        x.weldId === failed ? 'failed' : x.weldId === passed ? 'passed' : x.weldId,
        x.result,
      ]),
    ),
    intervals: r.filmIntervals.map((f) => [f.label, f.result, f.weldIds.length]),
  });
  t.deepEqual(
    comparable(graphqlRecord, failedG, passedG),
    comparable(viaRest.json, failedR, passedR),
  );
  t.is(graphqlRecord.recordedBy, w.userIds.inspector);

  // The welds moved alike: same statuses, same history, cause 'ndt' naming each one's record.
  for (const [failed, passed, recordId] of [
    [failedR, passedR, viaRest.json.id],
    [failedG, passedG, graphqlRecord.id],
  ] as const) {
    t.is((await w.rest('viewer', 'GET', `/welds/${failed}`)).json.status, 'REJECTED');
    t.is((await w.rest('viewer', 'GET', `/welds/${passed}`)).json.status, 'ACCEPTED');
    const history = (await w.rest('viewer', 'GET', `/welds/${failed}/history`)).json.items;
    t.is(history.length, 1);
    t.like(history[0], {
      fromStatus: 'PENDING',
      toStatus: 'REJECTED',
      cause: 'ndt',
      ndtRecordId: recordId,
      changedBy: w.userIds.inspector,
    });
    t.deepEqual((await w.rest('viewer', 'GET', `/welds/${passed}/history`)).json.items, []);
  }

  // A record the rules refuse is refused whole over GraphQL too, with REST's problem type.
  const voided = await w.make.weld('VOIDED');
  const pending = await w.make.weld();
  const refused = await mutate(w, 'inspector', 'recordNdt', {
    record: {
      method: 'UT',
      reportNumber: 'UT-VOID',
      examinedOn: '2026-07-02',
      welds: [
        { weldId: pending, result: 'accepted' },
        { weldId: voided, result: 'accepted' },
      ],
    },
  });
  t.is(refused.outcome, 'error');
  t.regex(refused.detail, /\/problems\/ndt-result-refused/);
  t.is((await w.rest('viewer', 'GET', `/welds/${pending}`)).json.status, 'PENDING');
  t.deepEqual((await w.rest('viewer', 'GET', `/ndt-records?weldId=${pending}`)).json.items, []);
});

test("a weld's status changes through changeWeldStatus only, never a generated updateWeld", async (t) => {
  const w = await world(t);
  const updateWeld = `update${w.schema.types.weld}`;
  t.true(
    w.schema.mutations.has(updateWeld),
    `${updateWeld} exists (engineers change other fields)`,
  );
  const patchType = inputOf(w, updateWeld).get(payloadField(w, updateWeld)) ?? '';
  const patchFields = [...(w.schema.inputs.get(patchType)?.keys() ?? [])];
  t.true(patchFields.includes('material'), `${patchType}: ${patchFields.join(', ')}`);
  for (const field of ['status', 'repairCycle', 'version', 'rowId']) {
    t.false(patchFields.includes(field), `${field} is not in ${patchType}`);
  }
  const weld = await w.make.weld();
  const node = await nodeIdOf(w, 'weld', { rowId: weld });
  for (const role of ROLES) {
    const attempt = await update(w, role, 'weld', node, { status: 'ACCEPTED' });
    t.not(attempt.outcome, 'allowed', `updateWeld with a status as ${role}: ${attempt.detail}`);
  }
  const { rows } = await w.owner.query<{ status: string; version: number }>(
    'select status, version from weld_public.welds where id = $1',
    [weld],
  );
  t.is(rows[0]!.status, 'PENDING');
  // An engineer's generated update of another field leaves the status alone.
  const material = await update(w, 'engineer', 'weld', node, { material: 'A333-6' });
  t.is(material.outcome, 'allowed', material.detail);
  // The lifecycle mutation is the way, with its history (this acceptance rests on an engineer's
  // disposition).
  const changed = await mutate(w, 'engineer', 'changeWeldStatus', {
    weldId: weld,
    newStatus: 'ACCEPTED',
    disposition: 'NCR-3 use as is',
  });
  t.is(changed.outcome, 'allowed', changed.detail);
  const read = await w.rest('viewer', 'GET', `/welds/${weld}`);
  t.like(read.json, { status: 'ACCEPTED', material: 'A333-6' });
  const history = (await w.rest('viewer', 'GET', `/welds/${weld}/history`)).json.items;
  t.is(history.length, 1);
  t.like(history[0], {
    toStatus: 'ACCEPTED',
    cause: 'user',
    changedBy: w.userIds.engineer,
    disposition: 'NCR-3 use as is',
  });
});
