// Recording examinations through their functions (record_ndt): NDT results derived from the film
// and checked against it, every invalid input a WD007 that points at the value, and results that
// move welds through the tenant's transition rules, all of a record's welds or none.
import test from 'ava';
import { withContext } from '../../db/database.ts';
import { setup, sqlstate, detailOf, rt, film } from '../helpers/examination-world.ts';

//------------------------------------------------------------------------------------------------
// Recording

test('an RT record with one rejected interval rejects exactly the welds it shows and accepts the others', async (t) => {
  const { owner, a, recordNdt, statuses, history } = await setup(t);
  const [w1, w2, w3] = [await a.weld(), await a.weld(), await a.weld()];
  const record = await recordNdt(
    a,
    'inspector',
    rt(
      'RT-17',
      [{ weldId: w1 }, { weldId: w2 }, { weldId: w3, result: null }],
      [
        film('0-1', 'accepted', [w1]),
        film('1-2', 'rejected', [w2]),
        film('2-3', 'accepted', [w2, w3]),
      ],
    ),
  );
  t.like(record, { method: 'RT', result: 'rejected', version: 1, recorded_by: a.users.inspector });
  t.deepEqual(await statuses(w1, w2, w3), ['ACCEPTED', 'REJECTED', 'ACCEPTED']);

  // Each move is the record's: cause 'ndt', its id, a reason naming the report, the inspector.
  const byWeld = Object.fromEntries((await history(a)).map((h) => [h.weld_id, h]));
  t.is(Object.keys(byWeld).length, 3);
  t.deepEqual(byWeld[w2], {
    weld_id: w2,
    move: 'PENDING>REJECTED',
    cause: 'ndt',
    ndt_record_id: record.id,
    reason: 'RT report RT-17: rejected',
    changed_by: a.users.inspector,
  });
  t.like(byWeld[w1], { move: 'PENDING>ACCEPTED', cause: 'ndt', ndt_record_id: record.id });
  t.like(byWeld[w3], { move: 'PENDING>ACCEPTED', cause: 'ndt', ndt_record_id: record.id });

  // The omitted results stay null (derived from the film); the film is as given.
  const stored = await owner.query(
    `select (select array_agg(result) from weld_public.ndt_record_welds where ndt_record_id = $1) as results,
            (select array_agg(label || ':' || result || ':' || array_to_string(defect_codes, ',') order by label)
               from weld_public.film_intervals where ndt_record_id = $1) as film,
            (select count(*)::int from weld_public.film_interval_welds where ndt_record_id = $1) as mapped`,
    [record.id],
  );
  t.deepEqual(stored.rows[0], {
    results: [null, null, null],
    film: ['0-1:accepted:', '1-2:rejected:PO', '2-3:accepted:'],
    mapped: 4,
  });
});

test('a given result is kept and must agree with the film; an omitted one needs film (RT only)', async (t) => {
  const { a, recordNdt, statuses, count } = await setup(t);
  const [w1, w2, w3] = [await a.weld(), await a.weld(), await a.weld()];
  const refusals: Array<[unknown, string, RegExp]> = [
    [
      rt(
        'RT-1',
        [{ weldId: w1 }, { weldId: w2, result: 'accepted' }],
        [film('0-1', 'accepted', [w1]), film('1-2', 'rejected', [w2])],
      ),
      '/welds/1/result',
      /^weld 2 is given accepted, but film interval 1-2 shows it rejected$/,
    ],
    [
      rt('RT-1', [{ weldId: w1, result: 'rejected' }], [film('0-1', 'accepted', [w1])]),
      '/welds/0/result',
      /^weld 1 is given rejected, but every film interval that shows it is accepted$/,
    ],
    [
      rt('RT-1', [{ weldId: w1 }, { weldId: w2 }], [film('0-1', 'accepted', [w1])]),
      '/welds/1/result',
      /^weld 2 has no result and no film interval shows it$/,
    ],
    [
      rt('RT-1', [{ weldId: w1 }], []),
      '/welds/0/result',
      /^weld 1 has no result and no film interval shows it$/,
    ],
    [
      { method: 'UT', reportNumber: 'UT-1', examinedOn: '2026-11-02', welds: [{ weldId: w1 }] },
      '/welds/0/result',
      /^weld 1 has no result; only RT results can be derived/,
    ],
  ];
  for (const [record, pointer, message] of refusals) {
    const error = await t.throwsAsync(recordNdt(a, 'inspector', record));
    t.is(sqlstate(error), 'WD007', pointer);
    t.deepEqual(detailOf(error), { pointer });
    t.regex(error.message, message);
  }
  t.is(await count('ndt_records', a), 0, 'nothing was written');

  // A given result without film, and one the film agrees with, are fine; the record is rejected.
  const ok = await recordNdt(
    a,
    'inspector',
    rt(
      'RT-2',
      [{ weldId: w1, result: 'accepted' }, { weldId: w2, result: 'rejected' }, { weldId: w3 }],
      [film('0-1', 'accepted', [w1, w3])],
    ),
  );
  t.is(ok.result, 'rejected');
  t.deepEqual(await statuses(w1, w2, w3), ['ACCEPTED', 'REJECTED', 'ACCEPTED']);
});

