// The migration that made repairs records and acceptances name their basis, run on a database
// that already holds welds as the rules before it left them: repairs known only from the status
// history, acceptances by an NDT result with no basis recorded, a repaired weld accepted by hand
// while its RT was owed, a category D ISO with the old 5% RT. Run again on that data (it is
// idempotent, as every migration here), it must not trip over its own writes (PostgreSQL refuses
// to alter a table whose rows have queued deferred triggers) and must leave each as the rules
// now say.
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { MIGRATIONS_DIR } from '../../db/database.ts';
import { rulesWorld } from '../helpers/rules.ts';

const MIGRATION = fs
  .readdirSync(path.join(MIGRATIONS_DIR, 'committed'))
  .map((name) => path.join(MIGRATIONS_DIR, 'committed', name))
  .find((file) =>
    fs.readFileSync(file, 'utf8').includes('create table if not exists weld_public.weld_repairs'),
  );

test('on welds written before it: repairs from the history, NDT acceptances with their record, an acceptance made while an RT was owed undone, category D without RT', async (t) => {
  t.truthy(MIGRATION, 'a committed migration creates weld_public.weld_repairs');
  const w = await rulesWorld(t);
  const fx = w.a;
  const wpsId = await w.wps(fx, 'WPS-1', 'SMAW');
  const isoId = await w.iso(fx, 'ISO-1', 'L-1');
  const categoryD = await w.iso(fx, 'ISO-D', 'L-D', { fluid_service: 'category_d', rt_percent: 5 });
  const normal = await w.iso(fx, 'ISO-N', 'L-N', { rt_percent: 5 });
  const welderId = await w.qualifiedWelder(fx, 'W1', wpsId);
  const [byNdt, repaired, other] = await w.weldsOf(fx, isoId, welderId, 'N', 3, { wps_id: wpsId });

  // N-01 accepted by an RT; N-02 rejected by it, repaired, re-welded, then accepted by hand with
  // its RT owed; N-03 untouched. Then the state as the rules before left it, by the owner.
  const rt = await w.recordNdt(fx, 'RT', 'RT-1', [
    [byNdt!, 'accepted'],
    [repaired!, 'rejected'],
  ]);
  await w.repair(fx, repaired!, { weldedOn: '2026-02-12', welderId });
  const { rows: history } = await w.dba(
    `select changed_at from weld_public.weld_status_history
      where weld_id = $1 and from_status = 'REJECTED' and to_status = 'REPAIR'`,
    [repaired!],
  );
  await w.dba(
    `with moved as (update weld_public.welds set status = 'ACCEPTED' where id = $1 returning *)
     insert into weld_public.weld_status_history
       (tenant_id, weld_id, from_status, to_status, changed_by, repair_cycle, cause)
     select tenant_id, id, 'PENDING', 'ACCEPTED', null, repair_cycle, 'user' from moved`,
    [repaired!],
  );
  await w.dba('update weld_public.welds set acceptance_ndt_record_id = null where id = $1', [
    byNdt!,
  ]);
  await w.dba('delete from weld_public.weld_repairs where tenant_id = $1', [fx.tenantId]);

  await w.dba(fs.readFileSync(MIGRATION!, 'utf8'));

  const { rows: repairs } = await w.dba(
    `select weld_id, repair_cycle, released_at, rewelded_at is not null as rewelded, welded_on
       from weld_public.weld_repairs where tenant_id = $1`,
    [fx.tenantId],
  );
  t.deepEqual(repairs, [
    {
      weld_id: repaired!,
      repair_cycle: 1,
      released_at: history[0]!.changed_at,
      rewelded: true,
      welded_on: null, // the history never held it: DATA_MISSING says so
    },
  ]);
  const { rows: welds } = await w.dba(
    `select weld_number, status, acceptance_ndt_record_id from weld_public.welds
      where tenant_id = $1 order by weld_number`,
    [fx.tenantId],
  );
  t.deepEqual(welds, [
    { weld_number: 'N-01', status: 'ACCEPTED', acceptance_ndt_record_id: rt },
    { weld_number: 'N-02', status: 'PENDING', acceptance_ndt_record_id: null },
    { weld_number: 'N-03', status: 'PENDING', acceptance_ndt_record_id: null },
  ]);
  t.truthy(other);
  const { rows: undone } = await w.dba(
    `select reason, cause from weld_public.weld_status_history
      where weld_id = $1 order by id desc limit 1`,
    [repaired!],
  );
  t.is(undone[0]!.cause, 'system');
  t.regex(
    undone[0]!.reason,
    /^not accepted while repair 1, welded on \d{4}-\d{2}-\d{2}, owes a new RT/,
  );
  const { rows: isos } = await w.dba(
    'select id, rt_percent::float8 as rt_percent from weld_public.isos where id = any($1) order by iso_number',
    [[categoryD, normal]],
  );
  t.deepEqual(isos, [
    { id: categoryD, rt_percent: 0 },
    { id: normal, rt_percent: 5 },
  ]);
  // Every tenant has both editions' rows, once.
  const { rows: editions } = await w.dba(
    `select edition, count(*)::int as n from weld_public.heat_treatment_rules
      where tenant_id = $1 and p_number = '1' group by edition order by edition`,
    [fx.tenantId],
  );
  t.deepEqual(editions, [
    { edition: 'B31.3-2012', n: 1 },
    { edition: 'B31.3-2022', n: 1 },
  ]);
});
