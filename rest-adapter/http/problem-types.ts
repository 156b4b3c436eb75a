// Every kind of problem the service answers, once: its slug (the `type` is "/problems/<slug>",
// or about:blank where the HTTP status says it all), status, title, what it means to a user, and,
// for those the database raises, the SQLSTATEs it answers and the extension members it takes
// from the error's DETAIL. rest-adapter/http/problem.ts builds answers from it (problemOf), maps
// SQLSTATEs through it (a rule's WD SQLSTATE generically), and the problem tables of the OpenAPI
// document and docs/api.md are rendered from it (problemTable; test/problem-types.test.ts holds
// them, and the SQLSTATEs of migrations/, equal to it).
import { z } from 'zod';
import { CALENDAR, PAGE_SIZE } from '../../db/vocabulary.ts';

/** HTTP's reason phrases: the title of an about:blank problem. */
export const STATUS_TITLES = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
} as const satisfies Record<number, string>;

/**
 * Limits that live beside the code that enforces them (rest-adapter/, db/), named in
 * descriptions as `{{name}}`; problemTable fills them in.
 */
export interface ProblemLimits {
  /** IMPORTS_PER_TENANT, rest-adapter/imports.ts */
  importsPerTenant: number;
  /** MAX_IMPORT_ERRORS, db/weld-register.ts */
  importErrors: number;
  /** MAX_WEBHOOKS_PER_TENANT, rest-adapter/webhooks.ts */
  webhooksPerTenant: number;
  /** MAX_WEBHOOK_TESTS_PER_TENANT, rest-adapter/webhooks.ts */
  webhookTestsPerTenant: number;
  /** REPORTS_PER_TENANT, rest-adapter/reports.ts */
  reportsPerTenant: number;
  /** REPORTS_PER_USER, rest-adapter/reports.ts */
  reportsPerUser: number;
  /** UPLOADS_PER_TENANT, rest-adapter/attachments.ts */
  uploadsPerTenant: number;
}

export interface ProblemTypeEntry {
  readonly status: number;
  readonly title: string;
  /** The type is about:blank (the status says it all), not "/problems/<slug>". */
  readonly blank?: true;
  /** What it means, for a user: one sentence, Markdown, `{{name}}` for a ProblemLimits value. */
  readonly description: string;
  /**
   * The SQLSTATEs answered with this type: the service's own (WD..., raised by the rules in
   * migrations/; each belongs to one type) and PostgreSQL's.
   */
  readonly sqlstates?: readonly string[];
  /**
   * A WD SQLSTATE's extension members, read from its DETAIL (JSON) as SQL wrote them: the
   * schema picks them in this order and defaults what is missing or malformed.
   */
  readonly members?: z.ZodType<Record<string, unknown>>;
}

/** A list SQL wrote in DETAIL; anything else reads as none. */
const list = z.array(z.unknown()).catch([]);
/** A value passed on as SQL wrote it, absent when SQL left it out. */
const asWritten = z.unknown().optional();

