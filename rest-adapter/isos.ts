// ISOs: the isometric drawings that hold welds. Engineers create, change and delete them; an ISO
// that still holds a weld cannot be deleted (409: the welds reference it, migrations/000002).
// Each carries its progress, weldCounts: its welds counted by status, which the database keeps
// exact at every commit (weld_public.iso_weld_counts, migration 000015); read-only.
//
// GET /isos/weld-counts answers the progress of every ISO of the tenant (a dashboard, a progress
// report): one item per ISO with its number, line and area, ordered by ISO number, in pages of up
// to 10,000 (5,000 ISOs are one answer of about 1 MB, in tens of milliseconds). PostgreSQL writes
// each item's JSON (format() per row) and Node joins them. The page bounds every answer: one
// unbounded text of every ISO could outgrow what a JavaScript string may hold.
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import { FLUID_SERVICES } from '../db/vocabulary.ts';
import { common, content, json, page, problem, queryParameters } from './http/operation.ts';
import { queryOf, type Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import { encodeTextCursor, pageSizeParam, sendJsonPage, textCursorParam } from './pagination.ts';
import { heatNumberParam, ISO_OF_HEAT } from './components.ts';
import { column, defineResource, refusal } from './resource.ts';
import { PACKAGE_RELEASED } from './test-packages.ts';

const count = (what: string) => z.number().int().min(0).describe(what);

const COUNTS = {
  total: count(
    'every weld of the ISO, voided ones included (total - voided: the welds still in the design)',
  ),
  pending: count('welds PENDING'),
  accepted: count('welds ACCEPTED'),
  rejected: count('welds REJECTED'),
  repair: count('welds in REPAIR'),
  voided: count('welds VOIDED: cut out or deleted from the design, kept for audit'),
};

const WeldCounts = z
  .object(COUNTS)
  .describe(
    "The ISO's progress: its welds counted by status, exact as of the last committed change " +
      '(the database keeps them in the same transaction as every weld write); read-only',
  );

// One row per ISO, by its key (migration 000015); row security applies as to the ISO itself.
const WELD_COUNTS = `(select row_to_json(counts) from (
    select c.total, c.pending, c.accepted, c.rejected, c.repair, c.voided
      from weld_public.iso_weld_counts c where c.tenant_id = r.tenant_id and c.iso_id = r.id) counts)`;

// The counts change without the ISO (its welds change), so the entity tag names both versions:
// If-None-Match sees the counts move, If-Match still checks the ISO's own version.
const TAG = `r.version || '.' || coalesce((select c.version from weld_public.iso_weld_counts c
    where c.tenant_id = r.tenant_id and c.iso_id = r.id), 0)`;

export const isos = defineResource({
  path: 'isos',
  schema: 'Iso',
  noun: 'ISO',
  plural: 'ISOs',
  table: 'weld_public.isos',
  description: 'An isometric drawing of a line or spool; holds many welds.',
  fields: {
    isoNumber: column.text('iso_number', 100, { write: 'always', required: true, filter: true }),
    revision: column.text('revision', 20, { write: 'always' }),
    lineNumber: column.text('line_number', 100, { write: 'always', required: true, filter: true }),
    area: column.text('area', 100, { nullable: true, write: 'always', filter: true }),
    pipingClass: column.text('piping_class', 50, { nullable: true, write: 'always' }),
    fluidService: {
      column: 'fluid_service',
      type: z.enum(FLUID_SERVICES).describe('B31.3 fluid service (default normal)'),
      write: 'always',
      filter: true,
    },
    rtPercent: column.number(
      'rt_percent',
      z
        .number()
        .min(0)
        .max(100)
        .describe(
          "the RT percent its piping class asks for its butt welds beyond the code's floor (0 by default): it raises RT where greater than the examination rules",
        ),
      { write: 'always' },
    ),
    drawingId: column.id('drawing_id', {
      nullable: true,
      write: 'always',
      type: z
        .uuid()
        .describe(
          'its drawing: an attachment of this ISO (a PDF or an image) on which its welds are marked; set by a change, as an ISO being created has no attachments yet',
        ),
    }),
  },
  filters: {
    heatNumber: {
      sql: ISO_OF_HEAT,
      type: heatNumberParam.describe(
        'only the ISOs holding a weld that joins a component of this heat',
      ),
    },
  },
  computed: { weldCounts: { read: WELD_COUNTS, type: WeldCounts } },
  tag: TAG,
  access: {
    create: 'engineer',
    update: 'engineer',
    delete: 'engineer, only while it holds no weld (else 409 /problems/still-referenced)',
  },
  problems: {
    conflict: problem(`${refusal.taken}; ${PACKAGE_RELEASED}`, 'PackageReleasedProblem'),
  },
});

//------------------------------------------------------------------------------------------------
// Every ISO's progress at once

export const IsoWeldCounts = z
  .object({
    isoId: z.uuid(),
    isoNumber: z.string(),
    lineNumber: z.string(),
    area: z.string().nullable(),
    ...COUNTS,
  })
  .describe("One ISO's welds counted by status, with what names the ISO");

export const ISO_COUNTS_PAGE = { max: 10_000, default: 10_000 } as const;

export const IsoWeldCountsList = z
  .object({
    items: z.array(IsoWeldCounts).describe('ISOs in isoNumber order'),
    nextCursor: z
      .string()
      .nullable()
      .describe('pass as `cursor` for the next page; null on the last'),
  })
  .describe('The progress of the ISOs, ordered by ISO number, a page at a time');

export const IsoWeldCountsQuery = z.strictObject({
  lineNumber: z.string().max(100).optional().describe('only the ISOs of this line'),
  area: z.string().max(100).optional().describe('only the ISOs of this area'),
  limit: pageSizeParam(ISO_COUNTS_PAGE.max, ISO_COUNTS_PAGE.default),
  // The last ISO number of the previous page (unique per tenant).
  cursor: textCursorParam.optional().describe('nextCursor of the previous page'),
});

// One row per ISO: its item's JSON text (texts through to_json, escaped as JSON needs; counts as
// they are) and its number, the cursor. Row security keeps the ISOs and their counts to the
// caller's tenant; ISO numbers are unique per tenant, so they order the pages alone.
const WELD_COUNTS_PAGE = `
  select format('{"isoId":"%s","isoNumber":%s,"lineNumber":%s,"area":%s,"total":%s,'
                '"pending":%s,"accepted":%s,"rejected":%s,"repair":%s,"voided":%s}',
                r.id, to_json(r.iso_number), to_json(r.line_number),
                coalesce(to_json(r.area)::text, 'null'), c.total, c.pending, c.accepted,
                c.rejected, c.repair, c.voided) as json,
         r.iso_number
    from weld_public.isos r
    join weld_public.iso_weld_counts c on c.tenant_id = r.tenant_id and c.iso_id = r.id
   where ($1::text is null or r.line_number = $1) and ($2::text is null or r.area = $2)
     and ($3::text is null or r.iso_number > $3)
   order by r.iso_number
   limit $4`;

/** GET /isos/weld-counts (before /isos/{id}, which would take "weld-counts" for an id). */
export function isoProgressRoutes(pool: pg.Pool): Route[] {
  return [
    {
      method: 'GET',
      path: `/isos/weld-counts`,
      doc: {
        summary: "Every ISO's progress: its welds counted by status",
        description:
          'One item per ISO of the tenant, ordered by isoNumber, with the counts each ISO carries as `weldCounts`: ' +
          'total, pending, accepted, rejected, repair, voided, exact as of the last committed change. Pages hold up ' +
          `to ${ISO_COUNTS_PAGE.max} ISOs (the default), so a dashboard reads most projects' progress in one request ` +
          '(5,000 ISOs: about 1 MB, tens of milliseconds); `nextCursor` and `Link: rel="next"` lead on as for every ' +
          'list. Filters combine with "and".',
        parameters: queryParameters(IsoWeldCountsQuery),
        responses: {
          '200': { ...page, ...content('IsoWeldCountsList') },
          '422': problem('a bad or unknown parameter, named in errors'),
          ...common,
        },
        schemas: {
          IsoWeldCounts: json(IsoWeldCounts),
          IsoWeldCountsList: json(IsoWeldCountsList),
        },
      },
      handler: async (req, res) => {
        const { lineNumber, area, limit, cursor } = queryOf(IsoWeldCountsQuery, req);
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ json: string; iso_number: string }>(
            prepared(WELD_COUNTS_PAGE, [
              lineNumber ?? null,
              area ?? null,
              cursor ?? null,
              limit + 1,
            ]),
          ),
        );
        res.setHeader('Cache-Control', 'private, no-cache');
        sendJsonPage(req, res, rows, limit, (row) => encodeTextCursor(row.iso_number));
      },
    },
  ];
}
