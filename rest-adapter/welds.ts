// Welds, described like every resource (resource.ts) but with two paths of their own:
//
//   PATCH /welds/{id}/status   {"status", "reason"?, the basis of an acceptance, a re-weld's
//                              "repair"?}, optional If-Match: the lifecycle function decides (409
//                              with `allowed`, or an examination still owed; 403, 412, 422)
//   GET   /welds/{id}/history  the weld's status changes (history.ts)
//   GET   /weld-transitions    the tenant's transition rules, so a client (the web app) can
//                              offer only the changes the rules and the caller's role allow
//
// A weld's status, repair cycle and version are read-only everywhere else: PATCH /welds/{id}
// changes the other fields (engineers), and welds are never deleted (VOIDED instead).
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import { USER_ROLES, WELD_STATUSES, WELD_TYPES } from '../db/vocabulary.ts';
import { exportWelds, REGISTER_COLUMNS, REGISTER_READ_ONLY_COLUMNS } from '../db/weld-register.ts';
import { common, content, idParam, json, problem } from './http/operation.ts';
import type { Route } from './http/route.ts';
import { heatNumberParam, WELD_OF_HEAT } from './components.ts';
import { callerContext } from './http/session.ts';
import {
  calendarDate,
  column,
  defineResource,
  expectedVersion,
  fahrenheit,
  inches,
  itemsFrom,
  pathId,
  pipeSchedule,
  pNumber,
  refusal,
  sendItemJson,
  type ItemJson,
} from './resource.ts';

// Where the tenant refuses failing welds, a write that leaves a weld failing is refused (422).
const CHECKS_FAILED =
  " or, where the tenant refuses welds that fail the code checks (tenant_settings.weld_checks = 'refuse'), a weld whose type, size, wallThickness, welderId, wpsId, weldedOn or base metals as written leaves it with WELDER_NOT_QUALIFIED, WPS_NOT_APPROVED, WPS_RANGE, WPS_PNUMBER or WPS_RANGE_UNSUPPORTED (/problems/weld-checks-failed, `checks` as GET /welds/{id}/checks names them; DATA_MISSING never refuses: a weld is planned before it is welded); or a weldedOn after, or taken off, an examination of the weld (/problems/validation-failed)";

const statusList = z
  .string()
  .transform((value) => value.split(','))
  .pipe(z.array(z.enum(WELD_STATUSES)).min(1))
  .describe(`one or several of ${WELD_STATUSES.join(', ')}, comma-separated`);

/** A mark's position on a drawing page: 0 to 1, kept to 4 decimals (numeric(5, 4)). */
const mapFraction = (what: string) =>
  z.number().min(0).max(1).describe(`its mark on the drawing: ${what} (0 to 1)`);

