// Tenants in TypeScript: the origin syntax shared by the CLI and the request router, and the calls
// to the SQL functions that own the rules (migrations/committed/000001-*.sql).
import type pg from 'pg';

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

export async function addTenant(
  db: pg.ClientBase,
  input: { slug: string; name?: string | undefined; origins: string[] },
): Promise<Tenant> {
  const origins = input.origins.map((origin) => {
    const normalized = normalizeOrigin(origin);
    if (!normalized) {
      throw new TenantError(
        `'${origin}' is not an origin (scheme://host[:port], nothing after it)`,
      );
    }
    return normalized;
  });
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

/**
 * The embedded database's first start: with no tenant at all, create `demo`, served from the
 * local origins of the port the server listens on. Returns the demo tenant's listing, if any,
 * and whether it was created just now.
 */
export async function ensureDemoTenant(
  db: pg.ClientBase,
  port: number,
): Promise<{ demo: TenantListing | undefined; created: boolean }> {
  const tenants = await listTenants(db);
  if (tenants.length === 0) {
    await addTenant(db, {
      slug: 'demo',
      name: 'Demo project',
      origins: [`http://localhost:${port}`, `http://127.0.0.1:${port}`],
    });
    return { demo: (await listTenants(db))[0], created: true };
  }
  return { demo: tenants.find((t) => t.slug === 'demo'), created: false };
}
