// The limits of the examination functions: the length of a correction's reason and the size caps
// of records and inspections.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { setup, sqlstate, detailOf, rt, film } from '../helpers/examination-world.ts';

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
