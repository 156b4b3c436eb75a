// Servers for tests: the real app in this process on a loopback port (fast, and the test can
// reach its pool), or the real entry point (server/main.ts) as a child process, for start-up,
// configuration and shutdown behaviour. Also the admin CLI as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { createPool, type DatabaseTarget } from '../../db/database.ts';
import { EventNotifications } from '../../db/event-notifications.ts';
import { createApp, createHttpServer } from '../../server/app.ts';
import { ATTACHMENT_DEFAULTS, HTTP_DEFAULTS, IMPORT_DEFAULTS } from '../../server/config.ts';
import { LocalStore, type AttachmentStore } from '../../db/attachment-store.ts';
import { KeyRing } from '../../rest-adapter/http/auth/keys.ts';
import { SessionRevocations } from '../../rest-adapter/http/auth/revocations.ts';
import { createGraphql, type GraphqlOptions } from '../../server/graphql.ts';
import { createLogger } from '../../rest-adapter/http/log.ts';
import type { Route } from '../../rest-adapter/http/route.ts';
import type { TrustProxy } from '../../rest-adapter/http/tenancy.ts';
import type { TargetRules } from '../../rest-adapter/http/webhook-address.ts';
import { webhookSecretKeys, type WebhookSecretKeys } from '../../db/webhook-secrets.ts';
import { serviceRoutes } from '../../server/routes.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface TestServer {
  port: number;
  pool: ReturnType<typeof createPool>;
  ring: KeyRing;
  notifications: EventNotifications;
  attachmentStore: AttachmentStore;
}

export const TEST_TOKEN_TTL = { accessTokenTtl: 600, refreshTokenTtl: 3600 };

/** WEBHOOK_SECRET_KEY of the tests' servers (in process and spawned): fixed, so not secret. */
export const TEST_WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');
export const TEST_WEBHOOK_SECRET_KEYS = webhookSecretKeys(
  { current: Buffer.from(TEST_WEBHOOK_SECRET_KEY, 'base64'), old: [] },
  { kind: 'root', rootUrl: 'postgres://unused' },
);

export async function startServer(
  t: ExecutionContext,
  target: DatabaseTarget,
  options: {
    extraRoutes?: Route[];
    trustProxy?: TrustProxy;
    maxBodyBytes?: number;
    accessTokenTtl?: number;
    /** Event streams per user (default 5). */
    streamsPerUser?: number;
    /** The stream's heartbeat interval (default 15 s). */
    heartbeatMs?: number;
    /** Events a stream replays before it tells the client to resync (default 10,000). */
    maxReplay?: number;
    /** WEBHOOK_ALLOW_PRIVATE (default true: test receivers listen on loopback). */
    webhookAllowPrivate?: boolean;
    /** The address rule's other settings and hooks (a resolver, this machine's addresses). */
    webhookTargets?: Omit<TargetRules, 'allowPrivate'>;
    /** WEBHOOK_TIMEOUT_MS (default 2000). */
    webhookTimeoutMs?: number;
    /** The keys webhook secrets are sealed with (default TEST_WEBHOOK_SECRET_KEYS). */
    webhookSecretKeys?: WebhookSecretKeys;
    /** IMPORT_MAX_BYTES (default: the service's). */
    importMaxBytes?: number;
    /** GraphQL's limits (default: the service's). */
    graphql?: GraphqlOptions;
    /** Where attachments live (default: files under a temporary directory, removed after). */
    attachmentStore?: AttachmentStore;
    /** ATTACHMENT_MAX_BYTES (default: the service's). */
    attachmentMaxBytes?: number;
  } = {},
): Promise<TestServer> {
  let attachmentStore = options.attachmentStore;
  if (!attachmentStore) {
    const dir = await mkdtemp(path.join(tmpdir(), 'weld-test-attachments-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    attachmentStore = new LocalStore(dir);
  }
  const pool = createPool(target.authenticatorUrl, { max: 10, onError: () => {} });
  const auth = {
    ...TEST_TOKEN_TTL,
    ...(options.accessTokenTtl && { accessTokenTtl: options.accessTokenTtl }),
  };
  const ring = new KeyRing(pool, { accessTokenTtl: auth.accessTokenTtl });
  const revocations = new SessionRevocations(target.authenticatorUrl, { ...auth, senders: pool });
  await revocations.start();
  const notifications = new EventNotifications(target.authenticatorUrl, { senders: pool });
  await notifications.start();
  // A longer deadline than the service's 10 s: a document's fields run one after the other, and
  // a loaded CI machine must not make a correctness test a timing one. The deadline itself is
  // tested against the process (graphql-fairness.test.ts).
  const graphql = createGraphql(pool, { deadlineMs: 30_000, ...options.graphql });
  const app = createApp({
    pool,
    verifier: { ring, revocations },
    logger: createLogger('silent'),
    trustProxy: options.trustProxy ?? false,
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    routes: [
      ...serviceRoutes({
        pool,
        ring,
        graphql,
        auth,
        events: {
          notifications,
          streamsPerUser: options.streamsPerUser ?? 5,
          heartbeatMs: options.heartbeatMs,
          maxReplay: options.maxReplay,
          sessionEnded: (tenantId, sessionId) => revocations.isRevoked(tenantId, sessionId),
        },
        // Test receivers listen on loopback; the address rule has tests of its own.
        webhooks: {
          ...options.webhookTargets,
          allowPrivate: options.webhookAllowPrivate ?? true,
          timeoutMs: options.webhookTimeoutMs ?? 2000,
          secretKeys: options.webhookSecretKeys ?? TEST_WEBHOOK_SECRET_KEYS,
        },
        imports: { maxBytes: options.importMaxBytes ?? IMPORT_DEFAULTS.maxBytes },
        attachments: {
          store: attachmentStore,
          maxBytes: options.attachmentMaxBytes ?? ATTACHMENT_DEFAULTS.maxBytes,
        },
      }),
      ...(options.extraRoutes ?? []),
    ],
  });
  const server = createHttpServer(app, HTTP_DEFAULTS).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await graphql.release();
    await notifications.stop();
    await revocations.stop();
    await pool.end();
  });
  return {
    port: (server.address() as AddressInfo).port,
    pool,
    ring,
    notifications,
    attachmentStore,
  };
}

