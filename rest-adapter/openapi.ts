// The OpenAPI 3.1 contract (spec section 9), generated from the zod schemas the handlers validate
// with, so there is one copy of every shape. Served at /openapi.json (and /api/openapi.json); an
// API reference page (swagger-ui, from the npm package, no CDN) at /docs.
//
// The bare paths are canonical (spec section 4); /api is the second server base, with identical
// behaviour, for the data paths only (auth, health, GraphQL and the documents live at the root).
import { UPLOADS_PER_TENANT } from './attachments.ts';
import { createRequire } from 'node:module';
import path from 'node:path';
import { WELD_STATUSES } from '../db/vocabulary.ts';
import { MAX_IMPORT_ERRORS } from '../db/weld-register.ts';
import { common, content, ref } from './http/operation.ts';
import { problemTable } from './http/problem-types.ts';
import type { Route } from './http/route.ts';
import { RESOURCES } from './resources.ts';
import { IMPORTS_PER_TENANT } from './imports.ts';
import { REPORTS_PER_TENANT, REPORTS_PER_USER } from './reports.ts';
import {
  MAX_WEBHOOK_TESTS_PER_TENANT,
  MAX_WEBHOOKS_PER_TENANT,
  webhookMessages,
} from './webhooks.ts';

const rootOnly = { servers: [{ url: '/' }] };
const bearerOrCookie = [{ bearer: [] }, { cookie: [] }];

/**
 * The problem types, for readers of the document alone: the registry's table
 * (http/problem-types.ts; docs/api.md has it too, with the SQLSTATEs).
 */
const PROBLEM_TYPES = `RFC 9457 problem details. \`type\` is about:blank when the HTTP status says it all, else one of:

${problemTable('openapi', {
  importsPerTenant: IMPORTS_PER_TENANT,
  reportsPerTenant: REPORTS_PER_TENANT,
  reportsPerUser: REPORTS_PER_USER,
  importErrors: MAX_IMPORT_ERRORS,
  webhooksPerTenant: MAX_WEBHOOKS_PER_TENANT,
  webhookTestsPerTenant: MAX_WEBHOOK_TESTS_PER_TENANT,
  uploadsPerTenant: UPLOADS_PER_TENANT,
})}`;

/** The paths of the routes that describe themselves (Route.doc), in route order. */
function routePaths(routes: Route[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    if (!route.doc) continue;
    const template = route.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const { schemas: _components, ...operation } = route.doc;
    const item = (paths[template] ??= route.data ? {} : { ...rootOnly });
    item[route.method.toLowerCase()] = operation;
  }
  return paths;
}

/**
 * One tag per resource, named by the path's first segment, so the reference page (/docs) groups
 * each resource's operations; the paths that are not resources say what they group.
 */
const OTHER_TAGS: Record<string, { name: string; description: string }> = {
  health: { name: 'Health', description: 'Is the service (and this tenant) served' },
  auth: { name: 'Authentication', description: 'Sessions: login, refresh, logout, CSRF' },
  oauth: {
    name: 'OAuth2 clients',
    description:
      'Integrations without a person: clients an admin registers with scopes, their client credentials tokens and revocation (Wave 2)',
  },
  'oauth-clients': { name: 'OAuth2 clients', description: '' },
  '.well-known': { name: 'Authentication', description: '' },
  'weld-transitions': { name: 'Welds', description: '' },
  'examination-selections': {
    name: 'Examination selections',
    description: 'The welds the code rules select for examination (ASME B31.3 341.3.4, 344.1.3)',
  },
  events: { name: 'Events', description: 'The change feed, as pages or Server-Sent Events' },
  webhooks: { name: 'Webhooks', description: 'Endpoints that receive the events, signed' },
  imports: { name: 'Imports', description: 'The weld register (CSV) in; GET /welds as CSV out' },
  reports: {
    name: 'Reports',
    description:
      'Answers to QC questions (repair rate per welder, progress per ISO and week), as pages or CSV; the same rows as the weld_reports views in SQL and GraphQL',
  },
  graphql: { name: 'GraphQL', description: 'The same data for analysts' },
};
const capitalized = (text: string) => text[0]!.toUpperCase() + text.slice(1);
const TAGS: Record<string, { name: string; description: string }> = {
  ...Object.fromEntries(
    RESOURCES.map((r) => [r.path, { name: capitalized(r.plural), description: r.description }]),
  ),
  ...OTHER_TAGS,
};
const tagOf = (template: string) => TAGS[template.split('/')[1]!]!.name;

