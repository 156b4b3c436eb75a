// What the GraphQL/REST parity tests (test/http/graphql-parity-*.test.ts) share: the names read
// from the schema (one __schema introspection per world, never guessed: each table's GraphQL type
// is found by fields only it has, and its generated mutations by PostGraphile's naming), the
// world, and the same write attempted both ways. Mutations select only clientMutationId (in
// every payload): effects are checked through REST and the database.
import type { ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from './auth.ts';
import { migratedDatabase } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { request, type HttpResponse } from './http.ts';
import { startServer } from './server.ts';

export const A = 'a.test';
export const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type Role = (typeof ROLES)[number];
/** The roles compared between REST and GraphQL. */
export const COMPARED = ['viewer', 'inspector', 'engineer'] as const;

/** How a write ended: done, refused for the role, or not offered at all (REST 405, no mutation). */
export type Outcome = 'allowed' | 'refused' | 'absent';
export interface Attempt {
  outcome: Outcome | 'error';
  detail: string;
}

/**
 * Each table's GraphQL object type, found by fields it has (and, for link tables, by having no
 * rowId of its own). Only Node types (with an `id`) are considered, so aggregates and payloads
 * that repeat column names do not match.
 */
export const TABLE_TYPES = {
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
export type Table = keyof typeof TABLE_TYPES;

export interface SchemaInfo {
  /** Mutation name -> the named type of its `input` argument. */
  mutations: Map<string, string>;
  /** Input object type -> its fields, each with its named type. */
  inputs: Map<string, Map<string, string>>;
  /** Object type -> the Query field listing its rows (a connection): Iso -> allIsos. */
  collections: Map<string, string>;
  /** Each table's GraphQL type name. */
  types: Record<Table, string>;
}

export const TYPE_REF = 'type { kind name ofType { kind name ofType { kind name } } }';
export const INTROSPECTION = `{ __schema {
  queryType { fields { name ${TYPE_REF} } }
  mutationType { fields { name args { name ${TYPE_REF} } } }
  types { kind name fields { name } inputFields { name ${TYPE_REF} } } } }`;

export interface TypeRef {
  name: string | null;
  ofType?: TypeRef | null;
}
/** The named type under NON_NULL and LIST wrappers. */
export const named = (type: TypeRef): string =>
  type.name ?? (type.ofType ? named(type.ofType) : '');

export async function readSchema(
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

export interface World {
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
export function makers(owner: World['owner'], tenant: string) {
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

export async function world(t: ExecutionContext): Promise<World> {
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

export function restAttempt(res: HttpResponse): Attempt {
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
export async function mutate(w: World, role: Role, name: string, input: object): Promise<Attempt> {
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
export const inputOf = (w: World, mutation: string) =>
  w.schema.inputs.get(w.schema.mutations.get(mutation) ?? '') ?? new Map<string, string>();

/** The field of a generated mutation's input that is not `id` or clientMutationId: the row or patch. */
export function payloadField(w: World, mutation: string): string {
  const fields = [...inputOf(w, mutation).keys()];
  const rest = fields.filter((f) => f !== 'id' && f !== 'clientMutationId');
  if (rest.length !== 1) throw new Error(`${mutation}: input fields ${fields.join(', ')}`);
  return rest[0]!;
}

/** A generated create: create<Type>(input: {<object field>: values}). */
export function create(w: World, role: Role, table: Table, values: object): Promise<Attempt> {
  const name = `create${w.schema.types[table]}`;
  if (!w.schema.mutations.has(name)) return Promise.resolve({ outcome: 'absent', detail: name });
  return mutate(w, role, name, { [payloadField(w, name)]: values });
}

/** A generated update of the row with this node id: update<Type>(input: {id, <patch>}). */
export function update(
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

export function remove(w: World, role: Role, table: Table, nodeId: string): Promise<Attempt> {
  return mutate(w, role, `delete${w.schema.types[table]}`, { id: nodeId });
}

/** A row's node id, found through its collection's condition (as the admin, who reads all). */
export async function nodeIdOf(w: World, table: Table, condition: Record<string, string>) {
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
export function compare(
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
export const engineerWrites = (role: Role): Outcome =>
  role === 'engineer' ? 'allowed' : 'refused';
export const inspectorWrites = (role: Role): Outcome => (role === 'viewer' ? 'refused' : 'allowed');
