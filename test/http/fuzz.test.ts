// Fuzzing (issue F10): random and hostile requests to every operation of the OpenAPI document,
// one test per group of operations (the first segment of their path), against the real app on
// loopback and a real database holding a seeded project. Every answer must be no 5xx, a problem
// document when it is an error, and what the contract says; a refused write must change nothing
// (helpers/fuzz.ts runs them; the generators and the invariants are in helpers/fuzz-*.ts).
//
// The seed and the number of requests come from the environment: FUZZ_SEED (a number, or
// `random`; fixed unless told), FUZZ_RUNS (requests in all, shared among the operations), and
// FUZZ_PATH to replay one counterexample. A failure names the request, the answer, the seed and
// the path. `npm run fuzz` (test/fuzz.ts) runs many more with a seed of its own.
import test, { type ExecutionContext } from 'ava';
import {
  describeOperation,
  fuzz,
  fuzzSettings,
  fuzzWorld,
  operationGroups,
  operations,
  statusLine,
  type FuzzWorld,
} from '../helpers/fuzz.ts';

const settings = fuzzSettings();
const groups = operationGroups();
const total = operations().length;

const cleanups: Array<() => unknown> = [];
const teardown = { teardown: (fn: () => unknown) => cleanups.push(fn) };
let world: FuzzWorld;

test.before(async () => {
  world = await fuzzWorld(teardown);
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

test.serial('every operation of the document is fuzzed, and the world has rows for them', (t) => {
  t.log(`seed ${settings.seed}, ${settings.runs} requests (FUZZ_SEED, FUZZ_RUNS)`);
  t.is(groups.flatMap((g) => g.operations).length, total, 'each operation in exactly one group');
  t.true(total > 60, `${total} operations`);
  // Paths with an {id} draw it from their collection: each must have rows to draw from.
  const pools = new Set(
    operations()
      .filter((o) => o.template.includes('{id}'))
      .map((o) => o.pool),
  );
  for (const pool of pools) t.true((world.pools.get(pool)?.length ?? 0) > 0, `rows of ${pool}`);
  t.true(world.foreign.length > 0, "another tenant's rows");
});

/** A group's share of the requests, by its number of operations (at least 10 per operation). */
const runsOf = (size: number) => Math.max(10 * size, Math.round((settings.runs * size) / total));

for (const group of groups) {
  test.serial(`fuzz ${group.name} (${group.operations.length} operations)`, async (t) => {
    await fuzzGroup(t, group.operations);
  });
}

async function fuzzGroup(t: ExecutionContext, list: ReturnType<typeof operations>) {
  const runs = runsOf(list.length);
  const started = Date.now();
  const report = await fuzz(world, list, runs, settings);
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  t.log(
    `${report.requests} requests in ${seconds(Date.now() - started)} ` +
      `(answers ${seconds(report.answerMs)}, fingerprints ${seconds(report.fingerprintMs)})`,
  );
  for (const [issue, n] of report.known) t.log(`known issue, met ${n} times: ${issue}`);
  t.log(`slowest: ${report.slowest.map(([ms, what]) => `${ms} ms ${what}`).join('; ')}`);
  for (const o of list) {
    const byStatus = report.statuses.get(describeOperation(o));
    t.log(`${describeOperation(o)}: ${byStatus ? statusLine(byStatus) : 'no request'}`);
  }
  if (report.failure) {
    const replay = `FUZZ_SEED=${settings.seed} FUZZ_RUNS=${settings.runs}`;
    t.fail(
      `${report.failure}\n` +
        `The run again: ${replay} node test/run.ts test/http/fuzz.test.ts\n` +
        `This counterexample alone (on a fresh world): ${replay} FUZZ_PATH="${report.path}" ` +
        `node test/run.ts test/http/fuzz.test.ts --match='${t.title}'`,
    );
    return;
  }
  // Not only refusals at the door: at least half of the operations (of groups of two or more)
  // answered a 2xx or 304 at least once.
  const reached = list.filter((o) =>
    [...(report.statuses.get(describeOperation(o))?.keys() ?? [])].some((s) => s < 400),
  );
  t.true(
    reached.length >= Math.floor(list.length / 2),
    `${reached.length} of ${list.length} operations answered a 2xx`,
  );
}
