// ASME IX procedures in SQL: a WPS qualified by its PQRs (QW-200.2, QW-200.4), the base-metal
// thickness a PQR supports (QW-451.1), P-numbers as an essential variable (QW-403.11) and the
// joints a PQR qualifies (QW-424.1); an approved WPS stays qualified (WD013).
import test from 'ava';
import type pg from 'pg';
import { refusal, rulesWorld, type RulesWorld } from '../helpers/rules.ts';

const wpsChecks = (w: RulesWorld, wpsId: string) =>
  w.sqlAs<{ code: string; detail: string }>(
    w.a,
    'viewer',
    'select c.code, c.detail from weld_public.wps p, weld_public.wps_checks(p) c where p.id = $1',
    [wpsId],
  );

/** As the engineer, in one transaction: the commit runs the deferred WPS check. */
const asEngineer = (w: RulesWorld, work: (c: pg.PoolClient) => Promise<unknown>) =>
  w.as(w.a, 'engineer', work);

test('QW-200.2: a WPS with no PQR is refused approval (WD013 at commit); backed by one, it is approved', async (t) => {
  const w = await rulesWorld(t);
  const draft = await w.insert('wps', {
    tenant_id: w.a.tenantId,
    wps_number: 'WPS-1',
    process: 'SMAW',
    p_numbers: ['1'],
    thickness_min_in: 0.1875,
    thickness_max_in: 1,
  });
  const error = await refusal(
    t,
    asEngineer(w, (c) =>
      c.query("update weld_public.wps set state = 'approved' where id = $1", [draft]),
    ),
  );
  t.is(error.code, 'WD013');
  t.regex(
    error.message,
    /WPS WPS-1 rev 0 is approved but not qualified by its PQRs: WPS WPS-1 rev 0 is backed by no PQR \(QW-200\.2\)/,
  );
  t.deepEqual(
    (await wpsChecks(w, draft)).map((c) => c.code),
    ['WPS_RANGE_UNSUPPORTED'],
  );
  const pqrId = await w.pqr(w.a, 'PQR-1', 'SMAW');
  await asEngineer(w, async (c) => {
    await c.query("update weld_public.wps set state = 'approved' where id = $1", [draft]);
    await c.query('insert into weld_public.wps_pqrs (wps_id, pqr_id) values ($1, $2)', [
      draft,
      pqrId,
    ]);
  });
  t.deepEqual(await wpsChecks(w, draft), []);
});

test('QW-451.1: a PQR of T = 0.25 in. supports 1/16 to 1/2 in. (0.063 to 0.5, inches to 3 places): a WPS range of 0.063 to 0.5 is qualified, 0.063 to 0.75 is not', async (t) => {
  const w = await rulesWorld(t);
  const pqrId = await w.pqr(w.a, 'PQR-1', 'SMAW', { thickness_tested_in: 0.25 });
  const inRange = await w.wps(
    w.a,
    'WPS-1',
    'SMAW',
    { state: 'draft', thickness_min_in: 0.0625, thickness_max_in: 0.5 },
    [pqrId],
  );
  t.deepEqual(await wpsChecks(w, inRange), []);
  const beyond = await w.wps(
    w.a,
    'WPS-2',
    'SMAW',
    { state: 'draft', thickness_min_in: 0.0625, thickness_max_in: 0.75 },
    [pqrId],
  );
  t.deepEqual(await wpsChecks(w, beyond), [
    {
      code: 'WPS_RANGE_UNSUPPORTED',
      detail:
        'WPS WPS-2 rev 0 covers 0.063 to 0.75 in.; its PQRs support 0.063 to 0.5 in. (QW-451.1)',
    },
  ]);
  const error = await refusal(
    t,
    asEngineer(w, (c) =>
      c.query("update weld_public.wps set state = 'approved' where id = $1", [beyond]),
    ),
  );
  t.is(error.code, 'WD013');
  // A weld on it names the same, as its own check.
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  await w.dba("update weld_public.wps set state = 'approved' where id = $1", [beyond]);
  const weldId = await w.weld(w.a, isoId, 'N-1', { wps_id: beyond, wall_thickness: 0.3 });
  t.true(
    (await w.checks(w.a, weldId)).some(
      (c) => c.code === 'WPS_RANGE_UNSUPPORTED' && /0\.063 to 0\.5 in\./.test(c.detail),
    ),
  );
});

