// Token cryptography, all of it: signing keys per tenant, access tokens (JWT), refresh tokens
// (opaque), the sealed successor of a used refresh token, and signed CSRF tokens.
//
// Access token (RFC 9068 shape, RFC 8725 practice): ES256 only, header typ "at+jwt" and the
// signing key's kid; claims iss = aud = the tenant origin it was issued at, sub (user id), tid
// (tenant id), role, sid (session id), iat, exp, jti. Verification pins the algorithm, checks iss,
// aud, typ, expiry (5 s tolerance) and that tid is the tenant of the request; kid only selects
// among the tenant's own trusted keys.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  randomUUID,
  timingSafeEqual,
} from 'node:crypto';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  jwtVerify,
  SignJWT,
  type CryptoKey,
  type JWK,
} from 'jose';
import type pg from 'pg';
import { asAuthenticator } from '../../db/database.ts';

export const ALGORITHM = 'ES256';
export const USER_ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export interface AccessClaims {
  userId: string;
  tenantId: string;
  role: UserRole;
  sessionId: string;
}

/** Any reason a presented token is not accepted; the detail is for logs, never for clients. */
export class TokenError extends Error {}

interface TenantKey {
  kid: string;
  privateKey: CryptoKey | undefined;
  publicKey: CryptoKey;
  publicJwk: JWK;
  retiredAt: Date | null;
}

interface TenantKeys {
  keys: TenantKey[];
  csrfKey: Buffer;
}

/** How long a tenant's keys are reused before they are read again (a rotation shows up by then). */
const RELOAD_AFTER_MS = 60_000;
/** An unknown kid may mean a rotation elsewhere; reread, but not more often than this. */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/**
 * The signing keys of every tenant, read from the database (and created there on first use), or
 * the service-wide keys given in JWT_SIGNING_KEYS. A retired key stays trusted and published
 * until the tokens it signed have expired.
 */
export class KeyRing {
  readonly #pool: pg.Pool;
  readonly #trustRetiredMs: number;
  readonly #configured: Promise<TenantKey[]> | undefined;
  readonly #tenants = new Map<string, { loading: Promise<TenantKeys>; startedAt: number }>();

  constructor(
    pool: pg.Pool,
    options: { accessTokenTtl: number; configuredKeys?: JWK[] | undefined },
  ) {
    this.#pool = pool;
    this.#trustRetiredMs = (options.accessTokenTtl + 60) * 1000;
    this.#configured =
      options.configuredKeys &&
      Promise.all(options.configuredKeys.map((jwk) => importKey(jwk, null)));
  }

  async signingKey(tenantId: string): Promise<{ kid: string; key: CryptoKey }> {
    const keys = await this.#keys(tenantId);
    const active = keys.find((k) => k.retiredAt === null && k.privateKey);
    if (!active?.privateKey) throw new Error('no active signing key');
    return { kid: active.kid, key: active.privateKey };
  }

  async verificationKey(tenantId: string, kid: string | undefined): Promise<CryptoKey> {
    let found = (await this.#keys(tenantId)).find((k) => k.kid === kid);
    const entry = this.#tenants.get(tenantId);
    if (!found && kid && entry && Date.now() - entry.startedAt > UNKNOWN_KID_RELOAD_MS) {
      this.#tenants.delete(tenantId);
      found = (await this.#keys(tenantId)).find((k) => k.kid === kid);
    }
    if (!found) throw new TokenError(`no trusted key ${kid ?? '(none)'}`);
    return found.publicKey;
  }

  async publicJwks(tenantId: string): Promise<{ keys: JWK[] }> {
    const keys = await this.#keys(tenantId);
    return { keys: keys.map((k) => k.publicJwk) };
  }

  async csrfKey(tenantId: string): Promise<Buffer> {
    return (await this.#tenant(tenantId)).csrfKey;
  }

  /** Forgets what was read, so the next use rereads (after a rotation by this process). */
  forget(tenantId: string): void {
    this.#tenants.delete(tenantId);
  }

  async #keys(tenantId: string): Promise<TenantKey[]> {
    if (this.#configured) return this.#configured;
    const now = Date.now();
    return (await this.#tenant(tenantId)).keys.filter(
      (k) => k.retiredAt === null || now - k.retiredAt.getTime() < this.#trustRetiredMs,
    );
  }

  #tenant(tenantId: string): Promise<TenantKeys> {
    const cached = this.#tenants.get(tenantId);
    if (cached && Date.now() - cached.startedAt < RELOAD_AFTER_MS) return cached.loading;
    const loading = this.#load(tenantId);
    this.#tenants.set(tenantId, { loading, startedAt: Date.now() });
    loading.catch(() => this.#tenants.delete(tenantId));
    return loading;
  }

  async #load(tenantId: string): Promise<TenantKeys> {
    return asAuthenticator(this.#pool, tenantId, async (db) => {
      const csrf = await db.query<{ key: Buffer }>(
        'select weld_hidden.tenant_csrf_key($1) as key',
        [randomBytes(32)],
      );
      let rows = await readKeys(db);
      if (!this.#configured && !rows.some((r) => r.retired_at === null)) {
        await addSigningKey(db, false);
        rows = await readKeys(db);
      }
      return {
        keys: await Promise.all(rows.map((r) => importKey(r.private_jwk, r.retired_at))),
        csrfKey: csrf.rows[0]!.key,
      };
    });
  }
}

interface KeyRow {
  kid: string;
  private_jwk: JWK;
  public_jwk: JWK;
  retired_at: Date | null;
}

function readKeys(db: pg.ClientBase): Promise<KeyRow[]> {
  return db
    .query<KeyRow>(
      'select kid, private_jwk, public_jwk, retired_at from weld_hidden.tenant_signing_keys()',
    )
    .then((r) => r.rows);
}

/**
 * Makes a new ES256 key for the tenant set in the transaction. rotate = false only if the tenant
 * has no active key (first use); rotate = true retires the active one (weld-admin keys rotate).
 */
export async function addSigningKey(db: pg.ClientBase, rotate: boolean): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair(ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALGORITHM, use: 'sig' };
  await db.query('select weld_hidden.add_signing_key($1, $2, $3, $4)', [
    kid,
    privateJwk,
    { ...publicJwk, kid, alg: ALGORITHM, use: 'sig' },
    rotate,
  ]);
  return kid;
}