export const PROBLEM_TYPES = {
  // about:blank: described in docs/api.md's "Errors" paragraph, not in the tables
  'bad-request': {
    status: 400,
    title: STATUS_TITLES[400],
    blank: true,
    description:
      'the request cannot be read: a body that is not JSON, not UTF-8, holds a lone surrogate or nests too deep',
  },
  'not-found': {
    status: 404,
    title: STATUS_TITLES[404],
    blank: true,
    description: 'no such route, or no such record in your tenant',
    sqlstates: ['WD001'],
  },
  'method-not-allowed': {
    status: 405,
    title: STATUS_TITLES[405],
    blank: true,
    description: 'the path is known, the method is not; `Allow` lists those that are',
  },
  'content-too-large': {
    status: 413,
    title: STATUS_TITLES[413],
    blank: true,
    description: 'the request body is larger than the operation takes',
  },
  'unsupported-media-type': {
    status: 415,
    title: STATUS_TITLES[415],
    blank: true,
    description: 'the request body is not of a media type the operation takes',
  },
  'internal-error': {
    status: 500,
    title: STATUS_TITLES[500],
    blank: true,
    description: 'an unexpected error; it has been logged with the request id',
  },

  // the service's own kinds, in the order of the tables
  'unknown-tenant': {
    status: 404,
    title: 'Unknown tenant',
    description: "no tenant is served from the request's origin",
  },
  'validation-failed': {
    status: 422,
    title: 'Validation failed',
    description:
      `the input broke its schema, or the database refused a value (a check such as a date from ` +
      `${CALENDAR.first} to ${CALENDAR.last}, a required value, a reference to no record, a ` +
      'malformed or too large value, an examination of a weld not yet welded or dated before it ' +
      "was, a SQL function's input); `errors: [{pointer or parameter, detail}]` names each " +
      'field once, its detail in plain words ("must be text"), and `detail` joins them ' +
      '("weldNumber must be text; size must be greater than 0")',
    sqlstates: [
      'WD007', '23514', '23502', '23503', '22P02', '22003', '22021', '22P05', '54001', '22007',
      '22008', '22023',
    ], // prettier-ignore
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    description:
      'a unique key is taken within your tenant, e.g. an ISO number already used; `errors` names the field',
    sqlstates: ['23505'],
  },
  'still-referenced': {
    status: 409,
    title: 'Still referenced',
    description:
      'a delete of what other records still refer to (an ISO that holds welds, a PQR a WPS cites)',
    sqlstates: ['23503', '23001'],
  },
  'state-conflict': {
    status: 409,
    title: 'Not in this state',
    description: "the record's state does not allow the change: a test package that is not open",
    sqlstates: ['WD008'],
  },
  'ndt-result-refused': {
    status: 409,
    title: 'NDT results refused',
    description:
      'the lifecycle rules refuse an NDT result for some welds; `welds` names each with its status, result and `allowed`; nothing was recorded',
    sqlstates: ['WD006'],
    members: z.object({ welds: list }),
  },
  'package-not-ready': {
    status: 409,
    title: 'Test package not ready',
    description:
      'a test package moved to `released`, `tested` or `closed` while not ready; `reasons`: the first 100, as `GET /test-packages/{id}/readiness` gives them; `reasonCount`: all',
    sqlstates: ['WD009'],
    members: z
      .object({ reasons: list, reasonCount: z.number().optional().catch(undefined) })
      .transform(({ reasons, reasonCount }) => ({
        reasons,
        reasonCount: reasonCount ?? reasons.length,
      })),
  },
  'package-released': {
    status: 409,
    title: 'A released test package depends on it',
    description:
      'a released, tested or closed test package was judged on the record this write would change (an ISO, WPS, PQR or welder qualification of its welds); `packages: [{testPackageId, packageNumber, state, reasons, reasonCount}]`; withdraw a released package first (`POST /test-packages/{id}/withdraw`); a tested or closed one is the record of its test: record the change as a new WPS revision or qualification',
    sqlstates: ['WD011'],
    members: z.object({ packages: list }),
  },
  'wps-not-qualified': {
    status: 409,
    title: 'WPS not qualified',
    description:
      'a WPS made or kept `approved` that its PQRs do not qualify (no PQR, a process, its thickness range, its P-numbers); `checks: [{code, detail}]` as `GET /wps/{id}/checks` gives them; `wpsId`, unless the refused write was its creation',
    sqlstates: ['WD013'],
    members: z.object({ wpsId: asWritten, checks: list }),
  },
  'reexamination-open': {
    status: 409,
    title: 'Examination owed',
    description:
      "a weld accepted while an examination of it is owed: a repair's re-examination by the method that rejected it (B31.3 341.3.3, `REEXAMINATION_OPEN`), or a selection of it not yet examined (`EXAMINATION_OPEN`); the weld stays as it is; `checks` names it",
    sqlstates: ['WD012'],
    members: z.object({ checks: list }),
  },
  'weld-checks-failed': {
    status: 422,
    title: 'Weld fails the code checks',
    description:
      "the tenant refuses welds failing the code checks (`weld_checks = 'refuse'`) and the write (of the weld, or of a WPS, PQR or qualification it relies on) leaves a weld `WELDER_NOT_QUALIFIED`, `WPS_NOT_APPROVED`, `WPS_RANGE`, `WPS_PNUMBER` or `WPS_RANGE_UNSUPPORTED`; `checks: [{code, detail}]`",
    sqlstates: ['WD010'],
    members: z.object({ checks: list }),
  },
  'concurrent-change': {
    status: 409,
    title: 'Concurrent change',
    description:
      'another request changed the same records at the same moment and PostgreSQL chose this one to give way; nothing was written; retry (`Retry-After`)',
    sqlstates: ['40P01', '40001'],
  },
  'idempotency-key-reused': {
    status: 422,
    title: 'Idempotency key reused',
    description:
      'the `Idempotency-Key` was used in the last 24 hours for a different request; `errors` names it',
  },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    description:
      'no access token, or one that is invalid, expired or ended (`WWW-Authenticate: Bearer`)',
  },
  'invalid-credentials': {
    status: 401,
    title: 'Invalid credentials',
    description:
      'login: wrong user name or password (one answer for unknown user, wrong password, disabled account)',
  },
  'invalid-refresh-token': {
    status: 401,
    title: 'Invalid refresh token',
    description: 'refresh: the token is unknown, used, expired or revoked',
  },
  'csrf-rejected': {
    status: 403,
    title: 'CSRF check failed',
    description: 'a cookie-authenticated unsafe request failed the CSRF check',
  },
  'role-not-allowed': {
    status: 403,
    title: 'Role not allowed',
    description: "the caller's role may not do this",
    sqlstates: ['WD003', '42501'],
  },
  'insufficient-scope': {
    status: 403,
    title: 'Insufficient scope',
    description:
      "an OAuth2 client's token lacks the scope of the area it asks for (RFC 6750 `insufficient_scope`); `scope` names one that would allow it, as does `WWW-Authenticate`",
    sqlstates: ['WD015'],
    members: z.object({ scope: z.string().catch('') }),
  },
  'transition-not-allowed': {
    status: 409,
    title: 'Transition not allowed',
    description:
      'the transition rules refuse the status change; `allowed` lists the next statuses they allow',
    sqlstates: ['WD002'],
    members: z.object({ allowed: list }),
  },
  'stale-version': {
    status: 412,
    title: 'Precondition failed',
    description:
      "`If-Match` (GraphQL: `expectedVersion`) does not match the item's current version, given as `version`",
    sqlstates: ['WD005'],
    members: z.object({ version: asWritten }),
  },
  'reason-required': {
    status: 422,
    title: 'Reason required',
    description: 'the transition rule requires a reason; `errors` points at `/reason`',
    sqlstates: ['WD004'],
  },
  'too-many-login-attempts': {
    status: 429,
    title: 'Too many login attempts',
    description: 'login throttled; `Retry-After` says when to try again',
  },
  'too-many-streams': {
    status: 429,
    title: 'Too many streams',
    description:
      '`GET /events/stream` or a waiting `GET /events`: this user already holds `EVENT_STREAMS_PER_USER` of them on this instance; `Retry-After`',
  },
  'too-many-graphql-requests': {
    status: 429,
    title: 'Too many GraphQL requests',
    description:
      '`POST /graphql`: this user (`GRAPHQL_REQUESTS_PER_USER`) or tenant (`GRAPHQL_REQUESTS_PER_TENANT`) already has its most requests in flight on this instance; `limit`, `scope`, `Retry-After`',
  },
  'cursor-expired': {
    status: 410,
    title: 'Cursor expired',
    description:
      '`GET /events`: events after this cursor have been purged (`EVENT_RETENTION_DAYS`); `purgedThrough` is the last purged id: read the resources again, then follow from `after=now`',
  },
  'import-conflict': {
    status: 409,
    title: 'The register changed meanwhile',
    description:
      '`POST /imports/welds`: welds of the file changed between its check and its write (a PATCH meanwhile); nothing was imported; `errors` names their lines, `errorCount` counts them: upload the file again',
    sqlstates: ['WD014'],
    members: z.object({ errors: list, errorCount: z.number().optional().catch(undefined) }),
  },
  'too-many-reports': {
    status: 429,
    title: 'Too many reports at once',
    description:
      '`GET /reports/...`: this user already has {{reportsPerUser}} report requests in progress on this instance, or the tenant {{reportsPerTenant}}, the most allowed at once; `limit`, `scope` (user or tenant), `Retry-After`',
  },
  'too-many-imports': {
    status: 429,
    title: 'Too many imports at once',
    description:
      '`POST /imports/welds`: the tenant already has {{importsPerTenant}} imports (dry runs too) in progress on this instance, the most allowed at once; `limit`, `Retry-After`',
  },
  'import-invalid': {
    status: 422,
    title: 'The file has errors',
    description:
      '`POST /imports/welds`: the file has errors and nothing was imported; `errors: [{line, column, value, detail}]` (the first {{importErrors}}; line 1 is the header), `errorCount`: all',
  },
  'too-many-webhooks': {
    status: 409,
    title: 'Too many webhooks',
    description:
      '`POST /webhooks`: the tenant has {{webhooksPerTenant}} endpoints, the most allowed; delete one first',
  },
  'webhook-paused': {
    status: 409,
    title: 'Webhook paused',
    description:
      '`POST /webhooks/{id}/test`: the endpoint is paused (its author was deactivated or is no longer an admin); resume it first (`PATCH` `active: true`)',
  },
  'too-many-webhook-tests': {
    status: 429,
    title: 'Too many webhook tests',
    description:
      '`POST /webhooks/{id}/test`: the tenant already has {{webhookTestsPerTenant}} test messages in flight on this instance; `Retry-After`',
  },
  'too-many-uploads': {
    status: 429,
    title: 'Too many uploads',
    description:
      '`POST /attachments`: the tenant already has {{uploadsPerTenant}} uploads in progress on this instance, the most allowed at once; `limit`, `Retry-After`',
  },
  'store-unavailable': {
    status: 503,
    title: 'File store unavailable',
    description:
      'the attachment store (the files directory, or S3) did not answer; nothing was written; `Retry-After`',
  },
  'too-many-dossiers': {
    status: 429,
    title: 'Too many dossiers at once',
    description:
      '`GET /test-packages/{id}/dossier`: the tenant already has a dossier in progress on this instance (one at a time); `limit`, `Retry-After`',
  },
  'dossier-too-large': {
    status: 422,
    title: 'Dossier too large',
    description:
      '`GET /test-packages/{id}/dossier`: the files of the package together are over what a dossier gathers (256 MiB); download them one by one',
  },
  'query-too-large': {
    status: 400,
    title: 'Query too large',
    description: `a GraphQL query text over 50,000 characters or 1,000 fields, or over the depth limit, or a connection read without \`first\`/\`last\` from 1 to ${PAGE_SIZE.max}`,
  },
  'query-too-costly': {
    status: 400,
    title: 'Query too costly',
    description:
      'a GraphQL query over its cost budget (`GRAPHQL_MAX_COST`); `cost` and `budget` say by how much',
  },
  timeout: {
    status: 503,
    title: 'Timed out',
    description:
      "a statement timeout cancelled the work (REST: `DB_STATEMENT_TIMEOUT_MS`, 30 s; GraphQL: `GRAPHQL_STATEMENT_TIMEOUT_MS`, 10 s, and the request's `GRAPHQL_DEADLINE_MS`, 10 s)",
    sqlstates: ['57014', '25P04'],
  },
  busy: {
    status: 503,
    title: 'Service busy',
    description:
      'every database connection of this instance stayed busy for `DB_POOL_WAIT_MS` (overload); `Retry-After`',
  },
  'database-unavailable': {
    status: 503,
    title: 'Database unavailable',
    description: 'the database does not answer; `Retry-After`',
  },
  'schema-behind': {
    status: 503,
    title: 'Database schema is behind',
    description: 'readiness: the database lacks a migration this build needs',
  },
  'shutting-down': {
    status: 503,
    title: 'Shutting down',
    description: 'readiness: the instance is stopping and takes no new work',
  },
} as const satisfies Record<string, ProblemTypeEntry>;

