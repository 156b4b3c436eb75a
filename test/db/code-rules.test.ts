// F7, code rules in SQL: B31.3 random and progressive examination (draw_examination_selection,
// the tiers record_ndt adds), the examination status of an ISO, ASME IX welder continuity
// (QW-322) and ranges (QW-452.1, QW-452.3), the code checks of a weld, and the readiness of a
// test package. Worked examples, each with its numbers in the test's name; worlds built with SQL
// as a DBA would, examinations recorded through record_ndt as the inspector.
import { createHash } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import { tenantFixture, twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';
type Result = 'accepted' | 'rejected';

interface Selection {
  tenant_id: string;
  id: string;
  weld_id: string;
  method: string;
  tier: string;
  seed: string;
  reason: string;
  cause_selection_id: string | null;
  cause_ndt_record_id: string | null;
  selected_by: string | null;
}

/** A selection as the viewer sees it, with its weld's number, welder, ISO and line. */
interface SelectionView extends Selection {
  weld_number: string;
  welder_id: string | null;
  iso_id: string;
  line_number: string;
  state: string;
  ndt_record_id: string | null;
}

interface Examination {
  method: string;
  required_percent: number;
  welds: number;
  required: number;
  selected: number;
  examined: number;
  shortfall: number;
  progressive_open: number;
  welders_not_covered: string[];
}

interface Reason {
  code: string;
  weld_id: string | null;
  iso_id: string | null;
  detail: string | null;
}

/** A fixed UUID per number: the same in every tenant, so md5 rankings can be reproduced. */
const uuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const md5 = (text: string) => createHash('md5').update(text).digest('hex');
/** Weld ids ranked as the spec ranks them: by md5(seed || ':' || weld id). */
const ranked = (seed: string | number, ids: string[], descending = false) =>
  [...ids].sort((x, y) => {
    const [p, q] = [md5(`${seed}:${x}`), md5(`${seed}:${y}`)];
    return (p < q ? -1 : p > q ? 1 : 0) * (descending ? -1 : 1);
  });

const sqlstate = (error: unknown) => (error as { code?: string } | undefined)?.code;
/** The JSON of a refusal's DETAIL: a pointer (WD007), checks (WD010) or reasons (WD009). */
interface Detail {
  pointer?: string;
  checks?: Array<{ code: unknown; detail: unknown }>;
  reasons?: Array<Record<string, unknown>>;
  reasonCount?: number;
}
const detailOf = (error: unknown) => JSON.parse((error as { detail: string }).detail) as Detail;
const sorted = <T>(items: T[]) => [...items].sort();

async function setup(t: ExecutionContext) {
  const { owner, pool, a, b } = await twoTenants(t);
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );
  const columns = (row: Record<string, unknown>) => {
    const keys = Object.keys(row);
    return {
      names: keys.join(', '),
      params: keys.map((_, i) => `$${i + 1}`).join(', '),
      values: Object.values(row),
    };
  };
  /** Inserts a row as the owner (a DBA) and returns its id. */
  const insert = async (table: string, row: Record<string, unknown>) => {
    const { names, params, values } = columns(row);
    return (
      await owner.query<{ id: string }>(
        `insert into weld_public.${table} (${names}) values (${params}) returning id`,
        values,
      )
    ).rows[0]!.id;
  };
  /** Inserts a row as an API user and returns its id. */
  const insertAs = async (
    fx: TenantFixture,
    role: Role,
    table: string,
    row: Record<string, unknown>,
  ) => {
    const { names, params, values } = columns(row);
    return as(
      fx,
      role,
      async (c) =>
        (
          await c.query<{ id: string }>(
            `insert into weld_public.${table} (${names}) values (${params}) returning id`,
            values,
          )
        ).rows[0]!.id,
    );
  };
  const iso = (fx: TenantFixture, number: string, line: string, extra = {}) =>
    insert('isos', { tenant_id: fx.tenantId, iso_number: number, line_number: line, ...extra });
  const welder = (fx: TenantFixture, stamp: string, extra = {}) =>
    insert('welders', { tenant_id: fx.tenantId, stamp, name: `Welder ${stamp}`, ...extra });
  const wps = (fx: TenantFixture, number: string, process: string, extra = {}) =>
    insert('wps', {
      tenant_id: fx.tenantId,
      wps_number: number,
      process,
      state: 'approved',
      ...extra,
    });
  const qualification = (fx: TenantFixture, welderId: string, extra = {}) =>
    insert('welder_qualifications', {
      tenant_id: fx.tenantId,
      welder_id: welderId,
      qualified_on: '2026-01-10',
      ...extra,
    });
  const weld = (fx: TenantFixture, isoId: string, number: string, extra = {}) =>
    insert('welds', {
      tenant_id: fx.tenantId,
      iso_id: isoId,
      weld_number: number,
      type: 'BW',
      size: 4,
      ...extra,
    });
  const dba = (sql: string, params: unknown[]) => owner.query(sql, params);

  const draw = (
    fx: TenantFixture,
    args: { method?: unknown; line?: string | null; iso?: string | null; seed?: unknown },
    role: Role = 'inspector',
  ) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<Selection>(
            'select * from weld_public.draw_examination_selection($1, $2, $3, $4)',
            [args.method === undefined ? 'RT' : args.method, args.line, args.iso, args.seed],
          )
        ).rows,
    );
  const recordNdt = (
    fx: TenantFixture,
    method: string,
    reportNumber: string,
    welds: Array<[string, Result]>,
    examinedOn = '2026-02-10',
    role: Role = 'inspector',
  ) =>
    as(
      fx,
      role,
      async (c) =>
        (
          await c.query<{ id: string; result: string }>(
            'select * from weld_public.record_ndt($1)',
            [
              JSON.stringify({
                method,
                reportNumber,
                examinedOn,
                welds: welds.map(([weldId, result]) => ({ weldId, result })),
              }),
            ],
          )
        ).rows[0]!,
    );
  const moveWeld = (
    fx: TenantFixture,
    role: Role,
    weldId: string,
    to: string,
    reason: string | null = null,
  ) =>
    as(fx, role, (c) =>
      c.query('select weld_public.change_weld_status($1, $2, $3)', [weldId, to, reason]),
    );
  /** Repaired and waiting for its re-examination: REJECTED -> REPAIR -> PENDING. */
  const repair = async (fx: TenantFixture, weldId: string) => {
    await moveWeld(fx, 'engineer', weldId, 'REPAIR');
    await moveWeld(fx, 'inspector', weldId, 'PENDING');
  };
  /** The tenant's selections as its viewer sees them, in weld number order. */
  const selections = (fx: TenantFixture) =>
    as(
      fx,
      'viewer',
      async (c) =>
        (
          await c.query<SelectionView>(
            `select s.*, w.weld_number, w.welder_id, w.iso_id, i.line_number,
                    weld_public.examination_selections_state(s) as state,
                    weld_public.examination_selections_ndt_record_id(s) as ndt_record_id
               from weld_public.examination_selections s
               join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
               join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id
              order by w.weld_number, s.method`,
          )
        ).rows,
    );
  const examination = (fx: TenantFixture, isoId: string) =>
    as(
      fx,
      'viewer',
      async (c) =>
        (
          await c.query<Examination>(
            `select e.method, e.required_percent::float8 as required_percent, e.welds, e.required,
                    e.selected, e.examined, e.shortfall, e.progressive_open,
                    array(select u::text from unnest(e.welders_not_covered) u order by 1)
                      as welders_not_covered
               from weld_public.isos i
               cross join lateral weld_public.isos_examination(i) e
              where i.id = $1`,
            [isoId],
          )
        ).rows,
    );
  const weldNumbers = async (fx: TenantFixture, ids: string[]) =>
    (
      await owner.query<{ weld_number: string }>(
        `select weld_number from weld_public.welds where tenant_id = $1 and id = any($2)
          order by weld_number`,
        [fx.tenantId, ids],
      )
    ).rows.map((r) => r.weld_number);
  const statuses = async (...weldIds: string[]) =>
    (
      await owner.query<{ status: string }>(
        `select w.status from unnest($1::uuid[]) with ordinality as x (id, n)
           join weld_public.welds w on w.id = x.id order by x.n`,
        [weldIds],
      )
    ).rows.map((r) => r.status);
  return {
    owner,
    pool,
    a,
    b,
    as,
    insert,
    insertAs,
    iso,
    welder,
    wps,
    qualification,
    weld,
    dba,
    draw,
    recordNdt,
    moveWeld,
    repair,
    selections,
    examination,
    weldNumbers,
    statuses,
  };
}
type World = Awaited<ReturnType<typeof setup>>;

/** Welds of one welder on one ISO: `count` of them, numbered prefix-01, prefix-02, ... */
async function weldsOf(
  s: World,
  fx: TenantFixture,
  isoId: string,
  welderId: string | null,
  prefix: string,
  count: number,
  extra: Record<string, unknown> = {},
) {
  const ids: string[] = [];
  for (let i = 1; i <= count; i++) {
    ids.push(
      await s.weld(fx, isoId, `${prefix}-${String(i).padStart(2, '0')}`, {
        welder_id: welderId,
        ...extra,
      }),
    );
  }
  return ids;
}

//------------------------------------------------------------------------------------------------
// Settings and rule tables

test('settings default to welder_line lots, 6 months continuity, show; rules seeded per tenant, written only by a DBA', async (t) => {
  const s = await setup(t);
  const { a, b, as, dba } = s;
  const settings = await as(a, 'viewer', (c) =>
    c.query(
      `select examination_lot, continuity_months, weld_checks from weld_public.tenant_settings`,
    ),
  );
  t.deepEqual(settings.rows, [
    { examination_lot: 'welder_line', continuity_months: 6, weld_checks: 'show' },
  ]);

  const rules = await as(a, 'viewer', (c) =>
    c.query(
      `select method, fluid_service, percent::float8 as percent, weld_types
         from weld_public.examination_rules order by method, fluid_service`,
    ),
  );
  t.deepEqual(rules.rows, [
    { method: 'RT', fluid_service: 'category_m', percent: 20, weld_types: ['BW'] },
    { method: 'RT', fluid_service: 'high_pressure', percent: 100, weld_types: ['BW'] },
    { method: 'RT', fluid_service: 'normal', percent: 5, weld_types: ['BW'] },
    { method: 'RT', fluid_service: 'severe_cyclic', percent: 100, weld_types: ['BW'] },
    {
      method: 'VT',
      fluid_service: 'category_d',
      percent: 100,
      weld_types: ['BW', 'SW', 'FW', 'BR', 'TW'],
    },
  ]);
  const ranges = await as(a, 'viewer', (c) =>
    c.query(
      `select dimension, coupon_from_in::float8 as "from", coupon_below_in::float8 as below,
              min_in::float8 as min, max_factor::float8 as factor
         from weld_public.qualification_range_rules order by dimension, coupon_from_in`,
    ),
  );
  t.deepEqual(ranges.rows, [
    { dimension: 'diameter', from: 0, below: 1, min: null, factor: null },
    { dimension: 'diameter', from: 1, below: 2.875, min: 1, factor: null },
    { dimension: 'diameter', from: 2.875, below: null, min: 2.875, factor: null },
    { dimension: 'thickness', from: 0, below: 0.375, min: null, factor: 2 },
    { dimension: 'thickness', from: 0.375, below: null, min: null, factor: 2 },
  ]);

  // No API role writes them, not even the admin.
  for (const sql of [
    `update weld_public.tenant_settings set weld_checks = 'refuse'`,
    `update weld_public.examination_rules set percent = 1`,
    `delete from weld_public.examination_rules`,
    `update weld_public.qualification_range_rules set min_in = 0`,
    `insert into weld_public.examination_rules (method, fluid_service, percent) values ('UT', 'normal', 10)`,
  ]) {
    await t.throwsAsync(
      as(a, 'admin', (c) => c.query(sql)),
      { code: '42501' },
      sql,
    );
  }
  // A DBA does; the checks hold.
  for (const sql of [
    `update weld_public.tenant_settings set continuity_months = 25 where tenant_id = $1`,
    `update weld_public.tenant_settings set continuity_months = 0 where tenant_id = $1`,
    `update weld_public.tenant_settings set examination_lot = 'welder' where tenant_id = $1`,
    `update weld_public.tenant_settings set weld_checks = 'warn' where tenant_id = $1`,
  ]) {
    await t.throwsAsync(dba(sql, [a.tenantId]), { code: '23514' }, sql);
  }
  await dba(`update weld_public.tenant_settings set continuity_months = 24 where tenant_id = $1`, [
    a.tenantId,
  ]);
  // Tenant B has rows of its own, and sees only them.
  const theirs = await as(b, 'viewer', (c) =>
    c.query<{ n: number }>(
      `select (select count(*)::int from weld_public.examination_rules) +
              (select count(*)::int from weld_public.qualification_range_rules) as n`,
    ),
  );
  t.is(theirs.rows[0]!.n, 10);
});

