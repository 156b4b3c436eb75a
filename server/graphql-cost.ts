// What a GraphQL request may cost, decided before it runs, on the document as GraphQL will execute
// it: the operation that runs, fragments (named and inline) inlined, @skip/@include applied,
// variables coerced with their defaults, fields that share a response key merged (GraphQL runs
// them once) and aliases counted apart (GraphQL runs each one).
//
// The cost is the number of values the response can hold, at most:
//   - every field costs 1 for each object it is selected on;
//   - a connection's `nodes` and `edges` repeat what is under them `first` (or `last`) times;
//     those two and `pageInfo` (whose cursors are computed from the rows) need first or last from
//     1 to 500: a connection that reads rows without a page size is refused, naming the field;
//     pageInfo itself costs the page it reads;
//   - `offset` rows are read and thrown away: a connection costs its offset on top;
//   - other lists of objects (groupedAggregates) count as PAGE_SIZE.max (500) entries;
//   - totalCount, aggregates and groupedAggregates read every matching row, not a page: each
//     costs SCAN_WEIGHT (50) instead of 1;
//   - a computed column (a SQL function of the row: readiness, checks, qualification status,
//     examination) costs its weight in COMPUTED_COLUMN_WEIGHTS per object, what it takes next to
//     reading a stored value (measured: bench/RESULTS.md, "GraphQL computed columns");
//   - a `filter` reads rows until the page is full, which may be all of them: a connection that
//     returns rows costs SCAN_WEIGHT more when filtered, each relation the filter follows
//     SCAN_WEIGHT more, and every computed column it names (on the row, a related row, or in an
//     aggregate) SCAN_WEIGHT times its weight: it runs on each row the filter looks at;
//   - an `orderBy` by an aggregate sorts every row by a subquery: SCAN_WEIGHT (by a computed
//     column, SCAN_WEIGHT times its weight);
//   - input values written in the document nest at most MAX_VALUE_DEPTH deep (planning a deep
//     filter is slow and happens before the deadline runs);
//   - introspection reads the schema, not the database, but a full one is megabytes: __schema
//     costs INTROSPECTION_COST (10,000: one per request is fine, GraphiQL needs one), __type a
//     tenth of that, __typename 1; an alias inside either is refused (it would repeat a
//     schema-sized list at that one price).
// So a page multiplies everything under it, and nesting multiplies pages: 500 welds, each with
// its ISO's 500 welds, is 250,000 values, however the document spells it.
//
// Documents that do not parse or validate are not ours to judge: grafserv answers them with its
// usual GraphQL errors. A query text over MAX_QUERY_LENGTH characters or MAX_FIELDS fields, over
// the depth limit or without a page size is 400 /problems/query-too-large; one over the budget is 400
// /problems/query-too-costly.
import { depthLimit } from '@graphile/depth-limit';
import {
  getArgumentValues,
  getDirectiveValues,
  getNamedType,
  getNullableType,
  getOperationAST,
  getVariableValues,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLObjectType,
  GraphQLSkipDirective,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isObjectType,
  Kind,
  parse,
  typeFromAST,
  validate,
  visit,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLEnumType,
  type GraphQLInputObjectType,
  type GraphQLField,
  type GraphQLSchema,
  type NamedTypeNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type ValidationRule,
} from 'postgraphile/graphql';
import { PAGE_SIZE } from '../db/vocabulary.ts';
import { HttpProblem, problemOf } from '../rest-adapter/http/problem.ts';

/**
 * Depth limits. Introspection gets what the standard introspection query needs and no more:
 * graphql-js's getIntrospectionQuery (what GraphiQL, ruru and most GraphQL tools send) is 14
 * selection sets deep with `ofType` nested 9 times, over @graphile/depth-limit's defaults (12
 * and 8), which refused it. Its other introspection limits (each introspection field nested once
 * or twice) still stop the recursive introspection attacks.
 */
