// Where the database is, how its roles come to exist, and how work runs inside it.
//
// Three sources (db/config.ts decides which):
//   embedded  our own cluster under DATA_DIR; we are its superuser, so it goes the root way
//   root      DATABASE_URL may create roles: run migrations/bootstrap.sql, then log in as the
//             owner and authenticator roles with passwords derived from the root password
//   split     a DBA bootstrapped the roles and gave us their two URLs; we only use them
//
// Derived passwords: HMAC(root password, role name). Every process that holds the root URL (the
// server, a second instance, the admin CLI, a test) computes the same password, so none of them
// has to store it and none of them breaks the others by changing it. They reach PostgreSQL as a
// SCRAM verifier, never as plain text.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { DatabaseSource } from './config.ts';
import { embeddedUrl, openEmbeddedCluster, type EmbeddedCluster } from './embedded.ts';
import { REQUEST_ROLES, type RequestRole } from './vocabulary.ts';

export const EMBEDDED_DATABASE = 'weld';
export const MIGRATIONS_DIR = path.resolve(import.meta.dirname, '..', 'migrations');

export interface DatabaseTarget {
  /** The role that owns the schema and runs migrations. */
  ownerUrl: string;
  /** The server's pool: LOGIN, NOINHERIT, NOBYPASSRLS; becomes a request role per transaction. */
  authenticatorUrl: string;
  /** A superuser-ish URL, when we have one (embedded and root); the migration workflow uses it. */
  rootUrl?: string;
  /** For logs and messages; carries no password. */
  description: string;
  embedded?: EmbeddedCluster;
  /** Stops what connectDatabase started (the embedded cluster, if this process started it). */
  release(): Promise<void>;
}

export async function connectDatabase(
  source: DatabaseSource,
  embeddedSettings?: Record<string, string>,
): Promise<DatabaseTarget> {
  switch (source.kind) {
    case 'split':
      return {
        ownerUrl: source.ownerUrl,
        authenticatorUrl: source.authenticatorUrl,
        description: redactUrl(source.authenticatorUrl),
        release: async () => {},
      };
    case 'root':
      return {
        ...(await bootstrapFromRoot(source.rootUrl, source)),
        rootUrl: source.rootUrl,
        description: redactUrl(source.rootUrl),
        release: async () => {},
      };
    case 'embedded': {
      const cluster = await openEmbeddedCluster({
        dataDir: source.dataDir,
        port: source.port,
        major: source.major,
        ...(embeddedSettings && { settings: embeddedSettings }),
      });
      try {
        const rootUrl = embeddedUrl(cluster, EMBEDDED_DATABASE);
        return {
          ...(await bootstrapFromRoot(rootUrl, {})),
          rootUrl,
          embedded: cluster,
          description: `embedded PostgreSQL on 127.0.0.1:${cluster.port} (${source.dataDir})`,
          release: () => cluster.stop(),
        };
      } catch (error) {
        await cluster.stop();
        throw error;
      }
    }
  }
}

/** Creates the database if missing, runs the bootstrap SQL, and makes the two login roles usable. */
async function bootstrapFromRoot(
  rootUrl: string,
  given: { ownerUrl?: string; authenticatorUrl?: string },
): Promise<{ ownerUrl: string; authenticatorUrl: string }> {
  const rootPassword = new URL(rootUrl).password;
  if (!rootPassword && !(given.ownerUrl && given.authenticatorUrl)) {
    throw new Error(
      'DATABASE_URL has no password, and the service derives its role passwords from it: ' +
        'add the password, or set DATABASE_OWNER_URL and DATABASE_AUTHENTICATOR_URL as well',
    );
  }
  await ensureDatabaseExists(rootUrl);
  const bootstrapSql = fs.readFileSync(path.join(MIGRATIONS_DIR, 'bootstrap.sql'), 'utf8');
  await withRetryOnCatalogRace(() => runScript(rootUrl, bootstrapSql));

  const roleUrl = async (role: string, givenUrl: string | undefined) => {
    if (givenUrl) return givenUrl;
    const password = createHmac('sha256', decodeURIComponent(rootPassword))
      .update(`weld-data-service/${role}`)
      .digest('base64url');
    const url = new URL(rootUrl);
    url.username = role;
    url.password = password;
    await withRetryOnCatalogRace(() => ensurePassword(rootUrl, role, password));
    return url.href;
  };
  return {
    ownerUrl: await roleUrl('weld_owner', given.ownerUrl),
    authenticatorUrl: await roleUrl('weld_authenticator', given.authenticatorUrl),
  };
}

