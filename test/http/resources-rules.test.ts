// The rules of particular REST resources over real HTTP: an ISO that holds welds, its weld
// counts, a referenced PQR, released test packages, weld history.
//
// Every response is also checked against the OpenAPI document (helpers/http.ts).
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { isos } from '../../rest-adapter/isos.ts';
import { pqrs } from '../../rest-adapter/pqrs.ts';
import { testPackages } from '../../rest-adapter/test-packages.ts';
import { welderQualifications } from '../../rest-adapter/welder-qualifications.ts';
import { welds } from '../../rest-adapter/welds.ts';
import { wps } from '../../rest-adapter/wps.ts';
import {
  PREFIXES,
  type Body,
  type Item,
  world,
  problem,
  sorted,
  create,
  countRows,
  caseOf,
} from '../helpers/resource-cases.ts';

// ------------------------------------------------------------------------------------------------
// The rules of particular resources

test('DELETE /isos/{id}: 409 still-referenced while it holds a weld, 204 once it holds none', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const iso = await create(eng, '/isos', caseOf(isos).body(w.dA, 0));
  const weld = await create(eng, '/welds', { ...caseOf(welds).body(w.dA, 0), isoId: iso.id });
  const refused = await eng.del(`/isos/${iso.id}`);
  problem(t, refused, 409, '/problems/still-referenced');
  t.deepEqual(
    (await eng.get(`/isos/${iso.id}`)).json,
    { ...iso, weldCounts: { ...zeroCounts, total: 1, pending: 1 } },
    'still there, unchanged but for the weld it holds',
  );
  // Only the weld held it: moved to another ISO, the delete goes through.
  t.is((await eng.patch(`/welds/${weld.id}`, { isoId: w.dA.isos[0] })).status, 200);
  t.is((await eng.del(`/api/isos/${iso.id}`)).status, 204);
});

const zeroCounts = { total: 0, pending: 0, accepted: 0, rejected: 0, repair: 0, voided: 0 };

test('GET /isos and /isos/{id}: weldCounts follow the welds, a PATCH /welds/{id}/status included', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const iso = await create(eng, '/isos', caseOf(isos).body(w.dA, 0));
  t.deepEqual(iso.weldCounts, zeroCounts, 'a new ISO counts no weld');
  const made: Item[] = [];
  for (const n of [0, 1, 2]) {
    made.push(await create(eng, '/welds', { ...caseOf(welds).body(w.dA, n), isoId: iso.id }));
  }
  const counts = async () => {
    const one = await w.a.viewer.get(`/isos/${iso.id}`);
    t.is(one.status, 200);
    const listed = await w.a.viewer.get(`/api/isos?isoNumber=${iso.isoNumber as string}`);
    t.is(listed.status, 200);
    t.deepEqual(listed.json.items, [one.json], 'the list shows what GET /isos/{id} shows');
    return one.json.weldCounts as Record<string, number>;
  };
  t.deepEqual(await counts(), { ...zeroCounts, total: 3, pending: 3 });

  const [first, second, third] = made as [Item, Item, Item];
  const status = (role: 'inspector' | 'engineer', weld: Item, body: Body) =>
    w.a[role].patch(`/welds/${weld.id}/status`, body);
  const accept = { status: 'ACCEPTED', disposition: 'NCR-1 use as is' };
  t.is((await status('engineer', first, accept)).status, 200);
  t.deepEqual(await counts(), { ...zeroCounts, total: 3, pending: 2, accepted: 1 });
  t.is((await status('inspector', second, { status: 'REJECTED' })).status, 200);
  t.is((await status('engineer', second, { status: 'REPAIR' })).status, 200);
  t.is((await status('engineer', third, { status: 'VOIDED', reason: 'cut out' })).status, 200);
  t.deepEqual(await counts(), {
    total: 3,
    pending: 0,
    accepted: 1,
    rejected: 0,
    repair: 1,
    voided: 1,
  });
  // A refused change counts nothing.
  problem(t, await status('inspector', first, { status: 'PENDING' }), 409);
  t.deepEqual(await counts(), {
    total: 3,
    pending: 0,
    accepted: 1,
    rejected: 0,
    repair: 1,
    voided: 1,
  });
  // A weld moved to another ISO leaves this one's counts for the other's.
  const before = (await w.a.viewer.get(`/isos/${w.dA.isos[0]}`)).json.weldCounts;
  t.is((await eng.patch(`/welds/${first.id}`, { isoId: w.dA.isos[0] })).status, 200);
  t.deepEqual(await counts(), {
    total: 2,
    pending: 0,
    accepted: 0,
    rejected: 0,
    repair: 1,
    voided: 1,
  });
  t.deepEqual((await w.a.viewer.get(`/isos/${w.dA.isos[0]}`)).json.weldCounts, {
    ...before,
    total: before.total + 1,
    accepted: before.accepted + 1,
  });
  // Another tenant's ISO list carries its own counts only.
  const theirs = (await w.b.get('/isos?limit=500')).json.items as Item[];
  t.false(theirs.some((item) => item.id === iso.id));
});

