// The express application: the order in which a request meets the service.
//
//   request id + access log
//   -> process-level routes (GET /health/ready)
//   -> tenant from the origin (404 for an unknown one)
//   -> the route table (http/route.ts: 405, authentication, CSRF, body parsing), then the handler
//   -> 404 for anything else, and every error rendered once as problem+json (http/problem.ts)
//
// Which routes there are is decided by the caller (server/routes.ts lists the service's own).
import http from 'node:http';
import express from 'express';
import type pg from 'pg';
import { requestLogging, type Logger } from '../rest-adapter/http/log.ts';
import { problemHandler, problems } from '../rest-adapter/http/problem.ts';
import { DATA_BASES, mount, type Route } from '../rest-adapter/http/route.ts';
import type { Verifier } from '../rest-adapter/http/session.ts';
import { tenantResolver, type TrustProxy } from '../rest-adapter/http/tenancy.ts';

export interface AppDeps {
  /** The authenticator pool. */
  pool: pg.Pool;
  /**
   * A small pool of its own for the tenant lookup (and the health probes, routes.ts): neither
   * queues behind busy requests, so an overloaded instance still says so quickly. Default: pool.
   */
  controlPool?: pg.Pool;
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
  app.use(tenantResolver(deps.controlPool ?? deps.pool));
  app.use(
    mount(
      deps.routes.filter((r) => r.tenant !== false && !r.data),
      deps,
    ),
  );
  // One router for the data paths, mounted at /api and at /: a handler reads its base from
  // req.baseUrl (Location, Link) and is otherwise the same at both.
  const data = mount(
    deps.routes.filter((r) => r.data),
    deps,
  );
  for (const base of DATA_BASES) app.use(base, data);
  app.use((req) => {
    throw problems.notFound(`No resource at ${req.path}.`);
  });
  app.use(problemHandler);
  return app;
}

/** How long a client may take to send its request, or keep an idle connection (config.ts). */
export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/**
 * The HTTP server for an app. A client that sends its headers too slowly (slowloris) gets 408 and
 * loses the socket after headersTimeoutMs, one that sends its body too slowly after
 * requestTimeoutMs (responses, such as event streams, are not limited), and an idle keep-alive
 * connection is closed after keepAliveTimeoutMs.
 */
export function createHttpServer(app: express.Express, timeouts: HttpTimeouts): http.Server {
  const server = http.createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      // node looks for sockets past those two only this often (30 s unless told)
      connectionsCheckingInterval: 1000,
    },
    app,
  );
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  return server;
}
