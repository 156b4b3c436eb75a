// The operator's commands of F18: weld-admin tenant remove and tenant reset (asked first, past the
// rules, nothing of another tenant touched), user enable and user role (sessions end as the rules
// say), and seed --append (a second project beside the first, no key in common).
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import type pg from 'pg';
import { LocalStore, type AttachmentStore, type StoreKey } from '../../db/attachment-store.ts';
import { connectClient, createPool } from '../../db/database.ts';
import { sweepAttachmentFiles } from '../../server/housekeeping.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { runCli } from '../helpers/server.ts';

/** Rows per tenant table for one tenant, read the way clear_tenant finds the tables. */
async function rowsOf(db: pg.Client, tenantId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ t: string; n: number }>(
    `select c.oid::regclass::text as t,
            (xpath('/row/n/text()', query_to_xml(
               format('select count(*) as n from %s where tenant_id = %L', c.oid::regclass, $1::uuid),
               false, true, '')))[1]::text::int as n
       from pg_class c
       join pg_namespace ns on ns.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped
      where ns.nspname in ('weld_public', 'weld_hidden', 'weld_private') and c.relkind in ('r', 'p')
      order by 1`,
    [tenantId],
  );
  return Object.fromEntries(rows.filter((r) => r.n > 0).map((r) => [r.t, r.n]));
}

async function setup(t: import('ava').ExecutionContext) {
  const { rootUrl, target } = await migratedDatabase(t);
  const env = { DATABASE_URL: rootUrl };
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const cli = async (args: string[], stdin?: string, code = 0) => {
    const run = await runCli(args, env, stdin);
    t.is(run.code, code, `${args.join(' ')}: ${run.output}`);
    return run;
  };
  for (const slug of ['alpha', 'bravo']) {
    await cli(['tenant', 'add', slug, '--origin', `http://${slug}.test`]);
    await cli(['seed', slug, '--isos', '4', '--welds-per-iso', '5']);
    for (const role of ['viewer', 'admin']) {
      await cli(
        ['user', 'add', slug, `${role}-${slug}`, '--role', role, '--password-stdin'],
        'a long enough password',
      );
    }
  }
  const ids = Object.fromEntries(
    (
      await owner.query<{ slug: string; id: string }>('select slug, id from weld_public.tenants')
    ).rows.map((r) => [r.slug, r.id]),
  ) as Record<'alpha' | 'bravo', string>;
  // A live session of alpha's admin, and an event of alpha's in the feed.
  const userId = async (name: string) =>
    (
      await owner.query<{ id: string }>('select id from weld_public.users where user_name = $1', [
        name,
      ])
    ).rows[0]!.id;
  const session = (
    await owner.query<{ id: string }>(
      'insert into weld_private.sessions (tenant_id, user_id) values ($1, $2) returning id',
      [ids.alpha, await userId('admin-alpha')],
    )
  ).rows[0]!.id;
  await owner.query(`update weld_public.isos set area = 'moved' where tenant_id = $1`, [ids.alpha]);
  return { env, rootUrl, target, owner, cli, ids, session, userId };
}

