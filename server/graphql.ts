// GraphQL for analysts: PostGraphile 5 reflecting the weld_public schema. What it shows is decided
// in the database (grants, row security, smart comments in migrations/); this file chooses the
// presets, hands each request's role and tenant to PostGraphile's transaction, and sets limits so
// one query cannot take the service down, nor one user or tenant take it from the others:
//   - a query text of at most 50,000 characters and 1,000 fields (MAX_QUERY_LENGTH, MAX_FIELDS)
//   - depth at most 10 (lists at most 4 deep; introspection 14), by @graphile/depth-limit
//   - every connection that reads rows (nodes, edges, pageInfo) needs first or last, 1 to 500
//   - a cost budget (GRAPHQL_MAX_COST, default 100,000): see graphql-cost.ts
//   - requests in flight per user and per tenant (GRAPHQL_REQUESTS_PER_USER, 2, and
//     GRAPHQL_REQUESTS_PER_TENANT, the pool's connections but one): one more is 429
//   - one connection and one transaction per request, and one deadline for all of its database
//     work (GRAPHQL_DEADLINE_MS, 10 s; each statement at most GRAPHQL_STATEMENT_TIMEOUT_MS):
//     see graphql-request.ts
//   - a pool of its own (GRAPHQL_POOL_MAX, made by main.ts), so reports never starve REST
// A query over a limit is refused before it runs: 400 problem+json, /problems/query-too-large or
// /problems/query-too-costly; a request over the concurrency limits is 429
// /problems/too-many-graphql-requests. Errors and logging: graphql-errors.ts.
import { PgAggregatesPreset } from '@graphile/pg-aggregates';
import express, { type RequestHandler } from 'express';
import type pg from 'pg';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/express/v4';
import type { GraphQLSchema } from 'postgraphile/graphql';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { PostGraphileConnectionFilterPreset } from 'postgraphile-plugin-connection-filter';
import { sessionSettings } from '../db/database.ts';
import { PAGE_SIZE } from '../db/vocabulary.ts';
import { defaultRequestsPerTenant, GRAPHQL_DEFAULTS } from './config.ts';
import { checkGraphqlRequest, type GraphqlRequestBody } from './graphql-cost.ts';
import { GraphqlRequests } from './graphql-request.ts';
import { GRAPHIQL_HEADERS, graphiqlHtmlParts } from './graphiql-session.ts';
import {
  GraphqlColumnNaming,
  makeMaskError,
  withGraphqlLogger,
  type MaskError,
} from './graphql-errors.ts';
import { createLogger, type Logger } from '../rest-adapter/http/log.ts';
import { common, content, problem, ref } from '../rest-adapter/http/operation.ts';
import { HttpProblem } from '../rest-adapter/http/problem.ts';
import { problemType } from '../rest-adapter/http/problem-types.ts';
import type { Route } from '../rest-adapter/http/route.ts';
import { callerContext } from '../rest-adapter/http/session.ts';

export interface GraphqlOptions {
  /** Where hidden errors and PostGraphile's own messages go (default: nowhere). */
  logger?: Logger;
  /** The cost budget of one request (GRAPHQL_MAX_COST). */
  maxCost?: number;
  /** The longest one statement may run, in ms (GRAPHQL_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** All the database work of one request, in ms (GRAPHQL_DEADLINE_MS). */
  deadlineMs?: number;
  /** Requests one user may have in flight (GRAPHQL_REQUESTS_PER_USER). */
  requestsPerUser?: number;
  /** Requests one tenant may have in flight (GRAPHQL_REQUESTS_PER_TENANT; default: the pool's
   * connections but one). */
  requestsPerTenant?: number;
}

