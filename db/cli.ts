#!/usr/bin/env node
// weld-admin: administration of the service's database from a terminal.
//
// Passwords are read from standard input only (never the command line, where `ps` shows them).
//
// It reaches the database the server uses (same environment variables). With the embedded
// database it attaches to the cluster the running server started, or, when no server runs,
// starts the cluster for the duration of the command.
//
// Exit codes: 0 done; 1 refused or failed (with a one-line reason; nothing was written);
// 2 usage: an unknown command or option, a missing or malformed argument. Arguments are checked
// before the database is opened, so a usage error is quick and needs no database.
import { once } from 'node:events';
import fs from 'node:fs';
import { Writable } from 'node:stream';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type pg from 'pg';
import { analyzeCitus, renderCitusPlan } from './citus.ts';
import { ConfigError, loadDatabaseConfig } from './config.ts';
import { openMigratedDatabase } from './migrate.ts';
import {
  addClient,
  listClients,
  MAX_OVERLAP_HOURS,
  removeClient,
  rotateClient,
} from './oauth-clients.ts';
import {
  asAuthenticator,
  connectClient,
  createPool,
  onClientInTransaction,
  redactUrl,
  withContext,
  type DatabaseTarget,
  type SessionContext,
} from './database.ts';
import {
  addReportingLogin,
  listReportingLogins,
  LOGIN_NAME,
  removeReportingLogin,
  ReportingError,
  reportingUrl,
  TIMEOUT_SECONDS,
} from './reporting.ts';
import { addSigningKey } from './signing-keys.ts';
import { seedTenant, SeedError } from './seed/index.ts';
import {
  addOrigin,
  addTenant,
  clearTenant,
  listTenants,
  parseOrigin,
  removeOrigin,
  TenantError,
  tenantSize,
} from './tenants.ts';
import {
  addUser,
  disableUser,
  enableUser,
  listUsers,
  setPassword,
  setUserRole,
  UserError,
  userState,
} from './users.ts';
import { OAUTH_SCOPES, USER_ROLES, type OauthScope, type UserRole } from './vocabulary.ts';
import { loadWebhookSecretKeys, reencryptSecrets, SecretUnreadable } from './webhook-secrets.ts';
import { exportWelds, runImport } from './weld-register.ts';

class UsageError extends Error {}

/**
 * A command: its usage line, a parser that turns the arguments into what `run` needs (throwing
 * UsageError for anything malformed), and the work, given a connection as the owner role.
 */
interface Command<P> {
  usage: string;
  parse: (args: string[]) => P;
  run: (db: pg.Client, parsed: P, target: DatabaseTarget) => Promise<void>;
}
const command = <P>(c: Command<P>) => c as unknown as Command<unknown>;

/** node:util parseArgs, with exactly `names` positionals. */
function argv<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  names: string[],
  options: O,
) {
  const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  if (parsed.positionals.length !== names.length) {
    throw new UsageError(`expected ${names.map((n) => `<${n}>`).join(' ')}`);
  }
  return { positionals: parsed.positionals, values: parsed.values };
}

function wholeNumber(flag: string, value: string, max: number): number {
  const number = /^[0-9]{1,9}$/.test(value) ? Number(value) : NaN;
  if (!(number >= 1 && number <= max)) {
    throw new UsageError(`--${flag} must be a whole number from 1 to ${max}`);
  }
  return number;
}

