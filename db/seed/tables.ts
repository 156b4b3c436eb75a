// How seeded rows reach the database. Each table collects its rows in memory; a flush writes
// each table's rows with one statement, its columns sent as arrays and turned back into rows by
// unnest(), so 100,000 welds and their companions take a few hundred statements, not a few
// hundred thousand. The tables are listed in foreign key order, the order a flush writes them in,
// each column with the Postgres type its array travels as. Every row belongs to the tenant being
// seeded: tenant_id is sent once per statement, not per row.
import type pg from 'pg';

/** A Postgres type to send a column's array as; 'jsonarray' is a text[] column (see flush). */
type ColumnType =
  | 'uuid'
  | 'text'
  | 'numeric'
  | 'int4'
  | 'boolean'
  | 'date'
  | 'timestamptz'
  | 'weld_public.weld_status'
  | 'jsonarray';

/** The columns people know rows by (unique within the tenant, or read as a group: lines). */
const NATURAL_KEYS = new Set([
  'iso_number',
  'line_number',
  'stamp',
  'pqr_number',
  'wps_number',
  'report_number',
  'package_number',
]);

/** A row: a value (null where none) for every column of the table. */
export type Row<C> = { [K in keyof C]: unknown };

export class Table<C extends Record<string, ColumnType>> {
  readonly name: string;
  readonly columns: C;
  #rows: Array<Row<C>> = [];

  constructor(name: string, columns: C) {
    this.name = name;
    this.columns = columns;
  }

  /** Adds a row to the next flush, which writes it as it is by then: it may still be amended. */
  push(row: Row<C>): Row<C> {
    this.#rows.push(row);
    return row;
  }

  /** Rows waiting for the next flush. */
  get size(): number {
    return this.#rows.length;
  }

  /**
   * Writes the waiting rows, if any, as the tenant's; returns how many. A `prefix` goes before
   * every natural key (seed --append: a second project beside the first, no number in common).
   */
  async flush(db: pg.ClientBase, tenantId: string, prefix = ''): Promise<number> {
    const rows = this.#rows;
    if (rows.length === 0) return 0;
    this.#rows = [];
    const names = Object.keys(this.columns) as Array<keyof C & string>;
    // A text[][] (defect codes, P-numbers) would be flattened by unnest; each value travels as
    // JSON text instead, and is made an array again on the way in.
    const json = names.map((name) => this.columns[name] === 'jsonarray');
    const sources = names.map((name, i) => `$${i + 2}::${json[i] ? 'text' : this.columns[name]}[]`);
    const values = names.map((name, i) => `c${i}`);
    const selects = values.map((c, i) =>
      json[i] ? `array(select jsonb_array_elements_text(${c}::jsonb))` : c,
    );
    await db.query(
      `insert into ${this.name} (tenant_id, ${names.join(', ')})
       select $1::uuid, ${selects.join(', ')} from unnest(${sources.join(', ')}) as u(${values.join(', ')})`,
      [
        tenantId,
        ...names.map((name, i) =>
          rows.map((row) =>
            json[i]
              ? JSON.stringify(row[name] ?? null)
              : prefix && NATURAL_KEYS.has(name) && typeof row[name] === 'string'
                ? prefix + row[name]
                : (row[name] ?? null),
          ),
        ),
      ],
    );
    return rows.length;
  }
}

