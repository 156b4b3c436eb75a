// The weld register as CSV, in and out: what POST /imports/welds, GET /welds as text/csv and
// weld-admin's `import welds` / `export welds` share. Everything runs in the caller's transaction
// as the caller's role (row security and grants apply).
//
// Import: the file is decoded (UTF-8, a BOM dropped), parsed as CSV (db/csv.ts) and streamed,
// row by row, into a temporary table by COPY; the SQL of migrations/000013 validates every row,
// names what is wrong by line and column, and writes all of it or nothing. Memory holds one
// piece of the file and one record at a time, whatever its size.
//
// Export: one COPY ... TO STDOUT, streamed to the destination as PostgreSQL produces it.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import {
  copyText,
  CsvParser,
  CsvSyntaxError,
  detectDelimiter,
  lineBreaks,
  nonUtf8Line,
  type CsvRecord,
} from './csv.ts';
import { withContext, withQueryTimeout, type SessionContext } from './database.ts';

/** The columns of the register, as import reads them and export writes them, in order. */
export const REGISTER_COLUMNS = [
  'isoNumber',
  'lineNumber',
  'weldNumber',
  'type',
  'size',
  'schedule',
  'wallThickness',
  'material',
  'welderStamp',
  'wpsNumber',
  'wpsRevision',
  'weldedOn',
  'baseMetal1PNumber',
  'baseMetal2PNumber',
  'preheatF',
] as const;
/**
 * What export adds. Import writes none of them (the lifecycle owns them); it checks `version`: a
 * weld the file would change that changed since the export is a conflict, not overwritten.
 */
export const REGISTER_READ_ONLY_COLUMNS = [
  'status',
  'repairCycle',
  'acceptance',
  'version',
] as const;
const REQUIRED_COLUMNS = ['isoNumber', 'weldNumber'];

/** The errors an import answers, at most; errorCount says how many there were. */
export const MAX_IMPORT_ERRORS = 200;
/** The statement limit of an import or export: the largest file takes longer than a request's. */
const LONG_STATEMENT_MS = 600_000;

export interface ImportError {
  line: number;
  column: string | null;
  value: string | null;
  detail: string;
}

export interface ImportCounts {
  rows: number;
  created: number;
  updated: number;
  unchanged: number;
  isosCreated: number;
}

/** An import's record (weld_hidden.imports), as GET /imports shows it. */
export interface ImportRecord extends ImportCounts {
  id: string;
  kind: 'welds';
  importedBy: string | null;
  importedAt: string;
  fileSha256: string;
  fileBytes: number;
}

export type ImportOutcome =
  | { ok: false; errors: ImportError[]; errorCount: number; conflict?: false }
  /** Welds changed between the check and the write (by a PATCH meanwhile): nothing written. */
  | { ok: false; errors: ImportError[]; errorCount: number; conflict: true }
  | { ok: true; dryRun: true; counts: ImportCounts }
  | { ok: true; dryRun: false; record: ImportRecord };

export interface ImportProgress {
  phase: 'reading' | 'checking' | 'writing';
  rows: number;
}

export interface ImportOptions {
  dryRun: boolean;
  onProgress?: (progress: ImportProgress) => void;
}

/** A file that cannot be read as a register at all: not UTF-8, not CSV, a wrong header. */
class Refused extends Error {
  readonly errors: ImportError[];
  constructor(errors: ImportError[]) {
    super(errors[0]?.detail);
    this.errors = errors;
  }
}

/**
 * Imports a register from `source` (the file's bytes) in one transaction as `context`: all of it,
 * or, when a line is bad or it is a dry run, nothing (the transaction is rolled back).
 */
export async function runImport(
  pool: pg.Pool,
  context: SessionContext,
  source: AsyncIterable<Buffer>,
  options: ImportOptions,
): Promise<ImportOutcome> {
  try {
    return await withContext(pool, context, async (db) => {
      const outcome = await importWelds(db, source, options);
      if (!outcome.ok || outcome.dryRun) throw new RollBack(outcome);
      return outcome;
    });
  } catch (error) {
    if (error instanceof RollBack) return error.outcome;
    throw error;
  }
}

class RollBack extends Error {
  readonly outcome: ImportOutcome;
  constructor(outcome: ImportOutcome) {
    super('rolled back');
    this.outcome = outcome;
  }
}

