// Attachments over real HTTP (issue F20): files uploaded as multipart/form-data, stored by their
// SHA-256 in the store the service is given (files under a directory, and a real S3-compatible
// server on loopback: s3rver), read back byte for byte, judged by their bytes, limited per tenant,
// served only as downloads, and never to another tenant. A file leaves the store when nothing
// refers to it any more (the housekeeping's sweep).
import { createHash } from 'node:crypto';
import http from 'node:http';
import test, { type ExecutionContext } from 'ava';
import { cookieHeader, login, setCookies } from '../helpers/auth.ts';
import type { Client } from '../helpers/http.ts';
import { A, ok, world, type World } from '../helpers/rules-http.ts';
import { startS3 } from '../helpers/s3.ts';
import { S3Store } from '../../db/attachment-store.ts';
import { UPLOADS_PER_TENANT } from '../../rest-adapter/attachments.ts';
import { inFlightOf } from '../../rest-adapter/http/in-flight.ts';
import { sweepAttachmentFiles } from '../../server/housekeeping.ts';

/** A multipart/form-data body of the text fields and, if given, the file. */
async function form(
  fields: Record<string, string>,
  file?: { name: string; bytes: Buffer; type?: string },
) {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  if (file) {
    body.append(
      'file',
      new Blob([file.bytes], { type: file.type ?? 'application/octet-stream' }),
      file.name,
    );
  }
  const encoded = new Response(body);
  return {
    bytes: Buffer.from(await encoded.arrayBuffer()),
    type: encoded.headers.get('content-type')!,
  };
}

function upload(
  client: Client,
  fields: Record<string, string>,
  file?: { name: string; bytes: Buffer; type?: string },
  headers: Record<string, string> = {},
) {
  return form(fields, file).then(({ bytes, type }) =>
    client.post('/attachments', bytes, { 'content-type': type, ...headers }),
  );
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');
// The smallest PNG: its 8-byte signature and an IHDR chunk are what its type is judged by.
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.from('0000000d49484452000000010000000108060000001f15c489', 'hex'),
]);

/** How many files of this content tenant A's store row set holds, as the owner sees it. */
async function fileRows(w: World, sha: string): Promise<number> {
  const { rows } = await w.owner.query(
    'select count(*)::int as n from weld_hidden.attachment_files where tenant_id = $1 and sha256 = $2',
    [w.tenantA, sha],
  );
  return rows[0].n;
}

/** Makes the tenant's unreferenced files old enough for the sweep (it leaves the last hour's). */
const age = (w: World) =>
  w.owner.query(
    "update weld_hidden.attachment_files set put_at = now() - interval '2 hours' where tenant_id = $1",
    [w.tenantA],
  );

