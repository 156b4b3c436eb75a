// Webhook endpoints, managed by admins (the grants of migration 000010 say so: other roles get
// 403), and delivered by the worker of server/webhook-worker.ts. Each route carries its operation
// (doc); webhookMessages, at the end, is what the service POSTs to the endpoints.
//
// An endpoint's author (createdBy) is the admin who last chose where it points or knows its
// secret: registering it, changing its url or eventTypes, setting a new secret or resuming it
// makes the caller its author, and it pauses when that admin is deactivated or demoted. Each of
// these first takes the caller's author turn (weld_hidden.lock_webhook_author), which the pause
// of their endpoints takes too, and the caller must be an active admin: a change and the
// caller's deactivation at the same moment serialize, so either the change fails (403) or the
// endpoint pauses after it.
//
// Not a generic resource (resource.ts): its create answers with a secret, which must never be
// stored as an idempotent replay, so POST /webhooks takes no Idempotency-Key. The secret is
// stored sealed (db/webhook-secrets.ts), bound to the endpoint's tenant and id.
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared } from '../db/database.ts';
import { EVENT_RESOURCES, EVENT_TYPES } from '../db/vocabulary.ts';
import { sealSecret, type StoredSecret, type WebhookSecretKeys } from '../db/webhook-secrets.ts';
import {
  common,
  content,
  header,
  idParam,
  itemHeaders,
  json,
  page,
  problem,
  queryParameters,
  ref,
} from './http/operation.ts';
import { problemOf, problems, zodIssues } from './http/problem.ts';
import { inFlightOf } from './http/in-flight.ts';
import { queryOf, dataBase, type Route } from './http/route.ts';
import type { TargetRules } from './http/webhook-address.ts';
import { newWebhookSecret, signedDelivery, webhookUrlProblem } from './http/webhook-delivery.ts';
import {
  cursorParam,
  encodeCursor,
  limitParam,
  pageOf,
  pageQuery,
  sendPage,
} from './pagination.ts';
import { entityTags, expectedVersion, inDatabase, pathId, sendItem, stale } from './resource.ts';
import { HistoryQuery } from './history.ts';

/** Endpoints one tenant may register: enough for every integration, too few to amplify traffic. */
export const MAX_WEBHOOKS_PER_TENANT = 20;

/**
 * Test messages one tenant may have in flight on an instance: each may hold a socket and a DNS
 * lookup for WEBHOOK_TIMEOUT_MS, and nothing else bounds how many an admin starts.
 */
export const MAX_WEBHOOK_TESTS_PER_TENANT = 2;

