// A REST resource, described once. Each resource file (isos.ts, welds.ts, ...) describes its table,
// its fields with their JSON names and zod types, which fields a client may write and when, its
// list filters, its membership lists (a test package's weldIds) and who may do what; everything
// else is derived here from that description:
//
//   GET    /<path>          keyset pages {items, nextCursor}; limit, cursor, updatedSince and the
//                           resource's filters; unknown parameters 422
//   GET    /<path>/{id}     one item; ETag "<version>", If-None-Match -> 304
//   POST   /<path>          201 with Location and ETag; Idempotency-Key (idempotency.ts)
//   PATCH  /<path>/{id}     JSON merge of the writable fields, lists replaced whole; If-Match
//   DELETE /<path>/{id}     204; If-Match
//
// each route with its OpenAPI operation (Route.doc) and the schemas of its item, page and bodies.
// What a resource refuses beyond the generic answers it says itself (ResourceSpec.problems).
//
// The database decides who may do what: every statement runs as the caller's role and tenant
// (grants, row security, the SQL functions of migrations/), and its refusals become problems
// through the one SQLSTATE table (rest-adapter/http/problem.ts). Examinations are written by SQL
// functions only; their resources supply their own `write` (ndt-records.ts, inspections.ts).
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import { CALENDAR } from '../db/vocabulary.ts';
import {
  badParameter,
  common,
  content,
  header,
  idempotencyKey,
  idParam,
  itemHeaders,
  json,
  page,
  problem,
  queryParameters,
  replayedHeader,
} from './http/operation.ts';
import {
  databaseProblem,
  HttpProblem,
  problemOf,
  problems,
  restNaming,
  zodIssues,
  type ValidationIssue,
} from './http/problem.ts';
import { queryOf, dataBase, type Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import {
  claimIdempotencyKey,
  idempotencyKeyOf,
  storeIdempotentAnswer,
  type IdempotentAnswer,
} from './idempotency.ts';
import {
  cursorParam,
  idCursor,
  listCursorParam,
  encodeKeyCursor,
  keyCursor,
  keysetPageQuery,
  encodeCursor,
  instantParam,
  jsonPageQuery,
  limitParam,
  pageOf,
  sendJsonPage,
  whereOf,
  type JsonItem,
} from './pagination.ts';

/** One column of the resource's table, as a JSON field. */
export interface Field {
  column: string;
  /** The value's type, as read and as written (without null; see `nullable`). */
  type: z.ZodType;
  nullable?: boolean;
  /** SQL reading the value, the row being `r` (default `r.<column>`). */
  read?: string;
  /**
   * 'create': written when the item is created only; 'always': on create and update; 'update': by
   * an update only (the item is made by the service, a weld's repair by its lifecycle).
   */
  write?: 'create' | 'always' | 'update';
  /** Must be given on create (otherwise the database's default applies). */
  required?: boolean;
  /** Offered as a list filter of the same name, matching equal values. */
  filter?: boolean;
}

function utcMilliseconds(sql: string): string {
  return `to_char(${sql} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** Field builders for the common column types (numbers read as float8, dates as text). */
export const column = {
  text: (name: string, max: number, options: Partial<Field> = {}): Field => ({
    column: name,
    type: options.nullable ? z.string().max(max) : z.string().min(1).max(max),
    ...options,
  }),
  number: (name: string, type: z.ZodNumber, options: Partial<Field> = {}): Field => ({
    column: name,
    type,
    read: `r.${name}::float8`,
    ...options,
  }),
  date: (name: string, options: Partial<Field> = {}): Field => ({
    column: name,
    type: calendarDate,
    read: `r.${name}::text`,
    ...options,
  }),
  id: (name: string, options: Partial<Field> = {}): Field => ({
    column: name,
    type: z.uuid(),
    ...options,
  }),
  /** A moment (timestamptz), as JavaScript's Date renders it: UTC, milliseconds. */
  instant: (name: string, options: Partial<Field> = {}): Field => ({
    column: name,
    type: z.iso.datetime(),
    read: utcMilliseconds(`r.${name}`),
    ...options,
  }),
};

/** A length in inches as the tables hold it, numeric(6, 3): 0 to 999.999. */
export const inches = z.number().min(0).max(999.999).describe('inches');

/** A preheat temperature as the tables hold it (a weld's, a repair's, a WPS's minimum): 0 to 1500 °F. */
export const fahrenheit = z.number().int().min(0).max(1500);

/**
 * A calendar date of this domain, YYYY-MM-DD from 1900-01-01 to 2200-12-31: every date column
 * holds the same check (migration 000017), so REST refuses what SQL would, with its words.
 */
export const calendarDate = z.iso
  .date()
  .refine(
    (value) => value >= CALENDAR.first && value <= CALENDAR.last,
    `must be a date from ${CALENDAR.first} to ${CALENDAR.last}`,
  );

/** An ASME IX P-number as the code writes it (QW-422): 1, 5A, 15E. */
/** A pipe schedule (ASME B36.10, B36.19), as the schedule CHECKs of welds and components. */
export const pipeSchedule = z
  .string()
  .regex(
    /^(5S|10S|40S|80S|160S|STD|XS|XXS|[0-9]{1,3})$/,
    'must be a pipe schedule (40, 80, XS, 10S, ...)',
  );

export const pNumber = z
  .string()
  .regex(
    /^[0-9]{1,3}[A-Z]?$/,
    'must be an ASME IX P-number: digits with an optional group letter (1, 5A, 15E)',
  );

/** A true/false query parameter. */
export const booleanParam = z
  .enum(['true', 'false'], { error: 'must be true or false' })
  .transform((value) => value === 'true');

/** A list of ids kept in a link table (a test package's weldIds), replaced as a whole on update. */
export interface Link {
  /** The link table, its column naming the item, and its column naming the member. */
  table: string;
  owner: string;
  member: string;
  /** The member's table, for the check that every id names a row of the caller's tenant. */
  target: string;
  /** What a member is, for messages ("weld"). */
  noun: string;
  description: string;
}

/** A list filter other than an equal field: SQL with one `?` for the parameter's value. */
export interface Filter {
  sql: string;
  type: z.ZodType;
}

/** A write the resource does itself (a SQL function), inside the request's transaction. */
export interface CustomCreate {
  body: z.ZodObject;
  /** Writes and returns the new item's id. */
  write(db: pg.PoolClient, body: Record<string, unknown>): Promise<string>;
}
export interface CustomUpdate {
  body: z.ZodObject;
  /** Writes the change; `expectedVersion` (If-Match) is checked by the write. */
  write(
    db: pg.PoolClient,
    id: string,
    body: Record<string, unknown>,
    expectedVersion: number | null,
  ): Promise<void>;
}

/**
 * The writes of an examination (NDT record, inspection): created by `record(jsonb)` from the
 * create body as it is, corrected by `correct(id, changes jsonb, reason, expected_version)` from
 * the patch body, whose `reason` is required and kept in the examination history.
 */
export function examinationWrites(
  functions: { record: string; correct: string },
  createFields: Record<string, z.ZodType>,
  correctableFields: Record<string, z.ZodType>,
): { create: CustomCreate; update: CustomUpdate } {
  return {
    create: {
      body: z.strictObject(createFields),
      write: async (db, body) => {
        const { rows } = await db.query<{ id: string }>(
          prepared(`select id from ${functions.record}($1::jsonb)`, [JSON.stringify(body)]),
        );
        return rows[0]!.id;
      },
    },
    update: {
      body: z.strictObject({
        reason: z.string().min(1).max(2000).describe('why it is corrected; kept in the history'),
        ...Object.fromEntries(
          Object.entries(correctableFields).map(([name, type]) => [name, type.optional()]),
        ),
      }),
      write: async (db, id, { reason, ...changes }, expectedVersion) => {
        await db.query(
          prepared(`select from ${functions.correct}($1, $2::jsonb, $3, $4)`, [
            id,
            JSON.stringify(changes),
            reason,
            expectedVersion,
          ]),
        );
      },
    },
  };
}

type Refusals = 'conflict' | 'invalid' | 'createInvalid' | 'deleteConflict' | 'deleteInvalid';

export interface ResourceSpec {
  /** The path segment ("test-packages"), the OpenAPI schema name ("TestPackage"), and nouns. */
  path: string;
  schema: string;
  noun: string;
  plural: string;
  table: string;
  description: string;
  fields: Record<string, Field>;
  links?: Record<string, Link & { write?: boolean }>;
  /** Read-only members computed by SQL (the row being `r`), e.g. an NDT record's welds. */
  computed?: Record<string, { read: string; type: z.ZodType }>;
  /**
   * SQL of the entity tag when the answer shows more than the row's version covers (an ISO's
   * weld counts), the row being `r`: "<version>.<more>", so that If-None-Match sees the change
   * while If-Match still names the version (expectedVersion reads the part before the dot).
   */
  tag?: string;
  filters?: Record<string, Filter>;
  /**
   * Orders the list may be asked in (`sort=<name>`, `sort=-<name>` descending), each an SQL
   * expression over the row `r` that is never null, and its SQL type; ties are broken by id.
   * The pages stay keyset pages: the cursor then carries the last item's key and id.
   */
  sorts?: Record<string, { sql: string; type: string }>;
  /** Who may do what, for the documents; an operation without an entry is not offered. */
  access: { create?: string; update?: string; delete?: string };
  /**
   * What its writes refuse beyond the generic answers (resourceRoutes), for the documents: the
   * 409 of POST and PATCH, the 422 of PATCH (`invalid`) and of POST, and those of DELETE.
   */
  problems?: { [answer in Refusals]?: ReturnType<typeof problem> };
  create?: CustomCreate;
  update?: CustomUpdate;
  /**
   * The list as a CSV file (Accept: text/csv or ?format=csv): every item the filters select, no
   * pages, streamed to `out` by `write` (the filters' SQL names the table `r`).
   */
  csv?: {
    fileName: string;
    /** The file, for the documents: its encoding, its columns, their order. */
    description: string;
    write(
      db: pg.PoolClient,
      where: { sql: string; values: unknown[] },
      out: Writable,
    ): Promise<unknown>;
  };
}

export interface Resource extends ResourceSpec {
  item: z.ZodObject;
  page: z.ZodType;
  listQuery: z.ZodObject;
  createBody?: z.ZodObject;
  patchBody?: z.ZodObject;
  /**
   * The item's members as SQL columns named as the contract names them, the row being `r`:
   * `row_to_json` of them is the item's JSON text, built by PostgreSQL (see itemsFrom).
   */
  columns: string;
  /** SQL of the item's entity tag without quotes, the row being `r` (spec.tag or the version). */
  tagSql: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const nullableIf = (type: z.ZodType, nullable?: boolean) => (nullable ? type.nullable() : type);

/** Completes a description: its schemas and its SELECT. */
export function defineResource(spec: ResourceSpec): Resource {
  const fields = Object.entries(spec.fields);
  const links = Object.entries(spec.links ?? {});
  const computed = Object.entries(spec.computed ?? {});

  const item = z
    .object({
      id: z.uuid(),
      ...Object.fromEntries(fields.map(([name, f]) => [name, nullableIf(f.type, f.nullable)])),
      ...Object.fromEntries(
        links.map(([name, l]) => [name, z.array(z.uuid()).describe(l.description)]),
      ),
      ...Object.fromEntries(computed.map(([name, c]) => [name, c.type])),
      version: z.number().int().describe('bumped by every change; the ETag'),
      createdAt: z.iso.datetime(),
      updatedAt: z.iso.datetime(),
    })
    .describe(spec.description);

  const sortNames = Object.keys(spec.sorts ?? {});
  const listQuery = z.strictObject({
    limit: limitParam,
    cursor: (sortNames.length ? listCursorParam : cursorParam).optional(),
    ...(sortNames.length && {
      sort: z
        .enum([...sortNames, ...sortNames.map((name) => `-${name}`)] as [string, ...string[]])
        .optional()
        .describe('the order of the list (- first: descending); by id when not given'),
    }),
    ...(spec.csv && {
      format: z
        .enum(['json', 'csv'])
        .optional()
        .describe('csv: the whole list as one CSV file, as Accept: text/csv asks (no pages)'),
    }),
    updatedSince: instantParam.optional().describe('changed at or after this instant'),
    ...Object.fromEntries(
      fields.filter(([, f]) => f.filter).map(([name, f]) => [name, f.type.optional()]),
    ),
    ...Object.fromEntries(
      Object.entries(spec.filters ?? {}).map(([name, f]) => [name, f.type.optional()]),
    ),
  });

  const memberList = (l: Link) => z.array(z.uuid()).max(5000).describe(l.description);
  const writableLinks = links.filter(([, l]) => l.write);
  const createBody =
    spec.create?.body ??
    (spec.access.create
      ? z.strictObject({
          ...Object.fromEntries(
            fields
              .filter(([, f]) => f.write === 'create' || f.write === 'always')
              .map(([name, f]) => {
                const type = nullableIf(f.type, f.nullable);
                return [name, f.required ? type : type.optional()];
              }),
          ),
          ...Object.fromEntries(writableLinks.map(([name, l]) => [name, memberList(l).optional()])),
        })
      : undefined);
  const patchBody =
    spec.update?.body ??
    (spec.access.update
      ? z.strictObject({
          ...Object.fromEntries(
            fields
              .filter(([, f]) => f.write === 'always' || f.write === 'update')
              .map(([name, f]) => [name, nullableIf(f.type, f.nullable).optional()]),
          ),
          ...Object.fromEntries(writableLinks.map(([name, l]) => [name, memberList(l).optional()])),
        })
      : undefined);

  // PostgreSQL builds the JSON (row_to_json of these columns): Node forwards the text, parsing and
  // stringifying nothing. Timestamps as JavaScript's Date renders them (UTC, milliseconds), as
  // the events' contract_json does (migrations/000010).
  const columns = [
    'r.id',
    ...fields.map(([name, f]) => `${f.read ?? `r.${f.column}`} as "${name}"`),
    ...links.map(
      ([name, l]) =>
        `array(select l.${l.member} from ${l.table} l where l.${l.owner} = r.id order by l.${l.member}) as "${name}"`,
    ),
    ...computed.map(([name, c]) => `${c.read} as "${name}"`),
    'r.version',
    `${utcMilliseconds('r.created_at')} as "createdAt"`,
    `${utcMilliseconds('r.updated_at')} as "updatedAt"`,
  ].join(', ');

  return {
    ...spec,
    item,
    page: pageOf(item),
    listQuery,
    createBody,
    patchBody,
    columns,
    tagSql: spec.tag ?? 'r.version::text',
  };
}

/**
 * The FROM clause that gives items as JSON text: `source` (the table, or a function returning
 * its rows) as `r`, and `x` the item's members, so `row_to_json(x)::text` is the item and
 * `r.id` orders and filters.
 */
export const itemsFrom = (resource: Resource, source = resource.table) =>
  `${source} r cross join lateral (select ${resource.columns}) x`;

/** One item as the contract shows it: its JSON text and its entity tag (unquoted). */
export interface ItemJson {
  json: string;
  tag: string;
}

/** The SQL reading one item as ItemJson, `$1` its id. */
const itemQuery = (resource: Resource) =>
  `select row_to_json(x)::text as json, ${resource.tagSql} as tag from ${itemsFrom(resource)} where r.id = $1`;

/**
 * Entity tags in an If-Match / If-None-Match header ("*" matches any). If-None-Match compares
 * weakly (W/"3" matches "3"); If-Match strongly, so a weak tag there matches nothing (RFC 9110).
 */
export function entityTags(header: string | undefined, weak = true): string[] | undefined {
  return header?.split(',').map((tag) => (weak ? tag.trim().replace(/^W\//, '') : tag.trim()));
}

/**
 * The version an If-Match header asks for: null when absent or "*"; 412 when it can name no
 * version (not one tag this service issued for this kind of item). `tagged` is true for the
 * resources whose tags are "<version>.<more>" (spec.tag); elsewhere only "<version>" was issued.
 */
export function expectedVersion(req: Request, tagged = false): number | null {
  const tags = entityTags(req.get('if-match'), false);
  if (!tags || tags.includes('*')) return null;
  const issued = tagged ? /^"(\d{1,9})(?:\.\d{1,19})?"$/ : /^"(\d{1,9})"$/;
  const versions = tags.map((tag) => issued.exec(tag)?.[1]).filter(Boolean);
  if (versions.length !== 1) {
    throw problemOf('stale-version', {
      detail: 'If-Match must be one entity tag this service issued for this item.',
    });
  }
  return Number(versions[0]);
}

export const stale = (version: number) =>
  problemOf('stale-version', {
    detail: `It has changed since that version (now at ${version}); read it again.`,
    extensions: { version },
  });

/** The id of the path; anything that is not a UUID names nothing: 404. */
export function pathId(req: Request, noun: string): string {
  const id = req.params.id;
  if (typeof id !== 'string' || !UUID.test(id)) throw problems.notFound(`No such ${noun}.`);
  return id.toLowerCase();
}

export function sendItem(res: Response, item: { version: number }, status = 200): void {
  res.setHeader('ETag', `"${item.version}"`);
  res.setHeader('Cache-Control', 'private, no-cache');
  res.status(status).json(item);
}

/** Sends an item PostgreSQL rendered (ItemJson), as it is. */
export function sendItemJson(res: Response, item: ItemJson, status = 200): void {
  res.setHeader('ETag', `"${item.tag}"`);
  res.setHeader('Cache-Control', 'private, no-cache');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.status(status).send(item.json);
}

/** Reads one item as ItemJson (undefined when the caller's tenant has no such row). */
export async function readItemJson(
  db: pg.PoolClient,
  resource: Resource,
  id: string,
): Promise<ItemJson | undefined> {
  const { rows } = await db.query<ItemJson>(prepared(itemQuery(resource), [id]));
  return rows[0];
}

/**
 * Validates a body: known fields a client may not write are named as read-only (rather than as
 * unknown), then the body's own schema decides.
 */
function parseBody(
  resource: Resource,
  schema: z.ZodObject,
  body: unknown,
): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw problems.validation([{ pointer: '', detail: 'must be a JSON object' }]);
  }
  const known = new Set([
    'id',
    'version',
    'createdAt',
    'updatedAt',
    ...Object.keys(resource.fields),
    ...Object.keys(resource.links ?? {}),
    ...Object.keys(resource.computed ?? {}),
  ]);
  const readOnly: ValidationIssue[] = [];
  // No prototype: a key named __proto__ stays a key (refused as unknown), never a prototype.
  const rest: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(body)) {
    if (known.has(key) && !(key in schema.shape)) {
      readOnly.push({ pointer: `/${key}`, detail: 'is read-only here' });
    } else rest[key] = value;
  }
  const parsed = schema.safeParse(rest);
  const issues = [...readOnly, ...(parsed.success ? [] : zodIssues(parsed.error))];
  if (issues.length) throw problems.validation(issues);
  return parsed.data!;
}

/** Refuses member ids that name no row of the caller's tenant, naming each by its index. */
async function checkMembers(
  db: pg.PoolClient,
  name: string,
  link: Link,
  ids: string[],
): Promise<void> {
  const { rows } = await db.query<{ i: number }>(
    prepared(
      `select x.i::int - 1 as i from unnest($1::uuid[]) with ordinality x(id, i)
        where not exists (select from ${link.target} t where t.id = x.id) order by x.i`,
      [ids],
    ),
  );
  const duplicates = ids.flatMap((id, i) => (ids.indexOf(id) < i ? [i] : []));
  const issues = [
    ...rows.map(({ i }) => ({ pointer: `/${name}/${i}`, detail: `no such ${link.noun}` })),
    ...duplicates.map((i) => ({ pointer: `/${name}/${i}`, detail: 'is listed twice' })),
  ];
  // The first 20 say enough; a list of thousands of bad ids needs no answer of that size.
  if (issues.length) throw problems.validation(issues.slice(0, 20));
}

/** Makes the link table hold exactly `ids` for the item: removes the others, adds the new. */
async function replaceMembers(
  db: pg.PoolClient,
  name: string,
  link: Link,
  id: string,
  ids: string[],
): Promise<void> {
  await checkMembers(db, name, link, ids);
  await db.query(
    prepared(
      `delete from ${link.table} where ${link.owner} = $1 and ${link.member} <> all($2::uuid[])`,
      [id, ids],
    ),
  );
  await db.query(
    prepared(
      `insert into ${link.table} (${link.owner}, ${link.member})
       select $1, m from unnest($2::uuid[]) m on conflict do nothing`,
      [id, ids],
    ),
  );
}

/** The generic create: the given writable columns, then the membership lists. */
async function insertItem(
  db: pg.PoolClient,
  resource: Resource,
  body: Record<string, unknown>,
): Promise<string> {
  const columns = Object.entries(resource.fields).filter(([name]) => body[name] !== undefined);
  const { rows } = await db.query<{ id: string }>(
    prepared(
      columns.length
        ? `insert into ${resource.table} (${columns.map(([, f]) => f.column).join(', ')})
           values (${columns.map((_, i) => `$${i + 1}`).join(', ')}) returning id`
        : `insert into ${resource.table} default values returning id`,
      columns.map(([name]) => body[name]),
    ),
  );
  const id = rows[0]!.id;
  for (const [name, link] of Object.entries(resource.links ?? {})) {
    const ids = body[name] as string[] | undefined;
    if (ids?.length) await replaceMembers(db, name, link, id, ids);
  }
  return id;
}

/** The generic update: locks the row, checks If-Match, sets the given columns, replaces lists. */
async function updateItem(
  db: pg.PoolClient,
  resource: Resource,
  id: string,
  body: Record<string, unknown>,
  expected: number | null,
): Promise<void> {
  const { rows } = await db.query<{ version: number }>(
    prepared(`select version from ${resource.table} where id = $1 for update`, [id]),
  );
  const current = rows[0];
  if (!current) throw problems.notFound(`No such ${resource.noun}.`);
  if (expected !== null && expected !== current.version) throw stale(current.version);
  const columns = Object.entries(resource.fields).filter(([name]) => body[name] !== undefined);
  if (columns.length) {
    await db.query(
      prepared(
        `update ${resource.table} set ${columns.map(([, f], i) => `${f.column} = $${i + 2}`).join(', ')}
          where id = $1`,
        [id, ...columns.map(([name]) => body[name])],
      ),
    );
  }
  for (const [name, link] of Object.entries(resource.links ?? {})) {
    const ids = body[name] as string[] | undefined;
    if (ids !== undefined) await replaceMembers(db, name, link, id, ids);
  }
}

/** Runs a handler's database work, naming fields in the database's refusals from the catalog. */
export async function inDatabase<T>(
  pool: pg.Pool,
  req: Request,
  work: (db: pg.PoolClient) => Promise<T>,
): Promise<T> {
  try {
    return await withContext(pool, callerContext(req), work);
  } catch (error) {
    if (error instanceof HttpProblem) throw error;
    throw databaseProblem(error, await restNaming(pool)) ?? error;
  }
}

/** ?format=csv, or no format and an Accept that prefers text/csv to JSON. */
export function wantsCsv(req: Request, format: unknown): boolean {
  if (format !== undefined) return format === 'csv';
  return req.accepts(['application/json', 'text/csv']) === 'text/csv';
}

/**
 * Streams the CSV. An export has no pages and an order of its own, so limit, cursor and sort are
 * refused rather than ignored.
 * Once the first bytes are out, a failure can no longer be a problem document: the connection is
 * cut (problemHandler), so the client sees a broken transfer, not a short file that looks whole.
 */
async function sendCsv(
  req: Request,
  res: Response,
  pool: pg.Pool,
  csv: NonNullable<ResourceSpec['csv']>,
  where: { sql: string; values: unknown[] },
): Promise<void> {
  const paged = ['limit', 'cursor', 'sort'].filter((name) => req.query[name] !== undefined);
  if (paged.length) {
    throw problems.validation(
      paged.map((parameter) => ({
        parameter,
        detail: 'does not apply to a CSV export (no pages, its own order)',
      })),
    );
  }
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${csv.fileName}"`);
  res.setHeader('Cache-Control', 'private, no-cache');
  await inDatabase(pool, req, (db) => csv.write(db, where, res)); // (problemHandler cuts it)
  res.end();
}

