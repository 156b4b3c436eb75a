// `npm run bench`: load the service over loopback and compare it with a minimal baseline.
//
// Data: 20 tenants x 10,000 welds and one tenant of 1,000,000 welds, made by the seed generator
// in a cluster kept under bench/.data (seeded once; later runs reuse it). The service runs as
// its own process (node server/main.ts against that database), the baseline too (bench/baseline.ts),
// and autocannon drives both from this process. Every case runs once per round, the rounds one
// after the other (default 3), and the report gives each case's median over the rounds with the
// spread of its req/s. Then `npm start` is timed on a data directory of its own (bench/.data/
// startup). Results: printed, and written to bench/RESULTS.md (unless --only picks cases).
//
//   npm run bench [-- --duration 10 --connections 32 --rounds 3 --only 'list|status']
//
// Profiling the server under this load: `npm run bench -- --profile --only list` starts it with
// node's --cpu-prof; the profile lands in bench/.data/profiles (open it in Chrome's DevTools,
// Performance tab, or print the top functions with `node bench/profile-top.ts <file>`).
// `--memory` logs where its memory is (bench/memory-probe.ts) and prints it at the list's peak.
import crypto from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { connectClient } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster, runningEmbeddedCluster } from '../db/embedded.ts';
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
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
    profile: { type: 'boolean', default: false },
    // Logs where the server's memory is every 500 ms (bench/memory-probe.ts) and prints it at
    // each round's peak of the list case.
    memory: { type: 'boolean', default: false },
    // Another checkout's seeded data (the 1,000,000-weld tenant takes minutes to seed).
    data: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const ONLY = values.only === undefined ? undefined : new RegExp(values.only);
const DURATION = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.resolve(values.data ?? path.join(ROOT, 'bench', '.data'));
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
// The status cases move PENDING welds to ACCEPTED for good: top each tenant up to enough PENDING
// welds for this run (new welds beside old ones, on ISOs whose test package is open or absent:
// the others refuse new welds, WD008), so a run never runs out after earlier ones.
const NEEDED_PENDING = { small: 5_000, big: 100_000 };
for (const [host, id] of Object.entries(tenantIds)) {
  const needed = host === 'big.bench' ? NEEDED_PENDING.big : NEEDED_PENDING.small;
  const { rows } = await owner.query<{ n: number }>(
    `select count(*)::int as n from weld_public.welds where tenant_id = $1 and status = 'PENDING'`,
    [id],
  );
  const missing = needed - rows[0]!.n;
  if (missing <= 0) continue;
  log(`${host}: adding ${missing} PENDING welds for the status cases`);
  await owner.query(
    `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
     select w.tenant_id, w.iso_id, left(w.weld_number, 60) || '-B' || $3, w.type, w.size
       from weld_public.welds w
      where w.tenant_id = $1 and w.status <> 'PENDING'
        and not exists (
              select from weld_public.test_package_isos i
                join weld_public.test_packages p
                  on p.tenant_id = i.tenant_id and p.id = i.test_package_id
               where i.tenant_id = w.tenant_id and i.iso_id = w.iso_id and p.state <> 'open')
      limit $2`,
    [id, missing, Date.now().toString(36)],
  );
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
// glibc's allocator settings reach the service, for the memory experiments (RESULTS.md); a run
// with any of them (or with --memory) is not the one RESULTS.md's service table records.
const allocatorEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    (e): e is [string, string] => /^(MALLOC_|GLIBC_TUNABLES$)/.test(e[0]) && e[1] !== undefined,
  ),
);
if (Object.keys(allocatorEnv).length > 0)
  log(`allocator settings: ${JSON.stringify(allocatorEnv)}`);
// The service starts as `npm start` starts it (its node flags bound the heap: docs/operating.md, "Memory and startup").
const PROFILES = path.join(DATA_DIR, 'profiles');
const MEMORY_LOG = path.join(DATA_DIR, 'memory.jsonl');
if (values.memory) fs.rmSync(MEMORY_LOG, { force: true });