function origin(value: string): string {
  try {
    return parseOrigin(value);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function requirePasswordStdin(flag: boolean | undefined): void {
  if (!flag) throw new UsageError('give the password on standard input, with --password-stdin');
}

async function passwordFromStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.replace(/\r?\n$/, '');
}

/** Why removing or resetting a tenant needs the root connection. */
const WHY_ROOT = 'removing data past the rules needs a superuser (triggers are switched off)';

/**
 * Asks before a command that deletes: the question on standard error, and the slug typed back on
 * standard input (a terminal, or a pipe for a script); --yes skips it. Anything else refuses.
 */
async function confirm(yes: boolean, question: string, slug: string): Promise<void> {
  if (yes) return;
  process.stderr.write(`${question}\nType the tenant's slug to go on (or run with --yes): `);
  let answer = '';
  for await (const chunk of process.stdin) {
    answer += String(chunk);
    if (answer.includes('\n')) break;
  }
  if (!process.stdin.isTTY) process.stderr.write('\n'); // the piped answer did not echo
  if (answer.split(/\r?\n/)[0]!.trim() !== slug) {
    throw new UserError('not confirmed; nothing was changed');
  }
}

const commands: Record<string, Command<unknown>> = {
  'tenant add': command({
    usage: 'tenant add <slug> --origin <origin> [--origin <origin>...] [--name <name>]',
    parse: (args) => {
      const { positionals, values } = argv(args, ['slug'], {
        origin: { type: 'string', multiple: true },
        name: { type: 'string' },
      });
      if (!values.origin?.length) throw new UsageError('a tenant needs at least one --origin');
      return { slug: positionals[0]!, name: values.name, origins: values.origin.map(origin) };
    },
    run: async (db, input) => {
      const tenant = await addTenant(db, input);
      console.log(`added tenant ${tenant.slug} (${tenant.id})`);
    },
  }),

  'tenant list': command({
    usage: 'tenant list',
    parse: (args) => argv(args, [], {}),
    run: async (db) => {
      const tenants = await listTenants(db);
      printTable(
        ['slug', 'name', 'origins', 'id'],
        tenants.map((t) => [t.slug, t.name, t.origins.join(' '), t.id]),
      );
    },
  }),

  'tenant origin add': command({
    usage: 'tenant origin add <slug> <origin>',
    parse: (args) => {
      const [slug, value] = argv(args, ['slug', 'origin'], {}).positionals;
      return { slug: slug!, origin: origin(value!) };
    },
    run: async (db, { slug, origin }) => {
      console.log(`${slug} is now served from ${await addOrigin(db, slug, origin)} as well`);
    },
  }),

  'tenant origin remove': command({
    usage: 'tenant origin remove <slug> <origin>',
    parse: (args) => {
      const [slug, value] = argv(args, ['slug', 'origin'], {}).positionals;
      return { slug: slug!, origin: origin(value!) };
    },
    run: async (db, { slug, origin }) => {
      console.log(`${slug} is no longer served from ${await removeOrigin(db, slug, origin)}`);
    },
  }),

  'tenant remove': command({
    usage: 'tenant remove <slug> [--yes]   (the tenant and all its data; asks unless --yes)',
    parse: (args) => {
      const { positionals, values } = argv(args, ['slug'], { yes: { type: 'boolean' } });
      return { slug: positionals[0]!, yes: values.yes ?? false };
    },
    run: async (db, { slug, yes }, target) => {
      const { isos, welds, users } = await tenantSize(db, slug);
      await confirm(
        yes,
        `Remove tenant ${slug} and all its data (${isos} ISOs, ${welds} welds, ${users} users)?`,
        slug,
      );
      await asRoot(
        target,
        async (root) => {
          const logins = (await listReportingLogins(root)).filter((l) => l.tenant === slug);
          for (const login of logins) await removeReportingLogin(root, slug, login.name);
          const { tables } = await clearTenant(root, slug, true);
          const rows = tables.reduce((sum, t) => sum + t.deleted, 0);
          console.log(
            `removed tenant ${slug}: ${rows.toLocaleString('en')} rows in ${tables.length} tables` +
              `${logins.length ? `, ${logins.length} reporting login(s)` : ''}; its sessions have ended`,
          );
        },
        WHY_ROOT,
      );
    },
  }),

  'tenant reset': command({
    usage:
      'tenant reset <slug> [--yes]   (its project data go; origins, users, keys, settings, rules, webhooks stay)',
    parse: (args) => {
      const { positionals, values } = argv(args, ['slug'], { yes: { type: 'boolean' } });
      return { slug: positionals[0]!, yes: values.yes ?? false };
    },
    run: async (db, { slug, yes }, target) => {
      const { isos, welds } = await tenantSize(db, slug);
      await confirm(
        yes,
        `Delete the project data of tenant ${slug} (${isos} ISOs, ${welds} welds, their records and events)? Its users, settings and rules stay.`,
        slug,
      );
      await asRoot(
        target,
        async (root) => {
          const { tables } = await clearTenant(root, slug, false);
          const rows = tables.reduce((sum, t) => sum + t.deleted, 0);
          console.log(
            `reset tenant ${slug}: ${rows.toLocaleString('en')} rows deleted in ${tables.length} tables; ` +
              'its origins, users, keys, settings, rules and webhooks are as they were',
          );
        },
        WHY_ROOT,
      );
    },
  }),

  'reporting add': command({
    usage: `reporting add <tenant-slug> <name> [--timeout-seconds N]   (prints its connection string)`,
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug', 'name'], {
        'timeout-seconds': { type: 'string', default: String(TIMEOUT_SECONDS.default) },
      });
      return {
        tenant: positionals[0]!,
        name: loginName(positionals[1]!),
        timeoutSeconds: wholeNumber(
          'timeout-seconds',
          values['timeout-seconds'],
          TIMEOUT_SECONDS.max,
        ),
      };
    },
    run: async (_db, input, target) =>
      asRoot(target, async (root) =>
        console.log(await addReportingLogin(root, target.ownerUrl, input)),
      ),
  }),

  'reporting url': command({
    usage: 'reporting url <tenant-slug> <name>   (a new password: the one before stops working)',
    parse: (args) => {
      const [tenant, name] = argv(args, ['tenant-slug', 'name'], {}).positionals;
      return { tenant: tenant!, name: loginName(name!) };
    },
    run: async (_db, { tenant, name }, target) =>
      asRoot(target, async (root) =>
        console.log(await reportingUrl(root, target.ownerUrl, tenant, name)),
      ),
  }),

  'reporting remove': command({
    usage: 'reporting remove <tenant-slug> <name>',
    parse: (args) => {
      const [tenant, name] = argv(args, ['tenant-slug', 'name'], {}).positionals;
      return { tenant: tenant!, name: loginName(name!) };
    },
    run: async (_db, { tenant, name }, target) =>
      asRoot(target, async (root) => {
        await removeReportingLogin(root, tenant, name);
        console.log(`removed the reporting login ${name} of ${tenant}; its sessions were ended`);
      }),
  }),

  'reporting list': command({
    usage: 'reporting list',
    parse: (args) => argv(args, [], {}),
    run: async (_db, _input, target) =>
      asRoot(target, async (root) =>
        printTable(
          ['tenant', 'name', 'role', 'timeout', 'created'],
          (await listReportingLogins(root)).map((l) => [
            l.tenant,
            l.name,
            l.roleName,
            `${l.statementTimeoutSeconds} s`,
            l.createdAt.toISOString(),
          ]),
        ),
      ),
  }),

  seed: command({
    usage:
      'seed <tenant-slug> [--isos N] [--welds-per-iso M] [--seed S] [--append]   (--append: beside the data it has)',
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug'], {
        isos: { type: 'string', default: '100' },
        'welds-per-iso': { type: 'string', default: '50' },
        seed: { type: 'string', default: '1' },
        append: { type: 'boolean' },
      });
      return {
        tenant: positionals[0]!,
        append: values.append ?? false,
        isos: wholeNumber('isos', values.isos, 100_000),
        weldsPerIso: wholeNumber('welds-per-iso', values['welds-per-iso'], 10_000),
        seed: wholeNumber('seed', values.seed, 2 ** 31 - 1),
      };
    },
    run: async (db, { tenant, ...options }) => {
      const started = Date.now();
      const progress = process.stderr.isTTY
        ? (written: number, total: number) =>
            process.stderr.write(
              `\rseeding: ${written.toLocaleString('en')} of ${total.toLocaleString('en')} welds`,
            )
        : undefined;
      await db.query('begin');
      const summary = await seedTenant(db, tenant, {
        ...options,
        ...(progress && { onProgress: progress }),
      });
      await db.query('commit');
      if (progress) process.stderr.write('\n');
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(
        `seeded ${tenant}: ${summary.isos} ISOs, ${summary.welds} welds, ${summary.welders} welders, ` +
          `${summary.historyRows} status changes, ${summary.ndtRecords} NDT records, ` +
          `${summary.filmIntervals} film intervals in ${seconds} s`,
      );
    },
  }),

  'import welds': command({
    usage: 'import welds <tenant-slug> <file.csv> [--dry-run]',
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug', 'file.csv'], {
        'dry-run': { type: 'boolean' },
      });
      return { tenant: positionals[0]!, file: positionals[1]!, dryRun: values['dry-run'] ?? false };
    },
    run: async (db, { tenant, file, dryRun }, target) => {
      const tenantId = await tenantIdOf(db, tenant);
      const source = fs.createReadStream(file);
      await once(source, 'open').catch((error: Error) => {
        throw new UserError(`cannot read ${file}: ${error.message}`);
      });
      const progress = progressReporter('rows');
      const started = Date.now();
      const outcome = await asEngineer(target, tenantId, (pool, context) =>
        runImport(pool, context, source, {
          dryRun,
          onProgress: ({ phase, rows }) => progress.report(phase, rows),
        }),
      );
      progress.done();
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      if (!outcome.ok) {
        for (const e of outcome.errors) {
          const where = [`line ${e.line}`, e.column].filter(Boolean).join(', ');
          const value = e.value === null ? '' : ` (${JSON.stringify(e.value)})`;
          console.error(`${where}: ${e.detail}${value}`);
        }
        const more = outcome.errorCount - outcome.errors.length;
        throw new ImportRefused(
          `${outcome.errorCount} error${outcome.errorCount === 1 ? '' : 's'}` +
            `${more > 0 ? ` (the first ${outcome.errors.length} shown)` : ''}; nothing was imported`,
        );
      }
      const counts = outcome.dryRun ? outcome.counts : outcome.record;
      const n = (value: number) => value.toLocaleString('en');
      const summary =
        `${n(counts.rows)} rows: ${n(counts.created)} created, ${n(counts.updated)} updated, ` +
        `${n(counts.unchanged)} unchanged, ${n(counts.isosCreated)} ISOs created`;
      console.log(
        outcome.dryRun
          ? `dry run of ${file} for ${tenant}: ${summary}; nothing was written (${seconds} s)`
          : `imported ${file} into ${tenant}: ${summary} in ${seconds} s (import ${outcome.record.id})`,
      );
    },
  }),

  'export welds': command({
    usage: 'export welds <tenant-slug> [--iso <isoNumber>]   (the CSV goes to standard output)',
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug'], { iso: { type: 'string' } });
      return { tenant: positionals[0]!, iso: values.iso };
    },
    run: async (db, { tenant, iso }, target) => {
      const tenantId = await tenantIdOf(db, tenant);
      const progress = progressReporter('rows');
      let lines = -1; // the header is not a weld
      const stdout = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
          progress.report('exporting', Math.max(lines, 0));
          if (process.stdout.write(chunk)) done();
          else process.stdout.once('drain', () => done());
        },
      });
      const where =
        iso === undefined ? { sql: '', values: [] } : { sql: 'i.iso_number = $1', values: [iso] };
      const rows = await asEngineer(target, tenantId, (pool, context) =>
        withContext(pool, context, (client) => exportWelds(client, where, stdout)),
      );
      progress.done();
      console.error(`exported ${rows.toLocaleString('en')} welds of ${tenant}`);
    },
  }),

  'user add': command({
    usage: `user add <tenant-slug> <userName> --role ${USER_ROLES.join('|')} --password-stdin [--name <name>]`,
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug', 'userName'], {
        role: { type: 'string' },
        name: { type: 'string' },
        'password-stdin': { type: 'boolean' },
      });
      if (!USER_ROLES.includes(values.role as UserRole)) {
        throw new UsageError(`--role must be one of ${USER_ROLES.join(', ')}`);
      }
      requirePasswordStdin(values['password-stdin']);
      const [tenant, userName] = positionals;
      return { tenant: tenant!, userName: userName!, role: values.role!, name: values.name };
    },
    run: async (db, input) => {
      const user = await addUser(db, {
        ...input,
        displayName: input.name,
        password: await passwordFromStdin(),
      });
      console.log(`added user ${user.userName} (${user.role}) to ${input.tenant}`);
    },
  }),

  'user list': command({
    usage: 'user list <tenant-slug>',
    parse: (args) => argv(args, ['tenant-slug'], {}).positionals[0]!,
    run: async (db, tenant) => {
      const users = await listUsers(db, tenant);
      printTable(
        ['userName', 'displayName', 'role', 'active', 'id'],
        users.map((u) => [u.userName, u.displayName, u.role, u.active ? 'yes' : 'no', u.id]),
      );
    },
  }),

  'user disable': command({
    usage: 'user disable <tenant-slug> <userName>',
    parse: (args) => argv(args, ['tenant-slug', 'userName'], {}).positionals,
    run: async (db, [tenant, userName]) => {
      await disableUser(db, tenant!, userName!);
      console.log(
        `disabled user ${userName} of ${tenant}; its sessions have ended, and the webhooks it ` +
          'registered are paused until an admin resumes them',
      );
    },
  }),

  'user enable': command({
    usage: 'user enable <tenant-slug> <userName>',
    parse: (args) => argv(args, ['tenant-slug', 'userName'], {}).positionals,
    run: async (db, [tenant, userName]) => {
      if ((await userState(db, tenant!, userName!))?.active) {
        console.log(`${userName} of ${tenant} is already enabled; nothing changed`);
        return;
      }
      await enableUser(db, tenant!, userName!);
      console.log(
        `enabled user ${userName} of ${tenant}; it signs in again (the webhooks it registered stay ` +
          'paused until an admin resumes them)',
      );
    },
  }),

  'user role': command({
    usage: `user role <tenant-slug> <userName> ${USER_ROLES.join('|')}`,
    parse: (args) => {
      const [tenant, userName, role] = argv(args, ['tenant-slug', 'userName', 'role'], {})
        .positionals as [string, string, string];
      if (!USER_ROLES.includes(role as UserRole)) {
        throw new UsageError(`<role> must be one of ${USER_ROLES.join(', ')}`);
      }
      return { tenant, userName, role: role as UserRole };
    },
    run: async (db, { tenant, userName, role }) => {
      if ((await userState(db, tenant, userName))?.role === role) {
        console.log(`${userName} of ${tenant} is already ${role}; nothing changed`);
        return;
      }
      await setUserRole(db, tenant, userName, role);
      console.log(
        `${userName} of ${tenant} is now ${role}; its sessions have ended (its tokens carried the ` +
          'old role): it signs in again',
      );
    },
  }),

  'user set-password': command({
    usage: 'user set-password <tenant-slug> <userName> --password-stdin',
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug', 'userName'], {
        'password-stdin': { type: 'boolean' },
      });
      requirePasswordStdin(values['password-stdin']);
      return positionals;
    },
    run: async (db, [tenant, userName]) => {
      await setPassword(db, tenant!, userName!, await passwordFromStdin());
      console.log(`set the password of ${userName} of ${tenant}`);
    },
  }),

  'client add': command({
    usage: `client add <tenant-slug> <name> --scope <scope> [--scope <scope>...]   (prints the secret once; scopes: ${OAUTH_SCOPES.join(' ')})`,
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug', 'name'], {
        scope: { type: 'string', multiple: true },
      });
      const scopes = values.scope ?? [];
      if (scopes.length === 0) throw new UsageError('a client needs at least one --scope');
      const unknown = scopes.filter((s) => !(OAUTH_SCOPES as readonly string[]).includes(s));
      if (unknown.length > 0) {
        throw new UsageError(
          `unknown scope ${unknown.join(', ')}: one of ${OAUTH_SCOPES.join(', ')}`,
        );
      }
      return { tenant: positionals[0]!, name: positionals[1]!, scopes: scopes as OauthScope[] };
    },
    run: async (db, { tenant, name, scopes }) => {
      const { client, clientSecret } = await inTenant(db, tenant, (c) =>
        addClient(c, name, scopes),
      );
      console.log(`added OAuth2 client ${client.name} to ${tenant} (role ${client.role})`);
      console.log(`client_id     ${client.clientId}`);
      console.log(`client_secret ${clientSecret}`);
      console.error(
        'weld-admin: the secret is shown this once; keep it where the integration reads it',
      );
    },
  }),

  'client list': command({
    usage: 'client list <tenant-slug>',
    parse: (args) => argv(args, ['tenant-slug'], {}).positionals[0]!,
    run: async (db, tenant) => {
      const clients = await inTenant(db, tenant, (c) => listClients(c));
      printTable(
        ['clientId', 'name', 'scopes', 'role', 'lastUsed'],
        clients.map((c) => [
          c.clientId,
          c.name,
          c.scopes.join(' '),
          c.role,
          c.lastUsedAt ?? 'never',
        ]),
      );
    },
  }),

  'client rotate': command({
    usage: `client rotate <tenant-slug> <client-id> [--overlap-hours N]   (a new secret; the old one works N hours, default 24)`,
    parse: (args) => {
      const { positionals, values } = argv(args, ['tenant-slug', 'client-id'], {
        'overlap-hours': { type: 'string', default: '24' },
      });
      const hours = values['overlap-hours'];
      if (!/^[0-9]{1,3}$/.test(hours) || Number(hours) > MAX_OVERLAP_HOURS) {
        throw new UsageError(
          `--overlap-hours must be a whole number from 0 to ${MAX_OVERLAP_HOURS}`,
        );
      }
      return { tenant: positionals[0]!, clientId: positionals[1]!, overlapHours: Number(hours) };
    },
    run: async (db, { tenant, clientId, overlapHours }) => {
      const { clientSecret } = await inTenant(db, tenant, (c) =>
        rotateClient(c, clientId, overlapHours),
      );
      console.log(`client_secret ${clientSecret}`);
      console.error(
        `weld-admin: rotated ${clientId}; ${overlapHours ? `the old secret works ${overlapHours} more hour(s)` : 'the old secret no longer works'}. The new one is shown this once`,
      );
    },
  }),

  'client remove': command({
    usage: 'client remove <tenant-slug> <client-id>   (its secrets go; its tokens end at once)',
    parse: (args) => argv(args, ['tenant-slug', 'client-id'], {}).positionals,
    run: async (db, [tenant, clientId]) => {
      if (!(await inTenant(db, tenant!, (c) => removeClient(c, clientId!)))) {
        throw new UserError(`no OAuth2 client '${clientId}' in tenant '${tenant}'`);
      }
      console.log(`removed OAuth2 client ${clientId} of ${tenant}; its tokens have ended`);
    },
  }),

  'keys rotate': command({
    usage: 'keys rotate <tenant-slug>',
    parse: (args) => argv(args, ['tenant-slug'], {}).positionals[0]!,
    run: async (db, slug, target) => {
      const tenant = (await listTenants(db)).find((t) => t.slug === slug);
      if (!tenant) throw new UserError(`no tenant '${slug}'`);
      // The key functions belong to the server's own role, so the CLI acts as it for this.
      const pool = createPool(target.authenticatorUrl, { max: 1 });
      try {
        const kid = await asAuthenticator(pool, tenant.id, (c) => addSigningKey(c, true));
        console.log(
          `${slug} now signs with key ${kid}; servers switch to it within a minute, and the ` +
            'previous key stays trusted until its tokens expire',
        );
      } finally {
        await pool.end();
      }
    },
  }),

  'webhooks reencrypt': command({
    usage:
      'webhooks reencrypt   (seals every webhook secret with WEBHOOK_SECRET_KEY; the keys of WEBHOOK_SECRET_KEYS_OLD open the others)',
    parse: (args) => argv(args, [], {}),
    run: async (db) => {
      // The last step of a key rotation (docs/operating.md, "Webhook secret keys"): all or nothing.
      const keys = loadWebhookSecretKeys();
      try {
        const count = await reencryptSecrets(db, keys);
        console.log(
          `sealed ${count} webhook secret${count === 1 ? '' : 's'} with key ${keys.current.id}; ` +
            'every secret is now sealed with it, and the old keys may go',
        );
      } catch (error) {
        if (!(error instanceof SecretUnreadable)) throw error;
        throw new UserError(
          `${error.message} (add it to WEBHOOK_SECRET_KEYS_OLD); nothing was changed`,
        );
      }
    },
  }),

  'db url': command({
    usage: 'db url',
    parse: (args) => argv(args, [], {}),
    run: (_db, _parsed, target) => {
      // For a DBA's psql. The owner role owns every object and bypasses row security, so it sees
      // every tenant: treat the URL as the secret it is.
      console.log(target.ownerUrl);
      if (target.embedded?.startedHere) {
        console.error(
          `weld-admin: note: no server is running, so the embedded PostgreSQL stops with this ` +
            `command; start the server (npm start), then connect (${redactUrl(target.ownerUrl)})`,
        );
      }
      return Promise.resolve();
    },
  }),

  sql: command({
    usage:
      'sql <statement>   (as the owner, who sees every tenant: rows go to standard output as JSON lines)',
    parse: (args) => argv(args, ['statement'], {}).positionals[0]!,
    run: async (db, statement) => {
      // For a DBA with Node alone: the embedded PostgreSQL brings no psql. One round trip, so
      // several statements separated by ';' run in one implicit transaction, all or none.
      const results = await db.query(statement);
      for (const result of Array.isArray(results) ? results : [results]) {
        const { command: tag, rowCount, rows, fields } = result as pg.QueryResult;
        if (fields.length > 0) for (const row of rows) console.log(JSON.stringify(row));
        else console.log(`${tag}${rowCount === null ? '' : ` ${rowCount}`}`);
      }
    },
  }),

  'citus-plan': command({
    usage: 'citus-plan   (the SQL that distributes the schema with Citus goes to standard output)',
    parse: (args) => argv(args, [], {}),
    run: async (db) => {
      // docs/operating.md, "Scaling out"; db/citus.ts reads the catalog and holds the rules.
      const analysis = await analyzeCitus(db);
      if (analysis.problems.length > 0) {
        for (const problem of analysis.problems) console.error(problem);
        const count = analysis.problems.length;
        throw new CitusPlanRefused(
          `the schema cannot be distributed by tenant_id: ${count} problem${count === 1 ? '' : 's'} ` +
            '(above); no plan written',
        );
      }
      const { rows } = await db.query<{ migration: string | null }>(
        'select weld_hidden.applied_migration() as migration',
      );
      process.stdout.write(renderCitusPlan(analysis, { migration: rows[0]?.migration ?? null }));
    },
  }),
};

