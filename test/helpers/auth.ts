// Signing in from tests, and reading cookies the way a browser would.
import { parseSetCookie, type SetCookie } from 'cookie';
import type pg from 'pg';
import { addUser } from '../../db/users.ts';
import { request, type HttpResponse } from './http.ts';

export const PASSWORD = 'correct horse battery staple';

/** Adds one user per role to the tenant (userName = role), all with PASSWORD. */
export async function addRoleUsers(owner: pg.ClientBase, tenant: string): Promise<void> {
  for (const role of ['viewer', 'inspector', 'engineer', 'admin']) {
    await addUser(owner, { tenant, userName: role, role, password: PASSWORD });
  }
}

export function login(
  port: number,
  host: string,
  userName: string,
  password = PASSWORD,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return request(port, {
    method: 'POST',
    path: '/auth/login',
    host,
    body: { userName, password },
    headers,
  });
}

/** The Set-Cookie headers of a response, by cookie name, with their attributes. */
export function setCookies(res: HttpResponse): Record<string, SetCookie> {
  const headers = res.headers['set-cookie'] ?? [];
  return Object.fromEntries(headers.map((h) => parseSetCookie(h)).map((c) => [c.name, c]));
}

/** A Cookie request header carrying the values a response set (as a browser would send them). */
export function cookieHeader(res: HttpResponse, only?: string[]): string {
  return Object.values(setCookies(res))
    .filter((c) => !only || only.includes(c.name))
    .map((c) => `${c.name}=${c.value}`)
    .join('; ');
}