async function storedAndSwept(t: ExecutionContext, w: World) {
  const iso = await w.make.iso('ISO-ATT', 'L-ATT');
  const weld = await w.make.weld({ isoId: iso.id, weldNumber: 'W-1' });
  const pqr = await w.make.pqr('PQR-ATT');

  // Upload and read back.
  const created = await upload(
    w.a.inspector,
    { isoId: iso.id, description: 'the ISO drawing' },
    { name: 'ISO-ATT rev 1.pdf', bytes: PDF, type: 'application/pdf' },
  );
  t.is(created.status, 201, created.text);
  const attachment = created.json;
  t.like(attachment, {
    fileName: 'ISO-ATT rev 1.pdf',
    contentType: 'application/pdf',
    sizeBytes: PDF.length,
    sha256: sha256(PDF),
    description: 'the ISO drawing',
    isoId: iso.id,
    weldId: null,
    uploadedBy: w.userIds.inspector,
    version: 1,
  });
  t.is(created.headers.location, `/attachments/${attachment.id}`);
  t.true(await w.attachmentStore.has({ tenantId: w.tenantA, sha256: sha256(PDF) }));

  const content = await w.a.viewer.get(`/attachments/${attachment.id}/content`);
  t.is(content.status, 200);
  t.deepEqual(content.bytes, PDF);
  t.is(content.headers['content-type'], 'application/pdf');
  t.is(
    content.headers['content-disposition'],
    `attachment; filename="ISO-ATT rev 1.pdf"; filename*=UTF-8''ISO-ATT%20rev%201.pdf`,
  );
  t.is(content.headers['x-content-type-options'], 'nosniff');
  t.is(content.headers['content-security-policy'], "default-src 'none'; sandbox");
  t.is(content.headers.etag, `"${sha256(PDF)}"`);
  const again = await w.a.viewer.get(`/attachments/${attachment.id}/content`, {
    'if-none-match': `"${sha256(PDF)}"`,
  });
  t.is(again.status, 304);
  t.deepEqual(ok(await w.a.viewer.get(`/attachments/${attachment.id}`)), attachment);
  const listed = ok(await w.a.viewer.get(`/attachments?isoId=${iso.id}`));
  t.deepEqual(
    listed.items.map((a: { id: string }) => a.id),
    [attachment.id],
  );

  // The same bytes attached to a weld and a PQR: three attachments, one file.
  const onWeld = ok(
    await upload(w.a.inspector, { weldId: weld.id }, { name: 'scan.pdf', bytes: PDF }),
    201,
  );
  const onPqr = ok(
    await upload(w.a.engineer, { pqrId: pqr.id }, { name: 'cert.pdf', bytes: PDF }),
    201,
  );
  t.is(onWeld.sha256, attachment.sha256);
  t.is(await fileRows(w, sha256(PDF)), 1);

  // Deleting a record deletes its attachments, not the file others still refer to.
  t.is((await w.a.engineer.del(`/pqrs/${pqr.id}`)).status, 204);
  t.is((await w.a.viewer.get(`/attachments/${onPqr.id}`)).status, 404);
  t.is((await w.a.inspector.del(`/attachments/${attachment.id}`)).status, 403);
  t.is((await w.a.engineer.del(`/attachments/${attachment.id}`)).status, 204);
  await age(w);
  t.is(await sweepAttachmentFiles(w.pool, w.attachmentStore), 0);
  t.deepEqual((await w.a.viewer.get(`/attachments/${onWeld.id}/content`)).bytes, PDF);

  // Once nothing refers to it, the sweep takes it from the store; a file put within the hour
  // stays (an upload may not have committed yet).
  t.is((await w.a.engineer.del(`/attachments/${onWeld.id}`)).status, 204);
  await w.owner.query(
    'update weld_hidden.attachment_files set put_at = now() where tenant_id = $1',
    [w.tenantA],
  );
  t.is(await sweepAttachmentFiles(w.pool, w.attachmentStore), 0);
  await age(w);
  t.is(await sweepAttachmentFiles(w.pool, w.attachmentStore), 1);
  t.is(await fileRows(w, sha256(PDF)), 0);
  t.false(await w.attachmentStore.has({ tenantId: w.tenantA, sha256: sha256(PDF) }));

  // Attached again, it is stored again.
  const back = ok(
    await upload(w.a.inspector, { isoId: iso.id }, { name: 'again.pdf', bytes: PDF }),
    201,
  );
  t.deepEqual((await w.a.viewer.get(`/attachments/${back.id}/content`)).bytes, PDF);
}

test('files under a directory: upload, read back, hash; one copy per file; the sweep removes what nothing refers to', async (t) => {
  await storedAndSwept(t, await world(t));
});

test('an S3 bucket (s3rver on loopback): upload, read back, hash; one copy per file; the sweep removes what nothing refers to', async (t) => {
  const store = await startS3(t);
  const w = await world(t, { attachmentStore: store });
  await storedAndSwept(t, w);
  // (The objects are where the docs say: <prefix><tenant>/<sha256>.)
  const png = ok(
    await upload(
      w.a.inspector,
      { isoId: (await w.make.iso('ISO-S3', 'L')).id },
      { name: 'p.png', bytes: PNG },
    ),
    201,
  );
  t.true(await store.has({ tenantId: w.tenantA, sha256: png.sha256 }));
});

