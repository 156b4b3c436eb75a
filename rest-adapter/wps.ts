// WPSs: welding procedure specifications, backed by PQRs (pqrIds, replaced as a whole). Number,
// revision and process are set when created; a WPS is superseded, never deleted.
import { z } from 'zod';
import { WPS_STATES } from '../db/vocabulary.ts';
import { processType } from './pqrs.ts';
import { column, defineResource, inches } from './resource.ts';

export const wps = defineResource({
  path: 'wps',
  schema: 'Wps',
  noun: 'WPS',
  plural: 'WPSs',
  table: 'weld_public.wps',
  description: 'Welding Procedure Specification: the procedure a welder follows.',
  fields: {
    wpsNumber: column.text('wps_number', 100, { write: 'create', required: true, filter: true }),
    revision: column.text('revision', 20, { write: 'create' }),
    process: {
      column: 'process',
      type: processType,
      write: 'create',
      required: true,
      filter: true,
    },
    state: {
      column: 'state',
      type: z.enum(WPS_STATES).describe('draft (default), approved, superseded'),
      write: 'always',
      filter: true,
    },
    thicknessMinIn: column.number('thickness_min_in', inches, { write: 'always' }),
    thicknessMaxIn: column.number(
      'thickness_max_in',
      inches.describe('inches; null: no upper limit'),
      {
        nullable: true,
        write: 'always',
      },
    ),
    diameterMinIn: column.number('diameter_min_in', inches, { write: 'always' }),
    diameterMaxIn: column.number(
      'diameter_max_in',
      inches.describe('inches; null: no upper limit'),
      {
        nullable: true,
        write: 'always',
      },
    ),
  },
  links: {
    pqrIds: {
      table: 'weld_public.wps_pqrs',
      owner: 'wps_id',
      member: 'pqr_id',
      target: 'weld_public.pqrs',
      noun: 'PQR',
      description: 'the PQRs that back it',
      write: true,
    },
  },
  access: { create: 'engineer', update: 'engineer (state, ranges, pqrIds)' },
});
