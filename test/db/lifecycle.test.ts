// The weld status lifecycle in SQL: the full transition matrix against the default rules, rules
// changed with plain SQL, every refusal's SQLSTATE, history, and concurrent changes.
import test from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import type { RequestRole } from '../../db/vocabulary.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

const STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'] as const;
const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
type Role = (typeof ROLES)[number];

/** DOMAIN.md's default rules: (from -> to) => [least role, reason required]. */
const DEFAULT_RULES: Record<string, [Role, boolean]> = {
  'PENDING>ACCEPTED': ['inspector', false],
  'PENDING>REJECTED': ['inspector', false],
  'ACCEPTED>REJECTED': ['inspector', true],
  'REJECTED>REPAIR': ['engineer', false],
  'REPAIR>PENDING': ['inspector', false],
  'PENDING>VOIDED': ['engineer', true],
  'ACCEPTED>VOIDED': ['engineer', true],
  'REJECTED>VOIDED': ['engineer', true],
  'REPAIR>VOIDED': ['engineer', true],
};

async function setup(t: import('ava').ExecutionContext) {
  const { owner, pool, a, b } = await twoTenants(t, 25);
  return { owner, pool, a, b };
}

interface ChangeArgs {
  weldId: string;
  to: string;
  reason?: string | null;
  expectedVersion?: number | null;
}

/**
 * Calls change_weld_status as a user of the fixture's tenant; resolves with the weld row. An
 * acceptance rests on a visual inspection of the weld that accepted it (written by the owner
 * first, as a DBA would): these tests are of the transitions, not of what an acceptance rests on
 * (rules-verdicts.test.ts).
 */
async function change(pool: pg.Pool, fx: TenantFixture, role: Role, args: ChangeArgs) {
  const inspectionId = args.to === 'ACCEPTED' ? await visualOf(pool, fx, args.weldId) : null;
  return withContext(
    pool,
    { role: `weld_${role}` as RequestRole, tenantId: fx.tenantId, userId: fx.users[role] },
    async (c) =>
      (
        await c.query<{ status: string; version: number; repair_cycle: number }>(
          `select status, version, repair_cycle
             from weld_public.change_weld_status($1, $2, $3, $4, null, $5)`,
          [args.weldId, args.to, args.reason ?? null, args.expectedVersion ?? null, inspectionId],
        )
      ).rows[0]!,
  );
}

/** An accepted visual inspection of the weld, recorded by the inspector; its id. */
async function visualOf(pool: pg.Pool, fx: TenantFixture, weldId: string): Promise<string> {
  return withContext(
    pool,
    { role: 'weld_inspector', tenantId: fx.tenantId, userId: fx.users.inspector },
    async (c) =>
      (
        await c.query<{ id: string }>('select id from weld_public.record_inspection($1)', [
          JSON.stringify({
            kind: 'visual',
            inspectorName: 'QC',
            inspectedOn: new Date().toISOString().slice(0, 10),
            result: 'accepted',
            weldIds: [weldId],
          }),
        ])
      ).rows[0]!.id,
  ).catch(() => null as unknown as string); // another tenant's weld: the change is refused first
}

/** The JSON a refusal carries in its DETAIL. */
function detailOf(error: unknown): unknown {
  return JSON.parse((error as { detail: string }).detail);
}

function sqlstate(error: unknown): string | undefined {
  return (error as { code?: string }).code;
}

test('the full transition matrix (5 x 5 states x 4 roles) against the default rules', async (t) => {
  const { owner, pool, a } = await setup(t);
  let cases = 0;
  for (const from of STATUSES) {
    for (const to of STATUSES) {
      for (const role of ROLES) {
        const weldId = await a.weld(from);
        const rule = DEFAULT_RULES[`${from}>${to}`];
        const expectOk = rule !== undefined && ROLES.indexOf(role) >= ROLES.indexOf(rule[0]);
        const label = `${role}: ${from} -> ${to}`;
        try {
          const weld = await change(pool, a, role, { weldId, to, reason: 'because' });
          t.true(expectOk, `${label} should have been refused`);
          t.is(weld.status, to, label);
          t.is(weld.version, 2, label);
          t.is(weld.repair_cycle, from === 'REJECTED' && to === 'REPAIR' ? 1 : 0, label);
          const history = await owner.query(
            `select from_status, to_status, reason, changed_by, cause from weld_public.weld_status_history where weld_id = $1`,
            [weldId],
          );
          t.deepEqual(
            history.rows,
            [
              {
                from_status: from,
                to_status: to,
                reason: 'because',
                changed_by: a.users[role],
                cause: 'user',
              },
            ],
            label,
          );
        } catch (error) {
          if (expectOk) throw error;
          t.is(sqlstate(error), rule === undefined ? 'WD002' : 'WD003', label);
          const row = await owner.query(
            `select status, version from weld_public.welds where id = $1`,
            [weldId],
          );
          t.deepEqual(row.rows[0], { status: from, version: 1 }, `${label}: unchanged`);
        }
        cases++;
      }
    }
  }
  t.is(cases, 100);
});

