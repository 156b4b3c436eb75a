// F8, events in SQL: what the outbox must hold against beyond the happy paths: the owner's bulk
// loads left out of the feed, request roles setting the outbox's own settings, DBA changes,
// shared ids, deferred constraints and deleted tenants.
import test from 'ava';
import { sorted, setup, type World, onlyEvent } from '../helpers/outbox-world.ts';

//------------------------------------------------------------------------------------------------
// Suppression

test("weld.suppress_events = 'on' by the owner leaves its bulk load out of the feed; set by a request role it changes nothing", async (t) => {
  const s = await setup(t);
  const { a, owner } = s;
  const bulk = await s.eventsOf(a, async () => {
    await owner.query('begin');
    try {
      await owner.query(`select set_config('weld.suppress_events', 'on', true)`);
      await owner.query(
        `insert into weld_public.isos (tenant_id, iso_number, line_number)
         select $1, 'BULK-' || n, 'L-BULK' from generate_series(1, 20) n`,
        [a.tenantId],
      );
      await owner.query(`update weld_public.welders set name = 'bulk' where id = $1`, [a.welderId]);
      await owner.query('commit');
    } catch (error) {
      await owner.query('rollback');
      throw error;
    }
  });
  t.deepEqual(bulk.events, []);
  const loaded = await owner.query(
    `select count(*)::int as n from weld_public.isos where line_number = 'L-BULK'`,
  );
  t.is(loaded.rows[0].n, 20, 'the load itself happened');

  const request = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      await c.query(`select set_config('weld.suppress_events', 'on', true)`);
      return (
        await c.query<{ id: string }>(
          `insert into weld_public.isos (iso_number, line_number) values ('ISO-REQ', 'L') returning id`,
        )
      ).rows[0]!.id;
    }),
  );
  onlyEvent(t, request.events, {
    type: 'iso.created',
    subject: request.result,
    actor: a.users.engineer,
  });
});

//------------------------------------------------------------------------------------------------
// What the outbox must hold against, beyond the happy paths

/** An ISO created by the engineer, and a reader of the events of that ISO, in id order. */
async function isoWithHistory(s: World) {
  const { result } = await s.eventsOf(s.a, () =>
    s.one(
      s.a,
      'engineer',
      `insert into weld_public.isos (iso_number, line_number) values ('ISO-F', 'L') returning id`,
    ),
  );
  const history = async () => {
    await s.place();
    return (
      await s.owner.query<{ id: string; type: string }>(
        `select e.id::text, e.type from weld_public.events e where e.subject_id = $1 order by e.id`,
        [result.id],
      )
    ).rows;
  };
  return { id: result.id, history };
}

/** `sql` (with the ISO's id as $1) as the engineer, after setting weld.first_event_id to 1. */
const forgingFirstEventId = (s: World, sql: string, id: string) =>
  s.eventsOf(s.a, () =>
    s.as(s.a, 'engineer', async (c) => {
      await c.query(`select set_config('weld.first_event_id', '1', true)`);
      await c.query(sql, [id]);
    }),
  );

// The outbox finds "this transaction's event for the resource" among the events waiting for the
// relay (weld_hidden.pending_events, by its own transaction id; until 000023 through the
// transaction-local setting weld.first_event_id). Any role may set a custom setting (a request role may set
// weld.suppress_events, which is why that one is honoured for the owner only), so a forged one
// must not let a request hide its change, nor delete or rewrite events already committed (and
// maybe already read or delivered).

test('a request role that sets weld.first_event_id still has its change announced', async (t) => {
  const s = await setup(t);
  const iso = await isoWithHistory(s);
  const { events } = await forgingFirstEventId(
    s,
    `update weld_public.isos set area = 'quiet' where id = $1`,
    iso.id,
  );
  onlyEvent(t, events, { type: 'iso.updated', subject: iso.id, actor: s.a.users.engineer });
});

test('a request role that sets weld.first_event_id and deletes a resource does not erase its earlier, committed events', async (t) => {
  const s = await setup(t);
  const iso = await isoWithHistory(s);
  const before = await iso.history();
  t.deepEqual(
    before.map((e) => e.type),
    ['iso.created'],
  );
  const { events } = await forgingFirstEventId(
    s,
    `delete from weld_public.isos where id = $1`,
    iso.id,
  );
  t.deepEqual((await iso.history()).slice(0, 1), before, 'the committed iso.created is kept');
  onlyEvent(t, events, { type: 'iso.deleted', subject: iso.id, actor: s.a.users.engineer });
});

