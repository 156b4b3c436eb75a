// Weld repairs: one per repair cycle of a weld, opened when it is released for repair (REJECTED
// -> REPAIR) and marked re-welded when it leaves REPAIR (PATCH /welds/{id}/status, which may give
// the repair's welding then). Inspectors record or correct its welding here: the day it was
// welded, the welder, the WPS and the preheat. The repair's rules (its day after the weld's and
// before the examinations of it; refuse mode; a released package's hold) are SQL's
// (weld_private.tg_weld_repairs__welding). Repairs are never created nor deleted here.
import { z } from 'zod';
import { problem } from './http/operation.ts';
import { calendarDate, column, defineResource, fahrenheit, refusal } from './resource.ts';

export const weldRepairs = defineResource({
  path: 'weld-repairs',
  schema: 'WeldRepair',
  noun: 'weld repair',
  plural: 'weld repairs',
  table: 'weld_public.weld_repairs',
  description:
    'A repair cycle of a weld: released for repair (REJECTED -> REPAIR), then re-welded (REPAIR -> PENDING) on its own date, by its own welder, with its own WPS and preheat (B31.3 328.6).',
  fields: {
    weldId: column.id('weld_id', { filter: true }),
    repairCycle: column.number(
      'repair_cycle',
      z.number().int().min(1).describe('which repair of the weld it is: 1 for the first'),
    ),
    releasedAt: column.instant('released_at', {
      type: z.iso
        .datetime()
        .describe('when the weld was released for this repair (REJECTED -> REPAIR)'),
    }),
    releasedBy: column.id('released_by', {
      nullable: true,
      type: z.uuid().describe('the user who released it for repair'),
    }),
    reweldedAt: column.instant('rewelded_at', {
      nullable: true,
      type: z.iso
        .datetime()
        .describe(
          'when the repair was reported welded (REPAIR -> PENDING); null while the weld is in REPAIR',
        ),
    }),
    weldedOn: column.date('welded_on', {
      nullable: true,
      write: 'update',
      type: calendarDate.describe(
        'the day the repair was welded; null: not recorded (DATA_MISSING once re-welded). On or after the day the weld was made. Re-examinations, PWHT and continuity count from it',
      ),
    }),
    welderId: column.id('welder_id', {
      nullable: true,
      write: 'update',
      filter: true,
      type: z
        .uuid()
        .describe(
          'the welder who made the repair; null: not recorded (DATA_MISSING once re-welded)',
        ),
    }),
    wpsId: column.id('wps_id', {
      nullable: true,
      write: 'update',
      type: z
        .uuid()
        .describe("the WPS the repair was welded to (its repair WPS); null: the weld's own WPS"),
    }),
    preheatF: column.number(
      'preheat_f',
      fahrenheit.describe(
        'the minimum preheat temperature recorded for the repair, in degrees Fahrenheit (B31.3 330)',
      ),
      { nullable: true, write: 'update' },
    ),
  },
  access: { update: 'inspector (weldedOn, welderId, wpsId, preheatF)' },
  problems: {
    invalid: problem(
      `${refusal.invalid}; a weldedOn before the weld was made or its previous repair, or after an examination recorded since it was released for this repair (/problems/validation-failed); or, where the tenant refuses failing welds, a welder or WPS that leaves the repair failing the checks (/problems/weld-checks-failed, named "repair N: ...")`,
      'WeldChecksProblem',
    ),
    conflict: problem(
      'a package holding the weld is released, tested or closed, and the repair was recorded already (/problems/state-conflict)',
    ),
  },
});
