// A route of the service, and how a list of them becomes an express router. Every REST adapter
// exports Route[]; server/routes.ts lists them all, server/app.ts mounts them.
//
// Per path: the methods its routes declare; 405 with Allow for the others, and the OPTIONS answer.
// Per route, before its handler: unless anonymous, the access token (401) and for cookie-
// authenticated unsafe requests the CSRF check (403); for routes that take a body, 415 unless it
// is JSON, 413 when too large, 400 when malformed. A path parameter that is no valid percent-
// encoding (/welds/%ZZ) names nothing: 404.
import { isUtf8 } from 'node:buffer';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { OperationDoc } from './operation.ts';
import type { z } from 'zod';
import { HttpProblem, problems, zodIssues } from './problem.ts';
import { authenticate, type Verifier } from './session.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Route {
  method: Method;
  /** An express path, e.g. "/welds/:id". */
  path: string;
  handler: RequestHandler;
  /** false for the few routes that answer on any Host; every other route needs a tenant. */
  tenant?: false;
  /** true for routes that need no access token (health, login, refresh, logout, JWKS). */
  anonymous?: true;
  /** true for routes that read a JSON body. */
  body?: true;
  /** true for the data paths: served at /x and, identically, at /api/x (spec section 4). */
  data?: true;
  /** The operation's contract as the API document states it; pages (/docs, /app/) have none. */
  doc?: OperationDoc;
}

/** Where the data paths are mounted (spec section 4: the bare paths are canonical). */
export const DATA_BASES = ['/api', '/'] as const;

/**
 * The base a data path was asked under, as the service spells it ('' or '/api'), for the paths
 * it answers with (Location): express matches a mount case-insensitively, so req.baseUrl may be
 * "/API".
 */
export const dataBase = (req: express.Request) => (req.baseUrl === '' ? '' : '/api');

/** A router with each path's methods, and 405 (or the OPTIONS answer) for the others. */
export function mount(
  routes: Route[],
  deps: { verifier: Verifier; maxBodyBytes: number },
): express.Router {
  const router = express.Router({ strict: true });
  const paths = [...new Set(routes.map((r) => r.path))];
  for (const path of paths) {
    const route = router.route(path);
    const here = routes.filter((r) => r.path === path);
    for (const r of here) {
      const chain = [
        ...(r.anonymous ? [] : [authenticate(deps.verifier)]),
        ...(r.body ? jsonBody(deps.maxBodyBytes) : []),
        r.handler,
      ];
      route[r.method.toLowerCase() as Lowercase<Method>](...chain);
    }
    const allow: string[] = here.map((r) => r.method);
    if (allow.includes('GET')) allow.push('HEAD');
    allow.push('OPTIONS');
    route.all((req, res) => {
      if (req.method === 'OPTIONS') {
        res.setHeader('Allow', allow.join(', '));
        res.status(204).end();
        return;
      }
      throw problems.methodNotAllowed(req.method, allow);
    });
  }
  // express's router decodes path parameters before any handler runs, and reports one it cannot
  // decode (%ZZ, %C0%AF) as a URIError with status 400: an id that names nothing, like any
  // other, rather than a 500.
  const undecodable: ErrorRequestHandler = (error, req, _res, next) => {
    const decoding = error instanceof URIError && (error as { status?: unknown }).status === 400;
    next(decoding ? problems.notFound(`No resource at ${req.baseUrl}${req.path}.`) : error);
  };
  router.use(undecodable);
  return router;
}

/**
 * The query parameters of a request, parsed by a strict zod object: the one 422 path for them,
 * naming each bad or unknown parameter (`errors[].parameter`).
 */
export function queryOf<T extends z.ZodType>(schema: T, req: express.Request): z.output<T> {
  const parsed = schema.safeParse(req.query);
  if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
  return parsed.data;
}

/**
 * How deep a JSON body (a GraphQL request's variables included) may nest. The deepest the
 * contract takes is an NDT record's film interval's welds, four levels down; recursive code further
 * on (GraphQL's input coercion) must never meet 20,000.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Why a parsed body may not be taken, if it may not: nested past MAX_JSON_DEPTH, or a string that
 * is not Unicode text (a lone surrogate, which JSON's \u escapes can spell in valid UTF-8 and which
 * PostgreSQL would store as U+FFFD). Iterative: the body's own depth cannot overflow the stack.
 */
export function jsonBodyProblem(body: unknown): string | undefined {
  const stack: Array<[unknown, number]> = [[body, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (!value.isWellFormed())
        return 'A string of the body is not Unicode text (a lone surrogate).';
    } else if (typeof value === 'object' && value !== null) {
      if (depth > MAX_JSON_DEPTH) return `The body nests deeper than ${MAX_JSON_DEPTH} levels.`;
      for (const [key, item] of Object.entries(value)) {
        if (!key.isWellFormed()) return 'A key of the body is not Unicode text (a lone surrogate).';
        stack.push([item, depth + 1]);
      }
    }
  }
  return undefined;
}

/**
 * 415 for a body that is not JSON, then express's parser (413 too large, 400 malformed), then 400
 * for a body that is not UTF-8 (express would read it with U+FFFD in place of the bad bytes), too
 * deep, or holding a lone surrogate.
 */
function jsonBody(limit: number): RequestHandler[] {
  const requireJson: RequestHandler = (req, _res, next) => {
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    if (hasBody && !req.is(['application/json', 'application/*+json'])) {
      throw new HttpProblem(415, {
        detail: `The request body must be application/json, not ${req.get('content-type') ?? 'untyped'}.`,
      });
    }
    next();
  };
  const notUtf8 = new WeakSet<object>();
  const parse = express.json({
    limit,
    type: ['application/json', 'application/*+json'],
    // The raw bytes, before they are decoded: only here can bad UTF-8 be told from U+FFFD.
    verify: (req, _res, raw) => {
      if (!isUtf8(raw)) notUtf8.add(req);
    },
  });
  const requireText: RequestHandler = (req, _res, next) => {
    if (notUtf8.has(req)) throw problems.badRequest('The request body is not UTF-8 text.');
    const problem = req.body === undefined ? undefined : jsonBodyProblem(req.body);
    if (problem) throw problems.badRequest(problem);
    next();
  };
  return [requireJson, parse, requireText];
}