/** The probe's line of the highest resident set since `since` (a line count), as printed text. */
function memoryAtPeak(since: number): string {
  const lines = fs.readFileSync(MEMORY_LOG, 'utf8').trim().split('\n').slice(since);
  const samples = lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as { rss: number }];
    } catch {
      return []; // a line the probe was still writing
    }
  });
  if (samples.length === 0) return "no sample (the case was shorter than the probe's 500 ms)";
  return JSON.stringify(samples.reduce((a, b) => (b.rss > a.rss ? b : a)));
}
const memoryLines = () =>
  values.memory && fs.existsSync(MEMORY_LOG)
    ? fs.readFileSync(MEMORY_LOG, 'utf8').trim().split('\n').length
    : 0;
// `npm start` is `NAME=value ... node <flags> server/main.ts`: its settings, then node's flags.
const startWords = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  }
).scripts.start.split(' ');
const startEnv = Object.fromEntries(
  startWords.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => w.split('=') as [string, string]),
);
const startScript = startWords.filter((w) => !/^[A-Z_]+=/.test(w));
const service = await start(
  'service',
  [
    ...startScript.slice(1, -1),
    ...(values.profile ? ['--cpu-prof', `--cpu-prof-dir=${PROFILES}`] : []),
    ...(values.memory ? ['--import', './bench/memory-probe.ts'] : []),
    ...startScript.slice(-1),
  ],
  {
    ...(values.memory ? { BENCH_MEMORY_LOG: MEMORY_LOG } : {}),
    ...startEnv,
    ...allocatorEnv,
    DATABASE_URL: rootUrl,
    // Required with a database URL; a fresh one per run (the bench registers no webhook).
    WEBHOOK_SECRET_KEY: crypto.randomBytes(32).toString('base64'),
    PORT: '0',
    DB_POOL_MAX: poolSize,
    LOG_LEVEL: 'info',
    // The GraphQL throughput case sends 32 requests at once as one user of one tenant; the
    // per-user and per-tenant limits (2 and 4 by default) would answer most of them 429.
    GRAPHQL_REQUESTS_PER_USER: '64',
    GRAPHQL_REQUESTS_PER_TENANT: '64',
  },
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
// Cases

/** One measured run of a case. */
interface Row {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  errors: number;
  /** Case-specific figures (status changes lost, the server's peak resident memory, ...). */
  extra?: Record<string, number>;
}

async function autocannonRow(options: autocannon.Options): Promise<Row> {
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    errors: result.non2xx + result.errors + result.timeouts,
  };
}

/** `states.length` concurrent loops for DURATION seconds, each passing its state on. */
async function loopRow<S>(
  states: S[],
  step: (state: S) => Promise<{ ok: boolean; next: S }>,
): Promise<Row> {
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
    Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 10) /
    10;
  return { rps: latencies.length / DURATION, p50: at(0.5), p99: at(0.99), ok, errors };
}

/** The server's resident memory, sampled while `work` runs: the peak, in MB. */
async function peakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; mb: number }> {
  let peakKb = 0;
  const sample = () => {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    peakKb = Math.max(peakKb, Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0));
  };
  const timer = setInterval(sample, 200);
  try {
    const result = await work();
    sample();
    return { result, mb: Math.round(peakKb / 1024) };
  } finally {
    clearInterval(timer);
  }
}

const small = 't01.bench';
const big = 'big.bench';
const tokenSmall = (await login(small)).accessToken;
const tokenBig = (await login(big)).accessToken;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = { 'content-type': 'application/json' };

async function graphql(host: string, token: string, query: string, variables = {}) {
  const res = await call(
    service.port,
    host,
    'POST',
    '/graphql',
    { query, variables },
    bearer(token),
    keepAlive,
  );
  const body = res.json as { data?: unknown; errors?: unknown };
  return res.status === 200 && !body.errors ? body.data : undefined;
}