export const DEPTH = {
  maxDepth: 10,
  maxListDepth: 4,
  maxIntrospectionDepth: 14,
  maxDepthByFieldCoordinates: { '__Type.ofType': 9 },
};
/**
 * The longest query text accepted. A long report with fragments is a few thousand characters;
 * parsing is linear but its syntax tree is about 30 times the text, and both the verdicts below
 * and grafserv keep parsed documents: a bound on the text bounds what they hold.
 */
export const MAX_QUERY_LENGTH = 50_000;
/** The most field selections a document may spell (fragments counted once, where defined). */
export const MAX_FIELDS = 1_000;
/**
 * How deep input values written in the document may nest (objects and lists: a filter's and, or,
 * not). Planning a filter takes time that grows faster than its depth, on the event loop and
 * before the deadline runs: 1,000 levels of `not` (9 KB of text) held every request for a third
 * of a second. Variables are JSON, bounded by MAX_JSON_DEPTH (rest-adapter/http/route.ts) to the same.
 */
export const MAX_VALUE_DEPTH = 32;
/**
 * How many input values a request may carry, in its document and in its variables each (every
 * scalar, list item and object field counts). Coercing and planning them is CPU on the event loop
 * before the deadline runs: a filter `or` of 30,000 conditions in 900 KB of variables held every
 * request for a second. 2,500 is a filter of hundreds of conditions, or a record of hundreds of
 * welds.
 */
export const MAX_INPUT_VALUES = 2_500;
/** What totalCount, aggregates and groupedAggregates cost: they scan the rows, not a page. */
export const SCAN_WEIGHT = 50;
/**
 * What a computed column costs per object, where a stored value costs 1. One unit is about 0.1 ms
 * of database time (the budget, 100,000, is about the deadline, 10 s): readiness walks every weld
 * of a package, a weld's checks run every code rule on it, an ISO's examination its lots. Every
 * computed column of the schema is here (test/http/graphql-cost.test.ts checks it against the
 * catalog), so a new one cannot join at the price of a stored value.
 */
export const COMPUTED_COLUMN_WEIGHTS: Readonly<Record<string, number>> = {
  'TestPackage.ready': 100,
  'TestPackage.readinessReasons': 100,
  'Iso.examination': 20,
  'Weld.checks': 10,
  'Welder.qualificationStatus': 10,
  'Welder.continuity': 5,
  'WpsDocument.checks': 5,
  'ExaminationSelection.state': 5,
  'ExaminationSelection.inspectionId': 5,
  'ExaminationSelection.ndtRecordId': 5,
  'NdtRecordWeld.effectiveResult': 2,
  // One index lookup: the NDT record or inspection an acceptance rests on.
  'Weld.acceptance': 2,
  // Two index lookups (either side of a weld) per component.
  'Component.welds': 2,
};
/** The costliest computed column of each field name (for filters that do not name their row). */
const COMPUTED_WEIGHT_BY_NAME = new Map<string, number>();
for (const [key, weight] of Object.entries(COMPUTED_COLUMN_WEIGHTS)) {
  const name = key.split('.')[1]!;
  COMPUTED_WEIGHT_BY_NAME.set(name, Math.max(weight, COMPUTED_WEIGHT_BY_NAME.get(name) ?? 0));
}
/** Fields of a connection that read every matching row. */
const SCANNING_FIELDS = new Set(['totalCount', 'aggregates', 'groupedAggregates']);
/** Fields of a connection that repeat what is under them for each row of the page. */
const ROW_FIELDS = new Set(['nodes', 'edges']);
/** Fields of a connection that read its rows, and so need a page size. */
const PAGED_FIELDS = new Set(['nodes', 'edges', 'pageInfo']);
/** What introspection costs: __schema answers with the whole schema. */
export const INTROSPECTION_COST = 10_000;
const META_FIELD_COST: Record<string, number> = {
  __schema: INTROSPECTION_COST,
  // One type can answer with much of the schema (Query's fields with their filter inputs, a few
  // hundred kB): a tenth, so a request holds at most about a hundred, as it holds ten __schema.
  __type: INTROSPECTION_COST / 10,
};
/** A walk deeper than this is a fragment cycle (validation rejects those first; this is a guard). */
const MAX_NESTING = 64;

