// NDT records: one examination report and the welds it covers, with their results; for RT also
// the film intervals, each mapped to welds of the record. Recorded and corrected only through the
// SQL functions record_ndt and correct_ndt_record (migrations/), which validate the whole record,
// derive omitted RT results from the film, and apply the results to the welds' statuses through
// the lifecycle rules, all in the request's one transaction. Corrections need a reason and are
// kept, with it, in the examination history. Records are never deleted.
import { z } from 'zod';
import { EXAMINATION_RESULTS, NDT_METHODS } from '../db/vocabulary.ts';
import { problem } from './http/operation.ts';
import { calendarDate, column, defineResource, examinationWrites, type Field } from './resource.ts';

const result = z.enum(EXAMINATION_RESULTS);

/** The length of the defects found, inches (numeric(6, 3) over 0): for the repair rate by length. */
const defectLength = z
  .number()
  .gt(0)
  .max(999.999)
  .describe('the length of the defects found, in inches (for the repair rate by length)');

const WeldResult = z.strictObject({
  weldId: z.uuid(),
  result: result
    .nullable()
    .optional()
    .describe('required except for RT, where it is derived from the film intervals when omitted'),
  defectLengthIn: defectLength
    .nullable()
    .optional()
    .describe(
      'the length of the defects this examination found in the weld, in inches (for the repair rate by length); with a rejected result only (a result left to the film carries its lengths on the rejected intervals)',
    ),
});

const FilmInterval = z.strictObject({
  label: z
    .string()
    .regex(/^[0-9A-Za-z]{1,10}-[0-9A-Za-z]{1,10}$/, 'must be two location markers, e.g. 0-1')
    .describe('location markers, e.g. 0-1'),
  result,
  defectCodes: z.array(z.string().min(1).max(20)).max(50).describe('required when rejected'),
  defectLengthIn: defectLength
    .nullable()
    .optional()
    .describe(
      'the length of the defects in this interval, in inches (for the repair rate by length); rejected intervals only',
    ),
  weldIds: z.array(z.uuid()).min(1).max(20).describe('welds of this record the interval shows'),
});

const fields = {
  method: { column: 'method', type: z.enum(NDT_METHODS), filter: true },
  reportNumber: column.text('report_number', 100),
  examinedOn: column.date('examined_on'),
  technician: column.text('technician', 200, { nullable: true }),
  notes: column.text('notes', 10_000, { nullable: true }),
  result: {
    column: 'result',
    type: result.describe('rejected when any weld is'),
    filter: true,
  },
  recordedBy: column.id('recorded_by', { nullable: true }),
} satisfies Record<string, Field>;

// What a record and its correction give: the fields as they are read, and the lists.
const reportFields = {
  reportNumber: fields.reportNumber.type,
  examinedOn: fields.examinedOn.type,
  technician: fields.technician.type.nullable().optional(),
  notes: fields.notes.type.nullable().optional(),
  welds: z.array(WeldResult).min(1).max(200),
  filmIntervals: z
    .array(FilmInterval)
    .max(500)
    .optional()
    .describe('RT only; at most 1,000 interval-to-weld mappings in all'),
};

// Each weld of the record with its result (the one given, or the film's for RT), and the film
// intervals: SQL functions of migration 000010, which the events' payloads use too.
const WELDS_WITH_RESULTS = 'weld_hidden.ndt_record_welds_json(r)';
const FILM_INTERVALS = 'weld_hidden.ndt_record_film_json(r)';

export const ndtRecords = defineResource({
  path: 'ndt-records',
  schema: 'NdtRecord',
  noun: 'NDT record',
  plural: 'NDT records',
  table: 'weld_public.ndt_records',
  description:
    'One non-destructive examination report (RT, UT, ...) and the welds it covers, with their results; for RT also its film intervals.',
  fields,
  computed: {
    welds: {
      read: WELDS_WITH_RESULTS,
      type: z.array(
        z.object({
          weldId: z.uuid(),
          result,
          defectLengthIn: defectLength.nullable(),
          acceptanceHeld: z
            .string()
            .nullable()
            .describe(
              "why this record's acceptance did not move the weld to ACCEPTED: another examination of it is still owed (B31.3 341.3.3); null when it did, or when the result is a rejection",
            ),
        }),
      ),
    },
    filmIntervals: {
      read: FILM_INTERVALS,
      type: z
        .array(FilmInterval.extend({ id: z.uuid(), defectLengthIn: defectLength.nullable() }))
        .describe('RT only; [] otherwise'),
    },
  },
  filters: {
    weldId: {
      sql: `exists (select from weld_public.ndt_record_welds l where l.ndt_record_id = r.id and l.weld_id = ?::uuid)`,
      type: z.uuid().describe('records covering this weld'),
    },
    examinedSince: {
      sql: 'r.examined_on >= ?::date',
      type: calendarDate.describe('examined on or after this date'),
    },
  },
  access: {
    create: 'inspector',
    update: 'inspector, with a reason; kept in the examination history',
  },
  problems: {
    conflict: problem(
      'a duplicate report number (/problems/conflict), or NDT results the lifecycle rules refuse (/problems/ndt-result-refused, naming each weld)',
      'NdtResultProblem',
    ),
  },
  ...examinationWrites(
    { record: 'weld_public.record_ndt', correct: 'weld_public.correct_ndt_record' },
    { method: fields.method.type, ...reportFields },
    reportFields,
  ),
});
