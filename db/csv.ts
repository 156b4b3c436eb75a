// CSV as spreadsheets write it (RFC 4180): fields split by a comma or a semicolon, quoted with
// double quotes when they hold one, a quote (doubled) or a line break; records end with CRLF, LF
// or a lone CR. The parser takes text in pieces of any size and keeps only the record it is in,
// so a file of any length parses in constant memory.
//
// Why not a library: errors name the line a record starts on, as an editor counts lines, and the
// parsers on npm count a CRLF inside a quoted field as two lines, which is exactly the file (an
// Excel export with a note over two lines) whose error a user then cannot find.

export interface CsvRecord {
  /** The line the record starts on, 1 for the first line of the file. */
  line: number;
  fields: string[];
}

/** Text that is not CSV: a quote left open, or text after a closing quote. */
export class CsvSyntaxError extends Error {
  readonly line: number;
  constructor(line: number, message: string) {
    super(message);
    this.line = line;
  }
}

/** The delimiter of a header line: the one of comma and semicolon it holds more of. */
export function detectDelimiter(headerLine: string): ',' | ';' {
  const count = (c: string) => headerLine.split(c).length - 1;
  return count(';') > count(',') ? ';' : ',';
}

const QUOTE = 34; // "
const CR = 13;
const LF = 10;

export class CsvParser {
  readonly #delimiter: number;
  readonly #maxField: number;
  #fields: string[] = [];
  #field = '';
  /** In a quoted field; just after a quote inside one (closing it, or the first of a pair). */
  #quoted = false;
  #afterQuote = false;
  /** The previous piece ended with a CR line break: an LF starting this one belongs to it. */
  #pendingCr = false;
  #line = 1;
  #recordLine = 1;
  #fieldStarted = false;

  readonly #maxFields: number;

  /** maxField (characters) and maxFields (per record) keep a hostile file's records small. */
  constructor(delimiter: ',' | ';', maxField = 10_000, maxFields = 100) {
    this.#delimiter = delimiter.charCodeAt(0);
    this.#maxField = maxField;
    this.#maxFields = maxFields;
  }

  /** The records this piece of text completes. */
  push(text: string): CsvRecord[] {
    const records: CsvRecord[] = [];
    let i = 0;
    if (this.#pendingCr) {
      // The last piece ended with CR (counted already): an LF here is the rest of that break.
      this.#pendingCr = false;
      if (text.charCodeAt(0) === LF) i = 1;
    }
    // The run being scanned is copied into the field in one slice; inside quotes, line breaks
    // are part of it.
    let start = this.#quoted ? 0 : i;
    const flush = (end: number) => {
      if (end > start) this.#append(text.slice(start, end));
    };
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.#quoted) {
        if (this.#afterQuote) {
          this.#afterQuote = false;
          if (c === QUOTE) {
            start = i; // a doubled quote: the second one is text
            continue;
          }
          this.#quoted = false; // it was the closing quote: the field ends here
          if (c !== this.#delimiter && c !== CR && c !== LF) {
            throw new CsvSyntaxError(
              this.#line,
              'a quoted field must end at a delimiter or the end of the line',
            );
          }
          start = i;
        } else {
          if (c === QUOTE) {
            flush(i);
            this.#afterQuote = true;
          } else if (c === LF) {
            this.#line++;
          } else if (c === CR) {
            this.#line++;
            if (i + 1 === text.length) this.#pendingCr = true;
            else if (text.charCodeAt(i + 1) === LF) i++;
          }
          continue;
        }
      }
      if (c === this.#delimiter) {
        flush(i);
        this.#endField();
        start = i + 1;
      } else if (c === CR || c === LF) {
        flush(i);
        this.#endRecord(records);
        this.#line++;
        this.#recordLine = this.#line;
        if (c === CR) {
          if (i + 1 === text.length) this.#pendingCr = true;
          else if (text.charCodeAt(i + 1) === LF) i++;
        }
        start = i + 1;
      } else if (c === QUOTE && !this.#fieldStarted && i === start) {
        this.#quoted = true;
        this.#fieldStarted = true;
        start = i + 1;
      } else {
        this.#fieldStarted = true;
      }
    }
    if (!this.#afterQuote) flush(text.length);
    return records;
  }

  /** The last record, when the text does not end with a line break. */
  end(): CsvRecord[] {
    if (this.#quoted && !this.#afterQuote) {
      throw new CsvSyntaxError(this.#recordLine, 'a quoted field is not closed');
    }
    this.#quoted = false;
    this.#afterQuote = false;
    const records: CsvRecord[] = [];
    this.#endRecord(records);
    return records;
  }

  #append(text: string): void {
    this.#fieldStarted = true;
    this.#field += text;
    if (this.#field.length > this.#maxField) {
      throw new CsvSyntaxError(
        this.#recordLine,
        `a field is longer than ${this.#maxField} characters (a quote left open?)`,
      );
    }
  }

  #endField(): void {
    if (this.#fields.length === this.#maxFields) {
      throw new CsvSyntaxError(
        this.#recordLine,
        `a record has more than ${this.#maxFields} fields`,
      );
    }
    this.#fields.push(this.#field);
    this.#field = '';
    this.#fieldStarted = false;
  }

  #endRecord(records: CsvRecord[]): void {
    const empty = this.#fields.length === 0 && !this.#fieldStarted;
    if (!empty) {
      this.#endField();
      records.push({ line: this.#recordLine, fields: this.#fields });
    }
    this.#fields = [];
    this.#field = '';
    this.#fieldStarted = false;
  }
}

