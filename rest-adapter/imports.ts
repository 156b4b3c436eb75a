// The weld register import over HTTP (the work itself: db/weld-register.ts and migration 000013):
// POST /imports/welds, and the records of the imports that wrote (GET /imports, /imports/{id}),
// each route with its contract in its doc. The export is GET /welds as text/csv (welds.ts).
//
// The body is first written to a temporary file, so a slow upload holds no database connection
// and no transaction; the file is read from there into PostgreSQL's COPY, and removed after.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type { Request } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared } from '../db/database.ts';
import { WELD_TYPES } from '../db/vocabulary.ts';
import { firstNonUtf8, lineBreaks } from '../db/csv.ts';
import {
  COMPONENT_COLUMNS,
  importComponents,
  MAX_COMPONENT_BYTES,
  MAX_COMPONENT_ROWS,
} from '../db/component-register.ts';
import { runImport } from '../db/weld-register.ts';
import { components } from './components.ts';
import {
  common,
  content,
  idParam,
  json,
  page,
  problem,
  queryParameters,
  ref,
} from './http/operation.ts';
import { databaseProblem, HttpProblem, problemOf, problems, restNaming } from './http/problem.ts';
import { inFlightOf } from './http/in-flight.ts';
import { queryOf, dataBase, type Route } from './http/route.ts';
import { callerContext } from './http/session.ts';
import { encodeCursor, cursorParam, limitParam, pageOf, sendPage } from './pagination.ts';
import { booleanParam, inDatabase, pathId } from './resource.ts';

/**
 * Imports (dry runs too) one tenant may have in flight on an instance: one writing and one waiting
 * for its turn. Each holds a REST connection while it waits, and the pool is every tenant's: a
 * tenant's twentieth import at once must not park twenty of them behind its own turn.
 */
export const IMPORTS_PER_TENANT = 2;

export interface ImportOptions {
  /** IMPORT_MAX_BYTES: a larger body is refused (413) before anything is imported. */
  maxBytes: number;
}

export const ImportRecord = z
  .object({
    id: z.uuid(),
    kind: z.literal('welds'),
    importedBy: z.uuid().nullable().describe('the user; null for weld-admin import'),
    importedAt: z.iso.datetime(),
    fileSha256: z.string().describe('SHA-256 of the file as uploaded, hex'),
    fileBytes: z.number().int(),
    rows: z.number().int().describe('data rows in the file (blank rows not counted)'),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    isosCreated: z.number().int(),
  })
  .describe(
    "One row per import that wrote: who, when, the file's SHA-256 and size, and what it did.",
  );

const DryRunAnswer = z.object({
  dryRun: z.literal(true),
  rows: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
  isosCreated: z.number().int(),
});

const ImportError = z.object({
  line: z.number().int().describe('the line of the file the row starts on (the header is line 1)'),
  column: z.string().nullable().describe('the column, when one is at fault'),
  value: z.string().nullable().describe('the value given (first 200 characters)'),
  detail: z.string(),
});

const importQuery = z.strictObject({
  dryRun: booleanParam.optional().describe('true: validate and count, write nothing'),
});

const importListQuery = z.strictObject({
  limit: limitParam,
  cursor: cursorParam.optional(),
});

/** The register's columns, as the import reads them. */
const REGISTER_COLUMNS_TEXT =
  'Columns, in any order (unknown ones are refused): isoNumber and weldNumber (required: the key ' +
  'welds are upserted by), lineNumber (required when the ISO is new: it is created; an existing ' +
  `ISO's line is never changed), type (${WELD_TYPES.join(', ')}), size (NPS, inches), schedule, ` +
  'wallThickness (inches), material, welderStamp, wpsNumber and wpsRevision (the revision may be ' +
  'left out when the WPS has one), weldedOn (YYYY-MM-DD, 1900-01-01 to 2200-12-31, not after an ' +
  'examination of the weld), baseMetal1PNumber and baseMetal2PNumber (ASME IX P-numbers: 1, 5A, ' +
  '8). status and repairCycle, which the export adds, are accepted and ignored: the lifecycle owns ' +
  'them. version, which it adds too, is checked: a weld the file changes must still be at that ' +
  'version (else an error on its line: it changed since the export); an empty cell skips the check. ' +
  'A column the file lacks ' +
  "leaves existing welds' values as they are; an empty cell clears an optional value. Type and size " +
  'are required for a new weld. Values are trimmed; type, schedule and P-numbers are case-insensitive.';

