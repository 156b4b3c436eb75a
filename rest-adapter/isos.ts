// GET /isos (and /api/isos): the tenant's isometric drawings, filtered by isoNumber or lineNumber,
// in keyset pages. Read as the caller's role; row security keeps it to the caller's tenant.
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import type { Route } from '../server/app.ts';
import { zodIssues, problems } from '../server/problem.ts';
import { callerContext } from './context.ts';
import { cursorParam, limitParam, pageOf, sendPage } from './pagination.ts';

export const FLUID_SERVICES = [
  'normal',
  'category_d',
  'category_m',
  'severe_cyclic',
  'high_pressure',
] as const;

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
        const where: string[] = [];
        const params: unknown[] = [];
        const filter = (sql: string, value: unknown) => {
          params.push(value);
          where.push(sql.replace('?', `$${params.length}`));
        };
        if (q.isoNumber) filter('iso_number = ?', q.isoNumber);
        if (q.lineNumber) filter('line_number = ?', q.lineNumber);
        if (q.cursor) filter('id > ?', q.cursor);
        params.push(q.limit + 1);
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<{ id: string }>(
            prepared(
              `select ${ISO_COLUMNS} from weld_public.isos
                ${where.length ? 'where ' + where.join(' and ') : ''}
                order by id limit $${params.length}`,
              params,
            ),
          ),
        );
        sendPage(req, res, rows, q.limit);
      },
    },
  ];
}
