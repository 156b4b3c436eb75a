// The turnover dossier of a released test package: one PDF handed to the plant owner at turnover
// (cover and contents, readiness at release, ISOs, weld log, repairs, NDT summary, PWHT and
// hardness, punch list, an index of every attached file, then the attached PDFs and images
// themselves), and a ZIP of that PDF plus the original attached files, byte for byte as uploaded.
//
// Both are reproducible: the same data and the same generation time give the same bytes, so a
// dossier can be regenerated and compared, or its hash recorded at turnover. Two generation times
// give PDFs that differ only in the cover's stamp and the Info dates (see drawStamp), and ZIPs
// that differ only in the entries' times. Nothing here reads the clock, the time zone, the locale
// or a random source.
//
// Text comes from users and may be any Unicode; the PDF's standard fonts draw WinAnsi only, so
// every string goes through Fonts.safe, which puts "?" for what the font cannot draw.
import { zipSync, type ZipOptions, type Zippable } from 'fflate';
import {
  PDFContentStream,
  PDFDocument,
  StandardFonts,
  degrees,
  drawText as textOperators,
  rgb,
  type PDFFont,
  type PDFImage,
  type PDFPage,
} from 'pdf-lib';
import { inflateSync } from 'node:zlib';
import { imageSize, sniffAttachment } from './file-types.ts';

export interface DossierAttachment {
  fileName: string; // as uploaded, e.g. "RT-0042.pdf"
  contentType: 'application/pdf' | 'image/png' | 'image/jpeg' | 'text/csv';
  sizeBytes: number;
  sha256: string; // 64 hex
  attachedTo: string; // what it belongs to, in words: "ISO 100-A", "weld W-3 on ISO 100-A", ...
  bytes: Uint8Array; // the file's content
}

export interface DossierData {
  tenantName: string;
  package: {
    packageNumber: string;
    state: string;
    testMedium: string;
    testPressurePsig: number | null;
    releasedAt: string | null; // ISO instant of its (last) release
    releasedBy: string | null; // user name
  };
  /**
   * Readiness as the dossier is generated (weld_public.test_packages_readiness_reasons): a release
   * needs it ready and holds what it was judged on, so normally ready with no reasons.
   */
  readiness: { ready: boolean; reasons: { code: string; detail: string }[] };
  isos: {
    isoNumber: string;
    revision: string;
    lineNumber: string;
    pipingClass: string | null;
    fluidService: string;
    welds: number;
  }[];
  welds: {
    weldNumber: string;
    isoNumber: string;
    size: string | null;
    type: string;
    welder: string | null; // welder stamp, e.g. "W-12"
    wps: string | null; // "WPS-1 rev 0"
    weldedOn: string | null; // YYYY-MM-DD
    status: string; // ACCEPTED, REPAIRED, ...
    acceptance: string | null; // how it was accepted ("RT report RT-7 of 2026-03-02"); null unless ACCEPTED
    repairCycles: number;
    repairs: string[]; // each repair as welded: "repair 1: welded 2026-03-05 by W-12, WPS WPS-2 rev 0"
    examinations: string[]; // e.g. ["RT 2026-03-02 accept (RT-7)", "VT 2026-03-01 accept"]
    qualifications: string[]; // welder qualifications in force on the weld date; empty: none recorded
    pwht: string | null; // e.g. "PWHT-4 2026-03-03, 1150 °F, 60 min" or null when none
    hardness: string | null; // e.g. "HB 190 (max 225)" or null
  }[];
  ndtSummary: {
    method: string;
    required: number;
    examined: number;
    lots: number;
    note: string | null;
  }[]; // per method: welds required vs examined
  heatTreatmentPresent: boolean; // true when any weld has pwht or hardness: then print a "PWHT and hardness" section
  punchItems: {
    itemNumber: number;
    category: 'A' | 'B';
    description: string;
    raisedBy: string | null;
    raisedOn: string;
    closedOn: string | null;
    closedBy: string | null;
  }[];
  attachments: DossierAttachment[];
}

// ---------------------------------------------------------------------------------------------
// Page geometry and type. A4 landscape: the weld log has ten columns, two of them long text.

const A4_LANDSCAPE: [number, number] = [841.89, 595.28];
const A4_PORTRAIT: [number, number] = [595.28, 841.89];
const MARGIN = 36;
const CONTENT_WIDTH = A4_LANDSCAPE[0] - 2 * MARGIN;
const TOP = A4_LANDSCAPE[1] - MARGIN;
/** The lowest a line of body text may reach; the footer sits below it. */
const BOTTOM = 44;
const FOOTER_SIZE = 7;
/** The footer's baseline, from the page's (visual) bottom edge. */
const FOOTER_FROM_EDGE = 20;
const HEADING_SIZE = 14;
/** A section heading's height: the text and the space under it. */
const HEADING_SPACE = 26;
const BODY_SIZE = 8;
const LINE = 10;
/** Cell padding; a cell's first baseline sits BASELINE under its top padding. */
const PAD = 3;
const BASELINE = 7.5;
const PARAGRAPH_SIZE = 9;
const PARAGRAPH_LINE = 12;
const INK = rgb(0, 0, 0);
const HEADER_FILL = rgb(0.9, 0.9, 0.9);
const RULE = rgb(0.7, 0.7, 0.7);
const ELLIPSIS = '\u2026';

/** Fixed document information: nothing of pdf-lib's defaults, which name the time of the run. */
const CREATOR = 'Weld Data Service';
const PRODUCER = 'Weld Data Service (pdf-lib)';

// ---------------------------------------------------------------------------------------------
// Text: what the standard fonts can draw, how wide it is, and where it wraps.

