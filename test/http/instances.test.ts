// Two server processes on one database, with no sticky routing: whatever one instance issues or
// changes, the other honours. (Webhook deliveries from two instances, once each and in order:
// test/http/webhook-delivery.test.ts.)
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { decodeProtectedHeader } from 'jose';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient, tenantFixture } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { runCli, spawnServer } from '../helpers/server.ts';

const HOST = 'alpha.test';

/** Tenant alpha with a user per role and one weld, served by two instances A and B. */
async function twoInstances(t: import('ava').ExecutionContext, onlyB: Record<string, string> = {}) {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const fixture = await tenantFixture(owner, 'alpha');
  await addRoleUsers(owner, 'alpha');
  const env = {
    DATABASE_OWNER_URL: target.ownerUrl,
    DATABASE_AUTHENTICATOR_URL: target.authenticatorUrl,
    // A rotation reaches every instance within this (docs/operating.md, "More than one instance").
    SIGNING_KEYS_RELOAD_SECONDS: '2',
  };
  const [a, b] = await Promise.all([spawnServer(t, env), spawnServer(t, { ...env, ...onlyB })]);
  return { owner, fixture, env, a: a.port, b: b.port };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const me = (port: number, token: string) =>
  request(port, { path: '/auth/me', host: HOST, headers: bearer(token) });
const refresh = (port: number, refreshToken: string) =>
  request(port, { method: 'POST', path: '/auth/refresh', host: HOST, body: { refreshToken } });

/** Polls until `check` holds, at most `ms`; returns whether it did. */
async function eventually(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
}

test('tokens cross instances: issued by A, accepted by B; a refresh on A replayed on B is the same successor, then reuse, which ends the session on both', async (t) => {
  const { a, b } = await twoInstances(t);
  const signedIn = await login(a, HOST, 'engineer');
  t.is(signedIn.status, 200);
  const first = signedIn.json as { accessToken: string; refreshToken: string };
  t.is((await me(b, first.accessToken)).status, 200, 'an access token of A works on B');

  // A rotates the refresh token; the same old token on B within the grace window (a client's
  // retry through another instance) gets the same successor, not a second session.
  const rotated = await refresh(a, first.refreshToken);
  t.is(rotated.status, 200);
  const retried = await refresh(b, first.refreshToken);
  t.is(retried.status, 200);
  t.is(retried.json.refreshToken, rotated.json.refreshToken, 'one successor, whichever instance');

  // The successor is used on B; the first token presented again on A is now reuse.
  const next = await refresh(b, rotated.json.refreshToken as string);
  t.is(next.status, 200);
  t.is((await me(a, next.json.accessToken as string)).status, 200);
  const reused = await refresh(a, first.refreshToken);
  t.is(reused.status, 401);
  t.is(reused.json.type, '/problems/invalid-refresh-token');

  // The session is over everywhere: its newest access token (still unexpired) and refresh token.
  const latest = next.json as { accessToken: string; refreshToken: string };
  for (const port of [a, b]) {
    t.true(
      await eventually(async () => (await me(port, latest.accessToken)).status === 401, 3_000),
      `the session's access token is refused on ${port === a ? 'A' : 'B'}`,
    );
    t.is((await refresh(port, latest.refreshToken)).status, 401);
  }
});

test('a key rotation is honoured by both instances within SIGNING_KEYS_RELOAD_SECONDS; tokens of the old key stay good', async (t) => {
  // B rereads keys only every minute: what it honours at once, it honours by the kid.
  const { a, b, env } = await twoInstances(t, { SIGNING_KEYS_RELOAD_SECONDS: '60' });
  const kid = (res: HttpResponse) =>
    decodeProtectedHeader(res.json.accessToken as string).kid as string;
  const before = await login(a, HOST, 'viewer');
  const oldKid = kid(before);
  t.is((await me(b, before.json.accessToken as string)).status, 200);

  const rotated = await runCli(['keys', 'rotate', 'alpha'], env);
  t.is(rotated.code, 0, rotated.output);
  const rotatedAt = Date.now();
  // A signs with the new key within the reload period (2 s) and a margin.
  let after: HttpResponse | undefined;
  t.true(
    await eventually(async () => {
      after = await login(a, HOST, 'viewer');
      return kid(after) !== oldKid;
    }, 6_000),
    'A signs with the new key',
  );
  t.true(Date.now() - rotatedAt < 6_000);
  // B honours a token of the new key at once (it rereads for an unknown kid; within 5 s of its
  // last read, the request waits for the next one).
  const newToken = after!.json.accessToken as string;
  t.is((await me(b, newToken)).status, 200, 'B accepts the new key');
  const jwks = await request(b, { path: '/.well-known/jwks.json', host: HOST });
  t.deepEqual(
    (jwks.json.keys as Array<{ kid: string }>).map((k) => k.kid).sort(),
    [oldKid, kid(after!)].sort(),
    'B publishes both keys',
  );
  // A token of the old key is still good on both until it expires.
  for (const port of [a, b]) t.is((await me(port, before.json.accessToken as string)).status, 200);
});

test('status races across both instances lose no update: every acknowledged change is in the history and the version counts them', async (t) => {
  const { a, b, owner, fixture } = await twoInstances(t);
  const weldId = await fixture.weld('PENDING', 'W-RACE');
  const token = (await login(a, HOST, 'engineer')).json.accessToken as string;
  const next: Record<string, string> = {
    PENDING: 'REJECTED',
    REJECTED: 'REPAIR',
    REPAIR: 'PENDING',
  };

  // Eight clients, ten changes each, on one weld: each reads on one instance and writes on the
  // other, with If-Match; a 412 means another client got there first: read again and retry.
  let acknowledged = 0;
  let stale = 0;
  const client = async (n: number) => {
    for (let done = 0; done < 10;) {
      const [readOn, writeOn] = (n + done) % 2 ? [a, b] : [b, a];
      const weld = await request(readOn, {
        path: `/welds/${weldId}`,
        host: HOST,
        headers: bearer(token),
      });
      t.is(weld.status, 200);
      const change = await request(writeOn, {
        method: 'PATCH',
        path: `/welds/${weldId}/status`,
        host: HOST,
        headers: { ...bearer(token), 'if-match': String(weld.headers.etag) },
        body: { status: next[weld.json.status as string], reason: `client ${n} change ${done}` },
      });
      if (change.status === 200) {
        acknowledged++;
        done++;
      } else {
        t.is(change.status, 412, change.text);
        stale++;
      }
    }
  };
  const initial = await owner.query<{ version: number }>(
    'select version from weld_public.welds where id = $1',
    [weldId],
  );
  await Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));

  t.is(acknowledged, 80);
  t.true(stale > 0, 'the clients did collide');
  const history = await owner.query<{ count: string }>(
    'select count(*) from weld_public.weld_status_history where weld_id = $1',
    [weldId],
  );
  t.is(Number(history.rows[0]!.count), 80, 'one history row per acknowledged change');
  const final = await owner.query<{ version: number }>(
    'select version from weld_public.welds where id = $1',
    [weldId],
  );
  t.is(final.rows[0]!.version, initial.rows[0]!.version + 80, 'the version counts them');
});

test('a token is never refused for a database that cannot answer: reading the keys timing out is 503 /problems/timeout, and the same token works once the database answers', async (t) => {
  const { owner, a, b } = await twoInstances(t, { DB_STATEMENT_TIMEOUT_MS: '500' });
  const token = (await login(a, HOST, 'engineer')).json.accessToken as string;
  // B has not read the tenant's keys yet; a DBA's lock makes that read wait past its timeout.
  await owner.query('begin');
  await owner.query('lock table weld_private.signing_keys in access exclusive mode');
  const stalled = await me(b, token);
  await owner.query('rollback');
  t.is(stalled.status, 503, 'not 401: the client keeps its token');
  t.is(stalled.json.type, '/problems/timeout');
  t.is((await me(b, token)).status, 200);
});