/**
 * `count` beside pg-aggregates' own specs: how many rows of each group have the field set, as
 * count(field). pg-aggregates counts only distinct values (count(distinct ...)), which makes
 * PostgreSQL sort every group; "how many welds per ISO and status" needs no distinct, and on a
 * 1,000,000-weld tenant count(rowId) answers in about half the time of distinctCount(rowId).
 */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- how graphile-build is extended
  namespace GraphileBuild {
    interface AggregateSpecIds {
      count: true;
    }
  }
}
const CountAggregatePlugin: GraphileConfig.Plugin = {
  name: 'WeldCountAggregatePlugin',
  version: '1.0.0',
  after: ['PgAggregatesSpecsPlugin'],
  schema: {
    hooks: {
      build(build) {
        const { sql, pgAggregateSpecs, dataplanPg } = build;
        if (!sql || !pgAggregateSpecs || !dataplanPg)
          throw new Error('pg-aggregates must load first');
        pgAggregateSpecs.push({
          id: 'count',
          humanLabel: 'count',
          HumanLabel: 'Count',
          isSuitableType: () => true,
          sqlAggregateWrap: (fragment) => sql`count(${fragment})`,
          isNonNull: true,
          pgTypeCodecModifier: () => dataplanPg.TYPES.bigint,
        });
        return build;
      },
    },
  },
};

/**
 * Node ids without the tenant. Every tenant table's primary key is (tenant_id, <key>) in the
 * database (DESIGN.md: distributable by tenant_id), and PostGraphile encodes a node id from the
 * primary key, so `id` held the tenant's UUID in plain base64. For PostGraphile, this plugin makes
 * <key> alone the primary key and keeps (tenant_id, <key>) as a unique key (with its smart tags),
 * which is the substitute primary key Graphile's author advises for keys that must not show
 * (graphile/graphile-engine#698). Row security makes <key> unique within the session's tenant:
 * `node(id:)`, updateX(input: {id}) and deleteX(input: {id}) look the row up by <key> under the
 * caller's tenant, so a node id of tenant A finds nothing at tenant B. Relations still join on the
 * real keys; `orderBy: PRIMARY_KEY_ASC` orders by <key>, the same order within one tenant.
 */
const TenantlessNodeIdPlugin: GraphileConfig.Plugin = {
  name: 'WeldTenantlessNodeIdPlugin',
  version: '1.0.0',
  gather: {
    hooks: {
      pgTables_PgResourceOptions(_info, event) {
        const uniques = event.resourceOptions.uniques ?? [];
        const primary = uniques.find((unique) => unique.isPrimary);
        const [first, ...key] = primary?.attributes ?? [];
        if (!primary || first !== 'tenant_id' || key.length === 0) return;
        const { isPrimary: _, ...rest } = primary;
        event.resourceOptions.uniques = [
          { ...rest, attributes: key, isPrimary: true },
          ...uniques.map((unique) => (unique === primary ? rest : unique)),
        ];
      },
    },
  },
};

export function graphqlPreset(
  pool: pg.Pool,
  options: { statementTimeoutMs?: number; maskError?: MaskError; requests?: GraphqlRequests } = {},
): GraphileConfig.Preset {
  const statementTimeout = String(
    options.statementTimeoutMs ?? GRAPHQL_DEFAULTS.statementTimeoutMs,
  );
  return {
    extends: [PostGraphileAmberPreset, PgAggregatesPreset, PostGraphileConnectionFilterPreset],
    plugins: [
      CountAggregatePlugin,
      TenantlessNodeIdPlugin,
      ...(options.requests ? [options.requests.plugin()] : []),
    ],
    pgServices: [
      makePgService({
        pool,
        schemas: ['weld_public', 'weld_reports'],
        // The same settings withContext() makes for REST: role and claims, transaction-local
        // (PostGraphile applies them with set_config(name, value, true) after `begin`, or a
        // savepoint of the request's transaction: graphql-request.ts, which also lowers the
        // statement timeout to what is left of the request's deadline).
        pgSettings(requestContext) {
          const req = requestContext.expressv4?.req;
          const caller =
            !req?.identity || !req.tenant
              ? { role: 'weld_anonymous' }
              : sessionSettings(callerContext(req));
          return { ...caller, statement_timeout: statementTimeout };
        },
      }),
    ],
    schema: {
      // Aggregates only where a table opts in (`@aggregates on`: welds, NDT records, inspections).
      defaultBehavior: '-aggregates',
    },
    grafserv: {
      graphqlPath: '/graphql',
      graphiqlPath: '/graphiql',
      graphiql: true,
      graphqlOverGET: false,
      // Parsed documents grafserv keeps (default 500). Texts are at most MAX_QUERY_LENGTH, but a
      // tree is ~30x its text: 50 of the largest is tens of MB, 500 would be hundreds.
      parseAndValidateCacheSize: 50,
      ...(options.maskError && { maskError: options.maskError }),
    },
    // GraphiQL runs as the web app's signed-in user (graphiql-session.ts).
    ruru: { htmlParts: graphiqlHtmlParts },
  };
}

