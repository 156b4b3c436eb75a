// Soak: the service as a process under a steady mixed load for N minutes, then its invariants.
//
//   npm run soak -- --minutes 30 [--clients 8] [--isos 200] [--welds-per-iso 20] [--seed 1]
//
// A fresh database (weld_soak in the bench cluster, bench/.data) with one seeded tenant; the
// server (server/main.ts, default settings, LOG_LEVEL=warn) as a child process; `clients`
// sessions, each a loop of weighted random requests: weld lists and reads, ISO lists, the event
// feed, status changes (If-Match, a reason naming the attempt), NDT records (UT, accepted, a report
// number naming the attempt), refreshes (each session rotates its refresh token) and GraphQL
// aggregates. Every 10 s it samples the server's resident memory (/proc), its open file
// descriptors and its database connections (pg_stat_activity).
//
// At the end, each invariant is checked and printed (exit 1 if any fails):
//   - no 5xx, no transport error, no status an operation does not document for its case
//   - the status history holds exactly the acknowledged status changes, and the NDT records
//     exactly the acknowledged ones (each moving its weld once, or not at all when another
//     client's record had accepted that weld first)
//   - resident memory after the warm-up (the first 10 %, at least a minute) stays within 20 %
//     of where the warm-up left it
//   - database connections stay within the pools' sizes, and neither they nor file
//     descriptors grow from the warm-up's peak
//   - the server stops cleanly (exit 0) and logged no error
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { connectClient } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';
import { addUser } from '../db/users.ts';
import { GRAPHQL_DEFAULTS } from '../server/config.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5' },
    clients: { type: 'string', default: '8' },
    isos: { type: 'string', default: '200' },
    'welds-per-iso': { type: 'string', default: '20' },
    seed: { type: 'string', default: '1' },
  },
});
const MINUTES = Number(values.minutes);
const CLIENTS = Number(values.clients);
if (!(MINUTES > 0) || !(CLIENTS >= 1)) {
  console.error('usage: npm run soak -- --minutes N [--clients C]');
  process.exit(2);
}
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const HOST = 'soak.bench';
const DB_POOL_MAX = 20;
const log = (message: string) => console.log(`[soak] ${message}`);

// --- the database and the server -----------------------------------------------------------

fs.mkdirSync(DATA_DIR, { recursive: true });
const cluster = await openEmbeddedCluster({ dataDir: DATA_DIR, port: 0 });
const maintenance = await connectClient(embeddedUrl(cluster, 'postgres'));
await maintenance.query('drop database if exists weld_soak with (force)');
await maintenance.end();
const target = await openMigratedDatabase(
  { kind: 'root', rootUrl: embeddedUrl(cluster, 'weld_soak') },
  { migrate: true },
);
const owner = await connectClient(target.ownerUrl);
const tenantId = (await addTenant(owner, { slug: 'soak', origins: [`http://${HOST}`] })).id;
await owner.query('begin');
await seedTenant(owner, 'soak', {
  isos: Number(values.isos),
  weldsPerIso: Number(values['welds-per-iso']),
  seed: Number(values.seed),
});
await owner.query('commit');
const password = randomBytes(18).toString('base64url'); // this run's only; never printed
for (let n = 0; n < CLIENTS; n++) {
  await addUser(owner, { tenant: 'soak', userName: `soak-${n}`, role: 'engineer', password });
}
const weldIds = (
  await owner.query<{ id: string }>('select id from weld_public.welds where tenant_id = $1', [
    tenantId,
  ])
).rows.map((r) => r.id);
log(`database ready: ${weldIds.length} welds`);

