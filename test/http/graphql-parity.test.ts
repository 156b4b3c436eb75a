// GraphQL may do what REST may, for the same role, and no more (issue F6). PostGraphile generates
// create/update/delete mutations from the tables and grants; REST's rules live partly in the SQL
// functions that record and correct examinations (moving welds in the same transaction). So for
// every resource and role the same write is tried both ways and must be refused both ways or
// allowed both ways; the generated writes that would skip those functions (examinations and
// their link tables, a weld's status, deleting a WPS) must be absent or refused for every role.
//
// Names are read from the schema (one __schema introspection per world), never guessed: each
// table's GraphQL type is found by fields only it has, and its generated mutations by
// PostGraphile's naming (create<Type>, update<Type>, delete<Type>). Mutations select only
// clientMutationId (in every payload): effects are checked through REST and the database.
import test, { type ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const A = 'a.test';
const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
type Role = (typeof ROLES)[number];
/** The roles compared between REST and GraphQL. */
const COMPARED = ['viewer', 'inspector', 'engineer'] as const;

/** How a write ended: done, refused for the role, or not offered at all (REST 405, no mutation). */
type Outcome = 'allowed' | 'refused' | 'absent';
interface Attempt {
  outcome: Outcome | 'error';
  detail: string;
}

/**
 * Each table's GraphQL object type, found by fields it has (and, for link tables, by having no
 * rowId of its own). Only Node types (with an `id`) are considered, so aggregates and payloads
 * that repeat column names do not match.
 */
const TABLE_TYPES = {
  iso: { with: ['rowId', 'isoNumber', 'lineNumber'] },
  weld: { with: ['rowId', 'weldNumber', 'repairCycle'] },
  welder: { with: ['rowId', 'stamp', 'active'] },
  pqr: { with: ['rowId', 'pqrNumber', 'pNumbers'] },
  wps: { with: ['rowId', 'wpsNumber', 'thicknessMinIn'] },
  welderQualification: { with: ['rowId', 'welderId', 'qualifiedOn'] },
  testPackage: { with: ['rowId', 'packageNumber', 'testMedium'] },
  ndtRecord: { with: ['rowId', 'reportNumber', 'examinedOn'] },
  filmInterval: { with: ['rowId', 'label', 'defectCodes'] },
  inspection: { with: ['rowId', 'inspectorName', 'inspectedOn'] },
  wpsPqr: { with: ['wpsId', 'pqrId'], without: ['rowId'] },
  testPackageIso: { with: ['testPackageId', 'isoId'], without: ['rowId'] },
  testPackageWeld: { with: ['testPackageId', 'weldId'], without: ['rowId'] },
  ndtRecordWeld: { with: ['ndtRecordId', 'weldId'], without: ['rowId', 'filmIntervalId'] },
  filmIntervalWeld: { with: ['filmIntervalId', 'weldId'], without: ['rowId'] },
  inspectionWeld: { with: ['inspectionId', 'weldId'], without: ['rowId'] },
} as const;
type Table = keyof typeof TABLE_TYPES;

interface SchemaInfo {
  /** Mutation name -> the named type of its `input` argument. */
  mutations: Map<string, string>;
  /** Input object type -> its fields, each with its named type. */
  inputs: Map<string, Map<string, string>>;
  /** Object type -> the Query field listing its rows (a connection): Iso -> allIsos. */
  collections: Map<string, string>;
  /** Each table's GraphQL type name. */
  types: Record<Table, string>;
}

const TYPE_REF = 'type { kind name ofType { kind name ofType { kind name } } }';
const INTROSPECTION = `{ __schema {
  queryType { fields { name ${TYPE_REF} } }
  mutationType { fields { name args { name ${TYPE_REF} } } }
  types { kind name fields { name } inputFields { name ${TYPE_REF} } } } }`;

interface TypeRef {
  name: string | null;
  ofType?: TypeRef | null;
}
/** The named type under NON_NULL and LIST wrappers. */
const named = (type: TypeRef): string => type.name ?? (type.ofType ? named(type.ofType) : '');

async function readSchema(
  t: ExecutionContext,
  gql: (role: Role, query: string, variables?: object) => Promise<HttpResponse>,
): Promise<SchemaInfo> {
  const res = await gql('viewer', INTROSPECTION);
  if (res.json?.errors || !res.json?.data) throw new Error(`introspection: ${res.text}`);
  const { queryType, mutationType, types } = res.json.data.__schema;
  const mutations = new Map<string, string>();
  for (const field of mutationType.fields) {
    const input = field.args.find((a: { name: string }) => a.name === 'input');
    if (input) mutations.set(field.name, named(input.type));
  }
  const collections = new Map<string, string>();
  for (const field of queryType.fields) {
    const type = named(field.type);
    if (field.name.startsWith('all') && type.endsWith('Connection')) {
      collections.set(type.slice(0, -'Connection'.length), field.name);
    }
  }
  const inputs = new Map<string, Map<string, string>>();
  const objects: Array<{ name: string; fields: string[] }> = [];
  for (const type of types) {
    if (type.kind === 'INPUT_OBJECT') {
      inputs.set(
        type.name,
        new Map(
          type.inputFields.map((f: { name: string; type: TypeRef }) => [f.name, named(f.type)]),
        ),
      );
    } else if (type.kind === 'OBJECT') {
      objects.push({ name: type.name, fields: type.fields.map((f: { name: string }) => f.name) });
    }
  }
  const found = {} as Record<Table, string>;
  for (const [table, spec] of Object.entries(TABLE_TYPES) as Array<
    [Table, { with: readonly string[]; without?: readonly string[] }]
  >) {
    const matches = objects.filter(
      (o) =>
        o.fields.includes('id') &&
        spec.with.every((f) => o.fields.includes(f)) &&
        !(spec.without ?? []).some((f) => o.fields.includes(f)),
    );
    t.is(
      matches.length,
      1,
      `one GraphQL type for ${table}: ${matches.map((m) => m.name).join(', ')}`,
    );
    found[table] = matches[0]?.name ?? `<no type for ${table}>`;
  }
  return { mutations, inputs, collections, types: found };
}

interface World {
  port: number;
  owner: Awaited<ReturnType<typeof ownerClient>>;
  tenant: string;
  userIds: Record<Role, string>;
  rest: (
    role: Role,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => Promise<HttpResponse>;
  gql: (role: Role, query: string, variables?: object) => Promise<HttpResponse>;
  schema: SchemaInfo;
  /** Rows made by the owner, each with a fresh natural key. */
  make: ReturnType<typeof makers>;
}

/** The owner's fixture makers for tenant A; each returns the new row's id. */
function makers(owner: World['owner'], tenant: string) {
  let n = 0;
  const uniq = (prefix: string) => `${prefix}-${++n}`;
  const one = async (sql: string, params: unknown[] = []) =>
    (await owner.query<{ id: string }>(sql, [tenant, ...params])).rows[0]!.id;
  const make = {
    iso: () =>
      one(
        `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, $2, 'L-1') returning id`,
        [uniq('ISO')],
      ),
    weld: async (status = 'PENDING') =>
      one(
        `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status, welded_on)
         values ($1, $2, $3, 'BW', 6, $4, '2026-01-01') returning id`,
        [await make.iso(), uniq('W'), status],
      ),
    welder: () =>
      one(
        `insert into weld_public.welders (tenant_id, stamp, name) values ($1, $2, 'A Welder') returning id`,
        [uniq('S')],
      ),
    pqr: () =>
      one(
        `insert into weld_public.pqrs (tenant_id, pqr_number, process, p_numbers, thickness_tested_in)
         values ($1, $2, 'GTAW', '{1,1}', 0.5) returning id`,
        [uniq('PQR')],
      ),
    wps: () =>
      one(
        `insert into weld_public.wps (tenant_id, wps_number, process) values ($1, $2, 'GTAW') returning id`,
        [uniq('WPS')],
      ),
    qualification: async () =>
      one(
        `insert into weld_public.welder_qualifications (tenant_id, welder_id, process, qualified_on)
         values ($1, $2, 'GTAW', '2026-01-01') returning id`,
        [await make.welder()],
      ),
    testPackage: () =>
      one(
        `insert into weld_public.test_packages (tenant_id, package_number, test_medium)
         values ($1, $2, 'hydro') returning id`,
        [uniq('TP')],
      ),
    /** A row of a link table (no id of its own). */
    link: async (table: string, columns: [string, string], ids: [string, string]) => {
      await owner.query(
        `insert into weld_public.${table} (tenant_id, ${columns.join(', ')}) values ($1, $2, $3)`,
        [tenant, ...ids],
      );
    },
    uniq,
  };
  return make;
}

async function world(t: ExecutionContext): Promise<World> {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = (await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] })).id;
  await addRoleUsers(owner, 'alpha');
  const { rows } = await owner.query<{ role: Role; id: string }>(
    'select role, id from weld_public.users where tenant_id = $1',
    [tenant],
  );
  const userIds = Object.fromEntries(rows.map((r) => [r.role, r.id])) as Record<Role, string>;
  const { port } = await startServer(t, target);
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await login(port, A, role)).json.accessToken;
  const auth = (role: Role) => ({ authorization: `Bearer ${tokens[role]}` });
  const rest: World['rest'] = (role, method, path, body, headers = {}) =>
    request(port, { method, path, host: A, body, headers: { ...auth(role), ...headers } });
  const gql: World['gql'] = (role, query, variables) =>
    request(port, {
      method: 'POST',
      path: '/graphql',
      host: A,
      body: { query, variables },
      headers: auth(role),
    });
  const schema = await readSchema(t, gql);
  return { port, owner, tenant, userIds, rest, gql, schema, make: makers(owner, tenant) };
}