/** A refused file (its errors by line), or another problem. */
const importProblem = (description: string) => ({
  description,
  content: {
    'application/problem+json': {
      schema: { anyOf: [ref('ImportInvalidProblem'), ref('Problem')] },
    },
  },
});

/** How many imports a tenant has in flight on the service of `pool` (for tests and metrics). */
export function importsInFlightOf(pool: pg.Pool, tenantId: string): number {
  return inFlightOf(pool, 'imports').count(tenantId);
}

/** 422 /problems/import-invalid: the file's errors by line, the first of them and their count. */
function fileInvalid(outcome: { errors: unknown[]; errorCount: number }): Error {
  return problemOf('import-invalid', {
    detail:
      `${outcome.errorCount} error${outcome.errorCount === 1 ? '' : 's'} in the file; ` +
      'nothing was imported. Correct the lines named and upload the file again.',
    extensions: { errors: outcome.errors, errorCount: outcome.errorCount },
  });
}

export function importRoutes(pool: pg.Pool, options: ImportOptions): Route[] {
  const { maxBytes } = options;
  const inFlight = inFlightOf(pool, 'imports');
  /** A place among the tenant's imports in progress (welds and components), or 429. */
  const importSlot = (req: Request) => {
    const done = inFlight.take(req.tenant!.id, IMPORTS_PER_TENANT);
    if (!done) {
      throw problemOf('too-many-imports', {
        detail:
          `This tenant already has ${IMPORTS_PER_TENANT} imports in progress, the most ` +
          'allowed at once; send this one when one of them has answered.',
        extensions: { limit: IMPORTS_PER_TENANT },
        headers: { 'Retry-After': '5' },
      });
    }
    return done;
  };
  return [
    {
      method: 'POST',
      path: `/imports/welds`,
      doc: {
        summary: 'Import a weld register (CSV): all rows or none',
        description:
          'Who: engineer and up. The body is the CSV file itself (Content-Type: text/csv, UTF-8 with or ' +
          'without a BOM; comma or semicolon, detected from the header; RFC 4180 quoting, so a field may ' +
          'hold the delimiter, quotes and line breaks; in a semicolon file numbers may use a decimal comma). ' +
          `${REGISTER_COLUMNS_TEXT} Blank rows are skipped.\n\n` +
          'Every row is checked before anything is written: a bad value, an unknown welder stamp or WPS, ' +
          'the same weld twice in the file, a weld of a test package that is not open, and, where the ' +
          'tenant refuses welds failing the code checks, those failures. Any error and nothing is written: ' +
          '422 /problems/import-invalid names each by line. Otherwise ISOs are created, welds created and ' +
          'updated in one transaction, each changed weld is one event (weld.created, weld.updated; ' +
          'iso.created per new ISO), and the import is recorded (GET /imports). A weld the file gives as ' +
          'it is counts as unchanged and is not written. dryRun=true checks and counts and writes nothing. ' +
          'The body may be up to IMPORT_MAX_BYTES (default 50 MB).\n\n' +
          'No lost update: imports of a tenant take turns from their check to their commit, and the ' +
          'write changes only welds still at the version it checked; one changed in between (a PATCH ' +
          'meanwhile) is 409 /problems/import-conflict naming its line, and nothing is written.',
        parameters: queryParameters(importQuery),
        requestBody: {
          required: true,
          content: {
            'text/csv': {
              schema: { type: 'string' },
              example:
                'isoNumber,lineNumber,weldNumber,type,size,schedule,wallThickness,material,welderStamp,wpsNumber,wpsRevision,weldedOn\n' +
                'ISO-100-01,6"-P-100-A1,W001,BW,6,40,0.28,A106-B,W004,WPS-201,0,2026-03-02\n',
            },
          },
        },
        responses: {
          '201': {
            description: 'imported; the record of the import',
            headers: { Location: { schema: { type: 'string' }, description: 'GET it here' } },
            ...content('Import'),
          },
          '200': {
            description: 'dryRun=true: what the import would do',
            ...content('ImportDryRun'),
          },
          '403': problem('below engineer (/problems/role-not-allowed), or the CSRF check failed'),
          '409': importProblem(
            'welds of the file changed between its check and its write (/problems/import-conflict, naming their lines), or another request changed the same ISOs or packages meanwhile (/problems/conflict, /problems/concurrent-change, /problems/state-conflict); nothing was written',
          ),
          '413': problem('the file is larger than IMPORT_MAX_BYTES'),
          '415': problem('the body is not text/csv in UTF-8'),
          '429': problem(
            `/problems/too-many-imports: the tenant already has ${IMPORTS_PER_TENANT} imports (dry runs too) in progress on this instance; Retry-After`,
          ),
          '422': importProblem(
            'the file has errors (/problems/import-invalid, naming each line), or a bad parameter (/problems/validation-failed)',
          ),
          ...common,
        },
        schemas: {
          Import: json(ImportRecord),
          ImportDryRun: json(DryRunAnswer),
          ImportInvalidProblem: {
            allOf: [
              ref('Problem'),
              {
                type: 'object',
                properties: {
                  errors: { type: 'array', items: json(ImportError) },
                  errorCount: { type: 'integer' },
                },
                required: ['errors', 'errorCount'],
              },
            ],
          },
        },
      },
      handler: async (req, res) => {
        const params = queryOf(importQuery, req);
        requireCsv(req);
        // Who may import is the database's to say (WD003 below engineer): asked before the
        // upload, so a refused caller does not send 50 MB first.
        await inDatabase(pool, req, (db) => db.query('select weld_hidden.begin_weld_import()'));
        const done = importSlot(req);
        const dryRun = params.dryRun ?? false;
        let file: Awaited<ReturnType<typeof spool>> | undefined;
        try {
          file = await spool(req, maxBytes);
          const outcome = await runImport(pool, callerContext(req), createReadStream(file.path), {
            dryRun,
          }).catch(async (error: unknown) => {
            throw databaseProblem(error, await restNaming(pool)) ?? error;
          });
          if (!outcome.ok && outcome.conflict) {
            throw problemOf('import-conflict', {
              detail:
                `${outcome.errorCount} weld${outcome.errorCount === 1 ? '' : 's'} of the file changed ` +
                'between the check and the write; nothing was imported. Upload the file again.',
              extensions: { errors: outcome.errors, errorCount: outcome.errorCount },
            });
          }
          if (!outcome.ok) {
            throw fileInvalid(outcome);
          }
          res.setHeader('Cache-Control', 'no-store');
          if (outcome.dryRun) {
            res.status(200).json({ dryRun: true, ...outcome.counts });
          } else {
            res.setHeader('Location', `${dataBase(req)}/imports/${outcome.record.id}`);
            res.status(201).json(outcome.record);
          }
        } finally {
          await file?.remove();
          done();
        }
      },
    },
    {
      method: 'POST',
      path: `/imports/components`,
      doc: {
        summary: 'Import a component register (CSV): all rows or none',
        description:
          'Who: engineer and up. The body is the CSV file (Content-Type: text/csv, UTF-8 with or without a ' +
          'BOM; comma or semicolon; RFC 4180 quoting), as GET /components with Accept: text/csv writes it. ' +
          `Columns, in any order (unknown ones are refused): ${COMPONENT_COLUMNS.join(', ')}. tag is ` +
          'required: components are upserted by it; kind and materialSpec are required for a new one. A ' +
          "column the file lacks leaves existing components' values as they are; an empty cell clears an " +
          'optional value. Values are trimmed. Every row is checked before anything is written (each value ' +
          'as POST /components checks it, a tag twice in the file); any error and nothing is written: 422 ' +
          '/problems/import-invalid names each by line and column. Otherwise the components are created and ' +
          'updated in one transaction, each one changed is one event (component.created, component.updated), ' +
          'and a weld naming a component whose pNumber changed takes the new one (refused, and nothing ' +
          'written, for a weld of a test package that is not open). A row the file gives as it is counts as ' +
          'unchanged and is not written. dryRun=true checks and counts and writes nothing. Two imports of ' +
          'the same new tag at once: one is 409 /problems/conflict. A file holds at most ' +
          `${MAX_COMPONENT_ROWS} rows and ${MAX_COMPONENT_BYTES} bytes (or IMPORT_MAX_BYTES, if smaller); a tenant has ` +
          `at most ${IMPORTS_PER_TENANT} imports in progress on an instance, of welds and components together.`,
        parameters: queryParameters(importQuery),
        requestBody: {
          required: true,
          content: {
            'text/csv': {
              schema: { type: 'string' },
              example:
                'tag,kind,materialSpec,grade,pNumber,size,schedule,heatNumber,mtrRef\n' +
                'P-100-1,pipe,A106,B,1,6,40,H-4471,MTR-2231\n',
            },
          },
        },
        responses: {
          '200': {
            description: 'imported (or, with dryRun=true, what the import would do)',
            ...content('ComponentImport'),
          },
          '403': problem('below engineer (/problems/role-not-allowed), or the CSRF check failed'),
          '409': problem(
            'a weld naming a component of the file is in a test package that is not open (/problems/state-conflict), or another request changed the same rows meanwhile; nothing was written',
          ),
          '413': problem(
            `the file is larger than ${MAX_COMPONENT_BYTES} bytes (or IMPORT_MAX_BYTES)`,
          ),
          '415': problem('the body is not text/csv in UTF-8'),
          '422': importProblem(
            'the file has errors (/problems/import-invalid, naming each line), or a bad parameter (/problems/validation-failed)',
          ),
          '429': problem(
            `/problems/too-many-imports: the tenant already has ${IMPORTS_PER_TENANT} imports in progress on this instance; Retry-After`,
          ),
          ...common,
        },
        schemas: {
          ComponentImport: json(
            z.object({
              dryRun: z.boolean(),
              rows: z.number().int().describe('data rows in the file (blank rows not counted)'),
              created: z.number().int(),
              updated: z.number().int(),
              unchanged: z.number().int(),
            }),
          ),
        },
      },
      handler: async (req, res) => {
        const { dryRun = false } = queryOf(importQuery, req);
        requireCsv(req);
        // Who may is the database's to say: asked before the upload is read.
        const allowed = await inDatabase(pool, req, async (db) => {
          const { rows } = await db.query<{ ok: boolean }>(
            "select has_any_column_privilege('weld_public.components', 'INSERT') as ok",
          );
          return rows[0]!.ok;
        });
        if (!allowed) {
          throw problemOf('role-not-allowed', {
            detail: 'Importing components needs the engineer role or above.',
          });
        }
        const done = importSlot(req);
        let outcome;
        try {
          const text = await readUtf8(req, Math.min(maxBytes, MAX_COMPONENT_BYTES));
          outcome = await inDatabase(pool, req, (db) =>
            importComponents(db, text, components.createBody!, { dryRun }),
          );
        } finally {
          done();
        }
        if (!outcome.ok) {
          throw fileInvalid(outcome);
        }
        res.setHeader('Cache-Control', 'no-store');
        res.status(200).json({ dryRun, ...outcome.counts });
      },
    },
    {
      method: 'GET',
      path: `/imports`,
      doc: {
        summary: 'The imports that wrote, newest first',
        description: 'Who: every role. Dry runs and refused files leave no record.',
        parameters: queryParameters(importListQuery),
        responses: {
          '200': { ...page, ...content('ImportPage') },
          '422': problem('a bad parameter, named in errors'),
          ...common,
        },
        schemas: { ImportPage: json(pageOf(ImportRecord)) },
      },
      handler: async (req, res) => {
        const { limit, cursor } = queryOf(importListQuery, req);
        const { rows } = await inDatabase(pool, req, (db) =>
          db.query<{ id: string; item: object }>(
            prepared(
              `select r.id, weld_hidden.import_json(r) as item
                 from weld_hidden.imports r
                where $1::uuid is null
                   or (r.imported_at, r.id) < (select c.imported_at, c.id
                                                 from weld_hidden.imports c where c.id = $1)
                order by r.imported_at desc, r.id desc
                limit $2`,
              [cursor ?? null, limit + 1],
            ),
          ),
        );
        sendPage(
          req,
          res,
          rows.map((row) => ({ ...row.item, id: row.id })),
          limit,
          (row) => encodeCursor(row.id),
        );
      },
    },
    {
      method: 'GET',
      path: `/imports/:id`,
      doc: {
        summary: 'One import',
        parameters: [idParam],
        responses: { '200': { description: 'the import', ...content('Import') }, ...common },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'import');
        const { rows } = await inDatabase(pool, req, (db) =>
          db.query<{ item: object }>(
            prepared(
              'select weld_hidden.import_json(r) as item from weld_hidden.imports r where r.id = $1',
              [id],
            ),
          ),
        );
        if (!rows[0]) throw problems.notFound('No such import.');
        res.setHeader('Cache-Control', 'private, no-cache');
        res.json(rows[0].item);
      },
    },
  ];
}

