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
import type { Resource } from './resource.ts';
import { RESOURCES } from './resources.ts';
import { ExaminationHistoryPage, HISTORIES, HistoryQuery, WeldHistoryPage } from './history.ts';
import { StatusChange } from './welds.ts';

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

const idParam = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
};
const header = (name: string, description: string) => ({
  name,
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description,
});
const itemHeaders = { ETag: { schema: { type: 'string' }, description: 'the version, quoted' } };

/** A resource's schemas: the item, its page, and the bodies it accepts. */
function resourceSchemas(r: Resource): Array<[string, unknown]> {
  return [
    [r.schema, json(r.item)],
    [`${r.schema}Page`, json(r.page)],
    ...(r.createBody
      ? [[`${r.schema}Create`, json(r.createBody, 'input')] as [string, unknown]]
      : []),
    ...(r.patchBody ? [[`${r.schema}Patch`, json(r.patchBody, 'input')] as [string, unknown]] : []),
  ];
}

/** A resource's operations, as resource.ts serves them. */
function resourcePaths(r: Resource): Array<[string, unknown]> {
  const who = (what: string | undefined) => (what ? ` Who: ${what}.` : '');
  const writeProblems = {
    '403': problem('your role may not do this (or the CSRF check failed)'),
    '409': problem(
      "a unique key is taken (/problems/conflict, naming the field), or the record's state refuses the change (/problems/state-conflict)",
    ),
    '422': problem(
      'a bad or read-only field, or a reference to no record of your tenant, named in errors',
    ),
  };
  if (r.path === 'ndt-records') {
    writeProblems['409'] = problem(
      'a duplicate report number (/problems/conflict), or NDT results the lifecycle rules refuse (/problems/ndt-result-refused, naming each weld)',
      'NdtResultProblem',
    );
  }
  const collection = {
    get: {
      summary: `List ${r.plural}`,
      description: `${r.description} Filters combine with "and".`,
      parameters: queryParameters(r.listQuery),
      responses: {
        '200': { ...page, ...content(`${r.schema}Page`) },
        '422': problem('a bad parameter, named in errors'),
        ...common,
      },
    },
    ...(r.createBody && {
      post: {
        summary: `Create a ${r.noun}`,
        description:
          `${r.description}${who(r.access.create)} With an Idempotency-Key, a retry of the same request ` +
          'within 24 hours answers the first answer again (Idempotent-Replayed: true) without writing.',
        parameters: [
          header(
            'Idempotency-Key',
            '1 to 255 visible ASCII characters; the same key and body within 24 h replay the first answer, another body is 422',
          ),
        ],
        requestBody: { required: true, ...content(`${r.schema}Create`) },
        responses: {
          '201': {
            description: `the new ${r.noun}`,
            headers: {
              ...itemHeaders,
              Location: { schema: { type: 'string' }, description: 'its path' },
              'Idempotent-Replayed': {
                schema: { const: 'true' },
                description: 'present when this is the stored answer of an earlier request',
              },
            },
            ...content(r.schema),
          },
          ...writeProblems,
          '422': problem(
            'a bad field, named in errors; or the Idempotency-Key was used for another request (/problems/idempotency-key-reused)',
          ),
          ...common,
        },
      },
    }),
  };
  const single = {
    get: {
      summary: `Read a ${r.noun}`,
      parameters: [idParam, header('If-None-Match', 'an ETag you hold; 304 if it is current')],
      responses: {
        '200': {
          description: `the ${r.noun}; ETag is its version`,
          headers: itemHeaders,
          ...content(r.schema),
        },
        '304': { description: 'not modified (If-None-Match)' },
        ...common,
      },
    },
    ...(r.patchBody && {
      patch: {
        summary: `Change a ${r.noun}`,
        description:
          `JSON merge: the fields given are set (null clears a nullable one), the others kept; ` +
          `lists of ids are replaced as a whole.${who(r.access.update)}`,
        parameters: [idParam, header('If-Match', 'the ETag you read; 412 if it changed since')],
        requestBody: { required: true, ...content(`${r.schema}Patch`) },
        responses: {
          '200': {
            description: `the changed ${r.noun}`,
            headers: itemHeaders,
            ...content(r.schema),
          },
          ...writeProblems,
          '412': problem('If-Match is stale; `version` is the current one'),
          ...common,
        },
      },
    }),
    ...(r.access.delete && {
      delete: {
        summary: `Delete a ${r.noun}`,
        description: `Who: ${r.access.delete}.`,
        parameters: [idParam, header('If-Match', 'the ETag you read; 412 if it changed since')],
        responses: {
          '204': { description: 'deleted' },
          '403': problem('your role may not do this (or the CSRF check failed)'),
          '409': problem(
            'still referenced (/problems/still-referenced), or its state forbids it (/problems/state-conflict)',
          ),
          '412': problem('If-Match is stale'),
          ...common,
        },
      },
    }),
  };
  return [
    [`/${r.path}`, collection],
    [`/${r.path}/{id}`, single],
  ];
}