const weldIds = (
  await owner.query<{ id: string }>(
    `select id from weld_public.welds where tenant_id = $1 limit 5000`,
    [tenantIds[small]],
  )
).rows.map((r) => r.id);
let nextWeld = 0;

// Status changes take welds still PENDING, each once across all rounds, in turn across the ISOs
// (each ISO's first, then each one's second, ...): distinct welds on distinct ISOs, as 32
// inspectors working apart. Writers of one ISO take turns on its weld counts (migration 000015);
// RESULTS.md measures that too.
const pendingSql = `select id from weld_public.welds where tenant_id = $1 and status = 'PENDING'
  order by row_number() over (partition by iso_id order by id), iso_id`;
const pending = (await owner.query<{ id: string }>(pendingSql, [tenantIds[big]])).rows.map(
  (r) => r.id,
);
let nextPending = 0;
// One tenant after the other: `owner` is one connection, which runs one query at a time.
const spread: Array<{ host: string; token: string; pending: string[]; next: number }> = [];
for (const slug of smallSlugs) {
  spread.push({
    host: `${slug}.bench`,
    token: (await login(`${slug}.bench`)).accessToken,
    pending: (await owner.query<{ id: string }>(pendingSql, [tenantIds[`${slug}.bench`]])).rows.map(
      (r) => r.id,
    ),
    next: 0,
  });
}
const historyCount = async () =>
  (
    await owner.query<{ n: number }>(
      `select count(*)::int as n from weld_public.weld_status_history where tenant_id = $1`,
      [tenantIds[big]],
    )
  ).rows[0]!.n;

const graphPage = `{ allWelds(first: 50, orderBy: PRIMARY_KEY_ASC) { nodes { rowId isoId weldNumber type size
  schedule wallThickness material welderId wpsId weldedOn status repairCycle version createdAt updatedAt }
  pageInfo { endCursor hasNextPage } } }`;
const groupedAggregate = `{ allWelds { groupedAggregates(groupBy: [ISO_ID, STATUS]) { keys count { rowId } } } }`;

// Every ISO's progress in one request. The big tenant has ISO_COUNT ISOs (200 welds each); GraphQL
// pages hold at most 500 nodes, so its document asks for ten pages at once, by alias.
const ISO_COUNT = Number(values['big-welds']) / 200;
const isoCountsDocument = `{ ${Array.from(
  { length: Math.ceil(ISO_COUNT / 500) },
  (_, i) => `p${i}: allIsoWeldCounts(first: 500, offset: ${i * 500}, orderBy: PRIMARY_KEY_ASC) {
    nodes { isoId total pending accepted rejected repair voided iso { isoNumber lineNumber area } } }`,
).join('\n')} }`;

/** Before timing them: both answers hold every ISO of the big tenant. */
async function checkIsoCounts(): Promise<void> {
  const rest = await call(
    service.port,
    big,
    'GET',
    '/isos/weld-counts',
    undefined,
    bearer(tokenBig),
  );
  const restItems = (rest.json as { items: unknown[] }).items.length;
  const data = (await graphql(big, tokenBig, isoCountsDocument)) as
    Record<string, { nodes: unknown[] }> | undefined;
  if (!data) throw new Error('GraphQL ISO counts failed');
  const graphqlItems = Object.values(data).reduce((n, page) => n + page.nodes.length, 0);
  if (restItems !== ISO_COUNT || graphqlItems !== ISO_COUNT) {
    throw new Error(
      `ISO counts: REST ${restItems}, GraphQL ${graphqlItems}, expected ${ISO_COUNT}`,
    );
  }
}

/** One GraphQL document over the big tenant, sent by one client after the other. */
function reportRow(query: string): Promise<Row> {
  return autocannonRow({
    url: `http://127.0.0.1:${service.port}/graphql`,
    connections: 1,
    method: 'POST',
    headers: { host: big, ...bearer(tokenBig), ...json },
    body: JSON.stringify({ query }),
  });
}

