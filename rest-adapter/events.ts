// The change feed over HTTP: the outbox of migration 000010 (weld_public.events), read in id order.
//
//   GET /events          a page of events after a cursor, oldest first; with `wait` a long-poll
//                        that answers as soon as an event after the cursor commits
//   GET /events/stream   the same events as Server-Sent Events, resumable with Last-Event-ID
//
// Why `id > cursor` never skips an event: ids are given after commit, by one relay at a time,
// each relay after the last (weld_hidden.place_events, migration 000023), so an event that becomes
// visible later always has a higher id than every event a reader has seen. Each read runs the
// relay first, so a client reads its own writes at once. Readers hold no database connection while
// they wait: a notification of placed events for their tenant (db/event-notifications.ts) wakes
// them to read again. Every read runs as the caller, so row security shows each tenant only its
// own events.
import type { Request, Response } from 'express';
import type pg from 'pg';
import { z } from 'zod';
import { prepared } from '../db/database.ts';
import type { EventNotifications } from '../db/event-notifications.ts';
import { EVENT_PAGE_SIZE, EVENT_RESOURCES, EVENT_TYPES } from '../db/vocabulary.ts';
import { common, content, header, json, page, problem, queryParameters } from './http/operation.ts';
import { HttpProblem, problemOf, problems } from './http/problem.ts';
import { authProblems } from './http/session.ts';
import { queryOf, type Route } from './http/route.ts';
import { inDatabase } from './resource.ts';
import { WebhookPausedData } from './webhooks.ts';

//------------------------------------------------------------------------------------------------
// Shapes

export const Event = z
  .object({
    id: z
      .string()
      .regex(/^[0-9]+$/)
      .describe(
        "the cursor: ids are given after commit, in order, so reading id > cursor never misses or repeats an event, and one resource's events come in the order its changes committed; a decimal string",
      ),
    type: z.enum(EVENT_TYPES),
    subjectId: z.uuid().describe('the id of the resource that changed'),
    actorId: z
      .uuid()
      .nullable()
      .describe(
        'the user whose request made the change; null for changes made outside a request (a DBA, an import)',
      ),
    occurredAt: z.iso.datetime().describe('the time of the changing transaction (its start)'),
    data: z
      .record(z.string(), z.unknown())
      .describe(
        "the resource as REST shows it at commit (for deleted: as it was last stored, without membership lists); an ISO's without weldCounts, which change with its welds; for webhook.paused, the endpoint without its URL (WebhookPausedData)",
      ),
    change: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        "for weld.status_changed: from, to, reason, cause, ndtRecordId; for a test package's state: from, to; else null",
      ),
  })
  .describe('One committed change of a resource.');

export const EventPage = z.object({
  items: z.array(Event),
  nextCursor: z
    .string()
    .describe(
      'pass as `after` to read on: the last event of this page, or the `after` given when there is none (never null: the feed does not end)',
    ),
});

/** An event id (a positive bigint), or `now`: the newest event at the time of the request. */
const cursorValue = z
  .string()
  .regex(/^(now|[0-9]{1,19})$/, 'must be an event id or now')
  // zod runs refinements after a failed regex too: look only at digits.
  .refine((value) => !/^[0-9]+$/.test(value) || BigInt(value) < 2n ** 63n, 'is too large');

const typeList = z
  .string()
  .transform((value) => value.split(','))
  .pipe(
    z.array(z.enum(EVENT_TYPES, { error: 'is not an event type (see the Event schema)' })).min(1),
  )
  .describe('one or several event types, comma-separated (default: every type)');

