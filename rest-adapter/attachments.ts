// Attachments: files (PDF, PNG, JPEG, CSV) attached to one record each: an ISO's drawing, an RT
// report scan, a PQR's certificate, a photo of a punch item.
//
//   POST   /attachments               multipart/form-data: the `file` and exactly one owner id
//                                     (isoId, weldId, ndtRecordId, ...); 201 with the attachment
//   GET    /attachments?isoId=...     the list (keyset pages, as every list), by owner
//   GET    /attachments/{id}          one; PATCH its fileName or description; DELETE (engineers)
//   GET    /attachments/{id}/content  the bytes, always as a download (never shown inline)
//
// A file's type is judged by its bytes (db/attachment-store.ts, sniffAttachment): a file that is
// not a PDF, PNG, JPEG or CSV text is 415, whatever its name or declared type; HTML renamed .csv
// or .pdf among them. The body is written to a temporary file first (hashed and counted on the
// way, 413 past the tenant's limit), so a slow upload holds no database connection; the bytes go
// to the store (keyed by tenant and SHA-256) in the transaction that records the attachment.
// Row security keeps every read to the caller's tenant: another tenant's attachment is 404, its
// content too. The rules (who may, what refers to what, when a file leaves the store): the
// attachments tables of migrations/ and the housekeeping's sweep.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import type { AttachmentStore } from '../db/attachment-store.ts';
import {
  imageSize,
  sniffAttachment,
  SNIFF_BYTES,
  TextCheck,
  type AttachmentType,
} from '../db/file-types.ts';
import { prepared } from '../db/database.ts';
import { ATTACHMENT_TYPES } from '../db/vocabulary.ts';
import {
  common,
  header,
  idempotencyKey,
  idParam,
  itemHeaders,
  problem,
  replayedHeader,
  ref,
} from './http/operation.ts';
import { HttpProblem, problemOf, problems, zodIssues } from './http/problem.ts';
import { inFlightOf } from './http/in-flight.ts';
import type { Route } from './http/route.ts';
import { claimIdempotencyKey, idempotencyKeyOf } from './idempotency.ts';
import {
  column,
  createdAnswer,
  defineResource,
  entityTags,
  inDatabase,
  pathId,
  refusal,
  sendCreated,
} from './resource.ts';

/** The records a file may be attached to: the field naming it, its column, what it is. */
export const ATTACHMENT_OWNERS = {
  isoId: { column: 'iso_id', noun: 'ISO' },
  weldId: { column: 'weld_id', noun: 'weld' },
  ndtRecordId: { column: 'ndt_record_id', noun: 'NDT record' },
  inspectionId: { column: 'inspection_id', noun: 'inspection' },
  testPackageId: { column: 'test_package_id', noun: 'test package' },
  pqrId: { column: 'pqr_id', noun: 'PQR' },
  wpsId: { column: 'wps_id', noun: 'WPS' },
  welderQualificationId: { column: 'welder_qualification_id', noun: 'welder qualification' },
  punchItemId: { column: 'punch_item_id', noun: 'punch item' },
} as const;
type Owner = keyof typeof ATTACHMENT_OWNERS;
const OWNERS = Object.keys(ATTACHMENT_OWNERS) as Owner[];

export const attachments = defineResource({
  path: 'attachments',
  schema: 'Attachment',
  noun: 'attachment',
  plural: 'attachments',
  table: 'weld_public.attachments',
  description:
    'A file attached to one record: a PDF, PNG, JPEG or CSV, its type judged by its bytes. Uploaded by POST /attachments (multipart/form-data); its bytes are GET /attachments/{id}/content.',
  fields: {
    // Written by the upload from the file (and fileName, description changed by PATCH).
    fileName: column.text('file_name', 255, {
      write: 'always',
      required: true,
      type: z
        .string()
        .min(1)
        .max(255)
        .regex(
          /^[^\p{Cc}\p{Cf}/\\]+$/u,
          'must be a file name (no path, no control or formatting characters)',
        )
        .refine((name) => name !== '.' && name !== '..', 'must be a file name')
        .describe("the file's name as uploaded, without its path"),
    }),
    contentType: {
      column: 'content_type',
      type: z
        .enum(ATTACHMENT_TYPES)
        .describe('what its bytes are: application/pdf, image/png, image/jpeg or text/csv'),
      write: 'create',
      required: true,
      filter: true,
    },
    sizeBytes: {
      column: 'size_bytes',
      type: z.number().int().min(1).max(1073741824).describe('its size in bytes'),
      read: 'r.size_bytes::float8',
      write: 'create',
      required: true,
    },
    sha256: {
      column: 'sha256',
      type: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .describe("the SHA-256 of its bytes, hex: the file's name in the store"),
      write: 'create',
      required: true,
    },
    description: column.text('description', 2000, { nullable: true, write: 'always' }),
    ...(Object.fromEntries(
      OWNERS.map((name) => [
        name,
        column.id(ATTACHMENT_OWNERS[name].column, {
          nullable: true,
          filter: true,
          write: 'create',
          type: z.uuid().describe(`the ${ATTACHMENT_OWNERS[name].noun} it is attached to, or null`),
        }),
      ]),
    ) as Record<Owner, ReturnType<typeof column.id>>),
    uploadedBy: column.id('uploaded_by', {
      nullable: true,
      type: z.uuid().describe('the user who attached it'),
    }),
  },
  access: {
    update: 'inspector (fileName and description)',
    delete:
      "engineer; the file leaves the store once no attachment of the tenant refers to it (a record's deletion deletes its attachments)",
  },
});

