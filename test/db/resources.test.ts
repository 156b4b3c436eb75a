// What REST's resources rely on at the SQL level: a version on every resource, bumped once per
// transaction by a change to the row or its lists; test packages whose ISOs and welds change only
// while they are open; WPSs never deleted; and the idempotency keys of REST POSTs, per user and
// tenant, with their purge.
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { asAuthenticator, withContext } from '../../db/database.ts';
import { startHousekeeping } from '../../server/housekeeping.ts';
import { createLogger } from '../../rest-adapter/http/log.ts';
import { ownerClient, twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';

async function setup(t: ExecutionContext, poolSize?: number) {
  const { target, owner, pool, a, b } = await twoTenants(t, poolSize);
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );
  return { target, owner, pool, a, b, as };
}

const sqlstate = (error: unknown) => (error as { code?: string }).code;

/** The one value of a one-row, one-column query. */
async function value<T>(c: pg.ClientBase, sql: string, params: unknown[] = []): Promise<T> {
  const { rows } = await c.query<Record<string, T>>(sql, params);
  return Object.values(rows[0]!)[0]!;
}

//------------------------------------------------------------------------------------------------
// Numbers

test('every numeric column refuses NaN (a check of its own), and a precision refuses infinities', async (t) => {
  const { owner, a, as } = await setup(t);
  // The catalog: each numeric column of weld_public's tables has a typmod (precision) and a check
  // "<column> <> 'NaN'" (migration 000016): a new column without one fails here.
  const { rows } = await owner.query<{
    table: string;
    column: string;
    typmod: number;
    checked: boolean;
  }>(
    `select c.relname as table, a.attname as column, a.atttypmod as typmod,
            exists (select from pg_constraint k
                     where k.conrelid = c.oid and k.contype = 'c' and k.conkey = array[a.attnum]
                       and pg_get_constraintdef(k.oid) ~ ('[(]' || a.attname || ' <> ''NaN''::numeric[)]')
                   ) as checked
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'weld_public'
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where c.relkind = 'r' and a.atttypid = 'numeric'::regtype
      order by 1, 2`,
  );
  t.true(rows.length >= 20, `${rows.length} numeric columns`);
  t.deepEqual(
    rows.filter((r) => !r.checked || r.typmod < 0).map((r) => `${r.table}.${r.column}`),
    [],
  );
  // And a write, as a request role: NaN is a check violation, Infinity out of range.
  const isoId = await as(a, 'engineer', (c) =>
    value<string>(
      c,
      `insert into weld_public.isos (iso_number, line_number) values ('N-1', 'L') returning id`,
    ),
  );
  for (const [number, code] of [
    ['NaN', '23514'],
    ['Infinity', '22003'],
    ['-Infinity', '22003'],
  ] as const) {
    const error = await t.throwsAsync(
      as(a, 'engineer', (c) =>
        c.query('update weld_public.isos set rt_percent = $1 where id = $2', [number, isoId]),
      ),
    );
    t.is(sqlstate(error), code, number);
  }
});

//------------------------------------------------------------------------------------------------
// Versions

