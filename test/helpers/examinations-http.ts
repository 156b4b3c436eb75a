// The world of the tests of NDT records and inspections over real HTTP
// (test/http/examinations-*.test.ts): two tenants with a user of every role, ISOs and welds, and
// the requests and assertions the tests repeat.
import type { ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from './auth.ts';
import { migratedDatabase } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { request, type HttpResponse } from './http.ts';
import { startServer } from './server.ts';

export const A = 'a.test';
export const B = 'b.test';
export const PREFIXES = ['', '/api'] as const;
export const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** The inspector's display name, which an inspection without inspectorName takes. */
export const INSPECTOR_NAME = 'Ines Inspector';

export const NDT_RECORD_KEYS = [
  'createdAt', 'examinedOn', 'filmIntervals', 'id', 'method', 'notes', 'recordedBy',
  'reportNumber', 'result', 'technician', 'updatedAt', 'version', 'welds',
]; // prettier-ignore
export const INSPECTION_KEYS = [
  'createdAt', 'id', 'inspectedOn', 'inspectorName', 'kind', 'notes', 'recordedBy', 'result',
  'updatedAt', 'version', 'weldIds',
]; // prettier-ignore

export interface World {
  port: number;
  owner: Awaited<ReturnType<typeof ownerClient>>;
  tenantA: string;
  tokens: Record<Role, string>;
  /** The users' ids in tenant A, by role. */
  userIds: Record<Role, string>;
  /** A weld of tenant A (on its one ISO) in the given status, made by the owner. */
  weld: (status?: string) => Promise<string>;
  weldOfB: string;
}

/** Tenant A: one ISO, welds made per test; tenant B: one weld (for the tenant boundary). */
export async function world(t: ExecutionContext): Promise<World> {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const a = await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  const b = await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha'); // tenant B needs a weld, no users
  await owner.query(
    `update weld_public.users set display_name = $2 where tenant_id = $1 and user_name = 'inspector'`,
    [a.id, INSPECTOR_NAME],
  );
  const one = async (sql: string, params: unknown[]) =>
    (await owner.query<{ id: string }>(sql, params)).rows[0]!.id;
  const isoOf = (tenant: string) =>
    one(
      `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'ISO-1', 'L-1') returning id`,
      [tenant],
    );
  const isoA = await isoOf(a.id);
  let count = 0;
  const weldIn = (tenant: string, iso: string, status = 'PENDING') =>
    one(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status, welded_on)
       values ($1, $2, $3, 'BW', 6, $4, '2026-01-01') returning id`,
      [tenant, iso, `W${String(++count).padStart(3, '0')}`, status],
    );
  const weldOfB = await weldIn(b.id, await isoOf(b.id));
  const { rows } = await owner.query<{ role: Role; id: string }>(
    'select role, id from weld_public.users where tenant_id = $1',
    [a.id],
  );
  const userIds = Object.fromEntries(rows.map((r) => [r.role, r.id])) as Record<Role, string>;

  const { port } = await startServer(t, target);
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await login(port, A, role)).json.accessToken;
  return {
    port,
    owner,
    tenantA: a.id,
    tokens,
    userIds,
    weld: (status) => weldIn(a.id, isoA, status),
    weldOfB,
  };
}

/** A request to tenant A as the given role. */
export function call(
  w: World,
  method: string,
  path: string,
  role: Role,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return request(w.port, {
    method,
    path,
    host: A,
    body,
    headers: { authorization: `Bearer ${w.tokens[role]}`, ...headers },
  });
}

export const get = (w: World, path: string, role: Role = 'viewer') => call(w, 'GET', path, role);

export async function statusOf(w: World, prefix: string, weldId: string): Promise<string> {
  const res = await get(w, `${prefix}/welds/${weldId}`);
  return res.json.status;
}

export interface HistoryEntry {
  fromStatus: string;
  toStatus: string;
  cause: string;
  ndtRecordId: string | null;
  changedBy: string | null;
}

/** The weld's status history, oldest first, as GET /welds/{id}/history gives it. */
export async function historyOf(w: World, prefix: string, weldId: string): Promise<HistoryEntry[]> {
  const res = await get(w, `${prefix}/welds/${weldId}/history?limit=500`);
  if (res.status !== 200) throw new Error(`history of ${weldId}: ${res.status} ${res.text}`);
  return res.json.items;
}

/** The ids of a list page, in the order given. */
export const idsOf = (res: HttpResponse): string[] =>
  res.json.items.map((i: { id: string }) => i.id);

export function problemOf(
  t: ExecutionContext,
  res: HttpResponse,
  status: number,
  type?: string,
): void {
  t.is(res.status, status, res.text);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/);
  if (type) t.is(res.json.type, type, res.text);
}

/** The pointers a 422 names. */
export const pointers = (res: HttpResponse): string[] =>
  (res.json.errors ?? []).map((e: { pointer?: string }) => e.pointer);

/** The rows the examination history holds for a record, oldest first (read as the owner). */
export async function examinationChanges(w: World, recordId: string) {
  const { rows } = await w.owner.query<{ subject: string; change: string; reason: string | null }>(
    `select subject, change, reason from weld_public.examination_changes
      where tenant_id = $1 and record_id = $2 order by id`,
    [w.tenantA, recordId],
  );
  return rows;
}

export const sorted = (ids: string[]) => [...ids].sort();
export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
