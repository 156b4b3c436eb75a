// Where the service's memory is, for `npm run bench -- --memory` (issue F16): loaded into the
// server with node's --import, it appends one JSON line every 500 ms to BENCH_MEMORY_LOG: the
// resident set split into anonymous and file-backed pages (/proc/self/smaps_rollup; "file-backed"
// is Rss - Anonymous, so shared memory counts there), and V8's
// view of it (each heap space's size and use, memory outside the heap). The bench reads the line
// of the highest resident set back (bench/run.ts, memoryAtPeak).
import fs from 'node:fs';
import v8 from 'node:v8';

const file = process.env.BENCH_MEMORY_LOG;
const mb = (bytes: number) => Math.round(bytes / 1048576);
const rollupMb = (text: string, key: string) =>
  Math.round(Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024);

let failed = false;
if (file) {
  setInterval(() => {
    let rollup: string;
    try {
      rollup = fs.readFileSync('/proc/self/smaps_rollup', 'utf8');
    } catch (error) {
      // Not Linux, or /proc restricted: say so once, and never take the server under test down.
      if (!failed) console.error(`memory probe: ${(error as Error).message}`);
      failed = true;
      return;
    }
    const usage = process.memoryUsage();
    const spaces: Record<string, [number, number]> = {};
    for (const space of v8.getHeapSpaceStatistics()) {
      spaces[space.space_name] = [mb(space.space_size), mb(space.space_used_size)];
    }
    const line = {
      rss: mb(usage.rss),
      anonymous: rollupMb(rollup, 'Anonymous'),
      fileBacked: rollupMb(rollup, 'Rss') - rollupMb(rollup, 'Anonymous'),
      heapTotal: mb(usage.heapTotal),
      heapUsed: mb(usage.heapUsed),
      external: mb(usage.external),
      arrayBuffers: mb(usage.arrayBuffers),
      spaces,
    };
    fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
  }, 500).unref();
}
