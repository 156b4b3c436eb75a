// Errors as RFC 9457 Problem Details: one error class, one table from causes (express's body
// parser, PostgreSQL SQLSTATEs, zod) to HTTP, and one renderer. Nothing else writes an error body.
//
// `type` is "about:blank" when the HTTP status says it all (RFC 9457 section 4.2.1), and a
// relative reference "/problems/<name>" for the service's own kinds. Every kind is an entry of the
// registry, problem-types.ts (status, title, meaning, SQLSTATEs); docs/api.md's table is its.
import type { ErrorRequestHandler, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { fieldName, oneIssuePerField } from '../../db/plain-words.ts';
import {
  PROBLEM_TYPES,
  problemType,
  RULE_SQLSTATES,
  STATUS_TITLES,
  type ProblemSlug,
  type ProblemTypeUri,
  type ProblemTypeEntry,
  type RuleSqlstate,
  type StandardSqlstate,
} from './problem-types.ts';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ValidationIssue {
  /** JSON Pointer (RFC 6901) into the request body, e.g. "/status". */
  pointer?: string;
  /** The query or path parameter, e.g. "limit". */
  parameter?: string;
  detail: string;
}

export interface ProblemInit {
  type?: ProblemTypeUri;
  title?: string;
  detail: string;
  headers?: Record<string, string>;
  /** Extension members, e.g. `errors` or `allowed`. */
  extensions?: Record<string, unknown>;
}

export class HttpProblem extends Error {
  readonly status: number;
  readonly type: ProblemTypeUri;
  readonly title: string;
  readonly detail: string;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(status: number, init: ProblemInit) {
    super(init.detail);
    this.status = status;
    this.type = init.type ?? 'about:blank';
    this.title = init.title ?? (STATUS_TITLES as Record<number, string>)[status] ?? 'Error';
    this.detail = init.detail;
    this.headers = init.headers ?? {};
    this.extensions = init.extensions ?? {};
  }
}

/**
 * A problem of the registry (rest-adapter/http/problem-types.ts): its type, status and title from the
 * entry, the rest from the caller. `problemOf('package-relesed', ...)` does not compile.
 */
export function problemOf(
  slug: ProblemSlug,
  init: Omit<ProblemInit, 'type' | 'title'>,
): HttpProblem {
  const entry: ProblemTypeEntry = PROBLEM_TYPES[slug];
  return new HttpProblem(entry.status, { ...init, type: problemType(slug), title: entry.title });
}

export const problems = {
  notFound: (detail: string) => problemOf('not-found', { detail }),
  /** about:blank: the request itself cannot be read (not UTF-8, nested too deep). */
  badRequest: (detail: string) => problemOf('bad-request', { detail }),
  unknownTenant: () =>
    problemOf('unknown-tenant', { detail: 'No tenant is served from this origin.' }),
  methodNotAllowed: (method: string, allow: string[]) =>
    problemOf('method-not-allowed', {
      detail: `${method} is not allowed here; allowed: ${allow.join(', ')}.`,
      headers: { Allow: allow.join(', ') },
    }),
  unsupportedMediaType: (detail = 'The request body must be application/json.') =>
    problemOf('unsupported-media-type', { detail }),
  databaseUnavailable: () =>
    problemOf('database-unavailable', {
      detail: 'The database does not answer; try again shortly.',
      headers: { 'Retry-After': '5' },
    }),
  busy: () =>
    problemOf('busy', {
      detail: 'Every database connection stayed busy for the whole wait; try again shortly.',
      headers: { 'Retry-After': '1' },
    }),
  /** A Host not seen before, while lookups of new Hosts are rationed (rest-adapter/http/tenancy.ts). */
  hostsRationed: () =>
    problemOf('busy', {
      detail: 'This instance is looking up many new hosts at once; try again shortly.',
      headers: { 'Retry-After': '1' },
    }),
  /** The detail names each field and says what is wrong with it: "weldNumber must be text". */
  validation: (issues: ValidationIssue[]) => invalid(issues.map(issueSentence).join('; '), issues),
};

/** A PostgreSQL error as node-postgres reports it: the SQLSTATE, and the names it carries. */
export interface DatabaseError {
  message: string;
  code?: string;
  detail?: string;
  table?: string;
  column?: string;
  constraint?: string;
}

/**
 * How a refusal names what it is about, in the client's words. REST and GraphQL spell columns
 * alike (camelCase) except the primary key (REST `id`, GraphQL `rowId`).
 */
export interface ColumnNaming {
  field(column: string): string;
  /**
   * The columns of a constraint or unique index, from the catalog. Without it they come from
   * the error's DETAIL, which PostgreSQL leaves out of errors on tables with row security.
   */
  constraintColumns?(table: string, constraint: string): readonly string[] | undefined;
  /**
   * What a CHECK constraint asks, in the words of its comment in the migrations ("must be a date
   * from 1900-01-01 to 2200-12-31"): SQL says what its refusal means.
   */
  constraintRule?(table: string, constraint: string): string | undefined;
}

export const camelCase = (column: string) =>
  column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const REST_NAMING: ColumnNaming = { field: camelCase };

/**
 * Column names as a client spells them, with every constraint's and unique index's columns read
 * from the catalog of weld_public once (row security hides DETAIL, so a unique violation would
 * otherwise name no field).
 */
export class CatalogColumnNaming implements ColumnNaming {
  private readonly constraints = new Map<string, readonly string[]>();
  private readonly rules = new Map<string, string>();

  readonly field: (column: string) => string;

  constructor(field: (column: string) => string = camelCase) {
    this.field = field;
  }

  constraintColumns(table: string, constraint: string): readonly string[] | undefined {
    return this.constraints.get(`${table}.${constraint}`);
  }

  constraintRule(table: string, constraint: string): string | undefined {
    return this.rules.get(`${table}.${constraint}`);
  }

  /**
   * Constraints and unique indexes of weld_public with their columns, in key order, and the
   * comments of its CHECK constraints.
   */
  async load(pool: pg.Pool): Promise<void> {
    const { rows } = await pool.query<{ name: string; columns: string[]; rule: string | null }>(`
      select r.relname || '.' || c.conname as name,
             array(select a.attname::text from unnest(c.conkey) with ordinality k(n, i)
                     join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n
                    order by k.i) as columns,
             case c.contype when 'c' then obj_description(c.oid, 'pg_constraint') end as rule
        from pg_constraint c
        join pg_class r on r.oid = c.conrelid
       where r.relnamespace = 'weld_public'::regnamespace and c.contype in ('p', 'u', 'f', 'c')
      union all
      select r.relname || '.' || i.relname,
             array(select a.attname::text from unnest(x.indkey::int2[]) with ordinality k(n, i)
                     join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.n
                    order by k.i),
             null
        from pg_index x
        join pg_class i on i.oid = x.indexrelid
        join pg_class r on r.oid = x.indrelid
       where r.relnamespace = 'weld_public'::regnamespace and x.indisunique`);
    for (const row of rows) {
      this.constraints.set(row.name, row.columns);
      if (row.rule) this.rules.set(row.name, row.rule);
    }
  }
}

const restNamings = new WeakMap<pg.Pool, Promise<ColumnNaming>>();

/** REST's naming for the database behind `pool`, loaded on first use (plain names if that fails). */
export function restNaming(pool: pg.Pool): Promise<ColumnNaming> {
  let naming = restNamings.get(pool);
  if (!naming) {
    const catalog = new CatalogColumnNaming();
    naming = catalog.load(pool).then(
      () => catalog,
      () => {
        restNamings.delete(pool); // try again next time
        return REST_NAMING;
      },
    );
    restNamings.set(pool, naming);
  }
  return naming;
}

/** DETAIL of WD002, WD005 to WD007 and WD009 to WD014 is a JSON object; anything else reads as {}. */
function jsonDetail(e: DatabaseError): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(e.detail ?? '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/**
 * The fields a constraint covers, as the client names them. tenant_id is left out: every key
 * leads with it and the session implies it, so a clash or a missing reference is always within
 * the caller's tenant (and another tenant's row is invisible, hence "missing").
 */
function constraintFields(e: DatabaseError, naming: ColumnNaming): string[] {
  const fromCatalog =
    e.table && e.constraint ? naming.constraintColumns?.(e.table, e.constraint) : undefined;
  const fromDetail = /^Key \(([^()]*)\)/.exec(e.detail ?? '')?.[1]?.split(', ');
  const columns = fromCatalog ?? fromDetail ?? (e.column ? [e.column] : []);
  return columns.filter((c) => c !== 'tenant_id').map((c) => naming.field(c));
}

const listed = (fields: string[]) =>
  fields.length <= 1 ? (fields[0] ?? '') : `${fields.slice(0, -1).join(', ')} and ${fields.at(-1)}`;

/**
 * An issue as a sentence: its field's name and a phrase ("weldNumber must be text"); a detail that
 * is a sentence of its own (a rule's words from SQL) after a colon; one naming no field as it is.
 */
function issueSentence(issue: ValidationIssue): string {
  if (issue.parameter === undefined && issue.pointer === undefined) return issue.detail;
  const phrase = /^(is|are|must|may|has|have|does)\b/.test(issue.detail);
  return `${issueName(issue)}${phrase ? ' ' : ': '}${issue.detail}`;
}

/** A parameter by its name; a body field by its pointer as a person reads it (welds[0].result). */
function issueName(issue: ValidationIssue): string {
  if (issue.parameter !== undefined) return issue.parameter;
  const segments = (issue.pointer ?? '')
    .split('/')
    .slice(1)
    .filter((segment, i, all) => segment !== '' || all.length > 1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  return fieldName(segments.map((segment) => (/^\d+$/.test(segment) ? Number(segment) : segment)));
}

function invalid(detail: string, issues: ValidationIssue[]): HttpProblem {
  return problemOf('validation-failed', { detail, extensions: { errors: issues } });
}

const concurrentChange = () =>
  problemOf('concurrent-change', {
    detail:
      'Another request changed the same records at the same moment; nothing was written. Try again.',
    headers: { 'Retry-After': '1' },
  });

const timedOut = () =>
  problemOf('timeout', { detail: 'The request took too long and was cancelled.' });

/**
 * Where a rule's answer is not the generic one (next), what it says instead. SQL could say each of
 * these itself (a DETAIL member, or the message as the answer's detail); until it does, these keep
 * the answers as they were.
 */
const RULE_HOOKS: Partial<
  Record<
    RuleSqlstate,
    {
      /** The answer's detail, instead of the message and a full stop. */
      detail?: (e: DatabaseError) => string;
      /** The extension members, instead of those the registry reads from DETAIL. */
      members?: (e: DatabaseError) => Record<string, unknown>;
      /** Headers the answer carries. */
      headers?: (e: DatabaseError) => Record<string, string>;
    }
  >
> = {
  // An OAuth2 client without the scope: RFC 6750 section 3.1's challenge names the scope needed.
  WD015: {
    detail: (e) => `${e.message.charAt(0).toUpperCase()}${e.message.slice(1)}.`,
    headers: (e) => {
      const named = jsonDetail(e).scope;
      const scope = typeof named === 'string' ? named.replace(/[^a-z:]/g, '') : '';
      return {
        'WWW-Authenticate': `Bearer realm="weld-data-service", error="insufficient_scope", scope="${scope}"`,
      };
    },
  },
  // The message names the kind of row, e.g. "weld 7f0c... not found"; a line number may hold
  // spaces ("line 3 in-P-12 not found"), and an ISO is spelled as the service spells it.
  WD001: {
    detail: (e) => {
      const noun = /^(iso|line) /.exec(e.message)?.[1];
      return `No such ${noun === 'iso' ? 'ISO' : (noun ?? e.message.replace(/ \S+ not found$/, ''))}.`;
    },
  },
  // SQL writes no DETAIL: the answer points at the reason the client left out.
  WD004: {
    members: () => ({ errors: [{ pointer: '/reason', detail: 'required for this transition' }] }),
  },
  // The message says which version is current ("weld 7f0c... is at version 4, not 3").
  WD005: {
    detail: (e) => `It has changed since that version (${e.message}); read it again.`,
  },
  // The message counts the welds refused; the answer adds that none of the results was written.
  WD006: { detail: (e) => `${e.message}; nothing was recorded.` },
  // Invalid input to a SQL function: DETAIL {"pointer": "/welds/0/result"} into the JSON it got
  // (or none), as one of validation-failed's `errors`.
  WD007: {
    members: (e) => {
      const { pointer } = jsonDetail(e);
      return {
        errors: [
          typeof pointer === 'string' ? { pointer, detail: e.message } : { detail: e.message },
        ],
      };
    },
  },
};

/**
 * A refusal of a rule in SQL (a WD SQLSTATE of migrations/), mapped generically: type, status
 * and title from its registry entry, detail from the message, extension members from DETAIL as
 * the entry reads them; RULE_HOOKS where the answer is built otherwise.
 */
function ruleProblem(code: RuleSqlstate, e: DatabaseError): HttpProblem {
  const slug = RULE_SQLSTATES.get(code)!;
  const entry: ProblemTypeEntry = PROBLEM_TYPES[slug];
  const hook = RULE_HOOKS[code];
  return problemOf(slug, {
    detail: hook?.detail ? hook.detail(e) : `${e.message}.`,
    extensions: hook?.members ? hook.members(e) : (entry.members?.parse(jsonDetail(e)) ?? {}),
    ...(hook?.headers && { headers: hook.headers(e) }),
  });
}

/**
 * PostgreSQL's own SQLSTATEs a request can cause, each built from what the error names (the
 * constraint, its columns, the message); the registry lists each under the type it answers. REST
 * answers them; GraphQL reports the same `type` as extensions.code, with the same members.
 */
const STANDARD_PROBLEMS: Record<
  StandardSqlstate,
  (e: DatabaseError, naming: ColumnNaming) => HttpProblem
> = {
  // permission denied: the caller's role lacks the privilege
  '42501': () => problemOf('role-not-allowed', { detail: 'Your role may not do this.' }),
  // unique_violation
  '23505': (e, naming) => {
    const fields = constraintFields(e, naming);
    return problemOf('conflict', {
      detail:
        fields.length === 0
          ? 'Another record already has this key.'
          : `Another record already has this ${listed(fields)}.`,
      extensions: {
        errors: fields.map((f) => ({ pointer: `/${f}`, detail: 'is already in use' })),
      },
    });
  },
  // foreign_key_violation: a reference to nothing (or to another tenant's row, which is
  // invisible), or a delete of something still referenced
  '23503': (e, naming) => {
    const fields = constraintFields(e, naming);
    if (/^update or delete on table/.test(e.message)) {
      // The message names the referencing table: 'update or delete on table "isos" violates
      // foreign key constraint ... on table "welds"'.
      const by = /on table "([^"]+)"$/.exec(e.message)?.[1]?.replaceAll('_', ' ');
      return problemOf('still-referenced', {
        detail: `It is still referenced${by ? ` by ${by}` : ''}; remove or change those first.`,
      });
    }
    return invalid(
      fields.length ? `${listed(fields)}: no such record.` : 'A reference points at no record.',
      fields.map((f) => ({ pointer: `/${f}`, detail: 'refers to no record' })),
    );
  },
  // restrict_violation: PostgreSQL 18 reports a delete that an ON DELETE RESTRICT key refuses
  // with this SQLSTATE (and the same message) instead of 23503
  '23001': (e, naming) => STANDARD_PROBLEMS['23503'](e, naming),
  // check_violation: the field(s) the CHECK reads
  '23514': (e, naming) => {
    const fields = constraintFields(e, naming);
    // The constraint's own words where its migration gave it some, else its name.
    const said =
      e.table && e.constraint ? naming.constraintRule?.(e.table, e.constraint) : undefined;
    const rule = said ?? `not an allowed value${e.constraint ? ` (${e.constraint})` : ''}`;
    return invalid(
      fields.length ? `${listed(fields)}: ${rule}.` : `A value is not allowed: ${rule}.`,
      fields.map((f) => ({ pointer: `/${f}`, detail: rule })),
    );
  },
  // not_null_violation
  '23502': (e, naming) => {
    const field = e.column ? naming.field(e.column) : undefined;
    return invalid(
      field ? `${field}: is required.` : 'A required value is missing.',
      field ? [{ pointer: `/${field}`, detail: 'is required' }] : [{ detail: 'is required' }],
    );
  },
  // invalid_text_representation (e.g. "abc" for a number): the message quotes the caller's own
  // value and its type
  '22P02': (e) => invalid(`${e.message}.`, [{ detail: e.message }]),
  // numeric_value_out_of_range: a number too large for its column (GraphQL reaches the columns
  // without REST's bounds)
  '22003': (e) =>
    invalid(`A number is too large for its field (${e.message}).`, [{ detail: e.message }]),
  // character_not_in_repertoire, untranslatable_character: a NUL character (PostgreSQL text
  // cannot hold it) or a byte sequence that is not UTF-8
  '22021': (e) =>
    invalid(`A text holds a character it may not (${e.message}).`, [{ detail: e.message }]),
  '22P05': (e) =>
    invalid(`A text holds a character it may not (${e.message}).`, [{ detail: e.message }]),
  // statement_too_complex: e.g. JSON nested thousands of levels deep
  '54001': () => invalid('The input is nested too deeply.', [{ detail: 'is nested too deeply' }]),
  // deadlock_detected, serialization_failure: two requests changed the same rows at once and
  // PostgreSQL chose this one to give way; nothing was written, and a retry will do
  '40P01': () => concurrentChange(),
  '40001': () => concurrentChange(),
  // invalid_datetime_format, datetime_field_overflow (a date PostgreSQL cannot hold, e.g. year 0)
  '22007': (e) => invalid(`${e.message}.`, [{ detail: e.message }]),
  '22008': (e) => invalid(`${e.message}.`, [{ detail: e.message }]),
  // invalid_parameter_value, raised by change_weld_status() for an NDT record that does not
  // cover the weld
  '22023': (e) => invalid(`${e.message}.`, [{ detail: e.message }]),
  // query_canceled: statement_timeout (and a GraphQL request past its deadline,
  // server/graphql-request.ts)
  '57014': () => timedOut(),
  // transaction_timeout (PostgreSQL 17+): the GraphQL deadline's backstop ended the transaction
  '25P04': () => timedOut(),
};

