// Webhook signing secrets, sealed at rest (SECURITY.md: "Secrets encrypted at rest").
//
// A secret (whsec_...) is stored as AES-256-GCM ciphertext (secret_sealed: a 12-byte nonce, the
// 16-byte tag, the ciphertext) beside the id of the key that sealed it (secret_key_id). The
// endpoint's tenant and id are the associated data, so a sealed secret copied onto another
// endpoint does not open. The database never sees a key: a dump, a backup or a replica holds
// nothing that signs a message.
//
// Keys: WEBHOOK_SECRET_KEY (32 random bytes in base64; every instance the same) seals and
// opens; WEBHOOK_SECRET_KEYS_OLD (comma-separated) only opens. A key's id is derived from it, so
// configuring one is all an operator does. The embedded quick start without WEBHOOK_SECRET_KEY
// makes one once and keeps it in DATA_DIR/webhook-secret.key (0600); with a database URL the key
// must be given (each instance making its own would seal what the others cannot open).
//
// Plain-text secrets (from before sealing, or written by an older instance during an upgrade)
// are sealed by every server start (sealPlainSecrets). A key rotation re-seals every secret under
// the new key with `weld-admin webhooks reencrypt` (reencryptSecrets), once every instance has
// the new key: see docs/operating.md, "Webhook secret keys".
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import type pg from 'pg';
import { z } from 'zod';
import { ConfigError, databaseEnv, parseEnvironment, type DatabaseSource } from './config.ts';
import { readOrCreateSecret } from './embedded.ts';

export interface SecretKey {
  /** Derived from the key: what secret_key_id names. */
  id: string;
  key: Buffer;
}

export interface WebhookSecretKeys {
  /** Seals new secrets, and opens. */
  current: SecretKey;
  /** Open only (a rotation's previous keys). */
  old: SecretKey[];
}

export const KEY_FILE = 'webhook-secret.key';

const KEY_TEXT = /^[A-Za-z0-9+/]{43}=$/;
const KEY_MESSAGE = 'must be 32 random bytes in base64 (44 characters: `openssl rand -base64 32`)';

/** A key's id: not the key, and not a way back to it (a hash, shortened). */
export function secretKey(key: Buffer): SecretKey {
  const id = createHash('sha256')
    .update('weld-data-service webhook secret key\0')
    .update(key)
    .digest('base64url')
    .slice(0, 12);
  return { id, key };
}

const keyText = z
  .string()
  .trim()
  .refine((value) => KEY_TEXT.test(value), KEY_MESSAGE)
  .transform((value) => Buffer.from(value, 'base64'));

/** The variables, to be spread into a process's environment schema (server, weld-admin). */
export const webhookKeyEnv = {
  WEBHOOK_SECRET_KEY: keyText.optional(),
  WEBHOOK_SECRET_KEYS_OLD: z
    .string()
    .trim()
    .transform((value, ctx) => {
      const keys: Buffer[] = [];
      for (const entry of value.split(',').map((part) => part.trim())) {
        if (!KEY_TEXT.test(entry)) {
          ctx.addIssue({ code: 'custom', message: `each key ${KEY_MESSAGE}` });
          return z.NEVER;
        }
        keys.push(Buffer.from(entry, 'base64'));
      }
      return keys;
    })
    .optional(),
};

/** What the environment gave, before the embedded default is applied. */
export interface WebhookKeyConfig {
  current: Buffer | undefined;
  old: Buffer[];
}

/**
 * The keys to use: the configured ones, or for the embedded database the one kept in DATA_DIR
 * (made on first use). With a database URL and no WEBHOOK_SECRET_KEY: a ConfigError.
 */
export function webhookSecretKeys(
  config: WebhookKeyConfig,
  database: DatabaseSource,
): WebhookSecretKeys {
  let current = config.current;
  if (!current) {
    if (database.kind !== 'embedded') {
      throw new ConfigError(
        'Invalid configuration: WEBHOOK_SECRET_KEY: required with a database URL (webhook ' +
          `secrets are sealed with it; every instance needs the same one); it ${KEY_MESSAGE}`,
      );
    }
    const text = readOrCreateSecret(path.join(database.dataDir, KEY_FILE), KEY_FILE, () =>
      randomBytes(32).toString('base64'),
    );
    if (!KEY_TEXT.test(text)) {
      throw new ConfigError(
        `${path.join(database.dataDir, KEY_FILE)} does not hold a key: it ${KEY_MESSAGE}`,
      );
    }
    current = Buffer.from(text, 'base64');
  }
  const currentKey = secretKey(current);
  return {
    current: currentKey,
    old: config.old.map(secretKey).filter((key) => key.id !== currentKey.id),
  };
}

/** The keys the environment names (weld-admin; the server reads them with its own variables). */
export function loadWebhookSecretKeys(env: NodeJS.ProcessEnv = process.env): WebhookSecretKeys {
  const e = parseEnvironment(z.object({ ...databaseEnv, ...webhookKeyEnv }), env);
  return webhookSecretKeys(
    { current: e.WEBHOOK_SECRET_KEY, old: e.WEBHOOK_SECRET_KEYS_OLD ?? [] },
    e.database,
  );
}

