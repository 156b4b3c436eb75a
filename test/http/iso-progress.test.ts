// An ISO's entity tag and its weld counts (issue F11): the counts move with the ISO's welds, not
// with the ISO, so the tag names both versions. A cached ISO must be read again when a weld of it
// changes status (If-None-Match no longer matches), while If-Match keeps checking the ISO's own
// version: a tag read before the counts moved still lets an engineer change the ISO.
import test from 'ava';
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

  t.is((await call('PATCH', `/welds/${weldId}/status`, { status: 'ACCEPTED' })).status, 200);
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
