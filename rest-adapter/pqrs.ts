// PQRs: the procedure qualification records that back WPSs and welder qualifications. One that
// is referenced cannot be deleted (409).
import { z } from 'zod';
import { WELDING_PROCESSES } from '../db/vocabulary.ts';
import { problem } from './http/operation.ts';
import { column, defineResource, inches, pNumber, refusal, type ResourceSpec } from './resource.ts';
import { PACKAGE_RELEASED } from './test-packages.ts';

const ONE = WELDING_PROCESSES.join('|');
/** One process or a combination joined by "+", e.g. GTAW or GTAW+SMAW. */
export const processType = z
  .string()
  .regex(
    new RegExp(`^(${ONE})(\\+(${ONE}))*$`),
    `must be ${WELDING_PROCESSES.join(', ')} or a combination like GTAW+SMAW`,
  )
  .describe('welding process, or processes joined by + (GTAW+SMAW)');

// Where the tenant refuses failing welds, a change of what a weld relies on (its WPS and the
// WPS's PQRs, its welder's qualification) that leaves it failing is refused as the weld's is.
const RELIED_FAILING =
  " or, where the tenant refuses welds that fail the code checks (tenant_settings.weld_checks = 'refuse'), a change that leaves a weld relying on it failing them (/problems/weld-checks-failed, naming the first such weld's `checks`)";
const WPS_NOT_QUALIFIED =
  '; or an approved WPS would not be qualified by its PQRs (/problems/wps-not-qualified, with `checks`, and `wpsId` unless the refused write was its creation)';

/**
 * The refusals of what welds rely on: a qualification; or, `qualifiesWps`, a PQR or a WPS, whose
 * writes may also leave an approved WPS unqualified.
 */
export function reliedOnProblems(qualifiesWps: boolean): ResourceSpec['problems'] {
  const more = qualifiesWps ? WPS_NOT_QUALIFIED : '';
  const held = qualifiesWps
    ? ['WpsNotQualifiedProblem', 'PackageReleasedProblem']
    : 'PackageReleasedProblem';
  return {
    conflict: problem(`${refusal.taken}; ${PACKAGE_RELEASED}${more}`, held),
    invalid: problem(`${refusal.invalid};${RELIED_FAILING}`, 'WeldChecksProblem'),
    deleteConflict: problem(`${refusal.referenced}; ${PACKAGE_RELEASED}${more}`, held),
    deleteInvalid: problem(RELIED_FAILING.trim(), 'WeldChecksProblem'),
  };
}

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
  problems: reliedOnProblems(true),
});
