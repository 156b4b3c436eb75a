// The code rules over GraphQL (issues F7, F13): the checks, readiness, examination requirements,
// qualification status and selections answer as REST does, and drawing is refused a viewer.
import test from 'ava';
import {
  idsOf,
  ok,
  sorted,
  world,
  type Body,
  type Role,
  type World,
} from '../helpers/rules-http.ts';
import { lineWorld } from '../helpers/line-world.ts';

//------------------------------------------------------------------------------------------------
// GraphQL

interface GqlField {
  name: string;
  args: string[];
  /** A connection (nodes, needs first) rather than a plain list. */
  connection: boolean;
}
interface TypeRef {
  kind: string;
  name: string | null;
  ofType?: TypeRef | null;
}
const namedType = (type: TypeRef): string =>
  type.name ?? (type.ofType ? namedType(type.ofType) : '');

async function fieldsOf(w: World, type: string): Promise<Map<string, GqlField>> {
  const res = await w.gql(
    'viewer',
    `query ($name: String!) { __type(name: $name) { fields { name args { name }
       type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }`,
    { name: type },
  );
  const fields = (res.json?.data?.__type?.fields ?? []) as Array<{
    name: string;
    args: Array<{ name: string }>;
    type: TypeRef;
  }>;
  return new Map(
    fields.map((f) => [
      f.name,
      {
        name: f.name,
        args: f.args.map((a) => a.name),
        connection: namedType(f.type).endsWith('Connection'),
      },
    ]),
  );
}

