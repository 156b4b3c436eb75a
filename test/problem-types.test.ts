// The problem registry (rest-adapter/http/problem-types.ts) is the one list of problem types: the
// tables of docs/api.md and of the OpenAPI document are rendered from it, the SQL raises exactly
// the service's SQLSTATEs it lists, each SQLSTATE is answered with a type that lists it, and no
// code outside it spells a type by hand.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import * as prettier from 'prettier';
import { MAX_IMPORT_ERRORS } from '../db/weld-register.ts';
import { databaseProblem } from '../rest-adapter/http/problem.ts';
import {
  PROBLEM_TYPES,
  problemTable,
  problemType,
  RULE_SQLSTATES,
  type ProblemLimits,
  type ProblemSlug,
  type ProblemTypeEntry,
} from '../rest-adapter/http/problem-types.ts';
import { UPLOADS_PER_TENANT } from '../rest-adapter/attachments.ts';
import { IMPORTS_PER_TENANT } from '../rest-adapter/imports.ts';
import { REPORTS_PER_TENANT, REPORTS_PER_USER } from '../rest-adapter/reports.ts';
import { serviceDocument } from './helpers/service-document.ts';
import { MAX_WEBHOOK_TESTS_PER_TENANT, MAX_WEBHOOKS_PER_TENANT } from '../rest-adapter/webhooks.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const LIMITS: ProblemLimits = {
  importsPerTenant: IMPORTS_PER_TENANT,
  reportsPerTenant: REPORTS_PER_TENANT,
  reportsPerUser: REPORTS_PER_USER,
  importErrors: MAX_IMPORT_ERRORS,
  webhooksPerTenant: MAX_WEBHOOKS_PER_TENANT,
  webhookTestsPerTenant: MAX_WEBHOOK_TESTS_PER_TENANT,
  uploadsPerTenant: UPLOADS_PER_TENANT,
};
const entries = Object.entries(PROBLEM_TYPES) as [ProblemSlug, ProblemTypeEntry][];

/** Every file under `dir` (relative to ROOT) whose name ends with `ext`. */
function filesUnder(dir: string, ext: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(ext))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

test("docs/api.md's problem table is the registry's", async (t) => {
  const docs = read('docs/api.md');
  const lines = docs.split('\n');
  const errors = lines.indexOf('## Errors');
  t.true(errors >= 0, 'docs/api.md has an "## Errors" section');
  const first = lines.findIndex((line, i) => i > errors && line.startsWith('| type '));
  t.true(first > errors, 'with a table whose first column is "type"');
  const end = lines.findIndex((line, i) => i > first && !line.startsWith('|'));
  const table = lines.slice(first, end).join('\n');

  const options = await prettier.resolveConfig(path.join(ROOT, 'docs/api.md'));
  const expected = (
    await prettier.format(problemTable('docs', LIMITS), { ...options, parser: 'markdown' })
  ).trimEnd();
  t.is(
    table,
    expected,
    `docs/api.md's problem table differs from rest-adapter/http/problem-types.ts; paste this in its place:\n\n${expected}\n`,
  );
});

test("the OpenAPI document's problem table is the registry's", (t) => {
  const { description } = serviceDocument().components.schemas.Problem as { description: string };
  const table = description.slice(description.indexOf('\n| type |') + 1);
  t.is(table, problemTable('openapi', LIMITS));
  // Every /problems/ type, and only those, is a row.
  const rows = [...table.matchAll(/^\| (\/problems\/[a-z-]+) \| (\d{3}) \|/gm)];
  t.deepEqual(
    rows.map((m) => `${m[1]} ${m[2]}`),
    entries.filter(([, e]) => !e.blank).map(([slug, e]) => `/problems/${slug} ${e.status}`),
  );
});

test("the SQL raises exactly the service's SQLSTATEs the registry lists, each for one type", (t) => {
  const raised = new Map<string, string[]>();
  const sqlFiles = filesUnder('migrations', '.sql');
  t.true(sqlFiles.length > 10, `${sqlFiles.length} SQL files read`);
  for (const file of sqlFiles) {
    for (const [, code] of read(file).matchAll(/errcode\s*=\s*'(WD\d{3})'/gi)) {
      raised.set(code!, [...(raised.get(code!) ?? []), file]);
    }
  }
  t.true(raised.size >= 10, `${raised.size} WD SQLSTATEs found`);

  const listed = entries.flatMap(([slug, e]) =>
    (e.sqlstates ?? []).filter((code) => code.startsWith('WD')).map((code) => `${code} ${slug}`),
  );
  const codes = listed.map((row) => row.split(' ')[0]!);
  t.deepEqual(
    codes.filter((code, i) => codes.indexOf(code) !== i),
    [],
    'a WD SQLSTATE stands for one type',
  );
  t.deepEqual(
    [...raised.keys()]
      .filter((code) => !codes.includes(code))
      .map((c) => `${c} (${raised.get(c)!.join(', ')})`),
    [],
    'raised by SQL, missing from the registry',
  );
  t.deepEqual(
    codes.filter((code) => !raised.has(code)),
    [],
    'in the registry, raised by no SQL',
  );
  t.is(RULE_SQLSTATES.size, codes.length);
});

test('each SQLSTATE of the registry is answered with a type that lists it', (t) => {
  // A message that makes the standard builders take each of their ways
  const messages: Record<string, string[]> = {
    '23503': [
      'insert or update on table "welds" violates foreign key constraint "welds_iso_fkey"',
      'update or delete on table "isos" violates foreign key constraint "welds_iso_fkey" on table "welds"',
    ],
    '23001': [
      'update or delete on table "pqrs" violates RESTRICT setting of foreign key constraint "wps_pqr_fkey" on table "wps"',
    ],
  };
  const codes = [...new Set(entries.flatMap(([, e]) => e.sqlstates ?? []))];
  t.true(codes.length > 25, `${codes.length} SQLSTATEs`);
  for (const code of codes) {
    const listing = entries
      .filter(([, e]) => e.sqlstates?.includes(code))
      .map(([slug]) => problemType(slug));
    const answered = (messages[code] ?? ['weld 1 not found']).map(
      (message) => databaseProblem({ code, message, detail: '{}' })?.type,
    );
    t.deepEqual([...new Set(answered)].sort(), [...new Set(listing)].sort(), code);
  }
});

test('no code outside the registry spells a problem type', (t) => {
  // A string that is a type, such as '/problems/conflict' (descriptions may name types in their
  // prose). openapi.ts's problem schemas still spell theirs in their `if` conditions.
  const PENDING = new Set(['rest-adapter/openapi.ts']);
  const spelled = ['server', 'rest-adapter', 'db']
    .flatMap((dir) => filesUnder(dir, '.ts'))
    .filter((file) => file !== 'rest-adapter/http/problem-types.ts' && !PENDING.has(file))
    .flatMap((file) =>
      [...read(file).matchAll(/(['"`])\/problems\/[a-z][a-z-]*\1/g)].map((m) => `${file}: ${m[0]}`),
    );
  t.deepEqual(spelled, []);
});
