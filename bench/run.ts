// `npm run bench`: load the service over loopback and compare it with a minimal baseline.
//
// Data: 20 tenants x 10,000 welds and one tenant of 1,000,000 welds, made by the seed generator
// in a cluster kept under bench/.data (seeded once; later runs reuse it). The service runs as
// its own process (node server/main.ts against that database), the baseline too (bench/baseline.ts),
// and autocannon drives both from this process. Results: printed, and written to bench/RESULTS.md.
//
//   npm run bench [-- --duration 10 --connections 32]
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { connectClient } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';
import { addUser } from '../db/users.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    tenants: { type: 'string', default: '20' },
    'small-welds': { type: 'string', default: '10000' },
    'big-welds': { type: 'string', default: '1000000' },
  },
});
const DURATION = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const PASSWORD = 'bench password, not a secret';
const log = (message: string) => console.log(`[bench] ${message}`);

//------------------------------------------------------------------------------------------------
// Data

const cluster = await openEmbeddedCluster({ dataDir: DATA_DIR, port: 0 });
const rootUrl = embeddedUrl(cluster, 'weld_bench');
const target = await openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: true });
const owner = await connectClient(target.ownerUrl);

const smallSlugs = Array.from(
  { length: Number(values.tenants) },
  (_, i) => `t${String(i + 1).padStart(2, '0')}`,
);
const tenantIds: Record<string, string> = {};
for (const [slug, welds] of [
  ...smallSlugs.map((s) => [s, Number(values['small-welds'])] as const),
  ['big', Number(values['big-welds'])] as const,
]) {
  const existing = await owner.query<{ id: string; n: number }>(
    `select t.id, (select count(*)::int from weld_public.welds w where w.tenant_id = t.id) as n
       from weld_public.tenants t where t.slug = $1`,
    [slug],
  );
  let id = existing.rows[0]?.id;
  if (!id) {
    id = (await addTenant(owner, { slug, origins: [`http://${slug}.bench`] })).id;
    await addUser(owner, {
      tenant: slug,
      userName: 'bench',
      role: 'inspector',
      password: PASSWORD,
    });
  }
  tenantIds[`${slug}.bench`] = id;
  if ((existing.rows[0]?.n ?? 0) === 0) {
    const weldsPerIso = welds >= 1_000_000 ? 200 : 50;
    log(`seeding ${slug}: ${welds.toLocaleString('en')} welds`);
    const started = Date.now();
    await owner.query('begin');
    await seedTenant(owner, slug, { isos: welds / weldsPerIso, weldsPerIso, seed: 7 });
    await owner.query('commit');
    log(`seeded ${slug} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}
await owner.query('analyze');

//------------------------------------------------------------------------------------------------
// Processes

function start(
  name: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; port: number }> {
  const logFile = path.join(DATA_DIR, `${name}.log`);
  const fd = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', fd, fd],
  });
  fs.closeSync(fd);
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 60_000;
    const poll = setInterval(() => {
      const match = ready.exec(fs.readFileSync(logFile, 'utf8'));
      if (match) {
        clearInterval(poll);
        resolve({ child, port: Number(match[1]) });
      } else if (Date.now() > deadline || child.exitCode !== null) {
        clearInterval(poll);
        reject(new Error(`${name} did not start; see ${logFile}`));
      }
    }, 100);
  });
}

const poolSize = '20';
const service = await start(
  'service',
  ['server/main.ts'],
  { DATABASE_URL: rootUrl, PORT: '0', DB_POOL_MAX: poolSize, LOG_LEVEL: 'info' },
  /"port":(\d+),[^\n]*listening on/,
);
const baseline = await start(
  'baseline',
  ['bench/baseline.ts'],
  {
    AUTHENTICATOR_URL: target.authenticatorUrl,
    DB_POOL_MAX: poolSize,
    BENCH_TENANTS: JSON.stringify(tenantIds),
  },
  /listening (\d+)/,
);

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });

function call(
  port: number,
  host: string,
  method: string,
  urlPath: string,
  body?: unknown,
  headers: Record<string, string> = {},
  agent?: http.Agent,
) {
  return new Promise<{ status: number; json: unknown }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        agent,
        method,
        path: urlPath,
        headers: { host, 'content-type': 'application/json', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            json: text ? (JSON.parse(text) as unknown) : undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
const login = async (host: string) =>
  (await call(service.port, host, 'POST', '/auth/login', { userName: 'bench', password: PASSWORD }))
    .json as {
    accessToken: string;
    refreshToken: string;
  };

//------------------------------------------------------------------------------------------------
// Runs

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
}
const rows: Row[] = [];

async function measure(name: string, options: autocannon.Options): Promise<Row> {
  log(`${name} ...`);
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  const row = {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    errors: result.non2xx + result.errors + result.timeouts,
  };
  log(
    `${name}: ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${row.errors} errors`,
  );
  return row;
}

async function run(name: string, options: autocannon.Options): Promise<Row> {
  const row = await measure(name, options);
  rows.push(row);
  return row;
}

/** The mean of several runs of one case (taken in turn with another case, so neither goes first). */
function mean(runs: Row[]): Row {
  const avg = (pick: (r: Row) => number) => runs.reduce((sum, r) => sum + pick(r), 0) / runs.length;
  const row = {
    name: `${runs[0]!.name} (mean of ${runs.length})`,
    rps: avg((r) => r.rps),
    p50: Math.round(avg((r) => r.p50)),
    p99: Math.round(avg((r) => r.p99)),
    ok: avg((r) => r.ok),
    errors: avg((r) => r.errors),
  };
  rows.push(row);
  return row;
}

/** `states.length` concurrent loops for DURATION seconds, each passing its state on. */
async function loop<S>(
  name: string,
  states: S[],
  step: (state: S) => Promise<{ ok: boolean; next: S }>,
): Promise<Row> {
  log(`${name} ...`);
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const until = Date.now() + DURATION * 1000;
  await Promise.all(
    states.map(async (initial) => {
      let state = initial;
      while (Date.now() < until) {
        const started = performance.now();
        const result = await step(state);
        latencies.push(performance.now() - started);
        if (result.ok) ok++;
        else errors++;
        state = result.next;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!);
  const row = { name, rps: latencies.length / DURATION, p50: at(0.5), p99: at(0.99), ok, errors };
  rows.push(row);
  log(
    `${name}: ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${row.errors} errors`,
  );
  return row;
}

const small = 't01.bench';
const big = 'big.bench';
const tokenSmall = (await login(small)).accessToken;
const tokenBig = (await login(big)).accessToken;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

// Warm both up (JIT, pools, plans), then measure.
await autocannon({
  url: `http://127.0.0.1:${baseline.port}/welds?limit=50`,
  connections: CONNECTIONS,
  duration: 3,
  headers: { host: small },
});
await autocannon({
  url: `http://127.0.0.1:${service.port}/welds?limit=50`,
  connections: CONNECTIONS,
  duration: 3,
  headers: { host: small, ...bearer(tokenSmall) },
});

// Baseline and service in turn, twice, so that neither always runs on the fresher machine.
const baseRuns: Row[] = [];
const listRuns: Row[] = [];
for (let i = 0; i < 2; i++) {
  baseRuns.push(
    await measure('baseline: GET /welds?limit=50 (node:http + pg, same SQL and RLS)', {
      url: `http://127.0.0.1:${baseline.port}/welds?limit=50`,
      headers: { host: small },
    }),
  );
  listRuns.push(
    await measure('GET /welds?limit=50 (bearer, 10,000-weld tenant)', {
      url: `http://127.0.0.1:${service.port}/welds?limit=50`,
      headers: { host: small, ...bearer(tokenSmall) },
    }),
  );
}
const base = mean(baseRuns);
const list = mean(listRuns);
const listBig = await run('GET /welds?limit=50 (bearer, 1,000,000-weld tenant)', {
  url: `http://127.0.0.1:${service.port}/welds?limit=50`,
  headers: { host: big, ...bearer(tokenBig) },
});

// The same page through PostGraphile: what the REST adapter would cost if it ran fixed GraphQL
// documents instead of its SQL (the README's "why REST calls SQL directly").
const graphPage = `{ allWelds(first: 50, orderBy: PRIMARY_KEY_ASC) { nodes { rowId isoId weldNumber type size
  schedule wallThickness material welderId wpsId weldedOn status repairCycle version createdAt updatedAt }
  pageInfo { endCursor hasNextPage } } }`;
await run('the same page as a GraphQL document (POST /graphql, 10,000-weld tenant)', {
  url: `http://127.0.0.1:${service.port}/graphql`,
  method: 'POST',
  headers: { host: small, ...bearer(tokenSmall), 'content-type': 'application/json' },
  body: JSON.stringify({ query: graphPage }),
});

const ids = (
  await owner.query<{ id: string }>(
    `select id from weld_public.welds where tenant_id = $1 limit 5000`,
    [tenantIds[small]],
  )
).rows.map((r) => r.id);
let next = 0;
await run('GET /welds/{id}', {
  url: `http://127.0.0.1:${service.port}`,
  headers: { host: small, ...bearer(tokenSmall) },
  requests: [
    {
      method: 'GET',
      setupRequest: (req) => ({ ...req, path: `/welds/${ids[next++ % ids.length]}` }),
    },
  ],
});

const pending = (
  await owner.query<{ id: string }>(
    `select id from weld_public.welds where tenant_id = $1 and status = 'PENDING'`,
    [tenantIds[big]],
  )
).rows.map((r) => r.id);
const historyBefore = (
  await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_public.weld_status_history where tenant_id = $1`,
    [tenantIds[big]],
  )
).rows[0]!.n;
let pendingIndex = 0;
const statusRow = await run('PATCH /welds/{id}/status (PENDING -> ACCEPTED, history written)', {
  url: `http://127.0.0.1:${service.port}`,
  headers: { host: big, ...bearer(tokenBig), 'content-type': 'application/json' },
  requests: [
    {
      method: 'PATCH',
      body: JSON.stringify({ status: 'ACCEPTED' }),
      setupRequest: (req) => ({ ...req, path: `/welds/${pending[pendingIndex++]}/status` }),
    },
  ],
});
const historyAfter = (
  await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_public.weld_status_history where tenant_id = $1`,
    [tenantIds[big]],
  )
).rows[0]!.n;
// Every 2xx must have its history row (requests still in flight when the run ends may add more).
const statusLost = Math.max(0, statusRow.ok - (historyAfter - historyBefore));

// Refresh tokens rotate, so each connection must send the token the previous answer gave it:
// sequential loops of our own (autocannon prepares requests ahead of the answers).
const sessions: string[] = [];
for (let i = 0; i < CONNECTIONS; i++) sessions.push((await login('t02.bench')).refreshToken);
await loop('POST /auth/refresh (rotating the refresh token)', sessions, async (token) => {
  const res = await call(
    service.port,
    't02.bench',
    'POST',
    '/auth/refresh',
    { refreshToken: token },
    {},
    keepAlive,
  );
  return res.status === 200
    ? { ok: true, next: (res.json as { refreshToken: string }).refreshToken }
    : { ok: false, next: token };
});

const aggregate = `{ allWelds { groupedAggregates(groupBy: [ISO_ID, STATUS]) { keys distinctCount { rowId } } } }`;
const graphRow = await run('GraphQL: welds by status per ISO (1,000,000 welds, 1 connection)', {
  url: `http://127.0.0.1:${service.port}/graphql`,
  connections: 1,
  duration: Math.max(DURATION, 10),
  method: 'POST',
  headers: { host: big, ...bearer(tokenBig), 'content-type': 'application/json' },
  body: JSON.stringify({ query: aggregate }),
});

