// Examinations through their functions (record_ndt, correct_ndt_record, record_inspection,
// correct_inspection): NDT results derived from the film and checked against it, every invalid
// input a WD007 that points at the value, and results that move welds through the tenant's
// transition rules, all of a record's welds or none.
import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';

interface NdtRow {
  id: string;
  method: string;
  report_number: string;
  result: string;
  notes: string | null;
  version: number;
  recorded_by: string;
}

async function setup(t: ExecutionContext) {
  const { owner, pool, a, b } = await twoTenants(t);
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );
  const recordNdt = (fx: TenantFixture, role: Role, record: unknown) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<NdtRow>('select * from weld_public.record_ndt($1)', [
            JSON.stringify(record),
          ])
        ).rows[0]!,
    );
  const correctNdt = (
    fx: TenantFixture,
    role: Role,
    id: string,
    changes: unknown,
    reason: string | null = 'corrected',
    expectedVersion: number | null = null,
  ) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<NdtRow>('select * from weld_public.correct_ndt_record($1, $2, $3, $4)', [
            id,
            JSON.stringify(changes),
            reason,
            expectedVersion,
          ])
        ).rows[0]!,
    );
  /** Each weld's status, by id. */
  const statuses = async (...weldIds: string[]) =>
    (
      await owner.query<{ status: string }>(
        `select w.status from unnest($1::uuid[]) with ordinality as x (id, n)
           join weld_public.welds w on w.id = x.id order by x.n`,
        [weldIds],
      )
    ).rows.map((r) => r.status);
  const history = async (fx: TenantFixture) =>
    (
      await owner.query<{
        weld_id: string;
        move: string;
        cause: string;
        ndt_record_id: string | null;
        reason: string | null;
        changed_by: string | null;
      }>(
        `select weld_id, from_status || '>' || to_status as move, cause, ndt_record_id, reason, changed_by
           from weld_public.weld_status_history where tenant_id = $1 order by id`,
        [fx.tenantId],
      )
    ).rows;
  const count = async (table: string, fx: TenantFixture) =>
    (
      await owner.query<{ n: number }>(
        `select count(*)::int as n from weld_public.${table} where tenant_id = $1`,
        [fx.tenantId],
      )
    ).rows[0]!.n;
  return { owner, pool, a, b, as, recordNdt, correctNdt, statuses, history, count };
}

const sqlstate = (error: unknown) => (error as { code?: string }).code;
const detailOf = (error: unknown): unknown => JSON.parse((error as { detail: string }).detail);

/** An RT record of the given welds, results left to the film. */
function rt(reportNumber: string, welds: unknown[], filmIntervals: unknown[]) {
  return { method: 'RT', reportNumber, examinedOn: '2026-11-02', welds, filmIntervals };
}
const film = (label: string, result: string, weldIds: string[], defectCodes: string[] = []) => ({
  label,
  result,
  defectCodes: result === 'rejected' && defectCodes.length === 0 ? ['PO'] : defectCodes,
  weldIds,
});

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

//------------------------------------------------------------------------------------------------
// Corrections

