// The turnover dossier over real HTTP (issue F20): a released package's PDF, read back with
// pdf.js (its pages, the weld numbers, the punch list, the files' hashes, an attached report's own
// text appended), its ZIP of the PDF and the original files, the same bytes for the same package
// but the generation stamp, and who may have it. The layout itself: test/db/dossier-pdf.test.ts.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { unzipSync } from 'fflate';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { Client } from '../helpers/http.ts';
import { ok, readyPackage, world } from '../helpers/rules-http.ts';
import { DOSSIERS_PER_TENANT } from '../../rest-adapter/dossier.ts';
import { inFlightOf } from '../../rest-adapter/http/in-flight.ts';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function upload(
  client: Client,
  owner: Record<string, string>,
  name: string,
  bytes: Uint8Array,
) {
  const body = new FormData();
  for (const [field, value] of Object.entries(owner)) body.append(field, value);
  body.append('file', new Blob([bytes]), name);
  const encoded = new Response(body);
  const res = await client.post('/attachments', Buffer.from(await encoded.arrayBuffer()), {
    'content-type': encoded.headers.get('content-type')!,
  });
  return ok(res, 201);
}

/** A one-page RT report, as a lab would send it. */
async function report(text: string): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([595, 842]);
  page.drawText(text, {
    x: 72,
    y: 760,
    size: 14,
    font: await doc.embedFont(StandardFonts.Helvetica),
  });
  return doc.save();
}

/** Each page's text, as pdf.js reads it. */
async function pagesOf(bytes: Uint8Array): Promise<string[]> {
  const doc = await getDocument({
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    standardFontDataUrl: `${path.dirname(fileURLToPath(import.meta.resolve('pdfjs-dist/package.json')))}/standard_fonts/`,
  }).promise;
  const pages = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const content = await (await doc.getPage(n)).getTextContent();
    pages.push(content.items.map((item) => ('str' in item ? item.str : '')).join(' '));
  }
  await doc.destroy();
  return pages;
}

/** The offsets where two byte strings of one length differ. */
function differences(a: Buffer, b: Buffer): number[] {
  const at = [];
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) at.push(i);
  return at;
}