/** The problem types, for readers of the document alone (the README has the same table). */
const PROBLEM_TYPES = `RFC 9457 problem details. \`type\` is about:blank when the HTTP status says it all, else one of:

| type | status | meaning |
|---|---|---|
| /problems/unknown-tenant | 404 | no tenant is served from the request's origin |
| /problems/validation-failed | 422 | the input broke its schema, or the database refused a value; \`errors\` names each parameter or field |
| /problems/conflict | 409 | a unique key is taken within your tenant; \`errors\` names the field |
| /problems/still-referenced | 409 | a delete of something other records still refer to (an ISO that holds welds) |
| /problems/state-conflict | 409 | the record's state does not allow the change (a test package that is not open) |
| /problems/ndt-result-refused | 409 | the lifecycle rules refuse an NDT result for some welds; \`welds\` names each with its status; nothing was recorded |
| /problems/concurrent-change | 409 | another request changed the same records at the same moment; nothing was written; retry (Retry-After) |
| /problems/idempotency-key-reused | 422 | the Idempotency-Key was used in the last 24 hours for a different request |
| /problems/unauthorized | 401 | no access token, or an invalid, expired or ended one |
| /problems/invalid-credentials | 401 | login: wrong user name or password (one answer for every reason) |
| /problems/invalid-refresh-token | 401 | refresh: the token is unknown, used, expired or revoked |
| /problems/csrf-rejected | 403 | a cookie-authenticated unsafe request failed the CSRF check |
| /problems/role-not-allowed | 403 | your role may not do this |
| /problems/transition-not-allowed | 409 | the transition rules refuse the status change; \`allowed\` lists the next statuses they allow |
| /problems/stale-version | 412 | If-Match does not match the current version, given as \`version\` |
| /problems/reason-required | 422 | the transition rule requires a reason |
| /problems/too-many-login-attempts | 429 | login throttled; Retry-After says when to try again |
| /problems/query-too-large | 400 | GraphQL: over the depth limit, or a connection read without first/last from 1 to ${PAGE_SIZE.max} |
| /problems/query-too-costly | 400 | GraphQL: over the cost budget; \`cost\` and \`budget\` say by how much |
| /problems/timeout | 503 | a statement timeout cancelled the work |
| /problems/database-unavailable | 503 | the database does not answer; Retry-After |
| /problems/schema-behind | 503 | readiness: the database lacks a migration this build needs |
| /problems/shutting-down | 503 | readiness: the instance is stopping |`;