//------------------------------------------------------------------------------------------------
// Attempts, both ways

function restAttempt(res: HttpResponse): Attempt {
  const detail = `${res.status} ${res.text}`;
  if (res.status >= 200 && res.status < 300) return { outcome: 'allowed', detail };
  if (res.status === 403 && res.json?.type === '/problems/role-not-allowed') {
    return { outcome: 'refused', detail };
  }
  if (res.status === 405) return { outcome: 'absent', detail };
  return { outcome: 'error', detail };
}

/**
 * Runs a mutation with its whole input as one variable (typed from the schema), selecting
 * clientMutationId. Absent when the schema has no such mutation; refused when the database
 * refuses the role (the same problem type REST answers 403 with).
 */
async function mutate(w: World, role: Role, name: string, input: object): Promise<Attempt> {
  const inputType = w.schema.mutations.get(name);
  if (!inputType) return { outcome: 'absent', detail: `no mutation ${name}` };
  const res = await w.gql(
    role,
    `mutation ($input: ${inputType}!) { ${name}(input: $input) { clientMutationId } }`,
    { input },
  );
  const detail = `${name} as ${role}: ${res.status} ${res.text}`;
  const error = res.json?.errors?.[0];
  if (!error && res.json?.data?.[name]) return { outcome: 'allowed', detail };
  if (error?.extensions?.code === '/problems/role-not-allowed') {
    return { outcome: 'refused', detail };
  }
  return { outcome: 'error', detail };
}

