// Punch lists over real HTTP (issue F20): a test package's punch items, category A blocking its
// release (readiness PUNCH_A_OPEN), B not; who raised and closed each and when; what a released
// package refuses; the same over GraphQL.
import test from 'ava';
import { ok, readyPackage, world } from '../helpers/rules-http.ts';

const codes = (readiness: { reasons: Array<{ code: string }> }) =>
  readiness.reasons.map((r) => r.code);

test('an open A item blocks release (PUNCH_A_OPEN); B does not; closed, the package releases; the item records who closed it', async (t) => {
  const w = await world(t);
  const { pkg } = await readyPackage(w, 'P1');
  const readiness = async () => ok(await w.a.viewer.get(`/test-packages/${pkg.id}/readiness`));
  t.deepEqual(codes(await readiness()), []);

  // Inspectors raise them; numbers follow on in the package.
  t.is(
    (
      await w.a.viewer.post('/punch-items', {
        testPackageId: pkg.id,
        category: 'A',
        description: 'x',
      })
    ).status,
    403,
  );
  const a = ok(
    await w.a.inspector.post('/punch-items', {
      testPackageId: pkg.id,
      category: 'A',
      description: 'Missing gasket on flange F-3',
      raisedOn: '2026-03-03',
    }),
    201,
  );
  const b = ok(
    await w.a.inspector.post('/punch-items', {
      testPackageId: pkg.id,
      category: 'B',
      description: 'Paint touch-up at support S-1',
    }),
    201,
  );
  t.like(a, {
    itemNumber: 1,
    category: 'A',
    raisedBy: w.userIds.inspector,
    closedOn: null,
    closedBy: null,
  });
  t.is(b.itemNumber, 2);

  const open = await readiness();
  t.false(open.ready);
  t.deepEqual(open.reasons, [
    {
      code: 'PUNCH_A_OPEN',
      detail: 'punch item 1 (category A) is open: Missing gasket on flange F-3',
    },
  ]);
  const refused = await w.a.engineer.patch(`/test-packages/${pkg.id}`, { state: 'released' });
  t.is(refused.status, 409);
  t.is(refused.json.type, '/problems/package-not-ready');
  t.deepEqual(codes(refused.json), ['PUNCH_A_OPEN']);
  // The package board counts it too.
  const board = ok(await w.a.viewer.get('/reports/test-package-board'));
  const row = board.items.find((r: { testPackageId: string }) => r.testPackageId === pkg.id);
  t.like(row, { ready: false });
  t.is(row.reasonsByCode.PUNCH_A_OPEN, 1);

  // Closed by the engineer: closedBy is who closed it, whatever the body says.
  t.is(
    (await w.a.engineer.patch(`/punch-items/${a.id}`, { closedBy: w.userIds.viewer })).status,
    422,
  );
  const closed = ok(
    await w.a.engineer.patch(
      `/punch-items/${a.id}`,
      { closedOn: '2026-03-04', closingNote: 'gasket fitted' },
      { 'if-match': `"${a.version}"` },
    ),
  );
  t.like(closed, { closedOn: '2026-03-04', closedBy: w.userIds.engineer, version: 2 });
  t.is(
    (await w.a.engineer.patch(`/punch-items/${a.id}`, { closedOn: '2026-03-01' })).status,
    422,
    'closed before it was raised',
  );
  t.deepEqual(codes(await readiness()), []);
  t.is(
    ok(await w.a.engineer.patch(`/test-packages/${pkg.id}`, { state: 'released' })).state,
    'released',
  );

  // Lists by package and openness.
  const openItems = ok(await w.a.viewer.get(`/punch-items?testPackageId=${pkg.id}&open=true`));
  t.deepEqual(
    openItems.items.map((i: { itemNumber: number }) => i.itemNumber),
    [2],
  );
});

