// Tenants in TypeScript: the origin syntax shared by the CLI and the request router, and the calls
// to the SQL functions that own the rules (migrations/committed/000001-*.sql).
import type pg from 'pg';
import { onClientInTransaction } from './database.ts';

export interface Tenant {
  id: string;
  slug: string;
  name: string;
}

export interface TenantListing extends Tenant {
  origins: string[];
  createdAt: Date;
}

export class TenantError extends Error {}

/**
 * The canonical form of an origin: lower-case scheme and host, no default port, no path.
 * Returns undefined for anything that is not an http(s) origin.
 */
export function normalizeOrigin(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.username || url.password || url.search || url.hash) return undefined;
  if (url.pathname !== '/' || /^[a-z]+:\/\/[^/]+\/./i.test(text)) return undefined;
  return url.origin;
}

/** The canonical form of an origin given at the terminal; a TenantError names a bad one. */
export function parseOrigin(origin: string): string {
  const normalized = normalizeOrigin(origin);
  if (!normalized) {
    throw new TenantError(`'${origin}' is not an origin (scheme://host[:port], nothing after it)`);
  }
  return normalized;
}

export async function addTenant(
  db: pg.ClientBase,
  input: { slug: string; name?: string | undefined; origins: string[] },
): Promise<Tenant> {
  const origins = input.origins.map(parseOrigin);
  if (origins.length === 0) throw new TenantError('a tenant needs at least one --origin');
  try {
    const { rows } = await db.query<Tenant>(
      'select id, slug, name from weld_private.create_tenant($1, $2, $3)',
      [input.slug, input.name ?? input.slug, origins],
    );
    return rows[0]!;
  } catch (error) {
    throw explainTenantError(error, input.slug);
  }
}

export async function listTenants(db: pg.ClientBase): Promise<TenantListing[]> {
  const { rows } = await db.query<TenantListing>(
    'select id, slug, name, origins, created_at as "createdAt" from weld_private.tenant_list()',
  );
  return rows;
}

/** The id of the tenant with this slug; a TenantError when there is none. */
export async function tenantIdOf(db: pg.ClientBase, slug: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    'select id from weld_public.tenants where slug = $1',
    [slug],
  );
  if (!rows[0]) throw new TenantError(`no tenant '${slug}'`);
  return rows[0].id;
}

/** Serves the tenant from one more origin (as the owner, which row security does not bind). */
export async function addOrigin(db: pg.ClientBase, slug: string, origin: string): Promise<string> {
  const normalized = parseOrigin(origin);
  try {
    await db.query('insert into weld_private.tenant_origins (tenant_id, origin) values ($1, $2)', [
      await tenantIdOf(db, slug),
      normalized,
    ]);
  } catch (error) {
    throw explainTenantError(error, slug);
  }
  return normalized;
}

/** Stops serving the tenant from an origin; its last origin stays (it would be unreachable). */
export async function removeOrigin(
  db: pg.ClientBase,
  slug: string,
  origin: string,
): Promise<string> {
  const normalized = parseOrigin(origin);
  const tenantId = await tenantIdOf(db, slug);
  const { rows } = await db.query<{ removed: boolean; others: number }>(
    `with target as (
       select count(*) filter (where origin = $2) > 0 as present,
              count(*) filter (where origin <> $2)::int as others
         from weld_private.tenant_origins where tenant_id = $1
     ), removed as (
       delete from weld_private.tenant_origins o using target
        where o.tenant_id = $1 and o.origin = $2 and target.others > 0
       returning true
     )
     select exists (select from removed) as removed, (select others from target)
       from target where present`,
    [tenantId, normalized],
  );
  if (!rows[0]) throw new TenantError(`${normalized} is not an origin of '${slug}'`);
  if (!rows[0].removed) {
    throw new TenantError(`${normalized} is the last origin of '${slug}'; add another first`);
  }
  return normalized;
}