//------------------------------------------------------------------------------------------------
// The upload

export interface AttachmentOptions {
  store: AttachmentStore;
  /** ATTACHMENT_MAX_BYTES: no tenant's limit (tenant_settings.attachment_max_bytes) goes past it. */
  maxBytes: number;
}

/** The form's text fields: exactly one owner, and a description. */
const UploadFields = z.strictObject({
  ...(Object.fromEntries(OWNERS.map((name) => [name, z.uuid().optional()])) as Record<
    Owner,
    z.ZodOptional<z.ZodUUID>
  >),
  description: z.string().max(2000).optional(),
});

/** A file received: where it waits, and what it is. */
interface Received {
  file: string;
  fileName: string;
  size: number;
  sha256: string;
  type: AttachmentType | undefined;
  /** Why it is not what its type says (a CSV that is no text), if it is not. */
  problem: string | undefined;
}

const tooLarge = (limit: number) =>
  problemOf('content-too-large', {
    detail: `The file is larger than ${limit} bytes, the largest this tenant may attach.`,
    headers: { Connection: 'close' },
  });

/** The name a client gave, without a path or control characters; a type's default if none. */
function cleanFileName(given: string | undefined, type: AttachmentType | undefined): string {
  const base = (given ?? '').split(/[/\\]/).pop() ?? '';
  const name = base
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .trim()
    .slice(0, 255);
  if (name && name !== '.' && name !== '..') return name;
  const extension = { 'application/pdf': 'pdf', 'image/png': 'png', 'image/jpeg': 'jpg' };
  return `attachment.${type && type !== 'text/csv' ? extension[type] : 'csv'}`;
}

/**
 * Reads the multipart body: its text fields, and its one `file` part into `dir`, hashed, counted
 * (past `limit` the upload stops: 413) and judged on the way.
 */