async function ensureDatabaseExists(rootUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(rootUrl).pathname.slice(1));
  const maintenance = new URL(rootUrl);
  maintenance.pathname = '/postgres';
  const client = await connectClient(maintenance.href);
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) {
      await client.query(`create database ${pg.escapeIdentifier(name)}`).catch((error: unknown) => {
        if ((error as { code?: string }).code !== '42P04') throw error; // created meanwhile
      });
    }
  } finally {
    await client.end();
  }
}

async function runScript(url: string, sql: string): Promise<void> {
  const client = await connectClient(url);
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Makes `password` the role's password unless it is already, without trying to log in with it:
 * a failed login writes "password authentication failed" to the server's log, which alarms DBAs.
 * With the right to read pg_authid (a superuser, as the embedded cluster's is), the role's stored
 * SCRAM verifier is checked against the password as the server would check it, and the password
 * set only when it does not match (a first start; a changed root password). Without it (a role
 * that has CREATEROLE only), it is set at every start. Setting it disturbs nobody: sessions
 * already open keep going, every process holding the root URL sets the same password (another
 * salt, the same password), and two ALTER ROLEs colliding on the catalog are retried.
 */
async function ensurePassword(rootUrl: string, role: string, password: string): Promise<void> {
  const client = await connectClient(rootUrl);
  try {
    const readable = await client.query<{ ok: boolean }>(
      `select has_table_privilege('pg_catalog.pg_authid', 'select') as ok`,
    );
    if (readable.rows[0]?.ok) {
      const stored = await client.query<{ verifier: string | null }>(
        'select rolpassword as verifier from pg_catalog.pg_authid where rolname = $1',
        [role],
      );
      const verifier = stored.rows[0]?.verifier;
      if (verifier && scramMatches(verifier, password)) return;
    }
    await client.query(
      `alter role ${pg.escapeIdentifier(role)} password ${pg.escapeLiteral(scramVerifier(password))}`,
    );
  } finally {
    await client.end();
  }
}

/**
 * Two processes bootstrapping databases of one cluster at once can collide on the shared
 * catalogs (roles). The bootstrap checks before it acts, so a second attempt finds the work done.
 */
async function withRetryOnCatalogRace(work: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = (error as { code?: string }).code;
      const race = code === 'XX000' || code === '23505' || code === '42710';
      if (!race || attempt === 3) throw error;
    }
  }
}

/**
 * RFC 7677 SCRAM-SHA-256 verifier, the form PostgreSQL stores (and accepts) for a password. (The
 * server SASLprep-normalises passwords first; derived ones are base64url, which it leaves as is.)
 */
function scramVerifier(password: string): string {
  const salt = randomBytes(16);
  const iterations = 4096;
  const { storedKey, serverKey } = scramKeys(password, salt, iterations);
  const b64 = (b: Buffer) => b.toString('base64');
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}

/** Whether a stored SCRAM-SHA-256 verifier is that of `password` (anything else: no). */
function scramMatches(verifier: string, password: string): boolean {
  const parts = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):(.+)$/.exec(verifier);
  const iterations = Number(parts?.[1]);
  // Beyond what anyone configures: set the password again rather than spend minutes checking.
  if (!parts || !(iterations > 0 && iterations <= 1_000_000)) return false;
  const keys = scramKeys(password, Buffer.from(parts[2]!, 'base64'), iterations);
  const same = (key: Buffer, stored: string) => {
    const decoded = Buffer.from(stored, 'base64');
    return decoded.length === key.length && timingSafeEqual(decoded, key);
  };
  return same(keys.storedKey, parts[3]!) && same(keys.serverKey, parts[4]!);
}

