// Property-based fuzzing of the REST contract (issue F10): requests to every operation of the
// OpenAPI document, read from openapiDocument() (paths x methods), so a new operation is fuzzed
// without a line here. Each request mixes valid parts (a real token of the tenant, ids of real
// rows, a body that follows the operation's schema) with hostile ones (missing, garbage, tampered
// and foreign tokens; garbage, huge and duplicated cookies; If-Match, Content-Type and
// Idempotency-Key of every wrong kind; bodies with wrong types, huge strings, deep nesting, NUL
// characters, bytes that are no UTF-8, numbers out of range, extra properties, arrays instead of
// objects), and every answer is checked:
//
//   1. no 5xx (a documented 503 would be allowed; none is expected on a healthy database)
//   2. every 4xx is application/problem+json with type, title, status (= the HTTP status) and
//      detail (POST /graphql may answer what GraphQL refuses in GraphQL's own media types)
//   3. the answer matches the OpenAPI document (helpers/openapi.ts)
//   4. a refused write (POST, PUT, PATCH, DELETE answered other than 2xx) changed nothing: the
//      row count and a hash of the rows of every table are the same after it as before
//
// A request is first a plan, the value fast-check generates, shrinks and prints: ids are indexes
// into pools that follow what the fuzzer creates and deletes (IdRef), huge strings are their
// length (Huge), and only `materialize` makes the bytes that are sent.
//
// Requests stay within what node's HTTP parser takes (16 KiB of request line and headers):
// beyond, node itself answers 431 with no body, before the service sees the request.
//
// The parts: fuzz-operations.ts (settings, operations), fuzz-world.ts, fuzz-plans.ts (plans and
// their generators), fuzz-requests.ts (materialize, send), fuzz-checks.ts (the invariants);
// this module runs them (fuzz) and re-exports what test/http/fuzz.test.ts uses.
import * as fc from 'fast-check';
import { type FuzzSettings, type Operation, UNSAFE, describeOperation } from './fuzz-operations.ts';
import { type FuzzWorld, UUID } from './fuzz-world.ts';
import { type Draw, requestPlan } from './fuzz-plans.ts';
import { type SentRequest, materialize, type FuzzResponse, send } from './fuzz-requests.ts';
import { violations, KNOWN_ISSUES, describeExchange } from './fuzz-checks.ts';

export {
  DEFAULT_RUNS,
  DEFAULT_SEED,
  describeOperation,
  fuzzSettings,
  operationGroups,
  operations,
} from './fuzz-operations.ts';
export type { FuzzSettings, Operation } from './fuzz-operations.ts';
export { fuzzWorld } from './fuzz-world.ts';
export type { FuzzWorld } from './fuzz-world.ts';
export { requestPlan } from './fuzz-plans.ts';
export type { RequestPlan } from './fuzz-plans.ts';
export { materialize, send } from './fuzz-requests.ts';
export type { FuzzResponse, SentRequest } from './fuzz-requests.ts';
export { describeExchange, KNOWN_ISSUES, violations } from './fuzz-checks.ts';

//------------------------------------------------------------------------------------------------
// The run

export interface FuzzReport {
  requests: number;
  /** Answers by operation and status. */
  statuses: Map<string, Map<number, number>>;
  /** Milliseconds waiting for answers, and taking fingerprints. */
  answerMs: number;
  fingerprintMs: number;
  /** The slowest requests: milliseconds, method and path. */
  slowest: Array<[number, string]>;
  /** Requests that met a known issue (KNOWN_ISSUES), by its name. */
  known: Map<string, number>;
  /** The failure fast-check found (and shrank), in words, and its path, if any. */
  failure: string | undefined;
  path: string | undefined;
}

/** Keeps the pools what the service holds: a created item joins, a deleted one leaves. */
export function follow(world: FuzzWorld, o: Operation, req: SentRequest, res: FuzzResponse): void {
  const pool = world.pools.get(o.pool) ?? [];
  const id = (res.json as { id?: unknown } | undefined)?.id;
  if (res.status === 201 && typeof id === 'string' && UUID.test(id)) {
    world.pools.set(o.pool, [...pool, id]);
  }
  if (req.method === 'DELETE' && res.status === 204) {
    const gone = req.path.split('/').at(-1)!.toLowerCase();
    const kept = pool.filter((p) => p !== gone);
    world.pools.set(o.pool, kept);
  }
}