test('QW-451.1: T of 1 1/2 in. supports 3/16 to 8 in.; T under 1/16 in. supports T to 2T; two PQRs together support both ranges', async (t) => {
  const w = await rulesWorld(t);
  const thick = await w.pqr(w.a, 'PQR-T', 'SMAW', { thickness_tested_in: 1.5 });
  const thin = await w.pqr(w.a, 'PQR-S', 'SMAW', { thickness_tested_in: 0.05 });
  const heavy = await w.wps(
    w.a,
    'WPS-H',
    'SMAW',
    { state: 'draft', thickness_min_in: 0.1875, thickness_max_in: 8 },
    [thick],
  );
  t.deepEqual(await wpsChecks(w, heavy), []);
  const light = await w.wps(
    w.a,
    'WPS-L',
    'SMAW',
    { state: 'draft', thickness_min_in: 0.05, thickness_max_in: 0.1 },
    [thin],
  );
  t.deepEqual(await wpsChecks(w, light), []);
  const gap = await w.wps(
    w.a,
    'WPS-G',
    'SMAW',
    { state: 'draft', thickness_min_in: 0.05, thickness_max_in: 8 },
    [thin, thick],
  );
  t.deepEqual(
    (await wpsChecks(w, gap)).map((c) => c.detail),
    [
      'WPS WPS-G rev 0 covers 0.05 to 8 in.; its PQRs support 0.05 to 0.1 in., 0.188 to 8 in. (QW-451.1)',
    ],
    'between 0.1 and 3/16 in. nothing supports it',
  );
  const open = await w.wps(
    w.a,
    'WPS-O',
    'SMAW',
    { state: 'draft', thickness_min_in: 0.1875, thickness_max_in: null },
    [thick],
  );
  t.regex(
    (await wpsChecks(w, open))[0]!.detail,
    /covers 0\.188 in\. and up; its PQRs support 0\.188 to 8 in\./,
  );
});

test('QW-403.11: a weld of P-No. 1 to P-No. 8 on a WPS for P-No. 1 to 1 is WPS_PNUMBER; on a WPS for P-No. 1 to 8 it passes', async (t) => {
  const w = await rulesWorld(t);
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  const p11 = await w.wps(w.a, 'WPS-11', 'SMAW');
  const p18 = await w.wps(w.a, 'WPS-18', 'SMAW', { p_numbers: ['8', '1'] }, [
    await w.pqr(w.a, 'PQR-18', 'SMAW', { p_numbers: ['1', '8'] }),
  ]);
  const dissimilar = { base_metal_1_p_number: '8', base_metal_2_p_number: '1' };
  const onP11 = await w.weld(w.a, isoId, 'N-1', { wps_id: p11, ...dissimilar });
  t.deepEqual(
    (await w.checks(w.a, onP11)).filter((c) => c.code === 'WPS_PNUMBER'),
    [
      {
        code: 'WPS_PNUMBER',
        detail:
          'P-No. 1 to P-No. 8 is not a joint WPS WPS-11 rev 0 covers (P-No. 1 to P-No. 1; QW-403.11)',
      },
    ],
  );
  const onP18 = await w.weld(w.a, isoId, 'N-2', { wps_id: p18, ...dissimilar });
  t.false((await w.codes(w.a, onP18)).includes('WPS_PNUMBER'));
  t.deepEqual(await wpsChecks(w, p18), []);
});

test('QW-424.1: a PQR of P-No. 4 to 4 qualifies a WPS of P-No. 4 to 1; a PQR of P-No. 1 to 1 does not qualify one of P-No. 1 to 8', async (t) => {
  const w = await rulesWorld(t);
  const p44 = await w.pqr(w.a, 'PQR-44', 'SMAW', { p_numbers: ['4'] });
  const p41 = await w.wps(w.a, 'WPS-41', 'SMAW', { state: 'draft', p_numbers: ['4', '1'] }, [p44]);
  t.deepEqual(await wpsChecks(w, p41), []);
  const p11 = await w.pqr(w.a, 'PQR-11', 'SMAW');
  const p18 = await w.wps(w.a, 'WPS-18', 'SMAW', { state: 'draft', p_numbers: ['1', '8'] }, [p11]);
  t.deepEqual(
    (await wpsChecks(w, p18)).map((c) => c.detail),
    ['WPS WPS-18 rev 0 covers P-No. 1 to P-No. 8; its PQRs qualify P-No. 1 to P-No. 1 (QW-424.1)'],
  );
});

test('QW-200.4: a GTAW+SMAW WPS backed by a GTAW PQR alone is unsupported for SMAW; a GTAW and an SMAW PQR together qualify it', async (t) => {
  const w = await rulesWorld(t);
  const gtaw = await w.pqr(w.a, 'PQR-G', 'GTAW');
  const smaw = await w.pqr(w.a, 'PQR-S', 'SMAW');
  const half = await w.wps(w.a, 'WPS-1', 'GTAW+SMAW', { state: 'draft' }, [gtaw]);
  t.deepEqual(
    (await wpsChecks(w, half)).map((c) => c.detail),
    ['WPS WPS-1 rev 0 uses GTAW+SMAW, and no PQR of it qualifies SMAW (QW-200.4)'],
  );
  const whole = await w.wps(w.a, 'WPS-2', 'GTAW+SMAW', { state: 'draft' }, [gtaw, smaw]);
  t.deepEqual(await wpsChecks(w, whole), []);
});

