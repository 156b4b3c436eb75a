// Issue F14, finding 3 (webhook SSRF), from the attacker's side: a tenant admin chooses a
// webhook's URL and tries to make the service reach its own network, to read what answers there,
// or to map which ports are open.
//
//   - every range of the IANA special-purpose registries is refused, several addresses each, and
//     so is every address of this machine (the review reached a listener on 0.0.0.0 through the
//     machine's own 192.0.2.x address)
//   - a name is resolved at delivery and every address it has is checked; the connection goes to
//     the address checked (pinned), so an answer that changes between the check and the connect
//     (DNS rebinding) is never used
//   - the test answer carries the status, never the receiver's body; the delivery log keeps none
//   - a closed port, a silent one, a reset and a port that speaks something else are one outcome,
//     reported after the same fixed timeout
//   - WEBHOOK_ALLOW_PRIVATE cannot be on by a slip, nor at all with a database URL
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import test from 'ava';
import { ConfigError } from '../../db/config.ts';
import { loadConfig } from '../../server/config.ts';
import { addressProblem, type TargetRules } from '../../rest-adapter/http/webhook-address.ts';
import { noAnswer } from '../../rest-adapter/http/webhook-delivery.ts';
import { ok, receiver, until, worker, world, type Json } from '../helpers/webhooks.ts';

const RULES: TargetRules = { allowPrivate: false };

/** A non-loopback IPv4 address of this machine (the review's was 192.0.2.2). */
function ownAddress(): string {
  const own = Object.values(os.networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal);
  if (!own) throw new Error('this machine has no non-loopback IPv4 address to test with');
  return own.address;
}

// Several addresses of each range: its first, one inside, its last where it is small.
const REFUSED: Array<[string, RegExp]> = [
  ['0.0.0.0', /this network/],
  ['0.1.2.3', /this network/],
  ['10.0.0.1', /private/],
  ['10.255.255.254', /private/],
  ['100.64.0.1', /carrier-grade NAT/],
  ['100.127.255.254', /carrier-grade NAT/],
  ['127.0.0.1', /loopback|own/],
  ['127.8.9.10', /loopback/],
  ['169.254.169.254', /link-local/],
  ['169.254.0.1', /link-local/],
  ['172.16.0.1', /private/],
  ['172.31.255.254', /private/],
  ['192.0.0.8', /IETF/],
  ['192.0.0.170', /IETF/],
  ['192.0.2.1', /TEST-NET-1/],
  ['192.0.2.254', /TEST-NET-1/],
  ['192.31.196.1', /AS112/],
  ['192.52.193.1', /AMT/],
  ['192.88.99.1', /6to4 relay/],
  ['192.168.0.1', /private/],
  ['192.168.255.254', /private/],
  ['192.175.48.6', /AS112/],
  ['198.18.0.1', /benchmarking/],
  ['198.19.255.254', /benchmarking/],
  ['198.51.100.1', /TEST-NET-2/],
  ['198.51.100.254', /TEST-NET-2/],
  ['203.0.113.1', /TEST-NET-3/],
  ['203.0.113.254', /TEST-NET-3/],
  ['224.0.0.1', /multicast/],
  ['239.255.255.250', /multicast/],
  ['240.0.0.1', /reserved/],
  ['255.255.255.255', /reserved or broadcast/],
  ['::', /unspecified/],
  ['::1', /loopback|own/],
  ['::ffff:127.0.0.1', /IPv4-mapped/],
  ['::ffff:7f00:1', /IPv4-mapped/],
  ['::ffff:8.8.8.8', /IPv4-mapped/], // even a public one: use the IPv4 address
  ['::127.0.0.1', /IPv4-compatible/],
  ['::a00:1', /IPv4-compatible/],
  ['64:ff9b::a00:1', /NAT64/],
  ['64:ff9b::808:808', /NAT64/],
  ['64:ff9b:1::1', /NAT64/],
  ['100::1', /discard/],
  ['fc00::1', /unique local/],
  ['fd12:3456::1', /unique local/],
  ['fe80::1', /link-local/],
  ['febf:ffff::1', /link-local/],
  ['fec0::1', /site-local/],
  ['ff02::1', /multicast/],
  ['ff0e::1', /multicast/],
  ['2001::1', /Teredo/], // Teredo
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
  ['2001:2::1', /benchmarking/],
  ['2001:10::1', /ORCHID/],
  ['2001:20::1', /ORCHID/],
  ['2001:db8::1', /documentation/],
  ['2001:db8:ffff::1', /documentation/],
  ['2002:7f00:1::1', /6to4/], // 6to4 of 127.0.0.1
  ['2002:c000:204::1', /6to4/],
  ['2620:4f:8000::1', /AS112/],
  ['3fff::1', /documentation/],
  ['5f00::1', /global unicast/], // segment routing
  ['4000::1', /global unicast/],
  ['1::1', /global unicast/],
];