export interface GraphqlRequestBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

export function tooLarge(detail: string): HttpProblem {
  return problemOf('query-too-large', {
    detail,
  });
}

export function tooCostly(cost: number, budget: number): HttpProblem {
  return problemOf('query-too-costly', {
    detail:
      `The query costs ${cost} and the budget is ${budget}: each field counts once per object it ` +
      'is selected on, and page sizes multiply what is under them. Ask for smaller pages ' +
      '(first/last), fewer aliases or less nesting.',
    extensions: { cost, budget },
  });
}

/**
 * The document of a query text if it parses and validates (undefined if not: GraphQL answers it),
 * or the depth limit's message. Parsing and validating cost more than running a small query, and
 * clients send the same few texts again and again: the verdicts of the last CACHED texts are kept,
 * per schema, up to CACHED_CHARACTERS of query text in all (a document's tree is many times its
 * text, so the bound is on the text, not on the count alone).
 */
function checkedDocument(schema: GraphQLSchema, query: string): DocumentNode | string | undefined {
  let cache = verdicts.get(schema);
  if (!cache) verdicts.set(schema, (cache = { texts: new Map(), characters: 0 }));
  const cached = cache.texts.get(query);
  if (cached !== undefined || cache.texts.has(query)) {
    cache.texts.delete(query); // and set again below: the Map's order is the recency order
    cache.texts.set(query, cached);
    return cached;
  }
  let verdict: DocumentNode | string | undefined;
  try {
    // Without locations the tree is about a third smaller; the cost walk does not need them.
    const document = parse(query, { noLocation: true });
    // Validation compares fields of one response key pairwise (OverlappingFieldsCanBeMerged):
    // quadratic, so a 50,000-character text of sibling aliases took half a second of CPU.
    // Counting is linear; a document over MAX_FIELDS is refused before it is validated.
    let fields = 0;
    let valueDepth = 0;
    let deepest = 0;
    let values = 0;
    const enterValue = () => void (deepest = Math.max(deepest, ++valueDepth));
    const leaveValue = () => void valueDepth--;
    const countValue = () => void values++;
    visit(document, {
      Field: () => void fields++,
      ObjectValue: { enter: enterValue, leave: leaveValue },
      ListValue: { enter: enterValue, leave: leaveValue },
      ObjectField: countValue,
      IntValue: countValue,
      FloatValue: countValue,
      StringValue: countValue,
      BooleanValue: countValue,
      NullValue: countValue,
      EnumValue: countValue,
    });
    if (fields > MAX_FIELDS) {
      verdict = `The query selects ${fields} fields; at most ${MAX_FIELDS} are accepted.`;
    } else if (deepest > MAX_VALUE_DEPTH) {
      verdict = `An argument's value nests ${deepest} deep; at most ${MAX_VALUE_DEPTH} levels are accepted.`;
    } else if (values > MAX_INPUT_VALUES) {
      verdict = `The query writes ${values} input values; at most ${MAX_INPUT_VALUES} are accepted.`;
    } else if (validate(schema, document).length === 0) {
      const depthErrors = validate(schema, document, [depthLimit(DEPTH), noAliasInIntrospection]);
      verdict = depthErrors.length > 0 ? depthErrors[0]!.message : document;
    }
  } catch (error) {
    // graphql-js parses and validates recursively: a document nested thousands deep overflows
    // the stack. Refused (and remembered) like any query over the depth limit. A GraphQLError is
    // a bad document, which GraphQL answers; anything else is a bug (a 500).
    if (error instanceof RangeError) verdict = 'The query is nested too deeply to be read.';
    else if (!(error instanceof GraphQLError)) throw error;
  }
  cache.texts.set(query, verdict);
  cache.characters += query.length;
  while (cache.texts.size > CACHED || cache.characters > CACHED_CHARACTERS) {
    const oldest = cache.texts.keys().next().value!;
    cache.texts.delete(oldest);
    cache.characters -= oldest.length;
  }
  return verdict;
}
/**
 * Introspection has one price whatever it selects, which is fair only while each field of the
 * schema appears once in the answer: an alias inside it (`types { fields { a1: name a2: name
 * ... } }`) would repeat a schema-sized list at that price. The standard introspection queries use
 * none; aliasing the root (`a: __type(...)`) stays allowed, priced per alias.
 */