test('tenant reset asks first, then deletes the project data and keeps the setup; bravo is untouched', async (t) => {
  const { owner, cli, ids } = await setup(t);
  const before = await rowsOf(owner, ids.alpha);
  const bravo = await rowsOf(owner, ids.bravo);
  t.is(before['weld_public.welds'], 20);
  t.true(
    (before['weld_hidden.pending_events'] ?? before['weld_public.events'] ?? 0) > 0,
    'an event',
  );

  // Not confirmed: a wrong answer, or none (stdin closed), changes nothing.
  const wrong = await cli(['tenant', 'reset', 'alpha'], 'bravo\n', 1);
  t.regex(wrong.stderr, /Delete the project data of tenant alpha \(4 ISOs, 20 welds/);
  t.regex(wrong.stderr, /not confirmed; nothing was changed/);
  await cli(['tenant', 'reset', 'alpha'], '', 1);
  t.deepEqual(await rowsOf(owner, ids.alpha), before);

  const done = await cli(['tenant', 'reset', 'alpha'], 'alpha\n');
  t.regex(done.stdout, /^reset tenant alpha: \d+ rows deleted in \d+ tables/m);
  const after = await rowsOf(owner, ids.alpha);
  // What stays is the setup, as it was; nothing else is left.
  const kept = [
    'weld_private.report_refreshes',
    'weld_private.sessions',
    'weld_private.signing_keys',
    'weld_private.tenant_origins',
    'weld_private.user_credentials',
    'weld_public.examination_rules',
    'weld_public.heat_treatment_exemptions',
    'weld_public.heat_treatment_rules',
    'weld_public.p_number_rules',
    'weld_public.preheat_rules',
    'weld_public.procedure_thickness_rules',
    'weld_public.qualification_range_rules',
    'weld_public.tenant_settings',
    'weld_public.users',
    'weld_public.weld_transition_rules',
  ];
  t.deepEqual(Object.keys(after).sort(), kept.filter((name) => name in before).sort());
  for (const table of Object.keys(after)) t.is(after[table], before[table], table);
  t.deepEqual(await rowsOf(owner, ids.bravo), bravo, "bravo's rows are as they were");
  // The reset tenant takes a new project, and its report rollups follow it from nothing.
  await cli(['seed', 'alpha', '--isos', '2', '--welds-per-iso', '3']);
  const { rows } = await owner.query<{ welds: number; counted: number }>(
    `select (select count(*)::int from weld_public.welds where tenant_id = $1) as welds,
            (select coalesce(sum(total), 0)::int from weld_public.iso_weld_counts where tenant_id = $1) as counted`,
    [ids.alpha],
  );
  t.deepEqual(rows[0], { welds: 6, counted: 6 });
});

test('tenant remove --yes deletes the tenant and every row it had, ends its sessions and drops its reporting logins', async (t) => {
  const { owner, cli, ids, session, rootUrl } = await setup(t);
  const bravo = await rowsOf(owner, ids.bravo);
  await cli(['reporting', 'add', 'alpha', 'bi']);
  const listener = await connectClient(rootUrl);
  t.teardown(() => listener.end());
  const revoked: unknown[] = [];
  listener.on('notification', (n) => revoked.push(JSON.parse(n.payload!)));
  await listener.query('listen weld_session_revoked');

  const refused = await cli(['tenant', 'remove', 'alpha'], 'no\n', 1);
  t.regex(refused.stderr, /Remove tenant alpha and all its data \(4 ISOs, 20 welds, 2 users\)/);
  const done = await cli(['tenant', 'remove', 'alpha', '--yes']);
  t.regex(done.stdout, /^removed tenant alpha: \d+ rows in \d+ tables, 1 reporting login\(s\)/m);

  t.deepEqual(await rowsOf(owner, ids.alpha), {}, 'no row of alpha is left anywhere');
  const tenants = await owner.query('select slug from weld_public.tenants order by slug');
  t.deepEqual(
    tenants.rows.map((r) => r.slug),
    ['bravo'],
  );
  t.deepEqual(await rowsOf(owner, ids.bravo), bravo, "bravo's rows are as they were");
  const roles = await listener.query(`select rolname from pg_roles where rolname like '%alpha%'`);
  t.deepEqual(roles.rows, [], "alpha's reporting login role is gone");
  // Servers hear of the ended session at once (their in-memory revocations).
  for (let waited = 0; revoked.length === 0 && waited < 5000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.like(revoked[0], { tenantId: ids.alpha, sessionId: session });
  await cli(['tenant', 'remove', 'alpha', '--yes'], undefined, 1);
});

test('removing or resetting needs the root connection: the owner alone is refused, nothing changed', async (t) => {
  const { owner, target, ids } = await setup(t);
  const before = await rowsOf(owner, ids.alpha);
  const split = {
    DATABASE_OWNER_URL: target.ownerUrl,
    DATABASE_AUTHENTICATOR_URL: target.authenticatorUrl,
  };
  for (const command of ['remove', 'reset']) {
    const run = await runCli(['tenant', command, 'alpha', '--yes'], split);
    t.is(run.code, 1, run.output);
    t.regex(run.stderr, /needs a superuser .*run this with DATABASE_URL/);
  }
  // Nor does the owner get past the rules by calling the function itself, or by switching
  // triggers off first.
  await t.throwsAsync(
    owner.query('select * from weld_private.clear_tenant($1, true)', [ids.alpha]),
    { message: /runs with session_replication_role = replica/ },
  );
  await t.throwsAsync(owner.query('set session_replication_role = replica'), {
    message: /permission denied to set parameter "session_replication_role"/,
  });
  t.deepEqual(await rowsOf(owner, ids.alpha), before);
});

test('user enable and user role: the rules end sessions as for any path; refusals exit 1 or 2', async (t) => {
  const { owner, cli, userId } = await setup(t);
  const sessionOf = async (name: string) =>
    (
      await owner.query<{ id: string; tenant_id: string }>(
        `insert into weld_private.sessions (tenant_id, user_id)
         select tenant_id, id from weld_public.users where user_name = $1 returning id`,
        [name],
      )
    ).rows[0]!.id;
  const state = async (name: string, session: string) =>
    (
      await owner.query<{ role: string; active: boolean; reason: string | null }>(
        `select u.role, u.active, s.revoked_reason as reason
           from weld_public.users u join weld_private.sessions s on s.user_id = u.id
          where u.user_name = $1 and s.id = $2`,
        [name, session],
      )
    ).rows[0];

  const first = await sessionOf('viewer-alpha');
  const promoted = await cli(['user', 'role', 'alpha', 'Viewer-Alpha', 'engineer']);
  t.regex(promoted.stdout, /viewer-alpha|Viewer-Alpha/i);
  t.deepEqual(await state('viewer-alpha', first), {
    role: 'engineer',
    active: true,
    reason: 'role-changed',
  });

  await cli(['user', 'disable', 'alpha', 'viewer-alpha']);
  const enabled = await cli(['user', 'enable', 'alpha', 'viewer-alpha']);
  t.regex(enabled.stdout, /^enabled user viewer-alpha of alpha/m);
  const second = await sessionOf('viewer-alpha');
  t.deepEqual(await state('viewer-alpha', second), {
    role: 'engineer',
    active: true,
    reason: null,
  });

  // A demotion as well (its webhooks pause by the trigger every path shares: webhook-pause.test).
  await cli(['user', 'role', 'alpha', 'admin-alpha', 'viewer']);
  t.is(
    (
      await owner.query('select role from weld_public.users where id = $1', [
        await userId('admin-alpha'),
      ])
    ).rows[0].role,
    'viewer',
  );

  // What did not change is said so.
  t.regex(
    (await cli(['user', 'enable', 'alpha', 'viewer-alpha'])).stdout,
    /already enabled; nothing changed/,
  );
  t.regex(
    (await cli(['user', 'role', 'alpha', 'admin-alpha', 'viewer'])).stdout,
    /already viewer; nothing changed/,
  );
  t.regex(
    (await cli(['user', 'enable', 'alpha', 'nobody'], undefined, 1)).stderr,
    /no user 'nobody'/,
  );
  t.regex((await cli(['user', 'role', 'nowhere', 'x', 'admin'], undefined, 1)).stderr, /no tenant/);
  const bad = await cli(['user', 'role', 'alpha', 'viewer-alpha', 'god'], undefined, 2);
  t.regex(bad.stderr, /<role> must be one of viewer, inspector, engineer, admin/);
});

test('seed --append adds a project beside the data with no key or id in common; without it a tenant with data is refused', async (t) => {
  const { owner, cli, ids } = await setup(t);
  const refused = await cli(['seed', 'alpha'], undefined, 1);
  t.regex(refused.stderr, /already has ISOs; .* --append/);
  await cli(['seed', 'alpha', '--isos', '3', '--welds-per-iso', '2', '--append']);
  await cli(['seed', 'alpha', '--isos', '2', '--welds-per-iso', '2', '--append']);
  const { rows } = await owner.query<{ batch: string; isos: number }>(
    `select coalesce(substring(iso_number from '^(B[0-9]+)-'), 'first') as batch, count(*)::int as isos
       from weld_public.isos where tenant_id = $1 group by 1 order by 1`,
    [ids.alpha],
  );
  t.deepEqual(rows, [
    { batch: 'B2', isos: 3 },
    { batch: 'B3', isos: 2 },
    { batch: 'first', isos: 4 },
  ]);
  // Every natural key of a batch carries its prefix; the welders of each batch are its own.
  const stamps = await owner.query<{ stamp: string }>(
    'select stamp from weld_public.welders where tenant_id = $1',
    [ids.alpha],
  );
  t.true(stamps.rows.some((r) => r.stamp.startsWith('B2-')));
  t.true(stamps.rows.some((r) => r.stamp.startsWith('B3-')));
  // The ISO counts the rules keep agree with the welds of all three batches.
  const counts = await owner.query<{ welds: number; counted: number }>(
    `select (select count(*)::int from weld_public.welds where tenant_id = $1) as welds,
            (select sum(total)::int from weld_public.iso_weld_counts where tenant_id = $1) as counted`,
    [ids.alpha],
  );
  t.deepEqual(counts.rows[0], { welds: 20 + 6 + 4, counted: 30 });
  // A hand-made ISO numbered like a batch moves the next batch past it.
  await owner.query(
    `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'B7-MINE', 'L-7')`,
    [ids.alpha],
  );
  await cli(['seed', 'alpha', '--isos', '1', '--welds-per-iso', '1', '--append']);
  const next = await owner.query(
    `select count(*)::int as n from weld_public.isos where tenant_id = $1 and iso_number like 'B8-%'`,
    [ids.alpha],
  );
  t.is(next.rows[0].n, 1);
});

test('a removal waits for writes of the tenant in flight, and leaves none of them behind', async (t) => {
  const { owner, ids, rootUrl, target } = await setup(t);
  // A transaction of alpha's, open while the removal starts: it wrote an ISO and has not committed.
  const writer = await connectClient(target.ownerUrl);
  t.teardown(() => writer.end());
  await writer.query('begin');
  await writer.query(
    `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'LATE-1', 'L-LATE')`,
    [ids.alpha],
  );
  const removal = runCli(['tenant', 'remove', 'alpha', '--yes'], { DATABASE_URL: rootUrl });
  await new Promise((resolve) => setTimeout(resolve, 1500)); // the removal waits on the tenant
  await writer.query('commit');
  const done = await removal;
  t.is(done.code, 0, done.output);
  t.deepEqual(await rowsOf(owner, ids.alpha), {}, 'the late ISO went with the rest');
  // A write after the removal finds no tenant.
  await t.throwsAsync(
    writer.query(
      `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'LATE-2', 'L')`,
      [ids.alpha],
    ),
    { code: '23503' },
  );
});

test('a reset keeps the OAuth2 clients (and their users), a removal takes them', async (t) => {
  const { owner, cli, ids } = await setup(t);
  await cli(['client', 'add', 'alpha', 'ERP', '--scope', 'welds:read']);
  await cli(['tenant', 'reset', 'alpha', '--yes']);
  const clients = await owner.query(
    `select u.active from weld_private.oauth_clients c join weld_public.users u on u.id = c.user_id
      where c.tenant_id = $1`,
    [ids.alpha],
  );
  t.deepEqual(clients.rows, [{ active: true }]);
  await cli(['tenant', 'remove', 'alpha', '--yes']);
  t.is(
    (await owner.query('select count(*)::int as n from weld_private.oauth_clients')).rows[0].n,
    0,
  );
});

test("a reset or removed tenant's files leave the store with the housekeeping's sweep", async (t) => {
  const { owner, cli, ids, target } = await setup(t);
  const dir = await mkdtemp(path.join(tmpdir(), 'weld-cli-files-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const store: AttachmentStore = new LocalStore(path.join(dir, 'store'));
  const pool = createPool(target.authenticatorUrl, { max: 2, onError: () => {} });
  t.teardown(() => pool.end());
  // One file attached to an ISO of each tenant, put in the store as an upload would.
  const files: Record<'alpha' | 'bravo', StoreKey> = {} as never;
  for (const slug of ['alpha', 'bravo'] as const) {
    const bytes = Buffer.from(`%PDF-1.4 ${slug}\n`);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const file = path.join(dir, `${slug}.pdf`);
    await writeFile(file, bytes);
    files[slug] = { tenantId: ids[slug], sha256 };
    await store.put(files[slug], file, bytes.length, 'application/pdf');
    await owner.query(
      `insert into weld_hidden.attachment_files (tenant_id, sha256, size_bytes, content_type, put_at)
       values ($1, $2, $3, 'application/pdf', now() - interval '2 hours')`,
      [ids[slug], sha256, bytes.length],
    );
    await owner.query(
      `insert into weld_public.attachments (tenant_id, sha256, file_name, content_type, size_bytes, iso_id)
       select $1, $2, 'drawing.pdf', 'application/pdf', $3, i.id
         from weld_public.isos i where i.tenant_id = $1 limit 1`,
      [ids[slug], sha256, bytes.length],
    );
  }
  t.is(await sweepAttachmentFiles(pool, store), 0, 'both are attached');

  // A reset takes the attachments and keeps the file's row: unreferenced, it is swept.
  await cli(['tenant', 'reset', 'alpha', '--yes']);
  t.true(await store.has(files.alpha));
  t.is(await sweepAttachmentFiles(pool, store), 1);
  t.false(await store.has(files.alpha));

  // A removal takes every row of the tenant, and notes its files for the sweep.
  await cli(['tenant', 'remove', 'bravo', '--yes']);
  t.true(await store.has(files.bravo));
  t.is(await sweepAttachmentFiles(pool, store), 1);
  t.false(await store.has(files.bravo));
  t.is(
    (await owner.query('select count(*)::int as n from weld_private.attachment_files_left')).rows[0]
      .n,
    0,
  );
});
