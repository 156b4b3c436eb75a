// The turnover dossier (db/dossier.ts): the PDF read back with pdf.js (every section where the
// contents say, every weld, the attachments index and the appended pages), its reproducibility
// down to which bytes a new generation time may change, text the standard fonts cannot draw, an
// empty package, and the ZIP (names kept inside attachments/, contents as uploaded, the same bytes
// in any time zone).
import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import test from 'ava';
import { unzipSync } from 'fflate';
import { PDFDocument, PDFName, PDFString, StandardFonts, degrees } from 'pdf-lib';
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs';
import {
  dossierZip,
  renderDossierPdf,
  unpacksWithin,
  type DossierAttachment,
  type DossierData,
} from '../../db/dossier.ts';

const GENERATED_AT = new Date('2026-11-28T05:12:03Z');
const PAGE_WIDTH = 841.89; // A4 landscape
const MARGIN = 36;

// ---------------------------------------------------------------------------------------------
// Fixtures: attachments of every kind, and a package of 2 ISOs and 120 welds.

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

function attachment(
  fileName: string,
  contentType: DossierAttachment['contentType'],
  attachedTo: string,
  bytes: Uint8Array,
): DossierAttachment {
  return {
    fileName,
    contentType,
    attachedTo,
    bytes,
    sizeBytes: bytes.length,
    sha256: sha256(bytes),
  };
}

/** A valid RGB PNG of one colour, made by hand: signature, IHDR, one IDAT, IEND. */
function png(width: number, height: number): Uint8Array {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB, deflate, no filter, no interlace
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0x80)]);
  const pixels = Buffer.concat(Array.from({ length: height }, () => row));
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', header),
      chunk('IDAT', deflateSync(pixels)),
      chunk('IEND', Buffer.alloc(0)),
    ]),
  );
}

const KNOWN_PAGE_ONE = 'Radiograph report RT-0042';
const KNOWN_PAGE_TWO = 'FILM DENSITY 2.7 ACCEPTED';

/** A two-page report, its second page turned by /Rotate 90 (the footer must turn with it). */
async function reportPdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  doc.addPage([595.28, 841.89]).drawText(KNOWN_PAGE_ONE, { x: 72, y: 700, size: 14, font });
  const second = doc.addPage([595.28, 841.89]);
  second.drawText(KNOWN_PAGE_TWO, { x: 72, y: 700, size: 14, font });
  second.setRotation(degrees(90));
  return doc.save();
}

const REPORT = attachment('RT-0042.pdf', 'application/pdf', 'NDT record RT-7', await reportPdf());
const PHOTO = attachment('photo.png', 'image/png', 'weld FW-0003 on ISO 100-A', png(4, 3));
const CSV = attachment(
  'pressure-log.csv',
  'text/csv',
  'test package TP-1001',
  new TextEncoder().encode('time,psig\n10:00,1500\n'),
);
const BROKEN = attachment(
  'broken.pdf',
  'application/pdf',
  'ISO 100-A',
  new TextEncoder().encode('%PDF-1.7 garbage'),
);

const weldNumber = (n: number) => `FW-${String(n).padStart(4, '0')}`;

