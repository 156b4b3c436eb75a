// Examinations, from the attacker's side: authorship (recorded_by) is the signed-in user's and no
// client's, and a result or weld list corrected after the fact leaves a history, with the
// correction's reason, that no API role can write, change or erase, and that no other tenant can
// read. Examinations are written through record_ndt / correct_ndt_record and record_inspection /
// correct_inspection (no API role may write their tables directly).
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import { superuserQuery } from '../helpers/database.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';

async function setup(t: ExecutionContext) {
  const { rootUrl, owner, pool, a, b } = await twoTenants(t);
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );
  /** Calls one of the examination functions with JSON arguments; resolves with its row. */
  const call = (fx: TenantFixture, role: Role, fn: string, ...args: unknown[]) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<{ id: string; recorded_by: string }>(
            `select * from weld_public.${fn}(${args.map((_, i) => `$${i + 1}`).join(', ')})`,
            args.map((arg) =>
              typeof arg === 'object' && arg !== null ? JSON.stringify(arg) : arg,
            ),
          )
        ).rows[0]!,
    );
  return { rootUrl, owner, a, b, as, call };
}

interface Change {
  subject: string;
  record_id: string;
  change: string;
  before: unknown;
  after: unknown;
  changed_by: string | null;
  reason: string | null;
}

async function changes(owner: pg.Client, fx: TenantFixture): Promise<Change[]> {
  const { rows } = await owner.query<Change>(
    `select subject, record_id, change, before, after, changed_by, reason
       from weld_public.examination_changes where tenant_id = $1 order by id`,
    [fx.tenantId],
  );
  return rows;
}

const interval = (
  label: string,
  result: string,
  weldIds: string[],
  defectCodes: string[] = [],
) => ({
  label,
  result,
  defectCodes,
  weldIds,
});

/** An RT record with two welds (the first's result from its film, the second's given). */
async function createRecord(fx: TenantFixture, call: Awaited<ReturnType<typeof setup>>['call']) {
  const [w1, w2] = [await fx.weld('PENDING'), await fx.weld('PENDING')];
  const { id: recordId } = await call(fx, 'inspector', 'record_ndt', {
    method: 'RT',
    reportNumber: 'RT-100',
    examinedOn: '2026-11-02',
    welds: [{ weldId: w1 }, { weldId: w2, result: 'accepted' }],
    filmIntervals: [interval('0-1', 'accepted', [w1])],
  });
  return { recordId, w1, w2 };
}

//------------------------------------------------------------------------------------------------
// Authorship

