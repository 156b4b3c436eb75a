// Welder qualifications: what a welder may weld (a WPS, or a process), groove or fillet, in which
// positions and ranges, from when to when; revoked (QW-322.1(b)) with a date and a reason, or
// renewing an earlier one (QW-322.2). `validOn` lists those in force on a date (qualified on or
// before it, not expired, not revoked); continuity lapses (ASME IX QW-322.1(a)) are judged per
// process by the code rules, not this filter (GET /welders/{id}/qualification-status,
// code-rules.ts). The test coupon's diameter and thickness give the ranges it covers when they are
// not stated.
import { z } from 'zod';
import { QUALIFICATION_JOINTS, WELDING_POSITIONS } from '../db/vocabulary.ts';
import { processType, reliedOnProblems } from './pqrs.ts';
import { calendarDate, column, defineResource, inches } from './resource.ts';

export const welderQualifications = defineResource({
  path: 'welder-qualifications',
  schema: 'WelderQualification',
  noun: 'welder qualification',
  plural: 'welder qualifications',
  table: 'weld_public.welder_qualifications',
  description: 'What a welder may weld: a WPS or process, positions, ranges and dates.',
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
    thicknessMaxIn: column.number('thickness_max_in', inches.positive(), {
      nullable: true,
      write: 'always',
    }),
    couponDiameterIn: column.number(
      'coupon_diameter_in',
      inches
        .positive()
        .describe(
          "outside diameter of the test coupon (in.); QW-452.3 derives the qualified diameters from it: with no diameterMinIn, the range rules give the smallest diameter it covers; null: the PQR's diameterTestedIn stands in",
        ),
      { nullable: true, write: 'always' },
    ),
    couponThicknessIn: column.number(
      'coupon_thickness_in',
      inches
        .positive()
        .describe(
          "thickness of the test coupon (in.); QW-452.1 derives the qualified thickness from it: with no thicknessMaxIn, the range rules give the thickest it covers; null: the PQR's thicknessTestedIn stands in",
        ),
      { nullable: true, write: 'always' },
    ),
    joint: {
      column: 'joint',
      type: z
        .enum(QUALIFICATION_JOINTS)
        .describe(
          'groove (default): covers groove welds and fillet welds of every size (QW-303.1); fillet: fillet welds only (QW-303.2)',
        ),
      write: 'always',
    },
    threeLayers: {
      column: 'three_layers',
      type: z
        .boolean()
        .describe(
          "the coupon's weld metal was deposited in at least three layers: with t of 1/2 in. or more it qualifies any thickness (QW-452.1(b)); default false",
        ),
      write: 'always',
    },
    qualifiedOn: column.date('qualified_on', { write: 'always', required: true }),
    expiresOn: column.date('expires_on', { nullable: true, write: 'always' }),
    lastContinuityOn: column.date('last_continuity_on', { nullable: true, write: 'always' }),
    revokedOn: column.date('revoked_on', {
      nullable: true,
      write: 'always',
      type: calendarDate.describe(
        'revoked from this day on (QW-322.1(b)), with revocationReason; null: not revoked',
      ),
    }),
    revocationReason: column.text('revocation_reason', 2000, {
      nullable: true,
      write: 'always',
      // The CHECK counts the reason without its blanks, and refuses a blank one: so does REST,
      // which stores it trimmed (as a continuity use's reference).
      type: z
        .string()
        .trim()
        .min(1)
        .max(2000)
        .describe(
          "why it was revoked: the specific reason to question the welder's ability (QW-322.1(b)); given together with revokedOn",
        ),
    }),
    renewsQualificationId: column.id('renews_qualification_id', {
      nullable: true,
      write: 'always',
      type: z.uuid().describe('the qualification of the same welder this one renews (QW-322.2)'),
    }),
  },
  filters: {
    validOn: {
      // From qualifiedOn through expiresOn, before revokedOn (least() passes over a null bound).
      sql: `?::date <@ daterange(r.qualified_on, least(r.expires_on + 1, r.revoked_on))`,
      type: calendarDate.describe(
        'in force on this date: qualified on or before it, not expired, not revoked',
      ),
    },
  },
  access: {
    create: 'engineer (a WPS or a process is required)',
    update: 'engineer',
    delete: 'engineer',
  },
  problems: reliedOnProblems(false),
});
