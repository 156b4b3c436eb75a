// Configuration: every environment variable the server reads (db/config.ts's and its own),
// parsed once at start.
// A bad value stops the process with one line that names the variable (see main.ts).
// docs/configuration.md's table mirrors this schema; keep the two together.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { JWK } from 'jose';
import { z } from 'zod';
import {
  ConfigError,
  databaseEnv,
  parseEnvironment,
  port,
  wholeNumber,
  type DatabaseSource,
} from '../db/config.ts';
import type { S3Options } from '../db/attachment-store.ts';
import { POOL_DEFAULTS } from '../db/database.ts';
import type { TrustProxy } from '../rest-adapter/http/tenancy.ts';
import { networkList } from '../rest-adapter/http/webhook-address.ts';
import { webhookKeyEnv, type WebhookKeyConfig } from '../db/webhook-secrets.ts';

/** GraphQL's limits when the environment does not set them (see server/graphql-cost.ts). */
export const GRAPHQL_DEFAULTS = {
  maxCost: 100_000,
  statementTimeoutMs: 10_000,
  deadlineMs: 10_000,
  poolMax: 5,
  requestsPerUser: 2,
} as const;

/**
 * GraphQL requests one tenant may have in flight on an instance, when GRAPHQL_REQUESTS_PER_TENANT
 * is not set: every connection of GraphQL's pool but one, so another tenant always finds one (a
 * pool of one connection cannot leave any).
 */
export function defaultRequestsPerTenant(poolMax: number): number {
  return Math.max(1, poolMax - 1);
}

/**
 * How long a slow or idle client may hold a socket, when the environment does not say (docs/operating.md,
 * "Faults"). headersTimeout ends a slowloris client; requestTimeout bounds the whole upload
 * (a 50 MB import at 0.5 MB/s fits); keepAliveTimeout ends an idle keep-alive connection.
 */
export const HTTP_DEFAULTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 5_000,
} as const;

/** The largest file any tenant may attach (each tenant's own limit is at most this). */
export const ATTACHMENT_DEFAULTS = { maxBytes: 100 * 1024 * 1024 } as const;

/** The largest weld register file an import takes (docs/api.md, "Import and export"). */
export const IMPORT_DEFAULTS = { maxBytes: 50 * 1024 * 1024 } as const;

/** Events and webhooks when the environment does not set them (docs/api.md, "Events"). */
export const EVENT_DEFAULTS = { retentionDays: 30, streamsPerUser: 5 } as const;
export const WEBHOOK_DEFAULTS = {
  timeoutMs: 10_000,
  retryBaseMs: 5_000,
  giveUpHours: 24,
  concurrency: 8,
  tenantConcurrency: 2,
  pollMs: 1_000,
} as const;

