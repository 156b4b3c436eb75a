// Beyond one node, in the catalog (docs/operating.md, "Scaling out"): every tenant table can be distributed by
// tenant_id with Citus, the tables that cannot be are named here, and `weld-admin citus-plan`
// prints statements in an order Citus accepts. Citus is not installed here: db/citus.ts checks its
// rules on the catalog, and these tests show that it finds what breaks them.
import test from 'ava';
import { analyzeCitus, type CitusAnalysis } from '../../db/citus.ts';
import { connectClient } from '../../db/database.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { runCli } from '../helpers/server.ts';

/**
 * The tables that are not distributed, and so every decision a new table forces: a table with
 * tenant_id is distributed unless it is named here; one without it becomes a reference table when
 * a tenant table references it, and stays local otherwise.
 */
const REFERENCE = [
  'weld_private.reporting_logins',
  'weld_private.tenant_origins',
  'weld_public.tenants',
];
const LOCAL: string[] = [];

async function analyze(rootUrl: string): Promise<CitusAnalysis> {
  const db = await connectClient(rootUrl);
  try {
    return await analyzeCitus(db);
  } finally {
    await db.end();
  }
}

const placed = (analysis: CitusAnalysis, placement: string) =>
  analysis.tables.filter((t) => t.placement === placement).map((t) => t.table);

/** Every table of the service's schemas with its foreign keys' targets, read independently. */
async function schemaTables(rootUrl: string) {
  return superuserQuery<{ name: string; tenant: boolean; targets: string[] }>(
    rootUrl,
    `select n.nspname || '.' || c.relname as name,
            exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id'
                       and not a.attisdropped) as tenant,
            array(select distinct tn.nspname || '.' || t.relname
                    from pg_constraint f join pg_class t on t.oid = f.confrelid
                    join pg_namespace tn on tn.oid = t.relnamespace
                   where f.conrelid = c.oid and f.contype = 'f' and f.confrelid <> c.oid) as targets
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname in ('weld_public', 'weld_hidden', 'weld_private') and c.relkind in ('r', 'p')
      order by 1`,
  );
}

test('the schema: every table with tenant_id is distributed, the reference tables are the named ones, and only the known problem', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const analysis = await analyze(rootUrl);
  const tables = await schemaTables(rootUrl);

  t.deepEqual(analysis.problems, [], 'the schema as migrated distributes (migration 000014)');
  t.deepEqual(placed(analysis, 'reference'), REFERENCE);
  t.deepEqual(placed(analysis, 'local'), LOCAL);
  t.deepEqual(
    placed(analysis, 'distributed'),
    tables.filter((r) => r.tenant && !REFERENCE.includes(r.name)).map((r) => r.name),
  );
  t.deepEqual(
    analysis.tables.map((c) => c.table),
    tables.map((r) => r.name),
    'every table is classified',
  );
  t.true(placed(analysis, 'distributed').length >= 35);
  for (const table of analysis.tables) t.truthy(table.reason, table.table);

  // The plan covers every Citus table once: reference tables first, then each distributed table
  // after what it references, all colocated with the first.
  t.deepEqual(
    analysis.steps.map((s) => s.table).sort(),
    [...placed(analysis, 'reference'), ...placed(analysis, 'distributed')].sort(),
  );
  const position = new Map(analysis.steps.map((s, i) => [s.table, i]));
  for (const { name, targets } of tables) {
    for (const target of targets) {
      t.true(position.get(target)! < position.get(name)!, `${target} before ${name}`);
    }
  }
  const [first, ...others] = analysis.steps.filter((s) => s.placement === 'distributed');
  t.is(first!.colocateWith, 'none');
  for (const step of others) t.is(step.colocateWith, first!.table, step.table);

  // What the plan must warn of: the triggers of the tenants table run on every copy, the weld
  // guards and the ISO counts' inserts and deletes (000015) are statement-level with transition
  // tables, the outbox is deferred, ids are per node.
  const cautions = analysis.cautions.join('\n');
  t.regex(cautions, /Triggers on reference tables: weld_public\.tenants \(/);
  t.regex(
    cautions,
    /Statement-level triggers: .*weld_public\.welds \(_100_package_open_insert.*\(\d+ with transition tables\)/,
  );
  t.regex(cautions, /Deferred triggers: .*weld_public\.welds \(_900_outbox\)/);
  t.regex(cautions, /Identity and serial columns: .*weld_hidden\.pending_events\.n/);
});

test('the check is not vacuous: it names a global unique key, a foreign key across tenants, and a table without tenant_id that points into one', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  await superuserQuery(
    rootUrl,
    `-- A unique constraint without tenant_id.
     create table weld_public.gauges (
       tenant_id uuid not null references weld_public.tenants on delete cascade,
       id uuid not null, serial text not null unique,
       primary key (tenant_id, id));
     -- A foreign key on the id alone (which needs a unique index on the id alone).
     create unique index isos_id_only on weld_public.isos (id);
     create table weld_public.iso_notes (
       tenant_id uuid not null references weld_public.tenants on delete cascade,
       id uuid not null, iso_id uuid not null references weld_public.isos (id), note text,
       primary key (tenant_id, id));
     -- No tenant_id, pointing at a tenant table.
     create table weld_public.stamps (
       id uuid primary key, owner uuid not null, welder_id uuid not null,
       foreign key (owner, welder_id) references weld_public.welders (tenant_id, id));
     -- A vocabulary tenant tables reference (a reference table, by itself), and a table nothing
     -- references (local): no problem either.
     create table weld_public.weld_processes (code text primary key);
     alter table weld_public.gauges add column process text references weld_public.weld_processes;
     create table weld_public.scratch (id int primary key);
     -- A reference table (tenant tables reference it) may not point back into a tenant table.
     create table weld_public.process_owners (
       code text primary key references weld_public.weld_processes,
       tenant uuid not null, user_id uuid not null,
       foreign key (tenant, user_id) references weld_public.users (tenant_id, id));
     alter table weld_public.gauges add column owner text references weld_public.process_owners;`,
  );
  const analysis = await analyze(rootUrl);
  t.deepEqual(
    analysis.problems,
    [
      'weld_public.gauges: unique constraint gauges_serial_key (serial) does not include tenant_id ' +
        '(each shard enforces its own uniqueness, so Citus refuses it)',
      'weld_public.iso_notes: foreign key iso_notes_iso_id_fkey (iso_id) -> weld_public.isos (id) ' +
        "crosses tenants: it does not pair tenant_id with the target's tenant_id (Citus needs both " +
        'distribution columns in the same position)',
      'weld_public.isos: unique index isos_id_only (id) does not include tenant_id (each shard ' +
        'enforces its own uniqueness, so Citus refuses it)',
      'weld_public.process_owners: foreign key process_owners_tenant_user_id_fkey (tenant, user_id) ' +
        '-> weld_public.users (tenant_id, id): weld_public.process_owners has no tenant_id, and a ' +
        'reference table cannot reference a distributed one; give it tenant_id and lead the ' +
        'foreign key with it',
      'weld_public.stamps: foreign key stamps_owner_welder_id_fkey (owner, welder_id) -> ' +
        'weld_public.welders (tenant_id, id): weld_public.stamps has no tenant_id, and a local ' +
        'table cannot reference a distributed one; give it tenant_id and lead the foreign key ' +
        'with it',
    ].sort(),
  );
  t.deepEqual(placed(analysis, 'reference'), [
    'weld_private.reporting_logins',
    'weld_private.tenant_origins',
    'weld_public.process_owners',
    'weld_public.tenants',
    'weld_public.weld_processes',
  ]);
  t.deepEqual(placed(analysis, 'local'), ['weld_public.scratch', 'weld_public.stamps']);
  t.regex(
    analysis.tables.find((c) => c.table === 'weld_public.weld_processes')!.reason,
    /^no tenant_id, and referenced by weld_public\.gauges, weld_public\.process_owners: a copy on every node/,
  );
});