export const EventQuery = z.strictObject({
  after: cursorValue
    .optional()
    .describe(
      'events after this id (nextCursor of the previous page); `now`: only events after the newest one; default: from the oldest kept',
    ),
  types: typeList.optional(),
  subjectId: z.uuid().optional().describe("one resource's events"),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(EVENT_PAGE_SIZE.max)
    .default(EVENT_PAGE_SIZE.default)
    .describe(`page size, 1 to ${EVENT_PAGE_SIZE.max} (default ${EVENT_PAGE_SIZE.default})`),
  wait: z.coerce
    .number()
    .int()
    .min(0)
    .max(30)
    .default(0)
    .describe(
      'long-poll: when no event follows the cursor, wait up to this many seconds for one (0 to 30)',
    ),
});

export const EventStreamQuery = z.strictObject({
  after: cursorValue
    .optional()
    .describe(
      'start after this event id (Last-Event-ID, when sent, takes precedence); default: now',
    ),
  types: typeList.optional(),
});

//------------------------------------------------------------------------------------------------
// Reading

interface EventRow {
  id: string;
  type: string;
  subjectId: string;
  actorId: string | null;
  occurredAt: Date;
  data: Record<string, unknown>;
  change: Record<string, unknown> | null;
}

interface EventRead {
  /** The cursor the read started after (`now` resolved). */
  after: string;
  /** Where the reader continues (see readEvents). */
  next: string;
  rows: EventRow[];
  /** The page met EVENT_PAGE_BYTES before its count: more events follow at once. */
  cut: boolean;
}

interface Filter {
  types?: string[] | undefined;
  subjectId?: string | undefined;
}

/** Why a cursor cannot be followed: its events have been purged (EVENT_RETENTION_DAYS). */
const cursorExpired = (purgedThrough: string) =>
  problemOf('cursor-expired', {
    detail: `Events up to ${purgedThrough} have been purged, so some after this cursor are gone; read the resources again, then follow the feed from after=now.`,
    extensions: { purgedThrough },
  });

/**
 * What one page may hold: its events' data and change, as JSON, up to this many bytes (always at
 * least one event). A thousand NDT records of a thousand welds each would otherwise be a page of
 * a gigabyte, held in memory while it is read and sent.
 */
export const EVENT_PAGE_BYTES = 1024 * 1024;

/**
 * One read in one transaction: the newest event id first (the head), then up to `limit` events
 * after the cursor (fewer when they pass EVENT_PAGE_BYTES), then the purge watermark (read after
 * the page, so a purge that ran before or during the read is seen). `next` is where the reader
 * continues: the last event read, or, when the page is not full, the head read before it; ids
 * are given after commit, in order, so every event at or below that head was visible to the page read, and a
 * filtered reader moves past what it does not want instead of scanning it again.
 */
async function readEvents(
  db: pg.PoolClient,
  after: string | undefined,
  filter: Filter,
  limit: number,
): Promise<EventRead> {
  const { rows: heads } = await db.query<{ head: string }>(
    prepared('select coalesce(max(id), 0)::text as head from weld_public.events', []),
  );
  const head = heads[0]!.head;
  const cursor = after === 'now' ? head : (after ?? '0');
  // The running size counts each event's JSON; an event is taken while the page before it is
  // under the budget. `fetched` tells a page cut by size from one that ran out of events.
  const { rows: sized } = await db.query<EventRow & { fetched: number }>(
    prepared(
      `select x.id::text as id, x.type, x.subject_id as "subjectId", x.actor_id as "actorId",
              x.occurred_at as "occurredAt", x.data, x.change, x.fetched
         from (select e.*, count(*) over () as fetched,
                      sum(octet_length(e.data::text) + coalesce(octet_length(e.change::text), 0))
                        over (order by e.id rows unbounded preceding) as running,
                      octet_length(e.data::text) + coalesce(octet_length(e.change::text), 0) as bytes
                 from (select e.* from weld_public.events e
                        where e.id > $1::bigint
                          and ($2::text[] is null or e.type = any($2::text[]))
                          and ($3::uuid is null or e.subject_id = $3::uuid)
                        order by e.id
                        limit $4) e) x
        where x.running - x.bytes < $5
        order by x.id`,
      [cursor, filter.types ?? null, filter.subjectId ?? null, limit, EVENT_PAGE_BYTES],
    ),
  );
  const cut = sized.length > 0 && sized.length < Number(sized[0]!.fetched);
  const rows: EventRow[] = sized.map(({ fetched: _fetched, ...row }) => row);
  if (after !== undefined && after !== 'now') {
    const { rows: purged } = await db.query<{ purged: string }>(
      prepared(
        `select purged_through::text as purged from weld_hidden.event_purges
          where purged_through > $1::bigint`,
        [after],
      ),
    );
    if (purged[0]) throw cursorExpired(purged[0].purged);
  }
  const last = rows.at(-1)?.id ?? cursor;
  const next = rows.length < limit && !cut && BigInt(head) > BigInt(last) ? head : last;
  return { after: cursor, next, rows, cut };
}

