// Beyond one database node (issue F10): the schema as Citus tables, read from the catalog.
//
// When one PostgreSQL node is outgrown, the path is Citus with every tenant table distributed by
// tenant_id into one colocation group: a tenant's rows of every table then live in one shard group
// on one node, so its transactions, joins and foreign keys stay on that node. This module reads
// the catalog of the service's schemas (pg_class, pg_attribute, pg_constraint, pg_index,
// pg_policy, pg_trigger) and says, for every table, where it goes and why; what Citus would refuse
// (the problems); what it accepts but runs differently (the cautions); and the statements that
// distribute the schema in an order Citus accepts. `weld-admin citus-plan` prints them,
// test/db/citus.test.ts holds the schema to them, docs/operating.md, "Scaling out", says what they mean.
//
// The rules are Citus's own (commands/foreign_constraint.c and create_distributed_table.c of
// Citus 12 to 14), checked here before a cluster exists:
//   - a distributed table's primary key, unique constraints, unique indexes and exclusion
//     constraints include the distribution column (each shard enforces its own uniqueness);
//   - a foreign key between distributed tables joins colocated tables and pairs the distribution
//     column with the distribution column, in the same position, so it never crosses tenants;
//   - a distributed table may reference a reference table; a reference or local table may not
//     reference a distributed one;
//   - a foreign key that includes the distribution column may not be ON DELETE SET NULL or SET
//     DEFAULT (Citus checks the action, not a PostgreSQL 15 column list), nor ON UPDATE SET NULL,
//     SET DEFAULT or CASCADE;
//   - a referenced table is a Citus table before its referencing table is distributed: reference
//     tables first, then the distributed ones, each after the tables it references.
// Not checked here, because nothing in the schema comes near it: partitioned tables (their
// partitions follow the parent), and the equality operator an exclusion constraint must use on the
// distribution column.
import type pg from 'pg';

export const DISTRIBUTION_COLUMN = 'tenant_id';

/** The service's schemas: weld_public, weld_hidden, weld_private (and any weld_ schema to come). */
const SERVICE_SCHEMAS = String.raw`n.nspname like 'weld\_%'`;

/**
 * The reference tables by decision, and why. A table without tenant_id that tenant tables
 * reference becomes a reference table by itself (a vocabulary); these three are named because
 * they could not be anything else and a reader should not have to work out why.
 */
export const REFERENCE_TABLES: ReadonlyMap<string, string> = new Map([
  [
    'weld_public.tenants',
    'the tenant itself: keyed by id, not tenant_id, its slug unique across tenants, read before a ' +
      "request's tenant is known (weld_hidden.tenant_by_origin); every tenant table references it",
  ],
  [
    'weld_private.tenant_origins',
    'routing is global: an origin is unique across tenants (tenant_origins_origin_key) and is ' +
      'looked up before the tenant is known',
  ],
  [
    'weld_private.reporting_logins',
    "a reporting login is a role, and roles are the cluster's: its name is unique across tenants " +
      '(reporting_logins_role_name_key) and is how its session finds its tenant',
  ],
]);

export type Placement = 'distributed' | 'reference' | 'local';

export interface TableClass {
  table: string;
  placement: Placement;
  reason: string;
}

export interface CitusStep {
  table: string;
  placement: 'reference' | 'distributed';
  /** For distributed tables: 'none' for the first (a colocation group of its own), else it. */
  colocateWith?: string;
  sql: string;
}

export interface CitusAnalysis {
  /** Every table of the service's schemas, by name. */
  tables: TableClass[];
  /** What Citus would refuse, one line each, naming the table first; sorted. */
  problems: string[];
  /** What Citus accepts but runs differently from one node; for the plan's comments. */
  cautions: string[];
  /** The statements, in an order Citus accepts: reference tables, then distributed ones. */
  steps: CitusStep[];
  /** Whether a table that goes to Citus has triggers (citus.enable_unsafe_triggers). */
  needsUnsafeTriggers: boolean;
}

interface CatalogTable {
  name: string;
  tenantType: string | null;
  tenantNotNull: boolean;
  tenantPolicies: string[];
}

interface CatalogKey {
  table: string;
  name: string;
  kind: 'primary key' | 'unique constraint' | 'exclusion constraint' | 'unique index';
  columns: string[];
}

