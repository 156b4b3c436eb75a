// The read-only SQL door for BI tools (F17): `weld-admin reporting add|url|remove|list`. Each
// reporting login is a PostgreSQL LOGIN role in weld_reporting, which may read the report views
// and the tables analysts join them with, and nothing else (migration 000030). Its tenant is
// fixed by the login itself (weld_private.reporting_logins, read by weld_hidden.current_tenant_id
// whenever the session's user is a reporting login), so no SET of a claim changes it; its
// statement timeout is enforced by the service (weld_hidden.reap_reporting_sessions cancels a
// statement that runs longer, whatever the session SET), since PostgreSQL lets any session raise
// its own statement_timeout.
//
// Creating a role needs CREATEROLE, which the owner role lacks: these run on the root connection
// (DATABASE_URL, or the embedded cluster's). The password is sent to PostgreSQL as a SCRAM verifier,
// never as text a statement log could keep; it is printed once, in the connection string.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';
import { onClientInTransaction } from './database.ts';

export class ReportingError extends Error {}

export interface ReportingLogin {
  tenant: string;
  name: string;
  roleName: string;
  statementTimeoutSeconds: number;
  createdAt: Date;
}

/** A login's name: what `reporting url` and `remove` take (the role's own name is random). */
export const LOGIN_NAME = /^[a-z][a-z0-9-]{0,39}$/;

/** The statement limit of a login, 1 s to 10 min (default 30 s). */
export const TIMEOUT_SECONDS = { min: 1, max: 600, default: 30 };

/**
 * Adds a reporting login for the tenant `slug`, named `name`, and answers its connection string
 * (with a new password). The role's name is random (weld_bi_ and 12 hex digits): role names are
 * visible to every login of the cluster, and a tenant's slug in them would tell other tenants'
 * analysts who else is served.
 */
export async function addReportingLogin(
  root: pg.ClientBase,
  ownerUrl: string,
  input: { tenant: string; name: string; timeoutSeconds: number },
): Promise<string> {
  const roleName = `weld_bi_${randomBytes(6).toString('hex')}`;
  const password = randomBytes(24).toString('base64url');
  await onClientInTransaction(root, async () => {
    const tenant = await tenantId(root, input.tenant);
    const taken = await root.query(
      'select from weld_private.reporting_logins where tenant_id = $1 and name = $2',
      [tenant, input.name],
    );
    if (taken.rowCount) {
      throw new ReportingError(`${input.tenant} already has a reporting login '${input.name}'`);
    }
    const role = pg.escapeIdentifier(roleName);
    await root.query(
      `create role ${role} login inherit nosuperuser nocreatedb nocreaterole nobypassrls
         connection limit 5 in role weld_reporting password ${pg.escapeLiteral(scramVerifier(password))}`,
    );
    // Defaults for a BI tool's session; none of them is the guard (a session may SET them): the
    // grants are (nothing to write), and the service's reaper is (the timeout).
    await root.query(
      `alter role ${role} set statement_timeout = ${pg.escapeLiteral(`${input.timeoutSeconds}s`)}`,
    );
    await root.query(`alter role ${role} set default_transaction_read_only = on`);
    await root.query(`alter role ${role} set idle_in_transaction_session_timeout = '60s'`);
    await root.query(`alter role ${role} set search_path = weld_reports, weld_public`);
    // A bound on the temporary files one query may write (sorts, hashes): only a superuser may
    // set or raise it, so the session cannot (with a root that is not one, it stays unbounded).
    const { rows } = await root.query<{ superuser: boolean }>(
      'select rolsuper as superuser from pg_roles where rolname = current_user',
    );
    if (rows[0]?.superuser) await root.query(`alter role ${role} set temp_file_limit = '1GB'`);
    // This database only (the service may share its cluster with others).
    await root.query(
      `grant connect on database ${pg.escapeIdentifier(await database(root))} to ${role}`,
    );
    await root.query(
      `insert into weld_private.reporting_logins (tenant_id, name, role_name, statement_timeout_ms)
       values ($1, $2, $3, $4)`,
      [tenant, input.name, roleName, input.timeoutSeconds * 1000],
    );
  });
  return connectionString(ownerUrl, roleName, password);
}

