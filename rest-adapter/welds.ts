// The weld paths (and the same under /api):
//
//   GET   /welds               keyset pages; filters isoId, status (comma-separated), weldNumber,
//                              updatedSince
//   GET   /welds/{id}          one weld, with ETag (its version); If-None-Match -> 304
//   PATCH /welds/{id}/status   {"status", "reason"?}, optional If-Match: the lifecycle function
//                              decides (409 with `allowed`, 403, 412, 422 reason required)
//
// Every query runs as the caller's role and tenant; row security and change_weld_status() hold
// the rules (migrations/000002), problem.ts maps their refusals to HTTP.
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared, withContext } from '../db/database.ts';
import { WELD_STATUSES, WELD_TYPES } from '../db/vocabulary.ts';
import { HttpProblem, problems, zodIssues } from '../server/http/problem.ts';
import type { Route } from '../server/http/route.ts';
import { callerContext } from '../server/http/session.ts';
import {
  cursorParam,
  instantParam,
  limitParam,
  pageOf,
  pageQuery,
  sendPage,
} from './pagination.ts';

export const WeldJson = z.object({
  id: z.uuid(),
  isoId: z.uuid(),
  weldNumber: z.string(),
  type: z.enum(WELD_TYPES).describe('BW butt, SW socket, FW fillet, BR branch, TW tie-in'),
  size: z.number().describe('NPS, inches'),
  schedule: z.string().nullable(),
  wallThickness: z.number().nullable().describe('inches'),
  material: z.string().nullable(),
  welderId: z.uuid().nullable(),
  wpsId: z.uuid().nullable(),
  weldedOn: z.iso.date().nullable(),
  status: z.enum(WELD_STATUSES),
  repairCycle: z.number().int().describe('0 at first examination; +1 per repair released'),
  version: z.number().int().describe('bumped by every change; the ETag'),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
export type Weld = z.infer<typeof WeldJson>;

const statusList = z
  .string()
  .transform((value) => value.split(','))
  .pipe(z.array(z.enum(WELD_STATUSES)).min(1))
  .describe(`one or several of ${WELD_STATUSES.join(', ')}, comma-separated`);

export const WeldListQuery = z.strictObject({
  limit: limitParam,
  cursor: cursorParam.optional(),
  isoId: z.uuid().optional(),
  status: statusList.optional(),
  weldNumber: z.string().min(1).max(50).optional(),
  updatedSince: instantParam.optional(),
});

export const WeldPage = pageOf(WeldJson);

export const StatusChange = z.strictObject({
  status: z.enum(WELD_STATUSES),
  reason: z.string().max(2000).optional().describe('required by some transitions (see the rules)'),
});

/** The contract's weld JSON, selected (also used by bench/baseline.ts, which must run the same SQL). */
export const WELD_COLUMNS = `id, iso_id as "isoId", weld_number as "weldNumber", type, size::float8 as size,
  schedule, wall_thickness::float8 as "wallThickness", material, welder_id as "welderId",
  wps_id as "wpsId", welded_on::text as "weldedOn", status, repair_cycle as "repairCycle", version,
  created_at as "createdAt", updated_at as "updatedAt"`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const etagOf = (weld: Weld) => `"${weld.version}"`;

/** The weld id of the path; anything that is not a UUID names no weld: 404. */
function weldId(req: Request): string {
  const id = req.params.id;
  if (typeof id !== 'string' || !UUID.test(id)) throw problems.notFound('No such weld.');
  return id.toLowerCase();
}

/** Entity tags in an If-Match / If-None-Match header ("*" matches any). */
function entityTags(header: string | undefined): string[] | undefined {
  return header?.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
}

function sendWeld(res: Response, weld: Weld): void {
  res.setHeader('ETag', etagOf(weld));
  res.setHeader('Cache-Control', 'private, no-cache');
  res.json(weld);
}

export function weldRoutes(pool: pg.Pool, prefix: string): Route[] {
  return [
    {
      method: 'GET',
      path: `${prefix}/welds`,
      handler: async (req, res) => {
        const parsed = WeldListQuery.safeParse(req.query);
        if (!parsed.success) throw problems.validation(zodIssues(parsed.error, 'parameter'));
        const q = parsed.data;
        const filters = [
          q.isoId !== undefined && (['iso_id = ?', q.isoId] as const),
          q.status !== undefined &&
            (['status = any(?::weld_public.weld_status[])', q.status] as const),
          q.weldNumber !== undefined && (['weld_number = ?', q.weldNumber] as const),
          q.updatedSince !== undefined && (['updated_at >= ?', q.updatedSince] as const),
        ];
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<Weld>(
            pageQuery(`select ${WELD_COLUMNS} from weld_public.welds`, filters, q.cursor, q.limit),
          ),
        );
        sendPage(req, res, rows, q.limit);
      },
    },
    {
      method: 'GET',
      path: `${prefix}/welds/:id`,
      handler: async (req, res) => {
        const id = weldId(req);
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<Weld>(
            prepared(`select ${WELD_COLUMNS} from weld_public.welds where id = $1`, [id]),
          ),
        );
        const weld = rows[0];
        if (!weld) throw problems.notFound('No such weld.');
        const wanted = entityTags(req.get('if-none-match'));
        if (wanted && (wanted.includes('*') || wanted.includes(etagOf(weld)))) {
          res.setHeader('ETag', etagOf(weld));
          res.status(304).end();
          return;
        }
        sendWeld(res, weld);
      },
    },
    {
      method: 'PATCH',
      path: `${prefix}/welds/:id/status`,
      body: true,
      handler: async (req, res) => {
        const id = weldId(req);
        const change = StatusChange.parse(req.body ?? {});
        const tags = entityTags(req.get('if-match'));
        let expectedVersion: number | null = null;
        if (tags && !tags.includes('*')) {
          const versions = tags.map((tag) => /^"(\d{1,9})"$/.exec(tag)?.[1]).filter(Boolean);
          // An If-Match that can match no version of this weld is a failed precondition.
          if (versions.length !== 1) {
            throw new HttpProblem(412, {
              type: '/problems/stale-version',
              title: 'Precondition failed',
              detail: 'If-Match must be one entity tag this service issued for the weld.',
            });
          }
          expectedVersion = Number(versions[0]);
        }
        const { rows } = await withContext(pool, callerContext(req), (db) =>
          db.query<Weld>(
            prepared(`select ${WELD_COLUMNS} from weld_public.change_weld_status($1, $2, $3, $4)`, [
              id,
              change.status,
              change.reason ?? null,
              expectedVersion,
            ]),
          ),
        );
        sendWeld(res, rows[0]!);
      },
    },
  ];
}