const envSchema = z.object({
  ...databaseEnv,
  ...webhookKeyEnv,
  PORT: port.default(3000),
  HOST: z.string().trim().min(1).optional(),
  TRUST_PROXY: z
    .string()
    .trim()
    .default('false')
    .transform((value, ctx): TrustProxy => {
      if (value === 'false' || value === '0') return false;
      if (/^[0-9]{1,2}$/.test(value)) return Number(value);
      const entries = value.split(',').map((entry) => entry.trim());
      const bad = entries.find((entry) => !isProxyAddress(entry));
      if (value === 'true' || bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message:
            value === 'true'
              ? 'true would trust any client-supplied X-Forwarded-For; give the number of proxies in front (e.g. 1) or their addresses (e.g. 10.0.0.5,10.0.1.0/24)'
              : `'${bad}' is not an IP address, a subnet (address/bits), loopback, linklocal or uniquelocal`,
        });
        return z.NEVER;
      }
      return entries;
    }),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  MAX_BODY_BYTES: wholeNumber(1024, 64 * 1024 * 1024).default(1024 * 1024),
  IMPORT_MAX_BYTES: wholeNumber(1024, 1024 * 1024 * 1024).default(IMPORT_DEFAULTS.maxBytes),
  ATTACHMENT_STORE: z.enum(['local', 's3']).default('local'),
  ATTACHMENT_DIR: z.string().trim().min(1).optional(),
  ATTACHMENT_MAX_BYTES: wholeNumber(1024, 1024 * 1024 * 1024).default(ATTACHMENT_DEFAULTS.maxBytes),
  S3_BUCKET: z.string().trim().min(1).optional(),
  S3_PREFIX: z
    .string()
    .trim()
    .regex(/^([A-Za-z0-9._-]+\/)*$/, 'must be empty or folder names ending in / (weld/)')
    .default(''),
  S3_REGION: z.string().trim().min(1).default('us-east-1'),
  S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  S3_FORCE_PATH_STYLE: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default('false')
    .transform((value) => value === 'true'),
  S3_ACCESS_KEY_ID: z.string().trim().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().trim().min(1).optional(),
  DB_POOL_MAX: wholeNumber(1, 500).default(20),
  DB_POOL_WAIT_MS: wholeNumber(50, 60_000).default(POOL_DEFAULTS.waitMs),
  DB_STATEMENT_TIMEOUT_MS: wholeNumber(100, 3_600_000).default(POOL_DEFAULTS.statementTimeoutMs),
  HTTP_HEADERS_TIMEOUT_MS: wholeNumber(1000, 600_000).default(HTTP_DEFAULTS.headersTimeoutMs),
  HTTP_REQUEST_TIMEOUT_MS: wholeNumber(1000, 3_600_000).default(HTTP_DEFAULTS.requestTimeoutMs),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: wholeNumber(1000, 600_000).default(HTTP_DEFAULTS.keepAliveTimeoutMs),
  SIGNING_KEYS_RELOAD_SECONDS: wholeNumber(1, 3600).default(60),
  SHUTDOWN_GRACE_MS: wholeNumber(0, 600_000).default(10_000),
  ACCESS_TOKEN_TTL_SECONDS: wholeNumber(30, 3600).default(600),
  REFRESH_TOKEN_TTL_SECONDS: wholeNumber(300, 365 * 86_400).default(30 * 86_400),
  JWT_SIGNING_KEYS: z.string().trim().min(1).optional(),
  GRAPHQL_MAX_COST: wholeNumber(1, 1_000_000_000).default(GRAPHQL_DEFAULTS.maxCost),
  GRAPHQL_STATEMENT_TIMEOUT_MS: wholeNumber(100, 600_000).default(
    GRAPHQL_DEFAULTS.statementTimeoutMs,
  ),
  GRAPHQL_DEADLINE_MS: wholeNumber(100, 600_000).default(GRAPHQL_DEFAULTS.deadlineMs),
  GRAPHQL_POOL_MAX: wholeNumber(1, 500).default(GRAPHQL_DEFAULTS.poolMax),
  GRAPHQL_REQUESTS_PER_USER: wholeNumber(1, 1000).default(GRAPHQL_DEFAULTS.requestsPerUser),
  GRAPHQL_REQUESTS_PER_TENANT: wholeNumber(1, 1000).optional(),
  EVENT_RETENTION_DAYS: wholeNumber(1, 3650).default(EVENT_DEFAULTS.retentionDays),
  EVENT_STREAMS_PER_USER: wholeNumber(1, 100).default(EVENT_DEFAULTS.streamsPerUser),
  // Exactly true or false: no 1, yes or on that turns the address rule off by a slip.
  WEBHOOK_ALLOW_PRIVATE: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default('false')
    .transform((value) => value === 'true'),
  WEBHOOK_ALLOW_NETWORKS: z
    .string()
    .trim()
    .transform((value, ctx) => {
      const entries = value.split(',').map((entry) => entry.trim());
      const bad = entries.find((entry) => !networkList([entry]));
      if (bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `'${bad}' is not a network (address/bits, e.g. 10.1.2.0/24 or fd12:3456::/48)`,
        });
        return z.NEVER;
      }
      return entries;
    })
    .optional(),
  WEBHOOK_TIMEOUT_MS: wholeNumber(1000, 60_000).default(WEBHOOK_DEFAULTS.timeoutMs),
  WEBHOOK_RETRY_BASE_MS: wholeNumber(1000, 3_600_000).default(WEBHOOK_DEFAULTS.retryBaseMs),
  WEBHOOK_GIVE_UP_HOURS: wholeNumber(1, 720).default(WEBHOOK_DEFAULTS.giveUpHours),
  WEBHOOK_CONCURRENCY: wholeNumber(0, 100).default(WEBHOOK_DEFAULTS.concurrency),
  WEBHOOK_TENANT_CONCURRENCY: wholeNumber(1, 100).default(WEBHOOK_DEFAULTS.tenantConcurrency),
});