async function receive(
  req: Request,
  dir: string,
  limit: number,
): Promise<{ fields: Record<string, string>; received: Received | undefined }> {
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      defParamCharset: 'utf8',
      // (One byte over the limit is where busboy stops and says so.)
      limits: { files: 1, fields: 12, parts: 14, fieldSize: 4096, fileSize: limit + 1 },
    });
  } catch {
    throw problems.unsupportedMediaType(
      'The request body must be multipart/form-data with a `file` part.',
    );
  }
  const fields: Record<string, string> = Object.create(null) as Record<string, string>;
  let writing: Promise<Received> | undefined;
  let refused: HttpProblem | undefined;
  const refuse = (problem: HttpProblem) => (refused ??= problem);

  parser.on('field', (name, value, info) => {
    if (info.valueTruncated || info.nameTruncated) {
      refuse(problems.validation([{ pointer: `/${name}`, detail: 'is too long' }]));
    } else if (name in fields) {
      refuse(problems.validation([{ pointer: `/${name}`, detail: 'is given twice' }]));
    } else fields[name] = value;
  });
  parser.on('file', (name, stream, info) => {
    if (name !== 'file') {
      refuse(
        problems.validation([
          { pointer: `/${name}`, detail: 'is not a field (the file is `file`)' },
        ]),
      );
      stream.resume();
      return;
    }
    const hash = createHash('sha256');
    const text = new TextCheck();
    const head: Buffer[] = [];
    let size = 0;
    const file = path.join(dir, 'upload');
    const judge = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        text.push(chunk);
        if (size < SNIFF_BYTES) head.push(chunk);
        size += chunk.length;
        done(null, chunk);
      },
    });
    // Past the limit, stop reading: the answer is 413 and the connection closes.
    stream.on('limit', () => stop(tooLarge(limit)));
    writing = pipeline(stream, judge, createWriteStream(file, { mode: 0o600 })).then(() => {
      text.push(new Uint8Array(), true);
      const type = size === 0 ? undefined : sniffAttachment(Buffer.concat(head));
      return {
        file,
        fileName: cleanFileName(info.filename, type),
        size,
        sha256: hash.digest('hex'),
        type,
        problem: type === 'text/csv' ? text.problem : undefined,
      };
    });
    writing.catch(() => {}); // (awaited below unless the body fails first)
  });
  let stop: (problem: HttpProblem) => void = () => {};
  const parsed = new Promise<void>((resolve, reject) => {
    stop = (problem) => {
      refuse(problem);
      req.unpipe(parser);
      reject(problem);
    };
    parser.on('close', resolve);
    parser.on('error', () => reject(malformed()));
    req.on('error', () => reject(malformed()));
    // A client that goes away mid-upload: no 'error' comes, only 'close' before the body ended.
    req.on('close', () => {
      if (!req.complete) reject(malformed());
    });
    if (req.destroyed) reject(malformed());
  });
  req.pipe(parser);
  try {
    await parsed;
  } catch (error) {
    throw refused ?? error;
  }
  const received = writing && (await writing);
  if (refused) throw refused;
  return { fields, received };
}

const malformed = () =>
  new HttpProblem(400, { detail: 'The multipart/form-data body is malformed.' });

/**
 * The Content-Disposition of a download: the name as given (RFC 8187: every character but
 * letters, digits and !#$&+-.^_`|~ percent-encoded), and an ASCII stand-in.
 */
export function downloadDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** Headers that keep a file from running as a page, whatever it holds. */
export const DOWNLOAD_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; sandbox",
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'private, no-cache',
};

const ownerList = OWNERS.join(', ');

/**
 * Uploads one tenant may have in flight on an instance: each holds a temporary file of up to its
 * limit while it arrives, and a slow client could otherwise fill the disk with them.
 */
export const UPLOADS_PER_TENANT = 4;

/**
 * The most pixels an image may have (40 megapixels: an A0 drawing scanned at 150 dpi is 35).
 * Its compressed bytes say little: a 400 KB PNG can unpack to 20,000 x 20,000 pixels, 1.6 GB.
 */
export const MAX_IMAGE_PIXELS = 40_000_000;

/**
 * A call of the attachment store: a failure is the store's (503 /problems/store-unavailable,
 * logged), not taken for the database's.
 */
export async function inStore<T>(req: Request, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    req.log.warn({ err: error }, `attachment store: ${what} failed`);
    throw problemOf('store-unavailable', {
      detail: 'The file store does not answer; try again shortly.',
      headers: { 'Retry-After': '5' },
    });
  }
}

/**
 * Why an image is not taken, if it is not: more than MAX_IMAGE_PIXELS, or headers that do not
 * say its size plainly (db/file-types.ts, imageSize). The file is read whole: a PNG's chunks run
 * to its end (at most the tenant's limit, 25 MiB unless set).
 */
async function imageRefusal(file: string): Promise<string | undefined> {
  const size = imageSize(await readFile(file));
  if ('problem' in size) return `The image is not taken: ${size.problem}.`;
  const pixels = size.width * size.height;
  if (pixels <= MAX_IMAGE_PIXELS) return undefined;
  return `The image is ${pixels} pixels, more than the ${MAX_IMAGE_PIXELS} an attachment may have.`;
}

