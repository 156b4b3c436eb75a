// Function privileges, from the catalog and from the attacker's side: no function of the service's
// schemas is executable by PUBLIC, each is granted to exactly the roles that call it, SECURITY
// DEFINER functions pin their search_path, weld_rules cannot create anything, and no request
// role can reach the server's own functions (signing keys, sessions).
import test, { type ExecutionContext } from 'ava';
import { asAuthenticator, withContext } from '../../db/database.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { twoTenants } from '../helpers/fixtures.ts';

const SCHEMAS = `('weld_public', 'weld_hidden', 'weld_private')`;

/** The functions of the service's schemas, extension members aside. */
const PROJECT_FUNCTIONS = `
  select p.oid, p.proname, p.proacl, p.proowner, p.prosecdef, p.proconfig,
         n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where n.nspname in ${SCHEMAS}
     and not exists (select from pg_depend d
                      where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`;

/**
 * Functions PUBLIC may execute. A NULL proacl is the default, which includes PUBLIC: acldefault()
 * spells it out, so it counts too.
 */
async function publicFunctions(rootUrl: string): Promise<string[]> {
  const rows = await superuserQuery<{ name: string }>(
    rootUrl,
    `select f.name from (${PROJECT_FUNCTIONS}) f
      where exists (select from aclexplode(coalesce(f.proacl, acldefault('f', f.proowner))) a
                     where a.grantee = 0 and a.privilege_type = 'EXECUTE')
      order by 1`,
  );
  return rows.map((r) => r.name);
}

/** SECURITY DEFINER functions that do not pin search_path to pg_catalog, pg_temp. */
async function unpinnedDefiners(rootUrl: string): Promise<string[]> {
  const rows = await superuserQuery<{ name: string }>(
    rootUrl,
    `select f.name from (${PROJECT_FUNCTIONS}) f
      where f.prosecdef
        and not coalesce('search_path=pg_catalog, pg_temp' = any(f.proconfig), false)
      order by 1`,
  );
  return rows.map((r) => r.name);
}

/** The schemas weld_rules may create objects in, and the database if it may create schemas. */
async function rulesCreateRights(rootUrl: string): Promise<string[]> {
  const rows = await superuserQuery<{ name: string }>(
    rootUrl,
    `select 'schema ' || nspname as name from pg_namespace
      where has_schema_privilege('weld_rules', oid, 'CREATE')
     union all
     select 'database ' || current_database()
      where has_database_privilege('weld_rules', current_database(), 'CREATE')
     order by 1`,
  );
  return rows.map((r) => r.name);
}

test('catalog: no function of the service is executable by PUBLIC', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const [count] = await superuserQuery<{ n: number }>(
    rootUrl,
    `select count(*)::int as n from (${PROJECT_FUNCTIONS}) f`,
  );
  t.true(count!.n >= 30, 'the query sees the functions');
  t.deepEqual(await publicFunctions(rootUrl), []);
});

test('catalog: the same check names a function PUBLIC may execute, by default or by grant', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  // As the superuser, whose default privileges still give PUBLIC EXECUTE (proacl stays NULL);
  // and one with an explicit grant (proacl not NULL).
  await superuserQuery(
    rootUrl,
    `create function weld_hidden.careless() returns int language sql immutable as 'select 1';
     create function weld_private.granted() returns int language sql immutable as 'select 2';
     revoke execute on function weld_private.granted() from public;
     grant execute on function weld_private.granted() to public;`,
  );
  const [acl] = await superuserQuery<{ careless: string | null; granted: string | null }>(
    rootUrl,
    `select (select proacl::text from pg_proc where oid = 'weld_hidden.careless'::regproc) as careless,
            (select proacl::text from pg_proc where oid = 'weld_private.granted'::regproc) as granted`,
  );
  t.is(acl!.careless, null);
  t.not(acl!.granted, null);
  t.deepEqual(await publicFunctions(rootUrl), ['weld_hidden.careless()', 'weld_private.granted()']);
});

test('catalog: every SECURITY DEFINER function pins search_path; a new one that does not is named', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const [count] = await superuserQuery<{ n: number }>(
    rootUrl,
    `select count(*)::int as n from (${PROJECT_FUNCTIONS}) f where f.prosecdef`,
  );
  t.true(count!.n >= 15);
  t.deepEqual(await unpinnedDefiners(rootUrl), []);

  await superuserQuery(
    rootUrl,
    `create function weld_hidden.unpinned() returns int language sql stable security definer
       as 'select 1';
     create function weld_hidden.loose() returns int language sql stable security definer
       set search_path = public as 'select 1';`,
  );
  t.deepEqual(await unpinnedDefiners(rootUrl), ['weld_hidden.loose()', 'weld_hidden.unpinned()']);
});

