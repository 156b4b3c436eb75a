// Test package readiness and a release that stays released: what a release was judged on cannot
// change under it (WD011) unless the package is withdrawn with a reason; tested and closed are
// judged again; a release and a concurrent rejection take the same locks; refuse mode judges a
// WPS's and a qualification's changes too (WD010); and one lock order for examinations of a line.
import test, { type ExecutionContext } from 'ava';
import type { TenantFixture } from '../helpers/fixtures.ts';
import { refusal, rulesWorld, type Role, type RulesWorld } from '../helpers/rules.ts';

/**
 * Five welds of W1 on ISO-1 (L-1), all accepted; one RT-examined and visually examined, which
 * meets both 5% lots (ceil(5% x 5) = 1), the others accepted on a visual inspection: a ready
 * package.
 */
async function readyPackage(w: RulesWorld) {
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const welderId = await w.welder(fx, 'W1');
  const qualificationId = await w.qualification(fx, welderId, { process: 'SMAW' });
  const welds = await w.weldsOf(fx, isoId, welderId, 'N', 5, { wps_id: wpsId });
  await w.recordNdt(fx, 'RT', 'RT-1', [[welds[0]!, 'accepted']]);
  await w.recordInspection(fx, 'visual', [welds[0]!]);
  // The others accepted by hand on their visual inspection.
  const visual = await w.recordInspection(fx, 'visual', welds.slice(1));
  for (const id of welds.slice(1)) {
    await w.moveWeld(fx, 'inspector', id, 'ACCEPTED', null, { inspectionId: visual });
  }
  const packageId = await w.testPackage(fx, 'TP-1', { isos: [isoId] });
  return { fx, wpsId, isoId, welderId, qualificationId, welds, packageId };
}

const state = async (w: RulesWorld, packageId: string) =>
  (await w.dba('select state from weld_public.test_packages where id = $1', [packageId])).rows[0]!
    .state as string;

test('readiness: 5 accepted, qualified welds, one examined by RT and visually (counted toward both 5% lots): ready, and released', async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  t.deepEqual(await w.readiness(p.fx, p.packageId), []);
  await w.packageState(p.fx, p.packageId, 'released');
  t.is(await state(w, p.packageId), 'released');
});

test('readiness: a lot not drawn names its shortfall and the welders not represented; VOIDED welds drop out', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const w1 = await w.qualifiedWelder(fx, 'W1', wpsId);
  const w2 = await w.qualifiedWelder(fx, 'W2', wpsId);
  const welds = [
    ...(await w.weldsOf(fx, isoId, w1, 'A', 20, { wps_id: wpsId, status: 'ACCEPTED' })),
    ...(await w.weldsOf(fx, isoId, w2, 'B', 2, { wps_id: wpsId, status: 'ACCEPTED' })),
  ];
  const packageId = await w.testPackage(fx, 'TP-1', { welds });
  const shortfall = (await w.readiness(fx, packageId)).filter(
    (r) => r.code === 'EXAMINATION_SHORTFALL',
  );
  t.deepEqual(
    shortfall.map((r) => r.detail),
    [
      "RT 5% of line L-1 requires 2 of its 22 welds examined (5%, every welder's work represented) and has 0 selected, none of welder W1, W2; draw a selection",
      "VT 5% of line L-1 requires 2 of its 22 welds examined (5%, every welder's work represented) and has 0 selected, none of welder W1, W2; draw a selection",
    ],
  );
  t.true(shortfall.every((r) => r.iso_id === isoId));
  await w.dba("update weld_public.welds set status = 'VOIDED' where weld_number like 'B-%'");
  t.regex(
    (await w.readiness(fx, packageId)).find((r) => r.code === 'EXAMINATION_SHORTFALL')!.detail,
    /requires 1 of its 20 welds/,
  );
});