/** The two faces of the dossier, with the text safety and measuring every drawn string needs. */
class Fonts {
  readonly regular: PDFFont;
  readonly bold: PDFFont;
  /** Code points the fonts' WinAnsi encoding holds (the same for both faces). */
  readonly #drawable: Set<number>;
  readonly #widths = new Map<PDFFont, Map<string, number>>();

  constructor(regular: PDFFont, bold: PDFFont) {
    this.regular = regular;
    this.bold = bold;
    this.#drawable = new Set(regular.getCharacterSet());
  }

  /**
   * One line of text the fonts can encode: composed characters first (so "e" + U+0301 is the
   * drawable "é"), tabs and line breaks as spaces, and "?" for each control character and each
   * character outside WinAnsi (one "?" per code point, so an emoji is one "?", not two).
   */
  safe(text: string): string {
    let out = '';
    for (const char of text.normalize('NFC')) {
      const code = char.codePointAt(0)!;
      if (code === 9 || code === 10 || code === 13) out += ' ';
      else if (code < 32 || (code >= 127 && code < 160) || !this.#drawable.has(code)) out += '?';
      else out += char;
    }
    return out;
  }

  /**
   * The width of safe text as drawn: the sum of its glyphs. (pdf-lib's widthOfTextAtSize also
   * subtracts kerning, which drawText does not apply, so it would measure lines short.)
   */
  width(font: PDFFont, text: string, size: number): number {
    let widths = this.#widths.get(font);
    if (!widths) this.#widths.set(font, (widths = new Map<string, number>()));
    let total = 0;
    for (const char of text) {
      let width = widths.get(char);
      if (width === undefined) widths.set(char, (width = font.widthOfTextAtSize(char, 1)));
      total += width;
    }
    return total * size;
  }

  /**
   * Text as lines no wider than `maxWidth`: its own line breaks kept, words moved whole to the
   * next line, and a word wider than a line (a path, a hash) cut where it must be. With
   * `maxLines`, what does not fit ends in an ellipsis. Always at least one line.
   */
  wrap(font: PDFFont, text: string, size: number, maxWidth: number, maxLines = Infinity): string[] {
    const lines: string[] = [];
    const space = this.width(font, ' ', size);
    for (const paragraph of text.split(/\r\n|\r|\n/)) {
      let line = '';
      let lineWidth = 0;
      for (const word of this.safe(paragraph).split(' ')) {
        if (word === '') continue;
        const wordWidth = this.width(font, word, size);
        const gap = line ? space : 0;
        if (lineWidth + gap + wordWidth <= maxWidth) {
          line += (line ? ' ' : '') + word;
          lineWidth += gap + wordWidth;
          continue;
        }
        if (line) lines.push(line);
        line = '';
        lineWidth = 0;
        for (const char of word) {
          const charWidth = this.width(font, char, size);
          if (line && lineWidth + charWidth > maxWidth) {
            lines.push(line);
            line = '';
            lineWidth = 0;
          }
          line += char;
          lineWidth += charWidth;
        }
      }
      lines.push(line);
    }
    if (lines.length <= maxLines) return lines;
    const kept = lines.slice(0, maxLines);
    kept[maxLines - 1] = this.ellipsize(font, `${kept[maxLines - 1]}${ELLIPSIS}`, size, maxWidth);
    return kept;
  }

  /** One line of text, cut and ended with an ellipsis when wider than `maxWidth`. */
  ellipsize(font: PDFFont, text: string, size: number, maxWidth: number): string {
    let chars = [...this.safe(text)];
    if (this.width(font, chars.join(''), size) <= maxWidth) return chars.join('');
    while (chars.length > 0 && this.width(font, chars.join('') + ELLIPSIS, size) > maxWidth) {
      chars = chars.slice(0, -1);
    }
    return chars.join('') + ELLIPSIS;
  }
}

// ---------------------------------------------------------------------------------------------
// The flow: sections, paragraphs and tables laid down page after page, tables breaking across
// pages with their header repeated.

interface Column {
  title: string;
  width: number;
}

/** Where a section starts, for the table of contents (1-based page number). */
interface Section {
  title: string;
  page: number;
}

/** A table cut into pages: per page, its row pieces, each the lines of every cell. */
interface TableLayout {
  header: string[][];
  pages: string[][][][];
}

const rowHeight = (lines: number) => lines * LINE + 2 * PAD;
const linesOf = (cells: string[][]) => Math.max(1, ...cells.map((cell) => cell.length));

class Flow {
  readonly doc: PDFDocument;
  readonly fonts: Fonts;
  readonly sections: Section[] = [];
  #page: PDFPage | undefined;
  #title = '';
  /** The top of the space left on the current page. */
  y = 0;

  constructor(doc: PDFDocument, fonts: Fonts) {
    this.doc = doc;
    this.fonts = fonts;
  }

