// The express application: the order in which a request meets the service.
//
//   request id + access log
//   -> process-level routes (GET /health/ready)
//   -> tenant from the origin (404 for an unknown one)
//   -> the route table (http/route.ts: 405, authentication, CSRF, body parsing), then the handler
//   -> 404 for anything else, and every error rendered once as problem+json (http/problem.ts)
//
// Which routes there are is decided by the caller (server/routes.ts lists the service's own).
import express from 'express';
import type pg from 'pg';
import { requestLogging, type Logger } from './http/log.ts';
import { problemHandler, problems } from './http/problem.ts';
import { mount, type Route } from './http/route.ts';
import type { Verifier } from './http/session.ts';
import { tenantResolver, type TrustProxy } from './http/tenancy.ts';

export interface AppDeps {
  /** The authenticator pool. */
  pool: pg.Pool;
  logger: Logger;
  verifier: Verifier;
  trustProxy: TrustProxy;
  maxBodyBytes: number;
  routes: Route[];
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.trustProxy);
  app.set('etag', false); // entity tags are set on purpose where the contract wants them

  app.use(requestLogging(deps.logger));
  app.use(
    mount(
      deps.routes.filter((r) => r.tenant === false),
      deps,
    ),
  );
  app.use(tenantResolver(deps.pool));
  app.use(
    mount(
      deps.routes.filter((r) => r.tenant !== false),
      deps,
    ),
  );
  app.use((req) => {
    throw problems.notFound(`No resource at ${req.path}.`);
  });
  app.use(problemHandler);
  return app;
}
