// The rules as data: the rows seeded per tenant from the codes, written only by a DBA; an ISO's
// examination per method; the outside diameter of a pipe size; and refuse mode on a weld's own
// write (WD010).
import test from 'ava';
import { refusal, rulesWorld } from '../helpers/rules.ts';

test('seeded per tenant from the codes: examination rules per fluid service, method and weld type; QW-452, QW-451.1 and QW-424.1 rows', async (t) => {
  const w = await rulesWorld(t);
  const rules = await w.sqlAs<{ rule: string }>(
    w.a,
    'viewer',
    `select fluid_service || ' ' || method || ' ' || percent::float8 || '% of '
              || string_agg(weld_type, ',' order by weld_type)
              || coalesce(' or ' || nullif(array_to_string(closed_by, ','), ''), '') as rule
       from weld_public.examination_rules
      group by fluid_service, method, percent, closed_by order by 1`,
  );
  t.deepEqual(
    rules.map((r) => r.rule),
    [
      'category_d VT 100% of BR,BW,FW,LW,MW,SW,TW',
      'category_m RT 20% of BR,BW,LW,MW,TW',
      'category_m VT 100% of BR,BW,FW,LW,MW,SW,TW',
      'high_pressure RT 100% of BR,BW,MW,TW',
      'high_pressure VT 100% of BR,BW,FW,LW,MW,SW,TW',
      'normal RT 5% of BW,MW,TW',
      'normal VT 5% of BR,BW,FW,LW,MW,SW,TW',
      'severe_cyclic MT 100% of SW or PT',
      'severe_cyclic RT 100% of BR or MT,PT',
      'severe_cyclic RT 100% of BW,MW,TW',
      'severe_cyclic VT 100% of BR,BW,FW,LW,MW,SW,TW',
    ],
  );
  const ranges = await w.sqlAs<{ row: string }>(
    w.a,
    'viewer',
    `select dimension || ' ' || coupon::text || case when three_layers then ' 3 layers' else '' end
              || ' min ' || coalesce(min_in::text, 'coupon') || ' x' || coalesce(max_factor::text, ' any') as row
       from weld_public.qualification_range_rules order by dimension, lower(coupon), three_layers`,
  );
  t.deepEqual(
    ranges.map((r) => r.row),
    [
      'diameter [0,1) min coupon x any',
      'diameter [1,2.875] min 1.000 x any',
      'diameter (2.875,) min 2.875 x any',
      'thickness [0,) min coupon x2.00',
      'thickness [0.5,) 3 layers min coupon x any',
    ],
  );
  const [counts] = await w.sqlAs<{ t451: number; t424: number }>(
    w.b,
    'viewer',
    `select (select count(*)::int from weld_public.procedure_thickness_rules) as t451,
            (select count(*)::int from weld_public.p_number_rules) as t424`,
  );
  t.deepEqual(counts, { t451: 4, t424: 16 }, "tenant B's own rows");
});

test('no API role writes the rules or the settings, not even the admin; a DBA does, and the checks hold', async (t) => {
  const w = await rulesWorld(t);
  for (const sql of [
    "update weld_public.tenant_settings set weld_checks = 'refuse'",
    'update weld_public.examination_rules set percent = 1',
    'delete from weld_public.examination_rules',
    'update weld_public.qualification_range_rules set min_in = 0',
    'delete from weld_public.procedure_thickness_rules',
    'delete from weld_public.p_number_rules',
    "insert into weld_public.examination_rules (fluid_service, method, weld_type, percent, clause) values ('normal', 'UT', 'BW', 10, 'x')",
  ]) {
    t.is((await refusal(t, w.sqlAs(w.a, 'admin', sql))).code, '42501', sql);
  }
  for (const sql of [
    'update weld_public.tenant_settings set continuity_months = 25 where tenant_id = $1',
    "update weld_public.tenant_settings set examination_lot = 'welder' where tenant_id = $1",
    "insert into weld_public.qualification_range_rules (tenant_id, dimension, coupon, min_in, clause) values ($1, 'diameter', '[0.5,2)', 0, 'overlaps')",
    "update weld_public.examination_rules set closed_by = '{XX}' where tenant_id = $1",
  ]) {
    t.regex((await refusal(t, w.dba(sql, [w.a.tenantId]))).code ?? '', /^(23514|23P01)$/, sql);
  }
});