test('outside_diameter per B36.10: NPS 1/2 -> 0.840, 3/8 -> 0.675, 3/4 -> 1.050, 2 -> 2.375, 2 1/2 -> 2.875, 3 -> 3.5, 14 -> 14, 2.2 -> unknown', async (t) => {
  const { owner } = await setup(t);
  const rows = await owner.query<{ nps: number; od: number | null }>(
    `select nps::float8 as nps, weld_private.outside_diameter(nps)::float8 as od
       from unnest('{0.5, 0.375, 0.75, 2, 2.5, 3, 14, 16, 2.2}'::numeric[]) nps`,
  );
  t.deepEqual(
    rows.rows.map((r) => [r.nps, r.od]),
    [
      [0.5, 0.84],
      [0.375, 0.675],
      [0.75, 1.05],
      [2, 2.375],
      [2.5, 2.875],
      [3, 3.5],
      [14, 14],
      [16, 16],
      [2.2, null],
    ],
  );
});

//------------------------------------------------------------------------------------------------
// Random examination

/**
 * Line L-100, ISO-100: welder W1 with 14 butt welds, 7 socket welds and 2 VOIDED butt welds;
 * W2 with 13 butt welds and 8 fillet welds; W3 with 13 butt welds. The ids are the same in
 * every tenant it is built in.
 */
async function fortyButtWelds(s: World, fx: TenantFixture) {
  const isoId = await s.insert('isos', {
    tenant_id: fx.tenantId,
    id: uuid(1),
    iso_number: 'ISO-100',
    line_number: 'L-100',
  });
  let next = 100;
  const welders: Record<string, string> = {};
  const butt: Record<string, string[]> = {};
  const excluded: string[] = [];
  const plan = [
    ['W1', 14, 'SW', 7, 2],
    ['W2', 13, 'FW', 8, 0],
    ['W3', 13, 'FW', 0, 0],
  ] as const;
  for (const [k, [stamp, butts, otherType, others, voided]] of plan.entries()) {
    const welderId = await s.insert('welders', {
      tenant_id: fx.tenantId,
      id: uuid(10 + k),
      stamp,
      name: `Welder ${stamp}`,
    });
    welders[stamp] = welderId;
    butt[stamp] = [];
    const add = async (number: string, type: string, status = 'PENDING') =>
      s.insert('welds', {
        tenant_id: fx.tenantId,
        id: uuid(next++),
        iso_id: isoId,
        weld_number: number,
        type,
        size: 4,
        status,
        welder_id: welderId,
      });
    for (let i = 1; i <= butts; i++) {
      butt[stamp].push(await add(`${stamp}-${String(i).padStart(2, '0')}`, 'BW'));
    }
    for (let i = 1; i <= others; i++)
      excluded.push(await add(`${stamp}-${otherType}${i}`, otherType));
    for (let i = 1; i <= voided; i++) excluded.push(await add(`${stamp}-V${i}`, 'BW', 'VOIDED'));
  }
  return { isoId, welders, butt, excluded };
}

test('random: 40 butt welds by 3 welders (14/13/13) on one line at 5% -> 3 selections, ceil(5% x 14) = ceil(5% x 13) = 1 per welder; non-butt and VOIDED welds neither selected nor counted', async (t) => {
  const s = await setup(t);
  const { a, draw, selections } = s;
  const world = await fortyButtWelds(s, a);
  const drawn = await draw(a, { line: 'L-100', seed: 42 });
  t.is(drawn.length, 3, 'one per lot: 7 socket and 2 VOIDED welds would make W1 need 2 (23 welds)');

  const byWelder = new Map<string, Selection[]>();
  for (const row of drawn) {
    const stamp = Object.keys(world.butt).find((w) => world.butt[w]!.includes(row.weld_id));
    t.truthy(stamp, `${row.weld_id} is a butt weld of one of the welders`);
    byWelder.set(stamp!, [...(byWelder.get(stamp!) ?? []), row]);
    t.false(world.excluded.includes(row.weld_id));
  }
  t.deepEqual([...byWelder.entries()].map(([w, rows]) => [w, rows.length]).sort(), [
    ['W1', 1],
    ['W2', 1],
    ['W3', 1],
  ]);
  for (const row of drawn) {
    t.like(row, {
      tenant_id: a.tenantId,
      method: 'RT',
      tier: 'random',
      seed: '42',
      cause_selection_id: null,
      cause_ndt_record_id: null,
      selected_by: a.users.inspector,
    });
  }
  // The reason names the method, the percent, the lot's size, welder, line and seed.
  const w1 = byWelder.get('W1')![0]!;
  for (const part of ['random', 'RT', '5', '14', 'W1', 'L-100', '42']) {
    t.true(w1.reason.includes(part), `"${w1.reason}" names ${part}`);
  }
  t.true(byWelder.get('W2')![0]!.reason.includes('13'));

  // Ranked by md5(seed || ':' || weld id): each lot's first.
  for (const stamp of ['W1', 'W2', 'W3']) {
    t.is(byWelder.get(stamp)![0]!.weld_id, ranked(42, world.butt[stamp]!)[0]!, stamp);
  }
  // What was returned is what is stored.
  const stored = await selections(a);
  t.deepEqual(sorted(stored.map((r) => r.id)), sorted(drawn.map((r) => r.id)));
  t.true(stored.every((r) => r.state === 'open' && r.ndt_record_id === null));
});

test('random: seed 42 on the same 40 welds selects the same weld numbers in another tenant; another seed selects another set; drawing again selects nothing', async (t) => {
  const s = await setup(t);
  const { owner, a, b, draw, weldNumbers } = s;
  const c = await tenantFixture(owner, 'charlie');
  const world = await fortyButtWelds(s, a);
  await fortyButtWelds(s, b);
  await fortyButtWelds(s, c);

  const first = await draw(a, { line: 'L-100', seed: 42 });
  const again = await draw(b, { line: 'L-100', seed: '42' });
  const numbers = await weldNumbers(
    a,
    first.map((r) => r.weld_id),
  );
  t.is(numbers.length, 3);
  t.deepEqual(
    await weldNumbers(
      b,
      again.map((r) => r.weld_id),
    ),
    numbers,
  );

  // A seed whose first picks differ from 42's however md5 is ordered (ascending or descending).
  const firsts = (seed: number, descending: boolean) =>
    ['W1', 'W2', 'W3'].map((w) => ranked(seed, world.butt[w]!, descending)[0]).join();
  const other = [...Array(1000).keys()].find(
    (seed) =>
      seed !== 42 &&
      firsts(seed, false) !== firsts(42, false) &&
      firsts(seed, true) !== firsts(42, true),
  )!;
  const different = await draw(c, { line: 'L-100', seed: other });
  t.is(different.length, 3);
  t.true(different.every((r) => r.seed === String(other)));
  t.notDeepEqual(
    await weldNumbers(
      c,
      different.map((r) => r.weld_id),
    ),
    numbers,
    `seed ${other}`,
  );

  // Nothing missing: no new rows, with the same seed, another, or none (random).
  t.deepEqual(await draw(a, { line: 'L-100', seed: 42 }), []);
  t.deepEqual(await draw(a, { line: 'L-100', seed: other }), []);
  t.deepEqual(await draw(a, { line: 'L-100' }), []);
  t.deepEqual(await draw(a, { iso: world.isoId }), []);
  const count = await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_public.examination_selections where tenant_id = $1`,
    [a.tenantId],
  );
  t.is(count.rows[0]!.n, 3);
});

test('random: a seed null draws with a random seed in 0 .. 2^53-1, and 0 and 9007199254740991 are valid seeds', async (t) => {
  const s = await setup(t);
  const { a, iso, draw } = s;
  const isoIds = [
    await iso(a, 'ISO-S1', 'L-S1'),
    await iso(a, 'ISO-S2', 'L-S2'),
    await iso(a, 'ISO-S3', 'L-S3'),
  ];
  for (const [k, isoId] of isoIds.entries()) await weldsOf(s, a, isoId, a.welderId, `S${k}`, 4);
  const [none] = await draw(a, { iso: isoIds[0] });
  t.true(BigInt(none!.seed) >= 0n && BigInt(none!.seed) <= 9007199254740991n);
  t.is((await draw(a, { iso: isoIds[1], seed: 0 }))[0]!.seed, '0');
  t.is((await draw(a, { iso: isoIds[2], seed: '9007199254740991' }))[0]!.seed, '9007199254740991');
});

test('random: a draw by isoId touches only the lots of that ISO: W1 on L-1 (10 welds over 2 ISOs) and W2 -> 2; then line L-1 adds W3 -> 1; line L-2 -> 1', async (t) => {
  const s = await setup(t);
  const { a, iso, welder, draw } = s;
  const [w1, w2, w3] = [await welder(a, 'W1'), await welder(a, 'W2'), await welder(a, 'W3')];
  const isoA = await iso(a, 'ISO-A', 'L-1');
  const isoB = await iso(a, 'ISO-B', 'L-1');
  const isoC = await iso(a, 'ISO-C', 'L-2');
  const w1OnL1 = [
    ...(await weldsOf(s, a, isoA, w1, 'A1', 5)),
    ...(await weldsOf(s, a, isoB, w1, 'B1', 5)),
  ];
  const w2OnA = await weldsOf(s, a, isoA, w2, 'A2', 5);
  const w3OnB = await weldsOf(s, a, isoB, w3, 'B3', 5);
  const w1OnC = await weldsOf(s, a, isoC, w1, 'C1', 5);

  const byIso = await draw(a, { iso: isoA, seed: 7 });
  t.is(byIso.length, 2);
  t.is(byIso.filter((r) => w1OnL1.includes(r.weld_id)).length, 1, "W1's lot on L-1");
  t.is(byIso.filter((r) => w2OnA.includes(r.weld_id)).length, 1, "W2's lot");
  // W1's lot is its welds on the line, on either ISO: the first by md5 of all ten.
  t.is(byIso.find((r) => w1OnL1.includes(r.weld_id))!.weld_id, ranked(7, w1OnL1)[0]!);

  const byLine = await draw(a, { line: 'L-1', seed: 7 });
  t.is(byLine.length, 1);
  t.true(w3OnB.includes(byLine[0]!.weld_id), 'only W3 was missing on L-1');
  const other = await draw(a, { line: 'L-2', seed: 7 });
  t.is(other.length, 1);
  t.true(w1OnC.includes(other[0]!.weld_id), "W1's lot on L-2 is a lot of its own");
  t.deepEqual(await draw(a, { iso: isoC, seed: 7 }), []);
});

test('random: rt_percent 10 on a 20-weld lot -> 2; category M (20%) on 20 welds -> 4; VT on category D (100%) of 3 BW + 2 SW -> 5; UT required nowhere -> none', async (t) => {
  const s = await setup(t);
  const { a, iso, draw, examination } = s;
  const ten = await iso(a, 'ISO-10', 'L-10', { rt_percent: 10 });
  await weldsOf(s, a, ten, a.welderId, 'T', 20);
  t.is((await draw(a, { iso: ten, seed: 1 })).length, 2, 'greatest(5, 10) = 10% of 20');
  t.like((await examination(a, ten))[0], { method: 'RT', required_percent: 10, required: 2 });

  const m = await iso(a, 'ISO-M', 'L-M', { fluid_service: 'category_m' });
  await weldsOf(s, a, m, a.welderId, 'M', 20);
  t.is((await draw(a, { iso: m, seed: 1 })).length, 4, 'greatest(20, 5) = 20% of 20');

  const d = await iso(a, 'ISO-D', 'L-D', { fluid_service: 'category_d', rt_percent: 0 });
  await weldsOf(s, a, d, a.welderId, 'DB', 3);
  await weldsOf(s, a, d, a.welderId, 'DS', 2, { type: 'SW' });
  t.is((await draw(a, { method: 'VT', iso: d, seed: 1 })).length, 5, 'VT 100% of every type');
  t.deepEqual(await draw(a, { method: 'RT', iso: d, seed: 1 }), [], 'RT 0% there');
  t.deepEqual(await draw(a, { method: 'UT', iso: ten, seed: 1 }), [], 'no UT rule');
});

test('random: welds without a welder are a lot of their own: 20 of W01 + 3 without -> 2 selections', async (t) => {
  const s = await setup(t);
  const { a, iso, draw } = s;
  const isoId = await iso(a, 'ISO-N', 'L-N');
  const named = await weldsOf(s, a, isoId, a.welderId, 'N', 20);
  const nobody = await weldsOf(s, a, isoId, null, 'X', 3);
  const drawn = await draw(a, { iso: isoId, seed: 5 });
  t.is(drawn.length, 2);
  t.is(drawn.filter((r) => named.includes(r.weld_id)).length, 1);
  t.is(drawn.filter((r) => nobody.includes(r.weld_id)).length, 1);
});

test('random: welder_iso lots: W01 with 10 welds on each of 2 ISOs of one line -> 1 by line lot, then a DBA switches examination_lot and the same draw adds 1 (one per ISO)', async (t) => {
  const s = await setup(t);
  const { a, iso, draw, dba, examination } = s;
  const isoA = await iso(a, 'ISO-LA', 'L-LOT');
  const isoB = await iso(a, 'ISO-LB', 'L-LOT');
  const onA = await weldsOf(s, a, isoA, a.welderId, 'LA', 10);
  const onB = await weldsOf(s, a, isoB, a.welderId, 'LB', 10);
  const first = await draw(a, { line: 'L-LOT', seed: 3 });
  t.is(first.length, 1, 'ceil(5% x 20) = 1');
  t.like((await examination(a, isoA))[0], { welds: 20, required: 1, selected: 1, shortfall: 0 });

  await dba(
    `update weld_public.tenant_settings set examination_lot = 'welder_iso' where tenant_id = $1`,
    [a.tenantId],
  );
  const firstOnA = onA.includes(first[0]!.weld_id);
  const [emptyIso, emptyWelds] = firstOnA ? [isoB, onB] : [isoA, onA];
  t.like((await examination(a, emptyIso))[0], {
    welds: 10,
    required: 1,
    selected: 0,
    shortfall: 1,
  });
  const second = await draw(a, { line: 'L-LOT', seed: 3 });
  t.is(second.length, 1, 'ceil(5% x 10) = 1 per ISO; the other ISO has its one');
  t.true(emptyWelds.includes(second[0]!.weld_id));
});

test('random: a DBA raising examination_rules (RT, normal) to 20% makes a 14-weld lot need ceil(2.8) = 3: the next draw adds 2', async (t) => {
  const s = await setup(t);
  const { a, iso, draw, dba, examination } = s;
  const isoId = await iso(a, 'ISO-R', 'L-R');
  await weldsOf(s, a, isoId, a.welderId, 'R', 14);
  t.is((await draw(a, { iso: isoId, seed: 11 })).length, 1);
  await dba(
    `update weld_public.examination_rules set percent = 20
      where tenant_id = $1 and method = 'RT' and fluid_service = 'normal'`,
    [a.tenantId],
  );
  t.like((await examination(a, isoId))[0], {
    required_percent: 20,
    welds: 14,
    required: 3,
    selected: 1,
    shortfall: 2,
  });
  t.is((await draw(a, { iso: isoId, seed: 11 })).length, 2);
  t.like((await examination(a, isoId))[0], { required: 3, selected: 3, shortfall: 0 });
});

test('random: refusals: viewer WD003; bad method, line/iso, seed WD007 with pointers; unknown ISO and line WD001; nothing written', async (t) => {
  const s = await setup(t);
  const { owner, a, draw } = s;
  await a.weld();
  const viewer = await t.throwsAsync(draw(a, { iso: a.isoId, seed: 1 }, 'viewer'));
  t.is(sqlstate(viewer), 'WD003');

  const cases: Array<[string, Parameters<typeof draw>[1], string]> = [
    ['both a line and an ISO', { line: 'alpha-LINE-1', iso: a.isoId }, '/lineNumber'],
    ['neither a line nor an ISO', {}, '/lineNumber'],
    ['an unknown method', { method: 'XR', iso: a.isoId }, '/method'],
    [
      'a method that is no NDT method (an inspection kind)',
      { method: 'visual', iso: a.isoId },
      '/method',
    ],
    ['no method', { method: null, iso: a.isoId }, '/method'],
    ['a negative seed', { iso: a.isoId, seed: -1 }, '/seed'],
    ['a seed of 2^53', { iso: a.isoId, seed: '9007199254740992' }, '/seed'],
  ];
  for (const [label, args, pointer] of cases) {
    const error = await t.throwsAsync(draw(a, args), undefined, label);
    t.is(sqlstate(error), 'WD007', `${label}: ${error?.message}`);
    t.deepEqual(detailOf(error), { pointer }, label);
  }

  const missing = '00000000-0000-4000-8000-00000000abcd';
  const unknownIso = await t.throwsAsync(draw(a, { iso: missing }));
  t.is(sqlstate(unknownIso), 'WD001');
  t.is(unknownIso.message, `iso ${missing} not found`);
  const unknownLine = await t.throwsAsync(draw(a, { line: 'L-NONE' }));
  t.is(sqlstate(unknownLine), 'WD001');
  t.is(unknownLine.message, 'line L-NONE not found');

  const count = await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_public.examination_selections`,
  );
  t.is(count.rows[0]!.n, 0);
});