/** The fields of a mutation's input, with their named types. */
const inputOf = (w: World, mutation: string) =>
  w.schema.inputs.get(w.schema.mutations.get(mutation) ?? '') ?? new Map<string, string>();

/** The field of a generated mutation's input that is not `id` or clientMutationId: the row or patch. */
function payloadField(w: World, mutation: string): string {
  const fields = [...inputOf(w, mutation).keys()];
  const rest = fields.filter((f) => f !== 'id' && f !== 'clientMutationId');
  if (rest.length !== 1) throw new Error(`${mutation}: input fields ${fields.join(', ')}`);
  return rest[0]!;
}

/** A generated create: create<Type>(input: {<object field>: values}). */
function create(w: World, role: Role, table: Table, values: object): Promise<Attempt> {
  const name = `create${w.schema.types[table]}`;
  if (!w.schema.mutations.has(name)) return Promise.resolve({ outcome: 'absent', detail: name });
  return mutate(w, role, name, { [payloadField(w, name)]: values });
}

/** A generated update of the row with this node id: update<Type>(input: {id, <patch>}). */
function update(
  w: World,
  role: Role,
  table: Table,
  nodeId: string,
  patch: object,
): Promise<Attempt> {
  const name = `update${w.schema.types[table]}`;
  if (!w.schema.mutations.has(name)) return Promise.resolve({ outcome: 'absent', detail: name });
  return mutate(w, role, name, { id: nodeId, [payloadField(w, name)]: patch });
}

function remove(w: World, role: Role, table: Table, nodeId: string): Promise<Attempt> {
  return mutate(w, role, `delete${w.schema.types[table]}`, { id: nodeId });
}

/** A row's node id, found through its collection's condition (as the admin, who reads all). */
async function nodeIdOf(w: World, table: Table, condition: Record<string, string>) {
  const type = w.schema.types[table];
  const collection = w.schema.collections.get(type) ?? `<no collection of ${type}>`;
  const res = await w.gql(
    'admin',
    `query ($c: ${type}Condition) { ${collection}(first: 2, condition: $c) { nodes { id } } }`,
    { c: condition },
  );
  const nodes = res.json?.data?.[collection]?.nodes;
  if (!nodes || nodes.length !== 1) throw new Error(`node of ${table}: ${res.text}`);
  return nodes[0].id as string;
}

/**
 * Makes both attempts for one role and asserts: the outcomes are the expected one, and the same
 * (REST may be 'absent' where GraphQL is refused or absent: neither writes).
 */
function compare(
  t: ExecutionContext,
  label: string,
  expected: Outcome,
  rest: Attempt,
  graphql: Attempt,
): void {
  t.not(rest.outcome, 'error', `${label} REST: ${rest.detail}`);
  t.not(graphql.outcome, 'error', `${label} GraphQL: ${graphql.detail}`);
  t.is(rest.outcome, expected, `${label} REST: ${rest.detail}`);
  if (expected === 'absent') {
    t.not(graphql.outcome, 'allowed', `${label} GraphQL must not: ${graphql.detail}`);
  } else {
    t.is(graphql.outcome, expected, `${label} GraphQL like REST: ${graphql.detail}`);
  }
}

/** What REST allows by role (issue F6): engineers write the project's data; examinations need an inspector. */
const engineerWrites = (role: Role): Outcome => (role === 'engineer' ? 'allowed' : 'refused');
const inspectorWrites = (role: Role): Outcome => (role === 'viewer' ? 'refused' : 'allowed');

//------------------------------------------------------------------------------------------------
// The project's data: ISOs, welds, welders, PQRs, WPSs, qualifications, test packages