const USAGE = ['usage:', ...Object.values(commands).map((c) => `  weld-admin ${c.usage}`)].join(
  '\n',
);

class ImportRefused extends Error {}

function loginName(value: string): string {
  if (!LOGIN_NAME.test(value)) {
    throw new UsageError('<name> must be 1 to 40 lower-case letters, digits and -, a letter first');
  }
  return value;
}

/**
 * Work only the root connection (DATABASE_URL, or the embedded cluster's) may do, not the owner: a
 * reporting login is a PostgreSQL role, which only a role that may create roles can make, and
 * removing or resetting a tenant switches triggers off, which only a superuser may.
 */
async function asRoot(
  target: DatabaseTarget,
  work: (root: pg.Client) => Promise<void>,
  why = 'reporting logins are PostgreSQL roles',
) {
  if (!target.rootUrl) {
    throw new ReportingError(
      `${why}: run this with DATABASE_URL (a role that may create roles) or the embedded database`,
    );
  }
  const root = await connectClient(target.rootUrl);
  try {
    await work(root);
  } finally {
    await root.end();
  }
}
class CitusPlanRefused extends Error {}

/**
 * Runs `work` in one transaction as the owner inside the tenant (what the SQL functions of the
 * tenant's own things read it from), for the commands that manage OAuth2 clients. A refusal of
 * the SQL (WD001 no such client, a bad value) becomes the one-line message of a UserError.
 */