  get page(): PDFPage {
    if (!this.#page) throw new Error('no section started');
    return this.#page;
  }

  /** A new section: a new page, its heading, and an entry in the table of contents. */
  section(title: string): void {
    this.#title = title;
    this.#newPage(title);
    this.sections.push({ title, page: this.doc.getPageCount() });
  }

  /** The current section goes on, on a new page. */
  continue(): void {
    this.#newPage(`${this.#title} (continued)`);
  }

  #newPage(heading: string): void {
    this.#page = this.doc.addPage(A4_LANDSCAPE);
    this.#draw(this.fonts.ellipsize(this.fonts.bold, heading, HEADING_SIZE, CONTENT_WIDTH), {
      x: MARGIN,
      y: TOP - HEADING_SIZE,
      size: HEADING_SIZE,
      bold: true,
    });
    this.y = TOP - HEADING_SPACE;
  }

  #draw(text: string, at: { x: number; y: number; size: number; bold?: boolean }): void {
    if (text === '') return;
    const font = at.bold ? this.fonts.bold : this.fonts.regular;
    this.page.drawText(text, { x: at.x, y: at.y, size: at.size, font, color: INK });
  }

  paragraph(text: string): void {
    for (const line of this.fonts.wrap(this.fonts.regular, text, PARAGRAPH_SIZE, CONTENT_WIDTH)) {
      if (this.y - PARAGRAPH_LINE < BOTTOM) this.continue();
      this.#draw(line, { x: MARGIN, y: this.y - PARAGRAPH_SIZE, size: PARAGRAPH_SIZE });
      this.y -= PARAGRAPH_LINE;
    }
    this.y -= 6;
  }

  /** How many pages a table would take, starting here: the same layout `table` draws. */
  tablePages(columns: Column[], rows: string[][]): number {
    return this.#layoutTable(columns, rows).pages.length;
  }

  table(columns: Column[], rows: string[][]): void {
    const { header, pages } = this.#layoutTable(columns, rows);
    pages.forEach((pieces, index) => {
      if (index > 0) this.continue();
      if (pieces.length === 0 && index < pages.length - 1) return; // no room left under the text
      this.#row(columns, header, true);
      for (const piece of pieces) this.#row(columns, piece, false);
    });
    this.y -= 8;
  }

  /**
   * Cuts a table into pages from the current position. A row goes whole onto the next page
   * when it does not fit the rest of this one; only a row taller than a page is split, so a long
   * punch description or examination list can never push text off the page.
   */
  #layoutTable(columns: Column[], rows: string[][]): TableLayout {
    const { fonts } = this;
    const header = columns.map((column) =>
      fonts.wrap(fonts.bold, column.title, BODY_SIZE, column.width - 2 * PAD),
    );
    const headerHeight = rowHeight(linesOf(header));
    const continuedTop = TOP - HEADING_SPACE - headerHeight;
    const pageLines = Math.floor((continuedTop - BOTTOM - 2 * PAD) / LINE);
    const pages: string[][][][] = [[]];
    let y = this.y - headerHeight;
    const nextPage = () => {
      pages.push([]);
      y = continuedTop;
    };
    for (const row of rows) {
      const cells = columns.map((column, index) =>
        fonts.wrap(fonts.regular, row[index] ?? '', BODY_SIZE, column.width - 2 * PAD),
      );
      const lines = linesOf(cells);
      let from = 0;
      while (from < lines) {
        const room = Math.floor((y - BOTTOM - 2 * PAD) / LINE);
        const rest = lines - from;
        const pieces = pages[pages.length - 1]!;
        if (rest > room && ((pieces.length > 0 && rest <= pageLines) || room < 1)) {
          nextPage();
          continue;
        }
        const taken = Math.min(rest, room);
        pieces.push(cells.map((cell) => cell.slice(from, from + taken)));
        y -= rowHeight(taken);
        from += taken;
        if (from < lines) nextPage();
      }
    }
    return { header, pages };
  }

  #row(columns: Column[], cells: string[][], header: boolean): void {
    const height = rowHeight(linesOf(cells));
    const bottom = this.y - height;
    const width = columns.reduce((sum, column) => sum + column.width, 0);
    if (header)
      this.page.drawRectangle({ x: MARGIN, y: bottom, width, height, color: HEADER_FILL });
    let x = MARGIN;
    columns.forEach((column, index) => {
      (cells[index] ?? []).forEach((line, n) =>
        this.#draw(line, {
          x: x + PAD,
          y: this.y - PAD - BASELINE - n * LINE,
          size: BODY_SIZE,
          bold: header,
        }),
      );
      x += column.width;
    });
    this.page.drawLine({
      start: { x: MARGIN, y: bottom },
      end: { x: MARGIN + width, y: bottom },
      thickness: 0.5,
      color: RULE,
    });
    this.y = bottom;
  }
}

// ---------------------------------------------------------------------------------------------
// Attachments: their order, and where each goes (appended pages, or the ZIP only).

/**
 * Attachments in a fixed order: by what they belong to, file name, hash. Compared by code unit,
 * not localeCompare, whose order depends on the ICU data and locale of the machine.
 */
function sortAttachments(attachments: DossierAttachment[]): DossierAttachment[] {
  const key = (a: DossierAttachment) => [a.attachedTo, a.fileName, a.sha256];
  return [...attachments].sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    for (let i = 0; i < ka.length; i++) {
      if (ka[i]! < kb[i]!) return -1;
      if (ka[i]! > kb[i]!) return 1;
    }
    return 0;
  });
}

type Placement =
  | { kind: 'pdf'; source: PDFDocument; pages: number }
  | { kind: 'image'; image: PDFImage }
  | { kind: 'zip only'; reason: string };

interface PlannedAttachment {
  attachment: DossierAttachment;
  placement: Placement;
  /** The first page it was appended on (set when the index is laid out). */
  firstPage?: number;
}

/**
 * Where each attachment goes. A PDF is tried in full first (loaded, its pages copied and
 * stamped in a scratch document, saved), so that a file pdf-lib cannot handle (encrypted,
 * broken, or odd in a way only copying shows) is indexed as "in the ZIP only" rather than
 * failing the dossier or leaving half-copied objects in it.
 */
async function planAttachments(
  doc: PDFDocument,
  attachments: DossierAttachment[],
): Promise<PlannedAttachment[]> {
  const planned: PlannedAttachment[] = [];
  // A file attached to several records is judged, loaded and embedded once.
  const placements = new Map<string, Placement>();
  for (const attachment of sortAttachments(attachments)) {
    let placement = placements.get(attachment.sha256);
    if (!placement)
      placements.set(attachment.sha256, (placement = await placementOf(doc, attachment)));
    planned.push({ attachment, placement });
  }
  return planned;
}