interface Case {
  key: string;
  name: string;
  run(): Promise<Row>;
  /** Run only when --only names it (its pattern contains `xp-`): a question asked once
   * (RESULTS.md says its answer), not a target. */
  experiment?: boolean;
}

/** An experiment's load: 2 s to warm up (every round), then the measured run. */
async function warmedRow(options: Parameters<typeof autocannonRow>[0]): Promise<Row> {
  await autocannon({ ...options, connections: CONNECTIONS, duration: 2 });
  return autocannonRow(options);
}
const CASES: Case[] = [
  {
    key: 'list-baseline',
    name: 'baseline: GET /welds?limit=50 (node:http + pg, same SQL and RLS)',
    run: () =>
      autocannonRow({
        url: `http://127.0.0.1:${baseline.port}/welds?limit=50`,
        headers: { host: small },
      }),
  },
  {
    key: 'list',
    name: 'GET /welds?limit=50 (bearer, 10,000-weld tenant)',
    run: async () => {
      const since = memoryLines();
      const { result, mb } = await peakRss(service.child.pid!, () =>
        autocannonRow({
          url: `http://127.0.0.1:${service.port}/welds?limit=50`,
          headers: { host: small, ...bearer(tokenSmall) },
        }),
      );
      if (values.memory) log(`memory at the list case's peak (MB): ${memoryAtPeak(since)}`);
      return { ...result, extra: { rssMb: mb } };
    },
  },
  {
    key: 'list-big',
    name: 'GET /welds?limit=50 (bearer, 1,000,000-weld tenant)',
    run: () =>
      autocannonRow({
        url: `http://127.0.0.1:${service.port}/welds?limit=50`,
        headers: { host: big, ...bearer(tokenBig) },
      }),
  },
  {
    key: 'item',
    name: 'GET /welds/{id}',
    run: () =>
      autocannonRow({
        url: `http://127.0.0.1:${service.port}`,
        headers: { host: small, ...bearer(tokenSmall) },
        requests: [
          {
            method: 'GET',
            setupRequest: (req) => ({
              ...req,
              path: `/welds/${weldIds[nextWeld++ % weldIds.length]}`,
            }),
          },
        ],
      }),
  },
  {
    // What the REST adapter would cost if it ran fixed GraphQL documents instead of its SQL.
    key: 'graphql-page',
    name: 'the same page as a GraphQL document (POST /graphql, 10,000-weld tenant)',
    run: () =>
      autocannonRow({
        url: `http://127.0.0.1:${service.port}/graphql`,
        method: 'POST',
        headers: { host: small, ...bearer(tokenSmall), ...json },
        body: JSON.stringify({ query: graphPage }),
      }),
  },
  {
    // Issue F16: what the three round trips of a request's transaction cost (begin and context,
    // statement, commit), measured on the baseline answering the same page in one.
    key: 'xp-baseline-one-trip',
    name: 'experiment: the baseline in one round trip (one simple query)',
    experiment: true,
    run: () =>
      warmedRow({
        url: `http://127.0.0.1:${baseline.port}/welds?limit=50&trips=1`,
        headers: { host: small },
      }),
  },
  // Issue F16: what a GraphQL request costs with no field (the fixed cost a persisted document
  // could at most save something of) and with one field per node, against the page's 16.
  ...(
    [
      ['typename', 'a GraphQL document of no field ({ __typename })', '{ __typename }'],
      [
        'ids',
        'the page as GraphQL with one field per weld (rowId)',
        '{ allWelds(first: 50, orderBy: PRIMARY_KEY_ASC) { nodes { rowId } } }',
      ],
    ] as const
  ).map(([key, name, query]) => ({
    key: `xp-graphql-${key}`,
    name: `experiment: ${name}`,
    experiment: true,
    run: () =>
      warmedRow({
        url: `http://127.0.0.1:${service.port}/graphql`,
        method: 'POST',
        headers: { host: small, ...bearer(tokenSmall), ...json },
        body: JSON.stringify({ query }),
      }),
  })),
  {
    key: 'status',
    name: 'PATCH /welds/{id}/status (PENDING -> ACCEPTED; history and event written)',
    run: async () => {
      const before = await historyCount();
      const row = await autocannonRow({
        url: `http://127.0.0.1:${service.port}`,
        headers: { host: big, ...bearer(tokenBig), ...json },
        requests: [
          {
            method: 'PATCH',
            body: JSON.stringify({ status: 'ACCEPTED' }),
            setupRequest: (req) => ({ ...req, path: `/welds/${pending[nextPending++]}/status` }),
          },
        ],
      });
      // Every 2xx must have its history row (requests still in flight at the end may add more).
      const written = (await historyCount()) - before;
      return { ...row, extra: { lost: Math.max(0, row.ok - written) } };
    },
  },
  {
    // The same across the 20 small tenants, each request another tenant's: the outbox orders
    // events per tenant, so tenants commit side by side (see RESULTS.md, status changes).
    key: 'status-tenants',
    name: 'PATCH /welds/{id}/status across 20 tenants (PENDING -> ACCEPTED; history and event written)',
    run: async () => {
      let turn = 0;
      return autocannonRow({
        url: `http://127.0.0.1:${service.port}`,
        requests: [
          {
            method: 'PATCH',
            body: JSON.stringify({ status: 'ACCEPTED' }),
            setupRequest: (req) => {
              const tenant = spread[turn++ % spread.length]!;
              return {
                ...req,
                path: `/welds/${tenant.pending[tenant.next++]}/status`,
                headers: { host: tenant.host, ...bearer(tenant.token), ...json },
              };
            },
          },
        ],
      });
    },
  },
  {
    // Refresh tokens rotate, so each connection must send the token the previous answer gave it:
    // sequential loops of our own (autocannon prepares requests ahead of the answers).
    key: 'refresh',
    name: 'POST /auth/refresh (rotating the refresh token)',
    run: async () => {
      const sessions: string[] = [];
      for (let i = 0; i < CONNECTIONS; i++) sessions.push((await login('t02.bench')).refreshToken);
      return loopRow(sessions, async (token) => {
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
    },
  },
  {
    key: 'iso-counts-rest',
    name: 'every ISO with its weld counts, GET /isos/weld-counts (5,000 ISOs, 1,000,000 welds, 1 client)',
    run: async () => {
      await checkIsoCounts();
      return autocannonRow({
        url: `http://127.0.0.1:${service.port}/isos/weld-counts`,
        connections: 1,
        headers: { host: big, ...bearer(tokenBig) },
      });
    },
  },
  {
    key: 'iso-counts-graphql',
    name: 'every ISO with its weld counts, one GraphQL document of 10 allIsoWeldCounts pages (same tenant, 1 client)',
    run: () => reportRow(isoCountsDocument),
  },
  {
    key: 'grouped-aggregate',
    name: 'GraphQL groupedAggregates: welds by status per ISO (1,000,000 welds, 1 client)',
    run: () => reportRow(groupedAggregate),
  },
];

//------------------------------------------------------------------------------------------------
// Rounds

const chosen = CASES.filter(
  (c) => (!c.experiment || values.only?.includes('xp-')) && (!ONLY || ONLY.test(c.key)),
);
// Warm both up (JIT, pools, plans, GraphQL's document caches), then measure.
for (const c of chosen.filter((c) => /^list|graphql-page/.test(c.key))) {
  await autocannon({
    url: `http://127.0.0.1:${c.key === 'list-baseline' ? baseline.port : service.port}${c.key === 'graphql-page' ? '/graphql' : '/welds?limit=50'}`,
    connections: CONNECTIONS,
    duration: 3,
    ...(c.key === 'graphql-page' && { method: 'POST', body: JSON.stringify({ query: graphPage }) }),
    headers: { host: small, ...bearer(tokenSmall), ...json },
  });
}

const runs = new Map<Case, Row[]>(chosen.map((c) => [c, []]));
for (let round = 1; round <= ROUNDS; round++) {
  for (const c of chosen) {
    log(`round ${round}: ${c.name} ...`);
    const row = await c.run();
    runs.get(c)!.push(row);
    log(
      `  ${row.rps.toFixed(0)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, ${row.errors} errors` +
        (row.extra ? `, ${JSON.stringify(row.extra)}` : ''),
    );
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
/** A case's median over the rounds: each figure's median, and the req/s spread. */
function summary(c: Case) {
  const rows = runs.get(c)!;
  const pick = (f: (r: Row) => number) => median(rows.map(f));
  const extras = Object.keys(rows[0]?.extra ?? {});
  return {
    rps: pick((r) => r.rps),
    p50: pick((r) => r.p50),
    p99: pick((r) => r.p99),
    errors: rows.reduce((n, r) => n + r.errors, 0),
    spread: rows.map((r) => r.rps.toFixed(0)).join(', '),
    p50s: rows.map((r) => r.p50),
    extra: Object.fromEntries(
      extras.map((k) => [
        k,
        k === 'lost'
          ? rows.reduce((n, r) => n + r.extra![k]!, 0)
          : Math.max(...rows.map((r) => r.extra![k]!)),
      ]),
    ),
  };
}
const results = new Map(chosen.map((c) => [c.key, summary(c)]));

//------------------------------------------------------------------------------------------------
// Startup: `npm start` on an existing data directory, until /health/ready answers 200

async function freePort(): Promise<number> {
  const server = http.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
/** Starts `npm start` and times it to the first 200 from /health/ready; then stops it. */
async function timeStartup(dataDir: string): Promise<number> {
  const port = await freePort();
  const log = fs.openSync(`${dataDir}.log`, 'w');
  const started = performance.now();
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', log, log],
    detached: true,
  });
  fs.closeSync(log);
  try {
    for (;;) {
      const status = await new Promise<number>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/health/ready' }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', () => resolve(0));
      });
      if (status === 200) return performance.now() - started;
      if (child.exitCode !== null) throw new Error(`npm start exited; see ${dataDir}.log`);
      if (performance.now() - started > 120_000) throw new Error('not ready in 120 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    // npm ends at once on SIGTERM; the server behind it still finishes and stops its PostgreSQL.
    // The next start must not find that cluster shutting down: wait for the group and the cluster.
    const alive = () => {
      try {
        process.kill(-child.pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    if (alive()) process.kill(-child.pid!, 'SIGTERM');
    while (alive() || runningEmbeddedCluster(dataDir)) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
const startup: number[] = [];
if (!ONLY || ONLY.test('startup')) {
  const dataDir = path.join(DATA_DIR, 'startup');
  log('startup: preparing its data directory (first start) ...');
  await timeStartup(dataDir);
  for (let round = 1; round <= ROUNDS; round++) {
    startup.push(await timeStartup(dataDir));
    log(`startup round ${round}: ready in ${startup.at(-1)!.toFixed(0)} ms`);
  }
}

//------------------------------------------------------------------------------------------------
// Report

const r = (key: string) => results.get(key);
const base = r('list-baseline');
const list = r('list');
const targets: Array<[string, string, boolean]> = [];
if (base && list) {
  const ratio = list.rps / base.rps;
  targets.push([
    'GET /welds?limit=50 >= 1.0 x the baseline req/s',
    `${ratio.toFixed(2)} x`,
    ratio >= 1,
  ]);
  targets.push([
    'GET /welds?limit=50 p99 <= 1.2 x the baseline p99',
    `${list.p99} vs ${base.p99} ms`,
    list.p99 <= base.p99 * 1.2,
  ]);
  targets.push([
    'server resident memory under the list load < 250 MB',
    `${list.extra.rssMb} MB (the peak of the rounds)`,
    list.extra.rssMb! < 250,
  ]);
}
const status = r('status');
if (status) {
  targets.push([
    'status changes >= 1,500/s, history and event written, none lost',
    `${status.rps.toFixed(0)}/s, ${status.extra.lost} lost`,
    status.rps >= 1500 && status.extra.lost === 0,
  ]);
}
for (const [key, what] of [
  ['iso-counts-rest', 'weld counts of every ISO over REST < 50 ms'],
  ['iso-counts-graphql', 'weld counts of every ISO over GraphQL < 50 ms'],
  ['grouped-aggregate', 'GraphQL groupedAggregates on 1,000,000 welds < 300 ms'],
] as const) {
  const row = r(key);
  const limit = key === 'grouped-aggregate' ? 300 : 50;
  if (row) targets.push([what, `p50 ${row.p50} ms`, row.p50 < limit]);
}
const page = r('graphql-page');
if (base && page) {
  const ratio = page.rps / base.rps;
  targets.push([
    'the page as a GraphQL document >= 0.6 x the baseline',
    `${ratio.toFixed(2)} x`,
    ratio >= 0.6,
  ]);
}
const listBig = r('list-big');
if (list && listBig) {
  targets.push([
    "1,000,000-weld tenant's list p50 within 1.1 x the 10,000-weld tenant's",
    `${listBig.p50} vs ${list.p50} ms`,
    listBig.p50 <= list.p50 * 1.1,
  ]);
}
if (startup.length) {
  const ms = median(startup);
  targets.push([
    '`npm start` on an existing data directory: /health/ready within 3 s',
    `${(ms / 1000).toFixed(2)} s (${startup.map((t) => (t / 1000).toFixed(2)).join(', ')})`,
    ms < 3000,
  ]);
}

const table = [
  `## Service (\`npm run bench\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
  '',
  `${CONNECTIONS} connections unless the case says otherwise, ${DURATION} s per case after a warm-up, ${ROUNDS} rounds`,
  `(each figure is the median over the rounds; req/s of each round in the last column). autocannon over`,
  `loopback; service and baseline as separate processes with ${poolSize} database connections each; one 2-core`,
  `machine running PostgreSQL 18, the server, the baseline and autocannon together. Logs at info level.`,
  '',
  '| case | req/s | p50 ms | p99 ms | vs baseline | non-2xx | req/s per round |',
  '|---|---|---|---|---|---|---|',
  ...chosen.map((c) => {
    const row = results.get(c.key)!;
    const vs = base && /^list|graphql-page/.test(c.key) ? (row.rps / base.rps).toFixed(2) : '-';
    return `| ${c.name} | ${row.rps.toFixed(0)} | ${row.p50} | ${row.p99} | ${vs} | ${row.errors} | ${row.spread} |`;
  }),
  '',
  '| target | measured (median of the rounds) | met |',
  '|---|---|---|',
  ...targets.map(
    ([what, measured, met]) => `| ${what} | ${measured} | ${met ? 'yes' : '**no**'} |`,
  ),
  '',
].join('\n');
console.log('\n' + table);

if (!ONLY && (values.memory || Object.keys(allocatorEnv).length > 0)) {
  log('not written to bench/RESULTS.md: --memory or allocator settings change what is measured');
} else if (!ONLY) {
  const file = path.join(ROOT, 'bench', 'RESULTS.md');
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmark results\n';
  const start0 = text.indexOf('## Service');
  const end0 = start0 < 0 ? -1 : text.indexOf('\n## ', start0 + 1);
  const updated =
    start0 < 0
      ? `${text.trimEnd()}\n\n${table}`
      : `${text.slice(0, start0)}${table}${end0 < 0 ? '' : '\n' + text.slice(end0 + 1)}`;
  fs.writeFileSync(file, updated.trimEnd() + '\n');
}

keepAlive.destroy();
service.child.kill('SIGTERM');
baseline.child.kill('SIGTERM');
await new Promise((resolve) => service.child.once('exit', resolve));
await owner.end();
await target.release();
await cluster.stop();
