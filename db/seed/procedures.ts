// Procedures and people, written before any weld: two PQRs per process family (a thick and a thin
// coupon, together supporting the WPS's thickness range by ASME IX QW-451.1), each pair backing an
// approved WPS for carbon steel or for stainless, P-No. 1 or P-No. 8; and welders with stamps, each qualified to a
// carbon steel WPS and some also to a stainless one. Welds pick their welder from what is made
// here, and their WPS from the welder's (welds.ts).
//
// The qualifications are such that the code checks of migration 000009 find most welds in
// order, with the exceptions a QC engineer meets on a real project. Each WPS a welder is
// qualified to comes with the welder's 6G test coupons (ASME IX QW-452, outside diameter x wall,
// ASME B36.10), from which the tenant's rules derive the ranges; no range is written:
//
// - a large-bore coupon: NPS 2 1/2 XXS (2.875 x 0.552: OD 2.875 in. and up, up to 1.104 in.),
//   NPS 6 sch 80 (6.625 x 0.432: up to 0.864 in.) or NPS 6 XXS (6.625 x 0.864: up to 1.728 in.).
//   Only NPS 24 sch 80 (1.218 in.) is out of the thinner two's reach: a few thick welds;
// - nearly every welder also a small-bore one, NPS 1/2 sch 160 (0.840 x 0.188: OD 0.840 in. and up, up
//   to 0.376 in.), which covers every socket, fillet and small branch weld; the others' small-bore
//   welds are outside their range.
//
// Continuity (QW-322: lapsed after six months without a use of the process): most welders tested
// in the five months before the project, with their last use on a previous job on record, and
// stay in force through their welds. A few were tested long ago with no use since (lapsed before
// their first weld), and a few only tested after they had started (their first welds came before
// the test).
import { date, instant, type Random } from './random.ts';
import type { SeedTables } from './tables.ts';

/** The approved WPSs by the material of the lines they weld. */
export interface WpsByMaterial {
  carbon: string[];
  stainless: string[];
}

// Process, base metal P-numbers, and whether it is for carbon steel (P1) or stainless (P8).
const PROCEDURES = [
  ['GTAW', ['1', '1'], true],
  ['GTAW+SMAW', ['1', '1'], true],
  ['SMAW', ['1', '1'], true],
  ['FCAW', ['1', '1'], true],
  ['GTAW', ['8', '8'], false],
  ['GTAW+SMAW', ['8', '8'], false],
] as const;

const FIRST_NAMES = [
  'Ahmed', 'Maria', 'John', 'Li', 'Olu', 'Sven', 'Priya', 'Carlos', 'Anna', 'Kenji', 'Fatima', 'Tom',
]; // prettier-ignore
const LAST_NAMES = [
  'Haddad', 'Silva', 'Okafor', 'Chen', 'Novak', 'Larsen', 'Iyer', 'Reyes', 'Kowalski', 'Sato',
  'Brown', 'Dubois',
]; // prettier-ignore

/** Procedures and welders were set up a week before the project started. */
const SET_UP = { created_at: instant(-7, 0), updated_at: instant(-7, 0) };

/** The PQRs and the WPSs they back. */
export function addProcedures(rng: Random, tables: SeedTables): WpsByMaterial {
  const wps: WpsByMaterial = { carbon: [], stainless: [] };
  PROCEDURES.forEach(([process, pNumbers, carbon], i) => {
    const pqrId = rng.id();
    const thinPqrId = rng.id();
    const wpsId = rng.id();
    const thickness = rng.pick([0.5, 0.75, 1]);
    // A thin-wall coupon beside it (T 1/4 in.: 1/16 to 1/2 in., QW-451.1), so that together they
    // support the WPS from 1/16 in. (small-bore walls) to 2T.
    tables.pqrs.push({
      id: thinPqrId,
      pqr_number: `PQR-${101 + i}T`,
      process,
      p_numbers: pNumbers,
      thickness_tested_in: 0.25,
      diameter_tested_in: 2.875,
      document_ref: `DOC-PQR-${101 + i}T`,
      ...SET_UP,
    });
    tables.pqrs.push({
      id: pqrId,
      pqr_number: `PQR-${101 + i}`,
      process,
      p_numbers: pNumbers,
      thickness_tested_in: thickness,
      diameter_tested_in: rng.pick([2.875, 6.625]),
      document_ref: `DOC-PQR-${101 + i}`,
      ...SET_UP,
    });
    tables.wps.push({
      id: wpsId,
      wps_number: `WPS-${201 + i}`,
      revision: String(rng.int(0, 2)),
      process,
      state: 'approved',
      p_numbers: pNumbers,
      // What the two PQRs support (ASME IX QW-451.1): 1/16 in. to 2T.
      thickness_min_in: 0.0625,
      thickness_max_in: thickness * 2,
      diameter_min_in: 0,
      ...SET_UP,
    });
    tables.wpsPqrs.push({ wps_id: wpsId, pqr_id: pqrId });
    tables.wpsPqrs.push({ wps_id: wpsId, pqr_id: thinPqrId });
    (carbon ? wps.carbon : wps.stainless).push(wpsId);
  });
  return wps;
}