test('every resource has a version, 1 when created, that each update bumps', async (t) => {
  const { owner, a, as } = await setup(t);
  const engineer = (sql: string, params: unknown[] = []) =>
    as(a, 'engineer', (c) => value<number>(c, sql, params));
  const qualificationOf = async (welderId: string) =>
    value<string>(
      owner,
      `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on)
       values ($1, $2, 'GTAW', '2026-01-05') returning id`,
      [a.tenantId, welderId],
    );
  const cases: Array<[string, string, string]> = [
    ['isos', a.isoId, `area = 'U-100'`],
    ['welders', a.welderId, `name = 'Renamed'`],
    ['welder_qualifications', await qualificationOf(a.welderId), `positions = '{6G}'`],
  ];
  const pqr = await engineer(
    `insert into weld_public.pqrs (pqr_number, process, p_numbers, thickness_tested_in)
     values ('PQR-1', 'GTAW', '{1,1}', 0.5) returning id`,
  );
  const wps = await engineer(
    `insert into weld_public.wps (wps_number, process) values ('WPS-1', 'GTAW') returning id`,
  );
  const pkg = await engineer(
    `insert into weld_public.test_packages (package_number, test_medium) values ('TP-1', 'hydro') returning id`,
  );
  cases.push(
    ['pqrs', String(pqr), `document_ref = 'DOC-1'`],
    ['wps', String(wps), `thickness_min_in = 0.1875`],
    ['test_packages', String(pkg), `test_pressure_psig = 150`],
  );
  const pwht = await engineer(
    `insert into weld_public.pwht_records (record_number, treated_on, holding_temperature_f, hold_minutes)
     values ('PW-1', '2026-02-10', 1150, 60) returning id`,
  );
  const weld = await engineer(
    `insert into weld_public.welds (iso_id, weld_number, type, size) values ($1, 'VW-1', 'BW', 4) returning id`,
    [a.isoId],
  );
  const reading = await engineer(
    `insert into weld_public.hardness_readings (weld_id, measured_on, hardness_hb)
     values ($1, '2026-02-12', 180) returning id`,
    [weld],
  );
  const component = await engineer(
    `insert into weld_public.components (tag, kind, material_spec) values ('C-1', 'pipe', 'A106') returning id`,
  );
  const lot = await engineer(
    `insert into weld_public.filler_lots (aws_classification, lot_number, f_number)
     values ('E7018', 'L-1', 4) returning id`,
  );
  const used = await engineer(
    `insert into weld_public.weld_fillers (weld_id, process, filler_lot_id) values ($1, 'SMAW', $2) returning id`,
    [weld, lot],
  );
  const punch = await engineer(
    `insert into weld_public.punch_items (test_package_id, category, description)
     values ($1, 'B', 'Label') returning id`,
    [pkg],
  );
  const sha = 'a'.repeat(64);
  await engineer(
    `insert into weld_hidden.attachment_files (sha256, size_bytes, content_type)
     values ($1, 10, 'application/pdf') returning 1`,
    [sha],
  );
  const attachment = await engineer(
    `insert into weld_public.attachments (sha256, file_name, content_type, size_bytes, iso_id)
     values ($1, 'a.pdf', 'application/pdf', 10, $2) returning id`,
    [sha, a.isoId],
  );
  cases.push(
    ['punch_items', String(punch), `description = 'Label 2'`],
    ['attachments', String(attachment), `description = 'drawing'`],
    ['filler_lots', String(lot), `certificate_ref = 'C-1'`],
    ['weld_fillers', String(used), `process = 'GTAW'`],
    ['components', String(component), `heat_number = 'H-1'`],
    ['pwht_records', String(pwht), `hold_minutes = 90`],
    ['hardness_readings', String(reading), `hardness_hb = 190`],
  );
  // A repair cycle, opened by the lifecycle (here by the owner), corrected by the inspector.
  const repair = await value<string>(
    owner,
    `insert into weld_public.weld_repairs (tenant_id, weld_id, repair_cycle) values ($1, $2, 1) returning id`,
    [a.tenantId, weld],
  );
  cases.push(['weld_repairs', repair, `preheat_f = 60`]);
  for (const [table, id, set] of cases) {
    const versions = async () =>
      value<number>(owner, `select version from weld_public.${table} where id = $1`, [id]);
    t.is(await versions(), 1, `${table} starts at 1`);
    t.is(
      await engineer(`update weld_public.${table} set ${set} where id = $1 returning version`, [
        id,
      ]),
      2,
      table,
    );
    await engineer(`update weld_public.${table} set ${set} where id = $1 returning version`, [id]);
    t.is(await versions(), 3, `${table}: every update, changed or not`);
  }
  // The catalog: each of them has the column and a _100_touch trigger that bumps it.
  const { rows } = await owner.query<{ name: string }>(
    `select c.relname as name from pg_trigger g join pg_class c on c.oid = g.tgrelid
      where g.tgname = '_100_touch' and g.tgargs = 'versioned\\000'::bytea
        and exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'version')
      order by 1`,
  );
  t.deepEqual(
    rows.map((r) => r.name),
    [
      'attachments',
      'components',
      'filler_lots',
      'hardness_readings',
      'inspections',
      'isos',
      'ndt_records',
      'pqrs',
      'punch_items',
      'pwht_records',
      'test_packages',
      'weld_fillers',
      'weld_repairs',
      'welder_qualifications',
      'welders',
      'wps',
    ],
  );
});

