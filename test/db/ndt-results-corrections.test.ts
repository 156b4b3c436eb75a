// Correcting NDT records through correct_ndt_record: a reason and the current version, only the
// welds whose result changed move, and versions count the corrections.
import test from 'ava';
import { type NdtRow, setup, sqlstate, detailOf, rt, film } from '../helpers/examination-world.ts';

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