function sampleData(): DossierData {
  const welds = Array.from({ length: 120 }, (_, i) => {
    const n = i + 1;
    return {
      weldNumber: weldNumber(n),
      isoNumber: n <= 60 ? '100-A' : '100-B',
      size: '2"',
      type: 'BW',
      welder: `WS-${(n % 7) + 1}`,
      wps: 'WPS-1 rev 0',
      weldedOn: '2026-03-01',
      status: n % 10 === 0 ? 'PENDING' : 'ACCEPTED',
      acceptance: n % 10 === 0 ? null : `RT report RT-${n} of 2026-03-02`,
      repairCycles: n % 10 === 0 ? 1 : 0,
      repairs:
        n % 10 === 0 ? [`repair 1: welded 2026-03-05 by WS-${(n % 7) + 1}, WPS of the weld`] : [],
      examinations: ['VT 2026-03-01 accept', `RT 2026-03-02 accept (RT-${n})`],
      qualifications: [`WQ-${(n % 7) + 1} GTAW (2026-01-10 to 2026-07-10)`],
      pwht: n % 3 === 0 ? `PWHT-${n} 2026-03-03, 1150 °F, 60 min` : null,
      hardness: n % 3 === 0 ? 'HB 190 (max 225)' : null,
    };
  });
  return {
    tenantName: 'Acme Piping Ltd',
    package: {
      packageNumber: 'TP-1001',
      state: 'RELEASED',
      testMedium: 'water',
      testPressurePsig: 1500,
      releasedAt: '2026-11-20T14:00:00Z',
      releasedBy: 'Jane Inspector',
    },
    readiness: { ready: true, reasons: [] },
    isos: [
      {
        isoNumber: '100-A',
        revision: '2',
        lineNumber: '2"-P-100-A1',
        pipingClass: 'A1',
        fluidService: 'process water',
        welds: 60,
      },
      {
        isoNumber: '100-B',
        revision: '0',
        lineNumber: '2"-P-101-A1',
        pipingClass: null,
        fluidService: 'process water',
        welds: 60,
      },
    ],
    welds,
    ndtSummary: [
      { method: 'RT', required: 12, examined: 12, lots: 2, note: '10% random per welder' },
      { method: 'VT', required: 120, examined: 120, lots: 1, note: null },
    ],
    heatTreatmentPresent: true,
    punchItems: [
      {
        itemNumber: 1,
        category: 'A',
        description: 'Missing support at FW-0012',
        raisedBy: 'Jane Inspector',
        raisedOn: '2026-11-01',
        closedOn: '2026-11-05',
        closedBy: 'Joe Fitter',
      },
      {
        itemNumber: 2,
        category: 'B',
        description: 'Paint touch-up on spool 100-B-3',
        raisedBy: 'Jane Inspector',
        raisedOn: '2026-11-02',
        closedOn: null,
        closedBy: null,
      },
      {
        itemNumber: 3,
        category: 'B',
        description: 'Tag missing on valve V-17',
        raisedBy: null,
        raisedOn: '2026-11-03',
        closedOn: '2026-11-04',
        closedBy: null,
      },
    ],
    attachments: [REPORT, PHOTO, CSV, BROKEN],
  };
}

// ---------------------------------------------------------------------------------------------
// Reading a PDF back with pdf.js.

interface TextItem {
  str: string;
  x: number;
  y: number;
  width: number;
}

interface ReadPage {
  items: TextItem[];
  /** The page's text items joined: a cell's wrapped lines come out next to each other. */
  text: string;
  /** Lines: items of one baseline, left to right, joined by " | ". */
  lines: string[];
  /** The first (topmost) line: a section page's heading. */
  heading: string;
  /** The footer's position in the page as shown (rotation applied), y from the top. */
  footerShownAt: [number, number] | undefined;
  width: number;
  height: number;
  paintsImage: boolean;
}

async function readPdf(bytes: Uint8Array): Promise<ReadPage[]> {
  // pdf.js takes the buffer over: give it a copy.
  const doc = await getDocument({
    data: bytes.slice(),
    useSystemFonts: false,
    isEvalSupported: false,
    verbosity: 0,
  }).promise;
  const pages: ReadPage[] = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const page = await doc.getPage(n);
    const content = await page.getTextContent();
    // Text items only (not marked content), and not the blanks pdf.js puts between words.
    const items: TextItem[] = content.items.flatMap((item) =>
      'str' in item && item.str.trim() !== ''
        ? [{ str: item.str, x: item.transform[4], y: item.transform[5], width: item.width }]
        : [],
    );
    const byLine = new Map<number, TextItem[]>();
    for (const item of items) {
      const key = Math.round(item.y * 10);
      byLine.set(key, [...(byLine.get(key) ?? []), item]);
    }
    const lines = [...byLine]
      .sort(([a], [b]) => b - a)
      .map(([, line]) =>
        line
          .sort((a, b) => a.x - b.x)
          .map((item) => item.str)
          .join(' | '),
      );
    const viewport = page.getViewport({ scale: 1 });
    const footer = items.find((item) => / of \d+$/.test(item.str));
    const operators = await page.getOperatorList();
    pages.push({
      items,
      text: items.map((item) => item.str).join(''),
      lines,
      heading: lines[0] ?? '',
      footerShownAt: footer
        ? (viewport.convertToViewportPoint(footer.x, footer.y) as [number, number])
        : undefined,
      width: viewport.width,
      height: viewport.height,
      paintsImage: operators.fnArray.includes(OPS.paintImageXObject),
    });
  }
  await doc.destroy();
  return pages;
}

/** The cover's table of contents: section title to page number. */
function contents(cover: ReadPage): Map<string, number> {
  const toc = new Map<string, number>();
  for (const line of cover.lines) {
    const match = /^(.+) \| page (\d+)$/.exec(line);
    if (match) toc.set(match[1]!, Number(match[2]));
  }
  return toc;
}

/** Text without its white space: a wrapped cell's lines come back without the space between. */
const squash = (text: string) => text.replace(/\s+/g, '');

const countOf = (text: string, part: string) => text.split(part).length - 1;

