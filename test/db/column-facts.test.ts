// The column facts REST states equal what the database says. SQL is the rules' home; the REST
// adapter restates a column's facts in zod to refuse a bad body before the database and to
// document each field (OpenAPI). This test reads the catalog (test/helpers/column-facts.ts) and
// holds every restated fact equal, for every field of every resource of rest-adapter/resources.ts:
// type, nullability, text lengths (and whether blanks count), patterns, allowed values, numeric
// bounds (CHECKs and numeric(p, s)), date ranges, list sizes, who may write it and whether a
// create must give it (grants, defaults), the words a refusal gives (constraint comments), and its
// description against the column's or table's comment. For the examinations, written by SQL
// functions from JSON, the bodies are held to what those functions check. Then the other schemas
// that describe columns (histories, selections, continuity, webhooks, imports, events).
//
// A difference fails, naming where, the column, the fact and both values, unless DIFFERENCES
// lists it with its reason; a listed difference that no longer exists fails too.
import test from 'ava';
import { z } from 'zod';
import {
  ContinuityBody,
  ContinuityUse,
  DrawBody,
  ExaminationSelection,
  ExaminationSelectionQuery,
  WithdrawBody,
} from '../../rest-adapter/code-rules.ts';
import { Event } from '../../rest-adapter/events.ts';
import {
  ExaminationHistoryEntry,
  TestPackageHistoryEntry,
  WeldHistoryEntry,
} from '../../rest-adapter/history.ts';
import { ImportRecord } from '../../rest-adapter/imports.ts';
import { IsoWeldCounts, IsoWeldCountsQuery } from '../../rest-adapter/isos.ts';
import type { Field, Resource } from '../../rest-adapter/resource.ts';
import { RESOURCES } from '../../rest-adapter/resources.ts';
import {
  Webhook,
  WebhookCreate,
  WebhookDelivery,
  WebhookPatch,
} from '../../rest-adapter/webhooks.ts';
import { StatusChange, WeldTransition } from '../../rest-adapter/welds.ts';
import {
  columnFacts,
  columnPrivileges,
  Findings,
  jsonSchema,
  ownMessage,
  previousDay,
  readCatalog,
  schemaFacts,
  show,
  typeFacts,
  writerFacts,
  type Catalog,
  type ColumnFacts,
  type Facts,
  type JsonSchema,
} from '../helpers/column-facts.ts';
import { migratedDatabase } from '../helpers/database.ts';

//------------------------------------------------------------------------------------------------
// The differences REST keeps on purpose: "<where> <fact>" and why. SQL gaps among them are the
// database's to close (a migration), not REST's to copy.

