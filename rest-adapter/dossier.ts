// The turnover dossier of a released test package: GET /test-packages/{id}/dossier.
//
// What it says is SQL's (weld_hidden.test_package_dossier: who may, which packages, the weld
// log, the NDT lots, the punch list, the files), read in one transaction as the caller; the files'
// bytes come from the attachment store; db/dossier.ts lays out the PDF (and the ZIP of the PDF
// and the original files) in a worker thread (db/dossier-worker.ts), one dossier at a time per
// instance, with a memory limit and a time limit. Reproducible: the same package gives the same
// bytes but for the generation stamp (on the cover, in the PDF's dates, the ZIP entries' times).
import { Worker } from 'node:worker_threads';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import type { AttachmentStore } from '../db/attachment-store.ts';
import type { AttachmentType } from '../db/file-types.ts';
import { prepared } from '../db/database.ts';
import type { DossierData } from '../db/dossier.ts';
import type { DossierJob } from '../db/dossier-worker.ts';
import { common, idParam, problem, queryParameters } from './http/operation.ts';
import { inFlightOf } from './http/in-flight.ts';
import { problemOf, problems } from './http/problem.ts';
import { queryOf, type Route } from './http/route.ts';
import { downloadDisposition, DOWNLOAD_HEADERS, inStore } from './attachments.ts';
import { inDatabase, pathId } from './resource.ts';

/** The most a dossier gathers of its files, in bytes: it is assembled in memory. */
export const DOSSIER_MAX_FILE_BYTES = 256 * 1024 * 1024;

/** A dossier's worker: its heap (the files' bytes are outside it), and how long it may take. */
export const DOSSIER_WORKER = { heapMb: 1024, timeoutMs: 120_000 };

const WORKER = new URL('../db/dossier-worker.ts', import.meta.url);

/** The dossiers of this instance, built one after the other. */
let queue: Promise<unknown> = Promise.resolve();

/** Runs `work` when the dossiers before it are done: one dossier at a time on an instance. */
function inTurn<T>(work: () => Promise<T>): Promise<T> {
  const turn = queue.then(work, work);
  queue = turn.catch(() => {});
  return turn;
}

/**
 * Lays out one dossier in a worker thread: its bytes; 422 /problems/dossier-too-large when the
 * worker runs out of memory, 503 /problems/timeout when it takes longer than
 * DOSSIER_WORKER.timeoutMs (the worker is stopped either way).
 */
function buildInWorker(job: DossierJob): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const transfer = [...new Set(job.data.attachments.map((a) => a.bytes.buffer))];
    const worker = new Worker(WORKER, {
      workerData: job,
      transferList: transfer as ArrayBuffer[],
      resourceLimits: { maxOldGenerationSizeMb: DOSSIER_WORKER.heapMb },
    });
    const timer = setTimeout(() => {
      reject(
        problemOf('timeout', {
          detail: `The dossier took longer than ${DOSSIER_WORKER.timeoutMs / 1000} s to lay out.`,
        }),
      );
      void worker.terminate();
    }, DOSSIER_WORKER.timeoutMs);
    worker.once('message', (body: Uint8Array) => {
      clearTimeout(timer);
      resolve(body);
      void worker.terminate();
    });
    worker.once('error', (error: Error & { code?: string }) => {
      clearTimeout(timer);
      reject(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? problemOf('dossier-too-large', {
              detail:
                'Its files take more memory to lay out than a dossier may: download them one by one (GET /attachments/{id}/content).',
            })
          : error,
      );
    });
    // (A worker that ends without an answer: nothing more will come.)
    worker.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the dossier's worker ended (${code}) without an answer`));
    });
  });
}

/** Dossiers one tenant may have in progress (laid out or waiting their turn) on an instance. */
export const DOSSIERS_PER_TENANT = 1;

const DossierQuery = z.strictObject({
  format: z
    .enum(['pdf', 'zip'])
    .optional()
    .describe(
      'pdf (default): the dossier; zip: the PDF and the original files (as Accept: application/zip asks)',
    ),
});

/** The JSON SQL gives: DossierData, with the files named rather than read. */
type DossierJson = Omit<DossierData, 'attachments' | 'heatTreatmentPresent'> & {
  attachments: Array<{
    id: string;
    fileName: string;
    contentType: AttachmentType;
    sizeBytes: number;
    sha256: string;
    attachedTo: string;
  }>;
};

/** The file name of a package's dossier: its number, in characters every system takes. */
const dossierName = (packageNumber: string, extension: string) =>
  `dossier-${packageNumber.replace(/[^A-Za-z0-9._-]+/g, '_')}.${extension}`;

async function readAll(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  // A copy in memory of its own: it is handed to the worker (a small Buffer shares a pool).
  return new Uint8Array(Buffer.concat(chunks));
}

