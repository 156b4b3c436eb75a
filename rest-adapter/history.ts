// The append-only histories, each read as keyset pages of its entries, oldest first:
//
//   GET /welds/{id}/history         status changes (weld_status_history): who, when, from, to,
//                                   why, the cause (a user, or the NDT record), and the basis
//                                   an acceptance named
//   GET /ndt-records/{id}/history   changes after the record was created (examination_changes):
//   GET /inspections/{id}/history   what changed, before and after, who, when, and the reason
//   GET /test-packages/{id}/history state changes (test_package_state_changes): who, when, from,
//                                   to, and the reason a withdrawal gave
//
// The cursor is the last entry's id (entries are numbered by the database in the order written).
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import { TEST_PACKAGE_STATES, WELD_STATUSES } from '../db/vocabulary.ts';
import {
  badParameter,
  common,
  content,
  idParam,
  json,
  page,
  queryParameters,
} from './http/operation.ts';
import { camelCase, problems } from './http/problem.ts';
import { queryOf, type Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import { limitParam, sendPage } from './pagination.ts';
import { pathId } from './resource.ts';

export const HistoryQuery = z.strictObject({
  limit: limitParam,
  cursor: z
    .string()
    .regex(/^[0-9]{1,18}$/, 'not a cursor this service issued')
    .optional()
    .describe('nextCursor of the previous page'),
});

const pageOfEntries = (entry: z.ZodObject) =>
  z.object({
    items: z.array(entry),
    nextCursor: z
      .string()
      .nullable()
      .describe('pass as `cursor` for the next page; null on the last'),
  });

/** Who made a change, by name: the display name as it is now (`changedBy` is the key). */
const changedByName = z
  .string()
  .nullable()
  .describe("the user's display name, so a history reads who changed it; null for the system");

/** The user who made a change (`alias`.changed_by), joined for their name. */
const changer = (alias: string) =>
  `left join weld_public.users u on u.tenant_id = ${alias}.tenant_id and u.id = ${alias}.changed_by`;

export const WeldHistoryEntry = z.object({
  id: z.number().int().describe('increases with every change of the tenant'),
  fromStatus: z.enum(WELD_STATUSES),
  toStatus: z.enum(WELD_STATUSES),
  reason: z.string().nullable(),
  changedBy: z.uuid().nullable().describe('the user; null for changes made by the system'),
  changedByName,
  changedAt: z.iso.datetime(),
  repairCycle: z.number().int(),
  cause: z
    .enum(['user', 'ndt', 'system'])
    .describe("what made the change: a user, an NDT record's result, or the system"),
  ndtRecordId: z
    .uuid()
    .nullable()
    .describe(
      "the NDT record whose result caused the change (cause ndt), or that a person's acceptance rests on",
    ),
  inspectionId: z.uuid().nullable().describe('the inspection an acceptance rests on'),
  disposition: z
    .string()
    .nullable()
    .describe("the engineer's documented disposition an acceptance rests on"),
});

export const ExaminationHistoryEntry = z.object({
  id: z.number().int().describe('increases with every change of the tenant'),
  change: z
    .enum([
      'updated',
      'weld_added',
      'weld_removed',
      'weld_updated',
      'film_interval_added',
      'film_interval_updated',
      'film_interval_removed',
      'film_weld_added',
      'film_weld_removed',
    ])
    .describe('what changed'),
  before: z.record(z.string(), z.unknown()).nullable().describe('the values before (camelCase)'),
  after: z.record(z.string(), z.unknown()).nullable().describe('the values after (camelCase)'),
  reason: z
    .string()
    .nullable()
    .describe('why it was changed: the reason given with the correction (at most 2000 characters)'),
  changedBy: z.uuid().nullable(),
  changedByName,
  changedAt: z.iso.datetime(),
});

export const TestPackageHistoryEntry = z.object({
  id: z.number().int().describe('increases with every change of the tenant'),
  fromState: z.enum(TEST_PACKAGE_STATES),
  toState: z.enum(TEST_PACKAGE_STATES),
  reason: z.string().nullable().describe('the reason a withdrawal (released -> open) gave'),
  changedBy: z.uuid().nullable(),
  changedByName,
  changedAt: z.iso.datetime(),
});

export interface History {
  /** The path of the item ("welds"), its noun, and its table (for the 404). */
  path: string;
  noun: string;
  table: string;
  /** The page: its OpenAPI schema's name, and its entries; and what the document says of it. */
  schema: string;
  entry: z.ZodObject;
  summary: string;
  description: string;
  /** The entries: $1 the item's id, $2 the id after which the page starts, $3 the row count. */
  select: string;
}

const HISTORIES: History[] = [
  {
    path: 'welds',
    noun: 'weld',
    table: 'weld_public.welds',
    schema: 'WeldHistoryPage',
    entry: WeldHistoryEntry,
    summary: 'The status changes of a weld, oldest first',
    description:
      'Who changed it, when, from and to which status, why, what caused it (a user, or the NDT record whose result it applied), and what each acceptance rested on (an NDT record, an inspection, or a disposition).',
    select: `select h.id::float8 as id, h.from_status as "fromStatus", h.to_status as "toStatus",
                    h.reason, h.changed_by as "changedBy", u.display_name as "changedByName",
                    h.changed_at as "changedAt", h.repair_cycle as "repairCycle", h.cause,
                    h.ndt_record_id as "ndtRecordId", h.inspection_id as "inspectionId",
                    h.disposition
               from weld_public.weld_status_history h
               ${changer('h')}
              where h.weld_id = $1 and h.id > $2 order by h.id limit $3`,
  },
  {
    path: 'test-packages',
    noun: 'test package',
    table: 'weld_public.test_packages',
    schema: 'TestPackageHistoryPage',
    entry: TestPackageHistoryEntry,
    summary: 'The state changes of a test package, oldest first',
    description:
      'Every move of its state (released, tested, closed, and a withdrawal back to open with its reason): who, when, from and to.',
    select: `select h.id::float8 as id, h.from_state as "fromState", h.to_state as "toState",
                    h.reason, h.changed_by as "changedBy", u.display_name as "changedByName",
                    h.changed_at as "changedAt"
               from weld_public.test_package_state_changes h
               ${changer('h')}
              where h.test_package_id = $1 and h.id > $2 order by h.id limit $3`,
  },
  ...(
    [
      ['ndt-records', 'NDT record', 'weld_public.ndt_records', 'ndt_record'],
      ['inspections', 'inspection', 'weld_public.inspections', 'inspection'],
    ] as const
  ).map(([path, noun, table, subject]) => ({
    path,
    noun,
    table,
    schema: 'ExaminationHistoryPage',
    entry: ExaminationHistoryEntry,
    summary: `The corrections of an ${noun}, oldest first`,
    description:
      'Every change after it was recorded: what changed (its fields, its welds, its film), the values before and after, who, when, and the reason the correction gave.',
    select: `select c.id::float8 as id, c.change, c.before, c.after, c.reason,
                    c.changed_by as "changedBy", u.display_name as "changedByName",
                    c.changed_at as "changedAt"
               from weld_public.examination_changes c
               ${changer('c')}
              where c.subject = '${subject}' and c.record_id = $1 and c.id > $2
              order by c.id limit $3`,
  })),
];

/** The keys of a before/after object as the API spells fields (the database's are columns). */
function camelKeys(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, v]) => [camelCase(key), v]));
}