export const welds = defineResource({
  path: 'welds',
  schema: 'Weld',
  noun: 'weld',
  plural: 'welds',
  table: 'weld_public.welds',
  description: 'One joint on an ISO, moving through the status lifecycle.',
  fields: {
    isoId: column.id('iso_id', { write: 'always', required: true, filter: true }),
    weldNumber: column.text('weld_number', 50, { write: 'always', required: true, filter: true }),
    type: {
      column: 'type',
      type: z
        .enum(WELD_TYPES)
        .describe(
          'BW butt, SW socket, FW fillet, BR branch, TW tie-in, MW miter, LW lap (of a fabricated lap); SW and FW are fillet welds (ASME IX), the rest groove welds',
        ),
      write: 'always',
      required: true,
      filter: true,
    },
    size: column.number('size', inches.positive().describe('NPS, inches'), {
      write: 'always',
      required: true,
    }),
    schedule: { column: 'schedule', type: pipeSchedule, nullable: true, write: 'always' },
    wallThickness: column.number('wall_thickness', inches.positive(), {
      nullable: true,
      write: 'always',
    }),
    material: column.text('material', 100, { nullable: true, write: 'always' }),
    welderId: column.id('welder_id', { nullable: true, write: 'always', filter: true }),
    wpsId: column.id('wps_id', { nullable: true, write: 'always', filter: true }),
    weldedOn: column.date('welded_on', {
      nullable: true,
      write: 'always',
      type: calendarDate.describe(
        'the day it was welded; null: not yet welded (it is then neither sampled nor examined). It cannot move after, or be taken off, an examination that covers it',
      ),
    }),
    baseMetal1PNumber: {
      column: 'base_metal_1_p_number',
      type: pNumber.describe('ASME IX P-number of the base metal on one side (QW-422), e.g. 1'),
      nullable: true,
      write: 'always',
    },
    baseMetal2PNumber: {
      column: 'base_metal_2_p_number',
      type: pNumber.describe('ASME IX P-number of the base metal on the other side, e.g. 8'),
      nullable: true,
      write: 'always',
    },
    component1Id: column.id('component_1_id', { nullable: true, write: 'always' }),
    component2Id: column.id('component_2_id', { nullable: true, write: 'always' }),
    throatIn: column.number(
      'throat_in',
      inches
        .positive()
        .describe(
          'the throat thickness of a socket or fillet weld, in inches (B31.3 Table 331.1.3)',
        ),
      { nullable: true, write: 'always' },
    ),
    preheatF: column.number(
      'preheat_f',
      fahrenheit.describe(
        'the minimum preheat temperature recorded for the weld, in degrees Fahrenheit (B31.3 330)',
      ),
      { nullable: true, write: 'always' },
    ),
    // Its place on its ISO's drawing (the weld map, F20): all three, or none.
    mapPage: {
      column: 'map_page',
      type: z
        .number()
        .int()
        .min(1)
        .max(9999)
        .describe("the page of its ISO's drawing it is marked on (from 1)"),
      nullable: true,
      write: 'always',
    },
    mapX: column.number(
      'map_x',
      mapFraction("from the left edge, as a fraction of the page's width"),
      {
        nullable: true,
        write: 'always',
      },
    ),
    mapY: column.number(
      'map_y',
      mapFraction("from the top edge, as a fraction of the page's height"),
      {
        nullable: true,
        write: 'always',
      },
    ),
    status: {
      column: 'status',
      type: z
        .enum(WELD_STATUSES)
        .describe('changed by PATCH /welds/{id}/status and NDT results only'),
    },
    acceptanceNdtRecordId: column.id('acceptance_ndt_record_id', {
      nullable: true,
      type: z
        .uuid()
        .describe(
          'while ACCEPTED: the NDT record that accepted it (its result, or the basis an inspector named)',
        ),
    }),
    acceptanceInspectionId: column.id('acceptance_inspection_id', {
      nullable: true,
      type: z
        .uuid()
        .describe(
          'while ACCEPTED: the inspection that accepted it, named as the basis of the acceptance',
        ),
    }),
    acceptanceDisposition: column.text('acceptance_disposition', 2000, {
      nullable: true,
      type: z
        .string()
        .min(1)
        .max(2000)
        .describe(
          "while ACCEPTED: the engineer's documented disposition it was accepted on (a use-as-is decision, its reference). An ACCEPTED weld with none of the three was accepted before acceptances named their basis",
        ),
    }),
    repairCycle: {
      column: 'repair_cycle',
      type: z
        .number()
        .int()
        .min(0)
        .describe('first examination 0; each repair released (REJECTED -> REPAIR) adds 1'),
    },
  },
  filters: {
    status: { sql: 'r.status = any(?::weld_public.weld_status[])', type: statusList },
    heatNumber: {
      sql: WELD_OF_HEAT,
      type: heatNumberParam.describe(
        'only the welds joining a component of this heat (either side)',
      ),
    },
  },
  // The weld list on a phone sorts by these (F17). A weld not yet welded sorts after every date.
  sorts: {
    weldNumber: { sql: 'r.weld_number', type: 'text' },
    status: { sql: 'r.status', type: 'weld_public.weld_status' },
    weldedOn: { sql: "coalesce(r.welded_on, 'infinity'::date)", type: 'date' },
  },
  access: {
    create: 'engineer',
    update:
      'engineer (every field but status, repairCycle, the acceptance, version); an inspector its place on the drawing only (mapPage, mapX, mapY: the three together, or null)',
  },
  problems: {
    invalid: problem(`${refusal.invalid};${CHECKS_FAILED}`, 'WeldChecksProblem'),
    createInvalid: problem(
      `a bad field, named in errors; ${refusal.keyReused};${CHECKS_FAILED}`,
      'WeldChecksProblem',
    ),
  },
  csv: {
    fileName: 'welds.csv',
    write: exportWelds,
    description:
      'UTF-8 with a BOM, a header row, RFC 4180 quoting. The columns are those POST /imports/welds reads ' +
      `(${REGISTER_COLUMNS.join(', ')}) and ${REGISTER_READ_ONLY_COLUMNS.join(', ')}, in ISO and weld number order. ` +
      'Text that a spreadsheet would run as a formula (=, +, -, @ first) has a leading apostrophe, ' +
      'which the import removes. Exported then imported, a register changes nothing.',
  },
});

/** A re-weld's own welding (REPAIR -> PENDING): its weld_repairs row's fields. */
export const RepairWelding = z
  .strictObject({
    weldedOn: calendarDate.nullable().optional().describe('the day the repair was welded'),
    welderId: z.uuid().nullable().optional().describe('the welder who made the repair'),
    wpsId: z
      .uuid()
      .nullable()
      .optional()
      .describe("the WPS the repair was welded to (its repair WPS); null: the weld's own"),
    preheatF: fahrenheit
      .nullable()
      .optional()
      .describe('the minimum preheat recorded for the repair, in degrees Fahrenheit'),
  })
  .describe(
    'The repair as welded, given with REPAIR -> PENDING (each may also be recorded later: PATCH /weld-repairs/{id})',
  );