test("a change to a resource's lists bumps its version once per transaction; created with them, it is 1", async (t) => {
  const { owner, a, as } = await setup(t);
  const weldId = await a.weld();
  const version = (table: string, id: string) =>
    value<number>(owner, `select version from weld_public.${table} where id = $1`, [id]);

  // A WPS created with its PQRs.
  const [wps, pqr2] = await as(a, 'engineer', async (c) => {
    const pqrs = await c.query<{ id: string }>(
      `insert into weld_public.pqrs (pqr_number, process, p_numbers, thickness_tested_in)
       values ('PQR-1', 'GTAW', '{1,1}', 0.5), ('PQR-2', 'GTAW', '{1,1}', 1) returning id`,
    );
    const id = await value<string>(
      c,
      `insert into weld_public.wps (wps_number, process) values ('WPS-1', 'GTAW') returning id`,
    );
    await c.query(`insert into weld_public.wps_pqrs (wps_id, pqr_id) values ($1, $2)`, [
      id,
      pqrs.rows[0]!.id,
    ]);
    return [id, pqrs.rows[1]!.id];
  });
  t.is(await version('wps', wps), 1);
  // A PQR added later: one bump.
  await as(a, 'engineer', (c) =>
    c.query(`insert into weld_public.wps_pqrs (wps_id, pqr_id) values ($1, $2)`, [wps, pqr2]),
  );
  t.is(await version('wps', wps), 2);
  // The row and its list in one transaction, the row first: one bump.
  await as(a, 'engineer', async (c) => {
    await c.query(`update weld_public.wps set thickness_min_in = 0.1875 where id = $1`, [wps]);
    await c.query(`delete from weld_public.wps_pqrs where wps_id = $1 and pqr_id = $2`, [
      wps,
      pqr2,
    ]);
  });
  t.is(await version('wps', wps), 3);
  // Several list changes in one transaction: one bump.
  await as(a, 'engineer', async (c) => {
    await c.query(`insert into weld_public.wps_pqrs (wps_id, pqr_id) values ($1, $2)`, [wps, pqr2]);
    await c.query(`delete from weld_public.wps_pqrs where wps_id = $1 and pqr_id = $2`, [
      wps,
      pqr2,
    ]);
    await c.query(`insert into weld_public.wps_pqrs (wps_id, pqr_id) values ($1, $2)`, [wps, pqr2]);
  });
  t.is(await version('wps', wps), 4);

  // A test package created with its ISO and weld, then one weld fewer.
  const pkg = await as(a, 'engineer', async (c) => {
    const id = await value<string>(
      c,
      `insert into weld_public.test_packages (package_number, test_medium) values ('TP-1', 'hydro') returning id`,
    );
    await c.query(
      `insert into weld_public.test_package_isos (test_package_id, iso_id) values ($1, $2)`,
      [id, a.isoId],
    );
    await c.query(
      `insert into weld_public.test_package_welds (test_package_id, weld_id) values ($1, $2)`,
      [id, weldId],
    );
    return id;
  });
  t.is(await version('test_packages', pkg), 1);
  await as(a, 'engineer', (c) =>
    c.query(`delete from weld_public.test_package_welds where test_package_id = $1`, [pkg]),
  );
  t.is(await version('test_packages', pkg), 2);

  // Writes outside a request (the seed generator, a DBA) bump nothing.
  await owner.query(
    `insert into weld_public.test_package_welds (tenant_id, test_package_id, weld_id) values ($1, $2, $3)`,
    [a.tenantId, pkg, weldId],
  );
  t.is(await version('test_packages', pkg), 2);
});

