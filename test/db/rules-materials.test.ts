// Materials and heat numbers in SQL (issue F19): a weld joins components, takes each one's
// P-number for its side (so QW-403.11 and B31.3 Table 331.1.1 judge the real material), and a
// heat is traced to every weld and ISO it touches. Worked examples, as the owner writes the rows
// and the engineer writes what a user would.
import test from 'ava';
import type pg from 'pg';
import { refusal, rulesWorld, type RulesWorld } from '../helpers/rules.ts';

function materialsWorld(w: RulesWorld) {
  const fx = w.a;
  const component = (tag: string, pNumber: string | null, heat: string, kind = 'pipe') =>
    w.insert('components', {
      tenant_id: fx.tenantId,
      tag,
      kind,
      material_spec: pNumber === '5A' ? 'A335' : 'A106',
      grade: pNumber === '5A' ? 'P22' : 'B',
      p_number: pNumber,
      heat_number: heat,
    });
  const asEngineer = <T>(work: (c: pg.PoolClient) => Promise<T>) => w.as(fx, 'engineer', work);
  const weldRow = (id: string) =>
    w.sqlAs<{ base_metal_1_p_number: string | null; base_metal_2_p_number: string | null }>(
      fx,
      'viewer',
      'select base_metal_1_p_number, base_metal_2_p_number from weld_public.welds where id = $1',
      [id],
    );
  return { fx, component, asEngineer, weldRow };
}

