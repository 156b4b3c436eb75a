// Benchmark of the event outbox (migration 000010) and the feed:
//
//   status changes per second with the outbox, and without it     target: it costs <= 15 %
//   GET /events, a page of 1,000 events, over HTTP                 target < 50 ms
//
// Status changes: the SQL PATCH /welds/{id}/status runs (withContext as an engineer, then
// change_weld_status), each its own transaction, from N concurrent connections for D seconds,
// every weld cycling PENDING -> ACCEPTED -> REJECTED -> REPAIR -> PENDING. "Without" disables the
// outbox trigger on welds as the owner (ALTER TABLE ... DISABLE TRIGGER), so the same data and the
// same code path are measured with and without it; runs alternate (without, with, without, with)
// so that drift of this shared VM falls on both. The embedded cluster keeps PostgreSQL's default
// durability (fsync on, synchronous_commit on), as the service runs it.
//
// The feed: 200,000 real events (updates of 20,000 welds in big transactions), then the service
// as its own process (server/main.ts, as bench/run.ts starts it) answering GET /events?after=X
// &limit=1000 at random cursors, one request at a time, after a warm-up.
//
//   npm run bench:events [-- --duration 10 --connections 8,32]
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { connectClient, createPool, withContext } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';
import { addUser } from '../db/users.ts';
import { callService, startService } from './service.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '8,32' },
    events: { type: 'string', default: '200000' },
    // off: commits do not wait for their WAL flush, which shows what the flush costs under the
    // outbox's per-tenant lock (the service itself always keeps PostgreSQL's default, on).
    'synchronous-commit': { type: 'string', default: 'on' },
  },
});
const SYNCHRONOUS_COMMIT = values['synchronous-commit'];
const DURATION_MS = Number(values.duration) * 1000;
const CONNECTIONS = values.connections.split(',').map(Number);
const EVENTS = Number(values.events);
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const SLUG = 'events';
const PASSWORD = 'bench password, not a secret';
const log = (message: string) => console.log(`[bench:events] ${message}`);

/** The lifecycle loop each weld goes round (the default rules; the engineer may make each). */
const NEXT: Record<string, [string, string | null]> = {
  PENDING: ['ACCEPTED', null],
  ACCEPTED: ['REJECTED', 'bench: a later examination found a defect'],
  REJECTED: ['REPAIR', null],
  REPAIR: ['PENDING', null],
};
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

fs.mkdirSync(DATA_DIR, { recursive: true });
const cluster = await openEmbeddedCluster({
  dataDir: DATA_DIR,
  port: 0,
  settings: { synchronous_commit: SYNCHRONOUS_COMMIT },
});
const rootUrl = embeddedUrl(cluster, 'weld_events_bench');
const target = await openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: true });
const owner = await connectClient(target.ownerUrl);
let service: ChildProcess | undefined;
try {
  const { tenantId, engineerId, viewerId } = await tenant();
  const throughput: Array<{ connections: number; without: number[]; with: number[] }> = [];
  for (const connections of CONNECTIONS) {
    const pool = createPool(target.authenticatorUrl, { max: connections });
    const welds = await weldsToCycle(tenantId, connections * 20);
    const runs = { connections, without: [] as number[], with: [] as number[] };
    for (const outbox of [false, true, false, true]) {
      await owner.query(
        `alter table weld_public.welds ${outbox ? 'enable' : 'disable'} trigger _900_outbox`,
      );
      const rate = await statusChanges(pool, { tenantId, userId: engineerId }, welds, connections);
      (outbox ? runs.with : runs.without).push(rate);
      log(
        `${connections} connections, outbox ${outbox ? 'on ' : 'off'}: ${rate.toFixed(0)} changes/s`,
      );
    }
    await owner.query('alter table weld_public.welds enable trigger _900_outbox');
    throughput.push(runs);
    await pool.end();
  }

  await eventsOf(tenantId, EVENTS);
  const feed = await feedPages(tenantId, viewerId);
  record(throughput, feed);
} finally {
  await owner.query('alter table weld_public.welds enable trigger _900_outbox').catch(() => {});
  service?.kill('SIGTERM');
  await owner.end();
  await target.release();
  await cluster.stop();
}

