// Small, explicit data sets for SQL-level tests, written as the owner (which bypasses row
// security, as a migration or the seed generator would).
import pg from 'pg';
import { connectClient, createPool, type DatabaseTarget } from '../../db/database.ts';
import { addTenant } from '../../db/tenants.ts';
import { migratedDatabase, type Teardown } from './database.ts';

export interface TenantFixture {
  tenantId: string;
  isoId: string;
  welderId: string;
  /** One user per role, by role name. */
  users: Record<'viewer' | 'inspector' | 'engineer' | 'admin', string>;
  /** Creates a weld on the fixture's ISO in the given status, welded on 2026-01-01; its id. */
  weld: (status?: string, number?: string) => Promise<string>;
}

export async function ownerClient(target: DatabaseTarget): Promise<pg.Client> {
  return connectClient(target.ownerUrl);
}

export async function tenantFixture(owner: pg.Client, slug: string): Promise<TenantFixture> {
  const tenant = await addTenant(owner, { slug, origins: [`http://${slug}.test`] });
  const tenantId = tenant.id;
  const one = async (sql: string, params: unknown[]) =>
    (await owner.query<{ id: string }>(sql, params)).rows[0]!.id;
  const isoId = await one(
    `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, $2, $3) returning id`,
    [tenantId, `${slug}-ISO-1`, `${slug}-LINE-1`],
  );
  const welderId = await one(
    `insert into weld_public.welders (tenant_id, stamp, name) values ($1, $2, $3) returning id`,
    [tenantId, 'W01', `Welder of ${slug}`],
  );
  const users = {} as TenantFixture['users'];
  for (const role of ['viewer', 'inspector', 'engineer', 'admin'] as const) {
    users[role] = await one(
      `insert into weld_public.users (tenant_id, user_name, display_name, role)
       values ($1, $2, $3, $4) returning id`,
      [tenantId, `${role}-${slug}`, `${role} of ${slug}`, role],
    );
  }
  let count = 0;
  const weld = async (status = 'PENDING', number = `W-${++count}`) =>
    one(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status, welder_id, welded_on)
       values ($1, $2, $3, 'BW', 4, $4, $5, '2026-01-01') returning id`,
      [tenantId, isoId, number, status, welderId],
    );
  return { tenantId, isoId, welderId, users, weld };
}

/**
 * The usual world of an SQL-level test: a migrated database of its own, the owner's client, the
 * fixtures of two tenants (alpha and bravo) and a pool of the server's role, all closed after it.
 */
export async function twoTenants(t: Teardown, poolSize = 4) {
  const { rootUrl, target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const a = await tenantFixture(owner, 'alpha');
  const b = await tenantFixture(owner, 'bravo');
  const pool = createPool(target.authenticatorUrl, { max: poolSize });
  t.teardown(() => pool.end());
  return { rootUrl, target, owner, pool, a, b };
}

/** A small seeded PRNG (mulberry32), so a failing randomized run can be replayed by its seed. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}

/** One transaction of the owner (no request role, no tenant context: as the seed or a DBA). */
export async function asOwner<T>(
  pool: pg.Pool,
  work: (c: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('begin');
    const result = await work(c);
    await c.query('commit');
    return result;
  } catch (error) {
    await c.query('rollback');
    throw error;
  } finally {
    c.release();
  }
}
