// GET /isos (and /api/isos): the tenant's isometric drawings, filtered by isoNumber or lineNumber,
// in keyset pages. Read as the caller's role; row security keeps it to the caller's tenant.
import type pg from 'pg';
import { z } from 'zod';
import { withContext } from '../db/database.ts';
import { FLUID_SERVICES } from '../db/vocabulary.ts';
import { problems, zodIssues } from '../server/http/problem.ts';
import type { Route } from '../server/http/route.ts';
import { callerContext } from '../server/http/session.ts';
import { cursorParam, limitParam, pageOf, pageQuery, sendPage } from './pagination.ts';

export const IsoJson = z.object({
  id: z.uuid(),
  isoNumber: z.string(),
  revision: z.string(),
  lineNumber: z.string(),
  area: z.string().nullable(),
  pipingClass: z.string().nullable(),
  fluidService: z.enum(FLUID_SERVICES),
  rtPercent: z.number().describe('required radiography, percent of butt welds'),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});

export const IsoListQuery = z.strictObject({
  limit: limitParam,
  cursor: cursorParam.optional(),
  isoNumber: z.string().min(1).max(100).optional(),
  lineNumber: z.string().min(1).max(100).optional(),
});

export const IsoPage = pageOf(IsoJson);

const ISO_COLUMNS = `id, iso_number as "isoNumber", revision, line_number as "lineNumber", area,
  piping_class as "pipingClass", fluid_service as "fluidService", rt_percent::float8 as "rtPercent",
  created_at as "createdAt", updated_at as "updatedAt"`;

export function isoRoutes(pool: pg.Pool, prefix: string): Route[] {
  return [
    {
      method: 'GET',
      path: `${prefix}/isos`,
      handler: async (req, res) => {
        const parsed = IsoListQuery.safeParse(req.query);
        if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
        const q = parsed.data;
        const filters = [
          q.isoNumber !== undefined && (['iso_number = ?', q.isoNumber] as const),
          q.lineNumber !== undefined && (['line_number = ?', q.lineNumber] as const),
        ];
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ id: string }>(
            pageQuery(`select ${ISO_COLUMNS} from weld_public.isos`, filters, q.cursor, q.limit),
          ),
        );
        sendPage(req, res, rows, q.limit);
      },
    },
  ];
}