/** Turns the constraint that refused a tenant into a sentence for the person at the terminal. */
function explainTenantError(error: unknown, slug: string): unknown {
  const e = error as { code?: string; constraint?: string; detail?: string };
  switch (e.constraint) {
    case 'tenants_slug_key':
      return new TenantError(`a tenant with slug '${slug}' already exists`);
    case 'tenant_origins_origin_key': {
      const origin = /\(origin\)=\((.*)\)/.exec(e.detail ?? '')?.[1] ?? 'an origin';
      return new TenantError(`${origin} is already the origin of a tenant`);
    }
    case 'tenant_origins_pkey':
      return new TenantError('the same origin is given twice');
    case 'tenants_slug_format':
      return new TenantError(
        `'${slug}' is not a valid slug: lower-case letters, digits and inner hyphens, at most 63`,
      );
    case 'tenants_name_length':
      return new TenantError('the name must be 1 to 200 characters');
    default:
      return error;
  }
}

const demoOrigins = (port: number) => [`http://127.0.0.1:${port}`, `http://localhost:${port}`];

/**
 * The embedded database's demo tenant. With no tenant at all, it creates `demo`, served from the
 * local origins of the port the server listens on. Later, while the demo tenant still has exactly
 * the local origins of some port (nobody changed them), they follow the server to its current
 * port, so a restart on another PORT keeps the demo working. Returns the demo tenant's listing, if
 * any, and whether it was created just now.
 */
export async function ensureDemoTenant(
  db: pg.ClientBase,
  port: number,
): Promise<{ demo: TenantListing | undefined; created: boolean }> {
  const tenants = await listTenants(db);
  if (tenants.length === 0) {
    await addTenant(db, { slug: 'demo', name: 'Demo project', origins: demoOrigins(port) });
    return { demo: (await listTenants(db))[0], created: true };
  }
  const demo = tenants.find((t) => t.slug === 'demo');
  const oldPort = /^http:\/\/127\.0\.0\.1:(\d+)$/.exec(demo?.origins[0] ?? '')?.[1];
  const isDefault =
    oldPort !== undefined && demo!.origins.join(' ') === demoOrigins(Number(oldPort)).join(' ');
  if (!demo || !isDefault || Number(oldPort) === port) return { demo, created: false };
  await db.query('begin');
  try {
    await db.query('delete from weld_private.tenant_origins where tenant_id = $1', [demo.id]);
    await db.query(
      'insert into weld_private.tenant_origins (tenant_id, origin) select $1, unnest($2::text[])',
      [demo.id, demoOrigins(port)],
    );
    await db.query('commit');
  } catch (error) {
    await db.query('rollback');
    // Another tenant took this port's origins meanwhile: the demo keeps its old ones.
    if ((error as { code?: string }).code === '23505') return { demo, created: false };
    throw error;
  }
  return { demo: (await listTenants(db)).find((t) => t.slug === 'demo'), created: false };
}

/** What a removal or reset deleted: the rows per table. */
export interface Cleared {
  tables: Array<{ table: string; deleted: number }>;
}

/**
 * Empties a tenant (weld_private.clear_tenant holds the rule and says what a reset keeps): `whole`
 * removes it and everything it has, otherwise its project data go and its setup stays (origins,
 * users, keys, settings, rules, webhooks, OAuth2 clients). Needs the root connection (triggers are
 * switched off for the transaction, which only a superuser may do). The tenant's reporting logins
 * are PostgreSQL roles: the caller drops them first (db/reporting.ts).
 */
export async function clearTenant(
  root: pg.ClientBase,
  slug: string,
  whole: boolean,
): Promise<Cleared> {
  const tenant = await tenantIdOf(root, slug);
  return onClientInTransaction(root, async () => {
    // Triggers off for this transaction (a superuser's right); the function runs as its owner.
    await root.query('set local session_replication_role = replica');
    const { rows } = await root.query<{ table_name: string; deleted: string }>(
      'select * from weld_private.clear_tenant($1, $2)',
      [tenant, whole],
    );
    return { tables: rows.map((r) => ({ table: r.table_name, deleted: Number(r.deleted) })) };
  });
}

/** How much a tenant holds, for the question weld-admin asks before it removes or resets one. */
export async function tenantSize(
  db: pg.ClientBase,
  slug: string,
): Promise<{ isos: number; welds: number; users: number }> {
  const tenant = await tenantIdOf(db, slug);
  const { rows } = await db.query<{ isos: number; welds: number; users: number }>(
    `select (select count(*)::int from weld_public.isos where tenant_id = $1) as isos,
            (select count(*)::int from weld_public.welds where tenant_id = $1) as welds,
            (select count(*)::int from weld_public.users where tenant_id = $1) as users`,
    [tenant],
  );
  return rows[0]!;
}