export const Webhook = z
  .object({
    id: z.uuid(),
    url: z.string().describe('where events are POSTed'),
    eventTypes: z
      .array(z.enum(EVENT_TYPES))
      .describe('the event types it receives; empty: every type'),
    description: z.string().nullable(),
    active: z
      .boolean()
      .describe('false: nothing is sent (set by an admin, or after 24 h of failures)'),
    disabledReason: z
      .string()
      .nullable()
      .describe('why the service disabled it (failing for 24 hours, with the last answer)'),
    pausedAt: z.iso
      .datetime()
      .nullable()
      .describe(
        'when it paused because its author was deactivated or stopped being an admin: nothing is sent, its events wait, until an admin resumes it (PATCH active=true)',
      ),
    pausedReason: z.string().nullable().describe('why it paused (the author, and what happened)'),
    createdBy: z
      .uuid()
      .nullable()
      .describe(
        'its author: the admin who registered it, or who last changed its url or eventTypes, set a new secret or resumed it; it pauses when they are deactivated or demoted',
      ),
    failingSince: z.iso
      .datetime()
      .nullable()
      .describe('the first failed attempt of the current run of failures'),
    nextAttemptAt: z.iso
      .datetime()
      .nullable()
      .describe('while failing: when the next retry goes out'),
    lastEventId: z
      .string()
      .describe('events up to this id have been delivered (or were not of its types)'),
    version: z.number().int(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .describe('An endpoint that receives the tenant\u2019s events, signed, in order, at least once.');

export const WebhookWithSecret = Webhook.extend({
  secret: z
    .string()
    .describe(
      'whsec_ and 32 bytes in base64: the HMAC-SHA256 key (the bytes) of webhook-signature. Shown only in this answer',
    ),
});

const eventTypes = z
  .array(z.enum(EVENT_TYPES))
  .max(EVENT_TYPES.length)
  .refine((types) => new Set(types).size === types.length, 'lists a type twice');

// The lengths of weld_hidden.webhooks' checks; the address rules judge the URL itself.
const url = z.string().min(1).max(2000);
const description = z.string().max(500).nullable();

export const WebhookCreate = z.strictObject({
  url,
  eventTypes: eventTypes.optional().describe('default: every type'),
  description: description.optional(),
  active: z.boolean().optional().describe('default true'),
});

export const WebhookPatch = z.strictObject({
  url: url.optional().describe('a new URL makes you its author'),
  eventTypes: eventTypes.optional().describe('new event types make you its author'),
  description: description.optional(),
  active: z
    .boolean()
    .optional()
    .describe(
      'false: stop sending; true: send again, from where it stopped (clears a failure, resumes a paused endpoint and makes you its author)',
    ),
});

export const WebhookDelivery = z
  .object({
    id: z.string().describe('attempts are numbered in the order made'),
    messageId: z
      .string()
      .describe('the webhook-id header: the event id, or ping_<uuid> for a test'),
    eventId: z.string().nullable(),
    eventType: z.string(),
    attempt: z.number().int().describe('1 for the first try of this message'),
    status: z.number().int().nullable().describe("the endpoint's HTTP status; null: no answer"),
    error: z
      .string()
      .nullable()
      .describe(
        'null when the endpoint answered; else one outcome for every failure without an HTTP answer (an address the rules refuse, a refused or reset connection, a timeout): the service does not tell which',
      ),
    durationMs: z
      .number()
      .int()
      .describe('how long the answer took; WEBHOOK_TIMEOUT_MS when there was none'),
    attemptedAt: z.iso.datetime(),
  })
  .describe('One attempt to deliver a message to an endpoint.');

export const WebhookPage = pageOf(Webhook);

/** The data of a webhook.paused event: the endpoint without its URL (every role reads events). */
export const WebhookPausedData = z
  .object({
    id: z.uuid(),
    pausedAt: z.iso.datetime(),
    pausedReason: z.string(),
    createdBy: z.uuid().nullable().describe('the author whose deactivation paused it'),
  })
  .describe('A webhook endpoint that paused because its author was deactivated or demoted.');
export const WebhookDeliveryPage = z.object({
  items: z.array(WebhookDelivery),
  nextCursor: z
    .string()
    .nullable()
    .describe('pass as `cursor` for older attempts; null on the last'),
});

export const WebhookListQuery = z.strictObject({
  limit: limitParam,
  cursor: cursorParam.optional(),
});
/** Attempts are numbered like history entries, and paged the same way (newest first here). */
export const DeliveryListQuery = HistoryQuery;

const SELECT = `select r.id, r.url, r.event_types as "eventTypes", r.description, r.active,
  r.disabled_reason as "disabledReason", r.paused_at as "pausedAt",
  r.paused_reason as "pausedReason", r.created_by as "createdBy", r.failing_since as "failingSince",
  case when r.failing_since is not null and r.active and r.paused_at is null
       then r.next_attempt_at end as "nextAttemptAt",
  r.last_event_id::text as "lastEventId", r.version, r.created_at as "createdAt",
  r.updated_at as "updatedAt"
  from weld_hidden.webhooks r`;

const DELIVERY_SELECT = `select d.id::text as id, d.message_id as "messageId",
  d.event_id::text as "eventId", d.event_type as "eventType", d.attempt, d.status, d.error, d.duration_ms as "durationMs", d.attempted_at as "attemptedAt"
  from weld_hidden.webhook_deliveries d`;

const notFound = () => problems.notFound('No such webhook.');

export interface WebhookOptions extends TargetRules {
  timeoutMs: number;
  /** Seals new secrets and opens stored ones (for the test message). */
  secretKeys: WebhookSecretKeys;
}

/**
 * Refuses a URL that may not be an endpoint, as far as its text shows (an address in it is
 * checked here; a name is resolved and checked at each delivery, so that a registration is no
 * way to ask this service's resolver what a name means). One that may is stored as URL
 * normalizes it.
 */
function checkUrl(url: string | undefined, rules: TargetRules): void {
  if (url === undefined) return;
  const problem = webhookUrlProblem(url, rules);
  if (problem) throw problems.validation([{ pointer: '/url', detail: problem }]);
}

function parse<T extends z.ZodType>(schema: T, value: unknown, where: 'body' | 'parameter') {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) {
    throw problems.validation(zodIssues(parsed.error, where));
  }
  return parsed.data;
}

async function readWebhook(db: pg.PoolClient, id: string) {
  const { rows } = await db.query<{ version: number }>(prepared(`${SELECT} where r.id = $1`, [id]));
  return rows[0];
}

// The parts the operations' descriptions share.
const admin = ' Who: admin.';
const webhookId = { ...idParam, description: 'the webhook' };
const ifMatch = header('If-Match', 'the ETag you read; 412 if it changed since');
const forbidden = problem(
  'your role may not manage webhooks (admins only), or the CSRF check failed',
);
const badField = problem(
  'a bad field, named in errors (the url: http or https, no credentials, no special-use name such as localhost or *.local, and an address in it must be globally routable: no range of the IANA special-purpose registries and none of the service\u2019s own addresses)',
);
const badParameter = problem('a bad parameter, named in errors');
const theEndpoint = { description: 'the endpoint', headers: itemHeaders, ...content('Webhook') };

export function webhookRoutes(pool: pg.Pool, options: WebhookOptions): Route[] {
  const base = '/webhooks';
  // Test messages in flight on this instance, by tenant.
  const testsInFlight = inFlightOf(pool, 'webhook tests');
  /** Sends a test message to endpoint `id` and answers with the attempt. */
  const sendTest = async (req: Request, res: Response, id: string) => {
    const endpoint = await inDatabase(pool, req, async (db) => {
      const { rows } = await db.query<StoredSecret & { url: string; paused: boolean }>(
        prepared(
          `select url, secret, secret_key_id, secret_sealed, paused_at is not null as paused
             from weld_hidden.webhooks where id = $1`,
          [id],
        ),
      );
      return rows[0];
    });
    if (!endpoint) throw notFound();
    if (endpoint.paused) {
      throw problemOf('webhook-paused', {
        detail:
          'The endpoint is paused (its author was deactivated or is no longer an admin): a paused endpoint receives nothing. Resume it first (PATCH active=true).',
      });
    }
    const messageId = `ping_${randomUUID()}`;
    const body = JSON.stringify({
      id: messageId,
      type: 'webhook.test',
      occurredAt: new Date().toISOString(),
      data: { webhookId: id },
    });
    // Sent outside any transaction: a slow endpoint holds no database connection. The answer
    // is the status and the time, or the one outcome of every failure; the cause is logged.
    const answer = await signedDelivery(
      options.secretKeys,
      endpoint,
      { tenantId: req.tenant!.id, webhookId: id },
      { url: endpoint.url, messageId, body },
      {
        ...options,
        onFailure: (cause) =>
          req.log.info({ webhookId: id, cause }, 'webhook test message got no answer'),
      },
      req.log,
    );
    const delivery = await inDatabase(pool, req, async (db) => {
      const { rows } = await db.query<Record<string, unknown>>(
        prepared(
          `with d as (
             insert into weld_hidden.webhook_deliveries
               (webhook_id, message_id, event_type, attempt, status, error, duration_ms)
             values ($1, $2, 'webhook.test', 1, $3, $4, $5) returning *)
           ${DELIVERY_SELECT.replace('weld_hidden.webhook_deliveries d', 'd')}`,
          [id, messageId, answer.status ?? null, answer.error ?? null, answer.durationMs],
        ),
      );
      return rows[0];
    });
    res.json(delivery);
  };
  return [
    {
      method: 'POST',
      path: base,
      body: true,
      doc: {
        summary: 'Register a webhook endpoint',
        description:
          'The service POSTs each event of the listed types (all when eventTypes is empty) to the url, signed the ' +
          'Standard Webhooks way (see the `webhooks` section), in event order, at least once, starting with the events ' +
          'after this moment. The answer holds the signing secret, the only time it is shown (no Idempotency-Key ' +
          'here, so that it is never stored as a replay); the service keeps it only sealed (AES-256-GCM under ' +
          `WEBHOOK_SECRET_KEY). At most ${MAX_WEBHOOKS_PER_TENANT} per tenant.${admin}`,
        requestBody: { required: true, ...content('WebhookCreate') },
        responses: {
          '201': {
            description: 'the endpoint, with its secret',
            headers: {
              ...itemHeaders,
              Location: { schema: { type: 'string' }, description: 'its path' },
            },
            ...content('WebhookWithSecret'),
          },
          '409': problem(
            `the tenant has ${MAX_WEBHOOKS_PER_TENANT} webhooks (/problems/too-many-webhooks)`,
          ),
          '403': forbidden,
          '422': badField,
          ...common,
        },
        schemas: {
          WebhookCreate: json(WebhookCreate, 'input'),
          WebhookWithSecret: json(WebhookWithSecret),
        },
      },
      handler: async (req, res) => {
        const body = parse(WebhookCreate, req.body, 'body');
        checkUrl(body.url, options);
        const secret = newWebhookSecret();
        const id = randomUUID();
        const sealed = sealSecret(options.secretKeys, secret, {
          tenantId: req.tenant!.id,
          webhookId: id,
        });
        const item = await inDatabase(pool, req, async (db) => {
          // Registrations of one tenant queue here, so concurrent ones cannot pass the count.
          await db.query(prepared('select weld_hidden.lock_webhook_registrations()', []));
          const { rows } = await db.query<{ n: number }>(
            prepared('select count(*)::int as n from weld_hidden.webhooks', []),
          );
          if (rows[0]!.n >= MAX_WEBHOOKS_PER_TENANT) {
            throw problemOf('too-many-webhooks', {
              detail: `A tenant may register at most ${MAX_WEBHOOKS_PER_TENANT} webhooks; delete one first.`,
            });
          }
          await db.query(
            prepared(
              `insert into weld_hidden.webhooks
                 (id, url, event_types, description, active, secret_key_id, secret_sealed)
               values ($1, $2, $3, $4, $5, $6, $7)`,
              [
                id,
                new URL(body.url).href,
                body.eventTypes ?? [],
                body.description ?? null,
                body.active ?? true,
                sealed.keyId,
                sealed.sealed,
              ],
            ),
          );
          return (await readWebhook(db, id))!;
        });
        res.setHeader('Location', `${dataBase(req)}${base}/${id}`);
        res.setHeader('ETag', `"${item.version}"`);
        res.setHeader('Cache-Control', 'no-store');
        res.status(201).json({ ...item, secret });
      },
    },
    {
      method: 'GET',
      path: base,
      doc: {
        summary: 'List webhook endpoints',
        description: `Keyset pages, as every list.${admin}`,
        parameters: queryParameters(WebhookListQuery),
        responses: {
          '200': { ...page, ...content('WebhookPage') },
          '403': forbidden,
          '422': badParameter,
          ...common,
        },
        schemas: { WebhookPage: json(WebhookPage) },
      },
      handler: async (req, res) => {
        const q = queryOf(WebhookListQuery, req);
        const { rows } = await inDatabase(pool, req, (db) =>
          db.query<{ id: string }>(pageQuery(SELECT, [], q.cursor, q.limit)),
        );
        sendPage(req, res, rows, q.limit, (row) => encodeCursor(row.id));
      },
    },
    {
      method: 'GET',
      path: `${base}/:id`,
      doc: {
        summary: 'Read a webhook endpoint',
        description:
          'Without its secret. disabledReason says why the service disabled it: an endpoint failing for ' +
          'WEBHOOK_GIVE_UP_HOURS (24) is disabled; PATCH active=true resumes it where it stopped. pausedAt and ' +
          'pausedReason: it paused when its author (createdBy) was deactivated or stopped being an admin; it ' +
          'receives nothing and its events wait (as long as EVENT_RETENTION_DAYS keeps them) until an admin ' +
          'resumes it with PATCH active=true, becoming its author. An admin who changes its url or eventTypes, or ' +
          `sets a new secret, becomes its author too.${admin}`,
        parameters: [webhookId, header('If-None-Match', 'an ETag you hold; 304 if it is current')],
        responses: {
          '200': theEndpoint,
          '304': { description: 'not modified' },
          '403': forbidden,
          ...common,
        },
        schemas: { Webhook: json(Webhook) },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'webhook');
        const item = await inDatabase(pool, req, (db) => readWebhook(db, id));
        if (!item) throw notFound();
        const wanted = entityTags(req.get('if-none-match'));
        if (wanted && (wanted.includes('*') || wanted.includes(`"${item.version}"`))) {
          res.setHeader('ETag', `"${item.version}"`);
          res.status(304).end();
          return;
        }
        sendItem(res, item);
      },
    },
    {
      method: 'PATCH',
      path: `${base}/:id`,
      body: true,
      doc: {
        summary: 'Change a webhook endpoint',
        description: `The fields given are set. active=true on a disabled endpoint clears its failure and retries at once; on a paused one it resumes it, from where it stopped, and makes you its author. A new url or eventTypes makes you its author too: it pauses when you are deactivated or demoted. 403 when you were deactivated or demoted meanwhile.${admin}`,
        parameters: [webhookId, ifMatch],
        requestBody: { required: true, ...content('WebhookPatch') },
        responses: {
          '200': theEndpoint,
          '403': forbidden,
          '422': badField,
          '412': problem('If-Match is stale; `version` is the current one'),
          ...common,
        },
        schemas: { WebhookPatch: json(WebhookPatch, 'input') },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'webhook');
        const body = parse(WebhookPatch, req.body, 'body');
        checkUrl(body.url, options);
        const expected = expectedVersion(req);
        // A change that makes the caller the author: their turn first (see the top).
        const authoring =
          body.url !== undefined || body.eventTypes !== undefined || body.active === true;
        const item = await inDatabase(pool, req, async (db) => {
          if (authoring) await db.query(prepared('select weld_hidden.lock_webhook_author()', []));
          const { rows } = await db.query<{ version: number }>(
            prepared('select version from weld_hidden.webhooks where id = $1 for update', [id]),
          );
          if (!rows[0]) throw notFound();
          if (expected !== null && expected !== rows[0].version) throw stale(rows[0].version);
          await db.query(
            prepared(
              `update weld_hidden.webhooks
                  set url = coalesce($2, url), event_types = coalesce($3, event_types),
                      description = case when $4 then $5 else description end,
                      active = coalesce($6, active),
                      paused_at = case when $6 then null else paused_at end,
                      paused_reason = case when $6 then null else paused_reason end
                where id = $1`,
              [
                id,
                body.url === undefined ? null : new URL(body.url).href,
                body.eventTypes ?? null,
                body.description !== undefined,
                body.description ?? null,
                body.active ?? null,
              ],
            ),
          );
          return (await readWebhook(db, id))!;
        });
        sendItem(res, item);
      },
    },
    {
      method: 'DELETE',
      path: `${base}/:id`,
      doc: {
        summary: 'Delete a webhook endpoint (and its delivery log)',
        description: admin.trim(),
        parameters: [webhookId, ifMatch],
        responses: {
          '204': { description: 'deleted' },
          '403': forbidden,
          '412': problem('If-Match is stale'),
          ...common,
        },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'webhook');
        const expected = expectedVersion(req);
        await inDatabase(pool, req, async (db) => {
          const { rows } = await db.query<{ version: number }>(
            prepared('delete from weld_hidden.webhooks where id = $1 returning version', [id]),
          );
          if (!rows[0]) throw notFound();
          if (expected !== null && expected !== rows[0].version) throw stale(rows[0].version);
        });
        res.status(204).end();
      },
    },
    {
      method: 'POST',
      path: `${base}/:id/rotate-secret`,
      doc: {
        summary: 'Replace the signing secret',
        description: `A new secret, shown in this answer only; messages are signed with it from now on. You become the endpoint's author: it pauses when you are deactivated or demoted.${admin}`,
        parameters: [webhookId],
        responses: {
          '200': {
            description: 'the endpoint, with its new secret',
            headers: itemHeaders,
            ...content('WebhookWithSecret'),
          },
          '403': forbidden,
          ...common,
        },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'webhook');
        const secret = newWebhookSecret();
        const sealed = sealSecret(options.secretKeys, secret, {
          tenantId: req.tenant!.id,
          webhookId: id,
        });
        const item = await inDatabase(pool, req, async (db) => {
          // The caller becomes the author (they know the secret): their turn first.
          await db.query(prepared('select weld_hidden.lock_webhook_author()', []));
          const { rowCount } = await db.query(
            prepared(
              `update weld_hidden.webhooks
                  set secret = null, secret_key_id = $2, secret_sealed = $3, secret_set_at = now()
                where id = $1`,
              [id, sealed.keyId, sealed.sealed],
            ),
          );
          if (!rowCount) throw notFound();
          return (await readWebhook(db, id))!;
        });
        res.setHeader('ETag', `"${item.version}"`);
        res.setHeader('Cache-Control', 'no-store');
        res.json({ ...item, secret });
      },
    },
    {
      method: 'POST',
      path: `${base}/:id/test`,
      doc: {
        summary: 'Send a test message (webhook.test) now',
        description: `Sends one signed webhook.test message at once, whether it is active or disabled (a paused one is 409), and answers with the attempt (also in its deliveries): the receiver's HTTP status and how long it took, never its body. An attempt without an HTTP answer (an address the rules refuse, a name that does not resolve, a refused or reset connection, a timeout, a name lookup that outlasts it) is one outcome, answered when WEBHOOK_TIMEOUT_MS has passed, whatever happened sooner. A tenant may have ${MAX_WEBHOOK_TESTS_PER_TENANT} test messages in flight on an instance.${admin}`,
        parameters: [webhookId],
        responses: {
          '200': { description: 'the attempt and the answer', ...content('WebhookDelivery') },
          '403': forbidden,
          '409': problem(
            'the endpoint is paused (/problems/webhook-paused): it receives nothing until resumed',
          ),
          '429': problem(
            `the tenant already has ${MAX_WEBHOOK_TESTS_PER_TENANT} test messages in flight on this instance (/problems/too-many-webhook-tests); Retry-After`,
          ),
          ...common,
        },
        schemas: { WebhookDelivery: json(WebhookDelivery) },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'webhook');
        const done = testsInFlight.take(req.tenant!.id, MAX_WEBHOOK_TESTS_PER_TENANT);
        if (!done) {
          throw problemOf('too-many-webhook-tests', {
            detail: `A tenant may have ${MAX_WEBHOOK_TESTS_PER_TENANT} test messages in flight at once; wait for one to end.`,
            headers: { 'Retry-After': String(Math.ceil(options.timeoutMs / 1000)) },
          });
        }
        try {
          await sendTest(req, res, id);
        } finally {
          done();
        }
      },
    },
    {
      method: 'GET',
      path: `${base}/:id/deliveries`,
      doc: {
        summary: "The endpoint's delivery attempts, newest first",
        description: `Every attempt (retries too) with the status and the time it took, or the one outcome of an attempt without an answer; kept EVENT_RETENTION_DAYS. The receiver's body is neither kept nor shown.${admin}`,
        parameters: [webhookId, ...queryParameters(DeliveryListQuery)],
        responses: {
          '200': { ...page, ...content('WebhookDeliveryPage') },
          '403': forbidden,
          '422': badParameter,
          ...common,
        },
        schemas: { WebhookDeliveryPage: json(WebhookDeliveryPage) },
      },
      handler: async (req, res) => {
        const id = pathId(req, 'webhook');
        const q = queryOf(DeliveryListQuery, req);
        const rows = await inDatabase(pool, req, async (db) => {
          if (!(await readWebhook(db, id))) throw notFound();
          const result = await db.query<{ id: string }>(
            prepared(
              `${DELIVERY_SELECT} where d.webhook_id = $1 and ($2::bigint is null or d.id < $2::bigint)
                order by d.id desc limit $3`,
              [id, q.cursor ?? null, q.limit + 1],
            ),
          );
          return result.rows;
        });
        sendPage(req, res, rows, q.limit, (row) => row.id);
      },
    },
  ];
}

