// Tenant isolation, from the attacker's side: the catalog facts that make it structural, then
// every role against every table with another tenant's rows present.
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { createPool, withContext } from '../../db/database.ts';
import { REQUEST_ROLES, type RequestRole } from '../../db/vocabulary.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { ownerClient, tenantFixture } from '../helpers/fixtures.ts';

const SCHEMAS = `('weld_public', 'weld_hidden', 'weld_private')`;
const ROLES = REQUEST_ROLES;

/** Two tenants with a little data each, and a pool of the server's own role. */
async function twoTenants(t: ExecutionContext) {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const a = await tenantFixture(owner, 'alpha');
  const b = await tenantFixture(owner, 'bravo');
  const pool = createPool(target.authenticatorUrl, { max: 4, onError: () => {} });
  t.teardown(() => pool.end());
  return { rootUrl, owner, a, b, pool };
}

/**
 * What the catalog says is wrong with tenancy: a table in the service schemas without row
 * security enabled and forced, or whose first column, primary key, foreign keys, unique
 * constraints or indexes do not lead with tenant_id. The tenants table is the tenant (its id is
 * the tenant id); tenant_origins_origin_key (an origin routes to one tenant) and
 * reporting_logins_role_name_key (a role is the cluster's) are the deliberate global keys.
 */
async function tenancyProblems(rootUrl: string): Promise<string[]> {
  const rows = await superuserQuery<{ problem: string }>(
    rootUrl,
    `with tables as (
       select c.oid, n.nspname || '.' || c.relname as name, c.relrowsecurity, c.relforcerowsecurity
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ${SCHEMAS} and c.relkind in ('r', 'p')
     ), owned as (
       select * from tables where oid <> 'weld_public.tenants'::regclass
     )
     select name || ': row security not enabled' as problem from tables where not relrowsecurity
     union all
     select name || ': row security not forced' from tables where not relforcerowsecurity
     union all
     select name || ': first column is not tenant_id' from owned
      where (select attname from pg_attribute where attrelid = oid and attnum = 1) <> 'tenant_id'
     union all
     select t.name || ': ' || con.conname || ' does not lead with tenant_id'
       from owned t join pg_constraint con on con.conrelid = t.oid
      where con.contype in ('p', 'u', 'f', 'x')
        and (select attname from pg_attribute where attrelid = t.oid and attnum = con.conkey[1]) <> 'tenant_id'
        and con.conname not in ('tenant_origins_origin_key', 'reporting_logins_role_name_key')
     union all
     select t.name || ': index ' || i.indexrelid::regclass || ' does not lead with tenant_id'
       from owned t join pg_index i on i.indrelid = t.oid
      where (select attname from pg_attribute where attrelid = t.oid and attnum = i.indkey[0])
            is distinct from 'tenant_id'
        and i.indexrelid not in ('weld_private.tenant_origins_origin_key'::regclass,
                                 'weld_private.reporting_logins_role_name_key'::regclass)
     union all
     select t.name || ': no primary key' from owned t
      where not exists (select from pg_constraint where conrelid = t.oid and contype = 'p')`,
  );
  return rows.map((r) => r.problem).sort();
}

test('catalog: every table has row security enabled and forced, and leads every key and index with tenant_id', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  t.deepEqual(await tenancyProblems(rootUrl), []);
});

test('catalog: the same check names a new table that forgets', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  await superuserQuery(
    rootUrl,
    `create table weld_public.careless (id uuid primary key, tenant_id uuid);
     create index careless_by_tenant on weld_public.careless (tenant_id);`,
  );
  t.deepEqual(await tenancyProblems(rootUrl), [
    'weld_public.careless: careless_pkey does not lead with tenant_id',
    'weld_public.careless: first column is not tenant_id',
    'weld_public.careless: index weld_public.careless_pkey does not lead with tenant_id',
    'weld_public.careless: row security not enabled',
    'weld_public.careless: row security not forced',
  ]);
});

