// The GraphQL schema PostGraphile builds from the database: what the smart comments and grants in
// migrations/ promise analysts (public tables readable, private ones hidden, the lifecycle as a
// mutation, aggregates where enabled, tenant_id implied by the session).
import test from 'ava';
import { makeSchema } from 'postgraphile';
import {
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLObjectType,
  type GraphQLSchema,
} from 'postgraphile/graphql';
import { graphqlPreset } from '../../server/graphql.ts';
import { createPool } from '../../db/database.ts';
import { migratedDatabase } from '../helpers/database.ts';

let schema: GraphQLSchema;
const cleanups: Array<() => unknown> = [];

test.before(async () => {
  const { target } = await migratedDatabase({ teardown: (fn) => cleanups.push(fn) });
  const pool = createPool(target.authenticatorUrl, { max: 2, onError: () => {} });
  cleanups.push(() => pool.end());
  ({ schema } = await makeSchema(graphqlPreset(pool)));
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const fields = (typeName: string) => {
  const type = schema.getType(typeName);
  if (!(type instanceof GraphQLObjectType || type instanceof GraphQLInputObjectType)) {
    throw new Error(`${typeName} is not an object type`);
  }
  return Object.keys(type.getFields());
};

test('every public table can be read; nothing of weld_hidden or weld_private shows', (t) => {
  const query = fields('Query');
  for (const collection of [
    'allIsos',
    'allWelds',
    'allWelders',
    'allPqrs',
    'allWpsDocuments',
    'allWelderQualifications',
    'allNdtRecords',
    'allFilmIntervals',
    'allInspections',
    'allTestPackages',
    'allUsers',
    'allWeldStatusHistories',
    'allWeldTransitionRules',
  ]) {
    t.true(query.includes(collection), collection);
  }
  const everything = [...query, ...fields('Mutation')].join(' ');
  for (const hidden of [
    'tenantByOrigin',
    'currentTenantId',
    'currentUserId',
    'requestRole',
    'appliedMigration',
    'createTenant',
    'tenantList',
    'seedTransitionRules',
    'secureTenantTable',
    'tenantOrigin',
  ]) {
    t.false(everything.toLowerCase().includes(hidden.toLowerCase()), hidden);
  }
});

test('tenant_id is implied by the session: no field, argument or lookup takes it', (t) => {
  t.false(fields('Weld').includes('tenantId'));
  t.false(fields('WeldCondition').includes('tenantId'));
  t.false(fields('WeldInput').includes('tenantId'));
  const query = schema.getQueryType()!.getFields();
  const withTenantArgument = Object.values(query).filter((f) =>
    f.args.some((a) => a.name === 'tenantId'),
  );
  t.deepEqual(
    withTenantArgument.map((f) => f.name),
    [],
  );
});

test('the lifecycle function is the changeWeldStatus mutation; status is not in the weld patch', (t) => {
  t.true(fields('Mutation').includes('changeWeldStatus'));
  t.deepEqual(
    fields('ChangeWeldStatusInput')
      .filter((f) => f !== 'clientMutationId')
      .sort(),
    [
      'disposition',
      'expectedVersion',
      'inspectionId',
      'ndtRecordId',
      'newStatus',
      'reason',
      'repair',
      'weldId',
    ],
  );
  const patch = fields('WeldPatch');
  for (const column of [
    'status',
    'version',
    'repairCycle',
    'acceptanceNdtRecordId',
    'acceptanceInspectionId',
    'acceptanceDisposition',
  ])
    t.false(patch.includes(column), column);
  t.true(patch.includes('weldNumber'));
  const status = schema.getType('WeldStatus');
  t.true(status instanceof GraphQLEnumType);
  t.deepEqual(
    (status as GraphQLEnumType).getValues().map((v) => v.name),
    ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'],
  );
});

test('history is append-only and welds are never deleted, so no such mutations exist', (t) => {
  const mutation = fields('Mutation');
  for (const absent of [
    'createWeldStatusHistory',
    'updateWeldStatusHistory',
    'deleteWeldStatusHistory',
    'deleteWeld',
    'deleteWelder',
    'deleteUser',
  ]) {
    t.false(mutation.includes(absent), absent);
  }
});

test('examinations are written only through their four functions; WPSs are never deleted', (t) => {
  const mutation = fields('Mutation');
  const inputs = (typeName: string) =>
    fields(typeName)
      .filter((f) => f !== 'clientMutationId')
      .sort();
  t.deepEqual(inputs('RecordNdtInput'), ['record']);
  t.deepEqual(inputs('CorrectNdtRecordInput'), [
    'changes',
    'expectedVersion',
    'reason',
    'recordId',
  ]);
  t.deepEqual(inputs('RecordInspectionInput'), ['inspection']);
  t.deepEqual(inputs('CorrectInspectionInput'), [
    'changes',
    'expectedVersion',
    'inspectionId',
    'reason',
  ]);
  const resultType = (payload: string) =>
    String((schema.getType(payload) as GraphQLObjectType).getFields().result?.type);
  t.is(resultType('RecordNdtPayload'), 'NdtRecord');
  t.is(resultType('CorrectNdtRecordPayload'), 'NdtRecord');
  t.is(resultType('RecordInspectionPayload'), 'Inspection');
  t.is(resultType('CorrectInspectionPayload'), 'Inspection');
  // No role may write the tables themselves (the grants are revoked), so no generated mutation.
  for (const table of [
    'NdtRecord',
    'NdtRecordWeld',
    'FilmInterval',
    'FilmIntervalWeld',
    'Inspection',
    'InspectionWeld',
    'TenantSetting',
  ]) {
    for (const verb of ['create', 'update', 'delete']) {
      t.false(mutation.includes(`${verb}${table}`), `${verb}${table}`);
    }
  }
  t.false(mutation.includes('deleteWpsDocument'));
  // The check sees what is there: WPSs are still created and updated, packages deleted.
  for (const present of ['createWpsDocument', 'updateWpsDocument', 'deleteTestPackage']) {
    t.true(mutation.includes(present), present);
  }
  // Every resource shows its version, which no patch may set; tenant settings can be read.
  for (const type of [
    'Iso',
    'Welder',
    'Pqr',
    'WpsDocument',
    'NdtRecord',
    'Inspection',
    'TestPackage',
  ]) {
    t.true(fields(type).includes('version'), type);
  }
  for (const patch of ['IsoPatch', 'WelderPatch', 'WpsDocumentPatch', 'TestPackagePatch']) {
    t.false(fields(patch).includes('version'), patch);
  }
  t.true(fields('Query').includes('allTenantSettings'));
});

test('aggregates are enabled on welds, NDT records and inspections (and the ISO counts, below) only', (t) => {
  for (const connection of ['WeldConnection', 'NdtRecordConnection', 'InspectionConnection']) {
    t.true(fields(connection).includes('aggregates'), connection);
    t.true(fields(connection).includes('groupedAggregates'), connection);
  }
  for (const connection of ['IsoConnection', 'WelderConnection', 'UserConnection']) {
    t.false(fields(connection).includes('aggregates'), connection);
  }
});

test('groupedAggregates group by what reports group by, never by a column (nearly) unique per row', (t) => {
  const values = (typeName: string) => {
    const type = schema.getType(typeName);
    if (!(type instanceof GraphQLEnumType)) throw new Error(`${typeName} is not an enum`);
    return type.getValues().map((v) => v.name);
  };
  const perRow: Record<string, string[]> = {
    WeldGroupBy: [
      'ROW_ID',
      'WELD_NUMBER',
      'CREATED_AT',
      'UPDATED_AT',
      'UPDATED_AT_TRUNCATED_TO_HOUR',
      'UPDATED_AT_TRUNCATED_TO_DAY',
    ],
    NdtRecordGroupBy: ['ROW_ID', 'REPORT_NUMBER', 'NOTES', 'CREATED_AT', 'UPDATED_AT'],
    InspectionGroupBy: ['ROW_ID', 'NOTES', 'CREATED_AT', 'UPDATED_AT'],
  };
  for (const [typeName, absent] of Object.entries(perRow)) {
    for (const value of absent) t.false(values(typeName).includes(value), `${typeName}.${value}`);
  }
  // What stays (docs/graphql.md's analyst queries group by ISO_ID and STATUS, and by WELDER_ID;
  // WELDED_ON, indexed for the QW-322 continuity rule, gives welds per day).
  t.deepEqual(values('WeldGroupBy'), ['ISO_ID', 'WELDER_ID', 'WPS_ID', 'WELDED_ON', 'STATUS']);
  t.deepEqual(values('NdtRecordGroupBy'), ['METHOD', 'EXAMINED_ON']);
  t.deepEqual(values('InspectionGroupBy'), ['INSPECTED_ON']);
  // Ordering by those columns stays.
  const order = values('WeldOrderBy');
  for (const value of ['ROW_ID_ASC', 'WELD_NUMBER_ASC', 'UPDATED_AT_DESC']) {
    t.true(order.includes(value), value);
  }
});

test("ISO progress: Iso.weldCounts is the ISO's counts row, allIsoWeldCounts reads them all with sums, and no mutation writes them", (t) => {
  const iso = schema.getType('Iso') as GraphQLObjectType;
  t.is(String(iso.getFields().weldCounts?.type), 'IsoWeldCount', 'one-to-one, named weldCounts');
  t.deepEqual(fields('IsoWeldCount').sort(), [
    'accepted',
    'id',
    'iso',
    'isoId',
    'pending',
    'rejected',
    'repair',
    'total',
    'version',
    'voided',
  ]);
  t.true(fields('Query').includes('allIsoWeldCounts'));
  const written = [...fields('Mutation')].filter((name) => /weldcount/i.test(name));
  t.deepEqual(written, [], 'the counts are kept by triggers; no role writes them');
  // Totals of a whole project in one query: sums, not groups (one row per ISO is no group).
  t.true(fields('IsoWeldCountConnection').includes('aggregates'));
  t.false(fields('IsoWeldCountConnection').includes('groupedAggregates'));
  t.deepEqual(fields('IsoWeldCountSumAggregates').sort(), [
    'accepted',
    'pending',
    'rejected',
    'repair',
    'total',
    'voided',
  ]);
  // Analysts filter by the counts ("ISOs with a rejected weld").
  for (const count of ['total', 'pending', 'accepted', 'rejected', 'repair', 'voided']) {
    t.true(fields('IsoWeldCountFilter').includes(count), count);
  }
});
