// The real entry point as a child process: embedded and external databases, restarts,
// configuration errors, the migration policy, and an orderly stop.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { connectClient } from '../../db/database.ts';
import { removeEmbeddedCluster, runningEmbeddedCluster } from '../../db/embedded.ts';
import { loadConfig } from '../../server/config.ts';
import { freshDatabaseUrl, migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { request } from '../helpers/http.ts';
import { runCli, runServerToExit, spawnServer } from '../helpers/server.ts';

function tempDataDir(t: import('ava').ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-embedded-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A free loopback port that is not `taken`. */
async function freePortOtherThan(taken: number): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
      server.once('error', reject);
    });
    if (port !== taken) return port;
  }
}

const postmasterRunning = (dataDir: string) =>
  fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid'));

test('embedded: first start serves the demo tenant; CLI works with and without the server; restart keeps data', async (t) => {
  const dataDir = tempDataDir(t);
  const env = { DATA_DIR: dataDir };

  const first = await spawnServer(t, env);
  const listening = /"msg":"listening on ([^"]*)"/.exec(first.output())?.[1] ?? '';
  t.true(listening.includes(`demo tenant at `));
  t.true(listening.includes(`http://localhost:${first.port}`));
  t.true(listening.includes(`http://127.0.0.1:${first.port}`));
  for (const host of [`localhost:${first.port}`, `127.0.0.1:${first.port}`]) {
    const live = await request(first.port, { path: '/health/live', host });
    t.is(live.status, 200, host);
    t.deepEqual(live.json, { status: 'ok' });
  }
  // Demo users, one per role; their passwords in a file only this user can read, named in the log.
  const demoFile = path.join(dataDir, 'demo-users.txt');
  t.regex(first.output(), /"demoUsers":"[^"]*demo-users\.txt"/);
  t.is(fs.statSync(demoFile).mode & 0o777, 0o600);
  const printed = [...fs.readFileSync(demoFile, 'utf8').matchAll(/^(\w+) +(\S+) +(\S+)$/gm)];
  t.deepEqual(
    printed.map((m) => m[1]),
    ['viewer', 'inspector', 'engineer', 'admin'],
  );
  const [, , userName, password] = printed[1]!;
  const signedIn = await request(first.port, {
    method: 'POST',
    path: '/auth/login',
    host: `localhost:${first.port}`,
    body: { userName, password },
  });
  t.is(signedIn.status, 200);
  t.is(signedIn.json.user.role, 'inspector');
  t.false(first.output().includes(password!), 'no password in the output');
  for (const line of first.output().split('\n').filter(Boolean)) {
    t.notThrows(() => JSON.parse(line), `every line is JSON: ${line}`);
  }

  const unknown = await request(first.port, { path: '/health/live', host: 'unknown.test' });
  t.is(unknown.status, 404);
  t.regex(String(unknown.headers['content-type']), /application\/problem\+json/);

  // The CLI attaches to the cluster the running server started.
  const added = await runCli(['tenant', 'add', 'kept', '--origin', 'http://kept.test'], env);
  t.is(added.code, 0, added.output);
  t.is((await request(first.port, { path: '/health/live', host: 'kept.test' })).status, 200);
  t.true(postmasterRunning(dataDir), 'the CLI left the server its database');

  t.is(await first.stop('SIGTERM'), 0);
  t.false(postmasterRunning(dataDir), 'stopping the server stopped PostgreSQL');

  // Without a server the CLI starts the cluster itself, and stops it again.
  const listed = await runCli(['tenant', 'list'], env);
  t.is(listed.code, 0, listed.output);
  t.regex(
    listed.stdout,
    /^demo\s+Demo project\s+http:\/\/127\.0\.0\.1:\d+ http:\/\/localhost:\d+/m,
  );
  t.regex(listed.stdout, /^kept\s+kept\s+http:\/\/kept\.test/m);
  t.false(postmasterRunning(dataDir));

  // Restart on another port: the data is still there, the demo tenant is not created twice, and
  // its (default) origins follow the new port.
  const second = await spawnServer(t, {
    ...env,
    PORT: String(await freePortOtherThan(first.port)),
  });
  t.not(second.port, first.port);
  t.is((await request(second.port, { path: '/health/live', host: 'kept.test' })).status, 200);
  t.false(second.output().includes('demoUsers'), 'demo users are made only once');
  for (const host of [`localhost:${second.port}`, `127.0.0.1:${second.port}`]) {
    t.is((await request(second.port, { path: '/health/live', host })).status, 200, host);
  }
  t.is(
    (await request(second.port, { path: '/health/live', host: `localhost:${first.port}` })).status,
    404,
    'the old port is no longer the demo',
  );
  t.is(await second.stop('SIGINT'), 0);
  const again = await runCli(['tenant', 'list'], env);
  t.is(again.stdout.match(/^demo /gm)?.length, 1);

  // Nothing secret in anything the processes printed.
  const secret = fs.readFileSync(path.join(dataDir, 'superuser.secret'), 'utf8').trim();
  for (const text of [first.output(), second.output(), added.output, listed.output]) {
    t.false(text.includes(secret));
  }
});

