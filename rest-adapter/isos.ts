// ISOs: the isometric drawings that hold welds. Engineers create, change and delete them; an ISO
// that still holds a weld cannot be deleted (409: the welds reference it, migrations/000002).
// Each carries its progress, weldCounts: its welds counted by status, which the database keeps
// exact at every commit (weld_public.iso_weld_counts, migration 000015); read-only.
import { z } from 'zod';
import { FLUID_SERVICES } from '../db/vocabulary.ts';
import { column, defineResource } from './resource.ts';

const count = (what: string) => z.number().int().min(0).describe(what);

const WeldCounts = z
  .object({
    total: count('every weld of the ISO, voided ones included'),
    pending: count('welds PENDING'),
    accepted: count('welds ACCEPTED'),
    rejected: count('welds REJECTED'),
    repair: count('welds in REPAIR'),
    voided: count('welds VOIDED (total - voided: the welds still in the design)'),
  })
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
