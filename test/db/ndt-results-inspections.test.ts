// Inspections through record_inspection and correct_inspection: the signed-in name by default,
// checked input, corrections with a reason, no weld moves.
import test from 'ava';
import { setup, sqlstate, detailOf } from '../helpers/examination-world.ts';

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