test('a file is judged by its bytes: HTML in disguise, markup, binary junk and bad UTF-8 are 415; a PNG called .csv is a PNG', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-T', 'L-T');
  const refused = async (name: string, bytes: Buffer, type?: string) => {
    const res = await upload(w.a.inspector, { isoId: iso.id }, { name, bytes, type });
    t.is(res.status, 415, `${name}: ${res.text}`);
    return res.json.detail as string;
  };
  t.regex(
    await refused(
      'report.pdf',
      Buffer.from('<html><script>alert(1)</script></html>'),
      'application/pdf',
    ),
    /HTML or XML/,
  );
  t.regex(await refused('a.csv', Buffer.from('\ufeff \n\t<!DOCTYPE html><p>hi')), /HTML or XML/);
  t.regex(
    await refused(
      'logo.png',
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
      'image/png',
    ),
    /HTML or XML/,
  );
  t.regex(
    await refused('x.csv', Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03])),
    /control characters|UTF-8/,
  );
  t.regex(await refused('latin1.csv', Buffer.from('weld;caf\xe9\n', 'latin1')), /not UTF-8/);
  t.is((await w.a.viewer.get(`/attachments?isoId=${iso.id}`)).json.items.length, 0);

  const png = ok(
    await upload(
      w.a.inspector,
      { isoId: iso.id },
      { name: 'photo.csv', bytes: PNG, type: 'text/csv' },
    ),
    201,
  );
  t.is(png.contentType, 'image/png');
  const csv = Buffer.from('\ufeffweldNumber;status\nW-1;ACCEPTED\nW-2;café\n');
  const stored = ok(
    await upload(w.a.inspector, { isoId: iso.id }, { name: '../../etc/passwd.csv', bytes: csv }),
    201,
  );
  t.is(stored.contentType, 'text/csv');
  t.is(stored.fileName, 'passwd.csv', 'no path');
  const served = await w.a.viewer.get(`/attachments/${stored.id}/content`);
  t.is(served.headers['content-type'], 'text/csv; charset=utf-8');
  t.regex(served.headers['content-disposition']!, /^attachment;/);
  t.deepEqual(served.bytes, csv);
});

test('the form: one file, exactly one record of your tenant; a bad form is 422 or 415, never a 500', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-F', 'L-F');
  const other = await w.b.engineer.post('/isos', { isoNumber: 'B-ISO', lineNumber: 'B-L' });
  const file = { name: 'a.pdf', bytes: PDF };
  const pointers = async (fields: Record<string, string>, withFile = true) => {
    const res = await upload(w.a.inspector, fields, withFile ? file : undefined);
    t.is(res.status, 422, res.text);
    return res.json.errors.map((e: { pointer: string }) => e.pointer);
  };
  t.deepEqual(await pointers({ isoId: iso.id }, false), ['/file']);
  t.deepEqual(await pointers({}), ['']);
  t.deepEqual(await pointers({ isoId: iso.id, pqrId: iso.id }), ['']);
  t.deepEqual(await pointers({ isoId: 'not-a-uuid' }), ['/isoId']);
  t.deepEqual(await pointers({ isoId: iso.id, colour: 'red' }), ['/colour']);
  // Another tenant's ISO is no record of yours.
  t.deepEqual(await pointers({ isoId: other.json.id }), ['/isoId']);
  const empty = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'e.pdf', bytes: Buffer.alloc(0) },
  );
  t.is(empty.status, 422);
  t.regex(empty.json.detail, /file.*empty/);
  // Not a form at all.
  const json = await w.a.inspector.post('/attachments', { isoId: iso.id });
  t.is(json.status, 415);
  const cut = await w.a.inspector.post(
    '/attachments',
    Buffer.from('--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n%PDF'),
    {
      'content-type': 'multipart/form-data; boundary=x',
    },
  );
  t.true(cut.status === 400 || cut.status === 422, cut.text);
  // A control character in a part's header is no multipart/form-data: 400.
  const bell = await upload(w.a.inspector, { isoId: iso.id }, { name: 'a\u0007.pdf', bytes: PDF });
  t.is(bell.status, 400, bell.text);
  t.is((await w.a.viewer.get(`/attachments?isoId=${iso.id}`)).json.items.length, 0);
});

