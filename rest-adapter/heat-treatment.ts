// Heat treatment and hardness (B31.3 331, Table 331.1.1): PWHT records, each one cycle as its
// chart shows it, covering welds (weldIds, replaced as a whole); and hardness readings, one per
// place measured on a weld. Inspectors and engineers record them. They are judged as part of each
// weld's checks (PWHT_REQUIRED, PWHT_OUT_OF_RANGE, HARDNESS_HIGH, HARDNESS_REQUIRED: GET
// /welds/{id}/checks) against the tenant's edition of the table, weld_public.heat_treatment_rules,
// which a DBA edits in SQL.
import { z } from 'zod';
import { HARDNESS_LOCATIONS, PWHT_HEATINGS } from '../db/vocabulary.ts';
import { column, defineResource } from './resource.ts';

const rate = (what: string) => z.number().int().min(0).max(10_000).describe(`${what}, °F per hour`);
const RECORDERS = 'inspector';

export const pwhtRecords = defineResource({
  path: 'pwht-records',
  schema: 'PwhtRecord',
  noun: 'PWHT record',
  plural: 'PWHT records',
  table: 'weld_public.pwht_records',
  description:
    'A postweld heat treatment cycle as its chart shows it (B31.3 331): holding temperature, time at temperature, ' +
    "heating and cooling rates, the chart, and the welds it covers. A weld's latest record dated on or after the " +
    'day it was last welded (its latest repair) is judged against B31.3 Table 331.1.1.',
  fields: {
    recordNumber: column.text('record_number', 100, {
      write: 'always',
      required: true,
      filter: true,
    }),
    treatedOn: column.date('treated_on', { write: 'always', required: true, filter: true }),
    holdingTemperatureF: column.number(
      'holding_temperature_f',
      z
        .number()
        .int()
        .min(0)
        .max(2500)
        .describe(
          "the holding temperature reached, in degrees Fahrenheit: the lowest of the hold (the chart's band)",
        ),
      { write: 'always', required: true },
    ),
    holdMinutes: column.number(
      'hold_minutes',
      z.number().int().min(0).max(100_000).describe('time at the holding temperature, in minutes'),
      { write: 'always', required: true },
    ),
    heatingRateFPerH: column.number('heating_rate_f_per_h', rate('heating rate'), {
      nullable: true,
      write: 'always',
    }),
    coolingRateFPerH: column.number('cooling_rate_f_per_h', rate('cooling rate'), {
      nullable: true,
      write: 'always',
    }),
    chartRef: column.text('chart_ref', 500, { nullable: true, write: 'always' }),
    heating: {
      column: 'heating',
      type: z
        .enum(PWHT_HEATINGS)
        .describe(
          'furnace (a batch in a furnace) or local (bands or pads at each weld); null: not recorded, judged as local (B31.3 331.1.7 asks hardness of every locally treated weld, 10% of a furnace batch)',
        ),
      nullable: true,
      write: 'always',
    },
  },
  filters: {
    weldId: {
      sql: `exists (select from weld_public.pwht_record_welds l
                     where l.tenant_id = r.tenant_id and l.pwht_record_id = r.id and l.weld_id = ?)`,
      type: z.uuid().describe('only the records covering this weld'),
    },
  },
  links: {
    weldIds: {
      table: 'weld_public.pwht_record_welds',
      owner: 'pwht_record_id',
      member: 'weld_id',
      target: 'weld_public.welds',
      noun: 'weld',
      description: 'the welds it covers',
      write: true,
    },
  },
  access: { create: RECORDERS, update: RECORDERS, delete: RECORDERS },
});

export const hardnessReadings = defineResource({
  path: 'hardness-readings',
  schema: 'HardnessReading',
  noun: 'hardness reading',
  plural: 'hardness readings',
  table: 'weld_public.hardness_readings',
  description:
    'A Brinell hardness reading of a weld (B31.3 331.1.7). Readings taken on or after its latest PWHT are ' +
    'judged against the lowest limit of its P-numbers in B31.3 Table 331.1.1.',
  fields: {
    weldId: column.id('weld_id', { write: 'create', required: true, filter: true }),
    measuredOn: column.date('measured_on', { write: 'always', required: true }),
    location: {
      column: 'location',
      type: z
        .enum(HARDNESS_LOCATIONS)
        .describe(
          'where it was taken: weld (the weld metal), haz (heat affected zone) or base (base metal); weld by default',
        ),
      write: 'always',
      filter: true,
    },
    hardnessHb: column.number(
      'hardness_hb',
      z.number().int().min(1).max(1000).describe('Brinell hardness (HB)'),
      { write: 'always', required: true },
    ),
    reportRef: column.text('report_ref', 500, { nullable: true, write: 'always' }),
  },
  access: { create: RECORDERS, update: RECORDERS, delete: RECORDERS },
});
