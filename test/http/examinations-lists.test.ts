// The lists of NDT records and inspections over real HTTP (issue F6): every filter. Every
// response is also checked against the OpenAPI document (helpers/http.ts).
import test from 'ava';
import {
  PREFIXES,
  world,
  call,
  get,
  historyOf,
  idsOf,
  problemOf,
  sorted,
  pause,
} from '../helpers/examinations-http.ts';

//------------------------------------------------------------------------------------------------
// Lists

test('GET /ndt-records filters by method, result, weldId, examinedSince and updatedSince', async (t) => {
  const w = await world(t);
  const [w1, w2, w3, w4] = [await w.weld(), await w.weld(), await w.weld(), await w.weld()];
  const record = async (body: object) => {
    const res = await call(w, 'POST', '/ndt-records', 'inspector', body);
    t.is(res.status, 201, res.text);
    return res.json as { id: string; version: number };
  };
  const rt = await record({
    method: 'RT',
    reportNumber: 'RT-F1',
    examinedOn: '2026-01-10',
    welds: [{ weldId: w1 }, { weldId: w2 }],
    filmIntervals: [
      { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [w1] },
      { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [w2] },
    ],
  });
  // w2, accepted by RT, is accepted again by UT: no refusal, no second move.
  const ut = await record({
    method: 'UT',
    reportNumber: 'UT-F2',
    examinedOn: '2026-02-10',
    welds: [
      { weldId: w2, result: 'accepted' },
      { weldId: w3, result: 'accepted' },
    ],
  });
  const mt = await record({
    method: 'MT',
    reportNumber: 'MT-F3',
    examinedOn: '2026-03-10',
    welds: [{ weldId: w4, result: 'accepted' }],
  });
  t.is((await historyOf(w, '', w2)).length, 1);
  // Only MT-F3 changes after `since`.
  await pause(50);
  const since = new Date().toISOString();
  await pause(50);
  const patched = await call(w, 'PATCH', `/ndt-records/${mt.id}`, 'inspector', {
    reason: 'technician named',
    technician: 'M. Particle',
  });
  t.is(patched.status, 200, patched.text);

  for (const prefix of PREFIXES) {
    const list = async (query: string) => {
      const res = await get(w, `${prefix}/ndt-records?${query}`);
      t.is(res.status, 200, `${query}: ${res.text}`);
      return sorted(idsOf(res));
    };
    t.deepEqual(await list(''), sorted([rt.id, ut.id, mt.id]));
    t.deepEqual(await list('method=UT'), [ut.id]);
    t.deepEqual(await list('result=rejected'), [rt.id]);
    t.deepEqual(await list('result=accepted'), sorted([ut.id, mt.id]));
    t.deepEqual(await list(`weldId=${w2}`), sorted([rt.id, ut.id]));
    t.deepEqual(await list(`weldId=${w3}`), [ut.id]);
    t.deepEqual(await list('examinedSince=2026-02-10'), sorted([ut.id, mt.id]));
    t.deepEqual(await list('examinedSince=2026-02-11'), [mt.id]);
    t.deepEqual(await list(`updatedSince=${encodeURIComponent(since)}`), [mt.id]);
    t.deepEqual(await list('method=RT&result=accepted'), [], 'filters combine with and');
    t.deepEqual(await list(`weldId=${w.weldOfB}`), [], "another tenant's weld has none here");
    const paged = await get(w, `${prefix}/ndt-records?limit=2`);
    t.is(paged.json.items.length, 2);
    t.truthy(paged.json.nextCursor);

    for (const [query, parameter] of [
      ['method=XR', 'method'],
      ['result=maybe', 'result'],
      ['weldId=42', 'weldId'],
      ['examinedSince=yesterday', 'examinedSince'],
      ['inspectedSince=2026-01-01', 'inspectedSince'],
    ] as const) {
      const res = await get(w, `${prefix}/ndt-records?${query}`);
      problemOf(t, res, 422, '/problems/validation-failed');
      t.is(res.json.errors[0].parameter, parameter, query);
    }
  }
});

test('GET /inspections filters by kind, result, weldId, inspectedSince and updatedSince', async (t) => {
  const w = await world(t);
  const [w1, w2, w3] = [await w.weld(), await w.weld(), await w.weld()];
  const inspect = async (body: object) => {
    const res = await call(w, 'POST', '/api/inspections', 'inspector', body);
    t.is(res.status, 201, res.text);
    return res.json as { id: string };
  };
  const fitUp = await inspect({
    kind: 'fit-up',
    inspectedOn: '2026-01-05',
    result: 'accepted',
    weldIds: [w1, w2],
  });
  const visual = await inspect({
    kind: 'visual',
    inspectedOn: '2026-02-05',
    result: 'rejected',
    weldIds: [w2],
  });
  const final = await inspect({
    kind: 'final',
    inspectedOn: '2026-03-05',
    result: 'accepted',
    weldIds: [w3],
  });
  await pause(50);
  const since = new Date().toISOString();
  await pause(50);
  const patched = await call(w, 'PATCH', `/inspections/${final.id}`, 'inspector', {
    reason: 'notes added',
    notes: 'flange face checked',
  });
  t.is(patched.status, 200, patched.text);

  for (const prefix of PREFIXES) {
    const list = async (query: string) => {
      const res = await get(w, `${prefix}/inspections?${query}`);
      t.is(res.status, 200, `${query}: ${res.text}`);
      return sorted(idsOf(res));
    };
    t.deepEqual(await list(''), sorted([fitUp.id, visual.id, final.id]));
    t.deepEqual(await list('kind=visual'), [visual.id]);
    t.deepEqual(await list('result=accepted'), sorted([fitUp.id, final.id]));
    t.deepEqual(await list(`weldId=${w2}`), sorted([fitUp.id, visual.id]));
    t.deepEqual(await list(`weldId=${w3}`), [final.id]);
    t.deepEqual(await list('inspectedSince=2026-02-05'), sorted([visual.id, final.id]));
    t.deepEqual(await list('inspectedSince=2026-02-06'), [final.id]);
    t.deepEqual(await list(`updatedSince=${encodeURIComponent(since)}`), [final.id]);
    t.deepEqual(await list('kind=fit-up&result=rejected'), []);
    for (const [query, parameter] of [
      ['kind=radiography', 'kind'],
      ['result=ok', 'result'],
      ['weldId=x', 'weldId'],
      ['inspectedSince=2026-13-01', 'inspectedSince'],
      ['method=RT', 'method'],
    ] as const) {
      const res = await get(w, `${prefix}/inspections?${query}`);
      problemOf(t, res, 422, '/problems/validation-failed');
      t.is(res.json.errors[0].parameter, parameter, query);
    }
  }
});
