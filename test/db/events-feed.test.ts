// F8, events in SQL: the feed. Row security and privileges; ids are given after commit by the
// relay (weld_hidden.place_events, 000023), so a reader of `id > cursor` never skips; the relay
// wakes listeners of `weld_events`; old events are purged behind a watermark.
import test from 'ava';
import { connectClient, withContext } from '../../db/database.ts';
import type { TenantFixture } from '../helpers/fixtures.ts';
import { sorted, setup } from '../helpers/outbox-world.ts';

//------------------------------------------------------------------------------------------------
// Row security and privileges

test("row security: tenant B's viewer sees only B's events, none of A's; no API role writes events, touches the waiting room or runs the relay (42501)", async (t) => {
  const s = await setup(t);
  const { a, b } = s;
  const mine = await s.insert('isos', {
    tenant_id: b.tenantId,
    iso_number: 'B-2',
    line_number: 'L',
  });
  const since = await s.mark();
  await s.as(a, 'engineer', (c) =>
    c.query(`update weld_public.isos set area = 'secret' where id = $1`, [a.isoId]),
  );
  const theirs = await s.eventsSince(a, since);
  t.is(theirs.length, 1);

  const seen = await s.as(b, 'viewer', async (c) => {
    const all = await c.query<{ tenant_id: string; subject_id: string }>(
      `select tenant_id, subject_id from weld_public.events`,
    );
    const asked = await c.query(
      `select id from weld_public.events where tenant_id = $1 or id = $2`,
      [a.tenantId, theirs[0]!.id],
    );
    return { all: all.rows, asked: asked.rows };
  });
  t.true(seen.all.length >= 3, "B's own ISOs and welder");
  t.true(seen.all.every((e) => e.tenant_id === b.tenantId));
  t.true(seen.all.some((e) => e.subject_id === mine));
  t.deepEqual(seen.asked, []);

  // Nobody below viewer reads them.
  await t.throwsAsync(
    withContext(s.pool, { role: 'weld_anonymous', tenantId: a.tenantId }, (c) =>
      c.query('select id from weld_public.events'),
    ),
    { code: '42501' },
  );
  for (const role of ['viewer', 'inspector', 'engineer', 'admin'] as const) {
    for (const sql of [
      `insert into weld_public.events (type, subject_id, data) values ('iso.created', gen_random_uuid(), '{}')`,
      `update weld_public.events set data = '{}'`,
      `delete from weld_public.events`,
      `update weld_hidden.event_purges set purged_through = 0`,
      // The waiting room is the relay's alone: no forging, reading, reordering or dropping.
      `insert into weld_hidden.pending_events (tenant_id, type, subject_id, data) values ('${a.tenantId}', 'iso.created', gen_random_uuid(), '{}')`,
      `select * from weld_hidden.pending_events`,
      `update weld_hidden.pending_events set data = '{}'`,
      `delete from weld_hidden.pending_events`,
      `select weld_hidden.place_events()`,
    ]) {
      await t.throwsAsync(
        s.as(a, role, (c) => c.query(sql)),
        { code: '42501' },
        `${role}: ${sql}`,
      );
    }
  }
  t.deepEqual(await s.eventsSince(a, since), theirs, 'untouched');
});

//------------------------------------------------------------------------------------------------
// Order