/** A welder, and the approved WPSs they are qualified to (the WPSs their welds follow). */
export interface Welder {
  id: string;
  wps: WpsByMaterial;
}

/** A 6G test coupon: outside diameter and wall (in.). */
interface Coupon {
  od: number;
  wall: number;
}

/** Large-bore coupons, each with the share of welders tested on it. */
const LARGE_BORE: ReadonlyArray<readonly [Coupon, number]> = [
  [{ od: 2.875, wall: 0.552 }, 5], // NPS 2 1/2 XXS
  [{ od: 6.625, wall: 0.432 }, 3], // NPS 6 sch 80
  [{ od: 6.625, wall: 0.864 }, 2], // NPS 6 XXS
];
const SMALL_BORE: Coupon = { od: 0.84, wall: 0.188 }; // NPS 1/2 sch 160

/** A welder per 250 welds (5 to 500), with their qualifications. */
export function addWelders(
  rng: Random,
  tables: SeedTables,
  wps: WpsByMaterial,
  totalWelds: number,
): Welder[] {
  const count = Math.min(500, Math.max(5, Math.round(totalWelds / 250)));
  const welders: Welder[] = [];
  for (let i = 0; i < count; i++) {
    const id = rng.id();
    tables.welders.push({
      id,
      stamp: `W${String(i + 1).padStart(3, '0')}`,
      name: `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`,
      active: rng.chance(0.95),
      ...SET_UP,
    });
    // When the welder was tested, and the last use of the process on record before the project.
    const standing = rng.weighted([
      ['current', 95],
      ['lapsed', 2],
      ['late', 3],
    ]);
    const qualifiedDay =
      standing === 'current'
        ? -rng.int(7, 150)
        : standing === 'lapsed'
          ? -rng.int(250, 400)
          : rng.int(15, 45);
    const continuityDay = standing === 'current' ? rng.int(Math.max(qualifiedDay, -60), 0) : null;
    const qualified: WpsByMaterial = {
      carbon: [rng.pick(wps.carbon)],
      stainless: rng.chance(0.3) ? [rng.pick(wps.stainless)] : [],
    };
    const coupons = [rng.weighted(LARGE_BORE), ...(rng.chance(0.95) ? [SMALL_BORE] : [])];
    const positions = rng.chance(0.8) ? ['6G'] : ['2G', '5G'];
    for (const wpsId of [...qualified.carbon, ...qualified.stainless]) {
      for (const coupon of coupons) {
        tables.quals.push({
          id: rng.id(),
          welder_id: id,
          wps_id: wpsId,
          process: null,
          positions,
          coupon_diameter_in: coupon.od,
          coupon_thickness_in: coupon.wall,
          diameter_min_in: null,
          thickness_max_in: null,
          qualified_on: date(qualifiedDay),
          expires_on: date(qualifiedDay + 730),
          last_continuity_on: continuityDay === null ? null : date(continuityDay),
          ...(standing === 'late'
            ? { created_at: instant(qualifiedDay, 960), updated_at: instant(qualifiedDay, 960) }
            : SET_UP),
        });
      }
    }
    welders.push({ id, wps: qualified });
  }
  return welders;
}