/**
 * The OAuth2 scopes that let a client call an operation: alternatives, each asking all its scopes
 * (OpenAPI's security requirements). The areas are SQL's (migration 000045), which holds the
 * requests; test/http/scopes.test.ts holds a call of every area to what this says. Reading the
 * project's data is every data scope's; the OAuth2 client management is a person's only.
 */
const DATA_READ = ['welds:read', 'welds:write', 'ndt:write', 'packages:write', 'imports:write'];
const WRITE_SCOPE: Record<string, string> = {
  isos: 'welds:write',
  welds: 'welds:write',
  welders: 'welds:write',
  'welder-qualifications': 'welds:write',
  pqrs: 'welds:write',
  wps: 'welds:write',
  components: 'welds:write',
  'filler-lots': 'welds:write',
  'weld-fillers': 'welds:write',
  'weld-transitions': 'welds:write',
  'ndt-records': 'ndt:write',
  inspections: 'ndt:write',
  'examination-selections': 'ndt:write',
  'pwht-records': 'ndt:write',
  'hardness-readings': 'ndt:write',
  'test-packages': 'packages:write',
  imports: 'imports:write',
};
export function scopesOf(method: string, template: string): string[][] | undefined {
  const area = template.split('/')[1]!;
  // An endpoint receives events: registering, re-pointing or resuming one needs events:read too.
  if (area === 'webhooks' && (method === 'post' || method === 'patch')) {
    return template.endsWith('/test') ? [['webhooks:write']] : [['webhooks:write', 'events:read']];
  }
  // A file's rows are written as the client: a real import needs the scope of what it writes.
  if (area === 'imports' && method === 'post') return [['imports:write', 'welds:write']];
  const only = { events: 'events:read', webhooks: 'webhooks:write', reports: 'reports:read' };
  if (area in only) return [[only[area as keyof typeof only]]];
  if (area === 'auth' || area === 'graphql') return [[]]; // any token; GraphQL asks per field
  if (area === 'oauth-clients') return undefined;
  if (method === 'get') return DATA_READ.map((scope) => [scope]);
  const write = WRITE_SCOPE[area];
  return write ? [[write]] : undefined;
}

/**
 * Every operation of `paths` tagged by its path, unless it names its tags itself; and the tokens
 * it takes: a person's (bearer or cookie), or an OAuth2 client's with one of its scope sets.
 */
function tagged(paths: Record<string, Record<string, unknown>>) {
  for (const [template, item] of Object.entries(paths)) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const operation = item[method] as { tags?: string[]; security?: unknown[] } | undefined;
      if (!operation) continue;
      const scopes = operation.security ? undefined : scopesOf(method, template);
      item[method] = {
        tags: operation.tags ?? [tagOf(template)],
        ...operation,
        ...(scopes && {
          security: [...bearerOrCookie, ...scopes.map((needed) => ({ oauth2: needed }))],
        }),
      };
    }
  }
  return paths;
}

/** The component schemas the routes name; one name, one shape. */
function routeSchemas(routes: Route[]) {
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of routes.flatMap((r) => Object.entries(r.doc?.schemas ?? {}))) {
    if (name in schemas && JSON.stringify(schemas[name]) !== JSON.stringify(schema)) {
      throw new Error(`Two operations define the schema ${name} differently.`);
    }
    schemas[name] = schema;
  }
  return schemas;
}