test("a tenant's limit: a larger file is 413 and nothing is stored", async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-L', 'L-L');
  await w.owner.query(
    'update weld_public.tenant_settings set attachment_max_bytes = 2000 where tenant_id = $1',
    [w.tenantA],
  );
  const big = Buffer.concat([PDF, Buffer.alloc(3000, 0x20)]);
  const res = await upload(w.a.inspector, { isoId: iso.id }, { name: 'big.pdf', bytes: big });
  t.is(res.status, 413, res.text);
  t.regex(res.json.detail, /larger than 2000 bytes/);
  t.is(await fileRows(w, sha256(big)), 0);
  t.false(await w.attachmentStore.has({ tenantId: w.tenantA, sha256: sha256(big) }));
  // At the limit it is taken.
  const fits = Buffer.concat([PDF, Buffer.alloc(2000 - PDF.length, 0x20)]);
  t.is(
    (await upload(w.a.inspector, { isoId: iso.id }, { name: 'fits.pdf', bytes: fits })).status,
    201,
  );
});

test("another tenant's attachment is 404 everywhere; a viewer may not upload; a cookie upload needs the CSRF header", async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-X', 'L-X');
  const mine = ok(
    await upload(w.a.inspector, { isoId: iso.id }, { name: 'a.pdf', bytes: PDF }),
    201,
  );
  for (const path of [`/attachments/${mine.id}`, `/attachments/${mine.id}/content`]) {
    const res = await w.b.admin.get(path);
    t.is(res.status, 404, path);
  }
  t.is((await w.b.admin.patch(`/attachments/${mine.id}`, { fileName: 'x.pdf' })).status, 404);
  t.is((await w.b.admin.del(`/attachments/${mine.id}`)).status, 404);
  t.is((await w.b.admin.get(`/attachments?isoId=${iso.id}`)).json.items.length, 0);

  const viewer = await upload(
    w.a.viewer,
    { isoId: iso.id },
    { name: 'v.pdf', bytes: Buffer.concat([PDF, Buffer.from('v')]) },
  );
  t.is(viewer.status, 403);
  t.is(viewer.json.detail, 'Your role may not attach files.', 'refused before the body is read');
  t.is(await fileRows(w, sha256(Buffer.concat([PDF, Buffer.from('v')]))), 0);

  // The web app's cookie session: without X-CSRF-Token refused, with it taken.
  const session = await login(w.port, A, 'inspector');
  const cookie = cookieHeader(session);
  const { bytes, type } = await form({ isoId: iso.id }, { name: 'c.pdf', bytes: PDF });
  const { request } = await import('../helpers/http.ts');
  const send = (headers: Record<string, string>) =>
    request(w.port, {
      method: 'POST',
      path: '/attachments',
      host: A,
      body: bytes,
      headers: { 'content-type': type, cookie, ...headers },
    });
  const missing = await send({});
  t.is(missing.status, 403);
  t.is(missing.json.type, '/problems/csrf-rejected');
  t.is((await send({ 'x-csrf-token': setCookies(session).svc_csrf!.value! })).status, 201);

  // Renamed by an inspector; the name is still only a name.
  const renamed = await w.a.inspector.patch(`/attachments/${mine.id}`, { fileName: 'x/y.pdf' });
  t.is(renamed.status, 422);
  t.is(
    ok(await w.a.inspector.patch(`/attachments/${mine.id}`, { fileName: 'rev 2.pdf' })).fileName,
    'rev 2.pdf',
  );
});

test('an Idempotency-Key replays an upload: one attachment', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-I', 'L-I');
  const first = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'a.pdf', bytes: PDF },
    { 'idempotency-key': 'k-1' },
  );
  const second = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'a.pdf', bytes: PDF },
    { 'idempotency-key': 'k-1' },
  );
  t.is(first.status, 201);
  t.is(second.status, 201);
  t.is(second.headers['idempotent-replayed'], 'true');
  t.is(second.json.id, first.json.id);
  const other = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'b.pdf', bytes: PDF },
    { 'idempotency-key': 'k-1' },
  );
  t.is(other.status, 422);
  t.is((await w.a.viewer.get(`/attachments?isoId=${iso.id}`)).json.items.length, 1);
});

