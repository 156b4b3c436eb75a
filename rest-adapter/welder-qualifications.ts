// Welder qualifications: what a welder may weld (a WPS, or a process), in which positions and
// ranges, from when to when. `validOn` lists those in force on a date (qualified on or before it,
// not expired); continuity lapses (ASME IX QW-322) are judged by the code rules, not this filter.
import { z } from 'zod';
import { WELDING_POSITIONS } from '../db/vocabulary.ts';
import { processType } from './pqrs.ts';
import { calendarDate, column, defineResource, inches } from './resource.ts';

export const welderQualifications = defineResource({
  path: 'welder-qualifications',
  schema: 'WelderQualification',
  noun: 'welder qualification',
  plural: 'welder qualifications',
  table: 'weld_public.welder_qualifications',
  description: 'What a welder may weld: a WPS or a process, positions, ranges and dates.',
  fields: {
    welderId: column.id('welder_id', { write: 'create', required: true, filter: true }),
    wpsId: column.id('wps_id', { nullable: true, write: 'always' }),
    pqrId: column.id('pqr_id', { nullable: true, write: 'always' }),
    process: {
      column: 'process',
      type: processType,
      nullable: true,
      write: 'always',
      filter: true,
    },
    positions: {
      column: 'positions',
      type: z.array(z.enum(WELDING_POSITIONS)).max(WELDING_POSITIONS.length),
      write: 'always',
    },
    diameterMinIn: column.number('diameter_min_in', inches, { nullable: true, write: 'always' }),
    diameterMaxIn: column.number('diameter_max_in', inches, { nullable: true, write: 'always' }),
    thicknessMaxIn: column.number('thickness_max_in', inches, { nullable: true, write: 'always' }),
    qualifiedOn: column.date('qualified_on', { write: 'always', required: true }),
    expiresOn: column.date('expires_on', { nullable: true, write: 'always' }),
    lastContinuityOn: column.date('last_continuity_on', { nullable: true, write: 'always' }),
  },
  filters: {
    validOn: {
      sql: `?::date between r.qualified_on and coalesce(r.expires_on, 'infinity')`,
      type: calendarDate.describe('in force on this date: qualified on or before it, not expired'),
    },
  },
  access: {
    create: 'engineer (a WPS or a process is required)',
    update: 'engineer',
    delete: 'engineer',
  },
});