interface CatalogForeignKey {
  table: string;
  name: string;
  columns: string[];
  target: string;
  targetColumns: string[];
  /** pg_constraint.confdeltype / confupdtype: a no action, r restrict, c cascade, n set null, d set default. */
  onDelete: string;
  onUpdate: string;
}

interface CatalogTrigger {
  table: string;
  name: string;
  forEachRow: boolean;
  transitionTables: boolean;
  deferrable: boolean;
}

interface CatalogSequenceColumn {
  table: string;
  column: string;
}

export interface Catalog {
  tables: CatalogTable[];
  keys: CatalogKey[];
  foreignKeys: CatalogForeignKey[];
  triggers: CatalogTrigger[];
  sequenceColumns: CatalogSequenceColumn[];
}

const qualified = (cls: string, ns: string) => `format('%I.%I', ${ns}.nspname, ${cls}.relname)`;

/** The column names of attribute numbers `nums` of relation `rel`, in order, as text[]. */
const columnNames = (rel: string, nums: string) =>
  `array(select coalesce(a.attname::text, '(expression)')
           from unnest(${nums}) with ordinality k(num, ord)
           left join pg_catalog.pg_attribute a on a.attrelid = ${rel} and a.attnum = k.num
          order by k.ord)`;

/** Reads what the classification needs from the catalog of the service's schemas. */
export async function readCatalog(db: pg.ClientBase): Promise<Catalog> {
  const tables = await db.query<CatalogTable>(
    `select ${qualified('c', 'n')} as name,
            format_type(a.atttypid, a.atttypmod) as "tenantType",
            coalesce(a.attnotnull, false) as "tenantNotNull",
            array(select p.polname::text from pg_catalog.pg_policy p
                   where p.polrelid = c.oid
                     and concat(pg_get_expr(p.polqual, p.polrelid), ' ',
                                pg_get_expr(p.polwithcheck, p.polrelid)) like '%current_tenant_id()%'
                   order by 1) as "tenantPolicies"
       from pg_catalog.pg_class c
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       left join pg_catalog.pg_attribute a
         on a.attrelid = c.oid and a.attname = $1 and a.attnum > 0 and not a.attisdropped
      where ${SERVICE_SCHEMAS} and c.relkind in ('r', 'p') and not c.relispartition
      order by 1`,
    [DISTRIBUTION_COLUMN],
  );
  const keys = await db.query<CatalogKey>(
    `select ${qualified('c', 'n')} as table, con.conname::text as name,
            case con.contype when 'p' then 'primary key' when 'u' then 'unique constraint'
                             else 'exclusion constraint' end as kind,
            ${columnNames('con.conrelid', 'con.conkey')} as columns
       from pg_catalog.pg_constraint con
       join pg_catalog.pg_class c on c.oid = con.conrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where ${SERVICE_SCHEMAS} and c.relkind in ('r', 'p') and not c.relispartition
        and con.contype in ('p', 'u', 'x')
     union all
     select ${qualified('c', 'n')}, ic.relname::text, 'unique index',
            ${columnNames('i.indrelid', '(i.indkey::int2[])[0:i.indnkeyatts - 1]')}
       from pg_catalog.pg_index i
       join pg_catalog.pg_class ic on ic.oid = i.indexrelid
       join pg_catalog.pg_class c on c.oid = i.indrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where ${SERVICE_SCHEMAS} and c.relkind in ('r', 'p') and not c.relispartition
        and i.indisunique
        and not exists (select from pg_catalog.pg_constraint con
                         where con.conindid = i.indexrelid and con.contype in ('p', 'u', 'x'))
      order by 1, 2`,
  );
  const foreignKeys = await db.query<CatalogForeignKey>(
    `select ${qualified('c', 'n')} as table, con.conname::text as name,
            ${columnNames('con.conrelid', 'con.conkey')} as columns,
            ${qualified('t', 'tn')} as target,
            ${columnNames('con.confrelid', 'con.confkey')} as "targetColumns",
            con.confdeltype::text as "onDelete", con.confupdtype::text as "onUpdate"
       from pg_catalog.pg_constraint con
       join pg_catalog.pg_class c on c.oid = con.conrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       join pg_catalog.pg_class t on t.oid = con.confrelid
       join pg_catalog.pg_namespace tn on tn.oid = t.relnamespace
      where ${SERVICE_SCHEMAS} and c.relkind in ('r', 'p') and not c.relispartition
        and con.contype = 'f'
      order by 1, 2`,
  );
  const triggers = await db.query<CatalogTrigger>(
    `select ${qualified('c', 'n')} as table, tg.tgname::text as name,
            (tg.tgtype & 1) = 1 as "forEachRow",
            (tg.tgoldtable is not null or tg.tgnewtable is not null) as "transitionTables",
            tg.tgdeferrable as deferrable
       from pg_catalog.pg_trigger tg
       join pg_catalog.pg_class c on c.oid = tg.tgrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where ${SERVICE_SCHEMAS} and c.relkind in ('r', 'p') and not c.relispartition
        and not tg.tgisinternal
      order by 1, 2`,
  );
  const sequenceColumns = await db.query<CatalogSequenceColumn>(
    `select ${qualified('c', 'n')} as table, a.attname::text as column
       from pg_catalog.pg_attribute a
       join pg_catalog.pg_class c on c.oid = a.attrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       left join pg_catalog.pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
      where ${SERVICE_SCHEMAS} and c.relkind in ('r', 'p') and not c.relispartition
        and a.attnum > 0 and not a.attisdropped
        and (a.attidentity <> '' or pg_get_expr(d.adbin, d.adrelid) like 'nextval(%')
      order by 1, 2`,
  );
  return {
    tables: tables.rows,
    keys: keys.rows,
    foreignKeys: foreignKeys.rows,
    triggers: triggers.rows,
    sequenceColumns: sequenceColumns.rows,
  };
}

