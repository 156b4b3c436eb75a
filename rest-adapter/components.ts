// Components: the pipe, fittings, flanges and valves a weld joins, each with its material
// (specification, grade, P-number and group), size and the heat it was made from, so that a
// recalled heat is traced to every weld and ISO it touches: GET /welds?heatNumber= and
// GET /isos?heatNumber= (the filters below), GraphQL Component.welds. A weld names up to two
// (component1Id, component2Id) and takes each one's P-number for its side (migration 000039).
// Engineers keep them; one a weld still names is not deleted (409).
import { z } from 'zod';
import { COMPONENT_COLUMNS, exportComponents } from '../db/component-register.ts';
import { COMPONENT_KINDS } from '../db/vocabulary.ts';
import { column, defineResource, inches, pipeSchedule, pNumber } from './resource.ts';

/** A heat number, as the list filters take it. */
export const heatNumberParam = z
  .string()
  .min(1)
  .max(50)
  .describe('a heat number, as its MTR names it');

/** The weld `r` joins a component of the heat `?`. */
export const WELD_OF_HEAT = `exists (select from weld_public.components c
   where c.tenant_id = r.tenant_id and c.heat_number = ?
     and (c.id = r.component_1_id or c.id = r.component_2_id))`;

/** The ISO `r` holds a weld joining a component of the heat `?`. */
export const ISO_OF_HEAT = `exists (select from weld_public.welds w
   join weld_public.components c
     on c.tenant_id = w.tenant_id and (c.id = w.component_1_id or c.id = w.component_2_id)
   where w.tenant_id = r.tenant_id and w.iso_id = r.id and c.heat_number = ?)`;

export const components = defineResource({
  path: 'components',
  schema: 'Component',
  noun: 'component',
  plural: 'components',
  table: 'weld_public.components',
  description:
    'A pipe, fitting, flange or valve a weld joins: its material specification and grade, P-number, size and the heat it was made from.',
  fields: {
    tag: column.text('tag', 100, { write: 'always', required: true, filter: true }),
    kind: {
      column: 'kind',
      type: z.enum(COMPONENT_KINDS),
      write: 'always',
      required: true,
      filter: true,
    },
    description: column.text('description', 200, { nullable: true, write: 'always' }),
    materialSpec: column.text('material_spec', 50, {
      write: 'always',
      required: true,
      filter: true,
    }),
    grade: column.text('grade', 20, { nullable: true, write: 'always' }),
    pNumber: {
      column: 'p_number',
      type: pNumber.describe(
        'ASME IX P-number of its material (QW-422), e.g. 1; a weld joining it takes it for its side',
      ),
      nullable: true,
      write: 'always',
      filter: true,
    },
    groupNumber: column.number(
      'group_number',
      z.number().int().min(1).max(9).describe('ASME IX group number within its P-number (QW-422)'),
      { nullable: true, write: 'always' },
    ),
    size: column.number('size', inches.positive().describe('NPS, inches'), {
      nullable: true,
      write: 'always',
    }),
    schedule: { column: 'schedule', type: pipeSchedule, nullable: true, write: 'always' },
    heatNumber: column.text('heat_number', 50, { nullable: true, write: 'always', filter: true }),
    mtrRef: column.text('mtr_ref', 500, { nullable: true, write: 'always' }),
  },
  csv: {
    fileName: 'components.csv',
    write: exportComponents,
    description:
      `UTF-8 with a BOM, a header row, RFC 4180 quoting; the columns POST /imports/components reads (${COMPONENT_COLUMNS.join(', ')}), ` +
      'in tag order. Text that a spreadsheet would run as a formula (=, +, -, @ first) has a leading apostrophe, ' +
      'which the import removes. Exported then imported, a register changes nothing.',
  },
  access: {
    create: 'engineer',
    update: 'engineer (a new pNumber is taken by the welds that name it)',
    delete: 'engineer, while no weld names it (else 409 /problems/still-referenced)',
  },
});
