// OAuth2 clients (F18, Wave 2), beside Wave 1's logins, which stay as they are:
//
//   POST   /oauth/token                     client_credentials (RFC 6749 4.4): a client's id and
//                                           secret (Basic, or in the form) for an access token
//   POST   /oauth/revoke                    RFC 7009: the client ends one of its access tokens
//   GET    /oauth-clients                   admins: the tenant's clients (never their secrets)
//   POST   /oauth-clients                   admins: register one; the secret is in this answer only
//   POST   /oauth-clients/{clientId}/rotate admins: a new secret; the old one works `overlapHours`
//   DELETE /oauth-clients/{clientId}        admins: remove it; its tokens end at once
//
// A client's token is the same per-tenant ES256 JWT a person gets, with client_id and scope
// claims (RFC 9068), its own session (sid) and no refresh token; the database holds it to its
// scopes (migration 000045) and its role. Registration, throttling and revocation are SQL
// functions (migration 000046); the token endpoint's errors are RFC 6749 section 5.2's JSON
// (`error`, `error_description`), with the problem details members beside them.
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { asAuthenticator } from '../db/database.ts';
import {
  addClient,
  CLIENT_ID,
  OauthClientJson,
  listClients,
  MAX_OVERLAP_HOURS,
  removeClient,
  rotateClient,
  secretHash,
} from '../db/oauth-clients.ts';
import { OAUTH_SCOPES, type OauthScope, type UserRole } from '../db/vocabulary.ts';
import { throttledAddress } from './auth.ts';
import { issueAccessToken, verifyAccessToken } from './http/auth/access-tokens.ts';
import type { KeyRing } from './http/auth/keys.ts';
import { TokenError } from './http/auth/keys.ts';
import {
  badParameter,
  common,
  content,
  json,
  page,
  problem,
  queryParameters,
} from './http/operation.ts';
import { problems } from './http/problem.ts';
import { dataBase, queryOf, type Route } from './http/route.ts';
import { encodeTextCursor, limitParam, pageOf, sendPage, textCursorParam } from './pagination.ts';
import { inDatabase } from './resource.ts';

export interface OauthDeps {
  pool: pg.Pool;
  ring: KeyRing;
  accessTokenTtl: number;
}

/** The largest form the token and revocation endpoints read. */
const MAX_FORM_BYTES = 4096;

const ClientListQuery = z.strictObject({
  limit: limitParam,
  cursor: textCursorParam.optional().describe('nextCursor of the previous page'),
});

const scopeList = z
  .array(z.enum(OAUTH_SCOPES))
  .min(1)
  .max(OAUTH_SCOPES.length)
  .describe(`one or more of ${OAUTH_SCOPES.join(', ')}`);

export const OauthClientCreate = z.strictObject({
  name: z.string().trim().min(1).max(100).describe('what the integration is, e.g. "ERP sync"'),
  scopes: scopeList,
});

export const OauthClientRotate = z.strictObject({
  overlapHours: z
    .number()
    .int()
    .min(0)
    .max(MAX_OVERLAP_HOURS)
    .optional()
    .describe(
      `how long the old secret keeps working, 0 to ${MAX_OVERLAP_HOURS} hours (default 24): time to change the integration over`,
    ),
});

const WithSecret = OauthClientJson.extend({
  clientSecret: z.string().describe('the secret: shown here once, stored only as its SHA-256'),
});

const TokenAnswer = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int().describe('seconds'),
  scope: z.string().describe('the scopes granted, space-separated'),
});

/** An error of the token or revocation endpoint: RFC 6749 5.2's members and the problem's. */
class OauthError extends Error {
  readonly status: 400 | 401 | 429;
  readonly error: string;
  readonly description: string;
  readonly headers: Record<string, string>;
  constructor(
    status: 400 | 401 | 429,
    error: string,
    description: string,
    headers: Record<string, string> = {},
  ) {
    super(description);
    this.status = status;
    this.error = error;
    this.description = description;
    this.headers = headers;
  }
}

