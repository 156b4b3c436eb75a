// Each weld and what became of it. A weld gets a type, size, schedule, wall thickness and
// material that fit its line, and a fate: planned, welded and awaiting examination, accepted,
// rejected, repaired and accepted, in repair, rejected late, or voided. The fate is walked one
// step at a time through the default transition rules, and each step is a row of the weld's
// status history; the weld's status, repair cycle and version are where the walk ends.
//
// Examinations decide the steps. Butt and tee welds are radiographed as the line's RT percentage
// asks, and always when their fate is anything but a plain acceptance: the first shots of a day on an ISO share one RT report of
// up to five welds, a re-shoot after repair is a report of its own, each weld gets two to four
// film intervals, and a rejected weld a rejected interval with a defect code, which rejects the
// whole report. Other welds are rejected by the system, or accepted on a visual inspection.
import type { Welder } from './procedures.ts';
import { date, instant, type Random } from './random.ts';
import type { Row, SeedTables } from './tables.ts';

/** The ISO sheet a weld is on, and what its line decides for it. */
export interface Sheet {
  isoId: string;
  /** The project day the ISO was issued. */
  isoDay: number;
  lineSize: number;
  carbon: boolean;
  rtPercent: number;
  /** The welders who work on this sheet. */
  welders: Welder[];
  /** The approved WPSs for the line's material (for a welder qualified to none of them). */
  wps: string[];
}

/** Nominal wall thickness in inches (ASME B36.10/19) for the sizes and schedules we generate. */
const WALL: Record<string, Record<string, number>> = {
  '0.5': { '40': 0.109, '80': 0.147, '10S': 0.083 },
  '0.75': { '40': 0.113, '80': 0.154, '10S': 0.083 },
  '1': { '40': 0.133, '80': 0.179, '10S': 0.109 },
  '1.5': { '40': 0.145, '80': 0.2, '10S': 0.109 },
  '2': { '40': 0.154, '80': 0.218, '10S': 0.109 },
  '3': { '40': 0.216, '80': 0.3, '10S': 0.12 },
  '4': { '40': 0.237, '80': 0.337, '10S': 0.12 },
  '6': { '40': 0.28, '80': 0.432, '10S': 0.134 },
  '8': { '40': 0.322, '80': 0.5, '10S': 0.148 },
  '10': { '40': 0.365, '80': 0.594, '10S': 0.165 },
  '12': { '40': 0.406, '80': 0.688, '10S': 0.18 },
  '16': { '40': 0.5, '80': 0.844, '10S': 0.188 },
  '24': { '40': 0.688, '80': 1.218, '10S': 0.218 },
};
const BRANCH_SIZES = [0.5, 0.75, 1, 1.5, 2];
const TYPES = [
  ['BW', 60],
  ['SW', 20],
  ['FW', 8],
  ['BR', 7],
  ['TW', 5],
] as const;
const FATES = [
  ['planned', 8],
  ['awaiting', 9],
  ['accepted', 70],
  ['repaired', 6],
  ['in-repair', 2],
  ['voided', 2],
  ['late-reject', 1],
  ['rejected', 2],
] as const;
type Fate = (typeof FATES)[number][0];
const DEFECTS = ['PO', 'SI', 'LF', 'IP', 'CR', 'UC', 'BT'];
const TECHNICIANS = ['R. Gupta (ASNT II)', 'M. Ortiz (ASNT II)', 'K. Weber (ASNT III)'];

