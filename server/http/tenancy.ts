// The tenant of a request: the one whose origin equals the request's origin exactly. The origin is
// the scheme and the Host header; X-Forwarded-Proto and X-Forwarded-Host count only when the
// request came through a trusted proxy (TRUST_PROXY, express's "trust proxy", set in app.ts).
// Unknown origin: 404, before anything else looks at the request.
import type pg from 'pg';
import type { RequestHandler } from 'express';
import { normalizeOrigin, type Tenant } from '../../db/tenants.ts';
import { problems } from './problem.ts';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by the tenant resolver on every route except the process-level health check. */
      tenant?: Tenant;
      /** The origin the tenant was matched by: the issuer and audience of its tokens. */
      tenantOrigin?: string;
    }
  }
}

/**
 * Which proxies in front are trusted with X-Forwarded-*: none (false), the nearest N hops (the
 * client address is then the N-th address from the right of X-Forwarded-For, never the
 * client-supplied left-most one), or the proxies at these addresses and subnets.
 */
export type TrustProxy = false | number | string[];

/** How long an answer is reused: tenants change rarely; a new origin should work at once. */
const FOUND_TTL_MS = 30_000;
const NOT_FOUND_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

export function tenantResolver(pool: pg.Pool): RequestHandler {
  const cache = new Map<string, { tenant: Tenant | undefined; expires: number }>();

  async function lookup(origin: string): Promise<Tenant | undefined> {
    const now = Date.now();
    const cached = cache.get(origin);
    if (cached && cached.expires > now) return cached.tenant;
    const { rows } = await pool.query<Tenant>(
      'select id, slug, name from weld_hidden.tenant_by_origin($1)',
      [origin],
    );
    const tenant = rows[0];
    if (cache.size >= MAX_ENTRIES) cache.clear();
    cache.set(origin, { tenant, expires: now + (tenant ? FOUND_TTL_MS : NOT_FOUND_TTL_MS) });
    return tenant;
  }

  return async (req, _res, next) => {
    const origin = normalizeOrigin(`${req.protocol}://${req.host}`);
    const tenant = origin && (await lookup(origin));
    if (!tenant) throw problems.unknownTenant();
    req.tenant = tenant;
    req.tenantOrigin = origin;
    next();
  };
}