const noAliasInIntrospection: ValidationRule = (context) => ({
  Field(node) {
    const parent = context.getParentType();
    if (node.alias && node.alias.value !== node.name.value && parent?.name.startsWith('__')) {
      context.reportError(
        new GraphQLError(
          `An alias inside introspection (${node.alias.value} on ${parent.name}) is not accepted: ask for each field once.`,
        ),
      );
    }
  },
});

const CACHED = 200;
const CACHED_CHARACTERS = 200_000;
const verdicts = new WeakMap<
  GraphQLSchema,
  { texts: Map<string, DocumentNode | string | undefined>; characters: number }
>();

/**
 * Checks a POST /graphql body against the depth limit, the page-size rule and the budget; throws
 * the HttpProblem that refuses it. Returns the cost of what will run, or undefined when GraphQL
 * itself will refuse the request (syntax, validation, unknown operation, bad variables).
 */
export function checkGraphqlRequest(
  schema: GraphQLSchema,
  body: GraphqlRequestBody | undefined,
  budget: number,
): number | undefined {
  if (typeof body?.query !== 'string') return undefined;
  if (body.query.length > MAX_QUERY_LENGTH) {
    throw tooLarge(
      `The query text is ${body.query.length} characters long; at most ${MAX_QUERY_LENGTH} are ` +
        'accepted. Use fragments and variables rather than repeating selections.',
    );
  }
  const checked = checkedDocument(schema, body.query);
  if (typeof checked === 'string') throw tooLarge(checked);
  if (!checked) return undefined;
  const document = checked;

  const operationName = typeof body.operationName === 'string' ? body.operationName : undefined;
  const operation = getOperationAST(document, operationName);
  if (!operation) return undefined;
  const inputs = body.variables ?? {};
  if (typeof inputs !== 'object' || Array.isArray(inputs)) return undefined;
  if (!withinValues(inputs, MAX_INPUT_VALUES)) {
    throw tooLarge(
      `The variables hold more than ${MAX_INPUT_VALUES} values; at most that many are accepted.`,
    );
  }
  const coerced = getVariableValues(
    schema,
    operation.variableDefinitions ?? [],
    inputs as Record<string, unknown>,
    // Each error is a line of the answer: a few say what is wrong.
    { maxErrors: 50 },
  );
  if (coerced.errors) return undefined;

  const cost = operationCost(schema, document, operation, coerced.coerced);
  if (cost > budget) throw tooCostly(cost, budget);
  return cost;
}

/** Whether a JSON value holds at most `limit` values (scalars, list items, object fields). */
function withinValues(value: unknown, limit: number): boolean {
  const stack: unknown[] = [value];
  let count = 0;
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next !== 'object' || next === null) continue;
    const inner: unknown[] = Array.isArray(next) ? (next as unknown[]) : Object.values(next);
    count += inner.length;
    if (count > limit) return false;
    stack.push(...inner);
  }
  return true;
}

/**
 * The cost of one operation of a valid document, with its variables already coerced. Throws
 * /problems/query-too-large for a connection that returns rows without a page size from 1 to 500.
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): number {
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  const fragments = new Map(
    document.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((d) => [d.name.value, d]),
  );
  return new CostWalk(schema, fragments, variables).objectCost(
    root,
    [operation.selectionSet],
    [],
    undefined,
  );
}

/**
 * One walk over an operation. Costs are per object: a field's cost is multiplied by how many
 * values its parent yields. Results are memoised per (type, page size, selection sets), so a
 * fragment reused under many aliases is costed once, not once per expansion.
 */