async function inTenant<T>(db: pg.Client, slug: string, work: (db: pg.Client) => Promise<T>) {
  const tenant = await tenantIdOf(db, slug);
  try {
    return await onClientInTransaction(db, async () => {
      await db.query("select set_config('jwt.claims.tenant_id', $1, true)", [tenant]);
      return work(db);
    });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'WD001') throw new UserError(`no OAuth2 client of that id in tenant '${slug}'`);
    if (code === 'WD007' || code === '23514') throw new UserError((error as Error).message);
    throw error;
  }
}

async function tenantIdOf(db: pg.Client, slug: string): Promise<string> {
  const tenant = (await listTenants(db)).find((t) => t.slug === slug);
  if (!tenant) throw new UserError(`no tenant '${slug}'`);
  return tenant.id;
}

/**
 * Import and export act as an engineer of the tenant (no user: the import's record says the
 * CLI), through the server's own role, so row security and grants hold them as they hold a
 * request.
 */
async function asEngineer<T>(
  target: DatabaseTarget,
  tenantId: string,
  work: (pool: pg.Pool, context: SessionContext) => Promise<T>,
): Promise<T> {
  const pool = createPool(target.authenticatorUrl, { max: 1 });
  try {
    return await work(pool, { role: 'weld_engineer', tenantId });
  } finally {
    await pool.end();
  }
}