test('selections are written only through the functions, by no API role', async (t) => {
  const s = await setup(t);
  const { a, as, draw } = s;
  const weldId = await a.weld();
  const [selection] = await draw(a, { iso: a.isoId, seed: 1 });
  for (const role of ['inspector', 'engineer', 'admin'] as const) {
    for (const sql of [
      `insert into weld_public.examination_selections (weld_id, method, tier, seed, reason) values ('${weldId}', 'UT', 'random', 1, 'x')`,
      `update weld_public.examination_selections set tier = 'full'`,
      `delete from weld_public.examination_selections where id = '${selection!.id}'`,
    ]) {
      await t.throwsAsync(
        as(a, role, (c) => c.query(sql)),
        { code: '42501' },
        `${role}: ${sql}`,
      );
    }
  }
});

//------------------------------------------------------------------------------------------------
// Selection state

test('state: a selection is open until an RT record covers its weld (a UT record does not), then done, naming the earliest RT record by examined_on', async (t) => {
  const s = await setup(t);
  const { a, iso, draw, recordNdt, selections } = s;
  const isoId = await iso(a, 'ISO-ST', 'L-ST');
  await weldsOf(s, a, isoId, a.welderId, 'ST', 14);
  const [selection] = await draw(a, { iso: isoId, seed: 42 });
  const mine = async () => (await selections(a)).find((r) => r.id === selection!.id)!;
  t.like(await mine(), { state: 'open', ndt_record_id: null });

  await recordNdt(a, 'UT', 'UT-1', [[selection!.weld_id, 'accepted']], '2026-02-01');
  t.like(await mine(), { state: 'open', ndt_record_id: null }, 'UT does not close an RT selection');

  const rt = await recordNdt(a, 'RT', 'RT-1', [[selection!.weld_id, 'accepted']], '2026-02-10');
  t.like(await mine(), { state: 'done', ndt_record_id: rt.id });
  // A later one does not change it; an earlier one (by examined_on) is the one named.
  await recordNdt(a, 'RT', 'RT-2', [[selection!.weld_id, 'accepted']], '2026-02-20');
  t.like(await mine(), { state: 'done', ndt_record_id: rt.id });
  const earlier = await recordNdt(
    a,
    'RT',
    'RT-0',
    [[selection!.weld_id, 'accepted']],
    '2026-02-05',
  );
  t.like(await mine(), { state: 'done', ndt_record_id: earlier.id });
});

//------------------------------------------------------------------------------------------------
// Progressive examination

/** Line L-P: W1 and W2 with 14 butt welds each on ISO-P; W1 with 6 more on line L-Q. */
async function progressiveWorld(s: World, fx: TenantFixture) {
  const { iso, welder, draw } = s;
  const [w1, w2] = [await welder(fx, 'P1'), await welder(fx, 'P2')];
  const isoP = await iso(fx, 'ISO-P', 'L-P');
  const isoQ = await iso(fx, 'ISO-Q', 'L-Q');
  const lot1 = await weldsOf(s, fx, isoP, w1, 'P1', 14);
  const lot2 = await weldsOf(s, fx, isoP, w2, 'P2', 14);
  const elsewhere = await weldsOf(s, fx, isoQ, w1, 'Q1', 6);
  const drawn = await draw(fx, { line: 'L-P', seed: 42 });
  const random1 = drawn.find((r) => lot1.includes(r.weld_id))!;
  const random2 = drawn.find((r) => lot2.includes(r.weld_id))!;
  return { w1, w2, isoP, isoQ, lot1, lot2, elsewhere, random1, random2 };
}

test("progressive: an RT rejection of W1's random weld adds exactly 2 tier-1 selections of W1's lot on L-P (14 welds), with the cause, the seed 42 and the recorder; none of W2 or of W1 on L-Q", async (t) => {
  const s = await setup(t);
  const { a, recordNdt, selections, weldNumbers, statuses } = s;
  const world = await progressiveWorld(s, a);
  const [rejected] = await weldNumbers(a, [world.random1.weld_id]);
  const record = await recordNdt(a, 'RT', 'RT-P1', [
    [world.random1.weld_id, 'rejected'],
    [world.random2.weld_id, 'accepted'],
  ]);
  t.deepEqual(await statuses(world.random1.weld_id), ['REJECTED']);

  const all = await selections(a);
  t.is(all.length, 4);
  const tier1 = all.filter((r) => r.tier === '1');
  t.is(tier1.length, 2);
  for (const row of tier1) {
    t.true(world.lot1.includes(row.weld_id), `${row.weld_number} is W1's on L-P`);
    t.not(row.weld_id, world.random1.weld_id);
    t.like(row, {
      method: 'RT',
      seed: '42',
      cause_selection_id: world.random1.id,
      cause_ndt_record_id: record.id,
      selected_by: a.users.inspector,
      state: 'open',
    });
    t.true(row.reason.includes('RT-P1'), row.reason);
    t.true(row.reason.includes(rejected!), row.reason);
  }
  t.is(new Set(tier1.map((r) => r.weld_id)).size, 2);
  t.false(all.some((r) => world.elsewhere.includes(r.weld_id)));
  t.is(all.filter((r) => world.lot2.includes(r.weld_id)).length, 1, "W2's random one only");
});

test('progressive: rejecting a weld that was not selected adds no selection', async (t) => {
  const s = await setup(t);
  const { a, recordNdt, selections } = s;
  const world = await progressiveWorld(s, a);
  const unselected = world.lot1.find((id) => id !== world.random1.weld_id)!;
  await recordNdt(a, 'RT', 'RT-N1', [[unselected, 'rejected']]);
  await recordNdt(a, 'UT', 'UT-N1', [[world.random1.weld_id, 'rejected']]);
  const all = await selections(a);
  t.deepEqual(sorted(all.map((r) => r.tier)), ['random', 'random']);
});

test('progressive: tier 1 picks only welds neither selected nor examined: 10 of the other 13 examined -> both tier-1 welds from the last 3; then 2 tier-1 failures find 1 left -> 1 tier-2', async (t) => {
  const s = await setup(t);
  const { a, recordNdt, selections } = s;
  const world = await progressiveWorld(s, a);
  const others = world.lot1.filter((id) => id !== world.random1.weld_id);
  const examined = others.slice(0, 10);
  const left = others.slice(10);
  await recordNdt(
    a,
    'RT',
    'RT-E1',
    examined.map((id) => [id, 'accepted']),
  );
  await recordNdt(a, 'RT', 'RT-E2', [[world.random1.weld_id, 'rejected']]);
  const tier1 = (await selections(a)).filter((r) => r.tier === '1');
  t.is(tier1.length, 2);
  t.true(tier1.every((r) => left.includes(r.weld_id)));

  await recordNdt(
    a,
    'RT',
    'RT-E3',
    tier1.map((r) => [r.weld_id, 'rejected']),
  );
  const tier2 = (await selections(a)).filter((r) => r.tier === '2');
  t.deepEqual(
    tier2.map((r) => r.weld_id),
    left.filter((id) => !tier1.some((r) => r.weld_id === id)),
  );
});