test("a release stays released: an ISO set to severe cyclic, its WPS back to draft, the welder's qualification deleted are each refused (WD011) and change nothing", async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  await w.packageState(p.fx, p.packageId, 'released');
  const attempts: Array<[string, string, unknown[]]> = [
    [
      'engineer',
      "update weld_public.isos set fluid_service = 'severe_cyclic' where id = $1",
      [p.isoId],
    ],
    ['engineer', "update weld_public.wps set state = 'draft' where id = $1", [p.wpsId]],
    [
      'engineer',
      'delete from weld_public.welder_qualifications where id = $1',
      [p.qualificationId],
    ],
    [
      'engineer',
      "update weld_public.welder_qualifications set revoked_on = '2026-01-20', revocation_reason = 'x' where id = $1",
      [p.qualificationId],
    ],
  ];
  for (const [role, sql, params] of attempts) {
    const error = await refusal(t, w.sqlAs(p.fx, role as 'engineer', sql, params));
    t.is(error.code, 'WD011', sql);
    const [held] = (JSON.parse(error.detail!) as { packages: Array<Record<string, unknown>> })
      .packages;
    t.like(held, { testPackageId: p.packageId, packageNumber: 'TP-1', state: 'released' });
    t.true((held!.reasonCount as number) > 0);
  }
  t.deepEqual(await w.readiness(p.fx, p.packageId), [], 'all of it refused: still ready');
  // A change that leaves it ready is fine.
  await w.sqlAs(p.fx, 'engineer', "update weld_public.isos set area = 'U-100' where id = $1", [
    p.isoId,
  ]);
});

test('withdrawal: released -> open only with a reason (withdraw_test_package), kept in the state history; then its WPS may change', async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  await w.packageState(p.fx, p.packageId, 'released');
  t.is((await refusal(t, w.packageState(p.fx, p.packageId, 'open'))).code, 'WD008');
  t.is(
    (
      await refusal(
        t,
        w.sqlAs(p.fx, 'engineer', "select weld_public.withdraw_test_package($1, ' ')", [
          p.packageId,
        ]),
      )
    ).code,
    'WD004',
  );
  t.is(
    (
      await refusal(
        t,
        w.sqlAs(p.fx, 'inspector', "select weld_public.withdraw_test_package($1, 'x')", [
          p.packageId,
        ]),
      )
    ).code,
    'WD003',
  );
  await w.sqlAs(
    p.fx,
    'engineer',
    "select weld_public.withdraw_test_package($1, 'line to become severe cyclic')",
    [p.packageId],
  );
  t.is(await state(w, p.packageId), 'open');
  const history = await w.sqlAs<{
    from_state: string;
    to_state: string;
    reason: string | null;
    changed_by: string;
  }>(
    p.fx,
    'viewer',
    'select from_state, to_state, reason, changed_by from weld_public.test_package_state_changes order by id',
  );
  t.deepEqual(
    history.map((h) => [h.from_state, h.to_state, h.reason]),
    [
      ['open', 'released', null],
      ['released', 'open', 'line to become severe cyclic'],
    ],
  );
  t.is(history[1]!.changed_by, p.fx.users.engineer);
  await w.sqlAs(p.fx, 'engineer', "update weld_public.wps set state = 'draft' where id = $1", [
    p.wpsId,
  ]);
  t.is(
    (await refusal(t, w.packageState(p.fx, p.packageId, 'released'))).code,
    'WD009',
    'now it is not ready',
  );
  const kept = await refusal(
    t,
    w.sqlAs(p.fx, 'engineer', 'delete from weld_public.test_packages where id = $1', [p.packageId]),
  );
  t.is(kept.code, 'WD008', 'open again, but a package with a history is kept');
  t.regex(kept.message, /^test package TP-1 was released on \d{4}-\d{2}-\d{2} and withdrawn/);
  const fresh = await w.testPackage(p.fx, 'TP-2', { isos: [] });
  await w.sqlAs(p.fx, 'engineer', 'delete from weld_public.test_packages where id = $1', [fresh]);
  t.is(
    (await w.dba('select count(*)::int as n from weld_public.test_package_state_changes')).rows[0]!
      .n,
    2,
  );
});

test('tested and closed are judged again: a weld rejected after the release keeps the package from tested (WD009)', async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  await w.packageState(p.fx, p.packageId, 'released');
  await w.recordNdt(p.fx, 'RT', 'RT-9', [[p.welds[0]!, 'rejected']], '2026-03-01');
  const error = await refusal(t, w.packageState(p.fx, p.packageId, 'tested'));
  t.is(error.code, 'WD009');
  t.regex(error.message, /is not ready to be tested/);
  t.is(await state(w, p.packageId), 'released');
});