const DIFFERENCES: Record<string, string> = {
  'punch-items.itemNumber required':
    'not null without a default: an item raised without a number takes its package\u2019s next (tg_punch_items__number_and_closer)',
  'attachments.fileName unread':
    'the CHECKs of a file name (no control character, / or \\; not . or ..) are those of the zod schema, in SQL words',
  'attachments.fileName pattern':
    'the CHECK refuses control characters, / and \\ as a POSIX class ([[:cntrl:]]), which a zod regex spells \\p{Cc}: the same characters',
  // A history names its user by a left join: a change made by the system has none.
  'WeldHistoryEntry.changedByName nullable': 'null for a change made by the system (no user)',
  'ExaminationHistoryEntry.changedByName nullable': 'as WeldHistoryEntry.changedByName',
  'TestPackageHistoryEntry.changedByName nullable': 'as WeldHistoryEntry.changedByName',
  // REST bounds what SQL leaves open (the SQL gaps: a migration's to close)
  'pqrs.documentRef maxLength':
    'SQL gap: no length check on pqrs.document_ref; REST bounds the request at 500 characters',
  'welder-qualifications.diameterMaxIn minimum':
    'SQL gap: diameter_max_in is bounded only by diameter_min_in, which may be null; a diameter is 0 or more',
  'welder-qualifications.positions maxItems':
    'a bound on the request (each position once); SQL keeps any list of allowed positions',
  'WebhookCreate.eventTypes items.enum':
    'SQL gap: no CHECK lists an endpoint\u2019s event types; EVENT_TYPES is held to the outbox by vocabulary.test.ts',
  'WebhookCreate.eventTypes maxItems': 'each type once; SQL keeps no list (items.enum)',
  'WebhookPatch.eventTypes items.enum': 'as WebhookCreate.eventTypes',
  'WebhookPatch.eventTypes maxItems': 'as WebhookCreate.eventTypes',
  'Webhook.eventTypes items.enum': 'as WebhookCreate.eventTypes',
  'Webhook.eventTypes items.nullable': 'as WebhookCreate.eventTypes',
  'TestPackageHistoryEntry.fromState enum':
    'SQL gap: no CHECK on test_package_state_changes.from_state; its trigger copies test_packages.state',
  'TestPackageHistoryEntry.toState enum': 'as fromState',
  'Event.type enum':
    'the outbox writes the types (EVENT_TYPES: vocabulary.test.ts); the CHECK only shapes them',
  // REST leaves a judgement to SQL, which answers it with words of its own
  'WithdrawBody.reason minLength':
    'the database judges a missing, empty or blank reason (422 /problems/reason-required, after the role check)',
  'ndt-records correction.reason minLength':
    'check_correction refuses a missing or blank reason (422 /problems/reason-required); REST refuses the empty one first',
  'inspections correction.reason minLength': 'as ndt-records correction.reason',
  'WebhookCreate.url pattern':
    'the address rules (rest-adapter/http/webhook-address.ts) judge the URL before SQL, with words of their own',
  'WebhookCreate.url minLength': 'what SQL\u2019s pattern implies (no empty URL matches it)',
  'WebhookPatch.url pattern': 'as WebhookCreate.url',
  'WebhookPatch.url minLength': 'as WebhookCreate.url',
  // the same fact in another shape
  'Webhook.lastEventId type': 'a bigint, shown as a decimal string (JSON numbers stop at 2^53)',
  'WebhookDelivery.id type': 'a bigint, shown as a decimal string',
  'WebhookDelivery.eventId type': 'a bigint, shown as a decimal string',
  'Event.id type': 'a bigint, shown as a decimal string (the cursor)',
  'Event.id pattern': 'the decimal string of a bigint',
  'IsoWeldCounts.total minimum':
    'total is the sum of the other counts (iso_weld_counts_consistent), each 0 or more',
  'ndt-records correction.reason description':
    'the words of the request (why it is corrected); the column\u2019s are the history\u2019s (why it was changed)',
  'inspections correction.reason description': 'as ndt-records correction.reason',
};

//------------------------------------------------------------------------------------------------
// The resources

/** REST's name of each column of a resource's table, for comments that name columns. */
const fieldNames = (resource: Resource): Record<string, string> =>
  Object.fromEntries(Object.entries(resource.fields).map(([name, f]) => [f.column, name]));

const roleOf = (access: string | undefined) =>
  `weld_${/^(viewer|inspector|engineer|admin)\b/.exec(access ?? '')?.[1] ?? 'viewer'}`;

/** A refusal's words, where TypeScript and the CHECK both have some, are the same words. */
function compareMessages(found: Findings, where: string, field: Field, sql: ColumnFacts): void {
  const probes: [keyof ColumnFacts['messages'], unknown][] = [
    // a list's CHECK speaks of the whole list, zod of the item at fault: not the same sentence
    ['pattern', field.type instanceof z.ZodArray ? undefined : '!'],
    ['enum', '!'],
    ['dates', sql.from ? previousDay(sql.from) : undefined],
  ];
  for (const [fact, probe] of probes) {
    const said = sql.messages[fact];
    const own = probe === undefined ? undefined : ownMessage(field.type, probe);
    if (said && own && said !== own)
      found.add(
        where,
        `refusal (${fact})`,
        `${where} refused (${fact}): TypeScript ${show(own)}, SQL ${show(said)}`,
      );
  }
}