test('a refused transition names the allowed next statuses; VOIDED allows none', async (t) => {
  const { pool, a } = await setup(t);
  const accepted = await a.weld('ACCEPTED');
  const error = await t.throwsAsync(change(pool, a, 'admin', { weldId: accepted, to: 'PENDING' }));
  t.is(sqlstate(error), 'WD002');
  t.deepEqual(detailOf(error), {
    allowed: ['REJECTED', 'VOIDED'],
  });

  const voided = await a.weld('VOIDED');
  const terminal = await t.throwsAsync(change(pool, a, 'admin', { weldId: voided, to: 'PENDING' }));
  t.deepEqual(detailOf(terminal), { allowed: [] });
});

test('a reason is required where the rule says so, and blank does not count', async (t) => {
  const { pool, a } = await setup(t);
  for (const [from, to, role] of [
    ['ACCEPTED', 'REJECTED', 'inspector'],
    ['PENDING', 'VOIDED', 'engineer'],
    ['REPAIR', 'VOIDED', 'admin'],
  ] as const) {
    const weldId = await a.weld(from);
    for (const reason of [null, '', '   ']) {
      const error = await t.throwsAsync(change(pool, a, role, { weldId, to, reason }));
      t.is(sqlstate(error), 'WD004', `${from} -> ${to} with ${JSON.stringify(reason)}`);
    }
    t.is((await change(pool, a, role, { weldId, to, reason: 'cut out' })).status, to);
  }
});

test('a repair cycle: rejected, repaired, re-examined and accepted, with history in order', async (t) => {
  const { owner, pool, a } = await setup(t);
  const weldId = await a.weld('PENDING');
  await change(pool, a, 'inspector', { weldId, to: 'REJECTED' });
  await change(pool, a, 'engineer', { weldId, to: 'REPAIR' });
  await change(pool, a, 'inspector', { weldId, to: 'PENDING' });
  await change(pool, a, 'inspector', { weldId, to: 'REJECTED' });
  await change(pool, a, 'engineer', { weldId, to: 'REPAIR' });
  await change(pool, a, 'inspector', { weldId, to: 'PENDING' });
  const final = await change(pool, a, 'inspector', { weldId, to: 'ACCEPTED', expectedVersion: 7 });
  t.deepEqual(final, { status: 'ACCEPTED', version: 8, repair_cycle: 2 });
  const history = await owner.query<{ step: string; repair_cycle: number }>(
    `select from_status || '>' || to_status as step, repair_cycle
       from weld_public.weld_status_history where weld_id = $1 order by id`,
    [weldId],
  );
  t.deepEqual(
    history.rows.map((r) => `${r.step}@${r.repair_cycle}`),
    [
      'PENDING>REJECTED@0',
      'REJECTED>REPAIR@1',
      'REPAIR>PENDING@1',
      'PENDING>REJECTED@1',
      'REJECTED>REPAIR@2',
      'REPAIR>PENDING@2',
      'PENDING>ACCEPTED@2',
    ],
  );
});

test('rules changed with plain SQL take effect at the next change', async (t) => {
  const { owner, pool, a, b } = await setup(t);
  const rules = (sql: string) => owner.query(sql.replaceAll(':tenant', `'${a.tenantId}'`));

  // Raise PENDING -> ACCEPTED to engineer: the inspector is refused at once, the engineer passes.
  await rules(`update weld_public.weld_transition_rules set least_role = 'engineer'
                where tenant_id = :tenant and from_status = 'PENDING' and to_status = 'ACCEPTED'`);
  const w1 = await a.weld();
  t.is(
    sqlstate(await t.throwsAsync(change(pool, a, 'inspector', { weldId: w1, to: 'ACCEPTED' }))),
    'WD003',
  );
  t.is((await change(pool, a, 'engineer', { weldId: w1, to: 'ACCEPTED' })).status, 'ACCEPTED');

  // Remove it: nobody may; the allowed list shrinks.
  await rules(`delete from weld_public.weld_transition_rules
                where tenant_id = :tenant and from_status = 'PENDING' and to_status = 'ACCEPTED'`);
  const w2 = await a.weld();
  const gone = await t.throwsAsync(change(pool, a, 'admin', { weldId: w2, to: 'ACCEPTED' }));
  t.is(sqlstate(gone), 'WD002');
  t.deepEqual(detailOf(gone), { allowed: ['REJECTED', 'VOIDED'] });

  // Add one that was not there (un-void by an admin, with a reason).
  await rules(`insert into weld_public.weld_transition_rules (tenant_id, from_status, to_status, least_role, reason_required)
               values (:tenant, 'VOIDED', 'PENDING', 'admin', true)`);
  const w3 = await a.weld('VOIDED');
  t.is(
    sqlstate(await t.throwsAsync(change(pool, a, 'admin', { weldId: w3, to: 'PENDING' }))),
    'WD004',
  );
  t.is(
    (await change(pool, a, 'admin', { weldId: w3, to: 'PENDING', reason: 'design change undone' }))
      .status,
    'PENDING',
  );

  // Tenant B's rules are its own: still the defaults.
  const wb = await b.weld();
  t.is((await change(pool, b, 'inspector', { weldId: wb, to: 'ACCEPTED' })).status, 'ACCEPTED');
});