test('weld-admin citus-plan: prints a plan in a valid order for the schema as migrated, and refuses a bad table', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };

  const planned = await runCli(['citus-plan'], env);
  t.is(planned.code, 0, planned.output);
  t.is(planned.stderr, '');
  const statements = [
    ...planned.stdout.matchAll(
      /^select create_(reference|distributed)_table\('([^']+)'(?:, 'tenant_id', colocate_with => '([^']+)')?\);$/gm,
    ),
  ].map(([, kind, table, colocateWith]) => ({ kind, table: table!, colocateWith }));
  const tables = await schemaTables(rootUrl);
  t.is(statements.length, tables.length, 'one statement for every table');
  t.deepEqual(statements.map((s) => s.table).sort(), tables.map((r) => r.name).sort());

  // Reference tables first; every foreign key's target before the table that has it.
  const kinds = statements.map((s) => s.kind);
  t.deepEqual(
    kinds,
    [...kinds].sort((a, b) => (a === b ? 0 : a === 'reference' ? -1 : 1)),
  );
  t.deepEqual(
    statements.filter((s) => s.kind === 'reference').map((s) => s.table),
    ['weld_public.tenants', 'weld_private.reporting_logins', 'weld_private.tenant_origins'],
  );
  const position = new Map(statements.map((s, i) => [s.table, i]));
  for (const { name, targets } of tables) {
    for (const target of targets) {
      t.true(position.get(target)! < position.get(name)!, `${target} is created before ${name}`);
    }
  }
  // One colocation group: the first distributed table starts it, the others join it.
  const [first, ...others] = statements.filter((s) => s.kind === 'distributed');
  t.is(first!.colocateWith, 'none');
  t.true(others.length > 30);
  for (const s of others) t.is(s.colocateWith, first!.table, s.table);
  // A runnable script: comments, the settings, the statements, nothing else.
  for (const line of planned.stdout.split('\n')) {
    t.regex(
      line,
      /^(|--.*|select create_.*;|set citus\.enable_unsafe_triggers to on;|alter role .*;)$/,
    );
  }
  t.regex(planned.stdout, /^-- The schema of migrations up to [0-9]{6}\.sql\.$/m);

  await superuserQuery(
    rootUrl,
    `create table weld_public.gauges (
       tenant_id uuid not null references weld_public.tenants on delete cascade,
       id uuid not null, serial text not null unique,
       primary key (tenant_id, id))`,
  );
  const bad = await runCli(['citus-plan'], env);
  t.is(bad.code, 1, bad.output);
  t.is(bad.stdout, '');
  t.deepEqual(bad.stderr.trim().split('\n'), [
    'weld_public.gauges: unique constraint gauges_serial_key (serial) does not include tenant_id ' +
      '(each shard enforces its own uniqueness, so Citus refuses it)',
    'weld-admin: the schema cannot be distributed by tenant_id: 1 problem (above); no plan written',
  ]);
});
