// What the authentication tests (test/http/auth-*.test.ts) share: two tenants with a user of
// every role, a server that also mounts an authenticated unsafe route (to reach the CSRF rules
// of data requests), and the requests and assertions they repeat.
import type { ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import type { Route } from '../../rest-adapter/http/route.ts';
import type { TrustProxy } from '../../rest-adapter/http/tenancy.ts';
import { addRoleUsers } from './auth.ts';
import { migratedDatabase } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { request, type HttpResponse } from './http.ts';
import { startServer } from './server.ts';

export const A = 'a.test';
export const B = 'b.test';

/** An authenticated unsafe route only tests mount, to reach the CSRF rules of data requests. */
export const whoAmI: Route = {
  method: 'PATCH',
  path: '/test/whoami',
  body: true,
  handler: (req, res) => {
    res.json({ via: req.identity!.via, role: req.identity!.role });
  },
};

export async function setup(t: ExecutionContext, options: { trustProxy?: TrustProxy } = {}) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenantA = await addTenant(owner, {
    slug: 'alpha',
    origins: [`http://${A}`, `http://alt.${A}`],
  });
  const tenantB = await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  const server = await startServer(t, target, { extraRoutes: [whoAmI], ...options });
  return { ...server, owner, target, tenantA, tenantB };
}

export const me = (port: number, headers: Record<string, string>, host = A) =>
  request(port, { path: '/auth/me', host, headers });
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** A bearer-mode refresh at tenant A. */
export const refreshWith = (port: number, token: string) =>
  request(port, { method: 'POST', path: '/auth/refresh', host: A, body: { refreshToken: token } });

export function assert401(t: ExecutionContext, res: HttpResponse, label = ''): void {
  t.is(res.status, 401, `${label} ${res.text}`);
  t.regex(String(res.headers['content-type']), /application\/problem\+json/, label);
  t.regex(String(res.headers['www-authenticate']), /^Bearer/, label);
}
