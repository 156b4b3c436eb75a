// The TypeScript vocabularies (db/vocabulary.ts) equal what the database says: its enums, the
// CHECK constraints that list values, and the request roles with their membership chain.
import { readFile } from 'node:fs/promises';
import test from 'ava';
import {
  EVENT_RESOURCES,
  EVENT_TYPES,
  EXAMINATION_LOTS,
  EXAMINATION_RESULTS,
  FLUID_SERVICES,
  INSPECTION_KINDS,
  NDT_METHODS,
  OAUTH_SCOPES,
  CALENDAR,
  CODE_EDITIONS,
  PWHT_HEATINGS,
  QUALIFICATION_JOINTS,
  QUALIFICATION_RANGE_DIMENSIONS,
  QUALIFICATION_STATES,
  READINESS_CODES,
  REQUEST_ROLES,
  SELECTION_STATES,
  SELECTION_TIERS,
  TEST_MEDIA,
  TEST_PACKAGE_STATES,
  PUNCH_CATEGORIES,
  ATTACHMENT_TYPES,
  USER_ROLES,
  WELD_CHECK_CODES,
  WELD_CHECK_MODES,
  WELD_STATUSES,
  WELD_TYPES,
  WELDING_POSITIONS,
  WELDING_PROCESSES,
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

  /**
   * The quoted values of the CHECK constraint on a column (on that column alone: a CHECK relating
   * it to other columns is not its list), in the order the SQL lists them.
   */
  const checkedValues = async (table: string, column: string) => {
    const rows = await superuserQuery<{ def: string }>(
      rootUrl,
      `select pg_get_constraintdef(c.oid) as def from pg_constraint c
         join pg_attribute a on a.attrelid = c.conrelid and c.conkey = array[a.attnum]
        where c.conrelid = $1::regclass and c.contype = 'c' and a.attname = $2`,
      [table, column],
    );
    t.is(rows.length, 1, `one CHECK on ${table}.${column}`);
    return [...rows[0]!.def.matchAll(/'([^']+)'::text/g)].map((m) => m[1]);
  };
  t.deepEqual(await checkedValues('weld_public.welds', 'type'), [...WELD_TYPES]);
  // The OAuth2 scopes a client may be given (000046), the list the token's claim is checked by.
  const [scopes] = await superuserQuery<{ def: string }>(
    rootUrl,
    `select pg_get_constraintdef(oid) as def from pg_constraint
      where conname = 'oauth_clients_scopes_known'`,
  );
  t.deepEqual(/'\{([^}]*)\}'::text\[\]/.exec(scopes!.def)?.[1]?.split(','), [...OAUTH_SCOPES]);
  // The web app keeps its own copy (app/ imports nothing outside itself): the same list.
  const appModel = await readFile(new URL('../../app/src/model.ts', import.meta.url), 'utf8');
  t.deepEqual(
    [.../export const WELD_TYPES = \[([^\]]*)\]/.exec(appModel)![1]!.matchAll(/'([A-Z]+)'/g)].map(
      (m) => m[1],
    ),
    [...WELD_TYPES],
  );
  t.deepEqual(await checkedValues('weld_public.isos', 'fluid_service'), [...FLUID_SERVICES]);
  t.deepEqual(await checkedValues('weld_public.wps', 'state'), [...WPS_STATES]);
  t.deepEqual(await checkedValues('weld_public.ndt_records', 'method'), [...NDT_METHODS]);
  t.deepEqual(await checkedValues('weld_public.ndt_records', 'result'), [...EXAMINATION_RESULTS]);
  t.deepEqual(await checkedValues('weld_public.inspections', 'kind'), [...INSPECTION_KINDS]);
  t.deepEqual(await checkedValues('weld_public.test_packages', 'test_medium'), [...TEST_MEDIA]);
  t.deepEqual(await checkedValues('weld_public.test_packages', 'state'), [...TEST_PACKAGE_STATES]);
  t.deepEqual(await checkedValues('weld_public.punch_items', 'category'), [...PUNCH_CATEGORIES]);
  t.deepEqual(await checkedValues('weld_public.attachments', 'content_type'), [
    ...ATTACHMENT_TYPES,
  ]);
  t.deepEqual(await checkedValues('weld_hidden.attachment_files', 'content_type'), [
    ...ATTACHMENT_TYPES,
  ]);
  // The code rules (migrations 000009, 000017): selections, the tenant's settings, the rule tables.
  t.deepEqual(await checkedValues('weld_public.examination_selections', 'tier'), [
    ...SELECTION_TIERS,
  ]);
  t.deepEqual(await checkedValues('weld_public.examination_selections', 'method'), [
    ...NDT_METHODS,
  ]);
  t.deepEqual(await checkedValues('weld_public.examination_rules', 'method'), [...NDT_METHODS]);
  t.deepEqual(await checkedValues('weld_public.examination_rules', 'fluid_service'), [
    ...FLUID_SERVICES,
  ]);
  t.deepEqual(await checkedValues('weld_public.examination_rules', 'weld_type'), [...WELD_TYPES]);
  t.deepEqual(await checkedValues('weld_public.welder_qualifications', 'joint'), [
    ...QUALIFICATION_JOINTS,
  ]);
  t.deepEqual(await checkedValues('weld_public.welder_qualifications', 'positions'), [
    ...WELDING_POSITIONS,
  ]);
  t.deepEqual(await checkedValues('weld_public.welder_continuity', 'process'), [
    ...WELDING_PROCESSES,
  ]);
  t.deepEqual(await checkedValues('weld_public.tenant_settings', 'examination_lot'), [
    ...EXAMINATION_LOTS,
  ]);
  // The code editions: the setting, and every table of rows by edition.
  for (const [table, column] of [
    ['weld_public.tenant_settings', 'code_edition'],
    ['weld_public.heat_treatment_rules', 'edition'],
    ['weld_public.preheat_rules', 'edition'],
    ['weld_public.heat_treatment_exemptions', 'edition'],
  ] as const) {
    t.deepEqual(await checkedValues(table, column), [...CODE_EDITIONS], `${table}.${column}`);
  }
  t.deepEqual(await checkedValues('weld_public.pwht_records', 'heating'), [...PWHT_HEATINGS]);
  t.deepEqual(await checkedValues('weld_public.tenant_settings', 'weld_checks'), [
    ...WELD_CHECK_MODES,
  ]);
  // The calendar every date column allows (000017).
  const [calendar] = await superuserQuery<{ def: string }>(
    rootUrl,
    `select pg_get_constraintdef(oid) as def from pg_constraint where conname = 'welds_welded_on_calendar'`,
  );
  t.deepEqual(
    [...calendar!.def.matchAll(/'([0-9-]+)'::date/g)].map((m) => m[1]),
    [CALENDAR.first, CALENDAR.last],
  );
  t.deepEqual(await checkedValues('weld_public.qualification_range_rules', 'dimension'), [
    ...QUALIFICATION_RANGE_DIMENSIONS,
  ]);

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

