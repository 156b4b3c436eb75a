// What the app knows of the service's resources: their shapes as the REST paths answer them
// (docs/api.md, "Data paths (REST)"; /openapi.json), and the weld status rules as GET /weld-transitions gives
// them, so only the changes open to the signed-in user are offered.
import { api, type User } from './api.ts';

export const STATUSES = ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'] as const;
export type Status = (typeof STATUSES)[number];
// As db/vocabulary.ts spells them (test/db/vocabulary.test.ts holds the two equal).
export const WELD_TYPES = ['BW', 'SW', 'FW', 'BR', 'TW', 'MW', 'LW'] as const;
export const NDT_METHODS = ['RT', 'UT', 'MT', 'PT', 'VT', 'PWHT', 'PMI', 'HT'] as const;
export const INSPECTION_KINDS = ['fit-up', 'visual', 'dimensional', 'final'] as const;
export type Result = 'accepted' | 'rejected';

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Weld {
  id: string;
  isoId: string;
  weldNumber: string;
  type: string;
  size: number;
  schedule: string | null;
  wallThickness: number | null;
  material: string | null;
  welderId: string | null;
  wpsId: string | null;
  weldedOn: string | null;
  baseMetal1PNumber: string | null;
  baseMetal2PNumber: string | null;
  component1Id: string | null;
  component2Id: string | null;
  preheatF: number | null;
  status: Status;
  repairCycle: number;
  /**
   * Its place on its ISO's drawing (weld-map.tsx): a page, and fractions of the page's width and
   * height from the top-left corner; all three or none.
   */
  mapPage: number | null;
  mapX: number | null;
  mapY: number | null;
  version: number;
  updatedAt: string;
}

/** An ISO's welds read best in weld number order (W2 before W10). */
export const byWeldNumber = (a: Weld, b: Weld): number =>
  a.weldNumber.localeCompare(b.weldNumber, undefined, { numeric: true });

/** The ETag of a weld as the app holds it (If-Match checks the version). */
export const tagOf = (weld: Weld): string => `"${weld.version}"`;

/** An ISO as GET /isos/{id} answers it (what the app uses of it). */
export interface Iso {
  id: string;
  isoNumber: string;
  lineNumber: string;
  /** The attachment (of this ISO: a PDF or an image) that is its drawing. */
  drawingId: string | null;
  version: number;
}

/** A file kept with a record (POST /attachments): here, an ISO's drawings. */
export interface Attachment {
  id: string;
  fileName: string;
  contentType: 'application/pdf' | 'image/png' | 'image/jpeg' | 'text/csv';
  sizeBytes: number;
  /** The SHA-256 of its bytes: two files of one name told apart. */
  sha256: string;
  isoId: string | null;
  description: string | null;
  version: number;
  createdAt: string;
}

/** A pipe, fitting, flange or valve a weld joins (GET /components/{id}). */
export interface Component {
  id: string;
  tag: string;
  kind: string;
  materialSpec: string;
  grade: string | null;
  pNumber: string | null;
  heatNumber: string | null;
  mtrRef: string | null;
}

/** A filler lot a weld was made with, for a process (GET /weld-fillers, /filler-lots/{id}). */
export interface WeldFiller {
  id: string;
  process: string;
  fillerLotId: string;
}
export interface FillerLot {
  id: string;
  awsClassification: string;
  lotNumber: string;
  fNumber: number;
}

export interface PwhtRecord {
  id: string;
  recordNumber: string;
  treatedOn: string;
  holdingTemperatureF: number;
  holdMinutes: number;
  chartRef: string | null;
}

export interface HardnessReading {
  id: string;
  measuredOn: string;
  location: 'weld' | 'haz' | 'base';
  hardnessHb: number;
}

export interface IsoProgress {
  isoId: string;
  isoNumber: string;
  lineNumber: string;
  area: string | null;
  total: number;
  pending: number;
  accepted: number;
  rejected: number;
  repair: number;
  voided: number;
}

export interface HistoryEntry {
  id: number;
  fromStatus: Status;
  toStatus: Status;
  reason: string | null;
  changedBy: string | null;
  /** Who, by name (null for the system). */
  changedByName: string | null;
  changedAt: string;
  cause: 'user' | 'ndt' | 'system';
  ndtRecordId: string | null;
}

export interface NdtRecord {
  id: string;
  method: string;
  reportNumber: string;
  examinedOn: string;
  technician: string | null;
  result: Result;
  welds: Array<{ weldId: string; result: Result }>;
  filmIntervals?: Array<{
    id: string;
    label: string;
    result: Result;
    defectCodes: string[];
    weldIds: string[];
  }>;
}

export interface Inspection {
  id: string;
  kind: string;
  inspectorName: string;
  inspectedOn: string;
  result: Result;
  notes: string | null;
  weldIds: string[];
}

export interface WeldChecks {
  ok: boolean;
  checks: Array<{ code: string; detail: string }>;
}

export interface Transition {
  fromStatus: Status;
  toStatus: Status;
  leastRole: User['role'];
  reasonRequired: boolean;
  note: string | null;
}

export interface Choice {
  id: string;
  label: string;
}

const choices = new Map<string, Promise<Choice[]>>();

/**
 * The welders or WPSs to filter by (the first 500, by id), read once per page load: `label`
 * says which is which (a welder's stamp and name, a WPS's number).
 */
export function choicesOf(kind: 'welders' | 'wps'): Promise<Choice[]> {
  let list = choices.get(kind);
  if (!list) {
    list = api<Page<{ id: string; stamp?: string; name?: string; wpsNumber?: string }>>(
      `/${kind}?limit=500`,
    ).then(({ body }) =>
      body.items
        .map((i) => ({ id: i.id, label: i.wpsNumber ?? `${i.stamp} ${i.name}` }))
        .sort((a, b) => a.label.localeCompare(b.label, undefined, { numeric: true })),
    );
    list.catch(() => choices.delete(kind));
    choices.set(kind, list);
  }
  return list;
}

const RANK: Record<User['role'], number> = { viewer: 0, inspector: 1, engineer: 2, admin: 3 };

let rules: Promise<Transition[]> | undefined;

/** The tenant's rules, read once per page load (a DBA changes them rarely). */
export function transitionRules(): Promise<Transition[]> {
  rules ??= api<{ items: Transition[] }>('/weld-transitions').then(
    (answer) => answer.body.items,
    (error: unknown) => {
      rules = undefined;
      throw error;
    },
  );
  return rules;
}

/** The changes from `status` that `role` may make, in the rules' order. */
export function nextSteps(all: Transition[], status: Status, role: User['role']): Transition[] {
  return all.filter((t) => t.fromStatus === status && RANK[role] >= RANK[t.leastRole]);
}

export const today = (): string => new Date().toISOString().slice(0, 10);

export function when(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** A query string of the non-empty values, in the order given. */
export function query(params: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) search.set(key, value);
  const text = search.toString();
  return text ? `?${text}` : '';
}
