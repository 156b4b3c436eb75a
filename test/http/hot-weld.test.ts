// One hot weld, many writers (issue F11): concurrent status changes of the same weld over HTTP.
// Each attempt names itself in its reason; afterwards every acknowledged change (200) must be in
// the weld's history exactly once, in the order of the versions the answers gave, and the event
// feed must carry the same changes in the same order. Refused attempts (409: not allowed from the
// status another writer left) must have left nothing.
import test from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const HOST = 'hot.test';
const WRITERS = 16;
const ATTEMPTS_EACH = 25;
// The default rules' cycle (migrations/000002): an engineer may take each step.
const TARGETS = ['REJECTED', 'REPAIR', 'PENDING'] as const;

test('one hot weld: every acknowledged change is in the history and the feed once, in version order', async (t) => {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const tenant = await addTenant(owner, { slug: 'hot', origins: [`http://${HOST}`] });
  await addRoleUsers(owner, 'hot');
  const iso = await owner.query<{ id: string }>(
    `insert into weld_public.isos (tenant_id, iso_number, line_number)
     values ($1, 'ISO-HOT', 'L-1') returning id`,
    [tenant.id],
  );
  const weld = await owner.query<{ id: string; version: number }>(
    `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size)
     values ($1, $2, 'W1', 'BW', 6) returning id, version`,
    [tenant.id, iso.rows[0]!.id],
  );
  const weldId = weld.rows[0]!.id;
  const { port } = await startServer(t, target);
  const token = (await login(port, HOST, 'engineer')).json.accessToken as string;

  const acknowledged: Array<{ reason: string; version: number; status: string }> = [];
  const refused = new Map<number, number>();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      for (let i = 0; i < ATTEMPTS_EACH; i++) {
        const reason = `writer ${writer} attempt ${i}`;
        const status = TARGETS[(writer + i) % TARGETS.length]!;
        const res = await request(port, {
          method: 'PATCH',
          path: `/welds/${weldId}/status`,
          host: HOST,
          headers: { authorization: `Bearer ${token}` },
          body: { status, reason },
        });
        if (res.status === 200) {
          const body = res.json as { version: number; status: string };
          t.is(body.status, status);
          t.is(res.headers.etag, `"${body.version}"`);
          acknowledged.push({ reason, version: body.version, status });
        } else refused.set(res.status, (refused.get(res.status) ?? 0) + 1);
      }
    }),
  );
  // Only the lifecycle's own refusal: a step not allowed from the status the weld had then.
  t.deepEqual(
    [...refused.keys()].filter((status) => status !== 409),
    [],
  );
  t.true(acknowledged.length >= 10, `only ${acknowledged.length} changes went through`);

  // Versions: one per change, no two answers alike, none missing.
  acknowledged.sort((a, b) => a.version - b.version);
  const first = weld.rows[0]!.version;
  t.deepEqual(
    acknowledged.map((a) => a.version),
    acknowledged.map((_, i) => first + 1 + i),
  );

  const history = await owner.query<{ reason: string; to_status: string }>(
    `select reason, to_status::text from weld_public.weld_status_history
      where tenant_id = $1 and weld_id = $2 order by id`,
    [tenant.id, weldId],
  );
  t.deepEqual(
    history.rows.map((h) => `${h.reason} -> ${h.to_status}`),
    acknowledged.map((a) => `${a.reason} -> ${a.status}`),
  );

  await owner.query('select weld_hidden.place_events()'); // what the server's relay does
  const events = await owner.query<{ reason: string; to: string }>(
    `select change->>'reason' as reason, change->>'to' as to from weld_public.events
      where tenant_id = $1 and subject_id = $2 and type = 'weld.status_changed' order by id`,
    [tenant.id, weldId],
  );
  t.deepEqual(
    events.rows.map((e) => `${e.reason} -> ${e.to}`),
    acknowledged.map((a) => `${a.reason} -> ${a.status}`),
  );

  const final = await request(port, {
    path: `/welds/${weldId}`,
    host: HOST,
    headers: { authorization: `Bearer ${token}` },
  });
  t.is((final.json as { version: number }).version, acknowledged.at(-1)!.version);
});