function scramKeys(
  password: string,
  salt: Buffer,
  iterations: number,
): { storedKey: Buffer; serverKey: Buffer } {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();
  return {
    storedKey: createHash('sha256').update(hmac(salted, 'Client Key')).digest(),
    serverKey: hmac(salted, 'Server Key'),
  };
}

/** A connection string fit for logs: the password is gone. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.href;
}

/**
 * A connected client. Its 'error' event (the server went away while it was idle) goes to onError:
 * unhandled, it would end the process. Every connection of the service and its tests is made here
 * or by createPool (test/layers.test.ts holds that).
 */
export async function connectClient(
  url: string,
  onError: (error: Error) => void = () => {},
): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', onError);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  return client;
}

/** Past its statement timeout, how long a statement's answer may take to arrive. */
const ANSWER_MARGIN_MS = 5_000;

/**
 * A query (or a COPY stream) allowed to run `statementTimeoutMs` (after `set_config(
 * 'statement_timeout', ...)` in its transaction), without the pool's client-side limit ending it
 * first.
 */
export function withQueryTimeout<Q extends object>(query: Q, statementTimeoutMs: number): Q {
  return Object.assign(query, { query_timeout: statementTimeoutMs + ANSWER_MARGIN_MS });
}

/** How long a request waits for a pooled connection, and runs a statement, when not configured. */
export const POOL_DEFAULTS = { waitMs: 2_000, statementTimeoutMs: 30_000 } as const;

/**
 * A pool of connections. Every wait is bounded, so a request never hangs on the database:
 *   waitMs              for a free connection, and for a new one to connect (DB_POOL_WAIT_MS);
 *                       past it, pool.connect() rejects ("timeout exceeded when trying to
 *                       connect": 503 /problems/busy in rest-adapter/http/problem.ts)
 *   statementTimeoutMs  per statement (statement_timeout, server side; DB_STATEMENT_TIMEOUT_MS); a
 *                       transaction may raise it for itself (imports do, with queryTimeout)
 *   + ANSWER_MARGIN_MS  for the answer to a statement (query_timeout, client side): a server that
 *                       cannot be reached any more (a partition, a failover) never answers, and
 *                       its own timeout cannot tell us; the query then fails as not answering
 * TCP keepalive finds a connection whose server vanished without closing it (a failover, a
 * dropped NAT entry); a server that went away properly (a restart, a crash) closes its sockets,
 * and the broken connections are dropped from the pool as they fail, so the pool refills with
 * fresh ones (named prepared statements are per connection, so they are prepared again).
 */
