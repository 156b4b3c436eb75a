// Issue F14, finding 4 (webhook lanes): the review's tenant with 20 slow receivers (9 s each)
// delayed another tenant's delivery from 0.02 s to 44 s. Now a tenant holds at most
// WEBHOOK_TENANT_CONCURRENCY of an instance's lanes, and a lane that comes free claims for the
// tenant with the fewest deliveries in flight, so the other tenant's event goes out at once.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { MAX_WEBHOOKS_PER_TENANT } from '../../rest-adapter/webhooks.ts';
import { ok, receiver, until, worker, world } from '../helpers/webhooks.ts';

/** How long each of tenant A's receivers takes to answer, unless released sooner. */
const SLOW_MS = 9_000;

test("one tenant's slow receivers do not delay another tenant's delivery", async (t) => {
  const w = await world(t);

  // Tenant A: the most endpoints a tenant may have, all on one receiver that sleeps SLOW_MS
  // (or until the test releases it), counting the requests it holds at once.
  let holding = 0;
  let mostHeld = 0;
  const answeredPaths: string[] = [];
  const waiting = new Set<() => void>();
  let released = false;
  const slow = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      holding++;
      mostHeld = Math.max(mostHeld, holding);
      const answer = () => {
        waiting.delete(answer);
        clearTimeout(timer);
        holding--;
        answeredPaths.push(req.url!);
        if (!res.destroyed) res.writeHead(204).end();
      };
      const timer = setTimeout(answer, released ? 0 : SLOW_MS);
      waiting.add(answer);
    });
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const answer of [...waiting]) answer();
    slow.closeAllConnections();
    return new Promise<void>((resolve) => slow.close(() => resolve()));
  });
  const slowPort = (slow.address() as AddressInfo).port;
  for (let i = 0; i < MAX_WEBHOOKS_PER_TENANT; i++) {
    ok(await w.a.admin.post('/webhooks', { url: `http://127.0.0.1:${slowPort}/slow/${i}` }), 201);
  }
  // Tenant B: one endpoint, on a receiver that answers at once.
  const fast = await receiver(t);
  ok(await w.b.admin.post('/webhooks', { url: fast.url }), 201);

  // The worker as the review ran it: few lanes, a timeout longer than the receivers' sleep.
  worker(t, w.server, { concurrency: 4, tenantConcurrency: 2, timeoutMs: 20_000 });

  // A's event goes to its 20 endpoints; wait until A's receivers hold what A may have in flight.
  ok(await w.a.engineer.patch(`/isos/${w.iso}`, { area: 'A' }));
  await until(() => holding >= 2, "tenant A's slow deliveries under way");

  // B's event, while A's receivers sleep.
  const started = Date.now();
  ok(await w.b.engineer.patch(`/isos/${w.isoB}`, { area: 'B' }));
  await until(() => fast.got.length >= 1, "tenant B's delivery");
  const tookMs = Date.now() - started;

  // The fact that matters, independent of timing: B's event arrived while every one of A's
  // deliveries so far was still asleep (none of A's receivers had answered yet).
  t.deepEqual(answeredPaths, [], "B's event did not wait for any of A's slow answers");
  t.is(fast.got[0]!.json.type, 'iso.updated');
  t.is(fast.got[0]!.json.data.area, 'B');
  // And a bound, for the record: without fairness it is at least SLOW_MS (a lane must come free).
  // A third of it leaves ~60 times what an idle machine needs (tens of ms: a NOTIFY, one claim,
  // one POST), so a loaded 2-core machine does not flake it.
  t.true(tookMs < SLOW_MS / 3, `B's delivery took ${tookMs} ms`);
  t.true(mostHeld <= 2, `tenant A had ${mostHeld} deliveries in flight at once (its bound: 2)`);

  // A is slowed, not starved: once its receivers answer, all 20 endpoints get the event.
  released = true;
  for (const answer of [...waiting]) answer();
  await until(() => answeredPaths.length >= MAX_WEBHOOKS_PER_TENANT, "all of A's deliveries");
  t.deepEqual(
    [...answeredPaths].sort(),
    Array.from({ length: MAX_WEBHOOKS_PER_TENANT }, (_, i) => `/slow/${i}`).sort(),
  );
  t.true(mostHeld <= 2);
});
