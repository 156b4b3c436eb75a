// The authentication endpoints (spec sections 4 and 5, with the shapes the issue fixed):
//
//   POST /auth/login     {userName, password} -> tokens + the three cookies
//   POST /auth/refresh   {refreshToken} (bearer mode) or the svc_rt cookie + X-CSRF-Token
//   POST /auth/logout    the same two ways; 204, revokes the session, clears the cookies
//   GET  /auth/me        the signed-in user
//   GET  /auth/csrf      a new signed CSRF token (and svc_csrf cookie) for the session
//   GET  /.well-known/jwks.json   the tenant's public signing keys
//
// The rules (throttling, rotation, reuse detection) are SQL functions in migrations 000003 and
// 000006; the handlers validate, call them as the authenticator inside the tenant (the functions
// are granted to no request role), and do the cryptography.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { asAuthenticator, withContext } from '../db/database.ts';
import { verifyPassword } from '../db/passwords.ts';
import { USER_ROLES } from '../db/vocabulary.ts';
import { issueAccessToken } from './http/auth/access-tokens.ts';
import { csrfToken } from './http/auth/csrf.ts';
import type { KeyRing } from './http/auth/keys.ts';
import {
  newRefreshToken,
  openSuccessor,
  refreshTokenSession,
  sealSuccessor,
  tokenHash,
} from './http/auth/refresh-tokens.ts';
import { common, content, json, problem, ref } from './http/operation.ts';
import { problemOf } from './http/problem.ts';
import type { Route } from './http/route.ts';
import {
  authProblems,
  clearSessionCookies,
  COOKIE,
  refuseCrossSite,
  requestCookies,
  requireCsrf,
  setCsrfCookie,
  setSessionCookies,
} from './http/session.ts';

export const LoginBody = z.strictObject({
  userName: z.string().min(1).max(100),
  password: z.string().min(1).max(1024),
  cookieOnly: z
    .boolean()
    .optional()
    .describe(
      'true: a browser app in cookie mode; the tokens go only into the HttpOnly cookies, not into the body, so no script can read them',
    ),
});

/** Refresh and logout: bearer clients send the token; browsers send nothing and rely on svc_rt. */
export const RefreshBody = z.strictObject({ refreshToken: z.string().min(1).max(200).optional() });

export const UserJson = z.object({
  id: z.uuid(),
  userName: z.string(),
  displayName: z.string(),
  role: z.enum(USER_ROLES),
  tenant: z.object({ slug: z.string(), name: z.string() }),
});

const session = {
  tokenType: z.literal('Bearer'),
  expiresIn: z.number().int().describe('seconds until the access token expires'),
  user: UserJson,
};

export const TokenResponse = z
  .object({ accessToken: z.string(), refreshToken: z.string(), ...session })
  .describe('A session for a bearer client: both tokens are in the body (and in the cookies).');

export const CookieSessionResponse = z
  .object(session)
  .describe(
    'A session in cookie mode (a login with cookieOnly, or a refresh by cookie): the tokens are only in the HttpOnly cookies.',
  );

export const CsrfResponse = z.object({ csrfToken: z.string() });

/** Two concurrent refreshes with one token within this many seconds get the same successor. */
const REFRESH_GRACE_SECONDS = 10;

export interface AuthDeps {
  pool: pg.Pool;
  ring: KeyRing;
  accessTokenTtl: number;
  refreshTokenTtl: number;
}

const problems = {
  invalidCredentials: () =>
    problemOf('invalid-credentials', {
      detail: 'The user name or password is wrong.',
      headers: { 'WWW-Authenticate': 'Bearer realm="weld-data-service"' },
    }),
  invalidRefreshToken: () =>
    problemOf('invalid-refresh-token', {
      detail: 'The refresh token is unknown, used, expired or revoked; sign in again.',
      headers: { 'WWW-Authenticate': 'Bearer realm="weld-data-service", error="invalid_token"' },
    }),
  tooManyAttempts: (seconds: number) =>
    problemOf('too-many-login-attempts', {
      detail: `Too many failed logins; try again in ${seconds} s.`,
      headers: { 'Retry-After': String(seconds) },
    }),
};

/**
 * The address login throttling counts: an IPv4 address as it is (an IPv4-mapped IPv6 address as
 * its IPv4), an IPv6 address by its /64, the smallest block a subscriber gets, so rotating through
 * the addresses of one's own network does not escape the limit.
 */
export function throttledAddress(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (net.isIPv6(ip)) {
    const [head = '', tail = ''] = ip.toLowerCase().split('::');
    const left = head ? head.split(':') : [];
    const right = tail ? tail.split(':') : [];
    const groups = ip.includes('::')
      ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
      : left;
    return `${groups
      .slice(0, 4)
      .map((g) => g.replace(/^0+(?=.)/, ''))
      .join(':')}::/64`;
  }
  return ip;
}

/** A login or refresh answer: a bearer client's tokens, or a cookie-mode session. */
const SESSION_ANSWER = { anyOf: [ref('TokenResponse'), ref('CookieSessionResponse')] };

