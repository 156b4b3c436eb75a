// Wake-ups for the event readers, and the relay that gives events their ids.
//
// A transaction writes its events to a waiting room; weld_hidden.place_events (migration 000023),
// the relay, moves committed ones to the feed with their ids and NOTIFYs `weld_events` with
// "<tenant id> <event type>", once per tenant and type it placed. One dedicated connection per
// process LISTENs (LISTEN needs a session of its own) and runs the relay on the same session,
// every RELAY_MS while it finds events and less often while it finds none (up to RELAY_IDLE_MS,
// which bounds a long-poll's delay); several instances take turns per tenant. It wakes whoever
// waits for that tenant and type: long-polls and streams of those types
// (rest-adapter/events.ts) and the webhook worker (which waits for any tenant). A reader of rare
// types is not woken by every weld status change, and a burst of events wakes a reader once
// (DEBOUNCE_MS), not once each.
//
// A notification is only a hint to read again; the events table is the truth. So a lost
// notification costs latency, never an event: when the connection breaks, every waiter is woken
// (it reads, finds what it missed, and waits again) and the listener reconnects with a growing
// delay.
import pg from 'pg';

const CHANNEL = 'weld_events';

/**
 * Calls `handle` with the payload of each notification on `channel` that the service's own
 * sessions sent. PostgreSQL lets any session LISTEN and NOTIFY on any channel, without a
 * privilege: a BI tool's session (weld-admin reporting add) could send made-up wake-ups or
 * session revocations. The service never logs in as a reporting login, so what those send is
 * dropped. The sender's user is read through `senders` (the service's pool: the listening session
 * may be busy with the relay) once per process id and kept a few seconds (a process id is reused
 * only after its session ends); without `senders`, every notification is taken. `unchecked` runs
 * when the sender could not be read, `gone` when its session had already ended.
 */
export function onServiceNotification(
  client: pg.Client,
  channel: string,
  senders: pg.Pool | undefined,
  handle: (payload: string) => void,
  unchecked: () => void,
  /**
   * A sender whose session had ended by the time it was looked up (a short-lived process, such
   * as weld-admin): its payload cannot be trusted, but the caller may read the truth instead.
   */
  gone: () => void = () => {},
): void {
  client.on('notification', (message) => {
    if (message.channel !== channel || !message.payload) return;
    const payload = message.payload;
    (senders ? senderOf(senders, message.processId) : Promise.resolve('service' as const)).then(
      (sender) => (sender === 'service' ? handle(payload) : sender === 'gone' && gone()),
      unchecked,
    );
  });
}

type Sender = 'service' | 'reporting' | 'gone';

async function senderOf(pool: pg.Pool, processId: number): Promise<Sender> {
  const known = senders.get(processId);
  if (known && Date.now() - known.at < SENDER_TTL_MS) return known.sender;
  const { rows } = await pool.query<{ reporting: boolean | null }>(
    `select (select starts_with(usename, 'weld_bi_') from pg_stat_activity where pid = $1)
              as reporting`,
    [processId],
  );
  const reporting = rows[0]!.reporting;
  const sender: Sender = reporting === null ? 'gone' : reporting ? 'reporting' : 'service';
  if (senders.size > 10_000) senders.clear();
  // (A session that has gone is not remembered: its process id may come back as another's.)
  if (sender !== 'gone') senders.set(processId, { sender, at: Date.now() });
  return sender;
}
const senders = new Map<number, { sender: Sender; at: number }>();
const SENDER_TTL_MS = 10_000;
const RECONNECT_MS = { first: 500, max: 30_000 };
/** A woken reader reads this long after the first commit it is told of, with what came since. */
export const DEBOUNCE_MS = 20;
/**
 * How often the relay looks for committed events to place while it finds some; each empty look
 * doubles the wait, up to RELAY_IDLE_MS. (An empty look is a probe of the waiting room's key,
 * which walks the entries of moved events until a vacuum removes them.)
 */
export const RELAY_MS = 10;
export const RELAY_IDLE_MS = 40;
/** Events of a tenant one relay places at most; a full batch is followed by another at once. */
const RELAY_BATCH = 10_000;
/** The longest a tenant whose relay keeps failing waits before it is tried again. */
const RELAY_RETRY_MAX_MS = 60_000;

/** Wakes a waiter for an event of `type` (undefined: of any type, or the listener's restart). */
type Waker = (type?: string) => void;

