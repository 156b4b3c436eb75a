// Idempotency-Key on the generic REST resources over real HTTP (each resource's replay is in its
// flow, resources-flow.test.ts; the rest is the same code).
//
// Every response is also checked against the OpenAPI document (helpers/http.ts).
import test from 'ava';
import { isos } from '../../rest-adapter/isos.ts';
import { welderQualifications } from '../../rest-adapter/welder-qualifications.ts';
import { welders } from '../../rest-adapter/welders.ts';
import {
  type World,
  world,
  problem,
  create,
  countRows,
  caseOf,
} from '../helpers/resource-cases.ts';

// ------------------------------------------------------------------------------------------------
// Idempotency-Key (each resource's replay is in its flow above; the rest is the same code)

const isoBody = (w: World, n: number) => caseOf(isos).body(w.dA, n);
const ISOS = 'weld_public.isos';
const withKey = (key: string) => ({ 'idempotency-key': key });

test('Idempotency-Key reused for another request: 422 idempotency-key-reused, nothing written', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const first = await eng.post('/isos', isoBody(w, 0), withKey('reused'));
  t.is(first.status, 201);
  const rows = await countRows(w, ISOS);
  for (const [path, body] of [
    ['/isos', isoBody(w, 1)], // another body
    ['/api/isos', isoBody(w, 1)],
    ['/welders', caseOf(welders).body(w.dA, 0)], // another resource
  ] as const) {
    const res = await eng.post(path, body, withKey('reused'));
    problem(t, res, 422, '/problems/idempotency-key-reused', path);
    t.deepEqual(
      res.json.errors.map((e: { parameter: string }) => e.parameter),
      ['Idempotency-Key'],
    );
  }
  t.is(await countRows(w, ISOS), rows);
  t.is(await countRows(w, 'weld_public.welders', "stamp = 'S-0'"), 0);
  // The first request itself still replays.
  const again = await eng.post('/isos', isoBody(w, 0), withKey('reused'));
  t.is(again.headers['idempotent-replayed'], 'true');
  t.deepEqual(again.json, first.json);
});

test('Idempotency-Key belongs to the user and the tenant: the same key elsewhere is independent', async (t) => {
  const w = await world(t);
  const mine = await w.a.engineer.post('/isos', isoBody(w, 0), withKey('shared'));
  // ISOs have a natural key, so the other users send other bodies.
  const admins = await w.a.admin.post('/isos', isoBody(w, 1), withKey('shared'));
  t.is(admins.status, 201, admins.text);
  t.is(admins.headers['idempotent-replayed'], undefined);
  t.not(admins.json.id, mine.json.id);
  const tenantB = await w.b.post('/isos', caseOf(isos).body(w.dB, 0), withKey('shared'));
  t.is(tenantB.status, 201, tenantB.text);
  t.is(tenantB.headers['idempotent-replayed'], undefined);
  t.is(await countRows(w, ISOS, "iso_number in ('ISO-0', 'ISO-1')"), 2);

  // Without a natural key the very same body makes a row per user, and replays per user.
  const table = 'weld_public.welder_qualifications';
  const body = caseOf(welderQualifications).body(w.dA, 0);
  const path = '/welder-qualifications';
  const q1 = await w.a.engineer.post(path, body, withKey('same'));
  const q2 = await w.a.admin.post(path, body, withKey('same'));
  t.is(q1.status, 201);
  t.is(q2.status, 201);
  t.not(q2.json.id, q1.json.id, "the admin's own qualification, not the engineer's answer");
  t.is(q2.headers['idempotent-replayed'], undefined);
  const q3 = await w.a.engineer.post(path, body, withKey('same'));
  t.is(q3.json.id, q1.json.id);
  t.is(q3.headers['idempotent-replayed'], 'true');
  t.is(await countRows(w, table), 2);
});

test('Idempotency-Key of a refused request is not used up: the corrected request succeeds with it', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  await create(eng, '/isos', isoBody(w, 0));
  const clash = await eng.post('/isos', isoBody(w, 0), withKey('retry'));
  problem(t, clash, 409, '/problems/conflict', 'the duplicate');
  const fixed = await eng.post('/isos', isoBody(w, 1), withKey('retry'));
  t.is(fixed.status, 201, fixed.text);
  t.is(fixed.headers['idempotent-replayed'], undefined);
  const again = await eng.post('/isos', isoBody(w, 1), withKey('retry'));
  t.is(again.status, 201);
  t.is(again.headers['idempotent-replayed'], 'true');
  t.deepEqual(again.json, fixed.json);
  t.is(await countRows(w, ISOS, "iso_number = 'ISO-1'"), 1);
});

test('Idempotency-Key: 1 to 255 visible ASCII characters, else 422 and nothing written', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const rows = await countRows(w, ISOS);
  for (const key of ['k'.repeat(256), 'two words', '']) {
    const res = await eng.post('/isos', isoBody(w, 0), withKey(key));
    problem(t, res, 422, '/problems/validation-failed', `key of ${key.length}`);
    t.deepEqual(
      res.json.errors.map((e: { parameter: string }) => e.parameter),
      ['Idempotency-Key'],
    );
  }
  t.is(await countRows(w, ISOS), rows, 'nothing written');
  const longest = 'k'.repeat(255);
  const first = await eng.post('/isos', isoBody(w, 0), withKey(longest));
  t.is(first.status, 201, first.text);
  const again = await eng.post('/isos', isoBody(w, 0), withKey(longest));
  t.is(again.headers['idempotent-replayed'], 'true');
  t.is(await countRows(w, ISOS), rows + 1);
});

test('Idempotency-Key: two concurrent POSTs with one key make one row and get one answer', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const rows = await countRows(w, 'weld_public.welder_qualifications');
  // A few rounds, so the race is run, not just the sequential case.
  for (let round = 0; round < 4; round++) {
    const body = caseOf(welderQualifications).body(w.dA, round);
    const send = () => eng.post('/welder-qualifications', body, withKey(`race-${round}`));
    const [x, y] = await Promise.all([send(), send()]);
    t.is(x.status, 201, x.text);
    t.is(y.status, 201, y.text);
    t.deepEqual(y.json, x.json, 'the same item');
    t.is(y.headers.location, x.headers.location);
    t.is(y.headers.etag, x.headers.etag);
    t.is(
      [x, y].filter((r) => r.headers['idempotent-replayed'] === 'true').length,
      1,
      'one wrote, the other replayed',
    );
  }
  t.is(await countRows(w, 'weld_public.welder_qualifications'), rows + 4);
});