const port = await freePort();
const server = spawn(process.execPath, [path.join(ROOT, 'server/main.ts')], {
  cwd: ROOT,
  env: {
    PATH: process.env.PATH,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    DATABASE_OWNER_URL: target.ownerUrl,
    DATABASE_AUTHENTICATOR_URL: target.authenticatorUrl,
    DB_POOL_MAX: String(DB_POOL_MAX),
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const serverErrors: string[] = [];
let serverWarnings = 0;
const readLog = (chunk: Buffer) => {
  for (const line of chunk.toString().split('\n').filter(Boolean)) {
    const level = Number(/"level":(\d+)/.exec(line)?.[1] ?? 50);
    if (level >= 50) serverErrors.push(line.slice(0, 500));
    else serverWarnings++;
  }
};
server.stdout.on('data', readLog);
server.stderr.on('data', readLog);
const serverExited = new Promise<number | null>((resolve) => server.once('exit', resolve));
// Whatever way this process ends, the server does not outlive it.
process.on('exit', () => server.kill('SIGKILL'));
await waitUntilReady();
log(`server pid ${server.pid} on port ${port}; ${CLIENTS} clients for ${MINUTES} min`);

// --- the workload ---------------------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS * 2 });

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The fields read here (tokens, a weld's id and status) are all strings. */
  json: Record<string, string | undefined>;
}

/** A request, ready to send (timed() sends it). */
function call(
  method: string,
  url: string,
  token: string | undefined,
  body?: unknown,
  extra: Record<string, string> = {},
): () => Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { host: HOST };
  if (token) headers.authorization = `Bearer ${token}`;
  if (payload) headers['content-type'] = 'application/json';
  return () =>
    new Promise<Answer>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, method, path: url, agent, headers: { ...headers, ...extra } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            let json: Answer['json'] = {};
            try {
              json = JSON.parse(text) as Answer['json'];
            } catch {
              // not JSON: nothing to read
            }
            resolve({ status: res.statusCode!, headers: res.headers, json });
          });
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
      req.on('error', reject);
      req.end(payload);
    });
}

/** Per operation: how many, by status, and latencies. */
const stats = new Map<string, { statuses: Map<number, number>; ms: number[] }>();
const unexpected: string[] = [];
let transportErrors = 0;
const acknowledgedChanges = new Set<string>();
const acknowledgedRecords = new Set<string>();
let stopping = false;

async function timed(
  op: string,
  expected: number[],
  send: () => Promise<Answer>,
): Promise<Answer | undefined> {
  const started = performance.now();
  let answer: Answer;
  try {
    answer = await send();
  } catch (error) {
    transportErrors++;
    if (transportErrors <= 5) log(`${op}: ${(error as Error).message}`);
    return undefined;
  }
  const entry = stats.get(op) ?? { statuses: new Map<number, number>(), ms: [] as number[] };
  stats.set(op, entry);
  entry.statuses.set(answer.status, (entry.statuses.get(answer.status) ?? 0) + 1);
  entry.ms.push(performance.now() - started);
  if (!expected.includes(answer.status) && unexpected.length < 20) {
    unexpected.push(`${op} ${answer.status} ${JSON.stringify(answer.json)?.slice(0, 300)}`);
  }
  return answer;
}