test('ISOs, welds, welders: create, update, delete are allowed over GraphQL exactly when over REST', async (t) => {
  const w = await world(t);
  for (const role of COMPARED) {
    const expected = engineerWrites(role);
    // ISOs
    compare(
      t,
      `create ISO as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/isos', { isoNumber: w.make.uniq('R'), lineNumber: 'L' }),
      ),
      await create(w, role, 'iso', { isoNumber: w.make.uniq('G'), lineNumber: 'L' }),
    );
    const iso = await w.make.iso();
    compare(
      t,
      `update ISO as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/api/isos/${iso}`, { area: 'REST' })),
      await update(w, role, 'iso', await nodeIdOf(w, 'iso', { rowId: iso }), { area: 'GQL' }),
    );
    const [isoR, isoG] = [await w.make.iso(), await w.make.iso()];
    compare(
      t,
      `delete ISO as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/isos/${isoR}`)),
      await remove(w, role, 'iso', await nodeIdOf(w, 'iso', { rowId: isoG })),
    );

    // Welds (never deleted: voided instead)
    const host = await w.make.iso();
    const weld = { isoId: host, type: 'BW' };
    compare(
      t,
      `create weld as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/welds', { ...weld, size: 4, weldNumber: w.make.uniq('R') }),
      ),
      await create(w, role, 'weld', { ...weld, size: '4', weldNumber: w.make.uniq('G') }),
    );
    const existing = await w.make.weld();
    const weldNode = await nodeIdOf(w, 'weld', { rowId: existing });
    compare(
      t,
      `update weld as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/welds/${existing}`, { material: 'A106-B' })),
      await update(w, role, 'weld', weldNode, { material: 'A105' }),
    );
    compare(
      t,
      `delete weld as ${role}`,
      'absent',
      restAttempt(await w.rest(role, 'DELETE', `/api/welds/${existing}`)),
      await remove(w, role, 'weld', weldNode),
    );

    // Welders (deactivated, never deleted)
    compare(
      t,
      `create welder as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/welders', { stamp: w.make.uniq('R'), name: 'Rest' }),
      ),
      await create(w, role, 'welder', { stamp: w.make.uniq('G'), name: 'Graph' }),
    );
    const welder = await w.make.welder();
    const welderNode = await nodeIdOf(w, 'welder', { rowId: welder });
    compare(
      t,
      `update welder as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/welders/${welder}`, { active: false })),
      await update(w, role, 'welder', welderNode, { name: 'Renamed' }),
    );
    compare(
      t,
      `delete welder as ${role}`,
      'absent',
      restAttempt(await w.rest(role, 'DELETE', `/welders/${welder}`)),
      await remove(w, role, 'welder', welderNode),
    );
  }
  // Whatever was refused left the welders and welds in place.
  const { rows } = await w.owner.query<{ n: number }>(
    'select count(*)::int as n from weld_public.welders where tenant_id = $1',
    [w.tenant],
  );
  t.is(
    rows[0]!.n,
    COMPARED.length + 2,
    'one made per role, plus one created each way by the engineer',
  );
});

test('PQRs, WPSs and their PQR links: allowed over GraphQL exactly when over REST; a WPS is never deleted', async (t) => {
  const w = await world(t);
  for (const role of COMPARED) {
    const expected = engineerWrites(role);
    const pqr = { process: 'GTAW', pNumbers: ['1', '1'] };
    compare(
      t,
      `create PQR as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/pqrs', {
          ...pqr,
          pqrNumber: w.make.uniq('R'),
          thicknessTestedIn: 0.5,
        }),
      ),
      await create(w, role, 'pqr', {
        ...pqr,
        pqrNumber: w.make.uniq('G'),
        thicknessTestedIn: '0.5',
      }),
    );
    const existingPqr = await w.make.pqr();
    compare(
      t,
      `update PQR as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/pqrs/${existingPqr}`, { documentRef: 'R' })),
      await update(w, role, 'pqr', await nodeIdOf(w, 'pqr', { rowId: existingPqr }), {
        documentRef: 'G',
      }),
    );
    const [pqrR, pqrG] = [await w.make.pqr(), await w.make.pqr()];
    compare(
      t,
      `delete PQR as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/api/pqrs/${pqrR}`)),
      await remove(w, role, 'pqr', await nodeIdOf(w, 'pqr', { rowId: pqrG })),
    );

    compare(
      t,
      `create WPS as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/wps', { wpsNumber: w.make.uniq('R'), process: 'GTAW' }),
      ),
      await create(w, role, 'wps', { wpsNumber: w.make.uniq('G'), process: 'GTAW' }),
    );
    const wps = await w.make.wps();
    const wpsNode = await nodeIdOf(w, 'wps', { rowId: wps });
    compare(
      t,
      `update WPS as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/wps/${wps}`, { thicknessMinIn: 0.2 })),
      await update(w, role, 'wps', wpsNode, { thicknessMinIn: '0.1' }),
    );

    // The PQRs that back a WPS: REST replaces pqrIds; GraphQL adds and removes link rows. Each
    // way works on a WPS of its own, so one cannot undo what the other is about to try.
    const [wpsR, wpsG] = [wps, await w.make.wps()];
    const [keptR, keptG, addedR, addedG] = [
      await w.make.pqr(),
      await w.make.pqr(),
      await w.make.pqr(),
      await w.make.pqr(),
    ];
    await w.make.link('wps_pqrs', ['wps_id', 'pqr_id'], [wpsR, keptR]);
    await w.make.link('wps_pqrs', ['wps_id', 'pqr_id'], [wpsG, keptG]);
    compare(
      t,
      `link a PQR to a WPS as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/wps/${wpsR}`, { pqrIds: [keptR, addedR] })),
      await create(w, role, 'wpsPqr', { wpsId: wpsG, pqrId: addedG }),
    );
    compare(
      t,
      `unlink a PQR from a WPS as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'PATCH', `/api/wps/${wpsR}`, { pqrIds: [] })),
      await remove(w, role, 'wpsPqr', await nodeIdOf(w, 'wpsPqr', { wpsId: wpsG, pqrId: keptG })),
    );
    const links = await w.owner.query<{ wps_id: string; pqr_id: string }>(
      'select wps_id, pqr_id from weld_public.wps_pqrs where wps_id = any($1) order by wps_id',
      [[wpsR, wpsG]],
    );
    t.deepEqual(
      links.rows.map((l) => [l.wps_id, l.pqr_id]).sort(),
      (role === 'engineer'
        ? [[wpsG, addedG]]
        : [
            [wpsR, keptR],
            [wpsG, keptG],
          ]
      ).sort(),
      `the PQR links after ${role}`,
    );
  }
  // A WPS is superseded, never deleted: REST has no DELETE, and GraphQL none that works.
  for (const role of ROLES) {
    const wps = await w.make.wps();
    const res = await w.rest(role, 'DELETE', `/wps/${wps}`);
    t.is(res.status, 405, `REST DELETE /wps as ${role}`);
    const attempt = await remove(w, role, 'wps', await nodeIdOf(w, 'wps', { rowId: wps }));
    t.true(
      ['absent', 'refused'].includes(attempt.outcome),
      `delete WPS as ${role}: ${attempt.detail}`,
    );
    const left = await w.owner.query('select from weld_public.wps where id = $1', [wps]);
    t.is(left.rowCount, 1, `the WPS is still there after ${role}`);
  }
});