async function checkResource(
  rootUrl: string,
  catalog: Catalog,
  resource: Resource,
  found: Findings,
) {
  const table = catalog.tables.get(resource.table);
  if (!table)
    return found.add(resource.path, 'table', `${resource.path}: no table ${resource.table}`);
  const names = fieldNames(resource);
  found.describe(
    resource.path,
    `comment on ${resource.table}`,
    resource.description,
    table.comment,
    names,
  );

  // The examinations are written by SQL functions from JSON (record_ndt, ...): their checks are
  // facts of the fields too, where the columns have none (the notes' length).
  const writers = resource.create ? await writerFacts(rootUrl, resource.table) : undefined;
  if (resource.create && !writers?.functions.length)
    found.add(
      resource.path,
      'writers',
      `${resource.path}: no record_*/correct_* function returns ${resource.table}`,
    );
  const written = (name: string) =>
    Object.assign(
      {},
      ...[...(writers?.values.values() ?? [])].map((v) => v.get(name) ?? {}),
    ) as Facts;

  // (Attachments are created by an upload, not a JSON body: their writer is who may change them.)
  const role = roleOf(resource.access.create ?? resource.access.update);
  const granted = await columnPrivileges(
    rootUrl,
    resource.table,
    Object.values(resource.fields).map((f) => f.column),
    role,
  );
  for (const [name, field] of Object.entries(resource.fields)) {
    const where = `${resource.path}.${name}`;
    const column = `${resource.table}.${field.column}`;
    const sql = columnFacts(catalog, resource.table, field.column);
    if (!sql) {
      found.add(where, 'column', `${where}: no column ${column}`);
      continue;
    }
    const byFunction = written(name);
    for (const key of ['minLength', 'maxLength', 'enum'] as const) {
      if (byFunction[key] === undefined) continue;
      if (sql[key] === undefined) (sql as Facts)[key] = byFunction[key] as never;
      else if (JSON.stringify(sql[key]) !== JSON.stringify(byFunction[key]))
        found.add(
          where,
          `SQL ${key}`,
          `${where} ${key}: the column says ${show(sql[key])}, its writing functions ${show(byFunction[key])}`,
        );
    }
    const ts = { ...typeFacts(field.type), nullable: field.nullable ?? false };
    found.compare(where, column, ts, sql);
    for (const unread of sql.unread)
      found.add(where, 'unread', `${where} (${column}): a CHECK this test cannot read: ${unread}`);
    compareMessages(found, where, field, sql);
    found.describe(where, 'column comment', ts.description, sql.description, names);

    // Who writes it (the grants), and whether a create must give it (not null, no default).
    const may = granted.get(field.column)!;
    if (resource.create) {
      if (may.insert || may.update)
        found.add(
          where,
          'writable',
          `${where} (${column}): written only by the resource's SQL functions, yet ${role} may write it: ${show(may)}`,
        );
      continue;
    }
    const wanted = {
      insert: field.write === 'create' || field.write === 'always',
      update: field.write === 'always' || field.write === 'update',
    };
    if (JSON.stringify(may) !== JSON.stringify(wanted))
      found.add(
        where,
        'writable',
        `${where} (${column}) writable by ${role}: TypeScript ${show(wanted)}, SQL (grants) ${show(may)}`,
      );
    const needed = !sql.nullable && !sql.hasDefault;
    if (wanted.insert && (field.required ?? false) !== needed)
      found.add(
        where,
        'required',
        `${where} (${column}) required: TypeScript ${field.required ?? false}, SQL ${needed} (${sql.nullable ? 'nullable' : 'not null'}, ${sql.hasDefault ? 'a' : 'no'} default)`,
      );
    // (A resource no request creates, as a weld's repairs, which its lifecycle opens, needs none.)
    if (!field.write && needed && resource.access.create)
      found.add(where, 'required', `${where} (${column}): not null, no default, and not writable`);
  }

  // The members every item has besides its fields: its id, version and times.
  const common = { id: 'id', version: 'version', createdAt: 'created_at', updatedAt: 'updated_at' };
  for (const [member, name] of Object.entries(common)) {
    const sql = columnFacts(catalog, resource.table, name);
    const where = `${resource.path}.${member}`;
    if (!sql) found.add(where, 'column', `${where}: no column ${resource.table}.${name}`);
    else {
      const ts = typeFacts(resource.item.shape[member] as z.ZodType);
      found.compare(where, `${resource.table}.${name}`, ts, sql, { only: 'stated' });
    }
  }

  if (writers) checkWriterBodies(resource, writers, found);
}

/**
 * The bodies of an examination's create and correction against what its SQL functions check:
 * the same keys, the same required ones, and each value's facts; the record and correct
 * functions agree with each other.
 */