//------------------------------------------------------------------------------------------------
// Test packages

test("a test package's ISOs and welds change, and it is deleted, only while it is open (WD008)", async (t) => {
  const { owner, a, as } = await setup(t);
  const [w1, w2] = [await a.weld(), await a.weld()];
  const engineer = (sql: string, params: unknown[]) =>
    as(a, 'engineer', (c) => c.query(sql, params));
  const pkg = await as(a, 'engineer', (c) =>
    value<string>(
      c,
      `insert into weld_public.test_packages (package_number, test_medium) values ('TP-7', 'hydro') returning id`,
    ),
  );
  await engineer(
    `insert into weld_public.test_package_isos (test_package_id, iso_id) values ($1, $2)`,
    [pkg, a.isoId],
  );
  await engineer(
    `insert into weld_public.test_package_welds (test_package_id, weld_id) values ($1, $2)`,
    [pkg, w1],
  );

  for (const state of ['released', 'tested', 'closed']) {
    // Set by the owner: a release needs a ready package (code-rules-checks.test.ts), beside the point here.
    await owner.query(`update weld_public.test_packages set state = $2 where id = $1`, [
      pkg,
      state,
    ]);
    for (const sql of [
      `insert into weld_public.test_package_welds (test_package_id, weld_id) values ($1, '${w2}')`,
      `delete from weld_public.test_package_welds where test_package_id = $1`,
      `delete from weld_public.test_package_isos where test_package_id = $1`,
    ]) {
      const error = await t.throwsAsync(engineer(sql, [pkg]), undefined, `${state}: ${sql}`);
      t.is(sqlstate(error), 'WD008', `${state}: ${sql}`);
      t.is(
        error?.message,
        `test package TP-7 is ${state}; its ISOs and welds change only while it is open`,
      );
    }
    const deleted = await t.throwsAsync(
      as(a, 'admin', (c) => c.query(`delete from weld_public.test_packages where id = $1`, [pkg])),
    );
    t.is(sqlstate(deleted), 'WD008');
    t.is(deleted.message, `test package TP-7 is ${state}; only open packages may be deleted`);
  }
  const members = async () =>
    value<number>(
      owner,
      `select (select count(*) from weld_public.test_package_isos where test_package_id = $1)
            + (select count(*) from weld_public.test_package_welds where test_package_id = $1)`,
      [pkg],
    );
  t.is(Number(await members()), 2);

  // The owner (the seed generator writes released packages with their members) is not held.
  await owner.query(
    `insert into weld_public.test_package_welds (tenant_id, test_package_id, weld_id) values ($1, $2, $3)`,
    [a.tenantId, pkg, w2],
  );
  await owner.query(`delete from weld_public.test_package_welds where weld_id = $1`, [w2]);

  // Open again (a closed package is reopened only by a DBA): the members change, and the package
  // is deleted with them.
  await owner.query(`update weld_public.test_packages set state = 'open' where id = $1`, [pkg]);
  await engineer(
    `insert into weld_public.test_package_welds (test_package_id, weld_id) values ($1, $2)`,
    [pkg, w2],
  );
  t.is(Number(await members()), 3);
  const gone = await engineer(`delete from weld_public.test_packages where id = $1`, [pkg]);
  t.is(gone.rowCount, 1);
  t.is(Number(await members()), 0);
});

