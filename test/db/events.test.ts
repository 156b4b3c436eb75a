// F8, events in SQL: the transactional outbox of migration 000010. Every resource kind announces
// its creation, change and deletion once per committing transaction, with the resource as REST
// shows it at commit; weld status changes, package releases and examination selections have
// events of their own. Nothing is announced for what rolls back; ids follow commit order within
// a tenant, so a reader of `id > cursor` never skips; commits wake listeners of `weld_events`;
// old events are purged behind a watermark. Worlds are built as the owner (a DBA), changes made
// as the request roles the API uses.
import test, { type ExecutionContext } from 'ava';
import pg from 'pg';
import { connectClient, withContext } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from '../helpers/fixtures.ts';

type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';

interface Event {
  id: string;
  type: string;
  subject_id: string;
  actor_id: string | null;
  data: Record<string, unknown>;
  change: Record<string, unknown> | null;
}

const sorted = (items: string[]) => [...items].sort();
/** A timestamp as JavaScript's Date renders it, the contract's form. */
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function setup(t: ExecutionContext, poolSize = 4) {
  const world = await twoTenants(t, poolSize);
  const { owner, pool } = world;
  const as = <T>(fx: TenantFixture, role: Role, work: (c: pg.PoolClient) => Promise<T>) =>
    withContext(
      pool,
      { role: `weld_${role}`, tenantId: fx.tenantId, userId: fx.users[role] },
      work,
    );
  /** The first row a statement returns, as a request role of the tenant. */
  const one = async <R extends pg.QueryResultRow = { id: string }>(
    fx: TenantFixture,
    role: Role,
    sql: string,
    params: unknown[] = [],
  ) => as(fx, role, async (c) => (await c.query<R>(sql, params)).rows[0]!);
  /** Inserts a row as the owner (a DBA) and returns its id. */
  const insert = async (table: string, row: Record<string, unknown>) => {
    const keys = Object.keys(row);
    return (
      await owner.query<{ id: string }>(
        `insert into weld_public.${table} (${keys.join(', ')})
         values (${keys.map((_, i) => `$${i + 1}`).join(', ')}) returning id`,
        Object.values(row),
      )
    ).rows[0]!.id;
  };
  /** The newest event id of every tenant: what happens next has higher ids. */
  const mark = async () =>
    (
      await owner.query<{ id: string }>(
        `select coalesce(max(id), 0)::text as id from weld_public.events`,
      )
    ).rows[0]!.id;
  /** The tenant's events after `since`, in id order, as the owner sees them (all of them). */
  const eventsSince = async (fx: TenantFixture, since: string) =>
    (
      await owner.query<Event>(
        `select e.id::text, e.type, e.subject_id, e.actor_id, e.data, e.change
           from weld_public.events e
          where e.tenant_id = $1 and e.id > $2 order by e.id`,
        [fx.tenantId, since],
      )
    ).rows;
  /** Runs `work`, then returns its result and the events of fx's tenant written meanwhile. */
  const eventsOf = async <T>(fx: TenantFixture, work: () => Promise<T>) => {
    const since = await mark();
    const result = await work();
    return { result, events: await eventsSince(fx, since) };
  };
  const recordNdt = (
    fx: TenantFixture,
    method: string,
    reportNumber: string,
    welds: Array<[string, 'accepted' | 'rejected']>,
  ) =>
    one<{ id: string }>(fx, 'inspector', 'select id from weld_public.record_ndt($1)', [
      JSON.stringify({
        method,
        reportNumber,
        examinedOn: '2026-02-10',
        welds: welds.map(([weldId, result]) => ({ weldId, result })),
      }),
    ]);
  return { ...world, as, one, insert, mark, eventsSince, eventsOf, recordNdt };
}
type World = Awaited<ReturnType<typeof setup>>;

/**
 * The one event of `events`, of the given type, subject and actor, whose data is a resource as
 * REST shows it: camelCase keys, no tenantId, its own id, instants in the contract's form.
 */
function onlyEvent(
  t: ExecutionContext,
  events: Event[],
  expected: { type: string; subject: string; actor: string | null },
): Event {
  t.deepEqual(
    events.map((e) => [e.type, e.subject_id, e.actor_id]),
    [[expected.type, expected.subject, expected.actor]],
  );
  const event = events[0]!;
  t.is(event.data.id, expected.subject);
  t.false('tenantId' in event.data, 'no tenantId');
  for (const key of Object.keys(event.data)) t.regex(key, /^[a-z][a-zA-Z0-9]*$/, 'camelCase');
  const instantKeys = Object.keys(event.data).filter((key) => key.endsWith('At'));
  t.true(instantKeys.length > 0);
  for (const key of instantKeys) t.regex(String(event.data[key]), ISO_INSTANT, key);
  return event;
}

/** The row's instants as REST renders them (pg's Date, then JSON). */
async function instants(owner: pg.Client, table: string, id: string) {
  const { rows } = await owner.query<{ created_at: Date; updated_at: Date }>(
    `select created_at, updated_at from weld_public.${table} where id = $1`,
    [id],
  );
  return {
    createdAt: rows[0]!.created_at.toISOString(),
    updatedAt: rows[0]!.updated_at.toISOString(),
  };
}

//------------------------------------------------------------------------------------------------
// One event per change, for every resource kind

test('iso: insert -> one iso.created (camelCase, no tenantId, instants as REST), update -> iso.updated, delete -> iso.deleted as last stored', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.isos (iso_number, line_number) values ('ISO-E1', 'L-E1') returning id`,
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, { type: 'iso.created', subject: id, actor: engineer });
  t.like(event.data, {
    isoNumber: 'ISO-E1',
    lineNumber: 'L-E1',
    revision: '0',
    fluidService: 'normal',
    rtPercent: 5,
    area: null,
    version: 1,
  });
  t.like(event.data, await instants(s.owner, 'isos', id));
  t.is(event.change, null);

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.isos set area = 'North' where id = $1`, [id]),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'iso.updated',
    subject: id,
    actor: engineer,
  });
  t.like(update.data, { area: 'North', isoNumber: 'ISO-E1', version: 2 });
  t.like(update.data, await instants(s.owner, 'isos', id));

  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) => c.query(`delete from weld_public.isos where id = $1`, [id])),
  );
  const gone = onlyEvent(t, deleted.events, { type: 'iso.deleted', subject: id, actor: engineer });
  t.like(gone.data, { area: 'North', isoNumber: 'ISO-E1', version: 2 });
});

