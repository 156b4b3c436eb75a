// weld-admin tenant add / list against a real database: what it writes, and what it refuses
// without writing anything. (test/http/process.test.ts runs it beside a running server.)
import test from 'ava';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { runCli } from '../helpers/server.ts';

test('tenant add, then tenant list shows it; duplicates and bad input exit 1 and write nothing', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  const counts = async () =>
    (
      await superuserQuery<{ tenants: number; origins: number }>(
        rootUrl,
        `select (select count(*) from weld_public.tenants)::int as tenants,
                (select count(*) from weld_private.tenant_origins)::int as origins`,
      )
    )[0]!;

  const added = await runCli(
    [
      'tenant',
      'add',
      'acme',
      '--origin',
      'https://acme.example',
      '--origin',
      'HTTP://Acme.Localhost:8080/',
      '--name',
      'Acme Refinery',
    ],
    env,
  );
  t.is(added.code, 0, added.output);
  t.regex(added.stdout, /^added tenant acme \([0-9a-f-]{36}\)$/m);

  const listed = await runCli(['tenant', 'list'], env);
  t.is(listed.code, 0);
  // Origins are stored in canonical form: lower case, no trailing slash.
  t.regex(
    listed.stdout,
    /^acme\s+Acme Refinery\s+http:\/\/acme\.localhost:8080 https:\/\/acme\.example\s+[0-9a-f-]{36}$/m,
  );
  t.deepEqual(await counts(), { tenants: 1, origins: 2 });

  const refusals: Array<[string[], RegExp]> = [
    [['acme', '--origin', 'http://new.example'], /a tenant with slug 'acme' already exists/],
    [
      ['other', '--origin', 'http://fresh.example', '--origin', 'https://acme.example'],
      /https:\/\/acme\.example is already the origin of a tenant/,
    ],
    [['Not_A_Slug', '--origin', 'http://b.example'], /is not a valid slug/],
    [['other', '--origin', 'http://c.example', '--name', ''], /name must be 1 to 200 characters/],
  ];
  for (const [args, message] of refusals) {
    const result = await runCli(['tenant', 'add', ...args], env);
    t.is(result.code, 1, args.join(' '));
    t.regex(result.stderr, message);
    t.is(result.stderr.trim().split('\n').length, 1, 'one line');
  }
  // The second refusal had a fresh origin before the taken one: it was not half-written.
  t.deepEqual(await counts(), { tenants: 1, origins: 2 });
});

test('usage errors exit 2 with the usage text, before any database is reached', async (t) => {
  // A database URL nothing listens on: a usage error must not need it.
  const env = { DATABASE_URL: 'postgres://u:p@127.0.0.1:1/none' };
  for (const args of [[], ['tenant'], ['tenant', 'rename', 'x'], ['frobnicate']]) {
    const result = await runCli(args, env);
    t.is(result.code, 2, args.join(' '));
    t.regex(
      result.stderr,
      /^(weld-admin: unknown command '.*'\n)?usage:\n {2}weld-admin tenant add/,
      args.join(' '),
    );
    if (args.length > 0) t.regex(result.stderr, /unknown command/, args.join(' '));
  }
  for (const flag of ['--help', '-h', 'help']) {
    const help = await runCli([flag], env);
    t.is(help.code, 0, flag);
    t.regex(help.stdout, /^usage:\n {2}weld-admin tenant add/);
  }
  for (const [args, message] of [
    [['tenant', 'add'], /expected <slug>/],
    [['tenant', 'add', 'a', '--bogus'], /Unknown option '--bogus'/],
    [['tenant', 'add', 'a'], /needs at least one --origin/],
    [['tenant', 'add', 'a', '--origin', 'ftp://a.example'], /is not an origin/],
    [['tenant', 'origin', 'add', 'a'], /expected <slug> <origin>/],
    [['seed', 'demo', '--isos', 'many'], /--isos must be a whole number from 1 to 100000/],
    [['seed', 'demo', '--welds-per-iso', '0'], /--welds-per-iso must be a whole number/],
    [['user', 'add', 'demo', 'x', '--role', 'wizard', '--password-stdin'], /--role must be one of/],
    [['user', 'list'], /expected <tenant-slug>/],
    [['db', 'url', 'extra'], /expected $/m],
  ] as const) {
    const result = await runCli([...args], env);
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr, message, args.join(' '));
    t.regex(result.stderr, new RegExp(`\\nusage: weld-admin ${args[0]} `), args.join(' '));
  }
});

