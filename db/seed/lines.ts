// The project as drawn: lines, each with a line number, a fluid service, the RT percentage
// B31.3 asks for that service, a size and a piping class of its material (carbon steel or
// stainless), and a test package; each line drawn on one to four ISO sheets. Each sheet has its
// welds (welds.ts), the one to three welders who make them, and a visual inspection of the
// welds that were made.
import type { Welder, WpsByMaterial } from './procedures.ts';
import { date, instant, type Random } from './random.ts';
import type { SeedTables } from './tables.ts';
import { addWeld, RtReports, type Sheet } from './welds.ts';

const SERVICES = [
  // fluid service, weight, RT percent, service code, carbon (true) or stainless line
  ['normal', 70, 5, 'P', true],
  ['normal', 6, 10, 'HC', true],
  ['category_d', 14, 0, 'CW', true],
  ['category_m', 3, 100, 'TX', false],
  ['severe_cyclic', 2, 100, 'ST', true],
  ['high_pressure', 5, 100, 'HP', true],
] as const;
const LINE_SIZES = [2, 3, 4, 6, 8, 10, 12, 16, 24];
const INSPECTORS = ['QC A. Moreau', 'QC B. Tanaka', 'QC C. Adeyemi'];

interface Project {
  isos: number;
  weldsPerIso: number;
  wps: WpsByMaterial;
  welders: Welder[];
}

/** What a line's sheets share. */
interface Line {
  number: number;
  /** As on the drawings: size, service code, number and piping class. */
  lineNumber: string;
  area: string;
  pipingClass: string;
  fluidService: string;
  rtPercent: number;
  carbon: boolean;
  size: number;
  packageId: string;
  sheets: number;
}

/**
 * Adds the project's lines until it has `project.isos` sheets. Yields after each sheet, when the
 * rows made so far may be written: their parents are made, and none of them changes later.
 */
export function* addLines(rng: Random, tables: SeedTables, project: Project): Generator<void> {
  const rt = new RtReports();
  // Stainless lines go to welders qualified for stainless (when the project has any).
  const stainless = project.welders.filter((w) => w.wps.stainless.length > 0);
  const crews = {
    carbon: project.welders,
    stainless: stainless.length ? stainless : project.welders,
  };
  let isos = 0;
  let lineNo = 1000;
  while (isos < project.isos) {
    lineNo += rng.int(1, 7);
    const line = addLine(rng, tables, lineNo, project.isos - isos);
    for (let sheetNo = 1; sheetNo <= line.sheets; sheetNo++, isos++) {
      addSheet(rng, tables, rt, project, crews, line, sheetNo);
      yield;
    }
  }
}

/** A line and its test package; `sheetsLeft` caps the sheets it is drawn on. */
function addLine(rng: Random, tables: SeedTables, lineNo: number, sheetsLeft: number): Line {
  const [fluidService, , rtPercent, code, carbon] = rng.weighted(
    SERVICES.map((s) => [s, s[1]] as const),
  );
  const size = rng.pick(LINE_SIZES);
  const pipingClass = carbon ? rng.pick(['A1A', 'B1A', 'A3B', 'D1A']) : rng.pick(['S1A', 'S3A']);
  const area = `U-${rng.int(1, 9)}00`;
  const sheets = Math.min(rng.int(1, 4), sheetsLeft);
  const packageId = rng.id();
  const packageDay = rng.int(200, 320);
  tables.packages.push({
    id: packageId,
    package_number: `TP-${lineNo}`,
    test_medium:
      fluidService === 'category_d'
        ? 'service'
        : rng.weighted([
            ['hydro', 9],
            ['pneumatic', 1],
          ]),
    test_pressure_psig: rng.int(15, 120) * 5,
    state: rng.weighted([
      ['open', 6],
      ['released', 3],
      ['tested', 1],
    ]),
    created_at: instant(packageDay, 0),
    updated_at: instant(packageDay, 0),
  });
  const lineNumber = `${size}"-${code}-${lineNo}-${pipingClass}`;
  return {
    number: lineNo,
    lineNumber,
    area,
    pipingClass,
    fluidService,
    rtPercent,
    carbon,
    size,
    packageId,
    sheets,
  };
}

/** Sheet `sheetNo` of a line: the ISO, its welds, their test package links and inspection. */
function addSheet(
  rng: Random,
  tables: SeedTables,
  rt: RtReports,
  project: Project,
  crews: { carbon: Welder[]; stainless: Welder[] },
  line: Line,
  sheetNo: number,
): void {
  rt.newSheet();
  const isoId = rng.id();
  const isoDay = rng.int(0, 60);
  tables.isos.push({
    id: isoId,
    iso_number: `ISO-${line.area}-${line.number}-${String(sheetNo).padStart(2, '0')}`,
    revision: String(rng.int(0, 3)),
    line_number: line.lineNumber,
    area: line.area,
    piping_class: line.pipingClass,
    fluid_service: line.fluidService,
    rt_percent: line.rtPercent,
    created_at: instant(isoDay, 0),
    updated_at: instant(isoDay, 0),
  });
  tables.packageIsos.push({ test_package_id: line.packageId, iso_id: isoId });
  const sheet: Sheet = {
    isoId,
    isoDay,
    lineSize: line.size,
    carbon: line.carbon,
    rtPercent: line.rtPercent,
    welders: Array.from({ length: rng.int(1, 3) }, () =>
      rng.pick(line.carbon ? crews.carbon : crews.stainless),
    ),
    wps: line.carbon ? project.wps.carbon : project.wps.stainless,
  };
  const visualId = rng.id();
  let inspected = 0;
  for (let number = 1; number <= project.weldsPerIso; number++) {
    const weld = addWeld(rng, tables, rt, sheet, number);
    tables.packageWelds.push({ test_package_id: line.packageId, weld_id: weld.id });
    if (weld.welded) {
      tables.inspectionWelds.push({ inspection_id: visualId, weld_id: weld.id });
      inspected++;
    }
  }
  if (inspected > 0) {
    const day = isoDay + 160;
    tables.inspections.push({
      id: visualId,
      kind: 'visual',
      inspector_name: rng.pick(INSPECTORS),
      inspected_on: date(day),
      result: 'accepted',
      created_at: instant(day, 900),
      updated_at: instant(day, 900),
    });
  }
}
