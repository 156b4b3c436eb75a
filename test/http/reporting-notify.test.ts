// A reporting login (weld-admin reporting add) is a PostgreSQL session, and PostgreSQL lets any
// session NOTIFY any channel. The service's listeners drop what such a session sends: a made-up
// session revocation signs no one out (a real one, made by the service, does).
import test from 'ava';
import pg from 'pg';
import { connectClient } from '../../db/database.ts';
import { addReportingLogin } from '../../db/reporting.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

test("a reporting login's NOTIFY of a session revocation is dropped; the service's own is not", async (t) => {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = await addTenant(owner, { slug: 'bi', origins: ['http://bi.test'] });
  await addRoleUsers(owner, 'bi');
  const { port } = await startServer(t, target);
  const me = async (token: string) =>
    (
      await request(port, {
        path: '/auth/me',
        host: 'bi.test',
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;
  const victim = (await login(port, 'bi.test', 'viewer')).json.accessToken as string;
  const other = (await login(port, 'bi.test', 'inspector')).json.accessToken as string;
  const sessionOf = async (role: string) =>
    (
      await owner.query<{ id: string }>(
        `select s.id from weld_private.sessions s join weld_public.users u on u.id = s.user_id
          where s.tenant_id = $1 and u.role = $2`,
        [tenant.id, role],
      )
    ).rows[0]!.id;

  const root = await connectClient(rootUrl);
  t.teardown(() => root.end());
  const url = await addReportingLogin(root, target.ownerUrl, {
    tenant: 'bi',
    name: 'forger',
    timeoutSeconds: 30,
  });
  const role = new URL(url).username;
  t.teardown(async () => {
    const c = await connectClient(rootUrl);
    await c.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [
      role,
    ]);
    await c.query(`drop owned by ${pg.escapeIdentifier(role)}`);
    await c.query(`drop role if exists ${pg.escapeIdentifier(role)}`);
    await c.end();
  });
  const bi = new pg.Client({ connectionString: url });
  bi.on('error', () => {}); // (ended with the test's teardown)
  await bi.connect();
  t.teardown(() => bi.end());

  // The forgery: the victim's own tenant and session, sent as the service would send them.
  const forged = JSON.stringify({ tenantId: tenant.id, sessionId: await sessionOf('viewer') });
  await bi.query(`select pg_notify('weld_session_revoked', $1)`, [forged]);
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.is(await me(victim), 200, 'still signed in');

  // The real thing, for comparison: the service revokes the other session and it ends at once.
  await owner.query(`update weld_private.sessions set revoked_at = now() where id = $1`, [
    await sessionOf('inspector'),
  ]);
  let status = 0;
  for (let i = 0; i < 50 && status !== 401; i++) {
    status = await me(other);
    if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.is(status, 401, 'a revocation the service made is honoured');
  t.is(await me(victim), 200);
});

test('a revocation sent by a session that has already ended (weld-admin) is checked with the database at once, not dropped', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = await addTenant(owner, { slug: 'cli', origins: ['http://cli.test'] });
  await addRoleUsers(owner, 'cli');
  const { port } = await startServer(t, target);
  const isos = async (token: string) =>
    (
      await request(port, {
        path: '/isos',
        host: 'cli.test',
        headers: { authorization: `Bearer ${token}` },
      })
    ).status;
  const token = (await login(port, 'cli.test', 'viewer')).json.accessToken as string;
  const kept = (await login(port, 'cli.test', 'inspector')).json.accessToken as string;
  t.is(await isos(token), 200);

  // The listener reads the database once at a time, however many such notices come at once
  // (pg warns of a query on a busy connection).
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));

  // As weld-admin does: a connection of its own, which ends the moment its work is done. Its
  // process id is gone when the service asks who sent the notification.
  const brief = await connectClient(target.ownerUrl);
  await brief.query(
    `update weld_public.users set active = false where tenant_id = $1 and user_name = 'viewer'`,
    [tenant.id],
  );
  // A forged revocation from a session that ends as quickly changes nothing: the database says no.
  await brief.query('begin'); // (delivered together, at its commit, as the session ends)
  for (let i = 1; i <= 20; i++) {
    await brief.query(`select pg_notify('weld_session_revoked', $1)`, [
      JSON.stringify({
        tenantId: tenant.id,
        sessionId: `00000000-0000-4000-8000-0000000000${10 + i}`,
      }),
    ]);
  }
  await brief.query('commit');
  await brief.end();
  let status = 0;
  const started = Date.now();
  while (Date.now() - started < 5000 && (status = await isos(token)) !== 401) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.is(status, 401, `refused ${Date.now() - started} ms after, well before the minute's reload`);
  t.is(await isos(kept), 200, 'the other session lives');
  t.deepEqual(
    warnings.filter((w) => /already executing a query/.test(w)),
    [],
    'no overlapping queries on the listener',
  );
});
