// Keyset pagination shared by the list endpoints: `limit` (1 to 500, default 50) and an opaque
// `cursor` (the last id of the previous page, base64url), answered as
// {"items": [...], "nextCursor": string | null} and a `Link: <...>; rel="next"` header. Also the
// query parameter types every list shares (timestamps that accept a plain date).
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared } from '../db/database.ts';
import { PAGE_SIZE } from '../db/vocabulary.ts';
import { problems } from './http/problem.ts';

/** `limit`: a page size from 1 to `max` (default `fallback`). */
export function pageSizeParam(max: number, fallback: number) {
  const message = `must be a whole number from 1 to ${max}`;
  return z.coerce
    .number({ error: message })
    .int(message)
    .min(1, message)
    .max(max, message)
    .default(fallback)
    .describe(`page size, 1 to ${max} (default ${fallback})`);
}

export const limitParam = pageSizeParam(PAGE_SIZE.max, PAGE_SIZE.default);

/**
 * A point in time: an RFC 3339 date-time with its offset, or a plain date (ISO 8601), which means
 * that day's midnight UTC.
 */
export const instantParam = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: 'must be a date (2026-03-01) or a date-time with its offset (2026-03-01T08:00:00Z)',
  })
  // Year 0 is valid ISO 8601 but not a PostgreSQL date.
  .refine((value) => !value.startsWith('0000'), 'must be in year 1 or later')
  .transform((value) => (value.length === 10 ? `${value}T00:00:00Z` : value));

export const cursorParam = z
  .string()
  .regex(/^[A-Za-z0-9_-]{22}$/, 'not a cursor this service issued')
  .transform((cursor) => {
    const hex = Buffer.from(cursor, 'base64url').toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  });

/**
 * The cursor of a list in an order of its own (a sorted resource list, a report): as text, decoded
 * by keyCursor, or by idCursor when the list turns out to be in id order.
 */
export const listCursorParam = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,1200}$/, 'not a cursor this service issued')
  .describe('nextCursor of the previous page (of the same order)');

const notACursor = () =>
  problems.validation([{ parameter: 'cursor', detail: 'not a cursor this service issued' }]);

/** An id-ordered list's cursor (the last id), or a 422. */
export function idCursor(cursor: string): string {
  const parsed = cursorParam.safeParse(cursor);
  if (!parsed.success) throw notACursor();
  return parsed.data;
}

/**
 * The cursor after the row whose key is `key` (texts) in the list ordered as `order` names it
 * (a sort, or a report). The order is in the cursor, so a cursor replayed with another order is
 * refused instead of giving wrong pages silently.
 */
export function encodeKeyCursor(order: string, key: string[]): string {
  return Buffer.from(JSON.stringify([order, ...key])).toString('base64url');
}

/** The key texts of a cursor encodeKeyCursor made for `order` and a key of `length`; or a 422. */
export function keyCursor(cursor: string, order: string, length: number): string[] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(value) &&
      value.length === length + 1 &&
      value[0] === order &&
      value.every((v) => typeof v === 'string')
    ) {
      return value.slice(1);
    }
  } catch {
    // (answered below)
  }
  throw notACursor();
}

export function encodeCursor(id: string): string {
  return Buffer.from(id.replaceAll('-', ''), 'hex').toString('base64url');
}

/**
 * A cursor that is a text key (a unique name ordering the list, at most 100 characters), base64url
 * of its UTF-8: 100 four-byte characters are 400 bytes, 536 characters of base64url.
 */
export const textCursorParam = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,536}$/, 'not a cursor this service issued')
  .transform((cursor, ctx) => {
    const key = Buffer.from(cursor, 'base64url').toString('utf8');
    if (encodeTextCursor(key) !== cursor) {
      ctx.addIssue({ code: 'custom', message: 'not a cursor this service issued' });
      return z.NEVER;
    }
    return key;
  });

export const encodeTextCursor = (key: string) => Buffer.from(key, 'utf8').toString('base64url');

/**
 * The query of one page: `select` (columns and table) narrowed by the filters that apply (each
 * "column op ?" with its value; undefined ones are skipped), after the cursor, in id order, one row
 * more than the page so sendPage can tell whether another page follows.
 */
export function pageQuery(
  select: string,
  filters: Filters,
  cursor: string | undefined,
  limit: number,
): pg.QueryConfig {
  const where = whereOf([...filters, cursor !== undefined && (['id > ?', cursor] as const)]);
  const values = [...where.values, limit + 1];
  const clause = where.sql ? `where ${where.sql}` : '';
  return prepared(`${select} ${clause} order by id limit $${values.length}`, values);
}

/** List filters: each "column op ?" with its value; undefined and false ones do not apply. */
export type Filters = Array<readonly [string, unknown] | undefined | false>;