test('external: DATABASE_URL is bootstrapped, migrated and served; restart keeps data', async (t) => {
  const rootUrl = freshDatabaseUrl(t, 'external');
  const env = { DATABASE_URL: rootUrl };
  const first = await spawnServer(t, env);
  // No demo tenant outside embedded mode.
  t.is((await request(first.port, { path: '/health/live' })).status, 404);
  const added = await runCli(
    ['tenant', 'add', 'ext', '--origin', 'http://ext.test', '--name', 'External'],
    env,
  );
  t.is(added.code, 0, added.output);
  t.is((await request(first.port, { path: '/health/live', host: 'ext.test' })).status, 200);
  t.is((await request(first.port, { path: '/health/ready' })).status, 200);
  t.is(await first.stop(), 0);

  const second = await spawnServer(t, env);
  const live = await request(second.port, { path: '/health/live', host: 'ext.test' });
  t.is(live.status, 200);
  t.deepEqual(live.json, { status: 'ok' });
  t.false(second.output().includes(new URL(rootUrl).password), 'no password in the logs');
  t.is(await second.stop(), 0);
});

test('split credentials: the owner and authenticator URLs alone are enough', async (t) => {
  const { target } = await migratedDatabase(t);
  const server = await spawnServer(t, {
    DATABASE_OWNER_URL: target.ownerUrl,
    DATABASE_AUTHENTICATOR_URL: target.authenticatorUrl,
  });
  t.is((await request(server.port, { path: '/health/ready' })).status, 200);
  t.is(await server.stop(), 0);
});

test('LOG_FORMAT=pretty: one readable line per entry, with the same fields and no secret', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const server = await spawnServer(t, { DATABASE_URL: rootUrl, LOG_FORMAT: 'pretty' });
  t.is((await request(server.port, { path: '/health/ready' })).status, 200);
  t.is((await request(server.port, { path: '/nowhere' })).status, 404);
  t.is(await server.stop(), 0);
  const lines = server.output().split('\n').filter(Boolean);
  const listening = lines.find((l) => l.includes('listening on'))!;
  t.regex(listening, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: listening on .*\{"port":\d+/);
  t.false(
    lines.some((l) => l.startsWith('{"level"')),
    'no JSON line',
  );
  // The access log line: method, path, status and the problem type of a 4xx, on one line.
  t.regex(server.output(), /INFO: request \{.*"path":"\/nowhere".*"status":404/);
  t.false(server.output().includes(new URL(rootUrl).password), 'no password in the logs');
});

test('told not to migrate, the server refuses a database that is behind, with a clear message', async (t) => {
  const rootUrl = freshDatabaseUrl(t, 'behind');
  const { code, output } = await runServerToExit({
    DATABASE_URL: rootUrl,
    MIGRATE_ON_START: 'false',
  });
  t.is(code, 1);
  t.regex(output, /migration\(s\) behind .*npm run db:migrate/);
});

test('a bad configuration value stops the process with one line naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'abc' }, /^Invalid configuration: PORT: must be a whole number from 0 to 65535$/m],
    [{ GRAPHQL_POOL_MAX: '0' }, /^Invalid configuration: GRAPHQL_POOL_MAX: must be a whole number/],
    [{ PORT: '70000' }, /^Invalid configuration: PORT: /],
    [{ LOG_LEVEL: 'loud' }, /^Invalid configuration: LOG_LEVEL: /],
    [{ TRUST_PROXY: 'maybe' }, /^Invalid configuration: TRUST_PROXY: /],
    [{ TRUST_PROXY: 'true' }, /^Invalid configuration: TRUST_PROXY: true would trust any/],
    [{ TRUST_PROXY: '10.0.0.1,10.0.0.300' }, /^Invalid configuration: TRUST_PROXY: '10.0.0.300'/],
    [
      { DATABASE_URL: 'mysql://x' },
      /^Invalid configuration: DATABASE_URL: must be a postgres:\/\/ URL/,
    ],
    [
      { DATABASE_OWNER_URL: 'postgres://o@h/d' },
      /^Invalid configuration: DATABASE_AUTHENTICATOR_URL: /,
    ],
  ];
  for (const [env, message] of cases) {
    const { code, output } = await runServerToExit(env);
    t.is(code, 1, JSON.stringify(env));
    t.regex(output, message);
    t.is(output.trim().split('\n').length, 1, `one line for ${JSON.stringify(env)}`);
  }
});

