// OAuth2 clients (F18) in TypeScript: their ids and secrets, and the calls of the SQL functions
// that register, list, rotate and remove them (migration 000046; the rules are there). Used by
// the REST routes (rest-adapter/oauth.ts, as an admin of the tenant) and by weld-admin (as the
// owner, with the tenant set). A secret is shown once, when it is made; only its SHA-256 is kept.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import { OAUTH_SCOPES, USER_ROLES, type OauthScope } from './vocabulary.ts';

/** A client id: "wdc_" and 128 random bits (base64url); also the user name of the client's user. */
export const newClientId = () => `wdc_${randomBytes(16).toString('base64url')}`;
/** A client secret: "wds_" and 256 random bits (base64url). */
export const newClientSecret = () => `wds_${randomBytes(32).toString('base64url')}`;
/** What is stored of a secret, and what a presented one is compared with. */
export const secretHash = (secret: string): Buffer => createHash('sha256').update(secret).digest();

export const CLIENT_ID = /^wdc_[A-Za-z0-9_-]{22}$/;
/** The longest rotation overlap: a week to change an integration over. */
export const MAX_OVERLAP_HOURS = 7 * 24;

/** A client as the API and weld-admin show it: never its secret. */
export const OauthClientJson = z
  .object({
    clientId: z.string().describe('the client id, "wdc_" and 22 characters'),
    name: z.string(),
    scopes: z.array(z.enum(OAUTH_SCOPES)),
    role: z.enum(USER_ROLES).describe('the role the client acts as: the least its scopes need'),
    active: z.boolean(),
    createdAt: z.string(),
    rotatedAt: z.string().nullable(),
    previousSecretUntil: z
      .string()
      .nullable()
      .describe('until when the secret before the last rotation still works'),
    lastUsedAt: z.string().nullable().describe('when it last got a token'),
  })
  .describe(
    'An OAuth2 client of the tenant (client credentials). Its secret is never shown again.',
  );

export type OauthClient = z.infer<typeof OauthClientJson>;

/** Instants as the rest of the API writes them (ISO 8601, UTC, milliseconds). */
function asClient(row: OauthClient): OauthClient {
  const instant = (value: string | null) => (value === null ? null : new Date(value).toISOString());
  return {
    ...row,
    createdAt: instant(row.createdAt)!,
    rotatedAt: instant(row.rotatedAt),
    previousSecretUntil: instant(row.previousSecretUntil),
    lastUsedAt: instant(row.lastUsedAt),
  };
}

/** Scopes as stored: each once, in the order OAUTH_SCOPES lists them. */
export function normalScopes(scopes: readonly string[]): OauthScope[] {
  return OAUTH_SCOPES.filter((scope) => scopes.includes(scope));
}

export async function addClient(
  db: pg.ClientBase,
  name: string,
  scopes: readonly OauthScope[],
): Promise<{ client: OauthClient; clientSecret: string }> {
  const clientSecret = newClientSecret();
  const { rows } = await db.query<{ client: OauthClient }>(
    'select weld_hidden.oauth_client_add($1, $2, $3, $4) as client',
    [newClientId(), name, normalScopes(scopes), secretHash(clientSecret)],
  );
  return { client: asClient(rows[0]!.client), clientSecret };
}

/** The tenant's clients in client id order: `limit` of them after the client id `after`. */
export async function listClients(
  db: pg.ClientBase,
  page: { after?: string | undefined; limit?: number } = {},
): Promise<OauthClient[]> {
  const { rows } = await db.query<{ client: OauthClient }>(
    'select weld_hidden.oauth_clients_list($1, $2) as client',
    [page.after ?? null, page.limit ?? 10_000],
  );
  return rows.map((r) => asClient(r.client));
}

export async function rotateClient(
  db: pg.ClientBase,
  clientId: string,
  overlapHours: number,
): Promise<{ client: OauthClient; clientSecret: string }> {
  const clientSecret = newClientSecret();
  const { rows } = await db.query<{ client: OauthClient }>(
    `select weld_hidden.oauth_client_rotate($1, $2, make_interval(hours => $3)) as client`,
    [clientId, secretHash(clientSecret), overlapHours],
  );
  return { client: asClient(rows[0]!.client), clientSecret };
}

/** True when there was such a client (its user is deactivated, its tokens end). */
export async function removeClient(db: pg.ClientBase, clientId: string): Promise<boolean> {
  const { rows } = await db.query<{ removed: boolean }>(
    'select weld_hidden.oauth_client_remove($1) as removed',
    [clientId],
  );
  return rows[0]!.removed;
}