test('weld: insert -> one weld.created, update of its fields -> one weld.updated with the final state', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.welds (iso_id, weld_number, type, size, welder_id)
       values ($1, 'W-E1', 'BW', 4, $2) returning id`,
      [a.isoId, a.welderId],
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'weld.created',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(event.data, {
    isoId: a.isoId,
    weldNumber: 'W-E1',
    type: 'BW',
    size: 4,
    welderId: a.welderId,
    wpsId: null,
    weldedOn: null,
    status: 'PENDING',
    repairCycle: 0,
    version: 1,
  });

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(
        `update weld_public.welds set material = 'A106-B', welded_on = '2026-03-01' where id = $1`,
        [id],
      ),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'weld.updated',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(update.data, {
    material: 'A106-B',
    weldedOn: '2026-03-01',
    status: 'PENDING',
    version: 2,
  });
  t.is(update.change, null);
});

test('welder: insert -> one welder.created, update -> one welder.updated', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.welders (stamp, name) values ('W77', 'Ann') returning id`,
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'welder.created',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(event.data, { stamp: 'W77', name: 'Ann', active: true });
  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.welders set active = false where id = $1`, [id]),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'welder.updated',
    subject: id,
    actor: a.users.engineer,
  });
  t.like(update.data, { stamp: 'W77', active: false });
});

test('pqr: insert -> pqr.created (numbers as numbers, arrays as arrays), update -> pqr.updated, delete -> pqr.deleted', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.pqrs (pqr_number, process, p_numbers, thickness_tested_in)
       values ('PQR-1', 'GTAW+SMAW', '{1,1}', 0.5) returning id`,
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, { type: 'pqr.created', subject: id, actor: engineer });
  t.like(event.data, {
    pqrNumber: 'PQR-1',
    process: 'GTAW+SMAW',
    pNumbers: ['1', '1'],
    thicknessTestedIn: 0.5,
    diameterTestedIn: null,
  });
  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.pqrs set document_ref = 'DOC-9' where id = $1`, [id]),
    ),
  );
  t.like(onlyEvent(t, updated.events, { type: 'pqr.updated', subject: id, actor: engineer }).data, {
    documentRef: 'DOC-9',
  });
  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) => c.query(`delete from weld_public.pqrs where id = $1`, [id])),
  );
  t.like(onlyEvent(t, deleted.events, { type: 'pqr.deleted', subject: id, actor: engineer }).data, {
    documentRef: 'DOC-9',
    pqrNumber: 'PQR-1',
  });
});

test('wps: created with its pqrIds in one transaction -> one wps.created listing them; a change of the list alone -> wps.updated with the new list', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const pqr = (n: string) =>
    s.insert('pqrs', {
      tenant_id: a.tenantId,
      pqr_number: n,
      process: 'SMAW',
      p_numbers: '{1}',
      thickness_tested_in: 0.5,
    });
  const pqrIds = [await pqr('PQR-A'), await pqr('PQR-B')];
  const created = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      const { id } = (
        await c.query<{ id: string }>(
          `insert into weld_public.wps (wps_number, process) values ('WPS-1', 'SMAW') returning id`,
        )
      ).rows[0]!;
      await c.query(
        `insert into weld_public.wps_pqrs (wps_id, pqr_id) select $1, unnest($2::uuid[])`,
        [id, pqrIds],
      );
      return id;
    }),
  );
  const id = created.result;
  const event = onlyEvent(t, created.events, { type: 'wps.created', subject: id, actor: engineer });
  t.like(event.data, {
    wpsNumber: 'WPS-1',
    state: 'draft',
    thicknessMinIn: 0,
    thicknessMaxIn: null,
  });
  t.deepEqual(event.data.pqrIds, sorted(pqrIds));

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      // A range its PQRs support (QW-451.1: T 0.5 in. -> 3/16 to 1 in.), so it may be approved.
      await c.query(
        `update weld_public.wps set state = 'approved', thickness_min_in = 0.1875, thickness_max_in = 1 where id = $1`,
        [id],
      );
    }),
  );
  t.like(onlyEvent(t, updated.events, { type: 'wps.updated', subject: id, actor: engineer }).data, {
    state: 'approved',
  });
  // Only the list changes: the WPS's row is touched (version, updatedAt), so it is announced.
  const unlinked = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`delete from weld_public.wps_pqrs where wps_id = $1 and pqr_id = $2`, [
        id,
        pqrIds[0],
      ]),
    ),
  );
  const list = onlyEvent(t, unlinked.events, { type: 'wps.updated', subject: id, actor: engineer });
  t.deepEqual(list.data.pqrIds, [pqrIds[1]]);
});

test('welder_qualification: insert -> created, update -> updated, delete -> deleted', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const created = await s.eventsOf(a, () =>
    s.one(
      a,
      'engineer',
      `insert into weld_public.welder_qualifications (welder_id, process, positions, qualified_on)
       values ($1, 'SMAW', '{6G}', '2026-01-10') returning id`,
      [a.welderId],
    ),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'welder_qualification.created',
    subject: id,
    actor: engineer,
  });
  t.like(event.data, {
    welderId: a.welderId,
    process: 'SMAW',
    positions: ['6G'],
    qualifiedOn: '2026-01-10',
    expiresOn: null,
  });
  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(
        `update weld_public.welder_qualifications set expires_on = '2028-01-10' where id = $1`,
        [id],
      ),
    ),
  );
  t.like(
    onlyEvent(t, updated.events, {
      type: 'welder_qualification.updated',
      subject: id,
      actor: engineer,
    }).data,
    { expiresOn: '2028-01-10' },
  );
  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`delete from weld_public.welder_qualifications where id = $1`, [id]),
    ),
  );
  t.like(
    onlyEvent(t, deleted.events, {
      type: 'welder_qualification.deleted',
      subject: id,
      actor: engineer,
    }).data,
    { expiresOn: '2028-01-10', welderId: a.welderId },
  );
});

test('ndt_record: record_ndt -> one ndt_record.created with its welds and results, filmIntervals []; correct_ndt_record -> one ndt_record.updated', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const inspector = a.users.inspector;
  const weldId = await a.weld();
  const created = await s.eventsOf(a, () => s.recordNdt(a, 'UT', 'UT-1', [[weldId, 'accepted']]));
  const id = created.result.id;
  const records = created.events.filter((e) => e.type.startsWith('ndt_record.'));
  const event = onlyEvent(t, records, {
    type: 'ndt_record.created',
    subject: id,
    actor: inspector,
  });
  t.like(event.data, {
    method: 'UT',
    reportNumber: 'UT-1',
    examinedOn: '2026-02-10',
    result: 'accepted',
    recordedBy: inspector,
  });
  t.deepEqual(event.data.welds, [{ weldId, result: 'accepted' }]);
  t.deepEqual(event.data.filmIntervals, []);

  const corrected = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_ndt_record($1, $2, 'typo in the notes')`, [
        id,
        JSON.stringify({ notes: 'second pass' }),
      ]),
    ),
  );
  const update = onlyEvent(t, corrected.events, {
    type: 'ndt_record.updated',
    subject: id,
    actor: inspector,
  });
  t.like(update.data, { notes: 'second pass', version: 2 });
  t.deepEqual(update.data.welds, [{ weldId, result: 'accepted' }]);
});