test('catalog: no SECURITY DEFINER function of the owner (who passes row security) is executable by a request role', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const definersOfTheOwner = (): Promise<string[]> =>
    superuserQuery<{ fn: string }>(
      rootUrl,
      `select f.oid::regprocedure::text as fn from (${PROJECT_FUNCTIONS}) f
        where f.prosecdef and pg_catalog.pg_get_userbyid(f.proowner) = 'weld_owner'
          and exists (select from unnest(array['weld_anonymous', 'weld_viewer', 'weld_inspector',
                                               'weld_engineer', 'weld_admin']) r (name)
                       where pg_catalog.has_function_privilege(r.name, f.oid, 'execute'))
        order by 1`,
    ).then((rows) => rows.map((r) => r.fn));
  t.deepEqual(await definersOfTheOwner(), []);
  // Proof the check sees one: an owner's definer granted to the engineer.
  await superuserQuery(
    rootUrl,
    `set role weld_owner;
     create function weld_hidden.bypassing() returns int language sql stable security definer
       set search_path = pg_catalog, pg_temp as 'select 1';
     grant execute on function weld_hidden.bypassing() to weld_engineer;`,
  );
  t.deepEqual(await definersOfTheOwner(), ['weld_hidden.bypassing()']);
});

test("catalog: advisory locks are the service's: PUBLIC and the request roles may take none, the owner and weld_rules may", async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const takers = await superuserQuery<{ role: string; n: number }>(
    rootUrl,
    `select r.name as role,
            count(*) filter (where pg_catalog.has_function_privilege(r.name, p.oid, 'execute'))::int as n
       from pg_catalog.pg_proc p
       cross join unnest(array['public', 'weld_authenticator', 'weld_anonymous', 'weld_viewer',
                               'weld_inspector', 'weld_engineer', 'weld_admin', 'weld_owner',
                               'weld_rules']) r (name)
      where p.pronamespace = 'pg_catalog'::regnamespace and p.proname ~ 'advisory'
      group by r.name order by r.name`,
  );
  const all = (
    await superuserQuery<{ n: number }>(
      rootUrl,
      `select count(*)::int as n from pg_catalog.pg_proc
      where pronamespace = 'pg_catalog'::regnamespace and proname ~ 'advisory'`,
    )
  )[0]!.n;
  t.true(all >= 20);
  t.deepEqual(Object.fromEntries(takers.map((r) => [r.role, r.n])), {
    public: 0,
    weld_admin: 0,
    weld_anonymous: 0,
    weld_authenticator: 0,
    weld_engineer: 0,
    weld_inspector: 0,
    weld_owner: all,
    weld_rules: all,
    weld_viewer: 0,
  });
});

test('catalog: weld_rules may create nothing, in no schema and not in the database', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  t.deepEqual(await rulesCreateRights(rootUrl), []);
  // Proof the check sees a grant: give it one.
  await superuserQuery(rootUrl, `grant create on schema weld_hidden to weld_rules`);
  t.deepEqual(await rulesCreateRights(rootUrl), ['schema weld_hidden']);
});

