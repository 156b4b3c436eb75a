// Configuration: every environment variable the service reads, parsed once at start.
// A bad value stops the process with one line that names the variable (see main.ts).
// The README's configuration table mirrors this schema; keep the two together.
import fs from 'node:fs';
import path from 'node:path';
import type { JWK } from 'jose';
import { z } from 'zod';

const postgresUrl = z
  .string()
  .trim()
  .refine((value) => /^postgres(ql)?:\/\//.test(value), 'must be a postgres:// URL');

const port = z.coerce.number().int().min(0).max(65535);

const envSchema = z
  .object({
    PORT: port.default(3000),
    HOST: z.string().trim().min(1).optional(),
    DATABASE_URL: postgresUrl.optional(),
    DATABASE_OWNER_URL: postgresUrl.optional(),
    DATABASE_AUTHENTICATOR_URL: postgresUrl.optional(),
    DATA_DIR: z.string().trim().min(1).default('./.data'),
    EMBEDDED_PG_PORT: port.default(0),
    MIGRATE_ON_START: z.stringbool().default(true),
    TRUST_PROXY: z.stringbool().default(false),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    DB_POOL_MAX: z.coerce.number().int().min(1).max(500).default(20),
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
    ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(3600).default(600),
    REFRESH_TOKEN_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(300)
      .max(365 * 86_400)
      .default(30 * 86_400),
    JWT_SIGNING_KEYS: z.string().trim().min(1).optional(),
  })
  .refine((env) => Boolean(env.DATABASE_OWNER_URL) === Boolean(env.DATABASE_AUTHENTICATOR_URL), {
    path: ['DATABASE_AUTHENTICATOR_URL'],
    message: 'DATABASE_OWNER_URL and DATABASE_AUTHENTICATOR_URL go together: set both or neither',
  });

/** Where the database comes from; decided by which URLs are set. */
export type DatabaseSource =
  /** No URL: a PostgreSQL cluster of our own under DATA_DIR/pg. */
  | { kind: 'embedded'; dataDir: string; port: number }
  /** DATABASE_URL: a role that may create roles and extensions; it bootstraps everything. */
  | { kind: 'root'; rootUrl: string; ownerUrl?: string; authenticatorUrl?: string }
  /** Only the two role URLs: roles were bootstrapped by a DBA; we migrate as owner and serve. */
  | { kind: 'split'; ownerUrl: string; authenticatorUrl: string };

export interface Config {
  port: number;
  host: string | undefined;
  database: DatabaseSource;
  migrateOnStart: boolean;
  trustProxy: boolean;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  maxBodyBytes: number;
  dbPoolMax: number;
  shutdownGraceMs: number;
  auth: {
    accessTokenTtl: number;
    refreshTokenTtl: number;
    /** ES256 private JWKs from JWT_SIGNING_KEYS; undefined: each tenant's keys live in the database. */
    signingKeys: JWK[] | undefined;
  };
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings count as unset, so `FOO= npm start` behaves like leaving FOO out.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = issue.path.join('.') || 'environment';
    throw new ConfigError(`Invalid configuration: ${name}: ${issue.message}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    database: databaseSource(e),
    migrateOnStart: e.MIGRATE_ON_START,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    maxBodyBytes: e.MAX_BODY_BYTES,
    dbPoolMax: e.DB_POOL_MAX,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    auth: {
      accessTokenTtl: e.ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtl: e.REFRESH_TOKEN_TTL_SECONDS,
      signingKeys: e.JWT_SIGNING_KEYS === undefined ? undefined : signingKeys(e.JWT_SIGNING_KEYS),
    },
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

function databaseSource(e: z.infer<typeof envSchema>): DatabaseSource {
  if (e.DATABASE_URL) {
    return {
      kind: 'root',
      rootUrl: e.DATABASE_URL,
      ...(e.DATABASE_OWNER_URL && { ownerUrl: e.DATABASE_OWNER_URL }),
      ...(e.DATABASE_AUTHENTICATOR_URL && { authenticatorUrl: e.DATABASE_AUTHENTICATOR_URL }),
    };
  }
  if (e.DATABASE_OWNER_URL && e.DATABASE_AUTHENTICATOR_URL) {
    return {
      kind: 'split',
      ownerUrl: e.DATABASE_OWNER_URL,
      authenticatorUrl: e.DATABASE_AUTHENTICATOR_URL,
    };
  }
  return { kind: 'embedded', dataDir: path.resolve(e.DATA_DIR), port: e.EMBEDDED_PG_PORT };
}
