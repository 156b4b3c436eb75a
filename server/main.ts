// The process: configuration, database, HTTP server, and an orderly stop.
//
// Start: parse the environment (a bad value stops here with one line naming the variable), reach
// the database (starting the embedded one when no URL is given), migrate or refuse when behind,
// listen. While running, an embedded PostgreSQL that dies is started again (db/embedded.ts), and
// an outage of any database makes requests answer 503 until it is back. Stop (SIGTERM/SIGINT): take no new connections, let in-flight requests finish (at most
// SHUTDOWN_GRACE_MS), close the pool, stop the embedded PostgreSQL, exit 0.
import './environment.ts';
import type { AddressInfo } from 'node:net';
import { connectClient, createPool } from '../db/database.ts';
import { openMigratedDatabase } from '../db/migrate.ts';
import { ensureDemoTenant } from '../db/tenants.ts';
import { createDemoUsers } from '../db/users.ts';
import { ConfigError } from '../db/config.ts';
import {
  sealPlainSecrets,
  unknownSecretKeys,
  webhookSecretKeys,
  type WebhookSecretKeys,
} from '../db/webhook-secrets.ts';
import { createApp, createHttpServer } from './app.ts';
import { KeyRing } from '../rest-adapter/http/auth/keys.ts';
import { SessionRevocations } from '../rest-adapter/http/auth/revocations.ts';
import { loadConfig, type Config } from './config.ts';
import { EventNotifications } from '../db/event-notifications.ts';
import { createGraphql } from './graphql.ts';
import { openStore } from '../db/attachment-store.ts';
import { startHousekeeping } from './housekeeping.ts';
import { createLogger, type Logger } from '../rest-adapter/http/log.ts';
import { serviceRoutes } from './routes.ts';
import { startWebhookWorker } from './webhook-worker.ts';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel, config.logFormat);
  // With a database URL the key must be given: refused here, before the database is touched.
  // The embedded database's is kept in DATA_DIR, which exists once the cluster is open.
  let secretKeys: WebhookSecretKeys | undefined =
    config.database.kind === 'embedded'
      ? undefined
      : webhookSecretKeys(config.webhooks.secretKeyConfig, config.database);

  const target = await openMigratedDatabase(config.database, {
    migrate: config.migrateOnStart,
    log: (message) => logger.info({ component: 'migrate' }, message),
  });
  logger.info({ database: target.description }, 'database ready');
  secretKeys ??= webhookSecretKeys(config.webhooks.secretKeyConfig, config.database);
  // Maintenance, not a condition of serving: a failure is a warning, and the next start tries again.
  await sealWebhookSecrets(target.ownerUrl, secretKeys, logger).catch((error: unknown) =>
    logger.warn({ err: error }, 'webhook secrets could not be sealed; the next start tries again'),
  );
  const webhooks = { ...config.webhooks, secretKeys };
  target.embedded?.supervise((level, message) => logger[level]({ component: 'postgres' }, message));

  // A database shutting down (57P01: Ctrl-C reaches the embedded PostgreSQL too, in the same
  // process group) ends idle connections: one info line, no stack. Anything else is a warning.
  const onError = (error: Error & { code?: string }) => {
    if (error.code === '57P01')
      logger.info({ code: error.code }, 'database shut down; connection closed');
    else logger.warn({ err: error }, 'idle database connection failed');
  };
  const bounds = { waitMs: config.dbPoolWaitMs, statementTimeoutMs: config.dbStatementTimeoutMs };
  const pool = createPool(target.authenticatorUrl, { max: config.dbPoolMax, ...bounds, onError });
  // GraphQL gets a pool of its own: a burst of heavy reports waits for its own connections and
  // never takes the ones REST (and sign-in) need. Tenant lookups and health probes get two
  // connections of their own, so a busy instance still answers them at once.
  const graphqlPool = createPool(target.authenticatorUrl, {
    max: config.graphql.poolMax,
    // Reports queue for their few connections as long as their deadline lasts, not REST's short
    // wait (each request bounds its own wait by its deadline: graphql-request.ts).
    waitMs: Math.max(config.dbPoolWaitMs, config.graphql.deadlineMs),
    // Each GraphQL request sets its statement timeout in its own transaction (graphql-request.ts).
    // The connection's default is REST's, or more: the schema's introspection runs on this pool
    // outside any request, and a busy machine must not cut it at a report's timeout (a failed
    // build stops the process).
    statementTimeoutMs: Math.max(config.dbStatementTimeoutMs, config.graphql.statementTimeoutMs),
    onError,
  });
  const controlPool = createPool(target.authenticatorUrl, { max: 2, ...bounds, onError });
  let draining = false;
  const ring = new KeyRing(pool, {
    accessTokenTtl: config.auth.accessTokenTtl,
    configuredKeys: config.auth.signingKeys,
    reloadAfterMs: config.auth.keysReloadMs,
  });
  logger.info(
    config.auth.signingKeys
      ? `signing keys: ${config.auth.signingKeys.length} from JWT_SIGNING_KEYS`
      : 'signing keys: per tenant, in the database (created on first use)',
  );
  const revocations = new SessionRevocations(target.authenticatorUrl, {
    accessTokenTtl: config.auth.accessTokenTtl,
    logger,
    senders: pool,
  });
  await revocations.start();
  const attachmentStore = openStore(config.attachments.store);
  logger.info(
    config.attachments.store.kind === 'local'
      ? `attachments: files under ${config.attachments.store.root}`
      : `attachments: S3 bucket ${config.attachments.store.bucket}`,
  );
  const housekeeping = startHousekeeping(pool, logger, {
    eventRetentionDays: config.events.retentionDays,
    reapPool: controlPool,
    attachmentStore,
  });
  const notifications = new EventNotifications(target.authenticatorUrl, {
    onError: (error) => logger.warn({ err: error }, 'event listener connection failed'),
    senders: pool,
  });
  await notifications.start();
  if (config.webhooks.allowPrivate) {
    logger.warn(
      'WEBHOOK_ALLOW_PRIVATE=true: webhooks may reach any address, this machine included ' +
        '(the quick start only)',
    );
  }
  const webhookWorker =
    config.webhooks.concurrency > 0
      ? startWebhookWorker(pool, notifications, logger, webhooks)
      : undefined;
  // The GraphQL schema takes a second or two of CPU to build: it is built once the server listens
  // (below), so REST serves at once; a GraphQL request that comes first waits for the build.
  const graphql = createGraphql(graphqlPool, { logger, ...config.graphql });
  const app = createApp({
    pool,
    controlPool,
    logger,
    verifier: { ring, revocations },
    trustProxy: config.trustProxy,
    maxBodyBytes: config.maxBodyBytes,
    routes: serviceRoutes({
      pool,
      controlPool,
      ring,
      graphql,
      auth: {
        accessTokenTtl: config.auth.accessTokenTtl,
        refreshTokenTtl: config.auth.refreshTokenTtl,
      },
      isDraining: () => draining,
      events: {
        notifications,
        streamsPerUser: config.events.streamsPerUser,
        sessionEnded: (tenantId, sessionId) => revocations.isRevoked(tenantId, sessionId),
      },
      webhooks,
      imports: config.imports,
      attachments: { store: attachmentStore, maxBytes: config.attachments.maxBytes },
    }),
  });

  const server = createHttpServer(app, config.http);
  if (config.host) server.listen(config.port, config.host);
  else server.listen(config.port);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  }).catch(async (error: Error) => {
    logger.fatal({ err: error }, `cannot listen on port ${config.port}`);
    await pool.end();
    await target.release();
    process.exit(1);
  });
  const { port } = server.address() as AddressInfo;

  let demoOrigins: string[] = [];
  if (target.embedded) {
    const owner = await connectClient(target.ownerUrl);
    const { demo, created } = await ensureDemoTenant(owner, port);
    demoOrigins = demo?.origins ?? [];
    if (created && config.database.kind === 'embedded') {
      // Passwords never go to the log: into a file only this OS user can read, named in the log.
      const file = await createDemoUsers(owner, 'demo', config.database.dataDir);
      logger.info(
        { demoUsers: file },
        `demo users of tenant "demo" created, one per role; their passwords are in ${file} ` +
          '(readable only by you; `npx weld-admin user set-password` changes them)',
      );
    }
    await owner.end();
  }
  logger.info(
    { port, ...(demoOrigins.length && { demoTenant: demoOrigins }) },
    `listening on http://localhost:${port}` +
      (demoOrigins.length
        ? `; demo tenant at ${demoOrigins.join(' and ')}, its web app at ${demoOrigins.find((o) => o.includes('localhost')) ?? demoOrigins[0]}/app/`
        : ''),
  );

  let stopping = false;
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    draining = true;
    // Closed before it is said: whoever reads "stopping" finds no new connection taken.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    logger.info({ signal }, 'stopping: finishing in-flight requests');
    // Event streams never finish on their own: end them now (clients reconnect elsewhere).
    await notifications.stop();
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
    await closed;
    clearTimeout(force);
    await graphql.release().catch(() => {}); // a failed build has nothing to release
    await housekeeping.stop();
    await webhookWorker?.stop();
    await revocations.stop();
    await graphqlPool.end();
    await controlPool.end();
    await pool.end();
    await target.release();
    logger.info('stopped');
    process.exit(exitCode);
  };
  process.on('SIGTERM', (signal) => void stop(signal));
  process.on('SIGINT', (signal) => void stop(signal));

  graphql.warm().then(
    () => logger.info('GraphQL schema built'),
    (error: unknown) => {
      // As fatal as failing to start: this process could never answer GraphQL.
      logger.fatal({ err: error }, 'GraphQL schema could not be built');
      void stop('GraphQL schema build failed', 1);
    },
  );
}

/**
 * Seals the webhook secrets still stored in plain text (from before sealing, or from an older
 * instance during an upgrade), and warns of secrets sealed with keys this instance lacks.
 */
async function sealWebhookSecrets(ownerUrl: string, keys: WebhookSecretKeys, logger: Logger) {
  const owner = await connectClient(ownerUrl);
  try {
    const sealed = await sealPlainSecrets(owner, keys);
    if (sealed > 0) {
      logger.info(
        { keyId: keys.current.id, sealed },
        'webhook secrets stored in plain text sealed',
      );
    }
    for (const { keyId, secrets } of await unknownSecretKeys(owner, keys)) {
      logger.warn(
        { keyId, secrets },
        'webhook secrets sealed with a key this instance does not have: their endpoints get ' +
          'nothing from it; add the key to WEBHOOK_SECRET_KEYS_OLD',
      );
    }
  } finally {
    await owner.end();
  }
}

await main().catch((error: unknown) => {
  // What a person can fix (configuration, a directory PostgreSQL cannot reach) is one line;
  // anything else is a bug and keeps its stack.
  if (!(error instanceof ConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
});