test('catalog: each function is executable by exactly the roles that call it', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  const rows = await superuserQuery<{ name: string; roles: string[] }>(
    rootUrl,
    `select f.name,
            array(select distinct case when a.grantee = 0 then 'PUBLIC' else pg_get_userbyid(a.grantee)::text end
                    from aclexplode(coalesce(f.proacl, acldefault('f', f.proowner))) a
                   where a.privilege_type = 'EXECUTE' order by 1) as roles
       from (${PROJECT_FUNCTIONS}) f order by 1`,
  );
  const actual = Object.fromEntries(rows.map((r) => [r.name, r.roles.join(' ')]));

  // The owner of each function may execute it, and weld_owner may execute weld_rules' functions
  // (it attaches the trigger functions); beyond that, the callers.
  const roles = (...names: string[]) =>
    names
      .flatMap((n) => n.split(' '))
      .sort()
      .join(' ');
  const owner = 'weld_owner';
  const rules = 'weld_owner weld_rules';
  const server = (base: string) => roles(base, 'weld_authenticator');
  const requests = roles('weld_anonymous', rules);
  t.deepEqual(actual, {
    'weld_hidden.add_signing_key(kid text, private_jwk jsonb, public_jwk jsonb, rotate boolean)':
      server(rules),
    'weld_hidden.applied_migration()': server(owner),
    // The webhook worker's and the housekeeping's (events, 000010): the server's, across tenants.
    'weld_hidden.claim_webhook_deliveries(instance text, lease_seconds integer, per_tenant integer)':
      server(owner),
    'weld_hidden.finish_webhook_delivery(tenant uuid, webhook uuid, instance text, delivered_event_id bigint, answer_status integer, took_ms integer, failure text, retry_after_ms integer, give_up_seconds integer)':
      server(owner),
    'weld_hidden.defer_webhook_delivery(tenant uuid, webhook uuid, instance text, retry_after_ms integer)':
      server(owner),
    'weld_hidden.purge_events(keep_days integer)': server(owner),
    // The relay (000023): the server's loop and its reads of the feed, as the authenticator.
    'weld_hidden.place_events(tenant uuid, wait boolean, batch integer)': server(owner),
    'weld_hidden.waiting_tenants()': server(owner),
    // The weld register import (000013): engineers and up import; every reader's export.
    // weld_rules', not the owner's (F14): weld_rules may create temporary tables.
    'weld_hidden.begin_weld_import()': roles('weld_rules', 'weld_engineer'),
    'weld_hidden.analyze_weld_import()': roles('weld_rules', 'weld_engineer'),
    'weld_hidden.lock_weld_imports()': roles(rules, 'weld_engineer'),
    'weld_hidden.lock_webhook_registrations()': roles(rules, 'weld_admin'),
    // An endpoint's next author takes their turn (F14 follow-up): weld_rules', for admins.
    'weld_hidden.lock_webhook_author()': roles(rules, 'weld_admin'),
    'weld_hidden.check_weld_import(present text[], decimal_comma boolean, max_errors integer)':
      roles(owner, 'weld_engineer'),
    'weld_hidden.apply_weld_import(file_sha256 text, file_bytes bigint)': roles(
      owner,
      'weld_engineer',
    ),
    'weld_hidden.emit_weld_import_events()': roles('weld_rules', 'weld_engineer'),
    'weld_hidden.weld_import_code_problems(welds weld_public.welds[])': roles(
      'weld_rules',
      'weld_engineer',
    ),
    'weld_hidden.import_inches(value text, decimal_comma boolean)': roles(owner, 'weld_engineer'),
    'weld_hidden.import_date(value text)': roles(owner, 'weld_engineer', 'weld_rules'),
    'weld_hidden.from_spreadsheet_text(value text)': roles(owner, 'weld_engineer'),
    'weld_hidden.spreadsheet_text(value text)': roles(owner, 'weld_viewer'),
    // The reports (F17): every reader and the reporting logins, each under row security.
    ...Object.fromEntries(
      [
        'examination_backlog',
        'examination_progress',
        'qualification_expiry',
        'test_package_board',
        'weld_progress',
        'welder_performance',
      ].map((name) => [
        `weld_hidden.report_${name}()`,
        roles(rules, 'weld_viewer', 'weld_reporting'),
      ]),
    ),
    'weld_hidden.import_json(record weld_hidden.imports)': roles(owner, 'weld_viewer'),
    // An NDT record's lists as REST and the events show them: every reader, under row security.
    'weld_hidden.ndt_record_film_json(record weld_public.ndt_records)': roles(owner, 'weld_viewer'),
    'weld_hidden.ndt_record_welds_json(record weld_public.ndt_records)': roles(
      owner,
      'weld_viewer',
    ),
    'weld_hidden.current_tenant_id()': roles(server(requests), 'weld_reporting'),
    // A reporting login's tenant (F17): whoever may call current_tenant_id may call it.
    'weld_hidden.reporting_tenant_id()': roles(server(requests), 'weld_reporting'),
    // The reporting logins' limits, enforced by the server's housekeeping.
    'weld_hidden.reap_reporting_sessions()': roles('weld_reaper', 'weld_authenticator'),
    'weld_hidden.current_user_id()': requests,
    // OAuth2 scopes (000045): the policies' and the rules' check, and the reporting views'.
    'weld_hidden.require_scope(allowed text[])': roles('weld_anonymous weld_reporting', rules),
    'weld_hidden.scoped_tenant_id(allowed text[])': requests,
    'weld_hidden.unscoped_tenant_id()': roles('weld_anonymous', owner),
    'weld_hidden.login_begin(user_name citext, address text)': server(rules),
    'weld_hidden.login_succeed(user_id uuid, address text, session_id uuid, refresh_hash bytea, refresh_ttl interval)':
      server(rules),
    'weld_hidden.logout(token_hash bytea)': server(rules),
    'weld_hidden.purge_auth_bookkeeping(OUT deleted_throttle_rows integer, OUT deleted_refresh_tokens integer, OUT deleted_sessions integer, OUT deleted_known_addresses integer)':
      server(owner),
    'weld_hidden.purge_idempotency_keys()': server(owner),
    'weld_hidden.refresh_rotate(old_hash bytea, new_hash bytea, new_box bytea, grace interval, ttl interval)':
      server(rules),
    'weld_hidden.request_role()': requests,
    'weld_hidden.revoked_sessions(since timestamp with time zone)': server(owner),
    'weld_hidden.tenant_by_origin(request_origin text)': server(owner),
    'weld_hidden.sweep_attachment_files(max_files integer)': server(owner),
    'weld_hidden.tenant_csrf_key(candidate bytea)': server(rules),
    'weld_hidden.tenant_signing_keys()': server(rules),
    'weld_hidden.touch()': owner,
    'weld_private.camel_case(name text)': owner,
    'weld_private.changed_columns(old_row jsonb, new_row jsonb)': rules,
    'weld_private.check_refuses(code text)': rules,
    'weld_private.check_correction(what text, record_id uuid, is_found boolean, current_version integer, expected_version integer, reason text)':
      rules,
    'weld_private.check_object(input jsonb, pointer text, what text, allowed text[], required text[])':
      rules,
    // The outbox (000010): only its SECURITY DEFINER triggers, as the owner, call these.
    'weld_private.contract_json(row_image jsonb)': rules,
    'weld_private.weld_json(w weld_public.welds)': rules,
    'weld_private.emit_event(tenant uuid, event_type text, subject uuid, data jsonb, change jsonb)':
      owner,
    'weld_private.event_data(kind text, tenant uuid, subject uuid)': owner,
    'weld_private.events_suppressed()': owner,
    'weld_private.refresh_event(tenant uuid, kind text, subject uuid, data jsonb)': owner,
    'weld_private.transaction_event(tenant uuid, kind text, subject uuid)': owner,
    'weld_private.tg__outbox()': owner,
    'weld_private.tg_welds__package_open()': owner,
    // ISO progress (000015): the triggers that keep weld_public.iso_weld_counts, as the owner.
    'weld_private.tg_isos__weld_counts()': owner,
    'weld_private.tg_welds__iso_weld_counts()': owner,
    // The report rollups (F17): written by the triggers alone.
    'weld_private.tg__report_facts()': owner,
    'weld_private.tg_report_facts_queue__refresh()': owner,
    'weld_private.queue_report_facts(tenant uuid, ids uuid[])': owner,
    'weld_private.refresh_report_facts(tenant uuid, weld_ids uuid[])': owner,
    'weld_private.report_facts_of(tenant uuid, weld_ids uuid[])': owner,
    // The kept report rows (F17): writes note what they changed (the triggers, as the owner); the
    // report functions and the refresh (weld_rules) read the notes and compute what is noted;
    // the server's housekeeping calls the refresh, and asks which tenants need one.
    'weld_private.tg__report_stale()': owner,
    'weld_private.mark_report_stale(tenant uuid, kind text, keys text[])': rules,
    'weld_private.report_stale_parts(wanted text[], OUT lines text[], OUT packages uuid[], OUT welders uuid[])':
      rules,
    'weld_private.packages_reading(lines text[], iso_ids uuid[], wps_ids uuid[], welder_ids uuid[])':
      rules,
    'weld_private.package_board_row(test_package weld_public.test_packages, OUT reasons integer, OUT reasons_by_code jsonb, OUT welds integer, OUT welds_accepted integer)':
      rules,
    'weld_hidden.refresh_reports(tenant uuid, max_lines integer, max_packages integer, max_welders integer)':
      server(rules),
    'weld_hidden.reports_due()': server(owner),
    'weld_hidden.alerts_due()': server(owner),
    'weld_hidden.send_welder_alerts(tenant uuid)': server(owner),
    'weld_private.tg_welds__iso_weld_counts_move()': owner,
    'weld_private.tg__selection_closure()': owner,
    'weld_private.tg__selection_outbox()': owner,
    'weld_private.tg_webhooks__position()': owner,
    // An author's endpoints pause with them (F14): a trigger of users, and the migration.
    'weld_private.pause_webhooks_of(tenant uuid, author_id uuid)': owner,
    'weld_private.tg_users__pause_webhooks()': owner,
    'weld_private.tg_webhooks__touch()': owner,
    'weld_private.create_tenant(slug text, name text, origins text[])': owner,
    'weld_private.create_user(tenant uuid, user_name citext, display_name text, role weld_public.user_role, password_hash text)':
      owner,
    'weld_private.disable_user(tenant uuid, user_name citext)': owner,
    'weld_private.enable_user(tenant uuid, user_name citext)': owner,
    'weld_private.set_user_role(tenant uuid, user_name citext, role weld_public.user_role)': owner,
    'weld_private.clear_tenant(tenant uuid, whole boolean)': owner,
    // OAuth2 clients (000046): admins manage them, the server's role issues and revokes tokens.
    'weld_hidden.oauth_client_add(client_id text, name text, scopes text[], secret_hash bytea)':
      roles('weld_admin', rules),
    'weld_hidden.oauth_client_remove(client_id text)': roles('weld_admin', rules),
    'weld_hidden.oauth_client_rotate(client_id text, secret_hash bytea, overlap interval)': roles(
      'weld_admin',
      rules,
    ),
    'weld_hidden.oauth_clients_list(after text, max integer)': roles('weld_admin', rules),
    'weld_hidden.test_package_dossier(package_id uuid)': roles('weld_engineer', rules),
    'weld_hidden.oauth_token_begin(client_id text, address text)': server(rules),
    'weld_hidden.oauth_token_issued(client_id text, address text, session_id uuid)': server(rules),
    'weld_hidden.oauth_token_revoke(client_id text, session_id uuid)': server(rules),
    'weld_private.oauth_client_json(client weld_private.oauth_clients)': rules,
    'weld_private.oauth_scopes_role(scopes text[])': rules,
    'weld_private.require_person()': rules,
    'weld_private.throttle_attempt(tenant uuid, address text, account_key text)': rules,
    'weld_private.tg_users__client_role()': owner,
    'weld_private.examination_created_in_this_transaction(subject text, tenant uuid, record_id uuid)':
      rules,
    'weld_private.first_unknown_weld(weld_ids jsonb)': rules,
    'weld_private.inspection_write_welds(tenant uuid, inspection_id uuid, weld_ids jsonb)': rules,
    'weld_private.invalid_input(message text, pointer text)': rules,
    'weld_private.json_choice(input jsonb, key text, pointer text, choices text[], nullable boolean)':
      rules,
    'weld_private.json_date(input jsonb, key text, pointer text)': rules,
    'weld_private.json_list(input jsonb, key text, pointer text, min_items integer, max_items integer)':
      rules,
    'weld_private.json_pointer(base text, token text)': rules,
    'weld_private.json_string(input jsonb, key text, pointer text, min_length integer, max_length integer, nullable boolean)':
      rules,
    'weld_private.json_uuid(value jsonb, pointer text, what text)': rules,
    'weld_private.json_uuid_list(input jsonb, key text, pointer text, min_items integer, max_items integer)':
      rules,
    'weld_private.login_address_known(tenant uuid, user_id uuid, address text)': rules,
    'weld_private.login_take_back(tenant uuid, address text)': rules,
    'weld_private.ndt_apply_status_changes(ndt weld_public.ndt_records, moves jsonb)': rules,
    'weld_private.ndt_film_result(intervals jsonb, weld_id text)': rules,
    'weld_private.ndt_intervals_input(input jsonb, pointer text)': rules,
    'weld_private.ndt_results(method text, welds jsonb, intervals jsonb, welds_pointer text, intervals_pointer text)':
      rules,
    'weld_private.ndt_status_changes(results jsonb)': rules,
    'weld_private.ndt_welds_input(input jsonb, pointer text)': rules,
    'weld_private.ndt_write_lists(tenant uuid, record_id uuid, welds jsonb, intervals jsonb)':
      rules,
    'weld_private.outside_diameter(nps numeric)': rules,
    'weld_private.inches(value numeric)': rules,
    'weld_private.lock_line(line_number text)': rules,
    'weld_private.lot_candidates(methods text[], lines text[])': rules,
    'weld_private.lot_status(methods text[], lines text[], weld_ids uuid[])': rules,
    'weld_private.qualification_facts(welder_ids uuid[], pending weld_public.welds[])': rules,
    // The code rules of 000017: weld_rules' helpers.
    'weld_private.closers(method text, closed_by text[], volumetric boolean)': rules,
    'weld_private.closing_methods(tenant uuid, method text, fluid_service text, weld_type text)':
      rules,
    'weld_private.diameter_words(known boolean, low numeric, high numeric)': rules,
    'weld_private.draw_next_tier(cause_id uuid, ndt_record_id uuid, inspection_id uuid, record text)':
      rules,
    'weld_private.draw_scope(method text, line text, iso_id uuid)': rules,
    'weld_private.follow_examination(method text, weld_ids uuid[], ndt_record_id uuid, inspection_id uuid)':
      rules,
    'weld_private.heat_treatment_problems(welds weld_public.welds[])': rules,
    // The verdicts a QC department signs: weld_rules' helpers.
    'weld_private.acceptance_held(weld_id uuid)': rules,
    'weld_private.json_defect_length(input jsonb, pointer text, verdict text)': rules,
    'weld_private.preheat_problems(welds weld_public.welds[])': rules,
    'weld_private.record_repair_welding(weld weld_public.welds, repair jsonb)': rules,
    'weld_private.tg_weld_repairs__welding()': rules,
    'weld_private.weld_kind(weld_type text)': rules,
    'weld_private.weldings_of(welds weld_public.welds[])': rules,
    'weld_private.wps_joints(p_numbers text[], additional_joints text[])': rules,
    'weld_private.filler_problems(welds weld_public.welds[])': rules,
    'weld_private.hold_owed_acceptances(tenant uuid)': owner,
    'weld_private.hold_released_packages(package_ids uuid[], change text)': rules,
    'weld_private.is_fillet(weld_type text)': rules,
    'weld_private.lock_lines_of(weld_ids uuid[])': rules,
    'weld_private.lock_packages_of(weld_ids uuid[])': rules,
    'weld_private.methods_words(methods text[])': rules,
    'weld_private.p_joint(a text, b text)': rules,
    'weld_private.p_joint_words(joint text[])': rules,
    'weld_private.packages_judged_on(lines text[], wps_ids uuid[], welder_ids uuid[])': rules,
    'weld_private.pqr_thickness_support(tenant uuid, t numeric)': rules,
    'weld_private.range_words(r numrange)': rules,
    'weld_private.readiness_summary(test_package weld_public.test_packages)': rules,
    'weld_private.reexaminations_of(weld_ids uuid[])': rules,
    'weld_private.refuse_failing_welds(wps_ids uuid[], welder_ids uuid[], change text)': rules,
    'weld_private.refuse_unwelded_examinations(links jsonb, what text)': rules,
    'weld_private.examination_links(weld_ids uuid[], examined_on date, record text)': rules,
    'weld_private.rule_methods()': rules,
    'weld_private.selection_examination(selection weld_public.examination_selections)': rules,
    'weld_private.thickness_words(known boolean, high numeric)': rules,
    'weld_private.weld_ids_of(list jsonb)': rules,
    'weld_private.wps_problems(wps_ids uuid[])': rules,
    'weld_private.tg__approved_wps_qualified()': rules,
    'weld_private.tg_punch_items__number_and_closer()': rules,
    'weld_private.tg_isos__drawing()': rules,
    'weld_private.tg_attachments__drawing_gone()': rules,
    'weld_private.tg_punch_items__package_held()': rules,
    'weld_private.tg__judged_on()': rules,
    'weld_private.tg__lock_packages()': rules,
    'weld_private.tg__lock_packages_of_record()': rules,
    'weld_private.tg_inspection_welds__welded()': rules,
    'weld_private.tg_inspections__welded()': rules,
    'weld_private.tg_ndt_record_welds__welded()': rules,
    'weld_private.tg_ndt_records__welded()': rules,
    'weld_private.tg_test_packages__state_history()': rules,
    'weld_private.tg_weld_status_history__follow()': rules,
    'weld_private.tg_welder_qualifications__renews()': rules,
    'weld_private.tg_welds__examined_after_welded()': rules,
    // A migration's helper: the owner's alone.
    'weld_private.add_calendar_check(tbl regclass, col name)': owner,
    'weld_private.require_role(least_role weld_public.user_role, action text)': rules,
    'weld_private.secure_tenant_table(tbl regclass)': owner,
    'weld_private.seed_code_rules(for_tenant uuid)': owner,
    'weld_private.seed_transition_rules(for_tenant uuid)': owner,
    'weld_private.set_user_password(tenant uuid, user_name citext, password_hash text)': owner,
    'weld_private.tenant_list()': owner,
    'weld_private.tenants_seed_rules()': owner,
    'weld_private.tg__examination_updated()': rules,
    'weld_private.tg__examination_weld_link()': rules,
    'weld_private.tg__set_recorded_by()': owner,
    'weld_private.tg__test_package_open()': owner,
    'weld_private.tg__touch_parent()': rules,
    'weld_private.tg__hold_weld_records()': rules,
    'weld_private.tg_film_interval_welds__examination_change()': rules,
    'weld_private.tg_film_intervals__examination_change()': rules,
    'weld_private.tg_attachments__file_facts()': owner,
    'weld_private.tg_sessions__notify_revoked()': owner,
    'weld_private.tg_sessions__stamp_revocation()': owner,
    'weld_private.tg_tenants__seed_code_rules()': owner,
    'weld_private.tg_tenants__seed_settings()': owner,
    'weld_private.tg_test_packages__delete_only_while_open()': owner,
    'weld_private.tg_test_packages__release_when_ready()': rules,
    'weld_private.tg_test_packages__state_moves()': owner,
    'weld_private.tg_examination_changes__reason()': owner,
    'weld_private.tg_weld_status_history__ndt_cause()': owner,
    'weld_private.tg_welds__acceptance_cleared()': owner,
    'weld_private.tg_welds__code_checks()': rules,
    'weld_private.tg_welds__component_p_numbers()': rules,
    'weld_private.tg_components__p_number_to_welds()': owner,
    'weld_private.weld_problems(welds weld_public.welds[], pending boolean, include_welders boolean)':
      rules,
    'weld_private.tg_user_credentials__revoke_sessions()': owner,
    'weld_private.tg_users__revoke_sessions()': owner,
    // Whether a row (by its xmin) was written by this transaction, savepoints included (F14).
    'weld_private.written_by_this_transaction(row_xmin xid)': rules,
    'weld_public.change_weld_status(weld_id uuid, new_status weld_public.weld_status, reason text, expected_version integer, ndt_record_id uuid, inspection_id uuid, disposition text, repair jsonb)':
      roles(rules, 'weld_viewer'),
    // How a weld was accepted, in words: every reader's (the register, GraphQL's Weld.acceptance).
    'weld_public.welds_acceptance(weld weld_public.welds)': roles(
      rules,
      'weld_viewer',
      'weld_reporting',
    ),
    // The examination functions decide who may (WD003), like change_weld_status.
    'weld_public.correct_inspection(inspection_id uuid, changes jsonb, reason text, expected_version integer)':
      roles(rules, 'weld_viewer'),
    'weld_public.correct_ndt_record(record_id uuid, changes jsonb, reason text, expected_version integer)':
      roles(rules, 'weld_viewer'),
    'weld_public.draw_examination_selection(method text, line_number text, iso_id uuid, seed bigint)':
      roles(rules, 'weld_viewer'),
    'weld_public.examination_selections_ndt_record_id(selection weld_public.examination_selections)':
      roles(rules, 'weld_viewer'),
    'weld_public.examination_selections_state(selection weld_public.examination_selections)': roles(
      rules,
      'weld_viewer',
    ),
    'weld_public.isos_examination(iso weld_public.isos)': roles(rules, 'weld_viewer'),
    'weld_public.record_inspection(inspection jsonb)': roles(rules, 'weld_viewer'),
    'weld_public.record_ndt(record jsonb)': roles(rules, 'weld_viewer'),
    'weld_public.test_packages_readiness_reasons(test_package weld_public.test_packages)': roles(
      rules,
      'weld_viewer',
    ),
    'weld_public.test_packages_ready(test_package weld_public.test_packages)': roles(
      rules,
      'weld_viewer',
    ),
    'weld_public.welders_qualification_status(welder weld_public.welders, on_date date)': roles(
      rules,
      'weld_viewer',
    ),
    'weld_public.welds_checks(weld weld_public.welds)': roles(rules, 'weld_viewer'),
    'weld_public.components_welds(component weld_public.components)': roles(owner, 'weld_viewer'),
    'weld_public.wps_checks(wps weld_public.wps)': roles(rules, 'weld_viewer'),
    'weld_public.welders_continuity(welder weld_public.welders)': roles(rules, 'weld_viewer'),
    'weld_public.examination_selections_inspection_id(selection weld_public.examination_selections)':
      roles(rules, 'weld_viewer'),
    'weld_public.withdraw_test_package(test_package_id uuid, reason text, expected_version integer)':
      roles(rules, 'weld_viewer'),
    // The weld register's check of a weldedOn against the weld's examinations: importers only.
    'weld_hidden.weld_examinations_before(weld_id uuid, welded_on date)': roles(
      rules,
      'weld_engineer',
    ),
    // A selection as REST and the events show it: every reader, under row security.
    'weld_hidden.examination_selection_json(s weld_public.examination_selections)': roles(
      rules,
      'weld_viewer',
    ),
    // A computed column: every reader of the tenant (and progressive examination, as weld_rules).
    'weld_public.ndt_record_welds_effective_result(link weld_public.ndt_record_welds)': roles(
      rules,
      'weld_viewer',
    ),
  });
});

