// Benchmark of GraphQL's share of the service (issue F14): while one tenant's users send the
// costliest GraphQL the budget lets through, as fast as they are answered, how long does another
// tenant wait for its GraphQL and its REST?            target: p99 under 1 s for both
//
// The service runs as its own process (server/main.ts) with its default limits (GraphQL pool of
// 5, 2 requests in flight per user, 4 per tenant, a 10 s deadline) on an embedded PostgreSQL 18.
// The attacking tenant has 20,000 welds (about 160 test packages of 125 welds) and 4 viewers,
// each running 3 loops (12 requests at once, more than the limits allow: the rest are 429) of:
//   - readiness: as many aliases of allTestPackages(first: 100) { nodes { ready } } as the budget
//     holds (9: 90,018 of 100,000);
//   - filters: 300 aliases of allWelds(first: 1) filtered on a text no weld has (each scans the
//     tenant's welds);
//   - a computed filter: 19 aliases of allTestPackages(first: 1) filtered on ready.
// The other tenant (2,000 welds, one viewer) meanwhile sends, one at a time, a GraphQL page of 50
// welds and GET /welds?limit=50, alternating, for the same time; and the same without attackers
// first, for comparison.
//
//   npm run bench:graphql [-- --duration 20]
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectClient } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { seedTenant } from '../db/seed/index.ts';
import { addTenant } from '../db/tenants.ts';
import { addUser } from '../db/users.ts';
import { callService, startService } from './service.ts';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '20' } },
});
const DURATION_MS = Number(values.duration) * 1000;
const ROOT = path.resolve(import.meta.dirname, '..');
const DATA_DIR = path.join(ROOT, 'bench', '.data');
const PASSWORD = 'bench password, not a secret';
const ATTACKER = 'attacker.bench';
const VICTIM = 'victim.bench';
const ATTACKING_USERS = 4;
const LOOPS_PER_USER = 3;
const log = (message: string) => console.log(`[bench:graphql] ${message}`);

const aliases = (count: number, field: (i: number) => string) =>
  `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${field(i)}`).join(' ')} }`;
const ATTACKS = {
  readiness: aliases(9, () => 'allTestPackages(first: 100) { nodes { ready } }'),
  filters: aliases(
    300,
    (i) => `allWelds(first: 1, filter: { weldNumber: { includes: "no such weld ${i}" } }) {
      nodes { rowId } }`,
  ),
  computedFilter: aliases(
    19,
    () => 'allTestPackages(first: 1, filter: { ready: { equalTo: true } }) { nodes { rowId } }',
  ),
};
const agent = new http.Agent({ keepAlive: true });
const VICTIM_GRAPHQL = '{ allWelds(first: 50) { nodes { rowId weldNumber status } } }';

fs.mkdirSync(DATA_DIR, { recursive: true });
const cluster = await openEmbeddedCluster({ dataDir: DATA_DIR, port: 0 });
const rootUrl = embeddedUrl(cluster, 'weld_graphql_bench');
const target = await openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: true });
const owner = await connectClient(target.ownerUrl);
let service: ChildProcess | undefined;
try {
  await tenant('attacker', 20_000, ATTACKING_USERS);
  await tenant('victim', 2_000, 1);
  await owner.query('analyze');
  const started = await start();
  service = started.child;
  const port = started.port;
  const victimToken = await login(port, VICTIM, 'viewer1');
  const attackerTokens = await Promise.all(
    Array.from({ length: ATTACKING_USERS }, (_, i) => login(port, ATTACKER, `viewer${i + 1}`)),
  );

  log(`alone: the victim for ${DURATION_MS / 1000} s`);
  await victim(port, victimToken, 2_000); // warm-up
  const alone = await victim(port, victimToken, DURATION_MS);

  log(`under attack: ${ATTACKING_USERS * LOOPS_PER_USER} attacking loops`);
  const stop = { at: Date.now() + DURATION_MS + 2_000 };
  const outcomes = new Map<string, number>();
  const attackTimes: number[] = [];
  const attackers = attackerTokens.flatMap((token) =>
    Array.from({ length: LOOPS_PER_USER }, async (_, loop) => {
      const kinds = Object.values(ATTACKS);
      for (let i = loop; Date.now() < stop.at; i++) {
        const t0 = performance.now();
        const res = await call(port, ATTACKER, 'POST', '/graphql', token, {
          query: kinds[i % kinds.length],
        });
        const outcome =
          res.status === 200 && res.text.includes('"errors"')
            ? '200 with errors'
            : String(res.status);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (res.status === 200) attackTimes.push(performance.now() - t0);
        // A refused attacker comes straight back, as a hostile client would (Retry-After ignored).
        if (res.status === 429) await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // let the attack take hold
  const attacked = await victim(port, victimToken, DURATION_MS);
  await Promise.all(attackers);

  const summary = {
    alone,
    attacked,
    attacker: { outcomes: Object.fromEntries(outcomes), answered: stats(attackTimes) },
  };
  console.log(JSON.stringify(summary, null, 2));
  record(summary);
} finally {
  service?.kill('SIGTERM');
  await owner.end();
  await cluster.stop();
}

interface Stats {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

function stats(times: number[]): Stats {
  const sorted = [...times].sort((x, y) => x - y);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 };
}

/** The other tenant's requests, one at a time, GraphQL and REST alternating. */
async function victim(port: number, token: string, ms: number) {
  const graphql: number[] = [];
  const rest: number[] = [];
  const failures: string[] = [];
  const until = Date.now() + ms;
  for (let i = 0; Date.now() < until; i++) {
    const t0 = performance.now();
    const res =
      i % 2 === 0
        ? await call(port, VICTIM, 'POST', '/graphql', token, { query: VICTIM_GRAPHQL })
        : await call(port, VICTIM, 'GET', '/welds?limit=50', token);
    const took = performance.now() - t0;
    if (res.status !== 200 || res.text.includes('"errors"')) {
      failures.push(`${i % 2 === 0 ? 'GraphQL' : 'REST'} ${res.status}`);
    }
    (i % 2 === 0 ? graphql : rest).push(took);
  }
  return { graphql: stats(graphql), rest: stats(rest), failures: failures.length };
}

/** A tenant with seeded welds and `viewers` viewers (viewer1, viewer2, ...), made once. */
async function tenant(slug: string, welds: number, viewers: number): Promise<void> {
  const existing = await owner.query('select 1 from weld_public.tenants where slug = $1', [slug]);
  if (existing.rowCount) return;
  await addTenant(owner, { slug, origins: [`http://${slug}.bench`] });
  for (let i = 1; i <= viewers; i++) {
    await addUser(owner, {
      tenant: slug,
      userName: `viewer${i}`,
      role: 'viewer',
      password: PASSWORD,
    });
  }
  log(`seeding ${slug}: ${welds.toLocaleString('en')} welds (once; kept in bench/.data)`);
  await owner.query('begin');
  await seedTenant(owner, slug, { isos: welds / 50, weldsPerIso: 50, seed: 11 });
  await owner.query('commit');
}

