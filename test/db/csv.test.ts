// The CSV parser of the register import (db/csv.ts): RFC 4180 fields and quotes, the line each
// record starts on (as an editor counts them, CRLF inside a quoted field counting once), the same
// records whatever the pieces the text arrives in, and refusals that name their line.
import test from 'ava';
import {
  copyText,
  CsvParser,
  CsvSyntaxError,
  detectDelimiter,
  firstNonUtf8,
  lineBreaks,
  nonUtf8Line,
  unfinishedTail,
} from '../../db/csv.ts';

function parse(text: string, delimiter: ',' | ';' = ',', pieces: number[] = []) {
  const parser = new CsvParser(delimiter);
  const records = [];
  let at = 0;
  for (const size of pieces) {
    records.push(...parser.push(text.slice(at, at + size)));
    at += size;
  }
  records.push(...parser.push(text.slice(at)), ...parser.end());
  return records;
}

const SAMPLE =
  'a;b;c\r\n' +
  '1;"x;\r\ny";3\r\n' + // a quoted delimiter and CRLF: lines 2 and 3
  '\r\n' + // an empty line is no record
  '"say ""hi""";;\r\n' + // doubled quotes; empty fields
  '4;5;6\n' + // LF
  '7;8;9\r' + // a lone CR
  'last;"";x'; // no final line break

const EXPECTED = [
  { line: 1, fields: ['a', 'b', 'c'] },
  { line: 2, fields: ['1', 'x;\r\ny', '3'] },
  { line: 5, fields: ['say "hi"', '', ''] },
  { line: 6, fields: ['4', '5', '6'] },
  { line: 7, fields: ['7', '8', '9'] },
  { line: 8, fields: ['last', '', 'x'] },
];

test('fields, quotes and line breaks of every kind, with the line each record starts on', (t) => {
  t.deepEqual(parse(SAMPLE, ';'), EXPECTED);
});

test('the same records whatever pieces the text arrives in (every split point, 1-char pieces)', (t) => {
  for (let split = 1; split < SAMPLE.length; split++) {
    t.deepEqual(parse(SAMPLE, ';', [split]), EXPECTED, `split at ${split}`);
  }
  t.deepEqual(
    parse(
      SAMPLE,
      ';',
      Array.from({ length: SAMPLE.length }, () => 1),
    ),
    EXPECTED,
  );
});

test('a quote left open or text after a closing quote is refused at its line', (t) => {
  const open = t.throws(() => parse('a,b\n1,2\n3,"four\n5,6\n'), { instanceOf: CsvSyntaxError });
  t.is(open.line, 3);
  t.regex(open.message, /not closed/);
  const after = t.throws(() => parse('a,b\n\n"x"y,1\n'), { instanceOf: CsvSyntaxError });
  t.is(after.line, 3);
  // A field beyond the limit (a quote opened by mistake swallows the file) is refused early.
  const long = t.throws(() => new CsvParser(',', 10).push('a\n"' + 'x'.repeat(50)), {
    instanceOf: CsvSyntaxError,
  });
  t.is(long.line, 2);
  // So is a record of more fields than any register has (memory and time would follow them).
  const wide = t.throws(() => parse('a,b\n' + ','.repeat(100) + '\n'), {
    instanceOf: CsvSyntaxError,
  });
  t.is(wide.line, 2);
  t.regex(wide.message, /more than 100 fields/);
  t.is(parse('a\n' + ','.repeat(99) + '\n')[1]!.fields.length, 100);
});

test('the delimiter is the one the header holds more of; COPY text escapes what it must', (t) => {
  t.is(detectDelimiter('isoNumber;weldNumber;type'), ';');
  t.is(detectDelimiter('isoNumber,weldNumber,type'), ',');
  t.is(detectDelimiter('isoNumber'), ',');
  t.is(copyText('plain'), 'plain');
  t.is(copyText('a\\b\tc\r\nd'), 'a\\\\b\\tc\\r\\nd');
});

test('where bytes stop being UTF-8 (RFC 3629), and the line breaks before them', (t) => {
  const bytes = (...parts: Array<string | number[]>) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
  t.is(firstNonUtf8(bytes('plain ascii, é, €, 𝄞')), -1);
  t.is(firstNonUtf8(bytes('ab', [0xe9], 'c')), 2, 'a Latin-1 é');
  t.is(firstNonUtf8(bytes('a', [0xc0, 0xaf])), 1, 'an overlong /');
  t.is(firstNonUtf8(bytes('a', [0xe0, 0x80, 0xaf])), 1, 'an overlong in three bytes');
  t.is(firstNonUtf8(bytes([0xed, 0xa0, 0x80])), 0, 'a surrogate');
  t.is(firstNonUtf8(bytes([0xf4, 0x90, 0x80, 0x80])), 0, 'past U+10FFFF');
  t.is(firstNonUtf8(bytes('€', [0xe2, 0x28, 0xa1])), 3, 'a broken continuation');
  t.is(
    firstNonUtf8(bytes('ok', [0xe2, 0x82])),
    -1,
    'cut short at the end: the next piece may end it',
  );
  t.is(lineBreaks(bytes('a\r\nb\nc\rd')), 3, 'CRLF, LF and a lone CR each end one line');
  t.is(lineBreaks(bytes('a\nb\nc'), 3), 1, 'up to an offset');
});

test('the line of a byte that is not UTF-8, across pieces: a character cut between two is no error and no line', (t) => {
  const euro = Buffer.from('€'); // e2 82 ac
  const previous = Buffer.from('header\nA1,€\n'); // two line breaks, ends complete
  const chunk = Buffer.concat([Buffer.from('x\ny\nz\n'), Buffer.from([0xe9])]);
  t.is(nonUtf8Line(previous, chunk, lineBreaks(previous)), 6);
  t.is(unfinishedTail(previous).length, 0, 'a finished piece carries nothing over');
  // A euro sign cut after its first two bytes: they go with the next piece.
  const cut = Buffer.concat([Buffer.from('h\n'), euro.subarray(0, 2)]);
  t.deepEqual([...unfinishedTail(cut)], [0xe2, 0x82]);
  const rest = Buffer.concat([euro.subarray(2), Buffer.from('\n'), Buffer.from([0xff])]);
  t.is(nonUtf8Line(cut, rest, lineBreaks(cut)), 3);
  t.is(unfinishedTail(Buffer.from('ab')).length, 0);
  // A CRLF cut between two pieces is one line break.
  const cr = Buffer.from('h\r\na\r');
  t.is(nonUtf8Line(cr, Buffer.from([0x0a, 0x62, 0xff]), lineBreaks(cr)), 3);
});
