// Sessions over HTTP: the two transports of one access token (spec section 5), the cookies, and
// the CSRF check of cookie-authenticated unsafe requests.
//
// Identity: the Authorization header, when present, is the only identity (an invalid one is 401
// even beside a valid cookie); otherwise the svc_at cookie. 401 answers carry
// WWW-Authenticate: Bearer (RFC 6750).
//
// CSRF, for cookie-authenticated POST/PUT/PATCH/DELETE: X-CSRF-Token must equal the svc_csrf
// cookie, and that value must be signed for this session (tokens.ts); a cross-site
// Sec-Fetch-Site or an Origin other than the tenant's is refused as well, since tenants may share
// a parent domain, where SameSite does not separate them.
import { parseCookie, stringifySetCookie } from 'cookie';
import type { Request, RequestHandler, Response } from 'express';
import type { SessionContext } from '../../db/database.ts';
import { requestRoleOf } from '../../db/vocabulary.ts';
import { verifyAccessToken, type AccessClaims } from './auth/access-tokens.ts';
import { csrfTokenValid, sameBytes } from './auth/csrf.ts';
import { TokenError, type KeyRing } from './auth/keys.ts';
import type { SessionRevocations } from './auth/revocations.ts';
import { problemOf } from './problem.ts';

export const COOKIE = { access: 'svc_at', refresh: 'svc_rt', csrf: 'svc_csrf' } as const;
const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface Identity extends AccessClaims {
  via: 'bearer' | 'cookie';
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by `authenticate` on every route that is not anonymous. */
      identity?: Identity;
    }
  }
}

/** Who an authenticated request runs as in the database: its role, tenant, user and session. */
export function callerContext(req: Request): SessionContext {
  const identity = req.identity!;
  return {
    role: requestRoleOf(identity.role),
    tenantId: req.tenant!.id,
    userId: identity.userId,
    sessionId: identity.sessionId,
    scope: identity.scope,
  };
}

export const authProblems = {
  /**
   * No credentials: a plain challenge. A rejected token: error="invalid_token" (RFC 6750 3.1),
   * with an error_description that tells an expired token (refresh it) from any other.
   */
  unauthorized: (presented: boolean, expired = false) => {
    const description = expired
      ? 'The access token expired'
      : 'The access token is invalid or its session has ended';
    return problemOf('unauthorized', {
      detail: !presented
        ? 'This endpoint needs an access token (Authorization: Bearer, or the svc_at cookie).'
        : expired
          ? 'The access token has expired: refresh it (POST /auth/refresh) or get a new one.'
          : 'The access token is invalid or its session has ended; sign in again.',
      headers: {
        'WWW-Authenticate': presented
          ? `Bearer realm="weld-data-service", error="invalid_token", error_description="${description}"`
          : 'Bearer realm="weld-data-service"',
      },
    });
  },
  csrf: (detail: string) => problemOf('csrf-rejected', { detail }),
};

export function requestCookies(req: Request): Record<string, string | undefined> {
  const header = req.headers.cookie;
  return header ? parseCookie(header) : {};
}

export function isUnsafe(method: string): boolean {
  return UNSAFE_METHODS.has(method);
}

/** What authentication needs: the keys that verify tokens, and the sessions that have ended. */
export interface Verifier {
  ring: KeyRing;
  revocations: SessionRevocations;
}

/**
 * Requires an access token of a session that has not ended; sets req.identity. Cookie-
 * authenticated unsafe requests pass CSRF.
 */
export function authenticate({ ring, revocations }: Verifier): RequestHandler {
  const verify = async (req: Request, token: string) => {
    const tenantId = req.tenant!.id;
    const claims = await verifyAccessToken(ring, token, { tenantId, origin: req.tenantOrigin! });
    if (revocations.isRevoked(tenantId, claims.sessionId)) throw new TokenError('session ended');
    return claims;
  };
  return async (req, _res, next) => {
    const header = req.get('authorization');
    try {
      if (header !== undefined) {
        const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
        if (!match) throw new TokenError('not a bearer token');
        req.identity = { ...(await verify(req, match[1]!)), via: 'bearer' };
      } else {
        const token = requestCookies(req)[COOKIE.access];
        if (!token) throw authProblems.unauthorized(false);
        const claims = await verify(req, token);
        if (isUnsafe(req.method)) await requireCsrf(req, ring, claims.sessionId);
        req.identity = { ...claims, via: 'cookie' };
      }
    } catch (error) {
      if (error instanceof TokenError) {
        req.log.info({ reason: error.message }, 'access token rejected');
        throw authProblems.unauthorized(true, error.expired);
      }
      throw error;
    }
    next();
  };
}

/** The CSRF check of a cookie-authenticated unsafe request of the given session. */
export async function requireCsrf(req: Request, ring: KeyRing, sessionId: string): Promise<void> {
  refuseCrossSite(req);
  const header = req.get('x-csrf-token');
  const cookie = requestCookies(req)[COOKIE.csrf];
  if (!header) throw authProblems.csrf('The X-CSRF-Token header is missing.');
  if (!cookie)
    throw authProblems.csrf('The svc_csrf cookie is missing; GET /auth/csrf issues one.');
  if (!sameBytes(header, cookie))
    throw authProblems.csrf('X-CSRF-Token does not equal the svc_csrf cookie.');
  if (!csrfTokenValid(await ring.csrfKey(req.tenant!.id), sessionId, cookie)) {
    throw authProblems.csrf(
      'The CSRF token was not issued for this session; GET /auth/csrf issues one.',
    );
  }
}

/** Browsers say where a request comes from; another site (or a sibling subdomain) is refused. */
export function refuseCrossSite(req: Request): void {
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw authProblems.csrf(`A ${site} request may not use the session cookies.`);
  }
  const origin = req.get('origin');
  if (origin !== undefined && origin !== req.tenantOrigin) {
    throw authProblems.csrf('The request comes from another origin.');
  }
}

export interface SessionCookies {
  accessToken: string;
  accessTtl: number;
  refreshToken: string;
  refreshTtl: number;
  csrfToken: string;
}

/** svc_at and svc_csrf on Path=/, svc_rt on Path=/auth; all Secure and SameSite=Strict. */
export function setSessionCookies(res: Response, c: SessionCookies): void {
  setCookie(res, COOKIE.access, c.accessToken, { path: '/', httpOnly: true, maxAge: c.accessTtl });
  setCookie(res, COOKIE.refresh, c.refreshToken, {
    path: '/auth',
    httpOnly: true,
    maxAge: c.refreshTtl,
  });
  setCsrfCookie(res, c.csrfToken, c.refreshTtl);
}

/** Not HttpOnly: the web app reads it and echoes it in X-CSRF-Token. */
export function setCsrfCookie(res: Response, token: string, maxAge: number): void {
  setCookie(res, COOKIE.csrf, token, { path: '/', httpOnly: false, maxAge });
}

export function clearSessionCookies(res: Response): void {
  setCookie(res, COOKIE.access, '', { path: '/', httpOnly: true, maxAge: 0 });
  setCookie(res, COOKIE.refresh, '', { path: '/auth', httpOnly: true, maxAge: 0 });
  setCookie(res, COOKIE.csrf, '', { path: '/', httpOnly: false, maxAge: 0 });
}

function setCookie(
  res: Response,
  name: string,
  value: string,
  options: { path: string; httpOnly: boolean; maxAge: number },
): void {
  res.append(
    'Set-Cookie',
    stringifySetCookie({ name, value, ...options, secure: true, sameSite: 'strict' }),
  );
}