/**
 * The 201 of a create, the new item read back in its transaction: its JSON, Location and ETag,
 * stored under the request's Idempotency-Key when it sent one (claimed before the write).
 * Location is stored without /api: a replay answers under the base it was asked at (sendCreated).
 */
export async function createdAnswer(
  db: pg.PoolClient,
  resource: Resource,
  id: string,
  key: string | undefined,
): Promise<IdempotentAnswer> {
  const item = (await readItemJson(db, resource, id))!;
  const created = {
    status: 201,
    body: JSON.parse(item.json) as unknown,
    headers: { Location: `/${resource.path}/${id}`, ETag: `"${item.tag}"` },
    replayed: false,
  };
  if (key !== undefined) await storeIdempotentAnswer(db, key, created);
  return created;
}

/** Sends a create's answer, fresh or replayed, under the base it was asked at. */
export function sendCreated(req: Request, res: Response, answer: IdempotentAnswer): void {
  for (const [name, value] of Object.entries(answer.headers)) {
    res.setHeader(name, name === 'Location' ? `${dataBase(req)}${value}` : value);
  }
  if (answer.replayed) res.setHeader('Idempotent-Replayed', 'true');
  res.setHeader('Cache-Control', 'private, no-cache');
  res.status(answer.status).json(answer.body);
}

