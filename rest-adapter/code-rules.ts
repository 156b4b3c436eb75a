// The code rules of migration 000009 over REST (issue F7). The rules themselves live in SQL (the
// examination rules, the range rules, the tenant's settings and the functions that read them);
// these routes run those functions as the caller and shape their answers:
//
//   POST /examination-selections/draw          draw the random examination sample of a line or
//                                              an ISO for one method (inspector and above)
//   GET  /examination-selections               the selections, keyset pages by (selectedAt, id)
//   GET  /examination-selections/{id}          one selection
//   GET  /isos/{id}/examination                what the ISO's lots require, per method
//   GET  /welders/{id}/qualification-status    the welder's qualifications on a date, per process
//   GET  /welders/{id}/continuity              the welder's uses of each process (QW-322.1(a))
//   POST /welders/{id}/continuity              a documented use (inspector and above)
//   GET  /welds/{id}/checks                    what is wrong with a weld (data, WPS, welder, repair)
//   GET  /wps/{id}/checks                      what keeps a WPS from being qualified by its PQRs
//   GET  /test-packages/{id}/readiness         why a test package may not be released yet
//   POST /test-packages/{id}/withdraw          a released package back to open, with a reason
//
// Counted and progressive selections are made by SQL inside POST /ndt-records and POST
// /inspections (visual) when an examination covers a weld of a lot; they show up here. Releasing,
// testing or closing a package that is not ready, a change that would leave a released one not
// ready, a WPS approved without what qualifies it and, where the tenant refuses them, welds
// failing the checks are refused by SQL (WD009 to WD013: rest-adapter/http/problem.ts).
//
// Dates are YYYY-MM-DD text and numerics float8, as in resource.ts; each answer is built in one
// statement, so a list and its verdict (readiness: `ready` is "no reasons") come from one snapshot.
import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import {
  CONTINUITY_SOURCES,
  EXAMINATION_LOTS,
  NDT_METHODS,
  QUALIFICATION_STATES,
  READINESS_CODES,
  SELECTION_STATES,
  SELECTION_TIERS,
  TEST_PACKAGE_STATES,
  WELD_CHECK_CODES,
  WELDING_PROCESSES,
} from '../db/vocabulary.ts';
import { problems, zodIssues } from './http/problem.ts';
import type { Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import { claimIdempotencyKey, idempotencyKeyOf, storeIdempotentAnswer } from './idempotency.ts';
import {
  cursorParam,
  encodeTextCursor,
  limitParam,
  pageOf,
  sendPage,
  textCursorParam,
} from './pagination.ts';
import {
  calendarDate,
  expectedVersion,
  itemsFrom,
  pathId,
  sendItemJson,
  type ItemJson,
} from './resource.ts';
import { testPackages } from './test-packages.ts';

/** A row of the continuity log as read, with the welder (to tell 404 from an empty log). */
interface ContinuityRow {
  welder: string;
  usedOn: string | null;
  key: string;
  [field: string]: unknown;
}

/** The largest seed: the largest integer JSON numbers carry exactly (2^53 - 1). */
export const MAX_SEED = Number.MAX_SAFE_INTEGER;

//------------------------------------------------------------------------------------------------
// Examination selections

export const ExaminationSelection = z
  .object({
    id: z.uuid(),
    weldId: z.uuid(),
    isoId: z.uuid().describe("the weld's ISO"),
    welderId: z.uuid().nullable().describe("the weld's welder; null: not known yet"),
    lineNumber: z.string().describe("the line of the weld's ISO"),
    method: z.enum(NDT_METHODS),
    tier: z
      .enum(SELECTION_TIERS)
      .describe(
        "random: the sample a draw took; examined: counted toward the lot because an examination that meets it already covered the weld; 1: two more of the same welder's welds in the lot after a random or examined one was rejected; 2: two more after a tier 1 was rejected; full: every remaining weld of that welder in the lot after a tier 2 was rejected",
      ),
    seed: z
      .number()
      .int()
      .min(0)
      .max(MAX_SEED)
      .nullable()
      .describe(
        "the draw's seed (progressive tiers: the seed of the selection that caused them); null for examined selections and the tiers they cause",
      ),
    reason: z.string().describe('why it was selected, in words'),
    causeSelectionId: z
      .uuid()
      .nullable()
      .describe('progressive tiers: the selection whose rejection caused this one'),
    causeNdtRecordId: z
      .uuid()
      .nullable()
      .describe('progressive tiers: the NDT record that rejected it'),
    causeInspectionId: z
      .uuid()
      .nullable()
      .describe('progressive VT tiers: the visual inspection that rejected it'),
    ndtRecordId: z
      .uuid()
      .nullable()
      .describe(
        'the NDT record that met the selection (the earliest examination that meets it); null while open, or when a visual inspection met it',
      ),
    inspectionId: z
      .uuid()
      .nullable()
      .describe('the visual inspection that met a VT selection; null otherwise'),
    state: z
      .enum(SELECTION_STATES)
      .describe(
        'open until an examination that meets it covers the weld (its method, or one that stands for it: UT for RT where the tenant has them interchangeable, PT for MT, a visual inspection for VT), dated on or after the weld was welded, whatever its result; then done',
      ),
    selectedBy: z.uuid().nullable().describe('the user who drew it, or whose NDT record caused it'),
    selectedAt: z.iso.datetime(),
  })
  .describe(
    'A weld selected for examination by one NDT method; a weld is selected once per method.',
  );

export const ExaminationSelectionPage = pageOf(ExaminationSelection);

export const ExaminationSelectionQuery = z.strictObject({
  limit: limitParam,
  cursor: cursorParam.optional().describe('nextCursor of the previous page'),
  state: z.enum(SELECTION_STATES).optional(),
  method: z.enum(NDT_METHODS).optional(),
  tier: z.enum(SELECTION_TIERS).optional(),
  isoId: z.uuid().optional().describe("selections of this ISO's welds"),
  welderId: z.uuid().optional().describe("selections of this welder's welds"),
  weldId: z.uuid().optional(),
  lineNumber: z.string().min(1).max(100).optional().describe('selections of welds on this line'),
});

export const DrawBody = z.strictObject({
  method: z.enum(NDT_METHODS).describe('the NDT method the sample is for (RT, ...)'),
  lineNumber: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .describe("draw for the lots of this line's welds (exactly one of lineNumber and isoId)"),
  isoId: z
    .uuid()
    .optional()
    .describe("draw for the lots of this ISO's welds (exactly one of lineNumber and isoId)"),
  seed: z
    .number()
    .int()
    .min(0)
    .max(MAX_SEED)
    .optional()
    .describe(
      'ranks the candidates (md5 of seed and weld id), so the same seed on the same welds selects the same welds; a random one when omitted',
    ),
});

export const DrawResult = z.object({
  method: z.enum(NDT_METHODS),
  seed: z.number().int().min(0).max(MAX_SEED).describe('the seed used (given, or drawn)'),
  selections: z
    .array(ExaminationSelection)
    .describe('the selections this draw made; empty when no lot was short'),
});

/**
 * Selections as JSON (the shape the events carry too, weld_hidden.examination_selection_json),
 * the selection being `s`, its weld `w` and the weld's ISO `i` (the filters read them).
 */
const SELECTION_FROM = `
  select s.id, weld_hidden.examination_selection_json(s) as selection
    from weld_public.examination_selections s
    join weld_public.welds w on w.tenant_id = s.tenant_id and w.id = s.weld_id
    join weld_public.isos i on i.tenant_id = w.tenant_id and i.id = w.iso_id`;

/** The list's filters, each SQL with one `?`. */
const SELECTION_FILTERS = {
  state: "weld_hidden.examination_selection_json(s) ->> 'state' = ?",
  method: 's.method = ?',
  tier: 's.tier = ?',
  isoId: 'w.iso_id = ?::uuid',
  welderId: 'w.welder_id = ?::uuid',
  weldId: 's.weld_id = ?::uuid',
  lineNumber: 'i.line_number = ?',
} as const;

/**
 * A page of selections in the order they became visible (their position: the id of the event
 * that announced them, commit order within the tenant), so a reader holding a cursor misses no
 * selection that committed after it read. The cursor is the last row's id: the page starts after
 * that row's place, which the statement reads (an unknown id, or one the caller may not see,
 * starts nowhere: an empty page).
 */
function selectionPage(query: z.infer<typeof ExaminationSelectionQuery>): pg.QueryConfig {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    where.push(sql.replace('?', `$${values.length}`));
  };
  for (const [name, sql] of Object.entries(SELECTION_FILTERS)) {
    const value = query[name as keyof typeof SELECTION_FILTERS];
    if (value !== undefined) add(sql, value);
  }
  if (query.cursor !== undefined) {
    add(
      `(coalesce(s.position, 0), s.id) > (select coalesce(c.position, 0), c.id
                                            from weld_public.examination_selections c where c.id = ?::uuid)`,
      query.cursor,
    );
  }
  values.push(query.limit + 1);
  const clause = where.length ? `where ${where.join(' and ')}` : '';
  return prepared(
    `${SELECTION_FROM} ${clause} order by coalesce(s.position, 0), s.id limit $${values.length}`,
    values,
  );
}

