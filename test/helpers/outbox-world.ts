// The world of the tests of events in SQL (test/db/events-*.test.ts): two tenants built as the
// owner (a DBA), changes made as the request roles the API uses, and readers of the events a
// change leaves in the transactional outbox of migration 000010.
import type { ExecutionContext } from 'ava';
import pg from 'pg';
import { withContext } from '../../db/database.ts';
import { twoTenants, type TenantFixture } from './fixtures.ts';

export type Role = 'viewer' | 'inspector' | 'engineer' | 'admin';

export interface Event {
  id: string;
  type: string;
  subject_id: string;
  actor_id: string | null;
  data: Record<string, unknown>;
  change: Record<string, unknown> | null;
}

export const sorted = (items: string[]) => [...items].sort();
/** A timestamp as JavaScript's Date renders it, the contract's form. */
export const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export async function setup(t: ExecutionContext, poolSize = 4) {
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
  /** Gives committed events their ids (the relay, as the server runs it; none runs here). */
  const place = () => owner.query('select weld_hidden.place_events()');
  /** The newest event id of every tenant, all committed events placed: what happens next has higher ids. */
  const mark = async () => {
    await place();
    return (
      await owner.query<{ id: string }>(
        `select coalesce(max(id), 0)::text as id from weld_public.events`,
      )
    ).rows[0]!.id;
  };
  /** The tenant's events after `since`, in id order, as the owner sees them (all of them). */
  const eventsSince = async (fx: TenantFixture, since: string) => {
    await place();
    return (
      await owner.query<Event>(
        `select e.id::text, e.type, e.subject_id, e.actor_id, e.data, e.change
           from weld_public.events e
          where e.tenant_id = $1 and e.id > $2 order by e.id`,
        [fx.tenantId, since],
      )
    ).rows;
  };
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
  return { ...world, as, one, insert, place, mark, eventsSince, eventsOf, recordNdt };
}
export type World = Awaited<ReturnType<typeof setup>>;

/**
 * The one event of `events`, of the given type, subject and actor, whose data is a resource as
 * REST shows it: camelCase keys, no tenantId, its own id, instants in the contract's form.
 */
export function onlyEvent(
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
export async function instants(owner: pg.Client, table: string, id: string) {
  const { rows } = await owner.query<{ created_at: Date; updated_at: Date }>(
    `select created_at, updated_at from weld_public.${table} where id = $1`,
    [id],
  );
  return {
    createdAt: rows[0]!.created_at.toISOString(),
    updatedAt: rows[0]!.updated_at.toISOString(),
  };
}