test('outside_diameter per B36.10: NPS 1/2 -> 0.840, 3/8 -> 0.675, 2 1/2 -> 2.875, 14 -> 14, 2.2 -> unknown', async (t) => {
  const w = await rulesWorld(t);
  const { rows } = await w.dba(
    `select nps::float8 as nps, weld_private.outside_diameter(nps)::float8 as od
       from unnest('{0.5, 0.375, 2.5, 14, 2.2}'::numeric[]) nps`,
  );
  t.deepEqual(
    rows.map((r) => [r.nps, r.od]),
    [
      [0.5, 0.84],
      [0.375, 0.675],
      [2.5, 2.875],
      [14, 14],
      [2.2, null],
    ],
  );
});

test("an ISO's examination per method: 40 welds (14/13/13) at 5% require 3 (every welder), draw, reject one -> 2 progressive open, then met", async (t) => {
  const w = await rulesWorld(t);
  const wpsId = await w.wps(w.a, 'WPS-1', 'SMAW');
  const isoId = await w.iso(w.a, 'ISO-E', 'L-E');
  const welders: string[] = [];
  for (const [k, count] of [14, 13, 13].entries()) {
    const welderId = await w.qualifiedWelder(w.a, `E${k + 1}`, wpsId);
    welders.push(welderId);
    await w.weldsOf(w.a, isoId, welderId, `E${k + 1}`, count, { wps_id: wpsId });
  }
  const examination = async () =>
    (
      await w.sqlAs<{
        method: string;
        required: number;
        selected: number;
        examined: number;
        shortfall: number;
        progressive_open: number;
        welders_not_covered: string[];
      }>(
        w.a,
        'viewer',
        `select e.method, e.required, e.selected, e.examined, e.shortfall, e.progressive_open,
                array(select u::text from unnest(e.welders_not_covered) u order by 1) as welders_not_covered
           from weld_public.isos i, weld_public.isos_examination(i) e where i.id = $1 and e.method = 'RT'`,
        [isoId],
      )
    )[0]!;
  t.like(await examination(), {
    required: 3,
    selected: 0,
    shortfall: 3,
    welders_not_covered: [...welders].sort(),
  });
  const drawn = await w.draw(w.a, { iso: isoId, seed: 42 });
  t.like(await examination(), { selected: 3, shortfall: 0, welders_not_covered: [] });
  await w.recordNdt(
    w.a,
    'RT',
    'RT-1',
    drawn.map((s, i) => [s.weld_id, i === 0 ? 'rejected' : 'accepted']),
  );
  t.like(await examination(), { selected: 5, examined: 3, progressive_open: 2 });
  const tier1 = (await w.selections(w.a)).filter((s) => s.tier === '1');
  await w.recordNdt(
    w.a,
    'RT',
    'RT-2',
    tier1.map((s) => [s.weld_id, 'accepted']),
  );
  t.like(await examination(), { selected: 5, examined: 5, progressive_open: 0 });
});