/** A seed for a draw that gave none: uniform over 0 .. 2^53 - 1. */
const randomSeed = () => Number(BigInt.asUintN(53, randomBytes(8).readBigUInt64BE()));

/** Exactly one of lineNumber and isoId: 422 naming both fields otherwise. */
function checkScope(body: z.infer<typeof DrawBody>): void {
  const given = [body.lineNumber, body.isoId].filter((v) => v !== undefined).length;
  if (given === 1) return;
  const detail =
    given === 0 ? 'lineNumber or isoId is required' : 'give lineNumber or isoId, not both';
  throw problems.validation([
    { pointer: '/lineNumber', detail },
    { pointer: '/isoId', detail },
  ]);
}

//------------------------------------------------------------------------------------------------
// What the rules compute: an ISO's examination, a welder's qualifications, a weld's and a WPS's
// checks, a test package's readiness

export const IsoExamination = z.object({
  isoId: z.uuid(),
  lineNumber: z.string(),
  lotDefinition: z
    .enum(EXAMINATION_LOTS)
    .describe(
      "the tenant's designated lot (B31.3 344.1.3): line, every weld of a line for one method and percent (the default, the code's); line_welder, one welder's welds of a line (stricter)",
    ),
  methods: z.array(
    z.object({
      method: z.enum(NDT_METHODS),
      requiredPercent: z
        .number()
        .min(0)
        .max(100)
        .describe(
          "the highest percent among these lots (a weld's: the tenant's rule for its ISO's fluid service and its type and, for RT, the ISO's rtPercent, whichever is greater); welds at different percents are different lots",
        ),
      welds: z.number().int().describe('candidates in the lots this ISO touches'),
      required: z
        .number()
        .int()
        .describe(
          'per lot ceil(percent x candidates / 100), and at least one weld of each welder in it (every weld at 100%); summed',
        ),
      selected: z.number().int().describe('selections of any tier in those lots'),
      examined: z
        .number()
        .int()
        .describe('of those, done (an examination that meets the method covers the weld)'),
      shortfall: z
        .number()
        .int()
        .describe(
          'per lot the greater of required - selected and the welders not yet represented, summed: what a draw would add',
        ),
      progressiveOpen: z.number().int().describe('open selections of tiers 1, 2 and full'),
      weldersNotCovered: z
        .array(z.uuid())
        .describe('welders whose lot requires a selection and has none'),
    }),
  ),
});

