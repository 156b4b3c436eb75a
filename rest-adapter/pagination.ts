// Keyset pagination shared by the list endpoints: `limit` (1 to 500, default 50) and an opaque
// `cursor` (the last id of the previous page, base64url), answered as
// {"items": [...], "nextCursor": string | null} and a `Link: <...>; rel="next"` header.
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared } from '../db/database.ts';

export const limitParam = z.coerce.number().int().min(1).max(500).default(50);

export const cursorParam = z
  .string()
  .regex(/^[A-Za-z0-9_-]{22}$/, 'not a cursor this service issued')
  .transform((cursor) => {
    const hex = Buffer.from(cursor, 'base64url').toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  });

export function encodeCursor(id: string): string {
  return Buffer.from(id.replaceAll('-', ''), 'hex').toString('base64url');
}

/**
 * The query of one page: `select` (columns and table) narrowed by the filters that apply (each
 * "column op ?" with its value; undefined ones are skipped), after the cursor, in id order, one row
 * more than the page so sendPage can tell whether another page follows.
 */
export function pageQuery(
  select: string,
  filters: Array<readonly [string, unknown] | undefined | false>,
  cursor: string | undefined,
  limit: number,
): pg.QueryConfig {
  const where: string[] = [];
  const values: unknown[] = [];
  for (const filter of [...filters, cursor !== undefined && (['id > ?', cursor] as const)]) {
    if (!filter) continue;
    values.push(filter[1]);
    where.push(filter[0].replace('?', `$${values.length}`));
  }
  values.push(limit + 1);
  const clause = where.length ? `where ${where.join(' and ')}` : '';
  return prepared(`${select} ${clause} order by id limit $${values.length}`, values);
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
 * Answers one page: `rows` were fetched with limit + 1, so an extra row means there is a next
 * page, which starts after the last row shown.
 */
export function sendPage<T extends { id: string }>(
  req: Request,
  res: Response,
  rows: T[],
  limit: number,
): void {
  const items = rows.slice(0, limit);
  const nextCursor = rows.length > limit ? encodeCursor(items.at(-1)!.id) : null;
  if (nextCursor) {
    const query = new URLSearchParams(req.query as Record<string, string>);
    query.set('cursor', nextCursor);
    res.setHeader('Link', `<${req.baseUrl}${req.path}?${query.toString()}>; rel="next"`);
  }
  res.json({ items, nextCursor });
}