test('QW-403.11 from the material: a weld joining an A106-B pipe (P-No. 1) and an A335-P22 fitting (P-No. 5A) is P-No. 1 to 5A, and its WPS for P-No. 1 to 1 does not cover it', async (t) => {
  const w = await rulesWorld(t);
  const m = materialsWorld(w);
  const pipe = await m.component('PIPE-1', '1', 'H-100');
  const fitting = await m.component('ELL-1', '5A', 'H-200', 'fitting');
  const wpsId = await w.wps(m.fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(m.fx, 'ISO-1', 'L-1');
  const weldId = await m.asEngineer(async (c) => {
    const { rows } = await c.query<{ id: string }>(
      `insert into weld_public.welds (iso_id, weld_number, type, size, wall_thickness, wps_id, welded_on,
                                      component_1_id, component_2_id)
       values ($1, 'W-1', 'BW', 4, 0.237, $2, '2026-02-01', $3, $4) returning id`,
      [isoId, wpsId, pipe, fitting],
    );
    return rows[0]!.id;
  });
  t.deepEqual(await m.weldRow(weldId), [
    { base_metal_1_p_number: '1', base_metal_2_p_number: '5A' },
  ]);
  const checks = await w.checks(m.fx, weldId);
  t.deepEqual(
    checks.filter((c) => c.code === 'WPS_PNUMBER').map((c) => c.detail),
    ['P-No. 1 to P-No. 5A is not a joint WPS WPS-1 rev 0 covers (P-No. 1 to P-No. 1; QW-403.11)'],
  );
  // And P-No. 5A over 1/2 in. asks for PWHT: not at 0.237 in.
  t.false(checks.some((c) => c.code === 'PWHT_REQUIRED'));
});

test('a weld naming a component may not give its side another P-number: 422 naming the field; the same one, or none, is taken', async (t) => {
  const w = await rulesWorld(t);
  const m = materialsWorld(w);
  const pipe = await m.component('PIPE-1', '1', 'H-100');
  const isoId = await w.iso(m.fx, 'ISO-1', 'L-1');
  const insert = (number: string, p1: string | null) =>
    m.asEngineer((c) =>
      c.query<{ id: string }>(
        `insert into weld_public.welds (iso_id, weld_number, type, size, component_1_id, base_metal_1_p_number)
         values ($1, $2, 'BW', 4, $3, $4) returning id`,
        [isoId, number, pipe, p1],
      ),
    );
  const error = await refusal(t, insert('W-8', '8'));
  t.is(error.code, 'WD007');
  t.is(
    error.message,
    'base metal 1 is component PIPE-1, P-No. 1: a weld naming a component takes its P-number',
  );
  t.deepEqual(JSON.parse(error.detail!), { pointer: '/baseMetal1PNumber' });
  const same = (await insert('W-1', '1')).rows[0]!.id;
  const none = (await insert('W-2', null)).rows[0]!.id;
  for (const id of [same, none]) {
    t.deepEqual(await m.weldRow(id), [{ base_metal_1_p_number: '1', base_metal_2_p_number: null }]);
  }
  // A change of the P-number alone is refused as well; of another field, it stands.
  const change = await refusal(
    t,
    m.asEngineer((c) =>
      c.query(`update weld_public.welds set base_metal_1_p_number = '8' where id = $1`, [same]),
    ),
  );
  t.is(change.code, 'WD007');
  // Clearing it is a change too.
  const cleared = await refusal(
    t,
    m.asEngineer((c) =>
      c.query(`update weld_public.welds set base_metal_1_p_number = null where id = $1`, [same]),
    ),
  );
  t.is(cleared.code, 'WD007');
  await m.asEngineer((c) =>
    c.query(`update weld_public.welds set base_metal_2_p_number = '8' where id = $1`, [same]),
  );
  t.deepEqual(await m.weldRow(same), [{ base_metal_1_p_number: '1', base_metal_2_p_number: '8' }]);
});

test('a component found to be another material: its new P-number reaches every weld naming it, on either side, except in a released package', async (t) => {
  const w = await rulesWorld(t);
  const m = materialsWorld(w);
  const pipe = await m.component('PIPE-1', '1', 'H-100');
  const other = await m.component('PIPE-2', '1', 'H-101');
  const isoId = await w.iso(m.fx, 'ISO-1', 'L-1');
  const first = await w.weld(m.fx, isoId, 'W-1', { component_1_id: pipe, component_2_id: other });
  const second = await w.weld(m.fx, isoId, 'W-2', { component_1_id: other, component_2_id: pipe });
  const setP = (p: string) =>
    m.asEngineer((c) =>
      c.query(`update weld_public.components set p_number = $2 where id = $1`, [pipe, p]),
    );
  await setP('3');
  t.deepEqual(await m.weldRow(first), [{ base_metal_1_p_number: '3', base_metal_2_p_number: '1' }]);
  t.deepEqual(await m.weldRow(second), [
    { base_metal_1_p_number: '1', base_metal_2_p_number: '3' },
  ]);

  // Released: the package's welds keep their base metals (WD008), so the component keeps its P-number.
  await w.dba(`update weld_public.welds set status = 'ACCEPTED' where id = $1`, [first]);
  const pkg = await w.testPackage(m.fx, 'TP-1', { welds: [first] });
  await w.dba(`update weld_public.test_packages set state = 'released' where id = $1`, [pkg]);
  const error = await refusal(t, setP('4'));
  t.is(error.code, 'WD008');
  // Nor its heat number: the traceability of a released package's welds stays as released.
  const heat = await refusal(
    t,
    m.asEngineer((c) =>
      c.query(`update weld_public.components set heat_number = 'H-OTHER' where id = $1`, [pipe]),
    ),
  );
  t.is(heat.code, 'WD008');
  t.deepEqual(await m.weldRow(first), [{ base_metal_1_p_number: '3', base_metal_2_p_number: '1' }]);
});

test('a recalled heat: every weld and ISO it touches, across ISOs and on either side, and nothing of another tenant', async (t) => {
  const w = await rulesWorld(t);
  const m = materialsWorld(w);
  const recalled = await m.component('PIPE-1', '1', 'H-RECALL');
  const fitting = await m.component('ELL-1', '1', 'H-RECALL', 'fitting');
  const clean = await m.component('PIPE-2', '1', 'H-CLEAN');
  const iso1 = await w.iso(m.fx, 'ISO-1', 'L-1');
  const iso2 = await w.iso(m.fx, 'ISO-2', 'L-2');
  const iso3 = await w.iso(m.fx, 'ISO-3', 'L-3');
  await w.weld(m.fx, iso1, 'W-1', { component_1_id: recalled, component_2_id: clean });
  await w.weld(m.fx, iso2, 'W-2', { component_1_id: clean, component_2_id: fitting });
  await w.weld(m.fx, iso3, 'W-3', { component_1_id: clean });
  // Tenant B has a heat of the same number: not ours to see.
  const theirs = await w.insert('components', {
    tenant_id: w.b.tenantId,
    tag: 'B-PIPE',
    kind: 'pipe',
    material_spec: 'A106',
    heat_number: 'H-RECALL',
  });
  const isoB = await w.iso(w.b, 'ISO-B', 'L-B');
  await w.weld(w.b, isoB, 'W-B', { component_1_id: theirs });

  const traced = await w.sqlAs<{ weld_number: string; iso_number: string }>(
    m.fx,
    'viewer',
    `select distinct w.weld_number, i.iso_number
       from weld_public.components c
       cross join lateral weld_public.components_welds(c) w
       join weld_public.isos i on i.id = w.iso_id
      where c.heat_number = 'H-RECALL'
      order by 1`,
  );
  t.deepEqual(traced, [
    { weld_number: 'W-1', iso_number: 'ISO-1' },
    { weld_number: 'W-2', iso_number: 'ISO-2' },
  ]);
});

/** An approved SMAW WPS qualifying `fNumbers`, a weld made to it, and a way to record its fillers. */
async function fillerWorld(w: RulesWorld, fNumbers: number[] | null, process = 'SMAW') {
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-F', process, { f_numbers: fNumbers });
  const isoId = await w.iso(fx, 'ISO-F', 'L-F');
  const weldId = await w.weld(fx, isoId, 'F-1', { wps_id: wpsId });
  const lot = (classification: string, lotNumber: string, fNumber: number) =>
    w.insert('filler_lots', {
      tenant_id: fx.tenantId,
      aws_classification: classification,
      lot_number: lotNumber,
      f_number: fNumber,
    });
  const use = (lotId: string, usedFor = 'SMAW') =>
    w.as(fx, 'inspector', (c) =>
      c.query(
        'insert into weld_public.weld_fillers (weld_id, process, filler_lot_id) values ($1, $2, $3)',
        [weldId, usedFor, lotId],
      ),
    );
  const fillerChecks = async () =>
    (await w.checks(fx, weldId)).filter(
      (c) => c.code === 'FILLER_NOT_COVERED' || /F-numbers/.test(c.detail),
    );
  return { fx, wpsId, weldId, lot, use, fillerChecks };
}

test('QW-404.4: a weld made with E7018 (F-No. 4) under a WPS qualifying F-No. 4 is covered; an E6010 lot (F-No. 3) is FILLER_NOT_COVERED', async (t) => {
  const w = await rulesWorld(t);
  const f = await fillerWorld(w, [4]);
  await f.use(await f.lot('E7018', 'L-4471', 4));
  t.deepEqual(await f.fillerChecks(), []);
  await f.use(await f.lot('E6010', 'L-3310', 3));
  t.deepEqual(await f.fillerChecks(), [
    {
      code: 'FILLER_NOT_COVERED',
      detail:
        'filler E6010 lot L-3310 (F-No. 3) for SMAW is not among the F-numbers of WPS WPS-F rev 0 (4; QW-404.4)',
    },
  ]);
  // The WPS requalified for F-No. 3 as well: covered.
  await w.dba('update weld_public.wps set f_numbers = $2 where id = $1', [f.wpsId, [3, 4]]);
  t.deepEqual(await f.fillerChecks(), []);
});

test('QW-404.4: a filler recorded for a process the WPS does not use is not covered; a WPS with no F-numbers leaves fillers unjudged, and says so', async (t) => {
  const w = await rulesWorld(t);
  const f = await fillerWorld(w, null);
  t.deepEqual(await f.fillerChecks(), [], 'no filler recorded: nothing to judge');
  await f.use(await f.lot('ER70S-2', 'L-6001', 6), 'GTAW');
  t.deepEqual(
    (await f.fillerChecks()).map((c) => c.detail),
    [
      "WPS WPS-F rev 0 records no F-numbers: the weld's fillers are not judged (QW-404.4)",
      'filler ER70S-2 lot L-6001 is recorded for GTAW, which WPS WPS-F rev 0 (SMAW) does not use',
    ].sort(),
  );
});

test('a released package holds its WPS F-numbers: a change that would leave a weld not covered is refused (WD011); refuse mode does not refuse the weld for a filler', async (t) => {
  const w = await rulesWorld(t);
  const f = await fillerWorld(w, [4]);
  await f.use(await f.lot('E7018', 'L-4471', 4));
  await w.dba(`update weld_public.welds set status = 'ACCEPTED' where id = $1`, [f.weldId]);
  const pkg = await w.testPackage(f.fx, 'TP-F', { welds: [f.weldId] });
  const blockers = async () =>
    (await w.readiness(f.fx, pkg)).filter((r) => r.code === 'FILLER_NOT_COVERED');
  t.deepEqual(await blockers(), []);
  await w.dba(`update weld_public.test_packages set state = 'released' where id = $1`, [pkg]);
  const error = await refusal(
    t,
    w.as(f.fx, 'engineer', (c) =>
      c.query('update weld_public.wps set f_numbers = $2 where id = $1', [f.wpsId, [6]]),
    ),
  );
  t.is(error.code, 'WD011');
  t.regex(error.message, /this change of a WPS would leave it not ready/);
  // And so does its filler lot's F-number (a correction of the certificate's reading).
  const lotError = await refusal(
    t,
    w.as(f.fx, 'engineer', (c) => c.query(`update weld_public.filler_lots set f_number = 3`)),
  );
  t.is(lotError.code, 'WD011');
  t.regex(lotError.message, /this change of a filler lot would leave it not ready/);
  // The weld's fillers are the record of its released package: not deleted (WD008).
  const taken = await refusal(
    t,
    w.as(f.fx, 'inspector', (c) => c.query(`delete from weld_public.weld_fillers`)),
  );
  t.is(taken.code, 'WD008');

  // In refuse mode a weld's write is not refused for its fillers (recorded after welding).
  await w.setting(f.fx, 'weld_checks', 'refuse');
  await w.dba(`update weld_public.test_packages set state = 'open' where id = $1`, [pkg]);
  await f.use(await f.lot('E6010', 'L-3310', 3));
  t.deepEqual((await blockers()).length, 1);
  await w.as(f.fx, 'engineer', (c) =>
    c.query(`update weld_public.welds set material = 'A106-B' where id = $1`, [f.weldId]),
  );
  t.deepEqual(
    await w.sqlAs(f.fx, 'viewer', 'select material from weld_public.welds where id = $1', [
      f.weldId,
    ]),
    [{ material: 'A106-B' }],
  );
});
