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
    [['other', '--origin', 'http://a.example/path'], /is not an origin/],
    [['other', '--origin', 'ftp://a.example'], /is not an origin/],
    [['other'], /needs at least one --origin/],
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

test('usage errors exit 2 with the usage text', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  for (const args of [
    [],
    ['tenant'],
    ['tenant', 'remove', 'x'],
    ['tenant', 'add'],
    ['tenant', 'add', 'a', '--bogus'],
  ]) {
    const result = await runCli(args, { DATABASE_URL: rootUrl });
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr, /usage:\n {2}weld-admin tenant add/);
  }
});
