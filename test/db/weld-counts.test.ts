// ISO progress in SQL (weld_public.iso_weld_counts, migration 000015): the welds of each ISO
// counted by status, kept by triggers in the transaction that changes them. A randomized run of
// every kind of weld write, some at once on separate connections, must leave the counts equal to a
// full count; and the table is read-only, tenant-bound, untouched by a rollback, versioned.
import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type pg from 'pg';
import { createPool, MIGRATIONS_DIR, withContext } from '../../db/database.ts';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { REQUEST_ROLES, type RequestRole } from '../../db/vocabulary.ts';
import { superuserQuery } from '../helpers/database.ts';
import { asOwner, ownerClient, prng, twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

type Status = 'PENDING' | 'ACCEPTED' | 'REJECTED' | 'REPAIR' | 'VOIDED';
const STATUSES: Status[] = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'];

/** The default rules' next statuses (DOMAIN.md); VOIDED is terminal. */
const NEXT: Record<Status, Status[]> = {
  PENDING: ['ACCEPTED', 'REJECTED', 'VOIDED'],
  ACCEPTED: ['REJECTED', 'VOIDED'],
  REJECTED: ['REPAIR', 'VOIDED'],
  REPAIR: ['PENDING', 'VOIDED'],
  VOIDED: [],
};

interface Counts {
  iso_id: string;
  total: number;
  pending: number;
  accepted: number;
  rejected: number;
  repair: number;
  voided: number;
}

/** The rollup of a tenant, by ISO. */
async function rollup(db: pg.ClientBase, tenantId: string): Promise<Counts[]> {
  const { rows } = await db.query<Counts>(
    `select iso_id, total, pending, accepted, rejected, repair, voided
       from weld_public.iso_weld_counts where tenant_id = $1 order by iso_id`,
    [tenantId],
  );
  return rows;
}

/** The same numbers from a full count of the tenant's welds, for every ISO (zeros included). */
async function fullCount(db: pg.ClientBase, tenantId: string): Promise<Counts[]> {
  const { rows } = await db.query<Counts>(
    `select i.id as iso_id, count(w.id)::int as total,
            count(*) filter (where w.status = 'PENDING')::int as pending,
            count(*) filter (where w.status = 'ACCEPTED')::int as accepted,
            count(*) filter (where w.status = 'REJECTED')::int as rejected,
            count(*) filter (where w.status = 'REPAIR')::int as repair,
            count(*) filter (where w.status = 'VOIDED')::int as voided
       from weld_public.isos i
       left join weld_public.welds w on w.tenant_id = i.tenant_id and w.iso_id = i.id
      where i.tenant_id = $1
      group by i.id order by i.id`,
    [tenantId],
  );
  return rows;
}

async function countsOf(db: pg.ClientBase, isoId: string) {
  const { rows } = await db.query<Counts & { version: string }>(
    `select iso_id, total, pending, accepted, rejected, repair, voided, version
       from weld_public.iso_weld_counts where iso_id = $1`,
    [isoId],
  );
  return rows[0];
}

const as = <T>(
  pool: pg.Pool,
  fx: TenantFixture,
  role: 'viewer' | 'inspector' | 'engineer' | 'admin',
  work: (c: pg.PoolClient) => Promise<T>,
) =>
  withContext(
    pool,
    { role: `weld_${role}` as RequestRole, tenantId: fx.tenantId, userId: fx.users[role] },
    work,
  );

async function setup(t: ExecutionContext) {
  const world = await twoTenants(t, 12);
  const ownerPool = createPool(world.target.ownerUrl, { max: 8 });
  t.teardown(() => ownerPool.end());
  return { ...world, ownerPool };
}

//------------------------------------------------------------------------------------------------

test('a randomized run of inserts, bulk inserts, status changes, moves and deletes, partly concurrent, leaves the counts equal to a full count', async (t) => {
  t.timeout(5 * 60_000);
  const { owner, pool, ownerPool, a, b } = await setup(t);
  const seed = Number(process.env.WELD_COUNTS_SEED ?? 20261122);
  const r = prng(seed);
  t.log(`seed ${seed} (WELD_COUNTS_SEED=${seed} replays the choices; races may end otherwise)`);

  // Tenant A: the fixture's ISO and five more; tenant B keeps its fixture, as a bystander.
  await owner.query(
    `insert into weld_public.isos (tenant_id, iso_number, line_number)
     select $1, 'RUN-ISO-' || n, 'RUN-LINE-' || (n % 2) from generate_series(1, 5) n`,
    [a.tenantId],
  );
  // And one that no operation touches: an ISO without welds is counted too.
  await owner.query(
    `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'UNTOUCHED', 'L')`,
    [a.tenantId],
  );
  await b.weld('ACCEPTED');
  await b.weld('PENDING');
  const bBefore = await rollup(owner, b.tenantId);

  const reached = new Set<Status>();
  let weldNumber = 0;
  const nextNumber = () => `R-${++weldNumber}`;
  const state = async () => {
    const isos = (
      await owner.query<{ id: string }>(
        `select id from weld_public.isos where tenant_id = $1 and iso_number <> 'UNTOUCHED' order by id`,
        [a.tenantId],
      )
    ).rows.map((row) => row.id);
    const welds = (
      await owner.query<{ id: string; iso_id: string; status: Status }>(
        'select id, iso_id, status from weld_public.welds where tenant_id = $1 order by id',
        [a.tenantId],
      )
    ).rows;
    for (const w of welds) reached.add(w.status);
    return { isos, welds };
  };

  type Operation = () => Promise<unknown>;
  const done: Record<string, number> = {};
  const refused: Record<string, number> = {};
  // What a write racing another may meet: the rules moved on (WD002), a weld gone (WD001), an ISO
  // gone or still holding a weld (23503, 23001), and a deadlock (40P01), which PostgreSQL breaks by
  // failing one side (REST answers 409 with Retry-After). A transaction holds an ISO's counts from
  // its first write of the ISO's welds to its commit, so it deadlocks with another when each then
  // waits for what the other holds: several welds moved in one statement take their ISOs' counts
  // row by row, not in key order; a transaction that writes welds and then changes another weld
  // of the same ISO waits for that weld while a status change holding it waits for the counts;
  // and "delete an ISO's welds, then the ISO" holds the counts before the ISO, while an insert
  // into that ISO holds the ISO (its foreign key check) before the counts. Bulk inserts and
  // deletes take the counts in key order, so over the counts they never deadlock each other.
  const EXPECTED = new Set(['WD002', 'WD001', '23503', '23001', '40P01']);

  const operation = (
    isos: string[],
    welds: Array<{ id: string; iso_id: string; status: Status }>,
  ) => {
    const live = welds.filter((w) => w.status !== 'VOIDED');
    const choices: Array<[string, number, Operation | undefined]> = [
      [
        'insert one (engineer)',
        3,
        () =>
          as(pool, a, 'engineer', (c) =>
            c.query(
              `insert into weld_public.welds (iso_id, weld_number, type, size) values ($1, $2, 'BW', 4)`,
              [r.pick(isos), nextNumber()],
            ),
          ),
      ],
      [
        'insert many in one statement (owner, any status, several ISOs)',
        2,
        () => {
          const n = 5 + r.int(150);
          const rows = Array.from({ length: n }, () => [
            r.pick(isos),
            nextNumber(),
            r.pick(STATUSES),
          ]);
          return asOwner(ownerPool, (c) =>
            c.query(
              `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status)
               select $1, u.iso, u.num, 'SW', 2, u.status::weld_public.weld_status
                 from unnest($2::uuid[], $3::text[], $4::text[]) as u(iso, num, status)`,
              [a.tenantId, rows.map((x) => x[0]), rows.map((x) => x[1]), rows.map((x) => x[2])],
            ),
          );
        },
      ],
      [
        'insert many in one statement (engineer, one ISO)',
        1,
        () =>
          as(pool, a, 'engineer', (c) =>
            c.query(
              `insert into weld_public.welds (iso_id, weld_number, type, size)
               select $1, $2 || '-' || n, 'FW', 1 from generate_series(1, $3::int) n`,
              [r.pick(isos), nextNumber(), 1 + r.int(40)],
            ),
          ),
      ],
      [
        'status change (change_weld_status)',
        12,
        live.length === 0
          ? undefined
          : () => {
              const weld = r.pick(live);
              return as(pool, a, 'engineer', (c) =>
                c.query(
                  `select from weld_public.change_weld_status($1, $2, 'randomized run', null, null, null, case when $2::weld_public.weld_status = 'ACCEPTED' then 'randomized run' end)`,
                  [weld.id, r.pick(NEXT[weld.status])],
                ),
              );
            },
      ],
      [
        'move one weld to another ISO (engineer)',
        3,
        welds.length === 0
          ? undefined
          : () =>
              as(pool, a, 'engineer', (c) =>
                c.query(`update weld_public.welds set iso_id = $2 where id = $1`, [
                  r.pick(welds).id,
                  r.pick(isos),
                ]),
              ),
      ],
      [
        'move several welds in one statement (owner)',
        1,
        welds.length === 0
          ? undefined
          : () =>
              asOwner(ownerPool, (c) =>
                c.query(`update weld_public.welds set iso_id = $2 where id = any($1::uuid[])`, [
                  Array.from({ length: 1 + r.int(8) }, () => r.pick(welds).id),
                  r.pick(isos),
                ]),
              ),
      ],
      [
        'an edit that changes neither status nor ISO (engineer)',
        1,
        welds.length === 0
          ? undefined
          : () =>
              as(pool, a, 'engineer', (c) =>
                c.query(
                  `update weld_public.welds set material = $2, iso_id = iso_id where id = $1`,
                  [r.pick(welds).id, `M-${r.int(1000)}`],
                ),
              ),
      ],
      [
        'delete welds (owner)',
        2,
        welds.length === 0
          ? undefined
          : () =>
              asOwner(ownerPool, (c) =>
                c.query(`delete from weld_public.welds where id = any($1::uuid[])`, [
                  Array.from(
                    { length: 1 + r.int(r.next() < 0.5 ? 2 : 30) },
                    () => r.pick(welds).id,
                  ),
                ]),
              ),
      ],
      [
        'delete an ISO with its welds (owner)',
        isos.length > 3 ? 1 : 0,
        () => {
          const iso = r.pick(isos);
          return asOwner(ownerPool, async (c) => {
            await c.query('delete from weld_public.welds where iso_id = $1', [iso]);
            await c.query('delete from weld_public.isos where id = $1', [iso]);
          });
        },
      ],
      [
        'add an ISO (engineer)',
        isos.length < 9 ? 1 : 0,
        () =>
          as(pool, a, 'engineer', (c) =>
            c.query(
              `insert into weld_public.isos (iso_number, line_number) values ($1, 'RUN-LINE-9')`,
              [`RUN-ISO-N${nextNumber()}`],
            ),
          ),
      ],
      [
        'changes rolled back (engineer)',
        1,
        live.length === 0
          ? undefined
          : () =>
              as(pool, a, 'engineer', async (c) => {
                const weld = r.pick(live);
                await c.query(
                  `insert into weld_public.welds (iso_id, weld_number, type, size)
                   select $1, $2 || '-' || n, 'BW', 3 from generate_series(1, 10) n`,
                  [r.pick(isos), nextNumber()],
                );
                await c.query(
                  `select from weld_public.change_weld_status($1, $2, 'undone', null, null, null, case when $2::weld_public.weld_status = 'ACCEPTED' then 'undone' end)`,
                  [weld.id, r.pick(NEXT[weld.status])],
                );
                throw Object.assign(new Error('rolled back on purpose'), { code: 'ROLLBACK' });
              }),
      ],
    ];
    const offered = choices.filter(([, weight, op]) => weight > 0 && op);
    let x = r.int(offered.reduce((sum, [, weight]) => sum + weight, 0));
    for (const [name, weight, op] of offered) {
      if (x < weight) return { name, op: op! };
      x -= weight;
    }
    throw new Error('unreachable');
  };

  const OPERATIONS = 400;
  let ran = 0;
  while (ran < OPERATIONS) {
    const { isos, welds } = await state();
    // One at a time, or up to six at once on separate connections.
    const width = r.next() < 0.3 ? 1 : 2 + r.int(5);
    const batch = Array.from({ length: width }, () => operation(isos, welds));
    ran += batch.length;
    const outcomes = await Promise.allSettled(batch.map(({ op }) => op()));
    outcomes.forEach((outcome, i) => {
      const { name } = batch[i]!;
      if (outcome.status === 'fulfilled') {
        done[name] = (done[name] ?? 0) + 1;
        return;
      }
      const code = (outcome.reason as { code?: string }).code ?? '';
      if (code !== 'ROLLBACK' && !EXPECTED.has(code)) throw outcome.reason;
      refused[`${name}: ${code}`] = (refused[`${name}: ${code}`] ?? 0) + 1;
    });
  }
  t.log('done', done);
  t.log('refused or rolled back', refused);

  const { welds } = await state();
  // (How many are left depends on the deletes; hundreds were written.)
  t.true(welds.length > 20, `the run left ${welds.length} welds`);
  t.true(
    (done['status change (change_weld_status)'] ?? 0) > 50,
    'many status changes went through',
  );
  t.true(Object.keys(done).length >= 9, 'nearly every kind of operation went through');
  const expected = await fullCount(owner, a.tenantId);
  t.true(
    expected.some((c) => c.total === 0),
    'an ISO without welds is counted too',
  );
  t.deepEqual(await rollup(owner, a.tenantId), expected);
  for (const status of STATUSES) t.true(reached.has(status), `the run reached ${status}`);
  // The other tenant's counts did not move, and are still its welds'.
  t.deepEqual(await rollup(owner, b.tenantId), bBefore);
  t.deepEqual(bBefore, await fullCount(owner, b.tenantId));
});

//------------------------------------------------------------------------------------------------

test('an ISO starts at zero; counts follow inserts, status changes, moves and deletes; version grows with each', async (t) => {
  const { owner, pool, a } = await setup(t);
  const [other] = (
    await as(pool, a, 'engineer', (c) =>
      c.query<{ id: string }>(
        `insert into weld_public.isos (iso_number, line_number) values ('ISO-2', 'L-2') returning id`,
      ),
    )
  ).rows;
  const iso2 = other!.id;
  const zero = { total: 0, pending: 0, accepted: 0, rejected: 0, repair: 0, voided: 0 };
  t.like(await countsOf(owner, iso2), { ...zero, version: '1' });

  // Three welds in one statement: one change of the row.
  const ids = (
    await as(pool, a, 'engineer', (c) =>
      c.query<{ id: string }>(
        `insert into weld_public.welds (iso_id, weld_number, type, size)
         select $1, 'V-' || n, 'BW', 4 from generate_series(1, 3) n returning id`,
        [iso2],
      ),
    )
  ).rows.map((row) => row.id);
  t.like(await countsOf(owner, iso2), { ...zero, total: 3, pending: 3, version: '2' });

  await as(pool, a, 'engineer', (c) =>
    c.query(
      `select from weld_public.change_weld_status($1, 'ACCEPTED', null, null, null, null, 'disposition')`,
      [ids[0]],
    ),
  );
  t.like(await countsOf(owner, iso2), { total: 3, pending: 2, accepted: 1, version: '3' });

  // An edit of other columns changes nothing here.
  await as(pool, a, 'engineer', (c) =>
    c.query(`update weld_public.welds set material = 'A106-B' where id = $1`, [ids[1]]),
  );
  t.like(await countsOf(owner, iso2), { version: '3' });

  // A move leaves one ISO and enters the other, each a change of its row.
  const fixtureBefore = await countsOf(owner, a.isoId);
  await as(pool, a, 'engineer', (c) =>
    c.query(`update weld_public.welds set iso_id = $2 where id = $1`, [ids[0], a.isoId]),
  );
  t.like(await countsOf(owner, iso2), { total: 2, pending: 2, accepted: 0, version: '4' });
  t.like(await countsOf(owner, a.isoId), {
    total: fixtureBefore!.total + 1,
    accepted: fixtureBefore!.accepted + 1,
    version: String(Number(fixtureBefore!.version) + 1),
  });

  // Deletes (the owner's: no request role deletes welds), then the ISO: its row goes with it.
  await owner.query('delete from weld_public.welds where id = any($1)', [ids.slice(1)]);
  t.like(await countsOf(owner, iso2), { ...zero, version: '5' });
  await owner.query('delete from weld_public.isos where id = $1', [iso2]);
  t.is(await countsOf(owner, iso2), undefined);
  t.deepEqual(await rollup(owner, a.tenantId), await fullCount(owner, a.tenantId));
});

test('a rolled-back transaction leaves the counts as they were, version included', async (t) => {
  const { owner, pool, a } = await setup(t);
  const weld = await a.weld('PENDING');
  const before = await rollup(owner, a.tenantId);
  const version = (await countsOf(owner, a.isoId))!.version;
  await t.throwsAsync(
    as(pool, a, 'engineer', async (c) => {
      await c.query(
        `insert into weld_public.welds (iso_id, weld_number, type, size)
         select $1, 'RB-' || n, 'BW', 4 from generate_series(1, 50) n`,
        [a.isoId],
      );
      await c.query(`select from weld_public.change_weld_status($1, 'VOIDED', 'cut out')`, [weld]);
      const inside = await c.query<{ total: number }>(
        'select total from weld_public.iso_weld_counts where iso_id = $1',
        [a.isoId],
      );
      t.is(inside.rows[0]!.total, before[0]!.total + 50, 'the transaction sees its own counts');
      throw new Error('changed my mind');
    }),
    { message: 'changed my mind' },
  );
  t.deepEqual(await rollup(owner, a.tenantId), before);
  t.is((await countsOf(owner, a.isoId))!.version, version);
});

test('row security: a tenant reads only its own counts; without a tenant, none', async (t) => {
  const { pool, a, b } = await setup(t);
  await a.weld('ACCEPTED');
  await b.weld('REJECTED');
  for (const role of REQUEST_ROLES.filter((r) => r !== 'weld_anonymous')) {
    const seen = await withContext(pool, { role, tenantId: a.tenantId }, (c) =>
      c.query<{ iso_id: string }>('select iso_id from weld_public.iso_weld_counts'),
    );
    t.deepEqual(
      seen.rows.map((row) => row.iso_id),
      [a.isoId],
      `${role} of tenant A sees A's ISO only`,
    );
    const none = await withContext(pool, { role, tenantId: null }, (c) =>
      c.query('select from weld_public.iso_weld_counts'),
    );
    t.is(none.rowCount, 0, `${role} without a tenant sees nothing`);
  }
  await t.throwsAsync(
    withContext(pool, { role: 'weld_anonymous', tenantId: a.tenantId }, (c) =>
      c.query('select from weld_public.iso_weld_counts'),
    ),
    { code: '42501' },
  );
});

test('no request role may insert, update or delete counts: only the triggers write them', async (t) => {
  const { rootUrl, owner, pool, a, b } = await setup(t);
  await a.weld('PENDING');
  const before = [await rollup(owner, a.tenantId), await rollup(owner, b.tenantId)];
  const writes = [
    `insert into weld_public.iso_weld_counts (iso_id, total, pending) values ('${a.isoId}', 5, 5)`,
    `update weld_public.iso_weld_counts set accepted = accepted + 1, total = total + 1`,
    `update weld_public.iso_weld_counts set version = 1`,
    `delete from weld_public.iso_weld_counts`,
  ];
  for (const role of REQUEST_ROLES) {
    for (const sql of writes) {
      await t.throwsAsync(
        withContext(pool, { role, tenantId: a.tenantId }, (c) => c.query(sql)),
        { code: '42501', message: /permission denied for table iso_weld_counts/ },
        `${role}: ${sql}`,
      );
    }
  }
  t.deepEqual([await rollup(owner, a.tenantId), await rollup(owner, b.tenantId)], before);
  // Nor can a request role reach the trigger functions.
  for (const fn of [
    'weld_private.tg_isos__weld_counts()',
    'weld_private.tg_welds__iso_weld_counts()',
    'weld_private.tg_welds__iso_weld_counts_move()',
  ]) {
    const [row] = await superuserQuery<{ any: boolean }>(
      rootUrl,
      `select bool_or(has_function_privilege(r, $1, 'EXECUTE')) as any from unnest($2::text[]) r`,
      [fn, REQUEST_ROLES],
    );
    t.false(row!.any, fn);
  }
});

test('bulk statements of one tenant at once do not deadlock: eight writers over the same ISOs in opposite orders', async (t) => {
  const { owner, ownerPool, pool, a } = await setup(t);
  const isos = (
    await owner.query<{ id: string }>(
      `insert into weld_public.isos (tenant_id, iso_number, line_number)
       select $1, 'DL-' || n, 'DL' from generate_series(1, 12) n returning id`,
      [a.tenantId],
    )
  ).rows.map((row) => row.id);
  // Each writer inserts into every ISO in one statement (its rows in its own order), then deletes
  // some of them in another; status changes run beside them.
  const writers = Array.from({ length: 8 }, (_, i) =>
    asOwner(ownerPool, async (c) => {
      const order = i % 2 ? [...isos].reverse() : isos;
      await c.query(
        `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
         select $1, u.iso, 'DL-' || $2::int || '-' || n, 'BW', 4
           from unnest($3::uuid[]) with ordinality as u(iso, k), generate_series(1, 20) n
          order by u.k, n`,
        [a.tenantId, i, order],
      );
      await c.query(
        `delete from weld_public.welds where tenant_id = $1 and weld_number like 'DL-' || $2::int || '-1_'`,
        [a.tenantId, i],
      );
    }),
  );
  const pending = await Promise.all(Array.from({ length: 6 }, () => a.weld('PENDING')));
  const changes = pending.map((weld) =>
    as(pool, a, 'engineer', (c) =>
      c.query(
        `select from weld_public.change_weld_status($1, 'ACCEPTED', null, null, null, null, 'disposition')`,
        [weld],
      ),
    ),
  );
  await Promise.all([...writers, ...changes]);
  t.deepEqual(await rollup(owner, a.tenantId), await fullCount(owner, a.tenantId));
  const dl = (await rollup(owner, a.tenantId)).filter((c) => isos.includes(c.iso_id));
  t.true(dl.every((c) => c.total === 8 * 10));
});

test('the seed generator (bulk, statuses written directly) and a TRUNCATE keep the counts exact', async (t) => {
  const { owner, target } = await setup(t);
  await addTenant(owner, { slug: 'seeded', origins: ['http://seeded.test'] });
  const seeder = await ownerClient(target);
  t.teardown(() => seeder.end());
  await seeder.query('begin');
  await seedTenant(seeder, 'seeded', { isos: 8, weldsPerIso: 40, seed: 3 });
  await seeder.query('commit');
  const { rows } = await owner.query<{ id: string }>(
    `select id from weld_public.tenants where slug = 'seeded'`,
  );
  const tenant = rows[0]!.id;
  const counts = await rollup(owner, tenant);
  t.is(counts.length, 8);
  t.is(
    counts.reduce((sum, c) => sum + c.total, 0),
    320,
  );
  t.true(counts.some((c) => c.accepted > 0 && c.pending + c.rejected + c.repair + c.voided > 0));
  t.deepEqual(counts, await fullCount(owner, tenant));

  // A DBA's TRUNCATE fires no delete trigger; its own trigger zeroes every count.
  await owner.query('truncate weld_public.welds cascade');
  t.deepEqual(await rollup(owner, tenant), await fullCount(owner, tenant));
  t.true((await rollup(owner, tenant)).every((c) => c.total === 0));
});

test('the migration, run on a database with welds, fills every ISO from a full count', async (t) => {
  const { owner, a, b } = await setup(t);
  await a.weld('ACCEPTED');
  await a.weld('REPAIR');
  await b.weld('VOIDED');
  await owner.query(
    `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'EMPTY', 'L')`,
    [a.tenantId],
  );
  const file = fs
    .readdirSync(path.join(MIGRATIONS_DIR, 'committed'))
    .map((name) => path.join(MIGRATIONS_DIR, 'committed', name))
    .find((name) =>
      fs.readFileSync(name, 'utf8').includes('create table weld_public.iso_weld_counts'),
    );
  t.truthy(file, 'a committed migration creates the table');
  // Out of step on purpose, then the migration again (it is idempotent): counted afresh.
  await owner.query('alter table weld_public.welds disable trigger _500_iso_weld_counts_insert');
  await owner.query(
    `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
     values ($1, $2, 'UNCOUNTED', 'BW', 4)`,
    [a.tenantId, a.isoId],
  );
  t.notDeepEqual(await rollup(owner, a.tenantId), await fullCount(owner, a.tenantId));
  await owner.query(fs.readFileSync(file!, 'utf8'));
  for (const tenant of [a.tenantId, b.tenantId]) {
    const counts = await rollup(owner, tenant);
    t.deepEqual(counts, await fullCount(owner, tenant));
    t.true(counts.length >= 1);
  }
  t.is((await rollup(owner, a.tenantId)).length, 2, 'the empty ISO has its row of zeros');
});
