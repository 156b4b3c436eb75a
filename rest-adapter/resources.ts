// The resources the REST adapter serves, in the order the API documents them. Adding a resource
// is one file describing it (see isos.ts) and one line here.
import { attachments } from './attachments.ts';
import { components } from './components.ts';
import { fillerLots, weldFillers } from './fillers.ts';
import { hardnessReadings, pwhtRecords } from './heat-treatment.ts';
import { inspections } from './inspections.ts';
import { isos } from './isos.ts';
import { ndtRecords } from './ndt-records.ts';
import { pqrs } from './pqrs.ts';
import { punchItems } from './punch-items.ts';
import type { Resource } from './resource.ts';
import { testPackages } from './test-packages.ts';
import { weldRepairs } from './weld-repairs.ts';
import { welderQualifications } from './welder-qualifications.ts';
import { welders } from './welders.ts';
import { welds } from './welds.ts';
import { wps } from './wps.ts';

export const RESOURCES: Resource[] = [
  isos,
  welds,
  weldRepairs,
  welders,
  pqrs,
  wps,
  welderQualifications,
  ndtRecords,
  inspections,
  testPackages,
  punchItems,
  pwhtRecords,
  hardnessReadings,
  components,
  fillerLots,
  weldFillers,
  attachments,
];