test('configuration defaults, and which database source each combination selects', (t) => {
  const defaults = loadConfig({});
  t.is(defaults.port, 3000);
  t.false(defaults.trustProxy);
  t.is(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2, 'a hop count');
  t.deepEqual(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy, [
    'loopback',
    '10.0.0.0/8',
  ]);
  t.true(defaults.migrateOnStart);
  t.deepEqual(defaults.database, {
    kind: 'embedded',
    dataDir: path.resolve('.data'),
    port: 0,
    major: '18',
  });
  t.is(loadConfig({ PORT: '' }).port, 3000, 'an empty variable counts as unset');
  t.is(loadConfig({ DATABASE_URL: 'postgres://u:p@h/db' }).database.kind, 'root');
  t.is(
    loadConfig({
      DATABASE_OWNER_URL: 'postgres://o:p@h/db',
      DATABASE_AUTHENTICATOR_URL: 'postgres://a:p@h/db',
    }).database.kind,
    'split',
  );
});

test('attachment store settings: files under DATA_DIR by default; S3 needs a bucket, and its keys come in pairs', (t) => {
  t.deepEqual(loadConfig({}).attachments, {
    store: { kind: 'local', root: path.resolve('.data', 'attachments') },
    maxBytes: 100 * 1024 * 1024,
  });
  t.deepEqual(loadConfig({ DATA_DIR: '/srv/weld', ATTACHMENT_DIR: '' }).attachments.store, {
    kind: 'local',
    root: '/srv/weld/attachments',
  });
  const s3 = loadConfig({
    ATTACHMENT_STORE: 's3',
    S3_BUCKET: 'weld-files',
    S3_ENDPOINT: 'http://minio.internal:9000',
    S3_FORCE_PATH_STYLE: 'true',
    S3_PREFIX: 'weld/',
    S3_ACCESS_KEY_ID: 'id',
    S3_SECRET_ACCESS_KEY: 'secret',
  }).attachments.store;
  t.like(s3, {
    kind: 's3',
    bucket: 'weld-files',
    prefix: 'weld/',
    region: 'us-east-1',
    endpoint: 'http://minio.internal:9000',
    forcePathStyle: true,
    credentials: { accessKeyId: 'id', secretAccessKey: 'secret' },
  });
  t.throws(() => loadConfig({ ATTACHMENT_STORE: 's3' }), { message: /S3_BUCKET: required/ });
  t.throws(() => loadConfig({ ATTACHMENT_STORE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'id' }), {
    message: /S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together/,
  });
  t.throws(() => loadConfig({ S3_PREFIX: '../x' }), { message: /S3_PREFIX/ });
  t.throws(() => loadConfig({ ATTACHMENT_STORE: 'ftp' }), { message: /ATTACHMENT_STORE/ });
});

