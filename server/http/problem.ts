// Errors as RFC 9457 Problem Details: one error class, one table from causes (express's body
// parser, PostgreSQL SQLSTATEs, zod) to HTTP, and one renderer. Nothing else writes an error body.
//
// `type` is "about:blank" when the HTTP status says it all (RFC 9457 section 4.2.1), and a
// relative reference "/problems/<name>" for the service's own kinds, listed in the README.
import type { ErrorRequestHandler, Response } from 'express';
import { z } from 'zod';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export interface ValidationIssue {
  /** JSON Pointer (RFC 6901) into the request body, e.g. "/status". */
  pointer?: string;
  /** The query or path parameter, e.g. "limit". */
  parameter?: string;
  detail: string;
}

export interface ProblemInit {
  type?: string;
  title?: string;
  detail: string;
  headers?: Record<string, string>;
  /** Extension members, e.g. `errors` or `allowed`. */
  extensions?: Record<string, unknown>;
}

export class HttpProblem extends Error {
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(status: number, init: ProblemInit) {
    super(init.detail);
    this.status = status;
    this.type = init.type ?? 'about:blank';
    this.title = init.title ?? STATUS_TITLES[status] ?? 'Error';
    this.detail = init.detail;
    this.headers = init.headers ?? {};
    this.extensions = init.extensions ?? {};
  }
}

const STATUS_TITLES: Record<number, string> = {
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
};

export const problems = {
  notFound: (detail: string) => new HttpProblem(404, { detail }),
  unknownTenant: () =>
    new HttpProblem(404, {
      type: '/problems/unknown-tenant',
      title: 'Unknown tenant',
      detail: 'No tenant is served from this origin.',
    }),
  methodNotAllowed: (method: string, allow: string[]) =>
    new HttpProblem(405, {
      detail: `${method} is not allowed here; allowed: ${allow.join(', ')}.`,
      headers: { Allow: allow.join(', ') },
    }),
  unsupportedMediaType: (detail = 'The request body must be application/json.') =>
    new HttpProblem(415, { detail }),
  databaseUnavailable: () =>
    new HttpProblem(503, {
      type: '/problems/database-unavailable',
      title: 'Database unavailable',
      detail: 'The database does not answer; try again shortly.',
      headers: { 'Retry-After': '5' },
    }),
  validation: (issues: ValidationIssue[]) =>
    new HttpProblem(422, {
      type: '/problems/validation-failed',
      title: 'Validation failed',
      detail: issues.map((i) => `${i.parameter ?? i.pointer ?? '/'}: ${i.detail}`).join('; '),
      extensions: { errors: issues },
    }),
};

/**
 * The service's own SQLSTATEs (raised by the SQL functions in migrations/) and the few standard
 * ones a request can cause, mapped once to HTTP. DETAIL of WD002 / WD005 is JSON.
 */
const SQLSTATE_PROBLEMS: Record<string, (e: { message: string; detail?: string }) => HttpProblem> =
  {
    WD001: () => problems.notFound('No such weld.'),
    WD002: (e) =>
      new HttpProblem(409, {
        type: '/problems/transition-not-allowed',
        title: 'Transition not allowed',
        detail: `${e.message}.`,
        extensions: {
          allowed: (JSON.parse(e.detail ?? '{}') as { allowed?: string[] }).allowed ?? [],
        },
      }),
    WD003: (e) =>
      new HttpProblem(403, {
        type: '/problems/role-not-allowed',
        title: 'Role not allowed',
        detail: `${e.message}.`,
      }),
    WD004: (e) =>
      new HttpProblem(422, {
        type: '/problems/reason-required',
        title: 'Reason required',
        detail: `${e.message}.`,
        extensions: { errors: [{ pointer: '/reason', detail: 'required for this transition' }] },
      }),
    WD005: (e) =>
      new HttpProblem(412, {
        type: '/problems/stale-version',
        title: 'Precondition failed',
        detail: `The weld has changed since that version (${e.message}); read it again.`,
      }),
    // permission denied: the caller's role lacks the privilege
    '42501': () =>
      new HttpProblem(403, {
        type: '/problems/role-not-allowed',
        title: 'Role not allowed',
        detail: 'Your role may not do this.',
      }),
    // query_canceled: statement_timeout
    '57014': () =>
      new HttpProblem(503, {
        type: '/problems/timeout',
        title: 'Timed out',
        detail: 'The request took too long and was cancelled.',
      }),
  };

/** Connection-level failures: the database is down, restarting, full or refusing us. */
const UNAVAILABLE_SQLSTATES = new Set([
  '08000', '08001', '08003', '08004', '08006', // connection exceptions
  '57P01', '57P02', '57P03', // admin shutdown, crash shutdown, cannot connect now
  '53300', // too many connections
  '55000', // e.g. "database is not currently accepting connections"
  '3D000', // database does not exist
]); // prettier-ignore

export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: unknown; syscall?: unknown; message?: unknown };
  if (typeof e?.code === 'string' && UNAVAILABLE_SQLSTATES.has(e.code)) return true;
  if (typeof e?.syscall === 'string') return true; // ECONNREFUSED, ECONNRESET, ...
  return typeof e?.message === 'string' && /^Connection terminated/.test(e.message);
}

/** Turns any thrown value into the problem the client should see. */
export function toProblem(error: unknown): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof z.ZodError) return problems.validation(zodIssues(error));
  // express's body parser marks its errors with a `type`.
  const parserType = (error as { type?: unknown }).type;
  switch (parserType) {
    case 'entity.parse.failed':
      return new HttpProblem(400, { detail: 'The request body is not valid JSON.' });
    case 'entity.too.large':
      return new HttpProblem(413, {
        detail: `The request body exceeds ${(error as { limit: number }).limit} bytes.`,
      });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return problems.unsupportedMediaType((error as Error).message + '.');
    case 'request.aborted':
    case 'request.size.invalid':
      return new HttpProblem(400, { detail: 'The request body was incomplete.' });
  }
  if (isDatabaseUnavailable(error)) return problems.databaseUnavailable();
  const code = (error as { code?: unknown }).code;
  const mapped = typeof code === 'string' ? SQLSTATE_PROBLEMS[code] : undefined;
  if (mapped) return mapped(error as { message: string; detail?: string });
  return new HttpProblem(500, { detail: 'An unexpected error occurred; it has been logged.' });
}

/**
 * zod's issues as the contract's `errors`: each names the parameter or the body field (a JSON
 * Pointer) it is about. An unknown key is reported once per key, under its own name.
 */
export function zodIssues(
  error: z.ZodError,
  where: 'body' | 'parameter' = 'body',
): ValidationIssue[] {
  const located = error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({
          path: [...issue.path, key],
          detail:
            where === 'parameter'
              ? 'is not a parameter of this operation'
              : 'is not a field of this object',
        }))
      : [{ path: issue.path, detail: plainMessage(issue) }],
  );
  return located.map(({ path, detail }) =>
    where === 'parameter'
      ? { parameter: path.map(String).join('.'), detail }
      : { pointer: '/' + path.map(String).join('/'), detail },
  );
}

/** zod's message, with its type jargon said plainly where a person would trip over it. */
function plainMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) {
    return 'is required';
  }
  return issue.message;
}

export function sendProblem(res: Response, problem: HttpProblem): void {
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
  if (problem.status >= 500) {
    req.log.error({ err: error }, problem.detail);
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendProblem(res, problem);
};