test('invalid input of every kind is WD007 with a JSON Pointer to the value, and writes nothing', async (t) => {
  const { a, b, recordNdt, count } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const theirs = await b.weld();
  const ut = (over: Record<string, unknown>) => ({
    method: 'UT',
    reportNumber: 'UT-9',
    examinedOn: '2026-11-02',
    welds: [{ weldId: w1, result: 'accepted' }],
    ...over,
  });
  const cases: Array<[string, unknown, string]> = [
    ['not an object', [], ''],
    ['a JSON string', 'RT', ''],
    ['an unknown key', ut({ recordedBy: a.users.admin }), '/recordedBy'],
    ['a key with / and ~ in it', ut({ 'a/b~c': 1 }), '/a~1b~0c'],
    ['a missing key', { method: 'UT', reportNumber: 'UT-9', welds: [] }, '/examinedOn'],
    ['an unknown method', ut({ method: 'XR' }), '/method'],
    ['a method of the wrong type', ut({ method: 1 }), '/method'],
    ['a report number that is a number', ut({ reportNumber: 17 }), '/reportNumber'],
    ['an empty report number', ut({ reportNumber: '' }), '/reportNumber'],
    ['a report number too long', ut({ reportNumber: 'R'.repeat(101) }), '/reportNumber'],
    ['a date that does not exist', ut({ examinedOn: '2026-02-30' }), '/examinedOn'],
    ['a date in another format', ut({ examinedOn: '02/11/2026' }), '/examinedOn'],
    ['a date with a time', ut({ examinedOn: '2026-11-02T10:00:00Z' }), '/examinedOn'],
    ['a technician that is an object', ut({ technician: { name: 'x' } }), '/technician'],
    ['notes that are a list', ut({ notes: ['x'] }), '/notes'],
    ['no welds', ut({ welds: [] }), '/welds'],
    ['welds that are not a list', ut({ welds: { weldId: w1 } }), '/welds'],
    ['welds null', ut({ welds: null }), '/welds'],
    ['a weld that is not an object', ut({ welds: [{ weldId: w1, result: 'accepted' }, w2] }), '/welds/1'],
    ['a weld without its id', ut({ welds: [{ result: 'accepted' }] }), '/welds/0/weldId'],
    ['a weld id that is no UUID', ut({ welds: [{ weldId: 'W-1', result: 'accepted' }] }), '/welds/0/weldId'],
    ['a weld id that is a number', ut({ welds: [{ weldId: 7, result: 'accepted' }] }), '/welds/0/weldId'],
    ['a weld result unknown', ut({ welds: [{ weldId: w1, result: 'ok' }] }), '/welds/0/result'],
    ['a weld with an unknown key', ut({ welds: [{ weldId: w1, result: 'accepted', x: 1 }] }), '/welds/0/x'],
    [
      'a weld listed twice',
      ut({ welds: [{ weldId: w1, result: 'accepted' }, { weldId: w1.toUpperCase(), result: 'accepted' }] }),
      '/welds/1/weldId',
    ],
    ['a weld that does not exist', ut({ welds: [{ weldId: w1, result: 'accepted' }, { weldId: '00000000-0000-4000-8000-000000000001', result: 'accepted' }] }), '/welds/1/weldId'],
    ["another tenant's weld", ut({ welds: [{ weldId: w1, result: 'accepted' }, { weldId: theirs, result: 'accepted' }] }), '/welds/1/weldId'],
    ['film on a UT record', ut({ filmIntervals: [film('0-1', 'accepted', [w1])] }), '/filmIntervals'],
    ['film that is not a list', rt('RT-9', [{ weldId: w1 }], 'film' as never), '/filmIntervals'],
    ['a film interval that is not an object', rt('RT-9', [{ weldId: w1 }], [null]), '/filmIntervals/0'],
    ['a film interval without weldIds', rt('RT-9', [{ weldId: w1 }], [{ label: '0-1', result: 'accepted', defectCodes: [] }]), '/filmIntervals/0/weldIds'],
    ['a film label that is no pair of markers', rt('RT-9', [{ weldId: w1 }], [film('0', 'accepted', [w1])]), '/filmIntervals/0/label'],
    ['a film label listed twice', rt('RT-9', [{ weldId: w1 }], [film('0-1', 'accepted', [w1]), film('0-1', 'accepted', [w1])]), '/filmIntervals/1/label'],
    ['a film result unknown', rt('RT-9', [{ weldId: w1 }], [film('0-1', 'fine', [w1])]), '/filmIntervals/0/result'],
    ['a rejected interval without a defect', rt('RT-9', [{ weldId: w1 }], [{ label: '0-1', result: 'rejected', defectCodes: [], weldIds: [w1] }]), '/filmIntervals/0/defectCodes'],
    ['a defect code that is a number', rt('RT-9', [{ weldId: w1 }], [film('0-1', 'rejected', [w1], [5 as never])]), '/filmIntervals/0/defectCodes/0'],
    ['an interval of no weld', rt('RT-9', [{ weldId: w1 }], [film('0-1', 'accepted', [])]), '/filmIntervals/0/weldIds'],
    ['an interval showing a weld twice', rt('RT-9', [{ weldId: w1 }], [film('0-1', 'accepted', [w1, w1])]), '/filmIntervals/0/weldIds/1'],
    ['an interval showing a weld not in the record', rt('RT-9', [{ weldId: w1 }], [film('0-1', 'accepted', [w1, w2])]), '/filmIntervals/0/weldIds/1'],
  ]; // prettier-ignore
  for (const [label, record, pointer] of cases) {
    const error = await t.throwsAsync(recordNdt(a, 'inspector', record), undefined, label);
    t.is(sqlstate(error), 'WD007', `${label}: ${error?.message}`);
    t.deepEqual(detailOf(error), { pointer }, label);
  }
  t.is(await count('ndt_records', a), 0);
  t.is(await count('weld_status_history', a), 0);

  // A duplicate report number (per method) stays the unique violation.
  await recordNdt(a, 'inspector', ut({}));
  const duplicate = await t.throwsAsync(recordNdt(a, 'inspector', ut({})));
  t.is(sqlstate(duplicate), '23505');
});