export const QualificationStatusQuery = z.strictObject({
  on: calendarDate
    .optional()
    .describe("the date to judge on, YYYY-MM-DD (default: today's date in UTC)"),
});

export const WelderQualificationStatus = z.object({
  welderId: z.uuid(),
  on: calendarDate.describe('the date judged on'),
  qualifications: z.array(
    z.object({
      qualificationId: z.uuid(),
      process: z
        .enum(WELDING_PROCESSES)
        .describe(
          'one process of the qualification: a qualification of GTAW+SMAW is two entries, each with its own continuity (QW-322.1(a))',
        ),
      wpsId: z.uuid().nullable(),
      state: z
        .enum(QUALIFICATION_STATES)
        .describe(
          'in this order: not_yet_valid before qualifiedOn; revoked on and after revokedOn (QW-322.1(b)); expired after expiresOn; lapsed after continuityUntil; else valid',
        ),
      qualifiedOn: calendarDate,
      expiresOn: calendarDate.nullable(),
      revokedOn: calendarDate.nullable(),
      lastUsedOn: calendarDate
        .nullable()
        .describe(
          'the last use of the process on or before the date: a weld welded with a WPS of that process, a documented use (GET /welders/{id}/continuity), or lastContinuityOn; null: none since qualifiedOn',
        ),
      continuityUntil: calendarDate
        .nullable()
        .describe(
          "QW-322.1(a): the first use of the process followed by no use within the tenant's continuity months (6 by default), plus those months",
        ),
      reasons: z.array(z.string()).describe('why it is in this state, in sentences (at least one)'),
    }),
  ),
});