export function authRoutes(deps: AuthDeps): Route[] {
  const { pool, ring } = deps;
  const call = <R extends pg.QueryResultRow>(req: Request, sql: string, params: unknown[]) =>
    asAuthenticator(pool, req.tenant!.id, (db) => db.query<R>(sql, params)).then((r) => r.rows[0]);

  /**
   * The user as the contract shows it, if still active; read as a viewer of the tenant (the least
   * role that may read users), so the role in a new token is always the user's current one.
   */
  async function userJson(
    req: Request,
    userId: string,
  ): Promise<z.infer<typeof UserJson> | undefined> {
    const row = await withContext(
      pool,
      { role: 'weld_viewer', tenantId: req.tenant!.id, userId },
      (db) =>
        db.query<z.infer<typeof UserJson>>(
          `select u.id, u.user_name as "userName", u.display_name as "displayName", u.role,
                  json_build_object('slug', t.slug, 'name', t.name) as tenant
             from weld_public.users u join weld_public.tenants t on t.id = u.tenant_id
            where u.id = weld_hidden.current_user_id() and u.active`,
        ),
    );
    return row.rows[0];
  }

  /**
   * Issues the access token and cookies of a session and answers with the token body. In cookie
   * mode (`cookieOnly`) the body leaves the tokens out: the HttpOnly cookies are then the only
   * place they are, and a script on the page (an injected one included) cannot take them away.
   */
  async function respondWithSession(
    req: Request,
    res: Response,
    session: { userId: string; sessionId: string; refreshToken: string },
    cookieOnly: boolean,
  ): Promise<void> {
    const user = await userJson(req, session.userId);
    if (!user) throw problems.invalidRefreshToken();
    const accessToken = await issueAccessToken(
      ring,
      req.tenantOrigin!,
      { userId: user.id, tenantId: req.tenant!.id, role: user.role, sessionId: session.sessionId },
      deps.accessTokenTtl,
    );
    setSessionCookies(res, {
      accessToken,
      accessTtl: deps.accessTokenTtl,
      refreshToken: session.refreshToken,
      refreshTtl: deps.refreshTokenTtl,
      csrfToken: csrfToken(await ring.csrfKey(req.tenant!.id), session.sessionId),
    });
    res.setHeader('Cache-Control', 'no-store');
    const body = { tokenType: 'Bearer', expiresIn: deps.accessTokenTtl, user };
    res.json(
      cookieOnly
        ? CookieSessionResponse.parse(body)
        : TokenResponse.parse({ accessToken, refreshToken: session.refreshToken, ...body }),
    );
  }

  /** The refresh token of a refresh or logout, and whether it came by cookie (then CSRF applies). */
  function presentedRefreshToken(req: Request): { token: string | undefined; viaCookie: boolean } {
    const body = RefreshBody.parse(req.body ?? {});
    if (body.refreshToken !== undefined) return { token: body.refreshToken, viaCookie: false };
    return { token: requestCookies(req)[COOKIE.refresh], viaCookie: true };
  }

  return [
    {
      method: 'POST',
      path: '/auth/login',
      doc: {
        schemas: {
          LoginBody: json(LoginBody, 'input'),
          TokenResponse: json(TokenResponse),
          CookieSessionResponse: json(CookieSessionResponse),
        },
        summary:
          'Sign in: the svc_at, svc_rt, svc_csrf cookies, and the tokens in the body unless cookieOnly',
        security: [],
        requestBody: { required: true, ...content('LoginBody') },
        responses: {
          '200': {
            description:
              'signed in: both tokens in the body, or with cookieOnly, in the cookies only',
            content: { 'application/json': { schema: SESSION_ANSWER } },
          },
          '401': problem('wrong user name or password'),
          '422': problem('invalid body'),
          '429': problem('throttled; see Retry-After'),
          default: common.default,
        },
      },
      anonymous: true,
      body: true,
      handler: async (req, res) => {
        // A page of another site may not sign a browser in here (login CSRF).
        refuseCrossSite(req);
        const { userName, password, cookieOnly } = LoginBody.parse(req.body ?? {});
        const address = throttledAddress(req.ip);
        const begin = await call<{
          retry_after: number | null;
          user_id: string | null;
          active: boolean | null;
          password_hash: string | null;
        }>(req, 'select * from weld_hidden.login_begin($1, $2)', [userName, address]);
        if (begin?.retry_after) throw problems.tooManyAttempts(begin.retry_after);

        // Unknown user, wrong password and disabled account: the same work, the same answer.
        // login_begin counted the attempt as a failure already; login_succeed takes it back.
        const passwordOk = await verifyPassword(password, begin?.password_hash ?? null);
        if (!passwordOk || !begin?.active || !begin.user_id) throw problems.invalidCredentials();
        const sessionId = randomUUID();
        const refreshToken = newRefreshToken(sessionId);
        await call(req, 'select weld_hidden.login_succeed($1, $2, $3, $4, $5)', [
          begin.user_id,
          address,
          sessionId,
          tokenHash(refreshToken),
          `${deps.refreshTokenTtl} seconds`,
        ]);
        await respondWithSession(
          req,
          res,
          { userId: begin.user_id, sessionId, refreshToken },
          cookieOnly === true,
        );
      },
    },
    {
      method: 'POST',
      path: '/auth/refresh',
      doc: {
        schemas: { RefreshBody: json(RefreshBody, 'input') },
        summary:
          'Exchange a refresh token (body, or the svc_rt cookie with X-CSRF-Token) for new tokens',
        security: [],
        requestBody: { required: false, ...content('RefreshBody') },
        responses: {
          '200': {
            description:
              'new tokens (the refresh token rotates): in the body for a bearer refresh, in the cookies only for a cookie refresh',
            content: { 'application/json': { schema: SESSION_ANSWER } },
          },
          '401': problem('unknown, used, expired or revoked refresh token'),
          '403': problem('CSRF check failed (cookie mode)'),
          default: common.default,
        },
      },
      anonymous: true,
      body: true,
      handler: async (req, res) => {
        const { token, viaCookie } = presentedRefreshToken(req);
        const sessionId = token && refreshTokenSession(token);
        if (!token || !sessionId) throw problems.invalidRefreshToken();
        if (viaCookie) await requireCsrf(req, ring, sessionId);

        const successor = newRefreshToken(sessionId);
        const row = await call<{
          outcome: 'rotated' | 'replayed' | 'reused' | 'revoked' | 'expired' | 'unknown';
          user_id: string | null;
          successor_box: Buffer | null;
        }>(req, 'select * from weld_hidden.refresh_rotate($1, $2, $3, $4, $5)', [
          tokenHash(token),
          tokenHash(successor),
          sealSuccessor(token, successor),
          `${REFRESH_GRACE_SECONDS} seconds`,
          `${deps.refreshTokenTtl} seconds`,
        ]);
        if (row?.outcome !== 'rotated' && row?.outcome !== 'replayed') {
          // The session id (not a secret: the token is) lets an operator follow a reuse alarm.
          req.log.info({ outcome: row?.outcome, sessionId }, 'refresh refused');
          if (viaCookie) clearSessionCookies(res);
          throw problems.invalidRefreshToken();
        }
        const refreshToken =
          row.outcome === 'rotated' ? successor : openSuccessor(token, row.successor_box!);
        // A refresh by cookie is cookie mode: the new tokens go into the cookies only.
        await respondWithSession(
          req,
          res,
          { userId: row.user_id!, sessionId, refreshToken },
          viaCookie,
        );
      },
    },
    {
      method: 'POST',
      path: '/auth/logout',
      doc: {
        summary: "Revoke the refresh token's session and clear the cookies",
        security: [],
        requestBody: { required: false, ...content('RefreshBody') },
        responses: {
          '204': { description: 'signed out' },
          '403': problem('CSRF check failed (cookie mode)'),
          default: common.default,
        },
      },
      anonymous: true,
      body: true,
      handler: async (req, res) => {
        const { token, viaCookie } = presentedRefreshToken(req);
        const sessionId = token && refreshTokenSession(token);
        if (token && sessionId) {
          if (viaCookie) await requireCsrf(req, ring, sessionId);
          await call(req, 'select weld_hidden.logout($1)', [tokenHash(token)]);
        }
        clearSessionCookies(res);
        res.status(204).end();
      },
    },
    {
      method: 'GET',
      path: '/auth/me',
      doc: {
        schemas: { User: json(UserJson) },
        summary: 'The signed-in user',
        responses: { '200': { description: 'the user', ...content('User') }, ...common },
      },
      handler: async (req, res) => {
        const identity = req.identity!;
        const user = await userJson(req, identity.userId);
        if (!user) throw authProblems.unauthorized(true); // disabled since the token was issued
        res.setHeader('Cache-Control', 'no-store');
        res.json(user);
      },
    },
    {
      method: 'GET',
      path: '/auth/csrf',
      doc: {
        schemas: { CsrfResponse: json(CsrfResponse) },
        summary: 'Issue or rotate the signed double-submit token (svc_csrf cookie)',
        responses: { '200': { description: 'the token', ...content('CsrfResponse') }, ...common },
      },
      handler: async (req, res) => {
        const token = csrfToken(await ring.csrfKey(req.tenant!.id), req.identity!.sessionId);
        setCsrfCookie(res, token, deps.refreshTokenTtl);
        res.setHeader('Cache-Control', 'no-store');
        res.json(CsrfResponse.parse({ csrfToken: token }));
      },
    },
    {
      method: 'GET',
      path: '/.well-known/jwks.json',
      doc: {
        schemas: {
          Jwks: {
            type: 'object',
            properties: { keys: { type: 'array', items: { type: 'object' } } },
            required: ['keys'],
          },
        },
        summary: "The tenant's public signing keys",
        security: [],
        responses: {
          '200': { description: 'JWK set', ...content('Jwks', 'application/jwk-set+json') },
          default: common.default,
        },
      },
      anonymous: true,
      handler: async (req, res) => {
        res.setHeader('Cache-Control', 'public, max-age=300');
        res
          .type('application/jwk-set+json')
          .send(JSON.stringify(await ring.publicJwks(req.tenant!.id)));
      },
    },
  ];
}