test('a record covering a VOIDED weld is refused whole (WD006) and nothing is written', async (t) => {
  const { a, recordNdt, statuses, history, count } = await setup(t);
  const pending = await a.weld('PENDING', 'P-1');
  const voided = await a.weld('VOIDED', 'V-1');
  const repair = await a.weld('REPAIR', 'R-1');
  const error = await t.throwsAsync(
    recordNdt(
      a,
      'inspector',
      rt(
        'RT-3',
        [{ weldId: pending }, { weldId: voided }, { weldId: repair }],
        [film('0-1', 'accepted', [pending]), film('1-2', 'rejected', [voided, repair])],
      ),
    ),
  );
  t.is(sqlstate(error), 'WD006');
  t.is(error.message, 'the NDT results cannot be applied to 2 welds');
  t.deepEqual(detailOf(error), {
    welds: [
      { weldId: voided, weldNumber: 'V-1', status: 'VOIDED', result: 'rejected', allowed: [] },
      {
        weldId: repair,
        weldNumber: 'R-1',
        status: 'REPAIR',
        result: 'rejected',
        allowed: ['PENDING', 'VOIDED'],
      },
    ],
  });
  t.deepEqual(await statuses(pending, voided, repair), ['PENDING', 'VOIDED', 'REPAIR']);
  t.deepEqual(await history(a), []);
  for (const table of [
    'ndt_records',
    'ndt_record_welds',
    'film_intervals',
    'film_interval_welds',
  ]) {
    t.is(await count(table, a), 0, table);
  }
});

