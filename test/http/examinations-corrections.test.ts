// Corrections of NDT records over real HTTP (issue F6): they need a reason that lands in the
// examination history, and ETag / If-Match. Each operation is exercised under both '' and '/api'.
// Every response is also checked against the OpenAPI document (helpers/http.ts).
import test from 'ava';
import {
  PREFIXES,
  world,
  call,
  get,
  statusOf,
  historyOf,
  problemOf,
  pointers,
  examinationChanges,
} from '../helpers/examinations-http.ts';

//------------------------------------------------------------------------------------------------
// Corrections

for (const prefix of PREFIXES) {
  const at = (path: string) => `${prefix}${path}`;

  test(`PATCH ${at('/ndt-records/{id}')}: a reason is required, kept, and only changed results move welds`, async (t) => {
    const w = await world(t);
    const [kept, failed] = [await w.weld(), await w.weld()];
    const created = await call(w, 'POST', at('/ndt-records'), 'inspector', {
      method: 'UT',
      reportNumber: 'UT-C1',
      examinedOn: '2026-03-10',
      welds: [
        { weldId: kept, result: 'accepted' },
        { weldId: failed, result: 'accepted' },
      ],
    });
    t.is(created.status, 201, created.text);
    const id = created.json.id as string;
    const v1 = created.json.version as number;
    const path = at(`/ndt-records/${id}`);
    const corrected = [
      { weldId: kept, result: 'accepted' },
      { weldId: failed, result: 'rejected' },
    ];

    // No reason: refused, and nothing changed.
    const noReason = await call(w, 'PATCH', path, 'inspector', { welds: corrected });
    problemOf(t, noReason, 422, '/problems/validation-failed');
    t.deepEqual(pointers(noReason), ['/reason']);
    problemOf(
      t,
      await call(w, 'PATCH', path, 'viewer', { reason: 'x', notes: 'n' }),
      403,
      '/problems/role-not-allowed',
    );
    problemOf(
      t,
      await call(w, 'PATCH', path, 'inspector', { reason: 'x', recordedBy: w.userIds.admin }),
      422,
    );
    // A stale If-Match: refused with the current version.
    const stale = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason: 're-read of the film', welds: corrected },
      { 'if-match': `"${v1 + 1}"` },
    );
    problemOf(t, stale, 412, '/problems/stale-version');
    t.is(stale.json.version, v1);
    const unchanged = await get(w, path);
    t.is(unchanged.json.version, v1);
    t.is(unchanged.headers.etag, `"${v1}"`);
    t.is(await statusOf(w, prefix, failed), 'ACCEPTED');
    t.deepEqual(await examinationChanges(w, id), []);

    // With a reason and the current version: the changed result moves its weld only.
    const reason = 'second reading found lack of fusion';
    const ok = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason, welds: corrected },
      { 'if-match': `"${v1}"` },
    );
    t.is(ok.status, 200, ok.text);
    t.is(ok.json.version, v1 + 1, 'one correction, one version');
    t.is(ok.headers.etag, `"${v1 + 1}"`);
    t.is(ok.json.result, 'rejected');
    t.deepEqual(
      ok.json.welds,
      corrected
        .map((r) => ({ ...r, defectLengthIn: null, acceptanceHeld: null }))
        .sort((x, y) => x.weldId.localeCompare(y.weldId)),
    );
    t.is(await statusOf(w, prefix, failed), 'REJECTED');
    t.is(await statusOf(w, prefix, kept), 'ACCEPTED');
    const failedHistory = await historyOf(w, prefix, failed);
    t.is(failedHistory.length, 2);
    t.like(failedHistory[1], {
      fromStatus: 'ACCEPTED',
      toStatus: 'REJECTED',
      cause: 'ndt',
      ndtRecordId: id,
    });
    t.is((await historyOf(w, prefix, kept)).length, 1, 'an unchanged result is not re-applied');
    const changes = await examinationChanges(w, id);
    t.true(changes.length > 0, 'the correction is in the examination history');
    t.true(
      changes.every((c) => c.subject === 'ndt_record' && c.reason === reason),
      JSON.stringify(changes),
    );

    // The rejected weld is repaired and back to PENDING; a notes-only correction leaves it.
    const engineerRepair = await call(w, 'PATCH', at(`/welds/${failed}/status`), 'engineer', {
      status: 'REPAIR',
    });
    t.is(engineerRepair.status, 200, engineerRepair.text);
    const rewelded = await call(w, 'PATCH', at(`/welds/${failed}/status`), 'inspector', {
      status: 'PENDING',
    });
    t.is(rewelded.status, 200, rewelded.text);
    const notes = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason: 'typo in the notes', notes: 'film 2 of 2' },
      { 'if-match': ok.headers.etag! },
    );
    t.is(notes.status, 200, notes.text);
    t.is(notes.json.version, v1 + 2, 'one more correction, one more version');
    t.is(notes.json.notes, 'film 2 of 2');
    t.is(await statusOf(w, prefix, failed), 'PENDING', 'not re-rejected by an old result');
    t.is((await historyOf(w, prefix, failed)).length, 4);
    t.true((await examinationChanges(w, id)).some((c) => c.reason === 'typo in the notes'));

    // Records are never deleted.
    const deleted = await call(w, 'DELETE', path, 'admin');
    problemOf(t, deleted, 405);
    t.false(String(deleted.headers.allow).includes('DELETE'));
    t.is((await get(w, path)).status, 200);
  });
}
