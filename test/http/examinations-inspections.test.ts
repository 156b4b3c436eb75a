// Inspections over real HTTP (issue F6): they never move welds. Each operation is exercised under
// both '' and '/api'. Every response is also checked against the OpenAPI document
// (helpers/http.ts).
import test from 'ava';
import {
  PREFIXES,
  INSPECTOR_NAME,
  INSPECTION_KEYS,
  world,
  call,
  get,
  statusOf,
  historyOf,
  idsOf,
  problemOf,
  pointers,
  examinationChanges,
  sorted,
} from '../helpers/examinations-http.ts';

//------------------------------------------------------------------------------------------------
// Inspections

for (const prefix of PREFIXES) {
  const at = (path: string) => `${prefix}${path}`;

  test(`${at('/inspections')}: create, read, correct with a reason; never moves a weld`, async (t) => {
    const w = await world(t);
    const [w1, w2, w3] = [await w.weld(), await w.weld(), await w.weld('ACCEPTED')];
    const body = {
      kind: 'visual',
      inspectedOn: '2026-04-01',
      result: 'rejected',
      notes: 'undercut at 3 o’clock',
      weldIds: [w2, w1],
    };
    problemOf(
      t,
      await call(w, 'POST', at('/inspections'), 'viewer', body),
      403,
      '/problems/role-not-allowed',
    );
    problemOf(
      t,
      await call(w, 'POST', at('/inspections'), 'inspector', {
        ...body,
        recordedBy: w.userIds.admin,
      }),
      422,
    );
    t.deepEqual(idsOf(await get(w, at('/inspections'))), [], 'the refusals wrote nothing');

    const created = await call(w, 'POST', at('/inspections'), 'inspector', body);
    t.is(created.status, 201, created.text);
    const id = created.json.id as string;
    t.is(created.headers.location, at(`/inspections/${id}`));
    t.is(created.headers.etag, `"${created.json.version}"`);
    const read = await get(w, at(`/inspections/${id}`));
    t.is(read.status, 200);
    t.deepEqual(read.json, created.json);
    t.deepEqual(Object.keys(read.json).sort(), INSPECTION_KEYS);
    // The inspector's name defaults to the signed-in user's display name, from the users table.
    const { rows } = await w.owner.query<{ display_name: string }>(
      'select display_name from weld_public.users where id = $1',
      [w.userIds.inspector],
    );
    t.is(rows[0]!.display_name, INSPECTOR_NAME);
    t.like(read.json, {
      kind: 'visual',
      inspectorName: INSPECTOR_NAME,
      inspectedOn: '2026-04-01',
      result: 'rejected',
      notes: body.notes,
      recordedBy: w.userIds.inspector,
      weldIds: sorted([w1, w2]),
    });
    // A third-party inspector's name may be given.
    const named = await call(w, 'POST', at('/inspections'), 'engineer', {
      kind: 'fit-up',
      inspectorName: 'Third Party QC',
      inspectedOn: '2026-04-01',
      result: 'accepted',
      weldIds: [w3],
    });
    t.is(named.status, 201, named.text);
    t.is(named.json.inspectorName, 'Third Party QC');
    t.is(named.json.recordedBy, w.userIds.engineer);

    // A rejected inspection does not move welds (and an accepted one neither).
    t.is(await statusOf(w, prefix, w1), 'PENDING');
    t.is(await statusOf(w, prefix, w2), 'PENDING');
    t.is(await statusOf(w, prefix, w3), 'ACCEPTED');
    t.deepEqual(await historyOf(w, prefix, w1), []);

    // Corrections: a reason is required; the weld list is replaced whole.
    const path = at(`/inspections/${id}`);
    const v1 = created.json.version as number;
    const noReason = await call(w, 'PATCH', path, 'inspector', { result: 'accepted' });
    problemOf(t, noReason, 422);
    t.deepEqual(pointers(noReason), ['/reason']);
    problemOf(
      t,
      await call(w, 'PATCH', path, 'viewer', { reason: 'x', result: 'accepted' }),
      403,
      '/problems/role-not-allowed',
    );
    problemOf(
      t,
      await call(w, 'PATCH', path, 'inspector', { reason: 'x' }, { 'if-match': `"${v1 + 7}"` }),
      412,
      '/problems/stale-version',
    );
    const reason = 'W1 was not part of this visual; W3 was';
    const corrected = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason, result: 'accepted', weldIds: [w3, w2] },
      { 'if-match': `"${v1}"` },
    );
    t.is(corrected.status, 200, corrected.text);
    t.like(corrected.json, { result: 'accepted', weldIds: sorted([w2, w3]), version: v1 + 1 });
    t.is(corrected.headers.etag, `"${v1 + 1}"`);
    t.deepEqual((await get(w, path)).json, corrected.json);
    const changes = await examinationChanges(w, id);
    t.true(changes.length > 0);
    t.true(
      changes.every((c) => c.subject === 'inspection' && c.reason === reason),
      JSON.stringify(changes),
    );
    t.is(await statusOf(w, prefix, w2), 'PENDING');
    t.is(await statusOf(w, prefix, w3), 'ACCEPTED');

    // Inspections are never deleted.
    problemOf(t, await call(w, 'DELETE', path, 'admin'), 405);
    t.is((await get(w, path)).status, 200);
  });
}