test('DELETE /pqrs/{id}: 409 still-referenced while a WPS or a qualification refers to it', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const pqr = await create(eng, '/pqrs', caseOf(pqrs).body(w.dA, 0));
  const procedure = await create(eng, '/wps', { ...caseOf(wps).body(w.dA, 0), pqrIds: [pqr.id] });
  problem(t, await eng.del(`/pqrs/${pqr.id}`), 409, '/problems/still-referenced', 'by a WPS');
  t.is((await eng.get(`/pqrs/${pqr.id}`)).status, 200);
  const unlinked = await eng.patch(`/wps/${procedure.id}`, { pqrIds: [] });
  t.is(unlinked.status, 200);
  t.deepEqual(unlinked.json.pqrIds, []);
  // A change of the list alone is a change: a new version, so a cached copy is not "current".
  t.is(unlinked.json.version, procedure.version + 1, 'pqrIds alone bump the version');
  const cached = await eng.get(`/wps/${procedure.id}`, {
    'if-none-match': `"${procedure.version}"`,
  });
  t.is(cached.status, 200, 'the old ETag no longer matches');

  const qualification = await create(eng, '/welder-qualifications', {
    ...caseOf(welderQualifications).body(w.dA, 0),
    pqrId: pqr.id,
  });
  problem(t, await eng.del(`/pqrs/${pqr.id}`), 409, '/problems/still-referenced', 'by a WQ');
  t.is((await eng.del(`/welder-qualifications/${qualification.id}`)).status, 204);
  t.is((await eng.del(`/pqrs/${pqr.id}`)).status, 204, 'free at last');
});

test('test packages: once released, members cannot change and it cannot be deleted; open ones can', async (t) => {
  const w = await world(t);
  const eng = w.a.engineer;
  const d = w.dA;
  const links = (id: string) =>
    countRows(
      w,
      '(select tenant_id, test_package_id from weld_public.test_package_isos union all select tenant_id, test_package_id from weld_public.test_package_welds) l',
      'test_package_id = $2',
      [id],
    );
  const pkg = await create(eng, '/test-packages', caseOf(testPackages).body(d, 0));
  t.is(await links(pkg.id), 2);
  // Not ready (its welds are not accepted), so the API refuses the release; a DBA releases it.
  const refused = await eng.patch(
    `/test-packages/${pkg.id}`,
    { state: 'released' },
    { 'if-match': `"${pkg.version}"` },
  );
  problem(t, refused, 409, '/problems/package-not-ready', 'release');
  await w.owner.query(`update weld_public.test_packages set state = 'released' where id = $1`, [
    pkg.id,
  ]);
  const released = await eng.get(`/test-packages/${pkg.id}`);
  t.is(released.json.state, 'released');

  for (const change of [
    { weldIds: [] },
    { weldIds: [d.welds[0], d.welds[1]] },
    { isoIds: [d.isos[1]] },
    { isoIds: [] },
  ]) {
    const res = await eng.patch(`/test-packages/${pkg.id}`, change);
    problem(t, res, 409, '/problems/state-conflict', JSON.stringify(change));
  }
  problem(t, await eng.del(`/test-packages/${pkg.id}`), 409, '/problems/state-conflict', 'DELETE');
  t.deepEqual((await eng.get(`/test-packages/${pkg.id}`)).json, released.json, 'unchanged');
  t.is(await links(pkg.id), 2, 'members unchanged');

  // An open package with members: its members may change, and it may be deleted with them.
  const open = await create(eng, '/test-packages', caseOf(testPackages).body(d, 1));
  const regrouped = await eng.patch(`/test-packages/${open.id}`, {
    weldIds: [d.welds[0], d.welds[1]],
  });
  t.is(regrouped.status, 200, regrouped.text);
  t.deepEqual(sorted(regrouped.json.weldIds), sorted([d.welds[0]!, d.welds[1]!]));
  t.is(regrouped.json.version, open.version + 1, 'weldIds alone bump the version');
  t.is((await eng.del(`/test-packages/${open.id}`)).status, 204);
  t.is(await links(open.id), 0, 'its links went with it');
  problem(t, await eng.get(`/test-packages/${open.id}`), 404);
});