test('isolation: for each role, the other tenant is invisible, unchangeable and undeletable', async (t) => {
  const { rootUrl, owner, a, b, pool } = await twoTenants(t);
  for (const fx of [a, b]) {
    const weldId = await fx.weld('ACCEPTED');
    const ndt = (
      await owner.query<{ id: string }>(
        `insert into weld_public.ndt_records (tenant_id, method, report_number, examined_on, result)
         values ($1, 'RT', 'RT-1', '2026-11-01', 'accepted') returning id`,
        [fx.tenantId],
      )
    ).rows[0]!.id;
    await owner.query(
      `insert into weld_public.ndt_record_welds (tenant_id, ndt_record_id, weld_id) values ($1, $2, $3)`,
      [fx.tenantId, ndt, weldId],
    );
  }

  const tables = (
    await superuserQuery<{ name: string }>(
      rootUrl,
      `select n.nspname || '.' || c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'weld_public' and c.relkind = 'r' and c.relname <> 'tenants' order by 1`,
    )
  ).map((r) => r.name);
  t.true(tables.length >= 19);

  // What B has, seen by the owner (who bypasses row security), to compare after each attempt.
  const fingerprint = async () =>
    (
      await owner.query<{ f: string }>(
        `select string_agg(md5(x::text), '' order by md5(x::text)) as f
           from (${tables.map((name) => `select row_to_json(r)::text as x from ${name} r where tenant_id = '${b.tenantId}'`).join(' union all ')}) s`,
      )
    ).rows[0]!.f;
  const before = await fingerprint();

  const asRole = <T>(
    role: RequestRole,
    tenantId: string | null,
    work: (c: pg.PoolClient) => Promise<T>,
  ) => withContext(pool, { role, tenantId }, work);

  for (const role of ROLES) {
    for (const table of tables) {
      const privileges = (
        await superuserQuery<{ sel: boolean; upd: string | null; del: boolean }>(
          rootUrl,
          `select has_table_privilege($1, $2, 'SELECT') as sel,
                  (select attname from pg_attribute where attrelid = $2::regclass and attnum > 0
                      and not attisdropped and has_column_privilege($1, $2, attname, 'UPDATE')
                    order by attnum limit 1) as upd,
                  has_table_privilege($1, $2, 'DELETE') as del`,
          [role, table],
        )
      )[0]!;
      const label = `${role} on ${table}`;
      if (privileges.sel) {
        const seen = await asRole(role, a.tenantId, (c) =>
          c.query<{ mine: number; theirs: number }>(
            `select count(*) filter (where tenant_id = $1)::int as mine,
                    count(*) filter (where tenant_id <> $1)::int as theirs from ${table}`,
            [a.tenantId],
          ),
        );
        t.is(seen.rows[0]!.theirs, 0, `${label}: select`);
        const nobody = await asRole(role, null, (c) => c.query(`select 1 from ${table}`));
        t.is(nobody.rowCount, 0, `${label}: no tenant context sees nothing`);
      } else {
        await t.throwsAsync(
          asRole(role, a.tenantId, (c) => c.query(`select 1 from ${table}`)),
          { code: '42501' },
          label,
        );
      }
      if (privileges.upd) {
        const updated = await asRole(role, a.tenantId, (c) =>
          c.query(
            `update ${table} set ${privileges.upd} = ${privileges.upd} where tenant_id = $1`,
            [b.tenantId],
          ),
        );
        t.is(updated.rowCount, 0, `${label}: update of ${privileges.upd}`);
      }
      if (privileges.del) {
        const deleted = await asRole(role, a.tenantId, (c) =>
          c.query(`delete from ${table} where tenant_id = $1`, [b.tenantId]),
        );
        t.is(deleted.rowCount, 0, `${label}: delete`);
      }
    }
  }
  t.is(await fingerprint(), before, "tenant B's rows are exactly as they were");
});

test("isolation: inserting with another tenant's id, or pointing at its rows, is refused", async (t) => {
  const { a, b, pool } = await twoTenants(t);

  // A table whose tenant_id the role may write: the row-security check refuses B's id.
  const rule = await t.throwsAsync(
    withContext(pool, { role: 'weld_admin', tenantId: a.tenantId }, (c) =>
      c.query(
        `insert into weld_public.weld_transition_rules (tenant_id, from_status, to_status, least_role)
         values ($1, 'VOIDED', 'PENDING', 'viewer')`,
        [b.tenantId],
      ),
    ),
  );
  t.is((rule as { code?: string }).code, '42501');
  t.regex(rule.message, /row-level security/);

  // A table whose tenant_id is not writable at all: refused by privilege.
  const weld = await t.throwsAsync(
    withContext(pool, { role: 'weld_engineer', tenantId: a.tenantId }, (c) =>
      c.query(
        `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size) values ($1, $2, 'X', 'BW', 2)`,
        [b.tenantId, b.isoId],
      ),
    ),
  );
  t.is((weld as { code?: string }).code, '42501');

  // Pointing at B's ISO from A's weld: the composite foreign key finds no (A, iso) pair, and the
  // message says only that, nothing about B's row.
  const fk = await t.throwsAsync(
    withContext(pool, { role: 'weld_engineer', tenantId: a.tenantId }, (c) =>
      c.query(
        `insert into weld_public.welds (iso_id, weld_number, type, size) values ($1, 'X', 'BW', 2)`,
        [b.isoId],
      ),
    ),
  );
  t.is((fk as { code?: string }).code, '23503');
  t.false(String((fk as { detail?: string }).detail).includes(b.tenantId));

  // And the same insert pointing at A's own ISO works, taking A's tenant id by default.
  const ok = await withContext(pool, { role: 'weld_engineer', tenantId: a.tenantId }, (c) =>
    c.query<{ tenant_id: string }>(
      `insert into weld_public.welds (iso_id, weld_number, type, size) values ($1, 'X', 'BW', 2) returning tenant_id`,
      [a.isoId],
    ),
  );
  t.is(ok.rows[0]!.tenant_id, a.tenantId);
});

test('a duplicate in one tenant is refused; the same natural key in another tenant is fine', async (t) => {
  const { a, b, pool } = await twoTenants(t);
  const addWelder = (tenantId: string) =>
    withContext(pool, { role: 'weld_engineer', tenantId }, (c) =>
      c.query(`insert into weld_public.welders (stamp, name) values ('W77', 'New welder')`),
    );
  await addWelder(a.tenantId);
  await addWelder(b.tenantId);
  const duplicate = await t.throwsAsync(addWelder(a.tenantId));
  t.is((duplicate as { code?: string }).code, '23505');
  t.is((duplicate as { constraint?: string }).constraint, 'welders_stamp_key');
});