test('a release waits for a rejection in flight, then judges it: WD009, never a package released over a rejected weld', async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  const rejecting = await w.pool.connect();
  t.teardown(() => rejecting.release());
  await rejecting.query('begin');
  await rejecting.query(
    `select set_config('role', 'weld_inspector', true), set_config('jwt.claims.tenant_id', $1, true),
            set_config('jwt.claims.user_id', $2, true)`,
    [p.fx.tenantId, p.fx.users.inspector],
  );
  await rejecting.query('select weld_public.record_ndt($1)', [
    JSON.stringify({
      method: 'RT',
      reportNumber: 'RT-9',
      examinedOn: '2026-03-01',
      welds: [{ weldId: p.welds[0], result: 'rejected' }],
    }),
  ]);
  let released = false;
  const release = w.packageState(p.fx, p.packageId, 'released').then(
    () => (released = true),
    (error: { code?: string }) => error.code,
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.false(released, 'the release waits for the rejection');
  await rejecting.query('commit');
  t.is(await release, 'WD009');
});

test('refuse mode judges later changes too: a WPS back to draft, or a qualification deleted, that leaves a weld failing is WD010 naming it', async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  await w.setting(p.fx, 'weld_checks', 'refuse');
  let error = await refusal(
    t,
    w.sqlAs(p.fx, 'engineer', "update weld_public.wps set state = 'draft' where id = $1", [
      p.wpsId,
    ]),
  );
  t.is(error.code, 'WD010');
  t.regex(
    error.message,
    /^this change of a WPS would leave weld N-01 on ISO ISO-1 failing the code checks: WPS_NOT_APPROVED$/,
  );
  error = await refusal(
    t,
    w.sqlAs(p.fx, 'engineer', 'delete from weld_public.welder_qualifications where id = $1', [
      p.qualificationId,
    ]),
  );
  t.is(error.code, 'WD010');
  t.deepEqual(
    (JSON.parse(error.detail!) as { checks: Array<{ code: string }> }).checks.map((c) => c.code),
    ['WELDER_NOT_QUALIFIED'],
  );
});

test('lock order: correcting an NDT record and recording a new one on the same line, 50 times at once, never deadlock', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
  const isoA = await w.iso(fx, 'ISO-A', 'L-A');
  const isoB = await w.iso(fx, 'ISO-B', 'L-B');
  const onA = await w.weldsOf(fx, isoA, welderId, 'A', 30, { wps_id: wpsId });
  const onB = await w.weldsOf(fx, isoB, welderId, 'B', 120, { wps_id: wpsId });
  await w.setting(fx, 'ndt_results_drive_status', false);
  // One record covering a weld of each line: its correction takes both lines' locks.
  const recordId = await w.recordNdt(fx, 'RT', 'RT-0', [
    [onA[0]!, 'accepted'],
    [onB[0]!, 'accepted'],
  ]);
  const failures: string[] = [];
  for (let i = 1; i <= 50; i++) {
    const result = i % 2 ? 'rejected' : 'accepted';
    const outcomes = await Promise.allSettled([
      w.sqlAs(fx, 'inspector', 'select weld_public.correct_ndt_record($1, $2, $3)', [
        recordId,
        JSON.stringify({
          welds: [
            { weldId: onA[0], result },
            { weldId: onB[0], result },
          ],
        }),
        `round ${i}`,
      ]),
      w.recordNdt(fx, 'RT', `RT-${i}`, [
        [onB[i]!, 'rejected'],
        [onA[i % 30]!, 'accepted'],
      ]),
    ]);
    for (const o of outcomes) {
      if (o.status === 'rejected')
        failures.push(
          `${i}: ${(o.reason as { code?: string }).code} ${(o.reason as Error).message}`,
        );
    }
  }
  t.deepEqual(failures, []);
});

test('readiness: a package is created open by an API role (WD008 otherwise); the owner (a DBA) may release one that is not ready', async (t) => {
  const w = await rulesWorld(t);
  const error = await refusal(
    t,
    w.sqlAs(
      w.a,
      'engineer',
      "insert into weld_public.test_packages (package_number, test_medium, state) values ('TP-9', 'hydro', 'released')",
    ),
  );
  t.is(error.code, 'WD008');
  const packageId = await w.testPackage(w.a, 'TP-1', {});
  t.deepEqual(
    (await w.readiness(w.a, packageId)).map((r) => r.code),
    ['NO_WELDS'],
  );
  await w.dba("update weld_public.test_packages set state = 'released' where id = $1", [packageId]);
  t.is(await state(w, packageId), 'released');
});