test('progressive: 1 random rejection -> 2 tier 1; 2 tier-1 rejections -> 2 x 2 = 4 tier 2; 1 tier-2 rejection -> the other 14 - 7 = 7 welds of the lot as full', async (t) => {
  const s = await setup(t);
  const { a, recordNdt, selections, draw } = s;
  const world = await progressiveWorld(s, a);
  await recordNdt(a, 'RT', 'RT-T1', [[world.random1.weld_id, 'rejected']]);
  const tier1 = (await selections(a)).filter((r) => r.tier === '1');
  t.is(tier1.length, 2);

  const second = await recordNdt(
    a,
    'RT',
    'RT-T2',
    tier1.map((r) => [r.weld_id, 'rejected']),
  );
  const afterT2 = await selections(a);
  const tier2 = afterT2.filter((r) => r.tier === '2');
  t.is(tier2.length, 4);
  for (const cause of tier1) {
    t.is(tier2.filter((r) => r.cause_selection_id === cause.id).length, 2, cause.weld_number);
  }
  for (const row of tier2) {
    t.true(world.lot1.includes(row.weld_id));
    t.like(row, { seed: '42', cause_ndt_record_id: second.id, state: 'open' });
    t.true(row.reason.includes('RT-T2'), row.reason);
  }
  t.is(new Set(afterT2.map((r) => r.weld_id)).size, afterT2.length, 'a weld is selected once');

  const [failing, ...passing] = tier2;
  const third = await recordNdt(a, 'RT', 'RT-T3', [
    [failing!.weld_id, 'rejected'],
    ...passing.map((r) => [r.weld_id, 'accepted'] as [string, Result]),
  ]);
  const final = await selections(a);
  const full = final.filter((r) => r.tier === 'full');
  t.is(full.length, 7, '14 - 1 random - 2 tier 1 - 4 tier 2');
  t.true(
    full.every(
      (r) =>
        world.lot1.includes(r.weld_id) &&
        r.cause_selection_id === failing!.id &&
        r.cause_ndt_record_id === third.id &&
        r.seed === '42',
    ),
  );
  t.deepEqual(
    sorted(final.filter((r) => world.lot1.includes(r.weld_id)).map((r) => r.weld_id)),
    sorted(world.lot1),
    "every weld of W1's lot is selected once",
  );
  t.is(final.filter((r) => !world.lot1.includes(r.weld_id)).length, 1, "W2's random one");
  t.deepEqual(await draw(a, { line: 'L-P', seed: 42 }), []);
});

test('progressive: the same selected weld rejected again after repair (REJECTED -> REPAIR -> PENDING) draws nothing more: still 1 + 2', async (t) => {
  const s = await setup(t);
  const { a, recordNdt, selections, repair, statuses } = s;
  const world = await progressiveWorld(s, a);
  await recordNdt(a, 'RT', 'RT-A1', [[world.random1.weld_id, 'rejected']]);
  t.is((await selections(a)).length, 4);
  await repair(a, world.random1.weld_id);
  t.deepEqual(await statuses(world.random1.weld_id), ['PENDING']);
  await recordNdt(a, 'RT', 'RT-A2', [[world.random1.weld_id, 'rejected']], '2026-02-20');
  t.deepEqual(await statuses(world.random1.weld_id), ['REJECTED']);
  const all = await selections(a);
  t.is(all.length, 4);
  t.is(all.filter((r) => r.tier === '1').length, 2);
});

test('progressive: a correction that rejects a selected weld adds tier 1 too (correct_ndt_record)', async (t) => {
  const s = await setup(t);
  const { a, as, recordNdt, selections } = s;
  const world = await progressiveWorld(s, a);
  const record = await recordNdt(a, 'RT', 'RT-C1', [[world.random1.weld_id, 'accepted']]);
  t.is((await selections(a)).filter((r) => r.tier === '1').length, 0);
  await as(a, 'inspector', (c) =>
    c.query('select weld_public.correct_ndt_record($1, $2, $3)', [
      record.id,
      JSON.stringify({ welds: [{ weldId: world.random1.weld_id, result: 'rejected' }] }),
      'film re-read: porosity',
    ]),
  );
  const tier1 = (await selections(a)).filter((r) => r.tier === '1');
  t.is(tier1.length, 2);
  t.true(tier1.every((r) => r.cause_ndt_record_id === record.id && world.lot1.includes(r.weld_id)));
});

test("progressive runs in the record's transaction: a record refused with WD006 (a VOIDED weld in it) leaves no tier-1 selection", async (t) => {
  const s = await setup(t);
  const { owner, a, recordNdt, selections, weld } = s;
  const world = await progressiveWorld(s, a);
  const voided = await weld(a, world.isoQ, 'Q-VOID', { status: 'VOIDED' });
  const error = await t.throwsAsync(
    recordNdt(a, 'RT', 'RT-V1', [
      [world.random1.weld_id, 'rejected'],
      [voided, 'rejected'],
    ]),
  );
  t.is(sqlstate(error), 'WD006');
  t.deepEqual(sorted((await selections(a)).map((r) => r.tier)), ['random', 'random']);
  const records = await owner.query(`select from weld_public.ndt_records where tenant_id = $1`, [
    a.tenantId,
  ]);
  t.is(records.rowCount, 0);
});

//------------------------------------------------------------------------------------------------
// The examination status of an ISO

test('isos_examination: 40 welds (14/13/13) at 5%: before a draw required 3, shortfall 3, 3 welders not covered; after it selected 3; after RT with 1 rejection examined 3, selected 5, progressive open 2; then 0', async (t) => {
  const s = await setup(t);
  const { a, iso, welder, draw, recordNdt, examination, selections } = s;
  const isoId = await iso(a, 'ISO-E', 'L-E');
  const welders = [await welder(a, 'E1'), await welder(a, 'E2'), await welder(a, 'E3')];
  for (const [k, count] of [14, 13, 13].entries()) {
    await weldsOf(s, a, isoId, welders[k]!, `E${k + 1}`, count);
  }
  const row = (over: Partial<Examination>): Examination => ({
    method: 'RT',
    required_percent: 5,
    welds: 40,
    required: 3,
    selected: 0,
    examined: 0,
    shortfall: 3,
    progressive_open: 0,
    welders_not_covered: sorted(welders),
    ...over,
  });
  t.deepEqual(await examination(a, isoId), [row({})]);

  const drawn = await draw(a, { iso: isoId, seed: 42 });
  t.deepEqual(await examination(a, isoId), [
    row({ selected: 3, shortfall: 0, welders_not_covered: [] }),
  ]);

  const [first, ...rest] = drawn;
  await recordNdt(a, 'RT', 'RT-E1', [
    [first!.weld_id, 'rejected'],
    ...rest.map((r) => [r.weld_id, 'accepted'] as [string, Result]),
  ]);
  t.deepEqual(await examination(a, isoId), [
    row({ selected: 5, examined: 3, shortfall: 0, progressive_open: 2, welders_not_covered: [] }),
  ]);

  const tier1 = (await selections(a)).filter((r) => r.tier === '1');
  await recordNdt(
    a,
    'RT',
    'RT-E2',
    tier1.map((r) => [r.weld_id, 'accepted']),
  );
  t.deepEqual(await examination(a, isoId), [
    row({ selected: 5, examined: 5, shortfall: 0, progressive_open: 0, welders_not_covered: [] }),
  ]);
});

test('isos_examination: one row per method required or selected, ordered by method: RT (5%) and VT on category D', async (t) => {
  const s = await setup(t);
  const { a, iso, draw, examination } = s;
  const isoId = await iso(a, 'ISO-DV', 'L-DV', { fluid_service: 'category_d' });
  await weldsOf(s, a, isoId, a.welderId, 'DV', 4);
  const rows = await examination(a, isoId);
  t.deepEqual(
    rows.map((r) => [r.method, r.required_percent, r.required]),
    [
      ['RT', 5, 1],
      ['VT', 100, 4],
    ],
  );
  await draw(a, { method: 'VT', iso: isoId, seed: 1 });
  t.like((await examination(a, isoId))[1], { method: 'VT', selected: 4, shortfall: 0 });
});

test('isos_examination: a row for a method that has selections though no longer required: 14 welds, 1 RT drawn, then category D with rt_percent 0 (RT 0%) -> RT required 0, selected 1', async (t) => {
  const s = await setup(t);
  const { a, iso, draw, examination, as } = s;
  const isoId = await iso(a, 'ISO-Z', 'L-Z');
  await weldsOf(s, a, isoId, a.welderId, 'Z', 14);
  t.is((await draw(a, { iso: isoId, seed: 1 })).length, 1);
  await as(a, 'engineer', (c) =>
    c.query(
      `update weld_public.isos set fluid_service = 'category_d', rt_percent = 0 where id = $1`,
      [isoId],
    ),
  );
  const rows = await examination(a, isoId);
  t.deepEqual(
    rows.map((r) => r.method),
    ['RT', 'VT'],
    'RT has a selection, VT is required (100% on category D)',
  );
  t.like(rows[0], {
    method: 'RT',
    required: 0,
    selected: 1,
    shortfall: 0,
    welders_not_covered: [],
  });
});

//------------------------------------------------------------------------------------------------
// Welder qualification status (QW-322)

async function qualificationWorld(t: ExecutionContext) {
  const s = await setup(t);
  const { a, wps } = s;
  const smaw = await wps(a, 'WPS-S', 'SMAW');
  const gtaw = await wps(a, 'WPS-G', 'GTAW');
  const both = await wps(a, 'WPS-GS', 'GTAW+SMAW');
  let n = 0;
  /** A welder with one SMAW qualification of 2026-01-10 (and the given changes). */
  const qualified = async (extra: Record<string, unknown> = {}) => {
    const welderId = await s.welder(a, `Q${++n}`);
    const qualificationId = await s.qualification(a, welderId, { process: 'SMAW', ...extra });
    return { welderId, qualificationId };
  };
  const weldBy = (welderId: string, wpsId: string, weldedOn: string) =>
    s.weld(a, a.isoId, `QW-${++n}`, { welder_id: welderId, wps_id: wpsId, welded_on: weldedOn });
  const status = (welderId: string, on: string) =>
    s.as(
      a,
      'viewer',
      async (c) =>
        (
          await c.query<{
            qualification_id: string;
            process: string | null;
            state: string;
            qualified_on: string;
            expires_on: string | null;
            continuity_until: string | null;
            reasons: string[];
          }>(
            `select q.qualification_id, q.process, q.state, q.qualified_on::text,
                    q.expires_on::text, q.continuity_until::text, q.reasons
               from weld_public.welders w
               cross join lateral weld_public.welders_qualification_status(w, $2::date) q
              where w.id = $1`,
            [welderId, on],
          )
        ).rows,
    );
  /** The state on each date; every row with at least one reason. */
  const states = async (welderId: string, ...dates: string[]) => {
    const out: string[] = [];
    for (const on of dates) {
      const rows = await status(welderId, on);
      t.is(rows.length, 1, on);
      t.true(
        rows.every((r) => r.reasons.length > 0 && r.reasons.every((x) => x.trim() !== '')),
        `reasons on ${on}`,
      );
      out.push(rows[0]!.state);
    }
    return out;
  };
  return { ...s, smaw, gtaw, both, qualified, weldBy, status, states };
}

test('qualification: qualified 2026-01-10, no welds: continuity until 2026-07-10; valid on 2026-07-10, lapsed on 2026-07-11 (6 months + 1 day), not_yet_valid on 2026-01-09', async (t) => {
  const q = await qualificationWorld(t);
  const { welderId, qualificationId } = await q.qualified();
  t.deepEqual(await q.states(welderId, '2026-01-09', '2026-01-10', '2026-07-10', '2026-07-11'), [
    'not_yet_valid',
    'valid',
    'valid',
    'lapsed',
  ]);
  t.like((await q.status(welderId, '2026-07-11'))[0], {
    qualification_id: qualificationId,
    process: 'SMAW',
    qualified_on: '2026-01-10',
    expires_on: null,
    continuity_until: '2026-07-10',
  });
});

test('qualification: an SMAW weld on 2026-05-01 keeps it valid until 2026-11-01, lapsed on 2026-11-02; a GTAW weld does not count, a GTAW+SMAW weld does', async (t) => {
  const q = await qualificationWorld(t);
  const smawWelder = await q.qualified();
  await q.weldBy(smawWelder.welderId, q.smaw, '2026-05-01');
  t.deepEqual(await q.states(smawWelder.welderId, '2026-07-11', '2026-11-01', '2026-11-02'), [
    'valid',
    'valid',
    'lapsed',
  ]);
  t.is((await q.status(smawWelder.welderId, '2026-11-02'))[0]!.continuity_until, '2026-11-01');

  const gtawWelder = await q.qualified();
  await q.weldBy(gtawWelder.welderId, q.gtaw, '2026-05-01');
  t.deepEqual(await q.states(gtawWelder.welderId, '2026-07-10', '2026-07-11'), ['valid', 'lapsed']);
  t.is((await q.status(gtawWelder.welderId, '2026-07-11'))[0]!.continuity_until, '2026-07-10');

  const comboWelder = await q.qualified();
  await q.weldBy(comboWelder.welderId, q.both, '2026-05-01');
  t.is((await q.status(comboWelder.welderId, '2026-07-11'))[0]!.continuity_until, '2026-11-01');
});