function checkWriterBodies(
  resource: Resource,
  writers: Awaited<ReturnType<typeof writerFacts>>,
  found: Findings,
) {
  const [record, correct] = ['record', 'correct'].map((kind) =>
    writers.functions.find((f) => f.startsWith(`${kind}_`)),
  );
  const bodies: [string | undefined, z.ZodObject | undefined, string][] = [
    [record, resource.createBody, 'create'],
    [correct, resource.patchBody, 'correction'],
  ];
  for (const [fn, body, what] of bodies) {
    if (!fn || !body) {
      found.add(
        resource.path,
        `${what} body`,
        `${resource.path}: no ${what} body or no function for it`,
      );
      continue;
    }
    const schema = jsonSchema(body);
    const objects = writers.objects.get(fn)!;
    const values = writers.values.get(fn)!;
    const walk = (at: string, object: JsonSchema) => {
      const keys = objects.get(at);
      if (!keys)
        return found.add(
          resource.path,
          `${what} ${at} keys`,
          `${resource.path} ${what} body ${at || 'itself'}: ${fn} checks no such object`,
        );
      // the correction's reason is an argument of its own (check_correction), not a key of the changes
      const properties = Object.keys(object.properties ?? {}).filter(
        (k) => !(at === '' && what === 'correction' && k === 'reason'),
      );
      const required = (object.required ?? []).filter((k) => properties.includes(k));
      if (JSON.stringify([...properties].sort()) !== JSON.stringify([...keys.allowed].sort()))
        found.add(
          resource.path,
          `${what} keys`,
          `${resource.path} ${what} body ${at || ''} keys: TypeScript ${show(properties)}, SQL (${fn}) ${show(keys.allowed)}`,
        );
      if (JSON.stringify([...required].sort()) !== JSON.stringify([...keys.required].sort()))
        found.add(
          resource.path,
          `${what} required`,
          `${resource.path} ${what} body ${at || ''} required: TypeScript ${show(required)}, SQL (${fn}) ${show(keys.required)}`,
        );
      for (const key of properties) {
        const path = at ? `${at}.${key}` : key;
        const sql = values.get(path);
        const property = object.properties![key]!;
        if (sql) {
          const ts = schemaFacts(property);
          found.compare(`${resource.path} ${what} ${path}`, fn, ts, sql, {
            skip: sql.type === undefined ? ['type'] : [],
          });
        }
        const items =
          schemaFacts(property).type === 'array'
            ? (property.anyOf?.find((b) => b.type === 'array') ?? property).items
            : undefined;
        if (items?.type === 'object') walk(`${path}[]`, items);
      }
    };
    walk('', schema);
  }
  // SQL with itself: record and correct check a value the same way
  if (record && correct) {
    for (const [path, facts] of writers.values.get(correct)!) {
      const first = writers.values.get(record)!.get(path);
      if (first && JSON.stringify(first) !== JSON.stringify(facts))
        found.add(
          resource.path,
          `SQL ${path}`,
          `${resource.path} ${path}: ${record} checks ${show(first)}, ${correct} ${show(facts)}`,
        );
    }
  }
}

//------------------------------------------------------------------------------------------------
// The other schemas that describe columns

interface Described {
  name: string;
  schema: z.ZodObject;
  /**
   * answer: what TypeScript states equals the column (it may state less); body: every fact equal
   * (but nullability: an absent value is null); filter: a value to compare with the column.
   */
  use: 'answer' | 'body' | 'filter';
  table: string;
  /** Properties named as their columns of `table` are (camelCase of snake_case). */
  columns?: string[];
  /** Properties on other columns: "column" of `table`, or "schema.table.column". */
  renamed?: Record<string, string>;
  /** Properties that are no column (computed, paging), or checked elsewhere. */
  other?: string[];
  /** The schema's description restates the table's comment. */
  describesTable?: boolean;
}

