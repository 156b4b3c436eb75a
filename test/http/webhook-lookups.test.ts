// The follow-up review, from the attacker's side: a tenant admin whose DNS answers slowly. The
// lookup was dns.lookup (getaddrinfo, on libuv's 4-thread pool), unbounded, and outside the
// attempt's timeout: a 3 s lookup against a 1 s timeout took 3 s and reported 1000 ms, and many
// test messages at once could fill the thread pool that token checks and logins share.
//
//   - the timeout covers the lookup: a slow name is the one no-answer outcome, after the timeout
//   - at most two lookups run at once in a process, one per tenant; the rest wait within their
//     deadline
//   - a tenant may have two test messages in flight; one more is 429, another tenant's still runs
import test from 'ava';
import { LookupSlots, type TargetRules } from '../../rest-adapter/http/webhook-address.ts';
import { deliverWebhook, noAnswer } from '../../rest-adapter/http/webhook-delivery.ts';
import { ok, receiver, sleep, worker, world } from '../helpers/webhooks.ts';

/** The attacker's DNS: `slow.*` answers after `slowMs`, everything else at once, all loopback. */
function resolver(slowMs = 3000) {
  const state = { running: 0, most: 0, asked: 0 };
  const lookup: NonNullable<TargetRules['lookup']> = async (hostname) => {
    state.asked += 1;
    state.running += 1;
    state.most = Math.max(state.most, state.running);
    try {
      if (hostname.startsWith('slow.')) await sleep(slowMs);
      return [{ address: '127.0.0.1', family: 4 }];
    } finally {
      state.running -= 1;
    }
  };
  return { lookup, state };
}

test('a lookup slower than the timeout is the one no-answer outcome, after the timeout', async (t) => {
  const { lookup } = resolver();
  const w = await world(t, {
    webhookTimeoutMs: 1000,
    webhookTargets: { lookup, lookupSlots: new LookupSlots(2, 1) },
  });
  const r = await receiver(t);
  const hook = ok(
    await w.a.admin.post('/webhooks', { url: `http://slow.example:${r.port}/hook` }),
    201,
  );
  const started = Date.now();
  const answer = ok(await w.a.admin.post(`/webhooks/${hook.id}/test`));
  const elapsed = Date.now() - started;
  t.like(answer, { status: null, error: noAnswer(1000), durationMs: 1000 });
  // The lookup takes 3 s; the answer comes at the timeout (with room for a loaded machine).
  t.true(elapsed >= 1000 && elapsed < 2500, `answered after ${elapsed} ms`);
  await sleep(2500); // the lookup ends meanwhile: its answer is not used
  t.is(r.got.length, 0, 'nothing was sent after the deadline');
});

test("many tenants' slow names: at most two lookups at once in the process, each attempt within its timeout", async (t) => {
  const { lookup, state } = resolver();
  // The process's own slots (LOOKUP_SLOTS), as the server and the worker use them.
  const rules = { allowPrivate: true, lookup, timeoutMs: 1000 };
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, n) =>
      deliverWebhook(
        {
          url: `http://slow.example/${n}`,
          secret: `whsec_${'A'.repeat(43)}=`,
          messageId: `m${n}`,
          body: '{}',
        },
        { ...rules, owner: `tenant-${n % 5}` },
      ),
    ),
  );
  const elapsed = performance.now() - started;
  t.is(state.most, 2, 'two lookups at once, never more');
  t.is(state.asked, 2, 'the others gave up waiting for a slot at their deadline');
  // The same outcome for all; the eight that never began say so, for the worker alone.
  const began = answers.filter((answer) => !answer.deferred);
  t.is(began.length, 2);
  for (const answer of answers) {
    t.like(answer, { error: noAnswer(1000), durationMs: 1000 });
  }
  t.true(elapsed < 2500, `all answered after ${Math.round(elapsed)} ms`);
});

