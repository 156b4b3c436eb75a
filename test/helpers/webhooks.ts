// What the webhook tests share: a world of two tenants with a user per role, a delivery worker
// with test-sized timings, receivers on loopback, the receiver's signature check, and polling.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { createLogger } from '../../rest-adapter/http/log.ts';
import { startWebhookWorker, type WebhookWorkerOptions } from '../../server/webhook-worker.ts';
import { addRoleUsers, login } from './auth.ts';
import { migratedDatabase } from './database.ts';
import { ownerClient } from './fixtures.ts';
import { bearerClient as client, type Client, type HttpResponse } from './http.ts';
import { startServer, TEST_WEBHOOK_SECRET_KEYS, type TestServer } from './server.ts';

export const A = 'a.test';
export const B = 'b.test';
export const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
export type Role = (typeof ROLES)[number];
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export function ok(res: HttpResponse, status = 200): Json {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.json;
}

/** Tenants alpha (A) and bravo (B), a user per role in each, a server, and an ISO of alpha. */
export async function world(t: ExecutionContext, options: Parameters<typeof startServer>[2] = {}) {
  const { target, rootUrl } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  const server = await startServer(t, target, options);
  const a = {} as Record<Role, Client>;
  const b = {} as Record<Role, Client>;
  for (const role of ROLES) {
    a[role] = client(server.port, A, ok(await login(server.port, A, role)).accessToken);
    b[role] = client(server.port, B, ok(await login(server.port, B, role)).accessToken);
  }
  const iso = ok(await a.engineer.post('/isos', { isoNumber: 'ISO-1', lineNumber: 'L-1' }), 201);
  const isoB = ok(await b.engineer.post('/isos', { isoNumber: 'ISO-B', lineNumber: 'L-B' }), 201);
  return {
    server,
    target,
    rootUrl,
    owner,
    a,
    b,
    iso: iso.id as string,
    isoB: isoB.id as string,
  };
}
export type World = Awaited<ReturnType<typeof world>>;

/** Runs a delivery worker on the server's pool until the test ends, with test-sized timings. */
export function worker(
  t: ExecutionContext,
  server: TestServer,
  options: Partial<WebhookWorkerOptions> = {},
) {
  const running = startWebhookWorker(server.pool, server.notifications, createLogger('silent'), {
    allowPrivate: true,
    timeoutMs: 2000,
    retryBaseMs: 200,
    giveUpHours: 24,
    pollMs: 100,
    concurrency: 4,
    tenantConcurrency: 2,
    secretKeys: TEST_WEBHOOK_SECRET_KEYS,
    ...options,
  });
  // Registered after the server's own teardown, so it runs before it (ava runs them in reverse).
  t.teardown(() => running.stop());
  return running;
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: Json;
}

/**
 * A receiver on loopback (or `host`); `answer` decides each status (default 204), and may take its
 * time (a promise). Its answer's body is `body`.
 */
export async function receiver(
  t: ExecutionContext,
  answer: (n: number, got: Received) => number | Promise<number> = () => 204,
  options: { host?: string; body?: string } = {},
) {
  const got: Received[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const entry = { headers: req.headers, body, json: JSON.parse(body) };
      got.push(entry);
      void Promise.resolve(answer(got.length, entry)).then((status) => {
        if (!res.destroyed) res.writeHead(status).end(options.body ?? 'answer');
      });
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/hook`, port, got, server };
}

/** What a receiver checks: the HMAC of id.timestamp.body under the secret's bytes. */
export function signatureValid(secret: string, r: Received): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signed = `${String(r.headers['webhook-id'])}.${String(r.headers['webhook-timestamp'])}.${r.body}`;
  const expected = `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  return String(r.headers['webhook-signature']).split(' ').includes(expected);
}

/** Resolves once `condition` holds, polling; fails the test after `ms` (default 15 s). */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  ms = 15_000,
) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Creates a weld of alpha and accepts it (an engineer's disposition): two events (weld.created,
 * weld.status_changed).
 */
export const acceptWeld = async (w: { a: Record<Role, Client>; iso: string }, n: number) => {
  const weld = ok(
    await w.a.engineer.post('/welds', { isoId: w.iso, weldNumber: `W-${n}`, type: 'BW', size: 4 }),
    201,
  );
  ok(
    await w.a.engineer.patch(`/welds/${weld.id}/status`, {
      status: 'ACCEPTED',
      disposition: 'NCR-1 use as is',
    }),
  );
  return weld.id as string;
};