// ---------------------------------------------------------------------------------------------
// The PDF.

const sample = sampleData();
const samplePdf = await renderDossierPdf(sample, GENERATED_AT);
const samplePages = await readPdf(samplePdf);

test('the cover: package, tenant, release, the generation stamp, and contents that lead to each section', (t) => {
  const cover = samplePages[0]!;
  for (const part of [
    'Turnover dossier',
    'TP-1001',
    'Acme Piping Ltd',
    'RELEASED',
    'water',
    '1500 psig',
    '2026-11-20T14:00:00Z',
    'Jane Inspector',
    'Generated 2026-11-28T05:12:03Z',
  ]) {
    t.true(cover.text.includes(part), part);
  }
  const toc = contents(cover);
  t.deepEqual(
    [...toc.keys()],
    [
      'Readiness at release',
      'ISOs',
      'Weld log',
      'Repairs',
      'NDT summary',
      'PWHT and hardness',
      'Punch list',
      'Attachments index',
      'Appended attachments',
    ],
  );
  for (const [title, page] of toc) {
    if (title === 'Appended attachments') continue;
    t.is(samplePages[page - 1]!.heading, title, `${title} starts on page ${page}`);
  }
  // The stamp is the one place the generation time is printed.
  samplePages.forEach((page, index) =>
    t.is(countOf(page.text, '2026-11-28T05:12:03'), index === 0 ? 1 : 0, `page ${index + 1}`),
  );
});

test('page count: own pages, then the 2 pages of the appended PDF and 1 image page', (t) => {
  const toc = contents(samplePages[0]!);
  const index = toc.get('Attachments index')!;
  t.is(samplePages.length, index + 3);
  t.is(toc.get('Appended attachments'), index + 1);
  samplePages.forEach((page, i) =>
    t.true(page.text.includes(`page ${i + 1} of ${samplePages.length}`), `footer of ${i + 1}`),
  );
});

test('the weld log spans pages with its header repeated, and lists every weld once', (t) => {
  const toc = contents(samplePages[0]!);
  const log = samplePages.slice(toc.get('Weld log')! - 1, toc.get('Repairs')! - 1);
  t.true(log.length >= 3, `${log.length} pages`);
  log.forEach((page, i) => {
    t.is(page.heading, i === 0 ? 'Weld log' : 'Weld log (continued)');
    t.true(page.text.includes('Qualifications in force'), `header on weld log page ${i + 1}`);
  });
  const text = log.map((page) => page.text).join('\n');
  for (let n = 1; n <= 120; n++) t.is(countOf(text, weldNumber(n)), 1, weldNumber(n));
  t.true(text.includes('RT 2026-03-02 accept (RT-77)'));
  t.true(text.includes('WQ-1 GTAW (2026-01-10 to 2026-07-10)'));
  // A row: the weld's cells on one line, left to right.
  t.true(
    log.some((page) =>
      page.lines.includes(
        'FW-0010 | 100-A | 2" BW | WS-4 | WPS-1 rev 0 | 2026-03-01 | PENDING | 1 | VT 2026-03-01 accept | WQ-4 GTAW (2026-01-10 to 2026-07-10)',
      ),
    ),
  );
  // An accepted weld's status says what it was accepted on.
  t.regex(text, /ACCEPTED on RT report\s*RT-77 of/, 'the basis under the status');
});

test('the repairs: each repaired weld with its repairs as welded', (t) => {
  const toc = contents(samplePages[0]!);
  const repairs = samplePages
    .slice(toc.get('Repairs')! - 1, toc.get('NDT summary')! - 1)
    .map((page) => page.text)
    .join('\n');
  t.true(repairs.includes('12 welds repaired.'));
  t.true(repairs.includes('repair 1: welded 2026-03-05 by WS-4, WPS of the weld'));
  t.is(countOf(repairs, 'repair 1: welded'), 12);
});

test('NDT summary, PWHT and hardness, and the punch list', (t) => {
  const toc = contents(samplePages[0]!);
  const ndt = samplePages[toc.get('NDT summary')! - 1]!;
  t.true(ndt.lines.includes('RT | 12 | 12 | 2 | 10% random per welder'));
  t.true(ndt.lines.includes('VT | 120 | 120 | 1'));
  const heat = samplePages
    .slice(toc.get('PWHT and hardness')! - 1, toc.get('Punch list')! - 1)
    .map((page) => page.text)
    .join('');
  t.true(heat.includes('PWHT-3 2026-03-03, 1150 °F, 60 min'));
  t.true(heat.includes('HB 190 (max 225)'));
  t.false(heat.includes('FW-0004'), 'a weld without PWHT or hardness is not listed');
  const punch = samplePages[toc.get('Punch list')! - 1]!;
  t.true(punch.text.includes('3 punch items: 1 category A (0 open), 2 category B (1 open).'));
  t.true(
    punch.lines.includes(
      '1 | A | closed | Missing support at FW-0012 | 2026-11-01 by Jane Inspector | 2026-11-05 by Joe Fitter',
    ),
  );
  t.true(
    punch.lines.includes(
      '2 | B | open | Paint touch-up on spool 100-B-3 | 2026-11-02 by Jane Inspector | —',
    ),
  );
  t.true(
    punch.lines.includes('3 | B | closed | Tag missing on valve V-17 | 2026-11-03 | 2026-11-04'),
  );
});