/**
 * Progress on standard error: on a terminal one line redrawn (rows, rows per second), otherwise
 * a plain line every five seconds, for logs.
 */
function progressReporter(unit: string) {
  const terminal = process.stderr.isTTY;
  const started = Date.now();
  let phase = '';
  let last = 0;
  let drawn = false;
  return {
    report(now: string, count: number) {
      const time = Date.now();
      if (terminal ? now === phase && time - last < 200 : time - Math.max(last, started) < 5000) {
        return; // (in a log, a line every five seconds, and none for a job done sooner)
      }
      const rate = count / Math.max((time - started) / 1000, 0.001);
      const text = `${now}: ${count.toLocaleString('en')} ${unit} (${Math.round(rate).toLocaleString('en')} ${unit}/s)`;
      if (terminal) process.stderr.write(`\r\x1b[2K${text}`);
      else console.error(text);
      drawn = terminal;
      phase = now;
      last = time;
    },
    done() {
      if (drawn) process.stderr.write('\n');
    },
  };
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows]) {
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  }
}

/** The command named by the longest matching prefix of the arguments (one to three words). */
function findCommand(args: string[]): { name: string; rest: string[] } | undefined {
  for (const words of [3, 2, 1]) {
    const name = args.slice(0, words).join(' ');
    if (args.length >= words && commands[name]) return { name, rest: args.slice(words) };
  }
  return undefined;
}

