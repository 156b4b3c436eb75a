// weld-admin user ... and keys rotate: what they write, what they refuse, and that a password
// never comes from the command line.
import test from 'ava';
import { verifyPassword } from '../../db/passwords.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { runCli } from '../helpers/server.ts';

async function setup(t: import('ava').ExecutionContext) {
  const { rootUrl, target } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  t.is((await runCli(['tenant', 'add', 'acme', '--origin', 'http://acme.test'], env)).code, 0);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  return { env, owner };
}

test('user add (password on stdin), list, set-password and disable', async (t) => {
  const { env, owner } = await setup(t);
  const added = await runCli(
    [
      'user',
      'add',
      'acme',
      'j.doe',
      '--role',
      'inspector',
      '--name',
      'Jane Doe',
      '--password-stdin',
    ],
    env,
    'a long enough password\n',
  );
  t.is(added.code, 0, added.output);
  t.is(added.stdout.trim(), 'added user j.doe (inspector) to acme');
  const hash = async () =>
    (
      await owner.query<{ password_hash: string }>(
        `select c.password_hash from weld_private.user_credentials c join weld_public.users u on u.id = c.user_id where u.user_name = 'j.doe'`,
      )
    ).rows[0]!.password_hash;
  t.true(
    await verifyPassword('a long enough password', await hash()),
    'trailing newline of stdin dropped',
  );

  const listed = await runCli(['user', 'list', 'acme'], env);
  t.regex(listed.stdout, /^j\.doe\s+Jane Doe\s+inspector\s+yes\s+[0-9a-f-]{36}$/m);
  t.false(listed.stdout.includes('argon2'), 'no hashes in listings');

  // User names compare case-insensitively, as at login.
  const changed = await runCli(
    ['user', 'set-password', 'acme', 'J.Doe', '--password-stdin'],
    env,
    'another good password',
  );
  t.is(changed.code, 0, changed.output);
  t.true(await verifyPassword('another good password', await hash()));

  const disabled = await runCli(['user', 'disable', 'acme', 'J.DOE'], env);
  t.is(disabled.code, 0);
  t.regex(
    (await runCli(['user', 'list', 'acme'], env)).stdout,
    /^j\.doe\s+Jane Doe\s+inspector\s+no/m,
  );
});

test('user commands refuse bad input with exit 1, bad usage with exit 2, and write nothing', async (t) => {
  const { env, owner } = await setup(t);
  const count = async () =>
    (await owner.query('select count(*)::int as n from weld_public.users')).rows[0].n as number;
  await runCli(
    ['user', 'add', 'acme', 'taken', '--role', 'viewer', '--password-stdin'],
    env,
    'a long enough password',
  );
  const before = await count();
  const refusals: Array<[string[], string | undefined, number, RegExp]> = [
    [
      ['user', 'add', 'acme', 'taken', '--role', 'viewer', '--password-stdin'],
      'a long enough password',
      1,
      /already exists/,
    ],
    [
      ['user', 'add', 'acme', 'new', '--role', 'viewer', '--password-stdin'],
      'short',
      1,
      /at least 12 characters/,
    ],
    [
      ['user', 'add', 'acme', 'new', '--role', 'boss', '--password-stdin'],
      'a long enough password',
      2,
      /--role must be one of/,
    ],
    [
      ['user', 'add', 'nowhere', 'new', '--role', 'viewer', '--password-stdin'],
      'a long enough password',
      1,
      /no tenant 'nowhere'/,
    ],
    [
      ['user', 'add', 'acme', 'bad name', '--role', 'viewer', '--password-stdin'],
      'a long enough password',
      1,
      /not a valid user name/,
    ],
    [['user', 'add', 'acme', 'new', '--role', 'viewer'], undefined, 2, /--password-stdin/],
    [['user', 'add', 'acme', 'new', '--role', 'viewer', '--password', 'x'], undefined, 2, /usage/],
    [['user', 'disable', 'acme', 'ghost'], undefined, 1, /no user 'ghost'/],
    [
      ['user', 'set-password', 'acme', 'ghost', '--password-stdin'],
      'a long enough password',
      1,
      /no user 'ghost'/,
    ],
  ];
  for (const [args, stdin, code, message] of refusals) {
    const result = await runCli(args, env, stdin);
    t.is(result.code, code, args.join(' '));
    t.regex(result.stderr, message, args.join(' '));
  }
  t.is(await count(), before);
});

test('keys rotate: the tenant gets a new active key and keeps the old one, retired', async (t) => {
  const { env, owner } = await setup(t);
  const first = await runCli(['keys', 'rotate', 'acme'], env);
  t.is(first.code, 0, first.output);
  const second = await runCli(['keys', 'rotate', 'acme'], env);
  t.regex(second.stdout, /^acme now signs with key \S+;/);
  const keys = await owner.query<{ active: boolean }>(
    'select retired_at is null as active from weld_private.signing_keys order by created_at',
  );
  t.deepEqual(
    keys.rows.map((k) => k.active),
    [false, true],
  );
  t.is((await runCli(['keys', 'rotate', 'nowhere'], env)).code, 1);
});
