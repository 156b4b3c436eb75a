// PQRs: the procedure qualification records that back WPSs and welder qualifications. One that
// is referenced cannot be deleted (409).
import { z } from 'zod';
import { WELDING_PROCESSES } from '../db/vocabulary.ts';
import { column, defineResource, inches, pNumber } from './resource.ts';

const ONE = WELDING_PROCESSES.join('|');
/** One process or a combination joined by "+", e.g. GTAW or GTAW+SMAW. */
export const processType = z
  .string()
  .regex(
    new RegExp(`^(${ONE})(\\+(${ONE}))*$`),
    `must be ${WELDING_PROCESSES.join(', ')} or a combination like GTAW+SMAW`,
  )
  .describe('welding process, or processes joined by + (GTAW+SMAW)');

export const pqrs = defineResource({
  path: 'pqrs',
  schema: 'Pqr',
  noun: 'PQR',
  plural: 'PQRs',
  table: 'weld_public.pqrs',
  description: 'Procedure Qualification Record: the test that qualifies a welding procedure.',
  fields: {
    pqrNumber: column.text('pqr_number', 100, { write: 'always', required: true, filter: true }),
    process: {
      column: 'process',
      type: processType,
      write: 'always',
      required: true,
      filter: true,
    },
    pNumbers: {
      column: 'p_numbers',
      type: z
        .array(pNumber)
        .min(1)
        .max(2)
        .describe(
          'the joint the coupon was welded on (ASME IX QW-422 P-numbers): one (P-No. 1 to P-No. 1) or two (P-No. 1 to P-No. 8)',
        ),
      write: 'always',
      required: true,
    },
    thicknessTestedIn: column.number(
      'thickness_tested_in',
      inches
        .positive()
        .describe('coupon thickness T, inches; QW-451.1 gives the base-metal range it supports'),
      {
        write: 'always',
        required: true,
      },
    ),
    diameterTestedIn: column.number('diameter_tested_in', inches.positive(), {
      nullable: true,
      write: 'always',
    }),
    documentRef: column.text('document_ref', 500, { nullable: true, write: 'always' }),
  },
  access: {
    create: 'engineer',
    update: 'engineer',
    delete:
      'engineer, only while no WPS or qualification refers to it (else 409 /problems/still-referenced)',
  },
});