test("an ISO's drawing is a PDF or an image attached to it; deleted, the ISO has none; inspectors place welds on it", async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-D', 'L-D');
  const other = await w.make.iso('ISO-E', 'L-E');
  const weld = await w.make.weld({ isoId: iso.id, weldNumber: 'W-1' });
  const drawing = ok(
    await upload(w.a.inspector, { isoId: iso.id }, { name: 'd.pdf', bytes: PDF }),
    201,
  );
  const csv = ok(
    await upload(w.a.inspector, { isoId: iso.id }, { name: 'r.csv', bytes: Buffer.from('a;b\n') }),
    201,
  );
  const elsewhere = ok(
    await upload(w.a.inspector, { isoId: other.id }, { name: 'e.png', bytes: PNG }),
    201,
  );
  for (const id of [csv.id, elsewhere.id, '00000000-0000-4000-8000-000000000000']) {
    const refused = await w.a.engineer.patch(`/isos/${iso.id}`, { drawingId: id });
    t.is(refused.status, 422, refused.text);
    t.deepEqual(refused.json.errors, [
      {
        pointer: '/drawingId',
        detail: 'drawingId: must be a PDF or an image attached to this ISO',
      },
    ]);
  }
  t.is((await w.a.inspector.patch(`/isos/${iso.id}`, { drawingId: drawing.id })).status, 403);
  t.is(
    ok(await w.a.engineer.patch(`/isos/${iso.id}`, { drawingId: drawing.id })).drawingId,
    drawing.id,
  );

  // The inspector places the weld: the three together, on the page, and nothing else of it.
  const placed = ok(
    await w.a.inspector.patch(`/welds/${weld.id}`, { mapPage: 1, mapX: 0.4213, mapY: 0.3 }),
  );
  t.like(placed, { mapPage: 1, mapX: 0.4213, mapY: 0.3 });
  t.is((await w.a.inspector.patch(`/welds/${weld.id}`, { mapX: null })).status, 422);
  t.is((await w.a.inspector.patch(`/welds/${weld.id}`, { mapX: 1.5 })).status, 422);
  t.is((await w.a.inspector.patch(`/welds/${weld.id}`, { material: 'A106' })).status, 403);
  t.is((await w.a.viewer.patch(`/welds/${weld.id}`, { mapPage: 2 })).status, 403);
  t.like(
    ok(await w.a.inspector.patch(`/welds/${weld.id}`, { mapPage: null, mapX: null, mapY: null })),
    {
      mapPage: null,
      mapX: null,
      mapY: null,
    },
  );

  // The drawing's attachment deleted: the ISO has no drawing.
  t.is((await w.a.engineer.del(`/attachments/${drawing.id}`)).status, 204);
  t.is(ok(await w.a.viewer.get(`/isos/${iso.id}`)).drawingId, null);
});

/** A PNG's signature and IHDR chunk claiming `width` x `height` (the pixels need not follow). */
function pngHeader(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(25);
  ihdr.writeUInt32BE(13, 0);
  ihdr.write('IHDR', 4);
  ihdr.writeUInt32BE(width, 8);
  ihdr.writeUInt32BE(height, 12);
  ihdr.writeUInt8(8, 16);
  ihdr.writeUInt8(6, 17);
  return Buffer.concat([PNG.subarray(0, 8), ihdr, Buffer.alloc(64)]);
}