test('ndt_record of RT with film: data.welds take their results from the film, data.filmIntervals list the intervals with their welds', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const [w1, w2] = [await a.weld(), await a.weld()];
  const { result, events } = await s.eventsOf(a, () =>
    s.one(a, 'inspector', 'select id from weld_public.record_ndt($1)', [
      JSON.stringify({
        method: 'RT',
        reportNumber: 'RT-F1',
        examinedOn: '2026-02-10',
        welds: [{ weldId: w1 }, { weldId: w2 }],
        filmIntervals: [
          { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [w1] },
          { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [w1, w2] },
        ],
      }),
    ]),
  );
  // (A rejection by RT may draw progressive selections too: only the record matters here.)
  const record = onlyEvent(
    t,
    events.filter((e) => e.type.startsWith('ndt_record.')),
    { type: 'ndt_record.created', subject: result.id, actor: a.users.inspector },
  );
  t.deepEqual(
    record.data.welds,
    sorted([w1, w2]).map((weldId) => ({
      weldId,
      result: weldId === w1 ? 'rejected' : 'accepted',
    })),
  );
  const intervals = record.data.filmIntervals as Array<Record<string, unknown>>;
  t.deepEqual(
    intervals.map(({ id: _id, ...rest }) => rest),
    [
      { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [w1] },
      { label: '1-2', result: 'accepted', defectCodes: [], weldIds: sorted([w1, w2]) },
    ],
  );
  const ids = await s.owner.query<{ id: string }>(
    `select id from weld_public.film_intervals where ndt_record_id = $1 order by label`,
    [result.id],
  );
  t.deepEqual(
    intervals.map((i) => i.id),
    ids.rows.map((r) => r.id),
  );
});

test('inspection: record_inspection -> one inspection.created with weldIds; correct_inspection -> one inspection.updated', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const inspector = a.users.inspector;
  const welds = [await a.weld(), await a.weld()];
  const created = await s.eventsOf(a, () =>
    s.one(a, 'inspector', 'select id from weld_public.record_inspection($1)', [
      JSON.stringify({
        kind: 'fit-up',
        inspectedOn: '2026-02-11',
        result: 'accepted',
        weldIds: welds,
      }),
    ]),
  );
  const id = created.result.id;
  const event = onlyEvent(t, created.events, {
    type: 'inspection.created',
    subject: id,
    actor: inspector,
  });
  t.like(event.data, {
    kind: 'fit-up',
    inspectedOn: '2026-02-11',
    result: 'accepted',
    inspectorName: 'inspector of alpha',
  });
  t.deepEqual(event.data.weldIds, sorted(welds));

  const corrected = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_inspection($1, $2, 'one weld was not fitted')`, [
        id,
        JSON.stringify({ weldIds: [welds[1]] }),
      ]),
    ),
  );
  const update = onlyEvent(t, corrected.events, {
    type: 'inspection.updated',
    subject: id,
    actor: inspector,
  });
  t.deepEqual(update.data.weldIds, [welds[1]]);
});

test('test_package: created with isoIds and weldIds -> one test_package.created listing them; update -> updated; delete -> deleted without the lists', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const welds = [await a.weld(), await a.weld()];
  const created = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      const { id } = (
        await c.query<{ id: string }>(
          `insert into weld_public.test_packages (package_number, test_medium)
           values ('TP-1', 'hydro') returning id`,
        )
      ).rows[0]!;
      await c.query(
        `insert into weld_public.test_package_isos (test_package_id, iso_id) values ($1, $2)`,
        [id, a.isoId],
      );
      await c.query(
        `insert into weld_public.test_package_welds (test_package_id, weld_id)
         select $1, unnest($2::uuid[])`,
        [id, welds],
      );
      return id;
    }),
  );
  const id = created.result;
  const event = onlyEvent(t, created.events, {
    type: 'test_package.created',
    subject: id,
    actor: engineer,
  });
  t.like(event.data, { packageNumber: 'TP-1', testMedium: 'hydro', state: 'open' });
  t.deepEqual(event.data.isoIds, [a.isoId]);
  t.deepEqual(event.data.weldIds, sorted(welds));

  const updated = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`update weld_public.test_packages set test_pressure_psig = 150.5 where id = $1`, [
        id,
      ]),
    ),
  );
  const update = onlyEvent(t, updated.events, {
    type: 'test_package.updated',
    subject: id,
    actor: engineer,
  });
  t.like(update.data, { testPressurePsig: 150.5, state: 'open' });
  t.is(update.change, null, 'no state change');

  const deleted = await s.eventsOf(a, () =>
    s.as(a, 'engineer', (c) =>
      c.query(`delete from weld_public.test_packages where id = $1`, [id]),
    ),
  );
  const gone = onlyEvent(t, deleted.events, {
    type: 'test_package.deleted',
    subject: id,
    actor: engineer,
  });
  t.like(gone.data, { testPressurePsig: 150.5, packageNumber: 'TP-1' });
  t.false('isoIds' in gone.data || 'weldIds' in gone.data, 'no membership lists');
});

test('a change made outside a request (the owner, a DBA) has no actor', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const { result: id, events } = await s.eventsOf(a, () =>
    s.insert('isos', { tenant_id: a.tenantId, iso_number: 'ISO-DBA', line_number: 'L-DBA' }),
  );
  onlyEvent(t, events, { type: 'iso.created', subject: id, actor: null });
});

//------------------------------------------------------------------------------------------------
// Several changes of one resource in one transaction

test('one transaction, one event per resource: insert+update -> created (final data), update+update -> updated (final), insert+delete -> none, update+delete -> deleted (last stored)', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const engineer = a.users.engineer;
  const iso = (n: string) =>
    s.insert('isos', { tenant_id: a.tenantId, iso_number: n, line_number: 'L-1' });
  const [kept, changed] = [await iso('ISO-KEPT'), await iso('ISO-GONE')];

  const { result, events } = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      const insert = async (n: string) =>
        (
          await c.query<{ id: string }>(
            `insert into weld_public.isos (iso_number, line_number) values ($1, 'L-1') returning id`,
            [n],
          )
        ).rows[0]!.id;
      const area = (id: string, value: string) =>
        c.query(`update weld_public.isos set area = $2 where id = $1`, [id, value]);
      const created = await insert('ISO-NEW');
      await area(created, 'first');
      await area(created, 'final');
      await area(kept, 'one');
      await area(kept, 'two');
      const fleeting = await insert('ISO-FLEETING');
      await area(fleeting, 'never seen');
      await c.query(`delete from weld_public.isos where id = $1`, [fleeting]);
      await area(changed, 'last stored');
      await c.query(`delete from weld_public.isos where id = $1`, [changed]);
      return { created, fleeting };
    }),
  );
  t.deepEqual(
    events.map((e) => [e.type, e.subject_id, e.actor_id]),
    [
      ['iso.created', result.created, engineer],
      ['iso.updated', kept, engineer],
      ['iso.deleted', changed, engineer],
    ],
  );
  t.like(events[0]!.data, { isoNumber: 'ISO-NEW', area: 'final', version: 3 });
  t.like(events[1]!.data, { area: 'two', version: 3 });
  t.like(events[2]!.data, { isoNumber: 'ISO-GONE', area: 'last stored' });
  // The fleeting ISO left no trace, not even a placeholder.
  const traces = await s.owner.query(`select id from weld_public.events where subject_id = $1`, [
    result.fleeting,
  ]);
  t.deepEqual(traces.rows, []);
});

test('a weld whose fields and status change in one transaction: one weld.status_changed with the final data', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const weldId = await a.weld();
  const { events } = await s.eventsOf(a, () =>
    s.as(a, 'admin', async (c) => {
      await c.query(`update weld_public.welds set material = 'P91' where id = $1`, [weldId]);
      await c.query(`select weld_public.change_weld_status($1, 'ACCEPTED', 'visual ok')`, [weldId]);
      await c.query(`update weld_public.welds set schedule = '80' where id = $1`, [weldId]);
    }),
  );
  const event = onlyEvent(t, events, {
    type: 'weld.status_changed',
    subject: weldId,
    actor: a.users.admin,
  });
  t.like(event.data, { material: 'P91', schedule: '80', status: 'ACCEPTED' });
  t.deepEqual(event.change, {
    from: 'PENDING',
    to: 'ACCEPTED',
    reason: 'visual ok',
    cause: 'user',
    ndtRecordId: null,
  });
});

//------------------------------------------------------------------------------------------------
// Rollbacks

test('a rolled-back transaction leaves no event; a rolled-back savepoint leaves none for its changes, and the rest of the transaction is announced as it finally is', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const before = await s.mark();
  const failure = await t.throwsAsync(
    s.as(a, 'engineer', async (c) => {
      await c.query(
        `insert into weld_public.isos (iso_number, line_number) values ('ISO-RB', 'L')`,
      );
      await c.query(`update weld_public.welders set name = 'Renamed' where id = $1`, [a.welderId]);
      throw new Error('the request failed');
    }),
  );
  t.is(failure.message, 'the request failed');
  t.deepEqual(await s.eventsSince(a, before), []);

  const other = await s.insert('isos', {
    tenant_id: a.tenantId,
    iso_number: 'ISO-OTHER',
    line_number: 'L',
  });
  const { result: created, events } = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      await c.query(`update weld_public.isos set area = 'kept' where id = $1`, [a.isoId]);
      await c.query('savepoint attempt');
      const { id } = (
        await c.query<{ id: string }>(
          `insert into weld_public.isos (iso_number, line_number) values ('ISO-SP', 'L') returning id`,
        )
      ).rows[0]!;
      await c.query(`update weld_public.isos set area = 'undone' where id = $1`, [a.isoId]);
      await c.query(`delete from weld_public.isos where id = $1`, [other]);
      await c.query('rollback to savepoint attempt');
      return id;
    }),
  );
  t.deepEqual(
    events.map((e) => [e.type, e.subject_id]),
    [['iso.updated', a.isoId]],
  );
  t.is(events[0]!.data.area, 'kept');
  // The ISO of the savepoint never existed for anyone, and the other ISO is still there.
  const rows = await s.owner.query<{ id: string }>(
    `select id from weld_public.isos where id = any($1) order by id`,
    [[created, other]],
  );
  t.deepEqual(
    rows.rows.map((r) => r.id),
    [other],
  );
});

//------------------------------------------------------------------------------------------------
// Status changes, releases and examination selections

test('weld.status_changed: change_weld_status -> change {from, to, reason, cause user}; no weld.updated besides', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const weldId = await a.weld();
  const { events } = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.change_weld_status($1, 'REJECTED', 'porosity')`, [weldId]),
    ),
  );
  const event = onlyEvent(t, events, {
    type: 'weld.status_changed',
    subject: weldId,
    actor: a.users.inspector,
  });
  t.like(event.data, { status: 'REJECTED', version: 2 });
  t.deepEqual(event.change, {
    from: 'PENDING',
    to: 'REJECTED',
    reason: 'porosity',
    cause: 'user',
    ndtRecordId: null,
  });
});

