// Migrations with graphile-migrate: committed/ holds the history (never edited), current.sql the
// work in progress, bootstrap.sql the superuser part that runs before them, and fixtures/ the
// current text of every function, view and trigger, one file each, which a migration takes in with
// `--!include functions/<schema>.<name>.sql` (`commit` copies the text into the committed file).
//
// As a module: the policy the server and the admin CLI share (migrate at start, or refuse to
// start against a database that is behind). As a command, the developer workflow:
//
//   node db/migrate.ts migrate    apply committed migrations        (npm run db:migrate)
//   node db/migrate.ts status     list the ones not yet applied
//   node db/migrate.ts watch      re-run current.sql on every save    (npm run db:watch)
//   node db/migrate.ts commit     turn current.sql into the next committed migration
//   node db/migrate.ts uncommit   move the latest committed migration back into current.sql
//   node db/migrate.ts reset      drop and rebuild the database (embedded or DATABASE_URL only)
//
// Each finds the database the way the server does (DATABASE_URL, the split URLs, or the
// embedded cluster, which it starts if the server is not running).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as gm from 'graphile-migrate';
// graphile-migrate keeps each pool for 200 ms after use and exits the process if one errors
// meanwhile (as when the embedded cluster stops); we close them as soon as a command is done.
import { clearAllPools } from 'graphile-migrate/dist/pgReal.js';
import { loadDatabaseConfig, type DatabaseSource } from './config.ts';
import { connectDatabase, MIGRATIONS_DIR, type DatabaseTarget } from './database.ts';

type Log = (message: string) => void;

export function migrationSettings(target: DatabaseTarget, log: Log = () => {}): gm.Settings {
  const shadow = new URL(target.rootUrl ?? target.ownerUrl);
  shadow.pathname += '_shadow';
  if (!target.rootUrl) {
    // The shadow database is only reached through the root URL's rights; without one, graphile-
    // migrate still wants a well-formed URL for the commands that never touch it.
    shadow.username = new URL(target.ownerUrl).username;
  }
  return {
    connectionString: target.ownerUrl,
    shadowConnectionString: withUser(shadow.href, target.ownerUrl),
    ...(target.rootUrl && { rootConnectionString: target.rootUrl }),
    databaseOwner: 'weld_owner',
    migrationsFolder: MIGRATIONS_DIR,
    // A reset database (and the shadow database of `watch`) gets the superuser bootstrap first.
    afterReset: [{ _: 'sql', file: 'bootstrap.sql', root: true }],
    logger: new gm.Logger(() => (level, message) => {
      if (String(level) !== 'debug') log(message);
    }),
  };
}

/** The shadow database is used as the owner; only the database name differs. */
function withUser(url: string, ownerUrl: string): string {
  const result = new URL(url);
  const owner = new URL(ownerUrl);
  result.username = owner.username;
  result.password = owner.password;
  return result.href;
}

async function closingPools<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } finally {
    clearAllPools();
  }
}

export async function pendingMigrations(target: DatabaseTarget): Promise<string[]> {
  const { remainingMigrations } = await closingPools(gm.status(migrationSettings(target)));
  return remainingMigrations ?? [];
}

/**
 * Applies the committed migrations. Two instances starting together on one database (a rolling
 * deploy, two replicas) both try: graphile-migrate lets one hold its advisory lock and fails the
 * other at once, so the other waits and tries again, and finds the work done.
 */
export async function migrate(target: DatabaseTarget, log?: Log): Promise<void> {
  const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await closingPools(gm.migrate(migrationSettings(target, log)));
    } catch (error) {
      const locked = (error as Error).message === 'Failed to get exclusive lock';
      if (!locked || Date.now() > deadline) throw error;
      if (attempt === 1) log?.('another process is migrating this database; waiting for it');
      await sleep(250);
    }
  }
}