async function placementOf(doc: PDFDocument, attachment: DossierAttachment): Promise<Placement> {
  switch (attachment.contentType) {
    case 'application/pdf':
      try {
        if (!unpacksWithin(attachment.bytes, MAX_APPENDED_PDF_BYTES)) {
          return { kind: 'zip only', reason: 'the PDF unpacks to too much to append' };
        }
        const source = await PDFDocument.load(attachment.bytes, { updateMetadata: false });
        // What a page would do or link to when opened (JavaScript, a link to a phishing page, a
        // form, files of its own) is not the dossier's: a page keeps only what it shows, before
        // copying (a copy takes every object the page refers to).
        for (const page of source.getPages()) {
          for (const key of page.node.keys()) {
            if (!PAGE_KEYS.has(key.decodeText())) page.node.delete(key);
          }
        }
        const pages = source.getPageCount();
        if (pages === 0) return { kind: 'zip only', reason: 'the PDF has no pages' };
        await trialCopy(source);
        return { kind: 'pdf', source, pages };
      } catch {
        return { kind: 'zip only', reason: 'the PDF cannot be read' };
      }
    case 'image/png':
    case 'image/jpeg':
      // (A PNG is decoded whole to be embedded: what that takes is counted first.)
      if (decodedBytesOf(attachment.bytes) > MAX_APPENDED_IMAGE_BYTES) {
        return { kind: 'zip only', reason: 'the image is too large to append' };
      }
      try {
        const image =
          attachment.contentType === 'image/png'
            ? await doc.embedPng(attachment.bytes)
            : await doc.embedJpg(attachment.bytes);
        return { kind: 'image', image };
      } catch {
        return { kind: 'zip only', reason: 'the image cannot be read' };
      }
    default:
      return {
        kind: 'zip only',
        reason: attachment.contentType === 'text/csv' ? 'CSV' : 'not a PDF or an image',
      };
  }
}

/**
 * The most memory an appended image may take decoded (64 MB: 16 megapixels of 8-bit colour, an A1
 * drawing scanned at 200 dpi); a larger one, or one whose headers do not say its size plainly
 * (db/file-types.ts), is in the ZIP only.
 */
export const MAX_APPENDED_IMAGE_BYTES = 64_000_000;

const decodedBytesOf = (bytes: Uint8Array) => {
  const size = imageSize(bytes);
  return 'problem' in size ? Infinity : size.width * size.height * size.bytesPerPixel;
};

/** The most a PDF's streams may unpack to, all together (256 MB), to be appended. */
export const MAX_APPENDED_PDF_BYTES = 256_000_000;

/**
 * Whether a PDF's compressed streams unpack to at most `budget` bytes together, inflated with
 * that limit before pdf-lib sees it: a few hundred kilobytes can unpack to gigabytes, held
 * outside any heap limit. Streams that are not deflate (images, fonts) count their own size.
 */
export function unpacksWithin(bytes: Uint8Array, budget: number): boolean {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let left = budget;
  for (let at = text.indexOf('stream'); at >= 0; at = text.indexOf('stream', at + 6)) {
    if (text.subarray(at - 3, at).toString('latin1') === 'end') continue;
    let start = at + 6;
    if (text[start] === 0x0d) start++;
    if (text[start] !== 0x0a) continue;
    start++;
    const end = text.indexOf('endstream', start);
    if (end < 0) break;
    try {
      left -= inflateSync(text.subarray(start, end), { maxOutputLength: Math.max(1, left) }).length;
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') return false;
      left -= end - start; // (not deflate, or not whole: as it is)
    }
    if (left < 0) return false;
    at = end;
  }
  return true;
}

/** The keys a page keeps when appended: what it shows, nothing it does or refers to besides. */
const PAGE_KEYS = new Set([
  'Type',
  'MediaBox',
  'CropBox',
  'BleedBox',
  'TrimBox',
  'ArtBox',
  'Rotate',
  'Resources',
  'Contents',
  'UserUnit',
  'Group',
  'Parent',
]);

/** Everything appending does to a PDF's pages, done in a scratch document: throws if it fails. */
async function trialCopy(source: PDFDocument): Promise<void> {
  const trial = await PDFDocument.create({ updateMetadata: false });
  const font = await trial.embedFont(StandardFonts.Helvetica);
  const fonts = new Fonts(font, font);
  for (const page of await trial.copyPages(source, source.getPageIndices())) {
    trial.addPage(page);
    drawFooter(page, fonts, 'trial page 1 of 1');
  }
  await trial.save({ useObjectStreams: false });
}

/** The attachments index's last column. */
function whereText(planned: PlannedAttachment): string {
  if (planned.placement.kind === 'zip only') return `in the ZIP only (${planned.placement.reason})`;
  return `appended from page ${planned.firstPage}`;
}

/** Numbers the appended attachments' pages, given the page the first one starts on. */
function numberAppendedPages(planned: PlannedAttachment[], firstPage: number): void {
  let page = firstPage;
  for (const item of planned) {
    if (item.placement.kind === 'zip only') continue;
    item.firstPage = page;
    page += item.placement.kind === 'pdf' ? item.placement.pages : 1;
  }
}

async function appendAttachments(
  doc: PDFDocument,
  fonts: Fonts,
  planned: PlannedAttachment[],
): Promise<void> {
  for (const { attachment, placement } of planned) {
    if (placement.kind === 'pdf') {
      const pages = await doc.copyPages(placement.source, placement.source.getPageIndices());
      for (const page of pages) doc.addPage(page);
    } else if (placement.kind === 'image') {
      appendImage(doc, fonts, attachment, placement.image);
    }
  }
}