function buildDocument(routes: Route[]) {
  const schemas: Record<string, unknown> = {
    ...routeSchemas(routes),
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
    PackageNotReadyProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: {
            reasons: {
              type: 'array',
              maxItems: 100,
              items: ref('ReadinessReason'),
              description: 'the first 100 reasons',
            },
            reasonCount: { type: 'integer', minimum: 1, description: 'how many there are in all' },
          },
          // Only this refusal carries reasons: the other 409s of the same operations do not.
          if: { properties: { type: { const: '/problems/package-not-ready' } } },
          then: { required: ['reasons', 'reasonCount'] },
        },
      ],
    },
    WeldChecksProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: { checks: { type: 'array', items: ref('WeldCheck') } },
          if: { properties: { type: { const: '/problems/weld-checks-failed' } } },
          then: { required: ['checks'] },
        },
      ],
    },
    PackageReleasedProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: {
            packages: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  testPackageId: { type: 'string', format: 'uuid' },
                  packageNumber: { type: 'string' },
                  state: { enum: ['released', 'tested', 'closed'] },
                  reasons: { type: 'array', maxItems: 10, items: ref('ReadinessReason') },
                  reasonCount: { type: 'integer', minimum: 1 },
                },
                required: ['testPackageId', 'packageNumber', 'state', 'reasons', 'reasonCount'],
              },
            },
          },
          if: { properties: { type: { const: '/problems/package-released' } } },
          then: { required: ['packages'] },
        },
      ],
    },
    WpsNotQualifiedProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: {
            wpsId: {
              type: 'string',
              format: 'uuid',
              description: 'the WPS refused; absent when the refused write was its creation',
            },
            checks: { type: 'array', items: ref('WeldCheck') },
          },
          if: { properties: { type: { const: '/problems/wps-not-qualified' } } },
          then: { required: ['checks'] },
        },
      ],
    },
    TransitionProblem: {
      allOf: [
        ref('Problem'),
        {
          type: 'object',
          properties: {
            allowed: { type: 'array', items: { enum: [...WELD_STATUSES] } },
            checks: { type: 'array', items: ref('WeldCheck') },
          },
          // The 409 of a status change: the rules refuse it (`allowed`), or a repaired weld owes
          // its re-examination (`checks`, /problems/reexamination-open).
          if: { properties: { type: { const: '/problems/reexamination-open' } } },
          then: { required: ['checks'] },
          else: { required: ['allowed'] },
        },
      ],
    },
  };
  for (const value of Object.values(schemas)) delete (value as { $schema?: string }).$schema;

  return {
    openapi: '3.1.0',
    info: {
      title: 'Weld Data Service',
      version: '0.9.0',
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
        "header); unknown parameters are 422. Reads carry an ETag (the version every change bumps; an ISO's " +
        'also names the version of its weldCounts, "12.40", so a cached ISO is read again when its welds ' +
        'move); ' +
        'If-Match makes a change conditional (strong comparison). PATCH merges the fields given and ' +
        'replaces id lists whole; fields that may not be written are 422 naming them. POST takes an ' +
        'Idempotency-Key: the same key and body within 24 hours replay the first answer.\n\n' +
        'NDT records and inspections are written by SQL functions that validate them and, for NDT, move ' +
        "the welds by their results under the tenant's transition rules (a refusal refuses the whole " +
        'record). Roles are enforced by the database; GraphQL offers the same writes and no more.\n\n' +
        'Code rules (ASME B31.3 examination, ASME IX qualification) are computed by SQL from the ' +
        "tenant's rules: POST /examination-selections/draw draws the random examination sample of a " +
        'line or an ISO and rejections of selected welds select progressive tiers automatically; GET ' +
        '/isos/{id}/examination, /welders/{id}/qualification-status, /welds/{id}/checks and ' +
        '/test-packages/{id}/readiness say where things stand, and a test package that is not ready ' +
        'cannot be released.\n\n' +
        "The web app: /app/ on each tenant origin serves the inspectors' web app (a PWA, not an API " +
        'operation, so not listed below). It uses cookie mode and only the operations listed here and ' +
        'the event stream; GET /weld-transitions gives it (and any client) the status changes the ' +
        "tenant's rules open to each role.\n\n" +
        'Events: every committed change of a resource is an event, in the order ids are given after commit (GET /events, with ' +
        '`wait` a long-poll; GET /events/stream as Server-Sent Events; signed webhooks to the endpoints ' +
        'admins register at /webhooks, described in the `webhooks` section).\n\n' +
        'Under faults every answer stays bounded: while the database is down or unreachable, requests ' +
        'answer 503 /problems/database-unavailable (Retry-After: 5); when every connection of an ' +
        'instance stays busy for DB_POOL_WAIT_MS, 503 /problems/busy (Retry-After: 1); a statement ' +
        'past its timeout, 503 /problems/timeout. A 503 is safe to retry: POST with its Idempotency-Key, ' +
        'PATCH and DELETE with If-Match (412 shows a retry of a change that did commit).\n\n' +
        'Errors are RFC 9457 problem details (see the Problem schema for every type). The bare paths are ' +
        'canonical; every data path is also served under /api with identical behaviour.',
    },
    // What the service POSTs to registered endpoints (OpenAPI 3.1): one message per event type.
    webhooks: webhookMessages(),
    servers: [
      { url: '/', description: 'canonical' },
      { url: '/api', description: 'the same data paths under /api (identical behaviour)' },
    ],
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (ES256, typ at+jwt)' },
        oauth2: {
          type: 'oauth2',
          description:
            'OAuth2 clients (Wave 2): an admin registers one with scopes (POST /oauth-clients); it gets a token by client credentials and sends it as a bearer token. The database holds it to its scopes.',
          flows: {
            clientCredentials: {
              tokenUrl: '/oauth/token',
              scopes: {
                'welds:read': "read the project's data",
                'welds:write':
                  'write ISOs, welds and their status, welders, qualifications, PQRs, WPSs, components, filler metal, rules and settings',
                'ndt:write':
                  'write NDT records (and the status changes they cause), inspections, examination draws, PWHT and hardness',
                'packages:write': 'write test packages',
                'imports:write': 'use the import endpoints (with the scope of what a file writes)',
                'events:read': 'read the event feed',
                'webhooks:write': 'manage webhook endpoints',
                'reports:read': 'read the reports',
              },
            },
          },
        },
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
    tags: Object.values(TAGS).filter((tag) => tag.description),
    paths: tagged(routePaths(routes)),
  };
}