export interface SpawnedServer {
  child: ChildProcess;
  port: number;
  /** Every line the process wrote to stdout and stderr so far. */
  output: () => string;
  /** Sends the signal and resolves with the exit code. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
  exited: Promise<number | null>;
}

/**
 * Runs `node server/main.ts` with the given environment and waits for it to listen and, unless
 * `warm` is false, to have built its GraphQL schema (which it does after it listens: tests that
 * time requests would otherwise time the build's CPU too). `detached`: in a process group of its
 * own (its pid is the group's id), as a terminal runs `npm start`, so a test can signal the whole
 * group as Ctrl-C does; the teardown then kills the whole group.
 */
export async function spawnServer(
  t: ExecutionContext,
  env: Record<string, string>,
  options: { detached?: boolean; warm?: boolean } = {},
): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [path.join(ROOT, 'server/main.ts')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      LOG_LEVEL: 'info',
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.teardown(() => {
    if (options.detached && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone
      }
    } else if (child.exitCode === null) child.kill('SIGKILL');
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not listen:\n${output}`)), 60_000);
    const check = () => {
      // JSON lines, or LOG_FORMAT=pretty's: "[time] INFO: listening on ... {"port":N,...}"
      const match = /"port":(\d+),[^\n]*listening on|listening on[^\n]*"port":(\d+)/.exec(output);
      const warm = /"msg":"GraphQL schema built"|INFO: GraphQL schema built/.test(output);
      if (match && (options.warm === false || warm)) {
        clearTimeout(timer);
        child.stdout.off('data', check);
        resolve(Number(match[1] ?? match[2]));
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    child,
    port,
    output: () => output,
    exited,
    stop: (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs a server process that is expected to exit by itself (a refused start, say). */
export async function runServerToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return runNode([path.join(ROOT, 'server/main.ts')], {
    PORT: '0',
    WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
    ...env,
  });
}

/** Runs `weld-admin` with the arguments and environment given. */
export function runCli(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<{ code: number | null; stdout: string; stderr: string; output: string }> {
  return runNode([path.join(ROOT, 'db/cli.ts'), ...args], env, stdin);
}

async function runNode(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<{ code: number | null; stdout: string; stderr: string; output: string }> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin);
  // 'close', not 'exit': the process can exit before its output has been read (an empty stderr
  // was seen once in CI).
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr, output: stdout + stderr };
}

/**
 * At most `max` worlds of a test file at once: each holds a database, a server and their
 * connections, and the cluster's 200 connections are shared with the files running beside it.
 * Returns what a test awaits before it builds its world; the slot passes on at its teardown.
 */
export function worldSlots(
  max: number,
): (t: { teardown: (fn: () => void) => void }) => Promise<void> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (t) => {
    if (running < max) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    t.teardown(() => {
      const next = waiting.shift();
      if (next) next();
      else running--;
    });
  };
}
