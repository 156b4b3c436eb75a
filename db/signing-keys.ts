// A tenant's signing keys in the database: reading them, and making a new one. The rules (which
// key is active, retiring, deleting old keys, the per-tenant lock) are SQL functions of migration
// 000003, granted to the server's own role only; this module adds the key generation (jose).
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import type pg from 'pg';

/** Access tokens are signed with ES256 only (RFC 8725: one pinned, asymmetric algorithm). */
export const SIGNING_ALGORITHM = 'ES256';

export interface SigningKeyRow {
  kid: string;
  private_jwk: JWK;
  public_jwk: JWK;
  retired_at: Date | null;
}

/** The keys of the tenant set in the transaction, newest first. */
export async function readSigningKeys(db: pg.ClientBase): Promise<SigningKeyRow[]> {
  const { rows } = await db.query<SigningKeyRow>(
    'select kid, private_jwk, public_jwk, retired_at from weld_hidden.tenant_signing_keys()',
  );
  return rows;
}

/**
 * Makes a new ES256 key for the tenant set in the transaction. rotate = false only if the tenant
 * has no active key (first use); rotate = true retires the active one (weld-admin keys rotate).
 */
export async function addSigningKey(db: pg.ClientBase, rotate: boolean): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALGORITHM, use: 'sig' };
  await db.query('select weld_hidden.add_signing_key($1, $2, $3, $4)', [
    kid,
    privateJwk,
    { ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' },
    rotate,
  ]);
  return kid;
}
