// `npm test`: starts one throwaway PostgreSQL (the embedded binaries, in a temp dir), builds a
// migrated template database, runs ava with the cluster's URL in the environment, and removes
// the cluster afterwards. Test files copy the template (test/helpers/database.ts), so each gets
// a database of its own in milliseconds. Arguments go to ava: `npm test -- test/db/`. The whole
// suite (no arguments) runs the database tests a second time on PostgreSQL 15 (see the end).
//
// The web app's tests (test/browser/) drive Debian's Chromium: when it is missing, the run
// installs it first with apt-get (test/browser/install-chromium.sh), or says how.
//
// The temp dir holds the cluster's superuser secret, so it goes on every way out: a failed
// start, a failed run, SIGINT or SIGTERM. So does the cluster's home under /var/lib when, as
// root, the postgres user could not reach the temp dir (db/embedded-staging.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, embeddedMajor, type PostgresMajor } from '../db/config.ts';
import { connectDatabase } from '../db/database.ts';
import {
  embeddedUrl,
  openEmbeddedCluster,
  removeEmbeddedCluster,
  type EmbeddedCluster,
} from '../db/embedded.ts';
import { applyCurrentMigration, migrate } from '../db/migrate.ts';
import { TEMPLATE_DATABASE } from './helpers/database.ts';

/** The oldest PostgreSQL major the service supports (README). */
const OLDEST_MAJOR: PostgresMajor = '15';

// A signal ends the run at the next step, through the same clean-up as any other end: cleaning
// up at once, beside a start still in progress, could miss what that start makes next.
let stoppedBy: NodeJS.Signals | undefined;
let ava: ChildProcess | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stoppedBy = signal;
    ava?.kill(signal);
  });
}
const unlessStopped = () => {
  if (stoppedBy) throw new Error(`stopped by ${stoppedBy}`);
};

const files = process.argv.slice(2);

// Chromium, for the browser tests: only when the run includes them (every file, or a path that
// is or holds test/browser), so a database test runs where Chromium cannot be installed.
const browserDir = path.resolve('test/browser');
const withBrowser =
  files.length === 0 ||
  files.some((file) => {
    const named = path.resolve(file);
    return named.startsWith(browserDir) || browserDir.startsWith(named + path.sep);
  });
if (withBrowser) {
  const install = spawnSync('bash', [path.resolve('test/browser/install-chromium.sh')], {
    stdio: 'inherit',
  });
  if (install.status !== 0) process.exit(1);
}

/**
 * One pass: a cluster of the given PostgreSQL major, a migrated template, ava over `files` (none:
 * every test file). Resolves ava's exit code (1 when the cluster could not be made).
 */
async function pass(major: PostgresMajor, files: string[]): Promise<number> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-test-'));
  let cluster: EmbeddedCluster | undefined;
  try {
    // Durability buys nothing in a cluster that is deleted after the run.
    cluster = await openEmbeddedCluster({
      dataDir,
      port: 0,
      major,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    });
    const template = await connectDatabase({
      kind: 'root',
      rootUrl: embeddedUrl(cluster, TEMPLATE_DATABASE),
    });
    unlessStopped();
    await migrate(template);
    if (await applyCurrentMigration(template)) console.log('migrations/current.sql applied');
    unlessStopped();

    const child = spawn(
      process.execPath,
      [path.resolve('node_modules/ava/entrypoints/cli.mjs'), ...files],
      {
        stdio: 'inherit',
        env: {
          ...process.env,
          GRAPHILE_ENV: process.env.GRAPHILE_ENV ?? 'production',
          WELD_TEST_CLUSTER_URL: embeddedUrl(cluster, 'postgres'),
        },
      },
    );
    ava = child;
    return await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  } catch (error) {
    // What the operator must fix (a directory PostgreSQL cannot reach) in one line; bugs in full.
    if (!stoppedBy) console.error(error instanceof ConfigError ? error.message : error);
    return 1;
  } finally {
    await cluster?.stop();
    await removeEmbeddedCluster(dataDir);
  }
}

// The whole suite on the chosen major (EMBEDDED_PG_MAJOR, default 18); then, when no files were
// named, the database tests again on the oldest major the README promises, so both ends of
// "PostgreSQL 15 to 18" are tested on every run. (16 and 17: EMBEDDED_PG_MAJOR=16 npm test.)
const major = embeddedMajor();
let exitCode = await pass(major, files);
if (exitCode === 0 && files.length === 0 && major !== OLDEST_MAJOR && !stoppedBy) {
  console.log(`\nThe database tests again, on PostgreSQL ${OLDEST_MAJOR}:`);
  exitCode = await pass(OLDEST_MAJOR, ['test/db/']);
}
process.exit(stoppedBy ? 128 + os.constants.signals[stoppedBy] : exitCode);