test('an NDT record rejecting one weld and accepting another: ndt_record.created and one weld.status_changed per weld, cause ndt with the record id', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const [bad, good] = [await a.weld(), await a.weld()];
  const { result, events } = await s.eventsOf(a, () =>
    s.recordNdt(a, 'UT', 'UT-7', [
      [bad, 'rejected'],
      [good, 'accepted'],
    ]),
  );
  const byType = (type: string) => events.filter((e) => e.type === type);
  // The fixture's ISO requires 5% RT, which UT meets: both welds are counted toward the lot
  // (an examination_selection each, opened as done); the rejected one's welder has no other
  // weld on the line to draw for tier 1.
  t.deepEqual(
    sorted(events.map((e) => e.type)),
    ['examination_selection.opened', 'examination_selection.opened', 'ndt_record.created',
     'weld.status_changed', 'weld.status_changed'], // prettier-ignore
    JSON.stringify(events.map((e) => e.type)),
  );
  t.true(
    byType('examination_selection.opened').every(
      (e) => e.data.tier === 'examined' && e.data.state === 'done',
    ),
  );
  t.true(events.every((e) => e.actor_id === a.users.inspector));
  const record = byType('ndt_record.created')[0]!;
  t.is(record.subject_id, result.id);
  t.like(record.data, { result: 'rejected' });
  t.deepEqual(
    record.data.welds,
    sorted([bad, good]).map((weldId) => ({
      weldId,
      result: weldId === bad ? 'rejected' : 'accepted',
    })),
  );
  const changes = Object.fromEntries(byType('weld.status_changed').map((e) => [e.subject_id, e]));
  for (const [weldId, to] of [
    [bad, 'REJECTED'],
    [good, 'ACCEPTED'],
  ] as const) {
    t.like(changes[weldId]!.change, {
      from: 'PENDING',
      to,
      cause: 'ndt',
      ndtRecordId: result.id,
    });
    t.is(changes[weldId]!.data.status, to);
  }
});

/**
 * The fixture's ISO made ready for release: an approved WPS backed by a PQR, a qualified welder,
 * three complete welds, a package of the ISO; its test then draws for RT (1 selection) and
 * examines the welds (RT, and visually for the ISO's 5% VT).
 */