/** The catalog of the database `db` is connected to, classified. */
export async function analyzeCitus(db: pg.ClientBase): Promise<CitusAnalysis> {
  return classifyForCitus(await readCatalog(db));
}

const ACTIONS: Record<string, string> = {
  a: 'NO ACTION',
  r: 'RESTRICT',
  c: 'CASCADE',
  n: 'SET NULL',
  d: 'SET DEFAULT',
};

const list = (items: string[]) => items.join(', ');

/** Where every table goes, what Citus would refuse, and the statements, from a catalog. */
export function classifyForCitus(catalog: Catalog): CitusAnalysis {
  const problems: string[] = [];
  const placement = new Map<string, Placement>();
  const reasons = new Map<string, string>();
  const tableNames = new Set(catalog.tables.map((t) => t.name));
  const outgoing = (table: string) => catalog.foreignKeys.filter((fk) => fk.table === table);
  const incoming = (table: string) =>
    catalog.foreignKeys.filter((fk) => fk.target === table && fk.table !== table);

  // 1. Where each table goes. Named reference tables; then every table with tenant_id is
  // distributed; a table without it is a reference table when a distributed or reference table
  // references it (Citus needs a referenced table on every node), until nothing changes; the
  // rest stay local tables on the coordinator.
  for (const table of catalog.tables) {
    const named = REFERENCE_TABLES.get(table.name);
    if (named) {
      placement.set(table.name, 'reference');
      reasons.set(table.name, named);
    } else if (table.tenantType !== null) {
      placement.set(table.name, 'distributed');
      reasons.set(table.name, "has tenant_id: its rows live in their tenant's shard");
    }
  }
  for (let changed = true; changed;) {
    changed = false;
    for (const table of catalog.tables) {
      if (placement.has(table.name)) continue;
      const referrers = incoming(table.name).filter((fk) => placement.has(fk.table));
      if (referrers.length > 0) {
        placement.set(table.name, 'reference');
        const by = [...new Set(referrers.map((fk) => fk.table))];
        reasons.set(
          table.name,
          `no tenant_id, and referenced by ${list(by)}: a copy on every node (a vocabulary)`,
        );
        changed = true;
      }
    }
  }
  for (const table of catalog.tables) {
    if (!placement.has(table.name)) {
      placement.set(table.name, 'local');
      reasons.set(
        table.name,
        'no tenant_id, and no tenant table references it: a plain table on the coordinator',
      );
    }
  }

  // 2. What Citus would refuse.
  const distributed = catalog.tables.filter((t) => placement.get(t.name) === 'distributed');
  const typeCounts = new Map<string, number>();
  for (const t of distributed) {
    typeCounts.set(t.tenantType!, (typeCounts.get(t.tenantType!) ?? 0) + 1);
  }
  const tenantType = [...typeCounts].sort((a, b) => b[1] - a[1])[0]?.[0];
  for (const table of distributed) {
    if (!table.tenantNotNull) {
      problems.push(`${table.name}: tenant_id may be null (a row without a tenant has no shard)`);
    }
    if (table.tenantType !== tenantType) {
      problems.push(
        `${table.name}: tenant_id is ${table.tenantType}, not ${tenantType} as in the other ` +
          'tenant tables (tables distributed by columns of different types are never colocated)',
      );
    }
    for (const key of catalog.keys.filter((k) => k.table === table.name)) {
      if (!key.columns.includes(DISTRIBUTION_COLUMN)) {
        problems.push(
          `${table.name}: ${key.kind} ${key.name} (${list(key.columns)}) does not include ` +
            'tenant_id (each shard enforces its own uniqueness, so Citus refuses it)',
        );
      }
    }
  }
  for (const table of catalog.tables) {
    const where = placement.get(table.name)!;
    if (where !== 'distributed' && !REFERENCE_TABLES.has(table.name)) {
      for (const policy of table.tenantPolicies) {
        problems.push(
          `${table.name}: row security scopes it by tenant (policy ${policy}), but it has no ` +
            'tenant_id to be distributed by',
        );
      }
    }
  }
  for (const fk of catalog.foreignKeys) {
    const from = placement.get(fk.table)!;
    const to = placement.get(fk.target);
    const label = `${fk.table}: foreign key ${fk.name} (${list(fk.columns)}) -> ${fk.target} (${list(fk.targetColumns)})`;
    if (!to) {
      problems.push(`${label}: the target is outside the service's schemas, so in no plan`);
      continue;
    }
    if (from === 'distributed') {
      const position = fk.columns.indexOf(DISTRIBUTION_COLUMN);
      if (to === 'distributed' && fk.targetColumns[position] !== DISTRIBUTION_COLUMN) {
        problems.push(
          `${label} crosses tenants: it does not pair tenant_id with the target's tenant_id ` +
            '(Citus needs both distribution columns in the same position)',
        );
      }
      if (position >= 0 && (fk.onDelete === 'n' || fk.onDelete === 'd')) {
        problems.push(
          `${label}: ON DELETE ${ACTIONS[fk.onDelete]} in a foreign key that includes tenant_id ` +
            '(Citus refuses SET NULL and SET DEFAULT there, even for a column list)',
        );
      }
      if (position >= 0 && ['n', 'd', 'c'].includes(fk.onUpdate)) {
        problems.push(
          `${label}: ON UPDATE ${ACTIONS[fk.onUpdate]} in a foreign key that includes tenant_id ` +
            '(Citus refuses SET NULL, SET DEFAULT and CASCADE on update there)',
        );
      }
    } else if (to === 'distributed') {
      problems.push(
        from === 'reference' && REFERENCE_TABLES.has(fk.table)
          ? `${label}: ${fk.table} is a reference table, and a reference table cannot reference a distributed one`
          : `${label}: ${fk.table} has no tenant_id, and a ${from} table cannot reference a ` +
              'distributed one; give it tenant_id and lead the foreign key with it',
      );
    }
  }

  // 3. The order: within each kind, a table after the tables it references (self-references
  // aside), the most referenced first among those ready, then by name.
  const steps: CitusStep[] = [];
  const ordered = (kind: Placement) => {
    const members = catalog.tables.map((t) => t.name).filter((n) => placement.get(n) === kind);
    const pending = new Set(members);
    const order: string[] = [];
    const targets = (table: string) =>
      outgoing(table)
        .map((fk) => fk.target)
        .filter((target) => target !== table && pending.has(target));
    const weight = (table: string) => incoming(table).length;
    while (pending.size > 0) {
      const ready = [...pending].filter((t) => targets(t).length === 0);
      if (ready.length === 0) {
        problems.push(
          `${list([...pending])}: their foreign keys form a cycle, so no order creates each ` +
            'after the tables it references',
        );
        break;
      }
      ready.sort((a, b) => weight(b) - weight(a) || (a < b ? -1 : 1));
      order.push(ready[0]!);
      pending.delete(ready[0]!);
    }
    return order;
  };
  for (const table of ordered('reference')) {
    steps.push({
      table,
      placement: 'reference',
      sql: `select create_reference_table('${table}');`,
    });
  }
  const anchor = ordered('distributed');
  for (const [index, table] of anchor.entries()) {
    const colocateWith = index === 0 ? 'none' : anchor[0]!;
    steps.push({
      table,
      placement: 'distributed',
      colocateWith,
      sql:
        `select create_distributed_table('${table}', '${DISTRIBUTION_COLUMN}', ` +
        `colocate_with => '${colocateWith}');`,
    });
  }

  return {
    tables: catalog.tables.map((t) => ({
      table: t.name,
      placement: placement.get(t.name)!,
      reason: reasons.get(t.name)!,
    })),
    problems: [...new Set(problems)].sort(),
    cautions: cautionsOf(catalog, placement, tableNames),
    steps,
    needsUnsafeTriggers: catalog.triggers.some((t) => placement.get(t.table) !== 'local'),
  };
}