test('the attachments index: every file with its hash, and where it is', (t) => {
  const toc = contents(samplePages[0]!);
  const index = toc.get('Attachments index')!;
  const page = samplePages[index - 1]!;
  const row = (a: DossierAttachment) => page.lines.find((line) => line.includes(a.fileName)) ?? '';
  // In the fixed order: attached to, then file name.
  t.deepEqual(
    page.lines.filter((line) => /^\d \| /.test(line)).map((line) => line.split(' | ')[1]),
    ['broken.pdf', 'RT-0042.pdf', 'pressure-log.csv', 'photo.png'],
  );
  for (const a of [REPORT, PHOTO, CSV, BROKEN]) {
    t.true(row(a).includes(a.sha256), `${a.fileName}'s SHA-256`);
    t.true(row(a).includes(a.attachedTo), `${a.fileName}'s owner`);
    t.true(row(a).includes(`${a.bytes.length.toLocaleString('en-US')} bytes`), a.fileName);
  }
  t.true(row(REPORT).endsWith(`appended from page ${index + 1}`));
  t.true(row(PHOTO).endsWith(`appended from page ${index + 3}`));
  t.true(row(CSV).endsWith('in the ZIP only (CSV)'));
  // This reason wraps to a second line of the cell.
  t.true(row(BROKEN).includes('in the ZIP only ('));
  t.true(squash(page.text).includes(squash('in the ZIP only (the PDF cannot be read)')));
});

test("the appended PDF's pages after the index, then the image on a page of its own", (t) => {
  const index = contents(samplePages[0]!).get('Attachments index')!;
  const found = (text: string) =>
    samplePages.flatMap((page, i) => (page.text.includes(text) ? [i + 1] : []));
  t.deepEqual(found(KNOWN_PAGE_ONE), [index + 1]);
  t.deepEqual(found(KNOWN_PAGE_TWO), [index + 2]);
  const image = samplePages[index + 2]!;
  t.true(image.text.includes('photo.png — weld FW-0003 on ISO 100-A'));
  t.true(image.paintsImage);
  t.deepEqual(
    samplePages.flatMap((page, i) => (page.paintsImage ? [i + 1] : [])),
    [index + 3],
  );
});

test('every footer reads at the bottom right of the page as shown, the turned page too', (t) => {
  const index = contents(samplePages[0]!).get('Attachments index')!;
  const turned = samplePages[index + 1]!;
  t.true(turned.width > turned.height, 'the portrait page turned by /Rotate 90 shows as landscape');
  samplePages.forEach((page, i) => {
    const [x, y] = page.footerShownAt!;
    t.true(y > page.height - 30 && y < page.height, `page ${i + 1}: footer ${y} from the top`);
    t.true(x > page.width / 2 && x < page.width - MARGIN, `page ${i + 1}: footer at ${x}`);
  });
});

/** Every text item of the dossier's own pages (not the appended ones) inside the margins. */
function assertInsideMargins(
  t: { true(value: boolean, message?: string): void },
  pages: ReadPage[],
) {
  pages.forEach((page, i) => {
    for (const item of page.items) {
      const where = `page ${i + 1}: "${item.str.slice(0, 30)}" at ${item.x},${item.y} w ${item.width}`;
      t.true(item.x >= MARGIN - 0.01 && item.x + item.width <= PAGE_WIDTH - MARGIN + 0.5, where);
      t.true(item.y >= 15 && item.y <= 595.28 - MARGIN, where);
    }
  });
}

test('no text outside the margins on the dossier pages', (t) => {
  const index = contents(samplePages[0]!).get('Attachments index')!;
  assertInsideMargins(t, samplePages.slice(0, index));
});

// ---------------------------------------------------------------------------------------------
// Reproducibility.

