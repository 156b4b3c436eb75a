// Welders: known by a stamp that is unique in the tenant and never reused, so a welder is
// deactivated (active: false), never deleted, and the stamp cannot be changed.
import { z } from 'zod';
import { booleanParam, column, defineResource } from './resource.ts';

export const welders = defineResource({
  path: 'welders',
  schema: 'Welder',
  noun: 'welder',
  plural: 'welders',
  table: 'weld_public.welders',
  description: 'A person who welds, known by a stamp that is never reused.',
  fields: {
    stamp: {
      column: 'stamp',
      type: z
        .string()
        .regex(/^[A-Za-z0-9-]{1,20}$/, 'must be 1 to 20 letters, digits or hyphens')
        .describe('unique in the tenant; set once'),
      write: 'create',
      required: true,
      filter: true,
    },
    name: column.text('name', 200, { write: 'always', required: true }),
    active: { column: 'active', type: z.boolean(), write: 'always' },
  },
  filters: { active: { sql: 'r.active = ?', type: booleanParam } },
  access: { create: 'engineer', update: 'engineer (name, active)' },
});