test('a correction needs a reason and the current version; a missing or foreign record is WD001', async (t) => {
  const { a, b, recordNdt, correctNdt } = await setup(t);
  const weldId = await a.weld();
  const ndt = await recordNdt(
    a,
    'inspector',
    rt('RT-7', [{ weldId }], [film('0-1', 'accepted', [weldId])]),
  );
  for (const reason of [null, '', '   ']) {
    const error = await t.throwsAsync(correctNdt(a, 'inspector', ndt.id, { notes: 'x' }, reason));
    t.is(sqlstate(error), 'WD004', JSON.stringify(reason));
  }
  const stale = await t.throwsAsync(correctNdt(a, 'inspector', ndt.id, { notes: 'x' }, 'why', 3));
  t.is(sqlstate(stale), 'WD005');
  t.deepEqual(detailOf(stale), { version: 1 });

  const foreign = await t.throwsAsync(correctNdt(b, 'admin', ndt.id, { notes: 'x' }));
  t.is(sqlstate(foreign), 'WD001');
  t.is(foreign.message, `ndt record ${ndt.id} not found`);
  const missing = '00000000-0000-4000-8000-000000000002';
  t.is(sqlstate(await t.throwsAsync(correctNdt(a, 'inspector', missing, {}))), 'WD001');

  // Pointers point into `changes`, the PATCH body.
  for (const [changes, pointer] of [
    [{ method: 'UT' }, '/method'],
    [{ result: 'accepted' }, '/result'],
    [{ reportNumber: null }, '/reportNumber'],
    [{ welds: [{ weldId, result: 'maybe' }] }, '/welds/0/result'],
    [
      { filmIntervals: [film('0-1', 'accepted', [weldId]), film('1-2', 'accepted', [a.isoId])] },
      '/filmIntervals/1/weldIds/0',
    ],
    [{ welds: [{ weldId }, { weldId: a.welderId, result: 'accepted' }] }, '/welds/1/weldId'],
    [{ welds: [{ weldId, result: 'rejected' }] }, '/welds/0/result'],
    // The film changed, the welds not: the weld left without a result.
    [{ filmIntervals: [] }, '/filmIntervals'],
    ['notes', ''],
  ] as Array<[unknown, string]>) {
    const error = await t.throwsAsync(correctNdt(a, 'inspector', ndt.id, changes));
    t.is(sqlstate(error), 'WD007', `${JSON.stringify(changes)}: ${error?.message}`);
    t.deepEqual(detailOf(error), { pointer }, JSON.stringify(changes));
  }
  // The welds changed, the film not: the film left showing a weld the record dropped.
  const other = await a.weld();
  const dropped = await t.throwsAsync(
    correctNdt(a, 'inspector', ndt.id, { welds: [{ weldId: other, result: 'accepted' }] }),
  );
  t.deepEqual(detailOf(dropped), { pointer: '/welds' });
  t.regex(
    dropped.message,
    /film interval 0-1 shows weld .*, which is not one of the record's welds/,
  );
  t.is((await correctNdt(a, 'inspector', ndt.id, { notes: 'ok' }, 'why', 1)).version, 2);
});