/** The bench tenant of 20,000 welds, seeded once (its history writes no events), and two users. */
async function tenant() {
  const found = await owner.query<{ id: string }>(
    'select id from weld_public.tenants where slug = $1',
    [SLUG],
  );
  let tenantId = found.rows[0]?.id;
  if (!tenantId) {
    tenantId = (await addTenant(owner, { slug: SLUG, origins: [`http://${SLUG}.bench`] })).id;
    log('seeding 20,000 welds (once; kept in bench/.data)');
    const seeding = await connectClient(target.ownerUrl);
    await seeding.query('begin');
    await seedTenant(seeding, SLUG, { isos: 400, weldsPerIso: 50, seed: 5 });
    await seeding.query('commit');
    await seeding.end();
    for (const role of ['engineer', 'viewer']) {
      await addUser(owner, { tenant: SLUG, userName: `bench-${role}`, role, password: PASSWORD });
    }
    await owner.query('analyze');
  }
  const users = await owner.query<{ role: string; id: string }>(
    `select role, id from weld_public.users where tenant_id = $1 and user_name like 'bench-%'`,
    [tenantId],
  );
  const id = (role: string) => users.rows.find((u) => u.role === role)!.id;
  return { tenantId, engineerId: id('engineer'), viewerId: id('viewer') };
}

/** `count` welds, each set to PENDING (as the owner, before the runs). */
async function weldsToCycle(tenantId: string, count: number): Promise<string[]> {
  const { rows } = await owner.query<{ id: string }>(
    `update weld_public.welds set status = 'PENDING'
      where id in (select id from weld_public.welds where tenant_id = $1 order by id limit $2)
      returning id`,
    [tenantId, count],
  );
  return rows.map((r) => r.id);
}

/** Status changes per second from `connections` loops, each cycling its own welds. */
async function statusChanges(
  pool: pg.Pool,
  who: { tenantId: string; userId: string },
  welds: string[],
  connections: number,
): Promise<number> {
  const context = { role: 'weld_engineer' as const, ...who };
  const { rows } = await owner.query<{ id: string; status: string }>(
    'select id, status from weld_public.welds where id = any($1)',
    [welds],
  );
  const status = new Map(rows.map((r) => [r.id, r.status]));
  let done = 0;
  const deadline = Date.now() + DURATION_MS;
  await Promise.all(
    Array.from({ length: connections }, async (_, lane) => {
      const mine = welds.filter((_, i) => i % connections === lane);
      for (let i = 0; Date.now() < deadline; i++) {
        const weld = mine[i % mine.length]!;
        const [to, reason] = NEXT[status.get(weld)!]!;
        await withContext(pool, context, (c) =>
          c.query('select from weld_public.change_weld_status($1, $2, $3, null)', [
            weld,
            to,
            reason,
          ]),
        );
        status.set(weld, to);
        done++;
      }
    }),
  );
  return done / (DURATION_MS / 1000);
}

/** At least `count` events in the tenant: updates of its welds, 20,000 to a transaction. */
async function eventsOf(tenantId: string, count: number): Promise<void> {
  const have = await owner.query<{ n: number }>(
    'select count(*)::int as n from weld_public.events where tenant_id = $1',
    [tenantId],
  );
  let n = have.rows[0]!.n;
  if (n >= count) return;
  log(`writing ${(count - n).toLocaleString('en')} events (once; kept in bench/.data)`);
  for (let round = 0; n < count; round++) {
    const { rowCount } = await owner.query(
      `update weld_public.welds set material = 'A106-B round ' || $2::text where tenant_id = $1`,
      [tenantId, round],
    );
    n += rowCount ?? 0;
  }
  await owner.query('analyze weld_public.events');
}

interface Timing {
  p50: number;
  p95: number;
  max: number;
  bytes: number;
}