const snake = (name: string) => name.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`);

const examinationCorrections = RESOURCES.filter((r) => r.create).map((r): Described => ({
  name: `${r.path} correction`,
  schema: r.patchBody!,
  use: 'body',
  table: 'weld_public.examination_changes',
  columns: ['reason'],
  other: Object.keys(r.patchBody!.shape).filter((k) => k !== 'reason'),
}));

const DESCRIBED: Described[] = [
  {
    name: 'StatusChange',
    schema: StatusChange,
    use: 'body',
    table: 'weld_public.weld_status_history',
    columns: ['reason', 'ndtRecordId', 'inspectionId', 'disposition'],
    renamed: { status: 'to_status' },
    // a re-weld's welding: the repair's columns (RepairWelding, beside weld-repairs' fields)
    other: ['repair'],
  },
  {
    name: 'WeldTransition',
    schema: WeldTransition,
    use: 'answer',
    table: 'weld_public.weld_transition_rules',
    columns: ['fromStatus', 'toStatus', 'leastRole', 'reasonRequired', 'note'],
  },
  {
    name: 'IsoWeldCounts',
    schema: IsoWeldCounts,
    use: 'answer',
    table: 'weld_public.iso_weld_counts',
    columns: ['total', 'pending', 'accepted', 'rejected', 'repair', 'voided'],
    renamed: {
      isoId: 'weld_public.isos.id',
      isoNumber: 'weld_public.isos.iso_number',
      lineNumber: 'weld_public.isos.line_number',
      area: 'weld_public.isos.area',
    },
  },
  {
    name: 'IsoWeldCountsQuery',
    schema: IsoWeldCountsQuery,
    use: 'filter',
    table: 'weld_public.isos',
    columns: ['lineNumber', 'area'],
    other: ['limit', 'cursor'],
  },
  {
    name: 'WeldHistoryEntry',
    schema: WeldHistoryEntry,
    use: 'answer',
    table: 'weld_public.weld_status_history',
    columns: [
      'id',
      'fromStatus',
      'toStatus',
      'reason',
      'changedBy',
      'changedAt',
      'repairCycle',
      'inspectionId',
      'disposition',
    ],
    renamed: {
      cause: 'cause',
      ndtRecordId: 'ndt_record_id',
      changedByName: 'weld_public.users.display_name',
    },
  },
  {
    name: 'ExaminationHistoryEntry',
    schema: ExaminationHistoryEntry,
    use: 'answer',
    table: 'weld_public.examination_changes',
    columns: ['id', 'change', 'before', 'after', 'reason', 'changedBy', 'changedAt'],
    renamed: { changedByName: 'weld_public.users.display_name' },
  },
  {
    name: 'TestPackageHistoryEntry',
    schema: TestPackageHistoryEntry,
    use: 'answer',
    table: 'weld_public.test_package_state_changes',
    columns: ['id', 'fromState', 'toState', 'reason', 'changedBy', 'changedAt'],
    renamed: { changedByName: 'weld_public.users.display_name' },
  },
  {
    name: 'ExaminationSelection',
    schema: ExaminationSelection,
    use: 'answer',
    table: 'weld_public.examination_selections',
    describesTable: true,
    columns: [
      'id',
      'weldId',
      'method',
      'tier',
      'seed',
      'reason',
      'shortfall',
      'selectedBy',
      'selectedAt',
    ],
    renamed: {
      causeSelectionId: 'cause_selection_id',
      causeNdtRecordId: 'cause_ndt_record_id',
      causeInspectionId: 'cause_inspection_id',
      isoId: 'weld_public.welds.iso_id',
      welderId: 'weld_public.welds.welder_id',
      lineNumber: 'weld_public.isos.line_number',
    },
    // the examination that met it, and whether one did: computed (selection_examination)
    other: ['ndtRecordId', 'inspectionId', 'state'],
  },
  {
    name: 'ExaminationSelectionQuery',
    schema: ExaminationSelectionQuery,
    use: 'filter',
    table: 'weld_public.examination_selections',
    columns: ['method', 'tier', 'weldId'],
    renamed: {
      isoId: 'weld_public.welds.iso_id',
      welderId: 'weld_public.welds.welder_id',
      lineNumber: 'weld_public.isos.line_number',
    },
    other: ['limit', 'cursor', 'state'],
  },
  {
    name: 'DrawBody',
    schema: DrawBody,
    use: 'body',
    table: 'weld_public.examination_selections',
    columns: ['method', 'seed'],
    other: ['lineNumber', 'isoId'], // filters: DrawScope below
  },
  {
    name: 'DrawScope',
    schema: DrawBody.pick({ lineNumber: true, isoId: true }),
    use: 'filter',
    table: 'weld_public.isos',
    columns: ['lineNumber'],
    renamed: { isoId: 'id' },
  },
  {
    name: 'ContinuityUse',
    schema: ContinuityUse,
    use: 'answer',
    table: 'weld_public.welder_continuity',
    columns: ['usedOn', 'process', 'recordedBy'],
    // a weld's entries are computed from the weld (welders_continuity); a document's are its row
    other: ['source', 'reference', 'weldId', 'continuityId'],
  },
  {
    name: 'ContinuityBody',
    schema: ContinuityBody,
    use: 'body',
    table: 'weld_public.welder_continuity',
    columns: ['usedOn', 'process', 'reference'],
  },
  {
    name: 'WithdrawBody',
    schema: WithdrawBody,
    use: 'body',
    table: 'weld_public.test_package_state_changes',
    columns: ['reason'],
  },
  ...examinationCorrections,
  {
    name: 'Webhook',
    schema: Webhook,
    use: 'answer',
    table: 'weld_hidden.webhooks',
    columns: [
      'id',
      'url',
      'eventTypes',
      'description',
      'active',
      'disabledReason',
      'pausedAt',
      'pausedReason',
      'createdBy',
      'failingSince',
      'lastEventId',
      'version',
      'createdAt',
      'updatedAt',
    ],
    // next_attempt_at, shown only while failing
    other: ['nextAttemptAt'],
  },
  ...[WebhookCreate, WebhookPatch].map((schema, i): Described => ({
    name: i ? 'WebhookPatch' : 'WebhookCreate',
    schema,
    use: 'body',
    table: 'weld_hidden.webhooks',
    columns: ['url', 'eventTypes', 'description', 'active'],
  })),
  {
    name: 'WebhookDelivery',
    schema: WebhookDelivery,
    use: 'answer',
    table: 'weld_hidden.webhook_deliveries',
    columns: [
      'id',
      'messageId',
      'eventId',
      'eventType',
      'attempt',
      'status',
      'error',
      'durationMs',
      'attemptedAt',
    ],
  },
  {
    name: 'ImportRecord',
    schema: ImportRecord,
    use: 'answer',
    table: 'weld_hidden.imports',
    describesTable: true,
    columns: [
      'id',
      'kind',
      'importedBy',
      'importedAt',
      'fileBytes',
      'rows',
      'created',
      'updated',
      'unchanged',
      'isosCreated',
      'fileSha256',
    ],
  },
  {
    name: 'Event',
    schema: Event,
    use: 'answer',
    table: 'weld_public.events',
    describesTable: true,
    columns: ['id', 'type', 'subjectId', 'actorId', 'occurredAt', 'data', 'change'],
  },
];

const USES = {
  answer: { only: 'stated' },
  body: { skip: ['nullable'] },
  filter: { only: 'stated', skip: ['nullable', 'minLength'] },
} as const;

function checkDescribed(catalog: Catalog, described: Described, found: Findings): void {
  const { name, schema, table } = described;
  const columns: Record<string, string> = {
    ...Object.fromEntries((described.columns ?? []).map((p) => [p, `${table}.${snake(p)}`])),
    ...Object.fromEntries(
      Object.entries(described.renamed ?? {}).map(([p, c]) => [
        p,
        c.includes('.') ? c : `${table}.${c}`,
      ]),
    ),
  };
  const names = Object.fromEntries(
    Object.entries(columns).map(([p, c]) => [c.split('.').at(-1)!, p]),
  );
  if (described.describesTable)
    found.describe(
      name,
      `comment on ${table}`,
      schema.description,
      catalog.tables.get(table)?.comment,
      names,
    );
  for (const [property, type] of Object.entries(schema.shape)) {
    const where = `${name}.${property}`;
    const column = columns[property];
    if (!column) {
      if (!described.other?.includes(property))
        found.add(
          where,
          'mapping',
          `${where}: neither a column nor listed as another kind of value`,
        );
      continue;
    }
    const at = column.lastIndexOf('.');
    const sql = columnFacts(catalog, column.slice(0, at), column.slice(at + 1));
    if (!sql) {
      found.add(where, 'column', `${where}: no column ${column}`);
      continue;
    }
    const ts = typeFacts(type instanceof z.ZodOptional ? (type.unwrap() as z.ZodType) : type);
    found.compare(where, column, ts, sql, USES[described.use]);
    found.describe(where, 'column comment', ts.description, sql.description, names);
  }
}

//------------------------------------------------------------------------------------------------

test('every field of every resource, and every schema that describes a column, states its column as the catalog does', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const catalog = await readCatalog(rootUrl);
  const found = new Findings();
  for (const resource of RESOURCES) await checkResource(rootUrl, catalog, resource, found);
  const ofResources = found.values;
  for (const described of DESCRIBED) checkDescribed(catalog, described, found);
  const fields = RESOURCES.reduce((n, r) => n + Object.keys(r.fields).length, 0);
  t.log(
    `${RESOURCES.length} resources: ${fields} fields, their ids, versions and times, and the values of the examinations' bodies (${ofResources} in all); ${DESCRIBED.length} other schemas: ${found.values - ofResources} values; facts compared: ${[...found.facts].join(', ')}, descriptions, refusal words, grants, required`,
  );
  const { failures, stale } = found.unexcused(DIFFERENCES);
  t.deepEqual(failures, [], 'facts TypeScript and SQL state differently');
  t.deepEqual(stale, [], 'differences listed that no longer exist');
});