export function dossierRoutes(pool: pg.Pool, store: AttachmentStore): Route[] {
  return [
    {
      method: 'GET',
      path: '/test-packages/:id/dossier',
      doc: {
        summary: "A released test package's turnover dossier",
        description:
          'One PDF to hand the owner at turnover: a cover, readiness as at release, the ISOs, the weld log ' +
          '(welder, WPS, dates, status, repair cycles, examinations, the welder qualifications in force on the day ' +
          'each weld was made), the NDT lots per method against what was required, PWHT and hardness where ' +
          'recorded, the punch list, and an index of the files attached to the package, its ISOs, welds, ' +
          'examinations, punch items and the WPSs, PQRs and qualifications its welds were made under; the PDF ' +
          'files and images among them are appended. With Accept: application/zip (or format=zip): a ZIP of the ' +
          'PDF and the original files. Reproducible: the same package gives the same bytes but for the generation ' +
          'stamp (files attached later are in a later dossier). Only a package that was released (released, tested ' +
          `or closed). Its files together at most ${DOSSIER_MAX_FILE_BYTES} bytes; one dossier is laid out at a time on an instance. Who: engineers and admins.`,
        parameters: [idParam, ...queryParameters(DossierQuery)],
        responses: {
          '200': {
            description: 'the dossier',
            headers: {
              'Content-Disposition': {
                schema: { type: 'string' },
                description: 'attachment; filename="dossier-<packageNumber>.pdf" (or .zip)',
              },
            },
            content: {
              'application/pdf': { schema: { type: 'string', format: 'binary' } },
              'application/zip': { schema: { type: 'string', format: 'binary' } },
            },
          },
          '403': problem('your role may not (engineers and admins)'),
          '409': problem('the package is open (/problems/state-conflict): release it first'),
          '422': problem(
            `a bad parameter, named in errors; or its files are over ${DOSSIER_MAX_FILE_BYTES} bytes together (/problems/dossier-too-large)`,
          ),
          ...common,
        },
      },
      handler: async (req: Request, res: Response) => {
        const id = pathId(req, 'test package');
        const { format } = queryOf(DossierQuery, req);
        const done = inFlightOf(pool, 'dossiers').take(req.tenant!.id, DOSSIERS_PER_TENANT);
        if (!done) {
          throw problemOf('too-many-dossiers', {
            detail: `This tenant already has ${DOSSIERS_PER_TENANT} dossier in progress here, the most it may; try again when it is done.`,
            headers: { 'Retry-After': '10' },
            extensions: { limit: DOSSIERS_PER_TENANT },
          });
        }
        res.on('close', done);
        try {
          const zip =
            format === 'zip' ||
            (format === undefined &&
              req.accepts(['application/pdf', 'application/zip']) === 'application/zip');
          const dossier = await inDatabase(pool, req, async (db) => {
            const { rows } = await db.query<{ dossier: DossierJson | null }>(
              prepared('select weld_hidden.test_package_dossier($1) as dossier', [id]),
            );
            return rows[0]!.dossier;
          });
          if (!dossier) throw problems.notFound('No such test package.');
          // (Each attachment counted: a file attached to many records is that many entries of
          // the ZIP and that many appended copies.)
          const total = dossier.attachments.reduce((sum, f) => sum + Number(f.sizeBytes), 0);
          if (total > DOSSIER_MAX_FILE_BYTES) {
            throw problemOf('dossier-too-large', {
              detail: `Its ${dossier.attachments.length} files are ${total} bytes together, over the ${DOSSIER_MAX_FILE_BYTES} a dossier gathers: download them one by one (GET /attachments/{id}/content).`,
            });
          }
          const pdfName = dossierName(dossier.package.packageNumber, 'pdf');
          // The files are read in the dossier's turn, not while it waits: a queue of dossiers
          // holds no bytes. A client gone meanwhile is not built for.
          const body = await inTurn(async () => {
            if (res.closed) return undefined;
            const tenantId = req.tenant!.id;
            const read = new Map<string, Uint8Array>();
            const attachments = [];
            for (const file of dossier.attachments) {
              let bytes = read.get(file.sha256);
              if (!bytes) {
                const stream = await inStore(req, 'get', () =>
                  store.get({ tenantId, sha256: file.sha256 }),
                );
                if (!stream) throw new Error(`dossier: the store has no file ${file.sha256}`);
                bytes = await inStore(req, 'read', () => readAll(stream));
                read.set(file.sha256, bytes);
              }
              attachments.push({ ...file, sizeBytes: Number(file.sizeBytes), bytes });
            }
            const data: DossierData = {
              ...dossier,
              heatTreatmentPresent: dossier.welds.some(
                (w) => w.pwht !== null || w.hardness !== null,
              ),
              attachments,
            };
            return buildInWorker({ data, generatedAt: Date.now(), zip, pdfName });
          });
          if (!body) return;
          res.set({
            ...DOWNLOAD_HEADERS,
            Vary: 'Accept',
            'Content-Type': zip ? 'application/zip' : 'application/pdf',
            'Content-Disposition': downloadDisposition(
              zip ? dossierName(dossier.package.packageNumber, 'zip') : pdfName,
            ),
          });
          res.status(200).end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
        } finally {
          done();
        }
      },
    },
  ];
}