/** Adds weld `number` of the sheet and its history; returns its id and whether it was welded. */
export function addWeld(
  rng: Random,
  tables: SeedTables,
  rt: RtReports,
  sheet: Sheet,
  number: number,
): { id: string; welded: boolean } {
  const type = rng.weighted(TYPES);
  const size =
    type === 'SW' || type === 'FW'
      ? rng.pick(BRANCH_SIZES)
      : type === 'BR'
        ? rng.pick([...BRANCH_SIZES, sheet.lineSize])
        : sheet.lineSize;
  const schedule = !sheet.carbon
    ? '10S'
    : size <= 2
      ? '80'
      : rng.weighted([
          ['40', 7],
          ['80', 3],
        ]);
  const id = rng.id();
  const weldedDay = sheet.isoDay + rng.int(5, 150);
  const welder = rng.pick(sheet.welders);
  const fate = rng.weighted(FATES);
  const welded = fate !== 'planned';
  const radiographed =
    welded &&
    (type === 'BW' || type === 'TW') &&
    fate !== 'awaiting' &&
    (sheet.rtPercent === 100 || rng.chance(sheet.rtPercent / 100) || fate !== 'accepted');
  const wall = WALL[String(size)]?.[schedule] ?? null;
  // B31.3 Table 330.1.1: 50 F, and 175 F for carbon steel walls of 1 in. and more.
  const preheat = welded ? preheatOf(sheet, wall) : null;
  const history = new History(
    tables,
    id,
    weldedDay + rng.int(1, 5),
    welded ? welder.id : null,
    preheat,
  );
  // A radiographed weld is accepted or rejected by its RT report; another is rejected by the
  // system, and accepted on a visual inspection of that day (its acceptance's basis).
  const examine = (accepted: boolean, alone = false) => {
    const to = accepted ? 'ACCEPTED' : 'REJECTED';
    if (radiographed) {
      history.step(to, 'ndt', rt.shoot(rng, tables, { id, size }, history.day, accepted, alone));
    } else if (accepted) {
      history.step(to, 'system', null, null, visual(rng, tables, id, history.day));
    } else {
      history.step(to, 'system');
    }
  };
  walk(rng, fate, history, examine);
  tables.welds.push({
    id,
    iso_id: sheet.isoId,
    weld_number: `W${String(number).padStart(3, '0')}`,
    type,
    size,
    schedule,
    wall_thickness: wall,
    material: sheet.carbon ? (size <= 2 ? 'A105' : 'A106-B') : 'A312-TP316L',
    welder_id: welded ? welder.id : null,
    // A WPS the welder is qualified to, for the line's material (planned welds too: the welder
    // who will make them is known).
    wps_id: rng.pick(welderWps(welder, sheet)),
    welded_on: welded ? date(weldedDay) : null,
    // Both sides of the line's material: P-No. 1 carbon steel, P-No. 8 stainless (ASME IX QW-422).
    base_metal_1_p_number: sheet.carbon ? '1' : '8',
    base_metal_2_p_number: sheet.carbon ? '1' : '8',
    preheat_f: preheat,
    status: history.status,
    acceptance_ndt_record_id: history.status === 'ACCEPTED' ? history.acceptedBy.ndt : null,
    acceptance_inspection_id: history.status === 'ACCEPTED' ? history.acceptedBy.inspection : null,
    repair_cycle: history.repairCycle,
    version: 1 + history.steps,
    created_at: instant(sheet.isoDay, 0),
    // A welded weld was last touched a minute after its last change (or at 08:00 of the day
    // the first one was due, if none was made).
    updated_at: welded ? instant(history.day, 480 + history.steps) : instant(sheet.isoDay, 0),
  });
  return { id, welded };
}

/** The preheat a weld of the sheet was given: the table's minimum for its material and wall. */
function preheatOf(sheet: Sheet, wall: number | null): number {
  return sheet.carbon && wall !== null && wall >= 1 ? 175 : 50;
}

/** A visual inspection of one weld on `day`, accepted: what an acceptance without RT rests on. */
function visual(rng: Random, tables: SeedTables, weldId: string, day: number): string {
  const id = rng.id();
  tables.inspections.push({
    id,
    kind: 'visual',
    inspector_name: 'QC visual',
    inspected_on: date(day),
    result: 'accepted',
    created_at: instant(day, 470),
    updated_at: instant(day, 470),
  });
  tables.inspectionWelds.push({ inspection_id: id, weld_id: weldId });
  return id;
}

/** The WPSs a welder on the sheet welds to: those they are qualified to for its material. */
function welderWps(welder: Welder, sheet: Sheet): string[] {
  const qualified = sheet.carbon ? welder.wps.carbon : welder.wps.stainless;
  return qualified.length ? qualified : sheet.wps;
}

/** Takes a weld through its fate; planned and awaiting welds have not moved from PENDING. */
function walk(
  rng: Random,
  fate: Fate,
  history: History,
  examine: (accepted: boolean, alone?: boolean) => void,
): void {
  switch (fate) {
    case 'accepted':
      examine(true);
      break;
    case 'repaired':
      examine(false);
      history.day += rng.int(1, 4);
      history.step('REPAIR', 'system');
      history.day += rng.int(1, 6);
      history.step('PENDING', 'system');
      history.day += rng.int(1, 3);
      examine(true, true);
      break;
    case 'in-repair':
      examine(false);
      history.day += rng.int(1, 4);
      history.step('REPAIR', 'system');
      break;
    case 'rejected':
      examine(false);
      break;
    case 'late-reject':
      examine(true);
      history.day += rng.int(20, 60);
      history.step('REJECTED', 'system', null, 'hardness test out of range on re-check');
      break;
    case 'voided':
      if (rng.chance(0.5)) examine(true);
      history.day += rng.int(5, 30);
      history.step('VOIDED', 'system', null, 'weld cut out: line rerouted in revision');
      break;
  }
}