/** Every table the seed writes, in foreign key order, empty. */
export function seedTables() {
  const stamps = { created_at: 'timestamptz', updated_at: 'timestamptz' } as const;
  return {
    pqrs: new Table('weld_public.pqrs', {
      id: 'uuid',
      pqr_number: 'text',
      process: 'text',
      p_numbers: 'jsonarray',
      thickness_tested_in: 'numeric',
      diameter_tested_in: 'numeric',
      document_ref: 'text',
      ...stamps,
    }),
    wps: new Table('weld_public.wps', {
      id: 'uuid',
      wps_number: 'text',
      revision: 'text',
      process: 'text',
      state: 'text',
      p_numbers: 'jsonarray',
      thickness_min_in: 'numeric',
      thickness_max_in: 'numeric',
      diameter_min_in: 'numeric',
      ...stamps,
    }),
    wpsPqrs: new Table('weld_public.wps_pqrs', { wps_id: 'uuid', pqr_id: 'uuid' }),
    welders: new Table('weld_public.welders', {
      id: 'uuid',
      stamp: 'text',
      name: 'text',
      active: 'boolean',
      ...stamps,
    }),
    quals: new Table('weld_public.welder_qualifications', {
      id: 'uuid',
      welder_id: 'uuid',
      wps_id: 'uuid',
      process: 'text',
      positions: 'jsonarray',
      coupon_diameter_in: 'numeric',
      coupon_thickness_in: 'numeric',
      diameter_min_in: 'numeric',
      thickness_max_in: 'numeric',
      qualified_on: 'date',
      expires_on: 'date',
      last_continuity_on: 'date',
      ...stamps,
    }),
    isos: new Table('weld_public.isos', {
      id: 'uuid',
      iso_number: 'text',
      revision: 'text',
      line_number: 'text',
      area: 'text',
      piping_class: 'text',
      fluid_service: 'text',
      rt_percent: 'numeric',
      ...stamps,
    }),
    ndt: new Table('weld_public.ndt_records', {
      id: 'uuid',
      method: 'text',
      report_number: 'text',
      examined_on: 'date',
      technician: 'text',
      result: 'text',
      ...stamps,
    }),
    inspections: new Table('weld_public.inspections', {
      id: 'uuid',
      kind: 'text',
      inspector_name: 'text',
      inspected_on: 'date',
      result: 'text',
      ...stamps,
    }),
    welds: new Table('weld_public.welds', {
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
      base_metal_1_p_number: 'text',
      base_metal_2_p_number: 'text',
      preheat_f: 'int4',
      status: 'weld_public.weld_status',
      acceptance_ndt_record_id: 'uuid',
      acceptance_inspection_id: 'uuid',
      repair_cycle: 'int4',
      version: 'int4',
      ...stamps,
    }),
    ndtWelds: new Table('weld_public.ndt_record_welds', { ndt_record_id: 'uuid', weld_id: 'uuid' }),
    films: new Table('weld_public.film_intervals', {
      id: 'uuid',
      ndt_record_id: 'uuid',
      label: 'text',
      result: 'text',
      defect_codes: 'jsonarray',
      ...stamps,
    }),
    filmWelds: new Table('weld_public.film_interval_welds', {
      ndt_record_id: 'uuid',
      film_interval_id: 'uuid',
      weld_id: 'uuid',
    }),
    history: new Table('weld_public.weld_status_history', {
      weld_id: 'uuid',
      from_status: 'weld_public.weld_status',
      to_status: 'weld_public.weld_status',
      reason: 'text',
      changed_at: 'timestamptz',
      repair_cycle: 'int4',
      cause: 'text',
      ndt_record_id: 'uuid',
      inspection_id: 'uuid',
    }),
    inspectionWelds: new Table('weld_public.inspection_welds', {
      inspection_id: 'uuid',
      weld_id: 'uuid',
    }),
    repairs: new Table('weld_public.weld_repairs', {
      weld_id: 'uuid',
      repair_cycle: 'int4',
      released_at: 'timestamptz',
      rewelded_at: 'timestamptz',
      welded_on: 'date',
      welder_id: 'uuid',
      preheat_f: 'int4',
      ...stamps,
    }),
    packages: new Table('weld_public.test_packages', {
      id: 'uuid',
      package_number: 'text',
      test_medium: 'text',
      test_pressure_psig: 'numeric',
      state: 'text',
      ...stamps,
    }),
    packageIsos: new Table('weld_public.test_package_isos', {
      test_package_id: 'uuid',
      iso_id: 'uuid',
    }),
    packageWelds: new Table('weld_public.test_package_welds', {
      test_package_id: 'uuid',
      weld_id: 'uuid',
    }),
  };
}

export type SeedTables = ReturnType<typeof seedTables>;

/** Writes every table's waiting rows, parents before children; returns how many per table. */
export async function flushTables(
  db: pg.ClientBase,
  tenantId: string,
  tables: SeedTables,
  prefix = '',
): Promise<Record<keyof SeedTables, number>> {
  const written: Partial<Record<keyof SeedTables, number>> = {};
  for (const [name, table] of Object.entries(tables)) {
    written[name as keyof SeedTables] = await table.flush(db, tenantId, prefix);
  }
  return written as Record<keyof SeedTables, number>;
}