/** A value as a field of PostgreSQL's COPY text format (never null: empty stays empty). */
export function copyText(value: string): string {
  return /[\\\t\n\r]/.test(value)
    ? value
        .replaceAll('\\', '\\\\')
        .replaceAll('\t', '\\t')
        .replaceAll('\n', '\\n')
        .replaceAll('\r', '\\r')
    : value;
}

/**
 * Where bytes stop being UTF-8: the offset of the first byte that starts no valid sequence (or
 * breaks one), -1 when every sequence is valid or only the last is cut short (a file read in
 * pieces continues it in the next). RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF.
 */
export function firstNonUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const length = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : 4;
    if (lead < 0xc2 || lead > 0xf4) return i;
    // The second byte's range is narrower after four leads (overlongs, surrogates, > U+10FFFF).
    const [low, high] =
      lead === 0xe0
        ? [0xa0, 0xbf]
        : lead === 0xed
          ? [0x80, 0x9f]
          : lead === 0xf0
            ? [0x90, 0xbf]
            : lead === 0xf4
              ? [0x80, 0x8f]
              : [0x80, 0xbf];
    for (let k = 1; k < length; k++) {
      if (i + k >= bytes.length) return -1;
      const byte = bytes[i + k]!;
      if (k === 1 ? byte < low || byte > high : (byte & 0xc0) !== 0x80) return i;
    }
    i += length;
  }
  return -1;
}

/** How many lines the bytes end (LF, or a CR not followed by LF), as the parser counts them. */
export function lineBreaks(bytes: Uint8Array, end = bytes.length): number {
  let count = 0;
  for (let i = 0; i < end; i++) {
    if (bytes[i] === 0x0a || (bytes[i] === 0x0d && bytes[i + 1] !== 0x0a)) count++;
  }
  return count;
}

/**
 * The line (as lineBreaks counts, 1 for the first) of the first byte of `chunk` that is not
 * UTF-8, the file's earlier pieces having held `linesBefore` line breaks and ended with
 * `previous`: a sequence that piece began and left unfinished is read with this one, so that
 * neither a character cut in two nor a line break of the earlier piece is miscounted.
 */
export function nonUtf8Line(previous: Uint8Array, chunk: Uint8Array, linesBefore: number): number {
  const carried = unfinishedTail(previous);
  const joined = Buffer.concat([carried, chunk]);
  const at = firstNonUtf8(joined);
  // A CRLF cut between the pieces was counted once already, at its CR.
  const split = previous.at(-1) === 0x0d && chunk[0] === 0x0a && at !== 0 ? 1 : 0;
  return 1 + linesBefore + lineBreaks(joined, at < 0 ? joined.length : at) - split;
}

/** The last bytes of `bytes` that begin a UTF-8 sequence it does not finish (none: empty). */
export function unfinishedTail(bytes: Uint8Array): Uint8Array {
  for (let back = 1; back <= 3 && back <= bytes.length; back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: its lead is further back
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? bytes.subarray(bytes.length - back) : new Uint8Array(0);
  }
  return new Uint8Array(0);
}