async function readyWorld(s: World) {
  const { a } = s;
  const wpsId = await s.insert('wps', {
    tenant_id: a.tenantId,
    wps_number: 'WPS-R',
    process: 'SMAW',
    state: 'approved',
    p_numbers: '{1}',
    thickness_min_in: 0.1875,
    thickness_max_in: 1,
  });
  const pqrId = await s.insert('pqrs', {
    tenant_id: a.tenantId,
    pqr_number: 'PQR-R',
    process: 'SMAW',
    p_numbers: '{1}',
    thickness_tested_in: 0.5,
  });
  await s.owner.query(
    'insert into weld_public.wps_pqrs (tenant_id, wps_id, pqr_id) values ($1, $2, $3)',
    [a.tenantId, wpsId, pqrId],
  );
  await s.insert('welder_qualifications', {
    tenant_id: a.tenantId,
    welder_id: a.welderId,
    process: 'SMAW',
    qualified_on: '2026-01-10',
    coupon_diameter_in: 3,
    coupon_thickness_in: 0.5,
  });
  const welds: string[] = [];
  for (const n of ['R-1', 'R-2', 'R-3']) {
    welds.push(
      await s.insert('welds', {
        tenant_id: a.tenantId,
        iso_id: a.isoId,
        weld_number: n,
        type: 'BW',
        size: 4,
        welder_id: a.welderId,
        wps_id: wpsId,
        wall_thickness: 0.25,
        welded_on: '2026-02-01',
        base_metal_1_p_number: '1',
        base_metal_2_p_number: '1',
      }),
    );
  }
  const packageId = await s.insert('test_packages', {
    tenant_id: a.tenantId,
    package_number: 'TP-R',
    test_medium: 'hydro',
  });
  await s.owner.query(
    `insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) values ($1, $2, $3)`,
    [a.tenantId, packageId, a.isoId],
  );
  const draw = () =>
    s.as(
      a,
      'inspector',
      async (c) =>
        (
          await c.query<{ id: string; weld_id: string }>(
            `select id, weld_id from weld_public.draw_examination_selection('RT', null, $1, 1)`,
            [a.isoId],
          )
        ).rows,
    );
  return { welds, packageId, draw };
}

test('test_package.released: a ready package moved open -> released by the engineer, change {from open, to released}; released -> tested is test_package.updated with its change', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const w = await readyWorld(s);
  await w.draw();
  await s.recordNdt(
    a,
    'RT',
    'RT-ALL',
    w.welds.map((id) => [id, 'accepted']),
  );
  await s.as(a, 'inspector', (c) =>
    c.query('select weld_public.record_inspection($1)', [
      JSON.stringify({
        kind: 'visual',
        inspectedOn: '2026-02-10',
        result: 'accepted',
        weldIds: w.welds,
      }),
    ]),
  );
  const move = (state: string) =>
    s.eventsOf(a, () =>
      s.as(a, 'engineer', (c) =>
        c.query(`update weld_public.test_packages set state = $2 where id = $1`, [
          w.packageId,
          state,
        ]),
      ),
    );
  const released = onlyEvent(t, (await move('released')).events, {
    type: 'test_package.released',
    subject: w.packageId,
    actor: a.users.engineer,
  });
  t.deepEqual(released.change, { from: 'open', to: 'released' });
  t.like(released.data, { state: 'released', packageNumber: 'TP-R' });
  t.deepEqual(released.data.isoIds, [a.isoId]);

  const tested = onlyEvent(t, (await move('tested')).events, {
    type: 'test_package.updated',
    subject: w.packageId,
    actor: a.users.engineer,
  });
  t.deepEqual(tested.change, { from: 'released', to: 'tested' });
});

test('examination_selection: opened when drawn, closed when an NDT record of its method covers the weld, reopened when a correction takes the weld off', async (t) => {
  const s = await setup(t);
  const { a } = s;
  const inspector = a.users.inspector;
  const w = await readyWorld(s);
  const drawn = await s.eventsOf(a, w.draw);
  t.is(drawn.result.length, 1, 'ceil(5% x 3) = 1');
  const selection = drawn.result[0]!;
  const opened = onlyEvent(t, drawn.events, {
    type: 'examination_selection.opened',
    subject: selection.id,
    actor: inspector,
  });
  t.like(opened.data, {
    weldId: selection.weld_id,
    isoId: a.isoId,
    welderId: a.welderId,
    lineNumber: 'alpha-LINE-1',
    method: 'RT',
    tier: 'random',
    seed: 1,
    state: 'open',
    ndtRecordId: null,
    selectedBy: inspector,
  });
  t.regex(String(opened.data.selectedAt), ISO_INSTANT);

  // With RT and UT not interchangeable (a tenant setting), a UT record does not close an RT
  // selection (interchangeable, the default, it would: test/db/rules-examination.test.ts).
  await s.owner.query(
    'update weld_public.tenant_settings set volumetric_interchangeable = false where tenant_id = $1',
    [a.tenantId],
  );
  const ut = await s.eventsOf(a, () =>
    s.recordNdt(a, 'UT', 'UT-1', [[selection.weld_id, 'accepted']]),
  );
  t.false(ut.events.some((e) => e.type.startsWith('examination_selection.')));

  const rt = await s.eventsOf(a, () =>
    s.recordNdt(
      a,
      'RT',
      'RT-1',
      w.welds.map((id) => [id, 'accepted']),
    ),
  );
  const closed = rt.events.filter((e) => e.type === 'examination_selection.closed');
  t.deepEqual(
    closed.map((e) => [e.type, e.subject_id, e.actor_id]),
    [['examination_selection.closed', selection.id, inspector]],
  );
  t.like(closed[0]!.data, { state: 'done', ndtRecordId: rt.result.id });
  t.deepEqual(
    sorted(rt.events.map((e) => e.type)),
    ['examination_selection.closed', 'examination_selection.opened', 'examination_selection.opened',
     'ndt_record.created', 'weld.status_changed', 'weld.status_changed'], // prettier-ignore
    'the selected weld was ACCEPTED by UT already; the two others by this record, which counts them toward the lot (opened as done)',
  );

  const others = w.welds.filter((id) => id !== selection.weld_id);
  const corrected = await s.eventsOf(a, () =>
    s.as(a, 'inspector', (c) =>
      c.query(`select weld_public.correct_ndt_record($1, $2, 'wrong weld on the report')`, [
        rt.result.id,
        JSON.stringify({ welds: others.map((weldId) => ({ weldId, result: 'accepted' })) }),
      ]),
    ),
  );
  t.deepEqual(
    sorted(corrected.events.map((e) => `${e.type} ${e.subject_id}`)),
    sorted([
      `examination_selection.reopened ${selection.id}`,
      `ndt_record.updated ${rt.result.id}`,
    ]),
  );
  const reopened = corrected.events.find((e) => e.type === 'examination_selection.reopened')!;
  t.like(reopened.data, { state: 'open', ndtRecordId: null });
});