function sendOauthError(req: Request, res: Response, e: OauthError): void {
  res.status(e.status);
  for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
  res.setHeader('Cache-Control', 'no-store');
  res.locals.problemType = `oauth:${e.error}`;
  res.type('application/json').send(
    JSON.stringify({
      error: e.error,
      error_description: e.description,
      type: 'about:blank',
      title:
        e.status === 429 ? 'Too Many Requests' : e.status === 401 ? 'Unauthorized' : 'Bad Request',
      status: e.status,
      detail: e.description,
      instance: req.originalUrl.split('?')[0],
    }),
  );
}

/** The form of a token or revocation request: application/x-www-form-urlencoded, each name once. */
async function readForm(req: Request): Promise<Map<string, string>> {
  if (!req.is('application/x-www-form-urlencoded')) {
    throw new OauthError(
      400,
      'invalid_request',
      'The request must be application/x-www-form-urlencoded (RFC 6749 section 4.4.2).',
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) {
      throw new OauthError(400, 'invalid_request', `The form is over ${MAX_FORM_BYTES} bytes.`);
    }
    chunks.push(chunk);
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new OauthError(400, 'invalid_request', 'The form is not UTF-8 text.');
  }
  const form = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(text)) {
    if (form.has(name)) {
      throw new OauthError(400, 'invalid_request', `The parameter ${name} is given twice.`);
    }
    form.set(name, value);
  }
  return form;
}

/** client_secret_basic (RFC 6749 2.3.1): Basic base64(urlencode(id) ":" urlencode(secret)). */
function basicCredentials(req: Request): { id: string; secret: string } | undefined {
  // (Another scheme, a person's Bearer token say, is no client authentication: not read here.)
  const header = req.get('authorization');
  if (header === undefined || !/^Basic\b/i.test(header)) return undefined;
  const match = /^Basic +([A-Za-z0-9+/]+=*)$/i.exec(header);
  const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) {
    throw new OauthError(
      401,
      'invalid_client',
      'The Authorization header is not Basic client credentials.',
      {
        'WWW-Authenticate': 'Basic realm="weld-data-service"',
      },
    );
  }
  const unescape = (text: string) => {
    try {
      return decodeURIComponent(text.replaceAll('+', ' '));
    } catch {
      return '';
    }
  };
  return { id: unescape(decoded.slice(0, colon)), secret: unescape(decoded.slice(colon + 1)) };
}

/** The client of a token or revocation request, by exactly one of the two methods. */
function clientCredentials(req: Request, form: Map<string, string>) {
  const basic = basicCredentials(req);
  const posted = form.get('client_id') ?? form.get('client_secret');
  if (basic && posted !== undefined) {
    throw new OauthError(
      400,
      'invalid_request',
      'Give the client credentials one way: Basic or the form, not both.',
    );
  }
  const id = basic?.id ?? form.get('client_id');
  const secret = basic?.secret ?? form.get('client_secret');
  const challenge = basic ? { 'WWW-Authenticate': 'Basic realm="weld-data-service"' } : undefined;
  if (!id || !secret) {
    throw new OauthError(
      401,
      'invalid_client',
      'Client authentication is missing (Basic, or client_id and client_secret).',
      challenge,
    );
  }
  return { id: id.slice(0, 100), secret, challenge };
}

/** A presented secret against the stored hashes, in constant time whatever matches. */
function secretMatches(secret: string, hashes: Array<Buffer | null>): boolean {
  const presented = secretHash(secret);
  let matched = false;
  for (const hash of hashes) {
    if (hash && timingSafeEqual(presented, hash)) matched = true;
  }
  return matched;
}

/** What the adapter's admin routes answer about a missing client. */
const noSuchClient = () => problems.notFound('No such OAuth2 client.');

