// Inspections: examinations other than NDT (fit-up, visual, dimensional, final) and the welds
// they cover. Recorded and corrected only through the SQL functions record_inspection and
// correct_inspection (migrations/); corrections need a reason and are kept, with it, in the
// examination history. The inspector's name defaults to the signed-in user's. Inspections do
// not move welds' statuses, and are never deleted.
import { z } from 'zod';
import { EXAMINATION_RESULTS, INSPECTION_KINDS } from '../db/vocabulary.ts';
import { calendarDate, column, defineResource, examinationWrites } from './resource.ts';

const inspectionFields = {
  kind: z.enum(INSPECTION_KINDS),
  inspectorName: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("default: the signed-in user's name"),
  inspectedOn: calendarDate,
  result: z.enum(EXAMINATION_RESULTS),
  notes: z.string().max(10_000).nullable().optional(),
  weldIds: z.array(z.uuid()).min(1).max(1000),
};

export const inspections = defineResource({
  path: 'inspections',
  schema: 'Inspection',
  noun: 'inspection',
  plural: 'inspections',
  table: 'weld_public.inspections',
  description:
    'An examination other than NDT (fit-up, visual, dimensional, final) and the welds it covers.',
  fields: {
    kind: { column: 'kind', type: z.enum(INSPECTION_KINDS), filter: true },
    inspectorName: column.text('inspector_name', 200),
    inspectedOn: column.date('inspected_on'),
    result: { column: 'result', type: z.enum(EXAMINATION_RESULTS), filter: true },
    notes: column.text('notes', 10_000, { nullable: true }),
    recordedBy: column.id('recorded_by', { nullable: true }),
  },
  links: {
    weldIds: {
      table: 'weld_public.inspection_welds',
      owner: 'inspection_id',
      member: 'weld_id',
      target: 'weld_public.welds',
      noun: 'weld',
      description: 'the welds it covers',
    },
  },
  filters: {
    weldId: {
      sql: `exists (select from weld_public.inspection_welds l where l.inspection_id = r.id and l.weld_id = ?::uuid)`,
      type: z.uuid().describe('inspections covering this weld'),
    },
    inspectedSince: {
      sql: 'r.inspected_on >= ?::date',
      type: calendarDate.describe('inspected on or after this date'),
    },
  },
  access: {
    create: 'inspector',
    update: 'inspector, with a reason; kept in the examination history',
  },
  ...examinationWrites(
    { record: 'weld_public.record_inspection', correct: 'weld_public.correct_inspection' },
    inspectionFields,
    inspectionFields,
  ),
});