/** A problem's name: `problemOf('package-relesed', ...)` does not compile. */
export type ProblemSlug = keyof typeof PROBLEM_TYPES;

type Entries = typeof PROBLEM_TYPES;
/** Every SQLSTATE the registry answers. */
export type Sqlstate = {
  [S in ProblemSlug]: Entries[S] extends { sqlstates: readonly (infer C)[] } ? C : never;
}[ProblemSlug];
/** The service's own SQLSTATEs, raised by the rules in migrations/. */
export type RuleSqlstate = Extract<Sqlstate, `WD${string}`>;
/** PostgreSQL's SQLSTATEs the registry answers. */
export type StandardSqlstate = Exclude<Sqlstate, RuleSqlstate>;

export type ProblemTypeUri = `/problems/${ProblemSlug}` | 'about:blank';

const entries = Object.entries(PROBLEM_TYPES) as [ProblemSlug, ProblemTypeEntry][];

/** The `type` of a problem: "/problems/<slug>", or about:blank. */
export function problemType(slug: ProblemSlug): ProblemTypeUri {
  const entry: ProblemTypeEntry = PROBLEM_TYPES[slug];
  return entry.blank ? 'about:blank' : `/problems/${slug}`;
}

/** The type each of the service's own SQLSTATEs stands for (each stands for one). */
export const RULE_SQLSTATES: ReadonlyMap<RuleSqlstate, ProblemSlug> = new Map(
  entries.flatMap(([slug, entry]) =>
    (entry.sqlstates ?? [])
      .filter((code): code is RuleSqlstate => code.startsWith('WD'))
      .map((code) => [code, slug] as const),
  ),
);

/**
 * The problem table of the OpenAPI document (`openapi`: type, status, meaning) or of docs/api.md
 * (`docs`: the type as code, and the SQLSTATEs), one row per "/problems/..." type in registry
 * order. Markdown, unpadded (prettier aligns docs/api.md's).
 */
export function problemTable(style: 'openapi' | 'docs', limits: ProblemLimits): string {
  const fill = (text: string) =>
    text.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
      if (!Object.hasOwn(limits, name)) throw new Error(`no limit {{${name}}} to fill in`);
      return String(limits[name as keyof ProblemLimits]);
    });
  const rows = entries
    .filter(([, entry]) => !entry.blank)
    .map(([slug, entry]) => {
      const type = `/problems/${slug}`;
      return style === 'openapi'
        ? [type, String(entry.status), fill(entry.description)]
        : [
            `\`${type}\``,
            String(entry.status),
            (entry.sqlstates ?? []).join(', '),
            fill(entry.description),
          ];
    });
  const head =
    style === 'openapi' ? ['type', 'status', 'meaning'] : ['type', 'status', 'SQLSTATE', 'meaning'];
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(line)].join('\n');
}