class CostWalk {
  private readonly memo = new Map<string, number>();
  private readonly ids = new Map<SelectionSetNode, number>();
  private readonly schema: GraphQLSchema;
  private readonly fragments: Map<string, FragmentDefinitionNode>;
  private readonly variables: Record<string, unknown>;

  constructor(
    schema: GraphQLSchema,
    fragments: Map<string, FragmentDefinitionNode>,
    variables: Record<string, unknown>,
  ) {
    this.schema = schema;
    this.fragments = fragments;
    this.variables = variables;
  }

  /** Per value of `type`: an interface or union costs what its costliest member would. */
  selectionCost(
    type: GraphQLCompositeType,
    sets: SelectionSetNode[],
    path: string[],
    page: number | undefined,
  ): number {
    const candidates = isAbstractType(type) ? this.schema.getPossibleTypes(type) : [type];
    return Math.max(0, ...candidates.map((object) => this.objectCost(object, sets, path, page)));
  }

  /**
   * The fields selected on one object of `object`; `page` is the page size when `object` is a
   * connection (what its nodes and edges repeat).
   */
  objectCost(
    object: GraphQLObjectType,
    sets: SelectionSetNode[],
    path: string[],
    page: number | undefined,
  ): number {
    if (path.length > MAX_NESTING) throw tooLarge('The query nests too deep (a fragment cycle?).');
    const key = `${object.name}|${page}|${sets.map((set) => this.id(set)).join(',')}`;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    let cost = 0;
    for (const [responseKey, nodes] of this.collectFields(object, sets)) {
      cost += this.fieldCost(object, nodes, [...path, responseKey], page);
    }
    this.memo.set(key, cost);
    return cost;
  }

  /** One response key on one object: the field, and what its value(s) select. */
  private fieldCost(
    parent: GraphQLObjectType,
    nodes: FieldNode[],
    path: string[],
    page: number | undefined,
  ): number {
    const name = nodes[0]!.name.value;
    // __typename is a constant; introspection reads the schema, never the database.
    if (name.startsWith('__')) return META_FIELD_COST[name] ?? 1;
    const field = parent.getFields()[name]!;
    const type = getNamedType(field.type);
    let self = COMPUTED_COLUMN_WEIGHTS[`${parent.name}.${name}`] ?? 1;
    // A computed column in an aggregate (distinctCount { state }) runs on every row aggregated.
    const aggregated = parent.name.endsWith('Aggregates') && COMPUTED_WEIGHT_BY_NAME.get(name);
    if (aggregated) self = SCAN_WEIGHT * aggregated;
    if (isConnection(parent) && SCANNING_FIELDS.has(name)) self = SCAN_WEIGHT;
    if (isConnection(parent) && name === 'pageInfo') self = 1 + (page ?? 0);
    if (isLeafType(type)) return self;

    const sets = nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
    let values = 1;
    if (isListType(getNullableType(field.type))) {
      values = isConnection(parent) && ROW_FIELDS.has(name) ? (page ?? 0) : PAGE_SIZE.max;
    }
    let childPage: number | undefined;
    if (isObjectType(type) && isConnection(type)) {
      childPage = this.pageSize(field, type, nodes[0]!, sets, path);
      self += this.offset(field, nodes[0]!) + this.filterCost(field, type, nodes[0]!, childPage);
    }
    return self + values * this.selectionCost(type as GraphQLCompositeType, sets, path, childPage);
  }

  /** The rows a connection skips (`offset`): read, then thrown away. */
  private offset(field: GraphQLField<unknown, unknown>, node: FieldNode): number {
    const offset = getArgumentValues(field, node, this.variables).offset;
    return typeof offset === 'number' && offset > 0 ? offset : 0;
  }