export function createPool(
  url: string,
  options: {
    max: number;
    waitMs?: number;
    statementTimeoutMs?: number;
    onError?: (error: Error) => void;
  },
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    // The server passes DB_POOL_WAIT_MS; tools and tests wait longer: a slow machine is no overload.
    connectionTimeoutMillis: options.waitMs ?? 30_000,
    statement_timeout: options.statementTimeoutMs ?? POOL_DEFAULTS.statementTimeoutMs,
    query_timeout:
      (options.statementTimeoutMs ?? POOL_DEFAULTS.statementTimeoutMs) + ANSWER_MARGIN_MS,
    idle_in_transaction_session_timeout: 60_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'weld-data-service',
  });
  // An idle client that loses its connection emits here; unhandled, it would end the process.
  // pg-pool hangs the client on the error (error.client): whoever logs the error would dump the
  // whole connection (its cancel key, its prepared statements). The client is gone; drop it.
  const onError = options.onError ?? (() => {});
  pool.on('error', (error) => {
    delete (error as Error & { client?: unknown }).client;
    onError(error);
  });
  // A checked-out client has no listener of pg-pool's, and the server's last words when it goes
  // away ("terminating connection due to unexpected postmaster exit") arrive as an 'error' event
  // between queries: unhandled, that too would end the process. Whoever holds the client learns
  // of it from the next query, which fails; the broken client is then dropped (inTransaction).
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * A named prepared statement: PostgreSQL parses and plans it once per connection instead of on
 * every request. (Plans depend on the role; PostgreSQL replans when the role differs.)
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `q_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}
// The texts are the code's own (values travel apart), so this map stays as small as the code.
const statementNames = new Map<string, string>();

/** Who a unit of work runs as: the database role and the claims that policies read. */
export interface SessionContext {
  role: RequestRole;
  tenantId: string | null;
  userId?: string | null;
  sessionId?: string | null;
  /** An OAuth2 client's scopes, space-separated; none (a person's session): its role alone holds it. */
  scope?: string | null;
}

/**
 * Runs `work` in one transaction as the given role, with the tenant and user set as
 * transaction-local `jwt.claims.*` settings (what weld_hidden.current_tenant_id() and the
 * policies read). Commits on success, rolls back on any error; either way the pooled
 * connection goes back clean, because every setting is local to the transaction.
 */
export async function withContext<T>(
  pool: pg.Pool,
  context: SessionContext,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  if (!REQUEST_ROLES.includes(context.role)) {
    throw new Error(`Not a request role: ${String(context.role)}`);
  }
  return inTransaction(pool, beginStatement(context), work);
}

/**
 * Runs `work` as the authenticator itself with only the tenant set: for the server's own
 * bookkeeping (signing keys, CSRF key) through functions granted to no request role.
 */
export function asAuthenticator<T>(
  pool: pg.Pool,
  tenantId: string,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return inTransaction(
    pool,
    `begin; select set_config('jwt.claims.tenant_id', ${pg.escapeLiteral(tenantId)}, true)`,
    work,
  );
}

/**
 * Runs `work` in one transaction on a client the caller holds (weld-admin's connections): commit
 * on success, rollback on any error, which is thrown on.
 */
export async function onClientInTransaction<T>(
  db: pg.ClientBase,
  work: () => Promise<T>,
): Promise<T> {
  await db.query('begin');
  try {
    const result = await work();
    await db.query('commit');
    return result;
  } catch (error) {
    await db.query('rollback');
    throw error;
  }
}

/**
 * `work` in one transaction begun by `begin` (e.g. 'begin isolation level repeatable read'):
 * committed when it resolves, rolled back when it throws; a connection whose server stopped
 * answering is dropped, not returned to the pool.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  begin: string,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query(begin);
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    if ((error as Error).message === 'Query read timeout') {
      // The server stopped answering (query_timeout): a rollback would wait as long again.
      // Dropping the connection ends the transaction on the server, if it is still there.
      broken = error as Error;
    } else {
      await client.query('rollback').catch((rollbackError: Error) => (broken = rollbackError));
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/** The transaction-local settings of a context: the role, and the claims the policies read. */
export function sessionSettings(context: SessionContext): Record<string, string> {
  return {
    role: context.role,
    'jwt.claims.tenant_id': context.tenantId ?? '',
    'jwt.claims.user_id': context.userId ?? '',
    'jwt.claims.session_id': context.sessionId ?? '',
    'jwt.claims.scope': context.scope ?? '',
  };
}

/**
 * `begin` and the settings in one round trip (simple protocol, so every value is escaped here
 * with pg.escapeLiteral). Exported for bench/baseline.ts's one-round-trip experiment only.
 */
export function beginStatement(context: SessionContext): string {
  const calls = Object.entries(sessionSettings(context)).map(
    ([name, value]) => `set_config(${pg.escapeLiteral(name)}, ${pg.escapeLiteral(value)}, true)`,
  );
  return `begin; select ${calls.join(', ')}`;
}