/**
 * Runs migrations/current.sql (the migration being written) after the committed ones, when it
 * holds more than its placeholder: `npm test` then tests the work in progress. A clean checkout's
 * current.sql is the placeholder, so CI and releases test exactly what is committed.
 */
export async function applyCurrentMigration(target: DatabaseTarget, log?: Log): Promise<boolean> {
  const text = await readFile(path.join(MIGRATIONS_DIR, 'current.sql'), 'utf8').catch(() => '');
  const work = text.replace(/^--(?!!\s*include\b).*$/gm, '').trim(); // comments are no work
  if (work === '') return false;
  await closingPools(gm.watch(migrationSettings(target, log), true));
  return true;
}

/** How long a start waits for another process's migration (a long one may take minutes). */
const MIGRATION_LOCK_WAIT_MS = 10 * 60_000;

/**
 * Connects to the configured database and brings it to the committed schema, or, when told not
 * to migrate, refuses with a clear message if it is behind. Used by the server and the CLI.
 */
export async function openMigratedDatabase(
  source: DatabaseSource,
  options: { migrate: boolean; log?: Log; embeddedSettings?: Record<string, string> },
): Promise<DatabaseTarget> {
  const target = await connectDatabase(source, options.embeddedSettings);
  try {
    if (options.migrate) {
      await migrate(target, options.log);
    } else {
      const pending = await pendingMigrations(target);
      if (pending.length > 0) {
        throw new Error(
          `The database is ${pending.length} migration(s) behind (next: ${pending[0]}) and ` +
            'MIGRATE_ON_START is false: run `npm run db:migrate`, or start with MIGRATE_ON_START=true',
        );
      }
    }
    return target;
  } catch (error) {
    await target.release();
    throw error;
  }
}

async function main(command: string | undefined, args: string[]): Promise<void> {
  const config = loadDatabaseConfig();
  const log: Log = (message) => console.log(message);
  const target = await connectDatabase(config.database);
  const needsRoot = ['watch', 'commit', 'uncommit', 'reset'];
  try {
    if (command && needsRoot.includes(command) && !target.rootUrl) {
      throw new Error(`'${command}' needs DATABASE_URL (or the embedded database)`);
    }
    const settings = migrationSettings(target, log);
    switch (command) {
      case 'migrate':
        await migrate(target, log);
        break;
      case 'status': {
        const pending = await pendingMigrations(target);
        console.log(pending.length ? `pending: ${pending.join(', ')}` : 'up to date');
        process.exitCode = pending.length ? 1 : 0;
        break;
      }
      case 'watch':
        if (args.includes('--once')) {
          await closingPools(gm.watch(settings, true));
        } else {
          await gm.watch(settings, false);
          await untilInterrupted(); // then release the embedded cluster, if we started it
        }
        break;
      case 'commit':
        await closingPools(gm.commit(settings, args[0])); // none: current.sql's --! Message
        break;
      case 'uncommit':
        await closingPools(gm.uncommit(settings));
        break;
      case 'reset':
        if (!args.includes('--erase')) throw new Error("'reset' drops the database: add --erase");
        await closingPools(gm.reset(settings, false));
        break;
      default:
        throw new Error('usage: node db/migrate.ts migrate|status|watch|commit|uncommit|reset');
    }
  } finally {
    // Some commands leave a pool referenced a moment longer; let graphile-migrate's keepalive
    // (200 ms) lapse so no pool sees the embedded cluster stop.
    await new Promise((resolve) => setTimeout(resolve, 300));
    clearAllPools();
    await target.release();
  }
}

function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

if (import.meta.main) {
  main(process.argv[2], process.argv.slice(3)).then(
    // graphile-migrate's watch keeps its file watcher open and offers no way to close it: without
    // this exit, the first Ctrl-C would release the database and leave the process running.
    () => process.argv[2] === 'watch' && process.exit(),
    (error: Error) => {
      console.error(error.message);
      process.exit(1);
    },
  );
}