/** How long a read places its tenant's waiting events before it reads. */
const PLACE_EVENTS_MS = 2_000;

/**
 * Places the tenant's events that have committed (the relay, weld_hidden.place_events; it waits
 * for no other tenant's), each batch in a statement of its own, so the relay's turn ends before
 * the read that follows sees them: a client that wrote reads its own events (and selections'
 * positions) at once. A backlog of more than PLACE_EVENTS_MS of work (a large import the server's
 * relay has not finished) is left to that relay: the read sees a prefix, never a gap.
 */
export async function placeEvents(pool: pg.Pool, tenantId: string): Promise<void> {
  const until = Date.now() + PLACE_EVENTS_MS;
  for (;;) {
    const { rows } = await pool.query<{ placed: number }>(
      prepared('select weld_hidden.place_events($1) as placed', [tenantId]),
    );
    if (rows[0]!.placed === 0 || Date.now() >= until) return;
  }
}

/** One read as the caller, after placing what has committed. */
async function readPlaced(
  pool: pg.Pool,
  req: Request,
  after: string | undefined,
  filter: Filter,
  limit: number,
): Promise<EventRead> {
  await placeEvents(pool, req.tenant!.id);
  return inDatabase(pool, req, (db) => readEvents(db, after, filter, limit));
}

/** Aborts when the client goes away (a long-poll or a stream then stops at once). */
function clientGone(req: Request, res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  req.once('aborted', () => controller.abort());
  return controller.signal;
}

//------------------------------------------------------------------------------------------------
// Routes

export interface EventOptions {
  notifications: EventNotifications;
  /** Open streams one user may hold on this instance; one more is 429. */
  streamsPerUser: number;
  /** A comment line this often keeps proxies from closing a quiet stream. */
  heartbeatMs?: number;
  /** Events a stream replays before it is live; a client further behind is told to resync. */
  maxReplay?: number;
  /** True when the session has ended (logout, a disabled user): its streams close. */
  sessionEnded?: (tenantId: string, sessionId: string) => boolean;
  /** True once the instance is shutting down: long-polls answer and streams end at once. */
  isDraining?: () => boolean;
}

const STREAM_PAGE = 100;
const DRAIN_TIMEOUT_MS = 30_000;