test('the catalog reader reads what it claims (a reader that finds nothing would pass anything)', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const catalog = await readCatalog(rootUrl);
  const facts = (table: string, column: string) =>
    columnFacts(catalog, `weld_public.${table}`, column)!;
  t.like(facts('isos', 'iso_number'), {
    type: 'string',
    nullable: false,
    minLength: 1,
    maxLength: 100,
  });
  t.like(facts('isos', 'rt_percent'), { type: 'number', minimum: 0, maximum: 100 });
  t.like(facts('welds', 'size'), { exclusiveMinimum: 0, maximum: 999.999 });
  t.like(facts('welds', 'schedule'), {
    nullable: true,
    pattern: '^(5S|10S|40S|80S|160S|STD|XS|XXS|[0-9]{1,3})$',
  });
  t.like(facts('welds', 'welded_on'), { type: 'date', from: '1900-01-01', to: '2200-12-31' });
  t.like(facts('welds', 'status'), {
    enum: ['PENDING', 'ACCEPTED', 'REJECTED', 'REPAIR', 'VOIDED'],
  });
  t.like(facts('wps', 'thickness_max_in'), { minimum: 0 }); // >= thickness_min_in, itself >= 0
  t.like(facts('pqrs', 'p_numbers'), {
    minItems: 1,
    maxItems: 2,
    items: { pattern: '^[0-9]{1,3}[A-Z]?$' },
  });
  t.like(facts('welder_qualifications', 'revocation_reason'), {
    trimmed: true,
    minLength: 1,
    maxLength: 2000,
  });
  t.like(facts('welder_qualifications', 'positions').items!, {
    enum: ['1G', '2G', '3G', '4G', '5G', '6G', '1F', '2F', '3F', '4F', '5F'],
  });
  t.like(facts('iso_weld_counts', 'pending'), { minimum: 0 });
  t.is(
    facts('welds', 'type').messages.enum,
    'must be BW (butt), SW (socket), FW (fillet), BR (branch), TW (tie-in), MW (miter) or LW (lap)',
  );
  t.regex(facts('welds', 'repair_cycle').description!, /each repair released/);
  const ndt = await writerFacts(rootUrl, 'weld_public.ndt_records');
  t.deepEqual(ndt.functions, ['correct_ndt_record', 'record_ndt']);
  const recorded = ndt.values.get('record_ndt')!;
  t.like(recorded.get('notes')!, { maxLength: 10_000, nullable: true });
  t.like(recorded.get('welds')!, { minItems: 1, maxItems: 200 });
  t.like(recorded.get('filmIntervals[].defectCodes')!, {
    maxItems: 50,
    items: { minLength: 1, maxLength: 20 },
  });
  t.deepEqual(ndt.objects.get('record_ndt')!.get('welds[]'), {
    allowed: ['weldId', 'result', 'defectLengthIn'],
    required: ['weldId'],
  });
});