test('refusals carry their SQLSTATEs: not found (incl. other tenant), stale version', async (t) => {
  const { pool, a, b } = await setup(t);
  const missing = await t.throwsAsync(
    change(pool, a, 'admin', { weldId: '00000000-0000-4000-8000-000000000000', to: 'ACCEPTED' }),
  );
  t.is(sqlstate(missing), 'WD001');

  const theirs = await b.weld();
  t.is(
    sqlstate(await t.throwsAsync(change(pool, a, 'admin', { weldId: theirs, to: 'ACCEPTED' }))),
    'WD001',
  );

  const ours = await a.weld();
  const stale = await t.throwsAsync(
    change(pool, a, 'inspector', { weldId: ours, to: 'ACCEPTED', expectedVersion: 3 }),
  );
  t.is(sqlstate(stale), 'WD005');
  t.deepEqual(detailOf(stale), { version: 1 });
  t.is(
    (await change(pool, a, 'inspector', { weldId: ours, to: 'ACCEPTED', expectedVersion: 1 }))
      .version,
    2,
  );
});

test('only recording an NDT result names an NDT record as the cause, and only for a weld it covers', async (t) => {
  const { owner, pool, a } = await setup(t);
  const covered = await a.weld();
  const other = await a.weld();
  const ndt = (
    await owner.query<{ id: string }>(
      `insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
       values ($1, 'RT', 'RT-001', '2026-11-01', 'accepted') returning id`,
      [a.tenantId],
    )
  ).rows[0]!.id;
  await owner.query(
    `insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id) values ($1, $2, $3)`,
    [a.tenantId, ndt, covered],
  );
  await owner.query(
    `update weld_public.ndt_record_welds set result = 'accepted' where weld_id = $1`,
    [covered],
  );
  /** change_weld_status naming the record, with weld.applying_ndt_record set as given first. */
  const call = (role: Role, weldId: string, applying: string | null) =>
    withContext(
      pool,
      { role: `weld_${role}` as RequestRole, tenantId: a.tenantId, userId: a.users[role] },
      async (c) => {
        if (applying !== null) {
          await c.query(`select set_config('weld.applying_ndt_record', $1, true)`, [applying]);
        }
        return c.query(`select weld_public.change_weld_status($1, 'ACCEPTED', null, null, $2)`, [
          weldId,
          ndt,
        ]);
      },
    );

  // An API caller (REST and GraphQL run no statement of their own, so set no setting) naming a
  // record makes it the basis of a person's acceptance, never the cause of an NDT result,
  // whatever its role; nor does another record's run. A history row of cause 'ndt' that no NDT
  // run writes is refused by the history itself.
  const forged = await t.throwsAsync(
    withContext(
      pool,
      { role: 'weld_admin', tenantId: a.tenantId, userId: a.users.admin },
      async (c) => {
        await c.query(`select set_config('weld.applying_ndt_record', '', true)`);
        // (As the rules role would write it, were a function to try.)
        return c.query(
          `insert into weld_public.weld_status_history
             (weld_id, from_status, to_status, repair_cycle, cause, ndt_record_id)
           values ($1, 'PENDING', 'ACCEPTED', 0, 'ndt', $2)`,
          [covered, ndt],
        );
      },
    ),
  );
  t.is(sqlstate(forged), '42501');
  for (const [role, applying] of [
    ['admin', ''],
    ['admin', '00000000-0000-4000-8000-000000000003'],
  ] as const) {
    const weldId = await a.weld();
    await owner.query(
      `insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id, result) values ($1, $2, $3, 'accepted')`,
      [a.tenantId, ndt, weldId],
    );
    await call(role, weldId, applying);
    t.deepEqual(
      (
        await owner.query(
          `select cause, ndt_record_id from weld_public.weld_status_history where weld_id = $1`,
          [weldId],
        )
      ).rows,
      [{ cause: 'user', ndt_record_id: ndt }],
      `${role} ${applying}: a basis`,
    );
  }

  // While the record's result is applied (as ndt_apply_status_changes does it), it may, for the
  // welds it covers.
  await call('inspector', covered, ndt);
  const history = await owner.query(
    `select cause, ndt_record_id from weld_public.weld_status_history where weld_id = $1`,
    [covered],
  );
  t.deepEqual(history.rows, [{ cause: 'ndt', ndt_record_id: ndt }]);
  t.is(sqlstate(await t.throwsAsync(call('inspector', other, ndt))), '22023');
});