//------------------------------------------------------------------------------------------------
// Report

const ratio = list.rps / base.rps;
const targets = [
  [`GET /welds?limit=50 >= 0.8 x baseline req/s`, `${ratio.toFixed(2)} x`, ratio >= 0.8],
  [
    `GET /welds?limit=50 p99 < 25 ms at ${CONNECTIONS} connections`,
    `${list.p99} ms`,
    list.p99 < 25,
  ],
  [
    `1,000,000-weld tenant p50 within 1.2 x the 10,000-weld tenant's`,
    `${listBig.p50} vs ${list.p50} ms`,
    listBig.p50 <= list.p50 * 1.2 || listBig.p50 - list.p50 <= 1,
  ],
  [
    `status changes >= 1,000/s with history written, none lost`,
    `${statusRow.rps.toFixed(0)}/s, ${statusLost} lost`,
    statusRow.rps >= 1000 && statusLost === 0,
  ],
  [`GraphQL aggregate on 1,000,000 welds < 300 ms`, `p50 ${graphRow.p50} ms`, graphRow.p50 < 300],
] as const;
const table = [
  `## Service (\`npm run bench\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
  '',
  `${CONNECTIONS} connections (1 for the GraphQL aggregate), ${DURATION} s per case after a warm-up, autocannon over`,
  `loopback; service and baseline as separate processes with ${poolSize} database connections each; one 2-core machine`,
  `running PostgreSQL 18, the server, the baseline and autocannon together. Logs at info level.`,
  '',
  '| case | req/s | p50 ms | p99 ms | vs baseline | non-2xx |',
  '|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${/welds\?limit=50|same page/.test(r.name) ? (r.rps / base.rps).toFixed(2) : '-'} | ${r.errors} |`,
  ),
  '',
  '| target | measured | met |',
  '|---|---|---|',
  ...targets.map(
    ([what, measured, met]) => `| ${what} | ${measured} | ${met ? 'yes' : '**no**'} |`,
  ),
  '',
].join('\n');
console.log('\n' + table);

const file = path.join(ROOT, 'bench', 'RESULTS.md');
const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmark results\n';
const start0 = text.indexOf('## Service');
const end0 = start0 < 0 ? -1 : text.indexOf('\n## ', start0 + 1);
const updated =
  start0 < 0
    ? `${text.trimEnd()}\n\n${table}`
    : `${text.slice(0, start0)}${table}${end0 < 0 ? '' : '\n' + text.slice(end0 + 1)}`;
fs.writeFileSync(file, updated.trimEnd() + '\n');

keepAlive.destroy();
service.child.kill('SIGTERM');
baseline.child.kill('SIGTERM');
await owner.end();
await target.release();
await cluster.stop();
