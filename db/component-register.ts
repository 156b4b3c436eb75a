// The component register as CSV (issue F19): the export of GET /components as text/csv and the
// import of POST /imports/components, the same columns both ways, so a register exported, edited
// in a spreadsheet and imported again changes only what was edited.
//
// Components are upserted by tag. The file is small (a project has thousands, not millions), so
// it is parsed and checked here whole, every row against the resource's own create schema, and
// written by one INSERT ... ON CONFLICT as the caller (grants and row security decide), in the
// request's transaction: all rows or none.
import type { Writable } from 'node:stream';
import type pg from 'pg';
import { z } from 'zod';
import { oneIssuePerField } from './plain-words.ts';
import { CsvParser, CsvSyntaxError, detectDelimiter, type CsvRecord } from './csv.ts';
import { copyCsvTo, MAX_IMPORT_ERRORS, type ImportError } from './weld-register.ts';

/**
 * The most rows one import takes. A register is parsed and checked whole in memory, on the event
 * loop: 20,000 rows (a large project's components, about 2 MB) take a fraction of a second.
 */
export const MAX_COMPONENT_ROWS = 20_000;
/** The most bytes one import takes: MAX_COMPONENT_ROWS rows of every column, with room. */
export const MAX_COMPONENT_BYTES = 10 * 1024 * 1024;

/** The register's columns (the contract's field names), in the order the export writes them. */
export const COMPONENT_COLUMNS = [
  'tag',
  'kind',
  'description',
  'materialSpec',
  'grade',
  'pNumber',
  'groupNumber',
  'size',
  'schedule',
  'heatNumber',
  'mtrRef',
] as const;
type Column = (typeof COMPONENT_COLUMNS)[number];

/** Each column's table column and SQL type (the names are fixed here, never from the file). */
const SQL: Record<Column, [string, string]> = {
  tag: ['tag', 'text'],
  kind: ['kind', 'text'],
  description: ['description', 'text'],
  materialSpec: ['material_spec', 'text'],
  grade: ['grade', 'text'],
  pNumber: ['p_number', 'text'],
  groupNumber: ['group_number', 'integer'],
  size: ['size', 'numeric'],
  schedule: ['schedule', 'text'],
  heatNumber: ['heat_number', 'text'],
  mtrRef: ['mtr_ref', 'text'],
};
const NUMBERS = new Set<Column>(['groupNumber', 'size']);
/** What a new component needs (the table's NOT NULL columns besides its tag). */
const REQUIRED_NEW: Column[] = ['kind', 'materialSpec'];

/** GET /components as CSV: every component the filters select (`r`), in tag order. */
export function exportComponents(
  db: pg.ClientBase,
  where: { sql: string; values: unknown[] },
  out: Writable,
): Promise<number> {
  const select = COMPONENT_COLUMNS.map((name) => {
    const [column] = SQL[name];
    if (name === 'size') return `trim_scale(r.size) as size`;
    if (NUMBERS.has(name)) return `r.${column} as "${name}"`;
    return `weld_hidden.spreadsheet_text(r.${column}) as "${name}"`;
  }).join(', ');
  return copyCsvTo(
    db,
    `select ${select} from weld_public.components r
      ${where.sql ? `where ${where.sql}` : ''} order by r.tag, r.id`,
    where.values,
    out,
  );
}

export interface ComponentCounts {
  rows: number;
  created: number;
  updated: number;
  unchanged: number;
}

export type ComponentImport =
  { ok: true; counts: ComponentCounts } | { ok: false; errors: ImportError[]; errorCount: number };

/**
 * Checks the file and, unless `dryRun`, writes it with `db` (in the caller's transaction: a dry
 * run writes and rolls back to a savepoint, so its counts are the database's own).
 */
