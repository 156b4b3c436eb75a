// Inspections: examinations other than NDT (fit-up, visual, dimensional, final) and the welds
// they cover. Recorded and corrected only through the SQL functions record_inspection and
// correct_inspection (migrations/); corrections need a reason and are kept, with it, in the
// examination history. The inspector's name defaults to the signed-in user's. Inspections do
// not move welds' statuses, and are never deleted.
import { z } from 'zod';
import { EXAMINATION_RESULTS, INSPECTION_KINDS } from '../db/vocabulary.ts';
import { calendarDate, column, defineResource, examinationWrites, type Field } from './resource.ts';

const fields = {
  kind: { column: 'kind', type: z.enum(INSPECTION_KINDS), filter: true },
  inspectorName: column.text('inspector_name', 200),
  inspectedOn: column.date('inspected_on'),
  result: { column: 'result', type: z.enum(EXAMINATION_RESULTS), filter: true },
  notes: column.text('notes', 10_000, { nullable: true }),
  recordedBy: column.id('recorded_by', { nullable: true }),
} satisfies Record<string, Field>;

// What a record and its correction give: the fields as they are read, and the welds.
const inspectionFields = {
  kind: fields.kind.type,
  inspectorName: fields.inspectorName.type
    .optional()
    .describe("default: the signed-in user's name"),
  inspectedOn: fields.inspectedOn.type,
  result: fields.result.type,
  notes: fields.notes.type.nullable().optional(),
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
  fields,
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