test('an image bomb is refused by its header: a PNG or a JPEG of more than 40 megapixels is 413', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-B', 'L-B');
  const png = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'bomb.png', bytes: pngHeader(20000, 20000) },
  );
  t.is(png.status, 413, png.text);
  t.regex(png.json.detail, /400000000 pixels, more than the 40000000/);
  // A JPEG: SOI, an APP0 segment, then SOF0 of 10,000 x 10,000.
  const jpeg = Buffer.from(
    'ffd8ffe000104a46494600010100000100010000ffc0000b082710271001011100ffd9',
    'hex',
  );
  const refused = await upload(w.a.inspector, { isoId: iso.id }, { name: 'bomb.jpg', bytes: jpeg });
  t.is(refused.status, 413, refused.text);
  t.regex(refused.json.detail, /100000000 pixels/);
  t.is((await w.a.viewer.get(`/attachments?isoId=${iso.id}`)).json.items.length, 0);
  // Headers that say one size to a check and another to a decoder are not taken: a second IHDR
  // (decoders take the last), an animated PNG (each frame at the canvas's size), and a JPEG frame
  // header behind fill bytes.
  const twice = Buffer.concat([
    pngHeader(1, 1).subarray(0, 33),
    pngHeader(20000, 20000).subarray(8, 33),
  ]);
  const apng = Buffer.concat([
    pngHeader(100, 100).subarray(0, 33),
    Buffer.from('000000086163544c000000280000000000000000', 'hex'),
  ]);
  for (const [name, bytes] of [
    ['twice.png', twice],
    ['animated.png', apng],
  ] as const) {
    const res = await upload(w.a.inspector, { isoId: iso.id }, { name, bytes });
    t.is(res.status, 415, `${name}: ${res.text}`);
    t.regex(res.json.detail, /one IHDR|animated/);
  }
  const filled = Buffer.from('ffd8ffffc0000b08ea60ea6001011100ffd9', 'hex');
  const hidden = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'fill.jpg', bytes: filled },
  );
  t.is(hidden.status, 413, hidden.text);
  t.regex(hidden.json.detail, /3600000000 pixels/);
  // 6,000 x 4,000 (24 megapixels) is taken.
  const fits = await upload(
    w.a.inspector,
    { isoId: iso.id },
    { name: 'scan.png', bytes: pngHeader(6000, 4000) },
  );
  t.is(fits.status, 201, fits.text);
});

test("files come in through the upload only: GraphQL creates none, and a row written in SQL takes its file's size and type", async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-G', 'L-G');
  const csv = ok(
    await upload(w.a.inspector, { isoId: iso.id }, { name: 'r.csv', bytes: Buffer.from('a;b\n') }),
    201,
  );
  const mutation = await w.gql(
    'inspector',
    `mutation ($a: AttachmentInput!) { createAttachment(input: { attachment: $a }) { attachment { rowId } } }`,
    {
      a: {
        sha256: csv.sha256,
        fileName: 'fake.pdf',
        contentType: 'application/pdf',
        sizeBytes: '999999',
        isoId: iso.id,
      },
    },
  );
  t.truthy(mutation.json.errors, 'no createAttachment in the schema');
  // Each record's attachments, over GraphQL.
  const read = await w.gql(
    'viewer',
    `query ($id: UUID!) { allIsos(first: 1, condition: { rowId: $id }) { nodes { attachments(first: 5) { nodes { fileName contentType } } } } }`,
    { id: iso.id },
  );
  t.deepEqual(read.json.data.allIsos.nodes[0].attachments.nodes, [
    { fileName: 'r.csv', contentType: 'text/csv' },
  ]);
  // A DBA's row claiming another size and type gets the file's.
  const { rows } = await w.owner.query(
    `insert into weld_public.attachments (tenant_id, sha256, file_name, content_type, size_bytes, iso_id)
     values ($1, $2, 'fake.pdf', 'application/pdf', 999999, $3) returning content_type, size_bytes::int`,
    [w.tenantA, csv.sha256, iso.id],
  );
  t.deepEqual(rows[0], { content_type: 'text/csv', size_bytes: 4 });
});

test('file names: formatting characters refused, the download name percent-encoded past what RFC 8187 leaves bare', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-N', 'L-N');
  const named = ok(
    await upload(
      w.a.inspector,
      { isoId: iso.id },
      { name: "Tom's (draft)*\u202e.pdf", bytes: PDF },
    ),
    201,
  );
  t.is(named.fileName, "Tom's (draft)*.pdf", 'the right-to-left override dropped');
  const served = await w.a.viewer.get(`/attachments/${named.id}/content`);
  t.is(
    served.headers['content-disposition'],
    `attachment; filename="Tom's (draft)*.pdf"; filename*=UTF-8''Tom%27s%20%28draft%29%2A.pdf`,
  );
  const renamed = await w.a.inspector.patch(`/attachments/${named.id}`, {
    fileName: 'report\u202efdp.exe',
  });
  t.is(renamed.status, 422);
});

