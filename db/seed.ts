// Demo data: a realistic, reproducible piping project for one tenant.
//
//   weld-admin seed <tenant-slug> [--isos N] [--welds-per-iso M] [--seed S]
//
// Everything comes from one seeded pseudo-random generator, ids and dates included, so the same
// --seed gives the same rows in any tenant. The project: lines of one to four ISO sheets with
// line numbers, fluid services and the RT percentage B31.3 asks for; welds whose type, size,
// schedule, wall thickness and material fit the line; welders with stamps and qualifications;
// PQRs backing approved WPSs; RT records with film intervals (and defects where a weld failed);
// a visual inspection per ISO; a test package per line; and status histories that follow the
// default transition rules (accepted, rejected and repaired, a few voided).
//
// Rows go in as columnar batches through unnest(), all in one transaction, written as the owner.
import type pg from 'pg';

export interface SeedOptions {
  isos: number;
  weldsPerIso: number;
  seed: number;
  /** Called after each batch with the welds written so far. */
  onProgress?: (written: number, total: number) => void;
}

export interface SeedSummary {
  isos: number;
  welds: number;
  welders: number;
  historyRows: number;
  ndtRecords: number;
  filmIntervals: number;
}

export class SeedError extends Error {}

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const hex = (digits: number) =>
    Array.from({ length: digits }, () => Math.floor(next() * 16).toString(16)).join('');
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
    weighted: <T>(choices: ReadonlyArray<readonly [T, number]>): T => {
      let roll = next() * choices.reduce((sum, [, w]) => sum + w, 0);
      for (const [value, weight] of choices) if ((roll -= weight) < 0) return value;
      return choices.at(-1)![0];
    },
    uuid: () =>
      `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[Math.floor(next() * 4)]}${hex(3)}-${hex(12)}`,
  };
}

const PROJECT_START = Date.UTC(2026, 0, 5);
const DAY = 86_400_000;
const date = (day: number) => new Date(PROJECT_START + day * DAY).toISOString().slice(0, 10);
const instant = (day: number, minutes: number) =>
  new Date(PROJECT_START + day * DAY + minutes * 60_000).toISOString();

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
const LINE_SIZES = [2, 3, 4, 6, 8, 10, 12, 16, 24];
const BRANCH_SIZES = [0.5, 0.75, 1, 1.5, 2];
const DEFECTS = ['PO', 'SI', 'LF', 'IP', 'CR', 'UC', 'BT'];

const SERVICES = [
  // fluid service, weight, RT percent, service code, carbon (true) or stainless line
  ['normal', 70, 5, 'P', true],
  ['normal', 6, 10, 'HC', true],
  ['category_d', 14, 0, 'CW', true],
  ['category_m', 3, 100, 'TX', false],
  ['severe_cyclic', 2, 100, 'ST', true],
  ['high_pressure', 5, 100, 'HP', true],
] as const;

/** Columns of one table, and the Postgres array type each is sent as. */
class Batch {
  readonly table: string;
  readonly types: Record<string, string>;
  columns: Record<string, unknown[]>;
  constructor(table: string, types: Record<string, string>) {
    this.table = table;
    this.types = types;
    this.columns = Object.fromEntries(Object.keys(types).map((name) => [name, []]));
  }
  push(row: Record<string, unknown>): void {
    for (const name of Object.keys(this.types)) this.columns[name]!.push(row[name] ?? null);
  }
  get size(): number {
    return Object.values(this.columns)[0]!.length;
  }
  async flush(db: pg.ClientBase): Promise<number> {
    const n = this.size;
    if (n === 0) return 0;
    const names = Object.keys(this.types);
    // text[][] (defect codes, P-numbers) cannot ride in unnest; they travel as JSON text.
    const selects = names.map((name, i) =>
      this.types[name] === 'jsonarray'
        ? `array(select jsonb_array_elements_text(c${i}::jsonb))`
        : `c${i}`,
    );
    const sources = names.map(
      (name, i) => `$${i + 1}::${this.types[name] === 'jsonarray' ? 'text' : this.types[name]}[]`,
    );
    await db.query(
      `insert into ${this.table} (${names.join(', ')})
       select ${selects.join(', ')} from unnest(${sources.join(', ')})
         as u(${names.map((_, i) => `c${i}`).join(', ')})`,
      names.map((name) =>
        this.types[name] === 'jsonarray'
          ? this.columns[name]!.map((v) => JSON.stringify(v))
          : this.columns[name],
      ),
    );
    for (const name of names) this.columns[name] = [];
    return n;
  }
}