test('qualification: an SMAW weld on 2026-08-01, after the lapse of 2026-07-10, does not revive it: lapsed on 2026-08-02', async (t) => {
  const q = await qualificationWorld(t);
  const { welderId } = await q.qualified();
  await q.weldBy(welderId, q.smaw, '2026-08-01');
  t.deepEqual(await q.states(welderId, '2026-07-10', '2026-08-01', '2026-08-02'), [
    'valid',
    'lapsed',
    'lapsed',
  ]);
  t.is((await q.status(welderId, '2026-08-02'))[0]!.continuity_until, '2026-07-10');
});

test('qualification: a chain of uses 2026-03-01, 2026-08-15 (each within 6 months) -> until 2027-02-15; last_continuity_on 2026-06-01 counts as a use -> until 2026-12-01', async (t) => {
  const q = await qualificationWorld(t);
  const chained = await q.qualified();
  await q.weldBy(chained.welderId, q.smaw, '2026-03-01');
  await q.weldBy(chained.welderId, q.smaw, '2026-08-15');
  t.is((await q.status(chained.welderId, '2026-09-01'))[0]!.continuity_until, '2027-02-15');

  const recorded = await q.qualified({ last_continuity_on: '2026-06-01' });
  t.is((await q.status(recorded.welderId, '2026-09-01'))[0]!.continuity_until, '2026-12-01');
  t.deepEqual(await q.states(recorded.welderId, '2026-12-01', '2026-12-02'), ['valid', 'lapsed']);
});

test('qualification: expires_on 2026-03-01: valid on 2026-03-01, expired on 2026-03-02 and on 2026-08-01 (expired before lapsed)', async (t) => {
  const q = await qualificationWorld(t);
  const { welderId } = await q.qualified({ expires_on: '2026-03-01' });
  t.deepEqual(await q.states(welderId, '2026-03-01', '2026-03-02', '2026-08-01'), [
    'valid',
    'expired',
    'expired',
  ]);
  t.is((await q.status(welderId, '2026-03-02'))[0]!.expires_on, '2026-03-01');
});

test('qualification: a DBA setting continuity_months to 3: qualified 2026-01-10 with an SMAW weld on 2026-03-01 is valid on 2026-07-01 at 6 months (until 2026-09-01), lapsed at 3 (until 2026-06-01)', async (t) => {
  const q = await qualificationWorld(t);
  const { welderId } = await q.qualified();
  await q.weldBy(welderId, q.smaw, '2026-03-01');
  t.deepEqual(await q.states(welderId, '2026-07-01'), ['valid']);
  t.is((await q.status(welderId, '2026-07-01'))[0]!.continuity_until, '2026-09-01');
  await q.dba(`update weld_public.tenant_settings set continuity_months = 3 where tenant_id = $1`, [
    q.a.tenantId,
  ]);
  t.deepEqual(await q.states(welderId, '2026-06-01', '2026-06-02', '2026-07-01'), [
    'valid',
    'lapsed',
    'lapsed',
  ]);
  t.is((await q.status(welderId, '2026-07-01'))[0]!.continuity_until, '2026-06-01');
});

test('qualification: several qualifications in qualified_on order (2026-01-10 SMAW before 2026-02-01 GTAW), each with reasons', async (t) => {
  const q = await qualificationWorld(t);
  const { welderId } = await q.qualified();
  await q.qualification(q.a, welderId, { process: 'GTAW', qualified_on: '2026-02-01' });
  await q.qualification(q.a, welderId, { wps_id: q.gtaw, qualified_on: '2026-01-05' });
  const rows = await q.status(welderId, '2026-03-01');
  t.deepEqual(
    rows.map((r) => r.qualified_on),
    ['2026-01-05', '2026-01-10', '2026-02-01'],
  );
  t.true(rows.every((r) => r.reasons.length > 0));
  t.deepEqual(
    rows.map((r) => r.state),
    ['valid', 'valid', 'valid'],
  );
});

//------------------------------------------------------------------------------------------------
// The code checks of a weld

async function checksWorld(t: ExecutionContext) {
  const q = await qualificationWorld(t);
  const { a } = q;
  let n = 0;
  /** An SMAW welder qualified 2026-01-10 with a 0.25 in. coupon and the given changes. */
  const welderWith = async (extra: Record<string, unknown>) =>
    (await q.qualified({ coupon_thickness_in: 0.25, ...extra })).welderId;
  const checksOf = (weldId: string) =>
    q.as(
      a,
      'viewer',
      async (c) =>
        (
          await c.query<{ code: string; detail: string }>(
            `select c.code, c.detail from weld_public.welds w
              cross join lateral weld_public.welds_checks(w) c where w.id = $1`,
            [weldId],
          )
        ).rows,
    );
  /** A weld by the welder, SMAW WPS, NPS 4, 0.2 in. wall, welded 2026-02-01 unless changed. */
  const weldOf = (welderId: string | null, extra: Record<string, unknown> = {}) =>
    q.weld(a, a.isoId, `CK-${++n}`, {
      welder_id: welderId,
      wps_id: q.smaw,
      wall_thickness: 0.2,
      welded_on: '2026-02-01',
      ...extra,
    });
  /** The check codes of a new weld with the given changes. */
  const codes = async (welderId: string | null, extra: Record<string, unknown> = {}) =>
    (await checksOf(await weldOf(welderId, extra))).map((c) => c.code);
  return { ...q, welderWith, checksOf, weldOf, codes };
}

test('QW-452.3: a 0.75 in. OD coupon qualifies NPS 1/2 (OD 0.840) but not NPS 3/8 (OD 0.675)', async (t) => {
  const c = await checksWorld(t);
  const welder = await c.welderWith({ coupon_diameter_in: 0.75 });
  t.deepEqual(await c.codes(welder, { size: 0.5 }), []);
  t.deepEqual(await c.codes(welder, { size: 0.375 }), ['WELDER_NOT_QUALIFIED']);
  t.deepEqual(await c.codes(welder, { size: 24 }), [], 'no upper limit');
});

test('QW-452.3: a 2 in. OD coupon qualifies OD 1 and up: NPS 3/4 (OD 1.050) yes, NPS 1/2 (OD 0.840) no', async (t) => {
  const c = await checksWorld(t);
  const welder = await c.welderWith({ coupon_diameter_in: 2 });
  t.deepEqual(await c.codes(welder, { size: 0.75 }), []);
  t.deepEqual(await c.codes(welder, { size: 0.5 }), ['WELDER_NOT_QUALIFIED']);
});

test('QW-452.3: a 3 in. OD coupon qualifies OD 2.875 and up: NPS 2 1/2 (OD 2.875) yes, NPS 2 (OD 2.375) no', async (t) => {
  const c = await checksWorld(t);
  const welder = await c.welderWith({ coupon_diameter_in: 3 });
  t.deepEqual(await c.codes(welder, { size: 2.5 }), []);
  t.deepEqual(await c.codes(welder, { size: 2 }), ['WELDER_NOT_QUALIFIED']);
  t.deepEqual(await c.codes(welder, { size: 36 }), []);
});

test('QW-452.1: a 0.25 in. coupon qualifies walls up to 2 x 0.25 = 0.5 (0.5 yes, 0.51 no); a 0.5 in. coupon up to 1.0 (1.0 yes, 1.01 no)', async (t) => {
  const c = await checksWorld(t);
  const thin = await c.welderWith({ coupon_diameter_in: 3 });
  t.deepEqual(await c.codes(thin, { wall_thickness: 0.5 }), []);
  t.deepEqual(await c.codes(thin, { wall_thickness: 0.51 }), ['WELDER_NOT_QUALIFIED']);
  const thick = await c.welderWith({ coupon_diameter_in: 3, coupon_thickness_in: 0.5 });
  t.deepEqual(await c.codes(thick, { wall_thickness: 1 }), []);
  t.deepEqual(await c.codes(thick, { wall_thickness: 1.01 }), ['WELDER_NOT_QUALIFIED']);
});

test('explicit ranges win: diameter_min_in 0.5 on a 3 in. coupon qualifies NPS 1/2 (0.840); diameter_min_in 2 on a 0.75 in. coupon refuses NPS 1 (1.315); diameter_max_in 4 refuses NPS 4 (4.5); thickness_max_in 1 on a 0.25 in. coupon allows 0.8', async (t) => {
  const c = await checksWorld(t);
  const wide = await c.welderWith({ coupon_diameter_in: 3, diameter_min_in: 0.5 });
  t.deepEqual(await c.codes(wide, { size: 0.5 }), []);
  const narrow = await c.welderWith({ coupon_diameter_in: 0.75, diameter_min_in: 2 });
  t.deepEqual(await c.codes(narrow, { size: 1 }), ['WELDER_NOT_QUALIFIED']);
  t.deepEqual(await c.codes(narrow, { size: 2 }), []);
  const capped = await c.welderWith({
    coupon_diameter_in: 0.75,
    diameter_min_in: 1,
    diameter_max_in: 4,
  });
  t.deepEqual(await c.codes(capped, { size: 3 }), [], 'OD 3.5');
  t.deepEqual(await c.codes(capped, { size: 4 }), ['WELDER_NOT_QUALIFIED'], 'OD 4.5');
  const thick = await c.welderWith({ coupon_diameter_in: 3, thickness_max_in: 1 });
  t.deepEqual(await c.codes(thick, { wall_thickness: 0.8 }), []);
});

test("the PQR stands in for a missing coupon (tested OD 3.5, 0.25 in.: NPS 2 1/2 yes, NPS 2 no, wall 0.51 no); neither known -> not qualified, 'unknown'", async (t) => {
  const c = await checksWorld(t);
  const pqr = await c.insert('pqrs', {
    tenant_id: c.a.tenantId,
    pqr_number: 'PQR-1',
    process: 'SMAW',
    p_numbers: ['1', '1'],
    thickness_tested_in: 0.25,
    diameter_tested_in: 3.5,
  });
  const byPqr = (await c.qualified({ pqr_id: pqr })).welderId;
  t.deepEqual(await c.codes(byPqr, { size: 2.5 }), []);
  t.deepEqual(await c.codes(byPqr, { size: 2 }), ['WELDER_NOT_QUALIFIED']);
  t.deepEqual(await c.codes(byPqr, { size: 2.5, wall_thickness: 0.51 }), ['WELDER_NOT_QUALIFIED']);

  const unknown = (await c.qualified()).welderId;
  const checks = await c.checksOf(await c.weldOf(unknown));
  t.deepEqual(
    checks.map((x) => x.code),
    ['WELDER_NOT_QUALIFIED'],
  );
  t.regex(checks[0]!.detail, /unknown/);
});

test('WELDER_NOT_QUALIFIED: an SMAW qualification does not cover a GTAW WPS; the detail says why', async (t) => {
  const c = await checksWorld(t);
  const welder = await c.welderWith({ coupon_diameter_in: 3 });
  t.deepEqual(await c.codes(welder), []);
  const checks = await c.checksOf(await c.weldOf(welder, { wps_id: c.gtaw }));
  t.deepEqual(
    checks.map((x) => x.code),
    ['WELDER_NOT_QUALIFIED'],
  );
  t.true(checks[0]!.detail.length > 0);
});

test('WELDER_NOT_QUALIFIED on welded_on: expires 2026-03-01 -> a weld of 2026-03-01 yes, 2026-03-02 no; no use since 2026-01-10 -> 2026-07-01 yes, 2026-07-20 no (lapsed)', async (t) => {
  const c = await checksWorld(t);
  const expiring = await c.welderWith({ coupon_diameter_in: 3, expires_on: '2026-03-01' });
  t.deepEqual(await c.codes(expiring, { welded_on: '2026-03-01' }), []);
  t.deepEqual(await c.codes(expiring, { welded_on: '2026-03-02' }), ['WELDER_NOT_QUALIFIED']);
  const inTime = await c.welderWith({ coupon_diameter_in: 3 });
  t.deepEqual(await c.codes(inTime, { welded_on: '2026-07-01' }), []);
  const late = await c.welderWith({ coupon_diameter_in: 3 });
  t.deepEqual(await c.codes(late, { welded_on: '2026-07-20' }), ['WELDER_NOT_QUALIFIED']);
  const early = await c.welderWith({ coupon_diameter_in: 3 });
  t.deepEqual(await c.codes(early, { welded_on: '2026-01-09' }), ['WELDER_NOT_QUALIFIED']);
});