test('every special-purpose range is refused (several addresses each); routable addresses pass', (t) => {
  for (const [address, why] of REFUSED) {
    t.regex(addressProblem(address, RULES) ?? 'allowed', why, address);
  }
  for (const address of [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '2606:4700:4700::1111',
    '2a00:1450:4001::1',
  ]) {
    t.is(addressProblem(address, { ...RULES, localAddresses: () => [] }), undefined, address);
  }
  t.truthy(addressProblem('fe80::1%eth0', RULES), 'a zone id is no way around');
  t.truthy(addressProblem('not-an-address', RULES));
});

test("this machine's own addresses are refused, even inside WEBHOOK_ALLOW_NETWORKS", (t) => {
  const interfaces = Object.values(os.networkInterfaces()).flat();
  t.true(interfaces.length >= 2, 'the machine has addresses to test');
  for (const entry of interfaces) {
    t.truthy(addressProblem(entry!.address.replace(/%.*$/, ''), RULES), entry!.address);
  }
  // An address that is otherwise routable is refused when it is this machine's.
  const pretend = { ...RULES, localAddresses: () => ['8.8.4.4', '2606:4700::6810:1'] };
  t.regex(addressProblem('8.8.4.4', pretend)!, /own addresses/);
  t.regex(addressProblem('2606:4700::6810:1', pretend)!, /own addresses/);
  t.is(addressProblem('8.8.8.8', pretend), undefined);

  // The operator's private networks: allowed there, but never loopback, link-local or this host.
  const inside = {
    ...RULES,
    allowNetworks: ['10.1.0.0/16', '0.0.0.0/0'],
    localAddresses: () => ['10.1.2.3'],
  };
  t.is(addressProblem('10.1.9.9', inside), undefined);
  t.regex(addressProblem('10.1.2.3', inside)!, /own addresses/);
  t.regex(addressProblem('127.0.0.1', inside)!, /loopback/);
  t.regex(addressProblem('169.254.169.254', inside)!, /link-local/);
  t.regex(addressProblem('255.255.255.255', inside)!, /broadcast/);
});