/** A watch on one tenant's commits (see EventNotifications.watch). */
export interface EventWatch {
  /**
   * Resolves true at once if a commit came since the watch began or the last wait, else at the
   * next one; false when `ms` pass or `signal` aborts first.
   */
  wait(ms: number, signal?: AbortSignal): Promise<boolean>;
  /** Ends the watch; a wait in progress resolves. */
  close(): void;
}

export class EventNotifications {
  readonly #url: string;
  readonly #onError: (error: Error) => void;
  /** tenant id -> the wakers waiting for it; '*' -> the ones waiting for any tenant. */
  readonly #waiters = new Map<string, Set<Waker>>();
  #client: pg.Client | undefined;
  #stopped = false;
  #retryMs = RECONNECT_MS.first;
  #retryTimer: NodeJS.Timeout | undefined;
  readonly #relayMs: number;
  readonly #senders: pg.Pool | undefined;
  #relayTimer: NodeJS.Timeout | undefined;
  /**
   * Tenants whose relay failed ('' = the listing): reported once until it works again, and not
   * tried again before `retryAt` (1 s after the first failure, doubling to a minute), so a tenant
   * that keeps failing costs the others little. Cleared with each new session.
   */
  readonly #relayFailing = new Map<string, { retryAt: number; backoffMs: number }>();
  /** The wait before the next look: RELAY_MS after placing, doubled by each empty look. */
  #relayWait = RELAY_MS;

  /** `relayMs` 0: no relay here (a test places events itself). */
  constructor(
    authenticatorUrl: string,
    options: {
      onError?: (error: Error) => void;
      relayMs?: number;
      /** The service's pool, to tell who sent a notification (fromReportingLogin). */
      senders?: pg.Pool;
    } = {},
  ) {
    this.#url = authenticatorUrl;
    this.#senders = options.senders;
    this.#onError = options.onError ?? (() => {});
    this.#relayMs = options.relayMs ?? RELAY_MS;
    this.#relayWait = this.#relayMs;
  }

  /** Connects the listener; rejects if the first attempt fails. */
  async start(): Promise<void> {
    await this.#connect();
  }

