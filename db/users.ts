// Users in TypeScript: what weld-admin and the embedded first start do with them. The rules are
// SQL functions (migration 000003: create_user, set_user_password, disable_user); passwords are
// hashed here (Argon2id) and never stored or printed otherwise.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { hashPassword, passwordProblem } from './passwords.ts';
import { tenantIdOf } from './tenants.ts';
import { USER_ROLES, type UserRole } from './vocabulary.ts';

export class UserError extends Error {}

export interface UserListing {
  userName: string;
  displayName: string;
  role: UserRole;
  active: boolean;
  id: string;
}

function checkPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem) throw new UserError(problem);
}

export async function addUser(
  db: pg.ClientBase,
  input: {
    tenant: string;
    userName: string;
    role: string;
    displayName?: string | undefined;
    password: string;
  },
): Promise<UserListing> {
  if (!USER_ROLES.includes(input.role as UserRole)) {
    throw new UserError(`--role must be one of ${USER_ROLES.join(', ')}`);
  }
  checkPassword(input.password);
  const tenant = await tenantIdOf(db, input.tenant);
  try {
    const { rows } = await db.query<UserListing>(
      `select user_name as "userName", display_name as "displayName", role, active, id
         from weld_private.create_user($1, $2, $3, $4, $5)`,
      [
        tenant,
        input.userName,
        input.displayName ?? input.userName,
        input.role,
        await hashPassword(input.password),
      ],
    );
    return rows[0]!;
  } catch (error) {
    const constraint = (error as { constraint?: string }).constraint;
    if (constraint === 'users_user_name_key') {
      throw new UserError(`user '${input.userName}' already exists in tenant '${input.tenant}'`);
    }
    if (constraint === 'users_user_name_format') {
      throw new UserError(
        `'${input.userName}' is not a valid user name: letters, digits and . _ @ -, at most 100`,
      );
    }
    throw error;
  }
}

export async function listUsers(db: pg.ClientBase, slug: string): Promise<UserListing[]> {
  const tenant = await tenantIdOf(db, slug);
  const { rows } = await db.query<UserListing>(
    `select user_name as "userName", display_name as "displayName", role, active, id
       from weld_public.users where tenant_id = $1 order by user_name`,
    [tenant],
  );
  return rows;
}

/**
 * Deactivates a user: the triggers on users end its sessions (000006) and, at commit, pause the
 * webhook endpoints it registered (migrations/current.sql, F14), as for any path that does it.
 */
export async function disableUser(
  db: pg.ClientBase,
  slug: string,
  userName: string,
): Promise<void> {
  const { rows } = await db.query<{ found: boolean }>(
    'select weld_private.disable_user($1, $2) as found',
    [await tenantIdOf(db, slug), userName],
  );
  if (!rows[0]?.found) throw new UserError(`no user '${userName}' in tenant '${slug}'`);
}

/** A user's role and whether it is active, to say what a change did (undefined: no such user). */
export async function userState(
  db: pg.ClientBase,
  slug: string,
  userName: string,
): Promise<{ role: UserRole; active: boolean } | undefined> {
  const { rows } = await db.query<{ role: UserRole; active: boolean }>(
    'select role, active from weld_public.users where tenant_id = $1 and user_name = $2',
    [await tenantIdOf(db, slug), userName],
  );
  return rows[0];
}

export async function enableUser(db: pg.ClientBase, slug: string, userName: string): Promise<void> {
  const { rows } = await db.query<{ found: boolean }>(
    'select weld_private.enable_user($1, $2) as found',
    [await tenantIdOf(db, slug), userName],
  );
  if (!rows[0]?.found) throw new UserError(`no user '${userName}' in tenant '${slug}'`);
}

/** A new role: the triggers end the user's sessions and, for a former admin, pause its webhooks. */
export async function setUserRole(
  db: pg.ClientBase,
  slug: string,
  userName: string,
  role: UserRole,
): Promise<void> {
  const { rows } = await db.query<{ found: boolean }>(
    'select weld_private.set_user_role($1, $2, $3) as found',
    [await tenantIdOf(db, slug), userName, role],
  );
  if (!rows[0]?.found) throw new UserError(`no user '${userName}' in tenant '${slug}'`);
}

export async function setPassword(
  db: pg.ClientBase,
  slug: string,
  userName: string,
  password: string,
): Promise<void> {
  checkPassword(password);
  const tenant = await tenantIdOf(db, slug);
  const { rows } = await db
    .query<{ found: boolean | null }>(
      'select weld_private.set_user_password($1, $2, $3) as found',
      [tenant, userName, await hashPassword(password)],
    )
    .catch((error: unknown) => {
      // An OAuth2 client's user: it signs in with its secret only.
      if ((error as { code?: string }).code === 'WD003')
        throw new UserError((error as Error).message);
      throw error;
    });
  if (!rows[0]?.found) throw new UserError(`no user '${userName}' in tenant '${slug}'`);
}

export const DEMO_USERS_FILE = 'demo-users.txt';

/**
 * One user per role with a generated password, for the embedded first start. The passwords are
 * written to DEMO_USERS_FILE in dataDir (mode 0600, replaced if an old one is there), never
 * printed; returns the file's path.
 */
export async function createDemoUsers(
  db: pg.ClientBase,
  slug: string,
  dataDir: string,
): Promise<string> {
  const lines = ['# role       userName          password'];
  for (const role of USER_ROLES) {
    const userName = `demo-${role}`;
    const password = randomBytes(12).toString('base64url');
    await addUser(db, { tenant: slug, userName, role, displayName: `Demo ${role}`, password });
    lines.push(`${role.padEnd(12)} ${userName.padEnd(17)} ${password}`);
  }
  const file = path.join(dataDir, DEMO_USERS_FILE);
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, lines.join('\n') + '\n', { mode: 0o600, flag: 'wx' });
  return file;
}