/**
 * Sends `runs` requests to the operations (each request to one drawn at random), checking the
 * invariants on every answer. The first failure is shrunk for up to `settings.shrinkMs`, then
 * reported with the request and the answer, the seed and the path that replay it.
 */
export async function fuzz(
  world: FuzzWorld,
  list: Operation[],
  runs: number,
  settings: FuzzSettings,
): Promise<FuzzReport> {
  const report: FuzzReport = {
    requests: 0,
    statuses: new Map(),
    answerMs: 0,
    fingerprintMs: 0,
    slowest: [],
    known: new Map(),
    failure: undefined,
    path: undefined,
  };
  const draw: Draw = {
    poolNames: [...world.pools.keys()],
    values: world.values,
    refreshTokens: world.spare.map((s) => s.refreshToken),
  };
  const fingerprint = async () => {
    const started = Date.now();
    const print = await world.fingerprint();
    report.fingerprintMs += Date.now() - started;
    return print;
  };
  let failedAt: number | undefined;
  const fail = (message: string) => {
    failedAt ??= Date.now();
    throw new Error(message);
  };

  // Deletes are drawn less often: they end the rows the other operations draw on.
  const plans = list.map((o) => ({
    weight: o.method === 'DELETE' ? 1 : 3,
    arbitrary: requestPlan(o, draw),
  }));
  const property = fc.asyncProperty(fc.oneof(...plans), async (plan) => {
    // Shrinking sends each smaller candidate; past its time, the candidates pass untried, so
    // the smallest failure found so far is the one reported.
    if (failedAt !== undefined && Date.now() - failedAt > settings.shrinkMs) return;
    const o = plan.operation;
    const req = materialize(world, plan);
    const before = UNSAFE.has(o.method) ? await fingerprint() : undefined;
    const started = Date.now();
    let res: FuzzResponse;
    try {
      res = await send(world.port, req, settings.timeoutMs);
    } catch (error) {
      return fail(`- ${(error as Error).message}\n${describeExchange(req)}`);
    }
    const took = Date.now() - started;
    report.answerMs += took;
    report.slowest.push([took, `${req.method} ${req.path.slice(0, 120)} ${res.status}`]);
    report.slowest = report.slowest.sort(([a], [b]) => b - a).slice(0, 5);
    report.requests++;
    const byStatus = report.statuses.get(describeOperation(o)) ?? new Map<number, number>();
    byStatus.set(res.status, (byStatus.get(res.status) ?? 0) + 1);
    report.statuses.set(describeOperation(o), byStatus);

    const known = KNOWN_ISSUES.find((issue) => issue.matches(req, res));
    if (known) report.known.set(known.name, (report.known.get(known.name) ?? 0) + 1);
    const found = known ? [] : violations(o, req, res);
    if (before && (res.status < 200 || res.status > 299)) {
      const after = await fingerprint();
      const changed = [...after].filter(([table, print]) => before.get(table) !== print);
      if (changed.length) {
        found.push(`a refused ${o.method} changed ${changed.map(([table]) => table).join(', ')}`);
      }
    }
    if (found.length) {
      fail(`${found.map((f) => `- ${f}`).join('\n')}\n${describeExchange(req, res)}`);
    }
    follow(world, o, req, res);
  });

  const details = await fc.check(property, {
    seed: settings.seed,
    numRuns: runs,
    ...(settings.path && { path: settings.path }),
  });
  if (details.failed) {
    const [plan] = details.counterexample!;
    report.path = details.counterexamplePath ?? undefined;
    report.failure = [
      `${describeOperation(plan.operation)} broke an invariant (fast-check seed ${details.seed}, ` +
        `path "${details.counterexamplePath}", after ${details.numRuns} runs and ${details.numShrinks} shrinks):`,
      (details.errorInstance as Error | undefined)?.message ?? String(details.errorInstance),
      `plan: ${fc.stringify(plan)}`,
    ].join('\n');
  }
  return report;
}

/** Answers by status, e.g. "200 x 31, 404 x 2, 422 x 17". */
export function statusLine(byStatus: Map<number, number>): string {
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status} x ${n}`)
    .join(', ');
}
