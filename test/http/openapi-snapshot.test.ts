// The OpenAPI document held against a snapshot of itself (test/http/openapi.snapshot.json): the
// safety net for reshaping how routes describe themselves (issue F15). A change to the document
// must be meant: review the diff, then rewrite the snapshot with
//   UPDATE_OPENAPI_SNAPSHOT=1 npx node test/run.ts test/http/openapi-snapshot.test.ts
// and say in the commit what changed for clients and why.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { serviceDocument } from '../helpers/service-document.ts';

const SNAPSHOT = path.join(import.meta.dirname, 'openapi.snapshot.json');

/** Objects with their keys sorted (arrays keep their order): a rewrite diffs by content only. */
const sorted = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(sorted)
    : typeof value === 'object' && value !== null
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
        )
      : value;

test('the OpenAPI document is the snapshot, path by path and schema by schema', (t) => {
  const document = JSON.parse(JSON.stringify(serviceDocument())) as {
    paths: Record<string, unknown>;
    components: { schemas: Record<string, unknown> };
  };
  if (process.env.UPDATE_OPENAPI_SNAPSHOT === '1') {
    fs.writeFileSync(SNAPSHOT, `${JSON.stringify(sorted(document), null, 2)}\n`);
  }
  const snapshot = JSON.parse(fs.readFileSync(SNAPSHOT, 'utf8')) as typeof document;
  // Path by path and schema by schema, so a failure names what moved.
  t.deepEqual(Object.keys(document.paths).sort(), Object.keys(snapshot.paths).sort());
  for (const [name, item] of Object.entries(document.paths)) {
    t.deepEqual(item, snapshot.paths[name], `path ${name}`);
  }
  t.deepEqual(
    Object.keys(document.components.schemas).sort(),
    Object.keys(snapshot.components.schemas).sort(),
  );
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    t.deepEqual(schema, snapshot.components.schemas[name], `schema ${name}`);
  }
  t.deepEqual(document, snapshot, 'and the rest: info, servers, tags, security');
});