export interface Config {
  port: number;
  host: string | undefined;
  database: DatabaseSource;
  migrateOnStart: boolean;
  trustProxy: TrustProxy;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  logFormat: z.infer<typeof envSchema>['LOG_FORMAT'];
  maxBodyBytes: number;
  imports: {
    /** The largest CSV file POST /imports/welds takes (413 beyond). */
    maxBytes: number;
  };
  /** Where attachments' bytes live (db/attachment-store.ts), and the largest file of any tenant. */
  attachments: { store: LocalStoreConfig | ({ kind: 's3' } & S3Options); maxBytes: number };
  dbPoolMax: number;
  /** How long a request waits for a pooled connection before 503 /problems/busy. */
  dbPoolWaitMs: number;
  /** statement_timeout of every REST transaction (an import raises its own). */
  dbStatementTimeoutMs: number;
  http: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number };
  shutdownGraceMs: number;
  auth: {
    accessTokenTtl: number;
    refreshTokenTtl: number;
    /** ES256 private JWKs from JWT_SIGNING_KEYS; undefined: each tenant's keys live in the database. */
    signingKeys: JWK[] | undefined;
    /** How long a process reuses a tenant's keys before reading them again (a rotation's delay). */
    keysReloadMs: number;
  };
  graphql: {
    /** The cost budget of one GraphQL request. */
    maxCost: number;
    /** The longest one statement of a GraphQL request may run, in ms. */
    statementTimeoutMs: number;
    /** All the database work of one GraphQL request together, in ms (server/graphql-request.ts). */
    deadlineMs: number;
    /** Connections of GraphQL's own pool, apart from REST's: reports cannot starve the API. */
    poolMax: number;
    /** GraphQL requests one user may have in flight on this instance (at most requestsPerTenant). */
    requestsPerUser: number;
    /** GraphQL requests one tenant may have in flight on this instance; one more is 429. */
    requestsPerTenant: number;
  };
  events: {
    /** Events older than this are purged (the feed answers 410 to a cursor into them). */
    retentionDays: number;
    /** Open event streams per user and instance. */
    streamsPerUser: number;
  };
  webhooks: {
    /** Lift the address rule entirely: the embedded quick start only (and tests). */
    allowPrivate: boolean;
    /** Private networks where receivers may be (never loopback, link-local or this machine). */
    allowNetworks: string[];
    timeoutMs: number;
    retryBaseMs: number;
    giveUpHours: number;
    /** Endpoints this instance delivers to at once; 0: this instance sends no webhooks. */
    concurrency: number;
    /** Endpoints of one tenant this instance delivers to at once: below concurrency (fairness). */
    tenantConcurrency: number;
    /** WEBHOOK_SECRET_KEY and _KEYS_OLD; main.ts resolves them (db/webhook-secrets.ts). */
    secretKeyConfig: WebhookKeyConfig;
    pollMs: number;
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const e = parseEnvironment(envSchema, env);
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) {
    // node refuses it too, with a stack trace instead of a line
    throw new ConfigError(
      'Invalid configuration: HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS',
    );
  }
  // The address rule off is for a service on one's own machine (the embedded quick start, whose
  // example receiver listens on localhost). A deployment (a database URL) that copied the
  // setting would let every tenant's admin reach the network it runs in: refuse to start.
  if (e.WEBHOOK_ALLOW_PRIVATE && e.database.kind !== 'embedded') {
    throw new ConfigError(
      'Invalid configuration: WEBHOOK_ALLOW_PRIVATE: true is only for the embedded quick start ' +
        '(no database URL); list the private networks your receivers are on in WEBHOOK_ALLOW_NETWORKS',
    );
  }
  return {
    port: e.PORT,
    host: e.HOST,
    database: e.database,
    migrateOnStart: e.migrateOnStart,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    maxBodyBytes: e.MAX_BODY_BYTES,
    imports: { maxBytes: e.IMPORT_MAX_BYTES },
    attachments: { store: attachmentStore(e), maxBytes: e.ATTACHMENT_MAX_BYTES },
    dbPoolMax: e.DB_POOL_MAX,
    dbPoolWaitMs: e.DB_POOL_WAIT_MS,
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    http: {
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    auth: {
      accessTokenTtl: e.ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtl: e.REFRESH_TOKEN_TTL_SECONDS,
      signingKeys: e.JWT_SIGNING_KEYS === undefined ? undefined : signingKeys(e.JWT_SIGNING_KEYS),
      keysReloadMs: e.SIGNING_KEYS_RELOAD_SECONDS * 1000,
    },
    graphql: graphqlLimits(e),
    events: {
      retentionDays: e.EVENT_RETENTION_DAYS,
      streamsPerUser: e.EVENT_STREAMS_PER_USER,
    },
    webhooks: {
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
      allowNetworks: e.WEBHOOK_ALLOW_NETWORKS ?? [],
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      giveUpHours: e.WEBHOOK_GIVE_UP_HOURS,
      concurrency: e.WEBHOOK_CONCURRENCY,
      // Never every lane: one tenant's slow receivers leave at least one to the others.
      tenantConcurrency: Math.min(
        e.WEBHOOK_TENANT_CONCURRENCY,
        Math.max(e.WEBHOOK_CONCURRENCY - 1, 1),
      ),
      pollMs: WEBHOOK_DEFAULTS.pollMs,
      secretKeyConfig: { current: e.WEBHOOK_SECRET_KEY, old: e.WEBHOOK_SECRET_KEYS_OLD ?? [] },
    },
  };
}