async function importKey(privateJwk: JWK, retiredAt: Date | null): Promise<TenantKey> {
  const { kty, crv, x, y, kid } = privateJwk;
  const publicOnly: JWK = { kty, crv, x, y, kid, alg: ALGORITHM, use: 'sig' };
  return {
    kid: privateJwk.kid!,
    privateKey: (await importJWK({ ...privateJwk, alg: ALGORITHM }, ALGORITHM)) as CryptoKey,
    publicKey: (await importJWK(publicOnly, ALGORITHM)) as CryptoKey,
    publicJwk: publicOnly,
    retiredAt,
  };
}

//--------------------------------------------------------------------------------------------------
// Access tokens

export async function issueAccessToken(
  ring: KeyRing,
  origin: string,
  claims: AccessClaims,
  ttlSeconds: number,
): Promise<string> {
  const { kid, key } = await ring.signingKey(claims.tenantId);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tid: claims.tenantId, role: claims.role, sid: claims.sessionId })
    .setProtectedHeader({ alg: ALGORITHM, typ: 'at+jwt', kid })
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
  const { claims, exp, kid } = await verifyUncached(ring, token, expected);
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
        algorithms: [ALGORITHM],
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
    return {
      claims: { userId: payload.sub!, tenantId: payload.tid, role, sessionId: payload.sid },
      exp: payload.exp!,
      kid: protectedHeader.kid,
    };
  } catch (error) {
    if (error instanceof TokenError) throw error;
    throw new TokenError((error as Error).message);
  }
}

//--------------------------------------------------------------------------------------------------
// Refresh tokens: "<session id>.<256 random bits>", stored only as their SHA-256. Carrying the
// session id lets the CSRF check of a cookie refresh bind to the session before any lookup.

const REFRESH_TOKEN =
  /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.[A-Za-z0-9_-]{43}$/;

export function newRefreshToken(sessionId: string): string {
  return `${sessionId}.${randomBytes(32).toString('base64url')}`;
}

/** The session a well-formed refresh token belongs to; undefined for anything else. */
export function refreshTokenSession(token: string): string | undefined {
  return REFRESH_TOKEN.exec(token)?.[1];
}

export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** AES-256-GCM under a key derived from the old token: only its holder can open the successor. */
function successorKey(oldToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', oldToken, 'weld-refresh-successor', '', 32));
}

export function sealSuccessor(oldToken: string, successor: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', successorKey(oldToken), iv);
  const body = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

export function openSuccessor(oldToken: string, box: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', successorKey(oldToken), box.subarray(0, 12));
  decipher.setAuthTag(box.subarray(box.length - 16));
  return Buffer.concat([
    decipher.update(box.subarray(12, box.length - 16)),
    decipher.final(),
  ]).toString('utf8');
}

//--------------------------------------------------------------------------------------------------
// CSRF tokens (OWASP, signed double-submit): "<nonce>.<HMAC(tenant key, session id . nonce)>".
// A cookie planted by a sibling subdomain cannot carry a valid signature for the victim's session.

export function csrfToken(key: Buffer, sessionId: string): string {
  const nonce = randomBytes(16).toString('base64url');
  return `${nonce}.${csrfSignature(key, sessionId, nonce)}`;
}

export function csrfTokenValid(key: Buffer, sessionId: string, token: string): boolean {
  const [nonce, signature, extra] = token.split('.');
  if (!nonce || !signature || extra !== undefined) return false;
  const expected = Buffer.from(csrfSignature(key, sessionId, nonce));
  const actual = Buffer.from(signature);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

function csrfSignature(key: Buffer, sessionId: string, nonce: string): string {
  return createHmac('sha256', key).update(`${sessionId}.${nonce}`).digest('base64url');
}