test('registration refuses every such address in a URL, the machine\u2019s own among them', async (t) => {
  const w = await world(t, { webhookAllowPrivate: false });
  const own = ownAddress();
  const urls = [
    `http://${own}:8080/hook`, // the review's reproduction
    'http://198.51.100.7/x',
    'http://203.0.113.9/x',
    'http://192.0.2.10/x',
    'http://100.64.12.1/x',
    'http://198.18.4.4/x',
    'http://240.1.2.3/x',
    'http://255.255.255.255/x',
    'http://224.0.0.251/x',
    'http://192.0.0.9/x',
    'http://[2001:db8::5]/x',
    'http://[::ffff:10.0.0.1]/x',
    'http://[64:ff9b::a9fe:a9fe]/x', // NAT64 of 169.254.169.254
    'http://[2002:a9fe:a9fe::1]/x', // 6to4 of the same
    'http://[2001::a9fe:a9fe]/x', // Teredo
    'http://[fd00::2]/x',
    'http://[fe80::1]/x',
    'http://0251.0376.0251.0376/x', // 169.254.169.254 in octal
    'http://printer.local/x',
    'http://router.home.arpa/x',
    'http://metadata.google.internal/x',
  ];
  for (const url of urls) {
    const res = await w.a.admin.post('/webhooks', { url });
    t.is(res.status, 422, url);
    t.is(res.json.errors?.[0]?.pointer, '/url', url);
  }
  t.regex(
    (await w.a.admin.post('/webhooks', { url: `http://${own}/x` })).json.errors[0].detail,
    /globally routable/,
  );
  // Routable addresses and names are taken (a name is checked where it resolves: at delivery).
  for (const url of [
    'https://93.184.216.34/x',
    'https://[2606:4700:4700::1111]/x',
    'https://hooks.example.com/x',
  ]) {
    ok(await w.a.admin.post('/webhooks', { url }), 201);
  }
});

test('at delivery: names resolving inward, the machine itself, and a rebinding answer reach nothing', async (t) => {
  const own = ownAddress();
  // The attacker's listener on every interface, as in the review.
  const hits: string[] = [];
  const listener = await receiver(t, () => 200, { host: '0.0.0.0' });
  listener.server.prependListener('request', (req) => hits.push(String(req.socket.localAddress)));
  const port = listener.port;

  // The attacker's DNS: what each name resolves to, and how often it was asked.
  const asked: Record<string, number> = {};
  const answers: Record<string, string[] | ((n: number) => string[])> = {
    'own.example': [own],
    'loop.example': ['127.0.0.1'],
    'mapped.example': ['::ffff:127.0.0.1'],
    'mixed.example': ['93.184.216.34', own], // one good address does not carry a bad one
    'metadata.example': ['169.254.169.254'],
    // Rebinding: the first answer is allowed (below), every later one points at loopback.
    'rebind.example': (n) => (n === 1 ? [own] : ['127.0.0.1']),
  };
  const lookup = (hostname: string) => {
    asked[hostname] = (asked[hostname] ?? 0) + 1;
    const answer = answers[hostname];
    if (!answer)
      return Promise.reject(Object.assign(new Error('no such name'), { code: 'ENOTFOUND' }));
    const list = typeof answer === 'function' ? answer(asked[hostname]) : answer;
    return Promise.resolve(list.map((address) => ({ address, family: net.isIP(address) })));
  };
  const w = await world(t, { webhookAllowPrivate: false, webhookTargets: { lookup } });
  for (const name of Object.keys(answers).filter((n) => n !== 'rebind.example')) {
    ok(await w.a.admin.post('/webhooks', { url: `http://${name}:${port}/hook` }), 201);
  }
  // And `localhost` itself, as a DBA might have written it (refused by its name, unresolved).
  await w.owner.query(
    `insert into weld_hidden.webhooks (tenant_id, url, secret)
     select id, $1, 'whsec_' || rpad('', 43, 'A') || '=' from weld_public.tenants where slug = 'alpha'`,
    [`http://localhost:${port}/hook`],
  );
  worker(t, w.server, { allowPrivate: false, lookup, timeoutMs: 1000 });
  const weld = ok(
    await w.a.engineer.post('/welds', { isoId: w.iso, weldNumber: 'W-1', type: 'BW', size: 4 }),
    201,
  );
  t.truthy(weld.id);
  await until(async () => {
    const { rows } = await w.owner.query<{ n: number }>(
      'select count(distinct webhook_id)::int as n from weld_hidden.webhook_deliveries',
    );
    return rows[0]!.n >= 6;
  }, 'an attempt at each endpoint');
  const { rows } = await w.owner.query<{ status: number | null; error: string }>(
    'select status, error from weld_hidden.webhook_deliveries',
  );
  t.true(rows.every((r) => r.status === null && r.error === noAnswer(1000)));
  t.deepEqual(hits, [], 'the listener on 0.0.0.0 was never reached');

  // Pinning. Inside an allowed network, and pretending this machine has no addresses of its own,
  // the first answer of rebind.example is allowed: the connection goes to that very address,
  // though the name answers loopback if asked again. The next attempt asks again and is refused.
  const pinned = await world(t, {
    webhookAllowPrivate: false,
    webhookTargets: { lookup, allowNetworks: [`${own}/32`], localAddresses: () => [] },
  });
  const hook = ok(
    await pinned.a.admin.post('/webhooks', { url: `http://rebind.example:${port}/hook` }),
    201,
  );
  const first = ok(await pinned.a.admin.post(`/webhooks/${hook.id}/test`));
  t.is(first.status, 200);
  t.deepEqual(hits, [own], 'connected to the address checked, not to a second answer');
  t.is(asked['rebind.example'], 1, 'one lookup for the attempt');
  const second = ok(await pinned.a.admin.post(`/webhooks/${hook.id}/test`));
  t.like(second, { status: null, error: noAnswer(2000) });
  t.deepEqual(hits, [own], 'the loopback answer was refused');

  // The same address, allowed as a network, is still refused as this machine's own.
  const ownRule = await world(t, {
    webhookAllowPrivate: false,
    webhookTargets: { lookup, allowNetworks: [`${own}/32`] },
  });
  const ownHook = ok(
    await ownRule.a.admin.post('/webhooks', { url: `http://own.example:${port}/hook` }),
    201,
  );
  t.like(ok(await ownRule.a.admin.post(`/webhooks/${ownHook.id}/test`)), { status: null });
  t.deepEqual(hits, [own]);
});