test('welds already where their result puts them stay; a REJECTED weld cannot be accepted (WD006)', async (t) => {
  const { a, recordNdt, statuses, history } = await setup(t);
  const rejected = await a.weld('REJECTED', 'J-1');
  const accepted = await a.weld('ACCEPTED', 'A-1');
  const ut = (reportNumber: string, welds: unknown[]) => ({
    method: 'UT',
    reportNumber,
    examinedOn: '2026-11-03',
    welds,
  });

  const refused = await t.throwsAsync(
    recordNdt(a, 'inspector', ut('UT-1', [{ weldId: rejected, result: 'accepted' }])),
  );
  t.is(sqlstate(refused), 'WD006');
  t.is(refused.message, 'the NDT results cannot be applied to 1 weld');
  t.deepEqual(detailOf(refused), {
    welds: [
      {
        weldId: rejected,
        weldNumber: 'J-1',
        status: 'REJECTED',
        result: 'accepted',
        allowed: ['REPAIR', 'VOIDED'],
      },
    ],
  });

  // Rejected again, accepted again: nothing to move, no history.
  await recordNdt(
    a,
    'inspector',
    ut('UT-2', [
      { weldId: rejected, result: 'rejected' },
      { weldId: accepted, result: 'accepted' },
    ]),
  );
  t.deepEqual(await history(a), []);

  // An ACCEPTED weld a later examination rejects: the rule wants a reason, the report gives one.
  const record = await recordNdt(
    a,
    'inspector',
    ut('UT-3', [{ weldId: accepted, result: 'rejected' }]),
  );
  t.deepEqual(await statuses(rejected, accepted), ['REJECTED', 'REJECTED']);
  t.like((await history(a))[0], {
    move: 'ACCEPTED>REJECTED',
    ndt_record_id: record.id,
    reason: 'UT report UT-3: rejected',
  });
});

test("the tenant's rules and the caller's role decide: a rule raised to engineer refuses the inspector's record", async (t) => {
  const { owner, a, recordNdt, statuses } = await setup(t);
  await owner.query(
    `update weld_public.weld_transition_rules set least_role = 'engineer'
      where tenant_id = $1 and from_status = 'PENDING' and to_status = 'ACCEPTED'`,
    [a.tenantId],
  );
  const weldId = await a.weld('PENDING', 'E-1');
  const record = rt('RT-4', [{ weldId }], [film('0-1', 'accepted', [weldId])]);
  const error = await t.throwsAsync(recordNdt(a, 'inspector', record));
  t.is(sqlstate(error), 'WD006');
  t.deepEqual(detailOf(error), {
    welds: [
      {
        weldId,
        weldNumber: 'E-1',
        status: 'PENDING',
        result: 'accepted',
        allowed: ['ACCEPTED', 'REJECTED', 'VOIDED'],
      },
    ],
  });
  t.is((await recordNdt(a, 'engineer', record)).result, 'accepted');
  t.deepEqual(await statuses(weldId), ['ACCEPTED']);
});

test('with ndt_results_drive_status off, results are recorded and no weld moves', async (t) => {
  const { owner, a, b, as, recordNdt, statuses, history } = await setup(t);
  const settings = await as(a, 'viewer', (c) =>
    c.query(`select ndt_results_drive_status from weld_public.tenant_settings`),
  );
  t.deepEqual(settings.rows, [{ ndt_results_drive_status: true }], 'one row, on by default');
  // A DBA switches it off, for tenant A only; no API role may.
  await t.throwsAsync(
    as(a, 'admin', (c) =>
      c.query(`update weld_public.tenant_settings set ndt_results_drive_status = false`),
    ),
    { code: '42501' },
  );
  await owner.query(
    `update weld_public.tenant_settings set ndt_results_drive_status = false where tenant_id = $1`,
    [a.tenantId],
  );

  const pending = await a.weld('PENDING');
  const voided = await a.weld('VOIDED');
  const record = await recordNdt(
    a,
    'inspector',
    rt(
      'RT-5',
      [{ weldId: pending }, { weldId: voided }],
      [film('0-1', 'rejected', [pending, voided])],
    ),
  );
  t.is(record.result, 'rejected');
  t.deepEqual(await statuses(pending, voided), ['PENDING', 'VOIDED']);
  t.deepEqual(await history(a), []);

  // Tenant B still moves.
  const theirs = await b.weld('PENDING');
  await recordNdt(
    b,
    'inspector',
    rt('RT-5', [{ weldId: theirs }], [film('0-1', 'rejected', [theirs])]),
  );
  t.deepEqual(await statuses(theirs), ['REJECTED']);
});