async function login(port: number, host: string, userName: string): Promise<string> {
  const res = await call(port, host, 'POST', '/auth/login', undefined, {
    userName,
    password: PASSWORD,
  });
  if (res.status !== 200) throw new Error(`login of ${userName}@${host}: ${res.status}`);
  return (JSON.parse(res.text) as { accessToken: string }).accessToken;
}

function start(): Promise<{ child: ChildProcess; port: number }> {
  return startService(rootUrl, path.join(DATA_DIR, 'graphql-service.log'));
}

function call(
  port: number,
  host: string,
  method: string,
  urlPath: string,
  token?: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return callService(agent, port, { host, method, path: urlPath, token, body });
}

/** Replaces the "GraphQL under attack" section of bench/RESULTS.md with this run's numbers. */
function record(summary: {
  alone: Awaited<ReturnType<typeof victim>>;
  attacked: Awaited<ReturnType<typeof victim>>;
  attacker: { outcomes: Record<string, number>; answered: Stats };
}): void {
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const row = (name: string, s: Stats) =>
    `| ${name} | ${s.n} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.max)} |`;
  const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
  const { alone, attacked, attacker } = summary;
  const met = attacked.graphql.p99 < 1000 && attacked.rest.p99 < 1000 && attacked.failures === 0;
  const lines = [
    '## GraphQL under attack (`npm run bench:graphql`)',
    '',
    `${when} UTC, embedded PostgreSQL 18 on a 2-core VM, the service with its default limits,`,
    `${DURATION_MS / 1000} s per phase. The attacking tenant (20,000 welds) sends the costliest`,
    `documents the budget lets through from ${ATTACKING_USERS * LOOPS_PER_USER} loops of ${ATTACKING_USERS} viewers; the other`,
    'tenant (2,000 welds) sends a GraphQL page of 50 welds and GET /welds?limit=50, one at a time.',
    '',
    '| The other tenant | requests | p50 | p99 | max |',
    '| --- | --- | --- | --- | --- |',
    row('GraphQL, alone', alone.graphql),
    row('REST, alone', alone.rest),
    row('GraphQL, under attack', attacked.graphql),
    row('REST, under attack', attacked.rest),
    '',
    `Target (p99 under 1 s for both, no failure): ${met ? 'met' : 'NOT met'}; the other tenant's failures: ${attacked.failures}.`,
    `The attacker's answers: ${Object.entries(attacker.outcomes)
      .map(([status, n]) => `${n} × ${status}`)
      .join(
        ', ',
      )}; answered in p50 ${ms(attacker.answered.p50)}, max ${ms(attacker.answered.max)}.`,
    '',
  ];
  const file = path.join(ROOT, 'bench', 'RESULTS.md');
  const text = fs.readFileSync(file, 'utf8');
  const section = /## GraphQL under attack[\s\S]*?(?=\n## |$)/;
  const next = section.test(text)
    ? text.replace(section, lines.join('\n'))
    : `${text.trimEnd()}\n\n${lines.join('\n')}`;
  fs.writeFileSync(file, next.endsWith('\n') ? next : `${next}\n`);
  log('bench/RESULTS.md updated');
}
