// The code rules of migration 000009 over REST (issue F7). The rules themselves live in SQL (the
// examination rules, the range rules, the tenant's settings and the functions that read them);
// these routes run those functions as the caller and shape their answers. Each route states its
// contract in its doc: the examination selections and their draw, a welder's continuity log, a
// test package's withdrawal, and what the rules compute of an ISO, a welder, a weld, a WPS and a
// test package (COMPUTED).
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
import {
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
  type Schemas,
} from './http/operation.ts';
import { problems } from './http/problem.ts';
import { queryOf, type Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import { claimIdempotencyKey, idempotencyKeyOf, storeIdempotentAnswer } from './idempotency.ts';
import { placeEvents } from './events.ts';
import { isos } from './isos.ts';
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

/** The 422 of an operation that checks its query. */
const badParameter = { '422': problem('a bad or unknown parameter, named in errors') };
/** The answers of a read of what the rules compute, the answer being the schema `name`. */
const computedAnswers = (name: string) => ({
  '200': { description: 'the answer, computed now', ...content(name) },
  ...badParameter,
  ...common,
});

/** The lots, the candidates and the percent, as the draw and the ISO's examination use them. */
const LOTS =
  'A lot (B31.3 344.1.3) is the welds of one line that one examination extent covers: one method at one percent ' +
  "(the tenant's default, tenant_settings.examination_lot = 'line'), or of one welder too ('line_welder', stricter). " +
  "Its candidates are its welds already welded (weldedOn set), not VOIDED, of a type the rule of their ISO's fluid " +
  "service covers for the method. The tenant's rules (weld_public.examination_rules, by default from B31.3): normal " +
  '5 % RT of BW, MW, TW and 5 % VT of every weld; category_d 100 % VT; category_m 20 % RT of BW, MW, TW, LW, BR and ' +
  '100 % VT; severe_cyclic 100 % RT of BW, MW, TW, BR (a BR not radiographed may have MT or PT instead), 100 % MT or ' +
  "PT of SW and 100 % VT; high_pressure 100 % RT of BW, MW, TW, BR and 100 % VT. For RT an ISO's rtPercent applies " +
  'when greater. RT and UT meet each other (341.4.1(b)(1)) unless tenant_settings.volumetric_interchangeable is off; ' +
  'a visual inspection meets VT. A lot requires ceil(percent x candidates / 100) examined, and at least one weld of ' +
  'each welder in it (every weld at 100 %); selections of every tier count.';

/** How selections of each tier come to be, as the list and the draw describe them. */
const TIERS =
  'Examinations count, and progressive examination is automatic (B31.3 341.3.4): an NDT record (POST /ndt-records, or a ' +
  'correction) or a visual inspection that covers a weld of original work in a lot whose method it meets counts it ' +
  '(tier examined), and when it rejects a weld with a selection it meets, SQL selects in the same transaction, from the same ' +
  'lot and of the same welder: for a random or examined selection two more welds as tier 1; for a tier 1 two more as tier 2; ' +
  'for a tier 2 every remaining weld of that welder as full (a selection causes this once; a weld already repaired causes ' +
  'nothing: a repair owes a re-examination instead, B31.3 341.3.3). Tiers 1 and 2 take welds neither selected for the method ' +
  'nor examined by it. Each names the selection (causeSelectionId) and the record (causeNdtRecordId or causeInspectionId) ' +
  'that caused it, and carries the seed of its cause.';

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
        "the draw's seed (progressive tiers: their cause's); null for a counted (examined) selection and the tiers it causes",
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
    shortfall: z
      .string()
      .nullable()
      .describe(
        'set on a rejected selection whose next progressive tier found fewer welds of the same kind and welder in the lot than it asks for',
      ),
    selectedBy: z.uuid().nullable().describe('the user who drew it, or whose NDT record caused it'),
    selectedAt: z.iso.datetime(),
  })
  .describe(
    'A weld selected for examination by a method: drawn at random (with the seed), counted because an examination already covered it (examined), or drawn by progressive examination (tier 1, 2 or full, with the rejection that caused it); a weld is selected once per method.',
  );