export function attachmentRoutes(pool: pg.Pool, options: AttachmentOptions): Route[] {
  const { store } = options;
  return [
    {
      method: 'POST',
      path: '/attachments',
      doc: {
        summary: 'Attach a file to a record',
        description:
          'multipart/form-data: the file as the part `file` (its filename is kept as fileName), and exactly one of ' +
          `${ownerList} naming the record, and optionally a description. The file must be a PDF, a PNG, a JPEG or ` +
          'CSV text (UTF-8), judged by its bytes, not its name or declared type: anything else (HTML or XML renamed ' +
          "among them) is 415. Larger than the tenant's limit (tenant_settings.attachment_max_bytes, 25 MiB unless " +
          'set; never past ATTACHMENT_MAX_BYTES) is 413. The same bytes attached twice are stored once (by SHA-256). ' +
          'Who: inspector. With an Idempotency-Key, a retry of the same upload within 24 hours answers the first answer again.',
        parameters: [idempotencyKey],
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file'],
                properties: {
                  file: { type: 'string', format: 'binary', description: 'the file' },
                  ...Object.fromEntries(
                    OWNERS.map((name) => [
                      name,
                      {
                        type: 'string',
                        format: 'uuid',
                        description: `the ${ATTACHMENT_OWNERS[name].noun} (exactly one owner)`,
                      },
                    ]),
                  ),
                  description: { type: 'string', maxLength: 2000 },
                },
              },
            },
          },
        },
        responses: {
          '201': {
            description: 'the attachment',
            headers: {
              ...itemHeaders,
              Location: { schema: { type: 'string' }, description: 'its path' },
              ...replayedHeader,
            },
            content: { 'application/json': { schema: ref('Attachment') } },
          },
          '403': problem('your role may not attach files (or the CSRF check failed)'),
          '413': problem("the file is larger than the tenant's limit"),
          '415': problem(
            'not multipart/form-data, or the file is not a PDF, PNG, JPEG or CSV text',
          ),
          '422': problem(
            `no file, an empty one, not exactly one owner, or an owner that is no record of your tenant, named in errors; or ${refusal.keyReused}`,
          ),
          ...common,
        },
      },
      handler: async (req, res) => {
        const key = idempotencyKeyOf(req);
        // Before a byte of the body is read: the tenant's limit, and whether the caller's role may
        // attach at all (a viewer's 25 MB is refused at the door, not after it arrived).
        const { rows: settings } = await inDatabase(pool, req, (db) =>
          db.query<{ limit: string; may: boolean }>(
            `select s.attachment_max_bytes as limit,
                    has_column_privilege('weld_public.attachments', 'sha256', 'insert') as may
               from weld_public.tenant_settings s`,
          ),
        );
        if (settings[0] && !settings[0].may) {
          throw problemOf('role-not-allowed', { detail: 'Your role may not attach files.' });
        }
        const limit = Math.min(Number(settings[0]?.limit ?? options.maxBytes), options.maxBytes);
        // (A body's form fields and boundaries are a few kilobytes more than its file.)
        if (Number(req.get('content-length') ?? 0) > limit + 64 * 1024) throw tooLarge(limit);
        const done = inFlightOf(pool, 'uploads').take(req.tenant!.id, UPLOADS_PER_TENANT);
        if (!done) {
          throw problemOf('too-many-uploads', {
            detail: `This tenant already has ${UPLOADS_PER_TENANT} uploads in progress here, the most it may; try again when one is done.`,
            headers: { 'Retry-After': '5' },
            extensions: { limit: UPLOADS_PER_TENANT },
          });
        }
        // Given back when the handler ends, however it ends (and, as a backstop, when the
        // connection closes): a client gone early must not keep a place for good.
        res.on('close', done);
        if (req.destroyed || res.closed) {
          done();
          return;
        }
        const dir = await mkdtemp(path.join(tmpdir(), 'weld-attachment-'));
        try {
          const { fields, received } = await receive(req, dir, limit);
          if (received && received.size > limit) throw tooLarge(limit);
          const parsed = UploadFields.safeParse(fields);
          const issues = [
            ...(received ? [] : [{ pointer: '/file', detail: 'is required (a part named file)' }]),
            ...(received?.size === 0 ? [{ pointer: '/file', detail: 'is empty' }] : []),
            ...(parsed.success ? [] : zodIssues(parsed.error)),
            ...(parsed.success && OWNERS.filter((name) => parsed.data[name]).length !== 1
              ? [{ pointer: '', detail: `must name exactly one record: ${OWNERS.join(', ')}` }]
              : []),
          ];
          if (issues.length) throw problems.validation(issues);
          const file = received!;
          if (!file.type || file.problem) {
            throw problems.unsupportedMediaType(
              `The file is not taken: ${file.problem ?? 'it is not a PDF, PNG, JPEG or CSV'}.`,
            );
          }
          if (file.type === 'image/png' || file.type === 'image/jpeg') {
            const refusal = await imageRefusal(file.file);
            if (refusal?.startsWith('The image is not taken')) {
              throw problems.unsupportedMediaType(refusal);
            }
            if (refusal) throw problemOf('content-too-large', { detail: refusal });
          }
          const body = parsed.data!;
          const owner = OWNERS.find((name) => body[name] !== undefined)!;
          const requestHash = createHash('sha256')
            .update(
              `POST /attachments\n${JSON.stringify({ ...body, file: file.sha256, name: file.fileName })}`,
            )
            .digest('base64url');
          const answer = await inDatabase(pool, req, async (db) => {
            if (key !== undefined) {
              const earlier = await claimIdempotencyKey(db, key, requestHash);
              if (earlier) return earlier;
            }
            // The file's row first: it is locked until commit, so the sweep cannot take the
            // bytes from under this upload (weld_hidden.sweep_attachment_files).
            const stored = await db.query<{ tenant_id: string; created: boolean }>(
              prepared(
                `insert into weld_hidden.attachment_files (sha256, size_bytes, content_type)
                 values ($1, $2, $3)
                 on conflict (tenant_id, sha256) do update set put_at = now()
                 returning tenant_id, (xmax = 0) as created`,
                [file.sha256, file.size, file.type],
              ),
            );
            const { rows } = await db.query<{ id: string }>(
              prepared(
                `insert into weld_public.attachments
                   (sha256, file_name, content_type, size_bytes, description, ${ATTACHMENT_OWNERS[owner].column})
                 values ($1, $2, $3, $4, $5, $6) returning id`,
                [
                  file.sha256,
                  file.fileName,
                  file.type,
                  file.size,
                  body.description ?? null,
                  body[owner],
                ],
              ),
            );
            const storeKey = { tenantId: stored.rows[0]!.tenant_id, sha256: file.sha256 };
            await inStore(req, 'put', async () => {
              if (stored.rows[0]!.created || !(await store.has(storeKey))) {
                await store.put(storeKey, file.file, file.size, file.type!);
              }
            });
            return createdAnswer(db, attachments, rows[0]!.id, key);
          });
          sendCreated(req, res, answer);
        } finally {
          await rm(dir, { recursive: true, force: true });
          done();
        }
      },
    },
    {
      method: 'GET',
      path: '/attachments/:id/content',
      doc: {
        summary: "An attachment's bytes",
        description:
          'The file, as a download: Content-Type as its bytes are, Content-Disposition: attachment with its ' +
          'fileName, X-Content-Type-Options: nosniff and a sandboxing Content-Security-Policy, so that no file ' +
          'runs as a page of this origin. ETag: its SHA-256 (If-None-Match gives 304).',
        parameters: [idParam, header('If-None-Match', 'the ETag you hold; 304 if it is current')],
        responses: {
          '200': {
            description: 'the bytes',
            headers: {
              ETag: { schema: { type: 'string' }, description: 'its SHA-256, quoted' },
              'Content-Disposition': { schema: { type: 'string' }, description: 'attachment' },
            },
            content: Object.fromEntries(
              ATTACHMENT_TYPES.map((type) => [
                type,
                { schema: { type: 'string', format: 'binary' } },
              ]),
            ),
          },
          '304': { description: 'not modified (If-None-Match)' },
          ...common,
        },
      },
      handler: async (req: Request, res: Response) => {
        const id = pathId(req, 'attachment');
        const { rows } = await inDatabase(pool, req, (db) =>
          db.query<{
            tenant_id: string;
            sha256: string;
            content_type: AttachmentType;
            file_name: string;
            size_bytes: string;
          }>(
            prepared(
              `select tenant_id, sha256, content_type, file_name, size_bytes
                 from weld_public.attachments where id = $1`,
              [id],
            ),
          ),
        );
        const found = rows[0];
        if (!found) throw problems.notFound('No such attachment.');
        const tag = `"${found.sha256}"`;
        res.set({ ...DOWNLOAD_HEADERS, ETag: tag });
        const wanted = entityTags(req.get('if-none-match'));
        if (wanted && (wanted.includes('*') || wanted.includes(tag))) {
          res.status(304).end();
          return;
        }
        const bytes = await inStore(req, 'get', () =>
          store.get({ tenantId: found.tenant_id, sha256: found.sha256 }),
        );
        if (!bytes) {
          throw new Error(`attachment ${id}: the store has no file ${found.sha256}`);
        }
        res.set({
          'Content-Type': found.content_type,
          'Content-Length': found.size_bytes,
          'Content-Disposition': downloadDisposition(found.file_name),
        });
        await pipeline(bytes, res);
      },
    },
  ];
}
