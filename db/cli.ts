#!/usr/bin/env node
// weld-admin: administration of the service's database from a terminal.
//
//   weld-admin tenant add <slug> --origin <origin> [--origin <origin>...] [--name <name>]
//   weld-admin tenant list
//   weld-admin seed <tenant-slug> [--isos N] [--welds-per-iso M] [--seed S]
//   weld-admin user add <tenant-slug> <userName> --role <role> --password-stdin [--name <name>]
//   weld-admin user list <tenant-slug>
//   weld-admin user disable <tenant-slug> <userName>
//   weld-admin user set-password <tenant-slug> <userName> --password-stdin
//   weld-admin keys rotate <tenant-slug>
//
// Passwords are read from standard input only (never the command line, where `ps` shows them).
//
// It reaches the database the server uses (same environment variables). With the embedded
// database it attaches to the cluster the running server started, or, when no server runs,
// starts the cluster for the duration of the command. Exit codes: 0 done, 1 refused or failed
// (with a one-line reason), 2 usage.
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ConfigError, loadDatabaseConfig } from './config.ts';
import { openMigratedDatabase } from './migrate.ts';
import { asAuthenticator, connectClient, createPool, type DatabaseTarget } from './database.ts';
import { addSigningKey } from './signing-keys.ts';
import { seedTenant, SeedError } from './seed.ts';
import { addTenant, listTenants, TenantError } from './tenants.ts';
import { addUser, disableUser, listUsers, setPassword, UserError } from './users.ts';

const USAGE = `usage:
  weld-admin tenant add <slug> --origin <origin> [--origin <origin>...] [--name <name>]
  weld-admin tenant list
  weld-admin seed <tenant-slug> [--isos N] [--welds-per-iso M] [--seed S]
  weld-admin user add <tenant-slug> <userName> --role viewer|inspector|engineer|admin --password-stdin [--name <name>]
  weld-admin user list <tenant-slug>
  weld-admin user disable <tenant-slug> <userName>
  weld-admin user set-password <tenant-slug> <userName> --password-stdin
  weld-admin keys rotate <tenant-slug>`;

class UsageError extends Error {}

type Command = (db: pg.Client, args: string[], target: DatabaseTarget) => Promise<void>;

/** Positionals of a command, exactly `names` of them. */
function positional(positionals: string[], names: string[]): string[] {
  if (positionals.length !== names.length) {
    throw new UsageError(`expected ${names.map((n) => `<${n}>`).join(' ')}`);
  }
  return positionals;
}

async function passwordFromStdin(flag: boolean | undefined): Promise<string> {
  if (!flag) throw new UsageError('give the password on standard input, with --password-stdin');
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text.replace(/\r?\n$/, '');
}