/**
 * A new password for the login, in its connection string: the one given before stops working,
 * and the sessions opened with it end (a password is changed because it leaked).
 */
export async function reportingUrl(
  root: pg.ClientBase,
  ownerUrl: string,
  tenant: string,
  name: string,
): Promise<string> {
  const password = randomBytes(24).toString('base64url');
  const roleName = await onClientInTransaction(root, async () => {
    const role = await roleOf(root, tenant, name);
    await root.query(
      `alter role ${pg.escapeIdentifier(role)} password ${pg.escapeLiteral(scramVerifier(password))}`,
    );
    return role;
  });
  await endSessions(root, roleName);
  return connectionString(ownerUrl, roleName, password);
}

/**
 * Removes the login. First it may no longer connect (committed, so a BI tool reconnecting at once
 * is refused), then its sessions end, then what it owns and its role go.
 */
export async function removeReportingLogin(
  root: pg.ClientBase,
  tenant: string,
  name: string,
): Promise<void> {
  const role = await onClientInTransaction(root, async () => {
    const found = await roleOf(root, tenant, name);
    await root.query('delete from weld_private.reporting_logins where role_name = $1', [found]);
    await root.query(`alter role ${pg.escapeIdentifier(found)} nologin`);
    await root.query(
      `revoke connect on database ${pg.escapeIdentifier(await database(root))} from ${pg.escapeIdentifier(found)}`,
    );
    return found;
  });
  await endSessions(root, role);
  await onClientInTransaction(root, async () => {
    await root.query(`drop owned by ${pg.escapeIdentifier(role)}`);
    await root.query(`drop role ${pg.escapeIdentifier(role)}`);
  });
}

/** Ends every session of `role`, and waits (up to 5 s) until PostgreSQL shows none. */
async function endSessions(root: pg.ClientBase, role: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const { rows } = await root.query<{ pid: number }>(
      'select pid from pg_stat_activity where usename = $1 and pid <> pg_backend_pid()',
      [role],
    );
    if (rows.length === 0) return;
    await root.query('select pg_terminate_backend(pid) from unnest($1::int[]) pid', [
      rows.map((r) => r.pid),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new ReportingError(`the sessions of ${role} did not end within 5 s`);
}

export async function listReportingLogins(root: pg.ClientBase): Promise<ReportingLogin[]> {
  const { rows } = await root.query<ReportingLogin>(
    `select t.slug as tenant, l.name, l.role_name as "roleName",
            l.statement_timeout_ms / 1000 as "statementTimeoutSeconds", l.created_at as "createdAt"
       from weld_private.reporting_logins l
       join weld_public.tenants t on t.id = l.tenant_id
      order by t.slug, l.name`,
  );
  return rows;
}

async function database(root: pg.ClientBase): Promise<string> {
  return (await root.query<{ name: string }>('select current_database() as name')).rows[0]!.name;
}

async function tenantId(root: pg.ClientBase, slug: string): Promise<string> {
  const { rows } = await root.query<{ id: string }>(
    'select id from weld_public.tenants where slug = $1',
    [slug],
  );
  if (!rows[0]) throw new ReportingError(`no tenant '${slug}'`);
  return rows[0].id;
}

async function roleOf(root: pg.ClientBase, tenant: string, name: string): Promise<string> {
  const { rows } = await root.query<{ role_name: string }>(
    `select l.role_name from weld_private.reporting_logins l
       join weld_public.tenants t on t.id = l.tenant_id
      where t.slug = $1 and l.name = $2
        for update of l`,
    [tenant, name],
  );
  if (!rows[0]) throw new ReportingError(`${tenant} has no reporting login '${name}'`);
  return rows[0].role_name;
}

/** The database the owner URL names, reached as the login (its options, sslmode say, kept). */
function connectionString(ownerUrl: string, user: string, password: string): string {
  const url = new URL(ownerUrl);
  url.username = user;
  url.password = password;
  return url.toString();
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802, RFC 7677; the format of
 * pg_authid.rolpassword). PostgreSQL takes a verifier in CREATE/ALTER ROLE ... PASSWORD as it is,
 * so the password itself never reaches the server. (The password is ASCII, so SASLprep leaves it.)
 */
export function scramVerifier(password: string, iterations = 4096): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