/** Connection-level failures: the database is down, restarting, full or refusing us. */
const UNAVAILABLE_SQLSTATES = new Set([
  '08000', '08001', '08003', '08004', '08006', // connection exceptions
  '57P01', '57P02', '57P03', // admin shutdown, crash shutdown, cannot connect now
  '53300', // too many connections
  '55000', // e.g. "database is not currently accepting connections"
  '3D000', // database does not exist
]); // prettier-ignore

/**
 * pg-pool's wait for a connection (DB_POOL_WAIT_MS) ran out while every one of them was busy: the
 * service is overloaded, the database is not down (a connection that cannot be made fails with
 * its own error). pg-pool says so only in the message.
 */
export function isPoolWaitTimeout(error: unknown): boolean {
  return (error as { message?: unknown })?.message === 'timeout exceeded when trying to connect';
}

export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; syscall?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && UNAVAILABLE_SQLSTATES.has(e.code)) return true;
  if (typeof e?.syscall === 'string') return true; // ECONNREFUSED, ECONNRESET, ...
  // node-postgres's own words for a connection that broke under it (a client the server dropped
  // between two queries of a transaction is "not queryable"), or for a server that stopped
  // answering (query_timeout, db/database.ts)
  return (
    typeof e?.message === 'string' &&
    /^(Connection terminated|Client has encountered a connection error|Client was closed|Query read timeout)/.test(
      e.message,
    )
  );
}