export async function seedTenant(
  db: pg.ClientBase,
  slug: string,
  options: SeedOptions,
): Promise<SeedSummary> {
  const { isos: isoCount, weldsPerIso, seed } = options;
  if (!Number.isInteger(isoCount) || isoCount < 1 || isoCount > 100_000) {
    throw new SeedError('--isos must be a whole number from 1 to 100000');
  }
  if (!Number.isInteger(weldsPerIso) || weldsPerIso < 1 || weldsPerIso > 10_000) {
    throw new SeedError('--welds-per-iso must be a whole number from 1 to 10000');
  }
  const tenant = (
    await db.query<{ id: string }>('select id from weld_public.tenants where slug = $1', [slug])
  ).rows[0];
  if (!tenant) throw new SeedError(`no tenant '${slug}'`);
  const tenantId = tenant.id;
  const hasData = await db.query('select 1 from weld_public.isos where tenant_id = $1 limit 1', [
    tenantId,
  ]);
  if (hasData.rowCount)
    throw new SeedError(`tenant '${slug}' already has ISOs; seed an empty tenant`);

  const rng = generator(seed);
  const total = isoCount * weldsPerIso;
  const t = (table: string, types: Record<string, string>) =>
    new Batch(table, { tenant_id: 'uuid', ...types });

  const b = {
    pqrs: t('weld_public.pqrs', {
      id: 'uuid',
      pqr_number: 'text',
      process: 'text',
      p_numbers: 'jsonarray',
      thickness_tested_in: 'numeric',
      diameter_tested_in: 'numeric',
      document_ref: 'text',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    wps: t('weld_public.wps', {
      id: 'uuid',
      wps_number: 'text',
      revision: 'text',
      process: 'text',
      state: 'text',
      thickness_min_in: 'numeric',
      thickness_max_in: 'numeric',
      diameter_min_in: 'numeric',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    wpsPqrs: t('weld_public.wps_pqrs', { wps_id: 'uuid', pqr_id: 'uuid' }),
    welders: t('weld_public.welders', {
      id: 'uuid',
      stamp: 'text',
      name: 'text',
      active: 'boolean',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    quals: t('weld_public.welder_qualifications', {
      id: 'uuid',
      welder_id: 'uuid',
      wps_id: 'uuid',
      process: 'text',
      positions: 'jsonarray',
      diameter_min_in: 'numeric',
      thickness_max_in: 'numeric',
      qualified_on: 'date',
      expires_on: 'date',
      last_continuity_on: 'date',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    isos: t('weld_public.isos', {
      id: 'uuid',
      iso_number: 'text',
      revision: 'text',
      line_number: 'text',
      area: 'text',
      piping_class: 'text',
      fluid_service: 'text',
      rt_percent: 'numeric',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    welds: t('weld_public.welds', {
      id: 'uuid',
      iso_id: 'uuid',
      weld_number: 'text',
      type: 'text',
      size: 'numeric',
      schedule: 'text',
      wall_thickness: 'numeric',
      material: 'text',
      welder_id: 'uuid',
      wps_id: 'uuid',
      welded_on: 'date',
      status: 'weld_public.weld_status',
      repair_cycle: 'int4',
      version: 'int4',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    ndt: t('weld_public.ndt_records', {
      id: 'uuid',
      method: 'text',
      report_number: 'text',
      examined_on: 'date',
      technician: 'text',
      result: 'text',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    ndtWelds: t('weld_public.ndt_record_welds', { ndt_record_id: 'uuid', weld_id: 'uuid' }),
    films: t('weld_public.film_intervals', {
      id: 'uuid',
      ndt_record_id: 'uuid',
      label: 'text',
      result: 'text',
      defect_codes: 'jsonarray',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    filmWelds: t('weld_public.film_interval_welds', {
      ndt_record_id: 'uuid',
      film_interval_id: 'uuid',
      weld_id: 'uuid',
    }),
    history: t('weld_public.weld_status_history', {
      weld_id: 'uuid',
      from_status: 'weld_public.weld_status',
      to_status: 'weld_public.weld_status',
      reason: 'text',
      changed_at: 'timestamptz',
      repair_cycle: 'int4',
      cause: 'text',
      ndt_record_id: 'uuid',
    }),
    inspections: t('weld_public.inspections', {
      id: 'uuid',
      kind: 'text',
      inspector_name: 'text',
      inspected_on: 'date',
      result: 'text',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    inspectionWelds: t('weld_public.inspection_welds', { inspection_id: 'uuid', weld_id: 'uuid' }),
    packages: t('weld_public.test_packages', {
      id: 'uuid',
      package_number: 'text',
      test_medium: 'text',
      test_pressure_psig: 'numeric',
      state: 'text',
      created_at: 'timestamptz',
      updated_at: 'timestamptz',
    }),
    packageIsos: t('weld_public.test_package_isos', { test_package_id: 'uuid', iso_id: 'uuid' }),
    packageWelds: t('weld_public.test_package_welds', { test_package_id: 'uuid', weld_id: 'uuid' }),
  };
  // Foreign keys decide the order tables are written in.
  const order = Object.values(b);
  const summary: SeedSummary = {
    isos: 0,
    welds: 0,
    welders: 0,
    historyRows: 0,
    ndtRecords: 0,
    filmIntervals: 0,
  };
  const flushAll = async () => {
    summary.historyRows += b.history.size;
    summary.ndtRecords += b.ndt.size;
    summary.filmIntervals += b.films.size;
    summary.welds += b.welds.size;
    for (const batch of order) await batch.flush(db);
    options.onProgress?.(summary.welds, total);
  };

  // Procedures: one PQR per process family, each backing an approved WPS.
  const procedures = [
    ['GTAW', ['1', '1'], true],
    ['GTAW+SMAW', ['1', '1'], true],
    ['SMAW', ['1', '1'], true],
    ['FCAW', ['1', '1'], true],
    ['GTAW', ['8', '8'], false],
    ['GTAW+SMAW', ['8', '8'], false],
  ] as const;
  const wpsFor = { carbon: [] as string[], stainless: [] as string[] };
  const setUp = { created_at: instant(-7, 0), updated_at: instant(-7, 0) };
  procedures.forEach(([process, pNumbers, carbon], i) => {
    const pqrId = rng.uuid();
    const wpsId = rng.uuid();
    const thickness = rng.pick([0.375, 0.5, 0.75]);
    b.pqrs.push({
      tenant_id: tenantId,
      id: pqrId,
      pqr_number: `PQR-${101 + i}`,
      process,
      p_numbers: pNumbers,
      thickness_tested_in: thickness,
      diameter_tested_in: rng.pick([2.875, 6.625]),
      document_ref: `DOC-PQR-${101 + i}`,
      ...setUp,
    });
    b.wps.push({
      tenant_id: tenantId,
      id: wpsId,
      wps_number: `WPS-${201 + i}`,
      revision: String(rng.int(0, 2)),
      process,
      state: 'approved',
      thickness_min_in: 0.0625,
      thickness_max_in: thickness * 2,
      diameter_min_in: 0,
      ...setUp,
    });
    b.wpsPqrs.push({ tenant_id: tenantId, wps_id: wpsId, pqr_id: pqrId });
    (carbon ? wpsFor.carbon : wpsFor.stainless).push(wpsId);
  });

  // Welders, with their qualifications; a few lapsed (no continuity for over six months).
  const FIRST = [
    'Ahmed',
    'Maria',
    'John',
    'Li',
    'Olu',
    'Sven',
    'Priya',
    'Carlos',
    'Anna',
    'Kenji',
    'Fatima',
    'Tom',
  ];
  const LAST = [
    'Haddad',
    'Silva',
    'Okafor',
    'Chen',
    'Novak',
    'Larsen',
    'Iyer',
    'Reyes',
    'Kowalski',
    'Sato',
    'Brown',
    'Dubois',
  ];
  const welderCount = Math.min(500, Math.max(5, Math.round(total / 250)));
  const welders: string[] = [];
  for (let i = 0; i < welderCount; i++) {
    const id = rng.uuid();
    welders.push(id);
    b.welders.push({
      tenant_id: tenantId,
      id,
      stamp: `W${String(i + 1).padStart(3, '0')}`,
      name: `${rng.pick(FIRST)} ${rng.pick(LAST)}`,
      active: rng.chance(0.95),
      ...setUp,
    });
    const qualifiedDay = -rng.int(30, 400);
    for (const wpsId of [
      rng.pick(wpsFor.carbon),
      ...(rng.chance(0.3) ? [rng.pick(wpsFor.stainless)] : []),
    ]) {
      b.quals.push({
        tenant_id: tenantId,
        id: rng.uuid(),
        welder_id: id,
        wps_id: wpsId,
        process: null,
        positions: rng.chance(0.8) ? ['6G'] : ['1G', '2G'],
        diameter_min_in: rng.pick([1, 2.875]),
        thickness_max_in: 1.5,
        qualified_on: date(qualifiedDay),
        expires_on: date(qualifiedDay + 730),
        last_continuity_on: date(rng.chance(0.05) ? qualifiedDay : rng.int(0, 120)),
        ...setUp,
      });
    }
  }
  summary.welders = welderCount;
  await flushAll();

  // Lines of one to four sheets; each weld follows a path through the default rules.
  let isoIndex = 0;
  let lineNo = 1000;
  let rtReport = 0;
  const technicians = ['R. Gupta (ASNT II)', 'M. Ortiz (ASNT II)', 'K. Weber (ASNT III)'];
  const inspectors = ['QC A. Moreau', 'QC B. Tanaka', 'QC C. Adeyemi'];
  while (isoIndex < isoCount) {
    lineNo += rng.int(1, 7);
    const [fluidService, , rtPercent, code, carbon] = rng.weighted(
      SERVICES.map((s) => [s, s[1]] as const),
    );
    const lineSize = rng.pick(LINE_SIZES);
    const pipingClass = carbon ? rng.pick(['A1A', 'B1A', 'A3B', 'D1A']) : rng.pick(['S1A', 'S3A']);
    const lineNumber = `${lineSize}"-${code}-${lineNo}-${pipingClass}`;
    const area = `U-${rng.int(1, 9)}00`;
    const sheets = Math.min(rng.int(1, 4), isoCount - isoIndex);
    const packageId = rng.uuid();
    const packageDay = rng.int(200, 320);
    b.packages.push({
      tenant_id: tenantId,
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

    for (let sheet = 1; sheet <= sheets; sheet++, isoIndex++) {
      const isoId = rng.uuid();
      const isoDay = rng.int(0, 60);
      b.isos.push({
        tenant_id: tenantId,
        id: isoId,
        iso_number: `ISO-${area}-${lineNo}-${String(sheet).padStart(2, '0')}`,
        revision: String(rng.int(0, 3)),
        line_number: lineNumber,
        area,
        piping_class: pipingClass,
        fluid_service: fluidService,
        rt_percent: rtPercent,
        created_at: instant(isoDay, 0),
        updated_at: instant(isoDay, 0),
      });
      b.packageIsos.push({ tenant_id: tenantId, test_package_id: packageId, iso_id: isoId });
      summary.isos++;
      const isoWelders = Array.from({ length: rng.int(1, 3) }, () => rng.pick(welders));
      const visualId = rng.uuid();
      let visualCount = 0;
      // RT: the first examination of a weld shares a report with others shot that day on this ISO.
      let rtRecord: { id: string; day: number; marker: number; welds: number } | undefined;

      for (let w = 1; w <= weldsPerIso; w++) {
        const type = rng.weighted([
          ['BW', 60],
          ['SW', 20],
          ['FW', 8],
          ['BR', 7],
          ['TW', 5],
        ] as const);
        const size =
          type === 'SW' || type === 'FW'
            ? rng.pick(BRANCH_SIZES)
            : type === 'BR'
              ? rng.pick([...BRANCH_SIZES, lineSize])
              : lineSize;
        const schedule = !carbon
          ? '10S'
          : size <= 2
            ? '80'
            : rng.weighted([
                ['40', 7],
                ['80', 3],
              ]);
        const weldId = rng.uuid();
        const weldedDay = isoDay + rng.int(5, 150);
        const welderId = rng.pick(isoWelders);
        // How far this weld has come: planned (not yet welded), or welded and examined.
        const fate = rng.weighted([
          ['planned', 8],
          ['awaiting', 9],
          ['accepted', 70],
          ['repaired', 6],
          ['in-repair', 2],
          ['voided', 2],
          ['late-reject', 1],
          ['rejected', 2],
        ] as const);
        const welded = fate !== 'planned';
        const needsRt =
          welded &&
          (type === 'BW' || type === 'TW') &&
          fate !== 'awaiting' &&
          (rtPercent === 100 || rng.chance(rtPercent / 100) || fate !== 'accepted');
        let status = 'PENDING';
        let cycle = 0;
        let minute = 0;
        let day = weldedDay + rng.int(1, 5);
        const step = (
          to: string,
          cause: string,
          ndtId: string | null = null,
          reason: string | null = null,
        ) => {
          if (to === 'REPAIR') cycle++;
          b.history.push({
            tenant_id: tenantId,
            weld_id: weldId,
            from_status: status,
            to_status: to,
            reason,
            changed_at: instant(day, 480 + minute++),
            repair_cycle: cycle,
            cause,
            ndt_record_id: ndtId,
          });
          status = to;
        };
        const shoot = (accepted: boolean, alone: boolean) => {
          // A re-shoot after repair is a report of its own; first shots share the day's report.
          if (alone || !rtRecord || rtRecord.welds >= 5 || rtRecord.day !== day) {
            rtRecord = { id: rng.uuid(), day, marker: 0, welds: 0 };
            rtReport++;
            b.ndt.push({
              tenant_id: tenantId,
              id: rtRecord.id,
              method: 'RT',
              report_number: `RT-${String(rtReport).padStart(6, '0')}${alone ? '-R' : ''}`,
              examined_on: date(day),
              technician: rng.pick(technicians),
              result: 'accepted',
              created_at: instant(day, 600),
              updated_at: instant(day, 600),
            });
          }
          const record = rtRecord;
          record.welds++;
          b.ndtWelds.push({ tenant_id: tenantId, ndt_record_id: record.id, weld_id: weldId });
          const intervals = size <= 2 ? 2 : size <= 8 ? 3 : 4;
          const bad = accepted ? -1 : rng.int(0, intervals - 1);
          for (let k = 0; k < intervals; k++, record.marker++) {
            const filmId = rng.uuid();
            b.films.push({
              tenant_id: tenantId,
              id: filmId,
              ndt_record_id: record.id,
              label: `${record.marker}-${record.marker + 1}`,
              result: k === bad ? 'rejected' : 'accepted',
              defect_codes: k === bad ? [rng.pick(DEFECTS)] : [],
              created_at: instant(day, 600),
              updated_at: instant(day, 600),
            });
            b.filmWelds.push({
              tenant_id: tenantId,
              ndt_record_id: record.id,
              film_interval_id: filmId,
              weld_id: weldId,
            });
          }
          if (!accepted) {
            // The whole report is rejected when any weld on it is; an earlier row is amended.
            const index = b.ndt.columns.id!.indexOf(record.id);
            if (index >= 0) b.ndt.columns.result![index] = 'rejected';
          }
          return record.id;
        };
        const examine = (accepted: boolean, alone = false) => {
          if (needsRt) {
            const ndtId = shoot(accepted, alone);
            step(accepted ? 'ACCEPTED' : 'REJECTED', 'ndt', ndtId);
          } else {
            step(accepted ? 'ACCEPTED' : 'REJECTED', 'system');
          }
        };
        const repair = () => {
          day += rng.int(1, 4);
          step('REPAIR', 'system');
          day += rng.int(1, 6);
          step('PENDING', 'system');
          day += rng.int(1, 3);
        };
        switch (fate) {
          case 'accepted':
            examine(true);
            break;
          case 'repaired':
            examine(false);
            repair();
            examine(true, true);
            break;
          case 'in-repair':
            examine(false);
            day += rng.int(1, 4);
            step('REPAIR', 'system');
            break;
          case 'rejected':
            examine(false);
            break;
          case 'late-reject':
            examine(true);
            day += rng.int(20, 60);
            step('REJECTED', 'system', null, 'hardness test out of range on re-check');
            break;
          case 'voided':
            if (rng.chance(0.5)) examine(true);
            day += rng.int(5, 30);
            step('VOIDED', 'system', null, 'weld cut out: line rerouted in revision');
            break;
        }
        const version =
          1 + (b.history.size ? countTrailing(b.history.columns.weld_id!, weldId) : 0);
        const updated = welded ? instant(day, 480 + minute) : instant(isoDay, 0);
        b.welds.push({
          tenant_id: tenantId,
          id: weldId,
          iso_id: isoId,
          weld_number: `W${String(w).padStart(3, '0')}`,
          type,
          size,
          schedule,
          wall_thickness: WALL[String(size)]?.[schedule] ?? null,
          material: carbon ? (size <= 2 ? 'A105' : 'A106-B') : 'A312-TP316L',
          welder_id: welded ? welderId : null,
          wps_id: rng.pick(carbon ? wpsFor.carbon : wpsFor.stainless),
          welded_on: welded ? date(weldedDay) : null,
          status,
          repair_cycle: cycle,
          version,
          created_at: instant(isoDay, 0),
          updated_at: updated,
        });
        b.packageWelds.push({ tenant_id: tenantId, test_package_id: packageId, weld_id: weldId });
        if (welded) {
          b.inspectionWelds.push({ tenant_id: tenantId, inspection_id: visualId, weld_id: weldId });
          visualCount++;
        }
      }
      if (visualCount > 0) {
        const day = isoDay + 160;
        b.inspections.push({
          tenant_id: tenantId,
          id: visualId,
          kind: 'visual',
          inspector_name: rng.pick(inspectors),
          inspected_on: date(day),
          result: 'accepted',
          created_at: instant(day, 900),
          updated_at: instant(day, 900),
        });
      }
      if (b.welds.size >= 5000) await flushAll();
    }
  }
  await flushAll();
  return summary;
}

/** How many of the last entries of `column` equal `value` (this weld's history rows so far). */
function countTrailing(column: unknown[], value: unknown): number {
  let n = 0;
  for (let i = column.length - 1; i >= 0 && column[i] === value; i--) n++;
  return n;
}