test('API roles cannot change status, version or history directly', async (t) => {
  const { pool, a } = await setup(t);
  const weldId = await a.weld();
  await change(pool, a, 'inspector', { weldId, to: 'ACCEPTED' });
  const attempts = [
    `update weld_public.welds set status = 'REJECTED' where id = '${weldId}'`,
    `update weld_public.welds set version = 99 where id = '${weldId}'`,
    `update weld_public.welds set repair_cycle = 5 where id = '${weldId}'`,
    `insert into weld_public.weld_status_history (weld_id, from_status, to_status, repair_cycle) values ('${weldId}', 'PENDING', 'ACCEPTED', 0)`,
    `update weld_public.weld_status_history set reason = 'rewritten'`,
    `delete from weld_public.weld_status_history`,
    `delete from weld_public.welds where id = '${weldId}'`,
  ];
  for (const role of ROLES) {
    for (const sql of attempts) {
      const error = await t.throwsAsync(
        withContext(pool, { role: `weld_${role}` as RequestRole, tenantId: a.tenantId }, (c) =>
          c.query(sql),
        ),
      );
      t.is(sqlstate(error), '42501', `${role}: ${sql}`);
    }
  }
  // An engineer's ordinary edit is allowed, and bumps the version like a status change does.
  const edited = await withContext(pool, { role: 'weld_engineer', tenantId: a.tenantId }, (c) =>
    c.query(
      `update weld_public.welds set material = 'A106-B' where id = $1 returning version, status`,
      [weldId],
    ),
  );
  t.deepEqual(edited.rows[0], { version: 3, status: 'ACCEPTED' });
});

test('20 concurrent changes with the same expected version: exactly one wins, history has exactly it', async (t) => {
  const { owner, pool, a } = await setup(t);
  const weldId = await a.weld('PENDING');
  const targets = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'ACCEPTED' : 'REJECTED'));
  const results = await Promise.allSettled(
    targets.map((to) => change(pool, a, 'inspector', { weldId, to, expectedVersion: 1 })),
  );
  const won = results.filter((r) => r.status === 'fulfilled');
  const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.is(won.length, 1);
  t.is(lost.length, 19);
  t.true(lost.every((r) => sqlstate(r.reason) === 'WD005'));

  const winner = (won[0] as PromiseFulfilledResult<{ status: string; version: number }>).value;
  t.is(winner.version, 2);
  const weld = await owner.query(`select status, version from weld_public.welds where id = $1`, [
    weldId,
  ]);
  t.deepEqual(weld.rows[0], { status: winner.status, version: 2 });
  const history = await owner.query(
    `select to_status from weld_public.weld_status_history where weld_id = $1`,
    [weldId],
  );
  t.deepEqual(history.rows, [{ to_status: winner.status }]);
});

test('concurrent changes without an expected version serialize: none lost', async (t) => {
  const { owner, pool, a } = await setup(t);
  const weldId = await a.weld('PENDING');
  // Ten inspectors race through PENDING -> REJECTED and engineers REJECTED -> REPAIR etc.:
  // whatever order the lock grants, each success is one history row and one version.
  const steps = Array.from({ length: 10 }, () =>
    change(pool, a, 'admin', { weldId, to: 'REJECTED' }).catch((e: unknown) => e),
  );
  const outcomes = await Promise.all(steps);
  const succeeded = outcomes.filter((o) => !(o instanceof Error)).length;
  t.is(
    succeeded,
    1,
    'PENDING -> REJECTED happens once; the rest find REJECTED -> REJECTED refused',
  );
  t.true(outcomes.filter((o) => o instanceof Error).every((e) => sqlstate(e) === 'WD002'));
  const counts = await owner.query(
    `select (select version from weld_public.welds where id = $1) as version,
            (select count(*)::int from weld_public.weld_status_history where weld_id = $1) as history`,
    [weldId],
  );
  t.deepEqual(counts.rows[0], { version: 2, history: 1 });
});