/** The filters that apply, and-ed, with $1, $2, ... for their values. */
export function whereOf(filters: Filters): { sql: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  for (const filter of filters) {
    if (!filter) continue;
    values.push(filter[1]);
    where.push(filter[0].replace('?', `$${values.length}`));
  }
  return { sql: where.join(' and '), values };
}

export const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({
    items: z.array(item),
    nextCursor: z
      .string()
      .nullable()
      .describe('pass as `cursor` for the next page; null on the last'),
  });

/**
 * The query of one page of items PostgreSQL renders as JSON: `from` gives `r` (the row: id,
 * filters) and `x` (the item's members, see resource.ts itemsFrom). It answers limit + 1 rows,
 * each an item's JSON text and its id; the extra row only says that a page follows. Node joins
 * the texts and never parses them. (Joining them in SQL too, with string_agg over a row_number()
 * window, cost PostgreSQL more than it saved Node: bench/RESULTS.md, target 1.)
 */
export function jsonPageQuery(
  from: string,
  filters: Filters,
  cursor: string | undefined,
  limit: number,
): pg.QueryConfig {
  const where = whereOf([...filters, cursor !== undefined && (['r.id > ?', cursor] as const)]);
  const values = [...where.values, limit + 1];
  return prepared(
    `select row_to_json(x)::text as json, r.id
       from ${from} ${where.sql ? `where ${where.sql}` : ''}
      order by r.id limit $${values.length}`,
    values,
  );
}

/**
 * jsonPageQuery in another order: by `key` (SQL expressions over the rows, never null, the last
 * making it unique, each with its SQL type), ascending or descending, after the key of the last
 * row shown (its texts, as keyCursor gives them back; cast to the types, a text that is not one is
 * a 22xxx the problem mapping answers). Each row also answers its key as texts, for the next
 * cursor (encodeKeyCursor).
 */
export function keysetPageQuery(
  from: string,
  filters: Filters,
  key: Array<{ sql: string; type: string }>,
  order: { descending: boolean; after?: string[] | undefined },
  limit: number,
): pg.QueryConfig {
  const where = whereOf(filters);
  const values = [...where.values];
  const conditions = where.sql ? [where.sql] : [];
  const columns = key.map((k) => k.sql).join(', ');
  if (order.after) {
    const first = values.length + 1;
    values.push(...order.after);
    const after = key.map((k, i) => `$${first + i}::${k.type}`).join(', ');
    conditions.push(`(${columns}) ${order.descending ? '<' : '>'} (${after})`);
  }
  values.push(limit + 1);
  const direction = order.descending ? 'desc' : 'asc';
  return prepared(
    `select row_to_json(x)::text as json, array[${key.map((k) => `(${k.sql})::text`).join(', ')}] as key
       from ${from} ${conditions.length ? `where ${conditions.join(' and ')}` : ''}
      order by ${key.map((k) => `${k.sql} ${direction}`).join(', ')} limit $${values.length}`,
    values,
  );
}

/** A row of jsonPageQuery (or of any query answering items as PostgreSQL-rendered JSON). */
export interface JsonItem {
  json: string;
  id: string;
}

/**
 * Answers a page PostgreSQL rendered, forwarding the items' text: `rows` were fetched with
 * limit + 1, and the next page starts after the last row shown (its cursor: `cursorOf` that row;
 * jsonPageQuery's rows by `(row) => encodeCursor(row.id)`).
 */
export function sendJsonPage<T extends { json: string }>(
  req: Request,
  res: Response,
  rows: T[],
  limit: number,
  cursorOf: (row: T) => string,
): void {
  const items = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? cursorOf(items.at(-1)!) : null;
  writePage(req, res, items.map((item) => item.json).join(','), nextCursor);
}

/**
 * Answers one page: `rows` were fetched with limit + 1, so an extra row means there is a next
 * page, which starts after the last row shown (its cursor: the encoded id, unless `cursorOf` says
 * otherwise).
 */
export function sendPage<T extends object>(
  req: Request,
  res: Response,
  rows: T[],
  limit: number,
  cursorOf: (row: T) => string = (row) => encodeCursor(String((row as { id: unknown }).id)),
): void {
  const items = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? cursorOf(items.at(-1)!) : null;
  writePage(req, res, items.map((item) => JSON.stringify(item)).join(','), nextCursor);
}

/** {"items": [...], "nextCursor": ...} and, when a page follows, its Link. */
function writePage(req: Request, res: Response, items: string, nextCursor: string | null): void {
  if (nextCursor) {
    const query = new URLSearchParams(req.query as Record<string, string>);
    query.set('cursor', nextCursor);
    res.setHeader('Link', `<${req.baseUrl}${req.path}?${query.toString()}>; rel="next"`);
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.send(`{"items":[${items}],"nextCursor":${JSON.stringify(nextCursor)}}`);
}