/** An image on a page of its own (turned to suit its shape), a caption over it, never enlarged. */
function appendImage(
  doc: PDFDocument,
  fonts: Fonts,
  attachment: DossierAttachment,
  image: PDFImage,
): void {
  const [pageWidth, pageHeight] = image.width >= image.height ? A4_LANDSCAPE : A4_PORTRAIT;
  const page = doc.addPage([pageWidth, pageHeight]);
  const caption = `${attachment.fileName} \u2014 ${attachment.attachedTo}`;
  let y = pageHeight - MARGIN;
  for (const line of fonts.wrap(fonts.bold, caption, 10, pageWidth - 2 * MARGIN, 2)) {
    if (line) page.drawText(line, { x: MARGIN, y: y - 10, size: 10, font: fonts.bold, color: INK });
    y -= 13;
  }
  const box = { width: pageWidth - 2 * MARGIN, height: y - 8 - BOTTOM };
  const scale = Math.min(1, box.width / image.width, box.height / image.height);
  const width = image.width * scale;
  const height = image.height * scale;
  page.drawImage(image, { x: (pageWidth - width) / 2, y: y - 8 - height, width, height });
}

// ---------------------------------------------------------------------------------------------
// The sections, in the order they are printed.

const orNone = (value: string | null, none = '\u2014') => value ?? none;

/** "1 weld", "2 welds". */
const counted = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function readinessSection(flow: Flow, data: DossierData): void {
  flow.section('Readiness at release');
  const { ready, reasons } = data.readiness;
  flow.paragraph(`Ready for release: ${ready ? 'yes' : 'no'}.`);
  // Judged as the dossier is generated: the service refuses a release while a reason is open and,
  // from the release on, holds what readiness was judged on, so ready now is ready at release.
  if (reasons.length === 0) {
    flow.paragraph(
      'No readiness reason is open. A release is refused while one is, and from the release on the records it was judged on are held (a change that would leave the package not ready is refused).',
    );
    return;
  }
  flow.paragraph(
    'Reasons open as this dossier was generated (records changed outside the service, or released before these rules):',
  );
  flow.table(
    [
      { title: 'Code', width: 200 },
      { title: 'Detail', width: 569 },
    ],
    reasons.map((reason) => [reason.code, reason.detail]),
  );
}

function isoSection(flow: Flow, data: DossierData): void {
  flow.section('ISOs');
  if (data.isos.length === 0) return flow.paragraph('No ISOs.');
  flow.table(
    [
      { title: 'ISO', width: 130 },
      { title: 'Revision', width: 60 },
      { title: 'Line number', width: 170 },
      { title: 'Piping class', width: 110 },
      { title: 'Fluid service', width: 239 },
      { title: 'Welds', width: 60 },
    ],
    data.isos.map((iso) => [
      iso.isoNumber,
      iso.revision,
      iso.lineNumber,
      orNone(iso.pipingClass),
      iso.fluidService,
      String(iso.welds),
    ]),
  );
}

function weldLogSection(flow: Flow, data: DossierData): void {
  flow.section('Weld log');
  if (data.welds.length === 0) return flow.paragraph('No welds.');
  flow.paragraph(`${counted(data.welds.length, 'weld')} on ${counted(data.isos.length, 'ISO')}.`);
  flow.table(
    [
      { title: 'Weld', width: 52 },
      { title: 'ISO', width: 72 },
      { title: 'Size / type', width: 62 },
      { title: 'Welder', width: 42 },
      { title: 'WPS', width: 72 },
      { title: 'Welded on', width: 52 },
      // The status, and the basis of an acceptance under it.
      { title: 'Status', width: 102 },
      { title: 'Repair cycles', width: 38 },
      { title: 'Examinations', width: 118 },
      // Wide enough for "WQ-3 GTAW (2026-01-10 to 2026-07-10)" on one line.
      { title: 'Qualifications in force', width: 159 },
    ],
    data.welds.map((weld) => [
      weld.weldNumber,
      weld.isoNumber,
      weld.size ? `${weld.size} ${weld.type}` : weld.type,
      orNone(weld.welder),
      orNone(weld.wps),
      orNone(weld.weldedOn),
      weld.acceptance ? `${weld.status} on ${weld.acceptance}` : weld.status,
      String(weld.repairCycles),
      weld.examinations.length ? weld.examinations.join('\n') : 'none',
      weld.qualifications.length ? weld.qualifications.join('\n') : 'none recorded',
    ]),
  );
}

/** Each repair of the package's welds, as welded (B31.3 328.6: its own date, welder and WPS). */
function repairsSection(flow: Flow, data: DossierData): void {
  const repaired = data.welds.filter((weld) => weld.repairs.length > 0);
  if (repaired.length === 0) return;
  flow.section('Repairs');
  flow.paragraph(`${counted(repaired.length, 'weld')} repaired.`);
  flow.table(
    [
      { title: 'Weld', width: 52 },
      { title: 'ISO', width: 72 },
      { title: 'Repairs as welded', width: 645 },
    ],
    repaired.map((weld) => [weld.weldNumber, weld.isoNumber, weld.repairs.join('\n')]),
  );
}

function ndtSection(flow: Flow, data: DossierData): void {
  flow.section('NDT summary');
  if (data.ndtSummary.length === 0) return flow.paragraph('No NDT required or recorded.');
  flow.paragraph('Welds required and examined, per method.');
  flow.table(
    [
      { title: 'Method', width: 120 },
      { title: 'Welds required', width: 90 },
      { title: 'Welds examined', width: 90 },
      { title: 'Lots', width: 60 },
      { title: 'Note', width: 409 },
    ],
    data.ndtSummary.map((row) => [
      row.method,
      String(row.required),
      String(row.examined),
      String(row.lots),
      orNone(row.note, ''),
    ]),
  );
}