test('WPS_NOT_APPROVED for a draft WPS, not for a superseded one; WPS_RANGE for OD 1.315 and 12.75 outside 2..10 and walls 0.1 and 0.7 outside 0.2..0.6', async (t) => {
  const c = await checksWorld(t);
  const welder = await c.welderWith({
    coupon_diameter_in: 3,
    diameter_min_in: 0.5,
    thickness_max_in: 2,
  });
  const draft = await c.wps(c.a, 'WPS-D', 'SMAW', { state: 'draft' });
  const superseded = await c.wps(c.a, 'WPS-X', 'SMAW', { state: 'superseded' });
  t.deepEqual(await c.codes(welder, { wps_id: draft }), ['WPS_NOT_APPROVED']);
  t.deepEqual(await c.codes(welder, { wps_id: superseded }), []);

  const ranged = await c.wps(c.a, 'WPS-R', 'SMAW', {
    diameter_min_in: 2,
    diameter_max_in: 10,
    thickness_min_in: 0.2,
    thickness_max_in: 0.6,
  });
  t.deepEqual(await c.codes(welder, { wps_id: ranged, size: 4, wall_thickness: 0.3 }), []);
  for (const [size, wall] of [
    [1, 0.3],
    [12, 0.3],
    [4, 0.1],
    [4, 0.7],
  ] as const) {
    t.deepEqual(
      await c.codes(welder, { wps_id: ranged, size, wall_thickness: wall }),
      ['WPS_RANGE'],
      `NPS ${size}, wall ${wall}`,
    );
  }
});

test('DATA_MISSING: one row per missing item (welder, WPS, date welded, wall thickness), each detail naming it', async (t) => {
  const c = await checksWorld(t);
  const planned = await c.weld(c.a, c.a.isoId, 'PLAN-1', {});
  const checks = await c.checksOf(planned);
  t.deepEqual(
    checks.map((x) => x.code),
    ['DATA_MISSING', 'DATA_MISSING', 'DATA_MISSING', 'DATA_MISSING'],
  );
  const names: Array<[string, RegExp]> = [
    ['welder', /\bwelder\b/i],
    ['WPS', /\bWPS\b/i],
    ['date', /\bdate\b|welded[_ ]on/i],
    ['thickness', /thickness/i],
  ];
  for (const [name, pattern] of names) {
    t.is(
      checks.filter((x) => pattern.test(x.detail)).length,
      1,
      `${name}: ${JSON.stringify(checks)}`,
    );
  }
  // One missing item, one row.
  const welder = await c.welderWith({ coupon_diameter_in: 3 });
  const noWall = await c.checksOf(await c.weldOf(welder, { wall_thickness: null }));
  t.deepEqual(
    noWall.filter((x) => x.code === 'DATA_MISSING').map((x) => /thickness/i.test(x.detail)),
    [true],
  );
  const noDate = await c.checksOf(await c.weldOf(welder, { welded_on: null }));
  t.deepEqual(
    noDate
      .filter((x) => x.code === 'DATA_MISSING')
      .map((x) => /\bdate\b|welded[_ ]on/i.test(x.detail)),
    [true],
  );
});

test('a DBA changing qualification_range_rules [1, 2.875) min_in from 1 to 2: a 2 in. coupon no longer qualifies NPS 3/4 (OD 1.050) but still NPS 2 (OD 2.375)', async (t) => {
  const c = await checksWorld(t);
  const welder = await c.welderWith({ coupon_diameter_in: 2 });
  const nps34 = await c.weldOf(welder, { size: 0.75 });
  const nps2 = await c.weldOf(welder, { size: 2 });
  t.deepEqual(await c.checksOf(nps34), []);
  await c.dba(
    `update weld_public.qualification_range_rules set min_in = 2
      where tenant_id = $1 and dimension = 'diameter' and coupon_from_in = 1`,
    [c.a.tenantId],
  );
  t.deepEqual(
    (await c.checksOf(nps34)).map((x) => x.code),
    ['WELDER_NOT_QUALIFIED'],
  );
  t.deepEqual(await c.checksOf(nps2), []);
  // Tenant B keeps its rules: the same weld there is still fine.
  const theirWelder = await c.welder(c.b, 'QB');
  await c.qualification(c.b, theirWelder, {
    process: 'SMAW',
    coupon_diameter_in: 2,
    coupon_thickness_in: 0.25,
  });
  const theirWps = await c.wps(c.b, 'WPS-S', 'SMAW');
  const theirs = await c.weld(c.b, c.b.isoId, 'B-34', {
    welder_id: theirWelder,
    wps_id: theirWps,
    size: 0.75,
    wall_thickness: 0.2,
    welded_on: '2026-02-01',
  });
  const checks = await c.as(c.b, 'viewer', (x) =>
    x.query(
      `select c.code from weld_public.welds w cross join lateral weld_public.welds_checks(w) c
        where w.id = $1`,
      [theirs],
    ),
  );
  t.deepEqual(checks.rows, []);
});

test("weld_checks 'refuse': an engineer's insert or update of a weld that is then unqualified, on a draft WPS or out of the WPS's range fails with WD010 and {checks}; DATA_MISSING alone, other columns and 'show' do not", async (t) => {
  const c = await checksWorld(t);
  const { a } = c;
  const welder = await c.welderWith({ coupon_diameter_in: 0.75 });
  const draft = await c.wps(a, 'WPS-D', 'SMAW', { state: 'draft' });
  const ranged = await c.wps(a, 'WPS-R', 'SMAW', { diameter_max_in: 10 });
  const engineerWeld = (number: string, extra: Record<string, unknown>) =>
    c.insertAs(a, 'engineer', 'welds', {
      iso_id: a.isoId,
      weld_number: number,
      type: 'BW',
      size: 4,
      welder_id: welder,
      wps_id: c.smaw,
      wall_thickness: 0.2,
      welded_on: '2026-02-01',
      ...extra,
    });
  const update = (weldId: string, set: string, value: unknown) =>
    c.as(a, 'engineer', (x) =>
      x.query(`update weld_public.welds set ${set} = $2 where id = $1`, [weldId, value]),
    );

  // 'show' (the default) never refuses.
  const shown = await engineerWeld('S-1', { wps_id: c.gtaw });
  t.deepEqual(
    (await c.checksOf(shown)).map((x) => x.code),
    ['WELDER_NOT_QUALIFIED'],
  );

  await c.dba(
    `update weld_public.tenant_settings set weld_checks = 'refuse' where tenant_id = $1`,
    [a.tenantId],
  );
  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ['a GTAW WPS', { wps_id: c.gtaw }, 'WELDER_NOT_QUALIFIED'],
    ['NPS 3/8 (OD 0.675) under a 0.75 in. coupon', { size: 0.375 }, 'WELDER_NOT_QUALIFIED'],
    ['welded after the lapse', { welded_on: '2026-07-20' }, 'WELDER_NOT_QUALIFIED'],
    ['a draft WPS', { wps_id: draft }, 'WPS_NOT_APPROVED'],
    ['NPS 12 (OD 12.75) over the WPS maximum 10', { wps_id: ranged, size: 12 }, 'WPS_RANGE'],
  ];
  for (const [label, extra, code] of refusals) {
    const error = await t.throwsAsync(engineerWeld(`R-${label}`, extra), undefined, label);
    t.is(sqlstate(error), 'WD010', `${label}: ${error?.message}`);
    const detail = detailOf(error);
    t.deepEqual(Object.keys(detail), ['checks'], label);
    t.true(
      (detail.checks ?? []).some((x) => x.code === code),
      `${label}: ${JSON.stringify(detail)}`,
    );
    t.true(
      (detail.checks ?? [undefined]).every(
        (x) => typeof x?.code === 'string' && typeof x?.detail === 'string',
      ),
      label,
    );
  }
  const refusedRows = await c.owner.query(
    `select from weld_public.welds where tenant_id = $1 and weld_number like 'R-%'`,
    [a.tenantId],
  );
  t.is(refusedRows.rowCount, 0);

  // A planned weld (no welder, WPS, date or wall yet), and one with its welder and WPS but not
  // yet welded: DATA_MISSING only, not refused.
  const planned = await c.insertAs(a, 'engineer', 'welds', {
    iso_id: a.isoId,
    weld_number: 'P-1',
    type: 'BW',
    size: 4,
  });
  t.deepEqual(
    (await c.checksOf(planned)).map((x) => x.code),
    ['DATA_MISSING', 'DATA_MISSING', 'DATA_MISSING', 'DATA_MISSING'],
  );
  const assigned = await engineerWeld('P-2', { welded_on: null, wall_thickness: null });
  t.true((await c.checksOf(assigned)).every((x) => x.code === 'DATA_MISSING'));

  // Updates of the checked columns are held to it; the weld stays as it was. (Other welds of the
  // welder on 2026-02-01 keep it in use until 2026-08-01, so 2026-08-15 is after the lapse.)
  for (const [column, value] of [
    ['size', 0.375],
    ['wps_id', c.gtaw],
    ['welded_on', '2026-08-15'],
    ['wall_thickness', 0.51],
  ] as const) {
    const fresh = await engineerWeld(`G-${column}`, {});
    t.deepEqual(await c.checksOf(fresh), [], column);
    const error = await t.throwsAsync(update(fresh, column, value), undefined, column);
    t.is(sqlstate(error), 'WD010', column);
    t.true(Array.isArray(detailOf(error).checks), column);
    t.deepEqual(await c.checksOf(fresh), [], `${column}: unchanged`);
  }
  const good = await engineerWeld('G-1', {});
  await update(good, 'size', 0.5);
  t.deepEqual(await c.checksOf(good), [], 'NPS 1/2 (OD 0.840) is fine');

  // The weld made under 'show' can still be changed in what is not checked.
  await update(shown, 'material', 'A106-B');
  // The DBA (no request role) is not held to it.
  const direct = await c.weldOf(welder, { wps_id: c.gtaw });
  t.deepEqual(
    (await c.checksOf(direct)).map((x) => x.code),
    ['WELDER_NOT_QUALIFIED'],
  );
});

test("weld_checks 'refuse': moving a welder's only SMAW weld from 2026-02-01 to 2026-07-20 (lapsed 2026-07-10: no use since 2026-01-10) is refused, as the same move under 'show' leaves WELDER_NOT_QUALIFIED", async (t) => {
  const c = await checksWorld(t);
  const { a } = c;
  const move = (weldId: string) =>
    c.as(a, 'engineer', (x) =>
      x.query(`update weld_public.welds set welded_on = '2026-07-20' where id = $1`, [weldId]),
    );
  // Under 'show': after the move the weld's only use is its own, after the lapse.
  const shown = await c.weldOf(await c.welderWith({ coupon_diameter_in: 3 }));
  t.deepEqual(await c.checksOf(shown), []);
  await move(shown);
  t.deepEqual(
    (await c.checksOf(shown)).map((x) => x.code),
    ['WELDER_NOT_QUALIFIED'],
  );

  // Under 'refuse' the same move of another such weld is refused: its old date is no use any more.
  const refused = await c.weldOf(await c.welderWith({ coupon_diameter_in: 3 }));
  await c.dba(
    `update weld_public.tenant_settings set weld_checks = 'refuse' where tenant_id = $1`,
    [a.tenantId],
  );
  const error = await t.throwsAsync(move(refused));
  t.is(sqlstate(error), 'WD010');
  const kept = await c.owner.query<{ welded_on: string }>(
    `select welded_on::text from weld_public.welds where id = $1`,
    [refused],
  );
  t.deepEqual(kept.rows, [{ welded_on: '2026-02-01' }]);
});

//------------------------------------------------------------------------------------------------
// Test package readiness

/**
 * ISO-R (line L-R) with 4 butt welds R-1..R-4 by welder R1 (SMAW, 3 in. coupon 0.5 in. thick;
 * NPS 4, wall 0.25, welded 2026-02-01 on an approved SMAW WPS), in package TP-1.
 */
