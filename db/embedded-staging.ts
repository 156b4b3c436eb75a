// The embedded PostgreSQL when we run as root. PostgreSQL refuses to run as root, so as root it
// runs as the `postgres` OS user, which must reach two things: the binaries (in node_modules) and
// the cluster (DATA_DIR/pg). Either may lie below a directory it cannot enter: /root is 0700, and
// so is every `mktemp -d`. Then, in a root-owned directory everyone can enter (STATE_DIR):
//
//   binaries  postgresql-<package version>/: a copy of the package's native directory (bin, lib,
//             share), root-owned and 0755, made once (copied beside it, then renamed into place,
//             so a second process never sees half a copy) and shared by every DATA_DIR
//   cluster   clusters/<first 16 hex of sha256(realpath of DATA_DIR)>/pg, owned by postgres
//             (0700), with DATA_DIR/pg a symlink to it, so the next start finds it again. The
//             secret, the log and the port stay in DATA_DIR: root opens them, postgres never does.
//
// An existing DATA_DIR/pg, directory or symlink, is used as it is. What cannot be arranged stops
// with one line that names the directory and the fix (a ConfigError). Not root: PostgreSQL runs
// as this user, who reaches whatever it made, and none of this applies.
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from './config.ts';

export const STATE_DIR = '/var/lib/weld-data-service';

export interface OsUser {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

let postgresUser: OsUser | undefined;

/** The OS user PostgreSQL runs as when we are root (created if missing); undefined otherwise. */
export function postgresOsUser(): OsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  if (postgresUser) return postgresUser;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  try {
    postgresUser = { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('sh', ['-c', 'getent group postgres || groupadd postgres']);
    execFileSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
    postgresUser = { uid: id('-u'), gid: id('-g') };
  }
  return postgresUser;
}

/** Whether `user` can enter dir: asked of the system (as that user), not guessed from modes. */
function canEnter(dir: string, user: OsUser): boolean {
  const options = { ...user, cwd: '/', stdio: 'ignore' } as const;
  return spawnSync('/bin/sh', ['-c', 'cd -- "$1"', 'sh', dir], options).status === 0;
}

/** Whether `user` can run the binaries of a native directory (which also needs its lib/). */
function canRun(nativeDir: string, user: OsUser): boolean {
  const options = { ...user, cwd: '/', stdio: 'ignore' } as const;
  return spawnSync(path.join(nativeDir, 'bin', 'postgres'), ['--version'], options).status === 0;
}

/**
 * The binaries of the package's native directory, where `user` (undefined: this process's own
 * user) can run them: in place if it can, else a staged copy under stateDir.
 */
export function usableBinaries(
  nativeDir: string,
  user: OsUser | undefined,
  stateDir = STATE_DIR,
): Binaries {
  if (!user || canRun(nativeDir, user)) return binariesIn(nativeDir);
  const staged = stageBinaries(nativeDir, user, stateDir);
  if (!canRun(staged, user)) {
    throw new ConfigError(
      `PostgreSQL runs as the "postgres" user, which cannot run the binaries in ${staged}; ` +
        'remove that directory, and it is copied again at the next start',
    );
  }
  return binariesIn(staged);
}

function binariesIn(nativeDir: string): Binaries {
  return {
    initdb: path.join(nativeDir, 'bin', 'initdb'),
    postgres: path.join(nativeDir, 'bin', 'postgres'),
  };
}

/** stateDir/postgresql-<version>: made once, reused while present. */
function stageBinaries(nativeDir: string, user: OsUser, stateDir: string): string {
  try {
    const packageJson = path.join(nativeDir, '..', 'package.json');
    const { version } = JSON.parse(fs.readFileSync(packageJson, 'utf8')) as { version: string };
    const staged = path.join(stateDir, `postgresql-${version}`);
    if (fs.existsSync(staged)) return staged; // only ever appears complete (rename below)
    makeSharedDir(stateDir);
    const partial = fs.mkdtempSync(path.join(stateDir, `.postgresql-${version}-`));
    try {
      fs.cpSync(nativeDir, partial, { recursive: true, verbatimSymlinks: true });
      openToAll(partial);
      fs.renameSync(partial, staged);
    } catch (error) {
      // Another process staged the same version first: use its copy.
      const code = (error as NodeJS.ErrnoException).code;
      if (!((code === 'ENOTEMPTY' || code === 'EEXIST') && fs.existsSync(staged))) throw error;
    } finally {
      fs.rmSync(partial, { recursive: true, force: true });
    }
    return staged;
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw cannotEnter(
      nativeDir,
      user,
      `, where its binaries are, and copying them to ${stateDir} failed ` +
        `(${(error as Error).message}); install the project in a directory it can reach, ` +
        'e.g. /opt/weld-data-service',
    );
  }
}

/** Directories 0755, files 0644 (0755 when executable): whatever the umask of the original. */
function openToAll(dir: string): void {
  fs.chmodSync(dir, 0o755);
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isDirectory()) fs.chmodSync(file, 0o755);
    else if (entry.isFile()) fs.chmodSync(file, fs.statSync(file).mode & 0o111 ? 0o755 : 0o644);
  }
}

