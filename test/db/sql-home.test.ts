// One home per SQL function (docs/database.md, "Where a rule lives"): every function, view and
// trigger of the service's schemas is written in exactly one file under migrations/fixtures/, and
// what the files say is what the catalog holds. Executing every fixture (twice: a migration may
// include one again) over a migrated database whose triggers, comments and grants were taken away
// must give back the catalog as it was, to the character of each function body.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import type pg from 'pg';
import { connectClient, MIGRATIONS_DIR } from '../../db/database.ts';
import { migratedDatabase } from '../helpers/database.ts';

const FIXTURES_DIR = path.join(MIGRATIONS_DIR, 'fixtures');

/** A fixture's path under migrations/fixtures/ (as `--!include` names it), and its text. */
interface Fixture {
  file: string;
  text: string;
}

/** Every fixture: views first, then functions, each folder by name (as a migration includes them). */
function readFixtures(): Fixture[] {
  const files = fs
    .readdirSync(FIXTURES_DIR, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.sql'))
    .sort(
      (a, b) => Number(b.startsWith('views/')) - Number(a.startsWith('views/')) || (a < b ? -1 : 1),
    );
  return files.map((file) => ({
    file,
    text: fs.readFileSync(path.join(FIXTURES_DIR, file), 'utf8'),
  }));
}

/**
 * The service's objects: those of every schema but PostgreSQL's own and graphile-migrate's
 * bookkeeping. `public` counts too, without the members of the extensions it holds (citext,
 * btree_gist), so a function of the service's put there would need its fixture as well.
 */
const SERVICE_OBJECT = (namespace: string) => `${namespace} not in (
    select oid from pg_catalog.pg_namespace
     where nspname like 'pg\\_%' or nspname in ('information_schema', 'graphile_migrate'))`;
const NOT_EXTENSION = (classid: string, objid: string) =>
  `not exists (select from pg_catalog.pg_depend d
                where d.classid = '${classid}'::regclass and d.objid = ${objid} and d.deptype = 'e')`;

const FUNCTIONS = `
  select p.oid, n.nspname || '.' || p.proname as name, p.proowner, p.proacl
    from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
   where ${SERVICE_OBJECT('p.pronamespace')} and ${NOT_EXTENSION('pg_proc', 'p.oid')}
     -- PostgreSQL 15's stand-in for pg_input_is_valid lives in migrations/bootstrap.sql.
     and (n.nspname, p.proname) <> ('public', 'pg_input_is_valid')`;
const VIEWS = `
  select c.oid, n.nspname || '.' || c.relname as name, c.relowner, c.relacl
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
   where c.relkind in ('v', 'm') and ${SERVICE_OBJECT('c.relnamespace')}
     and ${NOT_EXTENSION('pg_class', 'c.oid')}`;
const TRIGGERS = `
  select t.oid, t.tgrelid::regclass::text || ' ' || t.tgname as name, t.tgname, t.tgrelid,
         fn.nspname || '.' || p.proname as function
    from pg_catalog.pg_trigger t join pg_catalog.pg_class c on c.oid = t.tgrelid
    join pg_catalog.pg_proc p on p.oid = t.tgfoid
    join pg_catalog.pg_namespace fn on fn.oid = p.pronamespace
   where not t.tgisinternal and ${SERVICE_OBJECT('c.relnamespace')}`;

// ---------------------------------------------------------------------------------------------
// (a) Exactly one home each.

/** The objects a fixture writes, as the lines that begin its statements name them. */
function written(text: string) {
  const all = (re: RegExp, name: (m: RegExpMatchArray) => string) =>
    [...text.matchAll(re)].map((m) => name(m).toLowerCase());
  return {
    functions: all(/^create\s+or\s+replace\s+function\s+([\w.]+)\s*\(/gim, (m) => m[1]!),
    views: all(/^create\s+or\s+replace\s+view\s+([\w.]+)/gim, (m) => m[1]!),
    // `create or replace trigger`, or a constraint trigger (which cannot be replaced: the fixture
    // drops it first); its name, then the first `on <table>`.
    triggers: all(
      /^create\s+(?:or\s+replace\s+|constraint\s+)trigger\s+(\w+)\b[\s\S]*?\bon\s+([\w.]+)/gim,
      (m) => `${m[2]} ${m[1]}`,
    ),
    // A fixture runs again in every migration that includes it.
    notIdempotent: all(/^create\s+(function|view|trigger|procedure)\b/gim, (m) => m[0]),
  };
}

interface CatalogNames {
  /** Qualified function names, once per overload. */
  functions: string[];
  views: string[];
  /** `<table> <trigger>`, and the qualified name of the function it executes. */
  triggers: { name: string; function: string }[];
}

async function catalogNames(client: pg.Client): Promise<CatalogNames> {
  const names = async (sql: string) =>
    (await client.query<{ name: string }>(`select name from (${sql}) o order by 1`)).rows.map(
      (r) => r.name,
    );
  const triggers = await client.query<{ name: string; function: string }>(
    `select name, function from (${TRIGGERS}) t order by 1`,
  );
  return {
    functions: await names(FUNCTIONS),
    views: await names(VIEWS),
    triggers: triggers.rows,
  };
}

/**
 * What is wrong with the homes: an object of the catalog no fixture writes, or more than one
 * does; a fixture that writes what the catalog lacks; a fixture not named after what it writes
 * (`functions/<schema>.<name>.sql`, `views/<schema>.<name>.sql`, a trigger with its function);
 * a statement that cannot run twice.
 */
function homeProblems(catalog: CatalogNames, fixtures: Fixture[]): string[] {
  const problems: string[] = [];
  const homes = new Map<string, string[]>();
  const home = (key: string, file: string) => homes.set(key, [...(homes.get(key) ?? []), file]);
  for (const { file, text } of fixtures) {
    const w = written(text);
    const [folder, base] = [path.dirname(file), path.basename(file, '.sql')];
    const named = (kind: string, names: string[]) =>
      names.length > 0 && names.every((name) => name === base) && folder === kind;
    const functionFile = named('functions', w.functions) && w.views.length === 0;
    const viewFile = named('views', w.views) && w.functions.length === 0;
    if (!functionFile && !viewFile) {
      problems.push(`${file}: writes ${[...w.functions, ...w.views].join(', ') || 'nothing'}`);
    }
    for (const statement of w.notIdempotent)
      problems.push(`${file}: "${statement}" without "or replace"`);
    w.functions.forEach((name) => home(`function ${name}`, file));
    w.views.forEach((name) => home(`view ${name}`, file));
    w.triggers.forEach((name) => home(`trigger ${name}`, file));
  }
  const expected = new Map<string, number>();
  const expect = (key: string) => expected.set(key, (expected.get(key) ?? 0) + 1);
  catalog.functions.forEach((name) => expect(`function ${name}`));
  catalog.views.forEach((name) => expect(`view ${name}`));
  for (const trigger of catalog.triggers) {
    expect(`trigger ${trigger.name}`);
    const files = homes.get(`trigger ${trigger.name}`) ?? [];
    if (files.some((file) => file !== `functions/${trigger.function}.sql`)) {
      problems.push(`trigger ${trigger.name}: not with its function ${trigger.function}`);
    }
  }
  for (const [key, count] of expected) {
    const files = homes.get(key) ?? [];
    if (files.length === 0) problems.push(`${key}: in no fixture`);
    else if (files.length !== count) problems.push(`${key}: in ${files.join(', ')}`);
  }
  for (const [key, files] of homes) {
    if (!expected.has(key)) problems.push(`${key}: in ${files.join(', ')} but not in the catalog`);
  }
  return problems.sort();
}

test('every function, view and trigger of the catalog has exactly one fixture, named after it', async (t) => {
  const { target } = await migratedDatabase(t);
  const client = await connectClient(target.ownerUrl);
  t.teardown(() => client.end());
  const catalog = await catalogNames(client);
  t.true(catalog.functions.length >= 150, 'the query sees the functions');
  t.true(catalog.triggers.length >= 80, 'and the triggers');
  t.deepEqual(homeProblems(catalog, readFixtures()), []);

  // Proof the check sees each problem: a function in two files, one in none, one the catalog
  // lacks, a trigger away from its function, a statement that cannot run twice.
  const fixtures = readFixtures()
    .filter((f) => f.file !== 'functions/weld_hidden.request_role.sql')
    .map((f) =>
      f.file === 'functions/weld_hidden.touch.sql'
        ? { ...f, text: f.text.replace(/^create or replace trigger users_touch[^;]*;$/m, '') }
        : f,
    );
  const logout = fixtures.find((f) => f.file === 'functions/weld_hidden.logout.sql')!;
  const broken = [
    ...fixtures,
    { file: 'functions/weld_hidden.logout_copy.sql', text: logout.text },
    {
      file: 'functions/weld_hidden.ghost.sql',
      text: 'create or replace function weld_hidden.ghost() returns int language sql as $$ select 1 $$;',
    },
    {
      file: 'functions/weld_hidden.elsewhere.sql',
      text:
        'create function weld_hidden.elsewhere() returns int language sql as $$ select 1 $$;\n' +
        'create or replace trigger users_touch before update on weld_public.users\n' +
        '  for each row execute function weld_hidden.touch();',
    },
  ];
  t.deepEqual(homeProblems(catalog, broken), [
    'function weld_hidden.ghost: in functions/weld_hidden.ghost.sql but not in the catalog',
    'function weld_hidden.logout: in functions/weld_hidden.logout.sql, functions/weld_hidden.logout_copy.sql',
    'function weld_hidden.request_role: in no fixture',
    'functions/weld_hidden.elsewhere.sql: "create function" without "or replace"',
    'functions/weld_hidden.elsewhere.sql: writes nothing',
    'functions/weld_hidden.logout_copy.sql: writes weld_hidden.logout',
    'trigger weld_public.users users_touch: not with its function weld_hidden.touch',
  ]);
});

// ---------------------------------------------------------------------------------------------
// (b) The fixtures' text is the catalog's.

/** Each object's definition, owner, privileges and comment, by name. */
async function catalogState(client: pg.Client): Promise<Record<string, unknown>> {
  const acl = (column: string, kind: string, owner: string) =>
    `array(select a::text from unnest(coalesce(${column}, pg_catalog.acldefault('${kind}', ${owner}))) a
            order by 1)`;
  const { rows } = await client.query<{ key: string; state: unknown }>(
    `select 'function ' || f.oid::regprocedure::text as key,
            json_build_object('definition', pg_catalog.pg_get_functiondef(f.oid),
                              'owner', pg_catalog.pg_get_userbyid(f.proowner),
                              'acl', ${acl('f.proacl', 'f', 'f.proowner')},
                              'comment', pg_catalog.obj_description(f.oid, 'pg_proc')) as state
       from (${FUNCTIONS}) f
     union all
     select 'view ' || v.name,
            json_build_object('definition', pg_catalog.pg_get_viewdef(v.oid),
                              'options', (select reloptions from pg_catalog.pg_class where oid = v.oid),
                              'owner', pg_catalog.pg_get_userbyid(v.relowner),
                              'acl', ${acl('v.relacl', 'r', 'v.relowner')},
                              'comment', pg_catalog.obj_description(v.oid, 'pg_class'))
       from (${VIEWS}) v
     union all
     select 'trigger ' || t.name,
            json_build_object('definition', pg_catalog.pg_get_triggerdef(t.oid),
                              'enabled', (select tgenabled from pg_catalog.pg_trigger where oid = t.oid),
                              'comment', pg_catalog.obj_description(t.oid, 'pg_trigger'))
       from (${TRIGGERS}) t
     order by 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.state]));
}

/**
 * Takes away what a fixture must give back: every trigger, every comment, and every grant but
 * the owner's own and those the default privileges give (weld_owner's on weld_rules' functions,
 * migrations/bootstrap.sql).
 */
const STRIP = `
  do $$
  declare
    o record;
    grantee oid;
  begin
    for o in ${TRIGGERS} loop
      execute format('drop trigger %I on %s', o.tgname, o.tgrelid::regclass);
    end loop;
    for o in select 'function' as kind, f.oid::regprocedure::text as name, f.proowner as owner,
                    f.proacl as acl
               from (${FUNCTIONS}) f
             union all
             select 'view', v.oid::regclass::text, v.relowner, v.relacl from (${VIEWS}) v loop
      execute format('comment on %s %s is null', o.kind, o.name);
      for grantee in select a.grantee from aclexplode(o.acl) a
                      where a.grantee <> o.owner
                        and not (pg_get_userbyid(o.owner) = 'weld_rules'
                                 and pg_get_userbyid(a.grantee) = 'weld_owner') loop
        execute format('revoke all on %s %s from %s',
                       case o.kind when 'view' then 'table' else o.kind end, o.name,
                       case grantee when 0 then 'public' else quote_ident(pg_get_userbyid(grantee)) end);
      end loop;
    end loop;
  end
  $$`;

/**
 * The catalog after the fixtures ran over a stripped copy of it, in one transaction rolled back
 * afterwards; and before. The fixtures run as the owner, as migrations do.
 */
async function beforeAndAfter(rootUrl: string, fixtures: Fixture[]) {
  const client = await connectClient(rootUrl);
  try {
    await client.query('begin');
    const before = await catalogState(client);
    await client.query(STRIP);
    await client.query('set session authorization weld_owner');
    for (const round of [1, 2]) {
      for (const { file, text } of fixtures) {
        await client.query(text).catch((error: Error) => {
          throw new Error(`${file} (round ${round}): ${error.message}`);
        });
      }
    }
    await client.query('reset session authorization');
    const after = await catalogState(client);
    return { before, after };
  } finally {
    await client.query('rollback').catch(() => {});
    await client.end();
  }
}

function differences(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys]
    .flatMap((key) => {
      if (!(key in after)) return [`${key}: gone`];
      if (!(key in before)) return [`${key}: new`];
      const [b, a] = [
        before[key] as Record<string, unknown>,
        after[key] as Record<string, unknown>,
      ];
      return Object.keys(b)
        .filter((field) => JSON.stringify(b[field]) !== JSON.stringify(a[field]))
        .map((field) => `${key}: ${field}`);
    })
    .sort();
}

test('executing every fixture gives back the catalog: definitions, triggers, grants and comments', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const { before, after } = await beforeAndAfter(rootUrl, readFixtures());
  t.true(Object.keys(before).length >= 250, 'the catalog holds the objects');
  // What differs, side by side (ava reports a test's first failed assertion), then by name.
  const changed = differences(before, after);
  const pick = (state: Record<string, unknown>) =>
    Object.fromEntries(changed.map((c) => c.split(': ')[0]!).map((key) => [key, state[key]]));
  t.deepEqual(pick(after), pick(before));
  t.deepEqual(changed, []);
});

test('the same comparison names a fixture that differs from the catalog', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const edit = (file: string, change: (text: string) => string) => (f: Fixture) =>
    f.file === file ? { ...f, text: change(f.text) } : f;
  const fixtures = readFixtures()
    // a body changed by one space, a trigger left out, a grant and a comment forgotten
    .map(edit('functions/weld_hidden.touch.sql', (s) => s.replace('return new;', 'return  new;')))
    .map(
      edit('functions/weld_hidden.touch.sql', (s) =>
        s.replace(/^create or replace trigger users_touch[^;]*;$/m, ''),
      ),
    )
    .map(edit('functions/weld_hidden.logout.sql', (s) => s.replace(/^grant execute[^;]*;$/m, '')))
    .map(
      edit('views/weld_private.weld_examinations.sql', (s) =>
        s.replace(/^comment on view[^;]*;$/m, ''),
      ),
    );
  const { before, after } = await beforeAndAfter(rootUrl, fixtures);
  t.deepEqual(differences(before, after), [
    'function weld_hidden.logout(bytea): acl',
    'function weld_hidden.touch(): definition',
    'trigger weld_public.users users_touch: gone',
    'view weld_private.weld_examinations: comment',
  ]);
});