export function oauthRoutes(deps: OauthDeps): Route[] {
  const { pool, ring } = deps;
  const asServer = <R extends pg.QueryResultRow>(req: Request, sql: string, params: unknown[]) =>
    asAuthenticator(pool, req.tenant!.id, (db) => db.query<R>(sql, params)).then((r) => r.rows);

  /**
   * The client a token or revocation request authenticates as, by its id and secret: counted
   * against its address and id first (throttled: 429), then the secret compared with the current
   * one and the previous one in its overlap. Unknown client, wrong secret, removed or deactivated:
   * the same work, the same 401.
   */
  async function authenticateClient(req: Request, form: Map<string, string>) {
    const { id, secret, challenge } = clientCredentials(req, form);
    const address = throttledAddress(req.ip);
    const [begin] = await asServer<{
      retry_after: number | null;
      user_id: string | null;
      active: boolean | null;
      role: UserRole | null;
      scopes: OauthScope[] | null;
      secret_hash: Buffer | null;
      previous_secret_hash: Buffer | null;
    }>(req, 'select * from weld_hidden.oauth_token_begin($1, $2)', [id, address]);
    if (begin?.retry_after) {
      throw new OauthError(
        429,
        'invalid_client',
        `Too many failed attempts; try again in ${begin.retry_after} s.`,
        { 'Retry-After': String(begin.retry_after) },
      );
    }
    const matched = secretMatches(secret, [
      begin?.secret_hash ?? null,
      begin?.previous_secret_hash ?? null,
    ]);
    if (!matched || !begin?.active || !begin.user_id || !begin.role || !begin.scopes) {
      throw new OauthError(
        401,
        'invalid_client',
        'The client id or secret is wrong, or the client is not active.',
        challenge,
      );
    }
    return {
      id,
      address,
      client: { user_id: begin.user_id, role: begin.role, scopes: begin.scopes },
    };
  }

  /** Runs an OAuth endpoint: its own errors as RFC 6749 JSON, anything else as usual. */
  const oauthHandler =
    (work: (req: Request, res: Response) => Promise<void>) =>
    async (req: Request, res: Response) => {
      try {
        await work(req, res);
      } catch (error) {
        if (!(error instanceof OauthError)) throw error;
        sendOauthError(req, res, error);
      }
    };

  const clientPath = (req: Request) => {
    const id = req.params.id;
    if (typeof id !== 'string' || !CLIENT_ID.test(id)) throw noSuchClient();
    return id;
  };

  const admin =
    '\n\nWho: admins, in a session of their own (an OAuth2 client may not manage clients, whatever its scopes).';

  return [
    {
      method: 'POST',
      path: '/oauth/token',
      anonymous: true,
      doc: {
        summary: 'A client credentials token (RFC 6749 section 4.4)',
        description:
          "Form-encoded: `grant_type=client_credentials`, optionally `scope` (space-separated, within the client's), and the client's credentials by `client_secret_basic` (Authorization: Basic) or `client_secret_post` (`client_id` and `client_secret` in the form), one of the two. The token is the per-tenant ES256 JWT a person gets, with `client_id` and `scope` claims (RFC 9068) and no refresh token: ask for a new one when it expires. Errors are RFC 6749 section 5.2 JSON (`error`, `error_description`) with the problem members beside them. Failed attempts are throttled per address and client id as logins are (429 with Retry-After).",
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                properties: {
                  grant_type: { const: 'client_credentials' },
                  scope: { type: 'string' },
                  client_id: { type: 'string' },
                  client_secret: { type: 'string' },
                },
                required: ['grant_type'],
              },
            },
          },
        },
        responses: {
          '200': { description: 'the token', ...content('OauthToken') },
          '400': {
            description: 'invalid_request, unsupported_grant_type or invalid_scope',
            ...content('OauthError'),
          },
          '401': {
            description: 'invalid_client: unknown client, wrong secret, removed or deactivated',
            ...content('OauthError'),
          },
          '429': { description: 'too many failed attempts; Retry-After', ...content('OauthError') },
          default: common.default,
        },
        schemas: {
          OauthToken: json(TokenAnswer),
          OauthError: {
            type: 'object',
            description: 'RFC 6749 section 5.2, with the problem details members',
            properties: {
              error: {
                enum: [
                  'invalid_request',
                  'invalid_client',
                  'unsupported_grant_type',
                  'invalid_scope',
                ],
              },
              error_description: { type: 'string' },
              type: { type: 'string' },
              title: { type: 'string' },
              status: { type: 'integer' },
              detail: { type: 'string' },
              instance: { type: 'string' },
            },
            required: ['error', 'error_description'],
          },
        },
      },
      handler: oauthHandler(async (req, res) => {
        const form = await readForm(req);
        const grant = form.get('grant_type');
        if (grant === undefined)
          throw new OauthError(400, 'invalid_request', 'grant_type is missing.');
        if (grant !== 'client_credentials') {
          throw new OauthError(
            400,
            'unsupported_grant_type',
            'Only grant_type=client_credentials is served here; people sign in at /auth/login.',
          );
        }
        const asked = form.get('scope')?.split(' ');
        if (asked && !asked.every((s) => (OAUTH_SCOPES as readonly string[]).includes(s))) {
          throw new OauthError(
            400,
            'invalid_scope',
            `scope must be space-separated names of ${OAUTH_SCOPES.join(', ')}.`,
          );
        }
        const { id, address, client } = await authenticateClient(req, form);
        const granted = asked ? [...new Set(asked)] : client.scopes;
        const beyond = granted.filter((s) => !client.scopes.includes(s as OauthScope));
        if (beyond.length > 0) {
          // The secret was right: the attempt is no failure, whatever was asked of it.
          await asServer(req, 'select weld_hidden.oauth_token_issued($1, $2, null)', [id, address]);
          throw new OauthError(
            400,
            'invalid_scope',
            `This client was not given ${beyond.join(', ')}.`,
          );
        }
        const sessionId = randomUUID();
        await asServer(req, 'select weld_hidden.oauth_token_issued($1, $2, $3)', [
          id,
          address,
          sessionId,
        ]);
        const scope = OAUTH_SCOPES.filter((s) => granted.includes(s)).join(' ');
        const token = await issueAccessToken(
          ring,
          req.tenantOrigin!,
          {
            userId: client.user_id,
            tenantId: req.tenant!.id,
            role: client.role,
            sessionId,
            clientId: id,
            scope,
          },
          deps.accessTokenTtl,
        );
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('Pragma', 'no-cache');
        res.json(
          TokenAnswer.parse({
            access_token: token,
            token_type: 'Bearer',
            expires_in: deps.accessTokenTtl,
            scope,
          }),
        );
      }),
    },
    {
      method: 'POST',
      path: '/oauth/revoke',
      anonymous: true,
      doc: {
        summary: "Revoke one of the client's access tokens (RFC 7009)",
        description:
          "Form-encoded `token` (an access token this client got; `token_type_hint` is read and needs no value), with the client's credentials as at /oauth/token. Every server refuses the token at once. The answer is 200 whether or not the token was live, as RFC 7009 asks.",
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                properties: {
                  token: { type: 'string' },
                  token_type_hint: { type: 'string' },
                  client_id: { type: 'string' },
                  client_secret: { type: 'string' },
                },
                required: ['token'],
              },
            },
          },
        },
        responses: {
          '200': { description: 'revoked, or nothing to revoke' },
          '400': { description: 'invalid_request', ...content('OauthError') },
          '401': { description: 'invalid_client', ...content('OauthError') },
          '429': { description: 'too many failed attempts; Retry-After', ...content('OauthError') },
          default: common.default,
        },
      },
      handler: oauthHandler(async (req, res) => {
        const form = await readForm(req);
        const token = form.get('token');
        if (!token) throw new OauthError(400, 'invalid_request', 'token is missing.');
        const { id, address } = await authenticateClient(req, form);
        // Authenticated: the attempt is taken back (no session: a revocation gets no token).
        await asServer(req, 'select weld_hidden.oauth_token_issued($1, $2, null)', [id, address]);
        try {
          const claims = await verifyAccessToken(ring, token, {
            tenantId: req.tenant!.id,
            origin: req.tenantOrigin!,
          });
          if (claims.clientId === id) {
            await asServer(req, 'select weld_hidden.oauth_token_revoke($1, $2)', [
              id,
              claims.sessionId,
            ]);
          }
        } catch (error) {
          if (!(error instanceof TokenError)) throw error; // an invalid token: nothing to revoke
        }
        res.setHeader('Cache-Control', 'no-store');
        res.status(200).end();
      }),
    },
    {
      method: 'GET',
      path: '/oauth-clients',
      data: true,
      doc: {
        summary: "The tenant's OAuth2 clients",
        description: `Keyset pages in client id order, as every list; never their secrets.${admin}`,
        parameters: queryParameters(ClientListQuery),
        responses: {
          '200': { ...page, ...content('OauthClientPage') },
          '422': badParameter,
          '403': problem('not an admin, or an OAuth2 client'),
          ...common,
        },
        schemas: {
          OauthClient: json(OauthClientJson),
          OauthClientPage: json(pageOf(OauthClientJson)),
        },
      },
      handler: async (req, res) => {
        const { limit, cursor } = queryOf(ClientListQuery, req);
        const rows = await inDatabase(pool, req, (db) =>
          listClients(db, { after: cursor, limit: limit + 1 }),
        );
        res.setHeader('Cache-Control', 'no-store');
        sendPage(req, res, rows, limit, (row) => encodeTextCursor(row.clientId));
      },
    },
    {
      method: 'POST',
      path: '/oauth-clients',
      data: true,
      body: true,
      doc: {
        summary: 'Register an OAuth2 client; its secret is in this answer only',
        description: `The client acts as the least role its scopes need (webhooks:write an admin; welds:write, packages:write, imports:write an engineer; ndt:write an inspector; reading a viewer), held to its scopes by the database. It has a user of its own, named by its client id, so its changes are signed by it in every history.${admin}`,
        requestBody: { required: true, ...content('OauthClientCreate') },
        responses: {
          '201': {
            description: 'registered; `clientSecret` is shown this once',
            ...content('OauthClientWithSecret'),
          },
          '403': problem('not an admin, or an OAuth2 client'),
          '422': problem('a bad field, named in errors'),
          ...common,
        },
        schemas: {
          OauthClientCreate: json(OauthClientCreate, 'input'),
          OauthClientWithSecret: json(WithSecret),
        },
      },
      handler: async (req, res) => {
        const body = OauthClientCreate.parse(req.body ?? {});
        const made = await inDatabase(pool, req, (db) => addClient(db, body.name, body.scopes));
        res.setHeader('Location', `${dataBase(req)}/oauth-clients/${made.client.clientId}`);
        res.setHeader('Cache-Control', 'no-store');
        res.status(201).json({ ...made.client, clientSecret: made.clientSecret });
      },
    },
    {
      method: 'POST',
      path: '/oauth-clients/:id/rotate',
      data: true,
      body: true,
      doc: {
        summary: 'A new secret for a client; the old one works for the overlap',
        description: `The new secret is in this answer only. The old one keeps working for \`overlapHours\` (default 24, 0 ends it now); a second rotation within an overlap ends the older secret at once.${admin}`,
        parameters: [
          {
            name: 'id',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description: 'the client id',
          },
        ],
        requestBody: { required: false, ...content('OauthClientRotate') },
        responses: {
          '200': {
            description: 'rotated; `clientSecret` is shown this once',
            ...content('OauthClientWithSecret'),
          },
          '403': problem('not an admin, or an OAuth2 client'),
          '422': problem('a bad field, named in errors'),
          ...common,
        },
        schemas: { OauthClientRotate: json(OauthClientRotate, 'input') },
      },
      handler: async (req, res) => {
        const clientId = clientPath(req);
        const { overlapHours = 24 } = OauthClientRotate.parse(req.body ?? {});
        const made = await inDatabase(pool, req, (db) => rotateClient(db, clientId, overlapHours));
        res.setHeader('Cache-Control', 'no-store');
        res.json({ ...made.client, clientSecret: made.clientSecret });
      },
    },
    {
      method: 'DELETE',
      path: '/oauth-clients/:id',
      data: true,
      doc: {
        summary: 'Remove a client: its secrets go, its tokens end at once',
        description: `Its user stays, deactivated, named in the histories of what it did.${admin}`,
        parameters: [
          {
            name: 'id',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description: 'the client id',
          },
        ],
        responses: {
          '204': { description: 'removed' },
          '403': problem('not an admin, or an OAuth2 client'),
          ...common,
        },
      },
      handler: async (req, res) => {
        const clientId = clientPath(req);
        if (!(await inDatabase(pool, req, (db) => removeClient(db, clientId))))
          throw noSuchClient();
        res.status(204).end();
      },
    },
  ];
}