test('the values the code rules compute are spelled as their SQL functions spell them', async (t) => {
  // No CHECK holds these (they are computed), so each value must at least occur, quoted, in the
  // source of a function of the service's schemas: a value renamed on one side only fails here.
  const { rootUrl } = await migratedDatabase(t);
  const sources = (
    await superuserQuery<{ src: string }>(
      rootUrl,
      `select p.prosrc as src from pg_proc p
        where p.pronamespace::regnamespace::text like 'weld\\_%'`,
    )
  )
    .map((r) => r.src)
    .join('\n');
  // The event types besides each resource's created, updated and deleted (next test).
  const OTHER_EVENT_TYPES = EVENT_TYPES.filter(
    (type) =>
      !EVENT_RESOURCES.some(
        (kind) =>
          /^(created|updated|deleted)$/.test(type.slice(kind.length + 1)) &&
          type.startsWith(`${kind}.`),
      ),
  );
  for (const [name, values] of Object.entries({
    SELECTION_STATES,
    QUALIFICATION_STATES,
    WELD_CHECK_CODES,
    READINESS_CODES,
    OTHER_EVENT_TYPES,
  })) {
    for (const value of values) t.true(sources.includes(`'${value}'`), `${name}: '${value}'`);
  }
});

test('the event resources are the kinds the outbox triggers are created with', async (t) => {
  // weld_private.tg__outbox(kind) writes <kind>.created, .updated and .deleted for its table.
  const { rootUrl } = await migratedDatabase(t);
  const kinds = await superuserQuery<{ kind: string }>(
    rootUrl,
    `select distinct split_part(encode(t.tgargs, 'escape'), '\\000', 1) as kind
       from pg_trigger t where t.tgfoid = 'weld_private.tg__outbox'::regproc order by 1`,
  );
  t.deepEqual(
    kinds.map((k) => k.kind),
    [...EVENT_RESOURCES].sort(),
  );
});
