// SQL level: migrations, the roles' catalog facts, the request-context helper, and the tenant
// tables' row security.
import test from 'ava';
import { connectClient, connectDatabase, createPool, withContext } from '../../db/database.ts';
import type { RequestRole } from '../../db/vocabulary.ts';
import { migrate, openMigratedDatabase, pendingMigrations } from '../../db/migrate.ts';
import { addTenant } from '../../db/tenants.ts';
import { freshDatabaseUrl, migratedDatabase, superuserQuery } from '../helpers/database.ts';

test('a fresh database is bootstrapped and migrated; migrating again changes nothing', async (t) => {
  const rootUrl = freshDatabaseUrl(t);
  const target = await openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: true });
  t.deepEqual(await pendingMigrations(target), []);

  const snapshot = () =>
    superuserQuery(
      rootUrl,
      `select (select count(*) from graphile_migrate.migrations)::int as migrations,
              (select count(*) from pg_class c join pg_namespace n on n.oid = c.relnamespace
                where n.nspname like 'weld\\_%')::int as relations,
              (select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                where n.nspname like 'weld\\_%')::int as functions`,
    );
  const before = await snapshot();
  t.true(before[0]!.migrations >= 1);
  t.true(before[0]!.relations > 0);

  await migrate(target);
  await openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: true });
  t.deepEqual(await snapshot(), before);
});

test('told not to migrate, a database that is behind is refused with a clear message', async (t) => {
  const rootUrl = freshDatabaseUrl(t);
  const error = await t.throwsAsync(
    openMigratedDatabase({ kind: 'root', rootUrl }, { migrate: false }),
  );
  t.regex(error.message, /migration\(s\) behind .*MIGRATE_ON_START/);
});

test('catalog: the authenticator cannot bypass row security, is no superuser and owns nothing', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const [role] = await superuserQuery(
    rootUrl,
    `select rolsuper, rolbypassrls, rolinherit, rolcanlogin, rolcreaterole, rolcreatedb
       from pg_roles where rolname = 'weld_authenticator'`,
  );
  t.deepEqual(role, {
    rolsuper: false,
    rolbypassrls: false,
    rolinherit: false,
    rolcanlogin: true,
    rolcreaterole: false,
    rolcreatedb: false,
  });

  const owned = await superuserQuery(
    rootUrl,
    `select 'relation' as kind, c.relname as name from pg_class c
       where c.relowner = 'weld_authenticator'::regrole
     union all select 'function', p.proname from pg_proc p
       where p.proowner = 'weld_authenticator'::regrole
     union all select 'schema', n.nspname from pg_namespace n
       where n.nspowner = 'weld_authenticator'::regrole
     union all select 'type', y.typname from pg_type y
       where y.typowner = 'weld_authenticator'::regrole
     union all select 'database', d.datname from pg_database d
       where d.datdba = 'weld_authenticator'::regrole`,
  );
  t.deepEqual(owned, []);

  const requestRoles = await superuserQuery<{
    rolname: string;
    rolcanlogin: boolean;
    rolbypassrls: boolean;
  }>(
    rootUrl,
    `select rolname, rolcanlogin, rolbypassrls from pg_roles
      where rolname in ('weld_anonymous', 'weld_viewer', 'weld_inspector', 'weld_engineer', 'weld_admin')
      order by rolname`,
  );
  t.is(requestRoles.length, 5);
  t.true(requestRoles.every((r) => !r.rolcanlogin && !r.rolbypassrls));

  const [owner] = await superuserQuery(
    rootUrl,
    `select rolsuper from pg_roles where rolname = 'weld_owner'`,
  );
  t.false(owner!.rolsuper);
});

test('each request role is a member of the one before it, and the authenticator may become each', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const rows = await superuserQuery<{ ok: boolean }>(
    rootUrl,
    `select pg_has_role('weld_viewer', 'weld_anonymous', 'member')
        and pg_has_role('weld_inspector', 'weld_viewer', 'member')
        and pg_has_role('weld_engineer', 'weld_inspector', 'member')
        and pg_has_role('weld_admin', 'weld_engineer', 'member')
        and pg_has_role('weld_authenticator', 'weld_admin', 'member')
        and not pg_has_role('weld_authenticator', 'weld_owner', 'member') as ok`,
  );
  t.true(rows[0]!.ok);
});

test('withContext runs as the role with the claims set, and leaves the connection clean', async (t) => {
  const { target } = await migratedDatabase(t);
  const pool = createPool(target.authenticatorUrl, { max: 1, onError: () => {} });
  t.teardown(() => pool.end());
  const tenantId = '6a1f1c1e-1111-4222-8333-944455556666';
  const inside = await withContext(pool, { role: 'weld_inspector', tenantId, userId: null }, (c) =>
    c
      .query<{ role: string; tenant: string | null; user: string | null }>(
        `select current_user as role, weld_hidden.current_tenant_id() as tenant,
                weld_hidden.current_user_id() as user`,
      )
      .then((r) => r.rows[0]),
  );
  t.deepEqual(inside, { role: 'weld_inspector', tenant: tenantId, user: null });

  // The same pooled connection afterwards: back to the authenticator, no tenant.
  const after = await pool.query(
    `select current_user as role, coalesce(current_setting('jwt.claims.tenant_id', true), '') as tenant`,
  );
  t.deepEqual(after.rows[0], { role: 'weld_authenticator', tenant: '' });
});

