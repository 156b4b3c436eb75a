// WPSs: welding procedure specifications, backed by PQRs (pqrIds, replaced as a whole). Number,
// revision and process are set when created; a WPS is superseded, never deleted.
import { z } from 'zod';
import { WPS_STATES } from '../db/vocabulary.ts';
import { processType, reliedOnProblems } from './pqrs.ts';
import { column, defineResource, fahrenheit, inches, pNumber } from './resource.ts';

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
      type: z
        .enum(WPS_STATES)
        .describe(
          'draft (default), approved, superseded. Approved only while its PQRs qualify it (at least one PQR, each process, its thickness range, its P-numbers): else 409 /problems/wps-not-qualified',
        ),
      write: 'always',
      filter: true,
    },
    pNumbers: {
      column: 'p_numbers',
      type: z
        .array(pNumber)
        .min(1)
        .max(2)
        .describe(
          'the joint the WPS covers (QW-403.11): one P-number (P-No. 1 to P-No. 1) or two (P-No. 1 to P-No. 8); null: not recorded (DATA_MISSING)',
        ),
      nullable: true,
      write: 'always',
    },
    additionalJoints: {
      column: 'additional_joints',
      type: z
        .array(
          z
            .string()
            .regex(
              /^[0-9]{1,3}[A-Z]?-[0-9]{1,3}[A-Z]?$/,
              'must be a joint of two P-numbers, P-P (4-1 for P-No. 4 to P-No. 1)',
            ),
        )
        .min(1)
        .max(20)
        .describe(
          'the joints it covers beyond the one its P-numbers name, each P-P (4-3, 4-1), each qualified by one of its PQRs (QW-424.1); null: none',
        ),
      nullable: true,
      write: 'always',
    },
    fNumbers: {
      column: 'f_numbers',
      type: z
        .array(z.number().int().min(1).max(99))
        .min(1)
        .max(10)
        .describe(
          "the filler F-numbers the WPS qualifies (ASME IX QW-404.4); null: not recorded (a weld's fillers are then DATA_MISSING)",
        ),
      nullable: true,
      write: 'always',
    },
    preheatMinF: column.number(
      'preheat_min_f',
      fahrenheit.describe(
        "the minimum preheat the WPS asks, in degrees Fahrenheit; a weld's preheat is held to it where it is above B31.3 Table 330.1.1's",
      ),
      { nullable: true, write: 'always' },
    ),
    pwhtRequired: {
      column: 'pwht_required',
      type: z
        .boolean()
        .describe(
          'true: the WPS is qualified with PWHT (QW-407.1), so its welds need it whatever the wall; false: as-welded, so the exemptions of B31.3 Table 331.1.3 may apply; null: not recorded (no exemption applies)',
        ),
      nullable: true,
      write: 'always',
    },
    thicknessMinIn: column.number(
      'thickness_min_in',
      inches.describe('inches; the range must lie within what its PQRs support (QW-451.1)'),
      { write: 'always' },
    ),
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
  access: {
    create: 'engineer',
    update:
      'engineer (state, pNumbers, additionalJoints, fNumbers, preheatMinF, pwhtRequired, ranges, pqrIds)',
  },
  problems: reliedOnProblems(true),
});
