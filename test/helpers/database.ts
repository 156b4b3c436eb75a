// Databases for tests, on the cluster test/run.ts started (WELD_TEST_CLUSTER_URL). Each test file
// gets its own database, copied from the migrated template, and drops it when done.
import { randomBytes } from 'node:crypto';
/** Anything that can run clean-up after a test: ava's `t`, or a file-level list for hooks. */
export interface Teardown {
  teardown(fn: () => unknown): void;
}
import pg from 'pg';
import { connectClient, connectDatabase, type DatabaseTarget } from '../../db/database.ts';

export const TEMPLATE_DATABASE = 'weld_template';

export function clusterUrl(): string {
  const url = process.env.WELD_TEST_CLUSTER_URL;
  if (!url) throw new Error('No test cluster: run the tests with `npm test` (test/run.ts)');
  return url;
}

/** The superuser URL of a database of the test cluster. */
export function databaseUrl(name: string): string {
  const url = new URL(clusterUrl());
  url.pathname = '/' + name;
  return url.href;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

export async function superuserQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<R[]> {
  const client = await connectClient(url);
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** A database that is not created yet; dropped after the test file if something made it. */
export function freshDatabaseUrl(t: Teardown, prefix = 'fresh'): string {
  const name = uniqueName(prefix);
  t.teardown(async () => {
    // graphile-migrate (which these databases are migrated with) ends its pools a moment after a
    // command, and exits the process if one of their connections meets an error meanwhile: as a
    // forced drop terminating it would (a run of the suite died of it). Let them end first.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await dropDatabase(name);
  });
  return databaseUrl(name);
}

/** A migrated database of the test's own, with the service's roles ready to log in. */
export async function migratedDatabase(
  t: Teardown,
): Promise<{ rootUrl: string; target: DatabaseTarget }> {
  const name = uniqueName('t');
  await superuserQuery(clusterUrl(), `create database ${name} template ${TEMPLATE_DATABASE}`);
  t.teardown(() => dropDatabase(name));
  const rootUrl = databaseUrl(name);
  return { rootUrl, target: await connectDatabase({ kind: 'root', rootUrl }) };
}

async function dropDatabase(name: string): Promise<void> {
  await superuserQuery(clusterUrl(), `drop database if exists ${name} with (force)`);
}
