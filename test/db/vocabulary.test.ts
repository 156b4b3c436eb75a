// The TypeScript vocabularies (db/vocabulary.ts) equal what the database says: its enums, the
// CHECK constraints that list values, and the request roles with their membership chain.
import test from 'ava';
import {
  EXAMINATION_RESULTS,
  FLUID_SERVICES,
  INSPECTION_KINDS,
  NDT_METHODS,
  REQUEST_ROLES,
  TEST_MEDIA,
  TEST_PACKAGE_STATES,
  USER_ROLES,
  WELD_STATUSES,
  WELD_TYPES,
  WPS_STATES,
} from '../../db/vocabulary.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';

test('enums, checked value lists and request roles match the database', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const enumValues = async (name: string) =>
    (
      await superuserQuery<{ label: string }>(
        rootUrl,
        `select e.enumlabel as label from pg_enum e
          where e.enumtypid = $1::regtype order by e.enumsortorder`,
        [name],
      )
    ).map((r) => r.label);
  t.deepEqual(await enumValues('weld_public.weld_status'), [...WELD_STATUSES]);
  t.deepEqual(await enumValues('weld_public.user_role'), [...USER_ROLES]);

  /** The quoted values of the CHECK constraint on a column, in the order the SQL lists them. */
  const checkedValues = async (table: string, column: string) => {
    const rows = await superuserQuery<{ def: string }>(
      rootUrl,
      `select pg_get_constraintdef(c.oid) as def from pg_constraint c
         join pg_attribute a on a.attrelid = c.conrelid and a.attnum = any(c.conkey)
        where c.conrelid = $1::regclass and c.contype = 'c' and a.attname = $2`,
      [table, column],
    );
    t.is(rows.length, 1, `one CHECK on ${table}.${column}`);
    return [...rows[0]!.def.matchAll(/'([^']+)'::text/g)].map((m) => m[1]);
  };
  t.deepEqual(await checkedValues('weld_public.welds', 'type'), [...WELD_TYPES]);
  t.deepEqual(await checkedValues('weld_public.isos', 'fluid_service'), [...FLUID_SERVICES]);
  t.deepEqual(await checkedValues('weld_public.wps', 'state'), [...WPS_STATES]);
  t.deepEqual(await checkedValues('weld_public.ndt_records', 'method'), [...NDT_METHODS]);
  t.deepEqual(await checkedValues('weld_public.ndt_records', 'result'), [...EXAMINATION_RESULTS]);
  t.deepEqual(await checkedValues('weld_public.inspections', 'kind'), [...INSPECTION_KINDS]);
  t.deepEqual(await checkedValues('weld_public.test_packages', 'test_medium'), [...TEST_MEDIA]);
  t.deepEqual(await checkedValues('weld_public.test_packages', 'state'), [...TEST_PACKAGE_STATES]);

  // Each request role exists, may not log in, and is a direct member of the one before it.
  const roles = await superuserQuery<{ name: string; login: boolean; parent: string | null }>(
    rootUrl,
    `select r.rolname as name, r.rolcanlogin as login,
            (select p.rolname from pg_auth_members m join pg_roles p on p.oid = m.roleid
              where m.member = r.oid and p.rolname like 'weld\\_%') as parent
       from pg_roles r where r.rolname = any($1) order by r.rolname`,
    [REQUEST_ROLES],
  );
  t.is(roles.length, REQUEST_ROLES.length);
  for (const [index, name] of REQUEST_ROLES.entries()) {
    const role = roles.find((r) => r.name === name)!;
    t.false(role.login, name);
    t.is(role.parent, index === 0 ? null : REQUEST_ROLES[index - 1]!, name);
  }
});
