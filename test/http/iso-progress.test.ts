// An ISO's entity tag and its weld counts (issue F11): the counts move with the ISO's welds, not
// with the ISO, so the tag names both versions. A cached ISO must be read again when a weld of it
// changes status (If-None-Match no longer matches), while If-Match keeps checking the ISO's own
// version: a tag read before the counts moved still lets an engineer change the ISO.
import test from 'ava';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const HOST = 'iso.test';

test('an ISO: the ETag changes with its weld counts; If-Match checks its own version', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = await addTenant(owner, { slug: 'iso', origins: [`http://${HOST}`] });
  await addRoleUsers(owner, 'iso');
  const { port } = await startServer(t, target);
  const token = (await login(port, HOST, 'engineer')).json.accessToken as string;
  const call = (method: string, path: string, body?: unknown, headers = {}) =>
    request(port, {
      method,
      path,
      host: HOST,
      body,
      headers: { authorization: `Bearer ${token}`, ...headers },
    });

  const iso = await call('POST', '/isos', { isoNumber: 'ISO-1', lineNumber: 'L-1' });
  t.is(iso.status, 201);
  const isoId = (iso.json as { id: string }).id;
  const created = iso.headers.etag!;
  t.regex(created, /^"1\.\d+"$/);
  t.deepEqual((iso.json as { weldCounts: unknown }).weldCounts, {
    total: 0,
    pending: 0,
    accepted: 0,
    rejected: 0,
    repair: 0,
    voided: 0,
  });

  const weld = await call('POST', '/welds', {
    isoId,
    weldNumber: 'W1',
    type: 'BW',
    size: 6,
  });
  t.is(weld.status, 201);
  const weldId = (weld.json as { id: string }).id;

  // The new weld moved the counts: the tag read before is stale for a cache, a 200 answers.
  const afterInsert = await call('GET', `/isos/${isoId}`, undefined, { 'if-none-match': created });
  t.is(afterInsert.status, 200);
  t.not(afterInsert.headers.etag, created);
  t.is((afterInsert.json as { weldCounts: { pending: number } }).weldCounts.pending, 1);
  const current = afterInsert.headers.etag!;
  t.is((await call('GET', `/isos/${isoId}`, undefined, { 'if-none-match': current })).status, 304);

  const accept = { status: 'ACCEPTED', disposition: 'NCR-1 use as is' };
  t.is((await call('PATCH', `/welds/${weldId}/status`, accept)).status, 200);
  const afterStatus = await call('GET', `/isos/${isoId}`, undefined, { 'if-none-match': current });
  t.is(afterStatus.status, 200);
  t.like(afterStatus.json as object, { weldCounts: { total: 1, pending: 0, accepted: 1 } });
  // The list shows the same counts and the same numbers.
  const list = await call('GET', '/isos');
  t.like((list.json as { items: object[] }).items[0]!, {
    id: isoId,
    weldCounts: { total: 1, accepted: 1 },
  });

  // If-Match: the oldest tag still names the ISO's version 1, so the change goes through ...
  const changed = await call('PATCH', `/isos/${isoId}`, { area: 'A-2' }, { 'if-match': created });
  t.is(changed.status, 200, JSON.stringify(changed.json));
  t.regex(changed.headers.etag!, /^"2\.\d+"$/);
  // ... and once the ISO itself has changed, the same tag is stale: 412.
  const stale = await call('PATCH', `/isos/${isoId}`, { area: 'A-3' }, { 'if-match': created });
  t.is(stale.status, 412);
  t.is(
    (await call('DELETE', `/isos/${isoId}`, undefined, { 'if-match': '"2.x"' })).status,
    412,
    'a tag this service never issued names no version',
  );
  const counts = await owner.query<{ version: string }>(
    'select version::text from weld_public.iso_weld_counts where tenant_id = $1 and iso_id = $2',
    [tenant.id, isoId],
  );
  t.is(changed.headers.etag, `"2.${counts.rows[0]!.version}"`);
});