test('viewers are refused (WD003); anonymous callers may not call the functions at all', async (t) => {
  const { pool, a, as, recordNdt, correctNdt, count } = await setup(t);
  const weldId = await a.weld();
  const record = {
    method: 'VT',
    reportNumber: 'VT-1',
    examinedOn: '2026-11-02',
    welds: [{ weldId, result: 'accepted' }],
  };
  const viewer = await t.throwsAsync(recordNdt(a, 'viewer', record));
  t.is(sqlstate(viewer), 'WD003');
  t.is(viewer.message, 'recording an NDT record needs the inspector role');
  const ndt = await recordNdt(a, 'inspector', record);
  t.is(sqlstate(await t.throwsAsync(correctNdt(a, 'viewer', ndt.id, { notes: 'x' }))), 'WD003');
  for (const sql of [
    `select weld_public.record_inspection('{}')`,
    `select weld_public.correct_inspection(gen_random_uuid(), '{}', 'x')`,
  ]) {
    t.is(sqlstate(await t.throwsAsync(as(a, 'viewer', (c) => c.query(sql)))), 'WD003', sql);
  }
  await t.throwsAsync(
    withContext(pool, { role: 'weld_anonymous', tenantId: a.tenantId }, (c) =>
      c.query(`select weld_public.record_ndt('{}')`),
    ),
    { code: '42501' },
  );
  t.is(await count('ndt_records', a), 1);
});

test('the examination tables are written only through the functions', async (t) => {
  const { owner, a, as, recordNdt } = await setup(t);
  const weldId = await a.weld();
  const ndt = await recordNdt(a, 'inspector', {
    method: 'RT',
    reportNumber: 'RT-6',
    examinedOn: '2026-11-02',
    welds: [{ weldId }],
    filmIntervals: [film('0-1', 'accepted', [weldId])],
  });
  const interval = (await owner.query<{ id: string }>(`select id from weld_public.film_intervals`))
    .rows[0]!.id;
  const attempts = [
    `insert into weld_public.ndt_records (method, report_number, examined_on, result) values ('UT', 'UT-X', '2026-11-02', 'accepted')`,
    `update weld_public.ndt_records set result = 'rejected'`,
    `delete from weld_public.ndt_records`,
    `insert into weld_public.ndt_record_welds (ndt_record_id, weld_id) values ('${ndt.id}', '${weldId}')`,
    `update weld_public.ndt_record_welds set result = 'rejected'`,
    `delete from weld_public.ndt_record_welds`,
    `insert into weld_public.film_intervals (ndt_record_id, label, result) values ('${ndt.id}', '9-9', 'accepted')`,
    `update weld_public.film_intervals set result = 'rejected', defect_codes = '{PO}'`,
    `delete from weld_public.film_intervals`,
    `insert into weld_public.film_interval_welds (ndt_record_id, film_interval_id, weld_id) values ('${ndt.id}', '${interval}', '${weldId}')`,
    `delete from weld_public.film_interval_welds`,
    `insert into weld_public.inspections (kind, inspector_name, inspected_on, result) values ('visual', 'X', '2026-11-02', 'accepted')`,
    `update weld_public.inspections set result = 'rejected'`,
    `delete from weld_public.inspections`,
    `insert into weld_public.inspection_welds (inspection_id, weld_id) values (gen_random_uuid(), '${weldId}')`,
    `delete from weld_public.inspection_welds`,
  ];
  for (const role of ['inspector', 'engineer', 'admin'] as const) {
    for (const sql of attempts) {
      await t.throwsAsync(
        as(a, role, (c) => c.query(sql)),
        { code: '42501' },
        `${role}: ${sql}`,
      );
    }
  }
});