/** Where events come from, and how a reader follows them without missing one. */
const EVENTS =
  'Every committed change of a resource is one event, written in the same transaction as the change (an event ' +
  'exists if and only if its change committed): <kind>.created, .updated, .deleted for ' +
  `${EVENT_RESOURCES.join(', ')}; weld.status_changed (also for NDT results; change: from, to, reason, cause, ` +
  'ndtRecordId); test_package.released (change: from, to); examination_selection.opened (drawn, counted or ' +
  'progressive, with its state), .closed (an examination that meets it covers the weld), .reopened (a correction ' +
  'took the weld off the last such examination); webhook.paused (data: {id, pausedAt, pausedReason, createdBy}, ' +
  'the URL left out: an admin\u2019s endpoint paused because its author was deactivated or stopped being an ' +
  'admin); qualification.lapsing (data: the welder qualification; change: process, validUntil, daysLeft, cause ' +
  'expiry or continuity, threshold 30, 14 or 3: sent once per threshold as its last day in force nears), ' +
  'qualification.lapsed (change: process, validUntil, state: after a lapsing alert, once it is no longer in force), ' +
  'welder.repair_rate_exceeded (data: the welder; change: month, weldsExamined, weldsRejected, repairRatePercent, ' +
  'thresholdPercent: once per month over the tenant\u2019s threshold), these three from a daily tick. Several changes of one ' +
  'resource in one transaction are one event showing the final state. `data` is the resource as its GET shows it ' +
  'after the change. Ids are given after commit, in order, so a reader that passes the last id it has as ' +
  '`after` never misses or repeats an event, even when transactions commit out of the order they began, and one ' +
  'resource\u2019s events come in the order its changes committed. Events ' +
  'are kept EVENT_RETENTION_DAYS (30 by default); a cursor into purged events is 410 /problems/cursor-expired. ' +
  'Who: every role (the events of your tenant only).';