async function main(args: string[]): Promise<number> {
  if (args.length === 1 && ['--help', '-h', 'help'].includes(args[0]!)) {
    console.log(USAGE);
    return 0;
  }
  const found = findCommand(args);
  if (!found) {
    if (args.length > 0) console.error(`weld-admin: unknown command '${args.join(' ')}'`);
    console.error(USAGE);
    return 2;
  }
  const { run, parse, usage } = commands[found.name]!;
  let parsed: unknown;
  try {
    parsed = parse(found.rest);
  } catch (error) {
    const usageError =
      error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    if (!usageError) throw error;
    console.error(`weld-admin: ${(error as Error).message}\nusage: weld-admin ${usage}`);
    return 2;
  }

  let target: DatabaseTarget | undefined;
  let db: pg.Client | undefined;
  try {
    const config = loadDatabaseConfig();
    target = await openMigratedDatabase(config.database, { migrate: config.migrateOnStart });
    db = await connectClient(target.ownerUrl);
    await run(db, parsed, target);
    return 0;
  } catch (error) {
    const known = [
      TenantError,
      SeedError,
      UserError,
      ConfigError,
      ImportRefused,
      CitusPlanRefused,
      ReportingError,
    ].some((kind) => error instanceof kind);
    console.error(`weld-admin: ${known ? '' : 'failed: '}${(error as Error).message}`);
    return 1;
  } finally {
    await db?.end().catch(() => {});
    await target?.release();
  }
}

process.exitCode = await main(process.argv.slice(2));
