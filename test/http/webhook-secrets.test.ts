// Issue F14, finding 5 (secrets stored in plain text): a dump, a backup or a DBA's query of the
// webhooks table must not yield a secret that signs messages. Now each secret is sealed with
// AES-256-GCM under a key the operator supplies (WEBHOOK_SECRET_KEY; the embedded quick start
// keeps one in DATA_DIR), bound to its endpoint; plain secrets from before are sealed at start;
// keys rotate with an old key still opening and `weld-admin webhooks reencrypt` re-sealing.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ConfigError } from '../../db/config.ts';
import { KEY_FILE, webhookSecretKeys, type WebhookSecretKeys } from '../../db/webhook-secrets.ts';
import { login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { bearerClient } from '../helpers/http.ts';
import { runCli, runServerToExit, spawnServer, startServer } from '../helpers/server.ts';
import {
  A,
  acceptWeld,
  ok,
  receiver,
  signatureValid,
  sleep,
  until,
  worker,
  world,
  type World,
} from '../helpers/webhooks.ts';

const keyText = () => randomBytes(32).toString('base64');
const keysOf = (current: string, ...old: string[]): WebhookSecretKeys =>
  webhookSecretKeys(
    { current: Buffer.from(current, 'base64'), old: old.map((k) => Buffer.from(k, 'base64')) },
    { kind: 'root', rootUrl: 'postgres://unused' },
  );

interface StoredRow {
  id: string;
  secret: string | null;
  secret_key_id: string | null;
  secret_sealed: Buffer | null;
  version: number;
  row: string;
}
const stored = async (w: Pick<World, 'owner'>, id: string) =>
  (
    await w.owner.query<StoredRow>(
      `select w.id, w.secret, w.secret_key_id, w.secret_sealed, w.version, row_to_json(w)::text as row
         from weld_hidden.webhooks w where w.id = $1`,
      [id],
    )
  ).rows[0]!;

/** Every form a secret could be written in: its text, the key bytes as base64 and hex. */
function forms(secret: string): string[] {
  const bytes = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return [secret, secret.slice(6), bytes.toString('hex'), Buffer.from(secret).toString('hex')];
}

test('a secret is stored sealed, never in plain text, and opens to sign; moved to another endpoint it does not', async (t) => {
  const key = keyText();
  const keys = keysOf(key);
  const w = await world(t, { webhookSecretKeys: keys });
  const r = await receiver(t);
  const other = await receiver(t);
  const hook = ok(await w.a.admin.post('/webhooks', { url: r.url }), 201);
  const row = await stored(w, hook.id);
  t.is(row.secret, null);
  t.is(row.secret_key_id, keys.current.id);
  t.is(row.secret_sealed!.length, 12 + 16 + hook.secret.length, 'nonce, tag, ciphertext');
  for (const form of forms(hook.secret)) t.false(row.row.includes(form), `not as ${form}`);
  t.false(row.row.includes(key), 'nor the key');

  // The worker opens it to sign: the receiver's check passes with the secret shown once.
  worker(t, w.server, { secretKeys: keys });
  await acceptWeld(w, 1);
  await until(() => r.got.length >= 2, 'two deliveries');
  t.true(r.got.every((x) => signatureValid(hook.secret, x)));

  // Someone with write access to the table copies the sealed secret onto another endpoint: it
  // does not open there (tenant and id are its associated data), and nothing is sent unsigned.
  const victim = ok(await w.a.admin.post('/webhooks', { url: other.url }), 201);
  await w.owner.query(
    `update weld_hidden.webhooks set secret_sealed = $2, secret_key_id = $3 where id = $1`,
    [victim.id, row.secret_sealed, row.secret_key_id],
  );
  await acceptWeld(w, 2);
  await until(
    async () => ok(await w.a.admin.get(`/webhooks/${victim.id}/deliveries`)).items.length >= 1,
    'an attempt',
  );
  const attempt = ok(await w.a.admin.get(`/webhooks/${victim.id}/deliveries`)).items[0];
  t.regex(attempt.error, /^not sent: this instance cannot open the endpoint's secret/);
  t.is(other.got.length, 0, 'nothing was sent to it');
});

test('the server seals plain-text secrets at start, and needs WEBHOOK_SECRET_KEY with a database URL', async (t) => {
  const { rootUrl, target } = await migratedDatabase(t);
  const w = { owner: await ownerClient(target) };
  t.teardown(() => w.owner.end());
  const { rows } = await w.owner.query<{ id: string }>(
    `insert into weld_public.tenants (slug, name) values ('alpha', 'Alpha') returning id`,
  );
  const plain = `whsec_${randomBytes(32).toString('base64')}`;
  const { rows: hooks } = await w.owner.query<{ id: string }>(
    `insert into weld_hidden.webhooks (tenant_id, url, secret) values ($1, 'https://h.example/x', $2)
     returning id`,
    [rows[0]!.id, plain],
  );
  const id = hooks[0]!.id;

  const refused = await runServerToExit({ DATABASE_URL: rootUrl, WEBHOOK_SECRET_KEY: '' });
  t.is(refused.code, 1);
  t.regex(
    refused.output,
    /Invalid configuration: WEBHOOK_SECRET_KEY: required with a database URL/,
  );
  t.is((await stored(w, id)).secret, plain, 'refused before touching the database');

  const key = keyText();
  const server = await spawnServer(t, { DATABASE_URL: rootUrl, WEBHOOK_SECRET_KEY: key });
  const row = await stored(w, id);
  t.is(row.secret, null);
  t.is(row.secret_key_id, keysOf(key).current.id);
  for (const form of forms(plain)) t.false(row.row.includes(form));
  t.regex(server.output(), /"sealed":1,[^\n]*webhook secrets stored in plain text sealed/);
  for (const form of [...forms(plain), key]) t.false(server.output().includes(form), 'not logged');
  t.is(await server.stop(), 0);
});

test('the embedded quick start makes a key once, in DATA_DIR, readable by its owner alone', (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weld-webhook-key-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const embedded = { kind: 'embedded' as const, dataDir, port: 0 };
  const first = webhookSecretKeys({ current: undefined, old: [] }, embedded);
  const file = path.join(dataDir, KEY_FILE);
  t.is(fs.statSync(file).mode & 0o777, 0o600);
  t.is(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64').length, 32);
  const again = webhookSecretKeys({ current: undefined, old: [] }, embedded);
  t.deepEqual(again.current, first.current, 'the same key at the next start');
  // A key given wins, and the old ones open only.
  const given = keyText();
  const configured = webhookSecretKeys(
    { current: Buffer.from(given, 'base64'), old: [first.current.key] },
    embedded,
  );
  t.is(configured.current.id, keysOf(given).current.id);
  t.deepEqual(configured.old, [first.current]);
  t.throws(
    () => webhookSecretKeys({ current: undefined, old: [] }, { kind: 'root', rootUrl: 'x' }),
    { instanceOf: ConfigError, message: /WEBHOOK_SECRET_KEY: required/ },
  );
});

test('key rotation: the old key still opens, reencrypt re-seals all or nothing, the secrets stay the same', async (t) => {
  const [k1, k2, k3] = [keyText(), keyText(), keyText()];
  const w = await world(t, { webhookSecretKeys: keysOf(k1) });
  const r = await receiver(t);
  const hook = ok(await w.a.admin.post('/webhooks', { url: r.url }), 201);
  const before = await stored(w, hook.id);
  t.is(before.secret_key_id, keysOf(k1).current.id);

  // 1. Every instance gets the new key as current, the old one to open with.
  const rotated = await startServer(t, w.target, { webhookSecretKeys: keysOf(k2, k1) });
  worker(t, rotated, { secretKeys: keysOf(k2, k1) });
  await acceptWeld(w, 1);
  await until(() => r.got.length >= 2, 'deliveries under the old key');
  t.true(
    r.got.every((x) => signatureValid(hook.secret, x)),
    'opened with the old key',
  );

  // 2. A re-encryption missing a key changes nothing.
  const env = { DATABASE_URL: w.rootUrl, WEBHOOK_SECRET_KEY: k3 };
  const missing = await runCli(['webhooks', 'reencrypt'], env);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /key .* cannot be opened.*WEBHOOK_SECRET_KEYS_OLD.*nothing was changed/);
  t.deepEqual((await stored(w, hook.id)).secret_sealed, before.secret_sealed);

  // 3. With the old key given, every secret is sealed with the new one; the ETag does not move.
  const done = await runCli(['webhooks', 'reencrypt'], {
    ...env,
    WEBHOOK_SECRET_KEY: k2,
    WEBHOOK_SECRET_KEYS_OLD: k1,
  });
  t.is(done.code, 0, done.output);
  t.regex(done.stdout, new RegExp(`sealed 1 webhook secret with key ${keysOf(k2).current.id}`));
  const after = await stored(w, hook.id);
  t.is(after.secret_key_id, keysOf(k2).current.id);
  t.notDeepEqual(after.secret_sealed, before.secret_sealed);
  t.is(after.version, before.version, 'the same secret: no change an admin sees');
  t.false(done.output.includes(hook.secret), 'the CLI prints no secret');

  // 4. The old key may go: the new one alone signs with the same secret ...
  const newOnly = await startServer(t, w.target, { webhookSecretKeys: keysOf(k2) });
  const admin = bearerClient(newOnly.port, A, await token(newOnly.port));
  t.like(ok(await admin.post(`/webhooks/${hook.id}/test`)), { status: 204 });
  t.true(signatureValid(hook.secret, r.got.at(-1)!));
  // ... and an instance left with the old key only sends nothing (never unsigned).
  const stale = await startServer(t, w.target, { webhookSecretKeys: keysOf(k1) });
  const staleAdmin = bearerClient(stale.port, A, await token(stale.port));
  const count = r.got.length;
  const refusedPing = ok(await staleAdmin.post(`/webhooks/${hook.id}/test`));
  t.like(refusedPing, { status: null });
  t.regex(refusedPing.error, new RegExp(`key ${keysOf(k2).current.id}`));
  await sleep(100);
  t.is(r.got.length, count);

  // A new secret is sealed with the current key, and moves the ETag.
  const renewed = ok(await admin.post(`/webhooks/${hook.id}/rotate-secret`));
  t.is(renewed.version, after.version + 1);
  t.is((await stored(w, hook.id)).secret_key_id, keysOf(k2).current.id);
});

async function token(port: number): Promise<string> {
  return ok(await login(port, A, 'admin')).accessToken as string;
}