/** GET /events?after=X&limit=1000 over HTTP against the service as its own process. */
async function feedPages(tenantId: string, _viewerId: string): Promise<Timing> {
  const started = await start();
  service = started.child;
  const host = `${SLUG}.bench`;
  const login = await call(started.port, host, 'POST', '/auth/login', {
    userName: 'bench-viewer',
    password: PASSWORD,
  });
  const token = (login.json as { accessToken: string }).accessToken;
  // Every event placed (ids given after commit, migration 000023), as the server's relay does.
  while ((await owner.query<{ n: number }>('select weld_hidden.place_events() as n')).rows[0]!.n);
  await owner.query('analyze weld_public.events');
  const { rows } = await owner.query<{ low: string; high: string }>(
    `select min(id)::text as low, max(id)::text as high from weld_public.events where tenant_id = $1`,
    [tenantId],
  );
  const low = Number(rows[0]!.low);
  const high = Number(rows[0]!.high);
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 60; i++) {
    const after = low + Math.floor(Math.random() * (high - low - 2000));
    const t0 = performance.now();
    const res = await call(
      started.port,
      host,
      'GET',
      `/events?after=${after}&limit=1000`,
      undefined,
      token,
    );
    const took = performance.now() - t0;
    const items = (res.json as { items: unknown[] }).items;
    if (res.status !== 200 || items.length !== 1000) {
      throw new Error(`GET /events answered ${res.status} with ${items?.length} items`);
    }
    bytes = res.bytes;
    if (i >= 10) times.push(took); // the first 10 warm the connections and the plans
  }
  times.sort((x, y) => x - y);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  const timing = { p50: at(0.5), p95: at(0.95), max: times.at(-1)!, bytes };
  log(
    `GET /events limit=1000: p50 ${timing.p50.toFixed(1)} ms, p95 ${timing.p95.toFixed(1)} ms, max ${timing.max.toFixed(1)} ms (${(bytes / 1024).toFixed(0)} KiB)`,
  );
  return timing;
}

function start(): Promise<{ child: ChildProcess; port: number }> {
  return startService(rootUrl, path.join(DATA_DIR, 'events-service.log'));
}

async function call(
  port: number,
  host: string,
  method: string,
  urlPath: string,
  body?: unknown,
  token?: string,
) {
  const { status, text } = await callService(agent, port, {
    host,
    method,
    path: urlPath,
    token,
    body,
  });
  return { status, json: text ? (JSON.parse(text) as unknown) : undefined, bytes: text.length };
}

/** Replaces the "Events" section of bench/RESULTS.md with this run's numbers. */
function record(
  throughput: Array<{ connections: number; without: number[]; with: number[] }>,
  feed: Timing,
): void {
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const lines = [
    '## Events (`npm run bench:events`)',
    '',
    `${when} UTC, a tenant of 20,000 seeded welds, embedded PostgreSQL 18 with its default`,
    'durability (fsync and synchronous_commit on) on a 2-core VM. Status changes: the SQL of',
    `PATCH /welds/{id}/status, one transaction each, for ${DURATION_MS / 1000} s per run, runs alternating`,
    'without and with the outbox trigger on welds (two of each). The feed: GET /events?limit=1000',
    `at random cursors over HTTP, one at a time, 50 requests after 10 warm-up ones, among`,
    `${EVENTS.toLocaleString('en')} events.`,
    '',
    '| case | without outbox | with outbox | cost | target | met |',
    '| --- | --- | --- | --- | --- | --- |',
    ...throughput.map((r) => {
      const off = mean(r.without);
      const on = mean(r.with);
      const cost = (1 - on / off) * 100;
      return `| status changes/s, ${r.connections} connections | ${r.without.map((x) => x.toFixed(0)).join(', ')} | ${r.with.map((x) => x.toFixed(0)).join(', ')} | ${cost.toFixed(1)} % | <= 15 % | ${cost <= 15 ? 'yes' : '**no**'} |`;
    }),
    '',
    '| case | p50 ms | p95 ms | max ms | target | met |',
    '| --- | --- | --- | --- | --- | --- |',
    `| GET /events, 1,000 events (${(feed.bytes / 1024).toFixed(0)} KiB) | ${feed.p50.toFixed(1)} | ${feed.p95.toFixed(1)} | ${feed.max.toFixed(1)} | < 50 ms | ${feed.p50 < 50 ? 'yes' : '**no**'} |`,
    '',
  ];
  const file = path.join(ROOT, 'bench', 'RESULTS.md');
  const text = fs.readFileSync(file, 'utf8');
  const start = text.indexOf('## Events (`npm run bench:events`)');
  const end = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
  const next =
    start < 0
      ? `${text.trimEnd()}\n\n${lines.join('\n')}`
      : `${text.slice(0, start)}${lines.join('\n')}${end < 0 ? '' : text.slice(end)}`;
  fs.writeFileSync(file, next);
  log('results written to bench/RESULTS.md');
}