/** Where `part` occurs in `bytes` (as Latin-1), every time. */
function offsetsOf(bytes: Uint8Array, part: string): number[] {
  const text = Buffer.from(bytes).toString('latin1');
  const found: number[] = [];
  for (let at = text.indexOf(part); at !== -1; at = text.indexOf(part, at + 1)) found.push(at);
  return found;
}

const stampHex = (date: Date) =>
  Buffer.from(date.toISOString().replace(/\.\d+Z$/, 'Z'), 'latin1')
    .toString('hex')
    .toUpperCase();
const pdfDate = (date: Date) => `D:${date.toISOString().replace(/[-:T]|\.\d+/g, '')}`;

test('the same data and generation time give the same bytes', async (t) => {
  const again = await renderDossierPdf(sampleData(), GENERATED_AT);
  t.true(Buffer.from(again).equals(Buffer.from(samplePdf)));
  // Milliseconds are not printed anywhere: the same second gives the same bytes.
  const later = await renderDossierPdf(sampleData(), new Date(GENERATED_AT.getTime() + 999));
  t.true(Buffer.from(later).equals(Buffer.from(samplePdf)));
});

test('another generation time changes only the stamp and the two Info dates, in place', async (t) => {
  const other = new Date('2031-02-03T04:05:06Z');
  const pdf = await renderDossierPdf(sampleData(), other);
  t.is(pdf.length, samplePdf.length);

  // In the first: the stamp once (as hex, in its own uncompressed stream) and the date twice.
  const stamps = offsetsOf(samplePdf, stampHex(GENERATED_AT));
  const dates = offsetsOf(samplePdf, pdfDate(GENERATED_AT));
  t.is(stamps.length, 1);
  t.deepEqual(
    dates.map((at) => Buffer.from(samplePdf.subarray(at - 15, at)).toString('latin1')),
    ['/CreationDate (', '03Z)\n/ModDate ('],
  );
  const spans = [
    { from: stamps[0]!, length: 40 },
    ...dates.map((from) => ({ from, length: pdfDate(GENERATED_AT).length })),
  ];
  // The second has its own values at exactly those offsets...
  t.deepEqual(offsetsOf(pdf, stampHex(other)), [spans[0]!.from]);
  t.deepEqual(offsetsOf(pdf, pdfDate(other)), dates);
  // ...and every byte that differs is inside one of them, each of them differing.
  const differing: number[] = [];
  for (let i = 0; i < pdf.length; i++) if (pdf[i] !== samplePdf[i]) differing.push(i);
  t.true(differing.length > 0);
  t.deepEqual(
    differing.filter((i) => !spans.some((span) => i >= span.from && i < span.from + span.length)),
    [],
  );
  for (const span of spans) {
    t.true(differing.some((i) => i >= span.from && i < span.from + span.length));
  }
  // The stamp's stream is stored plain (no /Filter), so its bytes are the text itself.
  const stream = Buffer.from(samplePdf.subarray(spans[0]!.from - 200, spans[0]!.from)).toString(
    'latin1',
  );
  const dict = stream.slice(stream.lastIndexOf('obj'), stream.lastIndexOf('stream'));
  t.regex(dict, /\/Length \d+/);
  t.false(dict.includes('/Filter'));
});

// ---------------------------------------------------------------------------------------------
// Text the fonts cannot draw.

/** Outside WinAnsi, control characters, a bidi override, a lone surrogate; then "é" decomposed. */
const WEIRD = 'Ω🔥溶接\u0000\u0007\u001b\u007f\u0085\u202e\ud800e\u0301°€—';
const REPLACED = '???????????é°€—';

function weirdData(): DossierData {
  const w = (label: string) => `${label}:${WEIRD}`;
  const data = sampleData();
  return {
    tenantName: w('tenant'),
    package: {
      packageNumber: w('package'),
      state: w('state'),
      testMedium: w('medium'),
      testPressurePsig: null,
      releasedAt: w('releasedat'),
      releasedBy: w('releasedby'),
    },
    readiness: { ready: false, reasons: [{ code: w('code'), detail: w('detail') }] },
    isos: [
      {
        isoNumber: w('isono'),
        revision: w('rev'),
        lineNumber: w('line'),
        pipingClass: w('class'),
        fluidService: w('fluid'),
        welds: 1,
      },
    ],
    welds: [
      {
        ...data.welds[0]!,
        weldNumber: w('weld'),
        isoNumber: w('weldiso'),
        size: w('size'),
        type: w('type'),
        welder: w('welder'),
        wps: w('wps'),
        weldedOn: w('weldedon'),
        status: w('status'),
        examinations: [w('exam')],
        qualifications: [w('qual')],
        pwht: w('pwht'),
        hardness: w('hard'),
      },
    ],
    ndtSummary: [{ method: w('method'), required: 1, examined: 0, lots: 0, note: w('note') }],
    heatTreatmentPresent: true,
    punchItems: [
      {
        itemNumber: 1,
        category: 'A',
        // A tab and a line break; a token longer than the column; then enough words to make the
        // row taller than a page, so it must be split across pages.
        description: `${w('punch')} tab\there\nnext line ${'x'.repeat(400)} ${'word '.repeat(3000)}end-of-description`,
        raisedBy: w('raisedby'),
        raisedOn: w('raisedon'),
        closedOn: w('closedon'),
        closedBy: w('closedby'),
      },
    ],
    attachments: [
      attachment(w('file') + '.csv', 'text/csv', w('fileowner'), new Uint8Array([1, 2, 3])),
      attachment(w('image') + '.png', 'image/png', w('imageowner'), png(2, 2)),
    ],
  };
}

