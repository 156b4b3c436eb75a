// Records follow reality: every date is a calendar date of this domain (1900-01-01 to
// 2200-12-31), and a weld is examined only once it is welded, never before the day it was.
import test from 'ava';
import { refusal, rulesWorld, type RulesWorld } from '../helpers/rules.ts';

const FAR = [
  '1899-12-31',
  '2201-01-01',
  '2999-01-01',
  'infinity',
  '-infinity',
  '0001-01-01 BC',
  '294276-12-31',
];

test('every date column of weld_public holds a *_calendar check of 1900-01-01 to 2200-12-31, validated, with the sentence a client sees', async (t) => {
  const w = await rulesWorld(t);
  const { rows } = await w.dba(`
    select c.relname || '.' || a.attname as "column", k.conname, k.convalidated,
           pg_get_constraintdef(k.oid) as def, obj_description(k.oid, 'pg_constraint') as comment
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid and c.relkind = 'r'
      left join pg_constraint k on k.conrelid = c.oid and k.contype = 'c' and k.conkey = array[a.attnum]
                               and k.conname like '%_calendar'
     where c.relnamespace = 'weld_public'::regnamespace and a.atttypid = 'date'::regtype
       and a.attnum > 0 and not a.attisdropped
     order by 1`);
  t.true(rows.length >= 8, rows.map((r) => r.column).join(', '));
  for (const row of rows) {
    t.is(row.conname, `${String(row.column).replace('.', '_')}_calendar`, row.column);
    t.true(row.convalidated, row.column);
    t.is(
      row.def,
      `CHECK (((${String(row.column).split('.')[1]} >= '1900-01-01'::date) AND (${String(row.column).split('.')[1]} <= '2200-12-31'::date)))`,
    );
    t.is(row.comment, 'must be a date from 1900-01-01 to 2200-12-31');
  }
});

test('SQL alike: a weld, a qualification and a continuity entry dated 2999-01-01, 1899-12-31, infinity or BC are refused (23514); 1900-01-01 and 2200-12-31 are fine', async (t) => {
  const w = await rulesWorld(t);
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  const weldId = await w.weld(w.a, isoId, 'N-1', { welded_on: null });
  const welderId = await w.welder(w.a, 'W1');
  for (const day of FAR) {
    t.is(
      (
        await refusal(
          t,
          w.sqlAs(w.a, 'engineer', 'update weld_public.welds set welded_on = $2 where id = $1', [
            weldId,
            day,
          ]),
        )
      ).code,
      '23514',
      day,
    );
    t.is(
      (
        await refusal(
          t,
          w.sqlAs(
            w.a,
            'engineer',
            "insert into weld_public.welder_qualifications (welder_id, process, qualified_on) values ($1, 'SMAW', $2)",
            [welderId, day],
          ),
        )
      ).code,
      '23514',
      day,
    );
    t.is(
      (
        await refusal(
          t,
          w.sqlAs(
            w.a,
            'inspector',
            "insert into weld_public.welder_continuity (welder_id, used_on, process, reference) values ($1, $2, 'SMAW', 'x')",
            [welderId, day],
          ),
        )
      ).code,
      '23514',
      day,
    );
  }
  for (const day of ['1900-01-01', '2200-12-31']) {
    await w.sqlAs(w.a, 'engineer', 'update weld_public.welds set welded_on = $2 where id = $1', [
      weldId,
      day,
    ]);
  }
  t.pass();
});

test('record_ndt and record_inspection: a date of 2999-01-01 is WD007 pointing at the field, with the range in words', async (t) => {
  const w = await rulesWorld(t);
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  const weldId = await w.weld(w.a, isoId, 'N-1');
  const error = await refusal(
    t,
    w.recordNdt(w.a, 'RT', 'RT-1', [[weldId, 'accepted']], '2999-01-01'),
  );
  t.is(error.code, 'WD007');
  t.is(error.message, 'examinedOn must be a date, YYYY-MM-DD, from 1900-01-01 to 2200-12-31');
  t.deepEqual(JSON.parse(error.detail!), { pointer: '/examinedOn' });
  const inspection = await refusal(
    t,
    w.recordInspection(w.a, 'visual', [weldId], 'accepted', '1899-12-31'),
  );
  t.deepEqual(JSON.parse(inspection.detail!), { pointer: '/inspectedOn' });
});

