// NDT records and inspections over real HTTP (issue F6): Idempotency-Key replays, and the
// history of corrections in pages. Every response is also checked against the OpenAPI document
// (helpers/http.ts).
import test from 'ava';
import {
  PREFIXES,
  world,
  call,
  get,
  historyOf,
  idsOf,
  problemOf,
} from '../helpers/examinations-http.ts';

//------------------------------------------------------------------------------------------------
// Idempotency

test('POST /ndt-records with an Idempotency-Key: a retry replays the answer, no second record, welds moved once', async (t) => {
  const w = await world(t);
  for (const prefix of PREFIXES) {
    const [failed, passed] = [await w.weld(), await w.weld()];
    const key = `ndt-retry${prefix}`;
    const body = {
      method: 'RT',
      reportNumber: `RT-IDEM${prefix}`,
      examinedOn: '2026-05-01',
      welds: [{ weldId: failed }, { weldId: passed }],
      filmIntervals: [
        { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [failed] },
        { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [passed] },
      ],
    };
    const send = (payload: object) =>
      call(w, 'POST', `${prefix}/ndt-records`, 'inspector', payload, { 'idempotency-key': key });
    const first = await send(body);
    t.is(first.status, 201, first.text);
    t.is(first.headers['idempotent-replayed'], undefined);
    const again = await send(body);
    t.is(again.status, 201, again.text);
    t.is(again.headers['idempotent-replayed'], 'true');
    t.deepEqual(again.json, first.json);
    t.is(again.headers.location, first.headers.location);
    t.is(again.headers.etag, first.headers.etag);
    // One record, and each weld moved once.
    t.deepEqual(idsOf(await get(w, `${prefix}/ndt-records?weldId=${failed}`)), [first.json.id]);
    for (const weldId of [failed, passed]) {
      const history = await historyOf(w, prefix, weldId);
      t.is(history.length, 1, 'one history row per weld');
      t.is(history[0]!.ndtRecordId, first.json.id);
    }
    // The same key for another body is refused, and writes nothing.
    const reused = await send({ ...body, reportNumber: `RT-OTHER${prefix}` });
    problemOf(t, reused, 422, '/problems/idempotency-key-reused');
    t.is(idsOf(await get(w, `${prefix}/ndt-records?weldId=${failed}`)).length, 1);
  }
});

test('GET /ndt-records/{id}/history and /inspections/{id}/history: each correction, with its reason, in pages', async (t) => {
  const w = await world(t);
  for (const prefix of PREFIXES) {
    const [first, second] = [await w.weld(), await w.weld()];
    const recorded = await call(w, 'POST', `${prefix}/ndt-records`, 'inspector', {
      method: 'UT',
      reportNumber: `UT-H${prefix}`,
      examinedOn: '2026-05-02',
      technician: 'J. Doe',
      welds: [{ weldId: first, result: 'accepted' }],
    });
    t.is(recorded.status, 201, recorded.text);
    const path = `${prefix}/ndt-records/${recorded.json.id}/history`;
    // Recording is no correction: the history starts empty.
    t.deepEqual((await get(w, path)).json, { items: [], nextCursor: null });

    const fix = (body: object) =>
      call(w, 'PATCH', `${prefix}/ndt-records/${recorded.json.id}`, 'inspector', body);
    t.is((await fix({ technician: 'J. Doe (II)', reason: 'level added' })).status, 200);
    t.is(
      (
        await fix({
          welds: [
            { weldId: first, result: 'accepted' },
            { weldId: second, result: 'accepted' },
          ],
          reason: 'weld missed',
        })
      ).status,
      200,
    );
    const all = await get(w, path);
    t.is(all.status, 200, all.text);
    t.deepEqual(
      all.json.items.map((e: { change: string; reason: string }) => [e.change, e.reason]),
      [
        ['updated', 'level added'],
        ['weld_added', 'weld missed'],
      ],
    );
    const updated = all.json.items[0];
    t.deepEqual(
      [updated.before, updated.after],
      [{ technician: 'J. Doe' }, { technician: 'J. Doe (II)' }],
    );
    t.is(updated.changedBy, w.userIds.inspector);
    t.is(all.json.items[1].after.weldId, second, 'keys as the API spells them');

    // Pages of one, linked.
    const page = await get(w, `${path}?limit=1`);
    t.is(page.json.items.length, 1);
    t.is(page.headers.link, `<${path}?limit=1&cursor=${page.json.nextCursor}>; rel="next"`);
    const next = await get(w, `${path}?limit=1&cursor=${page.json.nextCursor}`);
    t.deepEqual(next.json.items, [all.json.items[1]]);

    // An inspection's history the same way; unknown and malformed ids are 404.
    const inspection = await call(w, 'POST', `${prefix}/inspections`, 'inspector', {
      kind: 'visual',
      inspectedOn: '2026-05-02',
      result: 'accepted',
      weldIds: [first],
    });
    const corrected = await call(
      w,
      'PATCH',
      `${prefix}/inspections/${inspection.json.id}`,
      'inspector',
      {
        result: 'rejected',
        reason: 'undercut found on review',
      },
    );
    t.is(corrected.status, 200, corrected.text);
    const inspectionHistory = await get(w, `${prefix}/inspections/${inspection.json.id}/history`);
    t.deepEqual(
      inspectionHistory.json.items.map((e: { before: object; after: object; reason: string }) => [
        e.before,
        e.after,
        e.reason,
      ]),
      [[{ result: 'accepted' }, { result: 'rejected' }, 'undercut found on review']],
    );
    problemOf(t, await get(w, `${prefix}/ndt-records/${inspection.json.id}/history`), 404);
    problemOf(t, await get(w, `${prefix}/inspections/nope/history`), 404);
    problemOf(t, await get(w, `${path}?cursor=abc`), 422);
  }
});