export const WeldCheck = z.object({
  code: z
    .enum(WELD_CHECK_CODES)
    .describe(
      "DATA_MISSING: welder, WPS, date welded, a base metal's P-number or the WPS's P-numbers missing, and for a groove weld its wall thickness or a size that is no standard NPS (one each); WPS_NOT_APPROVED: its WPS is a draft; WPS_RANGE: a groove weld's outside diameter or thickness outside the WPS; WPS_PNUMBER: its base metals are not the joint its WPS covers (QW-403.11); WPS_RANGE_UNSUPPORTED: its WPS is not qualified by its PQRs (no PQR, a process, the thickness range of QW-451.1, the P-numbers of QW-424.1); WELDER_NOT_QUALIFIED: for a process of the WPS, no qualification of the welder in force on the day it was welded covers it (QW-322, QW-452, QW-303); REEXAMINATION_OPEN: a repair owes a new examination by the method that rejected it (B31.3 341.3.3)",
    ),
  detail: z.string().describe('what exactly, in words'),
});

export const WeldChecks = z.object({
  weldId: z.uuid(),
  ok: z.boolean().describe('no checks fail'),
  checks: z.array(WeldCheck),
});

export const WpsChecks = z.object({
  wpsId: z.uuid(),
  ok: z.boolean().describe('its PQRs qualify it: it may be approved'),
  checks: z.array(WeldCheck),
});

export const ReadinessReason = z.object({
  code: z
    .enum(READINESS_CODES)
    .describe(
      "NO_WELDS; WELD_NOT_ACCEPTED; EXAMINATION_SHORTFALL (isoId: a lot through the ISO has fewer selections than required, or a welder of it is not represented); EXAMINATION_OPEN (weldId: an open random or examined selection); PROGRESSIVE_OPEN (weldId: an open tier 1, 2 or full selection in a lot of the package's welds); and each failing weld check of a package weld (REEXAMINATION_OPEN among them)",
    ),
  weldId: z.uuid().optional(),
  isoId: z.uuid().optional(),
  detail: z.string(),
});

export const TestPackageReadiness = z.object({
  testPackageId: z.uuid(),
  state: z.enum(TEST_PACKAGE_STATES),
  ready: z.boolean().describe('no reasons: it may be released (and, released, tested and closed)'),
  reasons: z.array(ReadinessReason),
});

/**
 * One read of the rules: `sql` finds the row by its id ($1, further values from the query
 * parameters) as `r` and builds the answer from it as JSON; no row (none of the caller's tenant)
 * is 404.
 */
interface Computed {
  path: string;
  noun: string;
  query?: z.ZodObject;
  /** The statement's values after the id, from the parsed query. */
  values?: (query: Record<string, unknown>) => unknown[];
  sql: string;
}