const commands: Record<string, Command> = {
  'tenant add': async (db, args) => {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { origin: { type: 'string', multiple: true }, name: { type: 'string' } },
    });
    if (positionals.length !== 1) throw new UsageError('tenant add takes one <slug>');
    const tenant = await addTenant(db, {
      slug: positionals[0]!,
      name: values.name,
      origins: values.origin ?? [],
    });
    console.log(`added tenant ${tenant.slug} (${tenant.id})`);
  },

  'tenant list': async (db, args) => {
    parseArgs({ args, options: {} });
    const tenants = await listTenants(db);
    printTable(
      ['slug', 'name', 'origins', 'id'],
      tenants.map((t) => [t.slug, t.name, t.origins.join(' '), t.id]),
    );
  },

  seed: async (db, args) => {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        isos: { type: 'string', default: '100' },
        'welds-per-iso': { type: 'string', default: '50' },
        seed: { type: 'string', default: '1' },
      },
    });
    if (positionals.length !== 1) throw new UsageError('seed takes one <tenant-slug>');
    const started = Date.now();
    const progress = process.stderr.isTTY
      ? (written: number, total: number) =>
          process.stderr.write(
            `\rseeding: ${written.toLocaleString('en')} of ${total.toLocaleString('en')} welds`,
          )
      : undefined;
    await db.query('begin');
    const summary = await seedTenant(db, positionals[0]!, {
      isos: Number(values.isos),
      weldsPerIso: Number(values['welds-per-iso']),
      seed: Number(values.seed),
      ...(progress && { onProgress: progress }),
    });
    await db.query('commit');
    if (progress) process.stderr.write('\n');
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `seeded ${positionals[0]}: ${summary.isos} ISOs, ${summary.welds} welds, ${summary.welders} welders, ` +
        `${summary.historyRows} status changes, ${summary.ndtRecords} NDT records, ` +
        `${summary.filmIntervals} film intervals in ${seconds} s`,
    );
  },

  'user add': async (db, args) => {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        role: { type: 'string' },
        name: { type: 'string' },
        'password-stdin': { type: 'boolean' },
      },
    });
    const [tenant, userName] = positional(positionals, ['tenant-slug', 'userName']);
    if (!values.role) throw new UsageError('--role is required');
    const password = await passwordFromStdin(values['password-stdin']);
    const user = await addUser(db, {
      tenant: tenant!,
      userName: userName!,
      role: values.role,
      displayName: values.name,
      password,
    });
    console.log(`added user ${user.userName} (${user.role}) to ${tenant}`);
  },

  'user list': async (db, args) => {
    const [tenant] = positional(parseArgs({ args, allowPositionals: true }).positionals, [
      'tenant-slug',
    ]);
    const users = await listUsers(db, tenant!);
    printTable(
      ['userName', 'displayName', 'role', 'active', 'id'],
      users.map((u) => [u.userName, u.displayName, u.role, u.active ? 'yes' : 'no', u.id]),
    );
  },

  'user disable': async (db, args) => {
    const { positionals } = parseArgs({ args, allowPositionals: true });
    const [tenant, userName] = positional(positionals, ['tenant-slug', 'userName']);
    await disableUser(db, tenant!, userName!);
    console.log(`disabled user ${userName} of ${tenant}; its sessions are revoked`);
  },

  'user set-password': async (db, args) => {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { 'password-stdin': { type: 'boolean' } },
    });
    const [tenant, userName] = positional(positionals, ['tenant-slug', 'userName']);
    await setPassword(db, tenant!, userName!, await passwordFromStdin(values['password-stdin']));
    console.log(`set the password of ${userName} of ${tenant}`);
  },

  'keys rotate': async (db, args, target) => {
    const [slug] = positional(parseArgs({ args, allowPositionals: true }).positionals, [
      'tenant-slug',
    ]);
    const tenant = (await listTenants(db)).find((t) => t.slug === slug);
    if (!tenant) throw new UserError(`no tenant '${slug}'`);
    // The key functions belong to the server's own role, so the CLI acts as it for this.
    const pool = createPool(target.authenticatorUrl, { max: 1 });
    try {
      const kid = await asAuthenticator(pool, tenant.id, (c) => addSigningKey(c, true));
      console.log(
        `${slug} now signs with key ${kid}; the previous key stays trusted until its tokens expire`,
      );
    } finally {
      await pool.end();
    }
  },
};

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

async function main(argv: string[]): Promise<number> {
  // Commands are one word (seed) or two (tenant add).
  const words = commands[argv.slice(0, 2).join(' ')] ? 2 : 1;
  const command = commands[argv.slice(0, words).join(' ')];
  if (!command) {
    console.error(USAGE);
    return 2;
  }
  let target;
  try {
    const config = loadDatabaseConfig();
    target = await openMigratedDatabase(config.database, { migrate: config.migrateOnStart });
  } catch (error) {
    console.error(`weld-admin: ${(error as Error).message}`);
    return 1;
  }
  let db: pg.Client | undefined;
  try {
    db = await connectClient(target.ownerUrl);
    await command(db, argv.slice(words), target);
    return 0;
  } catch (error) {
    if (
      error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      console.error(`weld-admin: ${(error as Error).message}\n${USAGE}`);
      return 2;
    }
    const known = [TenantError, SeedError, UserError, ConfigError].some(
      (kind) => error instanceof kind,
    );
    console.error(`weld-admin: ${known ? '' : 'failed: '}${(error as Error).message}`);
    return 1;
  } finally {
    await db?.end().catch(() => {});
    await target.release();
  }
}

process.exitCode = await main(process.argv.slice(2));