/** A selection of a field that yields rows, whether PostGraphile made it a list or a connection. */
function rowsOf(field: GqlField, selection: string, args: string[] = []): string {
  const all = field.connection ? ['first: 500', ...args] : args;
  const call = all.length ? `${field.name}(${all.join(', ')})` : field.name;
  return field.connection ? `${call} { nodes { ${selection} } }` : `${call} { ${selection} }`;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function rowsIn(field: GqlField, value: any): any[] {
  return (field.connection ? value?.nodes : value) ?? [];
}

test('GraphQL answers as REST: Weld.checks (4 codes), TestPackage.ready and readinessReasons, Iso.examination, Welder.qualificationStatus(onDate), the 3 selections; drawExaminationSelection draws 3 for an inspector and refuses a viewer', async (t) => {
  const w = await world(t);
  const line = await lineWorld(w);
  const bare = (
    await w.make.weld({
      isoId: line.iso200,
      weldNumber: 'BARE',
      wallThickness: null,
      weldedOn: null,
    })
  ).id;
  const pkg = (await w.make.testPackage('TP-1', { isoIds: [line.iso200] })).id;

  const gqlOk = async (role: Role, query: string, variables?: object) => {
    const res = await w.gql(role, query, variables);
    if (res.status !== 200 || res.json?.errors) throw new Error(`${query}: ${res.text}`);
    return res.json.data;
  };
  const weldFields = await fieldsOf(w, 'Weld');
  const packageFields = await fieldsOf(w, 'TestPackage');
  const isoFields = await fieldsOf(w, 'Iso');
  const welderFields = await fieldsOf(w, 'Welder');
  for (const [fields, name] of [
    [weldFields, 'checks'],
    [packageFields, 'ready'],
    [packageFields, 'readinessReasons'],
    [isoFields, 'examination'],
    [welderFields, 'qualificationStatus'],
  ] as const) {
    t.truthy(fields.get(name), `${name} in the GraphQL schema`);
  }
  t.true(welderFields.get('qualificationStatus')?.args.includes('onDate'));

  // Weld.checks
  const checks = weldFields.get('checks')!;
  const weldData = await gqlOk(
    'viewer',
    `query ($id: UUID!) { allWelds(first: 1, condition: { rowId: $id }) { nodes { ${rowsOf(checks, 'code detail')} } } }`,
    { id: bare },
  );
  const restChecks = ok(await w.a.viewer.get(`/welds/${bare}/checks`)).checks;
  t.is(restChecks.length, 4);
  t.deepEqual(rowsIn(checks, weldData.allWelds.nodes[0].checks), restChecks);

  // TestPackage.ready and readinessReasons
  const reasons = packageFields.get('readinessReasons')!;
  const packageData = await gqlOk(
    'viewer',
    `query ($id: UUID!) { allTestPackages(first: 1, condition: { rowId: $id }) { nodes { ready ${rowsOf(reasons, 'code weldId isoId detail')} } } }`,
    { id: pkg },
  );
  const restReadiness = ok(await w.a.viewer.get(`/test-packages/${pkg}/readiness`));
  const node = packageData.allTestPackages.nodes[0];
  t.is(node.ready, restReadiness.ready);
  t.false(node.ready);
  const stripNulls = (r: Body) =>
    Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null));
  t.deepEqual(rowsIn(reasons, node.readinessReasons).map(stripNulls), restReadiness.reasons);
  t.true(restReadiness.reasons.length >= 3, JSON.stringify(restReadiness.reasons));

  // drawExaminationSelection: a viewer is refused, an inspector draws.
  const mutationField = (await fieldsOf(w, 'Mutation')).get('drawExaminationSelection');
  t.truthy(mutationField, 'drawExaminationSelection in the schema');
  const draw = `mutation ($input: DrawExaminationSelectionInput!) { drawExaminationSelection(input: $input) { clientMutationId } }`;
  const input = { method: 'RT', lineNumber: 'L-100', seed: '42' };
  const viewer = await w.gql('viewer', draw, { input });
  t.is(viewer.json.errors?.[0]?.extensions?.code, '/problems/role-not-allowed', viewer.text);
  t.deepEqual(idsOf(await w.a.viewer.get('/examination-selections')), []);
  const neither = await w.gql('inspector', draw, { input: { method: 'RT' } });
  t.is(neither.json.errors?.[0]?.extensions?.code, '/problems/validation-failed', neither.text);
  await gqlOk('inspector', draw, { input });
  const restSelections = ok(await w.a.viewer.get('/examination-selections')).items as Body[];
  t.is(restSelections.length, 3);
  for (const s of restSelections)
    t.like(s, { seed: 42, selectedBy: w.userIds.inspector, tier: 'random' });

  // The selections' collection: found by its fields, never guessed.
  const schema = await gqlOk(
    'viewer',
    `{ __schema { queryType { fields { name type { kind name ofType { kind name } } } } } }`,
  );
  const collections = (
    schema.__schema.queryType.fields as Array<{ name: string; type: TypeRef }>
  ).filter((f) => f.name.startsWith('all') && namedType(f.type).endsWith('Connection'));
  let selectionsField: string | undefined;
  for (const f of collections) {
    const fields = await fieldsOf(w, namedType(f.type).slice(0, -'Connection'.length));
    if (fields.has('tier') && fields.has('causeSelectionId')) selectionsField = f.name;
  }
  t.truthy(selectionsField, 'a collection of examination selections');
  const selectionData = await gqlOk(
    'viewer',
    `{ ${selectionsField!}(first: 500) { nodes { rowId weldId method tier seed state ndtRecordId causeSelectionId selectedBy } } }`,
  );
  const fromGraphql = (selectionData[selectionsField!].nodes as Body[]).map((s): Body => ({
    ...s,
    id: s.rowId,
    seed: Number(s.seed),
  }));
  t.deepEqual(
    sorted(
      fromGraphql.map((s) =>
        JSON.stringify([
          s.id,
          s.weldId,
          s.method,
          s.tier,
          s.seed,
          s.state,
          s.ndtRecordId,
          s.causeSelectionId,
          s.selectedBy,
        ]),
      ),
    ),
    sorted(
      restSelections.map((s) =>
        JSON.stringify([
          s.id,
          s.weldId,
          s.method,
          s.tier,
          s.seed,
          s.state,
          s.ndtRecordId,
          s.causeSelectionId,
          s.selectedBy,
        ]),
      ),
    ),
  );

  // Iso.examination, after the draw.
  const examination = isoFields.get('examination')!;
  const isoData = await gqlOk(
    'viewer',
    `query ($id: UUID!) { allIsos(first: 1, condition: { rowId: $id }) { nodes { ${rowsOf(examination, 'method requiredPercent welds required selected examined shortfall progressiveOpen weldersNotCovered')} } } }`,
    { id: line.iso1 },
  );
  const restExamination = ok(await w.a.viewer.get(`/isos/${line.iso1}/examination`)).methods;
  t.deepEqual(
    rowsIn(examination, isoData.allIsos.nodes[0].examination).map((m: Body) => ({
      ...m,
      requiredPercent: Number(m.requiredPercent),
      weldersNotCovered: m.weldersNotCovered ?? [],
    })),
    restExamination,
  );
  t.like(restExamination[0], { method: 'RT', selected: 3, shortfall: 0 });

  // Welder.qualificationStatus(onDate)
  const qualification = welderFields.get('qualificationStatus')!;
  for (const on of ['2026-07-10', '2026-07-11']) {
    const welderData = await gqlOk(
      'viewer',
      `query ($id: UUID!, $on: Date) { allWelders(first: 1, condition: { rowId: $id }) { nodes { ${rowsOf(qualification, 'qualificationId process wpsId state qualifiedOn expiresOn revokedOn lastUsedOn continuityUntil reasons', ['onDate: $on'])} } } }`,
      { id: line.welders[1], on },
    );
    const rest = ok(
      await w.a.viewer.get(`/welders/${line.welders[1]}/qualification-status?on=${on}`),
    );
    t.deepEqual(
      rowsIn(qualification, welderData.allWelders.nodes[0].qualificationStatus),
      rest.qualifications,
      on,
    );
    t.is(rest.qualifications.length, 1);
  }
});