/** The sentences of the generic refusals, which a resource's own (ResourceSpec.problems) reuse. */
export const refusal = {
  taken: 'a unique key is taken (/problems/conflict, naming the field)',
  invalid: 'a bad or read-only field, or a reference to no record of your tenant, named in errors',
  referenced: 'still referenced (/problems/still-referenced)',
  keyReused: 'the Idempotency-Key was used for another request (/problems/idempotency-key-reused)',
};

/** The routes of a resource (served at /x and /api/x: server/app.ts mounts them at both). */
export function resourceRoutes(resource: Resource, pool: pg.Pool): Route[] {
  const { schema, noun, access, csv } = resource;
  const base = `/${resource.path}`;
  // The answers its operations share, and what its writes refuse (the resource's own first).
  const own = resource.problems ?? {};
  const forbidden = problem('your role may not do this (or the CSRF check failed)');
  const conflict =
    own.conflict ??
    problem(
      `${refusal.taken}, or the record's state refuses the change (/problems/state-conflict)`,
    );
  const ifMatch = header('If-Match', 'the ETag you read; 412 if it changed since');
  const answer = (description: string) => ({
    description,
    headers: itemHeaders,
    ...content(schema),
  });
  const who = (what: string | undefined) => (what ? ` Who: ${what}.` : '');
  const fieldFilters = Object.entries(resource.fields)
    .filter(([, f]) => f.filter)
    .map(([name, f]) => [name, `r.${f.column} = ?`] as const);
  const otherFilters = Object.entries(resource.filters ?? {}).map(
    ([name, f]) => [name, f.sql] as const,
  );
  const routes: Route[] = [
    {
      method: 'GET',
      path: base,
      doc: {
        summary: `List ${resource.plural}`,
        description: `${resource.description} Filters combine with "and".`,
        parameters: queryParameters(resource.listQuery),
        responses: {
          '200': {
            ...page,
            content: {
              ...content(`${schema}Page`).content,
              ...(csv && {
                'text/csv': {
                  schema: {
                    type: 'string',
                    description:
                      `With Accept: text/csv or format=csv: every ${noun} the filters select, no pages ` +
                      `(limit and cursor are 422), streamed as ${csv.fileName}: ${csv.description}`,
                  },
                },
              }),
            },
          },
          '422': badParameter,
          ...common,
        },
        schemas: { [schema]: json(resource.item), [`${schema}Page`]: json(resource.page) },
      },
      handler: async (req, res) => {
        const q = queryOf(resource.listQuery, req) as Record<string, unknown> & {
          limit: number;
          cursor?: string;
          sort?: string;
        };
        const filters = [
          ['updatedSince', 'r.updated_at >= ?'] as const,
          ...fieldFilters,
          ...otherFilters,
        ].map(([name, sql]) => q[name] !== undefined && ([sql, q[name]] as const));
        if (resource.csv && wantsCsv(req, q.format)) {
          await sendCsv(req, res, pool, resource.csv, whereOf(filters));
          return;
        }
        if (q.sort !== undefined) {
          // By the sort's key, then id: the key a keyset page needs to be unique.
          const key = [resource.sorts![q.sort.replace(/^-/, '')]!, { sql: 'r.id', type: 'uuid' }];
          const after = q.cursor === undefined ? undefined : keyCursor(q.cursor, q.sort, 2);
          const descending = q.sort.startsWith('-');
          const { rows } = await inDatabase(pool, req, (db) =>
            db.query<{ json: string; key: string[] }>(
              keysetPageQuery(itemsFrom(resource), filters, key, { descending, after }, q.limit),
            ),
          );
          sendJsonPage(req, res, rows, q.limit, (row) => encodeKeyCursor(q.sort!, row.key));
          return;
        }
        // (A sortable list takes either cursor as text; the others' is decoded already.)
        const cursor = q.cursor === undefined || !resource.sorts ? q.cursor : idCursor(q.cursor);
        const { rows } = await inDatabase(pool, req, (db) =>
          db.query<JsonItem>(jsonPageQuery(itemsFrom(resource), filters, cursor, q.limit)),
        );
        sendJsonPage(req, res, rows, q.limit, (row) => encodeCursor(row.id));
      },
    },
    {
      method: 'GET',
      path: `${base}/:id`,
      doc: {
        summary: `Read a ${noun}`,
        parameters: [idParam, header('If-None-Match', 'an ETag you hold; 304 if it is current')],
        responses: {
          '200': answer(
            resource.tag
              ? `the ${noun}; ETag is "<version>.<version of what else it shows>" (If-Match checks the version)`
              : `the ${noun}; ETag is its version`,
          ),
          '304': { description: 'not modified (If-None-Match)' },
          ...common,
        },
      },
      handler: async (req, res) => {
        const id = pathId(req, resource.noun);
        const item = await inDatabase(pool, req, (db) => readItemJson(db, resource, id));
        if (!item) throw problems.notFound(`No such ${resource.noun}.`);
        const wanted = entityTags(req.get('if-none-match'));
        if (wanted && (wanted.includes('*') || wanted.includes(`"${item.tag}"`))) {
          res.setHeader('ETag', `"${item.tag}"`);
          res.status(304).end();
          return;
        }
        sendItemJson(res, item);
      },
    },
  ];

  const { createBody, patchBody } = resource;
  if (createBody) {
    routes.push({
      method: 'POST',
      path: base,
      body: true,
      doc: {
        summary: `Create a ${noun}`,
        description:
          `${resource.description}${who(access.create)} With an Idempotency-Key, a retry of the same request ` +
          'within 24 hours answers the first answer again (Idempotent-Replayed: true) without writing.',
        parameters: [idempotencyKey],
        requestBody: { required: true, ...content(`${schema}Create`) },
        responses: {
          '201': {
            ...answer(`the new ${noun}`),
            headers: {
              ...itemHeaders,
              Location: { schema: { type: 'string' }, description: 'its path' },
              ...replayedHeader,
            },
          },
          '403': forbidden,
          '409': conflict,
          '422':
            own.createInvalid ?? problem(`a bad field, named in errors; or ${refusal.keyReused}`),
          ...common,
        },
        schemas: { [`${schema}Create`]: json(createBody, 'input') },
      },
      handler: async (req, res) => {
        const key = idempotencyKeyOf(req);
        const body = parseBody(resource, createBody, req.body ?? {});
        const requestHash = createHash('sha256')
          .update(`POST /${resource.path}\n${JSON.stringify(body)}`)
          .digest('base64url');
        const answer = await inDatabase(pool, req, async (db) => {
          if (key !== undefined) {
            const earlier = await claimIdempotencyKey(db, key, requestHash);
            if (earlier) return earlier;
          }
          const id = resource.create
            ? await resource.create.write(db, body)
            : await insertItem(db, resource, body);
          return createdAnswer(db, resource, id, key);
        });
        sendCreated(req, res, answer);
      },
    });
  }
  if (patchBody) {
    routes.push({
      method: 'PATCH',
      path: `${base}/:id`,
      body: true,
      doc: {
        summary: `Change a ${noun}`,
        description:
          `JSON merge: the fields given are set (null clears a nullable one), the others kept; ` +
          `lists of ids are replaced as a whole.${who(access.update)}`,
        parameters: [idParam, ifMatch],
        requestBody: { required: true, ...content(`${schema}Patch`) },
        responses: {
          '200': answer(`the changed ${noun}`),
          '403': forbidden,
          '409': conflict,
          '412': problem('If-Match is stale; `version` is the current one'),
          '422': own.invalid ?? problem(refusal.invalid),
          ...common,
        },
        schemas: { [`${schema}Patch`]: json(patchBody, 'input') },
      },
      handler: async (req, res) => {
        const id = pathId(req, resource.noun);
        const body = parseBody(resource, patchBody, req.body ?? {});
        const expected = expectedVersion(req, resource.tag !== undefined);
        const item = await inDatabase(pool, req, async (db) => {
          if (resource.update) await resource.update.write(db, id, body, expected);
          else await updateItem(db, resource, id, body, expected);
          return readItemJson(db, resource, id);
        });
        if (!item) throw problems.notFound(`No such ${resource.noun}.`);
        sendItemJson(res, item);
      },
    });
  }
  if (access.delete) {
    routes.push({
      method: 'DELETE',
      path: `${base}/:id`,
      doc: {
        summary: `Delete a ${noun}`,
        description: `Who: ${access.delete}.`,
        parameters: [idParam, ifMatch],
        responses: {
          '204': { description: 'deleted' },
          '403': forbidden,
          '409':
            own.deleteConflict ??
            problem(`${refusal.referenced}, or its state forbids it (/problems/state-conflict)`),
          '412': problem('If-Match is stale'),
          ...(own.deleteInvalid && { '422': own.deleteInvalid }),
          ...common,
        },
      },
      handler: async (req, res) => {
        const id = pathId(req, resource.noun);
        const expected = expectedVersion(req, resource.tag !== undefined);
        await inDatabase(pool, req, async (db) => {
          const { rows } = await db.query<{ version: number }>(
            prepared(`delete from ${resource.table} where id = $1 returning version`, [id]),
          );
          const deleted = rows[0];
          if (!deleted) throw problems.notFound(`No such ${resource.noun}.`);
          // The delete rolls back with the transaction when If-Match names another version.
          if (expected !== null && expected !== deleted.version) throw stale(deleted.version);
        });
        res.status(204).end();
      },
    });
  }
  return routes;
}