test('the welds of a package that is not open keep their data: none moves off or onto its ISOs (WD008)', async (t) => {
  // Readiness was judged on the welds as they were: after the release, a weld of the package (on
  // one of its ISOs, or listed by it) keeps its ISO, welder, WPS, sizes and date, and no weld
  // joins its ISOs, until the package is open again. NDT results still move their statuses.
  const { owner, a, as } = await setup(t);
  const engineer = (sql: string, params: unknown[] = []) =>
    as(a, 'engineer', (c) => c.query(sql, params));
  const onIso = await a.weld();
  const listed = await a.weld();
  const elsewhere = await value<string>(
    owner,
    `insert into weld_public.isos (tenant_id, iso_number, line_number)
     values ($1, 'ISO-FREE', 'L-FREE') returning id`,
    [a.tenantId],
  );
  await engineer(`update weld_public.welds set iso_id = $2 where id = $1`, [listed, elsewhere]);
  const free = await value<string>(
    owner,
    `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
     values ($1, $2, 'W-FREE', 'BW', 4) returning id`,
    [a.tenantId, elsewhere],
  );
  const pkg = await as(a, 'engineer', (c) =>
    value<string>(
      c,
      `insert into weld_public.test_packages (package_number, test_medium) values ('TP-9', 'hydro') returning id`,
    ),
  );
  await engineer(
    `insert into weld_public.test_package_isos (test_package_id, iso_id) values ($1, $2)`,
    [pkg, a.isoId],
  );
  await engineer(
    `insert into weld_public.test_package_welds (test_package_id, weld_id) values ($1, $2)`,
    [pkg, listed],
  );
  await owner.query(`update weld_public.test_packages set state = 'released' where id = $1`, [pkg]);

  const refused = [
    [`update weld_public.welds set welder_id = null where id = $1`, onIso],
    [`update weld_public.welds set size = 6 where id = $1`, onIso],
    [`update weld_public.welds set welded_on = '2026-01-02' where id = $1`, onIso],
    [`update weld_public.welds set iso_id = '${elsewhere}' where id = $1`, onIso], // off its ISO
    [`update weld_public.welds set iso_id = '${a.isoId}' where id = $1`, free], // onto it
    [`update weld_public.welds set material = 'A333' where id = $1`, listed], // listed by it
    [
      `insert into weld_public.welds (iso_id, weld_number, type, size) values ('${a.isoId}', $1, 'BW', 4)`,
      'W-NEW',
    ],
  ] as const;
  for (const [sql, param] of refused) {
    const error = await t.throwsAsync(engineer(sql, [param]), undefined, sql);
    t.is(sqlstate(error), 'WD008', sql);
    t.is(
      error?.message,
      'test package TP-9 is released; the data of its welds changes only while it is open',
    );
  }
  // What stays possible: the status lifecycle, an unchanged value, a weld of no package.
  await as(a, 'engineer', (c) =>
    c.query(
      `select weld_public.change_weld_status($1, 'ACCEPTED', null, null, null, null, 'NCR-9 use as is')`,
      [onIso],
    ),
  );
  await engineer(`update weld_public.welds set size = size where id = $1`, [onIso]);
  await engineer(`update weld_public.welds set material = 'A106-B' where id = $1`, [free]);
  // The owner is not held; and once the package is open again, its welds change.
  await owner.query(`update weld_public.welds set material = 'by the DBA' where id = $1`, [onIso]);
  await owner.query(`update weld_public.test_packages set state = 'open' where id = $1`, [pkg]);
  const moved = await engineer(`update weld_public.welds set iso_id = $2 where id = $1`, [
    onIso,
    elsewhere,
  ]);
  t.is(moved.rowCount, 1);
});