test('tenant origin add and remove; the last origin stays; refusals exit 1', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  const origins = async () =>
    (
      await superuserQuery<{ origin: string }>(
        rootUrl,
        'select origin from weld_private.tenant_origins order by origin',
      )
    ).map((r) => r.origin);
  t.is((await runCli(['tenant', 'add', 'acme', '--origin', 'http://a.example'], env)).code, 0);
  t.is((await runCli(['tenant', 'add', 'other', '--origin', 'http://o.example'], env)).code, 0);
  const added = await runCli(['tenant', 'origin', 'add', 'acme', 'HTTPS://B.example/'], env);
  t.is(added.code, 0, added.output);
  t.is(added.stdout.trim(), 'acme is now served from https://b.example as well');
  t.deepEqual(await origins(), ['http://a.example', 'http://o.example', 'https://b.example']);

  for (const [args, message] of [
    [['add', 'acme', 'http://o.example'], /http:\/\/o\.example is already the origin of a tenant/],
    [['add', 'nobody', 'http://n.example'], /no tenant 'nobody'/],
    [['remove', 'acme', 'http://o.example'], /http:\/\/o\.example is not an origin of 'acme'/],
    [['remove', 'other', 'http://o.example'], /the last origin of 'other'; add another first/],
  ] as const) {
    const result = await runCli(['tenant', 'origin', ...args], env);
    t.is(result.code, 1, args.join(' '));
    t.regex(result.stderr, message);
  }
  const removed = await runCli(['tenant', 'origin', 'remove', 'acme', 'http://a.example'], env);
  t.is(removed.code, 0, removed.output);
  t.deepEqual(await origins(), ['http://o.example', 'https://b.example']);
});

test('db url prints a connection URL of the owner role that works', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const result = await runCli(['db', 'url'], { DATABASE_URL: rootUrl });
  t.is(result.code, 0, result.output);
  const url = result.stdout.trim();
  t.regex(url, /^postgres(ql)?:\/\/weld_owner:[^@]+@/);
  const rows = await superuserQuery<{ who: string }>(url, 'select current_user as who');
  t.deepEqual(rows, [{ who: 'weld_owner' }]);
});

test('sql runs statements as the owner: rows as JSON lines, a command tag otherwise; several are all or none', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  t.is((await runCli(['tenant', 'add', 'acme', '--origin', 'https://acme.example'], env)).code, 0);
  const setting = () =>
    runCli(
      [
        'sql',
        `select s.weld_checks, current_user as who from weld_public.tenant_settings s
           join weld_public.tenants t on t.id = s.tenant_id where t.slug = 'acme'`,
      ],
      env,
    );
  t.is((await setting()).stdout, '{"weld_checks":"show","who":"weld_owner"}\n');

  const refuse = await runCli(
    [
      'sql',
      `update weld_public.tenant_settings s set weld_checks = 'refuse'
         from weld_public.tenants t where t.id = s.tenant_id and t.slug = 'acme'`,
    ],
    env,
  );
  t.is(refuse.code, 0, refuse.output);
  t.is(refuse.stdout, 'UPDATE 1\n');
  t.is((await setting()).stdout, '{"weld_checks":"refuse","who":"weld_owner"}\n');

  const half = await runCli(
    [
      'sql',
      `update weld_public.tenant_settings set weld_checks = 'show';
       update weld_public.tenant_settings set continuity_months = 0`,
    ],
    env,
  );
  t.is(half.code, 1);
  t.regex(half.stderr, /^weld-admin: failed: .*check constraint/m);
  t.is((await setting()).stdout, '{"weld_checks":"refuse","who":"weld_owner"}\n', 'all or none');
});