const COMPUTED: Computed[] = [
  {
    path: 'isos/:id/examination',
    noun: 'ISO',
    sql: `
      select json_build_object(
        'isoId', r.id, 'lineNumber', r.line_number,
        'lotDefinition', (select s.examination_lot from weld_public.tenant_settings s),
        'methods', coalesce((
          select json_agg(json_build_object(
                   'method', e.method, 'requiredPercent', e.required_percent::float8,
                   'welds', e.welds, 'required', e.required, 'selected', e.selected,
                   'examined', e.examined, 'shortfall', e.shortfall,
                   'progressiveOpen', e.progressive_open,
                   'weldersNotCovered', coalesce(e.welders_not_covered, '{}'))
                 order by e.ordinality)
            from weld_public.isos_examination(r) with ordinality e), '[]'::json)) as answer
        from weld_public.isos r where r.id = $1`,
  },
  {
    path: 'welders/:id/qualification-status',
    noun: 'welder',
    query: QualificationStatusQuery,
    // Today in UTC, said explicitly, so the answer does not depend on the session's time zone.
    values: (q) => [q.on ?? new Date().toISOString().slice(0, 10)],
    sql: `
      select json_build_object(
        'welderId', r.id, 'on', $2::date::text,
        'qualifications', coalesce((
          select json_agg(json_build_object(
                   'qualificationId', q.qualification_id, 'process', q.process,
                   'wpsId', q.wps_id, 'state', q.state,
                   'qualifiedOn', q.qualified_on::text, 'expiresOn', q.expires_on::text,
                   'revokedOn', q.revoked_on::text, 'lastUsedOn', q.last_used_on::text,
                   'continuityUntil', q.continuity_until::text,
                   'reasons', coalesce(q.reasons, '{}'))
                 order by q.ordinality)
            from weld_public.welders_qualification_status(r, $2::date) with ordinality q),
          '[]'::json)) as answer
        from weld_public.welders r where r.id = $1`,
  },
  {
    path: 'welds/:id/checks',
    noun: 'weld',
    // The checks are computed once; `ok` is whether there are none.
    sql: `
      select json_build_object('weldId', r.id, 'ok', c.list is null,
                               'checks', coalesce(c.list, '[]'::json)) as answer
        from weld_public.welds r
        cross join lateral (
          select json_agg(json_build_object('code', x.code, 'detail', x.detail)
                          order by x.ordinality) as list
            from weld_public.welds_checks(r) with ordinality x) c
       where r.id = $1`,
  },
  {
    path: 'test-packages/:id/readiness',
    noun: 'test package',
    // The reasons are computed once; `ready` is whether there are none. Ids a reason does not
    // name are left out, as in the 409 of a refused release.
    sql: `
      select json_build_object('testPackageId', r.id, 'state', r.state, 'ready', x.list is null,
                               'reasons', coalesce(x.list, '[]'::json)) as answer
        from weld_public.test_packages r
        cross join lateral (
          select json_agg(json_strip_nulls(json_build_object(
                   'code', x.code, 'weldId', x.weld_id, 'isoId', x.iso_id,
                   'detail', coalesce(x.detail, '')))
                 order by x.ordinality) as list
            from weld_public.test_packages_readiness_reasons(r) with ordinality x) x
       where r.id = $1`,
  },
  {
    path: 'wps/:id/checks',
    noun: 'WPS',
    sql: `
      select json_build_object('wpsId', r.id, 'ok', c.list is null,
                               'checks', coalesce(c.list, '[]'::json)) as answer
        from weld_public.wps r
        cross join lateral (
          select json_agg(json_build_object('code', x.code, 'detail', x.detail)
                          order by x.ordinality) as list
            from weld_public.wps_checks(r) with ordinality x) c
       where r.id = $1`,
  },
];

//------------------------------------------------------------------------------------------------
// A welder's continuity log (ASME IX QW-322.1(a))

export const ContinuityUse = z
  .object({
    usedOn: calendarDate,
    process: z.enum(WELDING_PROCESSES),
    source: z
      .enum(CONTINUITY_SOURCES)
      .describe(
        'weld: a weld on record (one entry per process of its WPS); document: a documented use',
      ),
    reference: z.string().describe('the weld (its number, ISO and WPS), or the document given'),
    weldId: z.uuid().nullable(),
    continuityId: z.uuid().nullable().describe('the documented use; null for a weld'),
    recordedBy: z.uuid().nullable().describe('who recorded a documented use'),
  })
  .describe('One use of a welding process by a welder: each extends its qualifications for it.');

export const ContinuityPage = pageOf(ContinuityUse);