async function importWelds(
  db: pg.ClientBase,
  source: AsyncIterable<Buffer>,
  options: ImportOptions,
): Promise<ImportOutcome> {
  const file = hashingCounter();
  const hashed = (async function* () {
    for await (const chunk of source) {
      file.update(chunk);
      yield chunk;
    }
  })();
  // A file of the largest size allowed takes longer than a request's usual statement limit.
  await db.query(`select set_config('statement_timeout', '${LONG_STATEMENT_MS}ms', true)`);
  await db.query('select weld_hidden.begin_weld_import()');

  const copy = db.query(
    withQueryTimeout(
      copyFrom(
        'copy pg_temp.weld_import_rows (line, iso_number, line_number, weld_number, type, size, ' +
          'schedule, wall_thickness, material, welder_stamp, wps_number, wps_revision, welded_on, ' +
          'base_metal_1, base_metal_2, preheat_f, version) from stdin',
      ),
      LONG_STATEMENT_MS,
    ),
  );
  const copied = finished(copy);
  copied.catch(() => {}); // awaited below; an early rejection must not go unhandled meanwhile
  let read: Awaited<ReturnType<typeof readRows>>;
  try {
    read = await readRows(hashed, copy, options.onProgress);
    copy.end();
    await copied;
  } catch (error) {
    copy.destroy(); // abandons the COPY; the caller's rollback ends the transaction
    await copied.catch(() => {});
    if (error instanceof Refused) {
      return { ok: false, errors: error.errors, errorCount: error.errors.length };
    }
    throw error;
  }

  options.onProgress?.({ phase: 'checking', rows: read.rows });
  const { rows } = await db.query<{ answer: SqlCheck }>(
    withQueryTimeout(
      {
        text: 'select weld_hidden.check_weld_import($1, $2, $3) as answer',
        values: [read.present, read.delimiter === ';', MAX_IMPORT_ERRORS],
      },
      LONG_STATEMENT_MS,
    ),
  );
  const check = rows[0]!.answer;
  const errorCount = read.errorCount + check.errorCount;
  if (errorCount > 0) {
    const errors = [...read.errors, ...check.errors]
      .sort((a, b) => a.line - b.line)
      .slice(0, MAX_IMPORT_ERRORS);
    return { ok: false, errors, errorCount };
  }
  const counts: ImportCounts = {
    rows: read.rows,
    created: check.created,
    updated: check.updated,
    unchanged: check.unchanged,
    isosCreated: check.isosCreated,
  };
  if (options.dryRun) return { ok: true, dryRun: true, counts };

  options.onProgress?.({ phase: 'writing', rows: read.rows });
  const { sha256, bytes } = file.digest();
  try {
    const applied = await db.query<{ record: ImportRecord }>(
      withQueryTimeout(
        { text: 'select weld_hidden.apply_weld_import($1, $2) as record', values: [sha256, bytes] },
        LONG_STATEMENT_MS,
      ),
    );
    // What waits for the commit (the deferred triggers: the report rollups of every changed weld,
    // the events) runs now, under the import's own limit rather than the commit's short client
    // timeout; nothing is written after it, so it sees what the commit would have seen.
    await db.query(withQueryTimeout({ text: 'set constraints all immediate' }, LONG_STATEMENT_MS));
    return { ok: true, dryRun: false, record: applied.rows[0]!.record };
  } catch (error) {
    if (!(error instanceof pg.DatabaseError && error.code === 'WD014')) throw error;
    const conflict = JSON.parse(error.detail!) as { errors: ImportError[]; errorCount: number };
    return { ok: false, conflict: true, ...conflict };
  }
}

interface SqlCheck {
  errors: ImportError[];
  errorCount: number;
  created: number;
  updated: number;
  unchanged: number;
  isosCreated: number;
}

/**
 * Reads the file into the COPY: the header first (which columns, which delimiter), then each
 * record as one line of COPY text. Records that cannot become a row (a wrong number of fields, a
 * NUL) are errors here; the rest is for the SQL to judge.
 */
