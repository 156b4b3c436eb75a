// Faults, against the real entry point (server/main.ts as a child process): the embedded
// PostgreSQL killed mid-run and brought back by the server; a database that stalls behind a lock
// while 200 requests press on a pool of 5; slow and idle clients. The promise: every request is
// answered within a bound, errors are the documented 503s with Retry-After, /health/live keeps
// answering fast, nothing acknowledged is lost and nothing refused is written.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import test from 'ava';
import { connectClient, createPool, withContext } from '../../db/database.ts';
import { runningEmbeddedCluster } from '../../db/embedded.ts';
import { exportWelds } from '../../db/weld-register.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient, tenantFixture } from '../helpers/fixtures.ts';
import { request, type HttpRequest, type HttpResponse } from '../helpers/http.ts';
import { runCli, runServerToExit, spawnServer } from '../helpers/server.ts';

/** A request that must be answered within `ms`, or the test fails (a hanging request is a bug). */
async function answered(port: number, req: HttpRequest, ms: number): Promise<HttpResponse> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${req.path}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([
      request(port, req).catch((error: Error) => {
        throw new Error(`${req.method ?? 'GET'} ${req.path}: ${error.message}`);
      }),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A 503 as documented: problem+json of one of the given types, with Retry-After. */
function assertDocumented503(
  t: import('ava').ExecutionContext,
  res: HttpResponse,
  types: string[],
) {
  t.is(res.status, 503);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/);
  t.true(types.includes(res.json?.type), `type ${res.json?.type}`);
  if (res.json?.type !== '/problems/timeout') {
    t.true(Number(res.headers['retry-after']) >= 1, 'Retry-After');
  }
}

/** Welds of one tenant to move through PENDING -> REJECTED -> REPAIR -> PENDING (engineer). */
const NEXT: Record<string, string> = { PENDING: 'REJECTED', REJECTED: 'REPAIR', REPAIR: 'PENDING' };

test('embedded PostgreSQL killed (-9) mid-run: 503s with Retry-After, the server restarts it, no acknowledged change lost, no refused one written', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-outage-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const server = await spawnServer(t, { DATA_DIR: dataDir, DB_POOL_WAIT_MS: '1000' });
  t.teardown(() => {
    if (!t.passed) fs.writeFileSync('/tmp/f10/outage.log', server.output());
  });
  const host = `localhost:${server.port}`;
  const ownerUrl = (await runCli(['db', 'url'], { DATA_DIR: dataDir })).stdout.trim();

  // Users and eight welds in the demo tenant, written as the owner.
  let owner = await connectClient(ownerUrl);
  await addRoleUsers(owner, 'demo');
  const { rows } = await owner.query<{ id: string }>(`
    with tenant as (select id from weld_public.tenants where slug = 'demo'),
         iso as (insert into weld_public.isos (tenant_id, iso_number, line_number)
                 select id, 'ISO-OUTAGE', 'LINE-OUTAGE' from tenant returning tenant_id, id)
    insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
    select iso.tenant_id, iso.id, 'W-' || n, 'BW', 4 from iso, generate_series(1, 8) n
    returning id`);
  await owner.end();
  const weldIds = rows.map((r) => r.id);
  const token = (await login(server.port, host, 'engineer')).json.accessToken as string;
  const auth = { authorization: `Bearer ${token}` };

  const acknowledged = new Set<string>();
  const refused = new Set<string>();
  const unexpected: string[] = [];
  let sent = 0;
  let stop = false;
  let killedAt = 0;
  let acknowledgedAfterKill = 0;
  // Each request is answered within the pool wait plus a margin, outage or not.
  const bound = 5_000;

  // Four writers, two welds each: read the weld, move it on with If-Match and a reason that
  // names the attempt, so the history can be matched to the answers exactly.
  const writer = async (welds: string[]) => {
    for (let i = 0; !stop; i++) {
      const id = welds[i % welds.length]!;
      const read = await answered(
        server.port,
        { path: `/welds/${id}`, host, headers: auth },
        bound,
      );
      if (read.status !== 200) {
        if (read.status === 503) assertDocumented503(t, read, ['/problems/database-unavailable']);
        else unexpected.push(`GET ${read.status} ${read.text}`);
        await sleep(50);
        continue;
      }
      const reason = `attempt-${++sent}`;
      const change = await answered(
        server.port,
        {
          method: 'PATCH',
          path: `/welds/${id}/status`,
          host,
          headers: { ...auth, 'if-match': String(read.headers.etag) },
          body: { status: NEXT[read.json.status as string], reason },
        },
        bound,
      );
      if (change.status === 200) {
        acknowledged.add(reason);
        if (killedAt) acknowledgedAfterKill++;
      } else if (change.status === 503) {
        assertDocumented503(t, change, ['/problems/database-unavailable']);
        refused.add(reason);
        await sleep(50);
      } else unexpected.push(`PATCH ${change.status} ${change.text}`);
    }
  };
  // Readiness, probed as a load balancer would.
  const readiness: number[] = [];
  const prober = async () => {
    while (!stop) {
      const res = await answered(server.port, { path: '/health/ready' }, bound);
      if (res.status === 503) assertDocumented503(t, res, ['/problems/database-unavailable']);
      readiness.push(res.status);
      await sleep(100);
    }
  };
  const running = [0, 1, 2, 3].map((w) => writer(weldIds.slice(w * 2, w * 2 + 2)));
  running.push(prober());

  while (acknowledged.size < 20) await sleep(20);
  const postmaster = runningEmbeddedCluster(dataDir)!;
  process.kill(postmaster.pid, 'SIGKILL');
  killedAt = Date.now();
  // Run on until the service has come back and acknowledged 20 more changes (bounded).
  const deadline = Date.now() + 60_000;
  while (acknowledgedAfterKill < 20 && Date.now() < deadline) await sleep(50);
  stop = true;
  await Promise.all(running);

  t.deepEqual(unexpected, [], 'only 200 and the documented 503');
  t.true(acknowledgedAfterKill >= 20, 'the service came back by itself');
  t.true(refused.size > 0, 'the outage was seen as 503s');
  const firstDown = readiness.indexOf(503);
  t.true(firstDown >= 0, '/health/ready said 503 during the outage');
  t.is(readiness.at(-1), 200, '/health/ready is 200 again');
  const restarted = runningEmbeddedCluster(dataDir);
  t.truthy(restarted);
  t.not(restarted!.pid, postmaster.pid);
  t.regex(server.output(), /embedded PostgreSQL stopped unexpectedly \(exit SIGKILL\)/);
  t.regex(server.output(), /embedded PostgreSQL restarted/);

  // The history holds exactly the acknowledged changes.
  owner = await connectClient(ownerUrl);
  t.teardown(() => owner.end());
  const history = await owner.query<{ reason: string }>(
    `select reason from weld_public.weld_status_history where reason like 'attempt-%'`,
  );
  const written = new Set(history.rows.map((r) => r.reason));
  t.deepEqual(
    [...acknowledged].filter((r) => !written.has(r)),
    [],
    'every acknowledged change is in the history',
  );
  t.deepEqual(
    [...written].filter((r) => !acknowledged.has(r)),
    [],
    'no refused change is in the history',
  );
  t.is(written.size, acknowledged.size);

  // The process is the same one throughout, and stops cleanly.
  t.is(await server.stop('SIGTERM'), 0);
});