//------------------------------------------------------------------------------------------------
// Row security and privileges

test("row security: tenant B's viewer sees only B's events, none of A's; no API role writes events (42501)", async (t) => {
  const s = await setup(t);
  const { a, b } = s;
  const mine = await s.insert('isos', {
    tenant_id: b.tenantId,
    iso_number: 'B-2',
    line_number: 'L',
  });
  const since = await s.mark();
  await s.as(a, 'engineer', (c) =>
    c.query(`update weld_public.isos set area = 'secret' where id = $1`, [a.isoId]),
  );
  const theirs = await s.eventsSince(a, since);
  t.is(theirs.length, 1);

  const seen = await s.as(b, 'viewer', async (c) => {
    const all = await c.query<{ tenant_id: string; subject_id: string }>(
      `select tenant_id, subject_id from weld_public.events`,
    );
    const asked = await c.query(
      `select id from weld_public.events where tenant_id = $1 or id = $2`,
      [a.tenantId, theirs[0]!.id],
    );
    return { all: all.rows, asked: asked.rows };
  });
  t.true(seen.all.length >= 3, "B's own ISOs and welder");
  t.true(seen.all.every((e) => e.tenant_id === b.tenantId));
  t.true(seen.all.some((e) => e.subject_id === mine));
  t.deepEqual(seen.asked, []);

  // Nobody below viewer reads them.
  await t.throwsAsync(
    withContext(s.pool, { role: 'weld_anonymous', tenantId: a.tenantId }, (c) =>
      c.query('select id from weld_public.events'),
    ),
    { code: '42501' },
  );
  for (const role of ['viewer', 'inspector', 'engineer', 'admin'] as const) {
    for (const sql of [
      `insert into weld_public.events (type, subject_id, data) values ('iso.created', gen_random_uuid(), '{}')`,
      `update weld_public.events set data = '{}'`,
      `delete from weld_public.events`,
      `update weld_hidden.event_purges set purged_through = 0`,
    ]) {
      await t.throwsAsync(
        s.as(a, role, (c) => c.query(sql)),
        { code: '42501' },
        `${role}: ${sql}`,
      );
    }
  }
  t.deepEqual(await s.eventsSince(a, since), theirs, 'untouched');
});

//------------------------------------------------------------------------------------------------
// Order

test('order: 8 concurrent writers with interleaved commits, one reader of id > cursor: it sees every event of the tenant exactly once, in id order, one per committed change', async (t) => {
  const WRITERS = 8;
  const TRANSACTIONS = 30;
  const s = await setup(t, WRITERS + 2);
  const { a } = s;
  // Each writer has a weld and an ISO of its own, so writers never wait on each other's rows:
  // only the commits (and the outbox's lock in them) meet.
  const own: Array<{ weld: string; iso: string }> = [];
  for (let w = 0; w < WRITERS; w++) {
    own.push({
      weld: await a.weld('PENDING', `ORD-${w}`),
      iso: await s.insert('isos', {
        tenant_id: a.tenantId,
        iso_number: `ISO-ORD-${w}`,
        line_number: 'L-ORD',
      }),
    });
  }
  const start = await s.mark();
  // The subjects of every committed change, as the writers know them.
  const expected: string[] = [];

  const writer = async (w: number) => {
    const { weld, iso } = own[w]!;
    for (let n = 0; n < TRANSACTIONS; n++) {
      const plan = n % 5; // 0 weld, 1 ISO, 2 both, 3 rolled back, 4 weld twice
      const subjects = [[weld], [iso], [weld, iso], [], [weld]][plan]!;
      const work = s.as(a, 'engineer', async (c) => {
        if (plan !== 1) {
          await c.query(`update weld_public.welds set material = $2 where id = $1`, [
            weld,
            `m-${w}-${n}`,
          ]);
        }
        if (plan === 1 || plan === 2) {
          await c.query(`update weld_public.isos set area = $2 where id = $1`, [
            iso,
            `a-${w}-${n}`,
          ]);
        }
        if (plan === 4) {
          await c.query(`update weld_public.welds set schedule = '40' where id = $1`, [weld]);
        }
        // Some transactions stay open a moment after their changes, so that the writers'
        // commits interleave in orders unlike their starts. (Not a wait for an order: the
        // assertions below hold for any interleaving.)
        if ((n + w) % 3 === 0) await c.query('select pg_sleep(0.003)');
        if (plan === 3) throw new Error('rolled back on purpose');
      });
      if (plan === 3) {
        await t.throwsAsync(work, { message: 'rolled back on purpose' });
      } else {
        await work;
        expected.push(...subjects);
      }
    }
  };

  let writing = true;
  const seen: Array<{ id: string; subject_id: string }> = [];
  let reads = 0;
  const read = async () => {
    const cursor = seen.at(-1)?.id ?? start;
    const rows = await s.as(
      a,
      'viewer',
      async (c) =>
        (
          await c.query<{ id: string; subject_id: string }>(
            // (e.id: ordered as a number, not as the text it is read as)
            `select e.id::text, e.subject_id from weld_public.events e where e.id > $1 order by e.id`,
            [cursor],
          )
        ).rows,
    );
    reads++;
    seen.push(...rows);
  };
  const reader = async () => {
    while (writing) await read();
    await read(); // after the last commit: whatever the loop had not seen yet
  };

  const readerDone = reader();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  writing = false;
  await readerDone;
  t.log(`${reads} reads, ${seen.length} events`);

  const ids = seen.map((e) => BigInt(e.id));
  t.true(
    ids.every((id, i) => i === 0 || id > ids[i - 1]!),
    'strictly increasing: no event twice, none out of order',
  );
  const all = await s.eventsSince(a, start);
  t.deepEqual(
    seen.map((e) => e.id),
    all.map((e) => e.id),
    'every event of the tenant, none skipped',
  );
  // Per 5 transactions: 1 + 1 + 2 + 0 (rolled back) + 1 (two changes of one weld) events.
  t.is(expected.length, WRITERS * TRANSACTIONS);
  t.is(seen.length, expected.length);
  t.deepEqual(sorted(seen.map((e) => e.subject_id)), sorted(expected));
});

//------------------------------------------------------------------------------------------------
// Wake-ups