test('catalog: no request role writes an examination table or the ISO counts directly, nor deletes what is never deleted', async (t) => {
  const { rootUrl } = await migratedDatabase(t);
  /** Each (role, privilege, table) a request role holds, on the table or any of its columns. */
  const held = async (tables: string[], privileges: string[]) =>
    (
      await superuserQuery<{ held: string }>(
        rootUrl,
        `select r || ' ' || p || ' ' || t as held
           from unnest($1::text[]) as r, unnest($2::text[]) as p, unnest($3::text[]) as t
          where has_table_privilege(r, t, p) or (p <> 'DELETE' and has_any_column_privilege(r, t, p))
          order by 1`,
        [
          ['weld_anonymous', 'weld_viewer', 'weld_inspector', 'weld_engineer', 'weld_admin'],
          privileges,
          tables,
        ],
      )
    ).map((r) => r.held);
  // Written only through record_ndt, correct_ndt_record, record_inspection, correct_inspection.
  const examinations = ['ndt_records', 'ndt_record_welds', 'film_intervals', 'film_interval_welds',
                        'inspections', 'inspection_welds'].map((n) => `weld_public.${n}`); // prettier-ignore
  t.deepEqual(await held(examinations, ['INSERT', 'UPDATE', 'DELETE']), []);
  // Kept by triggers alone (000015): no role writes the counts.
  t.deepEqual(await held(['weld_public.iso_weld_counts'], ['INSERT', 'UPDATE', 'DELETE']), []);
  // Voided, deactivated, superseded or corrected instead.
  const kept = ['welds', 'welders', 'wps', 'ndt_records', 'inspections'].map(
    (n) => `weld_public.${n}`,
  );
  t.deepEqual(await held(kept, ['DELETE']), []);
  // The check sees a grant where there is one: an engineer deletes ISOs (and so may an admin).
  t.deepEqual(await held(['weld_public.isos'], ['DELETE']), [
    'weld_admin DELETE weld_public.isos',
    'weld_engineer DELETE weld_public.isos',
  ]);
});

