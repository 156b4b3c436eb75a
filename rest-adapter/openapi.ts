// The OpenAPI 3.1 contract (spec section 9), generated from the zod schemas the handlers validate
// with, so there is one copy of every shape. Served at /openapi.json (and /api/openapi.json); an
// API reference page (swagger-ui, from the npm package, no CDN) at /docs.
//
// The bare paths are canonical (spec section 4); /api is the second server base, with identical
// behaviour, for the data paths only (auth, health, GraphQL and the documents live at the root).
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';
import { PAGE_SIZE, WELD_STATUSES } from '../db/vocabulary.ts';
import type { Route } from '../server/http/route.ts';
import { CsrfResponse, LoginBody, RefreshBody, TokenResponse, UserJson } from './auth.ts';
import { IsoJson, IsoListQuery, IsoPage } from './isos.ts';
import { StatusChange, WeldJson, WeldListQuery, WeldPage } from './welds.ts';

const json = (schema: z.ZodType, io: 'input' | 'output' = 'output') =>
  z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const content = (name: string, type = 'application/json') => ({
  content: { [type]: { schema: ref(name) } },
});
const problem = (description: string, name = 'Problem') => ({
  description,
  ...content(name, 'application/problem+json'),
});

/** Query parameters from a strict zod object: one entry per key, with the key's input schema. */
function queryParameters(schema: z.ZodObject) {
  return Object.entries(schema.shape).map(([name, field]) => {
    const { $schema: _ignored, ...fieldSchema } = json(field as z.ZodType, 'input') as Record<
      string,
      unknown
    >;
    return {
      name,
      in: 'query',
      required: false,
      schema: fieldSchema,
      description: fieldSchema.description,
    };
  });
}

const rootOnly = { servers: [{ url: '/' }] };
const bearerOrCookie = [{ bearer: [] }, { cookie: [] }];
const common = {
  '401': problem('No access token, or an invalid one (`WWW-Authenticate: Bearer`)'),
  '404': problem('Unknown tenant (origin), or no such resource'),
  default: problem('Any other error, as RFC 9457 problem details'),
};
const page = {
  description: 'One page; `Link: <...>; rel="next"` when there is a next one',
  headers: { Link: { schema: { type: 'string' }, description: 'the next page, rel="next"' } },
};