const ExaminationSelectionPage = pageOf(ExaminationSelection);

/** A line number as an ISO holds it. */
const lineNumber = isos.fields.lineNumber!.type;

export const ExaminationSelectionQuery = z.strictObject({
  limit: limitParam,
  cursor: cursorParam.optional().describe('nextCursor of the previous page'),
  state: z.enum(SELECTION_STATES).optional(),
  method: z.enum(NDT_METHODS).optional(),
  tier: z.enum(SELECTION_TIERS).optional(),
  isoId: z.uuid().optional().describe("selections of this ISO's welds"),
  welderId: z.uuid().optional().describe("selections of this welder's welds"),
  weldId: z.uuid().optional(),
  lineNumber: lineNumber.optional().describe('selections of welds on this line'),
});

export const DrawBody = z.strictObject({
  method: z.enum(NDT_METHODS).describe('the NDT method the sample is for (RT, ...)'),
  lineNumber: lineNumber
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

const DrawResult = z.object({
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
 * A page of selections in the order they became visible (their position: the id the relay gave
 * the event that announced them, after commit), so a reader holding a cursor misses no
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
  // A selection has its place once the relay placed its event (weld_hidden.place_events).
  where.push('s.position is not null');
  const clause = `where ${where.join(' and ')}`;
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

const IsoExamination = z.object({
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

const QualificationStatusQuery = z.strictObject({
  on: calendarDate
    .optional()
    .describe("the date to judge on, YYYY-MM-DD (default: today's date in UTC)"),
});

const WelderQualificationStatus = z.object({
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

const WeldCheck = z.object({
  code: z
    .enum(WELD_CHECK_CODES)
    .describe(
      "DATA_MISSING: welder, WPS, date welded, a base metal's P-number or the WPS's P-numbers missing, and for a groove weld its wall thickness or a size that is no standard NPS (one each); WPS_NOT_APPROVED: its WPS is a draft; WPS_RANGE: a groove weld's outside diameter or thickness outside the WPS; WPS_PNUMBER: its base metals are not the joint its WPS covers (QW-403.11); WPS_RANGE_UNSUPPORTED: its WPS is not qualified by its PQRs (no PQR, a process, the thickness range of QW-451.1, the P-numbers of QW-424.1); WELDER_NOT_QUALIFIED: for a process of the WPS, no qualification of the welder in force on the day it was welded covers it (QW-322, QW-452, QW-303); REEXAMINATION_OPEN: a repair owes a new examination by the method that rejected it (B31.3 341.3.3); PWHT_REQUIRED: B31.3 Table 331.1.1 asks for PWHT at its P-numbers and wall and no PWHT record since it was welded covers it; PWHT_OUT_OF_RANGE: its latest PWHT record held outside the table's temperature range or too short for its wall; HARDNESS_HIGH: a hardness reading since its latest PWHT is over the table's limit for its P-numbers; FILLER_NOT_COVERED: a filler lot recorded for it is outside its WPS's F-numbers (QW-404.4) or for a process its WPS does not use",
    ),
  detail: z.string().describe('what exactly, in words'),
});

const WeldChecks = z.object({
  weldId: z.uuid(),
  ok: z.boolean().describe('no checks fail'),
  checks: z.array(WeldCheck),
});

const WpsChecks = z.object({
  wpsId: z.uuid(),
  ok: z.boolean().describe('its PQRs qualify it: it may be approved'),
  checks: z.array(WeldCheck),
});

const ReadinessReason = z.object({
  code: z
    .enum(READINESS_CODES)
    .describe(
      "NO_WELDS; WELD_NOT_ACCEPTED; EXAMINATION_SHORTFALL (isoId: a lot through the ISO has fewer selections than required, or a welder of it is not represented); EXAMINATION_OPEN (weldId: an open random or examined selection); PROGRESSIVE_OPEN (weldId: an open tier 1, 2 or full selection in a lot of the package's welds); each failing weld check of a package weld (REEXAMINATION_OPEN among them); and PUNCH_A_OPEN (an open category A punch item of the package, GET /punch-items?testPackageId=...)",
    ),
  weldId: z.uuid().optional(),
  isoId: z.uuid().optional(),
  detail: z.string(),
});

const TestPackageReadiness = z.object({
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
  summary: string;
  description: string;
  /** The answer's component schema, by name; `schemas`, any other it introduces. */
  answer: [name: string, schema: z.ZodType];
  schemas?: Schemas;
}

/** The query of a read that takes no parameters: any is 422. */
const noQuery = z.strictObject({});

const COMPUTED: Computed[] = [
  {
    path: 'isos/:id/examination',
    noun: 'ISO',
    summary: "What the ISO's lots require, per method",
    description:
      `${LOTS} One entry per method the ISO requires or has selections for, in method order, over the lots its welds ` +
      'belong to (with their welds on other ISOs of the line): welds (candidates), required, selected (any tier), ' +
      'examined (selections done), shortfall (per lot what is missing, or the welders not represented if more: ' +
      'summed, what a draw would add), progressiveOpen (open selections of tiers 1, 2 and full) and ' +
      'weldersNotCovered (welders of a lot with no selection in it).',
    answer: ['IsoExamination', IsoExamination],
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
    summary: "The welder's qualifications on a date, per process (ASME IX QW-322)",
    description:
      'Each qualification of the welder, one entry per process it covers (by qualifiedOn, then id, then process), with ' +
      'its state on `on` (default: today in UTC), in this order: not_yet_valid before qualifiedOn; revoked on and ' +
      'after revokedOn (QW-322.1(b)); expired after expiresOn; lapsed after continuityUntil; else valid. Continuity ' +
      "(QW-322.1(a)) is per process: the uses are qualifiedOn, lastContinuityOn, the welder's documented uses of the " +
      "process (GET /welders/{id}/continuity) and the dates the welder's welds were welded with a WPS of the process; " +
      "it lapses at the first use followed by no use within the tenant's continuity months (6 by default, " +
      'tenant_settings.continuity_months), plus those months (qualified 2026-01-10 and not used since: valid on ' +
      '2026-07-10, lapsed on 2026-07-11); uses after a lapse do not revive it (the welder requalifies: a new ' +
      'qualification, renewsQualificationId naming the old). A GTAW+SMAW qualification used only with GTAW lapses ' +
      'for SMAW alone. `reasons` says why in sentences, and what it covers (groove or fillet, diameters, thickness, ' +
      "positions: stated, or derived from its test coupon or its PQR's test by the tenant's QW-452 range rules).",
    answer: ['WelderQualificationStatus', WelderQualificationStatus],
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
    summary: 'What the code rules find wrong with a weld',
    description:
      'ok is true when no check fails. DATA_MISSING: one per missing welder, WPS, date welded, P-number of either base ' +
      'metal or of the WPS, and for a groove weld its wall thickness or a size that is no standard NPS (its outside ' +
      'diameter is unknown: missing data is never a pass). WPS_NOT_APPROVED: the WPS is a draft (superseded counts as ' +
      "approved). WPS_RANGE: a groove weld's outside diameter (from the NPS size, ASME B36.10) or wall thickness is " +
      'outside the WPS ranges (no groove range applies to socket and fillet welds). WPS_PNUMBER: its base metals are ' +
      'not the joint its WPS covers (QW-403.11). WPS_RANGE_UNSUPPORTED: its WPS is not qualified by its PQRs (as GET ' +
      '/wps/{id}/checks). WELDER_NOT_QUALIFIED: for a process of the WPS, no qualification of the welder in force that ' +
      'day for that process (not revoked, not expired, not lapsed for it) covers the weld: a groove one within its ' +
      'diameters and thickness, or any fillet weld; a fillet one fillet welds only. The detail names at most three ' +
      'qualifications per process. REEXAMINATION_OPEN: a repair of the weld owes a new examination by a method that ' +
      'rejected it, dated on or after the re-weld (B31.3 341.3.3). PWHT_REQUIRED: a P-number of its joint needs ' +
      "PWHT at its wall thickness (B31.3 Table 331.1.1, the tenant's heat_treatment_rules) and no PWHT record dated " +
      'on or after the day it was welded covers it. PWHT_OUT_OF_RANGE: its latest PWHT record held outside the ' +
      'temperature range (for two P-numbers, the higher range: B31.3 331.2.3(a)) or less time than its wall needs. ' +
      'HARDNESS_HIGH: a hardness reading taken on or after its latest PWHT is over the lowest limit of its P-numbers. ' +
      "FILLER_NOT_COVERED: a filler lot recorded for it (GET /weld-fillers) is outside its WPS's fNumbers (QW-404.4) " +
      'or recorded for a process its WPS does not use; with fillers and a WPS of no fNumbers, DATA_MISSING. ' +
      'Sorted by code, then detail. Where the tenant ' +
      "refuses welds that fail them (tenant_settings.weld_checks = 'refuse'), a write that leaves a weld with a check " +
      'other than DATA_MISSING, REEXAMINATION_OPEN and the heat treatment and filler ones (recorded after welding) is 422 ' +
      '/problems/weld-checks-failed.',
    answer: ['WeldChecks', WeldChecks],
    schemas: { WeldCheck: json(WeldCheck) },
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
    summary: 'Why a test package may not be released yet',
    description:
      'ready is true when there is no reason. The welds judged are its welds and the welds of its ISOs, VOIDED ones ' +
      'left out. NO_WELDS; WELD_NOT_ACCEPTED (weldId); EXAMINATION_SHORTFALL (isoId: a lot through the ISO has fewer ' +
      'selections than it requires for a method, or a welder of it is not represented; POST ' +
      '/examination-selections/draw fills it); EXAMINATION_OPEN (weldId: an open random or examined selection of a ' +
      'package weld); PROGRESSIVE_OPEN (weldId: an open tier 1, 2 or full selection in a lot of a package weld, ' +
      'wherever that weld is); and each failing check of GET /welds/{id}/checks of a package weld (weldId and isoId), ' +
      'REEXAMINATION_OPEN among them; PUNCH_A_OPEN: an open category A punch item of the package (B items do not count). Moving the package from open to released, released to tested or tested to ' +
      'closed (PATCH /test-packages/{id}, or GraphQL) while it has reasons is 409 /problems/package-not-ready with the ' +
      'first 100 reasons and `reasonCount`. While it is released, tested or closed, a change of an ISO, WPS, PQR or ' +
      'qualification that would leave it not ready is 409 /problems/package-released.',
    answer: ['TestPackageReadiness', TestPackageReadiness],
    schemas: { ReadinessReason: json(ReadinessReason) },
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
    summary: 'What keeps a WPS from being qualified by its PQRs',
    description:
      'ok is true when none: it may be approved. WPS_RANGE_UNSUPPORTED, one per aspect: no PQR backs it (ASME IX ' +
      'QW-200.2); a process of it none of its PQRs qualifies (QW-200.4: a combination may be backed by several); its ' +
      'thickness range (thicknessMinIn to thicknessMaxIn, null meaning no limit) is not within what its PQRs support ' +
      "(QW-451.1 from each coupon's T: under 1/16 in. T to 2T; 1/16 to 3/8 in. 1/16 in. to 2T; over 3/8 in. 3/16 in. " +
      "to 2T; 1 1/2 in. and over 3/16 in. to 8 in.; the tenant's weld_public.procedure_thickness_rules); its P-number " +
      "joint is not one of its PQRs' nor one they qualify by QW-424.1 (weld_public.p_number_rules). DATA_MISSING: it " +
      'records no P-numbers. An approved WPS stays qualified: approving one that is not, or a change that leaves an ' +
      'approved one unqualified (its ranges, P-numbers, PQRs, or a PQR of it) is 409 /problems/wps-not-qualified.',
    answer: ['WpsChecks', WpsChecks],
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
        'weld: a weld on record (one entry per process of its WPS); repair: a repair the welder welded, on the day recorded (per process of its WPS); document: a documented use',
      ),
    reference: z
      .string()
      .describe('the weld or repair (its number, ISO and WPS), or the document given'),
    weldId: z.uuid().nullable(),
    continuityId: z.uuid().nullable().describe('the documented use; null for a weld'),
    recordedBy: z.uuid().nullable().describe('who recorded a documented use'),
  })
  .describe('One use of a welding process by a welder: each extends its qualifications for it.');

const ContinuityPage = pageOf(ContinuityUse);

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

const ContinuityQuery = z.strictObject({
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
    .describe('the document that shows the use (a log, a report number)'),
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
      doc: {
        summary: 'Draw the random examination sample of a line or an ISO for one method',
        description:
          'Exactly one of lineNumber (every lot with a weld on the line) and isoId (every lot with a weld on the ISO). ' +
          `${LOTS} The draw first counts what each of those lots already examined (tier examined; a rejected one draws ` +
          'its tier 1), then takes one weld of each welder not yet represented, then tops the lot up to its required ' +
          'number, taking the candidates not yet selected for the method in the order of md5(seed, weld id): the same ' +
          'seed on the same welds selects the same welds. A weld is selected at most once per method, so drawing again ' +
          'adds only what is missing, and nothing (an empty `selections`) when no lot is short. Without a seed the service draws one ' +
          '(0 to 2^53 - 1); the answer always says which. Who: inspector, engineer, admin. With an Idempotency-Key, a ' +
          'retry of the same request within 24 hours answers the first answer again (Idempotent-Replayed: true) without ' +
          `drawing. ${TIERS}`,
        parameters: [idempotencyKey],
        requestBody: { required: true, ...content('ExaminationDraw') },
        responses: {
          '200': {
            description: 'the method, the seed used and the selections this draw made',
            headers: replayedHeader,
            ...content('ExaminationDrawResult'),
          },
          '403': problem('your role may not draw (a viewer), or the CSRF check failed'),
          ...common,
          '404': problem('Unknown tenant (origin), or no such ISO, or no ISO on that line'),
          '422': problem(
            'a bad field (an unknown method, a seed out of range, neither or both of lineNumber and isoId), named in errors; or the Idempotency-Key was used for another request',
          ),
        },
        schemas: {
          ExaminationDraw: json(DrawBody, 'input'),
          ExaminationDrawResult: json(DrawResult),
        },
      },
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
      doc: {
        summary: 'List examination selections, oldest first',
        description:
          'The welds selected for examination, by draws (tier random), by examinations (examined) and by rejections (tiers ' +
          '1, 2, full), in the order they became visible (their position is given after commit: a reader holding a cursor ' +
          'misses none that committed later). A selection is open until an examination that meets it covers the weld, dated on or after ' +
          'the weld was welded, whatever its result, and then done, naming it (the earliest) as ndtRecordId or ' +
          `inspectionId. Filters combine with "and". ${TIERS}`,
        parameters: queryParameters(ExaminationSelectionQuery),
        responses: {
          '200': { ...page, ...content('ExaminationSelectionPage') },
          ...badParameter,
          ...common,
        },
        schemas: { ExaminationSelectionPage: json(ExaminationSelectionPage) },
      },
      handler: async (req, res) => {
        const params = queryOf(ExaminationSelectionQuery, req);
        // Positions of what has committed, this client's writes among them.
        await placeEvents(pool, req.tenant!.id);
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ id: string; selection: { id: string } }>(selectionPage(params)),
        );
        sendPage(
          req,
          res,
          rows.map((r) => r.selection),
          params.limit,
        );
      },
    },
    {
      method: 'GET',
      path: `/examination-selections/:id`,
      doc: {
        summary: 'Read an examination selection',
        description: 'One selection, as the list gives it.',
        parameters: [idParam],
        responses: computedAnswers('ExaminationSelection'),
        schemas: { ExaminationSelection: json(ExaminationSelection) },
      },
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
      doc: {
        summary: "The welder's continuity log (ASME IX QW-322.1(a)), newest first",
        description:
          'Every use of a welding process by the welder: each weld on record that is welded and not VOIDED, once ' +
          'per process of its WPS (source weld), and each documented use (source document). Each use extends the ' +
          "welder's qualifications for that process by the tenant's continuity months; a use after a lapse revives " +
          'nothing. Pages newest first (usedOn, then the entry); filter by process.',
        parameters: [idParam, ...queryParameters(ContinuityQuery)],
        responses: { '200': { ...page, ...content('ContinuityPage') }, ...badParameter, ...common },
        schemas: { ContinuityPage: json(ContinuityPage) },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'welder');
        const { limit, cursor, process } = queryOf(ContinuityQuery, req);
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
      doc: {
        summary: 'Record a documented use of a process by the welder',
        description:
          'A use the service cannot see in its welds (a shop log, another project): the day, the process, and the ' +
          'document that shows it. The log is append-only: a wrong entry is answered by another fact, not erased. ' +
          'Who: inspector, engineer, admin; recordedBy is the signed-in user.',
        parameters: [idParam],
        requestBody: { required: true, ...content('ContinuityBody') },
        responses: {
          '201': { description: 'the use, as the log lists it', ...content('ContinuityUse') },
          '403': problem('your role may not record it (a viewer), or the CSRF check failed'),
          '422': problem(
            'a bad field (a date outside 1900-01-01 to 2200-12-31, an unknown process), named in errors',
          ),
          ...common,
        },
        schemas: {
          ContinuityBody: json(ContinuityBody, 'input'),
          ContinuityUse: json(ContinuityUse),
        },
      },
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
      doc: {
        summary: 'Withdraw a released test package to open, with a reason',
        description:
          'The only way back from released to open (PATCH with state open is 409 /problems/state-conflict): the ' +
          "reason is kept in the package's state history (GET /test-packages/{id}/history). While released, what its " +
          'readiness was judged on is held (a change that would leave it not ready is 409 /problems/package-released); ' +
          'withdrawn, its welds, ISOs, WPSs and qualifications may change again, and releasing it judges it again. ' +
          'Who: engineer, admin.',
        parameters: [
          idParam,
          header('If-Match', 'the ETag you read; 412 if the package changed since'),
        ],
        requestBody: { required: true, ...content('WithdrawBody') },
        responses: {
          '200': {
            description: 'the package, open',
            headers: itemHeaders,
            ...content('TestPackage'),
          },
          '403': problem('your role may not withdraw it, or the CSRF check failed'),
          '409': problem('the package is not released (/problems/state-conflict)'),
          '412': problem('If-Match is stale'),
          '422': problem('no reason, or one longer than 2000 characters'),
          ...common,
        },
        schemas: { WithdrawBody: json(WithdrawBody, 'input') },
      },
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
    ...COMPUTED.map(
      ({ path, noun, query = noQuery, values, sql, answer: [name, schema], ...doc }): Route => ({
        method: 'GET',
        path: `/${path}`,
        doc: {
          ...doc,
          parameters: [idParam, ...queryParameters(query)],
          responses: computedAnswers(name),
          schemas: { [name]: json(schema), ...doc.schemas },
        },
        handler: async (req, res) => {
          const id = pathId(req, noun);
          const params = queryOf(query, req);
          const { rows } = await withContext(pool, callerContext(req), (db) =>
            db.query<{ answer: unknown }>(prepared(sql, [id, ...(values?.(params) ?? [])])),
          );
          if (!rows[0]) throw problems.notFound(`No such ${noun}.`);
          res.setHeader('Cache-Control', 'private, no-cache');
          res.json(rows[0].answer);
        },
      }),
    ),
  ];
}