test('text the fonts cannot draw comes out as "?", in every field, and nothing is drawn off the page', async (t) => {
  const pages = await readPdf(await renderDossierPdf(weirdData(), GENERATED_AT));
  const all = pages.map((page) => page.text).join('');
  for (const label of [
    'tenant',
    'package',
    'state',
    'medium',
    'releasedat',
    'releasedby',
    'code',
    'detail',
    'isono',
    'rev',
    'line',
    'class',
    'fluid',
    'weld',
    'weldiso',
    'size',
    'type',
    'welder',
    'wps',
    'weldedon',
    'status',
    'exam',
    'qual',
    'pwht',
    'hard',
    'method',
    'note',
    'punch',
    'raisedby',
    'raisedon',
    'closedon',
    'closedby',
    'file',
    'fileowner',
    'image',
    'imageowner',
  ]) {
    t.true(all.includes(`${label}:${REPLACED}`), label);
  }
  t.deepEqual(
    [...all].filter((c) => /[\p{Cc}\p{Cf}\p{Cs}]/u.test(c) || 'Ω🔥溶接'.includes(c)),
    [],
  );
  t.true(pages.some((page) => page.lines.some((line) => line.includes('tab here'))));
  t.true(pages.some((page) => page.lines.some((line) => line.includes('next line'))));
  t.true(all.includes('x'.repeat(400)), 'the long token is all there, cut into lines');
  t.true(all.includes('end-of-description'));
  t.true(pages.some((page) => page.heading === 'Punch list (continued)'));
  const readiness = pages[contents(pages[0]!).get('Readiness at release')! - 1]!;
  t.true(readiness.text.includes('Ready for release: no.'));
  const index = contents(pages[0]!).get('Attachments index')!;
  t.is(pages.length, index + 1, 'the image appended, the CSV not');
  assertInsideMargins(t, pages.slice(0, index));
});

test('an empty package renders: no welds, punch items, NDT or attachments', async (t) => {
  const data: DossierData = {
    ...sampleData(),
    isos: [],
    welds: [],
    ndtSummary: [],
    heatTreatmentPresent: false,
    punchItems: [],
    attachments: [],
  };
  const pages = await readPdf(await renderDossierPdf(data, GENERATED_AT));
  t.is(pages.length, 7); // the cover and six sections
  t.deepEqual(
    [...contents(pages[0]!)],
    [
      ['Readiness at release', 2],
      ['ISOs', 3],
      ['Weld log', 4],
      ['NDT summary', 5],
      ['Punch list', 6],
      ['Attachments index', 7],
    ],
  );
  const all = pages.map((page) => page.text).join('\n');
  for (const part of [
    'No ISOs.',
    'No welds.',
    'No NDT required',
    'No punch items.',
    'No attachments.',
  ]) {
    t.true(all.includes(part), part);
  }
  t.false(all.includes('PWHT'));
  t.true(pages[6]!.text.includes('page 7 of 7'));
});

/** A one-page PDF whose page runs JavaScript when opened and links to a page elsewhere. */
async function activePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([595, 842]);
  page.drawText('A report with active content', {
    x: 72,
    y: 760,
    size: 14,
    font: await doc.embedFont(StandardFonts.Helvetica),
  });
  const { context } = doc;
  page.node.set(
    PDFName.of('AA'),
    context.obj({ O: { S: 'JavaScript', JS: PDFString.of('app.alert("from the dossier")') } }),
  );
  const link = context.register(
    context.obj({
      Type: 'Annot',
      Subtype: 'Link',
      Rect: [72, 700, 300, 720],
      A: { S: 'URI', URI: PDFString.of('https://evil.example/login') },
    }),
  );
  page.node.set(PDFName.of('Annots'), context.obj([link]));
  return doc.save({ useObjectStreams: false });
}