function buildDocument() {
  const schemas: Record<string, unknown> = {
    Weld: json(WeldJson),
    Iso: json(IsoJson),
    WeldPage: json(WeldPage),
    IsoPage: json(IsoPage),
    StatusChange: json(StatusChange, 'input'),
    LoginBody: json(LoginBody, 'input'),
    RefreshBody: json(RefreshBody, 'input'),
    TokenResponse: json(TokenResponse),
    User: json(UserJson),
    CsrfResponse: json(CsrfResponse),
    Health: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] },
    Jwks: {
      type: 'object',
      properties: { keys: { type: 'array', items: { type: 'object' } } },
      required: ['keys'],
    },
    Problem: {
      type: 'object',
      description:
        'RFC 9457 problem details; `type` is about:blank or /problems/<name> (see the README)',
      properties: {
        type: { type: 'string', format: 'uri-reference' },
        title: { type: 'string' },
        status: { type: 'integer', minimum: 400, maximum: 599 },
        detail: { type: 'string' },
        instance: { type: 'string' },
        errors: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              pointer: { type: 'string' },
              parameter: { type: 'string' },
              detail: { type: 'string' },
            },
            required: ['detail'],
          },
        },
      },
      required: ['type', 'title', 'status', 'detail'],
    },
    TransitionProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: { allowed: { type: 'array', items: { enum: [...WELD_STATUSES] } } },
          required: ['allowed'],
        },
      ],
    },
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
  };
  for (const value of Object.values(schemas)) delete (value as { $schema?: string }).$schema;

  const weldId = {
    name: 'id',
    in: 'path',
    required: true,
    schema: { type: 'string', format: 'uuid' },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Weld Data Service',
      version: 'Wave 1',
      description:
        'Multi-tenant API for weld data on piping projects. Each tenant is served from its own origin. ' +
        'Errors are RFC 9457 problem details. The bare paths are canonical; every data path is also served ' +
        'under /api with identical behaviour.',
    },
    servers: [
      { url: '/', description: 'canonical' },
      { url: '/api', description: 'the same data paths under /api (identical behaviour)' },
    ],
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (ES256, typ at+jwt)' },
        cookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'svc_at',
          description:
            'Cookie mode: POST, PUT, PATCH and DELETE also need X-CSRF-Token equal to the svc_csrf cookie',
        },
      },
    },
    security: bearerOrCookie,
    paths: {
      '/health/live': {
        ...rootOnly,
        get: {
          summary: 'The tenant of this origin is served',
          security: [],
          responses: {
            '200': { description: 'healthy', ...content('Health') },
            '503': problem('database unavailable'),
            ...common,
          },
        },
      },
      '/health/ready': {
        ...rootOnly,
        get: {
          summary: 'This instance can serve (any Host)',
          security: [],
          responses: {
            '200': { description: 'ready', ...content('Health') },
            '503': problem('not ready'),
            default: common.default,
          },
        },
      },
      '/auth/login': {
        ...rootOnly,
        post: {
          summary: 'Sign in: tokens in the body and the svc_at, svc_rt, svc_csrf cookies',
          security: [],
          requestBody: { required: true, ...content('LoginBody') },
          responses: {
            '200': { description: 'signed in', ...content('TokenResponse') },
            '401': problem('wrong user name or password'),
            '422': problem('invalid body'),
            '429': problem('throttled; see Retry-After'),
            default: common.default,
          },
        },
      },
      '/auth/refresh': {
        ...rootOnly,
        post: {
          summary:
            'Exchange a refresh token (body, or the svc_rt cookie with X-CSRF-Token) for new tokens',
          security: [],
          requestBody: { required: false, ...content('RefreshBody') },
          responses: {
            '200': {
              description: 'new tokens (the refresh token rotates)',
              ...content('TokenResponse'),
            },
            '401': problem('unknown, used, expired or revoked refresh token'),
            '403': problem('CSRF check failed (cookie mode)'),
            default: common.default,
          },
        },
      },
      '/auth/logout': {
        ...rootOnly,
        post: {
          summary: "Revoke the refresh token's session and clear the cookies",
          security: [],
          requestBody: { required: false, ...content('RefreshBody') },
          responses: {
            '204': { description: 'signed out' },
            '403': problem('CSRF check failed (cookie mode)'),
            default: common.default,
          },
        },
      },
      '/auth/me': {
        ...rootOnly,
        get: {
          summary: 'The signed-in user',
          responses: { '200': { description: 'the user', ...content('User') }, ...common },
        },
      },
      '/auth/csrf': {
        ...rootOnly,
        get: {
          summary: 'Issue or rotate the signed double-submit token (svc_csrf cookie)',
          responses: { '200': { description: 'the token', ...content('CsrfResponse') }, ...common },
        },
      },
      '/.well-known/jwks.json': {
        ...rootOnly,
        get: {
          summary: "The tenant's public signing keys",
          security: [],
          responses: {
            '200': { description: 'JWK set', ...content('Jwks', 'application/jwk-set+json') },
            default: common.default,
          },
        },
      },
      '/isos': {
        get: {
          summary: 'List ISOs',
          parameters: queryParameters(IsoListQuery),
          responses: {
            '200': { ...page, ...content('IsoPage') },
            '422': problem('a bad parameter, named in errors'),
            ...common,
          },
        },
      },
      '/welds': {
        get: {
          summary: 'List welds',
          parameters: queryParameters(WeldListQuery),
          responses: {
            '200': { ...page, ...content('WeldPage') },
            '422': problem('a bad parameter, named in errors'),
            ...common,
          },
        },
      },
      '/welds/{id}': {
        get: {
          summary: 'Read one weld',
          parameters: [
            weldId,
            { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: 'the weld; ETag is its version',
              headers: { ETag: { schema: { type: 'string' } } },
              ...content('Weld'),
            },
            '304': { description: 'not modified (If-None-Match)' },
            ...common,
          },
        },
      },
      '/welds/{id}/status': {
        patch: {
          summary:
            'Advance a weld through its status lifecycle (the tenant’s transition rules decide)',
          parameters: [
            weldId,
            {
              name: 'If-Match',
              in: 'header',
              required: false,
              schema: { type: 'string' },
              description: 'the ETag you read; 412 if the weld changed since',
            },
          ],
          requestBody: { required: true, ...content('StatusChange') },
          responses: {
            '200': {
              description: 'the changed weld',
              headers: { ETag: { schema: { type: 'string' } } },
              ...content('Weld'),
            },
            '403': problem('your role may not make this change (or CSRF check failed)'),
            '409': problem(
              'the rules do not allow this change; `allowed` lists what they allow',
              'TransitionProblem',
            ),
            '412': problem('If-Match is stale'),
            '422': problem('status is not one of the five values, or the rule requires a reason'),
            ...common,
          },
        },
      },
      '/graphql': {
        ...rootOnly,
        post: {
          summary: `GraphQL (PostGraphile) for analysts; depth <= 10, connections need first/last <= ${PAGE_SIZE.max}`,
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
                'a query over the limits (problem details, /problems/query-too-large) or one GraphQL refuses to run',
              content: {
                'application/problem+json': { schema: ref('Problem') },
                'application/graphql-response+json': { schema: ref('GraphqlResponse') },
              },
            },
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
      },
    },
  };
}

let document: ReturnType<typeof buildDocument> | undefined;
export function openapiDocument(): ReturnType<typeof buildDocument> {
  return (document ??= buildDocument());
}

const swaggerUi = path.dirname(
  createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'),
);
const DOCS_HTML = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Weld Data Service API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="api"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script></body>
</html>`;
const DOCS_INIT = `SwaggerUIBundle({ url: '/openapi.json', dom_id: '#api' });`;

export function openapiRoutes(): Route[] {
  const serve: Route['handler'] = (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(openapiDocument());
  };
  return [
    { method: 'GET', path: '/openapi.json', anonymous: true, handler: serve },
    { method: 'GET', path: '/api/openapi.json', anonymous: true, handler: serve },
    {
      method: 'GET',
      path: '/docs',
      anonymous: true,
      handler: (_req, res) => void res.type('html').send(DOCS_HTML),
    },
    {
      method: 'GET',
      path: '/docs/assets/:file',
      anonymous: true,
      handler: (req, res) => {
        const file = req.params.file;
        if (file === 'init.js') return void res.type('js').send(DOCS_INIT);
        if (file !== 'swagger-ui.css' && file !== 'swagger-ui-bundle.js') {
          return void res.status(404).end();
        }
        res.sendFile(file, { root: swaggerUi, maxAge: '1h' });
      },
    },
  ];
}