/** What Citus accepts but runs differently from one node, for the plan's comments. */
function cautionsOf(
  catalog: Catalog,
  placement: Map<string, Placement>,
  tableNames: Set<string>,
): string[] {
  const cautions: string[] = [];
  const byTable = (triggers: CatalogTrigger[]) => {
    const tables = new Map<string, string[]>();
    for (const t of triggers) tables.set(t.table, [...(tables.get(t.table) ?? []), t.name]);
    return [...tables].map(([table, names]) => `${table} (${list(names)})`);
  };
  const on = (kind: Placement) => catalog.triggers.filter((t) => placement.get(t.table) === kind);

  const onReference = on('reference');
  if (onReference.length > 0) {
    cautions.push(
      `Triggers on reference tables: ${list(byTable(onReference))}. Citus creates them on every ` +
        "copy, so each fires once per node; from a worker's copy, a write to a distributed table " +
        'whose shard is on another node is refused inside a trigger. Move that work into the ' +
        'function that writes the table before distributing.',
    );
  }
  const onDistributed = on('distributed');
  const statement = onDistributed.filter((t) => !t.forEachRow);
  if (statement.length > 0) {
    const transition = statement.filter((t) => t.transitionTables);
    cautions.push(
      `Statement-level triggers: ${list(byTable(statement))}` +
        (transition.length > 0 ? ` (${transition.length} with transition tables)` : '') +
        '. Citus creates them on each shard, where they fire once per shard a statement writes, ' +
        "over that shard's rows only; a statement of one tenant writes one shard, so once, as " +
        "today. Their queries run on the worker and must reach only that tenant's shards.",
    );
  }
  const deferred = onDistributed.filter((t) => t.deferrable);
  if (deferred.length > 0) {
    cautions.push(
      `Deferred triggers: ${list(byTable(deferred))}. They run on the worker that ` +
        'holds the shard, at its commit; the advisory locks they take, the NOTIFYs they send and ' +
        "the sequences they draw from are that worker's, not the coordinator's.",
    );
  }
  const rowTables = new Set(onDistributed.filter((t) => t.forEachRow).map((t) => t.table));
  if (onDistributed.length > 0) {
    cautions.push(
      `Every trigger on a distributed table (row triggers on ${rowTables.size} tables) needs ` +
        'citus.enable_unsafe_triggers to be created, runs on the worker that holds the shard, and ' +
        'may read and write only shards colocated with it (the same tenant: Citus runs those ' +
        'locally) and reference tables; a query that needs another node is refused inside a ' +
        'trigger. Citus picks a shard from constants and bound parameters (plpgsql variables ' +
        'are parameters), not from calls such as weld_hidden.current_tenant_id() in a select, ' +
        'nor from row security. Settings made with set_config() on the coordinator do not reach ' +
        'the worker.',
    );
  }
  const sequences = catalog.sequenceColumns.filter((c) => placement.get(c.table) !== 'local');
  if (sequences.length > 0) {
    cautions.push(
      `Identity and serial columns: ${list(sequences.map((c) => `${c.table}.${c.column}`))}. ` +
        "A value comes from the sequence of the node that runs the insert: the coordinator's, or " +
        "a worker's own range (from its group id << 48), so values are unique but neither gap-free " +
        'nor ordered across nodes.',
    );
  }
  const withoutKey = [...tableNames].filter(
    (name) =>
      placement.get(name) !== 'local' &&
      !catalog.keys.some((k) => k.table === name && k.kind === 'primary key'),
  );
  if (withoutKey.length > 0) {
    cautions.push(
      `Tables without a primary key: ${list(withoutKey)}. A shard move replicates logically, ` +
        'which needs a replica identity for updates and deletes during the move.',
    );
  }
  return cautions;
}