  /**
   * What a connection's `filter` and `orderBy` add. A filter looks at rows to fill a page (when
   * the connection returns rows; totalCount and aggregates scan anyway); each relation it follows
   * is a scan for every row it looks at; each computed column it names, on its rows or a related
   * one's, or in an aggregate, runs on every row it looks at. An order other than a stored column's
   * sorts every matching row by a computed value (a computed column or an aggregate).
   */
  private filterCost(
    field: GraphQLField<unknown, unknown>,
    connection: GraphQLObjectType,
    node: FieldNode,
    page: number | undefined,
  ): number {
    const args = getArgumentValues(field, node, this.variables);
    const rowType = getNamedType(connection.getFields().nodes?.type);
    const orderArg = field.args.find((arg) => arg.name === 'orderBy');
    const orderType = orderArg && getNamedType(orderArg.type);
    let cost =
      isObjectType(rowType) && isEnumType(orderType)
        ? this.orderCost(args.orderBy, orderType, rowType)
        : 0;
    const filterArg = field.args.find((arg) => arg.name === 'filter');
    const filterType = filterArg && getNamedType(filterArg.type);
    if (args.filter === undefined || args.filter === null || !isInputObjectType(filterType)) {
      return cost;
    }
    cost += page === undefined ? 0 : SCAN_WEIGHT;
    return cost + this.filterValueCost(args.filter, filterType);
  }

  /** The relations and computed columns a filter value names, walked by its input types. */
  private filterValueCost(value: unknown, type: GraphQLInputObjectType): number {
    if (Array.isArray(value)) {
      return value.reduce((sum: number, item) => sum + this.filterValueCost(item, type), 0);
    }
    if (typeof value !== 'object' || value === null) return 0;
    const rowType = this.filteredRow(type);
    let cost = 0;
    for (const [key, inner] of Object.entries(value)) {
      const field = type.getFields()[key];
      if (!field) continue;
      // On a row filter, the row's own weight; elsewhere (an aggregate's filter) any column of
      // that name: the costliest.
      const weight = rowType
        ? COMPUTED_COLUMN_WEIGHTS[`${rowType}.${key}`]
        : COMPUTED_WEIGHT_BY_NAME.get(key);
      if (weight) cost += SCAN_WEIGHT * weight;
      const innerType = getNamedType(field.type);
      if (!isInputObjectType(innerType)) continue;
      // Any field into another row's filter (a relation, a row's relation to its own table
      // included), or into a to-many filter; and/or/not stay on the same rows.
      const logical = key === 'and' || key === 'or' || key === 'not';
      const follows =
        !logical &&
        (innerType.name.includes('ToMany') || this.filteredRow(innerType) !== undefined);
      if (follows) cost += SCAN_WEIGHT;
      cost += this.filterValueCost(inner, innerType);
    }
    return cost;
  }

  /**
   * The row type a filter input type filters (WeldFilter: Weld), if it is a row's filter: rows
   * are the object types that are Nodes (not WeldAggregates and the like).
   */
  private filteredRow(type: GraphQLInputObjectType): string | undefined {
    const name = type.name.endsWith('Filter') ? type.name.slice(0, -'Filter'.length) : '';
    const row = name ? this.schema.getType(name) : undefined;
    return isObjectType(row) && row.getInterfaces().some((i) => i.name === 'Node')
      ? name
      : undefined;
  }

  /** orderBy values that are not a stored column: a computed column's or an aggregate's. */
  private orderCost(
    orderBy: unknown,
    orderType: GraphQLEnumType,
    rowType: GraphQLObjectType,
  ): number {
    const values = Array.isArray(orderBy) ? orderBy : orderBy == null ? [] : [orderBy];
    let cost = 0;
    for (const value of values) {
      // Coerced arguments hold the enum's internal values: its names say what they order by.
      const name = orderType.getValues().find((v) => v.value === value)?.name;
      if (!name) continue;
      if (name === 'NATURAL' || name.startsWith('PRIMARY_KEY_')) continue;
      const column = name
        .replace(/_(ASC|DESC)$/, '')
        .toLowerCase()
        .replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
      const weight = COMPUTED_COLUMN_WEIGHTS[`${rowType.name}.${column}`];
      if (weight) cost += SCAN_WEIGHT * weight;
      else if (!(column in rowType.getFields())) cost += SCAN_WEIGHT;
    }
    return cost;
  }