async function readRows(
  source: AsyncIterable<Buffer>,
  copy: Writable,
  onProgress?: (progress: ImportProgress) => void,
) {
  const decoder = new TextDecoder('utf-8', { fatal: true }); // drops a leading BOM
  let parser: CsvParser | undefined;
  let delimiter: ',' | ';' = ',';
  let pending = ''; // text before the header's line break, while the delimiter is unknown
  let header: { positions: number[]; width: number; present: string[] } | undefined;
  const errors: ImportError[] = [];
  let errorCount = 0;
  let rows = 0;
  let reported = Date.now();

  const fail = (error: ImportError) => {
    errorCount++;
    if (errors.length < MAX_IMPORT_ERRORS) errors.push(error);
  };
  const take = async (records: CsvRecord[]) => {
    let out = '';
    for (const record of records) {
      if (!header) {
        header = readHeader(record);
        continue;
      }
      if (record.fields.every((field) => field.trim() === '')) continue; // a spreadsheet's blank row
      rows++;
      if (record.fields.length !== header.width) {
        fail({
          line: record.line,
          column: null,
          value: null,
          detail: `has ${record.fields.length} fields; the header has ${header.width}`,
        });
        continue;
      }
      const nul = record.fields.findIndex((field) => field.includes('\0'));
      if (nul >= 0) {
        fail({
          line: record.line,
          column: header.present[nul] ?? null,
          value: null,
          detail: 'holds a NUL character',
        });
        continue;
      }
      out += `${record.line}`;
      for (const position of header.positions) {
        out += `\t${position < 0 ? '' : copyText(record.fields[position]!)}`;
      }
      out += '\n';
    }
    if (out && !copy.write(out)) await once(copy, 'drain');
    if (onProgress && Date.now() - reported >= 250) {
      reported = Date.now();
      onProgress({ phase: 'reading', rows });
    }
  };

  // The line a byte that is not UTF-8 is on, as an editor shows it: the line breaks of the pieces
  // before, and of this piece up to that byte (csv.ts, nonUtf8Line).
  let linesBefore = 0;
  let previous: Uint8Array = new Uint8Array(0);
  const decode = (chunk?: Uint8Array) => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_ENCODING_INVALID_ENCODED_DATA') throw error;
      const line = chunk ? nonUtf8Line(previous, chunk, linesBefore) : 1 + linesBefore;
      throw new Refused([
        {
          line,
          column: null,
          value: null,
          detail: 'is not UTF-8 text: save the file as CSV UTF-8',
        },
      ]);
    }
  };
  const counted = (chunk: Uint8Array) => {
    linesBefore += lineBreaks(chunk) - (previous.at(-1) === 0x0d && chunk[0] === 0x0a ? 1 : 0);
    previous = chunk;
  };

  try {
    for await (const chunk of source) {
      const text = decode(chunk);
      counted(chunk);
      if (!parser) {
        pending += text;
        const lineEnd = pending.search(/[\r\n]/);
        if (lineEnd < 0 && pending.length < 100_000) continue;
        delimiter = detectDelimiter(pending.slice(0, lineEnd < 0 ? undefined : lineEnd));
        parser = new CsvParser(delimiter);
        await take(parser.push(pending));
        pending = '';
      } else {
        await take(parser.push(text));
      }
    }
    const tail = decode();
    parser ??= new CsvParser((delimiter = detectDelimiter(pending + tail)));
    await take([...parser.push(pending + tail), ...parser.end()]);
  } catch (error) {
    if (error instanceof CsvSyntaxError) {
      throw new Refused([{ line: error.line, column: null, value: null, detail: error.message }]);
    }
    throw error;
  }
  if (!header) {
    throw new Refused([
      { line: 1, column: null, value: null, detail: 'the file is empty: it needs a header row' },
    ]);
  }
  return { rows, errors, errorCount, delimiter, present: header.present };
}

/** The header: each register column's position in a record (-1: absent). */
function readHeader(record: CsvRecord): { positions: number[]; width: number; present: string[] } {
  const names = record.fields.map((field) => field.trim());
  const known = new Set<string>([...REGISTER_COLUMNS, ...REGISTER_READ_ONLY_COLUMNS]);
  const errors: ImportError[] = [];
  names.forEach((name, i) => {
    if (!known.has(name)) {
      errors.push({
        line: record.line,
        column: name,
        value: name,
        detail: `is not a column of the register; the columns are ${[...REGISTER_COLUMNS, ...REGISTER_READ_ONLY_COLUMNS].join(', ')}`,
      });
    } else if (names.indexOf(name) < i) {
      errors.push({
        line: record.line,
        column: name,
        value: name,
        detail: 'is in the header twice',
      });
    }
  });
  for (const name of REQUIRED_COLUMNS) {
    if (!names.includes(name)) {
      errors.push({
        line: record.line,
        column: name,
        value: null,
        detail: 'the header needs this column',
      });
    }
  }
  if (errors.length) throw new Refused(errors);
  return {
    // The register's columns, then `version`: the import checks it (a weld changed since the
    // export is a conflict); status, repairCycle and acceptance are the lifecycle's and read by
    // nothing.
    positions: [...REGISTER_COLUMNS, 'version'].map((name) => names.indexOf(name)),
    width: names.length,
    present: names,
  };
}

/** The SHA-256 of a stream's bytes, in hex, and how many there were, as they pass by. */
function hashingCounter(): {
  update(chunk: Buffer): void;
  digest(): { sha256: string; bytes: number };
} {
  const hash = createHash('sha256');
  let bytes = 0;
  return {
    update(chunk) {
      hash.update(chunk);
      bytes += chunk.length;
    },
    digest: () => ({ sha256: hash.digest('hex'), bytes }),
  };
}

