// The read-only SQL door for BI tools (F17 part 4), tried from the attacker's side: a reporting
// login reads its tenant's reports and tables and nothing else, whatever it SETs; it cannot
// write, become another role, or run longer than its limit; `url` replaces its password and
// `remove` ends it.
import test from 'ava';
import pg from 'pg';
import { connectClient, createPool, withContext } from '../../db/database.ts';
import {
  addReportingLogin,
  removeReportingLogin,
  reportingUrl,
  scramVerifier,
} from '../../db/reporting.ts';
import { startHousekeeping } from '../../server/housekeeping.ts';
import { twoTenants } from '../helpers/fixtures.ts';

async function world(t: Parameters<typeof twoTenants>[0]) {
  const w = await twoTenants(t);
  const root = await connectClient(w.rootUrl);
  t.teardown(() => root.end());
  const slugOf = async (id: string) =>
    (
      await w.owner.query<{ slug: string }>('select slug from weld_public.tenants where id = $1', [
        id,
      ])
    ).rows[0]!.slug;
  const alpha = await slugOf(w.a.tenantId);
  const url = await addReportingLogin(root, w.target.ownerUrl, {
    tenant: alpha,
    name: 'metabase',
    timeoutSeconds: 2,
  });
  // Roles are the cluster's: whatever the test did, the login goes with it.
  t.teardown(async () => {
    const role = new URL(url).username;
    const c = await connectClient(w.rootUrl);
    await c.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [
      role,
    ]);
    // (Its CONNECT right on the database is what depends on it, if the test did not remove it.)
    const exists = await c.query('select from pg_roles where rolname = $1', [role]);
    if (exists.rowCount) await c.query(`drop owned by ${pg.escapeIdentifier(role)}`);
    await c.query(`drop role if exists ${pg.escapeIdentifier(role)}`);
    await c.end();
  });
  const login = async (connection = url) => {
    const c = new pg.Client({ connectionString: connection });
    c.on('error', () => {}); // a session ended by the service
    await c.connect();
    t.teardown(() => c.end().catch(() => {}));
    return c;
  };
  return { ...w, root, alpha, url, login };
}