/**
 * A TCP proxy in front of PostgreSQL that can fall silent, as a network partition does: bytes stop
 * flowing both ways, the sockets stay open, new connections are accepted and never answered.
 * Healing resets every connection it carried (as a firewall that forgot them would).
 */
async function partitionableProxy(to: URL) {
  const sockets = new Set<net.Socket>();
  let silent = false;
  const proxy = net.createServer((client) => {
    sockets.add(client);
    client.on('error', () => {});
    if (silent) return;
    const upstream = net.connect(Number(to.port), to.hostname);
    sockets.add(upstream);
    upstream.on('error', () => {});
    client.on('data', (data) => void (silent || upstream.write(data)));
    upstream.on('data', (data) => void (silent || client.write(data)));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as net.AddressInfo).port;
  return {
    /** The URL, through the proxy. */
    via: (url: string) => {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.href;
    },
    silence: () => (silent = true),
    heal: () => {
      silent = false;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      proxy.close();
    },
  };
}

test('database unreachable (a partition: no answer, no reset): requests get 503 within the bounds, not a hang, and the service recovers when the network heals', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await tenantFixture(owner, 'alpha');
  await addRoleUsers(owner, 'alpha');
  const proxy = await partitionableProxy(new URL(target.authenticatorUrl));
  t.teardown(() => proxy.close());
  const server = await spawnServer(t, {
    DATABASE_OWNER_URL: target.ownerUrl,
    DATABASE_AUTHENTICATOR_URL: proxy.via(target.authenticatorUrl),
    DB_POOL_WAIT_MS: '1000',
    DB_STATEMENT_TIMEOUT_MS: '1000',
  });
  const host = 'alpha.test';
  const token = (await login(server.port, host, 'engineer')).json.accessToken as string;
  const auth = { authorization: `Bearer ${token}` };
  for (let i = 0; i < 3; i++) {
    t.is((await request(server.port, { path: '/welds', host, headers: auth })).status, 200);
  }

  proxy.silence();
  // A statement's answer is awaited for its timeout and 5 s more; a connection's for the wait.
  const bound = 1000 + 5000 + 1500;
  const started = performance.now();
  const answers = await Promise.all([
    ...Array.from({ length: 8 }, () =>
      answered(server.port, { path: '/welds', host, headers: auth }, bound + 1000),
    ),
    answered(server.port, { path: '/health/ready' }, bound + 1000),
  ]);
  const took = performance.now() - started;
  for (const res of answers) {
    assertDocumented503(t, res, ['/problems/database-unavailable', '/problems/busy']);
  }
  t.true(took < bound, `all answered within ${took.toFixed(0)} ms`);

  proxy.heal();
  const back = Date.now();
  let status = 0;
  while (Date.now() - back < 15_000 && status !== 200) {
    status = (await answered(server.port, { path: '/welds', host, headers: auth }, bound)).status;
    if (status !== 200) await sleep(200);
  }
  t.is(status, 200, 'served again once the network healed');
  t.is((await request(server.port, { path: '/health/ready' })).status, 200);
  t.is(server.child.exitCode, null, 'the process never stopped');
});