test("refuse mode: an engineer's write that leaves a weld unqualified, on a draft WPS, out of range or on the wrong P-numbers is WD010; DATA_MISSING alone and 'show' are not", async (t) => {
  const w = await rulesWorld(t);
  const wpsId = await w.wps(w.a, 'WPS-1', 'SMAW');
  const draft = await w.wps(w.a, 'WPS-D', 'SMAW', { state: 'draft' });
  const welderId = await w.qualifiedWelder(w.a, 'W1', wpsId);
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  /** An engineer's insert of a weld in order but for `extra`. */
  const write = (number: string, extra: Record<string, unknown>) => {
    const row: Record<string, unknown> = {
      iso_id: isoId,
      weld_number: number,
      type: 'BW',
      size: 4,
      wall_thickness: 0.237,
      welder_id: welderId,
      wps_id: wpsId,
      welded_on: '2026-02-01',
      base_metal_1_p_number: '1',
      base_metal_2_p_number: '1',
      preheat_f: 50,
      ...extra,
    };
    const names = Object.keys(row);
    return w.sqlAs<{ id: string }>(
      w.a,
      'engineer',
      `insert into weld_public.welds (${names.join(', ')})
       values (${names.map((_, i) => `$${i + 1}`).join(', ')}) returning id`,
      Object.values(row),
    );
  };
  const [shown] = await write('S-1', { wps_id: draft });
  t.deepEqual(await w.codes(w.a, shown!.id), ['WPS_NOT_APPROVED'], "'show' only shows");

  await w.setting(w.a, 'weld_checks', 'refuse');
  for (const [n, extra, code] of [
    ['R-1', { wps_id: draft }, 'WPS_NOT_APPROVED'],
    ['R-2', { size: 2 }, 'WELDER_NOT_QUALIFIED'],
    ['R-3', { welded_on: '2026-09-01' }, 'WELDER_NOT_QUALIFIED'], // S-1 of 2026-02-01 kept it to 2026-08-01
    ['R-4', { base_metal_2_p_number: '8' }, 'WPS_PNUMBER'],
  ] as const) {
    const error = await refusal(t, write(n, extra));
    t.is(error.code, 'WD010', n);
    t.true(
      (JSON.parse(error.detail!) as { checks: Array<{ code: string }> }).checks.some(
        (c) => c.code === code,
      ),
      n,
    );
  }
  await write('R-5', { wall_thickness: null });
  t.pass('DATA_MISSING alone is written');
});

test("the import's code check judges rows of the caller's tenant only: tenant B's weld, WPS and welder handed to it by tenant A's engineer come back as nothing", async (t) => {
  const w = await rulesWorld(t);
  const draftOf = async (fx: typeof w.a) => {
    const isoId = await w.iso(fx, 'ISO-1', 'L-1');
    const wpsId = await w.wps(fx, 'WPS-SECRET', 'SMAW', { state: 'draft' });
    const welderId = await w.welder(fx, 'W-SECRET');
    return { isoId, wpsId, welderId };
  };
  const mine = await draftOf(w.a);
  const theirs = await draftOf(w.b);
  await w.setting(w.a, 'weld_checks', 'refuse');
  const judge = (tenantId: string, rows: { isoId: string; wpsId: string; welderId: string }) =>
    w.sqlAs<{ code: string; detail: string }>(
      w.a,
      'engineer',
      `select c.code, c.detail from weld_hidden.weld_import_code_problems(array[jsonb_populate_record(
         null::weld_public.welds, jsonb_build_object(
           'tenant_id', $1::uuid, 'id', gen_random_uuid(), 'iso_id', $2::uuid, 'weld_number', 'N-1',
           'type', 'BW', 'size', 4, 'wall_thickness', 0.237, 'welder_id', $3::uuid, 'wps_id', $4::uuid,
           'welded_on', '2026-02-01', 'base_metal_1_p_number', '1', 'base_metal_2_p_number', '1',
           'status', 'PENDING', 'repair_cycle', 0, 'version', 1))]) as c`,
      [tenantId, rows.isoId, rows.welderId, rows.wpsId],
    );
  const own = await judge(w.a.tenantId, mine);
  t.true(
    own.some((c) => c.code === 'WPS_NOT_APPROVED' && c.detail.includes('WPS-SECRET')),
    'its own row is judged',
  );
  t.deepEqual(await judge(w.b.tenantId, theirs), [], "tenant B's WPS and welder stay unseen");
});