/** A deterministic generator (mulberry32), one per client, from --seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const NEXT_STATUS: Record<string, string> = {
  PENDING: 'REJECTED',
  ACCEPTED: 'REJECTED',
  REJECTED: 'REPAIR',
  REPAIR: 'PENDING',
};
const STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'];
const AGGREGATES =
  '{ allWelds { groupedAggregates(groupBy: [STATUS]) { keys distinctCount { rowId } } } }';
const today = new Date().toISOString().slice(0, 10);

async function client(n: number): Promise<void> {
  const next = random(Number(values.seed) * 1000 + n);
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)]!;
  const signIn = await call('POST', '/auth/login', undefined, {
    userName: `soak-${n}`,
    password,
  })();
  if (signIn.status !== 200) throw new Error(`login: ${signIn.status}`);
  let access = signIn.json.accessToken as string;
  let refresh = signIn.json.refreshToken as string;

  for (let i = 0; !stopping; i++) {
    const roll = next();
    if (roll < 0.3) {
      const status = pick(STATUSES);
      await timed('list welds', [200], call('GET', `/welds?limit=50&status=${status}`, access));
    } else if (roll < 0.48) {
      await timed('read weld', [200], call('GET', `/welds/${pick(weldIds)}`, access));
    } else if (roll < 0.53) {
      await timed('list ISOs', [200], call('GET', '/isos?limit=20', access));
    } else if (roll < 0.58) {
      await timed('event feed', [200], call('GET', '/events?limit=100', access));
    } else if (roll < 0.78) {
      const weld = await timed('read weld', [200], call('GET', `/welds/${pick(weldIds)}`, access));
      const to = weld && NEXT_STATUS[weld.json.status as string];
      if (!weld || !to) continue;
      const reason = `soak-${n}-${i}`;
      // 412: another client changed it first; 409: its test package is no longer open
      const changed = await timed(
        'status change',
        [200, 409, 412],
        call(
          'PATCH',
          `/welds/${weld.json.id}/status`,
          access,
          { status: to, reason },
          { 'if-match': String(weld.headers.etag) },
        ),
      );
      if (changed?.status === 200) acknowledgedChanges.add(reason);
    } else if (roll < 0.86) {
      const weld = await timed('read weld', [200], call('GET', `/welds/${pick(weldIds)}`, access));
      if (weld?.json.status !== 'PENDING') continue;
      const reportNumber = `SOAK-${n}-${i}`;
      // 409: the weld moved on meanwhile, or its package is not open
      const recorded = await timed(
        'NDT record',
        [201, 409],
        call('POST', '/ndt-records', access, {
          method: 'UT',
          reportNumber,
          examinedOn: today,
          welds: [{ weldId: weld.json.id, result: 'accepted' }],
        }),
      );
      if (recorded?.status === 201) acknowledgedRecords.add(reportNumber);
    } else if (roll < 0.9) {
      const renewed = await timed(
        'refresh',
        [200],
        call('POST', '/auth/refresh', undefined, { refreshToken: refresh }),
      );
      if (renewed?.status === 200) {
        access = renewed.json.accessToken as string;
        refresh = renewed.json.refreshToken as string;
      }
    } else {
      // 429: the tenant has GRAPHQL_REQUESTS_PER_TENANT reports in flight (all clients are one
      // tenant's): documented, and a client is expected to come back later.
      await timed(
        'GraphQL aggregate',
        [200, 429],
        call('POST', '/graphql', access, { query: AGGREGATES }),
      );
    }
  }
}

// --- sampling --------------------------------------------------------------------------------

interface Sample {
  atSeconds: number;
  rssMb: number;
  fds: number;
  dbConnections: number;
  requests: number;
}
const samples: Sample[] = [];
const startedAt = Date.now();
const requestsSoFar = () =>
  [...stats.values()].reduce((sum, s) => sum + [...s.statuses.values()].reduce((a, b) => a + b), 0);
async function sample(): Promise<void> {
  const status = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  const { rows } = await owner.query<{ count: string }>(
    `select count(*) from pg_stat_activity where datname = current_database() and usename = 'weld_authenticator'`,
  );
  samples.push({
    atSeconds: Math.round((Date.now() - startedAt) / 1000),
    rssMb: Math.round(rssKb / 102.4) / 10,
    fds: fs.readdirSync(`/proc/${server.pid}/fd`).length,
    dbConnections: Number(rows[0]!.count),
    requests: requestsSoFar(),
  });
  const last = samples.at(-1)!;
  log(
    `${last.atSeconds}s: ${last.requests} requests, RSS ${last.rssMb} MB, ` +
      `${last.dbConnections} db connections, ${last.fds} fds`,
  );
}

const clients = Array.from({ length: CLIENTS }, (_, n) => client(n));
await sample();
const endAt = startedAt + MINUTES * 60_000;
while (Date.now() < endAt) {
  await sleep(Math.min(10_000, endAt - Date.now()));
  await sample();
}
stopping = true;
await Promise.all(clients);
await sample();
const seconds = (Date.now() - startedAt) / 1000;

// --- the invariants --------------------------------------------------------------------------

const history = await owner.query<{ reason: string }>(
  `select reason from weld_public.weld_status_history where tenant_id = $1 and reason like 'soak-%'`,
  [tenantId],
);
const records = await owner.query<{ report_number: string; moved: string }>(
  `select r.report_number,
          (select count(*) from weld_public.weld_status_history h where h.ndt_record_id = r.id) as moved
     from weld_public.ndt_records r
    where r.tenant_id = $1 and r.report_number like 'SOAK-%'`,
  [tenantId],
);
const sameSet = (a: Set<string>, b: string[]) => a.size === b.length && b.every((x) => a.has(x));

const warmupSeconds = Math.max(60, seconds * 0.1);
const warm = samples.filter((s) => s.atSeconds <= warmupSeconds);
const after = samples.filter((s) => s.atSeconds > warmupSeconds);
const baselineRss = warm.at(-1)!.rssMb;
const rssAfter = after.map((s) => s.rssMb);
const poolBound = DB_POOL_MAX + GRAPHQL_DEFAULTS.poolMax + 2 /* control */ + 2; /* listeners */
const peak = (list: Sample[], key: 'fds' | 'dbConnections') => Math.max(...list.map((s) => s[key]));
const fiveXx = [...stats.values()].reduce(
  (sum, s) => sum + [...s.statuses].filter(([code]) => code >= 500).reduce((a, [, c]) => a + c, 0),
  0,
);

