// Heat treatment and hardness by ASME B31.3 Table 331.1.1 in SQL (weld_private.heat_treatment_problems):
// whether a weld needs PWHT (its P-numbers, its nominal wall), whether its PWHT record held the
// table's temperature and time, and its hardness after it. Each test is a worked example named by
// its paragraph; the weld's checks (and a package's readiness) are the verdict.
import test from 'ava';
import { refusal, rulesWorld, type RulesWorld } from '../helpers/rules.ts';

const MM = 1 / 25.4;
/** A wall of `mm` millimetres in inches, to three places as numeric(6, 3) holds it. */
const wall = (mm: number) => Math.round(mm * MM * 1000) / 1000;

/** An ISO and a function making welds on it (P-No. 1 to 1, welded 2026-02-01 by default). */
async function heatWorld(w: RulesWorld) {
  const fx = w.a;
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  let n = 0;
  const weld = (extra: Record<string, unknown> = {}) => w.weld(fx, isoId, `HT-${++n}`, extra);
  /** A PWHT record covering `weldIds`, as the inspector records it. */
  const pwht = async (weldIds: string[], values: Record<string, unknown> = {}) => {
    const v = {
      treated_on: '2026-02-10',
      holding_temperature_f: 1150,
      hold_minutes: 60,
      ...values,
    };
    return w.as(fx, 'inspector', async (c) => {
      const { rows } = await c.query<{ id: string }>(
        `insert into weld_public.pwht_records (record_number, treated_on, holding_temperature_f, hold_minutes)
         values ($1, $2, $3, $4) returning id`,
        [`PW-${++n}`, v.treated_on, v.holding_temperature_f, v.hold_minutes],
      );
      for (const weldId of weldIds) {
        await c.query(
          'insert into weld_public.pwht_record_welds (pwht_record_id, weld_id) values ($1, $2)',
          [rows[0]!.id, weldId],
        );
      }
      return rows[0]!.id;
    });
  };
  const hardness = (weldId: string, hb: number, on = '2026-02-12', location = 'weld') =>
    w.as(fx, 'inspector', (c) =>
      c.query(
        `insert into weld_public.hardness_readings (weld_id, measured_on, hardness_hb, location)
         values ($1, $2, $3, $4)`,
        [weldId, on, hb, location],
      ),
    );
  /** The weld's heat treatment checks (the others, such as its missing WPS, aside). */
  const heatChecks = async (weldId: string) =>
    (await w.checks(fx, weldId)).filter(
      (c) =>
        ['PWHT_REQUIRED', 'PWHT_OUT_OF_RANGE', 'HARDNESS_HIGH'].includes(c.code) ||
        (c.code === 'DATA_MISSING' && /PWHT/.test(c.detail)),
    );
  return { fx, isoId, weld, pwht, hardness, heatChecks };
}

test('B31.3 Table 331.1.1: a P-No. 1 weld of 20 mm wall needs PWHT (over 19 mm, 3/4 in.) and one of 15 mm does not', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const thick = await h.weld({ wall_thickness: wall(20) }); // 0.787 in.
  const thin = await h.weld({ wall_thickness: wall(15) }); // 0.591 in.

  t.deepEqual(await h.heatChecks(thick), [
    {
      code: 'PWHT_REQUIRED',
      detail:
        'P-No. 1 to P-No. 1 at a wall of 0.787 in. requires PWHT (P-No. 1 over 0.75 in.; B31.3 Table 331.1.1, B31.3-2022): ' +
        '1100 to 1200 °F for at least 60 min; no PWHT record dated on or after 2026-02-01 covers it; ' +
        'not exempt (B31.3 Table 331.1.3: no WPS is recorded, so no exemption applies)',
    },
  ]);
  t.deepEqual(await h.heatChecks(thin), []);

  // Treated at 1150 °F for an hour (0.787 in. needs 1 h/in., at least 1 h): done.
  await h.pwht([thick]);
  t.deepEqual(await h.heatChecks(thick), []);
});