const documents = new WeakMap<Route[], ReturnType<typeof buildDocument>>();
/** The document of these routes (built once per list). */
export function openapiDocument(routes: Route[]): ReturnType<typeof buildDocument> {
  let document = documents.get(routes);
  if (!document) documents.set(routes, (document = buildDocument(routes)));
  return document;
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

/** Where a newcomer at the service's root goes next: GET / answers with these links. */
const INDEX = {
  name: 'Weld Data Service',
  links: {
    app: { href: '/app/', title: "the inspectors' web app" },
    docs: { href: '/docs', title: 'the API reference, operation by operation' },
    openapi: { href: '/openapi.json', title: 'the OpenAPI 3.1 document' },
    graphiql: { href: '/graphiql', title: 'GraphiQL, to try GraphQL queries in a browser' },
    graphql: { href: '/graphql', title: 'the GraphQL endpoint (POST)' },
    health: { href: '/health/live', title: 'whether this tenant is served' },
  },
};

/** GET /: a small JSON index of where to go, for anyone who opens the service's address. */
export function indexRoute(): Route {
  return {
    method: 'GET',
    path: '/',
    anonymous: true,
    doc: {
      tags: ['Health'],
      summary: "The service's index: links to the web app, the API reference and GraphiQL",
      security: [],
      schemas: {
        Index: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            links: {
              type: 'object',
              additionalProperties: {
                type: 'object',
                properties: { href: { type: 'string' }, title: { type: 'string' } },
                required: ['href', 'title'],
              },
            },
          },
          required: ['name', 'links'],
        },
      },
      responses: {
        '200': { description: 'the index', ...content('Index') },
        '404': common['404'],
        default: common.default,
      },
    },
    handler: (_req, res) => {
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.json(INDEX);
    },
  };
}

/** The document of `documented` at /openapi.json (and /api/openapi.json), and its page at /docs. */
export function openapiRoutes(documented: Route[]): Route[] {
  const serve: Route['handler'] = (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(openapiDocument(documented));
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