test('welder qualifications and test packages with their ISOs and welds: GraphQL like REST', async (t) => {
  const w = await world(t);
  for (const role of COMPARED) {
    const expected = engineerWrites(role);
    const welder = await w.make.welder();
    compare(
      t,
      `create qualification as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/welder-qualifications', {
          welderId: welder,
          process: 'SMAW',
          qualifiedOn: '2026-02-01',
        }),
      ),
      await create(w, role, 'welderQualification', {
        welderId: welder,
        process: 'GTAW',
        qualifiedOn: '2026-02-01',
      }),
    );
    const qualification = await w.make.qualification();
    compare(
      t,
      `update qualification as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/welder-qualifications/${qualification}`, {
          expiresOn: '2028-01-01',
        }),
      ),
      await update(
        w,
        role,
        'welderQualification',
        await nodeIdOf(w, 'welderQualification', { rowId: qualification }),
        { expiresOn: '2029-01-01' },
      ),
    );
    const [qR, qG] = [await w.make.qualification(), await w.make.qualification()];
    compare(
      t,
      `delete qualification as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/welder-qualifications/${qR}`)),
      await remove(
        w,
        role,
        'welderQualification',
        await nodeIdOf(w, 'welderQualification', { rowId: qG }),
      ),
    );

    compare(
      t,
      `create test package as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'POST', '/test-packages', {
          packageNumber: w.make.uniq('R'),
          testMedium: 'hydro',
        }),
      ),
      await create(w, role, 'testPackage', {
        packageNumber: w.make.uniq('G'),
        testMedium: 'pneumatic',
      }),
    );
    const pkg = await w.make.testPackage();
    compare(
      t,
      `update test package as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/api/test-packages/${pkg}`, { testPressurePsig: 150 }),
      ),
      await update(w, role, 'testPackage', await nodeIdOf(w, 'testPackage', { rowId: pkg }), {
        testPressurePsig: '225',
      }),
    );
    const [pkgR, pkgG] = [await w.make.testPackage(), await w.make.testPackage()];
    compare(
      t,
      `delete test package as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'DELETE', `/test-packages/${pkgR}`)),
      await remove(w, role, 'testPackage', await nodeIdOf(w, 'testPackage', { rowId: pkgG })),
    );

    // Membership: REST replaces isoIds / weldIds; GraphQL adds and removes link rows, each way
    // on a package of its own.
    for (const [table, link, member, column, list] of [
      ['testPackageIso', 'test_package_isos', () => w.make.iso(), 'isoId', 'isoIds'],
      ['testPackageWeld', 'test_package_welds', () => w.make.weld(), 'weldId', 'weldIds'],
    ] as const) {
      const [pkgR, pkgG] = [await w.make.testPackage(), await w.make.testPackage()];
      const [keptR, keptG, addedR, addedG] = [
        await member(),
        await member(),
        await member(),
        await member(),
      ];
      const dbColumn = column === 'isoId' ? 'iso_id' : 'weld_id';
      await w.make.link(link, ['test_package_id', dbColumn], [pkgR, keptR]);
      await w.make.link(link, ['test_package_id', dbColumn], [pkgG, keptG]);
      compare(
        t,
        `add to a test package's ${list} as ${role}`,
        expected,
        restAttempt(
          await w.rest(role, 'PATCH', `/test-packages/${pkgR}`, { [list]: [keptR, addedR] }),
        ),
        await create(w, role, table, { testPackageId: pkgG, [column]: addedG }),
      );
      compare(
        t,
        `remove from a test package's ${list} as ${role}`,
        expected,
        restAttempt(await w.rest(role, 'PATCH', `/test-packages/${pkgR}`, { [list]: [] })),
        await remove(
          w,
          role,
          table,
          await nodeIdOf(w, table, { testPackageId: pkgG, [column]: keptG }),
        ),
      );
      const members = await w.owner.query<{ package: string; member: string }>(
        `select test_package_id as package, ${dbColumn} as member from weld_public.${link}
          where test_package_id = any($1)`,
        [[pkgR, pkgG]],
      );
      t.deepEqual(
        members.rows.map((m) => [m.package, m.member]).sort(),
        (role === 'engineer'
          ? [[pkgG, addedG]]
          : [
              [pkgR, keptR],
              [pkgG, keptG],
            ]
        ).sort(),
        `the ${list} after ${role}`,
      );
    }
  }
});

//------------------------------------------------------------------------------------------------
// Examinations: only through the functions that move welds