test('B31.3 Table 331.1.1: a PWHT record held below the range, or too short for the wall, is flagged; a later record within both clears it', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const weld = await h.weld({ wall_thickness: wall(20) });
  await h.pwht([weld], { holding_temperature_f: 1050, hold_minutes: 45 });
  t.deepEqual(await h.heatChecks(weld), [
    {
      code: 'PWHT_OUT_OF_RANGE',
      detail:
        'PWHT record PW-2 of 2026-02-10 held 1050 °F, outside the 1100 to 1200 °F of P-No. 1 (B31.3 Table 331.1.1, B31.3-2022)',
    },
    {
      code: 'PWHT_OUT_OF_RANGE',
      detail:
        'PWHT record PW-2 of 2026-02-10 held 45 min at temperature, less than the 60 min a wall of 0.787 in. needs (B31.3 Table 331.1.1, B31.3-2022)',
    },
  ]);
  // Above the range too.
  await h.pwht([weld], { treated_on: '2026-02-11', holding_temperature_f: 1250 });
  t.deepEqual(
    (await h.heatChecks(weld)).map((c) => c.detail),
    [
      'PWHT record PW-3 of 2026-02-11 held 1250 °F, outside the 1100 to 1200 °F of P-No. 1 (B31.3 Table 331.1.1, B31.3-2022)',
    ],
  );
  // The latest record is the one judged: re-treated within the range, the weld is in order.
  await h.pwht([weld], { treated_on: '2026-02-12', holding_temperature_f: 1120, hold_minutes: 60 });
  t.deepEqual(await h.heatChecks(weld), []);
});

test('B31.3 Table 331.1.1: time at temperature is 1 h per inch up to 2 in., then 2 h plus 15 min for each further inch', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const oneAndHalf = await h.weld({ wall_thickness: 1.5 }); // 90 min
  const twoAndHalf = await h.weld({ wall_thickness: 2.5 }); // 120 + 7.5, so 128 min
  await h.pwht([oneAndHalf], { hold_minutes: 89 });
  await h.pwht([twoAndHalf], { hold_minutes: 127 });
  t.regex(
    (await h.heatChecks(oneAndHalf))[0]!.detail,
    /held 89 min .* less than the 90 min a wall of 1\.5 in\./,
  );
  t.regex(
    (await h.heatChecks(twoAndHalf))[0]!.detail,
    /held 127 min .* less than the 128 min a wall of 2\.5 in\./,
  );
  await h.pwht([oneAndHalf], { treated_on: '2026-02-11', hold_minutes: 90 });
  await h.pwht([twoAndHalf], { treated_on: '2026-02-11', hold_minutes: 128 });
  t.deepEqual(await h.heatChecks(oneAndHalf), []);
  t.deepEqual(await h.heatChecks(twoAndHalf), []);
});

test('Records follow reality: a PWHT record dated before the weld was made does not cover it', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const weld = await h.weld({ wall_thickness: wall(20), welded_on: '2026-03-01' });
  await h.pwht([weld], { treated_on: '2026-02-10' });
  t.deepEqual(
    (await h.heatChecks(weld)).map((c) => c.code),
    ['PWHT_REQUIRED'],
  );
});

test('B31.3 331.2.3(a): a joint of P-No. 1 to P-No. 5A is treated in the higher range (5A: 1250 to 1400 °F), and 5A asks for it over 1/2 in.', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  // 15 mm: P-No. 1 would not need PWHT, P-No. 5A does (over 1/2 in.).
  const weld = await h.weld({ wall_thickness: wall(15), base_metal_2_p_number: '5A' });
  t.deepEqual(
    (await h.heatChecks(weld)).map((c) => c.detail),
    [
      'P-No. 1 to P-No. 5A at a wall of 0.591 in. requires PWHT (P-No. 5A over 0.5 in.; B31.3 Table 331.1.1, B31.3-2022): ' +
        '1250 to 1400 °F for at least 60 min; no PWHT record dated on or after 2026-02-01 covers it',
    ],
  );
  // 1150 °F is in P-No. 1's range but not in the joint's.
  await h.pwht([weld], { holding_temperature_f: 1150 });
  t.regex(
    (await h.heatChecks(weld))[0]!.detail,
    /held 1150 °F, outside the 1250 to 1400 °F of P-No\. 5A/,
  );
});

test('B31.3 Table 331.1.1: P-No. 5B needs PWHT at every thickness, P-No. 8 at none; a fillet weld with no wall is not judged a pass', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const chrome = await h.weld({
    wall_thickness: 0.2,
    base_metal_1_p_number: '5B',
    base_metal_2_p_number: '5B',
  });
  const austenitic = await h.weld({
    wall_thickness: 2,
    base_metal_1_p_number: '8',
    base_metal_2_p_number: '8',
  });
  const fillet = await h.weld({ type: 'FW', wall_thickness: null });
  const chromeFillet = await h.weld({
    type: 'FW',
    wall_thickness: null,
    base_metal_1_p_number: '5B',
    base_metal_2_p_number: '5B',
  });
  t.deepEqual(
    (await h.heatChecks(chrome)).map((c) => c.code),
    ['PWHT_REQUIRED'],
  );
  t.deepEqual(await h.heatChecks(austenitic), []);
  t.deepEqual(await h.heatChecks(fillet), [
    {
      code: 'DATA_MISSING',
      detail:
        'no wall thickness is recorded: whether P-No. 1 needs PWHT (over 0.75 in.) is unknown',
    },
  ]);
  t.deepEqual(
    (await h.heatChecks(chromeFillet)).map((c) => c.code),
    ['PWHT_REQUIRED'],
  );
});

