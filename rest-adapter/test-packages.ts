// Test packages: ISOs and welds released together for a pressure test. Their ISOs and welds
// (isoIds, weldIds, each replaced as a whole) change, and the package may be deleted, only while
// it is open, and its state only moves forward (or from released back to open, withdrawn with a
// reason: POST /test-packages/{id}/withdraw, code-rules.ts): 409 /problems/state-conflict
// otherwise, enforced by triggers in migrations/.
import { z } from 'zod';
import { TEST_MEDIA, TEST_PACKAGE_STATES } from '../db/vocabulary.ts';
import { problem } from './http/operation.ts';
import { column, defineResource } from './resource.ts';

/**
 * What a released test package was judged on stays (migration 000017): its ISOs, WPSs, PQRs and
 * welder qualifications refuse a change that would leave it not ready (isos.ts, pqrs.ts).
 */
export const PACKAGE_RELEASED =
  'the change would leave a released, tested or closed test package not ready (/problems/package-released, naming each package and its reasons: withdraw a released one first; a tested or closed one is the record of its test)';

export const testPackages = defineResource({
  path: 'test-packages',
  schema: 'TestPackage',
  noun: 'test package',
  plural: 'test packages',
  table: 'weld_public.test_packages',
  description: 'ISOs and welds released together for a pressure test.',
  fields: {
    packageNumber: column.text('package_number', 100, {
      write: 'always',
      required: true,
      filter: true,
    }),
    testMedium: {
      column: 'test_medium',
      type: z.enum(TEST_MEDIA),
      write: 'always',
      required: true,
    },
    testPressurePsig: column.number(
      'test_pressure_psig',
      z.number().min(0).max(999_999.99).describe('psig'),
      {
        nullable: true,
        write: 'always',
      },
    ),
    state: {
      column: 'state',
      type: z
        .enum(TEST_PACKAGE_STATES)
        .describe(
          'open (default) -> released -> tested -> closed, each only when ready (GET /test-packages/{id}/readiness); released -> open only by POST /test-packages/{id}/withdraw, with a reason',
        ),
      write: 'always',
      filter: true,
    },
  },
  links: {
    isoIds: {
      table: 'weld_public.test_package_isos',
      owner: 'test_package_id',
      member: 'iso_id',
      target: 'weld_public.isos',
      noun: 'ISO',
      description: 'its ISOs',
      write: true,
    },
    weldIds: {
      table: 'weld_public.test_package_welds',
      owner: 'test_package_id',
      member: 'weld_id',
      target: 'weld_public.welds',
      noun: 'weld',
      description: 'its welds',
      write: true,
    },
  },
  access: {
    create: 'engineer',
    update: 'engineer; isoIds and weldIds only while open',
    delete: 'engineer, only while open (else 409 /problems/state-conflict)',
  },
  problems: {
    conflict: problem(
      "a unique key is taken (/problems/conflict), the package's state refuses the change (/problems/state-conflict: released back to open is POST /test-packages/{id}/withdraw, with a reason), or it is released, tested or closed while not ready (/problems/package-not-ready: `reasons`, the first 100 of GET /test-packages/{id}/readiness, and `reasonCount`, all of them)",
      'PackageNotReadyProblem',
    ),
    deleteConflict: problem(
      'only an open package that was never released is deleted (/problems/state-conflict): a package with a history is the record of its releases',
    ),
  },
});