test('NOTIFY weld_events: "<tenant> <type>" after a commit that wrote events, once per type per transaction, and nothing for a rolled-back one (notifications arrive in commit order)', async (t) => {
  const s = await setup(t);
  const { a, b } = s;
  const listener = await connectClient(s.target.authenticatorUrl);
  t.teardown(() => listener.end());
  const received: string[] = [];
  let arrived: (() => void) | undefined;
  listener.on('notification', (n) => {
    if (n.channel === 'weld_events') received.push(n.payload ?? '');
    arrived?.();
  });
  await listener.query('listen weld_events');
  /** Resolves once `count` notifications have arrived in all. */
  const until = (count: number) =>
    new Promise<void>((resolve) => {
      arrived = () => received.length >= count && resolve();
      arrived();
    });
  const commitIn = (fx: TenantFixture) =>
    s.as(fx, 'engineer', (c) =>
      c.query(`update weld_public.isos set area = 'x' || now() where id = $1`, [fx.isoId]),
    );

  await t.throwsAsync(
    s.as(a, 'engineer', async (c) => {
      await c.query(`update weld_public.isos set area = 'undone' where id = $1`, [a.isoId]);
      throw new Error('rolled back');
    }),
  );
  // B's commit comes after A's rollback: had the rollback notified, that would arrive first.
  await commitIn(b);
  await until(1);
  t.deepEqual(received, [`${b.tenantId} iso.updated`]);

  // Four changes of three types in one transaction: one notification per type.
  await s.as(a, 'engineer', async (c) => {
    await c.query(`update weld_public.isos set area = 'y' where id = $1`, [a.isoId]);
    await c.query(`update weld_public.welders set name = 'Z' where id = $1`, [a.welderId]);
    await c.query(`insert into weld_public.isos (iso_number, line_number) values ('ISO-N', 'L')`);
    await c.query(`insert into weld_public.isos (iso_number, line_number) values ('ISO-O', 'L')`);
  });
  await commitIn(b);
  await until(5);
  t.deepEqual(received.slice(1, 4).sort(), [
    `${a.tenantId} iso.created`,
    `${a.tenantId} iso.updated`,
    `${a.tenantId} welder.updated`,
  ]);
  t.deepEqual(received.slice(4), [`${b.tenantId} iso.updated`], 'in commit order');
});

//------------------------------------------------------------------------------------------------
// Retention

test('purge_events(keep_days) as the authenticator: deletes only what is older, returns the counts, records purged_through per tenant; keep_days below 1 is refused (22023)', async (t) => {
  const s = await setup(t);
  const { a, b, owner, pool } = s;
  // Tenant A: the fixture's events and three more, of which the fixture's and two are aged 40
  // days, one 20 days; tenant B's are all fresh.
  for (const n of ['P-1', 'P-2', 'P-3']) {
    await s.insert('isos', { tenant_id: a.tenantId, iso_number: n, line_number: 'L' });
  }
  const ofA = await s.eventsSince(a, '0');
  const ofB = await s.eventsSince(b, '0');
  t.true(ofA.length >= 5 && ofB.length >= 2);
  const aged = ofA.slice(0, -1).map((e) => e.id);
  const recent = ofA.at(-1)!.id;
  await owner.query(
    `update weld_public.events set occurred_at = now() - interval '40 days' where id = any($1)`,
    [aged],
  );
  await owner.query(
    `update weld_public.events set occurred_at = now() - interval '20 days' where id = $1`,
    [recent],
  );

  for (const days of [0, -1, null]) {
    await t.throwsAsync(pool.query('select * from weld_hidden.purge_events($1)', [days]), {
      code: '22023',
    });
  }
  const purged = await pool.query('select * from weld_hidden.purge_events(30)');
  t.deepEqual(purged.rows, [{ deleted_events: String(aged.length), deleted_deliveries: '0' }]);
  t.deepEqual(
    (await s.eventsSince(a, '0')).map((e) => e.id),
    [recent],
  );
  t.is((await s.eventsSince(b, '0')).length, ofB.length, "B's are untouched");
  const marks = await owner.query(
    `select tenant_id, purged_through::text from weld_hidden.event_purges`,
  );
  t.deepEqual(marks.rows, [{ tenant_id: a.tenantId, purged_through: aged.at(-1) }]);
  // Each tenant's viewer reads its own watermark (the REST feed answers 410 below it).
  t.deepEqual(
    (
      await s.as(a, 'viewer', (c) =>
        c.query(`select purged_through::text from weld_hidden.event_purges`),
      )
    ).rows,
    [{ purged_through: aged.at(-1) }],
  );
  t.deepEqual(
    (await s.as(b, 'viewer', (c) => c.query(`select * from weld_hidden.event_purges`))).rows,
    [],
  );

  // Again at once: nothing more to delete, and the watermark stays.
  const again = await pool.query('select * from weld_hidden.purge_events(30)');
  t.deepEqual(again.rows, [{ deleted_events: '0', deleted_deliveries: '0' }]);
  const still = await owner.query(`select purged_through::text from weld_hidden.event_purges`);
  t.deepEqual(still.rows, [{ purged_through: aged.at(-1) }]);
  // A request role may not purge.
  await t.throwsAsync(
    s.as(a, 'admin', (c) => c.query('select * from weld_hidden.purge_events(1)')),
    { code: '42501' },
  );
});

//------------------------------------------------------------------------------------------------
// Suppression

test("weld.suppress_events = 'on' by the owner leaves its bulk load out of the feed; set by a request role it changes nothing", async (t) => {
  const s = await setup(t);
  const { a, owner } = s;
  const bulk = await s.eventsOf(a, async () => {
    await owner.query('begin');
    try {
      await owner.query(`select set_config('weld.suppress_events', 'on', true)`);
      await owner.query(
        `insert into weld_public.isos (tenant_id, iso_number, line_number)
         select $1, 'BULK-' || n, 'L-BULK' from generate_series(1, 20) n`,
        [a.tenantId],
      );
      await owner.query(`update weld_public.welders set name = 'bulk' where id = $1`, [a.welderId]);
      await owner.query('commit');
    } catch (error) {
      await owner.query('rollback');
      throw error;
    }
  });
  t.deepEqual(bulk.events, []);
  const loaded = await owner.query(
    `select count(*)::int as n from weld_public.isos where line_number = 'L-BULK'`,
  );
  t.is(loaded.rows[0].n, 20, 'the load itself happened');

  const request = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      await c.query(`select set_config('weld.suppress_events', 'on', true)`);
      return (
        await c.query<{ id: string }>(
          `insert into weld_public.isos (iso_number, line_number) values ('ISO-REQ', 'L') returning id`,
        )
      ).rows[0]!.id;
    }),
  );
  onlyEvent(t, request.events, {
    type: 'iso.created',
    subject: request.result,
    actor: a.users.engineer,
  });
});

//------------------------------------------------------------------------------------------------
// What the outbox must hold against, beyond the happy paths