test('B31.3-2012 Table 331.1.1 hardness: a P-No. 5A weld read over 241 HB after its PWHT is flagged; a reading before it no longer counts', async (t) => {
  const w = await rulesWorld(t);
  // The hardness column is the older edition's (the 2022 table has none: rules-verdicts.test.ts).
  await w.setting(w.a, 'code_edition', 'B31.3-2012');
  const h = await heatWorld(w);
  const weld = await h.weld({
    wall_thickness: 0.75,
    base_metal_1_p_number: '5A',
    base_metal_2_p_number: '5A',
  });
  await h.pwht([weld], { holding_temperature_f: 1300, hold_minutes: 120 });
  await h.hardness(weld, 241);
  t.deepEqual(await h.heatChecks(weld), []);
  await h.hardness(weld, 262, '2026-02-12', 'haz');
  t.deepEqual(await h.heatChecks(weld), [
    {
      code: 'HARDNESS_HIGH',
      detail:
        'heat affected zone hardness of 262 HB on 2026-02-12 is over the 241 HB of P-No. 5A (B31.3 Table 331.1.1, B31.3-2012)',
    },
  ]);
  // Treated again: the high reading was before it, and a new one within the limit stands.
  await h.pwht([weld], {
    treated_on: '2026-02-20',
    holding_temperature_f: 1300,
    hold_minutes: 120,
  });
  await h.hardness(weld, 230, '2026-02-21', 'haz');
  t.deepEqual(await h.heatChecks(weld), []);
  // P-No. 1 has no limit in the table.
  const carbon = await h.weld({ wall_thickness: 0.5 });
  await h.hardness(carbon, 300);
  t.deepEqual(await h.heatChecks(carbon), []);
});

test('the table is the tenant’s: a DBA who lowers P-No. 1’s threshold to 1/2 in. makes the 15 mm weld need PWHT, in that tenant only', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const weld = await h.weld({ wall_thickness: wall(15) });
  const isoB = await w.iso(w.b, 'ISO-1', 'L-1');
  const weldB = await w.weld(w.b, isoB, 'HT-1', { wall_thickness: wall(15) });
  t.false((await w.codes(h.fx, weld)).includes('PWHT_REQUIRED'));
  await w.dba(
    `update weld_public.heat_treatment_rules set wall_over_in = 0.5 where tenant_id = $1 and p_number = '1'`,
    [w.a.tenantId],
  );
  t.true((await w.codes(h.fx, weld)).includes('PWHT_REQUIRED'));
  t.false((await w.codes(w.b, weldB)).includes('PWHT_REQUIRED'));
});

test('readiness names a weld that owes its PWHT, and the refuse setting does not refuse the weld for it', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  await w.setting(h.fx, 'weld_checks', 'refuse');
  const wpsId = await w.wps(h.fx, 'WPS-1', 'SMAW');
  const welderId = await w.qualifiedWelder(h.fx, 'W1', wpsId);
  // Written as the engineer, in refuse mode: PWHT is owed after welding, so the write stands.
  const weldId = await w.as(h.fx, 'engineer', async (c) => {
    const { rows } = await c.query<{ id: string }>(
      `insert into weld_public.welds (iso_id, weld_number, type, size, wall_thickness, welder_id, wps_id,
                                      welded_on, base_metal_1_p_number, base_metal_2_p_number)
       values ($1, 'W-1', 'BW', 4, 0.787, $2, $3, '2026-02-01', '1', '1') returning id`,
      [h.isoId, welderId, wpsId],
    );
    return rows[0]!.id;
  });
  await w.dba(`update weld_public.welds set status = 'ACCEPTED' where id = $1`, [weldId]);
  const packageId = await w.testPackage(h.fx, 'TP-1', { welds: [weldId] });
  const codes = async () => (await w.readiness(h.fx, packageId)).map((r) => r.code);
  t.true((await codes()).includes('PWHT_REQUIRED'));
  t.regex(
    (await w.readiness(h.fx, packageId)).find((r) => r.code === 'PWHT_REQUIRED')!.detail,
    /^weld W-1 on ISO ISO-1: P-No\. 1 to P-No\. 1 at a wall of 0\.787 in\. requires PWHT/,
  );
  await h.pwht([weldId]);
  t.false((await codes()).includes('PWHT_REQUIRED'));
});