test('a released package: an A item raised or reopened is 409 package-released; B items and closing go on; items stay', async (t) => {
  const w = await world(t);
  const { pkg } = await readyPackage(w, 'P2');
  const a = ok(
    await w.a.inspector.post('/punch-items', {
      testPackageId: pkg.id,
      category: 'A',
      description: 'Bolt torque',
      raisedOn: '2026-03-04',
    }),
    201,
  );
  ok(await w.a.inspector.patch(`/punch-items/${a.id}`, { closedOn: '2026-03-05' }));
  ok(await w.a.engineer.patch(`/test-packages/${pkg.id}`, { state: 'released' }));

  const raised = await w.a.inspector.post('/punch-items', {
    testPackageId: pkg.id,
    category: 'A',
    description: 'Found at the test',
  });
  t.is(raised.status, 409);
  t.is(raised.json.type, '/problems/package-released');
  const reopened = await w.a.inspector.patch(`/punch-items/${a.id}`, { closedOn: null });
  t.is(reopened.status, 409);
  t.is(reopened.json.type, '/problems/package-released');
  t.truthy(ok(await w.a.viewer.get(`/punch-items/${a.id}`)).closedOn, 'nothing changed');

  const b = ok(
    await w.a.inspector.post('/punch-items', {
      testPackageId: pkg.id,
      category: 'B',
      description: 'Label',
    }),
    201,
  );
  t.is(
    (await w.a.inspector.patch(`/punch-items/${b.id}`, { category: 'A' })).status,
    409,
    'an open B item made A',
  );
  const deleted = await w.a.engineer.del(`/punch-items/${b.id}`);
  t.is(deleted.status, 409);
  t.is(deleted.json.type, '/problems/state-conflict');
  t.is((await w.a.inspector.del(`/punch-items/${b.id}`)).status, 403);

  // Withdrawn, it is open again: the A item may be reopened, and items deleted.
  ok(
    await w.a.engineer.post(`/test-packages/${pkg.id}/withdraw`, {
      reason: 'found at the walkdown',
    }),
  );
  ok(await w.a.inspector.patch(`/punch-items/${a.id}`, { closedOn: null }));
  t.is((await w.a.engineer.del(`/punch-items/${b.id}`)).status, 204);
});

test("another tenant's punch items are not there; GraphQL shows a package's punch list", async (t) => {
  const w = await world(t);
  const pkg = await w.make.testPackage('TP-G');
  const item = ok(
    await w.a.inspector.post('/punch-items', {
      testPackageId: pkg.id,
      category: 'B',
      description: 'Tag',
    }),
    201,
  );
  t.is((await w.b.admin.get(`/punch-items/${item.id}`)).status, 404);
  t.is((await w.b.admin.patch(`/punch-items/${item.id}`, { description: 'x' })).status, 404);
  const other = await w.b.inspector.post('/punch-items', {
    testPackageId: pkg.id,
    category: 'A',
    description: 'into A',
  });
  t.is(other.status, 422);

  const gql = await w.gql(
    'viewer',
    `query ($id: UUID!) { allTestPackages(first: 1, condition: { rowId: $id }) { nodes { punchItems(first: 10, orderBy: ITEM_NUMBER_ASC) { nodes { itemNumber category description raiser { userName } } } } } }`,
    { id: pkg.id },
  );
  t.deepEqual(gql.json.data.allTestPackages.nodes[0].punchItems.nodes, [
    { itemNumber: 1, category: 'B', description: 'Tag', raiser: { userName: 'inspector' } },
  ]);
  // Raised over GraphQL, it is numbered as over REST.
  const created = await w.gql(
    'inspector',
    `mutation ($id: UUID!) { createPunchItem(input: { punchItem: { testPackageId: $id, category: "A", description: "From GraphQL" } }) { punchItem { itemNumber } } }`,
    { id: pkg.id },
  );
  t.deepEqual(created.json.data.createPunchItem.punchItem, { itemNumber: 2 });
});
