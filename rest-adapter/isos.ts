// ISOs: the isometric drawings that hold welds. Engineers create, change and delete them; an ISO
// that still holds a weld cannot be deleted (409: the welds reference it, migrations/000002).
import { z } from 'zod';
import { FLUID_SERVICES } from '../db/vocabulary.ts';
import { column, defineResource } from './resource.ts';

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
  access: {
    create: 'engineer',
    update: 'engineer',
    delete: 'engineer, only while it holds no weld (else 409 /problems/still-referenced)',
  },
});