export function eventRoutes(pool: pg.Pool, options: EventOptions): Route[] {
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxReplay = options.maxReplay ?? 10_000;
  /** `${tenant} ${user}` -> the user's open streams and waiting long-polls on this instance. */
  const places = new Map<string, number>();

  /**
   * Takes one of the user's places for a stream or a waiting long-poll, before anything is awaited
   * (so that concurrent requests cannot all pass the check), or refuses with 429. The place is
   * given back once, when the request ends, whichever way it ends.
   */
  const takePlace = (req: Request, res: Response): (() => void) => {
    const key = `${req.tenant!.id} ${req.identity!.userId}`;
    const open = places.get(key) ?? 0;
    if (open >= options.streamsPerUser) {
      throw problemOf('too-many-streams', {
        detail: `This user has ${open} event streams and waiting long-polls open here, the most allowed; close one first.`,
        headers: { 'Retry-After': '10' },
      });
    }
    places.set(key, open + 1);
    let given = false;
    const giveBack = () => {
      if (given) return;
      given = true;
      const left = (places.get(key) ?? 1) - 1;
      if (left > 0) places.set(key, left);
      else places.delete(key);
    };
    res.once('close', giveBack);
    return giveBack;
  };
  const sessionEnded = (req: Request) =>
    options.sessionEnded?.(req.tenant!.id, req.identity!.sessionId) ?? false;

  const feed: Route = {
    method: 'GET',
    path: `/events`,
    doc: {
      summary: 'Read the change feed, oldest first (with `wait`: long-poll)',
      description:
        `${EVENTS} Pages hold up to ${EVENT_PAGE_SIZE.max} events and at most ${EVENT_PAGE_BYTES / 1024 / 1024} MiB of their JSON (at least one event); a page after which more follow at once (full, or cut by its size) has a Link rel=next. With wait > 0 and ` +
        'no event after the cursor, the answer waits until one commits (it is sent at once then) or the seconds pass ' +
        '(an empty page). A page with fewer events than `limit` (with types or subjectId: none at all) has as ' +
        'nextCursor the newest event id at the time of the read, so a filtered reader moves past what it does not ' +
        'want. A waiting long-poll counts toward EVENT_STREAMS_PER_USER, and ends with 401 if its session ends.',
      parameters: queryParameters(EventQuery),
      responses: {
        '200': { ...page, ...content('EventPage') },
        '410': problem('events after this cursor have been purged (/problems/cursor-expired)'),
        '422': problem(
          'a bad parameter (an unknown event type, a cursor that is no id), named in errors',
        ),
        '429': problem(
          'a waiting long-poll over the streams and long-polls this user may hold (/problems/too-many-streams); Retry-After',
        ),
        ...common,
      },
      // A webhook.paused event's data is the paused endpoint without its URL.
      schemas: {
        Event: json(Event),
        EventPage: json(EventPage),
        WebhookPausedData: json(WebhookPausedData),
      },
    },
    handler: async (req, res) => {
      const q = queryOf(EventQuery, req);
      const deadline = Date.now() + q.wait * 1000;
      const giveBack = q.wait > 0 ? takePlace(req, res) : undefined;
      const gone = clientGone(req, res);
      // Watch before the first read: a commit between the read and the wait still wakes us.
      const watch = q.wait > 0 ? options.notifications.watch(req.tenant!.id, q.types) : undefined;
      try {
        let after = q.after;
        for (;;) {
          const read = await readPlaced(pool, req, after, q, q.limit + 1);
          after = read.after; // `now` is resolved once: later reads continue from it
          const waitMs = deadline - Date.now();
          const stop = gone.aborted || options.isDraining?.();
          if (read.rows.length > 0 || !watch || waitMs <= 0 || stop) {
            sendEvents(req, res, read, q.limit);
            return;
          }
          await watch.wait(waitMs, gone);
          // A long-poll does not outlive its session: what commits after a logout is not its.
          if (sessionEnded(req)) throw authProblems.unauthorized(true);
        }
      } finally {
        watch?.close();
        giveBack?.();
      }
    },
  };

  const stream: Route = {
    method: 'GET',
    path: `/events/stream`,
    doc: {
      summary: 'Follow the change feed as Server-Sent Events',
      description:
        `${EVENTS} text/event-stream: \`retry: 3000\`, then per event \`id: <event id>\`, \`event: <type>\` and ` +
        '`data: <the Event as JSON>`; a `: heartbeat` comment every 15 seconds of quiet. Reconnecting with ' +
        'Last-Event-ID (EventSource does it by itself) resumes after that event without loss; without it (or ?after) ' +
        'the stream starts at now. `event: resync` (data: {reason, after}) then the end of the stream tells a ' +
        'client it fell too far behind (more than 10,000 events to replay, or a cursor into purged events): read ' +
        'the resources again, then open a new stream without Last-Event-ID (close the EventSource first: it would reconnect). The stream ends when the access token it was opened with expires or ' +
        'its session ends; reconnect with a fresh one. Cookie mode works (GET needs no CSRF token), so does ' +
        'Authorization: Bearer.',
      parameters: [
        ...queryParameters(EventStreamQuery),
        header('Last-Event-ID', 'resume after this event id (set by EventSource on reconnect)'),
      ],
      responses: {
        '200': {
          description: 'the stream',
          content: { 'text/event-stream': { schema: { type: 'string' } } },
        },
        '422': problem('a bad parameter or Last-Event-ID, named in errors'),
        '429': problem(
          'too many open streams and waiting long-polls for this user (/problems/too-many-streams); Retry-After',
        ),
        ...common,
      },
    },
    handler: async (req, res) => {
      const params = queryOf(EventStreamQuery, req);
      const lastEventId = req.get('last-event-id');
      const resumeFrom = lastEventId === undefined ? undefined : cursorValue.safeParse(lastEventId);
      if (resumeFrom && !resumeFrom.success) {
        throw problems.validation([{ parameter: 'Last-Event-ID', detail: 'must be an event id' }]);
      }
      const identity = req.identity!;
      // Everything that must be undone is set up before the first await, so a client that goes
      // away during the first read still gives its place back.
      const giveBack = takePlace(req, res);
      const gone = clientGone(req, res);
      const watch = options.notifications.watch(req.tenant!.id, params.types);
      let expiry: NodeJS.Timeout | undefined;
      let cursor = '0';
      try {
        // The first read checks the cursor and the caller's rights, before the stream is answered.
        const filter = { types: params.types };
        let pending: EventRead | undefined = await readPlaced(
          pool,
          req,
          resumeFrom?.data ?? params.after ?? 'now',
          filter,
          STREAM_PAGE,
        );
        if (gone.aborted) return;
        // The stream lasts as long as the token it was opened with; the client reconnects with a
        // fresh one (EventSource does, with the cookie the app has refreshed meanwhile).
        expiry = setTimeout(() => res.end(), Math.max((identity.expiresAt ?? 0) - Date.now(), 0));
        res.writeHead(200, {
          'Content-Type': 'text/event-stream; charset=utf-8',
          'Cache-Control': 'no-store',
          'X-Accel-Buffering': 'no', // nginx: do not buffer the stream
        });
        res.write('retry: 3000\n\n');

        cursor = pending.after;
        let replayed = 0;
        while (!gone.aborted && !res.writableEnded) {
          if (options.isDraining?.() || sessionEnded(req)) {
            res.end();
            return;
          }
          const read: EventRead =
            pending ?? (await readPlaced(pool, req, cursor, filter, STREAM_PAGE));
          pending = undefined;
          for (const row of read.rows) {
            res.write(`id: ${row.id}\nevent: ${row.type}\ndata: ${JSON.stringify(row)}\n\n`);
          }
          cursor = read.next; // past what the filter skipped, too
          const behind = read.rows.length === STREAM_PAGE || read.cut;
          replayed = behind ? replayed + read.rows.length : 0;
          if (replayed >= maxReplay) {
            resync(res, cursor, `more than ${maxReplay} events behind`);
            return;
          }
          // Bounded memory: the next page is read only once this one has left; a client that
          // does not take it within the drain timeout is cut off, its buffer with it.
          if (res.writableNeedDrain && !(await drained(res, gone))) {
            res.destroy();
            return;
          }
          if (behind) continue;
          const woken = await watch.wait(heartbeatMs, gone);
          if (!woken && !gone.aborted && !res.writableEnded) res.write(': heartbeat\n\n');
        }
      } catch (error) {
        // A cursor into purged events is told as the stream tells it (EventSource cannot read a
        // problem answer): resync, then the end.
        if (error instanceof HttpProblem && error.status === 410) {
          if (!res.headersSent)
            res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8' });
          resync(res, cursor, 'the cursor points into purged events');
          return;
        }
        if (!res.headersSent) throw error;
        // The stream has begun: a problem can no longer be the answer. The client reconnects
        // with Last-Event-ID and loses nothing.
        req.log.warn({ err: error }, 'event stream ended by an error');
        res.end();
      } finally {
        clearTimeout(expiry);
        watch.close();
        giveBack();
      }
    },
  };
  return [feed, stream];
}

