// weld-admin client ...: OAuth2 clients from a terminal (F18), for an operator without an admin
// session: the secret printed once, listed never, rotated with an overlap, removed; refusals.
import test from 'ava';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { runCli } from '../helpers/server.ts';

test('client add prints the id and secret once; list, rotate and remove; refusals exit 1 or 2', async (t) => {
  const { rootUrl, target } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  const cli = async (args: string[], code = 0) => {
    const run = await runCli(args, env);
    t.is(run.code, code, `${args.join(' ')}: ${run.output}`);
    return run;
  };
  await cli(['tenant', 'add', 'acme', '--origin', 'http://acme.test']);
  await cli(['tenant', 'add', 'other', '--origin', 'http://other.test']);
  const added = await cli([
    'client', 'add', 'acme', 'Vendor RT', '--scope', 'welds:read', '--scope', 'ndt:write',
  ]); // prettier-ignore
  t.regex(added.stdout, /^added OAuth2 client Vendor RT to acme \(role inspector\)$/m);
  const clientId = /^client_id {5}(wdc_\S{22})$/m.exec(added.stdout)?.[1];
  const secret = /^client_secret (wds_\S{43})$/m.exec(added.stdout)?.[1];
  t.truthy(clientId && secret, added.stdout);
  t.regex(added.stderr, /shown this once/);

  const listed = await cli(['client', 'list', 'acme']);
  t.regex(
    listed.stdout,
    new RegExp(`^${clientId}\\s+Vendor RT\\s+welds:read ndt:write\\s+inspector\\s+never$`, 'm'),
  );
  t.false(listed.stdout.includes(secret!), 'never listed');
  t.notRegex((await cli(['client', 'list', 'other'])).stdout, /wdc_/, 'nor in another tenant');

  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const hashes = async () =>
    (
      await owner.query<{ h: Buffer; p: Buffer | null }>(
        'select secret_hash as h, previous_secret_hash as p from weld_private.oauth_clients',
      )
    ).rows[0]!;
  const before = await hashes();
  const rotated = await cli(['client', 'rotate', 'acme', clientId!, '--overlap-hours', '2']);
  t.regex(rotated.stdout, /^client_secret wds_\S{43}$/m);
  const after = await hashes();
  t.deepEqual(after.p, before.h, 'the old secret is kept for the overlap');
  t.notDeepEqual(after.h, before.h);

  await cli(['client', 'rotate', 'other', clientId!], 1); // another tenant's: no such client
  await cli(['client', 'rotate', 'acme', clientId!, '--overlap-hours', '999'], 2);
  await cli(['client', 'add', 'acme', 'x'], 2); // no scope
  await cli(['client', 'add', 'acme', 'x', '--scope', 'root'], 2);

  t.regex((await cli(['client', 'remove', 'acme', clientId!])).stdout, /its tokens have ended/);
  await cli(['client', 'remove', 'acme', clientId!], 1);
  const user = await owner.query('select active from weld_public.users where user_name = $1', [
    clientId,
  ]);
  t.deepEqual(user.rows, [{ active: false }], 'its user stays for the audit trail, inactive');
});