test('withContext rolls back everything when the work fails', async (t) => {
  const { target } = await migratedDatabase(t);
  const pool = createPool(target.authenticatorUrl, { max: 1, onError: () => {} });
  t.teardown(() => pool.end());
  await t.throwsAsync(
    withContext(pool, { role: 'weld_viewer', tenantId: null }, async (c) => {
      // A session-level setting, which would outlive a committed transaction.
      await c.query(`select set_config('weld.marker', 'set', false)`);
      await c.query(`select 1/0`);
    }),
    { message: /division by zero/ },
  );
  const { rows } = await pool.query(
    `select coalesce(current_setting('weld.marker', true), '') as marker, current_user`,
  );
  t.deepEqual(rows[0], { marker: '', current_user: 'weld_authenticator' });
});

test('withContext refuses a role that is not a request role', async (t) => {
  const { target } = await migratedDatabase(t);
  const pool = createPool(target.authenticatorUrl, { max: 1, onError: () => {} });
  t.teardown(() => pool.end());
  await t.throwsAsync(
    withContext(pool, { role: 'weld_owner' as RequestRole, tenantId: null }, async () => {}),
    { message: /Not a request role/ },
  );
  // And the database refuses the owner role to the authenticator even if asked directly.
  await t.throwsAsync(pool.query(`set role weld_owner`), { message: /permission denied/ });
});

test('an idle pooled connection that is ended reaches onError without its client (nothing to dump in a log)', async (t) => {
  const { rootUrl, target } = await migratedDatabase(t);
  const errors: Error[] = [];
  const pool = createPool(target.authenticatorUrl, { max: 1, onError: (e) => errors.push(e) });
  t.teardown(() => pool.end());
  const { pid } = (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!;
  await superuserQuery(rootUrl, 'select pg_terminate_backend($1)', [pid]);
  for (let i = 0; i < 100 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(errors.length, 1);
  t.is((errors[0] as Error & { code?: string }).code, '57P01');
  t.false('client' in errors[0]!);
  t.notRegex(JSON.stringify(errors[0]), /secretKey|connectionParameters/);
});

test('tenants: each context sees only its own tenant; no context sees none', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await connectClient(target.ownerUrl);
  const a = await addTenant(owner, { slug: 'alpha', origins: ['http://alpha.test'] });
  const b = await addTenant(owner, { slug: 'bravo', origins: ['http://bravo.test'] });
  await owner.end();

  const pool = createPool(target.authenticatorUrl, { max: 2, onError: () => {} });
  t.teardown(() => pool.end());
  const visible = (tenantId: string | null) =>
    withContext(pool, { role: 'weld_admin', tenantId }, (c) =>
      c.query<{ slug: string }>(`select slug from weld_public.tenants order by slug`),
    ).then((r) => r.rows.map((row) => row.slug));

  t.deepEqual(await visible(a.id), ['alpha']);
  t.deepEqual(await visible(b.id), ['bravo']);
  t.deepEqual(await visible(null), []);

  // Request roles cannot touch the private origin table at all, nor change tenants.
  await t.throwsAsync(
    withContext(pool, { role: 'weld_admin', tenantId: a.id }, (c) =>
      c.query(`select * from weld_private.tenant_origins`),
    ),
    { message: /permission denied/ },
  );
  await t.throwsAsync(
    withContext(pool, { role: 'weld_admin', tenantId: a.id }, (c) =>
      c.query(`update weld_public.tenants set name = 'x'`),
    ),
    { message: /permission denied/ },
  );

  // The authenticator finds a tenant by exact origin, and nothing for a near miss.
  const found = await pool.query(`select slug from weld_hidden.tenant_by_origin($1)`, [
    'http://alpha.test',
  ]);
  t.deepEqual(found.rows, [{ slug: 'alpha' }]);
  const nearMiss = await pool.query(`select slug from weld_hidden.tenant_by_origin($1)`, [
    'http://alpha.test:80',
  ]);
  t.deepEqual(nearMiss.rows, []);
});

test('split credentials: given the two role URLs, no superuser URL is needed', async (t) => {
  const { target } = await migratedDatabase(t);
  const split = await openMigratedDatabase(
    { kind: 'split', ownerUrl: target.ownerUrl, authenticatorUrl: target.authenticatorUrl },
    { migrate: true },
  );
  t.is(split.rootUrl, undefined);
  t.deepEqual(await pendingMigrations(split), []);
  t.false(split.description.includes(new URL(target.authenticatorUrl).password));
});

test('a root URL without a password is refused with a clear message', async (t) => {
  const url = new URL(freshDatabaseUrl(t));
  url.password = '';
  await t.throwsAsync(connectDatabase({ kind: 'root', rootUrl: url.href }), {
    message: /DATABASE_URL has no password/,
  });
});