export const StatusChange = z.strictObject({
  status: z.enum(WELD_STATUSES),
  reason: z.string().max(2000).optional().describe('required by some transitions (see the rules)'),
  ndtRecordId: z
    .uuid()
    .optional()
    .describe(
      'ACCEPTED only: the NDT record the acceptance rests on; it covers the weld, accepted it, and is dated on or after the weld (or its latest repair) was welded',
    ),
  inspectionId: z
    .uuid()
    .optional()
    .describe('ACCEPTED only: the visual or final inspection the acceptance rests on, likewise'),
  disposition: z
    .string()
    .min(1)
    .max(2000)
    .optional()
    .describe(
      'ACCEPTED only, engineers: the documented disposition the acceptance rests on (a use-as-is decision, its reference). An acceptance names exactly one of ndtRecordId, inspectionId and disposition',
    ),
  repair: RepairWelding.optional(),
});

export const WeldTransition = z.object({
  fromStatus: z.enum(WELD_STATUSES),
  toStatus: z.enum(WELD_STATUSES),
  leastRole: z
    .enum(USER_ROLES)
    .describe('the least role that may make it (viewer < inspector < engineer < admin)'),
  reasonRequired: z
    .boolean()
    .describe('PATCH /welds/{id}/status must carry a reason (422 without)'),
  note: z.string().nullable().describe('what the change means, in words'),
});

export const WeldTransitionList = z
  .object({
    items: z
      .array(WeldTransition)
      .describe(
        'ordered by fromStatus, then toStatus, each in lifecycle order (PENDING, ACCEPTED, REJECTED, REPAIR, VOIDED)',
      ),
  })
  .describe(
    "The tenant's weld status rules: every allowed change, who may make it and whether it needs a reason",
  );

/**
 * The weld paths beyond the resource's own: the status change and the rules it obeys (its
 * history: history.ts).
 */
export function weldLifecycleRoutes(pool: pg.Pool): Route[] {
  return [
    {
      method: 'PATCH',
      path: `/welds/:id/status`,
      body: true,
      doc: {
        summary:
          'Advance a weld through its status lifecycle (the tenant’s transition rules decide)',
        parameters: [
          idParam,
          {
            name: 'If-Match',
            in: 'header',
            required: false,
            schema: { type: 'string' },
            description: 'the ETag you read; 412 if the weld changed since',
          },
        ],
        requestBody: { required: true, ...content('StatusChange') },
        responses: {
          '200': {
            description: 'the changed weld',
            headers: { ETag: { schema: { type: 'string' } } },
            ...content('Weld'),
          },
          '403': problem('your role may not make this change (or CSRF check failed)'),
          '409': problem(
            "the rules do not allow this change (`allowed` lists what they allow); or ACCEPTED while an examination of the weld is owed: a repair's re-examination by the method that rejected it, or a selection of it not yet examined (/problems/reexamination-open, `checks` names it as REEXAMINATION_OPEN or EXAMINATION_OPEN; the weld stays as it is)",
            'TransitionProblem',
          ),
          '412': problem('If-Match is stale'),
          '422': problem(
            'status is not one of the five values; the rule requires a reason; an acceptance names no basis, or more than one, or one that did not accept this weld as it was last welded; a basis given with another status; a repair given other than with REPAIR -> PENDING, or its weldedOn before the weld was made or after an examination of the repair',
          ),
          ...common,
        },
        schemas: { StatusChange: json(StatusChange, 'input') },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'weld');
        const change = StatusChange.parse(req.body ?? {});
        const version = expectedVersion(req);
        // One statement: the function returns the changed row, which renders as GET shows it.
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<ItemJson>(
            prepared(
              `select row_to_json(x)::text as json, ${welds.tagSql} as tag
                 from ${itemsFrom(welds, 'weld_public.change_weld_status($1, $2, $3, $4, $5, $6, $7, $8::jsonb)')}`,
              [
                id,
                change.status,
                change.reason ?? null,
                version,
                change.ndtRecordId ?? null,
                change.inspectionId ?? null,
                change.disposition ?? null,
                change.repair ? JSON.stringify(change.repair) : null,
              ],
            ),
          ),
        );
        sendItemJson(res, rows[0]!);
      },
    },
    {
      method: 'GET',
      path: `/weld-transitions`,
      doc: {
        summary: "The tenant's weld status rules",
        description:
          'Every status change the rules allow, the least role that may make it and whether it needs a reason: ' +
          'what PATCH /welds/{id}/status obeys, so a client can offer only the changes open to its user. The rules ' +
          'are rows a DBA manages in SQL (weld_public.weld_transition_rules); every role may read them.',
        responses: {
          '200': { description: 'the rules', ...content('WeldTransitionList') },
          ...common,
        },
        schemas: { WeldTransitionList: json(WeldTransitionList) },
      },
      handler: async (req, res) => {
        // A handful of rows per tenant (at most 20), so no pages; row security picks the tenant's.
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query(
            prepared(
              `select from_status as "fromStatus", to_status as "toStatus", least_role as "leastRole",
                      reason_required as "reasonRequired", note
                 from weld_public.weld_transition_rules
                order by from_status, to_status`,
              [],
            ),
          ),
        );
        res.json({ items: rows });
      },
    },
  ];
}