test('readiness: 2 pending welds name WELD_NOT_ACCEPTED each; the release is WD009 with the first 100 reasons and the count', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
  await w.weldsOf(fx, isoId, welderId, 'N', 2, { wps_id: wpsId });
  const packageId = await w.testPackage(fx, 'TP-1', { isos: [isoId] });
  const error = await refusal(t, w.packageState(fx, packageId, 'released'));
  t.is(error.code, 'WD009');
  const detail = JSON.parse(error.detail!) as {
    reasons: Array<{ code: string }>;
    reasonCount: number;
  };
  t.deepEqual(
    detail.reasons.map((r) => r.code),
    ['WELD_NOT_ACCEPTED', 'WELD_NOT_ACCEPTED', 'EXAMINATION_SHORTFALL', 'EXAMINATION_SHORTFALL'],
  );
  t.is(detail.reasonCount, 4);
});

/** A client in a transaction as a tenant's role, for tests that hold locks across statements. */
async function session(w: RulesWorld, t: ExecutionContext, fx: TenantFixture, role: Role) {
  const client = await w.pool.connect();
  t.teardown(() => client.release());
  await client.query('begin');
  await client.query(
    `select set_config('role', $1, true), set_config('jwt.claims.tenant_id', $2, true),
            set_config('jwt.claims.user_id', $3, true)`,
    [`weld_${role}`, fx.tenantId, fx.users[role]],
  );
  return client;
}

test('lock order: a draw citing an NDT record as its cause never deadlocks with a correction of that record', async (t) => {
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
  // Category D (no RT lot) when RT-1 rejects a weld; normal service after: the next draw counts
  // that rejection and draws its tier 1, citing RT-1 (a foreign key: KEY SHARE on the record).
  const isoId = await w.iso(fx, 'ISO-1', 'L-1', { fluid_service: 'category_d', rt_percent: 0 });
  const welds = await w.weldsOf(fx, isoId, welderId, 'N', 10, { wps_id: wpsId });
  const recordId = await w.recordNdt(fx, 'RT', 'RT-1', [[welds[0]!, 'rejected']]);
  await w.dba(
    "update weld_public.isos set fluid_service = 'normal', rt_percent = 5 where id = $1",
    [isoId],
  );
  // A draw holds the line and cites the record (a foreign key: KEY SHARE on it), uncommitted.
  const drawing = await session(w, t, fx, 'inspector');
  const drawn = await drawing.query(
    "select tier from weld_public.draw_examination_selection('RT', 'L-1', null, 1)",
  );
  t.deepEqual(drawn.rows.map((r) => r.tier as string).sort(), ['1', '1', 'examined']);
  // The correction locks the record, then the line. Were its record lock FOR UPDATE, it would
  // wait here for that KEY SHARE; and a correction a moment earlier would make the draw's
  // citation wait for it while it waited for the draw's line: a deadlock. NO KEY UPDATE never
  // meets a citation, so the correction takes the record and waits for the line, behind the draw.
  const correcting = await session(w, t, fx, 'inspector');
  const pid = (await correcting.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!
    .pid;
  const corrected = correcting
    .query('select weld_public.correct_ndt_record($1, \'{"notes": "film 3 re-read"}\', \'typo\')', [
      recordId,
    ])
    .then(
      () => 'corrected',
      (error: { code?: string }) => error.code,
    );
  let waitingFor: string | undefined;
  for (let i = 0; i < 100 && !waitingFor; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { rows } = await w.dba(
      `select l.locktype from pg_catalog.pg_locks l where l.pid = $1 and not l.granted`,
      [pid],
    );
    waitingFor = rows[0]?.locktype as string | undefined;
  }
  t.is(waitingFor, 'advisory', 'the correction holds the record and waits for the line');
  await drawing.query('commit');
  t.is(await corrected, 'corrected');
  await correcting.query('commit');
  t.is(
    (await w.dba('select notes from weld_public.ndt_records where id = $1', [recordId])).rows[0]!
      .notes,
    'film 3 re-read',
  );
});

test('a release waits for a record re-dated under it (a date can reopen what a repair owes), then judges what committed', async (t) => {
  const w = await rulesWorld(t);
  const p = await readyPackage(w);
  const { rows } = await w.dba(
    "select id from weld_public.ndt_records where report_number = 'RT-1'",
  );
  const correcting = await session(w, t, p.fx, 'inspector');
  await correcting.query(
    `select weld_public.correct_ndt_record($1, '{"examinedOn": "2026-03-02"}', 'date typed wrong')`,
    [rows[0]!.id],
  );
  let released = false;
  const release = w.packageState(p.fx, p.packageId, 'released').then(() => (released = true));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.false(released, 'the release waits for the correction');
  await correcting.query('commit');
  await release;
  t.is(await state(w, p.packageId), 'released');
});