/** The tenant, its engineer's token and the owner, on a database of the test's own. */
async function overloadWorld(t: import('ava').ExecutionContext, env: Record<string, string>) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const fixture = await tenantFixture(owner, 'alpha');
  await addRoleUsers(owner, 'alpha');
  for (let i = 0; i < 5; i++) await fixture.weld();
  const server = await spawnServer(t, {
    DATABASE_OWNER_URL: target.ownerUrl,
    DATABASE_AUTHENTICATOR_URL: target.authenticatorUrl,
    ...env,
  });
  const host = 'alpha.test';
  const token = (await login(server.port, host, 'engineer')).json.accessToken as string;
  return { owner, server, host, auth: { authorization: `Bearer ${token}` } };
}

/**
 * How fast /health/live must answer while the instance is under pressure, here. Speed is measured
 * in benchmarks, not timed tests: alone on the machine it answers in 50 to 65 ms at worst during
 * the storm (bench/RESULTS.md, "Faults"); beside the rest of the suite on two cores it can take
 * a few hundred. What this bound tells apart is the failure it guards against: a probe queued
 * behind the saturated pool waits DB_POOL_WAIT_MS and then fails with 503.
 */
const LIVE_BOUND_MS = 1000;

/** /health/live, `count` times in a row: the slowest answer in ms (each must be 200). */
async function slowestLiveProbe(
  t: import('ava').ExecutionContext,
  port: number,
  host: string,
  count: number,
): Promise<number> {
  let slowest = 0;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await answered(port, { path: '/health/live', host }, 5_000);
    slowest = Math.max(slowest, performance.now() - started);
    t.is(res.status, 200);
    await sleep(25);
  }
  return slowest;
}