test('row security: another tenant sees none of the PWHT records or hardness readings, and cannot cover a weld it cannot see', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  const weld = await h.weld({ wall_thickness: wall(20) });
  await h.pwht([weld]);
  await h.hardness(weld, 150);
  const seen = await w.sqlAs<{ n: number }>(
    w.b,
    'viewer',
    `select (select count(*) from weld_public.pwht_records)::int
          + (select count(*) from weld_public.pwht_record_welds)::int
          + (select count(*) from weld_public.hardness_readings)::int as n`,
  );
  t.is(seen[0]!.n, 0);
  // Tenant B's inspector naming tenant A's weld: the foreign key is per tenant, so no such weld.
  const error = await t.throwsAsync(
    w.as(w.b, 'inspector', (c) =>
      c.query(
        `insert into weld_public.hardness_readings (weld_id, measured_on, hardness_hb) values ($1, '2026-02-12', 500)`,
        [weld],
      ),
    ),
  );
  t.is((error as { code?: string }).code, '23503');
  t.deepEqual(await h.heatChecks(weld), []);
});

test('a released package holds the records of its welds (WD008), as it holds their data; a new finding is taken', async (t) => {
  const w = await rulesWorld(t);
  const h = await heatWorld(w);
  // A package ready but for its heat treatment: a qualified welder and WPS, and (by the DBA) no
  // examination asked of the tenant's normal service, 0% RT on the ISO.
  await w.dba(`delete from weld_public.examination_rules where tenant_id = $1`, [h.fx.tenantId]);
  await w.dba(`update weld_public.isos set rt_percent = 0 where id = $1`, [h.isoId]);
  const wpsId = await w.wps(h.fx, 'WPS-1', 'SMAW');
  const welderId = await w.qualifiedWelder(h.fx, 'W1', wpsId);
  const weldId = await h.weld({ wall_thickness: 0.787, wps_id: wpsId, welder_id: welderId });
  const recordId = await h.pwht([weldId]);
  await h.hardness(weldId, 180);
  await w.dba(`update weld_public.welds set status = 'ACCEPTED' where id = $1`, [weldId]);
  const pkg = await w.testPackage(h.fx, 'TP-HT', { welds: [weldId] });
  t.deepEqual(await w.readiness(h.fx, pkg), []);
  await w.dba(`update weld_public.test_packages set state = 'released' where id = $1`, [pkg]);
  const asInspector = (sql: string, params: unknown[]) =>
    w.as(h.fx, 'inspector', (c) => c.query(sql, params));

  // Every change of what was judged is refused while it is released, whatever its effect: a
  // chart re-read within the range too.
  for (const sql of [
    'update weld_public.pwht_records set hold_minutes = 75 where id = $1',
    'update weld_public.pwht_records set holding_temperature_f = 900 where id = $1',
    'delete from weld_public.pwht_record_welds where pwht_record_id = $1',
    'delete from weld_public.pwht_records where id = $1',
    'update weld_public.hardness_readings set hardness_hb = 150 where weld_id = (select weld_id from weld_public.pwht_record_welds where pwht_record_id = $1)',
    'delete from weld_public.hardness_readings where weld_id = (select weld_id from weld_public.pwht_record_welds where pwht_record_id = $1)',
  ]) {
    const error = await refusal(t, asInspector(sql, [recordId]));
    t.is(error.code, 'WD008', sql);
    t.regex(
      error.message,
      /test package TP-HT is released; the records of its welds change only while it is open/,
      sql,
    );
  }
  // The weld's preheat and components are its data: frozen like the rest (WD008).
  const frozen = await refusal(
    t,
    w.as(h.fx, 'engineer', (c) =>
      c.query('update weld_public.welds set preheat_f = 400 where id = $1', [weldId]),
    ),
  );
  t.is(frozen.code, 'WD008');
  // A hardness reading found after the release is a fact: taken, and readiness names it.
  await w.dba(
    `update weld_public.heat_treatment_rules set hardness_max_hb = 200 where tenant_id = $1 and p_number = '1'`,
    [h.fx.tenantId],
  );
  await h.hardness(weldId, 260, '2026-02-20');
  t.true((await w.readiness(h.fx, pkg)).some((r) => r.code === 'HARDNESS_HIGH'));
  // And a weld added to a PWHT record touches the record but changes none of its values: taken.
  const other = await h.weld({ wall_thickness: 0.787, weld_number: 'HT-OTHER' });
  await asInspector(
    'insert into weld_public.pwht_record_welds (pwht_record_id, weld_id) values ($1, $2)',
    [recordId, other],
  );
  t.is(
    (
      await w.sqlAs<{ n: number }>(
        h.fx,
        'viewer',
        'select count(*)::int as n from weld_public.pwht_record_welds where pwht_record_id = $1',
        [recordId],
      )
    )[0]!.n,
    2,
  );
});
