// Refusals in plain words (issue F18): no library's default message reaches a client. A field
// named once with what is wrong with it ("weldNumber must be text"), a parameter by its name, a
// nested field as a person reads it; every resource's create body refused field by field without
// zod's jargon; and GET / as a small index of where to go.
import test from 'ava';
import { request } from '../helpers/http.ts';
import { ok, world } from '../helpers/rules-http.ts';
import { RESOURCES } from '../../rest-adapter/resources.ts';

/** zod's own words, which must never reach a client. */
const JARGON =
  /Invalid (input|option|UUID|ISO|string|number)|expected (string|number|one of)|received|Too (small|big)/;

test('a refused body names each field once, in plain words', async (t) => {
  const w = await world(t);
  const iso = await w.make.iso('ISO-1', 'L-1');
  const refused = ok(
    await w.a.engineer.post('/welds', {
      isoId: 'nope',
      weldNumber: 5,
      type: 'XX',
      size: -1,
      weldedOn: '2026-13-01',
      wallThickness: 'thick',
      colour: 'red',
    }),
    422,
  );
  t.deepEqual(refused.errors, [
    { pointer: '/isoId', detail: 'must be a UUID' },
    { pointer: '/weldNumber', detail: 'must be text' },
    { pointer: '/type', detail: 'must be one of BW, SW, FW, BR, TW, MW, LW' },
    // size -1 breaks two bounds (>= 0 and > 0): the tighter one is said, once
    { pointer: '/size', detail: 'must be greater than 0' },
    { pointer: '/wallThickness', detail: 'must be a number' },
    { pointer: '/weldedOn', detail: 'must be a date, YYYY-MM-DD' },
    { pointer: '/colour', detail: 'is not a field of this object' },
  ]);
  t.is(
    refused.detail,
    'isoId must be a UUID; weldNumber must be text; type must be one of BW, SW, FW, BR, TW, MW, LW; ' +
      'size must be greater than 0; wallThickness must be a number; weldedOn must be a date, YYYY-MM-DD; ' +
      'colour is not a field of this object',
  );
  // A missing field, a null where none is taken, an empty text, one too long.
  const missing = ok(
    await w.a.engineer.post('/welds', { isoId: iso.id, weldNumber: '', type: null }),
    422,
  );
  t.deepEqual(missing.errors, [
    { pointer: '/weldNumber', detail: 'must not be empty' },
    { pointer: '/type', detail: 'must be one of BW, SW, FW, BR, TW, MW, LW' },
    { pointer: '/size', detail: 'is required' },
  ]);
  const long = ok(
    await w.a.engineer.patch(`/isos/${iso.id}`, { lineNumber: 'x'.repeat(1000) }),
    422,
  );
  t.is(long.errors.length, 1);
  t.is(long.errors[0].pointer, '/lineNumber');
  t.regex(long.errors[0].detail, /^must be at most \d+ characters$/);
  // A nested field is named as a person reads it.
  const nested = ok(
    await w.a.engineer.post('/test-packages', {
      packageNumber: 'TP-1',
      testMedium: 'hydro',
      weldIds: ['x'],
    }),
    422,
  );
  t.is(nested.detail, 'weldIds[0] must be a UUID');
  t.deepEqual(nested.errors, [{ pointer: '/weldIds/0', detail: 'must be a UUID' }]);
  // A rule's own sentence from SQL keeps its words after the field's name.
  t.notRegex(JSON.stringify([refused, missing, long, nested]), JARGON);
});

test('a refused parameter is named whole, once, in plain words', async (t) => {
  const w = await world(t);
  const refused = ok(await w.a.viewer.get('/welds?status=FOO,BAR&limit=abc&colour=red'), 422);
  t.deepEqual(refused.errors, [
    { parameter: 'limit', detail: 'must be a whole number from 1 to 500' },
    { parameter: 'status', detail: 'must be one of PENDING, ACCEPTED, REJECTED, REPAIR, VOIDED' },
    { parameter: 'colour', detail: 'is not a parameter of this operation' },
  ]);
  t.is(
    refused.detail,
    'limit must be a whole number from 1 to 500; ' +
      'status must be one of PENDING, ACCEPTED, REJECTED, REPAIR, VOIDED; colour is not a parameter of this operation',
  );
});

test("every resource's create body, given the wrong type in every field, is refused field by field without jargon", async (t) => {
  const w = await world(t);
  for (const resource of RESOURCES) {
    if (!resource.createBody) continue;
    const fields = Object.keys(resource.createBody.shape);
    // A value of the wrong kind for every field: an object where text, numbers or lists go.
    const body = Object.fromEntries(fields.map((name) => [name, { wrong: true }]));
    const res = await w.a.admin.post(`/${resource.path}`, body);
    t.is(res.status, 422, `${resource.path}: ${res.text}`);
    const pointers = (res.json.errors as Array<{ pointer: string }>).map((e) => e.pointer);
    t.is(new Set(pointers).size, pointers.length, `${resource.path}: one error per field`);
    t.notRegex(res.text, JARGON, resource.path);
    for (const error of res.json.errors as Array<{ pointer: string; detail: string }>) {
      t.regex(error.detail, /^(must|is|has) /, `${resource.path} ${error.pointer}`);
    }
  }
});

test('GET / is a small JSON index whose links lead somewhere', async (t) => {
  const w = await world(t);
  const index = await request(w.port, { path: '/', host: 'a.test' });
  t.is(index.status, 200);
  t.is(index.json.name, 'Weld Data Service');
  const hrefs = Object.values(index.json.links as Record<string, { href: string }>).map(
    (l) => l.href,
  );
  t.deepEqual(hrefs, ['/app/', '/docs', '/openapi.json', '/graphiql', '/graphql', '/health/live']);
  for (const href of hrefs.filter((h) => h !== '/graphql')) {
    const res = await request(w.port, { path: href, host: 'a.test' });
    t.is(res.status, 200, href);
  }
  // Like every tenant page: an unknown Host is 404.
  t.is((await request(w.port, { path: '/', host: 'nobody.test' })).status, 404);
});