/** Which endpoint a sealed secret belongs to: its associated data. */
export interface SecretOwner {
  tenantId: string;
  webhookId: string;
}

const associated = (owner: SecretOwner) =>
  Buffer.from(`weld webhook secret v1:${owner.tenantId}:${owner.webhookId}`);

export function sealSecret(
  keys: WebhookSecretKeys,
  secret: string,
  owner: SecretOwner,
): { keyId: string; sealed: Buffer } {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keys.current.key, nonce);
  cipher.setAAD(associated(owner));
  const text = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return { keyId: keys.current.id, sealed: Buffer.concat([nonce, cipher.getAuthTag(), text]) };
}

/** A secret this process cannot open: its key is not configured, or the ciphertext is not it. */
export class SecretUnreadable extends Error {
  readonly keyId: string;
  constructor(keyId: string, why: string) {
    super(`the webhook secret sealed with key ${keyId} cannot be opened: ${why}`);
    this.keyId = keyId;
  }
}

/** The columns a secret is stored in. */
export interface StoredSecret {
  secret: string | null;
  secret_key_id: string | null;
  secret_sealed: Buffer | null;
}

/** The plain secret of a stored one (sealed, or plain from before sealing). */
export function openSecret(
  keys: WebhookSecretKeys,
  stored: StoredSecret,
  owner: SecretOwner,
): string {
  if (stored.secret_sealed === null || stored.secret_key_id === null) {
    if (stored.secret === null) throw new SecretUnreadable('none', 'no secret is stored');
    return stored.secret;
  }
  const keyId = stored.secret_key_id;
  const key = [keys.current, ...keys.old].find((candidate) => candidate.id === keyId);
  if (!key) {
    throw new SecretUnreadable(
      keyId,
      'no such key in WEBHOOK_SECRET_KEY or WEBHOOK_SECRET_KEYS_OLD',
    );
  }
  const sealed = stored.secret_sealed;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, sealed.subarray(0, 12));
    decipher.setAAD(associated(owner));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString();
  } catch {
    throw new SecretUnreadable(
      keyId,
      'it does not verify (tampered, or moved from another endpoint)',
    );
  }
}

interface SecretRow extends StoredSecret {
  tenant_id: string;
  id: string;
}

/** Seals `row`'s secret under the current key, unless it changed meanwhile; true if written. */
async function reseal(db: pg.ClientBase, keys: WebhookSecretKeys, row: SecretRow) {
  const owner = { tenantId: row.tenant_id, webhookId: row.id };
  const { keyId, sealed } = sealSecret(keys, openSecret(keys, row, owner), owner);
  // Only if the row still holds what was read: a rotation meanwhile (a new secret) wins.
  const { rowCount } = await db.query(
    `update weld_hidden.webhooks
        set secret = null, secret_key_id = $3, secret_sealed = $4
      where tenant_id = $1 and id = $2
        and secret is not distinct from $5 and secret_sealed is not distinct from $6`,
    [row.tenant_id, row.id, keyId, sealed, row.secret, row.secret_sealed],
  );
  return rowCount === 1;
}

/**
 * Seals every secret still stored in plain text (server start; as the owner, who sees every
 * tenant). Safe beside other instances doing the same. Returns how many it sealed.
 */
export async function sealPlainSecrets(
  db: pg.ClientBase,
  keys: WebhookSecretKeys,
): Promise<number> {
  const { rows } = await db.query<SecretRow>(
    `select tenant_id, id, secret, secret_key_id, secret_sealed
       from weld_hidden.webhooks where secret is not null`,
  );
  let sealed = 0;
  for (const row of rows) if (await reseal(db, keys, row)) sealed++;
  return sealed;
}

/** The ids of keys that sealed stored secrets but are not configured here, with their counts. */
export async function unknownSecretKeys(
  db: pg.ClientBase,
  keys: WebhookSecretKeys,
): Promise<Array<{ keyId: string; secrets: number }>> {
  const { rows } = await db.query<{ keyId: string; secrets: number }>(
    `select secret_key_id as "keyId", count(*)::int as secrets from weld_hidden.webhooks
      where secret_key_id is not null and not (secret_key_id = any($1::text[]))
      group by secret_key_id order by 1`,
    [[keys.current.id, ...keys.old.map((key) => key.id)]],
  );
  return rows;
}

/**
 * Re-seals, in one transaction, every secret not sealed with the current key (plain ones too):
 * the last step of a key rotation. All or nothing: if a secret's key is not configured, nothing
 * is changed and the error names the key. Returns how many it re-sealed.
 */
export async function reencryptSecrets(
  db: pg.ClientBase,
  keys: WebhookSecretKeys,
): Promise<number> {
  await db.query('begin');
  try {
    const { rows } = await db.query<SecretRow>(
      `select tenant_id, id, secret, secret_key_id, secret_sealed from weld_hidden.webhooks
        where secret_key_id is distinct from $1 for update`,
      [keys.current.id],
    );
    for (const row of rows) await reseal(db, keys, row);
    await db.query('commit');
    return rows.length;
  } catch (error) {
    await db.query('rollback');
    throw error;
  }
}