const code = async (work: Promise<unknown>) => {
  try {
    await work;
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
};

test('a reporting login reads its own tenant, the same numbers as the service, whatever it SETs', async (t) => {
  const { a, b, pool, login } = await world(t);
  await a.weld('ACCEPTED');
  await a.weld('PENDING');
  await b.weld('PENDING');
  const bi = await login();

  const welds = async () =>
    (await bi.query<{ tenant_id: string }>('select tenant_id from weld_public.welds')).rows;
  t.deepEqual(
    (await welds()).map((w) => w.tenant_id),
    [a.tenantId, a.tenantId],
  );
  // The claims the service sets per request change nothing for a login ...
  await bi.query(`select set_config('jwt.claims.tenant_id', $1, false)`, [b.tenantId]);
  t.deepEqual(
    (await welds()).map((w) => w.tenant_id),
    [a.tenantId, a.tenantId],
  );
  await bi.query(`set jwt.claims.tenant_id = ''`);
  t.is((await welds()).length, 2);

  // ... and its reports are the service's: the same rows a viewer of alpha reads.
  const report = 'select * from weld_reports.weld_progress order by iso_id, week';
  const asViewer = await withContext(
    pool,
    { role: 'weld_viewer', tenantId: a.tenantId, userId: a.users.viewer },
    async (c) => (await c.query(report)).rows,
  );
  t.true(asViewer.length > 0);
  t.deepEqual((await bi.query(report)).rows, asViewer);
  t.deepEqual(
    (await bi.query('select * from welder_performance')).rows.map((r) => r.welder_id),
    [a.welderId],
    'the search path starts with weld_reports',
  );
});

test('a reporting login writes nothing, becomes no other role, reads no private table or function', async (t) => {
  const { a, login } = await world(t);
  const weld = await a.weld('PENDING');
  const bi = await login();

  // Read-only by default; a session that turns that off still has no right to write.
  t.is(
    await code(bi.query(`update weld_public.welds set material = 'X' where id = $1`, [weld])),
    '25006',
  );
  await bi.query('set default_transaction_read_only = off');
  t.is(
    await code(bi.query(`update weld_public.welds set material = 'X' where id = $1`, [weld])),
    '42501',
  );
  t.is(
    await code(
      bi.query(`insert into weld_public.isos (tenant_id, iso_number) values ($1, 'EVIL')`, [
        a.tenantId,
      ]),
    ),
    '42501',
  );
  t.is(await code(bi.query(`delete from weld_public.welds`)), '42501');
  t.is(
    await code(bi.query(`select weld_public.change_weld_status($1, 'ACCEPTED')`, [weld])),
    '42501',
  );

  // No other role, no other identity.
  for (const role of [
    'weld_viewer',
    'weld_admin',
    'weld_owner',
    'weld_rules',
    'weld_authenticator',
    'postgres',
  ]) {
    t.is(await code(bi.query(`set role ${role}`)), '42501', role);
  }
  t.is(await code(bi.query('set session authorization weld_owner')), '42501');

  // Not the service's secrets or bookkeeping, nor the rollups under the reports.
  for (const table of [
    'weld_public.users',
    'weld_public.tenants',
    'weld_public.events',
    'weld_private.reporting_logins',
    'weld_private.weld_report_facts',
  ]) {
    t.is(await code(bi.query(`select * from ${table} limit 1`)), '42501', table);
  }
  t.is(await code(bi.query(`select pg_read_file('/etc/passwd')`)), '42501');
  // Nor a large object (no table's grant needed to write one, and its owner could not be dropped).
  t.is(await code(bi.query(`select lo_from_bytea(0, 'x')`)), '42501');
  t.is(await code(bi.query(`select lo_create(0)`)), '42501');
  // Its temporary files are bounded, and only a superuser could lift the bound.
  t.is((await bi.query('show temp_file_limit')).rows[0].temp_file_limit, '1GB');
  t.is(await code(bi.query(`set temp_file_limit = -1`)), '42501');
  t.is(await code(bi.query(`select weld_hidden.purge_events(0)`)), '42501');
  t.is(await code(bi.query(`select * from weld_hidden.reap_reporting_sessions()`)), '42501');
  t.is(await code(bi.query(`create table weld_public.mine (x int)`)), '42501');
  t.is(await code(bi.query(`create temporary table mine (x int)`)), '42501', 'nor a temporary one');
});

test('a statement over the limit is cancelled by the service even after SET statement_timeout = 0', async (t) => {
  t.timeout(60_000);
  const { target, login, url } = await world(t);
  const bi = await login();
  await bi.query('set statement_timeout = 0');
  const server = createPool(target.authenticatorUrl, { max: 1 });
  t.teardown(() => server.end());
  const housekeeping = startHousekeeping(server, { debug() {}, info() {}, warn() {} } as never, {
    eventRetentionDays: 30,
    reapEveryMs: 250,
  });
  t.teardown(() => housekeeping.stop());
  const started = Date.now();
  t.is(await code(bi.query('select pg_sleep(20)')), '57014');
  const took = Date.now() - started;
  t.true(took >= 1900 && took < 6000, `cancelled after ${took} ms (limit 2 s)`);
  // A statement within the limit runs.
  t.is(await code(bi.query('select pg_sleep(0.5)')), 'ok');
  // Connected to another database of the cluster, where its limits would not hold: ended.
  const elsewhere = new URL(url);
  elsewhere.pathname = '/postgres';
  const away = await login(elsewhere.toString());
  let outcome = 'ok';
  for (let i = 0; i < 30 && outcome === 'ok'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    outcome = await code(away.query('select 1'));
  }
  t.not(outcome, 'ok', 'its session in the postgres database was ended');
});

test('url gives a new password (the old one stops working); remove ends the sessions and the login', async (t) => {
  const { root, target, alpha, url, login } = await world(t);
  const first = await login();
  const fresh = await reportingUrl(root, target.ownerUrl, alpha, 'metabase');
  t.is(new URL(fresh).username, new URL(url).username);
  t.not(new URL(fresh).password, new URL(url).password);
  t.is(await code(login(url)), '28P01');
  t.not(await code(first.query('select 1')), 'ok', 'the sessions of the old password ended');
  const second = await login(fresh);
  t.is((await second.query('select 1 as one')).rows[0].one, 1);

  await removeReportingLogin(root, alpha, 'metabase');
  t.not(await code(second.query('select 1')), 'ok', 'its sessions were ended');
  t.not(await code(login(fresh)), 'ok');
  t.is(
    (await root.query(`select from pg_roles where rolname = $1`, [new URL(url).username])).rowCount,
    0,
  );
});

test('the password reaches PostgreSQL only as a SCRAM verifier, and names are checked', async (t) => {
  const { root, target, alpha, owner, a } = await world(t);
  // A tenant with a reporting login is not deleted from under it (RESTRICT: 23001 from
  // PostgreSQL 16 on, 23503 before).
  const refused = await code(
    owner.query('delete from weld_public.tenants where id = $1', [a.tenantId]),
  );
  t.true(['23001', '23503'].includes(refused), refused);
  const verifier = scramVerifier('secret');
  t.regex(verifier, /^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
  t.false(verifier.includes('secret'));
  // The stored password is the verifier's form, not the text.
  const stored = await root.query<{ rolpassword: string }>(
    `select rolpassword from pg_authid a join weld_private.reporting_logins l on l.role_name = a.rolname`,
  );
  t.regex(stored.rows[0]!.rolpassword, /^SCRAM-SHA-256\$/);
  await t.throwsAsync(
    addReportingLogin(root, target.ownerUrl, {
      tenant: alpha,
      name: 'metabase',
      timeoutSeconds: 30,
    }),
    { message: /already has a reporting login 'metabase'/ },
  );
  await t.throwsAsync(
    addReportingLogin(root, target.ownerUrl, { tenant: 'nobody', name: 'x', timeoutSeconds: 30 }),
    { message: /no tenant 'nobody'/ },
  );
});
