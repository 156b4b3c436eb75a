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

/**
 * How long an answer is reused: tenants change rarely; a new origin should work at once. A Host
 * that names no tenant is remembered as unknown for a moment, and the lookups of Hosts not seen
 * before are rationed: a flood of made-up Hosts costs the database at most MISS_LOOKUPS_PER_SECOND
 * queries, and never evicts the origins in use. Past the ration a Host not seen before is 503
 * /problems/busy with Retry-After, not 404: it may be a real tenant this instance has not served
 * yet, and a flood must not tell its users it does not exist.
 */
const FOUND_TTL_MS = 30_000;
const NOT_FOUND_TTL_MS = 2_000;
const MAX_NOT_FOUND = 10_000;
export const MISS_LOOKUPS_PER_SECOND = 20;

export function tenantResolver(pool: pg.Pool): RequestHandler {
  const found = new Map<string, { tenant: Tenant; expires: number }>();
  const notFound = new Map<string, number>();
  // A token bucket: MISS_LOOKUPS_PER_SECOND lookups of unknown Hosts a second, as many at once.
  let tokens = MISS_LOOKUPS_PER_SECOND;
  let refilledAt = Date.now();
  const mayLookUp = (now: number) => {
    tokens = Math.min(
      MISS_LOOKUPS_PER_SECOND,
      tokens + ((now - refilledAt) / 1000) * MISS_LOOKUPS_PER_SECOND,
    );
    refilledAt = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };

  /** The tenant of an origin, undefined when none, 'rationed' when it may not be looked up now. */
  async function lookup(origin: string): Promise<Tenant | undefined | 'rationed'> {
    const now = Date.now();
    const known = found.get(origin);
    if (known && known.expires > now) return known.tenant;
    if ((notFound.get(origin) ?? 0) > now) return undefined;
    // An origin served before is looked up again whatever the flood; a new one, while tokens last.
    if (!known && !mayLookUp(now)) return 'rationed';
    const { rows } = await pool.query<Tenant>(
      'select id, slug, name from weld_hidden.tenant_by_origin($1)',
      [origin],
    );
    const tenant = rows[0];
    if (tenant) {
      found.set(origin, { tenant, expires: now + FOUND_TTL_MS });
    } else {
      found.delete(origin);
      if (notFound.size >= MAX_NOT_FOUND) notFound.clear();
      notFound.set(origin, now + NOT_FOUND_TTL_MS);
    }
    return tenant;
  }

  return async (req, _res, next) => {
    const origin = normalizeOrigin(`${req.protocol}://${req.host}`);
    const tenant = origin && (await lookup(origin));
    if (tenant === 'rationed') throw problems.hostsRationed();
    if (!tenant) throw problems.unknownTenant();
    req.tenant = tenant;
    req.tenantOrigin = origin;
    next();
  };
}
