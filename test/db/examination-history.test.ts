// Examinations, from the attacker's side: authorship (recorded_by) is the signed-in user's and no
// client's, and a result or weld list changed after the fact leaves a history that no API role
// can write, change or erase, and that no other tenant can read.
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
  return { rootUrl, owner, a, b, as };
}

interface Change {
  subject: string;
  record_id: string;
  change: string;
  before: unknown;
  after: unknown;
  changed_by: string | null;
}

async function changes(owner: pg.Client, fx: TenantFixture): Promise<Change[]> {
  const { rows } = await owner.query<Change>(
    `select subject, record_id, change, before, after, changed_by
       from weld_public.examination_changes where tenant_id = $1 order by id`,
    [fx.tenantId],
  );
  return rows;
}

/** An RT record with two welds and one film interval over the first, made in one transaction. */
async function createRecord(fx: TenantFixture, c: pg.PoolClient) {
  const [w1, w2] = [await fx.weld('PENDING'), await fx.weld('PENDING')];
  const { rows } = await c.query<{ id: string }>(
    `insert into weld_public.ndt_records (method, report_number, examined_on, result)
     values ('RT', 'RT-100', '2026-11-02', 'accepted') returning id`,
  );
  const recordId = rows[0]!.id;
  await c.query(
    `insert into weld_public.ndt_record_welds (ndt_record_id, weld_id) values ($1, $2), ($1, $3)`,
    [recordId, w1, w2],
  );
  const interval = await c.query<{ id: string }>(
    `insert into weld_public.film_intervals (ndt_record_id, label, result)
     values ($1, '0-1', 'accepted') returning id`,
    [recordId],
  );
  const intervalId = interval.rows[0]!.id;
  await c.query(
    `insert into weld_public.film_interval_welds (ndt_record_id, film_interval_id, weld_id)
     values ($1, $2, $3)`,
    [recordId, intervalId, w1],
  );
  return { recordId, intervalId, w1, w2 };
}

//------------------------------------------------------------------------------------------------
// Authorship