test('a corrected result moves only the welds whose result changed, and the history keeps the reason', async (t) => {
  const { owner, a, as, recordNdt, correctNdt, statuses, history } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const ndt = await recordNdt(
    a,
    'inspector',
    rt(
      'RT-8',
      [{ weldId: w1 }, { weldId: w2 }],
      [film('0-1', 'accepted', [w1]), film('1-2', 'accepted', [w2])],
    ),
  );
  t.deepEqual(await statuses(w1, w2), ['ACCEPTED', 'ACCEPTED']);

  const corrected = await as(a, 'inspector', async (c) => {
    const { rows } = await c.query<NdtRow>(
      `select * from weld_public.correct_ndt_record($1, $2, 'film re-read by level III', 1)`,
      [
        ndt.id,
        JSON.stringify({
          filmIntervals: [film('0-1', 'accepted', [w1]), film('1-2', 'rejected', [w2], ['SI'])],
        }),
      ],
    );
    // The reason was set for the correction's writes only, and the record as the cause for its
    // moves only.
    const setting = await c.query<{ reason: string | null; applying: string | null }>(
      `select current_setting('weld.change_reason', true) as reason,
              current_setting('weld.applying_ndt_record', true) as applying`,
    );
    t.deepEqual(setting.rows[0], { reason: '', applying: '' });
    return rows[0]!;
  });
  t.like(corrected, { result: 'rejected', version: 2 });
  t.deepEqual(await statuses(w1, w2), ['ACCEPTED', 'REJECTED']);
  const moves = await history(a);
  t.is(moves.length, 3, 'two from recording, one from the correction');
  t.like(moves[2], {
    weld_id: w2,
    move: 'ACCEPTED>REJECTED',
    cause: 'ndt',
    ndt_record_id: ndt.id,
    reason: 'RT report RT-8: rejected',
  });

  const changes = await owner.query(
    `select change, before, after, reason, changed_by from weld_public.examination_changes
      where record_id = $1 order by id`,
    [ndt.id],
  );
  const intervalId = (
    await owner.query<{ id: string }>(
      `select id from weld_public.film_intervals where ndt_record_id = $1 and label = '1-2'`,
      [ndt.id],
    )
  ).rows[0]!.id;
  t.deepEqual(changes.rows, [
    {
      change: 'updated',
      before: { result: 'accepted' },
      after: { result: 'rejected' },
      reason: 'film re-read by level III',
      changed_by: a.users.inspector,
    },
    {
      change: 'film_interval_updated',
      before: { id: intervalId, result: 'accepted', defect_codes: [] },
      after: { id: intervalId, result: 'rejected', defect_codes: ['SI'] },
      reason: 'film re-read by level III',
      changed_by: a.users.inspector,
    },
  ]);

  // A given result that changes the weld's result moves it; the history says weld_updated.
  await correctNdt(
    a,
    'engineer',
    ndt.id,
    { welds: [{ weldId: w1, result: 'accepted' }, { weldId: w2 }] },
    'w1 confirmed',
  );
  const last = await owner.query(
    `select change, before, after, reason from weld_public.examination_changes
      where record_id = $1 order by id desc limit 1`,
    [ndt.id],
  );
  t.deepEqual(last.rows[0], {
    change: 'weld_updated',
    before: { weld_id: w1, result: null },
    after: { weld_id: w1, result: 'accepted' },
    reason: 'w1 confirmed',
  });
  t.is((await history(a)).length, 3, 'w1 was accepted before and after: no move');
});

test('a weld repaired since is not rejected again by a correction that does not change its result', async (t) => {
  const { a, as, recordNdt, correctNdt, statuses, history } = await setup(t);
  const w1 = await a.weld();
  const ndt = await recordNdt(
    a,
    'inspector',
    rt('RT-9', [{ weldId: w1 }], [film('0-1', 'rejected', [w1])]),
  );
  t.deepEqual(await statuses(w1), ['REJECTED']);
  // Repaired and waiting for its re-shoot.
  for (const [role, to] of [
    ['engineer', 'REPAIR'],
    ['inspector', 'PENDING'],
  ] as const) {
    await as(a, role, (c) => c.query(`select weld_public.change_weld_status($1, $2)`, [w1, to]));
  }

  // A typo fixed, the film re-labelled with the same result, a weld added: w1 stays PENDING.
  const w2 = await a.weld();
  const fixed = await correctNdt(
    a,
    'inspector',
    ndt.id,
    {
      notes: 'technician name corrected',
      welds: [{ weldId: w1 }, { weldId: w2, result: 'accepted' }],
      filmIntervals: [film('0-1', 'rejected', [w1], ['PO', 'SI'])],
    },
    'typo',
  );
  t.is(fixed.version, 2);
  t.deepEqual(await statuses(w1, w2), ['PENDING', 'ACCEPTED']);
  t.deepEqual(
    (await history(a)).map((h) => [h.weld_id === w1 ? 'w1' : 'w2', h.move]),
    [
      ['w1', 'PENDING>REJECTED'],
      ['w1', 'REJECTED>REPAIR'],
      ['w1', 'REPAIR>PENDING'],
      ['w2', 'PENDING>ACCEPTED'],
    ],
  );

  // Removing a weld from the record leaves it where it is.
  await correctNdt(a, 'inspector', ndt.id, { welds: [{ weldId: w1 }] }, 'w2 was not on this film');
  t.deepEqual(await statuses(w1, w2), ['PENDING', 'ACCEPTED']);
});