/**
 * Writes the register of the welds `where` selects (SQL over welds `r`, with its values inlined
 * as literals: COPY takes no parameters) to `out` as CSV with a header, in ISO and weld number
 * order. Text a spreadsheet would run as a formula (=, +, -, @ first) is written with a leading
 * apostrophe, which import takes off again (OWASP, CSV injection).
 */
export async function exportWelds(
  db: pg.ClientBase,
  where: { sql: string; values: unknown[] },
  out: Writable,
): Promise<number> {
  // The welds `r`, their ISO `i`: filters may name either.
  const condition = where.sql ? `where ${where.sql}` : '';
  return copyCsvTo(
    db,
    `select weld_hidden.spreadsheet_text(i.iso_number) as "isoNumber",
            weld_hidden.spreadsheet_text(i.line_number) as "lineNumber",
            weld_hidden.spreadsheet_text(r.weld_number) as "weldNumber",
            r.type, trim_scale(r.size) as size, r.schedule,
            trim_scale(r.wall_thickness) as "wallThickness",
            weld_hidden.spreadsheet_text(r.material) as material,
            weld_hidden.spreadsheet_text(wr.stamp) as "welderStamp",
            weld_hidden.spreadsheet_text(p.wps_number) as "wpsNumber",
            weld_hidden.spreadsheet_text(p.revision) as "wpsRevision",
            r.welded_on as "weldedOn", r.base_metal_1_p_number as "baseMetal1PNumber",
            r.base_metal_2_p_number as "baseMetal2PNumber", r.preheat_f as "preheatF",
            r.status, r.repair_cycle as "repairCycle",
            weld_hidden.spreadsheet_text(weld_public.welds_acceptance(r)) as acceptance, r.version
       from weld_public.welds r
       join weld_public.isos i on i.tenant_id = r.tenant_id and i.id = r.iso_id
       left join weld_public.welders wr on wr.tenant_id = r.tenant_id and wr.id = r.welder_id
       left join weld_public.wps p on p.tenant_id = r.tenant_id and p.id = r.wps_id
       ${condition}
      order by i.iso_number, r.weld_number`,
    where.values,
    out,
  );
}

/**
 * Writes the rows of `select` (its $1, $2, ... are `values`, inlined as literals: COPY takes no
 * parameters) to `out` as CSV with a header and a BOM, streamed by COPY: the welds export, and the
 * reports (rest-adapter/reports.ts). Dates are written as ISO dates. The statement, a slow reader
 * included, may take `statementTimeoutMs` (the export's 10 minutes by default). Returns the row
 * count.
 */
export async function copyCsvTo(
  db: pg.ClientBase,
  select: string,
  values: unknown[],
  out: Writable,
  statementTimeoutMs = LONG_STATEMENT_MS,
): Promise<number> {
  await db.query(
    `select set_config('statement_timeout', '${statementTimeoutMs}ms', true), ` +
      `set_config('datestyle', 'ISO, YMD', true)`,
  );
  // A BOM first: without it, Excel reads the file in the computer's legacy code page. Written
  // before the COPY starts: a client gone already (a destroyed response answers write() with
  // false and never drains) ends the work here, with no COPY left half-read on the connection.
  if (!out.destroyed && !out.write('\uFEFF')) {
    await Promise.race([once(out, 'drain'), once(out, 'close')]);
  }
  if (out.destroyed) throw new Error('the client went away before the file began');
  const copy = db.query(
    withQueryTimeout(
      copyTo(`copy (${inlineValues(select, values)}) to stdout with (format csv, header)`),
      statementTimeoutMs, // a slow reader may hold it long
    ),
  );
  try {
    await pipeline(copy as Readable, out, { end: false });
  } finally {
    // pg arms its client-side query_timeout for every query and disarms it through the query's
    // callback, which a COPY TO stream never calls: disarm it here, or it would fire at the stream
    // long after (an 'error' nobody listens to any more).
    (copy as unknown as { callback?: () => void }).callback?.();
  }
  return copy.rowCount;
}

/** `sql` with $1, $2, ... replaced by its values as SQL literals (strings, numbers, string arrays). */
function inlineValues(sql: string, values: unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => literal(values[Number(n) - 1]));
}

function literal(value: unknown): string {
  // (In parentheses: a negative number after a minus would start a comment, `x --1`.)
  if (typeof value === 'number' && Number.isFinite(value)) return `(${String(value)})`;
  if (typeof value === 'string') return pg.escapeLiteral(value);
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
    const items = value.map((item) => `"${item.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`);
    return pg.escapeLiteral(`{${items.join(',')}}`);
  }
  throw new Error(`no SQL literal for ${typeof value}`);
}
