// What a GraphQL query may cost (server/graphql-cost.ts): the numbers the rules give by hand, the
// ways a document used to slip past the page-size check (fragments, variables), aliases and
// nesting multiplied, the budget's edge, and the process's GRAPHQL_MAX_COST and
// GRAPHQL_STATEMENT_TIMEOUT_MS.
import test, { type ExecutionContext } from 'ava';
import {
  getIntrospectionQuery,
  parse,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'postgraphile/graphql';
import { addTenant } from '../../db/tenants.ts';
import { seedTenant } from '../../db/seed/index.ts';
import { ConfigError } from '../../db/config.ts';
import { GRAPHQL_DEFAULTS, loadConfig } from '../../server/config.ts';
import {
  checkGraphqlRequest,
  COMPUTED_COLUMN_WEIGHTS,
  INTROSPECTION_COST,
  MAX_FIELDS,
  MAX_INPUT_VALUES,
  MAX_QUERY_LENGTH,
  MAX_VALUE_DEPTH,
  operationCost,
  SCAN_WEIGHT,
} from '../../server/graphql-cost.ts';
import { createGraphql } from '../../server/graphql.ts';
import { createPool } from '../../db/database.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { spawnServer, startServer } from '../helpers/server.ts';

const HOST = 'cost.test';
const BUDGET = GRAPHQL_DEFAULTS.maxCost;
const cleanups: Array<() => unknown> = [];
const teardown = { teardown: (fn: () => unknown) => cleanups.push(fn) };
let schema: GraphQLSchema;
/** The computed columns of weld_public in the catalog: functions whose first argument is a row. */
let computedColumns: Array<{ relname: string; proname: string }>;
let gql: (query: string, variables?: object) => ReturnType<typeof request>;

test.before(async () => {
  const { target } = await migratedDatabase(teardown);
  const owner = await ownerClient(target);
  cleanups.push(() => owner.end());
  await addTenant(owner, { slug: 'cost', origins: [`http://${HOST}`] });
  await addRoleUsers(owner, 'cost');
  await owner.query('begin');
  await seedTenant(owner, 'cost', { isos: 12, weldsPerIso: 25, seed: 3 });
  await owner.query('commit');
  ({ rows: computedColumns } = await owner.query(`
    select c.relname, p.proname
      from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace
      join pg_class c on c.reltype = p.proargtypes[0]
     where n.nspname = 'weld_public' and p.pronargs >= 1`));

  // startServer only needs teardown of its context; the server lives as long as this file. Its
  // tests run at once with one viewer's token: the per-user limit is not what they test.
  const { port } = await startServer(teardown as unknown as ExecutionContext, target, {
    graphql: { requestsPerUser: 100, requestsPerTenant: 100 },
  });
  const token = (await login(port, HOST, 'viewer')).json.accessToken as string;
  gql = (query, variables) =>
    request(port, {
      method: 'POST',
      path: '/graphql',
      host: HOST,
      body: { query, variables },
      headers: { authorization: `Bearer ${token}` },
    });

  // The schema the server serves, for costing documents without running them.
  const pool = createPool(target.authenticatorUrl, { max: 2, onError: () => {} });
  const graphql = createGraphql(pool);
  cleanups.push(async () => {
    await graphql.release();
    await pool.end();
  });
  schema = await graphql.schema();
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

/** The cost of a document (its only operation), or the problem that refuses it. */
const cost = (query: string, variables: Record<string, unknown> = {}) =>
  checkGraphqlRequest(schema, { query, variables }, Number.MAX_VALUE);

const ANALYST_QUERIES = {
  byIso: `{ allWelds { groupedAggregates(groupBy: [ISO_ID, STATUS]) { keys count { rowId } } } }`,
  repair: `{
    examined: allWelds(filter: { status: { notIn: [PENDING, VOIDED] } }) {
      groupedAggregates(groupBy: WELDER_ID) { keys count { rowId } } }
    repaired: allWelds(filter: { repairCycle: { greaterThan: 0 } }) {
      groupedAggregates(groupBy: WELDER_ID) { keys count { rowId } } } }`,
  coverage: `{
    allIsos(first: 500, orderBy: LINE_NUMBER_ASC) { nodes { lineNumber isoNumber rtPercent
      buttWelds: welds(filter: { type: { in: ["BW", "TW"] }, status: { notEqualTo: VOIDED } }) { totalCount }
      radiographed: welds(filter: { type: { in: ["BW", "TW"] }, status: { notEqualTo: VOIDED }, ndtRecordWeldsExist: true }) { totalCount } } } }`,
};

/** 60 aliases of 500 welds, each with its ISO's 500 welds. */
const SIXTY_ALIASES = `{ ${Array.from(
  { length: 60 },
  (_, i) =>
    `a${i}: allWelds(first: 500) { nodes { iso { welds(first: 500) { nodes { rowId } } } } }`,
).join(' ')} }`;

test('the cost of a query is the number the rules give by hand', (t) => {
  t.is(SCAN_WEIGHT, 50);
  t.is(
    cost(`{
      allIsos(first: 10) {
        totalCount
        nodes {
          isoNumber
          welds(first: 20) { nodes { rowId status } }
        }
      } }`),
    // allIsos 1 + totalCount 50 + nodes 1 + 10 ISOs x (isoNumber 1 + welds 1 + nodes 1
    // + 20 welds x 2 fields)
    1 + 50 + 1 + 10 * (1 + 1 + 1 + 20 * 2),
  );
  // edges: the edge, its cursor and its node per row; pageInfo reads the page.
  t.is(
    cost('{ allWelds(last: 30) { edges { cursor node { rowId } } pageInfo { hasNextPage } } }'),
    1 + 1 + 30 * (1 + 1 + 1) + (1 + 30) + 1,
  );
  // offset: the skipped rows are read too.
  t.is(cost('{ allWelds(first: 1, offset: 99990) { nodes { rowId } } }'), 1 + 99_990 + 1 + 1);
  // groupedAggregates: a scan, and its groups counted as a full page (500).
  t.is(cost(ANALYST_QUERIES.byIso), 1 + SCAN_WEIGHT + 500 * 3);
  t.is(cost(ANALYST_QUERIES.repair), 2 * (1 + SCAN_WEIGHT + 500 * 3));
  t.is(cost(ANALYST_QUERIES.coverage), 1 + 1 + 500 * (3 + 2 * (1 + SCAN_WEIGHT)));
  for (const query of Object.values(ANALYST_QUERIES)) t.true(cost(query)! <= BUDGET / 1.9);
  // An interface costs what its costliest member would; introspection its fixed price.
  t.is(
    cost(`{ node(id: "x") { id ... on Weld { iso { welds(first: 5) { nodes { rowId } } } }
      ... on Iso { isoNumber } } __schema { types { name fields { name } } } __typename }`),
    1 + (1 + 1 + 1 + 1 + 5) + INTROSPECTION_COST + 1,
  );
});

test('computed columns cost their weight, filters what they look at; every computed column is priced', (t) => {
  const ready = COMPUTED_COLUMN_WEIGHTS['TestPackage.ready']!;
  t.true(ready >= 50, 'readiness walks a package: far from a stored value');
  t.is(cost('{ allTestPackages(first: 10) { nodes { rowId ready } } }'), 1 + 1 + 10 * (1 + ready));
  // A filter fills its page from rows it looks at; a computed column in it runs on each.
  t.is(
    cost('{ allWelds(first: 1, filter: { status: { equalTo: ACCEPTED } }) { nodes { rowId } } }'),
    1 + SCAN_WEIGHT + 1 + 1,
  );
  t.is(
    cost(`{ allTestPackages(first: 1, filter: { or: [{ ready: { equalTo: true } },
      { not: { ready: { equalTo: false } } }] }) { nodes { rowId } } }`),
    // Named twice, run twice on every row looked at.
    1 + SCAN_WEIGHT + 2 * SCAN_WEIGHT * ready + 1 + 1,
  );
  // A relation a filter follows is a scan per row looked at; a computed column on the related
  // row, or in an aggregate of related rows, runs on each of them.
  t.is(
    cost(
      '{ allTestPackageIsos(first: 1, filter: { testPackage: { ready: { equalTo: true } } }) { nodes { isoId } } }',
    ),
    1 + SCAN_WEIGHT + SCAN_WEIGHT + SCAN_WEIGHT * ready + 1 + 1,
  );
  t.true(
    cost(`{ allIsos(first: 1, filter: { testPackageIsos: { some: { testPackage: {
      ready: { equalTo: true } } } } }) { nodes { rowId } } }`)! >
      SCAN_WEIGHT * ready,
  );
  const state = COMPUTED_COLUMN_WEIGHTS['ExaminationSelection.state']!;
  t.is(
    cost(`{ allWelds(first: 1, filter: { examinationSelections: { aggregates: {
      distinctCount: { state: { equalTo: "2" } } } } }) { nodes { rowId } } }`),
    1 + SCAN_WEIGHT + SCAN_WEIGHT + SCAN_WEIGHT * state + 1 + 1,
  );
  // An order by an aggregate sorts every row by a subquery; by a stored column, it does not.
  t.is(
    cost(
      '{ allWelds(first: 1, orderBy: EXAMINATION_SELECTIONS_DISTINCT_COUNT_SELECTED_AT_DESC) { nodes { rowId } } }',
    ),
    1 + SCAN_WEIGHT + 1 + 1,
  );
  t.is(cost('{ allWelds(first: 1, orderBy: [WELD_NUMBER_ASC, NATURAL]) { nodes { rowId } } }'), 3);
  // A row's relation to its own table is a relation too; a computed column in an aggregate runs
  // on every row aggregated.
  t.is(
    cost(
      '{ allExaminationSelections(first: 1, filter: { causeSelection: { rowId: { isNull: false } } }) { nodes { rowId } } }',
    ),
    1 + SCAN_WEIGHT + SCAN_WEIGHT + 1 + 1,
  );
  t.is(
    cost('{ allExaminationSelections { aggregates { distinctCount { state rowId } } } }'),
    1 + SCAN_WEIGHT + 1 + SCAN_WEIGHT * state + 1,
  );
  // totalCount scans anyway: a filter on stored columns adds nothing to it.
  t.is(cost('{ allWelds(filter: { repairCycle: { greaterThan: 0 } }) { totalCount } }'), 1 + 50);

  // The request of the review: 12 aliases of 500 packages' readiness, refused before it runs.
  const twelve = `{ ${Array.from(
    { length: 12 },
    (_, i) => `a${i}: allTestPackages(first: 500) { nodes { ready } }`,
  ).join(' ')} }`;
  t.throws(() => checkGraphqlRequest(schema, { query: twelve }, BUDGET), {
    message: /costs 600024 and the budget is 100000/,
  });

  // Every computed column of the catalog has a weight, under its GraphQL name, on a type that
  // has that field; and every weight names a field that exists.
  t.true(computedColumns.length >= 11);
  const camel = (name: string) => name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
  for (const { relname, proname } of computedColumns) {
    const fieldName = camel(proname.slice(relname.length + 1));
    const priced = Object.keys(COMPUTED_COLUMN_WEIGHTS).filter((key) => {
      const [typeName, name] = key.split('.') as [string, string];
      const type = schema.getType(typeName);
      return (
        name === fieldName && type !== undefined && 'getFields' in type && name in type.getFields()
      );
    });
    t.true(priced.length >= 1, `${proname} (${fieldName}) has a weight`);
  }
  // One weight per function (Weld.checks and WpsDocument.checks share a field name).
  t.is(Object.keys(COMPUTED_COLUMN_WEIGHTS).length, computedColumns.length);
  for (const key of Object.keys(COMPUTED_COLUMN_WEIGHTS)) {
    const [typeName, name] = key.split('.') as [string, string];
    const type = schema.getType(typeName);
    t.true(type !== undefined && 'getFields' in type && name in type.getFields(), key);
  }
});

test('pageInfo reads rows: it needs a page size; many introspections are too costly', async (t) => {
  // Without first or last, pageInfo's cursors were computed from every row of the table.
  for (const query of [
    '{ allWelds { pageInfo { hasNextPage } } }',
    '{ allIsos(first: 2) { nodes { welds { pageInfo { endCursor } } } } }',
  ]) {
    const res = await gql(query);
    t.is(res.status, 400, query);
    t.is(res.json.type, '/problems/query-too-large');
    t.regex(res.json.detail, /pageInfo/);
  }
  const paged = await gql('{ allWelds(first: 2) { pageInfo { hasNextPage } } }');
  t.is(paged.status, 200);
  t.is(paged.json.data.allWelds.pageInfo.hasNextPage, true);

  const full = '__schema { types { name fields { name args { name } } } }';
  t.is((await gql(`{ ${full} }`)).status, 200, 'one introspection (GraphiQL) runs');
  const many = `{ ${Array.from({ length: 20 }, (_, i) => `s${i}: ${full}`).join(' ')} }`;
  const refused = await gql(many);
  t.is(refused.status, 400);
  t.is(refused.json.type, '/problems/query-too-costly');
});

test('the standard introspection query (GraphiQL, ruru, most tools) runs; deeper, aliased or recursive ones are refused', async (t) => {
  // graphql-js's query with GraphiQL's options: 14 selection sets deep, ofType nested 9 times.
  const standard = getIntrospectionQuery({
    descriptions: true,
    schemaDescription: true,
    inputValueDeprecation: true,
  });
  const answer = await gql(standard);
  t.is(answer.status, 200, JSON.stringify(answer.json).slice(0, 300));
  t.is(answer.json.data.__schema.queryType.name, 'Query');
  // One more ofType than the standard query needs.
  const deeper = standard.replace(
    /ofType \{\s*name\s*kind\s*\}/,
    'ofType { name kind ofType { name kind } }',
  );
  t.not(deeper, standard);
  const tooDeep = await gql(deeper);
  t.is(tooDeep.status, 400);
  t.is(tooDeep.json.type, '/problems/query-too-large');
  // One price for introspection holds only while it asks for each field once: no alias inside.
  const aliased = await gql(
    `{ __schema { types { fields { ${Array.from({ length: 50 }, (_, i) => `n${i}: name`).join(' ')} } } } }`,
  );
  t.is(aliased.status, 400);
  t.is(aliased.json.type, '/problems/query-too-large');
  t.regex(aliased.json.detail, /alias inside introspection/);
  const viaFragment = await gql(
    '{ __type(name: "Weld") { ...F } } fragment F on __Type { fields { a: name } }',
  );
  t.is(viaFragment.status, 400);
  t.is(viaFragment.json.type, '/problems/query-too-large');
  // Aliasing the introspection root itself is priced per alias: a tenth of __schema each, so a
  // request cannot ask for hundreds of copies of a large type.
  t.is((await gql('{ a: __type(name: "Weld") { name } }')).status, 200);
  const copies = (n: number) =>
    `{ ${Array.from({ length: n }, (_, i) => `a${i}: __type(name: "Query") { ...F }`).join(' ')} }
     fragment F on __Type { fields { name args { name type { name inputFields { name } } } } }`;
  t.is((await gql(copies(10))).status, 200);
  const many = await gql(copies(200));
  t.is(many.status, 400);
  t.is(many.json.type, '/problems/query-too-costly');
  // The classic recursive introspection (fields of the types of fields ...) stays refused (by
  // graphql-js's own introspection depth rule, which answers first).
  const recursive = await gql(
    '{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }',
  );
  t.is(recursive.status, 400);
  t.regex(JSON.stringify(recursive.json), /introspection depth exceeded/i);
});

test('fragments are inlined, aliases count apart, fields of one response key once', (t) => {
  const plain = cost('{ allWelds(first: 100) { nodes { rowId status } } }');
  t.is(plain, 1 + 1 + 100 * 2);
  t.is(
    cost(`{ allWelds(first: 100) { ...Rows } }
      fragment Rows on WeldConnection { ...Ids ... on WeldConnection { nodes { status } } }
      fragment Ids on WeldConnection { nodes { rowId } }`),
    plain,
    'named and inline fragments, one spreading another',
  );
  t.is(
    cost(
      '{ allWelds(first: 100) { nodes { rowId } nodes { rowId status } ...F ...F } } ' +
        'fragment F on WeldConnection { nodes { status } }',
    ),
    plain,
    'GraphQL merges fields of one response key and runs them once',
  );
  t.is(
    cost(
      '{ a: allWelds(first: 100) { nodes { rowId status } } b: allWelds(first: 100) { nodes { rowId status } } }',
    ),
    2 * plain!,
    'each alias runs',
  );
  t.is(cost(SIXTY_ALIASES), 60 * (1 + 1 + 500 * (1 + 1 + 1 + 500)));
});

test('variables: given, defaulted, and in @skip / @include', (t) => {
  const page = 'query ($n: Int = 300) { allWelds(first: $n) { nodes { rowId } } }';
  t.is(cost(page), 1 + 1 + 300);
  t.is(cost(page, { n: 7 }), 1 + 1 + 7);
  const skip =
    'query ($s: Boolean!) { allWelds(first: 10) { nodes { rowId status @skip(if: $s) } } }';
  t.is(cost(skip, { s: true }), 1 + 1 + 10);
  t.is(cost(skip, { s: false }), 1 + 1 + 20);
  t.is(
    cost(
      'query ($i: Boolean = false) { allWelds(first: 10) @include(if: $i) { nodes { rowId } } }',
    ),
    0,
  );
  // What GraphQL itself refuses is left to it: bad variables, unknown operations, invalid fields.
  t.is(cost(page, { n: 'many' }), undefined);
  t.is(checkGraphqlRequest(schema, { query: page, operationName: 'Other' }, 1), undefined);
  t.is(cost('{ allWelds(first: 1) { nodes { noSuchField } } }'), undefined);
  t.is(cost('{ allWelds(first: 1) { '), undefined);
});

test('the walk is linear in the document: a fragment reused under many aliases is costed once', (t) => {
  // Each level spreads the next under 20 aliases, 9 levels deep: 20^9 (5e11) fields if expanded.
  const levels = Array.from({ length: 9 }, (_, k) => {
    const inner = k === 8 ? '__typename' : `...L${k + 1}`;
    const aliases = Array.from({ length: 20 }, (_, i) => `q${i}: query { ${inner} }`).join(' ');
    return `fragment L${k} on Query { ${aliases} }`;
  });
  const document = parse(`{ ...L0 } ${levels.join(' ')}`);
  let expected = 1; // L8's __typename
  for (let k = 8; k >= 0; k--) expected = 20 * (1 + expected);
  const started = Date.now();
  t.is(
    operationCost(schema, document, document.definitions[0] as OperationDefinitionNode, {}),
    expected,
  );
  t.true(Date.now() - started < 1000);
  // A fragment cycle (validation rejects it first; analysed anyway, the walk still stops).
  const cyclic = parse(`{ allIsos(first: 1) { nodes { ...A } } }
    fragment A on Iso { welds(first: 1) { nodes { iso { ...A } } } }`);
  t.throws(
    () => operationCost(schema, cyclic, cyclic.definitions[0] as OperationDefinitionNode, {}),
    { message: /nests too deep/ },
  );
});

test('no fragment, variable or default slips a connection past the page size', async (t) => {
  const refused = async (query: string, variables?: object) => {
    const res = await gql(query, variables);
    t.is(res.status, 400, query);
    t.is(res.json.type, '/problems/query-too-large', query);
    t.regex(res.json.detail, /allWelds: give first or last, from 1 to 500/, query);
  };
  await refused(
    '{ allWelds(first: 100000) { ...F } } fragment F on WeldConnection { nodes { rowId } }',
  );
  await refused('{ allWelds { ... on WeldConnection { nodes { rowId } } } }');
  await refused(`{ allWelds(first: 501) { ...A } }
    fragment A on WeldConnection { ...B }
    fragment B on WeldConnection { edges { node { rowId } } }`);
  await refused(
    'query ($n: Int) { allWelds(first: $n) { ...F } } fragment F on WeldConnection { nodes { rowId } }',
    { n: 100000 },
  );
  await refused('query ($n: Int = 100000) { allWelds(first: $n) { nodes { rowId } } }');
  await refused('query ($n: Int = 100) { allWelds(first: $n) { nodes { rowId } } }', { n: 0 });
  // Nested, with the path to the field.
  const nested = await gql(
    '{ allIsos(first: 1) { nodes { buttWelds: welds { nodes { rowId } } } } }',
  );
  t.is(nested.json.type, '/problems/query-too-large');
  t.regex(nested.json.detail, /^allIsos\.nodes\.buttWelds: give first or last/);

  const fine = await gql(
    'query ($n: Int = 200) { allWelds(first: $n) { ...F } } fragment F on WeldConnection { nodes { rowId } }',
  );
  t.is(fine.status, 200);
  t.is(fine.json.data.allWelds.nodes.length, 200);
});

test("a query text over MAX_QUERY_LENGTH is refused before parsing; a syntax error stays GraphQL's", async (t) => {
  // Padding with a comment keeps the document valid: only its length decides.
  const query = '{ allIsos(first: 1) { nodes { isoNumber } } }';
  const pad = (length: number) => query + '\n#' + 'x'.repeat(length - query.length - 2);
  const longest = await gql(pad(MAX_QUERY_LENGTH));
  t.is(longest.status, 200);
  t.is(longest.json.data.allIsos.nodes.length, 1);
  const tooLong = await gql(pad(MAX_QUERY_LENGTH + 1));
  t.is(tooLong.status, 400);
  t.is(tooLong.json.type, '/problems/query-too-large');
  t.regex(tooLong.json.detail, /50001 characters long; at most 50000/);

  // Not parsable: GraphQL's own error with its location, not a problem document (the cost check
  // parses without locations; grafserv parses again and reports them).
  const broken = await gql('{ allIsos(first: 1) { nodes { isoNumber } }');
  t.is(broken.status, 400);
  t.is(broken.json.type, undefined);
  t.regex(broken.json.errors[0].message, /Syntax Error/);
  t.deepEqual(broken.json.errors[0].locations, [{ line: 1, column: 44 }]);

  // Over MAX_FIELDS selections (validation is quadratic in sibling aliases): refused unvalidated.
  const many = (n: number) =>
    `{ ${Array.from({ length: n }, (_, i) => `a${i}: allIsos(first: 1) { totalCount }`).join(' ')} }`;
  const over = await gql(many(MAX_FIELDS / 2 + 1)); // two fields per alias
  t.is(over.status, 400);
  t.is(over.json.type, '/problems/query-too-large');
  t.is(
    over.json.detail,
    `The query selects ${MAX_FIELDS + 2} fields; at most ${MAX_FIELDS} are accepted.`,
  );
  t.not((await gql(many(MAX_FIELDS / 2))).json.type, '/problems/query-too-large');

  // Values written in the document nest at most MAX_VALUE_DEPTH deep: a filter of 1,000 nots
  // (9 KB, cheap by cost) took a third of a second of planning from every request.
  const nots = (n: number) =>
    `{ allWelds(first: 1, filter: ${'{ not: '.repeat(n)}{ repairCycle: { equalTo: 0 } }${' }'.repeat(n)}) { nodes { rowId } } }`;
  for (const n of [MAX_VALUE_DEPTH, 1_000]) {
    const res = await gql(nots(n));
    t.is(res.status, 400, `${n} nots`);
    t.is(res.json.type, '/problems/query-too-large');
    t.regex(res.json.detail, /nests \d+ deep; at most 32 levels/);
  }
  // n nots and the column's filter: n + 2 levels.
  const fine = await gql(nots(MAX_VALUE_DEPTH - 2));
  t.is(fine.status, 200, JSON.stringify(fine.json));
  t.is(fine.json.errors, undefined);

  // At most MAX_INPUT_VALUES input values, in the document and in the variables: a filter of
  // 30,000 conditions (900 KB of variables) held every request for a second.
  const inList = (n: number) =>
    `{ allWelds(first: 1, filter: { repairCycle: { in: [${Array(n).fill(0).join(',')}] } }) { nodes { rowId } } }`;
  // first: 1, repairCycle and in are three values more than the list's items.
  const wide = await gql(inList(MAX_INPUT_VALUES - 2));
  t.is(wide.status, 400);
  t.is(wide.json.type, '/problems/query-too-large');
  t.regex(wide.json.detail, /writes 2501 input values; at most 2500/);
  t.is((await gql(inList(MAX_INPUT_VALUES - 3))).status, 200);
  const byVariables = (n: number) =>
    gql('query Q($f: WeldFilter) { allWelds(first: 1, filter: $f) { nodes { rowId } } }', {
      f: { or: Array.from({ length: n }, (_, i) => ({ repairCycle: { equalTo: i } })) },
    });
  // Each condition is three values (or's item, repairCycle, equalTo): 834 of them are over.
  const wideVariables = await byVariables(Math.ceil(MAX_INPUT_VALUES / 3) + 1);
  t.is(wideVariables.status, 400);
  t.regex(wideVariables.json.detail, /variables hold more than 2500 values/);
  t.is((await byVariables(800)).status, 200);
  // Bad values by the thousand: a few errors, not one per value.
  const bad = await gql(
    'query Q($f: WeldFilter) { allWelds(first: 1, filter: $f) { nodes { rowId } } }',
    {
      f: { or: Array.from({ length: 800 }, () => ({ repairCycle: { equalTo: 'x' } })) },
    },
  );
  t.is(bad.status, 400);
  t.true(
    bad.json.errors.length >= 1 && bad.json.errors.length <= 51,
    `${bad.json.errors.length} errors`,
  );

  // Nested deeper than the parser's stack: 400 query-too-large, not a 500, and again from cache.
  for (const deep of ['{a'.repeat(16_000), `{ a(x: ${'['.repeat(20_000)}) }`]) {
    for (let i = 0; i < 2; i++) {
      const res = await gql(deep);
      t.is(res.status, 400, deep.slice(0, 10));
      t.is(res.json.type, '/problems/query-too-large');
      t.is(res.json.detail, 'The query is nested too deeply to be read.');
    }
  }
});

test('aliases and nesting multiply; over the budget is 400 query-too-costly before it runs', async (t) => {
  const tooCostly = async (query: string, expected: number, variables?: object) => {
    const res = await gql(query, variables);
    t.is(res.status, 400);
    t.regex(String(res.headers['content-type']), /application\/problem\+json/);
    t.like(res.json, {
      type: '/problems/query-too-costly',
      title: 'Query too costly',
      status: 400,
      cost: expected,
      budget: BUDGET,
    });
    t.true(res.json.detail.includes(`costs ${expected} and the budget is ${BUDGET}`));
  };
  await tooCostly(SIXTY_ALIASES, 60 * (2 + 500 * 503));
  const nested =
    '{ allWelds(first: 500) { nodes { iso { welds(first: 500) { nodes { rowId } } } } } }';
  await tooCostly(nested, 2 + 500 * 503);
  const byVariables =
    'query ($n: Int = 500, $m: Int = 500) { allIsos(first: $n) { nodes { welds(first: $m) { nodes { rowId } } } } }';
  await tooCostly(byVariables, 2 + 500 * 502);

  const smaller = await gql(byVariables, { n: 10 });
  t.is(smaller.status, 200);
  t.is(smaller.json.data.allIsos.nodes.length, 10);
  const within = await gql(
    '{ allWelds(first: 100) { nodes { iso { welds(first: 100) { nodes { rowId } } } } } }',
  );
  t.is(within.status, 200);
  t.is(within.json.data.allWelds.nodes[0].iso.welds.nodes.length, 25);
});

test('the budget is inclusive: a query at it runs, one more is refused', async (t) => {
  // 200 ISOs x 497 welds: 2 + 200 x 499 = 99,802; __typename fillers make up the rest.
  const base = 2 + 200 * 499;
  const query = (fillers: number) =>
    `{ allIsos(first: 200) { nodes { welds(first: 497) { nodes { rowId } } } } ${Array.from(
      { length: fillers },
      (_, i) => `t${i}: __typename`,
    ).join(' ')} }`;
  t.is(cost(query(BUDGET - base)), BUDGET);
  const at = await gql(query(BUDGET - base));
  t.is(at.status, 200, JSON.stringify(at.json));
  t.is(at.json.data.allIsos.nodes.length, 12);
  const over = await gql(query(BUDGET - base + 1));
  t.is(over.status, 400);
  t.is(over.json.cost, BUDGET + 1);
});

test('the analyst queries of docs/graphql.md are within the budget and run', async (t) => {
  for (const [name, query] of Object.entries(ANALYST_QUERIES)) {
    const res = await gql(query);
    t.is(res.status, 200, name);
    t.is(res.json.errors, undefined, `${name}: ${JSON.stringify(res.json.errors)}`);
  }
});

test('GRAPHQL_MAX_COST, _STATEMENT_TIMEOUT_MS, _DEADLINE_MS, _POOL_MAX, _REQUESTS_PER_USER and _PER_TENANT: defaults, values, one line naming a bad one', (t) => {
  t.deepEqual(loadConfig({}).graphql, {
    maxCost: 100_000,
    statementTimeoutMs: 10_000,
    deadlineMs: 10_000,
    poolMax: 5,
    requestsPerUser: 2,
    requestsPerTenant: 4,
  });
  t.deepEqual(
    loadConfig({
      GRAPHQL_MAX_COST: '5000',
      GRAPHQL_STATEMENT_TIMEOUT_MS: '2500',
      GRAPHQL_DEADLINE_MS: '4000',
      GRAPHQL_POOL_MAX: '3',
      GRAPHQL_REQUESTS_PER_USER: '1',
      GRAPHQL_REQUESTS_PER_TENANT: '10',
    }).graphql,
    {
      maxCost: 5000,
      statementTimeoutMs: 2500,
      deadlineMs: 4000,
      poolMax: 3,
      requestsPerUser: 1,
      requestsPerTenant: 10,
    },
  );
  // The tenant's default leaves one connection of the pool to others (none to leave in a pool of
  // one); a user never has more than its tenant.
  t.like(loadConfig({ GRAPHQL_POOL_MAX: '12' }).graphql, {
    requestsPerUser: 2,
    requestsPerTenant: 11,
  });
  t.like(loadConfig({ GRAPHQL_POOL_MAX: '1' }).graphql, {
    requestsPerUser: 1,
    requestsPerTenant: 1,
  });
  t.like(loadConfig({ GRAPHQL_REQUESTS_PER_USER: '8', GRAPHQL_REQUESTS_PER_TENANT: '3' }).graphql, {
    requestsPerUser: 3,
    requestsPerTenant: 3,
  });
  for (const [name, value] of [
    ['GRAPHQL_MAX_COST', 'lots'],
    ['GRAPHQL_MAX_COST', '0'],
    ['GRAPHQL_MAX_COST', '1.5'],
    ['GRAPHQL_STATEMENT_TIMEOUT_MS', '10s'],
    ['GRAPHQL_STATEMENT_TIMEOUT_MS', '50'],
    ['GRAPHQL_STATEMENT_TIMEOUT_MS', '600001'],
    ['GRAPHQL_DEADLINE_MS', '99'],
    ['GRAPHQL_DEADLINE_MS', 'soon'],
    ['GRAPHQL_POOL_MAX', '0'],
    ['GRAPHQL_REQUESTS_PER_USER', '0'],
    ['GRAPHQL_REQUESTS_PER_TENANT', '-1'],
    ['GRAPHQL_REQUESTS_PER_TENANT', 'half'],
  ] as const) {
    t.throws(() => loadConfig({ [name]: value }), {
      instanceOf: ConfigError,
      message: new RegExp(`^Invalid configuration: ${name}: [^\\n]+$`),
    });
  }
});

/**
 * A database of the test's own with a tenant `slug` (at http://<slug>.test, one user per role) and
 * a report that takes as long as it is told to: `slowReport(seconds)`, a query field of the schema.
 */
async function slowReportsDatabase(t: ExecutionContext, slug: string) {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug, origins: [`http://${slug}.test`] });
  await addRoleUsers(owner, slug);
  await owner.query(`
    create function weld_public.slow_report(seconds double precision) returns integer
      language sql stable as $$ select 1 from pg_sleep(seconds) $$;
    grant execute on function weld_public.slow_report(double precision) to weld_viewer`);
  return { rootUrl, owner };
}

test('the process: GRAPHQL_MAX_COST sets the budget, GRAPHQL_STATEMENT_TIMEOUT_MS cancels a slow query', async (t) => {
  const { rootUrl, owner } = await slowReportsDatabase(t, 'slow');
  await owner.query('begin');
  await seedTenant(owner, 'slow', { isos: 2, weldsPerIso: 5, seed: 4 });
  await owner.query('commit');

  const server = await spawnServer(t, {
    DATABASE_URL: rootUrl,
    GRAPHQL_MAX_COST: '1000',
    GRAPHQL_STATEMENT_TIMEOUT_MS: '300',
  });
  const token = (await login(server.port, 'slow.test', 'viewer')).json.accessToken as string;
  const post = (query: string) =>
    request(server.port, {
      method: 'POST',
      path: '/graphql',
      host: 'slow.test',
      body: { query },
      headers: { authorization: `Bearer ${token}` },
    });

  const at = await post('{ allWelds(first: 499) { nodes { rowId status } } }'); // 2 + 998
  t.is(at.status, 200);
  t.is(at.json.data.allWelds.nodes.length, 10);
  const over = await post('{ allWelds(first: 500) { nodes { rowId status } } }');
  t.like(over.json, { type: '/problems/query-too-costly', cost: 1002, budget: 1000 });

  t.deepEqual((await post('{ slowReport(seconds: 0.01) }')).json, { data: { slowReport: 1 } });
  const started = Date.now();
  const slow = await post('{ slowReport(seconds: 5) }');
  t.true(Date.now() - started < 3000, 'cancelled by the 300 ms timeout, not the pool 30 s');
  t.is(slow.status, 200);
  t.is(slow.json.data?.slowReport ?? null, null);
  t.like(slow.json.errors?.[0], {
    message: 'The request took too long and was cancelled.',
    path: ['slowReport'],
    extensions: { code: '/problems/timeout', status: 503 },
  });
  // The timeout ended with its transaction: the pool's connections are as they were.
  const rest = await request(server.port, {
    path: '/welds?limit=1',
    host: 'slow.test',
    headers: { authorization: `Bearer ${token}` },
  });
  t.is(rest.status, 200);
  t.is(await server.stop(), 0);
});

test('the process: GraphQL has its own pool, so slow reports never hold REST waiting', async (t) => {
  const { rootUrl } = await slowReportsDatabase(t, 'busy');
  const server = await spawnServer(t, {
    DATABASE_URL: rootUrl,
    DB_POOL_MAX: '3',
    GRAPHQL_POOL_MAX: '2',
    // One user sends all six at once: its own limits must not be what holds them back here.
    GRAPHQL_REQUESTS_PER_USER: '6',
    GRAPHQL_REQUESTS_PER_TENANT: '6',
  });
  const token = (await login(server.port, 'busy.test', 'viewer')).json.accessToken as string;
  const headers = { authorization: `Bearer ${token}` };
  // Six reports of 2 s each: more than both pools together could run at once.
  const reports = Array.from({ length: 6 }, () =>
    request(server.port, {
      method: 'POST',
      path: '/graphql',
      host: 'busy.test',
      body: { query: '{ slowReport(seconds: 2) }' },
      headers,
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  const started = Date.now();
  const rest = await request(server.port, { path: '/isos?limit=1', host: 'busy.test', headers });
  const waited = Date.now() - started;
  t.is(rest.status, 200);
  t.true(waited < 1000, `REST waited ${waited} ms behind the reports`);
  for (const report of await Promise.all(reports)) {
    t.deepEqual(report.json, { data: { slowReport: 1 } });
  }
  t.is(await server.stop(), 0);
});