test('a store that does not answer is 503 store-unavailable, and nothing is recorded', async (t) => {
  const w = await world(t, {
    attachmentStore: new S3Store({
      bucket: 'none',
      prefix: '',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      forcePathStyle: true,
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    }),
  });
  const iso = await w.make.iso('ISO-S', 'L-S');
  const res = await upload(w.a.inspector, { isoId: iso.id }, { name: 'a.pdf', bytes: PDF });
  t.is(res.status, 503, res.text);
  t.is(res.json.type, '/problems/store-unavailable');
  t.is(res.headers['retry-after'], '5');
  t.is(await fileRows(w, sha256(PDF)), 0);
  t.is((await w.a.viewer.get(`/attachments?isoId=${iso.id}`)).json.items.length, 0);
});

test("a tenant's uploads in flight are bounded: a fifth at once is 429 too-many-uploads", async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-U', 'L-U');
  const token = (await login(w.port, A, 'inspector')).json.accessToken as string;
  const { bytes, type } = await form({ isoId: iso.id }, { name: 'slow.pdf', bytes: PDF });
  // Four uploads that send half their body and wait.
  const held: http.ClientRequest[] = [];
  for (let i = 0; i < UPLOADS_PER_TENANT; i++) {
    const outgoing = http.request({
      host: '127.0.0.1',
      port: w.port,
      method: 'POST',
      path: '/attachments',
      headers: {
        host: A,
        authorization: `Bearer ${token}`,
        'content-type': type,
        'content-length': String(bytes.length),
      },
    });
    outgoing.on('error', () => {});
    outgoing.write(bytes.subarray(0, bytes.length >> 1));
    held.push(outgoing);
  }
  t.teardown(() => held.forEach((r) => r.destroy()));
  // Once the four hold their places (the service's own count says so), a fifth is refused.
  const uploads = inFlightOf(w.pool, 'uploads');
  for (let i = 0; i < 300 && uploads.count(w.tenantA) < UPLOADS_PER_TENANT; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.is(uploads.count(w.tenantA), UPLOADS_PER_TENANT);
  const res = await upload(w.a.inspector, { isoId: iso.id }, { name: 'one-more.pdf', bytes: PDF });
  t.is(res.status, 429, res.text);
  t.is(res.json.type, '/problems/too-many-uploads');
  t.is(res.json.limit, UPLOADS_PER_TENANT);
  // One ends (its client gone): its place is free again.
  held.pop()!.destroy();
  for (let i = 0; i < 300 && uploads.count(w.tenantA) >= UPLOADS_PER_TENANT; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const after = await upload(w.a.inspector, { isoId: iso.id }, { name: 'later.pdf', bytes: PDF });
  t.is(after.status, 201, after.text);
});

test('an upload whose client goes away gives its place back: a tenant is never locked out of uploads', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-L2', 'L-L2');
  const token = (await login(w.port, A, 'inspector')).json.accessToken as string;
  const { bytes, type } = await form({ isoId: iso.id }, { name: 'gone.pdf', bytes: PDF });
  // Five clients that send their headers and a little, then hang up at once.
  for (let i = 0; i < UPLOADS_PER_TENANT + 1; i++) {
    const outgoing = http.request({
      host: '127.0.0.1',
      port: w.port,
      method: 'POST',
      path: '/attachments',
      headers: {
        host: A,
        authorization: `Bearer ${token}`,
        'content-type': type,
        'content-length': String(bytes.length),
      },
    });
    outgoing.on('error', () => {});
    outgoing.write(bytes.subarray(0, 10));
    await new Promise((resolve) => setTimeout(resolve, i * 20));
    outgoing.destroy();
  }
  const uploads = inFlightOf(w.pool, 'uploads');
  for (let i = 0; i < 300 && uploads.count(w.tenantA) > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.is(uploads.count(w.tenantA), 0, 'every place given back');
  const res = await upload(w.a.inspector, { isoId: iso.id }, { name: 'after.pdf', bytes: PDF });
  t.is(res.status, 201, res.text);
});