//------------------------------------------------------------------------------------------------
// From the attacker's side: a request role (whatever a token or an injection gives) calling the
// server's own functions.

async function setup(t: ExecutionContext) {
  const { owner, pool, a } = await twoTenants(t);
  return { owner, pool, a };
}

const HASH = Buffer.alloc(32, 7);

/** The server's own functions, each called with plausible arguments (a real user's id). */
const serverOnly = (userId: string): Array<[string, string, unknown[]]> => [
  ['tenant_signing_keys', 'select * from weld_hidden.tenant_signing_keys()', []],
  [
    'add_signing_key',
    'select weld_hidden.add_signing_key($1, $2, $3, true)',
    ['attacker-kid', { kty: 'EC' }, { kty: 'EC' }],
  ],
  ['tenant_csrf_key', 'select weld_hidden.tenant_csrf_key($1)', [HASH]],
  ['login_begin', 'select * from weld_hidden.login_begin($1, $2)', ['admin-alpha', '192.0.2.66']],
  [
    'login_succeed',
    'select weld_hidden.login_succeed($1, $2, gen_random_uuid(), $3, $4)',
    [userId, '192.0.2.66', HASH, '30 days'],
  ],
  [
    'refresh_rotate',
    'select * from weld_hidden.refresh_rotate($1, $2, $3, $4, $5)',
    [HASH, Buffer.alloc(32, 8), Buffer.alloc(48), '10 seconds', '30 days'],
  ],
  ['logout', 'select weld_hidden.logout($1)', [HASH]],
  ['purge_auth_bookkeeping', 'select * from weld_hidden.purge_auth_bookkeeping()', []],
  ['purge_idempotency_keys', 'select weld_hidden.purge_idempotency_keys()', []],
  ['revoked_sessions', `select * from weld_hidden.revoked_sessions(now() - interval '1 hour')`, []],
  ['tenant_by_origin', `select * from weld_hidden.tenant_by_origin('http://alpha.test')`, []],
  ['applied_migration', 'select weld_hidden.applied_migration()', []],
  ['purge_events', 'select * from weld_hidden.purge_events(1)', []],
  ['place_events', 'select weld_hidden.place_events()', []],
  ['waiting_tenants', 'select * from weld_hidden.waiting_tenants()', []],
  // The kept report rows' refresh (F17): which tenants have writes noted, and the refresh itself.
  ['reports_due', 'select * from weld_hidden.reports_due()', []],
  ['refresh_reports', 'select * from weld_hidden.refresh_reports(gen_random_uuid())', []],
  [
    'claim_webhook_deliveries',
    `select * from weld_hidden.claim_webhook_deliveries('attacker', 60, 10)`,
    [],
  ],
  [
    'defer_webhook_delivery',
    `select weld_hidden.defer_webhook_delivery(gen_random_uuid(), gen_random_uuid(), 'attacker', 1000)`,
    [],
  ],
  [
    'finish_webhook_delivery',
    `select weld_hidden.finish_webhook_delivery(gen_random_uuid(), gen_random_uuid(), 'attacker',
       1, 200, 5, null, 1000, 86400)`,
    [],
  ],
];