function heatTreatmentSection(flow: Flow, data: DossierData): void {
  flow.section('PWHT and hardness');
  const welds = data.welds.filter((weld) => weld.pwht !== null || weld.hardness !== null);
  if (welds.length === 0) return flow.paragraph('No PWHT or hardness recorded.');
  flow.table(
    [
      { title: 'Weld', width: 80 },
      { title: 'ISO', width: 110 },
      { title: 'PWHT', width: 340 },
      { title: 'Hardness', width: 239 },
    ],
    welds.map((weld) => [
      weld.weldNumber,
      weld.isoNumber,
      orNone(weld.pwht),
      orNone(weld.hardness),
    ]),
  );
}

function punchSection(flow: Flow, data: DossierData): void {
  flow.section('Punch list');
  const items = data.punchItems;
  if (items.length === 0) return flow.paragraph('No punch items.');
  const count = (category: 'A' | 'B') => {
    const of = items.filter((item) => item.category === category);
    return `${of.length} category ${category} (${of.filter((item) => !item.closedOn).length} open)`;
  };
  flow.paragraph(`${counted(items.length, 'punch item')}: ${count('A')}, ${count('B')}.`);
  const by = (on: string, who: string | null) => (who ? `${on} by ${who}` : on);
  flow.table(
    [
      { title: 'Item', width: 40 },
      { title: 'Category', width: 50 },
      { title: 'Status', width: 50 },
      { title: 'Description', width: 339 },
      { title: 'Raised', width: 145 },
      { title: 'Closed', width: 145 },
    ],
    items.map((item) => [
      String(item.itemNumber),
      item.category,
      item.closedOn ? 'closed' : 'open',
      item.description,
      by(item.raisedOn, item.raisedBy),
      item.closedOn ? by(item.closedOn, item.closedBy) : '\u2014',
    ]),
  );
}

const INDEX_COLUMNS: Column[] = [
  { title: 'No.', width: 22 },
  { title: 'File name', width: 118 },
  { title: 'Attached to', width: 118 },
  { title: 'Type', width: 40 },
  { title: 'Size', width: 60 },
  // Wide enough for 64 hex digits on one line, so the hash can be read and searched whole.
  { title: 'SHA-256', width: 291 },
  { title: 'Where', width: 120 },
];

const TYPE_NAMES: Record<string, string> = {
  'application/pdf': 'PDF',
  'image/png': 'PNG',
  'image/jpeg': 'JPEG',
  'text/csv': 'CSV',
};

/** 1234567 as "1,234,567 bytes", the same on every machine (no locale). */
const byteSize = (n: number) => `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')} bytes`;

/**
 * The index of every attachment. Its "appended from page N" depends on how many pages the index
 * itself takes, so the page count is found first (it settles at once: a digit more in N cannot
 * wrap a line in a column that wide, and if it ever did the loop would just go round again).
 */
function attachmentsSection(flow: Flow, planned: PlannedAttachment[]): void {
  flow.section('Attachments index');
  if (planned.length === 0) return flow.paragraph('No attachments.');
  flow.paragraph(
    'Every file attached to the package and its records. The ZIP of this dossier holds each ' +
      'file as uploaded; PDFs and images are also appended to this PDF after the index.',
  );
  const rows = () =>
    planned.map((item, index) => [
      String(index + 1),
      item.attachment.fileName,
      item.attachment.attachedTo,
      TYPE_NAMES[item.attachment.contentType] ?? item.attachment.contentType,
      byteSize(item.attachment.sizeBytes),
      item.attachment.sha256,
      whereText(item),
    ]);
  const firstPage = flow.doc.getPageCount();
  let indexPages = 1;
  for (;;) {
    numberAppendedPages(planned, firstPage + indexPages);
    const pages = flow.tablePages(INDEX_COLUMNS, rows());
    if (pages === indexPages) break;
    indexPages = pages;
  }
  flow.table(INDEX_COLUMNS, rows());
}

// ---------------------------------------------------------------------------------------------
// Cover, footers and the generation stamp: drawn last, when every page number is known.

function drawCover(page: PDFPage, fonts: Fonts, data: DossierData, sections: Section[]): void {
  const { regular, bold } = fonts;
  let y = TOP;
  const line = (text: string, x: number, size: number, font: PDFFont) => {
    if (text) page.drawText(text, { x, y: y - size, size, font, color: INK });
  };
  line('Turnover dossier', MARGIN, 26, bold);
  y -= 36;
  for (const text of fonts.wrap(bold, data.package.packageNumber, 18, CONTENT_WIDTH, 2)) {
    line(text, MARGIN, 18, bold);
    y -= 22;
  }
  y -= 10;
  const pkg = data.package;
  const facts: [string, string][] = [
    ['Tenant', data.tenantName],
    ['State', pkg.state],
    ['Test medium', pkg.testMedium],
    ['Test pressure', pkg.testPressurePsig === null ? '\u2014' : `${pkg.testPressurePsig} psig`],
    ['Released at', orNone(pkg.releasedAt)],
    ['Released by', orNone(pkg.releasedBy)],
  ];
  for (const [label, value] of facts) {
    line(label, MARGIN, 10, bold);
    for (const text of fonts.wrap(regular, value, 10, CONTENT_WIDTH - 110, 2)) {
      line(text, MARGIN + 110, 10, regular);
      y -= 13;
    }
  }
  y -= 14;
  line('Contents', MARGIN, 12, bold);
  y -= 18;
  for (const section of sections) {
    line(section.title, MARGIN, 10, regular);
    const pageText = `page ${section.page}`;
    line(pageText, MARGIN + 360 - fonts.width(regular, pageText, 10), 10, regular);
    y -= 14;
  }
}