export interface Graphql {
  /** Serves POST /graphql (after authentication and the limits), GET /graphiql and its assets. */
  handler: RequestHandler;
  schema(): Promise<GraphQLSchema>;
  /** The cost budget of one request. */
  maxCost: number;
  /** Who may start a request, and each one's connection, transaction and deadline. */
  requests: GraphqlRequests;
  /** Builds the schema now rather than on the first request (the server does this at start). */
  warm(): Promise<void>;
  release(): Promise<void>;
}

/**
 * PostGraphile, built on first use: the schema takes a few seconds of CPU, which the server spends
 * at start (warm), and a process that never serves GraphQL (most test servers) never spends.
 */
export function createGraphql(pool: pg.Pool, options: GraphqlOptions = {}): Graphql {
  const logger = options.logger ?? createLogger('silent');
  const naming = new GraphqlColumnNaming();
  const requestsPerTenant =
    options.requestsPerTenant ?? defaultRequestsPerTenant(pool.options.max ?? 10);
  const requests = new GraphqlRequests(
    pool,
    {
      deadlineMs: options.deadlineMs ?? GRAPHQL_DEFAULTS.deadlineMs,
      statementTimeoutMs: options.statementTimeoutMs ?? GRAPHQL_DEFAULTS.statementTimeoutMs,
      requestsPerTenant,
      requestsPerUser: Math.min(
        options.requestsPerUser ?? GRAPHQL_DEFAULTS.requestsPerUser,
        requestsPerTenant,
      ),
    },
    logger,
  );
  let built:
    | Promise<{ pgl: ReturnType<typeof postgraphile>; app: express.Express; schema: GraphQLSchema }>
    | undefined;
  const build = () =>
    (built ??= withGraphqlLogger(logger, async () => {
      const pgl = postgraphile(
        graphqlPreset(pool, {
          statementTimeoutMs: options.statementTimeoutMs,
          maskError: makeMaskError(naming, logger),
          requests,
        }),
      );
      const app = express();
      app.disable('x-powered-by');
      await pgl.createServ(grafserv).addTo(app, null, false);
      // Without the catalog's constraint columns, refusals still name fields where DETAIL does.
      await naming.load(pool).catch((error: unknown) => {
        logger.warn({ err: error }, 'GraphQL: constraint columns not loaded');
      });
      return { pgl, app, schema: await pgl.getSchema() };
    }));
  return {
    handler: (req, res, next) => {
      build().then(({ app }) => withGraphqlLogger(req.log, () => app(req, res, next)), next);
    },
    schema: async () => (await build()).schema,
    maxCost: options.maxCost ?? GRAPHQL_DEFAULTS.maxCost,
    requests,
    warm: async () => {
      await build();
    },
    release: async () => {
      if (built) await (await built).pgl.release();
    },
  };
}

