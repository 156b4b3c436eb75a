// Wake-ups for the event readers: the outbox (migrations 000010, F14) NOTIFYs `weld_events` with
// "<tenant id> <event type>", once per type a committing transaction wrote. One dedicated
// connection per process LISTENs (LISTEN needs a session of its own) and wakes whoever waits for
// that tenant and type: long-polls and streams of those types (rest-adapter/events.ts) and the
// webhook worker (which waits for any tenant). A reader of rare types is not woken by every weld
// status change, and a burst of commits wakes a reader once (DEBOUNCE_MS), not once each.
//
// A notification is only a hint to read again; the events table is the truth. So a lost
// notification costs latency, never an event: when the connection breaks, every waiter is woken
// (it reads, finds what it missed, and waits again) and the listener reconnects with a growing
// delay.
import pg from 'pg';

const CHANNEL = 'weld_events';
const RECONNECT_MS = { first: 500, max: 30_000 };
/** A woken reader reads this long after the first commit it is told of, with what came since. */
export const DEBOUNCE_MS = 20;

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

  constructor(authenticatorUrl: string, options: { onError?: (error: Error) => void } = {}) {
    this.#url = authenticatorUrl;
    this.#onError = options.onError ?? (() => {});
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
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || !message.payload) return;
      // "<tenant> <type>"; a bare tenant id (a database not yet migrated) wakes every reader.
      const [tenantId, type] = message.payload.split(' ', 2) as [string, string | undefined];
      this.#wake(tenantId, type);
    });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('event listener connection ended')));
    await client.connect();
    await client.query(`listen ${CHANNEL}`);
    this.#client = client;
    this.#retryMs = RECONNECT_MS.first;
    // Anything that committed while no one listened: let the waiters look.
    this.#wakeAll();
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