/** 415 unless the body is CSV in UTF-8 (the charset may be left out: UTF-8 is assumed). */
function requireCsv(req: Request): void {
  const type = req.get('content-type') ?? '';
  const charset = /;\s*charset="?([^";\s]+)/i.exec(type)?.[1]?.toLowerCase();
  if (!req.is('text/csv') || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new HttpProblem(415, {
      detail: `The body must be text/csv in UTF-8, not ${type || 'untyped'}.`,
    });
  }
}

/** The request body as text; 413 past maxBytes, 422 naming the line where it is not UTF-8. */
async function readUtf8(req: Request, maxBytes: number): Promise<string> {
  const tooLarge = () =>
    new HttpProblem(413, {
      detail: `The file is larger than ${maxBytes} bytes (IMPORT_MAX_BYTES).`,
      headers: { Connection: 'close' },
    });
  if (Number(req.get('content-length') ?? 0) > maxBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    // As the weld register says it: the line of the first byte that is not UTF-8.
    const at = firstNonUtf8(body);
    const line = 1 + lineBreaks(body, at < 0 ? body.length : at);
    const detail = 'is not UTF-8 text: save the file as CSV UTF-8';
    throw fileInvalid({ errors: [{ line, column: null, value: null, detail }], errorCount: 1 });
  }
}

/** Writes the request body to a temporary file; 413 past maxBytes. */
async function spool(
  req: Request,
  maxBytes: number,
): Promise<{ path: string; remove: () => Promise<void> }> {
  const tooLarge = () =>
    new HttpProblem(413, {
      detail: `The file is larger than ${maxBytes} bytes (IMPORT_MAX_BYTES).`,
      headers: { Connection: 'close' },
    });
  if (Number(req.get('content-length') ?? 0) > maxBytes) throw tooLarge();
  const dir = await mkdtemp(path.join(tmpdir(), 'weld-import-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  const file = path.join(dir, 'body.csv');
  try {
    const out = createWriteStream(file, { mode: 0o600 });
    let bytes = 0;
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > maxBytes) throw tooLarge();
        if (!out.write(chunk)) await once(out, 'drain');
      }
    } finally {
      out.end();
      await finished(out);
    }
    return { path: file, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}