test('versions: a record made with its lists is 1, one correction is one bump, a correction of nothing is none', async (t) => {
  const { owner, a, recordNdt, correctNdt } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const ndt = await recordNdt(
    a,
    'inspector',
    rt('RT-10', [{ weldId: w1 }], [film('0-1', 'accepted', [w1])]),
  );
  t.is(ndt.version, 1);
  // The row and both lists in one correction.
  const both = await correctNdt(a, 'inspector', ndt.id, {
    notes: 'x',
    welds: [{ weldId: w1 }, { weldId: w2 }],
    filmIntervals: [film('0-1', 'accepted', [w1]), film('1-2', 'accepted', [w2])],
  });
  t.is(both.version, 2);
  // Only the film (the record's result unchanged): the list's change bumps it.
  const filmOnly = await correctNdt(a, 'inspector', ndt.id, {
    filmIntervals: [film('0-1', 'accepted', [w1], ['IP']), film('1-2', 'accepted', [w2])],
  });
  t.is(filmOnly.version, 3);
  // Nothing different: nothing written, no bump, no history.
  const before = await owner.query(
    `select count(*)::int as n from weld_public.examination_changes`,
  );
  const same = await correctNdt(a, 'inspector', ndt.id, {
    notes: 'x',
    welds: [{ weldId: w2 }, { weldId: w1 }],
  });
  t.is(same.version, 3);
  const after = await owner.query(`select count(*)::int as n from weld_public.examination_changes`);
  t.deepEqual(after.rows, before.rows);
});

//------------------------------------------------------------------------------------------------
// Inspections

test('inspections: the signed-in name by default, checked input, corrections with a reason, no weld moves', async (t) => {
  const { owner, a, b, as, statuses } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const theirs = await b.weld();
  const record = (inspection: unknown) =>
    as(
      a,
      'inspector',
      async (c) =>
        (
          await c.query<{ id: string; inspector_name: string; result: string; version: number }>(
            'select * from weld_public.record_inspection($1)',
            [JSON.stringify(inspection)],
          )
        ).rows[0]!,
    );
  const correct = (
    id: string,
    changes: unknown,
    reason = 'corrected',
    expected: number | null = null,
  ) =>
    as(
      a,
      'inspector',
      async (c) =>
        (
          await c.query<{ result: string; version: number; inspected_on: string }>(
            `select result, version, to_char(inspected_on, 'YYYY-MM-DD') as inspected_on
             from weld_public.correct_inspection($1, $2, $3, $4)`,
            [id, JSON.stringify(changes), reason, expected],
          )
        ).rows[0]!,
    );

  const valid = { kind: 'visual', inspectedOn: '2026-11-04', result: 'rejected', weldIds: [w1] };
  for (const [inspection, pointer] of [
    [{ ...valid, kind: 'x-ray' }, '/kind'],
    [{ ...valid, inspectorName: '' }, '/inspectorName'],
    [{ ...valid, inspectorName: null }, '/inspectorName'],
    [{ ...valid, inspectedOn: '2026-13-01' }, '/inspectedOn'],
    [{ ...valid, result: undefined }, '/result'],
    [{ ...valid, weldIds: [] }, '/weldIds'],
    [{ ...valid, weldIds: [w1, w1] }, '/weldIds/1'],
    [{ ...valid, weldIds: [w1, theirs] }, '/weldIds/1'],
    [{ ...valid, welds: [w1] }, '/welds'],
  ] as Array<[unknown, string]>) {
    const error = await t.throwsAsync(record(inspection));
    t.is(sqlstate(error), 'WD007', pointer);
    t.deepEqual(detailOf(error), { pointer });
  }

  const made = await record(valid);
  t.like(made, { inspector_name: 'inspector of alpha', result: 'rejected', version: 1 });
  t.deepEqual(await statuses(w1), ['PENDING'], 'inspections do not move welds');

  t.is(sqlstate(await t.throwsAsync(correct(made.id, { result: 'accepted' }, ' '))), 'WD004');
  t.is(sqlstate(await t.throwsAsync(correct(made.id, { result: 'accepted' }, 'x', 2))), 'WD005');
  t.is(sqlstate(await t.throwsAsync(correct(made.id, { weldIds: [w1, theirs] }))), 'WD007');
  const fixed = await correct(
    made.id,
    { result: 'accepted', inspectedOn: '2026-11-05', weldIds: [w2] },
    'wrong weld noted',
    1,
  );
  t.deepEqual(fixed, { result: 'accepted', version: 2, inspected_on: '2026-11-05' });
  t.deepEqual(await statuses(w1, w2), ['PENDING', 'PENDING']);
  const changes = await owner.query(
    `select change, before, after, reason from weld_public.examination_changes
      where record_id = $1 order by id`,
    [made.id],
  );
  t.deepEqual(changes.rows, [
    {
      change: 'updated',
      before: { result: 'rejected', inspected_on: '2026-11-04' },
      after: { result: 'accepted', inspected_on: '2026-11-05' },
      reason: 'wrong weld noted',
    },
    { change: 'weld_removed', before: { weld_id: w1 }, after: null, reason: 'wrong weld noted' },
    { change: 'weld_added', before: null, after: { weld_id: w2 }, reason: 'wrong weld noted' },
  ]);
  // Only the weld list: still one bump.
  t.is((await correct(made.id, { weldIds: [w1, w2] })).version, 3);
  t.is(
    sqlstate(
      await t.throwsAsync(
        as(b, 'admin', (c) =>
          c.query(`select weld_public.correct_inspection($1, '{}', 'x')`, [made.id]),
        ),
      ),
    ),
    'WD001',
  );
});