test("the test answer and the delivery log never carry the receiver's body; redirects are not followed", async (t) => {
  const w = await world(t);
  const marker = 'INTERNAL-ONLY-7f3a9c: {"db_password":"hunter2"}';
  let status = 200;
  const r = await receiver(t, () => status, { body: marker });
  const hook = ok(await w.a.admin.post('/webhooks', { url: r.url }), 201);
  worker(t, w.server);
  for (const answer of [200, 500, 302]) {
    status = answer;
    const ping = await w.a.admin.post(`/webhooks/${hook.id}/test`);
    t.is(ok(ping).status, answer);
    t.false(ping.text.includes('INTERNAL-ONLY'), `the test answer (${answer})`);
    t.false('response' in ping.json);
  }
  status = 204;
  ok(await w.a.engineer.patch(`/isos/${w.iso}`, { area: 'event' }));
  await until(() => r.got.length >= 4, 'a delivery');
  await until(
    async () => ok(await w.a.admin.get(`/webhooks/${hook.id}/deliveries`)).items.length >= 4,
    'the attempt recorded',
  );
  // A redirect is an answer like any other: its status, and the Location is not followed.
  const target = await receiver(t);
  const redirecting = http.createServer((_req, res) =>
    res.writeHead(307, { location: target.url }).end(marker),
  );
  await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => redirecting.close(() => resolve())));
  const port = (redirecting.address() as net.AddressInfo).port;
  const hop = ok(await w.a.admin.post('/webhooks', { url: `http://127.0.0.1:${port}/x` }), 201);
  const hopped = await w.a.admin.post(`/webhooks/${hop.id}/test`);
  t.is(ok(hopped).status, 307);
  t.false(hopped.text.includes('INTERNAL-ONLY'));
  t.is(target.got.length, 0, 'the redirect was not followed');

  const list = await w.a.admin.get(`/webhooks/${hook.id}/deliveries`);
  t.false(list.text.includes('INTERNAL-ONLY'));
  const { rows } = await w.owner.query<{ row: string }>(
    'select row_to_json(d)::text as row from weld_hidden.webhook_deliveries d',
  );
  t.is(rows.length, 5, 'four attempts at the endpoint, one at the redirecting one');
  t.false(
    rows.some((row) => row.row.includes('INTERNAL-ONLY')),
    'nor does the table',
  );
});

