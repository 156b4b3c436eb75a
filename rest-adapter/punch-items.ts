// Punch items: what a walkdown of a test package found still to do. Category A must be closed
// before the package is released (its readiness names each open one, PUNCH_A_OPEN); B may be
// closed after. Inspectors raise and close them (closing sets closedOn, and the database records
// who: closedBy); an A item raised or reopened on a package that is released, tested or closed is
// refused as every change that would leave it not ready is (409 /problems/package-released).
// Engineers delete them, only while the package is open. Rules: migrations/ (punch_items).
import { z } from 'zod';
import { PUNCH_CATEGORIES } from '../db/vocabulary.ts';
import { problem } from './http/operation.ts';
import { booleanParam, calendarDate, column, defineResource, refusal } from './resource.ts';
import { PACKAGE_RELEASED } from './test-packages.ts';

export const punchItems = defineResource({
  path: 'punch-items',
  schema: 'PunchItem',
  noun: 'punch item',
  plural: 'punch items',
  table: 'weld_public.punch_items',
  description:
    'A punch item of a test package: category A must be closed before the package is released (readiness PUNCH_A_OPEN), B may be closed after.',
  fields: {
    testPackageId: column.id('test_package_id', { write: 'create', required: true, filter: true }),
    itemNumber: {
      column: 'item_number',
      type: z
        .number()
        .int()
        .min(1)
        .max(99999)
        .describe('its number in the package: the next one unless given'),
      write: 'create',
    },
    category: {
      column: 'category',
      type: z.enum(PUNCH_CATEGORIES).describe("A blocks the package's release; B does not"),
      write: 'always',
      required: true,
      filter: true,
    },
    description: column.text('description', 2000, { write: 'always', required: true }),
    raisedBy: column.id('raised_by', {
      nullable: true,
      type: z.uuid().describe('the user who raised it'),
    }),
    raisedOn: column.date('raised_on', {
      write: 'always',
      type: calendarDate.describe('the day it was raised (default today)'),
    }),
    closedOn: column.date('closed_on', {
      nullable: true,
      write: 'always',
      type: calendarDate.describe(
        'the day it was closed; null while open. Setting it records closedBy; null reopens it',
      ),
    }),
    closedBy: column.id('closed_by', {
      nullable: true,
      type: z.uuid().describe('the user who closed it (set when closedOn is)'),
    }),
    closingNote: column.text('closing_note', 2000, { nullable: true, write: 'always' }),
  },
  filters: {
    open: {
      sql: '(r.closed_on is null) = ?',
      type: booleanParam.describe('true: only the open items; false: only the closed ones'),
    },
  },
  access: {
    create: 'inspector',
    update: 'inspector',
    delete: 'engineer, only while its package is open (else 409 /problems/state-conflict)',
  },
  problems: {
    conflict: problem(
      `${refusal.taken}; or an open category A item on a package that is not open: ${PACKAGE_RELEASED}`,
      'PackageReleasedProblem',
    ),
    deleteConflict: problem(
      'its package is not open (/problems/state-conflict): the item is the record of the walkdown; close it instead',
    ),
  },
});