/** Items and the cursor to read on; a full page says more may be ready (Link rel=next). */
function sendEvents(req: Request, res: Response, read: EventRead, limit: number): void {
  const items = read.rows.slice(0, limit);
  const more = read.rows.length > limit || read.cut;
  const nextCursor = more ? items.at(-1)!.id : read.next;
  if (more) {
    const query = new URLSearchParams(req.query as Record<string, string>);
    query.set('after', nextCursor);
    query.delete('wait');
    res.setHeader('Link', `<${req.baseUrl}${req.path}?${query.toString()}>; rel="next"`);
  }
  res.setHeader('Cache-Control', 'no-store');
  res.json({ items, nextCursor });
}

/** Tells the client to read the resources again, then ends the stream. */
function resync(res: Response, cursor: string, reason: string): void {
  res.write(`event: resync\ndata: ${JSON.stringify({ reason, after: cursor })}\n\n`);
  res.end();
}

/** Resolves true once the socket has taken what was written, false on timeout or close. */
function drained(res: Response, gone: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      gone.removeEventListener('abort', onGone);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onGone = () => done(false);
    const timer = setTimeout(() => done(false), DRAIN_TIMEOUT_MS);
    res.on('drain', onDrain);
    gone.addEventListener('abort', onGone, { once: true });
  });
}
