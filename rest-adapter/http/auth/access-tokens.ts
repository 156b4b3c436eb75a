// Access tokens (RFC 9068 shape, RFC 8725 practice): ES256 only, header typ "at+jwt" and the
// signing key's kid; claims iss = aud = the tenant origin it was issued at, sub (user id), tid
// (tenant id), role, sid (session id), iat, exp, jti; an OAuth2 client's token also client_id and
// scope (RFC 9068 section 2.2.3), which the database holds the request to. Verification pins the algorithm, checks iss,
// aud, typ, expiry (5 s tolerance) and that tid is the tenant of the request; kid only selects
// among the tenant's own trusted keys.
import { randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { SIGNING_ALGORITHM } from '../../../db/signing-keys.ts';
import { OAUTH_SCOPES, USER_ROLES, type UserRole } from '../../../db/vocabulary.ts';
import { TokenError, type KeyRing } from './keys.ts';

export interface AccessClaims {
  userId: string;
  tenantId: string;
  role: UserRole;
  sessionId: string;
  /** An OAuth2 client's token (RFC 9068): its client_id, and the scopes it was granted. */
  clientId?: string;
  scope?: string;
  /** When the verified token expires (ms since the epoch); set by verifyAccessToken. */
  expiresAt?: number;
}

export async function issueAccessToken(
  ring: KeyRing,
  origin: string,
  claims: AccessClaims,
  ttlSeconds: number,
): Promise<string> {
  const { kid, key } = await ring.signingKey(claims.tenantId);
  const now = Math.floor(Date.now() / 1000);
  const client = claims.clientId ? { client_id: claims.clientId, scope: claims.scope } : {};
  return new SignJWT({ tid: claims.tenantId, role: claims.role, sid: claims.sessionId, ...client })
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, typ: 'at+jwt', kid })
    .setIssuer(origin)
    .setAudience(origin)
    .setSubject(claims.userId)
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(randomUUID())
    .sign(key);
}

/**
 * Verified tokens, remembered until they expire: a client sends the same token with every request
 * for minutes, and verifying an ES256 signature each time would be most of a request's CPU. The key
 * includes the tenant and origin, so a token is only ever reused where it was accepted.
 */
const verified = new Map<
  string,
  { claims: AccessClaims; expiresAt: number; kid: string | undefined }
>();
const MAX_VERIFIED = 50_000;
/**
 * Verifications under way: a burst of requests with one new token (a client's first page of
 * parallel requests, or a storm) verifies its signature once, not once per request.
 */
const verifying = new Map<string, ReturnType<typeof verifyUncached>>();

export async function verifyAccessToken(
  ring: KeyRing,
  token: string,
  expected: { tenantId: string; origin: string },
): Promise<AccessClaims> {
  const cacheKey = `${expected.tenantId} ${expected.origin} ${token}`;
  const cached = verified.get(cacheKey);
  if (cached) {
    // Still only while its key is trusted: a key withdrawn early (compromise) ends its tokens.
    if (
      Date.now() < cached.expiresAt &&
      (await ring.verificationKey(expected.tenantId, cached.kid))
    ) {
      return cached.claims;
    }
    verified.delete(cacheKey);
  }
  let verification = verifying.get(cacheKey);
  if (!verification) {
    verification = verifyUncached(ring, token, expected).finally(() => verifying.delete(cacheKey));
    verifying.set(cacheKey, verification);
  }
  const { claims, exp, kid } = await verification;
  if (verified.size >= MAX_VERIFIED) verified.clear();
  verified.set(cacheKey, { claims, expiresAt: exp * 1000, kid });
  return claims;
}

async function verifyUncached(
  ring: KeyRing,
  token: string,
  expected: { tenantId: string; origin: string },
): Promise<{ claims: AccessClaims; exp: number; kid: string | undefined }> {
  try {
    const { payload, protectedHeader } = await jwtVerify(
      token,
      (header) => ring.verificationKey(expected.tenantId, header.kid),
      {
        algorithms: [SIGNING_ALGORITHM],
        issuer: expected.origin,
        audience: expected.origin,
        typ: 'at+jwt',
        clockTolerance: 5,
        requiredClaims: ['sub', 'tid', 'role', 'sid', 'iat', 'exp'],
      },
    );
    const role = payload.role as UserRole;
    if (payload.tid !== expected.tenantId) throw new TokenError('token of another tenant');
    if (!USER_ROLES.includes(role)) throw new TokenError('unknown role');
    if (typeof payload.sid !== 'string') throw new TokenError('no session');
    // A client's token names its client and scopes, each one we know; a person's names neither.
    const { client_id: clientId, scope } = payload;
    if (clientId !== undefined || scope !== undefined) {
      if (typeof clientId !== 'string' || typeof scope !== 'string') {
        throw new TokenError('client_id and scope go together');
      }
      const scopes = scope.split(' ');
      if (!scopes.every((s) => (OAUTH_SCOPES as readonly string[]).includes(s))) {
        throw new TokenError('unknown scope');
      }
    }
    return {
      claims: {
        userId: payload.sub!,
        tenantId: payload.tid,
        role,
        sessionId: payload.sid,
        ...(typeof clientId === 'string' && { clientId, scope: scope! }),
        expiresAt: payload.exp! * 1000,
      },
      exp: payload.exp!,
      kid: protectedHeader.kid,
    };
  } catch (error) {
    // Only what jose says of the token makes it invalid: a key read that failed (the database
    // slow or down) is the service's fault, answered 503, not a reason to drop the client's token.
    if (error instanceof TokenError) throw error;
    if (error instanceof errors.JOSEError) {
      throw new TokenError(error.message, { expired: error instanceof errors.JWTExpired });
    }
    throw error;
  }
}