test("a weld status set directly by a DBA is announced with its own from/to, never with an earlier change's reason and cause", async (t) => {
  // The outbox takes reason and cause from the weld's newest history row. A DBA's UPDATE of
  // welds.status writes no history row, so that row is another transaction's (or there is none).
  const s = await setup(t);
  const { a } = s;
  const weldId = await a.weld();
  await s.as(a, 'engineer', (c) =>
    c.query(
      `select weld_public.change_weld_status($1, 'ACCEPTED', 'radiograph clean', null, null, null, 'NCR-1')`,
      [weldId],
    ),
  );
  const { events } = await s.eventsOf(a, () =>
    s.owner.query(`update weld_public.welds set status = 'VOIDED' where id = $1`, [weldId]),
  );
  const event = onlyEvent(t, events, { type: 'weld.status_changed', subject: weldId, actor: null });
  t.like(event.change, { from: 'ACCEPTED', to: 'VOIDED' });
  t.not(event.change?.reason, 'radiograph clean', "the inspector's reason is not the DBA's");
  t.not(event.change?.cause, 'user', 'no user made this change');

  // A weld without any history: the change still says from and to.
  const fresh = await a.weld();
  const first = await s.eventsOf(a, () =>
    s.owner.query(`update weld_public.welds set status = 'ACCEPTED' where id = $1`, [fresh]),
  );
  const firstEvent = onlyEvent(t, first.events, {
    type: 'weld.status_changed',
    subject: fresh,
    actor: null,
  });
  t.like(firstEvent.change, { from: 'PENDING', to: 'ACCEPTED' });
});

test('two resources of different kinds that share an id, changed in one transaction, are both announced', async (t) => {
  // Ids are unique per table, not across tables: an import that keeps its own ids (as the code
  // rules' tests build worlds with fixed ids) may give an ISO and a welder the same one. The
  // once-per-transaction check must tell them apart by kind, not by id alone.
  const s = await setup(t);
  const { a, owner } = s;
  const id = '00000000-0000-4000-8000-000000000001';
  const { events } = await s.eventsOf(a, async () => {
    await owner.query('begin');
    try {
      await owner.query(
        `insert into weld_public.isos (tenant_id, id, iso_number, line_number) values ($1, $2, 'ISO-SAME', 'L')`,
        [a.tenantId, id],
      );
      await owner.query(
        `insert into weld_public.welders (tenant_id, id, stamp, name) values ($1, $2, 'SAME', 'Same')`,
        [a.tenantId, id],
      );
      await owner.query('commit');
    } catch (error) {
      await owner.query('rollback');
      throw error;
    }
  });
  t.deepEqual(sorted(events.map((e) => `${e.type} ${e.subject_id}`)), [
    `iso.created ${id}`,
    `welder.created ${id}`,
  ]);
});

test('SET CONSTRAINTS ALL IMMEDIATE in a request does not freeze its event before the end: the event shows the resource at commit', async (t) => {
  // The outbox triggers are deferrable constraint triggers, so any role may fire them early;
  // the event must still show the resource as it is at commit, as the contract says.
  const s = await setup(t);
  const { a } = s;
  const { events } = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      await c.query(`update weld_public.isos set area = 'early' where id = $1`, [a.isoId]);
      await c.query('set constraints all immediate');
      await c.query(`update weld_public.isos set area = 'at commit' where id = $1`, [a.isoId]);
    }),
  );
  const event = onlyEvent(t, events, {
    type: 'iso.updated',
    subject: a.isoId,
    actor: a.users.engineer,
  });
  t.is(event.data.area, 'at commit');
});

test('deleting a tenant with resources and events works, announces nothing and leaves no event behind', async (t) => {
  // The tenant's rows go by cascade, each firing the outbox at commit: for a tenant that is gone
  // the outbox must write nothing (an event row would refer to no tenant and fail the commit).
  const s = await setup(t);
  const { a, b } = s;
  // (Welds hold their ISO by RESTRICT, so only a tenant without welds can go: its ISO and welder.)
  await s.one(a, 'engineer', `update weld_public.isos set area = 'gone soon' returning id`);
  t.true((await s.eventsSince(a, '0')).length >= 3, 'the tenant has events');
  const before = await s.mark();
  await s.owner.query('delete from weld_public.tenants where id = $1', [a.tenantId]);
  const left = await s.owner.query<{ n: number }>(
    'select count(*)::int as n from weld_public.events where tenant_id = $1',
    [a.tenantId],
  );
  t.is(left.rows[0]!.n, 0);
  t.deepEqual(await s.eventsSince(b, before), [], "the other tenant's feed is untouched");
  t.true((await s.eventsSince(b, '0')).length > 0, 'and keeps its own events');
});

test("the relay drops the waiting events of a tenant that is gone, and places every other tenant's", async (t) => {
  const s = await setup(t);
  const { a, b } = s;
  await s.pool.query('select weld_hidden.place_events()');
  const gone = '00000000-0000-4000-8000-00000000dead';
  // Written by a transaction that committed as its tenant was deleted (the waiting room keeps no
  // foreign key to tenants: that check cost every writer a lookup per event).
  await s.owner.query(
    `insert into weld_hidden.pending_events (tenant_id, type, subject_id, data)
     values ($1, 'iso.created', gen_random_uuid(), '{}')`,
    [gone],
  );
  const before = await s.mark();
  await s.one(b, 'engineer', `update weld_public.isos set area = 'still here' returning id`);
  const placed = await s.pool.query<{ n: number }>('select weld_hidden.place_events() as n');
  t.is(placed.rows[0]!.n, 1, "B's event placed; the gone tenant's none");
  t.is(
    (await s.owner.query('select from weld_hidden.pending_events where tenant_id = $1', [gone]))
      .rowCount,
    0,
    'dropped',
  );
  t.is(
    (await s.owner.query('select from weld_public.events where tenant_id = $1', [gone])).rowCount,
    0,
  );
  t.is((await s.eventsSince(b, before)).length, 1);
  t.deepEqual(await s.eventsSince(a, before), []);
});