for (const role of ['weld_anonymous', 'weld_viewer', 'weld_admin'] as const) {
  test(`attack: ${role} cannot call the server's own functions (42501)`, async (t) => {
    const { pool, a, owner } = await setup(t);
    const userId =
      role === 'weld_anonymous' ? null : a.users[role === 'weld_viewer' ? 'viewer' : 'admin'];
    for (const [name, sql, params] of serverOnly(a.users.admin)) {
      await t.throwsAsync(
        withContext(pool, { role, tenantId: a.tenantId, userId }, (c) => c.query(sql, params)),
        { code: '42501', message: new RegExp(`permission denied for function ${name}`) },
        `${role} calling ${name}`,
      );
    }
    // Nothing was minted, counted or added.
    const { rows } = await owner.query<{ sessions: number; throttle: number; keys: number }>(
      `select (select count(*) from weld_private.sessions)::int as sessions,
              (select count(*) from weld_private.login_throttle)::int as throttle,
              (select count(*) from weld_private.signing_keys)::int as keys`,
    );
    t.deepEqual(rows[0], { sessions: 0, throttle: 0, keys: 0 });
  });
}

test('the authenticator itself may call them (the server does, through asAuthenticator)', async (t) => {
  const { pool, a, owner } = await setup(t);
  const sessionId = '00000000-0000-4000-8000-00000000abcd';
  await asAuthenticator(pool, a.tenantId, async (c) => {
    t.deepEqual((await c.query('select * from weld_hidden.tenant_signing_keys()')).rows, []);
    const begin = await c.query<{ retry_after: number | null; user_id: string }>(
      'select * from weld_hidden.login_begin($1, $2)',
      ['admin-alpha', '192.0.2.1'],
    );
    t.is(begin.rows[0]!.retry_after, null);
    t.is(begin.rows[0]!.user_id, a.users.admin);
    await c.query(`select weld_hidden.login_succeed($1, $2, $3, $4, '30 days')`, [
      a.users.admin,
      '192.0.2.1',
      sessionId,
      HASH,
    ]);
    const rotated = await c.query<{ outcome: string }>(
      `select * from weld_hidden.refresh_rotate($1, $2, $3, '10 seconds', '30 days')`,
      [HASH, Buffer.alloc(32, 9), Buffer.alloc(48)],
    );
    t.is(rotated.rows[0]!.outcome, 'rotated');
  });
  const { rows } = await owner.query(`select id, user_id from weld_private.sessions`);
  t.deepEqual(rows, [{ id: sessionId, user_id: a.users.admin }]);
});