/** An ISO created by the engineer, and a reader of the events of that ISO, in id order. */
async function isoWithHistory(s: World) {
  const { result } = await s.eventsOf(s.a, () =>
    s.one(
      s.a,
      'engineer',
      `insert into weld_public.isos (iso_number, line_number) values ('ISO-F', 'L') returning id`,
    ),
  );
  const history = async () =>
    (
      await s.owner.query<{ id: string; type: string }>(
        `select e.id::text, e.type from weld_public.events e where e.subject_id = $1 order by e.id`,
        [result.id],
      )
    ).rows;
  return { id: result.id, history };
}

/** `sql` (with the ISO's id as $1) as the engineer, after setting weld.first_event_id to 1. */
const forgingFirstEventId = (s: World, sql: string, id: string) =>
  s.eventsOf(s.a, () =>
    s.as(s.a, 'engineer', async (c) => {
      await c.query(`select set_config('weld.first_event_id', '1', true)`);
      await c.query(sql, [id]);
    }),
  );

// The outbox finds "this transaction's event for the resource" through the transaction-local
// setting weld.first_event_id. Any role may set a custom setting (a request role may set
// weld.suppress_events, which is why that one is honoured for the owner only), so this one must
// not let a request hide its change, nor delete or rewrite events already committed (and maybe
// already read or delivered).

test('a request role that sets weld.first_event_id still has its change announced', async (t) => {
  const s = await setup(t);
  const iso = await isoWithHistory(s);
  const { events } = await forgingFirstEventId(
    s,
    `update weld_public.isos set area = 'quiet' where id = $1`,
    iso.id,
  );
  onlyEvent(t, events, { type: 'iso.updated', subject: iso.id, actor: s.a.users.engineer });
});

test('a request role that sets weld.first_event_id and deletes a resource does not erase its earlier, committed events', async (t) => {
  const s = await setup(t);
  const iso = await isoWithHistory(s);
  const before = await iso.history();
  t.deepEqual(
    before.map((e) => e.type),
    ['iso.created'],
  );
  const { events } = await forgingFirstEventId(
    s,
    `delete from weld_public.isos where id = $1`,
    iso.id,
  );
  t.deepEqual((await iso.history()).slice(0, 1), before, 'the committed iso.created is kept');
  onlyEvent(t, events, { type: 'iso.deleted', subject: iso.id, actor: s.a.users.engineer });
});

test("a weld status set directly by a DBA is announced with its own from/to, never with an earlier change's reason and cause", async (t) => {
  // The outbox takes reason and cause from the weld's newest history row. A DBA's UPDATE of
  // welds.status writes no history row, so that row is another transaction's (or there is none).
  const s = await setup(t);
  const { a } = s;
  const weldId = await a.weld();
  await s.as(a, 'inspector', (c) =>
    c.query(`select weld_public.change_weld_status($1, 'ACCEPTED', 'radiograph clean')`, [weldId]),
  );
  const { events } = await s.eventsOf(a, () =>
    s.owner.query(`update weld_public.welds set status = 'VOIDED' where id = $1`, [weldId]),
  );
  const event = onlyEvent(t, events, { type: 'weld.status_changed', subject: weldId, actor: null });
  t.like(event.change, { from: 'ACCEPTED', to: 'VOIDED' });
  t.not(event.change?.reason, 'radiograph clean', "the inspector's reason is not the DBA's");
  t.not(event.change?.cause, 'user', 'no user made this change');

  // A weld without any history: the change still says from and to.
  const fresh = await a.weld();
  const first = await s.eventsOf(a, () =>
    s.owner.query(`update weld_public.welds set status = 'ACCEPTED' where id = $1`, [fresh]),
  );
  const firstEvent = onlyEvent(t, first.events, {
    type: 'weld.status_changed',
    subject: fresh,
    actor: null,
  });
  t.like(firstEvent.change, { from: 'PENDING', to: 'ACCEPTED' });
});

test('two resources of different kinds that share an id, changed in one transaction, are both announced', async (t) => {
  // Ids are unique per table, not across tables: an import that keeps its own ids (as the code
  // rules' tests build worlds with fixed ids) may give an ISO and a welder the same one. The
  // once-per-transaction check must tell them apart by kind, not by id alone.
  const s = await setup(t);
  const { a, owner } = s;
  const id = '00000000-0000-4000-8000-000000000001';
  const { events } = await s.eventsOf(a, async () => {
    await owner.query('begin');
    try {
      await owner.query(
        `insert into weld_public.isos (tenant_id, id, iso_number, line_number) values ($1, $2, 'ISO-SAME', 'L')`,
        [a.tenantId, id],
      );
      await owner.query(
        `insert into weld_public.welders (tenant_id, id, stamp, name) values ($1, $2, 'SAME', 'Same')`,
        [a.tenantId, id],
      );
      await owner.query('commit');
    } catch (error) {
      await owner.query('rollback');
      throw error;
    }
  });
  t.deepEqual(sorted(events.map((e) => `${e.type} ${e.subject_id}`)), [
    `iso.created ${id}`,
    `welder.created ${id}`,
  ]);
});

test('SET CONSTRAINTS ALL IMMEDIATE in a request does not freeze its event before the end: the event shows the resource at commit', async (t) => {
  // The outbox triggers are deferrable constraint triggers, so any role may fire them early;
  // the event must still show the resource as it is at commit, as the contract says.
  const s = await setup(t);
  const { a } = s;
  const { events } = await s.eventsOf(a, () =>
    s.as(a, 'engineer', async (c) => {
      await c.query(`update weld_public.isos set area = 'early' where id = $1`, [a.isoId]);
      await c.query('set constraints all immediate');
      await c.query(`update weld_public.isos set area = 'at commit' where id = $1`, [a.isoId]);
    }),
  );
  const event = onlyEvent(t, events, {
    type: 'iso.updated',
    subject: a.isoId,
    actor: a.users.engineer,
  });
  t.is(event.data.area, 'at commit');
});

test('deleting a tenant with resources and events works, announces nothing and leaves no event behind', async (t) => {
  // The tenant's rows go by cascade, each firing the outbox at commit: for a tenant that is gone
  // the outbox must write nothing (an event row would refer to no tenant and fail the commit).
  const s = await setup(t);
  const { a, b } = s;
  // (Welds hold their ISO by RESTRICT, so only a tenant without welds can go: its ISO and welder.)
  await s.one(a, 'engineer', `update weld_public.isos set area = 'gone soon' returning id`);
  t.true((await s.eventsSince(a, '0')).length >= 3, 'the tenant has events');
  const before = await s.mark();
  await s.owner.query('delete from weld_public.tenants where id = $1', [a.tenantId]);
  const left = await s.owner.query<{ n: number }>(
    'select count(*)::int as n from weld_public.events where tenant_id = $1',
    [a.tenantId],
  );
  t.is(left.rows[0]!.n, 0);
  t.deepEqual(await s.eventsSince(b, before), [], "the other tenant's feed is untouched");
  t.true((await s.eventsSince(b, '0')).length > 0, 'and keeps its own events');
});