/** The examination tables of the tenant, row by row, to see that nothing was written. */
async function examinationSnapshot(w: World): Promise<unknown> {
  const snapshot: Record<string, unknown> = {};
  for (const table of [
    'ndt_records',
    'ndt_record_welds',
    'film_intervals',
    'film_interval_welds',
    'inspections',
    'inspection_welds',
    'welds',
    'weld_status_history',
  ]) {
    // prettier-ignore
    const { rows } = await w.owner.query(
      `select to_jsonb(x) as row from weld_public.${table} x where tenant_id = $1 order by 1`,
      [w.tenant],
    );
    snapshot[table] = rows.map((r: { row: unknown }) => r.row);
  }
  return snapshot;
}

/** The id field of a custom mutation's input (recordId, inspectionId, ...), from the schema. */
function idField(w: World, mutation: string): string {
  const fields = [...inputOf(w, mutation).keys()];
  const ids = fields.filter((f) => /Id$/.test(f) && f !== 'clientMutationId');
  if (ids.length !== 1) throw new Error(`${mutation}: which field is the id? ${fields.join(', ')}`);
  return ids[0]!;
}

test('NDT records and inspections: recorded and corrected over GraphQL exactly when over REST', async (t) => {
  const w = await world(t);
  for (const name of ['recordNdt', 'correctNdtRecord', 'recordInspection', 'correctInspection']) {
    t.true(w.schema.mutations.has(name), `the schema offers ${name}`);
  }
  const ndt = (weldId: string, report: string) => ({
    method: 'UT',
    reportNumber: report,
    examinedOn: '2026-06-01',
    welds: [{ weldId, result: 'accepted' }],
  });
  const inspection = (weldId: string) => ({
    kind: 'visual',
    inspectedOn: '2026-06-01',
    result: 'accepted',
    weldIds: [weldId],
  });
  for (const role of COMPARED) {
    const expected = inspectorWrites(role);
    const [weldR, weldG] = [await w.make.weld(), await w.make.weld()];
    compare(
      t,
      `record NDT as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'POST', '/ndt-records', ndt(weldR, `R-${role}`))),
      await mutate(w, role, 'recordNdt', { record: ndt(weldG, `G-${role}`) }),
    );
    // Whoever recorded it, the weld moved only if the record was written.
    const moved = expected === 'allowed' ? 'ACCEPTED' : 'PENDING';
    for (const weldId of [weldR, weldG]) {
      t.is((await w.rest('viewer', 'GET', `/welds/${weldId}`)).json.status, moved, role);
    }

    const record = await w.rest(
      'admin',
      'POST',
      '/ndt-records',
      ndt(await w.make.weld(), w.make.uniq('ADM')),
    );
    t.is(record.status, 201, record.text);
    compare(
      t,
      `correct NDT as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/ndt-records/${record.json.id}`, {
          reason: 'REST correction',
          notes: 'R',
        }),
      ),
      await mutate(w, role, 'correctNdtRecord', {
        [idField(w, 'correctNdtRecord')]: record.json.id,
        changes: { notes: 'G' },
        reason: 'GraphQL correction',
      }),
    );

    compare(
      t,
      `record inspection as ${role}`,
      expected,
      restAttempt(await w.rest(role, 'POST', '/api/inspections', inspection(await w.make.weld()))),
      await mutate(w, role, 'recordInspection', { inspection: inspection(await w.make.weld()) }),
    );
    const existing = await w.rest('admin', 'POST', '/inspections', inspection(await w.make.weld()));
    t.is(existing.status, 201, existing.text);
    compare(
      t,
      `correct inspection as ${role}`,
      expected,
      restAttempt(
        await w.rest(role, 'PATCH', `/inspections/${existing.json.id}`, {
          reason: 'REST correction',
          notes: 'R',
        }),
      ),
      await mutate(w, role, 'correctInspection', {
        [idField(w, 'correctInspection')]: existing.json.id,
        changes: { notes: 'G' },
        reason: 'GraphQL correction',
      }),
    );
  }
  // The corrections that went through are the ones REST and GraphQL were allowed, with reasons.
  const { rows } = await w.owner.query<{ reason: string; n: number }>(
    `select reason, count(distinct record_id)::int as n from weld_public.examination_changes
      where tenant_id = $1 group by reason order by reason`,
    [w.tenant],
  );
  t.deepEqual(rows, [
    { reason: 'GraphQL correction', n: 4 }, // inspector and engineer, NDT and inspection
    { reason: 'REST correction', n: 4 },
  ]);
});

test('the generated writes of examinations and their links are absent or refused for every role', async (t) => {
  const w = await world(t);
  // An RT record with two welds, one on its film interval, and an inspection, made through REST.
  const [onFilm, offFilm, loose] = [await w.make.weld(), await w.make.weld(), await w.make.weld()];
  const rt = await w.rest('inspector', 'POST', '/ndt-records', {
    method: 'RT',
    reportNumber: 'RT-GEN',
    examinedOn: '2026-06-02',
    welds: [
      { weldId: onFilm, result: 'accepted' },
      { weldId: offFilm, result: 'accepted' },
    ],
    filmIntervals: [{ label: '0-1', result: 'accepted', defectCodes: [], weldIds: [onFilm] }],
  });
  t.is(rt.status, 201, rt.text);
  const recordId = rt.json.id as string;
  const intervalId = rt.json.filmIntervals[0].id as string;
  const inspection = await w.rest('inspector', 'POST', '/inspections', {
    kind: 'final',
    inspectedOn: '2026-06-02',
    result: 'accepted',
    weldIds: [onFilm],
  });
  t.is(inspection.status, 201, inspection.text);
  const inspectionId = inspection.json.id as string;

  const nodes = {
    ndtRecord: await nodeIdOf(w, 'ndtRecord', { rowId: recordId }),
    filmInterval: await nodeIdOf(w, 'filmInterval', { rowId: intervalId }),
    inspection: await nodeIdOf(w, 'inspection', { rowId: inspectionId }),
    ndtRecordWeld: await nodeIdOf(w, 'ndtRecordWeld', { ndtRecordId: recordId, weldId: offFilm }),
    filmIntervalWeld: await nodeIdOf(w, 'filmIntervalWeld', {
      filmIntervalId: intervalId,
      weldId: onFilm,
    }),
    inspectionWeld: await nodeIdOf(w, 'inspectionWeld', { inspectionId, weldId: onFilm }),
  };
  // Each generated write, with an input valid for its type: if it exists, only the database's
  // refusal may stop it (a GraphQL validation error would prove nothing).
  const attempts: Array<[string, (role: Role) => Promise<Attempt>]> = [
    ['createNdtRecord', (role) => create(w, role, 'ndtRecord', { method: 'UT', reportNumber: w.make.uniq('FORGED'), examinedOn: '2026-06-03', result: 'rejected' })], // prettier-ignore
    ['updateNdtRecord', (role) => update(w, role, 'ndtRecord', nodes.ndtRecord, { result: 'rejected' })], // prettier-ignore
    ['deleteNdtRecord', (role) => remove(w, role, 'ndtRecord', nodes.ndtRecord)],
    ['createNdtRecordWeld', (role) => create(w, role, 'ndtRecordWeld', { ndtRecordId: recordId, weldId: loose })], // prettier-ignore
    ['deleteNdtRecordWeld', (role) => remove(w, role, 'ndtRecordWeld', nodes.ndtRecordWeld)],
    ['createFilmInterval', (role) => create(w, role, 'filmInterval', { ndtRecordId: recordId, label: w.make.uniq('9'), result: 'rejected', defectCodes: ['PO'] })], // prettier-ignore
    ['updateFilmInterval', (role) => update(w, role, 'filmInterval', nodes.filmInterval, { result: 'rejected', defectCodes: ['CR'] })], // prettier-ignore
    ['deleteFilmInterval', (role) => remove(w, role, 'filmInterval', nodes.filmInterval)],
    ['createFilmIntervalWeld', (role) => create(w, role, 'filmIntervalWeld', { ndtRecordId: recordId, filmIntervalId: intervalId, weldId: offFilm })], // prettier-ignore
    ['deleteFilmIntervalWeld', (role) => remove(w, role, 'filmIntervalWeld', nodes.filmIntervalWeld)], // prettier-ignore
    ['createInspection', (role) => create(w, role, 'inspection', { kind: 'final', inspectorName: 'Forged', inspectedOn: '2026-06-03', result: 'accepted' })], // prettier-ignore
    ['updateInspection', (role) => update(w, role, 'inspection', nodes.inspection, { result: 'rejected' })], // prettier-ignore
    ['deleteInspection', (role) => remove(w, role, 'inspection', nodes.inspection)],
    ['createInspectionWeld', (role) => create(w, role, 'inspectionWeld', { inspectionId, weldId: loose })], // prettier-ignore
    ['deleteInspectionWeld', (role) => remove(w, role, 'inspectionWeld', nodes.inspectionWeld)],
  ];
  const before = await examinationSnapshot(w);
  for (const [label, attempt] of attempts) {
    for (const role of ROLES) {
      const result = await attempt(role);
      t.true(
        result.outcome === 'absent' || result.outcome === 'refused',
        `${label} as ${role} must be absent or refused: ${result.detail}`,
      );
    }
  }
  t.deepEqual(await examinationSnapshot(w), before, 'no examination row, weld or history changed');
  // And REST does not offer them either: records are corrected, never deleted.
  t.is((await w.rest('admin', 'DELETE', `/ndt-records/${recordId}`)).status, 405);
  t.is((await w.rest('admin', 'DELETE', `/api/inspections/${inspectionId}`)).status, 405);
});

//------------------------------------------------------------------------------------------------
// Welds move through recordNdt and changeWeldStatus only

test('recordNdt over GraphQL moves welds exactly like POST /ndt-records', async (t) => {
  const w = await world(t);
  const rtRecord = (report: string, failed: string, passed: string) => ({
    method: 'RT',
    reportNumber: report,
    examinedOn: '2026-07-01',
    technician: 'T. Ray',
    welds: [{ weldId: failed }, { weldId: passed }],
    filmIntervals: [
      { label: '0-1', result: 'rejected', defectCodes: ['IP'], weldIds: [failed] },
      { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [passed] },
    ],
  });
  const [failedR, passedR, failedG, passedG] = [
    await w.make.weld(),
    await w.make.weld('ACCEPTED'),
    await w.make.weld(),
    await w.make.weld('ACCEPTED'),
  ];
  // passed* were ACCEPTED already: an accepted result leaves them (no second history row).
  const viaRest = await w.rest(
    'inspector',
    'POST',
    '/ndt-records',
    rtRecord('RT-R', failedR, passedR),
  );
  t.is(viaRest.status, 201, viaRest.text);
  const viaGraphql = await mutate(w, 'inspector', 'recordNdt', {
    record: rtRecord('RT-G', failedG, passedG),
  });
  t.is(viaGraphql.outcome, 'allowed', viaGraphql.detail);
  const found = await w.rest('viewer', 'GET', `/ndt-records?weldId=${failedG}`);
  t.is(found.json.items.length, 1, 'the GraphQL record, readable over REST');
  const graphqlRecord = found.json.items[0];

  // The two records read alike, ids aside, and are the inspector's.
  interface RecordJson {
    method: string;
    result: string;
    technician: string | null;
    recordedBy: string;
    welds: Array<{ weldId: string; result: string }>;
    filmIntervals: Array<{ label: string; result: string; weldIds: string[] }>;
  }
  const comparable = (r: RecordJson, failed: string, passed: string) => ({
    method: r.method,
    result: r.result,
    technician: r.technician,
    recordedBy: r.recordedBy,
    welds: Object.fromEntries(
      r.welds.map((x) => [
        x.weldId === failed ? 'failed' : x.weldId === passed ? 'passed' : x.weldId,
        x.result,
      ]),
    ),
    intervals: r.filmIntervals.map((f) => [f.label, f.result, f.weldIds.length]),
  });
  t.deepEqual(
    comparable(graphqlRecord, failedG, passedG),
    comparable(viaRest.json, failedR, passedR),
  );
  t.is(graphqlRecord.recordedBy, w.userIds.inspector);

  // The welds moved alike: same statuses, same history, cause 'ndt' naming each one's record.
  for (const [failed, passed, recordId] of [
    [failedR, passedR, viaRest.json.id],
    [failedG, passedG, graphqlRecord.id],
  ] as const) {
    t.is((await w.rest('viewer', 'GET', `/welds/${failed}`)).json.status, 'REJECTED');
    t.is((await w.rest('viewer', 'GET', `/welds/${passed}`)).json.status, 'ACCEPTED');
    const history = (await w.rest('viewer', 'GET', `/welds/${failed}/history`)).json.items;
    t.is(history.length, 1);
    t.like(history[0], {
      fromStatus: 'PENDING',
      toStatus: 'REJECTED',
      cause: 'ndt',
      ndtRecordId: recordId,
      changedBy: w.userIds.inspector,
    });
    t.deepEqual((await w.rest('viewer', 'GET', `/welds/${passed}/history`)).json.items, []);
  }

  // A record the rules refuse is refused whole over GraphQL too, with REST's problem type.
  const voided = await w.make.weld('VOIDED');
  const pending = await w.make.weld();
  const refused = await mutate(w, 'inspector', 'recordNdt', {
    record: {
      method: 'UT',
      reportNumber: 'UT-VOID',
      examinedOn: '2026-07-02',
      welds: [
        { weldId: pending, result: 'accepted' },
        { weldId: voided, result: 'accepted' },
      ],
    },
  });
  t.is(refused.outcome, 'error');
  t.regex(refused.detail, /\/problems\/ndt-result-refused/);
  t.is((await w.rest('viewer', 'GET', `/welds/${pending}`)).json.status, 'PENDING');
  t.deepEqual((await w.rest('viewer', 'GET', `/ndt-records?weldId=${pending}`)).json.items, []);
});

test("a weld's status changes through changeWeldStatus only, never a generated updateWeld", async (t) => {
  const w = await world(t);
  const updateWeld = `update${w.schema.types.weld}`;
  t.true(
    w.schema.mutations.has(updateWeld),
    `${updateWeld} exists (engineers change other fields)`,
  );
  const patchType = inputOf(w, updateWeld).get(payloadField(w, updateWeld)) ?? '';
  const patchFields = [...(w.schema.inputs.get(patchType)?.keys() ?? [])];
  t.true(patchFields.includes('material'), `${patchType}: ${patchFields.join(', ')}`);
  for (const field of ['status', 'repairCycle', 'version', 'rowId']) {
    t.false(patchFields.includes(field), `${field} is not in ${patchType}`);
  }
  const weld = await w.make.weld();
  const node = await nodeIdOf(w, 'weld', { rowId: weld });
  for (const role of ROLES) {
    const attempt = await update(w, role, 'weld', node, { status: 'ACCEPTED' });
    t.not(attempt.outcome, 'allowed', `updateWeld with a status as ${role}: ${attempt.detail}`);
  }
  const { rows } = await w.owner.query<{ status: string; version: number }>(
    'select status, version from weld_public.welds where id = $1',
    [weld],
  );
  t.is(rows[0]!.status, 'PENDING');
  // An engineer's generated update of another field leaves the status alone.
  const material = await update(w, 'engineer', 'weld', node, { material: 'A333-6' });
  t.is(material.outcome, 'allowed', material.detail);
  // The lifecycle mutation is the way, with its history.
  const changed = await mutate(w, 'inspector', 'changeWeldStatus', {
    weldId: weld,
    newStatus: 'ACCEPTED',
  });
  t.is(changed.outcome, 'allowed', changed.detail);
  const read = await w.rest('viewer', 'GET', `/welds/${weld}`);
  t.like(read.json, { status: 'ACCEPTED', material: 'A333-6' });
  const history = (await w.rest('viewer', 'GET', `/welds/${weld}/history`)).json.items;
  t.is(history.length, 1);
  t.like(history[0], { toStatus: 'ACCEPTED', cause: 'user', changedBy: w.userIds.inspector });
});
