// `npm run fuzz`: the fuzz test (test/http/fuzz.test.ts) with many more requests and a seed of its
// own, printed first so that a failure can be run again:
//
//   npm run fuzz                                  20,000 requests, a random seed
//   FUZZ_SEED=123 FUZZ_RUNS=50000 npm run fuzz    that seed, that many requests
//   npm run fuzz -- --match='fuzz /welds*'        one group of operations (ava's --match)
//
// A failure prints the request, the answer, the seed and fast-check's path; FUZZ_SEED and
// FUZZ_RUNS as printed (and FUZZ_PATH with --match for the group) replay it.
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import path from 'node:path';

const given = process.env.FUZZ_SEED;
const seed = given && given !== 'random' ? given : String(randomInt(2 ** 31));
const runs = process.env.FUZZ_RUNS || '20000';
console.log(
  `fuzz: seed ${seed}, ${runs} requests; to run it again: FUZZ_SEED=${seed} FUZZ_RUNS=${runs} npm run fuzz`,
);

const child = spawn(
  process.execPath,
  [
    path.join(import.meta.dirname, 'run.ts'),
    // A group of many requests may take minutes: ava's default (2 minutes) would cut it off.
    '--timeout=30m',
    'test/http/fuzz.test.ts',
    ...process.argv.slice(2),
  ],
  {
    cwd: path.resolve(import.meta.dirname, '..'),
    stdio: 'inherit',
    env: { ...process.env, FUZZ_SEED: seed, FUZZ_RUNS: runs },
  },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.once('exit', (code, signal) => {
  console.log(`fuzz: seed ${seed}, ${runs} requests: ${code === 0 ? 'passed' : 'FAILED'}`);
  process.exit(code ?? (signal ? 1 : 0));
});