/** `text` as comment lines of at most 100 characters: `first` begins the first, `next` the rest. */
function comment(text: string, first: string, next = '--  '): string[] {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(' ')) {
    if (line.length + 1 + word.length > 100 && line !== first) {
      lines.push(line);
      line = next;
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines;
}

/** The plan as a script for psql, or any client that runs one statement after another. */
export function renderCitusPlan(
  analysis: CitusAnalysis,
  context: { migration: string | null },
): string {
  const reference = analysis.steps.filter((s) => s.placement === 'reference');
  const distributed = analysis.steps.filter((s) => s.placement === 'distributed');
  const local = analysis.tables.filter((t) => t.placement === 'local');
  const reasonOf = (table: string) => analysis.tables.find((t) => t.table === table)!.reason;
  const lines = [
    '-- The Weld Data Service schema as Citus tables (weld-admin citus-plan; docs/operating.md, "Scaling out").',
    `-- The schema of migrations up to ${context.migration ?? '(none)'}.`,
    '--',
    ...comment(
      'Assumes: Citus 12 or later (identity columns on distributed tables need 11.2), built for ' +
        'this PostgreSQL major version; `create extension citus` run in this database on the ' +
        'coordinator and on every worker; the workers added (citus_add_node) and the coordinator ' +
        'registered (citus_set_coordinator_host); the roles of migrations/bootstrap.sql created ' +
        'on the coordinator, from where Citus creates them on the workers. Run it on the ' +
        'coordinator as a superuser, in a maintenance window: psql -v ON_ERROR_STOP=1 -f plan.sql',
      '--',
      '--',
    ),
    '--',
    ...comment(
      'Each statement commits on its own. A table that holds rows is copied into its shards while ' +
        'writes to it wait. Should one statement fail, those before it stay done: fix the cause ' +
        'and run the rest (undistribute_table() takes a table back). Row security, policies, ' +
        'grants, indexes and triggers go with each table to its shards.',
      '--',
      '--',
    ),
    '--',
    ...comment(
      `Reference tables (${reference.length}): a copy on every node. Distributed tables ` +
        `(${distributed.length}): by hash of tenant_id, all colocated with ` +
        `${distributed[0]?.table ?? '(none)'}, each after the tables it references.`,
      '--',
      '--',
    ),
    '--',
    '-- What runs differently on Citus (docs/operating.md, "Scaling out", says what to change first):',
    ...analysis.cautions.flatMap((c) => comment(c, '-- -')),
    '',
  ];
  if (analysis.needsUnsafeTriggers) {
    lines.push(
      '-- Citus distributes a table that has triggers only with this on, and the migrations that',
      '-- create or drop triggers later need it too.',
      'set citus.enable_unsafe_triggers to on;',
      'alter role weld_owner set citus.enable_unsafe_triggers to on;',
      '',
    );
  }
  lines.push('-- Reference tables');
  for (const step of reference) {
    lines.push(...comment(reasonOf(step.table), `-- ${step.table}:`), step.sql);
  }
  lines.push('', '-- Distributed tables', ...distributed.map((s) => s.sql), '');
  lines.push(`-- Local tables, which stay on the coordinator: ${local.length === 0 ? 'none' : ''}`);
  for (const table of local) lines.push(...comment(table.reason, `-- ${table.table}:`));
  return lines.join('\n') + '\n';
}