test('missing P-numbers are DATA_MISSING, never a pass: a weld without either side, a WPS without its joint', async (t) => {
  const w = await rulesWorld(t);
  const isoId = await w.iso(w.a, 'ISO-1', 'L-1');
  const wpsId = await w.wps(w.a, 'WPS-1', 'SMAW', { state: 'draft', p_numbers: null });
  const weldId = await w.weld(w.a, isoId, 'N-1', {
    wps_id: wpsId,
    base_metal_1_p_number: null,
    base_metal_2_p_number: null,
  });
  const missing = (await w.checks(w.a, weldId))
    .filter((c) => c.code === 'DATA_MISSING')
    .map((c) => c.detail);
  t.true(missing.includes('no P-number is recorded for base metal 1'));
  t.true(missing.includes('no P-number is recorded for base metal 2'));
  t.true(missing.includes('WPS WPS-1 rev 0 records no P-numbers'));
  t.false((await w.codes(w.a, weldId)).includes('WPS_PNUMBER'), 'unknown is not judged a mismatch');
  t.deepEqual(await wpsChecks(w, wpsId), [
    { code: 'DATA_MISSING', detail: 'WPS WPS-1 rev 0 records no P-numbers' },
  ]);
  const error = await refusal(
    t,
    w.dba("update weld_public.welds set base_metal_1_p_number = 'P1' where id = $1", [weldId]),
  );
  t.is(error.code, '23514', 'a P-number is written as the code writes it: 1, 5A, 15E');
});

test('an approved WPS stays qualified: taking its last PQR off, or widening its range past its PQRs, is refused (WD013); a draft may be anything', async (t) => {
  const w = await rulesWorld(t);
  const wpsId = await w.wps(w.a, 'WPS-1', 'SMAW');
  let error = await refusal(
    t,
    asEngineer(w, (c) => c.query('delete from weld_public.wps_pqrs where wps_id = $1', [wpsId])),
  );
  t.is(error.code, 'WD013');
  t.deepEqual(JSON.parse(error.detail!).wpsId, wpsId);
  error = await refusal(
    t,
    asEngineer(w, (c) =>
      c.query('update weld_public.wps set thickness_max_in = 2 where id = $1', [wpsId]),
    ),
  );
  t.is(error.code, 'WD013');
  await asEngineer(w, (c) =>
    c.query("update weld_public.wps set state = 'draft', thickness_max_in = 2 where id = $1", [
      wpsId,
    ]),
  );
  t.is((await wpsChecks(w, wpsId)).length, 1, 'the draft shows it');
});

test('P-numbers are one or two, each written as the code writes it: a null element, a third, a second dimension or an offset array are refused on WPSs and PQRs', async (t) => {
  const w = await rulesWorld(t);
  const wpsId = await w.wps(w.a, 'WPS-1', 'SMAW');
  const pqrId = await w.pqr(w.a, 'PQR-9', 'SMAW');
  // {NULL,8} would read as no joint at all: every P-number check of the WPS and its welds off.
  for (const bad of [
    '{NULL,8}',
    '{8,NULL}',
    '{43,NULL,8}',
    '{1,8,9}',
    '{{1},{8}}',
    '[0:1]={1,8}',
    '{}',
  ]) {
    for (const [table, id] of [
      ['wps', wpsId],
      ['pqrs', pqrId],
    ] as const) {
      const error = await refusal(
        t,
        w.sqlAs(
          w.a,
          'engineer',
          `update weld_public.${table} set p_numbers = $2::text[] where id = $1`,
          [id, bad],
        ),
      );
      t.is(error.code, '23514', `${table} ${bad}`);
    }
  }
  await w.sqlAs(w.a, 'engineer', "update weld_public.wps set p_numbers = '{1,1}' where id = $1", [
    wpsId,
  ]);
  await w.sqlAs(w.a, 'engineer', "update weld_public.pqrs set p_numbers = '{5A}' where id = $1", [
    pqrId,
  ]);
  const { rows } = await w.dba(
    `select (select p_numbers from weld_public.wps where id = $1) as wps,
            (select p_numbers from weld_public.pqrs where id = $2) as pqr`,
    [wpsId, pqrId],
  );
  t.deepEqual(rows[0], { wps: ['1', '1'], pqr: ['5A'] });
});
