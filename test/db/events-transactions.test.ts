// F8, events in SQL: several changes of one resource in one transaction are one event with the
// resource as it is at commit; nothing is announced for what rolls back.
import test from 'ava';
import { setup, onlyEvent } from '../helpers/outbox-world.ts';

//------------------------------------------------------------------------------------------------
// Several changes of one resource in one transaction

test('one transaction, one event per resource: insert+update -> created (final data), update+update -> updated (final), insert+delete -> none, update+delete -> deleted (last stored)', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const iso = (n: string) =>
    s.insert('isos', { tenant_id: a.tenantId, iso_number: n, line_number: 'L-1' });
  const [kept, changed] = [await iso('ISO-KEPT'), await iso('ISO-GONE')];

  const { result, events } = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      const insert = async (n: string) =>
        (
          await c.query<{ id: string }>(
            `insert into weld_public.isos (iso_number, line_number) values ($1, 'L-1') returning id`,
            [n],
          )
        ).rows[0]!.id;
      const area = (id: string, value: string) =>
        c.query(`update weld_public.isos set area = $2 where id = $1`, [id, value]);
      const created = await insert('ISO-NEW');
      await area(created, 'first');
      await area(created, 'final');
      await area(kept, 'one');
      await area(kept, 'two');
      const fleeting = await insert('ISO-FLEETING');
      await area(fleeting, 'never seen');
      await c.query(`delete from weld_public.isos where id = $1`, [fleeting]);
      await area(changed, 'last stored');
      await c.query(`delete from weld_public.isos where id = $1`, [changed]);
      return { created, fleeting };
    }),
  );
  t.deepEqual(
    events.map((e) => [e.type, e.subject_id, e.actor_id]),
    [
      ['iso.created', result.created, engineer],
      ['iso.updated', kept, engineer],
      ['iso.deleted', changed, engineer],
    ],
  );
  t.like(events[0]!.data, { isoNumber: 'ISO-NEW', area: 'final', version: 3 });
  t.like(events[1]!.data, { area: 'two', version: 3 });
  t.like(events[2]!.data, { isoNumber: 'ISO-GONE', area: 'last stored' });
  // The fleeting ISO left no trace, not even a placeholder.
  const traces = await s.owner.query(`select id from weld_public.events where subject_id = $1`, [
    result.fleeting,
  ]);
  t.deepEqual(traces.rows, []);
});

test('a weld whose fields and status change in one transaction: one weld.status_changed with the final data', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const weldId = await a.weld();
  const { events } = await s.eventsOf(a, () =>
    s.as(a, 'admin', async (c) => {
      await c.query(`update weld_public.welds set material = 'P91' where id = $1`, [weldId]);
      await c.query(
        `select weld_public.change_weld_status($1, 'ACCEPTED', 'visual ok', null, null, null, 'NCR-2 use as is')`,
        [weldId],
      );
      await c.query(`update weld_public.welds set schedule = '80' where id = $1`, [weldId]);
    }),
  );
  const event = onlyEvent(t, events, {
    type: 'weld.status_changed',
    subject: weldId,
    actor: a.users.admin,
  });
  t.like(event.data, { material: 'P91', schedule: '80', status: 'ACCEPTED' });
  t.deepEqual(event.change, {
    from: 'PENDING',
    to: 'ACCEPTED',
    reason: 'visual ok',
    cause: 'user',
    ndtRecordId: null,
  });
});

//------------------------------------------------------------------------------------------------
// Rollbacks

test('a rolled-back transaction leaves no event; a rolled-back savepoint leaves none for its changes, and the rest of the transaction is announced as it finally is', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const before = await s.mark();
  const failure = await t.throwsAsync(
    s.as(a, 'engineer', async (c) => {
      await c.query(
        `insert into weld_public.isos (iso_number, line_number) values ('ISO-RB', 'L')`,
      );
      await c.query(`update weld_public.welders set name = 'Renamed' where id = $1`, [a.welderId]);
      throw new Error('the request failed');
    }),
  );
  t.is(failure.message, 'the request failed');
  t.deepEqual(await s.eventsSince(a, before), []);

  const other = await s.insert('isos', {
    tenant_id: a.tenantId,
    iso_number: 'ISO-OTHER',
    line_number: 'L',
  });
  const { result: created, events } = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      await c.query(`update weld_public.isos set area = 'kept' where id = $1`, [a.isoId]);
      await c.query('savepoint attempt');
      const { id } = (
        await c.query<{ id: string }>(
          `insert into weld_public.isos (iso_number, line_number) values ('ISO-SP', 'L') returning id`,
        )
      ).rows[0]!;
      await c.query(`update weld_public.isos set area = 'undone' where id = $1`, [a.isoId]);
      await c.query(`delete from weld_public.isos where id = $1`, [other]);
      await c.query('rollback to savepoint attempt');
      return id;
    }),
  );
  t.deepEqual(
    events.map((e) => [e.type, e.subject_id]),
    [['iso.updated', a.isoId]],
  );
  t.is(events[0]!.data.area, 'kept');
  // The ISO of the savepoint never existed for anyone, and the other ISO is still there.
  const rows = await s.owner.query<{ id: string }>(
    `select id from weld_public.isos where id = any($1) order by id`,
    [[created, other]],
  );
  t.deepEqual(
    rows.rows.map((r) => r.id),
    [other],
  );
});