/** The schema each event type's `data` has: the resource's, as its GET shows it. */
const EVENT_DATA: Record<
  (typeof EVENT_RESOURCES)[number] | 'examination_selection' | 'webhook' | 'qualification',
  string
> = {
  iso: 'Iso',
  weld: 'Weld',
  welder: 'Welder',
  pqr: 'Pqr',
  wps: 'Wps',
  welder_qualification: 'WelderQualification',
  ndt_record: 'NdtRecord',
  inspection: 'Inspection',
  test_package: 'TestPackage',
  pwht_record: 'PwhtRecord',
  hardness_reading: 'HardnessReading',
  component: 'Component',
  weld_repair: 'WeldRepair',
  filler_lot: 'FillerLot',
  weld_filler: 'WeldFiller',
  punch_item: 'PunchItem',
  attachment: 'Attachment',
  examination_selection: 'ExaminationSelection',
  qualification: 'WelderQualification',
  webhook: 'WebhookPausedData',
};

/**
 * OpenAPI 3.1 `webhooks`: what the service POSTs to registered endpoints (server/webhook-worker.ts
 * each event of their types, POST /webhooks/{id}/test a webhook.test message), signed as
 * signedDelivery signs it.
 */
export function webhookMessages(): Record<string, unknown> {
  const signed = [
    header(
      'webhook-id',
      'the message id: the event id (the same on every retry: deduplicate by it), or ping_<uuid>',
    ),
    header(
      'webhook-timestamp',
      'seconds since the epoch when this attempt was sent; refuse old ones (replays)',
    ),
    header(
      'webhook-signature',
      'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>", keyed with the base64-decoded part of the secret after whsec_>',
    ),
  ].map((h) => ({ ...h, required: true }));
  const responses = {
    '2XX': { description: 'delivered: the next event follows' },
    default: {
      description:
        'not delivered: retried with the same webhook-id after 5 s, then doubling up to an hour between tries (WEBHOOK_RETRY_BASE_MS); after WEBHOOK_GIVE_UP_HOURS (24) of failures the endpoint is disabled with the reason. Later events wait: each endpoint receives its events in order. Redirects are not followed; no answer within WEBHOOK_TIMEOUT_MS (10 s) is a failure. Only the status is read: the body of the answer is not.',
    },
  };
  const message = (type: string, description: string, schema: unknown) => ({
    post: {
      summary: type,
      description,
      parameters: signed,
      requestBody: { required: true, content: { 'application/json': { schema } } },
      responses,
    },
  });
  const event = (type: string) =>
    message(
      type,
      `Sent for each ${type} event to the endpoints that listen for it. The body is the Event as GET /events gives it.`,
      {
        allOf: [
          ref('Event'),
          {
            type: 'object',
            properties: {
              type: { const: type },
              data: ref(EVENT_DATA[type.split('.')[0] as keyof typeof EVENT_DATA]),
            },
          },
        ],
      },
    );
  return {
    ...Object.fromEntries(EVENT_TYPES.map((type) => [type, event(type)])),
    'webhook.test': message(
      'webhook.test',
      'Sent by POST /webhooks/{id}/test: {id: "ping_<uuid>", type: "webhook.test", occurredAt, data: {webhookId}}.',
      {
        type: 'object',
        properties: {
          id: { type: 'string' },
          type: { const: 'webhook.test' },
          occurredAt: { type: 'string', format: 'date-time' },
          data: { type: 'object', properties: { webhookId: { type: 'string', format: 'uuid' } } },
        },
        required: ['id', 'type', 'occurredAt', 'data'],
      },
    ),
  };
}