test('attack: inspectors and up change weld status through the function; a viewer is refused by its rules', async (t) => {
  // change_weld_status is granted to viewers on purpose: the transition rules are data and may
  // name any role, so the function itself decides (WD003), not a missing grant.
  const { pool, a } = await setup(t);
  const weldId = await a.weld('PENDING');
  // The acceptance rests on a visual inspection of the weld.
  const { rows } = await withContext(
    pool,
    { role: 'weld_inspector', tenantId: a.tenantId, userId: a.users.inspector },
    (c) =>
      c.query<{ id: string }>('select id from weld_public.record_inspection($1)', [
        JSON.stringify({
          kind: 'visual',
          inspectorName: 'QC',
          inspectedOn: '2026-02-01',
          result: 'accepted',
          weldIds: [weldId],
        }),
      ]),
  );
  const as = (role: 'viewer' | 'inspector') =>
    withContext(pool, { role: `weld_${role}`, tenantId: a.tenantId, userId: a.users[role] }, (c) =>
      c.query<{ status: string }>(
        `select status from weld_public.change_weld_status($1, 'ACCEPTED', null, null, null, $2)`,
        [weldId, rows[0]!.id],
      ),
    );
  await t.throwsAsync(as('viewer'), { code: 'WD003' });
  t.is((await as('inspector')).rows[0]!.status, 'ACCEPTED');
  await t.throwsAsync(
    withContext(pool, { role: 'weld_anonymous', tenantId: a.tenantId }, (c) =>
      c.query(`select weld_public.change_weld_status($1, 'REJECTED', 'x')`, [weldId]),
    ),
    { code: '42501' },
  );
});