test('closed, silent, resetting and non-HTTP ports are one outcome after one fixed timeout', async (t) => {
  const timeoutMs = 1500;
  const w = await world(t, { webhookTimeoutMs: timeoutMs });
  const listen = async (onConnection: (socket: net.Socket) => void) => {
    const server = net.createServer(onConnection);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const sockets = new Set<net.Socket>();
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    t.teardown(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return (server.address() as net.AddressInfo).port;
  };
  // A port nothing listens on: taken, then given back.
  const closedPort = await new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
  const silent = await listen(() => {}); // accepts, never answers
  const reset = await listen((socket) => socket.resetAndDestroy());
  const ssh = await listen((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n'));
  const targets = { closed: closedPort, silent, reset, ssh };

  // Two tenants, two each: a tenant may have two test messages in flight.
  const outcomes = await Promise.all(
    Object.entries(targets).map(async ([name, port], n) => {
      const admin = n % 2 ? w.b.admin : w.a.admin;
      const hook = ok(await admin.post('/webhooks', { url: `http://127.0.0.1:${port}/x` }), 201);
      const started = Date.now();
      const res = ok(await admin.post(`/webhooks/${hook.id}/test`));
      return { name, elapsed: Date.now() - started, answer: res };
    }),
  );
  const shape = (a: Json) => ({ status: a.status, error: a.error, durationMs: a.durationMs });
  for (const outcome of outcomes) {
    t.deepEqual(
      shape(outcome.answer),
      { status: null, error: noAnswer(timeoutMs), durationMs: timeoutMs },
      outcome.name,
    );
    // A lower bound only: a closed port answers no sooner than a silent one. (An upper bound
    // would measure the machine's load, not the service.)
    t.true(outcome.elapsed >= timeoutMs, `${outcome.name} answered after ${outcome.elapsed} ms`);
  }
});

test('WEBHOOK_ALLOW_PRIVATE: exactly true or false, and never with a database URL', (t) => {
  t.false(loadConfig({}).webhooks.allowPrivate);
  t.true(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhooks.allowPrivate, 'embedded: allowed');
  for (const slip of ['1', 'yes', 'on', 'TRUE', 'y']) {
    t.throws(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE: slip }), {
      instanceOf: ConfigError,
      message: /^Invalid configuration: WEBHOOK_ALLOW_PRIVATE: must be true or false$/,
    });
  }
  for (const database of [
    { DATABASE_URL: 'postgres://u:p@h/db' },
    {
      DATABASE_OWNER_URL: 'postgres://o:p@h/db',
      DATABASE_AUTHENTICATOR_URL: 'postgres://a:p@h/db',
    },
  ]) {
    t.throws(() => loadConfig({ ...database, WEBHOOK_ALLOW_PRIVATE: 'true' }), {
      instanceOf: ConfigError,
      message: /WEBHOOK_ALLOW_PRIVATE: true is only for the embedded quick start/,
    });
    t.false(loadConfig({ ...database, WEBHOOK_ALLOW_PRIVATE: 'false' }).webhooks.allowPrivate);
  }
  t.deepEqual(
    loadConfig({ WEBHOOK_ALLOW_NETWORKS: '10.1.2.0/24, fd12:3456::/48' }).webhooks.allowNetworks,
    ['10.1.2.0/24', 'fd12:3456::/48'],
  );
  for (const bad of ['10.1.2.0', '10.1.2.0/33', 'example.com/24', '10.0.0.0/8/1']) {
    t.throws(() => loadConfig({ WEBHOOK_ALLOW_NETWORKS: bad }), {
      instanceOf: ConfigError,
      message: /^Invalid configuration: WEBHOOK_ALLOW_NETWORKS: /,
    });
  }
});