/** Where the stamp goes on the cover: bottom left, above the footer. */
const STAMP_AT = { x: MARGIN, y: BOTTOM + 16, size: 9 };

/** "Generated 2026-11-28T05:12:03Z": the instant to the second, UTC, always 20 characters. */
const stampText = (generatedAt: Date) =>
  `Generated ${generatedAt.toISOString().replace(/\.\d+Z$/, 'Z')}`;

/**
 * The generation stamp, in a content stream of its own that is not compressed. pdf-lib deflates
 * page content, and a deflated cover with another time in it would differ in length and shift
 * every later byte; here the stamp is plain text of a fixed length, so two generation times
 * change only the stamp's own 20 characters (as 40 hex digits) and the two Info dates, at the
 * same offsets, and the rest of the file is the same byte for byte.
 */
function drawStamp(doc: PDFDocument, page: PDFPage, font: PDFFont, text: string): void {
  const fontKey = page.node.newFontDictionary(font.name, font.ref);
  const operators = textOperators(font.encodeText(text), {
    ...STAMP_AT,
    font: fontKey,
    color: INK,
    rotate: degrees(0),
    xSkew: degrees(0),
    ySkew: degrees(0),
  });
  const stream = PDFContentStream.of(doc.context.obj({}), operators, false);
  page.node.addContentStream(doc.context.register(stream));
}

/**
 * The footer, right-aligned at the page's visual bottom: for an appended page turned by
 * /Rotate, the text is turned with it so it reads upright at the bottom as the page is shown.
 */
function drawFooter(page: PDFPage, fonts: Fonts, text: string): void {
  const { x, y, width, height } = page.getCropBox();
  const font = fonts.regular;
  const safe = fonts.ellipsize(font, text, FOOTER_SIZE, 400);
  const w = fonts.width(font, safe, FOOTER_SIZE);
  const d = FOOTER_FROM_EDGE;
  const angle = ((page.getRotation().angle % 360) + 360) % 360;
  const at =
    angle === 90
      ? { x: x + width - d, y: y + height - MARGIN - w }
      : angle === 180
        ? { x: x + MARGIN + w, y: y + height - d }
        : angle === 270
          ? { x: x + d, y: y + MARGIN + w }
          : { x: x + width - MARGIN - w, y: y + d };
  const rotate = degrees([90, 180, 270].includes(angle) ? angle : 0);
  page.drawText(safe, { ...at, rotate, size: FOOTER_SIZE, font, color: INK });
}

// ---------------------------------------------------------------------------------------------
// The dossier PDF.

/**
 * The dossier as a PDF. Reproducible: the same data and `generatedAt` give the same bytes; only
 * the cover's stamp and the Info dates carry `generatedAt` (to the second).
 */
export async function renderDossierPdf(data: DossierData, generatedAt: Date): Promise<Uint8Array> {
  // updateMetadata: false keeps pdf-lib from writing its own producer and the time of the run.
  const doc = await PDFDocument.create({ updateMetadata: false });
  const packageNumber = data.package.packageNumber;
  doc.setTitle(`Turnover dossier ${packageNumber}`);
  doc.setSubject(`Turnover dossier of test package ${packageNumber}`);
  doc.setAuthor(data.tenantName);
  doc.setCreator(CREATOR);
  doc.setProducer(PRODUCER);
  doc.setCreationDate(generatedAt);
  doc.setModificationDate(generatedAt);
  doc.setLanguage('en');
  const fonts = new Fonts(
    await doc.embedFont(StandardFonts.Helvetica),
    await doc.embedFont(StandardFonts.HelveticaBold),
  );

  const cover = doc.addPage(A4_LANDSCAPE);
  const planned = await planAttachments(doc, data.attachments);
  const flow = new Flow(doc, fonts);
  readinessSection(flow, data);
  isoSection(flow, data);
  weldLogSection(flow, data);
  repairsSection(flow, data);
  ndtSection(flow, data);
  if (data.heatTreatmentPresent) heatTreatmentSection(flow, data);
  punchSection(flow, data);
  attachmentsSection(flow, planned);

  const appendedFrom = doc.getPageCount() + 1;
  await appendAttachments(doc, fonts, planned);
  const sections = [...flow.sections];
  if (doc.getPageCount() >= appendedFrom) {
    sections.push({ title: 'Appended attachments', page: appendedFrom });
  }

  drawCover(cover, fonts, data, sections);
  const pages = doc.getPages();
  pages.forEach((page, index) =>
    drawFooter(
      page,
      fonts,
      `Turnover dossier ${packageNumber} \u00b7 page ${index + 1} of ${pages.length}`,
    ),
  );
  drawStamp(doc, cover, fonts.regular, stampText(generatedAt));
  // Object streams would pack the stamp's stream with others; a plain xref table keeps the
  // file's layout simple and its offsets equal between two generation times.
  return doc.save({ useObjectStreams: false, addDefaultPage: false });
}

// ---------------------------------------------------------------------------------------------
// The ZIP: the PDF, then the attachments under attachments/, names made safe and unique.

/** Longest entry name part, in UTF-8 bytes: under the 255 of common file systems. */
const MAX_NAME_BYTES = 200;

const utf8Length = (char: string) => {
  const code = char.codePointAt(0)!;
  return code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
};

/**
 * A name that stays one file in the archive's folder on any system: no path separators, no
 * "..", no leading dot or trailing dot or space, none of Windows' reserved characters, no
 * control or format characters (U+202E could disguise an extension), at most MAX_NAME_BYTES
 * with the extension kept.
 */
