// The wake-ups of event readers (db/event-notifications.ts) against a real PostgreSQL, with its
// relay placing what commits: a reader of some types sleeps through commits of others, a burst of
// commits wakes a reader once, and a reader of every type (the webhook worker's '*') wakes for
// anything; and its loop places each tenant in a transaction of its own.
import test from 'ava';
import { EventNotifications } from '../../db/event-notifications.ts';
import { ownerClient, twoTenants } from '../helpers/fixtures.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

test("the relay's loop places each tenant on its own: one with a waiting event locked holds up no other, and is reported once", async (t) => {
  const { target, owner, a, b } = await twoTenants(t);
  await owner.query('select weld_hidden.place_events()');
  // Someone (a DBA's open transaction, a tenant being deleted) holds A's waiting event locked.
  await owner.query(`update weld_public.isos set area = 'held' where id = $1`, [a.isoId]);
  const holder = await ownerClient(target);
  t.teardown(() => holder.end());
  await holder.query('begin');
  await holder.query('select from weld_hidden.pending_events where tenant_id = $1 for update', [
    a.tenantId,
  ]);
  const errors: string[] = [];
  const notifications = new EventNotifications(target.authenticatorUrl, {
    relayMs: 20,
    onError: (error) => errors.push(error.message),
  });
  await notifications.start();
  t.teardown(() => notifications.stop());

  const waiting = async (tenantId: string) =>
    Number(
      (
        await owner.query(
          'select count(*) as n from weld_hidden.pending_events where tenant_id = $1',
          [tenantId],
        )
      ).rows[0].n,
    );
  // B writes three times while A's event stays locked: each is placed.
  for (let n = 0; n < 3; n++) {
    await owner.query(`update weld_public.isos set area = $2 where id = $1`, [b.isoId, `b${n}`]);
    const deadline = Date.now() + 5_000;
    while ((await waiting(b.tenantId)) > 0 && Date.now() < deadline) await sleep(20);
    t.is(await waiting(b.tenantId), 0, `B's event ${n} placed while A's is held`);
  }
  t.is(await waiting(a.tenantId), 1, "A's event waits");
  const reported = errors.filter((m) => m.includes(a.tenantId));
  t.is(reported.length, 1, 'the failure is reported once, naming the tenant');
  t.regex(reported[0]!, /^event relay failed for tenant [0-9a-f-]+: .*lock/);
  t.false(errors.some((m) => m.includes(b.tenantId)));

  await holder.query('rollback');
  // (A failing tenant is tried again after 1 s, then 2, 4, ... : it failed once or twice here.)
  const deadline = Date.now() + 15_000;
  while ((await waiting(a.tenantId)) > 0 && Date.now() < deadline) await sleep(20);
  t.is(await waiting(a.tenantId), 0, "A's event is placed once it is free");
});
