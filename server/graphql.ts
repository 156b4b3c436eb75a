// GraphQL for analysts: PostGraphile 5 reflecting the weld_public schema. What it shows is decided
// in the database (grants, row security, smart comments in migrations/); this file chooses the
// presets, hands each request's role and tenant to PostGraphile's transaction, and sets limits so
// one query cannot take the service down:
//   - depth at most 10 (lists at most 4 deep), by @graphile/depth-limit
//   - every connection that returns rows (selects nodes or edges) needs first or last, 1 to 500
//   - the pool's statement_timeout (30 s) cancels what still runs too long
// A query over a limit is refused before it runs: 400 problem+json, /problems/query-too-large.
import { depthLimit } from '@graphile/depth-limit';
import { PgAggregatesPreset } from '@graphile/pg-aggregates';
import express, { type RequestHandler } from 'express';
import type pg from 'pg';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/express/v4';
import {
  getNamedType,
  GraphQLObjectType,
  Kind,
  parse,
  TypeInfo,
  validate,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLSchema,
  type ValueNode,
} from 'postgraphile/graphql';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import { PostGraphileConnectionFilterPreset } from 'postgraphile-plugin-connection-filter';
import { sessionSettings } from '../db/database.ts';
import { PAGE_SIZE } from '../db/vocabulary.ts';
import { HttpProblem } from './http/problem.ts';
import type { Route } from './http/route.ts';
import { callerContext } from './http/session.ts';

const DEPTH = { maxDepth: 10, maxListDepth: 4 };

export function graphqlPreset(pool: pg.Pool): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, PgAggregatesPreset, PostGraphileConnectionFilterPreset],
    pgServices: [
      makePgService({
        pool,
        schemas: ['weld_public'],
        // The same settings withContext() makes for REST: role and claims, transaction-local.
        pgSettings(requestContext) {
          const req = requestContext.expressv4?.req;
          if (!req?.identity || !req.tenant) return { role: 'weld_anonymous' };
          return sessionSettings(callerContext(req));
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
    },
  };
}

export interface Graphql {
  /** Serves POST /graphql (after authentication and checkLimits), GET /graphiql and its assets. */
  handler: RequestHandler;
  schema(): Promise<GraphQLSchema>;
  /** Builds the schema now rather than on the first request (the server does this at start). */
  warm(): Promise<void>;
  release(): Promise<void>;
}

/**
 * PostGraphile, built on first use: the schema takes a few seconds of CPU, which the server spends
 * at start (warm), and a process that never serves GraphQL (most test servers) never spends.
 */
export function createGraphql(pool: pg.Pool): Graphql {
  let built:
    | Promise<{ pgl: ReturnType<typeof postgraphile>; app: express.Express; schema: GraphQLSchema }>
    | undefined;
  const build = () =>
    (built ??= (async () => {
      const pgl = postgraphile(graphqlPreset(pool));
      const app = express();
      app.disable('x-powered-by');
      await pgl.createServ(grafserv).addTo(app, null, false);
      return { pgl, app, schema: await pgl.getSchema() };
    })());
  return {
    handler: (req, res, next) => {
      build().then(({ app }) => app(req, res, next), next);
    },
    schema: async () => (await build()).schema,
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
      body: true,
      handler: async (req, res, next) => {
        checkLimits(await graphql.schema(), req.body as { query?: unknown; variables?: unknown });
        graphql.handler(req, res, next);
      },
    },
    { method: 'GET', path: '/graphiql', anonymous: true, handler: graphql.handler },
    { method: 'GET', path: '/ruru-static/*asset', anonymous: true, handler: graphql.handler },
  ];
}

function tooLarge(detail: string): HttpProblem {
  return new HttpProblem(400, {
    type: '/problems/query-too-large',
    title: 'Query too large',
    detail,
  });
}

/** Depth and page size of a GraphQL request; syntax errors are left to grafserv to report. */
export function checkLimits(
  schema: GraphQLSchema,
  body: { query?: unknown; variables?: unknown } | undefined,
): void {
  if (typeof body?.query !== 'string') return;
  let document: DocumentNode;
  try {
    document = parse(body.query);
  } catch {
    return;
  }
  const depthErrors = validate(schema, document, [depthLimit(DEPTH)]);
  if (depthErrors.length > 0) throw tooLarge(depthErrors[0]!.message);

  const variables = (typeof body.variables === 'object' && body.variables) || {};
  const valueOf = (node: ValueNode | undefined): unknown => {
    if (!node) return undefined;
    if (node.kind === Kind.INT) return Number(node.value);
    if (node.kind === Kind.VARIABLE) return (variables as Record<string, unknown>)[node.name.value];
    return null;
  };
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field(node) {
        const type = getNamedType(typeInfo.getType());
        if (!(type instanceof GraphQLObjectType) || !type.name.endsWith('Connection')) return;
        const rows = node.selectionSet?.selections.some(
          (s) => s.kind === Kind.FIELD && (s.name.value === 'nodes' || s.name.value === 'edges'),
        );
        if (!rows) return; // aggregates and totalCount only: no rows come back
        const argument = (name: string) =>
          valueOf(node.arguments?.find((a) => a.name.value === name)?.value);
        const size = argument('first') ?? argument('last');
        if (
          typeof size !== 'number' ||
          !Number.isInteger(size) ||
          size < 1 ||
          size > PAGE_SIZE.max
        ) {
          throw tooLarge(
            `${node.name.value}: give first or last, from 1 to ${PAGE_SIZE.max}, to read its nodes or edges.`,
          );
        }
      },
    }),
  );
}