test('overload: 200 requests stalled behind a lock on a pool of 5 are each answered in bounded time (200 or 503 with Retry-After); /health/live keeps answering at once', async (t) => {
  const { owner, server, host, auth } = await overloadWorld(t, {
    DB_POOL_MAX: '5',
    DB_POOL_WAIT_MS: '300',
    DB_STATEMENT_TIMEOUT_MS: '2000',
  });
  t.is((await request(server.port, { path: '/welds', host, headers: auth })).status, 200);
  await slowestLiveProbe(t, server.port, host, 3); // warm: connections made, tenant known

  // A round: a DBA's long transaction holds the welds table, so every read of it waits, while
  // 200 such reads arrive at once. Up to three rounds, for the probe's sake only: a round whose
  // probes met another test file's burst of CPU on this machine is measured again. Every round's
  // answers must hold.
  const rounds: number[] = [];
  while (rounds.length < 3 && !rounds.some((ms) => ms < LIVE_BOUND_MS)) {
    await owner.query('begin');
    await owner.query('lock table weld_public.welds in access exclusive mode');
    // The 200 come from a worker thread, so this thread's event loop measures the server alone.
    const storm = storm200(server.port, host, auth.authorization);
    await sleep(200);
    const slowest = await slowestLiveProbe(t, server.port, host, 20).finally(() => storm);
    const answers = await storm.finally(() => owner.query('rollback'));
    rounds.push(slowest);

    const byType = new Map<string, number>();
    for (const answer of answers) {
      if (answer.status !== 200) {
        t.is(answer.status, 503);
        t.is(answer.contentType, 'application/problem+json');
        // (database-unavailable: one of the connections the pool opens during the storm (it held
        // one before) did not finish its handshake within the 300 ms wait; seen once in CI, with
        // the suite loading both cores.)
        t.true(
          ['/problems/busy', '/problems/timeout', '/problems/database-unavailable'].includes(
            answer.type!,
          ),
          answer.type,
        );
        if (answer.type === '/problems/busy') t.is(answer.retryAfter, '1');
        if (answer.type === '/problems/database-unavailable') t.is(answer.retryAfter, '5');
      }
      const key = answer.status === 200 ? '200' : answer.type!;
      byType.set(key, (byType.get(key) ?? 0) + 1);
    }
    // Five got a connection and were cancelled by the statement timeout; the rest waited 300 ms
    // for one and were told the service is busy.
    t.true((byType.get('/problems/busy') ?? 0) >= 150, JSON.stringify([...byType]));
    t.true((byType.get('/problems/timeout') ?? 0) >= 1, JSON.stringify([...byType]));
    t.true(Math.max(...answers.map((a) => a.ms)) < 4_000, 'every answer within the bounds');
  }
  t.true(
    rounds.some((ms) => ms < LIVE_BOUND_MS),
    `/health/live at worst during each storm: ${rounds.map((ms) => ms.toFixed(1)).join(', ')} ms`,
  );
  // And the instance serves normally again.
  t.is((await request(server.port, { path: '/welds', host, headers: auth })).status, 200);
  t.regex(server.output(), /"problem":"\/problems\/busy"/, 'an operator sees why');
});

interface StormAnswer {
  status: number;
  type?: string;
  contentType?: string;
  retryAfter?: string;
  ms: number;
}

/**
 * 200 concurrent GET /welds?limit=1 from a worker thread (its own event loop), each given up after
 * 5 s; resolves with what each got and how long it took.
 */
function storm200(port: number, host: string, authorization: string): Promise<StormAnswer[]> {
  const source = `
    const http = require('node:http');
    const { parentPort, workerData: { port, host, authorization } } = require('node:worker_threads');
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const one = () => new Promise((resolve) => {
      const started = performance.now();
      const req = http.get({ host: '127.0.0.1', port, path: '/welds?limit=1', agent, timeout: 5000,
        headers: { host, authorization } }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          let type;
          try { type = JSON.parse(body).type; } catch {}
          resolve({ status: res.statusCode, type, ms: performance.now() - started,
            contentType: String(res.headers['content-type']).split(';')[0],
            retryAfter: res.headers['retry-after'] });
        });
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
      req.on('error', (error) => resolve({ status: 0, type: error.message, ms: performance.now() - started }));
    });
    Promise.all(Array.from({ length: 200 }, one)).then((answers) => parentPort.postMessage(answers));`;
  const worker = new Worker(source, { eval: true, workerData: { port, host, authorization } });
  return new Promise((resolve, reject) => {
    worker.once('message', (answers: StormAnswer[]) => {
      void worker.terminate();
      resolve(answers);
    });
    worker.once('error', reject);
  });
}

/** A client that sends `prefix`, then one byte every `everyMs`; resolves when the server closes. */
function dribble(port: number, prefix: string, everyMs: number) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString()));
  socket.on('error', () => {});
  socket.write(prefix);
  const timer = setInterval(() => socket.write('x'), everyMs);
  const closed = new Promise<{ received: string }>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      resolve({ received });
    }),
  );
  return { socket, closed };
}