//------------------------------------------------------------------------------------------------
// Limits

test('a reason longer than 2000 characters is refused (WD007 at /reason), and the history holds none', async (t) => {
  const { owner, a, as, recordNdt, correctNdt } = await setup(t);
  const weldId = await a.weld();
  const ndt = await recordNdt(a, 'inspector', {
    method: 'VT',
    reportNumber: 'VT-20',
    examinedOn: '2026-11-02',
    welds: [{ weldId, result: 'accepted' }],
  });
  const inspection = await as(
    a,
    'inspector',
    async (c) =>
      (
        await c.query<{ id: string }>('select id from weld_public.record_inspection($1)', [
          JSON.stringify({
            kind: 'visual',
            inspectedOn: '2026-11-02',
            result: 'accepted',
            weldIds: [weldId],
          }),
        ])
      ).rows[0]!,
  );
  const correctInspection = (reason: string) =>
    as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_inspection($1, $2, $3)`, [
        inspection.id,
        JSON.stringify({ notes: reason.slice(0, 10) }),
        reason,
      ]),
    );
  const tooLong = 'r'.repeat(2001);
  for (const [label, attempt] of [
    ['correct_ndt_record', () => correctNdt(a, 'inspector', ndt.id, { notes: 'x' }, tooLong)],
    ['correct_inspection', () => correctInspection(tooLong)],
  ] as const) {
    const error = await t.throwsAsync(attempt(), undefined, label);
    t.is(sqlstate(error), 'WD007', label);
    t.is(error?.message, 'the reason is longer than 2000 characters', label);
    t.deepEqual(detailOf(error), { pointer: '/reason' }, label);
  }
  t.is(
    Number(
      (await owner.query(`select count(*) as n from weld_public.examination_changes`)).rows[0]!.n,
    ),
    0,
    'nothing written',
  );

  // 2000 is fine (surrounding blanks do not count).
  const longest = 'r'.repeat(2000);
  t.is((await correctNdt(a, 'inspector', ndt.id, { notes: 'x' }, ` ${longest} `)).version, 2);
  await correctInspection(longest);
  const reasons = await owner.query<{ n: number }>(
    `select char_length(reason) as n from weld_public.examination_changes order by id`,
  );
  t.deepEqual(
    reasons.rows.map((r) => r.n),
    [2000, 2000],
  );

  // The table holds to it too.
  const direct = await t.throwsAsync(
    owner.query(
      `insert into weld_public.examination_changes (tenant_id, subject, record_id, change, reason)
       values ($1, 'ndt_record', $2, 'updated', $3)`,
      [a.tenantId, ndt.id, tooLong],
    ),
  );
  t.is(sqlstate(direct), '23514');
});

test('size caps: 200 welds, 500 film intervals of 1 to 20 welds, 1000 mappings in all, 1000 inspected welds', async (t) => {
  const { a, as, recordNdt, correctNdt, count } = await setup(t);
  const some = (n: number) => Array.from({ length: n }, () => randomUUID());
  const labels = (n: number) => Array.from({ length: n }, (_, i) => `${i}-${i + 1}`);
  const cases: Array<[string, unknown, string]> = [
    [
      '201 welds',
      rt(
        'RT-1',
        some(201).map((weldId) => ({ weldId })),
        [],
      ),
      '/welds',
    ],
    [
      '501 film intervals',
      rt(
        'RT-1',
        [{ weldId: randomUUID() }],
        labels(501).map((l) => film(l, 'accepted', some(1))),
      ),
      '/filmIntervals',
    ],
    [
      'an interval of 21 welds',
      rt('RT-1', [{ weldId: randomUUID() }], [film('0-1', 'accepted', some(21))]),
      '/filmIntervals/0/weldIds',
    ],
    [
      '1001 mappings',
      rt(
        'RT-1',
        [{ weldId: randomUUID() }],
        [...labels(50).map((l) => film(l, 'accepted', some(20))), film('x-y', 'accepted', some(1))],
      ),
      '/filmIntervals',
    ],
  ];
  for (const [label, record, pointer] of cases) {
    const error = await t.throwsAsync(recordNdt(a, 'inspector', record), undefined, label);
    t.is(sqlstate(error), 'WD007', `${label}: ${error?.message}`);
    t.deepEqual(detailOf(error), { pointer }, label);
  }
  const mappings = await t.throwsAsync(recordNdt(a, 'inspector', cases[3]![1]));
  t.is(mappings.message, 'the film intervals may show at most 1000 welds in all');
  t.is(await count('ndt_records', a), 0);

  // At the limits: 200 welds, 500 intervals of two welds each (where two welds meet).
  const welds: string[] = [];
  for (let i = 0; i < 200; i++) welds.push(await a.weld());
  const intervals = labels(500).map((l, i) =>
    film(l, 'accepted', [welds[i % 200]!, welds[(i + 1) % 200]!]),
  );
  const ndt = await recordNdt(
    a,
    'inspector',
    rt(
      'RT-2',
      welds.map((weldId) => ({ weldId })),
      intervals,
    ),
  );
  t.is(ndt.result, 'accepted');
  t.is(await count('film_interval_welds', a), 1000);
  // A correction is held to the same caps.
  const more = await t.throwsAsync(
    correctNdt(a, 'inspector', ndt.id, {
      filmIntervals: [...intervals, film('x-y', 'accepted', [welds[0]!])],
    }),
  );
  t.deepEqual(detailOf(more), { pointer: '/filmIntervals' });

  // Inspections: at most 1000 welds.
  const inspection = await t.throwsAsync(
    as(a, 'inspector', (c) =>
      c.query('select weld_public.record_inspection($1)', [
        JSON.stringify({
          kind: 'visual',
          inspectedOn: '2026-11-04',
          result: 'accepted',
          weldIds: some(1001),
        }),
      ]),
    ),
  );
  t.is(sqlstate(inspection), 'WD007');
  t.deepEqual(detailOf(inspection), { pointer: '/weldIds' });
});