stopping = true;
server.kill('SIGTERM');
const exitCode = await serverExited;
await owner.end();
await target.release();
await cluster.stop();

const checks: Array<[string, boolean, string]> = [
  ['no 5xx', fiveXx === 0, `${fiveXx}`],
  ['no transport error', transportErrors === 0, `${transportErrors}`],
  ['only documented statuses', unexpected.length === 0, unexpected.slice(0, 3).join(' | ')],
  [
    'history = acknowledged status changes',
    sameSet(
      acknowledgedChanges,
      history.rows.map((r) => r.reason),
    ),
    `${acknowledgedChanges.size} acknowledged, ${history.rowCount} in the history`,
  ],
  [
    'NDT records = acknowledged ones, each moving its weld at most once',
    sameSet(
      acknowledgedRecords,
      records.rows.map((r) => r.report_number),
    ) && records.rows.every((r) => Number(r.moved) <= 1),
    `${acknowledgedRecords.size} acknowledged, ${records.rowCount} stored`,
  ],
  [
    'RSS within 20 % after warm-up',
    after.length === 0 || rssAfter.every((mb) => Math.abs(mb - baselineRss) <= baselineRss * 0.2),
    `warm-up ended at ${baselineRss} MB; after: ${Math.min(...rssAfter)} to ${Math.max(...rssAfter)} MB`,
  ],
  [
    'db connections within the pools, no growth',
    peak(samples, 'dbConnections') <= poolBound &&
      (after.length === 0 ||
        peak(after, 'dbConnections') <= Math.max(peak(warm, 'dbConnections'), poolBound)),
    `peak ${peak(samples, 'dbConnections')} (bound ${poolBound}); at the end ${samples.at(-1)!.dbConnections}`,
  ],
  [
    'file descriptors do not grow',
    after.length === 0 || peak(after, 'fds') <= peak(warm, 'fds') + 10,
    `warm-up peak ${peak(warm, 'fds')}, after ${after.length ? peak(after, 'fds') : '-'}`,
  ],
  ['server stopped cleanly', exitCode === 0, `exit ${exitCode}`],
  ['server logged no error', serverErrors.length === 0, serverErrors.slice(0, 2).join(' | ')],
];

const total = requestsSoFar();
console.log(
  `\n## Soak: ${MINUTES} min, ${CLIENTS} clients, ${weldIds.length} welds\n\n` +
    `${total} requests in ${seconds.toFixed(0)} s (${(total / seconds).toFixed(0)}/s); ` +
    `server warnings logged: ${serverWarnings}\n\n` +
    '| operation | requests | statuses | p50 ms | p99 ms |\n|---|---:|---|---:|---:|',
);
for (const [op, s] of [...stats].sort()) {
  const sorted = [...s.ms].sort((a, b) => a - b);
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  const statuses = [...s.statuses].map(([code, count]) => `${code}: ${count}`).join(', ');
  console.log(
    `| ${op} | ${s.ms.length} | ${statuses} | ${q(0.5).toFixed(1)} | ${q(0.99).toFixed(1)} |`,
  );
}
console.log('\n| invariant | held | measured |\n|---|---|---|');
for (const [name, held, measured] of checks) {
  console.log(`| ${name} | ${held ? 'yes' : '**NO**'} | ${measured} |`);
}
process.exit(checks.every(([, held]) => held) ? 0 : 1);

// --- helpers -------------------------------------------------------------------------------

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(free));
    });
    probe.once('error', reject);
  });
}

async function waitUntilReady(): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`server exited: ${serverErrors.join('\n')}`);
    const ready = await new Promise<boolean>((resolve) => {
      http
        .get({ host: '127.0.0.1', port, path: '/health/ready' }, (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        })
        .on('error', () => resolve(false));
    });
    if (ready) return;
    await sleep(250);
  }
  throw new Error('the server did not become ready within 2 minutes');
}