test('a test package moves open -> released -> tested -> closed (each judged ready), or is withdrawn from released to open with a reason; nothing else (WD008)', async (t) => {
  const { owner, a, as } = await setup(t);
  const states = ['open', 'released', 'tested', 'closed'];
  const judged = ['open>released', 'released>tested', 'tested>closed'];
  const pkg = await as(a, 'engineer', (c) =>
    value<string>(
      c,
      `insert into weld_public.test_packages (package_number, test_medium) values ('TP-8', 'hydro') returning id`,
    ),
  );
  const state = () =>
    value<string>(owner, `select state from weld_public.test_packages where id = $1`, [pkg]);
  for (const from of states) {
    for (const to of states) {
      // The owner (a DBA, the seed generator) is not held to the moves: it sets any state.
      await owner.query(`update weld_public.test_packages set state = $2 where id = $1`, [
        pkg,
        from,
      ]);
      const move = as(a, 'engineer', (c) =>
        c.query(`update weld_public.test_packages set state = $2 where id = $1`, [pkg, to]),
      );
      if (judged.includes(`${from}>${to}`)) {
        // Allowed as a move, so the readiness rule (which runs after it) has its say: this
        // package has no welds, so it is not ready (WD009, not WD008).
        const error = await t.throwsAsync(move, undefined, `${from} -> ${to}`);
        t.is(sqlstate(error), 'WD009', `${from} -> ${to}: refused for readiness, not as a move`);
        t.is(await state(), from, `${from} -> ${to}: unchanged`);
      } else if (from === 'released' && to === 'open') {
        const error = await t.throwsAsync(move, undefined, 'released -> open');
        t.is(sqlstate(error), 'WD008');
        t.regex(
          error?.message ?? '',
          /withdrawn to open with a reason: POST \/test-packages\/\{id\}\/withdraw/,
        );
        await as(a, 'engineer', (c) =>
          c.query(`select weld_public.withdraw_test_package($1, 'the test is postponed')`, [pkg]),
        );
        t.is(await state(), 'open', 'released -> open: withdrawn');
      } else if (from === to) {
        await move;
        t.is(await state(), to, `${from} -> ${to}`);
      } else {
        const error = await t.throwsAsync(move, undefined, `${from} -> ${to}`);
        t.is(sqlstate(error), 'WD008', `${from} -> ${to}`);
        t.is(error?.message, `test package TP-8 cannot go from ${from} to ${to}`);
        t.is(await state(), from, `${from} -> ${to}: unchanged`);
      }
    }
  }
  // Other columns change in any state.
  await as(a, 'engineer', (c) =>
    c.query(`update weld_public.test_packages set test_pressure_psig = 150 where id = $1`, [pkg]),
  );
  t.is(await state(), 'closed');
});

test("concurrent changes of one package's members queue instead of deadlocking", async (t) => {
  const { owner, a, as } = await setup(t, 20);
  const welds: string[] = [];
  for (let i = 0; i < 60; i++) welds.push(await a.weld());
  const pkg = await as(a, 'engineer', (c) =>
    value<string>(
      c,
      `insert into weld_public.test_packages (package_number, test_medium) values ('TP-9', 'hydro') returning id`,
    ),
  );
  // Each insert checks that the package is open (locking it) and then bumps its version.
  const outcomes = await Promise.allSettled(
    welds.map((weldId) =>
      as(a, 'engineer', (c) =>
        c.query(
          `insert into weld_public.test_package_welds (test_package_id, weld_id) values ($1, $2)`,
          [pkg, weldId],
        ),
      ),
    ),
  );
  const failures = outcomes.flatMap((o) =>
    o.status === 'rejected' ? [`${sqlstate(o.reason)} ${(o.reason as Error).message}`] : [],
  );
  t.deepEqual(failures, []);
  const after = await owner.query(
    `select (select count(*)::int from weld_public.test_package_welds where test_package_id = $1) as members,
            (select version from weld_public.test_packages where id = $1) as version`,
    [pkg],
  );
  t.deepEqual(after.rows[0], { members: 60, version: 61 });
});

//------------------------------------------------------------------------------------------------
// WPS

test('a WPS is superseded, never deleted', async (t) => {
  const { owner, a, as } = await setup(t);
  const wps = await as(a, 'engineer', (c) =>
    value<string>(
      c,
      `insert into weld_public.wps (wps_number, process) values ('WPS-9', 'SMAW') returning id`,
    ),
  );
  for (const role of ['engineer', 'admin'] as const) {
    await t.throwsAsync(
      as(a, role, (c) => c.query(`delete from weld_public.wps where id = $1`, [wps])),
      { code: '42501' },
      role,
    );
  }
  await as(a, 'engineer', (c) =>
    c.query(`update weld_public.wps set state = 'superseded' where id = $1`, [wps]),
  );
  t.is(await value(owner, `select state from weld_public.wps where id = $1`, [wps]), 'superseded');
});