test('slow and idle clients cannot pin sockets: slowloris headers, a dribbled body and an idle keep-alive are cut off while /health/live keeps answering at once', async (t) => {
  const { server, host } = await overloadWorld(t, {
    HTTP_HEADERS_TIMEOUT_MS: '2000',
    HTTP_REQUEST_TIMEOUT_MS: '3000',
    HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
  });
  await slowestLiveProbe(t, server.port, host, 3);
  const started = performance.now();
  // 100 clients that never finish their headers, and 20 that never finish their body.
  const slowHeaders = Array.from({ length: 100 }, () =>
    dribble(server.port, `GET /health/live HTTP/1.1\r\nHost: ${host}\r\nX-Slow: `, 200),
  );
  const slowBodies = Array.from({ length: 20 }, () =>
    dribble(
      server.port,
      `POST /auth/login HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 100000\r\n\r\n{"userName":"',
      200,
    ),
  );
  t.teardown(() => [...slowHeaders, ...slowBodies].forEach((c) => c.socket.destroy()));
  const slowest = await slowestLiveProbe(t, server.port, host, 40);
  t.true(slowest < LIVE_BOUND_MS, `/health/live took ${slowest.toFixed(1)} ms at worst`);

  const headerEnds = await Promise.all(slowHeaders.map((c) => c.closed));
  const headersClosedAfter = performance.now() - started;
  for (const { received } of headerEnds) t.regex(received, /^HTTP\/1\.1 408 /);
  // headersTimeout, found by node's check once a second: gone within the timeout and 1.5 s.
  t.true(headersClosedAfter < 3_500, `slow headers cut after ${headersClosedAfter.toFixed(0)} ms`);
  await Promise.all(slowBodies.map((c) => c.closed));
  const bodiesClosedAfter = performance.now() - started;
  t.true(bodiesClosedAfter < 4_500, `slow bodies cut after ${bodiesClosedAfter.toFixed(0)} ms`);

  // An idle keep-alive connection is closed by the server after HTTP_KEEP_ALIVE_TIMEOUT_MS.
  const idle = net.connect(server.port, '127.0.0.1');
  idle.on('error', () => {});
  let reply = '';
  idle.on('data', (chunk) => (reply += chunk.toString()));
  idle.write(`GET /health/live HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n\r\n`);
  const idleStarted = performance.now();
  await new Promise((resolve) => idle.once('close', resolve));
  const idleMs = performance.now() - idleStarted;
  t.regex(reply, /^HTTP\/1\.1 200 /);
  t.true(idleMs >= 900 && idleMs < 3_000, `idle connection closed after ${idleMs.toFixed(0)} ms`);
});

test('HTTP_HEADERS_TIMEOUT_MS above HTTP_REQUEST_TIMEOUT_MS is refused with one line', async (t) => {
  const { code, output } = await runServerToExit({
    HTTP_HEADERS_TIMEOUT_MS: '20000',
    HTTP_REQUEST_TIMEOUT_MS: '10000',
  });
  t.is(code, 1);
  t.regex(output, /^Invalid configuration: HTTP_HEADERS_TIMEOUT_MS: must not exceed/m);
});

test("an export disarms pg's client-side answer timeout, which a COPY TO stream never does itself", async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const fixture = await tenantFixture(owner, 'alpha');
  for (let i = 0; i < 3; i++) await fixture.weld();
  const pool = createPool(target.authenticatorUrl, { max: 1 });
  t.teardown(() => pool.end());
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const context = { role: 'weld_engineer' as const, tenantId: fixture.tenantId };
  let csv = '';
  const out = new Writable({
    write(chunk: Buffer, _encoding, done) {
      csv += chunk.toString();
      done();
    },
  });
  await withContext(pool, context, (db) => db.query('select 1')); // the connection, made
  const before = timers();
  const rows = await withContext(pool, context, (db) =>
    exportWelds(db, { sql: '', values: [] }, out),
  );
  t.is(rows, 3);
  t.is(csv.trim().split('\n').length, 4);
  // Armed, it would fire at the finished stream ten minutes later, or keep a process from exiting.
  t.is(timers(), before, 'no timer left armed');
});