test('a date as the service reads it (weld_hidden.import_date, json_date): a day that exists, YYYY-MM-DD, 1900 to 2200; null for anything else, on every PostgreSQL', async (t) => {
  const w = await rulesWorld(t);
  const cases: Array<[string, string | null]> = [
    ['2026-01-31', '2026-01-31'],
    ['2024-02-29', '2024-02-29'], // a leap year
    ['2000-02-29', '2000-02-29'], // divisible by 400: leap
    ['2100-02-29', null], // divisible by 100 only: not leap
    ['2026-02-29', null],
    ['2026-04-31', null],
    ['2026-12-31', '2026-12-31'],
    ['2026-13-01', null],
    ['2026-00-10', null],
    ['2026-01-00', null],
    ['1900-01-01', '1900-01-01'],
    ['1899-12-31', null],
    ['2200-12-31', '2200-12-31'],
    ['2201-01-01', null],
    ['0000-01-01', null],
    ['2026-1-01', null],
    [' 2026-01-01', null],
    ['20260101', null],
    ['', null],
  ];
  const { rows } = await w.dba(
    `select v, weld_hidden.import_date(v)::text as judged from unnest($1::text[]) v`,
    [cases.map(([value]) => value)],
  );
  t.deepEqual(
    rows.map((r: { v: string; judged: string | null }) => [r.v, r.judged]),
    cases,
  );
  // The same over JSON, with the sentence and the pointer a client sees.
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  const weldId = await w.weld(w.a, isoId, 'N-1');
  const error = await refusal(
    t,
    w.recordNdt(w.a, 'RT', 'RT-1', [[weldId, 'accepted']], '2100-02-29'),
  );
  t.is(error.code, 'WD007');
  t.deepEqual(JSON.parse(error.detail!), { pointer: '/examinedOn' });
});

/** A weld welded on 2026-02-01 and one not yet welded. */
async function twoWelds(w: RulesWorld) {
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  return {
    welded: await w.weld(w.a, isoId, 'N-1'),
    planned: await w.weld(w.a, isoId, 'N-2', { welded_on: null }),
  };
}

test('records follow reality: an NDT record of a weld with no date welded is WD007 naming it; one dated before the weld was welded names both dates', async (t) => {
  const w = await rulesWorld(t);
  const { welded, planned } = await twoWelds(w);
  let error = await refusal(
    t,
    w.recordNdt(w.a, 'RT', 'RT-1', [
      [welded, 'accepted'],
      [planned, 'accepted'],
    ]),
  );
  t.is(error.code, 'WD007');
  t.is(
    error.message,
    'weld N-2 on ISO ISO-1 has no date welded: a weld is examined once it is welded (record its weldedOn first)',
  );
  t.deepEqual(JSON.parse(error.detail!), { pointer: '/welds' });
  error = await refusal(t, w.recordNdt(w.a, 'RT', 'RT-1', [[welded, 'accepted']], '2026-01-31'));
  t.is(
    error.message,
    'weld N-1 on ISO ISO-1 was welded on 2026-02-01, after RT report RT-1 dated 2026-01-31',
  );
  t.deepEqual(JSON.parse(error.detail!), { pointer: '/examinedOn' });
  await w.recordNdt(w.a, 'RT', 'RT-1', [[welded, 'accepted']], '2026-02-01');
  t.deepEqual(
    await w.statuses(welded, planned),
    ['ACCEPTED', 'PENDING'],
    'on the day it was welded is fine; nothing else was written',
  );
  // The date is judged before the transition rules: a REJECTED weld's early record names the date.
  await w.recordNdt(w.a, 'UT', 'UT-1', [[welded, 'rejected']], '2026-02-02');
  error = await refusal(t, w.recordNdt(w.a, 'UT', 'UT-2', [[welded, 'accepted']], '2026-01-15'));
  t.is(error.code, 'WD007', 'not WD006: REJECTED -> ACCEPTED would be refused too');
});

test('records follow reality: a correction moving an NDT record before its weld is refused; a fit-up inspection comes before welding, a visual one may not', async (t) => {
  const w = await rulesWorld(t);
  const { welded, planned } = await twoWelds(w);
  const recordId = await w.recordNdt(w.a, 'UT', 'UT-1', [[welded, 'accepted']]);
  const error = await refusal(
    t,
    w.sqlAs(w.a, 'inspector', 'select weld_public.correct_ndt_record($1, $2, $3)', [
      recordId,
      JSON.stringify({ examinedOn: '2026-01-15' }),
      'typo',
    ]),
  );
  t.is(error.code, 'WD007');
  await w.recordInspection(w.a, 'fit-up', [welded, planned], 'accepted', '2026-01-20');
  const visual = await refusal(t, w.recordInspection(w.a, 'visual', [planned]));
  t.is(visual.code, 'WD007');
  t.deepEqual(JSON.parse(visual.detail!), { pointer: '/weldIds' });
});

test("records follow reality: a weld's date welded cannot move after an examination that covers it, nor be taken off", async (t) => {
  const w = await rulesWorld(t);
  const { welded } = await twoWelds(w);
  await w.recordNdt(w.a, 'RT', 'RT-1', [[welded, 'accepted']], '2026-02-10');
  let error = await refusal(
    t,
    w.sqlAs(
      w.a,
      'engineer',
      "update weld_public.welds set welded_on = '2026-02-11' where id = $1",
      [welded],
    ),
  );
  t.is(error.code, 'WD007');
  t.is(
    error.message,
    'weld N-1 is covered by RT report RT-1 of 2026-02-10: it was welded on or before that day, not on 2026-02-11',
  );
  error = await refusal(
    t,
    w.sqlAs(w.a, 'engineer', 'update weld_public.welds set welded_on = null where id = $1', [
      welded,
    ]),
  );
  t.is(
    error.message,
    'weld N-1 is covered by RT report RT-1 of 2026-02-10: its date welded cannot be taken off',
  );
  await w.sqlAs(
    w.a,
    'engineer',
    "update weld_public.welds set welded_on = '2026-02-10' where id = $1",
    [welded],
  );
  t.pass();
});