test("an inspector cannot credit an examination to a colleague; it is recorded as the inspector's", async (t) => {
  const { owner, a, as, call } = await setup(t);
  const weldId = await a.weld();
  // No direct insert at all, with recorded_by or without.
  for (const sql of [
    `insert into weld_public.ndt_records (method, report_number, examined_on, result, recorded_by)
     values ('UT', 'UT-1', '2026-11-02', 'accepted', '${a.users.engineer}')`,
    `insert into weld_public.inspections (kind, inspector_name, inspected_on, result)
     values ('visual', 'J. Doe', '2026-11-02', 'accepted')`,
  ]) {
    await t.throwsAsync(
      as(a, 'inspector', (c) => c.query(sql)),
      { code: '42501' },
    );
  }
  // Nor through the functions' JSON: there is no such field.
  const forged = await t.throwsAsync(
    call(a, 'inspector', 'record_ndt', {
      method: 'UT',
      reportNumber: 'UT-1',
      examinedOn: '2026-11-02',
      welds: [{ weldId, result: 'accepted' }],
      recordedBy: a.users.engineer,
    }),
  );
  t.is((forged as { code?: string }).code, 'WD007');

  const ndt = await call(a, 'inspector', 'record_ndt', {
    method: 'UT',
    reportNumber: 'UT-1',
    examinedOn: '2026-11-02',
    welds: [{ weldId, result: 'accepted' }],
  });
  t.is(ndt.recorded_by, a.users.inspector);
  const inspection = await call(a, 'engineer', 'record_inspection', {
    kind: 'visual',
    inspectorName: 'J. Doe',
    inspectedOn: '2026-11-02',
    result: 'accepted',
    weldIds: [weldId],
  });
  t.is(inspection.recorded_by, a.users.engineer);
  // Nor can an update change it afterwards.
  for (const table of ['ndt_records', 'inspections']) {
    await t.throwsAsync(
      as(a, 'admin', (c) =>
        c.query(`update weld_public.${table} set recorded_by = $1`, [a.users.viewer]),
      ),
      { code: '42501' },
    );
  }
  const { rows } = await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_public.ndt_records where recorded_by <> $1`,
    [a.users.inspector],
  );
  t.is(rows[0]!.n, 0);
});

test('even a careless grant of recorded_by cannot let a request credit someone else; the owner keeps its value', async (t) => {
  const { rootUrl, owner, a, as } = await setup(t);
  await superuserQuery(
    rootUrl,
    `grant insert (method, report_number, examined_on, result, recorded_by)
       on weld_public.ndt_records to weld_inspector`,
  );
  const forged = await as(a, 'inspector', (c) =>
    c.query<{ recorded_by: string }>(
      `insert into weld_public.ndt_records (method, report_number, examined_on, result, recorded_by)
       values ('UT', 'UT-2', '2026-11-02', 'accepted', $1) returning recorded_by`,
      [a.users.engineer],
    ),
  );
  t.is(forged.rows[0]!.recorded_by, a.users.inspector);

  // Outside a request (seed generator, imports): the value given is kept.
  const imported = await owner.query<{ recorded_by: string }>(
    `insert into weld_public.inspections (tenant_id, kind, inspector_name, inspected_on, result, recorded_by)
     values ($1, 'final', 'Import', '2026-11-02', 'accepted', $2) returning recorded_by`,
    [a.tenantId, a.users.engineer],
  );
  t.is(imported.rows[0]!.recorded_by, a.users.engineer);
});

//------------------------------------------------------------------------------------------------
// History

test('creating a record with its welds and film is no change; later corrections are kept with who made them and why', async (t) => {
  const { owner, a, call } = await setup(t);
  const { recordId, w1, w2 } = await createRecord(a, call);
  t.deepEqual(await changes(owner, a), [], 'creating it in one transaction records nothing');
  const intervalId = async (label: string) =>
    (
      await owner.query<{ id: string }>(
        `select id from weld_public.film_intervals where ndt_record_id = $1 and label = $2`,
        [recordId, label],
      )
    ).rows[0]!.id;
  const first = await intervalId('0-1');

  // The film re-read: the interval and, with it, the record's result.
  await call(
    a,
    'inspector',
    'correct_ndt_record',
    recordId,
    {
      filmIntervals: [interval('0-1', 'rejected', [w1], ['IP'])],
    },
    'film re-read',
  );
  t.deepEqual(await changes(owner, a), [
    {
      subject: 'ndt_record',
      record_id: recordId,
      change: 'updated',
      before: { result: 'accepted' },
      after: { result: 'rejected' },
      changed_by: a.users.inspector,
      reason: 'film re-read',
    },
    {
      subject: 'ndt_record',
      record_id: recordId,
      change: 'film_interval_updated',
      before: { id: first, result: 'accepted', defect_codes: [] },
      after: { id: first, result: 'rejected', defect_codes: ['IP'] },
      changed_by: a.users.inspector,
      reason: 'film re-read',
    },
  ]);

  // A correction that changes nothing records nothing.
  await call(a, 'inspector', 'correct_ndt_record', recordId, { reportNumber: 'RT-100' }, 'same');
  t.is((await changes(owner, a)).length, 2);

  // A weld swapped for another, and film added for it, by an engineer.
  const w3 = await a.weld('PENDING');
  await call(
    a,
    'engineer',
    'correct_ndt_record',
    recordId,
    {
      welds: [{ weldId: w1 }, { weldId: w3, result: 'accepted' }],
      filmIntervals: [interval('0-1', 'rejected', [w1], ['IP']), interval('1-2', 'accepted', [w3])],
    },
    'w2 was not shot; w3 was',
  );
  const second = await intervalId('1-2');
  t.deepEqual(
    (await changes(owner, a))
      .slice(2)
      .map((c) => [c.change, c.before, c.after, c.changed_by, c.reason]),
    [
      [
        'weld_removed',
        { weld_id: w2, result: 'accepted', defect_length_in: null },
        null,
        a.users.engineer,
        'w2 was not shot; w3 was',
      ],
      [
        'weld_added',
        null,
        { weld_id: w3, result: 'accepted', defect_length_in: null },
        a.users.engineer,
        'w2 was not shot; w3 was',
      ],
      [
        'film_interval_added',
        null,
        { id: second, label: '1-2', result: 'accepted', defect_codes: [] },
        a.users.engineer,
        'w2 was not shot; w3 was',
      ],
      [
        'film_weld_added',
        null,
        { film_interval_id: second, weld_id: w3 },
        a.users.engineer,
        'w2 was not shot; w3 was',
      ],
    ],
  );

  // The first interval dropped, w1's result given instead: its mapping goes before the
  // interval, and the weld's given result is an update of its own.
  await call(
    a,
    'inspector',
    'correct_ndt_record',
    recordId,
    {
      welds: [
        { weldId: w1, result: 'rejected' },
        { weldId: w3, result: 'accepted' },
      ],
      filmIntervals: [interval('1-2', 'accepted', [w3])],
    },
    'reshoot lost',
  );
  t.deepEqual(
    (await changes(owner, a)).slice(6).map((c) => [c.change, c.before, c.after, c.reason]),
    [
      ['film_weld_removed', { film_interval_id: first, weld_id: w1 }, null, 'reshoot lost'],
      [
        'film_interval_removed',
        { id: first, label: '0-1', result: 'rejected', defect_codes: ['IP'] },
        null,
        'reshoot lost',
      ],
      [
        'weld_updated',
        { weld_id: w1, result: null },
        { weld_id: w1, result: 'rejected' },
        'reshoot lost',
      ],
    ],
  );
});

test('the reason is set for the correction alone: a reason set before it is restored after it', async (t) => {
  const { owner, a, as, call } = await setup(t);
  const { recordId } = await createRecord(a, call);
  const seen = await as(a, 'inspector', async (c) => {
    await c.query(`select set_config('weld.change_reason', 'an earlier reason', true)`);
    await c.query(`select weld_public.correct_ndt_record($1, '{"notes": "one"}', 'typo')`, [
      recordId,
    ]);
    return (await c.query<{ r: string }>(`select current_setting('weld.change_reason') as r`))
      .rows[0]!.r;
  });
  t.is(seen, 'an earlier reason');
  t.deepEqual(
    (await changes(owner, a)).map((c) => c.reason),
    ['typo'],
  );
});

test('inspections: result and weld changes after the fact are kept, with the reason', async (t) => {
  const { owner, a, call } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const { id: inspectionId } = await call(a, 'inspector', 'record_inspection', {
    kind: 'fit-up',
    inspectorName: 'J. Doe',
    inspectedOn: '2026-11-02',
    result: 'accepted',
    weldIds: [w1],
  });
  t.deepEqual(await changes(owner, a), []);

  await call(
    a,
    'inspector',
    'correct_inspection',
    inspectionId,
    {
      result: 'rejected',
      inspectedOn: '2026-11-03',
      weldIds: [w2],
    },
    'wrong weld and day',
  );
  t.deepEqual(
    (await changes(owner, a)).map((c) => [
      c.subject,
      c.record_id,
      c.change,
      c.before,
      c.after,
      c.reason,
    ]),
    [
      [
        'inspection',
        inspectionId,
        'updated',
        { result: 'accepted', inspected_on: '2026-11-02' },
        { result: 'rejected', inspected_on: '2026-11-03' },
        'wrong weld and day',
      ],
      ['inspection', inspectionId, 'weld_removed', { weld_id: w1 }, null, 'wrong weld and day'],
      ['inspection', inspectionId, 'weld_added', null, { weld_id: w2 }, 'wrong weld and day'],
    ],
  );
});

test('a record created under a savepoint (as GraphQL runs each field) is still a creation, not a change', async (t) => {
  const { owner, a, as } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const inspectionId = await as(a, 'inspector', async (c) => {
    // A first field that wrote nothing, then the one that creates: its rows carry the
    // savepoint's transaction id, not the transaction's own.
    await c.query('savepoint first_field');
    await c.query('release savepoint first_field');
    await c.query('savepoint second_field');
    const { rows } = await c.query<{ id: string }>(
      'select id from weld_public.record_inspection($1)',
      [
        JSON.stringify({
          kind: 'fit-up',
          inspectorName: 'J. Doe',
          inspectedOn: '2026-11-02',
          result: 'accepted',
          weldIds: [w1, w2],
        }),
      ],
    );
    await c.query('release savepoint second_field');
    return rows[0]!.id;
  });
  t.deepEqual(await changes(owner, a), [], 'its own welds are not logged as added');

  // The same weld list set again later, under a savepoint of another transaction, changes
  // nothing; one weld removed is a change.
  await as(a, 'inspector', async (c) => {
    await c.query('savepoint field');
    await c.query('select weld_public.correct_inspection($1, $2, $3)', [
      inspectionId,
      JSON.stringify({ weldIds: [w1] }),
      'w2 was not fitted',
    ]);
    await c.query('release savepoint field');
  });
  t.deepEqual(
    (await changes(owner, a)).map((c) => [c.change, c.before, c.after]),
    [['weld_removed', { weld_id: w2 }, null]],
  );
});

test('the history can be read by a viewer but written, changed or erased by no API role', async (t) => {
  const { owner, a, as, call } = await setup(t);
  const { recordId } = await createRecord(a, call);
  await call(a, 'inspector', 'correct_ndt_record', recordId, { notes: 'reshot' }, 'note');

  const seen = await as(a, 'viewer', (c) =>
    c.query<{ change: string; changed_by: string }>(
      `select change, changed_by from weld_public.examination_changes`,
    ),
  );
  t.deepEqual(seen.rows, [{ change: 'updated', changed_by: a.users.inspector }]);

  for (const role of ['viewer', 'inspector', 'admin'] as const) {
    for (const sql of [
      `insert into weld_public.examination_changes (subject, record_id, change, after)
       values ('ndt_record', '${recordId}', 'updated', '{"result":"accepted"}')`,
      `update weld_public.examination_changes set after = '{"result":"accepted"}'`,
      `update weld_public.examination_changes set reason = 'rewritten'`,
      `update weld_public.examination_changes set changed_by = null`,
      `delete from weld_public.examination_changes`,
      `truncate weld_public.examination_changes`,
    ]) {
      await t.throwsAsync(
        as(a, role, (c) => c.query(sql)),
        { code: '42501' },
        `${role}: ${sql.split(' ').slice(0, 2).join(' ')}`,
      );
    }
  }
  const after = await changes(owner, a);
  t.is(after.length, 1);
  t.deepEqual(after[0]!.after, { notes: 'reshot' });
  t.is(after[0]!.reason, 'note');
});

test("another tenant sees none of a tenant's history, and cannot correct its records", async (t) => {
  const { owner, a, b, as, call } = await setup(t);
  const { recordId } = await createRecord(a, call);
  await call(a, 'inspector', 'correct_ndt_record', recordId, { notes: 'reshot' }, 'note');
  t.is((await changes(owner, a)).length, 1);

  for (const role of ['viewer', 'admin'] as const) {
    const seen = await as(b, role, (c) => c.query(`select * from weld_public.examination_changes`));
    t.is(seen.rowCount, 0, role);
  }
  // Nor can B's inspector correct A's record to make A's history lie.
  const refused = await t.throwsAsync(
    call(b, 'admin', 'correct_ndt_record', recordId, { notes: 'forged' }, 'forgery'),
  );
  t.is((refused as { code?: string }).code, 'WD001');
  t.is((await changes(owner, a)).length, 1);
  t.deepEqual(await changes(owner, b), []);
});