function buildDocument() {
  const schemas: Record<string, unknown> = {
    ...Object.fromEntries(RESOURCES.flatMap(resourceSchemas)),
    StatusChange: json(StatusChange, 'input'),
    WeldHistoryPage: json(WeldHistoryPage),
    ExaminationHistoryPage: json(ExaminationHistoryPage),
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
      description: PROBLEM_TYPES,
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
    NdtResultProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: {
            welds: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  weldId: { type: 'string', format: 'uuid' },
                  weldNumber: { type: 'string' },
                  status: { enum: [...WELD_STATUSES] },
                  result: { enum: ['accepted', 'rejected'] },
                  allowed: { type: 'array', items: { enum: [...WELD_STATUSES] } },
                },
              },
            },
          },
          // Only the refusal names welds: a duplicate report number (/problems/conflict) is a
          // 409 of the same operation.
          if: { properties: { type: { const: '/problems/ndt-result-refused' } } },
          then: { required: ['welds'] },
        },
      ],
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

  return {
    openapi: '3.1.0',
    info: {
      title: 'Weld Data Service',
      version: '0.3.0',
      description:
        'Multi-tenant API for weld data on piping projects. Each tenant is served from its own origin: ' +
        'the Host header chooses the tenant, and an unknown origin is 404 before anything else.\n\n' +
        'Authentication: POST /auth/login returns an ES256 access token (10 minutes) and an opaque refresh ' +
        'token that rotates on every use (a reused one ends the session). Send the access token as ' +
        '`Authorization: Bearer`, or let a browser send the svc_at cookie: then POST, PUT, PATCH and DELETE ' +
        'also need `X-CSRF-Token` equal to the svc_csrf cookie. Logout, a disabled user or a changed role ' +
        'end the session and its access tokens at once. Failed logins are throttled per user name and per ' +
        'address (429 with Retry-After).\n\n' +
        'Lists are keyset-paginated: `limit` 1 to 500, `cursor` from `nextCursor` (also a Link rel=next ' +
        'header); unknown parameters are 422. Reads carry an ETag (the version every change bumps); ' +
        'If-Match makes a change conditional (strong comparison). PATCH merges the fields given and ' +
        'replaces id lists whole; fields that may not be written are 422 naming them. POST takes an ' +
        'Idempotency-Key: the same key and body within 24 hours replay the first answer.\n\n' +
        'NDT records and inspections are written by SQL functions that validate them and, for NDT, move ' +
        "the welds by their results under the tenant's transition rules (a refusal refuses the whole " +
        'record). Roles are enforced by the database; GraphQL offers the same writes and no more.\n\n' +
        'Errors are RFC 9457 problem details (see the Problem schema for every type). The bare paths are ' +
        'canonical; every data path is also served under /api with identical behaviour.',
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
      ...Object.fromEntries(RESOURCES.flatMap(resourcePaths)),
      '/welds/{id}/status': {
        patch: {
          summary:
            'Advance a weld through its status lifecycle (the tenant’s transition rules decide)',
          parameters: [
            idParam,
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
      ...Object.fromEntries(
        HISTORIES.map((h) => [
          `/${h.path}/{id}/history`,
          {
            get: {
              summary: h.summary,
              description: h.description,
              parameters: [idParam, ...queryParameters(HistoryQuery)],
              responses: {
                '200': { ...page, ...content(h.schema) },
                '422': problem('a bad parameter, named in errors'),
                ...common,
              },
            },
          },
        ]),
      ),
      '/graphql': {
        ...rootOnly,
        post: {
          summary: `GraphQL (PostGraphile) for analysts; depth <= 10, connections need first/last <= ${PAGE_SIZE.max}, and a cost budget`,
          description:
            'The same identity and row security as REST. Checked before a query runs: depth at most 10, ' +
            `first/last from 1 to ${PAGE_SIZE.max} on every connection that returns rows, and a cost ` +
            '(the values the response can hold: pages multiply, aliases count, totalCount and aggregates ' +
            'weigh 50) within GRAPHQL_MAX_COST. Database refusals come back as GraphQL errors whose ' +
            '`extensions.code` is the problem type REST answers for the same refusal.',
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
                'a query over the limits (problem details: /problems/query-too-large for depth or page size, /problems/query-too-costly over the cost budget, with `cost` and `budget`) or one GraphQL refuses to run',
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