/** Turns any thrown value into the problem the client should see. */
export function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof z.ZodError) return problems.validation(zodIssues(error));
  // express's body parser marks its errors with a `type`.
  const parserType = (error as { type?: unknown }).type;
  switch (parserType) {
    case 'entity.parse.failed':
      return problems.badRequest('The request body is not valid JSON.');
    case 'entity.too.large':
      return problemOf('content-too-large', {
        detail: `The request body exceeds ${(error as { limit: number }).limit} bytes.`,
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return problems.unsupportedMediaType((error as Error).message + '.');
    case 'request.aborted':
    case 'request.size.invalid':
      return problems.badRequest('The request body was incomplete.');
  }
  return (
    databaseProblem(error) ??
    problemOf('internal-error', { detail: 'An unexpected error occurred; it has been logged.' })
  );
}

/**
 * The problem a database error stands for: the database being unavailable, a rule's refusal (its
 * WD SQLSTATE), or one of PostgreSQL's the registry lists. Undefined for anything else, which is unexpected: a bug to log, not to
 * explain to the client.
 */
export function databaseProblem(
  error: unknown,
  naming: ColumnNaming = REST_NAMING,
): HttpProblem | undefined {
  if (isPoolWaitTimeout(error)) return problems.busy();
  if (isDatabaseUnavailable(error)) return problems.databaseUnavailable();
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  const e = error as DatabaseError;
  if (RULE_SQLSTATES.has(code as RuleSqlstate)) return ruleProblem(code as RuleSqlstate, e);
  return Object.hasOwn(STANDARD_PROBLEMS, code)
    ? STANDARD_PROBLEMS[code as StandardSqlstate](e, naming)
    : undefined;
}

/**
 * zod's issues as the contract's `errors`: each names the parameter or the body field (a JSON
 * Pointer) it is about. An unknown key is reported once per key, under its own name.
 */
export function zodIssues(
  error: z.ZodError,
  where: 'body' | 'parameter' = 'body',
): ValidationIssue[] {
  const located = oneIssuePerField(error.issues).flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({
          path: [...issue.path, key],
          detail:
            where === 'parameter'
              ? 'is not a parameter of this operation'
              : 'is not a field of this object',
        }))
      : [{ path: issue.path, detail: issue.message }],
  );
  if (where === 'body') {
    return located.map(({ path, detail }) => ({ pointer: '/' + path.join('/'), detail }));
  }
  // A parameter is named whole, once: `status`, not an item of its comma-separated list.
  const byName = new Map<string, ValidationIssue>();
  for (const { path, detail } of located) {
    const parameter = String(path[0] ?? '');
    if (!byName.has(parameter)) byName.set(parameter, { parameter, detail });
  }
  return [...byName.values()];
}

export function sendProblem(res: Response, problem: HttpProblem): void {
  res.locals.problemType = problem.type; // for the access log line (log.ts)
  res.status(problem.status);
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.type(PROBLEM_CONTENT_TYPE);
  res.send(
    JSON.stringify({
      type: problem.type,
      title: problem.title,
      status: problem.status,
      detail: problem.detail,
      instance: res.req.originalUrl.split('?')[0],
      ...problem.extensions,
    }),
  );
}

/** express's final error handler: log what is ours to fix, answer with the problem. */
export const problemHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const problem = toProblem(error);
  if (problem.status === 503) {
    // An outage or overload, not a bug: one line with the cause, no stack (docs/operating.md, "Faults")
    const cause = error instanceof HttpProblem ? undefined : (error as Error).message;
    req.log.warn({ problem: problem.type, cause }, problem.detail);
  } else if (problem.status >= 500) {
    req.log.error({ err: error }, problem.detail);
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendProblem(res, problem);
};