/** POST /graphql (after the query's limits are checked), GraphiQL and its assets. */
export function graphqlRoutes(graphql: Graphql): Route[] {
  return [
    {
      method: 'POST',
      path: '/graphql',
      doc: {
        schemas: {
          GraphqlRequest: {
            type: 'object',
            properties: {
              query: { type: 'string' },
              variables: { type: 'object' },
              operationName: { type: 'string' },
            },
            required: ['query'],
          },
          GraphqlResponse: { type: 'object', properties: { data: {}, errors: { type: 'array' } } },
        },
        summary: `GraphQL (PostGraphile) for analysts; depth <= 10, connections need first/last <= ${PAGE_SIZE.max}, and a cost budget`,
        description:
          'The same identity and row security as REST. Checked before a query runs: depth at most 10 ' +
          '(introspection 14, as the standard introspection query needs), ' +
          `first/last from 1 to ${PAGE_SIZE.max} on every connection that returns rows, and a cost ` +
          '(the values the response can hold: pages multiply, aliases count, totalCount and aggregates ' +
          'weigh 50, computed columns their weight, filters the rows they look at) within ' +
          'GRAPHQL_MAX_COST. A request runs on one connection in one transaction, under one ' +
          'deadline for all its database work (GRAPHQL_DEADLINE_MS, 10 s; past it its fields ' +
          'answer errors with `extensions.code` /problems/timeout); a user may have 2 requests in ' +
          'flight (GRAPHQL_REQUESTS_PER_USER) and a tenant 4 (GRAPHQL_REQUESTS_PER_TENANT). ' +
          'Database refusals come back as GraphQL errors whose `extensions.code` is the problem ' +
          'type REST answers for the same refusal. An IDE is at GET /graphiql: in a browser signed ' +
          'in to the web app it runs as that user (it sends X-CSRF-Token itself and refreshes an ' +
          'expired access cookie once), or with a bearer token put in its Headers tab.',
        requestBody: { required: true, ...content('GraphqlRequest') },
        responses: {
          '200': {
            description: 'GraphQL response',
            content: {
              'application/graphql-response+json': { schema: ref('GraphqlResponse') },
              'application/json': { schema: ref('GraphqlResponse') },
            },
          },
          '400': {
            description:
              'a query over the limits (problem details: /problems/query-too-large for text length, depth, page size or an alias inside introspection, /problems/query-too-costly over the cost budget, with `cost` and `budget`) or one GraphQL refuses to run (a GraphQL response carrying errors; application/json when the request has no JSON body or accepts only application/json)',
            content: {
              'application/problem+json': { schema: ref('Problem') },
              'application/graphql-response+json': { schema: ref('GraphqlResponse') },
              'application/json': { schema: ref('GraphqlResponse') },
            },
          },
          '429': problem(
            '/problems/too-many-graphql-requests: this user or tenant already has its most GraphQL requests in flight on this instance (`limit`, `scope`: user or tenant); Retry-After',
          ),
          ...common,
          default: {
            description: 'problem details, or a GraphQL response carrying errors',
            content: {
              'application/problem+json': { schema: ref('Problem') },
              'application/graphql-response+json': { schema: ref('GraphqlResponse') },
              'application/json': { schema: ref('GraphqlResponse') },
            },
          },
        },
      },
      body: true,
      handler: async (req, res, next) => {
        const body = req.body as GraphqlRequestBody | undefined;
        const schema = await graphql.schema(); // built at start; the first request may wait
        // 429 when the user or the tenant has its most requests in flight; else the deadline
        // runs. Before the check, so that checking a document (CPU, on the event loop) counts.
        graphql.requests.admit(req, res);
        let cost: number | undefined;
        try {
          cost = checkGraphqlRequest(schema, body, graphql.maxCost);
        } catch (error) {
          // Refusals over budget are what GRAPHQL_MAX_COST is tuned by.
          if (error instanceof HttpProblem && error.type === problemType('query-too-costly')) {
            req.log.info(error.extensions, 'GraphQL query refused: over the cost budget');
          }
          throw error;
        }
        req.log.debug({ graphqlCost: cost }, 'GraphQL query cost');
        graphql.handler(req, res, next);
      },
    },
    {
      method: 'GET',
      path: '/graphiql',
      anonymous: true,
      handler: (req, res, next) => {
        for (const [name, value] of Object.entries(GRAPHIQL_HEADERS)) res.setHeader(name, value);
        graphql.handler(req, res, next);
      },
    },
    { method: 'GET', path: '/ruru-static/*asset', anonymous: true, handler: graphql.handler },
  ];
}
