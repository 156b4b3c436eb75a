// Idempotency-Key on POST: a client that lost the answer to a create retries with the same key,
// and gets the first answer again instead of a second item.
//
// The key is claimed in the request's own transaction, before the write, and the answer stored in
// it after: they commit or roll back together, so a key is never taken by a write that did not
// happen, and a retry racing the first request waits for it (the unique key's lock) and then
// replays its answer. Keys belong to the signed-in user within the tenant (row security in
// weld_hidden.idempotency_keys) and live 24 hours; housekeeping purges older ones. Only successful
// answers are stored: a refused request wrote nothing and may be retried with the same key.
import type { Request } from 'express';
import type pg from 'pg';
import { prepared } from '../db/database.ts';
import { problemOf, problems } from './http/problem.ts';

export interface IdempotentAnswer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  /** True when this is the stored answer of an earlier request. */
  replayed: boolean;
}

/** The request's Idempotency-Key, if it sent one: 1 to 255 visible ASCII characters. */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.get('idempotency-key');
  if (key === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw problems.validation([
      { parameter: 'Idempotency-Key', detail: 'must be 1 to 255 visible ASCII characters' },
    ]);
  }
  return key;
}

/**
 * Claims the key for this request (a fresh key, or one whose 24 hours are over): undefined, go
 * ahead and write. A key already used: its stored answer when the request is the same (method,
 * path and body, as `requestHash`), 422 when it is not.
 */
export async function claimIdempotencyKey(
  db: pg.PoolClient,
  key: string,
  requestHash: string,
): Promise<IdempotentAnswer | undefined> {
  const claimed = await db.query(
    prepared(
      `insert into weld_hidden.idempotency_keys (idempotency_key, request_hash) values ($1, $2)
       on conflict (tenant_id, user_id, idempotency_key) do update
          set request_hash = excluded.request_hash, created_at = now(),
              response_status = null, response_body = null, response_headers = null
        where idempotency_keys.created_at < now() - interval '24 hours'
       returning true`,
      [key, requestHash],
    ),
  );
  if (claimed.rowCount) return undefined;
  const { rows } = await db.query<{
    request_hash: string;
    response_status: number | null;
    response_body: unknown;
    response_headers: Record<string, string> | null;
  }>(
    prepared(
      `select request_hash, response_status, response_body, response_headers
         from weld_hidden.idempotency_keys where idempotency_key = $1`,
      [key],
    ),
  );
  const earlier = rows[0];
  if (earlier && earlier.request_hash !== requestHash) {
    throw problemOf('idempotency-key-reused', {
      detail:
        'This Idempotency-Key was used within the last 24 hours for a different request; use a new key.',
      extensions: {
        errors: [{ parameter: 'Idempotency-Key', detail: 'was used for another request' }],
      },
    });
  }
  if (!earlier || earlier.response_status === null) {
    // Not reachable: the claim and the answer commit together. Said plainly if it ever is.
    throw problemOf('conflict', {
      detail: 'A request with this Idempotency-Key has not finished; retry shortly.',
    });
  }
  return {
    status: earlier.response_status,
    body: earlier.response_body,
    headers: earlier.response_headers ?? {},
    replayed: true,
  };
}

/** Stores the answer of the request that claimed the key, in the same transaction. */
export async function storeIdempotentAnswer(
  db: pg.PoolClient,
  key: string,
  answer: IdempotentAnswer,
): Promise<void> {
  await db.query(
    prepared(
      `update weld_hidden.idempotency_keys
          set response_status = $2, response_body = $3, response_headers = $4
        where idempotency_key = $1`,
      [key, answer.status, JSON.stringify(answer.body), JSON.stringify(answer.headers)],
    ),
  );
}
