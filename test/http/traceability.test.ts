// Materials and heat numbers over REST and GraphQL (issue F19): components as an engineer
// records them, welds joining them, and the question asked when a mill recalls a heat: which
// welds and ISOs does it touch. The rules themselves: test/db/rules-materials.test.ts.
import test from 'ava';
import { ok, sorted, world, type World } from '../helpers/rules-http.ts';

async function recalledHeat(w: World) {
  const component = async (tag: string, heatNumber: string, pNumber = '1') =>
    ok(
      await w.a.engineer.post('/components', {
        tag,
        kind: 'pipe',
        materialSpec: 'A106',
        grade: 'B',
        pNumber,
        size: 6,
        schedule: '40',
        heatNumber,
        mtrRef: `MTR-${heatNumber}`,
      }),
      201,
    );
  const recalled = await component('P-1', 'H-RECALL');
  const fitting = await component('E-1', 'H-RECALL', '8');
  const clean = await component('P-2', 'H-CLEAN');
  const isos = [
    await w.make.iso('ISO-1', 'L-1'),
    await w.make.iso('ISO-2', 'L-2'),
    await w.make.iso('ISO-3', 'L-3'),
  ];
  const welds = [
    await w.make.weld({
      isoId: isos[0]!.id,
      weldNumber: 'W-1',
      component1Id: recalled.id,
      component2Id: clean.id,
      baseMetal1PNumber: undefined,
      baseMetal2PNumber: undefined,
    }),
    await w.make.weld({
      isoId: isos[1]!.id,
      weldNumber: 'W-2',
      component1Id: clean.id,
      component2Id: fitting.id,
      baseMetal1PNumber: undefined,
      baseMetal2PNumber: undefined,
    }),
    await w.make.weld({ isoId: isos[2]!.id, weldNumber: 'W-3', component1Id: clean.id }),
  ];
  return { recalled, fitting, clean, isos, welds };
}

test('REST: GET /welds?heatNumber= and /isos?heatNumber= find every weld and ISO a heat touches, on either side; the welds take the P-numbers of their components', async (t) => {
  const w = await world(t);
  const h = await recalledHeat(w);
  const welds = ok(await w.a.viewer.get('/welds?heatNumber=H-RECALL'));
  t.deepEqual(sorted(welds.items.map((i: { weldNumber: string }) => i.weldNumber)), ['W-1', 'W-2']);
  const isos = ok(await w.a.viewer.get('/api/isos?heatNumber=H-RECALL'));
  t.deepEqual(sorted(isos.items.map((i: { isoNumber: string }) => i.isoNumber)), [
    'ISO-1',
    'ISO-2',
  ]);
  t.deepEqual(ok(await w.a.viewer.get('/welds?heatNumber=H-NONE')).items, []);
  // The P-numbers are the components': W-2 joins P-No. 1 to P-No. 8.
  t.like(ok(await w.a.viewer.get(`/welds/${h.welds[1]!.id}`)), {
    baseMetal1PNumber: '1',
    baseMetal2PNumber: '8',
  });
  // Another P-number than its component's is named, and nothing is written.
  const clash = await w.a.engineer.patch(`/welds/${h.welds[1]!.id}`, { baseMetal2PNumber: '1' });
  t.is(clash.status, 422, clash.text);
  t.deepEqual(
    clash.json.errors.map((e: { pointer: string }) => e.pointer),
    ['/baseMetal2PNumber'],
  );
  // The weld register may not give a component side another P-number, nor clear it: line errors.
  const register = await w.a.engineer.post(
    '/imports/welds',
    'isoNumber,weldNumber,baseMetal1PNumber,baseMetal2PNumber\nISO-2,W-2,1,1\nISO-1,W-1,,1\n',
    { 'content-type': 'text/csv' },
  );
  t.is(register.status, 422, register.text);
  t.is(register.json.type, '/problems/import-invalid');
  t.deepEqual(
    register.json.errors.map((e: { line: number; column: string }) => [e.line, e.column]),
    [
      [2, 'baseMetal2PNumber'],
      [3, 'baseMetal1PNumber'],
    ],
  );
  t.regex(register.json.errors[0].detail, /names component E-1 here, P-No\. 8/);
  // A component a weld names is not deleted; one no weld names is.
  t.is((await w.a.engineer.del(`/components/${h.recalled.id}`)).status, 409);
  const spare = ok(
    await w.a.engineer.post('/components', { tag: 'S-1', kind: 'flange', materialSpec: 'A105' }),
    201,
  );
  t.is((await w.a.engineer.del(`/components/${spare.id}`)).status, 204);
  // Another tenant sees none of it, finds nothing by the heat, and cannot name our component.
  t.deepEqual(ok(await w.b.engineer.get('/welds?heatNumber=H-RECALL')).items, []);
  t.is((await w.b.engineer.get(`/components/${h.recalled.id}`)).status, 404);
  const isoB = ok(await w.b.engineer.post('/isos', { isoNumber: 'ISO-B', lineNumber: 'L-B' }), 201);
  const theirs = await w.b.engineer.post('/welds', {
    isoId: isoB.id,
    weldNumber: 'W-B',
    type: 'BW',
    size: 4,
    component1Id: h.recalled.id,
  });
  t.is(theirs.status, 422, theirs.text);
  t.deepEqual(
    theirs.json.errors.map((e: { pointer: string }) => e.pointer),
    ['/component1Id'],
  );
});