export function historyRoutes(pool: pg.Pool): Route[] {
  return HISTORIES.map((history) => ({
    method: 'GET',
    path: `/${history.path}/:id/history`,
    doc: {
      summary: history.summary,
      description: history.description,
      parameters: [idParam, ...queryParameters(HistoryQuery)],
      responses: {
        '200': { ...page, ...content(history.schema) },
        '422': badParameter,
        ...common,
      },
      schemas: { [history.schema]: json(pageOfEntries(history.entry)) },
    },
    handler: async (req, res) => {
      const id = pathId(req, history.noun);
      const { limit, cursor } = queryOf(HistoryQuery, req);
      const rows = await withContext(pool, callerContext(req), async (db) => {
        const item = await db.query(prepared(`select from ${history.table} where id = $1`, [id]));
        if (!item.rowCount) throw problems.notFound(`No such ${history.noun}.`);
        const entries = await db.query<{ id: number; before?: unknown; after?: unknown }>(
          prepared(history.select, [id, cursor ?? 0, limit + 1]),
        );
        return entries.rows;
      });
      const entries = rows.map((entry) =>
        'before' in entry
          ? { ...entry, before: camelKeys(entry.before), after: camelKeys(entry.after) }
          : entry,
      );
      sendPage(req, res, entries, limit, (entry) => String(entry.id));
    },
  }));
}
