// `npm test`: starts one throwaway PostgreSQL (the embedded binaries, in a temp dir), builds a
// migrated template database, runs ava with the cluster's URL in the environment, and removes
// the cluster afterwards. Test files copy the template (test/helpers/database.ts), so each gets
// a database of its own in milliseconds. Arguments go to ava: `npm test -- test/db/`.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connectDatabase } from '../db/database.ts';
import { embeddedUrl, openEmbeddedCluster } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { TEMPLATE_DATABASE } from './helpers/database.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-test-'));
// Durability buys nothing in a cluster that is deleted after the run.
const cluster = await openEmbeddedCluster({
  dataDir,
  port: 0,
  settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
});
let exitCode = 1;
try {
  const template = await connectDatabase({
    kind: 'root',
    rootUrl: embeddedUrl(cluster, TEMPLATE_DATABASE),
  });
  await migrate(template);

  const ava = spawn(
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
  exitCode = await new Promise<number>((resolve) => ava.once('exit', (code) => resolve(code ?? 1)));
} finally {
  await cluster.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(exitCode);