  /**
   * Starts watching `tenantId` ('*': any tenant), for events of `types` (default: every type).
   * Watch before reading the events, then wait: a commit between the read and the wait still
   * wakes it, so nothing falls between the two.
   */
  watch(tenantId: string, types?: readonly string[]): EventWatch {
    let notified = false;
    let wake: (() => void) | undefined;
    let debounce: NodeJS.Timeout | undefined;
    const set = this.#waiters.get(tenantId) ?? new Set<Waker>();
    this.#waiters.set(tenantId, set);
    const waker: Waker = (type) => {
      if (type !== undefined && types !== undefined && !types.includes(type)) return;
      notified = true;
      debounce ??= setTimeout(() => {
        debounce = undefined;
        wake?.();
      }, DEBOUNCE_MS);
    };
    set.add(waker);
    const close = () => {
      clearTimeout(debounce);
      debounce = undefined;
      set.delete(waker);
      if (set.size === 0 && this.#waiters.get(tenantId) === set) this.#waiters.delete(tenantId);
      wake?.();
    };
    return {
      close,
      wait: (ms, signal) =>
        new Promise<boolean>((resolve) => {
          if (notified || signal?.aborted) {
            clearTimeout(debounce); // told already: the pending wake-up is this one
            debounce = undefined;
            resolve(notified);
            notified = false;
            return;
          }
          const finish = () => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', finish);
            wake = undefined;
            resolve(notified);
            notified = false;
          };
          const timer = setTimeout(finish, ms);
          signal?.addEventListener('abort', finish, { once: true });
          wake = finish;
        }),
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#relayTimer);
    this.#wakeAll();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #wake(tenantId: string, type: string | undefined): void {
    for (const key of [tenantId, '*']) {
      for (const waker of [...(this.#waiters.get(key) ?? [])]) waker(type);
    }
  }

  #wakeAll(): void {
    for (const set of [...this.#waiters.values()]) for (const waker of [...set]) waker();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#url, keepAlive: true });
    onServiceNotification(
      client,
      CHANNEL,
      this.#senders,
      (payload) => {
        // "<tenant> <type>"; a bare tenant id (a database not yet migrated) wakes every reader.
        const [tenantId, type] = payload.split(' ', 2) as [string, string | undefined];
        this.#wake(tenantId, type);
      },
      () => this.#wakeAll(), // (the session broke: #lost follows; a wake-up is only a hint)
    );
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('event listener connection ended')));
    await client.connect();
    // The relay runs on this session too: bounded, so a stuck relay cannot hold it for ever.
    await client.query(
      "select set_config('statement_timeout', '30s', false), set_config('lock_timeout', '5s', false)",
    );
    await client.query(`listen ${CHANNEL}`);
    this.#client = client;
    this.#retryMs = RECONNECT_MS.first;
    this.#relayFailing.clear();
    // Anything that committed while no one listened: let the waiters look.
    this.#wakeAll();
    if (this.#relayMs > 0) this.#scheduleRelay(client, 0);
  }

  /** The relay's loop on the listening session; it ends with that session. */
  #scheduleRelay(client: pg.Client, ms: number): void {
    clearTimeout(this.#relayTimer);
    this.#relayTimer = setTimeout(() => {
      if (this.#client !== client || this.#stopped) return;
      this.#relayOnce(client).then(
        (placed) => {
          if (this.#client !== client || this.#stopped) return; // a session gone meanwhile
          this.#relayWait =
            placed > 0
              ? this.#relayMs
              : Math.min(this.#relayWait * 2, Math.max(RELAY_IDLE_MS, this.#relayMs));
          this.#scheduleRelay(client, placed >= RELAY_BATCH ? 0 : this.#relayWait);
        },
        // (Only the listing failed: a broken session is #lost's to handle.)
        () => {
          if (this.#client === client && !this.#stopped) {
            this.#scheduleRelay(client, this.#relayMs * 10);
          }
        },
      );
    }, ms);
    this.#relayTimer.unref();
  }

  /**
   * Places the events of every tenant that has some waiting, each tenant in a transaction of its
   * own: one tenant's failure (a waiting event locked by someone else, a statement timeout) or
   * backlog holds up no other, and a tenant busy with another relay is skipped. Resolves the most
   * one tenant had placed (a full batch means more are waiting).
   */
  async #relayOnce(client: pg.Client): Promise<number> {
    const tenants = await this.#relayStep(client, '', () =>
      client.query<{ tenant: string }>('select weld_hidden.waiting_tenants() as tenant'),
    );
    let most = 0;
    for (const { tenant } of tenants?.rows ?? []) {
      if (this.#client !== client || this.#stopped) break;
      if ((this.#relayFailing.get(tenant)?.retryAt ?? 0) > Date.now()) continue;
      const placed = await this.#relayStep(client, tenant, () =>
        client.query<{ placed: number }>(
          'select weld_hidden.place_events($1, false, $2) as placed',
          [tenant, RELAY_BATCH],
        ),
      );
      most = Math.max(most, placed?.rows[0]!.placed ?? 0);
    }
    if (!tenants) throw new Error('no listing');
    return most;
  }

  /** One statement of the relay; a failure is reported once per tenant and resolves undefined. */
  async #relayStep<T>(
    client: pg.Client,
    key: string,
    run: () => Promise<T>,
  ): Promise<T | undefined> {
    try {
      const result = await run();
      this.#relayFailing.delete(key);
      return result;
    } catch (error) {
      // A session that broke under the statement is #lost's to report.
      if (this.#client !== client) return undefined;
      const failing = this.#relayFailing.get(key);
      if (!failing) {
        const message = error instanceof Error ? error.message : String(error);
        const whose = key === '' ? '' : ` for tenant ${key}`;
        this.#onError(new Error(`event relay failed${whose}: ${message}`));
      }
      const backoffMs = Math.min((failing?.backoffMs ?? 500) * 2, RELAY_RETRY_MAX_MS);
      this.#relayFailing.set(key, { retryAt: Date.now() + backoffMs, backoffMs });
      return undefined;
    }
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#client !== client || this.#stopped) return;
    this.#client = undefined;
    this.#onError(error);
    client.end().catch(() => {});
    this.#wakeAll();
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#stopped) return;
    this.#retryTimer = setTimeout(() => {
      this.#connect().catch((error: unknown) => {
        this.#onError(error as Error);
        this.#retryMs = Math.min(this.#retryMs * 2, RECONNECT_MS.max);
        this.#scheduleReconnect();
      });
    }, this.#retryMs);
    this.#retryTimer.unref();
  }
}