test("an appended PDF's actions and annotations stay behind; an image too large to append is in the ZIP only", async (t) => {
  const active = await activePdf();
  const text = new TextDecoder('latin1').decode(active);
  t.true(text.includes('/JavaScript') && text.includes('evil.example'), 'the source has them');
  const big = new Uint8Array(
    Buffer.concat([Buffer.from(png(1, 1)).subarray(0, 16), Buffer.alloc(40)]),
  );
  // (IHDR claiming 5,000 x 4,000: 20 megapixels.)
  new DataView(big.buffer).setUint32(16, 5000);
  new DataView(big.buffer).setUint32(20, 4000);
  const data: DossierData = {
    ...sampleData(),
    attachments: [
      attachment('active.pdf', 'application/pdf', 'NDT record RT-9', active),
      attachment('huge.png', 'image/png', 'ISO 100-A', big),
    ],
  };
  const bytes = await renderDossierPdf(data, GENERATED_AT);
  const out = new TextDecoder('latin1').decode(bytes);
  t.false(out.includes('/JavaScript'), 'no script');
  t.false(out.includes('evil.example'), 'no link');
  const pages = await readPdf(bytes);
  const all = pages.map((page) => page.text).join('\n');
  t.true(all.includes('A report with active content'), 'the page itself is there');
  // (A cell's wrapped lines come out joined: compared without white space.)
  t.true(squash(all).includes(squash('in the ZIP only (the image is too large to append)')));
});

test('a PDF is appended only when its streams unpack to no more than the budget, inflated with that limit', (t) => {
  const stream = (data: Buffer) =>
    Buffer.concat([
      Buffer.from('1 0 obj << /Filter /FlateDecode >>\nstream\n'),
      data,
      Buffer.from('\nendstream\nendobj\n'),
    ]);
  // 1 MB of zeros deflates to about a kilobyte.
  const bomb = Buffer.concat([
    Buffer.from('%PDF-1.7\n'),
    stream(deflateSync(Buffer.alloc(1_000_000))),
  ]);
  t.true(bomb.length < 5_000);
  t.false(unpacksWithin(bomb, 500_000), 'over the budget: refused before it is unpacked whole');
  t.true(unpacksWithin(bomb, 2_000_000));
  // Two streams count together; a stream that is not deflate counts its own size.
  const two = Buffer.concat([
    bomb,
    stream(deflateSync(Buffer.alloc(600_000))),
    stream(Buffer.from('not deflate')),
  ]);
  t.false(unpacksWithin(two, 1_500_000));
  t.true(unpacksWithin(two, 1_700_000));
});

// ---------------------------------------------------------------------------------------------
// The ZIP.

const bytesOf = (text: string) => new TextEncoder().encode(text);
const ZIP_ATTACHMENTS: DossierAttachment[] = [
  REPORT,
  PHOTO,
  CSV,
  BROKEN,
  attachment('../../etc/passwd', 'text/csv', 'ISO 100-A', bytesOf('root:x:0:0')),
  attachment('a\\b', 'text/csv', 'ISO 100-A', bytesOf('backslash')),
  attachment('/abs', 'text/csv', 'ISO 100-A', bytesOf('absolute')),
  attachment('x.csv', 'text/csv', '/../root', bytesOf('owner with a path')),
  // Two files of one name on one owner, and the second of them attached twice.
  attachment('RT-0042.pdf', 'application/pdf', 'NDT record RT-7', bytesOf('%PDF-1.4 another')),
  attachment('film.csv', 'text/csv', 'weld FW-0003 on ISO 100-A', bytesOf('same')),
  attachment('film.csv', 'text/csv', 'weld FW-0003 on ISO 100-A', bytesOf('same')),
  // One name differing only in case: one file on Windows and macOS.
  attachment('Photo.png', 'image/png', 'weld FW-0003 on ISO 100-A', png(1, 1)),
];

