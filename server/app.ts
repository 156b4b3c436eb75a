// The express application: the order in which a request meets the service.
//
//   request id + access log
//   -> process-level routes (GET /health/ready)
//   -> tenant from the origin (404 for an unknown one)
//   -> the route table: 405 with Allow for a known path and a wrong method; then, unless the route
//      is anonymous, the access token (401) and for cookie-authenticated unsafe requests the CSRF
//      check (403); for routes that take a body, 415 unless it is JSON, 413 when too large, 400
//      when malformed
//   -> handler
//   -> 404 for anything else, and every error rendered once as problem+json (problem.ts)
import express, { type RequestHandler } from 'express';
import type pg from 'pg';
import { authRoutes } from '../rest-adapter/auth.ts';
import { isoRoutes } from '../rest-adapter/isos.ts';
import { openapiRoutes } from '../rest-adapter/openapi.ts';
import { weldRoutes } from '../rest-adapter/welds.ts';
import { authenticate } from './auth/session.ts';
import type { KeyRing } from './auth/tokens.ts';
import { checkLimits, type Graphql } from './graphql.ts';
import { healthRoutes } from './health.ts';
import { requestLogging, type Logger } from './log.ts';
import { HttpProblem, problemHandler, problems } from './problem.ts';
import { tenantResolver } from './tenancy.ts';

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
}

export interface AppDeps {
  /** The authenticator pool. */
  pool: pg.Pool;
  logger: Logger;
  ring: KeyRing;
  auth: { accessTokenTtl: number; refreshTokenTtl: number };
  graphql: Graphql;
  trustProxy: boolean;
  maxBodyBytes: number;
  /** True once shutdown has begun: readiness fails so load balancers stop sending work. */
  isDraining?: () => boolean;
  /** Routes beyond the service's own (tests use this to reach the body pipeline directly). */
  extraRoutes?: Route[];
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.trustProxy);
  app.set('etag', false); // entity tags are set on purpose where the contract wants them

  const { graphql } = deps;
  const routes: Route[] = [
    ...healthRoutes({ pool: deps.pool, isDraining: deps.isDraining ?? (() => false) }),
    ...authRoutes({ pool: deps.pool, ring: deps.ring, ...deps.auth }),
    // The data paths, canonical and under /api, with identical behaviour (spec section 4).
    ...['', '/api'].flatMap((prefix) => [
      ...isoRoutes(deps.pool, prefix),
      ...weldRoutes(deps.pool, prefix),
    ]),
    {
      method: 'POST',
      path: '/graphql',
      body: true,
      handler: async (req, res, next) => {
        checkLimits(await graphql.schema(), req.body as { query?: unknown; variables?: unknown });
        graphql.handler(req, res, next);
      },
    },
    { method: 'GET', path: '/graphiql', anonymous: true, handler: graphql.handler },
    { method: 'GET', path: '/ruru-static/*asset', anonymous: true, handler: graphql.handler },
    ...openapiRoutes(),
    ...(deps.extraRoutes ?? []),
  ];

  app.use(requestLogging(deps.logger));
  app.use(
    mount(
      routes.filter((r) => r.tenant === false),
      deps,
    ),
  );
  app.use(tenantResolver(deps.pool));
  app.use(
    mount(
      routes.filter((r) => r.tenant !== false),
      deps,
    ),
  );
  app.use((req) => {
    throw problems.notFound(`No resource at ${req.path}.`);
  });
  app.use(problemHandler);
  return app;
}

/** A router with each path's methods, and 405 (or the OPTIONS answer) for the others. */
function mount(routes: Route[], deps: AppDeps): express.Router {
  const router = express.Router({ strict: true });
  const paths = [...new Set(routes.map((r) => r.path))];
  for (const path of paths) {
    const route = router.route(path);
    const here = routes.filter((r) => r.path === path);
    for (const r of here) {
      const chain = [
        ...(r.anonymous ? [] : [authenticate(deps.ring)]),
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
  return router;
}

/** 415 for a body that is not JSON, then express's parser (413 too large, 400 malformed). */
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
  return [requireJson, express.json({ limit, type: ['application/json', 'application/*+json'] })];
}