async function readinessWorld(t: ExecutionContext) {
  const s = await setup(t);
  const { a, iso, welder, wps, qualification, weld, insert, owner } = s;
  const isoId = await iso(a, 'ISO-R', 'L-R');
  const welderId = await welder(a, 'R1');
  const wpsId = await wps(a, 'WPS-R', 'SMAW');
  await qualification(a, welderId, {
    process: 'SMAW',
    coupon_diameter_in: 3,
    coupon_thickness_in: 0.5,
  });
  const weldAs = (number: string, extra: Record<string, unknown> = {}) =>
    weld(a, isoId, number, {
      welder_id: welderId,
      wps_id: wpsId,
      wall_thickness: 0.25,
      welded_on: '2026-02-01',
      ...extra,
    });
  const welds = [await weldAs('R-1'), await weldAs('R-2'), await weldAs('R-3')];
  const packageId = await insert('test_packages', {
    tenant_id: a.tenantId,
    package_number: 'TP-1',
    test_medium: 'hydro',
  });
  const addIso = (id: string) =>
    owner.query(
      `insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) values ($1, $2, $3)`,
      [a.tenantId, packageId, id],
    );
  const addWeld = (id: string) =>
    owner.query(
      `insert into weld_public.test_package_welds (tenant_id, test_package_id, weld_id) values ($1, $2, $3)`,
      [a.tenantId, packageId, id],
    );
  const reasons = (fx: TenantFixture = a, id = packageId, role: Role = 'engineer') =>
    s.as(fx, role, async (c) =>
      (
        await c.query<Reason & { ready: boolean }>(
          `select r.code, r.weld_id, r.iso_id, r.detail, weld_public.test_packages_ready(p) as ready
               from weld_public.test_packages p
               cross join lateral weld_public.test_packages_readiness_reasons(p) r
              where p.id = $1`,
          [id],
        )
      ).rows.map(({ ready: _ready, ...r }) => r),
    );
  const ready = async (fx: TenantFixture = a, id = packageId) =>
    s.as(
      fx,
      'engineer',
      async (c) =>
        (
          await c.query<{ ready: boolean }>(
            `select weld_public.test_packages_ready(p) as ready from weld_public.test_packages p
              where p.id = $1`,
            [id],
          )
        ).rows[0]!.ready,
    );
  const release = (fx: TenantFixture = a, id = packageId) =>
    s.as(
      fx,
      'engineer',
      async (c) =>
        (
          await c.query<{ state: string }>(
            `update weld_public.test_packages set state = 'released' where id = $1 returning state`,
            [id],
          )
        ).rows[0]?.state,
    );
  /** Draws RT on the ISO and accepts every weld by RT: the package is then ready. */
  const examineAll = async (ids: string[]) => {
    await s.draw(a, { iso: isoId, seed: 1 });
    await s.recordNdt(
      a,
      'RT',
      'RT-ALL',
      ids.map((id) => [id, 'accepted']),
    );
  };
  return {
    ...s,
    isoId,
    welderId,
    wpsId,
    weldAs,
    welds,
    packageId,
    addIso,
    addWeld,
    reasons,
    ready,
    release,
    examineAll,
  };
}
type ReadinessWorld = Awaited<ReturnType<typeof readinessWorld>>;

/** The DETAIL form of a reason: camelCase, nulls left out. */
const asDetail = (r: Reason) => ({
  code: r.code,
  ...(r.weld_id === null ? {} : { weldId: r.weld_id }),
  ...(r.iso_id === null ? {} : { isoId: r.iso_id }),
  ...(r.detail === null ? {} : { detail: r.detail }),
});
const canonical = (items: Array<Record<string, unknown>>) =>
  items
    .map((x) =>
      JSON.stringify(
        Object.fromEntries(Object.entries(x).sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0))),
      ),
    )
    .sort();

/**
 * The package is not ready for exactly the expected reasons (each matched on the fields given),
 * the engineer's release is refused with WD009 and the reasons in DETAIL; once `fix` has run it
 * is ready and the release goes through.
 */
async function refusedUntilFixed(
  t: ExecutionContext,
  w: ReadinessWorld,
  expected: Array<Partial<Reason>>,
  fix: () => Promise<unknown>,
) {
  const reasons = await w.reasons();
  t.is(reasons.length, expected.length, JSON.stringify(reasons));
  for (const want of expected) {
    t.true(
      reasons.some((r) => Object.entries(want).every(([k, v]) => r[k as keyof Reason] === v)),
      `${JSON.stringify(want)} in ${JSON.stringify(reasons)}`,
    );
  }
  t.true(reasons.every((r) => typeof r.detail === 'string' && r.detail.length > 0));
  t.false(await w.ready());

  const error = await t.throwsAsync(w.release());
  t.is(sqlstate(error), 'WD009', error?.message);
  const detail = detailOf(error);
  t.deepEqual(sorted(Object.keys(detail)), ['reasonCount', 'reasons']);
  t.is(detail.reasonCount, reasons.length);
  t.deepEqual(canonical(detail.reasons ?? []), canonical(reasons.map(asDetail)));
  t.false(
    (detail.reasons ?? []).some((r) => Object.values(r).includes(null)),
    'nulls are left out',
  );
  const state = await w.owner.query<{ state: string }>(
    `select state from weld_public.test_packages where id = $1`,
    [w.packageId],
  );
  t.is(state.rows[0]!.state, 'open');

  await fix();
  t.deepEqual(await w.reasons(), []);
  t.true(await w.ready());
  t.is(await w.release(), 'released');
}

test('readiness: a package of 3 examined, accepted, qualified welds (1 RT selection of ceil(5% x 3) = 1, done) is ready and released', async (t) => {
  const w = await readinessWorld(t);
  await w.addIso(w.isoId);
  await w.examineAll(w.welds);
  t.deepEqual(await w.reasons(), []);
  t.true(await w.ready());
  t.is(await w.release(), 'released');
});

test('readiness NO_WELDS: an empty package, and one of a single VOIDED weld; WD009 until the ISO is added', async (t) => {
  const w = await readinessWorld(t);
  await w.examineAll(w.welds);
  const voided = await w.weldAs('R-V');
  await w.moveWeld(w.a, 'engineer', voided, 'VOIDED', 'cut out');
  t.deepEqual(
    (await w.reasons()).map((r) => [r.code, r.weld_id, r.iso_id]),
    [['NO_WELDS', null, null]],
  );
  await w.addWeld(voided);
  await refusedUntilFixed(t, w, [{ code: 'NO_WELDS', weld_id: null, iso_id: null }], () =>
    w.addIso(w.isoId),
  );
});

test('readiness WELD_NOT_ACCEPTED: 1 of 3 welds left PENDING (not the selected one) -> 1 reason naming it, until a UT record accepts it', async (t) => {
  const w = await readinessWorld(t);
  await w.addIso(w.isoId);
  const [selection] = await w.draw(w.a, { iso: w.isoId, seed: 1 });
  const pending = w.welds.find((id) => id !== selection!.weld_id)!;
  await w.recordNdt(
    w.a,
    'RT',
    'RT-1',
    w.welds.filter((id) => id !== pending).map((id) => [id, 'accepted']),
  );
  await refusedUntilFixed(t, w, [{ code: 'WELD_NOT_ACCEPTED', weld_id: pending }], () =>
    w.recordNdt(w.a, 'UT', 'UT-1', [[pending, 'accepted']]),
  );
});

test('readiness EXAMINATION_SHORTFALL: 3 welds accepted by RT but no selection drawn (1 required) -> 1 reason naming the ISO, until drawn and examined', async (t) => {
  const w = await readinessWorld(t);
  await w.addIso(w.isoId);
  await w.recordNdt(
    w.a,
    'RT',
    'RT-1',
    w.welds.map((id) => [id, 'accepted']),
  );
  await refusedUntilFixed(t, w, [{ code: 'EXAMINATION_SHORTFALL', iso_id: w.isoId }], async () => {
    const [selection] = await w.draw(w.a, { iso: w.isoId, seed: 1 });
    await w.recordNdt(w.a, 'RT', 'RT-2', [[selection!.weld_id, 'accepted']], '2026-02-11');
  });
});

test('readiness EXAMINATION_OPEN: the RT selection open (the 3 welds accepted by UT) -> 1 reason naming its weld, until an RT record covers it', async (t) => {
  const w = await readinessWorld(t);
  await w.addIso(w.isoId);
  const [selection] = await w.draw(w.a, { iso: w.isoId, seed: 1 });
  await w.recordNdt(
    w.a,
    'UT',
    'UT-1',
    w.welds.map((id) => [id, 'accepted']),
  );
  await refusedUntilFixed(t, w, [{ code: 'EXAMINATION_OPEN', weld_id: selection!.weld_id }], () =>
    w.recordNdt(w.a, 'RT', 'RT-1', [[selection!.weld_id, 'accepted']]),
  );
});

test('readiness PROGRESSIVE_OPEN: the random weld rejected, repaired and accepted, its 2 tier-1 welds accepted by UT only -> 2 reasons, until RT covers them', async (t) => {
  const w = await readinessWorld(t);
  w.welds.push(await w.weldAs('R-4'));
  await w.addIso(w.isoId);
  const [selection] = await w.draw(w.a, { iso: w.isoId, seed: 1 });
  await w.recordNdt(w.a, 'RT', 'RT-1', [[selection!.weld_id, 'rejected']]);
  await w.repair(w.a, selection!.weld_id);
  await w.recordNdt(w.a, 'RT', 'RT-2', [[selection!.weld_id, 'accepted']], '2026-02-12');
  const tier1 = (await w.selections(w.a)).filter((r) => r.tier === '1');
  t.is(tier1.length, 2);
  await w.recordNdt(
    w.a,
    'UT',
    'UT-1',
    w.welds.filter((id) => id !== selection!.weld_id).map((id) => [id, 'accepted']),
  );
  await refusedUntilFixed(
    t,
    w,
    tier1.map((r) => ({ code: 'PROGRESSIVE_OPEN', weld_id: r.weld_id })),
    () =>
      w.recordNdt(
        w.a,
        'RT',
        'RT-3',
        tier1.map((r) => [r.weld_id, 'accepted']),
        '2026-02-13',
      ),
  );
});

test('readiness PROGRESSIVE_OPEN counts the lot, not only the package: a package of only the rejected random weld lists the open tier-1 welds of its lot, outside it', async (t) => {
  const w = await readinessWorld(t);
  w.welds.push(await w.weldAs('R-4'));
  const [selection] = await w.draw(w.a, { iso: w.isoId, seed: 1 });
  await w.addWeld(selection!.weld_id);
  await w.recordNdt(w.a, 'RT', 'RT-1', [[selection!.weld_id, 'rejected']]);
  await w.repair(w.a, selection!.weld_id);
  await w.recordNdt(w.a, 'RT', 'RT-2', [[selection!.weld_id, 'accepted']], '2026-02-12');
  const tier1 = (await w.selections(w.a)).filter((r) => r.tier === '1');
  const reasons = await w.reasons();
  t.deepEqual(
    sorted(reasons.filter((r) => r.code === 'PROGRESSIVE_OPEN').map((r) => r.weld_id!)),
    sorted(tier1.map((r) => r.weld_id)),
  );
});

test('readiness WELDER_NOT_QUALIFIED: R-4 by welder R2 with no qualification -> 1 reason with weld and ISO, until R2 is qualified', async (t) => {
  const w = await readinessWorld(t);
  const r2 = await w.welder(w.a, 'R2');
  const r4 = await w.weldAs('R-4', { welder_id: r2 });
  await w.addIso(w.isoId);
  await w.examineAll([...w.welds, r4]);
  await refusedUntilFixed(
    t,
    w,
    [{ code: 'WELDER_NOT_QUALIFIED', weld_id: r4, iso_id: w.isoId }],
    () =>
      w.qualification(w.a, r2, {
        process: 'SMAW',
        coupon_diameter_in: 3,
        coupon_thickness_in: 0.5,
      }),
  );
});

test('readiness WPS_NOT_APPROVED: R-4 on a draft WPS -> 1 reason with weld and ISO, until the WPS is approved', async (t) => {
  const w = await readinessWorld(t);
  const draft = await w.wps(w.a, 'WPS-DRAFT', 'SMAW', { state: 'draft' });
  const r4 = await w.weldAs('R-4', { wps_id: draft });
  await w.addIso(w.isoId);
  await w.examineAll([...w.welds, r4]);
  await refusedUntilFixed(t, w, [{ code: 'WPS_NOT_APPROVED', weld_id: r4, iso_id: w.isoId }], () =>
    w.dba(`update weld_public.wps set state = 'approved' where id = $1`, [draft]),
  );
});

test('readiness WPS_RANGE: R-4 (OD 4.5) on a WPS for OD up to 4 -> 1 reason with weld and ISO, until the WPS range is widened', async (t) => {
  const w = await readinessWorld(t);
  const small = await w.wps(w.a, 'WPS-SMALL', 'SMAW', { diameter_max_in: 4 });
  const r4 = await w.weldAs('R-4', { wps_id: small });
  await w.addIso(w.isoId);
  await w.examineAll([...w.welds, r4]);
  await refusedUntilFixed(t, w, [{ code: 'WPS_RANGE', weld_id: r4, iso_id: w.isoId }], () =>
    w.dba(`update weld_public.wps set diameter_max_in = null where id = $1`, [small]),
  );
});

