// `npm test`: starts one throwaway PostgreSQL (the embedded binaries, in a temp dir), builds a
// migrated template database, runs ava with the cluster's URL in the environment, and removes
// the cluster afterwards. Test files copy the template (test/helpers/database.ts), so each gets
// a database of its own in milliseconds. Arguments go to ava: `npm test -- test/db/`.
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
import { ConfigError } from '../db/config.ts';
import { connectDatabase } from '../db/database.ts';
import {
  embeddedUrl,
  openEmbeddedCluster,
  removeEmbeddedCluster,
  type EmbeddedCluster,
} from '../db/embedded.ts';
import { applyCurrentMigration, migrate } from '../db/migrate.ts';
import { TEMPLATE_DATABASE } from './helpers/database.ts';

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

const install = spawnSync('bash', [path.resolve('test/browser/install-chromium.sh')], {
  stdio: 'inherit',
});
if (install.status !== 0) process.exit(1);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-test-'));
let cluster: EmbeddedCluster | undefined;
let exitCode = 1;
try {
  // Durability buys nothing in a cluster that is deleted after the run.
  cluster = await openEmbeddedCluster({
    dataDir,
    port: 0,
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
    [path.resolve('node_modules/ava/entrypoints/cli.mjs'), ...process.argv.slice(2)],
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
  exitCode = await new Promise<number>((resolve) =>
    child.once('exit', (code) => resolve(code ?? 1)),
  );
} catch (error) {
  // What the operator must fix (a directory PostgreSQL cannot reach) in one line; bugs in full.
  if (!stoppedBy) console.error(error instanceof ConfigError ? error.message : error);
} finally {
  await cluster?.stop();
  await removeEmbeddedCluster(dataDir);
}
process.exit(stoppedBy ? 128 + os.constants.signals[stoppedBy] : exitCode);