//------------------------------------------------------------------------------------------------
// Idempotency keys

/** REST's claim: a new key, or one whose 24 hours are over; true when claimed. */
const CLAIM = `
  insert into weld_hidden.idempotency_keys (idempotency_key, request_hash) values ($1, $2)
  on conflict (tenant_id, user_id, idempotency_key) do update
     set request_hash = excluded.request_hash, created_at = now(),
         response_status = null, response_body = null, response_headers = null
   where idempotency_keys.created_at < now() - interval '24 hours'
  returning true`;
const READ = `select request_hash, response_status, response_body, response_headers
                from weld_hidden.idempotency_keys where idempotency_key = $1`;
const STORE = `update weld_hidden.idempotency_keys
                  set response_status = $2, response_body = $3, response_headers = $4
                where idempotency_key = $1`;

test("idempotency keys: REST's statements work for a request role, and a key is one user's in one tenant", async (t) => {
  const { owner, pool, a, b, as } = await setup(t);
  const claim = (fx: TenantFixture, role: Role, key: string, hash: string) =>
    as(fx, role, async (c) => (await c.query(CLAIM, [key, hash])).rows);
  const read = (fx: TenantFixture, role: Role, key: string) =>
    as(fx, role, async (c) => (await c.query(READ, [key])).rows);

  t.deepEqual(await claim(a, 'viewer', 'k-1', 'h-1'), [{ '?column?': true }]);
  await as(a, 'viewer', (c) =>
    c.query(STORE, ['k-1', 201, JSON.stringify({ id: 'x' }), JSON.stringify({ location: '/x' })]),
  );
  // Used: no claim, and the stored answer to replay.
  t.deepEqual(await claim(a, 'viewer', 'k-1', 'h-2'), []);
  t.deepEqual(await read(a, 'viewer', 'k-1'), [
    {
      request_hash: 'h-1',
      response_status: 201,
      response_body: { id: 'x' },
      response_headers: { location: '/x' },
    },
  ]);

  // Another user of the tenant, and a user of another tenant: no such key for them.
  for (const [fx, role] of [
    [a, 'inspector'],
    [b, 'viewer'],
  ] as const) {
    t.deepEqual(await read(fx, role, 'k-1'), [], `${fx.tenantId} ${role}`);
    t.deepEqual(await claim(fx, role, 'k-1', 'h-9'), [{ '?column?': true }]);
    const stored = await as(fx, role, (c) => c.query(STORE, ['k-1', 200, '{}', '{}']));
    t.is(stored.rowCount, 1, 'their own key only');
  }
  t.like((await read(a, 'viewer', 'k-1'))[0], { request_hash: 'h-1', response_status: 201 });
  t.is(
    Number(await value(owner, `select count(*) from weld_hidden.idempotency_keys`)),
    3,
    'three keys: one per user',
  );

  // After 24 hours the same key may be claimed again, its old answer cleared.
  await owner.query(
    `update weld_hidden.idempotency_keys set created_at = now() - interval '25 hours'
      where user_id = $1`,
    [a.users.viewer],
  );
  t.deepEqual(await claim(a, 'viewer', 'k-1', 'h-3'), [{ '?column?': true }]);
  t.deepEqual(await read(a, 'viewer', 'k-1'), [
    { request_hash: 'h-3', response_status: null, response_body: null, response_headers: null },
  ]);

  // Whose key it is cannot be written, nor can a key be made without a user or for another.
  for (const sql of [
    `insert into weld_hidden.idempotency_keys (tenant_id, idempotency_key, request_hash) values ('${b.tenantId}', 'k-2', 'h')`,
    `insert into weld_hidden.idempotency_keys (user_id, idempotency_key, request_hash) values ('${a.users.admin}', 'k-2', 'h')`,
    `update weld_hidden.idempotency_keys set user_id = '${a.users.admin}'`,
    `delete from weld_hidden.idempotency_keys`,
  ]) {
    await t.throwsAsync(
      as(a, 'admin', (c) => c.query(sql)),
      { code: '42501' },
      sql,
    );
  }
  const anonymous = await t.throwsAsync(
    withContext(pool, { role: 'weld_anonymous', tenantId: a.tenantId }, (c) =>
      c.query(CLAIM, ['k-3', 'h']),
    ),
  );
  t.is(sqlstate(anonymous), '42501');
  const noUser = await t.throwsAsync(
    as({ ...a, users: { ...a.users, viewer: null as never } }, 'viewer', (c) =>
      c.query(CLAIM, ['k-3', 'h']),
    ),
  );
  t.is(sqlstate(noUser), '42501', 'without a user, row security refuses the key');
});