test('readiness DATA_MISSING: R-4 without its wall thickness -> DATA_MISSING with weld and ISO (and every other check of the weld), until it is recorded', async (t) => {
  const w = await readinessWorld(t);
  const r4 = await w.weldAs('R-4', { wall_thickness: null });
  await w.addIso(w.isoId);
  await w.examineAll([...w.welds, r4]);
  // The package holds the weld's checks, whatever they are besides DATA_MISSING.
  const checks = await w.as(w.a, 'viewer', (c) =>
    c.query<{ code: string }>(
      `select c.code from weld_public.welds x cross join lateral weld_public.welds_checks(x) c
        where x.id = $1`,
      [r4],
    ),
  );
  t.true(checks.rows.some((x) => x.code === 'DATA_MISSING'));
  await refusedUntilFixed(
    t,
    w,
    checks.rows.map((x) => ({ code: x.code, weld_id: r4, iso_id: w.isoId })),
    () => w.dba(`update weld_public.welds set wall_thickness = 0.25 where id = $1`, [r4]),
  );
});

test('readiness: VOIDED welds drop out: a 4th weld with no welder, WPS, date or wall, PENDING, blocks the package until it is voided', async (t) => {
  const w = await readinessWorld(t);
  const extra = await w.weld(w.a, w.isoId, 'R-X', {});
  await w.addIso(w.isoId);
  await w.addWeld(extra);
  await w.examineAll(w.welds);
  const codes = sorted((await w.reasons()).filter((r) => r.weld_id === extra).map((r) => r.code));
  t.true(codes.includes('WELD_NOT_ACCEPTED'), codes.join());
  t.true(codes.includes('DATA_MISSING'), codes.join());
  await w.moveWeld(w.a, 'engineer', extra, 'VOIDED', 'deleted from the design');
  t.deepEqual(await w.reasons(), []);
  t.true(await w.ready());
  t.is(await w.release(), 'released');
});

test('readiness: the owner (a DBA, no request role) may release a package that is not ready (NO_WELDS)', async (t) => {
  const w = await readinessWorld(t);
  t.false(await w.ready());
  const released = await w.owner.query<{ state: string }>(
    `update weld_public.test_packages set state = 'released' where id = $1 returning state`,
    [w.packageId],
  );
  t.deepEqual(released.rows, [{ state: 'released' }]);
  // Only the open -> released move is checked: back to open is not.
  t.is(
    await w.as(
      w.a,
      'engineer',
      async (c) =>
        (
          await c.query<{ state: string }>(
            `update weld_public.test_packages set state = 'open' where id = $1 returning state`,
            [w.packageId],
          )
        ).rows[0]!.state,
    ),
    'open',
  );
});

//------------------------------------------------------------------------------------------------
// Tenancy, from the attacker's side

test("tenancy: tenant B, built with the same ids, line and weld numbers, sees none of A's selections, cannot draw on A's ISO or line (WD001), and A's readiness never includes B's welds", async (t) => {
  const s = await setup(t);
  const { owner, a, b, as, draw, selections, recordNdt, examination } = s;
  // The same world in both tenants, same ids; A examines and qualifies, B does nothing.
  const worldA = await fortyButtWelds(s, a);
  await fortyButtWelds(s, b);
  const onlyA = await s.iso(a, 'ISO-A-ONLY', 'L-A-ONLY');
  await weldsOf(s, a, onlyA, a.welderId, 'AO', 3);

  const drawnA = await draw(a, { line: 'L-100', seed: 42 });
  t.is(drawnA.length, 3);

  // B sees none of them, through the table or the functions.
  t.deepEqual(await selections(b), []);
  const seen = await as(b, 'admin', (c) =>
    c.query(`select id from weld_public.examination_selections where id = any($1)`, [
      drawnA.map((r) => r.id),
    ]),
  );
  t.deepEqual(seen.rows, []);
  t.like((await examination(b, worldA.isoId))[0], { selected: 0, shortfall: 3 });
  t.like((await examination(a, worldA.isoId))[0], { selected: 3, shortfall: 0, welds: 40 });

  // B cannot draw on A's ISO or line.
  const iso = await t.throwsAsync(draw(b, { iso: onlyA, seed: 1 }, 'admin'));
  t.is(sqlstate(iso), 'WD001');
  t.is(iso.message, `iso ${onlyA} not found`);
  const line = await t.throwsAsync(draw(b, { line: 'L-A-ONLY', seed: 1 }, 'admin'));
  t.is(sqlstate(line), 'WD001');

  // B's own draw on the shared line name and ids touches only B; its progressive stays in B.
  const drawnB = await draw(b, { line: 'L-100', seed: 42 });
  t.is(drawnB.length, 3);
  t.true(drawnB.every((r) => r.tenant_id === b.tenantId));
  await recordNdt(b, 'RT', 'RT-B1', [[drawnB[0]!.weld_id, 'rejected']]);
  t.is((await selections(b)).length, 5);
  t.is((await selections(a)).length, 3);
  const counts = await owner.query<{ tenant_id: string; n: number }>(
    `select tenant_id, count(*)::int as n from weld_public.examination_selections
      group by tenant_id order by n`,
  );
  t.deepEqual(
    counts.rows.map((r) => [r.tenant_id, r.n]),
    [
      [a.tenantId, 3],
      [b.tenantId, 5],
    ],
  );

  // A's package of ISO-100, made ready; B's welds with the same ids are PENDING and unqualified.
  const wpsA = await s.wps(a, 'WPS-100', 'SMAW');
  for (const welderId of Object.values(worldA.welders)) {
    await s.qualification(a, welderId, {
      process: 'SMAW',
      coupon_diameter_in: 3,
      coupon_thickness_in: 0.5,
    });
  }
  await owner.query(
    `update weld_public.welds set wps_id = $2, wall_thickness = 0.25, welded_on = '2026-02-01'
      where tenant_id = $1`,
    [a.tenantId, wpsA],
  );
  const buttA = Object.values(worldA.butt).flat();
  const voidable = (
    await owner.query<{ id: string }>(
      `select id from weld_public.welds where tenant_id = $1 and iso_id = $2 and status = 'PENDING'
          and not (id = any($3))`,
      [a.tenantId, worldA.isoId, buttA],
    )
  ).rows.map((r) => r.id);
  for (const id of voidable) await s.moveWeld(a, 'engineer', id, 'VOIDED', 'not in this test');
  await recordNdt(
    a,
    'RT',
    'RT-A1',
    buttA.map((id) => [id, 'accepted']),
  );
  const packageId = uuid(9000);
  for (const fx of [a, b]) {
    await s.insert('test_packages', {
      tenant_id: fx.tenantId,
      id: packageId,
      package_number: 'TP-100',
      test_medium: 'hydro',
    });
    await owner.query(
      `insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) values ($1, $2, $3)`,
      [fx.tenantId, packageId, worldA.isoId],
    );
  }
  const readiness = (fx: TenantFixture) =>
    as(
      fx,
      'engineer',
      async (c) =>
        (
          await c.query<Reason & { ready: boolean }>(
            `select r.code, r.weld_id, r.iso_id, weld_public.test_packages_ready(p) as ready
               from weld_public.test_packages p
               left join lateral weld_public.test_packages_readiness_reasons(p) r on true
              where p.id = $1`,
            [packageId],
          )
        ).rows,
    );
  t.deepEqual(await readiness(a), [{ code: null, weld_id: null, iso_id: null, ready: true }]);
  // B's package of the same ids is far from ready; its reasons are its own welds'.
  const theirs = await readiness(b);
  t.true(theirs.length > 0 && theirs.every((r) => r.ready === false));
  t.true(theirs.some((r) => r.code === 'WELD_NOT_ACCEPTED'));
  // And as a DBA who names the tenant (the functions judge within the session's tenant).
  await owner.query('begin');
  try {
    await owner.query(`select set_config('jwt.claims.tenant_id', $1, true)`, [a.tenantId]);
    const asOwner = await owner.query(
      `select r.code from weld_public.test_packages p
        cross join lateral weld_public.test_packages_readiness_reasons(p) r
       where p.tenant_id = $1 and p.id = $2`,
      [a.tenantId, packageId],
    );
    t.deepEqual(asOwner.rows, []);
  } finally {
    await owner.query('rollback');
  }
  const releasedA = await as(
    a,
    'engineer',
    async (c) =>
      (
        await c.query<{ state: string }>(
          `update weld_public.test_packages set state = 'released' where id = $1 returning state`,
          [packageId],
        )
      ).rows,
  );
  t.deepEqual(releasedA, [{ state: 'released' }]);
  t.is(
    sqlstate(
      await t.throwsAsync(
        as(b, 'engineer', (c) =>
          c.query(`update weld_public.test_packages set state = 'released' where id = $1`, [
            packageId,
          ]),
        ),
      ),
    ),
    'WD009',
  );
});

test('lock order: an NDT record on a line waits for the line, not its welds, while a draw on that line is open (no deadlock)', async (t) => {
  const s = await setup(t);
  const a = s.a;
  const isoId = await s.iso(a, 'ISO-LOCK', 'L-LOCK');
  const welderId = await s.welder(a, 'LK1');
  const welds = await weldsOf(s, a, isoId, welderId, 'LK', 4);
  const begin = async (c: pg.PoolClient) => {
    await c.query('begin');
    await c.query(
      `select set_config('role', 'weld_inspector', true),
              set_config('jwt.claims.tenant_id', $1, true), set_config('jwt.claims.user_id', $2, true)`,
      [a.tenantId, a.users.inspector],
    );
  };
  // A draw, left open: it holds the line's lock and a key-share lock on the weld it selected.
  const drawer = await s.pool.connect();
  const recorder = await s.pool.connect();
  t.teardown(() => {
    drawer.release(true);
    recorder.release(true);
  });
  await begin(drawer);
  const drawn = await drawer.query<{ weld_id: string }>(
    `select weld_id from weld_public.draw_examination_selection('RT', 'L-LOCK', null, 5)`,
  );
  t.is(drawn.rows.length, 1, 'ceil(5% x 4) = 1');
  const selected = drawn.rows[0]!.weld_id;
  t.true(welds.includes(selected));

  // An NDT record rejecting that weld, meanwhile: it must queue on the line's lock before it
  // locks any weld (else it would hold the weld the draw waits for, and wait for the draw's line).
  const pid = (await recorder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!
    .pid;
  await begin(recorder);
  const recording = recorder.query('select (weld_public.record_ndt($1)).id', [
    JSON.stringify({
      method: 'RT',
      reportNumber: 'RT-LOCK',
      examinedOn: '2026-02-10',
      welds: [{ weldId: selected, result: 'rejected' }],
    }),
  ]);
  let waitingFor: string | undefined;
  for (let i = 0; i < 200 && !waitingFor; i++) {
    const { rows } = await s.owner.query<{ locktype: string }>(
      `select locktype from pg_locks where pid = $1 and not granted`,
      [pid],
    );
    waitingFor = rows[0]?.locktype;
    if (!waitingFor) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  t.is(waitingFor, 'advisory', 'the record waits for the line lock');
  // The weld itself is not locked by the waiting record: a key-share lock is free to take.
  const probe = await s.owner.query(
    `select id from weld_public.welds where id = $1 for key share nowait`,
    [selected],
  );
  t.is(probe.rowCount, 1);

  await drawer.query('commit');
  await recording;
  await recorder.query('commit');
  const after = await s.selections(a);
  t.is(after.filter((x) => x.tier === '1').length, 2, 'the rejection then drew tier 1: 2 more');
});

test('readiness: a package is created open by the API (WD008 for released, tested or closed), so no package skips the release rule; the owner may', async (t) => {
  const s = await setup(t);
  for (const state of ['released', 'tested', 'closed']) {
    const error = await t.throwsAsync(
      s.as(s.a, 'engineer', (c) =>
        c.query(
          `insert into weld_public.test_packages (package_number, test_medium, state) values ($1, 'hydro', $2)`,
          [`TP-${state}`, state],
        ),
      ),
    );
    t.is(sqlstate(error), 'WD008', state);
  }
  const open = await s.as(s.a, 'engineer', (c) =>
    c.query(
      `insert into weld_public.test_packages (package_number, test_medium) values ('TP-open', 'hydro')`,
    ),
  );
  t.is(open.rowCount, 1);
  const byOwner = await s.owner.query(
    `insert into weld_public.test_packages (tenant_id, package_number, test_medium, state)
     values ($1, 'TP-seeded', 'hydro', 'released')`,
    [s.a.tenantId],
  );
  t.is(byOwner.rowCount, 1);
});