export async function importComponents(
  db: pg.ClientBase,
  text: string,
  schema: z.ZodObject,
  options: { dryRun: boolean },
): Promise<ComponentImport> {
  // An OAuth2 client imports with imports:write (as the weld register's turn asks it), beside
  // welds:write, which the components' own policies ask of what the file writes.
  await db.query("select weld_hidden.require_scope('{imports:write}')");
  // Only the first MAX_IMPORT_ERRORS are kept (rows come in line order); all are counted.
  const errors: ImportError[] = [];
  let errorCount = 0;
  const fail = (line: number, column: string | null, value: string | null, detail: string) => {
    errorCount++;
    if (errors.length < MAX_IMPORT_ERRORS) {
      errors.push({ line, column, value: value === null ? null : value.slice(0, 200), detail });
    }
  };
  const body = text.replace(/^\uFEFF/, '');
  const records: CsvRecord[] = [];
  let delimiter: ',' | ';' = ',';
  try {
    delimiter = detectDelimiter(body.split(/\r\n|\r|\n/, 1)[0] ?? '');
    const parser = new CsvParser(delimiter);
    // In pieces, keeping only records with something in them, and stopping at the row cap: a
    // file of a million empty lines costs no more than one of MAX_COMPONENT_ROWS rows.
    const PIECE = 64 * 1024;
    const keep = (piece: CsvRecord[]) => {
      for (const record of piece) if (record.fields.some((f) => f !== '')) records.push(record);
    };
    for (let at = 0; at < body.length && records.length <= MAX_COMPONENT_ROWS + 1; at += PIECE) {
      keep(parser.push(body.slice(at, at + PIECE)));
    }
    if (records.length <= MAX_COMPONENT_ROWS + 1) keep(parser.end());
  } catch (error) {
    if (!(error instanceof CsvSyntaxError)) throw error;
    fail(error.line, null, null, error.message);
    return { ok: false, errors, errorCount: 1 };
  }
  const [header, ...rows] = records;
  if (rows.length > MAX_COMPONENT_ROWS) {
    fail(1, null, null, `the file has more than ${MAX_COMPONENT_ROWS} rows: split it`);
    return { ok: false, errors, errorCount };
  }
  const columns = (header?.fields ?? []).map((f) => f.trim());
  for (const [i, name] of columns.entries()) {
    if (!(COMPONENT_COLUMNS as readonly string[]).includes(name)) {
      fail(1, name, null, `is not a column (the columns: ${COMPONENT_COLUMNS.join(', ')})`);
    } else if (columns.indexOf(name) !== i) fail(1, name, null, 'is given twice');
  }
  if (!columns.includes('tag')) fail(1, 'tag', null, 'is required: components are kept by tag');
  if (errorCount) return { ok: false, errors, errorCount };
  const present = columns as Column[];

  // Each row as the create body would have it: values trimmed, a spreadsheet's formula guard
  // taken off, an empty cell null, numbers as numbers. Checked against the resource's schema,
  // less the columns the file lacks (an existing component keeps those values).
  const rowSchema = z.strictObject(
    Object.fromEntries(present.map((c) => [c, schema.shape[c] as z.ZodType])),
  );
  const items: Array<Record<string, unknown>> = [];
  const seen = new Map<string, number>();
  for (const record of rows) {
    const item: Record<string, unknown> = {};
    for (const [i, name] of present.entries()) {
      let value = (record.fields[i] ?? '').trim();
      if (/^'[=+@\t\r-]/.test(value)) value = value.slice(1);
      if (value === '') item[name] = null;
      // (In a semicolon file, as spreadsheets in comma-decimal locales write it, 8,625 is 8.625.)
      else if (NUMBERS.has(name) && delimiter === ';' && /^-?\d+,\d+$/.test(value))
        item[name] = Number(value.replace(',', '.'));
      else if (NUMBERS.has(name) && /^-?\d+(\.\d+)?$/.test(value)) item[name] = Number(value);
      else item[name] = value;
    }
    if (record.fields.length > present.length) {
      fail(
        record.line,
        null,
        null,
        `has ${record.fields.length} fields, the header ${present.length}`,
      );
      continue;
    }
    // (A tag twice is named whatever else is wrong with either line.)
    const tag = typeof item.tag === 'string' ? item.tag : '';
    const first = seen.get(tag);
    if (tag && first !== undefined) fail(record.line, 'tag', tag, `is on line ${first} too`);
    else if (tag) seen.set(tag, record.line);
    const checked = rowSchema.safeParse(item);
    if (!checked.success) {
      for (const issue of oneIssuePerField(checked.error.issues)) {
        const column = String(issue.path[0] ?? '') || null;
        const at = present.indexOf(column as Column);
        const value = at < 0 ? null : (record.fields[at] ?? '').trim();
        // An empty cell where a value is needed says so in words, not in types.
        const empty = column !== null && item[column] === null;
        fail(record.line, column, value, empty ? 'is required' : issue.message);
      }
      continue;
    }
    items.push(item);
  }
  // A file without kind or materialSpec may change components, not make them.
  const lacking = REQUIRED_NEW.filter((c) => !present.includes(c));
  if (lacking.length && items.length) {
    const { rows: known } = await db.query<{ tag: string }>(
      'select tag from weld_public.components where tag = any($1)',
      [items.map((item) => item.tag)],
    );
    const existing = new Set(known.map((r) => r.tag));
    for (const item of items) {
      const tag = item.tag as string;
      if (existing.has(tag)) continue;
      fail(
        seen.get(tag)!,
        lacking[0]!,
        null,
        `is required for a new component (${lacking.join(', ')})`,
      );
    }
  }
  if (errorCount) {
    errors.sort((a, b) => a.line - b.line);
    return { ok: false, errors, errorCount };
  }
  if (items.length === 0)
    return { ok: true, counts: { rows: 0, created: 0, updated: 0, unchanged: 0 } };

  // Existing tags updated, new ones inserted, in one statement (not INSERT ... ON CONFLICT, which
  // would check a partial row's NOT NULL columns before finding its tag). A row the file gives as
  // it is is not written: no version bump, no event.
  const names = present.map((c) => SQL[c][0]);
  const changed = present.filter((c) => c !== 'tag');
  const recordType = present.map((c) => `"${c}" ${SQL[c][1]}`).join(', ');
  const update = changed.length
    ? `update weld_public.components c
          set ${changed.map((c) => `${SQL[c][0]} = x."${c}"`).join(', ')}
         from input x
        where c.tag = x.tag
          and row(${changed.map((c) => `c.${SQL[c][0]}`).join(', ')})
              is distinct from row(${changed.map((c) => `x."${c}"`).join(', ')})
        returning c.id`
    : 'select null::uuid as id where false';
  if (options.dryRun) await db.query('savepoint component_import');
  const { rows: counts } = await db.query<{ created: number; updated: number }>(
    `with input as (select * from jsonb_to_recordset($1::jsonb) as x (${recordType})),
          updated as (${update}),
          created as (
            insert into weld_public.components (${names.join(', ')})
            select ${present.map((c) => `x."${c}"`).join(', ')} from input x
             where not exists (select from weld_public.components c where c.tag = x.tag)
            returning id)
     select (select count(*) from created)::int as created, (select count(*) from updated)::int as updated`,
    [JSON.stringify(items)],
  );
  if (options.dryRun) await db.query('rollback to savepoint component_import');
  const { created, updated } = counts[0]!;
  return {
    ok: true,
    counts: { rows: items.length, created, updated, unchanged: items.length - created - updated },
  };
}