function safeFileName(name: string, fallback: string): string {
  const cleaned = name
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Cf}\p{Cs}/\\:*?"<>|]/gu, '_')
    .replace(/\.{2,}/g, '_')
    .replace(/^[\s.]+|[\s.]+$/gu, '');
  if (cleaned === '') return fallback;
  const extension = /\.[A-Za-z0-9]{1,10}$/.exec(cleaned)?.[0] ?? '';
  let stem = '';
  let bytes = extension.length;
  for (const char of cleaned.slice(0, cleaned.length - extension.length)) {
    if ((bytes += utf8Length(char)) > MAX_NAME_BYTES) break;
    stem += char;
  }
  return stem + extension;
}

/** `name` with `suffix` before its extension: "a.pdf", " [1f2e3d4c]" -> "a [1f2e3d4c].pdf". */
function withSuffix(name: string, suffix: string): string {
  const extension = /\.[A-Za-z0-9]{1,10}$/.exec(name)?.[0] ?? '';
  return name.slice(0, name.length - extension.length) + suffix + extension;
}

/**
 * The attachments' entry names, in the attachments' fixed order: "<attached to> - <file name>",
 * made safe. Names that clash (compared without case, as Windows and macOS do) get the first 8
 * digits of their hash; the same file attached twice under one name gets " (2)", " (3)".
 */
function attachmentEntries(
  attachments: DossierAttachment[],
): { name: string; bytes: Uint8Array }[] {
  const sorted = sortAttachments(attachments);
  const names = sorted.map((a) => safeFileName(`${a.attachedTo} - ${a.fileName}`, 'attachment'));
  const clashes = new Map<string, number>();
  for (const name of names)
    clashes.set(name.toLowerCase(), (clashes.get(name.toLowerCase()) ?? 0) + 1);
  const used = new Set<string>();
  return sorted.map((attachment, index) => {
    let name = names[index]!;
    if (clashes.get(name.toLowerCase())! > 1) {
      name = withSuffix(name, ` [${attachment.sha256.slice(0, 8).replace(/[^0-9a-fA-F]/g, '_')}]`);
    }
    let unique = name;
    for (let n = 2; used.has(unique.toLowerCase()); n++) unique = withSuffix(name, ` (${n})`);
    used.add(unique.toLowerCase());
    return { name: `attachments/${unique}`, bytes: attachment.bytes };
  });
}

/**
 * The "extended timestamp" extra field (0x5455): the modification time in Unix seconds, UTC,
 * which unzip tools prefer to the DOS time (local, in 2-second steps).
 */
function extendedTimestamp(at: Date): Uint8Array {
  const seconds = Math.min(Math.max(Math.floor(at.getTime() / 1000), 0), 0xffffffff);
  const field = new Uint8Array(5);
  field[0] = 1; // flags: modification time present
  new DataView(field.buffer).setUint32(1, seconds, true);
  return field;
}

/** The DOS date and time of an instant, read in UTC; clamped to the range DOS can hold. */
function dosDateTime(at: Date): { date: number; time: number } {
  const min = Date.UTC(1980, 0, 1);
  const max = Date.UTC(2107, 11, 31, 23, 59, 58);
  const t = new Date(Math.min(Math.max(at.getTime(), min), max));
  return {
    date: ((t.getUTCFullYear() - 1980) << 9) | ((t.getUTCMonth() + 1) << 5) | t.getUTCDate(),
    time: (t.getUTCHours() << 11) | (t.getUTCMinutes() << 5) | (t.getUTCSeconds() >> 1),
  };
}

/**
 * Sets every entry's DOS date and time, in its local header and its central directory record.
 * fflate reads the time in the machine's time zone, so the same instant would give other bytes
 * on a server in another zone; this writes the UTC wall clock instead, the same everywhere.
 */
function setDosTimes(zip: Uint8Array, at: Date): void {
  const { date, time } = dosDateTime(at);
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.length - 22; // the end of central directory record (no archive comment)
  const entries = view.getUint16(end + 10, true);
  let record = view.getUint32(end + 16, true);
  for (let i = 0; i < entries; i++) {
    view.setUint16(record + 12, time, true);
    view.setUint16(record + 14, date, true);
    const local = view.getUint32(record + 42, true);
    view.setUint16(local + 10, time, true);
    view.setUint16(local + 12, date, true);
    const variable =
      view.getUint16(record + 28, true) +
      view.getUint16(record + 30, true) +
      view.getUint16(record + 32, true);
    record += 46 + variable;
  }
}

/**
 * The dossier ZIP: the PDF first as `pdfName`, then each attachment as uploaded under
 * attachments/, sorted. Reproducible: every entry's time is `generatedAt` (to the second, UTC),
 * there are no other times, and deflate is deterministic.
 */
export function dossierZip(
  pdfName: string,
  pdf: Uint8Array,
  attachments: DossierAttachment[],
  generatedAt: Date,
): Uint8Array {
  // fflate requires an mtime in the DOS range in local time; a fixed one, overwritten below.
  const options: ZipOptions = {
    level: 6,
    mtime: new Date(2000, 0, 1),
    extra: { 0x5455: extendedTimestamp(generatedAt) },
  };
  // Entries go in the order their keys were added. (JavaScript would move integer keys first;
  // only the PDF's name can be one, as every attachment's name holds a "/", and it is first.)
  const entries: Zippable = { [safeFileName(pdfName, 'dossier.pdf')]: [pdf, options] };
  for (const { name, bytes } of attachmentEntries(attachments).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  )) {
    // PDFs and images are compressed already: stored as they are (time, not bytes, is saved).
    entries[name] = [
      bytes,
      sniffAttachment(bytes) === 'text/csv' ? options : { ...options, level: 0 },
    ];
  }
  const zip = zipSync(entries);
  setDosTimes(zip, generatedAt);
  return zip;
}