test("a tenant's test messages: two in flight, one more is 429; another tenant's test still runs", async (t) => {
  const { lookup, state } = resolver();
  const w = await world(t, {
    webhookTimeoutMs: 1000,
    webhookTargets: { lookup, lookupSlots: new LookupSlots(2, 1) },
  });
  const r = await receiver(t);
  const slow = ok(
    await w.a.admin.post('/webhooks', { url: `http://slow.example:${r.port}/hook` }),
    201,
  );
  const theirs = ok(
    await w.b.admin.post('/webhooks', { url: `http://fast.example:${r.port}/hook` }),
    201,
  );
  const flood = Array.from({ length: 10 }, () => w.a.admin.post(`/webhooks/${slow.id}/test`));
  await sleep(100);
  const other = await w.b.admin.post(`/webhooks/${theirs.id}/test`);
  t.is(ok(other).status, 204, "bravo's test reached its receiver");
  const answers = await Promise.all(flood);
  const statuses = answers.map((a) => a.status).sort();
  t.deepEqual(statuses, [200, 200, ...Array<number>(8).fill(429)]);
  for (const refused of answers.filter((a) => a.status === 429)) {
    t.is(refused.json.type, '/problems/too-many-webhook-tests');
    t.is(refused.headers['retry-after'], '1');
  }
  for (const sent of answers.filter((a) => a.status === 200)) {
    t.like(sent.json, { status: null, error: noAnswer(1000) });
  }
  t.true(state.most <= 2);
  // The slots are given back: alpha may test again.
  t.is((await w.a.admin.post(`/webhooks/${slow.id}/test`)).status, 200);
});

test("another tenant's slow names holding every lookup slot are not this endpoint's failures", async (t) => {
  const { lookup, state } = resolver(3000);
  // One slot, so that alpha's slow name holds it.
  const slots = new LookupSlots(1, 1);
  const w = await world(t, { webhookTargets: { lookup, lookupSlots: slots } });
  const slowReceiver = await receiver(t);
  const fastReceiver = await receiver(t);
  const slow = ok(
    await w.a.admin.post('/webhooks', { url: `http://slow.example:${slowReceiver.port}/hook` }),
    201,
  );
  const fast = ok(
    await w.b.admin.post('/webhooks', { url: `http://fast.example:${fastReceiver.port}/hook` }),
    201,
  );
  worker(t, w.server, { timeoutMs: 1000, lookup, lookupSlots: slots });
  // Alpha's event first; bravo's once alpha's lookup holds the slot.
  ok(await w.a.engineer.post('/isos', { isoNumber: 'ISO-2', lineNumber: 'L-1' }), 201);
  const deadline = Date.now() + 5000;
  while (state.running === 0 && Date.now() < deadline) await sleep(20);
  t.is(state.running, 1, "alpha's slow lookup holds the slot");
  ok(await w.b.engineer.post('/isos', { isoNumber: 'ISO-B2', lineNumber: 'L-B' }), 201);

  // Bravo's attempt waits a whole timeout for the slot, and is tried again, not counted.
  const until = Date.now() + 10_000;
  while (fastReceiver.got.length === 0 && Date.now() < until) await sleep(50);
  t.is(fastReceiver.got.length, 1, "bravo's event arrived once alpha's lookup ended");
  // The receiver answers before the worker records the answer: wait for the record.
  let deliveries: { status: unknown }[] = [];
  while (deliveries.length === 0 && Date.now() < until) {
    deliveries = ok(await w.b.admin.get(`/webhooks/${fast.id}/deliveries`)).items;
    if (deliveries.length === 0) await sleep(50);
  }
  t.is(deliveries.length, 1, 'one attempt recorded: the one that was sent');
  t.is(deliveries[0]?.status, 204);
  t.is(
    ok(await w.b.admin.get(`/webhooks/${fast.id}`)).failingSince,
    null,
    'and no failure counted',
  );
  // Alpha's own slow name is alpha's failure, as ever.
  const failing = ok(await w.a.admin.get(`/webhooks/${slow.id}/deliveries`)).items;
  t.true(failing.length >= 1 && failing.every((d: { status: unknown }) => d.status === null));
});