test('SIGTERM: no new connections, the in-flight request finishes, exit 0', async (t) => {
  const rootUrl = freshDatabaseUrl(t, 'shutdown');
  const server = await spawnServer(t, { DATABASE_URL: rootUrl });
  t.is(
    (
      await runCli(['tenant', 'add', 'slow', '--origin', 'http://slow.test'], {
        DATABASE_URL: rootUrl,
      })
    ).code,
    0,
  );

  // Hold a lock the tenant lookup needs, so a request to a new origin stays in flight.
  const blocker = await connectClient(rootUrl);
  t.teardown(() => blocker.end());
  await blocker.query('begin; lock table weld_public.tenants in access exclusive mode');
  const inFlight = request(server.port, { path: '/health/live', host: 'slow.test' });
  await waitFor(async () => {
    const rows = await superuserQuery(
      rootUrl,
      `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%tenant_by_origin%'`,
    );
    return rows.length > 0;
  });

  t.true(listens(server.child.pid!, server.port), 'listening before the signal');
  server.child.kill('SIGTERM');
  await waitFor(() => Promise.resolve(server.output().includes('stopping')));
  // The server holds no listening socket any more. (Asked of the kernel for this process: a
  // connect could reach another test's server that was given the freed port meanwhile.)
  t.false(listens(server.child.pid!, server.port), 'the server still listens');

  await blocker.query('commit');
  const res = await inFlight;
  t.is(res.status, 200);
  t.deepEqual(res.json, { status: 'ok' });
  t.is(await server.exited, 0);
});

test('Ctrl-C in a terminal (SIGINT to the process group): the in-flight request finishes, PostgreSQL stops after, exit 0', async (t) => {
  // As a terminal runs `npm start`: the server leads a process group, and Ctrl-C signals all of
  // it. The embedded PostgreSQL must not take that SIGINT itself (a fast shutdown at once).
  const dataDir = path.join(tempDataDir(t), 'data');
  t.teardown(() => removeEmbeddedCluster(dataDir)); // after the server's teardown: stops PostgreSQL
  const env = { DATA_DIR: dataDir };
  const server = await spawnServer(t, env, { detached: true });
  const added = await runCli(['tenant', 'add', 'slow', '--origin', 'http://slow.test'], env);
  t.is(added.code, 0, added.output);

  const pgPort = runningEmbeddedCluster(dataDir)!.port;
  const secret = fs.readFileSync(path.join(dataDir, 'superuser.secret'), 'utf8').trim();
  const rootUrl = `postgres://postgres:${encodeURIComponent(secret)}@127.0.0.1:${pgPort}/weld`;
  const blocker = await connectClient(rootUrl);
  t.teardown(() => blocker.end().catch(() => {}));
  await blocker.query('begin; lock table weld_public.tenants in access exclusive mode');
  const inFlight = request(server.port, { path: '/health/live', host: 'slow.test' }).catch(
    (error: Error) => ({ status: 0, json: error.message }),
  );
  await waitFor(async () => {
    const rows = await superuserQuery(
      rootUrl,
      `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%tenant_by_origin%'`,
    );
    return rows.length > 0;
  });

  process.kill(-server.child.pid!, 'SIGINT');
  await waitFor(() => Promise.resolve(server.output().includes('stopping')));
  await new Promise((resolve) => setTimeout(resolve, 1000)); // the request stays in flight a while
  const released = await blocker.query('commit').then(
    () => 'committed',
    (error: Error) => error.message,
  );
  t.is(released, 'committed', 'PostgreSQL kept serving while the server drained');
  const res = await inFlight;
  t.is(res.status, 200, JSON.stringify(res.json));
  t.is(await server.exited, 0, server.output());
  t.is(runningEmbeddedCluster(dataDir), undefined, 'the server stopped PostgreSQL on its way out');
});

/** Whether process `pid` has a TCP socket listening on `port` (Linux: /proc). */
function listens(pid: number, port: number): boolean {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // (closed meanwhile)
    }
  }
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = Number.parseInt(cols[1]!.split(':').at(-1)!, 16);
      // state 0A: LISTEN
      if (local === port && cols[3] === '0A' && inodes.has(cols[9]!)) return true;
    }
  }
  return false;
}

async function waitFor(condition: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