/**
 * A weld's status history as it is made: each change a minute after the last, from 08:00. Each
 * release for repair opens its repair, which the welder who made the weld repairs on the day
 * it leaves REPAIR, with the weld's WPS and preheat.
 */
class History {
  status = 'PENDING';
  repairCycle = 0;
  steps = 0;
  /** The project day of the next change. */
  day: number;
  /** What the last acceptance rests on. */
  acceptedBy: { ndt: string | null; inspection: string | null } = { ndt: null, inspection: null };
  readonly #tables: SeedTables;
  readonly #weldId: string;
  readonly #welderId: string | null;
  readonly #preheat: number | null;
  #repair: Row<SeedTables['repairs']['columns']> | undefined;

  constructor(
    tables: SeedTables,
    weldId: string,
    day: number,
    welderId: string | null,
    preheat: number | null,
  ) {
    this.#tables = tables;
    this.#weldId = weldId;
    this.#welderId = welderId;
    this.#preheat = preheat;
    this.day = day;
  }

  step(
    to: string,
    cause: string,
    ndtRecordId: string | null = null,
    reason: string | null = null,
    inspectionId: string | null = null,
  ) {
    const at = instant(this.day, 480 + this.steps++);
    if (to === 'REPAIR') {
      this.repairCycle++;
      this.#repair = {
        weld_id: this.#weldId,
        repair_cycle: this.repairCycle,
        released_at: at,
        rewelded_at: null,
        welded_on: null,
        welder_id: null,
        preheat_f: null,
        created_at: at,
        updated_at: at,
      };
      this.#tables.repairs.push(this.#repair);
    }
    if (this.status === 'REPAIR' && to === 'PENDING' && this.#repair) {
      Object.assign(this.#repair, {
        rewelded_at: at,
        welded_on: date(this.day),
        welder_id: this.#welderId,
        preheat_f: this.#preheat,
        updated_at: at,
      });
    }
    if (to === 'ACCEPTED') this.acceptedBy = { ndt: ndtRecordId, inspection: inspectionId };
    this.#tables.history.push({
      weld_id: this.#weldId,
      from_status: this.status,
      to_status: to,
      reason,
      changed_at: at,
      repair_cycle: this.repairCycle,
      cause,
      ndt_record_id: ndtRecordId,
      inspection_id: inspectionId,
    });
    this.status = to;
  }
}

type NdtRow = Row<SeedTables['ndt']['columns']>;

/** The RT reports of the project, numbered in order; the report open on the current ISO. */
export class RtReports {
  #count = 0;
  #open: { id: string; day: number; welds: number; marker: number; row: NdtRow } | undefined;

  /** Work moves to another ISO sheet: its first shot starts a report. */
  newSheet(): void {
    this.#open = undefined;
  }

  /** Radiographs a weld on `day`; returns the id of the RT report it is on. */
  shoot(
    rng: Random,
    tables: SeedTables,
    weld: { id: string; size: number },
    day: number,
    accepted: boolean,
    alone: boolean,
  ): string {
    let report = this.#open;
    if (alone || !report || report.welds >= 5 || report.day !== day) {
      const id = rng.id();
      this.#count++;
      const row = tables.ndt.push({
        id,
        method: 'RT',
        report_number: `RT-${String(this.#count).padStart(6, '0')}${alone ? '-R' : ''}`,
        examined_on: date(day),
        technician: rng.pick(TECHNICIANS),
        result: 'accepted',
        created_at: instant(day, 600),
        updated_at: instant(day, 600),
      });
      report = this.#open = { id, day, welds: 0, marker: 0, row };
    }
    report.welds++;
    tables.ndtWelds.push({ ndt_record_id: report.id, weld_id: weld.id });
    // Film intervals between location markers 0-1, 1-2, ... numbered on across the report.
    const intervals = weld.size <= 2 ? 2 : weld.size <= 8 ? 3 : 4;
    const bad = accepted ? -1 : rng.int(0, intervals - 1);
    for (let k = 0; k < intervals; k++, report.marker++) {
      const filmId = rng.id();
      tables.films.push({
        id: filmId,
        ndt_record_id: report.id,
        label: `${report.marker}-${report.marker + 1}`,
        result: k === bad ? 'rejected' : 'accepted',
        defect_codes: k === bad ? [rng.pick(DEFECTS)] : [],
        created_at: instant(day, 600),
        updated_at: instant(day, 600),
      });
      tables.filmWelds.push({
        ndt_record_id: report.id,
        film_interval_id: filmId,
        weld_id: weld.id,
      });
    }
    if (!accepted) report.row.result = 'rejected';
    return report.id;
  }
}