test('GET /welds/{id}/history: oldest first, in pages with Link; 404 for unknown, foreign and bad ids', async (t) => {
  const w = await world(t);
  const { inspector, engineer } = w.a;
  const weld = await create(engineer, '/welds', caseOf(welds).body(w.dA, 0));
  const steps = [
    [inspector, { status: 'REJECTED', reason: 'RT: porosity' }],
    [engineer, { status: 'REPAIR' }],
    [inspector, { status: 'PENDING' }],
  ] as const;
  for (const [user, change] of steps) {
    const res = await user.patch(`/welds/${weld.id}/status`, change);
    t.is(res.status, 200, res.text);
  }

  const full = await w.a.viewer.get(`/welds/${weld.id}/history`);
  t.is(full.status, 200);
  t.is(full.json.nextCursor, null);
  t.is(full.headers.link, undefined);
  t.deepEqual(
    full.json.items.map((h: Item) => [
      h.fromStatus,
      h.toStatus,
      h.reason,
      h.changedBy,
      h.changedByName,
      h.cause,
    ]),
    [
      ['PENDING', 'REJECTED', 'RT: porosity', w.userIds.inspector, 'inspector user', 'user'],
      ['REJECTED', 'REPAIR', null, w.userIds.engineer, 'engineer user', 'user'],
      ['REPAIR', 'PENDING', null, w.userIds.inspector, 'inspector user', 'user'],
    ],
  );
  t.true(full.json.items.every((h: Item) => h.ndtRecordId === null));

  for (const prefix of PREFIXES) {
    const base = `${prefix}/welds/${weld.id}/history`;
    const first = await w.a.viewer.get(`${base}?limit=2`);
    t.is(first.status, 200);
    t.deepEqual(first.json.items, full.json.items.slice(0, 2));
    t.truthy(first.json.nextCursor);
    t.is(first.headers.link, `<${base}?limit=2&cursor=${first.json.nextCursor}>; rel="next"`);
    const second = await w.a.viewer.get(/^<([^>]+)>/.exec(String(first.headers.link))![1]!);
    t.deepEqual(second.json.items, full.json.items.slice(2));
    t.is(second.json.nextCursor, null);
    t.is(second.headers.link, undefined);
  }

  const untouched = await create(engineer, '/welds', caseOf(welds).body(w.dA, 1));
  t.deepEqual((await w.a.viewer.get(`/welds/${untouched.id}/history`)).json, {
    items: [],
    nextCursor: null,
  });
  for (const id of [randomUUID(), w.dB.welds[0]!, 'not-a-uuid']) {
    problem(t, await w.a.viewer.get(`/welds/${id}/history`), 404, undefined, id);
  }
  for (const [query, parameter] of [
    ['limit=0', 'limit'],
    ['cursor=abc', 'cursor'],
    ['since=1', 'since'],
  ] as const) {
    const res = await w.a.viewer.get(`/welds/${weld.id}/history?${query}`);
    problem(t, res, 422, '/problems/validation-failed', query);
    t.is(res.json.errors[0].parameter, parameter, query);
  }
});