test("an inspector cannot credit an examination to a colleague; it is recorded as the inspector's", async (t) => {
  const { owner, a, as } = await setup(t);
  for (const [table, columns, values] of [
    [
      'ndt_records',
      'method, report_number, examined_on, result',
      `'UT', 'UT-1', '2026-11-02', 'accepted'`,
    ],
    [
      'inspections',
      'kind, inspector_name, inspected_on, result',
      `'visual', 'J. Doe', '2026-11-02', 'accepted'`,
    ],
  ] as const) {
    const forged = await t.throwsAsync(
      as(a, 'inspector', (c) =>
        c.query(
          `insert into weld_public.${table} (${columns}, recorded_by) values (${values}, $1)`,
          [a.users.engineer],
        ),
      ),
    );
    t.is((forged as { code?: string }).code, '42501', `${table}: recorded_by is not writable`);

    const own = await as(a, 'inspector', (c) =>
      c.query<{ recorded_by: string }>(
        `insert into weld_public.${table} (${columns}) values (${values}) returning recorded_by`,
      ),
    );
    t.is(own.rows[0]!.recorded_by, a.users.inspector, `${table}: the inspector's own id`);
    // Nor can an update change it afterwards.
    await t.throwsAsync(
      as(a, 'admin', (c) =>
        c.query(`update weld_public.${table} set recorded_by = $1`, [a.users.engineer]),
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
    `grant insert (recorded_by) on weld_public.ndt_records, weld_public.inspections to weld_inspector`,
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

test('creating a record with its welds and film is no change; later changes are kept with who made them', async (t) => {
  const { owner, a, as } = await setup(t);
  const { recordId, intervalId, w1, w2 } = await as(a, 'inspector', (c) => createRecord(a, c));
  t.deepEqual(await changes(owner, a), [], 'creating it in one transaction records nothing');

  // Later: the result changes.
  await as(a, 'inspector', (c) =>
    c.query(`update weld_public.ndt_records set result = 'rejected' where id = $1`, [recordId]),
  );
  t.deepEqual(await changes(owner, a), [
    {
      subject: 'ndt_record',
      record_id: recordId,
      change: 'updated',
      before: { result: 'accepted' },
      after: { result: 'rejected' },
      changed_by: a.users.inspector,
    },
  ]);

  // An update that changes nothing (only updated_at moves) records nothing.
  await as(a, 'inspector', (c) =>
    c.query(`update weld_public.ndt_records set result = result where id = $1`, [recordId]),
  );
  t.is((await changes(owner, a)).length, 1);

  // A weld link removed (a weld not on the film): one row, nothing else.
  await as(a, 'inspector', (c) =>
    c.query(`delete from weld_public.ndt_record_welds where ndt_record_id = $1 and weld_id = $2`, [
      recordId,
      w2,
    ]),
  );
  const [, removed] = await changes(owner, a);
  t.deepEqual(removed, {
    subject: 'ndt_record',
    record_id: recordId,
    change: 'weld_removed',
    before: { weld_id: w2 },
    after: null,
    changed_by: a.users.inspector,
  });
  t.is((await changes(owner, a)).length, 2);

  // A correction and a new weld in one (later) transaction: both are recorded, although the
  // record's row was written by that transaction too.
  const w3 = await a.weld('PENDING');
  await as(a, 'engineer', async (c) => {
    await c.query(`update weld_public.ndt_records set notes = 'reshot' where id = $1`, [recordId]);
    await c.query(
      `insert into weld_public.ndt_record_welds (ndt_record_id, weld_id) values ($1, $2)`,
      [recordId, w3],
    );
  });
  // The film: an interval re-read, its weld mapping moved to another interval added for it.
  // (Inspectors correct intervals but may not delete them.)
  await as(a, 'inspector', (c) =>
    c.query(
      `update weld_public.film_intervals set result = 'rejected', defect_codes = '{IP}' where id = $1`,
      [intervalId],
    ),
  );
  const newIntervalId = await as(a, 'inspector', async (c) => {
    await c.query(`delete from weld_public.film_interval_welds where film_interval_id = $1`, [
      intervalId,
    ]);
    const { rows } = await c.query<{ id: string }>(
      `insert into weld_public.film_intervals (ndt_record_id, label, result)
       values ($1, '1-2', 'accepted') returning id`,
      [recordId],
    );
    await c.query(
      `insert into weld_public.film_interval_welds (ndt_record_id, film_interval_id, weld_id)
       values ($1, $2, $3)`,
      [recordId, rows[0]!.id, w1],
    );
    return rows[0]!.id;
  });

  t.deepEqual(
    (await changes(owner, a)).slice(2).map((c) => [c.change, c.before, c.after, c.changed_by]),
    [
      ['updated', { notes: null }, { notes: 'reshot' }, a.users.engineer],
      ['weld_added', null, { weld_id: w3 }, a.users.engineer],
      [
        'film_interval_updated',
        { id: intervalId, result: 'accepted', defect_codes: [] },
        { id: intervalId, result: 'rejected', defect_codes: ['IP'] },
        a.users.inspector,
      ],
      ['film_weld_removed', { film_interval_id: intervalId, weld_id: w1 }, null, a.users.inspector],
      [
        'film_interval_added',
        null,
        { id: newIntervalId, label: '1-2', result: 'accepted', defect_codes: [] },
        a.users.inspector,
      ],
      [
        'film_weld_added',
        null,
        { film_interval_id: newIntervalId, weld_id: w1 },
        a.users.inspector,
      ],
    ],
  );

  // Unlinking a weld that is on the film takes its film mapping with it: both are recorded.
  await as(a, 'inspector', (c) =>
    c.query(`delete from weld_public.ndt_record_welds where ndt_record_id = $1 and weld_id = $2`, [
      recordId,
      w1,
    ]),
  );
  t.deepEqual(
    (await changes(owner, a))
      .slice(8)
      .map((c) => [c.change, c.before])
      .sort(),
    [
      ['film_weld_removed', { film_interval_id: newIntervalId, weld_id: w1 }],
      ['weld_removed', { weld_id: w1 }],
    ],
  );
});

test('inspections: result and weld changes after the fact are kept', async (t) => {
  const { owner, a, as } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const inspectionId = await as(a, 'inspector', async (c) => {
    const { rows } = await c.query<{ id: string }>(
      `insert into weld_public.inspections (kind, inspector_name, inspected_on, result)
       values ('fit-up', 'J. Doe', '2026-11-02', 'accepted') returning id`,
    );
    await c.query(
      `insert into weld_public.inspection_welds (inspection_id, weld_id) values ($1, $2)`,
      [rows[0]!.id, w1],
    );
    return rows[0]!.id;
  });
  t.deepEqual(await changes(owner, a), []);

  await as(a, 'inspector', async (c) => {
    await c.query(
      `update weld_public.inspections set result = 'rejected', inspected_on = '2026-11-03' where id = $1`,
      [inspectionId],
    );
    await c.query(
      `insert into weld_public.inspection_welds (inspection_id, weld_id) values ($1, $2)`,
      [inspectionId, w2],
    );
    await c.query(
      `delete from weld_public.inspection_welds where inspection_id = $1 and weld_id = $2`,
      [inspectionId, w1],
    );
  });
  t.deepEqual(
    (await changes(owner, a)).map((c) => [c.subject, c.record_id, c.change, c.before, c.after]),
    [
      [
        'inspection',
        inspectionId,
        'updated',
        { result: 'accepted', inspected_on: '2026-11-02' },
        { result: 'rejected', inspected_on: '2026-11-03' },
      ],
      ['inspection', inspectionId, 'weld_added', null, { weld_id: w2 }],
      ['inspection', inspectionId, 'weld_removed', { weld_id: w1 }, null],
    ],
  );
});

test('the history can be read by a viewer but written, changed or erased by no API role', async (t) => {
  const { owner, a, as } = await setup(t);
  const { recordId } = await as(a, 'inspector', (c) => createRecord(a, c));
  await as(a, 'inspector', (c) =>
    c.query(`update weld_public.ndt_records set result = 'rejected' where id = $1`, [recordId]),
  );

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
  t.deepEqual(after[0]!.after, { result: 'rejected' });
});

test("another tenant sees none of a tenant's history", async (t) => {
  const { owner, a, b, as } = await setup(t);
  const { recordId } = await as(a, 'inspector', (c) => createRecord(a, c));
  await as(a, 'inspector', (c) =>
    c.query(`update weld_public.ndt_records set result = 'rejected' where id = $1`, [recordId]),
  );
  t.is((await changes(owner, a)).length, 1);

  for (const role of ['viewer', 'admin'] as const) {
    const seen = await as(b, role, (c) => c.query(`select * from weld_public.examination_changes`));
    t.is(seen.rowCount, 0, role);
  }
  // Nor can B's inspector touch A's record to make A's history lie.
  const touched = await as(b, 'inspector', (c) =>
    c.query(`update weld_public.ndt_records set result = 'accepted' where id = $1`, [recordId]),
  );
  t.is(touched.rowCount, 0);
  t.is((await changes(owner, a)).length, 1);
  t.deepEqual(await changes(owner, b), []);
});