test('a released package: its dossier PDF (weld log, punch list, files indexed, a report appended), its ZIP, the same bytes but the stamp', async (t) => {
  const w = await world(t);
  const { pkg, iso, welds, rt } = await readyPackage(w, 'D1');
  const rtReport = await report(
    'Radiographic examination report D1-RT: film density 2.7, accepted',
  );
  const csv = Buffer.from('weldNumber;result\nD1-1;accepted\nD1-2;accepted\n');
  // The smallest PNG a decoder takes: 1x1, one grey pixel.
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgABc3UBGAAAAABJRU5ErkJggg==',
    'base64',
  );
  const files = [
    await upload(w.a.inspector, { ndtRecordId: rt.id }, 'D1-RT report.pdf', rtReport),
    await upload(w.a.inspector, { weldId: welds[0]!.id }, 'cap.png', png),
    await upload(w.a.engineer, { isoId: iso.id }, 'register.csv', csv),
  ];
  ok(
    await w.a.inspector.post('/punch-items', {
      testPackageId: pkg.id,
      category: 'B',
      description: 'Touch up paint at support S-4',
    }),
    201,
  );

  // Not while open; not for an inspector; not in another tenant.
  const open = await w.a.engineer.get(`/test-packages/${pkg.id}/dossier`);
  t.is(open.status, 409);
  t.is(open.json.type, '/problems/state-conflict');
  ok(await w.a.engineer.patch(`/test-packages/${pkg.id}`, { state: 'released' }));
  t.is((await w.a.inspector.get(`/test-packages/${pkg.id}/dossier`)).status, 403);
  t.is((await w.b.admin.get(`/test-packages/${pkg.id}/dossier`)).status, 404);
  t.is((await w.a.engineer.get(`/test-packages/${pkg.id}/dossier?format=docx`)).status, 422);

  const first = await w.a.engineer.get(`/test-packages/${pkg.id}/dossier`);
  t.is(first.status, 200, first.text);
  t.is(first.headers['content-type'], 'application/pdf');
  t.is(
    first.headers['content-disposition'],
    'attachment; filename="dossier-D1-TP.pdf"; filename*=UTF-8\'\'dossier-D1-TP.pdf',
  );
  t.is(first.headers['x-content-type-options'], 'nosniff');
  const pages = await pagesOf(first.bytes!);
  const text = pages.join('\n');
  // Cover, readiness, ISOs, weld log, NDT, punch list, index (at least a page each), and the
  // report's page and the image's page appended.
  t.true(pages.length >= 9, `${pages.length} pages`);
  t.regex(pages[0]!, /Turnover dossier/);
  t.regex(pages[0]!, /D1-TP/);
  for (const weld of welds)
    t.true(text.includes(weld.weldNumber as string), weld.weldNumber as string);
  t.true(text.includes('D1-ISO'));
  t.true(text.includes('Touch up paint at support S-4'));
  for (const file of files) t.true(text.replace(/\s+/g, '').includes(file.sha256), file.fileName);
  const appended = pages.findIndex((page) =>
    page.includes('Radiographic examination report D1-RT'),
  );
  const index = pages.findIndex((page, n) => n > 0 && page.startsWith('Attachments index'));
  t.true(index > 0 && appended > index, `index on ${index + 1}, report on ${appended + 1}`);
  t.regex(text, /in the ZIP only/, 'the CSV is indexed, not appended');

  // The same package again: the same bytes but the generation stamp (its dates and the cover's
  // line), a second later.
  await sleep(1100);
  const second = await w.a.engineer.get(`/test-packages/${pkg.id}/dossier`);
  t.is(second.bytes!.length, first.bytes!.length);
  const changed = differences(first.bytes!, second.bytes!);
  t.true(changed.length > 0 && changed.length <= 14 + 14 + 40, `${changed.length} bytes differ`);
  const creation = first.bytes!.indexOf('/CreationDate');
  t.true(
    changed.some((at) => at > creation && at < creation + 40),
    'the creation date moved',
  );

  // The ZIP: the PDF first, then the files as they were uploaded.
  const zipped = await w.a.engineer.get(`/test-packages/${pkg.id}/dossier`, {
    accept: 'application/zip',
  });
  t.is(zipped.status, 200);
  t.is(zipped.headers['content-type'], 'application/zip');
  const entries = unzipSync(new Uint8Array(zipped.bytes!));
  const names = Object.keys(entries);
  t.is(names[0], 'dossier-D1-TP.pdf');
  t.is(names.length, 4);
  const byHash = new Map(names.slice(1).map((name) => [sha256(entries[name]!), name]));
  t.deepEqual([...byHash.keys()].sort(), files.map((f) => f.sha256).sort());
  t.regex(byHash.get(sha256(rtReport))!, /^attachments\/.*D1-RT report\.pdf$/);
  t.is((await pagesOf(entries[names[0]!]!)).length, pages.length);
});

test('a dossier of a package with nothing attached and no punch items still reads; an unknown package is 404', async (t) => {
  const w = await world(t);
  const { pkg } = await readyPackage(w, 'D2');
  ok(await w.a.engineer.patch(`/test-packages/${pkg.id}`, { state: 'released' }));
  const res = await w.a.admin.get(`/test-packages/${pkg.id}/dossier?format=pdf`);
  t.is(res.status, 200);
  const text = (await pagesOf(res.bytes!)).join('\n');
  t.regex(text, /No punch items/);
  t.regex(text, /D2-1/);
  t.is(
    (await w.a.engineer.get('/test-packages/00000000-0000-4000-8000-000000000000/dossier')).status,
    404,
  );
});

test("one dossier of a tenant at a time on an instance: another meanwhile is 429; the tenant's next one is laid out", async (t) => {
  const w = await world(t);
  const { pkg } = await readyPackage(w, 'D3');
  ok(await w.a.engineer.patch(`/test-packages/${pkg.id}`, { state: 'released' }));
  // A dossier of the tenant in progress (its place held as the route holds it).
  const release = inFlightOf(w.pool, 'dossiers').take(w.tenantA, DOSSIERS_PER_TENANT)!;
  const refused = await w.a.engineer.get(`/test-packages/${pkg.id}/dossier`);
  t.is(refused.status, 429);
  t.is(refused.json.type, '/problems/too-many-dossiers');
  t.is(refused.headers['retry-after'], '10');
  t.is(
    (await w.b.engineer.get(`/test-packages/${pkg.id}/dossier`)).status,
    404,
    'another tenant is not held',
  );
  release();
  t.is((await w.a.engineer.get(`/test-packages/${pkg.id}/dossier`)).status, 200);
  t.is(inFlightOf(w.pool, 'dossiers').count(w.tenantA), 0, 'its place given back');
});