test("GET /isos/weld-counts: every ISO's counts in one answer, as each ISO shows them; filters; the tenant's own", async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'prog', origins: ['http://prog.test'] });
  await addTenant(owner, { slug: 'other', origins: ['http://other.test'] });
  for (const slug of ['prog', 'other']) await addRoleUsers(owner, slug);
  await owner.query('begin');
  await seedTenant(owner, 'prog', { isos: 30, weldsPerIso: 7, seed: 11 });
  await seedTenant(owner, 'other', { isos: 5, weldsPerIso: 3, seed: 12 });
  await owner.query('commit');
  const { port } = await startServer(t, target);
  const as = async (host: string, role: string) => {
    const token = (await login(port, host, role)).json.accessToken as string;
    return (method: string, path: string, body?: unknown) =>
      request(port, { method, path, host, body, headers: { authorization: `Bearer ${token}` } });
  };
  const engineer = await as('prog.test', 'engineer');
  const viewer = await as('prog.test', 'viewer');

  // An ISO whose texts need escaping in JSON, without an area.
  const odd = await engineer('POST', '/isos', {
    isoNumber: 'ISO "q" \\ back\tslash é 😀',
    lineNumber: 'L-"1"',
    area: null,
  });
  t.is(odd.status, 201, odd.text);
  // A weld moves: the counts are those of the last commit.
  const isos = (await viewer('GET', '/isos?limit=100')).json.items as Array<{
    id: string;
    isoNumber: string;
    lineNumber: string;
    area: string | null;
    weldCounts: Record<string, number>;
  }>;
  // (Not simply the first ISO: the one made above has a random id and may sort first, weldless.)
  const busy = isos.find((iso) => iso.weldCounts.pending! > 0)!;
  const weld = (await viewer('GET', `/welds?isoId=${busy.id}&status=PENDING&limit=1`)).json
    .items[0];
  const changed = await engineer('PATCH', `/welds/${weld.id}/status`, {
    status: 'ACCEPTED',
    disposition: 'NCR-1 use as is',
  });
  t.is(changed.status, 200, changed.text);

  const all = await viewer('GET', '/isos/weld-counts');
  t.is(all.status, 200, all.text);
  t.regex(all.headers['content-type']!, /^application\/json/);
  t.is(all.json.nextCursor, null);
  const items = all.json.items as Array<Record<string, unknown>>;
  t.is(items.length, 31, 'every ISO of the tenant, none of the other');
  // Exactly what GET /isos shows of each, ordered by ISO number then id.
  const fresh = (await viewer('GET', '/isos?limit=100')).json.items as typeof isos;
  const expected = fresh
    .map((iso) => ({
      isoId: iso.id,
      isoNumber: iso.isoNumber,
      lineNumber: iso.lineNumber,
      area: iso.area,
      ...iso.weldCounts,
    }))
    .sort((a, b) =>
      a.isoNumber < b.isoNumber ? -1 : a.isoNumber > b.isoNumber ? 1 : a.isoId < b.isoId ? -1 : 1,
    );
  t.deepEqual(items, expected);
  const moved = items.find((i) => i.isoId === busy.id)!;
  t.is(moved.accepted, busy.weldCounts.accepted! + 1);
  t.is(moved.pending, busy.weldCounts.pending! - 1);
  t.like(
    items.find((i) => i.isoId === odd.json.id)!,
    {
      isoNumber: 'ISO "q" \\ back\tslash é 😀',
      lineNumber: 'L-"1"',
      area: null,
      total: 0,
    },
  );

  // Filters, "and"-ed; the same under /api.
  const line = fresh[3]!.lineNumber;
  const onLine = (
    await viewer('GET', `/api/isos/weld-counts?lineNumber=${encodeURIComponent(line)}`)
  ).json.items as Array<{ lineNumber: string }>;
  t.deepEqual(
    onLine.map((i) => i.lineNumber),
    expected.filter((i) => i.lineNumber === line).map(() => line),
  );
  t.true(onLine.length > 0);
  const area = fresh.find((i) => i.area !== null)!.area!;
  const both = await viewer(
    'GET',
    `/isos/weld-counts?lineNumber=${encodeURIComponent(line)}&area=${encodeURIComponent(area)}`,
  );
  t.deepEqual(
    (both.json.items as Array<{ isoId: string }>).map((i) => i.isoId),
    expected.filter((i) => i.lineNumber === line && i.area === area).map((i) => i.isoId),
  );
  t.deepEqual((await viewer('GET', '/isos/weld-counts?area=nowhere')).json.items, []);

  // Pages: walking with limit=7 gives the same list, with Link and nextCursor; the last has none.
  const walked: unknown[] = [];
  let path: string | undefined = '/isos/weld-counts?limit=7';
  let pages = 0;
  while (path) {
    const res = await viewer('GET', path);
    t.is(res.status, 200, res.text);
    walked.push(...(res.json.items as unknown[]));
    pages++;
    const next = res.json.nextCursor as string | null;
    t.is(
      res.headers.link,
      next ? `</isos/weld-counts?limit=7&cursor=${next}>; rel="next"` : undefined,
    );
    path = next ? `/isos/weld-counts?limit=7&cursor=${next}` : undefined;
  }
  t.is(pages, 5);
  t.deepEqual(walked, expected);
  for (const bad of [
    'limit=0',
    'limit=10001',
    'limit=x',
    'cursor=%2B%2B',
    'cursor=A',
    `cursor=${'A'.repeat(401)}`,
  ]) {
    const res = await viewer('GET', `/isos/weld-counts?${bad}`);
    t.is(res.status, 422, bad);
  }

  // Bad parameters: 422 naming them; no token: 401; another tenant sees only its own.
  const bad = await viewer('GET', '/isos/weld-counts?isoNumber=5');
  t.is(bad.status, 422);
  t.is(bad.json.type, '/problems/validation-failed');
  const anonymous = await request(port, {
    method: 'GET',
    path: '/isos/weld-counts',
    host: 'prog.test',
  });
  t.is(anonymous.status, 401);
  const other = await (await as('other.test', 'viewer'))('GET', '/isos/weld-counts');
  t.is(other.json.items.length, 5);
  t.false(
    (other.json.items as Array<{ isoId: string }>).some((i) =>
      expected.some((e) => e.isoId === i.isoId),
    ),
  );
});
