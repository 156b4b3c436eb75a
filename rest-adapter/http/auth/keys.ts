// The key ring: each tenant's signing keys, read from the database (and created there on first
// use), or the service-wide keys of JWT_SIGNING_KEYS. A retired key stays trusted and published
// until the tokens it signed have expired.
//
// Timing of a rotation (`weld-admin keys rotate`, or a key added in SQL), for other processes:
// each process rereads a tenant's keys at most RELOAD_AFTER_MS (SIGNING_KEYS_RELOAD_SECONDS) after
// it last read them, so a new key signs everywhere within a minute; a token signed with a key this
// process has not seen yet makes it reread (at most every UNKNOWN_KID_RELOAD_MS: a request that
// comes sooner waits for that reread), so every process honours it as soon as one issues it. Clients that cache the JWKS
// (Cache-Control: max-age=300) see the new key within five minutes.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { importJWK, type CryptoKey, type JWK } from 'jose';
import type pg from 'pg';
import { asAuthenticator } from '../../../db/database.ts';
import { addSigningKey, readSigningKeys, SIGNING_ALGORITHM } from '../../../db/signing-keys.ts';

/** Any reason a presented token is not accepted; the detail is for logs, never for clients. */
/** A token refused; `expired` when only its time is up (the client should refresh). */
export class TokenError extends Error {
  readonly expired: boolean;
  constructor(message: string, options: { expired?: boolean } = {}) {
    super(message);
    this.expired = options.expired ?? false;
  }
}

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

/**
 * How long a tenant's keys are reused before they are read again (a rotation shows up by then),
 * unless SIGNING_KEYS_RELOAD_SECONDS says otherwise.
 */
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
  readonly #reloadAfterMs: number;
  readonly #configured: Promise<TenantKey[]> | undefined;
  readonly #tenants = new Map<string, { loading: Promise<TenantKeys>; startedAt: number }>();

  constructor(
    pool: pg.Pool,
    options: { accessTokenTtl: number; configuredKeys?: JWK[] | undefined; reloadAfterMs?: number },
  ) {
    this.#pool = pool;
    this.#reloadAfterMs = options.reloadAfterMs ?? RELOAD_AFTER_MS;
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
    if (!found && kid && entry && !this.#configured) {
      // A key this process has not read yet: rotated by another process, read again. Read just
      // now: wait until the read is UNKNOWN_KID_RELOAD_MS old (a token signed by a key made in
      // that moment is honoured late rather than refused), and share that one read with every
      // other request that waits, so made-up kids cannot make us read more often than that.
      const age = Date.now() - entry.startedAt;
      if (age < UNKNOWN_KID_RELOAD_MS) await sleep(UNKNOWN_KID_RELOAD_MS - age);
      if (this.#tenants.get(tenantId) === entry) this.#tenants.delete(tenantId);
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
    if (cached && Date.now() - cached.startedAt < this.#reloadAfterMs) return cached.loading;
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
      let rows = await readSigningKeys(db);
      if (!this.#configured && !rows.some((r) => r.retired_at === null)) {
        await addSigningKey(db, false);
        rows = await readSigningKeys(db);
      }
      return {
        keys: await Promise.all(rows.map((r) => importKey(r.private_jwk, r.retired_at))),
        csrfKey: csrf.rows[0]!.key,
      };
    });
  }
}

async function importKey(privateJwk: JWK, retiredAt: Date | null): Promise<TenantKey> {
  const { kty, crv, x, y, kid } = privateJwk;
  const publicOnly: JWK = { kty, crv, x, y, kid, alg: SIGNING_ALGORITHM, use: 'sig' };
  return {
    kid: privateJwk.kid!,
    privateKey: (await importJWK(
      { ...privateJwk, alg: SIGNING_ALGORITHM },
      SIGNING_ALGORITHM,
    )) as CryptoKey,
    publicKey: (await importJWK(publicOnly, SIGNING_ALGORITHM)) as CryptoKey,
    publicJwk: publicOnly,
    retiredAt,
  };
}