test('GraphQL: allComponents by heat number, with each component’s welds and their ISOs', async (t) => {
  const w = await world(t);
  await recalledHeat(w);
  const res = await w.gql(
    'viewer',
    `{ allComponents(first: 10, condition: { heatNumber: "H-RECALL" }, orderBy: TAG_ASC) {
         nodes { tag pNumber welds(first: 10) { nodes { weldNumber iso { isoNumber } } } } } }`,
  );
  t.is(res.status, 200, res.text);
  t.falsy(res.json.errors, res.text);
  t.deepEqual(res.json.data.allComponents.nodes, [
    {
      tag: 'E-1',
      pNumber: '8',
      welds: { nodes: [{ weldNumber: 'W-2', iso: { isoNumber: 'ISO-2' } }] },
    },
    {
      tag: 'P-1',
      pNumber: '1',
      welds: { nodes: [{ weldNumber: 'W-1', iso: { isoNumber: 'ISO-1' } }] },
    },
  ]);
  // A viewer reads; only an engineer writes components.
  const write = await w.gql(
    'viewer',
    'mutation { createComponent(input: { component: { tag: "X", kind: "pipe", materialSpec: "A106" } }) { clientMutationId } }',
  );
  t.truthy(write.json?.errors?.length, write.text);
});

test('the component register as CSV: exported, imported back unchanged, edited, checked line by line, and only by an engineer', async (t) => {
  const w = await world(t);
  const h = await recalledHeat(w);
  const csv = { 'content-type': 'text/csv' };
  const importCsv = (
    body: string | Buffer,
    query = '',
    role: 'engineer' | 'inspector' = 'engineer',
  ) => w.a[role].post(`/imports/components${query}`, body, csv);

  // The export: the import's columns, in tag order; a formula-like text guarded.
  ok(await w.a.engineer.patch(`/components/${h.clean.id}`, { description: '=HYPERLINK("x")' }));
  const exported = await w.a.viewer.get('/components?format=csv');
  t.is(exported.status, 200, exported.text);
  t.regex(String(exported.headers['content-type']), /^text\/csv/);
  const lines = exported.text
    .replace(/^\uFEFF/, '')
    .trim()
    .split(/\r?\n/);
  t.is(
    lines[0],
    'tag,kind,description,materialSpec,grade,pNumber,groupNumber,size,schedule,heatNumber,mtrRef',
  );
  t.deepEqual(
    lines.slice(1).map((l) => l.split(',')[0]),
    ['E-1', 'P-1', 'P-2'],
  );
  t.true(lines[3]!.includes(`"'=HYPERLINK(""x"")"`), lines[3]);

  // Imported back: nothing changes (the guard comes off again).
  t.deepEqual(ok(await importCsv(exported.text)), {
    dryRun: false,
    rows: 3,
    created: 0,
    updated: 0,
    unchanged: 3,
  });
  t.is(ok(await w.a.viewer.get(`/components/${h.clean.id}`)).description, '=HYPERLINK("x")');

  // A semicolon file with only some columns: a new component, a corrected heat, and a P-number
  // that the welds naming it take.
  const edit =
    'tag;kind;materialSpec;heatNumber;pNumber\nP-3;flange;A105;H-NEW;1\nP-1;pipe;A106;H-RECALL-2;3\n';
  t.deepEqual(ok(await importCsv(edit, '?dryRun=true')), {
    dryRun: true,
    rows: 2,
    created: 1,
    updated: 1,
    unchanged: 0,
  });
  t.deepEqual(
    ok(await w.a.viewer.get('/components?tag=P-3')).items,
    [],
    'a dry run writes nothing',
  );
  t.like(ok(await importCsv(edit)), { created: 1, updated: 1 });
  t.like(ok(await w.a.viewer.get(`/components/${h.recalled.id}`)), {
    heatNumber: 'H-RECALL-2',
    pNumber: '3',
    mtrRef: 'MTR-H-RECALL',
  });
  t.is(ok(await w.a.viewer.get(`/welds/${h.welds[0]!.id}`)).baseMetal1PNumber, '3');

  // Errors by line and column; nothing written.
  const bad = await importCsv(
    'tag,kind,materialSpec,size\nP-4,tube,A106,6\nP-5,pipe,,x\nP-4,pipe,A106,2\n',
  );
  t.is(bad.status, 422, bad.text);
  t.is(bad.json.type, '/problems/import-invalid');
  t.deepEqual(
    bad.json.errors.map((e: { line: number; column: string }) => [e.line, e.column]),
    [
      [2, 'kind'],
      [3, 'materialSpec'],
      [3, 'size'],
      [4, 'tag'],
    ],
  );
  const unknown = await importCsv('tag,colour\nP-1,red\n');
  t.deepEqual(
    unknown.json.errors.map((e: { line: number; column: string }) => [e.line, e.column]),
    [[1, 'colour']],
  );
  // A file of tags and heats only corrects existing components.
  t.like(ok(await importCsv('tag,heatNumber\nP-2,H-CLEAN-2\n')), { updated: 1, created: 0 });
  t.is(ok(await w.a.viewer.get(`/components/${h.clean.id}`)).heatNumber, 'H-CLEAN-2');
  const newWithout = await importCsv('tag,heatNumber\nP-9,H-9\n');
  t.is(newWithout.status, 422);
  t.regex(newWithout.json.errors[0].detail, /required for a new component/);
  // An empty required cell is named in words; a decimal comma is read in a semicolon file.
  const emptyKind = await importCsv('tag,kind,materialSpec\nP-8,,A106\n');
  t.deepEqual(
    emptyKind.json.errors.map((e: { column: string; detail: string }) => [e.column, e.detail]),
    [['kind', 'is required']],
  );
  t.like(ok(await importCsv('tag;kind;materialSpec;size\nP-7;pipe;A106;8,625\n')), { created: 1 });
  t.is(ok(await w.a.viewer.get('/components?tag=P-7')).items[0].size, 8.625);
  t.deepEqual(ok(await w.a.viewer.get('/components?tag=P-9')).items, []);
  // A byte that is not UTF-8 is named by its line, as in the weld register.
  const latin1 = await importCsv(
    Buffer.from('tag,kind,materialSpec\r\nP-8,pipe,A106\r\nP-\xe9', 'latin1'),
  );
  t.is(latin1.status, 422);
  t.deepEqual(latin1.json.errors, [
    { line: 3, column: null, value: null, detail: 'is not UTF-8 text: save the file as CSV UTF-8' },
  ]);
  // Bounded: at most 20,000 rows; the first 200 errors kept, all counted.
  const rows = (n: number, kind: string) =>
    'tag,kind,materialSpec\n' +
    Array.from({ length: n }, (_, i) => `X-${i},${kind},A106\n`).join('');
  const tooMany = await importCsv(rows(20_001, 'pipe'));
  t.is(tooMany.status, 422);
  t.regex(tooMany.json.errors[0].detail, /more than 20000 rows: split it/);
  const allBad = await importCsv(rows(500, 'tube'));
  t.is(allBad.json.errors.length, 200);
  t.is(allBad.json.errorCount, 500);
  // An inspector is refused before the file is read.
  const refused = await importCsv(edit, '', 'inspector');
  t.is(refused.status, 403);
  t.is(refused.json.type, '/problems/role-not-allowed');
});