/** The log's order and cursor key: newest first, then the entry's own key. */
const CONTINUITY_KEY = `c.source || '/' || c.process || '/' || coalesce(c.weld_id, c.continuity_id)`;
const continuityCursor = textCursorParam.pipe(
  z
    .string()
    .regex(
      /^\d{4}-\d{2}-\d{2}\|(weld|document)\/[A-Z]{3,4}\/[0-9a-f-]{36}$/,
      'not a cursor this service issued',
    )
    .transform((key, ctx) => {
      const [usedOn, entry] = key.split('|') as [string, string];
      // the service issues only real dates: 2026-13-45 is a forged cursor, not a database error
      if (!calendarDate.safeParse(usedOn).success) {
        ctx.addIssue({ code: 'custom', message: 'not a cursor this service issued' });
        return z.NEVER;
      }
      return { usedOn, entry };
    }),
);

export const ContinuityQuery = z.strictObject({
  limit: limitParam,
  cursor: continuityCursor.optional().describe('nextCursor of the previous page'),
  process: z.enum(WELDING_PROCESSES).optional(),
});

export const ContinuityBody = z.strictObject({
  usedOn: calendarDate.describe('the day the welder used the process'),
  process: z.enum(WELDING_PROCESSES),
  reference: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .describe('the document that shows the use: a log, a report number'),
});

//------------------------------------------------------------------------------------------------
// Withdrawing a released test package

export const WithdrawBody = z.strictObject({
  // Judged by the database (as a transition rule's reason is), so a missing, empty or blank reason
  // is one answer: 422 /problems/reason-required, after the role check.
  reason: z
    .string()
    .max(2000)
    .optional()
    .describe(
      'why the release is withdrawn: required; missing, empty or blank is 422 /problems/reason-required',
    ),
});

//------------------------------------------------------------------------------------------------
// Routes