/** A root-owned directory everyone may enter (0755), made if missing; its parent must exist. */
function makeSharedDir(dir: string): void {
  try {
    fs.mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  fs.chmodSync(dir, 0o755); // not what the umask left
}

/** The outermost directory on the way to dir that user cannot enter; for messages. */
function blockedDir(dir: string, user: OsUser): string {
  let current = path.parse(dir).root;
  for (const part of path.resolve(dir).split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    if (!canEnter(current, user)) return current;
  }
  return dir;
}

export interface ClusterPlace {
  /** The cluster directory as PostgreSQL is given it (-D): a path postgres can walk. */
  pgData: string;
  /** Where the initdb password file may go: a directory root can write and postgres can enter. */
  scratchDir: string;
}

const REACHABLE_DATA_DIR = 'set DATA_DIR to a directory it can reach, e.g. /var/lib/weld';

/**
 * Where the cluster of dataDir (which exists) lives. DATA_DIR/pg as found, a directory or a
 * symlink; else a new DATA_DIR/pg when `user` (undefined: this process's own user) can enter
 * DATA_DIR; else a new cluster under stateDir with DATA_DIR/pg pointing to it.
 */
export function placeCluster(
  dataDir: string,
  user: OsUser | undefined,
  stateDir = STATE_DIR,
): ClusterPlace {
  const link = path.join(dataDir, 'pg');
  if (!user) return { pgData: resolveLink(link), scratchDir: dataDir };
  // DATA_DIR holds the secret (0600): postgres may pass through it to pg/, not list it.
  fs.chmodSync(dataDir, 0o711);
  const found = fs.lstatSync(link, { throwIfNoEntry: false });

  if (found?.isSymbolicLink()) {
    const pgData = resolveLink(link);
    const home = path.dirname(pgData);
    fs.mkdirSync(home, { recursive: true }); // a link whose target went away gets a new cluster
    if (!canEnter(home, user)) {
      throw cannotEnter(home, user, `, where ${link} points; ${REACHABLE_DATA_DIR}`);
    }
    return { pgData, scratchDir: home };
  }
  if (canEnter(dataDir, user)) return { pgData: link, scratchDir: dataDir };
  if (found) {
    throw cannotEnter(
      dataDir,
      user,
      `, where its cluster ${link} is; move DATA_DIR with its pg/ to a directory it can reach, ` +
        'e.g. /var/lib/weld',
    );
  }
  return relocate(dataDir, user, stateDir);
}

/** A new cluster home under stateDir for a DATA_DIR postgres cannot reach, linked as DATA_DIR/pg. */
function relocate(dataDir: string, user: OsUser, stateDir: string): ClusterPlace {
  const link = path.join(dataDir, 'pg');
  const id = createHash('sha256').update(fs.realpathSync(dataDir)).digest('hex').slice(0, 16);
  const home = path.join(clustersDir(stateDir), id);
  const pgData = path.join(home, 'pg');
  if (fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
    // Its DATA_DIR was deleted and made again: that cluster is not ours to reuse or delete.
    throw new ConfigError(
      `${pgData} holds the cluster of an earlier ${dataDir}, but ${link} does not point to it; ` +
        `link it again (ln -s ${pgData} ${link}) or remove ${home}`,
    );
  }
  try {
    makeSharedDir(stateDir);
    makeSharedDir(clustersDir(stateDir));
    makeSharedDir(home);
  } catch (error) {
    throw cannotEnter(
      dataDir,
      user,
      `, and a cluster could not be made in ${stateDir} instead ` +
        `(${(error as Error).message}); ${REACHABLE_DATA_DIR}`,
    );
  }
  if (!canEnter(home, user)) {
    throw cannotEnter(
      dataDir,
      user,
      `, nor ${blockedDir(home, user)}; let it enter ${stateDir} (chmod 755), or ` +
        REACHABLE_DATA_DIR,
    );
  }
  fs.symlinkSync(pgData, link);
  return { pgData, scratchDir: home };
}

function cannotEnter(dir: string, user: OsUser, rest: string): ConfigError {
  return new ConfigError(
    `PostgreSQL runs as the "postgres" user, which cannot enter ${blockedDir(dir, user)}${rest}`,
  );
}

export function clustersDir(stateDir = STATE_DIR): string {
  return path.join(stateDir, 'clusters');
}

/** The path a symlink points to, made absolute, without symlinks where it exists. */
function resolveLink(file: string): string {
  if (!fs.lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) return file;
  const target = path.resolve(path.dirname(file), fs.readlinkSync(file));
  return fs.existsSync(target) ? fs.realpathSync(target) : target;
}