  /**
   * The page size of a connection field: first or last (the smaller when both are given). Only
   * a connection that returns rows needs one, from 1 to PAGE_SIZE.max.
   */
  private pageSize(
    field: GraphQLField<unknown, unknown>,
    connection: GraphQLObjectType,
    node: FieldNode,
    sets: SelectionSetNode[],
    path: string[],
  ): number | undefined {
    const selected = [...this.collectFields(connection, sets).values()];
    const readsRows = selected.some((nodes) => PAGED_FIELDS.has(nodes[0]!.name.value));
    if (!readsRows) return undefined;
    const args = getArgumentValues(field, node, this.variables);
    const sizes = [args.first, args.last].filter((size) => size !== undefined && size !== null);
    const valid = (size: unknown) =>
      typeof size === 'number' && Number.isInteger(size) && size >= 1 && size <= PAGE_SIZE.max;
    if (sizes.length === 0 || !sizes.every(valid)) {
      throw tooLarge(
        `${path.join('.')}: give first or last, from 1 to ${PAGE_SIZE.max}, to read its nodes, edges or pageInfo.`,
      );
    }
    return Math.min(...(sizes as number[]));
  }

  /**
   * GraphQL's CollectFields: the fields these selection sets select on an object of `object`,
   * by response key, with fragments inlined where their type condition applies and @skip /
   * @include honoured. Each named fragment is expanded once per call, as GraphQL does.
   */
  private collectFields(
    object: GraphQLObjectType,
    sets: SelectionSetNode[],
  ): Map<string, FieldNode[]> {
    const fields = new Map<string, FieldNode[]>();
    const expanded = new Set<string>();
    const visit = (set: SelectionSetNode) => {
      for (const selection of set.selections) {
        if (!this.included(selection)) continue;
        switch (selection.kind) {
          case Kind.FIELD: {
            const key = selection.alias?.value ?? selection.name.value;
            fields.set(key, [...(fields.get(key) ?? []), selection]);
            break;
          }
          case Kind.INLINE_FRAGMENT:
            if (this.applies(selection.typeCondition, object)) visit(selection.selectionSet);
            break;
          case Kind.FRAGMENT_SPREAD: {
            const name = selection.name.value;
            const fragment = this.fragments.get(name);
            if (expanded.has(name) || !fragment) break;
            expanded.add(name);
            if (this.applies(fragment.typeCondition, object)) visit(fragment.selectionSet);
            break;
          }
        }
      }
    };
    for (const set of sets) visit(set);
    return fields;
  }

  private included(selection: SelectionNode): boolean {
    const skip = getDirectiveValues(GraphQLSkipDirective, selection, this.variables);
    const include = getDirectiveValues(GraphQLIncludeDirective, selection, this.variables);
    return skip?.if !== true && include?.if !== false;
  }

  private applies(condition: NamedTypeNode | undefined, object: GraphQLObjectType): boolean {
    if (!condition) return true;
    const type = typeFromAST(this.schema, condition);
    if (!type) return false;
    if (type === object) return true;
    return isAbstractType(type) && this.schema.isSubType(type, object);
  }

  private id(set: SelectionSetNode): number {
    let id = this.ids.get(set);
    if (id === undefined) this.ids.set(set, (id = this.ids.size));
    return id;
  }
}

/** PostGraphile's connection types: XyzConnection { nodes, edges, pageInfo, totalCount, ... }. */
function isConnection(type: GraphQLObjectType): boolean {
  return type.name.endsWith('Connection') && 'pageInfo' in type.getFields();
}
