// The wake-ups of event readers (db/event-notifications.ts) against a real PostgreSQL, with its
// relay placing what commits: a reader of some types sleeps through commits of others, a burst of
// commits wakes a reader once, and a reader of every type (the webhook worker's '*') wakes for
// anything.
import test from 'ava';
import { EventNotifications } from '../../db/event-notifications.ts';
import { twoTenants } from '../helpers/fixtures.ts';

async function world(t: import('ava').ExecutionContext) {
  const { target, owner, a, b } = await twoTenants(t);
  // The tenants' own creation is placed (and notified) before anyone listens.
  await owner.query('select weld_hidden.place_events()');
  // The relay every 50 ms: a burst of commits (a few ms) is placed by one or two relays.
  const notifications = new EventNotifications(target.authenticatorUrl, { relayMs: 50 });
  await notifications.start();
  t.teardown(() => notifications.stop());
  // The owner's writes are events too (actor null): an ISO's area, a welder's name.
  const isoUpdated = (tenant = a) =>
    owner.query(`update weld_public.isos set area = 'x' || clock_timestamp() where id = $1`, [
      tenant.isoId,
    ]);
  const welderUpdated = () =>
    owner.query(`update weld_public.welders set name = 'N' || clock_timestamp() where id = $1`, [
      a.welderId,
    ]);
  return { notifications, a, b, isoUpdated, welderUpdated };
}

test('a reader of some types sleeps through commits of other types and of other tenants, and wakes for its own', async (t) => {
  const w = await world(t);
  const welders = w.notifications.watch(w.a.tenantId, ['welder.updated', 'welder.created']);
  const everything = w.notifications.watch(w.a.tenantId);
  t.teardown(() => {
    welders.close();
    everything.close();
  });
  await w.isoUpdated();
  await w.isoUpdated(w.b);
  t.true(await everything.wait(2_000), 'a reader of every type wakes for the ISO');
  t.false(await welders.wait(300), 'the welders reader slept through ISOs, of A and of B');
  await w.welderUpdated();
  t.true(await welders.wait(2_000));
});

test('a burst of commits wakes a waiting reader once, not once each', async (t) => {
  const w = await world(t);
  const reader = w.notifications.watch(w.a.tenantId);
  t.teardown(() => reader.close());
  // The reader waits; ten commits follow at once.
  const wakes: boolean[] = [];
  const waiting = (async () => {
    while (wakes.length < 20) {
      const woken = await reader.wait(1_000);
      if (!woken) return;
      wakes.push(woken);
    }
  })();
  await Promise.all(Array.from({ length: 10 }, () => w.isoUpdated()));
  await waiting;
  // One relay (two, if the burst straddles one) places the burst and notifies once per tenant and
  // type; the reader reads once for them (at most twice).
  t.true(wakes.length >= 1 && wakes.length <= 2, `${wakes.length} wake-ups for 10 commits`);
});
