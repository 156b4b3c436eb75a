// ISOs: the isometric drawings that hold welds. Engineers create, change and delete them; an ISO
// that still holds a weld cannot be deleted (409: the welds reference it, migrations/000002).
// Each carries its progress, weldCounts: its welds counted by status, which the database keeps
// exact at every commit (weld_public.iso_weld_counts, migration 000015); read-only.
//
// GET /isos/weld-counts answers the progress of every ISO of the tenant at once (a dashboard, a
// progress report): one item per ISO with its number, line and area, in one answer without
// pages. PostgreSQL writes the whole JSON text in one statement (format() per row, string_agg
// over them) and Node forwards it: 5,000 ISOs are a ~1 MB answer in tens of milliseconds.
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import { FLUID_SERVICES } from '../db/vocabulary.ts';
import { problems, zodIssues } from '../server/http/problem.ts';
import type { Route } from '../server/http/route.ts';
import { callerContext } from '../server/http/session.ts';
import { column, defineResource } from './resource.ts';

const count = (what: string) => z.number().int().min(0).describe(what);

const COUNTS = {
  total: count('every weld of the ISO, voided ones included'),
  pending: count('welds PENDING'),
  accepted: count('welds ACCEPTED'),
  rejected: count('welds REJECTED'),
  repair: count('welds in REPAIR'),
  voided: count('welds VOIDED (total - voided: the welds still in the design)'),
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
        .describe('required radiography, percent of butt welds (default 5)'),
      { write: 'always' },
    ),
  },
  computed: { weldCounts: { read: WELD_COUNTS, type: WeldCounts } },
  tag: TAG,
  access: {
    create: 'engineer',
    update: 'engineer',
    delete: 'engineer, only while it holds no weld (else 409 /problems/still-referenced)',
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

export const IsoWeldCountsList = z
  .object({
    items: z.array(IsoWeldCounts).describe('every ISO of the tenant (that the filters keep)'),
    nextCursor: z.null().describe('always null: the list is whole, in one answer'),
  })
  .describe('The progress of every ISO, ordered by ISO number');

export const IsoWeldCountsQuery = z.strictObject({
  lineNumber: z.string().max(100).optional().describe('only the ISOs of this line'),
  area: z.string().max(100).optional().describe('only the ISOs of this area'),
});

// The items' JSON text, written by PostgreSQL: texts through to_json (escaped as JSON needs),
// counts as they are. Row security keeps the ISOs and their counts to the caller's tenant.
const WELD_COUNTS_LIST = `
  select coalesce(string_agg(
           format('{"isoId":"%s","isoNumber":%s,"lineNumber":%s,"area":%s,"total":%s,'
                  '"pending":%s,"accepted":%s,"rejected":%s,"repair":%s,"voided":%s}',
                  r.id, to_json(r.iso_number), to_json(r.line_number),
                  coalesce(to_json(r.area)::text, 'null'), c.total, c.pending, c.accepted,
                  c.rejected, c.repair, c.voided),
           ',' order by r.iso_number, r.id), '') as items
    from weld_public.isos r
    join weld_public.iso_weld_counts c on c.tenant_id = r.tenant_id and c.iso_id = r.id
   where ($1::text is null or r.line_number = $1) and ($2::text is null or r.area = $2)`;

/** GET /isos/weld-counts (before /isos/{id}, which would take "weld-counts" for an id). */
export function isoProgressRoutes(pool: pg.Pool, prefix = ''): Route[] {
  return [
    {
      method: 'GET',
      path: `${prefix}/isos/weld-counts`,
      handler: async (req, res) => {
        const parsed = IsoWeldCountsQuery.safeParse(req.query);
        if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
        const { lineNumber, area } = parsed.data;
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ items: string }>(
            prepared(WELD_COUNTS_LIST, [lineNumber ?? null, area ?? null]),
          ),
        );
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.setHeader('Cache-Control', 'private, no-cache');
        res.send(`{"items":[${rows[0]!.items}],"nextCursor":null}`);
      },
    },
  ];
}
