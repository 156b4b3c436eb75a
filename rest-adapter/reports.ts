// The reports (F17): GET /reports/<name>, one per view of the weld_reports schema, which is also
// what GraphQL (weldReports...) and the reporting logins read, so the three give the same numbers.
// Each answers keyset pages of its rows in the view's key order (JSON), or every row it selects
// as one CSV file (Accept: text/csv or ?format=csv). What each row means is written once, in the
// view's SQL comments (migrations/fixtures/views/weld_reports.*.sql); the fields below say it
// again in a sentence each for the API document.
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { withContext } from '../db/database.ts';
import { copyCsvTo } from '../db/weld-register.ts';
import {
  badParameter,
  common,
  content,
  json,
  page,
  problem,
  queryParameters,
} from './http/operation.ts';
import { inFlightOf } from './http/in-flight.ts';
import { problemOf, problems } from './http/problem.ts';
import { queryOf, type Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import {
  encodeKeyCursor,
  keyCursor,
  keysetPageQuery,
  limitParam,
  listCursorParam,
  pageOf,
  sendJsonPage,
  whereOf,
  type Filters,
} from './pagination.ts';
import { wantsCsv } from './resource.ts';

interface Report {
  /** The path's last segment and the view's name (welder-performance: welder_performance). */
  name: string;
  schema: string;
  summary: string;
  description: string;
  /** The row, camelCase; each member is the view's snake_case column. */
  row: z.ZodObject;
  /** The members the rows are ordered and paged by (a unique key of the view), with SQL types. */
  key: Array<[member: string, sqlType: string]>;
  /** Query filters: each member's zod type and its condition over the view `r` (? its value). */
  filters: Record<string, { type: z.ZodType; sql: string }>;
  /** Members whose column is not their snake_case name. */
  columns?: Record<string, string>;
}

/**
 * How long a report's CSV may take, a slow reader included: the reports' rollups answer in tens of
 * milliseconds, so not the register export's 10 minutes (a client could hold connections with it).
 */
const REPORT_FILE_MS = 30_000;

/**
 * Report requests one tenant, and one user, may have in progress on an instance at once: a report
 * over many changed lines or packages runs their rules, seconds on the largest tenants; a tenant's
 * dashboards polling together must not take every connection of the pool, nor one user every
 * place of the tenant.
 */
export const REPORTS_PER_TENANT = 4;
export const REPORTS_PER_USER = 2;

const snake = (member: string) => member.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const date = z.iso.date({ error: 'must be a date (2026-03-01)' });
const count = (what: string) => z.number().int().describe(what);
const percent = (what: string) => z.number().nullable().describe(what);

const REPORTS: Report[] = [
  {
    name: 'welder-performance',
    schema: 'WelderPerformanceRow',
    summary: 'Repair rate per welder and month examined, against the tenant threshold',
    description:
      'Per welder and month: the welds made that month, and the welds first examined that month by a random RT or UT examination of original work (progressive tiers and repair re-shoots are not counted: B31.3 341.3.4), those rejected (however repaired since), and the repair rate by joint and by length (the defects\u2019 length over the length examined) against the tenant\u2019s threshold (tenant settings, 5 % by default) once the minimum sample was examined (10 welds by default). VOIDED welds are left out. Exact at every commit (kept by triggers).',
    row: z.object({
      welderId: z.uuid(),
      welderStamp: z.string(),
      welderName: z.string(),
      month: date.describe(
        'the first day of the month: the month the welds were made (weldsMade), and the month they were first examined (the examinations and rates)',
      ),
      weldsMade: count('welds welded that month, VOIDED ones left out'),
      weldsExamined: count(
        'welds first examined that month by a random RT or UT record of original work: no progressive tier, no repair re-shoot',
      ),
      weldsRejected: count(
        'of those, the welds a record of original work rejected (its result, else its film\u2019s)',
      ),
      repairRatePercent: percent('weldsRejected / weldsExamined x 100; null when none examined'),
      lengthExaminedIn: z.number().describe('circumferences (pi x outside diameter, in.) examined'),
      defectLengthIn: z
        .number()
        .describe(
          'the length of the defects found in the welds rejected (in.), as the NDT records give it',
        ),
      repairRateByLengthPercent: percent(
        'defectLengthIn / lengthExaminedIn x 100; null while a rejection records no defect length',
      ),
      lengthUnknown: count('welds examined whose size is no standard NPS: left out of the lengths'),
      defectLengthUnknown: count(
        'welds rejected whose defect length is not recorded: the rate by length is unknown while any is',
      ),
      thresholdPercent: z.number().describe('the tenant\u2019s repair rate threshold'),
      minimumExamined: count(
        'the fewest welds examined in a month before the rate may be over the threshold (tenant settings)',
      ),
      overThreshold: z
        .boolean()
        .describe(
          'at least minimumExamined welds were examined and repairRatePercent is over thresholdPercent',
        ),
    }),
    key: [
      ['month', 'date'],
      ['welderStamp', 'text'],
    ],
    filters: {
      month: {
        type: date.describe('one month: its first day (or any day of it)'),
        sql: "r.month = date_trunc('month', ?::date::timestamp)::date",
      },
      monthFrom: {
        type: date.describe('months from this one on'),
        sql: "r.month >= date_trunc('month', ?::date::timestamp)::date",
      },
      monthTo: {
        type: date.describe('months up to this one'),
        sql: "r.month <= date_trunc('month', ?::date::timestamp)::date",
      },
      welderStamp: { type: z.string().max(100), sql: 'r.welder_stamp = ?' },
      overThreshold: { type: z.enum(['true', 'false']), sql: 'r.over_threshold = ?::boolean' },
    },
  },
  {
    name: 'weld-progress',
    schema: 'WeldProgressRow',
    summary: 'Welds made and accepted per ISO and week (S-curve data)',
    description:
      'Per ISO and week (weeks start on Monday): the welds welded that week and the welds that became ACCEPTED that week (their last move to ACCEPTED; a weld that came in accepted, the week it was created), with the ISO\u2019s line and area. Summed over the weeks, accepted is the ISO\u2019s accepted count now. VOIDED welds are left out. Exact at every commit.',
    row: z.object({
      area: z.string().nullable(),
      lineNumber: z.string().nullable(),
      isoId: z.uuid(),
      isoNumber: z.string(),
      week: date.describe('the Monday of the week'),
      welded: count('welds welded that week'),
      accepted: count('welds that became ACCEPTED that week'),
    }),
    key: [
      ['isoNumber', 'text'],
      ['week', 'date'],
    ],
    filters: {
      area: { type: z.string().max(100), sql: 'r.area = ?' },
      lineNumber: { type: z.string().max(100), sql: 'r.line_number = ?' },
      isoNumber: { type: z.string().max(100), sql: 'r.iso_number = ?' },
      weekFrom: {
        type: date.describe('weeks from the one of this day on'),
        sql: 'r.week > ?::date - 7',
      },
      weekTo: { type: date.describe('weeks up to this day'), sql: 'r.week <= ?::date' },
    },
  },
  {
    name: 'examination-progress',
    schema: 'ExaminationProgressRow',
    summary: 'Random examination per designated lot and method (B31.3 341.4.1)',
    description:
      'Per designated lot and NDT method: the welds that can be sampled, the welders, what the percent requires (each welder represented), drawn, examined, accepted, the shortfall, open progressive selections and the welders not yet represented: what an auditor checks against B31.3 341.4.1. Kept per line and exact at every read: a line written to since the last refresh (each second) is computed when read.',
    row: z.object({
      method: z.string(),
      lot: z.string().describe('the lot key: the line, or line and welder stamp'),
      lotName: z.string(),
      percent: z.number(),
      candidates: count('welds of the lot that can be sampled for the method'),
      welders: count('welders of those welds'),
      required: count('ceil(percent x candidates / 100), each welder represented'),
      drawn: count('selections of every tier'),
      examined: count('drawn welds examined by a method that closes the selection'),
      accepted: count('examined welds the latest such examination accepted'),
      shortfall: count('selections still owed'),
      progressiveOpen: count('progressive selections (B31.3 341.3.4) not yet examined'),
      weldersNotCovered: z.array(z.string()).describe('stamps with no weld drawn'),
    }),
    key: [
      ['method', 'text'],
      ['lot', 'text'],
    ],
    filters: {
      method: { type: z.enum(['RT', 'UT', 'MT', 'PT', 'VT']), sql: 'r.method = ?' },
      lot: { type: z.string().max(210), sql: 'r.lot = ?' },
      shortfallOnly: {
        type: z.enum(['true', 'false']).describe('true: only the lots that still owe selections'),
        sql: '(r.shortfall > 0) = ?::boolean',
      },
    },
  },
  {
    name: 'test-package-board',
    schema: 'TestPackageBoardRow',
    summary: 'Every test package: state, readiness reasons counted, welds accepted of total',
    description:
      'Per test package: its state, ready or not, the count of each readiness reason (GET /test-packages/{id}/readiness lists them), its welds (VOIDED ones left out) and how many are ACCEPTED. Kept per package and exact at every read: a package written to since the last refresh (each second) is computed when read, at the cost of its readiness.',
    row: z.object({
      testPackageId: z.uuid(),
      packageNumber: z.string(),
      testMedium: z.string(),
      state: z.string(),
      ready: z.boolean(),
      reasons: count('reasons it is not ready'),
      reasonsByCode: z.record(z.string(), z.number()).describe('those reasons counted by code'),
      welds: count('its welds (its own and its ISOs\u2019), VOIDED ones left out'),
      weldsAccepted: count('of those, ACCEPTED'),
    }),
    key: [['packageNumber', 'text']],
    filters: {
      state: { type: z.enum(['open', 'released', 'tested', 'closed']), sql: 'r.state = ?' },
      ready: { type: z.enum(['true', 'false']), sql: 'r.ready = ?::boolean' },
    },
  },
  {
    name: 'examination-backlog',
    schema: 'ExaminationBacklogRow',
    summary: 'Selections drawn and not yet examined, per method and age',
    description:
      'Per NDT method: the selections drawn and not yet examined, the progressive ones (B31.3 341.3.4) among them, by age in days since drawn (UTC), and when the oldest was drawn.',
    row: z.object({
      method: z.string(),
      open: count('selections not yet examined'),
      progressive: count('of those, progressive tiers (1, 2, full)'),
      days0To7: count('drawn 0 to 7 days ago'),
      days8To30: count('8 to 30 days ago'),
      days31To90: count('31 to 90 days ago'),
      daysOver90: count('more than 90 days ago'),
      oldestSelectedAt: z.iso.datetime({ offset: true }).nullable(),
    }),
    columns: {
      days0To7: 'age_0_7_days',
      days8To30: 'age_8_30_days',
      days31To90: 'age_31_90_days',
      daysOver90: 'age_over_90_days',
      oldestSelectedAt: 'oldest_selected_at',
    },
    key: [['method', 'text']],
    filters: {},
  },
  {
    name: 'qualification-expiry',
    schema: 'QualificationExpiryRow',
    summary: 'Welder qualifications that stop within 90 days (expiry or continuity)',
    description:
      'The qualifications of active welders in force today that stop within 90 days, by their expiry date or by continuity (ASME IX QW-322.1(a): no recorded use of the process for the tenant\u2019s continuity months), whichever comes first; soonest first. Kept per welder and day, exact at every read.',
    row: z.object({
      welderId: z.uuid(),
      welderStamp: z.string(),
      welderName: z.string(),
      qualificationId: z.uuid(),
      process: z.string(),
      wpsId: z.uuid().nullable(),
      lastUsedOn: date.nullable().describe('the last recorded use of the process'),
      validUntil: date.describe('the last day it is in force for the process'),
      cause: z.enum(['expiry', 'continuity']),
      daysLeft: count('validUntil minus today'),
      withinDays: z.union([z.literal(30), z.literal(60), z.literal(90)]),
    }),
    key: [
      ['validUntil', 'date'],
      ['welderStamp', 'text'],
      ['qualificationId', 'uuid'],
      ['process', 'text'],
    ],
    filters: {
      withinDays: {
        type: z.enum(['30', '60', '90']).describe('stopping within 30, 60 or 90 days'),
        sql: 'r.within_days <= ?::integer',
      },
      welderStamp: { type: z.string().max(100), sql: 'r.welder_stamp = ?' },
      cause: { type: z.enum(['expiry', 'continuity']), sql: 'r.cause = ?' },
    },
  },
];

function queryOfReport(report: Report) {
  return z.strictObject({
    limit: limitParam,
    cursor: listCursorParam.optional(),
    format: z
      .enum(['json', 'csv'])
      .optional()
      .describe('csv: every row the filters select, as one CSV file (as Accept: text/csv asks)'),
    ...Object.fromEntries(
      Object.entries(report.filters).map(([name, f]) => [name, f.type.optional()]),
    ),
  });
}

/** How many report requests a tenant has in progress on the service of `pool` (for tests). */
export function reportsInFlightOf(pool: pg.Pool, tenantId: string): number {
  return inFlightOf(pool, 'reports').count(tenantId);
}

export function reportRoutes(pool: pg.Pool): Route[] {
  const inFlight = inFlightOf(pool, 'reports');
  const perUser = inFlightOf(pool, 'reports-per-user');
  const tooMany = (scope: 'user' | 'tenant', limit: number) =>
    problemOf('too-many-reports', {
      detail:
        `This ${scope} already has ${limit} report requests in progress, the most allowed at ` +
        'once; ask again when one of them has answered.',
      extensions: { limit, scope },
      headers: { 'Retry-After': '1' },
    });
  return REPORTS.map((report) => {
    const Query = queryOfReport(report);
    const view = `weld_reports.${snake(report.name.replaceAll('-', '_'))}`;
    const members = Object.keys(report.row.shape);
    const column = (m: string) => `r.${report.columns?.[m] ?? snake(m)}`;
    const columns = members.map((m) => `${column(m)} as "${m}"`).join(', ');
    const keySql = report.key.map(([m]) => column(m));
    return {
      method: 'GET',
      path: `/reports/${report.name}`,
      doc: {
        summary: report.summary,
        description: `${report.description} The same rows are the view ${view} (SQL) and its GraphQL connection.`,
        parameters: queryParameters(Query),
        responses: {
          '200': {
            ...page,
            ...content(`${report.schema}Page`),
            content: {
              ...content(`${report.schema}Page`).content,
              'text/csv': { schema: { type: 'string' } },
            },
          },
          '422': badParameter,
          '429': problem(
            `/problems/too-many-reports: this user already has ${REPORTS_PER_USER}, or the tenant ${REPORTS_PER_TENANT}, report requests in progress on this instance; Retry-After`,
          ),
          ...common,
        },
        schemas: { [`${report.schema}Page`]: json(pageOf(report.row)) },
      },
      handler: async (req: Request, res: Response) => {
        const userDone = perUser.take(
          `${req.tenant!.id}:${req.identity!.userId}`,
          REPORTS_PER_USER,
        );
        if (!userDone) throw tooMany('user', REPORTS_PER_USER);
        const done = inFlight.take(req.tenant!.id, REPORTS_PER_TENANT);
        if (!done) {
          userDone();
          throw tooMany('tenant', REPORTS_PER_TENANT);
        }
        try {
          await answer(req, res);
        } finally {
          done();
          userDone();
        }
      },
    };

    async function answer(req: Request, res: Response) {
      const query = queryOf(Query, req) as Record<string, unknown> & {
        limit: number;
        cursor?: string;
        format?: 'json' | 'csv';
      };
      const filters: Filters = Object.entries(report.filters).map(
        ([name, f]) => query[name] !== undefined && ([f.sql, query[name]] as const),
      );
      if (wantsCsv(req, query.format)) {
        if (query.cursor !== undefined || req.query.limit !== undefined) {
          throw problems.validation(
            ['limit', 'cursor']
              .filter((p) => req.query[p] !== undefined)
              .map((parameter) => ({
                parameter,
                detail: 'does not apply to a CSV file (no pages)',
              })),
          );
        }
        const where = whereOf(filters);
        res.setHeader('Content-Type', 'text/csv; charset=utf-8');
        res.setHeader('Content-Disposition', `attachment; filename="${report.name}.csv"`);
        res.setHeader('Cache-Control', 'private, no-cache');
        await withContext(pool, callerContext(req), (db) =>
          copyCsvTo(
            db,
            `select ${csvColumns(members.map((m) => [m, column(m)]))} from ${view} r
                ${where.sql ? `where ${where.sql}` : ''} order by ${keySql.join(', ')}`,
            where.values,
            res,
            REPORT_FILE_MS,
          ),
        );
        res.end();
        return;
      }
      const after =
        query.cursor === undefined
          ? undefined
          : keyCursor(query.cursor, report.name, report.key.length);
      const rows = await withContext(pool, callerContext(req), async (db) => {
        const result = await db.query<{ json: string; key: string[] }>(
          keysetPageQuery(
            `${view} r, lateral (select ${columns}) x`,
            filters,
            report.key.map(([m, type]) => ({ sql: column(m), type })),
            { descending: false, after },
            query.limit,
          ),
        );
        return result.rows;
      });
      sendJsonPage(req, res, rows, query.limit, (row) => encodeKeyCursor(report.name, row.key));
    }
  });
}

/** The CSV's columns: text a spreadsheet would run as a formula gets a leading apostrophe. */
function csvColumns(members: Array<[member: string, column: string]>): string {
  return members
    .map(([m, column]) => {
      return `case when pg_typeof(${column}) = 'text'::regtype then weld_hidden.spreadsheet_text(${column}::text) else ${column}::text end as "${m}"`;
    })
    .join(', ');
}
