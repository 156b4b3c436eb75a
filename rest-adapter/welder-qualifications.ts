// Welder qualifications: what a welder may weld (a WPS, or a process), in which positions and
// ranges, from when to when. `validOn` lists those in force on a date (qualified on or before it,
// not expired); continuity lapses (ASME IX QW-322) are judged by the code rules, not this filter
// (GET /welders/{id}/qualification-status, code-rules.ts). The test coupon's diameter and
// thickness give the ranges the qualification covers when they are not stated.
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
    couponDiameterIn: column.number(
      'coupon_diameter_in',
      inches
        .positive()
        .describe(
          "outside diameter of the WPQ test coupon, inches; with no diameterMinIn, the range rules (QW-452.3) give the smallest diameter it covers; null: the PQR's diameterTestedIn stands in",
        ),
      { nullable: true, write: 'always' },
    ),
    couponThicknessIn: column.number(
      'coupon_thickness_in',
      inches
        .positive()
        .describe(
          "thickness of the WPQ test coupon, inches; with no thicknessMaxIn, the range rules (QW-452.1) give the thickest it covers; null: the PQR's thicknessTestedIn stands in",
        ),
      { nullable: true, write: 'always' },
    ),
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