export function codeRuleRoutes(pool: pg.Pool): Route[] {
  return [
    {
      // Before /examination-selections/:id, which would take "draw" for an id.
      method: 'POST',
      path: `/examination-selections/draw`,
      body: true,
      handler: async (req, res) => {
        const key = idempotencyKeyOf(req);
        const body = DrawBody.parse(req.body ?? {});
        checkScope(body);
        const requestHash = createHash('sha256')
          .update(`POST /examination-selections/draw\n${JSON.stringify(body)}`)
          .digest('base64url');
        const seed = body.seed ?? randomSeed();
        const answer = await withContext(pool, callerContext(req), async (db) => {
          if (key !== undefined) {
            const earlier = await claimIdempotencyKey(db, key, requestHash);
            if (earlier) return earlier;
          }
          const drawn = await db.query<{ id: string }>(
            prepared(
              'select d.id from weld_public.draw_examination_selection($1, $2, $3::uuid, $4) d',
              [body.method, body.lineNumber ?? null, body.isoId ?? null, seed],
            ),
          );
          const { rows } = await db.query<{ selection: unknown }>(
            prepared(
              `${SELECTION_FROM} where s.id = any($1::uuid[]) order by s.selected_at, s.tier, s.id`,
              [drawn.rows.map((r) => r.id)],
            ),
          );
          const drew = {
            status: 200,
            body: { method: body.method, seed, selections: rows.map((r) => r.selection) },
            headers: {},
            replayed: false,
          };
          if (key !== undefined) await storeIdempotentAnswer(db, key, drew);
          return drew;
        });
        if (answer.replayed) res.setHeader('Idempotent-Replayed', 'true');
        res.setHeader('Cache-Control', 'private, no-cache');
        res.status(answer.status).json(answer.body);
      },
    },
    {
      method: 'GET',
      path: `/examination-selections`,
      handler: async (req, res) => {
        const parsed = ExaminationSelectionQuery.safeParse(req.query);
        if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ id: string; selection: { id: string } }>(selectionPage(parsed.data)),
        );
        sendPage(
          req,
          res,
          rows.map((r) => r.selection),
          parsed.data.limit,
        );
      },
    },
    {
      method: 'GET',
      path: `/examination-selections/:id`,
      handler: async (req, res) => {
        const id = pathId(req, 'examination selection');
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ selection: unknown }>(prepared(`${SELECTION_FROM} where s.id = $1`, [id])),
        );
        if (!rows[0]) throw problems.notFound('No such examination selection.');
        res.setHeader('Cache-Control', 'private, no-cache');
        res.json(rows[0].selection);
      },
    },
    {
      method: 'GET',
      path: `/welders/:id/continuity`,
      handler: async (req, res) => {
        const id = pathId(req, 'welder');
        const parsed = ContinuityQuery.safeParse(req.query);
        if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
        const { limit, cursor, process } = parsed.data;
        const rows = await withContext(pool, callerContext(req), async (db) => {
          const { rows } = await db.query<ContinuityRow>(
            prepared(
              `select r.id as welder, c.used_on::text as "usedOn", c.process, c.source, c.reference,
                      c.weld_id as "weldId", c.continuity_id as "continuityId",
                      c.recorded_by as "recordedBy", ${CONTINUITY_KEY} as key
                 from weld_public.welders r
                 left join lateral weld_public.welders_continuity(r) c
                   on ($2::text is null or c.process = $2)
                  and ($3::date is null or (c.used_on, ${CONTINUITY_KEY}) < ($3::date, $4::text))
                where r.id = $1
                order by c.used_on desc, key desc
                limit $5`,
              [id, process ?? null, cursor?.usedOn ?? null, cursor?.entry ?? null, limit + 1],
            ),
          );
          if (!rows.length) throw problems.notFound('No such welder.');
          return rows.filter((r) => r.usedOn !== null);
        });
        sendPage(
          req,
          res,
          rows.map(({ welder: _welder, key: _key, ...use }) => use),
          limit,
          // The entry's place in the log, from what it shows: its day, then its key.
          (use) =>
            encodeTextCursor(
              `${String(use.usedOn)}|${String(use.source)}/${String(use.process)}/${String(use.weldId ?? use.continuityId)}`,
            ),
        );
      },
    },
    {
      method: 'POST',
      path: `/welders/:id/continuity`,
      body: true,
      handler: async (req, res) => {
        const id = pathId(req, 'welder');
        const body = ContinuityBody.parse(req.body ?? {});
        const use = await withContext(pool, callerContext(req), async (db) => {
          const welder = await db.query(
            prepared('select from weld_public.welders where id = $1', [id]),
          );
          if (!welder.rowCount) throw problems.notFound('No such welder.');
          const { rows } = await db.query<z.infer<typeof ContinuityUse>>(
            prepared(
              `insert into weld_public.welder_continuity (welder_id, used_on, process, reference)
               values ($1, $2, $3, $4)
               returning used_on::text as "usedOn", process, 'document' as source, reference,
                         null::uuid as "weldId", id as "continuityId", recorded_by as "recordedBy"`,
              [id, body.usedOn, body.process, body.reference],
            ),
          );
          return rows[0];
        });
        res.setHeader('Cache-Control', 'private, no-cache');
        res.status(201).json(use);
      },
    },
    {
      method: 'POST',
      path: `/test-packages/:id/withdraw`,
      body: true,
      handler: async (req, res) => {
        const id = pathId(req, 'test package');
        const body = WithdrawBody.parse(req.body ?? {});
        const version = expectedVersion(req);
        // One statement: the function returns the package, which renders as GET shows it.
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<ItemJson>(
            prepared(
              `select row_to_json(x)::text as json, ${testPackages.tagSql} as tag
                 from ${itemsFrom(testPackages, 'weld_public.withdraw_test_package($1, $2, $3)')}`,
              [id, body.reason ?? null, version],
            ),
          ),
        );
        sendItemJson(res, rows[0]!);
      },
    },
    ...COMPUTED.map((computed): Route => ({
      method: 'GET',
      path: `/${computed.path}`,
      handler: async (req, res) => {
        const id = pathId(req, computed.noun);
        const query = computed.query ?? z.strictObject({});
        const parsed = query.safeParse(req.query);
        if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
        const values = [id, ...(computed.values?.(parsed.data) ?? [])];
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ answer: unknown }>(prepared(computed.sql, values)),
        );
        if (!rows[0]) throw problems.notFound(`No such ${computed.noun}.`);
        res.setHeader('Cache-Control', 'private, no-cache');
        res.json(rows[0].answer);
      },
    })),
  ];
}