test('the ZIP: the PDF first, then every attachment as uploaded, under safe unique names', (t) => {
  const zip = dossierZip('TP-1001 dossier.pdf', samplePdf, ZIP_ATTACHMENTS, GENERATED_AT);
  const entries = unzipSync(zip);
  const sha = (a: DossierAttachment) => a.sha256.slice(0, 8);
  const other = ZIP_ATTACHMENTS[8]!;
  const film = ZIP_ATTACHMENTS[9]!;
  const capital = ZIP_ATTACHMENTS[11]!;
  // By name, code unit order; "[hash]" where names clash, " (2)" for the same file twice.
  const [rtFirst, rtSecond] = [sha(REPORT), sha(other)].sort();
  t.deepEqual(Object.keys(entries), [
    'TP-1001 dossier.pdf',
    'attachments/ISO 100-A - ____etc_passwd',
    'attachments/ISO 100-A - _abs',
    'attachments/ISO 100-A - a_b',
    'attachments/ISO 100-A - broken.pdf',
    `attachments/NDT record RT-7 - RT-0042 [${rtFirst}].pdf`,
    `attachments/NDT record RT-7 - RT-0042 [${rtSecond}].pdf`,
    'attachments/___root - x.csv',
    'attachments/test package TP-1001 - pressure-log.csv',
    `attachments/weld FW-0003 on ISO 100-A - Photo [${sha(capital)}].png`,
    `attachments/weld FW-0003 on ISO 100-A - film [${sha(film)}] (2).csv`,
    `attachments/weld FW-0003 on ISO 100-A - film [${sha(film)}].csv`,
    `attachments/weld FW-0003 on ISO 100-A - photo [${sha(PHOTO)}].png`,
  ]);
  for (const name of Object.keys(entries)) {
    t.false(name.includes('..') || name.includes('\\') || name.startsWith('/'), name);
    t.regex(name, /^(TP-1001 dossier\.pdf|attachments\/[^/]+)$/);
  }
  t.deepEqual(entries['TP-1001 dossier.pdf'], samplePdf);
  t.deepEqual(entries['attachments/ISO 100-A - ____etc_passwd'], bytesOf('root:x:0:0'));
  t.deepEqual(entries[`attachments/NDT record RT-7 - RT-0042 [${sha(REPORT)}].pdf`], REPORT.bytes);
  t.deepEqual(entries['attachments/test package TP-1001 - pressure-log.csv'], CSV.bytes);
  t.deepEqual(
    entries[`attachments/weld FW-0003 on ISO 100-A - photo [${sha(PHOTO)}].png`],
    PHOTO.bytes,
  );
  t.deepEqual(entries['attachments/ISO 100-A - broken.pdf'], BROKEN.bytes);
});

/** Each entry's DOS time and extended timestamp, read from the central directory. */
function entryTimes(zip: Uint8Array): { dos: string; field: number; unix: number }[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.length - 22;
  let record = view.getUint32(end + 16, true);
  const times = [];
  for (let i = 0; i < view.getUint16(end + 10, true); i++) {
    const time = view.getUint16(record + 12, true);
    const date = view.getUint16(record + 14, true);
    const nameLength = view.getUint16(record + 28, true);
    const extraLength = view.getUint16(record + 30, true);
    const extra = record + 46 + nameLength;
    const pad = (n: number) => String(n).padStart(2, '0');
    times.push({
      dos:
        `${(date >> 9) + 1980}-${pad((date >> 5) & 15)}-${pad(date & 31)}T` +
        `${pad(time >> 11)}:${pad((time >> 5) & 63)}:${pad((time & 31) * 2)}`,
      field: view.getUint16(extra, true),
      unix: view.getUint32(extra + 5, true),
    });
    record += 46 + nameLength + extraLength + view.getUint16(record + 32, true);
  }
  return times;
}

test('the ZIP is reproducible: the same bytes again, and in another time zone; times are generatedAt', (t) => {
  const zip = () => dossierZip('dossier.pdf', samplePdf, ZIP_ATTACHMENTS, GENERATED_AT);
  const first = zip();
  t.true(Buffer.from(zip()).equals(Buffer.from(first)));

  const zone = process.env.TZ;
  try {
    process.env.TZ = 'Pacific/Auckland';
    t.not(new Date(2026, 0, 1).getTimezoneOffset(), 0, 'the zone took effect');
    t.true(Buffer.from(zip()).equals(Buffer.from(first)));
  } finally {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  }

  const times = entryTimes(first);
  t.is(times.length, ZIP_ATTACHMENTS.length + 1);
  for (const time of times) {
    // DOS time counts in 2-second steps; the extended timestamp (0x5455) holds the second.
    t.deepEqual(time, {
      dos: '2026-11-28T05:12:02',
      field: 0x5455,
      unix: GENERATED_AT.getTime() / 1000,
    });
  }
  // Another generation time changes the times only: the same length, other bytes.
  const later = dossierZip(
    'dossier.pdf',
    samplePdf,
    ZIP_ATTACHMENTS,
    new Date('2027-01-01T00:00:00Z'),
  );
  t.is(later.length, first.length);
  t.false(Buffer.from(later).equals(Buffer.from(first)));
  t.deepEqual(entryTimes(later)[0], {
    dos: '2027-01-01T00:00:00',
    field: 0x5455,
    unix: 1798761600,
  });
});