test('purge_idempotency_keys deletes keys older than 24 hours in every tenant, skipping locked ones', async (t) => {
  const { target, owner, pool, a, b } = await setup(t);
  for (const fx of [a, b]) {
    await owner.query(
      `insert into weld_hidden.idempotency_keys (tenant_id, user_id, idempotency_key, request_hash, created_at)
       values ($1, $2, 'old', 'h', now() - interval '25 hours'),
              ($1, $2, 'old-locked', 'h', now() - interval '30 hours'),
              ($1, $2, 'fresh', 'h', now() - interval '23 hours')`,
      [fx.tenantId, fx.users.viewer],
    );
  }
  const purge = () =>
    asAuthenticator(pool, a.tenantId, (c) =>
      value<number>(c, 'select weld_hidden.purge_idempotency_keys()'),
    );
  const keys = async () =>
    (
      await owner.query<{ key: string }>(
        `select idempotency_key as key from weld_hidden.idempotency_keys
          where tenant_id = $1 order by 1`,
        [b.tenantId],
      )
    ).rows.map((r) => r.key);

  // Another transaction holds one of B's old keys (a request replaying it): skipped, not waited for.
  const holder = await ownerClient(target);
  t.teardown(() => holder.end());
  await holder.query('begin');
  await holder.query(
    `select from weld_hidden.idempotency_keys where tenant_id = $1 and idempotency_key = 'old-locked' for update`,
    [b.tenantId],
  );
  t.is(await purge(), 3, "A's two old keys and B's unlocked one");
  t.deepEqual(await keys(), ['fresh', 'old-locked']);
  await holder.query('commit');
  t.is(await purge(), 1);
  t.deepEqual(await keys(), ['fresh']);
  t.is(await purge(), 0);
});

test("the server's housekeeping purges idempotency keys and old events with the authentication bookkeeping", async (t) => {
  const { owner, pool, a } = await setup(t);
  await owner.query(
    `insert into weld_hidden.idempotency_keys (tenant_id, user_id, idempotency_key, request_hash, created_at)
     values ($1, $2, 'old', 'h', now() - interval '2 days')`,
    [a.tenantId, a.users.viewer],
  );
  // The fixture's writes are events (placed, as the server's relay would); the oldest is made
  // older than the retention.
  await owner.query('select weld_hidden.place_events()');
  await owner.query(
    `update weld_public.events set occurred_at = now() - interval '31 days'
      where id = (select min(id) from weld_public.events where tenant_id = $1)`,
    [a.tenantId],
  );
  const housekeeping = startHousekeeping(pool, createLogger('silent'), {
    eventRetentionDays: 30,
    everyMs: 3_600_000,
  });
  await housekeeping.stop();
  t.deepEqual(await housekeeping.purgeNow(), {
    deleted_throttle_rows: 0,
    deleted_refresh_tokens: 0,
    deleted_sessions: 0,
    deleted_known_addresses: 0,
    deleted_idempotency_keys: 1,
    deleted_events: 1,
    deleted_deliveries: 0,
    deleted_attachment_files: 0,
  });
  t.is(Number(await value(owner, `select count(*) from weld_hidden.idempotency_keys`)), 0);
});