test('order: 8 concurrent writers with interleaved commits, two relays, one reader of id > cursor: it sees every event of the tenant exactly once, in id order, one per committed change', async (t) => {
  const WRITERS = 8;
  const TRANSACTIONS = 30;
  const s = await setup(t, WRITERS + 2);
  const { a } = s;
  // Each writer has a weld and an ISO of its own, so writers never wait on each other's rows:
  // only their commits interleave.
  const own: Array<{ weld: string; iso: string }> = [];
  for (let w = 0; w < WRITERS; w++) {
    own.push({
      weld: await a.weld('PENDING', `ORD-${w}`),
      iso: await s.insert('isos', {
        tenant_id: a.tenantId,
        iso_number: `ISO-ORD-${w}`,
        line_number: 'L-ORD',
      }),
    });
  }
  const start = await s.mark();
  // The subjects of every committed change, as the writers know them.
  const expected: string[] = [];

  const writer = async (w: number) => {
    const { weld, iso } = own[w]!;
    for (let n = 0; n < TRANSACTIONS; n++) {
      const plan = n % 5; // 0 weld, 1 ISO, 2 both, 3 rolled back, 4 weld twice
      const subjects = [[weld], [iso], [weld, iso], [], [weld]][plan]!;
      const work = s.as(a, 'engineer', async (c) => {
        if (plan !== 1) {
          await c.query(`update weld_public.welds set material = $2 where id = $1`, [
            weld,
            `m-${w}-${n}`,
          ]);
        }
        if (plan === 1 || plan === 2) {
          await c.query(`update weld_public.isos set area = $2 where id = $1`, [
            iso,
            `a-${w}-${n}`,
          ]);
        }
        if (plan === 4) {
          await c.query(`update weld_public.welds set schedule = '40' where id = $1`, [weld]);
        }
        // Some transactions stay open a moment after their changes, so that the writers'
        // commits interleave in orders unlike their starts. (Not a wait for an order: the
        // assertions below hold for any interleaving.)
        if ((n + w) % 3 === 0) await c.query('select pg_sleep(0.003)');
        if (plan === 3) throw new Error('rolled back on purpose');
      });
      if (plan === 3) {
        await t.throwsAsync(work, { message: 'rolled back on purpose' });
      } else {
        await work;
        expected.push(...subjects);
      }
    }
  };

  let writing = true;
  const seen: Array<{ id: string; subject_id: string }> = [];
  let reads = 0;
  // As REST reads: the relay first (a statement of its own), then the page as a request role.
  // Meanwhile the server's loop relays too, giving up when another relay runs.
  const read = async () => {
    const cursor = seen.at(-1)?.id ?? start;
    await s.place();
    const rows = await s.as(
      a,
      'viewer',
      async (c) =>
        (
          await c.query<{ id: string; subject_id: string }>(
            // (e.id: ordered as a number, not as the text it is read as)
            `select e.id::text, e.subject_id from weld_public.events e where e.id > $1 order by e.id`,
            [cursor],
          )
        ).rows,
    );
    reads++;
    seen.push(...rows);
  };
  const reader = async () => {
    while (writing) await read();
    await read(); // after the last commit: whatever the loop had not seen yet
  };

  const relayLoop = async () => {
    while (writing) {
      await s.pool.query('select weld_hidden.place_events(null, false)');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };

  const readerDone = reader();
  const relayDone = relayLoop();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  writing = false;
  await Promise.all([readerDone, relayDone]);
  t.log(`${reads} reads, ${seen.length} events`);

  const ids = seen.map((e) => BigInt(e.id));
  t.true(
    ids.every((id, i) => i === 0 || id > ids[i - 1]!),
    'strictly increasing: no event twice, none out of order',
  );
  const all = await s.eventsSince(a, start);
  t.deepEqual(
    seen.map((e) => e.id),
    all.map((e) => e.id),
    'every event of the tenant, none skipped',
  );
  // Per 5 transactions: 1 + 1 + 2 + 0 (rolled back) + 1 (two changes of one weld) events.
  t.is(expected.length, WRITERS * TRANSACTIONS);
  t.is(seen.length, expected.length);
  t.deepEqual(sorted(seen.map((e) => e.subject_id)), sorted(expected));
});

//------------------------------------------------------------------------------------------------
// Wake-ups

// Serial: another test's relay would place (and announce) this one's events.
test.serial(
  'the relay NOTIFYs weld_events "<tenant> <type>" once per tenant and type it placed; a writer notifies nothing, a rolled-back one leaves nothing to place, an empty relay is silent',
  async (t) => {
    const s = await setup(t);
    const { a, b } = s;
    await s.mark(); // the world's own setup placed before anyone listens
    const listener = await connectClient(s.target.authenticatorUrl);
    t.teardown(() => listener.end());
    const received: string[] = [];
    let arrived: (() => void) | undefined;
    listener.on('notification', (n) => {
      if (n.channel === 'weld_events') received.push(n.payload ?? '');
      arrived?.();
    });
    await listener.query('listen weld_events');
    /** Resolves once `count` notifications have arrived in all. */
    const until = (count: number) =>
      new Promise<void>((resolve) => {
        arrived = () => received.length >= count && resolve();
        arrived();
      });
    /** What arrives within a moment, for the silences (a notification takes a millisecond). */
    const quietly = () => new Promise((resolve) => setTimeout(resolve, 200));
    const place = async () =>
      (await s.pool.query<{ n: number }>('select weld_hidden.place_events() as n')).rows[0]!.n;
    const commitIn = (fx: TenantFixture) =>
      s.as(fx, 'engineer', (c) =>
        c.query(`update weld_public.isos set area = 'x' || now() where id = $1`, [fx.isoId]),
      );

    await t.throwsAsync(
      s.as(a, 'engineer', async (c) => {
        await c.query(`update weld_public.isos set area = 'undone' where id = $1`, [a.isoId]);
        throw new Error('rolled back');
      }),
    );
    await commitIn(b);
    await quietly();
    t.deepEqual(received, [], 'writers send no NOTIFY');
    t.is(await place(), 1, "B's event; the rolled-back one left none");
    await until(1);
    t.deepEqual(received, [`${b.tenantId} iso.updated`]);

    // Four changes of three types in one transaction, and one more of B: one notification per
    // tenant and type.
    await s.as(a, 'engineer', async (c) => {
      await c.query(`update weld_public.isos set area = 'y' where id = $1`, [a.isoId]);
      await c.query(`update weld_public.welders set name = 'Z' where id = $1`, [a.welderId]);
      await c.query(`insert into weld_public.isos (iso_number, line_number) values ('ISO-N', 'L')`);
      await c.query(`insert into weld_public.isos (iso_number, line_number) values ('ISO-O', 'L')`);
    });
    await commitIn(b);
    t.is(await place(), 5);
    await until(5);
    t.deepEqual(
      received.slice(1).sort(),
      sorted([
        `${a.tenantId} iso.created`,
        `${a.tenantId} iso.updated`,
        `${a.tenantId} welder.updated`,
        `${b.tenantId} iso.updated`,
      ]),
    );
    t.is(await place(), 0);
    await quietly();
    t.is(received.length, 5, 'nothing placed, nothing sent');
  },
);

test.serial(
  'a transaction of more events than a batch reaches the feed in parts, in the order written',
  async (t) => {
    const s = await setup(t);
    const { a } = s;
    const since = await s.mark();
    // One transaction writes five events (an import writes 100,000 in one).
    const subjects = await s.as(a, 'engineer', async (c) => {
      const ids: string[] = [];
      for (let n = 0; n < 5; n++) {
        const { rows } = await c.query<{ id: string }>(
          `insert into weld_public.isos (iso_number, line_number) values ($1, 'L-P') returning id`,
          [`ISO-P${n}`],
        );
        ids.push(rows[0]!.id);
      }
      return ids;
    });
    const counts: number[] = [];
    for (let call = 0; call < 4; call++) {
      const placed = await s.pool.query<{ n: number }>(
        'select weld_hidden.place_events($1, true, 2) as n',
        [a.tenantId],
      );
      counts.push(placed.rows[0]!.n);
    }
    t.deepEqual(counts, [2, 2, 1, 0], 'at most a batch per call, the rest at the next');
    const events = await s.eventsSince(a, since);
    t.deepEqual(
      events.map((e) => e.subject_id),
      subjects,
      'in the order written',
    );
  },
);

test.serial(
  'the relay places committed events in the order they were written, a batch at a time, and gives the selections they open their positions; none is read before',
  async (t) => {
    const s = await setup(t);
    const { a } = s;
    const since = await s.mark();
    const subjects: string[] = [];
    for (let n = 0; n < 5; n++) {
      subjects.push(
        (
          await s.one(
            a,
            'engineer',
            `insert into weld_public.isos (iso_number, line_number)
                                     values ($1, 'L-R') returning id`,
            [`ISO-R${n}`],
          )
        ).id,
      );
    }
    const pending = await s.owner.query<{ subject_id: string }>(
      `select subject_id from weld_hidden.pending_events where tenant_id = $1 order by n`,
      [a.tenantId],
    );
    t.deepEqual(
      pending.rows.map((r) => r.subject_id),
      subjects,
      'waiting for the relay, in the order they were written',
    );
    t.deepEqual(
      await s.as(
        a,
        'viewer',
        async (c) =>
          (await c.query(`select id from weld_public.events where id > $1`, [since])).rows,
      ),
      [],
      'a request role sees none of them yet',
    );
    const placed = await s.pool.query<{ n: number }>(
      'select weld_hidden.place_events(null, true, 2) as n',
    );
    t.is(placed.rows[0]!.n, 2, 'a batch');
    await s.pool.query('select weld_hidden.place_events()');
    const events = await s.eventsSince(a, since);
    t.deepEqual(
      events.map((e) => e.subject_id),
      subjects,
      'in the order they were written',
    );
    const ids = events.map((e) => BigInt(e.id));
    t.true(ids.every((id, i) => i === 0 || id > ids[i - 1]!));
    t.is(
      (
        await s.owner.query('select from weld_hidden.pending_events where tenant_id = $1', [
          a.tenantId,
        ])
      ).rowCount,
      0,
      'moved, not copied',
    );
    t.is(
      (
        await s.as(a, 'viewer', (c) =>
          c.query(`select id from weld_public.events where id > $1`, [since]),
        )
      ).rows.length,
      5,
      'placed, they are read',
    );

    // A selection's position is its opened event's id, set when the relay places it.
    const weld = await a.weld('PENDING', 'SEL-1');
    const selection = await s.insert('examination_selections', {
      tenant_id: a.tenantId,
      weld_id: weld,
      method: 'RT',
      tier: 'random',
      seed: 1,
      reason: 'placed by the relay',
    });
    const position = async () =>
      (
        await s.owner.query<{ position: string | null }>(
          'select position::text from weld_public.examination_selections where id = $1',
          [selection],
        )
      ).rows[0]!.position;
    t.is(await position(), null, 'not yet placed');
    const opened = (await s.eventsSince(a, events.at(-1)!.id)).find(
      (e) => e.type === 'examination_selection.opened',
    );
    t.is(opened?.subject_id, selection);
    t.is(await position(), opened!.id);
  },
);

test('a batch holds at most 4 MB of event data: large events are placed a few at a time, in order', async (t) => {
  const s = await setup(t);
  const { a } = s;
  await s.pool.query('select weld_hidden.place_events()');
  // Six events of about 1.5 MB each (random hex: stored as it is, not compressed).
  await s.owner.query(
    `insert into weld_hidden.pending_events (tenant_id, type, subject_id, data)
     select $1, 'iso.updated', gen_random_uuid(),
            jsonb_build_object('blob', (select string_agg(md5(random()::text || g || k), '')
                                          from generate_series(1, 49152) k))
       from generate_series(1, 6) g`,
    [a.tenantId],
  );
  const order = (
    await s.owner.query<{ subject_id: string }>(
      'select subject_id from weld_hidden.pending_events where tenant_id = $1 order by n',
      [a.tenantId],
    )
  ).rows.map((r) => r.subject_id);
  const counts: number[] = [];
  for (;;) {
    const placed = (
      await s.pool.query<{ n: number }>('select weld_hidden.place_events($1) as n', [a.tenantId])
    ).rows[0]!.n;
    if (placed === 0) break;
    counts.push(placed);
  }
  t.true(counts.length >= 2 && counts.every((n) => n <= 3), JSON.stringify(counts));
  t.is(
    counts.reduce((x, y) => x + y, 0),
    6,
  );
  const placed = (
    await s.owner.query<{ subject_id: string }>(
      `select subject_id from weld_public.events where tenant_id = $1 and type = 'iso.updated'
        order by id`,
      [a.tenantId],
    )
  ).rows.map((r) => r.subject_id);
  t.deepEqual(placed.slice(-6), order, 'in the order written');
});

test('a new webhook endpoint starts after every event that committed before it, a backlog of several batches too', async (t) => {
  const s = await setup(t);
  const { a } = s;
  await s.pool.query('select weld_hidden.place_events()');
  await s.owner.query(
    `insert into weld_hidden.pending_events (tenant_id, type, subject_id, data)
     select $1, 'iso.updated', gen_random_uuid(), '{}' from generate_series(1, 25000)`,
    [a.tenantId],
  );
  const hook = await s.owner.query<{ last_event_id: string }>(
    `insert into weld_hidden.webhooks (tenant_id, url, secret)
     values ($1, 'https://hooks.example.com/x', 'whsec_' || rpad('', 43, 'A') || '=')
     returning last_event_id`,
    [a.tenantId],
  );
  const head = await s.owner.query<{ id: string }>(
    'select max(id) as id from weld_public.events where tenant_id = $1',
    [a.tenantId],
  );
  t.is(hook.rows[0]!.last_event_id, head.rows[0]!.id, 'it starts at the newest');
  t.is(
    (
      await s.owner.query('select from weld_hidden.pending_events where tenant_id = $1', [
        a.tenantId,
      ])
    ).rowCount,
    0,
    'all 25,000 placed first, not one batch',
  );
});

test('the relay refuses to run inside a transaction that wrote events (they would be placed before they commit, and a reader could pass them)', async (t) => {
  const s = await setup(t);
  const { a } = s;
  await s.owner.query('begin');
  try {
    // The outbox fires at once instead of at commit, so this transaction has events waiting.
    await s.owner.query('set constraints all immediate');
    await s.owner.query(`update weld_public.isos set area = 'early' where id = $1`, [a.isoId]);
    const error = await t.throwsAsync(s.owner.query('select weld_hidden.place_events()'));
    t.is((error as Error & { code?: string }).code, '25000');
  } finally {
    await s.owner.query('rollback');
  }
});

//------------------------------------------------------------------------------------------------
// Retention

test('purge_events(keep_days) as the authenticator: deletes only what is older, returns the counts, records purged_through per tenant; keep_days below 1 is refused (22023)', async (t) => {
  const s = await setup(t);
  const { a, b, owner, pool } = s;
  // Tenant A: the fixture's events and three more, of which the fixture's and two are aged 40
  // days, one 20 days; tenant B's are all fresh.
  for (const n of ['P-1', 'P-2', 'P-3']) {
    await s.insert('isos', { tenant_id: a.tenantId, iso_number: n, line_number: 'L' });
  }
  const ofA = await s.eventsSince(a, '0');
  const ofB = await s.eventsSince(b, '0');
  t.true(ofA.length >= 5 && ofB.length >= 2);
  const aged = ofA.slice(0, -1).map((e) => e.id);
  const recent = ofA.at(-1)!.id;
  await owner.query(
    `update weld_public.events set occurred_at = now() - interval '40 days' where id = any($1)`,
    [aged],
  );
  await owner.query(
    `update weld_public.events set occurred_at = now() - interval '20 days' where id = $1`,
    [recent],
  );

  for (const days of [0, -1, null]) {
    await t.throwsAsync(pool.query('select * from weld_hidden.purge_events($1)', [days]), {
      code: '22023',
    });
  }
  const purged = await pool.query('select * from weld_hidden.purge_events(30)');
  t.deepEqual(purged.rows, [{ deleted_events: String(aged.length), deleted_deliveries: '0' }]);
  t.deepEqual(
    (await s.eventsSince(a, '0')).map((e) => e.id),
    [recent],
  );
  t.is((await s.eventsSince(b, '0')).length, ofB.length, "B's are untouched");
  const marks = await owner.query(
    `select tenant_id, purged_through::text from weld_hidden.event_purges`,
  );
  t.deepEqual(marks.rows, [{ tenant_id: a.tenantId, purged_through: aged.at(-1) }]);
  // Each tenant's viewer reads its own watermark (the REST feed answers 410 below it).
  t.deepEqual(
    (
      await s.as(a, 'viewer', (c) =>
        c.query(`select purged_through::text from weld_hidden.event_purges`),
      )
    ).rows,
    [{ purged_through: aged.at(-1) }],
  );
  t.deepEqual(
    (await s.as(b, 'viewer', (c) => c.query(`select * from weld_hidden.event_purges`))).rows,
    [],
  );

  // Again at once: nothing more to delete, and the watermark stays.
  const again = await pool.query('select * from weld_hidden.purge_events(30)');
  t.deepEqual(again.rows, [{ deleted_events: '0', deleted_deliveries: '0' }]);
  const still = await owner.query(`select purged_through::text from weld_hidden.event_purges`);
  t.deepEqual(still.rows, [{ purged_through: aged.at(-1) }]);
  // A request role may not purge.
  await t.throwsAsync(
    s.as(a, 'admin', (c) => c.query('select * from weld_hidden.purge_events(1)')),
    { code: '42501' },
  );
});
