// Procedures and people, written before any weld: one PQR per process family, each backing an
// approved WPS for carbon steel or for stainless; and welders with stamps, each qualified to a
// carbon steel WPS and some also to a stainless one, a few lapsed (no continuity for over six
// months). Welds pick their WPS and welder from what is made here.
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
    const wpsId = rng.id();
    const thickness = rng.pick([0.375, 0.5, 0.75]);
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
      thickness_min_in: 0.0625,
      thickness_max_in: thickness * 2,
      diameter_min_in: 0,
      ...SET_UP,
    });
    tables.wpsPqrs.push({ wps_id: wpsId, pqr_id: pqrId });
    (carbon ? wps.carbon : wps.stainless).push(wpsId);
  });
  return wps;
}

/** A welder per 250 welds (5 to 500), with their qualifications; returns the welders' ids. */
export function addWelders(
  rng: Random,
  tables: SeedTables,
  wps: WpsByMaterial,
  totalWelds: number,
): string[] {
  const count = Math.min(500, Math.max(5, Math.round(totalWelds / 250)));
  const welders: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = rng.id();
    welders.push(id);
    tables.welders.push({
      id,
      stamp: `W${String(i + 1).padStart(3, '0')}`,
      name: `${rng.pick(FIRST_NAMES)} ${rng.pick(LAST_NAMES)}`,
      active: rng.chance(0.95),
      ...SET_UP,
    });
    const qualifiedDay = -rng.int(30, 400);
    for (const wpsId of [
      rng.pick(wps.carbon),
      ...(rng.chance(0.3) ? [rng.pick(wps.stainless)] : []),
    ]) {
      tables.quals.push({
        id: rng.id(),
        welder_id: id,
        wps_id: wpsId,
        process: null,
        positions: rng.chance(0.8) ? ['6G'] : ['1G', '2G'],
        diameter_min_in: rng.pick([1, 2.875]),
        thickness_max_in: 1.5,
        qualified_on: date(qualifiedDay),
        expires_on: date(qualifiedDay + 730),
        last_continuity_on: date(rng.chance(0.05) ? qualifiedDay : rng.int(0, 120)),
        ...SET_UP,
      });
    }
  }
  return welders;
}
