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
// What cannot be arranged stops with one line that names the directory and the fix (a
// ConfigError). Not root: PostgreSQL runs as this user, who reaches whatever it made, and none of
// this applies.
//
// As root, the service trusts only what root alone can change (another local user must not be
// able to steer root's chown, open or exec): STATE_DIR, its clusters/ and every cluster home in it,
// and the staged binaries, must be real directories and files owned by root and writable by
// nobody else (embedded.ts holds DATA_DIR and its files to the same). An existing DATA_DIR/pg is
// used only if it is a symlink into STATE_DIR/clusters (as made here), or a directory owned by the
// postgres user; root chowns only the cluster directory it has just made itself (embedded.ts).
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
    makeSharedDir(stateDir, 'The state directory');
    if (fs.existsSync(staged)) return checkedStaged(staged); // only ever complete (rename below)
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
    return checkedStaged(staged);
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

/**
 * The staged binaries run as postgres, with the cluster in their hands: every entry of the copy
 * must be root's alone (a symlink's own mode means nothing; its owner is checked).
 */
function checkedStaged(staged: string): string {
  const fix = `remove ${staged}, and it is copied again at the next start`;
  assertRootOnly(staged, 'The staged PostgreSQL', 'directory', fix);
  for (const entry of fs.readdirSync(staged, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    assertRootOnly(file, 'The staged PostgreSQL file', 'any', fix);
  }
  return staged;
}

/**
 * As root: `file` must be of `kind` (not a symlink, unless 'any'), owned by root and writable by
 * nobody else (symlinks: owned by root). Otherwise one line naming it and the fix (by default the
 * chown or chmod that repairs it).
 */
export function assertRootOnly(
  file: string,
  what: string,
  kind: 'directory' | 'file' | 'any',
  fix?: string,
): fs.Stats {
  const stat = fs.lstatSync(file);
  let problem: string | undefined;
  let repair = fix;
  if (kind !== 'any' && stat.isSymbolicLink()) {
    problem = 'is a symlink';
    repair ??= `replace it with the ${kind} itself`;
  } else if (kind === 'directory' && !stat.isDirectory()) {
    problem = 'is not a directory';
    repair ??= 'remove it';
  } else if (kind === 'file' && !stat.isFile()) {
    problem = 'is not a regular file';
    repair ??= 'remove it';
  } else if (stat.uid !== 0) {
    problem = `belongs to uid ${stat.uid}, not root`;
    repair ??= `chown root ${file}`;
  } else if (!stat.isSymbolicLink() && stat.mode & 0o022) {
    problem = `is writable by group or others (mode ${modeText(stat)})`;
    repair ??= `chmod go-w ${file}`;
  }
  if (problem) {
    throw new ConfigError(
      `${what} ${file} ${problem}; as root the service uses only what root alone can change: ` +
        repair,
    );
  }
  return stat;
}

export function modeText(stat: fs.Stats): string {
  return (stat.mode & 0o7777).toString(8).padStart(4, '0');
}

/**
 * A root-owned directory everyone may enter (0755), made if missing; its parent must exist. One
 * that exists must be root's alone (assertRootOnly): it is never chowned or chmodded here.
 */
function makeSharedDir(dir: string, what: string): void {
  try {
    fs.mkdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    assertRootOnly(dir, what, 'directory');
    return;
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
 * Where the cluster of dataDir (which exists; as root, root's alone) lives. Not root: DATA_DIR/pg,
 * whatever it is. As root: a DATA_DIR/pg symlink into stateDir/clusters, or a DATA_DIR/pg
 * directory of the postgres user; else a new DATA_DIR/pg when `user` can enter DATA_DIR; else a
 * new cluster under stateDir with DATA_DIR/pg pointing to it. Anything else is refused.
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
    // Only a link as relocate() makes it: STATE_DIR/clusters/<id>/pg, read as written (not
    // resolved further), in directories root alone can change.
    const pgData = path.resolve(dataDir, fs.readlinkSync(link));
    const home = path.dirname(pgData);
    const clusters = clustersDir(stateDir);
    if (path.basename(pgData) !== 'pg' || path.dirname(home) !== clusters) {
      throw new ConfigError(
        `${link} points to ${pgData}, outside ${clusters}; as root the service follows only ` +
          'links to the clusters it made there: remove the link, or move the cluster to ' +
          `${link} itself (a directory owned by postgres)`,
      );
    }
    // A link whose target went away gets a new cluster.
    makeStateDirs(dataDir, user, stateDir, home);
    if (!canEnter(home, user)) {
      throw cannotEnter(home, user, `, where ${link} points; ${REACHABLE_DATA_DIR}`);
    }
    checkClusterDir(pgData, user);
    return { pgData, scratchDir: home };
  }
  if (found && !found.isDirectory()) {
    throw new ConfigError(
      `${link} is neither a directory nor a symlink to a cluster; remove it, and a cluster is ` +
        'made at the next start',
    );
  }
  if (canEnter(dataDir, user)) {
    if (found) checkClusterDir(link, user);
    return { pgData: link, scratchDir: dataDir };
  }
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

/**
 * An existing cluster directory must be the postgres user's own directory: root never chowns one
 * it did not make (a planted directory, or a link's target, could be anything root owns).
 */
function checkClusterDir(pgData: string, user: OsUser): void {
  const stat = fs.lstatSync(pgData, { throwIfNoEntry: false });
  if (!stat) return; // made (and chowned) by the start that needs it
  if (!stat.isDirectory() || stat.isSymbolicLink()) {
    throw new ConfigError(`${pgData} is not a directory; remove it, and a cluster is made there`);
  }
  if (stat.uid !== user.uid) {
    throw new ConfigError(
      `${pgData} belongs to uid ${stat.uid}, not the "postgres" user, and as root the service ` +
        'changes the owner only of a cluster directory it has just made: if it is a cluster of ' +
        `this service, chown -R postgres: ${pgData}; else remove it`,
    );
  }
}

/** stateDir, its clusters/ and a cluster home: made if missing, else root's alone. */
function makeStateDirs(dataDir: string, user: OsUser, stateDir: string, home: string): void {
  try {
    makeSharedDir(stateDir, 'The state directory');
    makeSharedDir(clustersDir(stateDir), 'The clusters directory');
    makeSharedDir(home, 'The cluster home');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw cannotEnter(
      dataDir,
      user,
      `, and a cluster could not be made in ${stateDir} instead ` +
        `(${(error as Error).message}); ${REACHABLE_DATA_DIR}`,
    );
  }
}

/** A new cluster home under stateDir for a DATA_DIR postgres cannot reach, linked as DATA_DIR/pg. */
function relocate(dataDir: string, user: OsUser, stateDir: string): ClusterPlace {
  const link = path.join(dataDir, 'pg');
  const id = createHash('sha256').update(fs.realpathSync(dataDir)).digest('hex').slice(0, 16);
  const home = path.join(clustersDir(stateDir), id);
  const pgData = path.join(home, 'pg');
  makeStateDirs(dataDir, user, stateDir, home);
  if (fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
    // Its DATA_DIR was deleted and made again: that cluster is not ours to reuse or delete.
    throw new ConfigError(
      `${pgData} holds the cluster of an earlier ${dataDir}, but ${link} does not point to it; ` +
        `link it again (ln -s ${pgData} ${link}) or remove ${home}`,
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
  checkClusterDir(pgData, user);
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
