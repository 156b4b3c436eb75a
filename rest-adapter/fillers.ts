// Filler metal (ASME IX QW-404.4): filler lots, each an AWS classification with its F-number and
// A-number and certificate, kept by engineers; and weld fillers, the lots a weld was made with,
// one per process (a GTAW root and an SMAW fill are two), recorded by inspectors as the work is.
// Each weld's fillers are judged against its WPS's fNumbers and processes as part of its checks
// (FILLER_NOT_COVERED: GET /welds/{id}/checks).
import { z } from 'zod';
import { WELDING_PROCESSES } from '../db/vocabulary.ts';
import { column, defineResource } from './resource.ts';

export const fillerLots = defineResource({
  path: 'filler-lots',
  schema: 'FillerLot',
  noun: 'filler lot',
  plural: 'filler lots',
  table: 'weld_public.filler_lots',
  description:
    'A lot (or heat) of filler metal: its AWS classification, F-number and A-number (ASME IX QW-432, QW-442) and its certificate.',
  fields: {
    awsClassification: column.text('aws_classification', 30, {
      write: 'always',
      required: true,
      filter: true,
    }),
    lotNumber: column.text('lot_number', 50, { write: 'always', required: true, filter: true }),
    spec: column.text('spec', 20, { nullable: true, write: 'always' }),
    fNumber: column.number(
      'f_number',
      z
        .number()
        .int()
        .min(1)
        .max(99)
        .describe('ASME IX F-number (QW-432), e.g. 4 for E7018, 6 for ER70S-2'),
      { write: 'always', required: true },
    ),
    aNumber: column.number(
      'a_number',
      z
        .number()
        .int()
        .min(1)
        .max(99)
        .describe('ASME IX A-number of the weld metal analysis (QW-442)'),
      { nullable: true, write: 'always' },
    ),
    certificateRef: column.text('certificate_ref', 500, { nullable: true, write: 'always' }),
  },
  access: {
    create: 'engineer',
    update: 'engineer',
    delete: 'engineer, while no weld names it (else 409 /problems/still-referenced)',
  },
});

export const weldFillers = defineResource({
  path: 'weld-fillers',
  schema: 'WeldFiller',
  noun: 'weld filler',
  plural: 'weld fillers',
  table: 'weld_public.weld_fillers',
  description:
    'A filler lot a weld was made with, for one process (a GTAW root and SMAW fill are two rows).',
  fields: {
    weldId: column.id('weld_id', { write: 'create', required: true, filter: true }),
    process: {
      column: 'process',
      type: z
        .enum(WELDING_PROCESSES)
        .describe("the process the filler was used with: one of the weld's WPS"),
      write: 'always',
      required: true,
      filter: true,
    },
    fillerLotId: column.id('filler_lot_id', { write: 'always', required: true, filter: true }),
  },
  access: { create: 'inspector', update: 'inspector', delete: 'inspector' },
});