function graphqlLimits(e: z.infer<typeof envSchema>): Config['graphql'] {
  const requestsPerTenant =
    e.GRAPHQL_REQUESTS_PER_TENANT ?? defaultRequestsPerTenant(e.GRAPHQL_POOL_MAX);
  return {
    maxCost: e.GRAPHQL_MAX_COST,
    statementTimeoutMs: e.GRAPHQL_STATEMENT_TIMEOUT_MS,
    deadlineMs: e.GRAPHQL_DEADLINE_MS,
    poolMax: e.GRAPHQL_POOL_MAX,
    // A user is one of the tenant's: never more than the tenant may have.
    requestsPerUser: Math.min(e.GRAPHQL_REQUESTS_PER_USER, requestsPerTenant),
    requestsPerTenant,
  };
}

const privateEcJwk = z
  .object({
    kty: z.literal('EC'),
    crv: z.literal('P-256'),
    kid: z.string().min(1),
    x: z.string(),
    y: z.string(),
    d: z.string(),
  })
  .loose();

/**
 * JWT_SIGNING_KEYS: a JWK set of ES256 private keys, inline JSON or "@/path/to/keys.json". The
 * first key signs; every key verifies and is published, so rotation is: put the new key first,
 * keep the old one until the tokens it signed have expired, then remove it.
 */
function signingKeys(value: string): JWK[] {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = fs.readFileSync(value.slice(1), 'utf8');
    } catch {
      throw new ConfigError(
        `Invalid configuration: JWT_SIGNING_KEYS: cannot read ${value.slice(1)}`,
      );
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigError('Invalid configuration: JWT_SIGNING_KEYS: not JSON');
  }
  const parsed = z.object({ keys: z.array(privateEcJwk).min(1) }).safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(
      'Invalid configuration: JWT_SIGNING_KEYS: expected {"keys": [ES256 private JWKs with kid]}',
    );
  }
  return parsed.data.keys;
}

/** One entry of a TRUST_PROXY list, as express's proxy-addr accepts it. */
function isProxyAddress(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [address, bits, extra] = entry.split('/');
  const family = net.isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^[0-9]{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

export interface LocalStoreConfig {
  kind: 'local';
  root: string;
}

/** ATTACHMENT_STORE and its settings: files under ATTACHMENT_DIR, or an S3 bucket. */
function attachmentStore(e: z.infer<typeof envSchema>): Config['attachments']['store'] {
  if (e.ATTACHMENT_STORE === 'local') {
    return {
      kind: 'local',
      root: path.resolve(e.ATTACHMENT_DIR ?? path.join(e.DATA_DIR, 'attachments')),
    };
  }
  if (!e.S3_BUCKET) {
    throw new ConfigError('Invalid configuration: S3_BUCKET: required when ATTACHMENT_STORE=s3');
  }
  if (Boolean(e.S3_ACCESS_KEY_ID) !== Boolean(e.S3_SECRET_ACCESS_KEY)) {
    throw new ConfigError(
      'Invalid configuration: S3_SECRET_ACCESS_KEY: S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together: set both or neither (the AWS SDK then finds credentials itself)',
    );
  }
  return {
    kind: 's3',
    bucket: e.S3_BUCKET,
    prefix: e.S3_PREFIX,
    region: e.S3_REGION,
    endpoint: e.S3_ENDPOINT,
    forcePathStyle: e.S3_FORCE_PATH_STYLE,
    credentials:
      e.S3_ACCESS_KEY_ID && e.S3_SECRET_ACCESS_KEY
        ? { accessKeyId: e.S3_ACCESS_KEY_ID, secretAccessKey: e.S3_SECRET_ACCESS_KEY }
        : undefined,
  };
}
