// Ended sessions end their access tokens at once. Access tokens are stateless JWTs, checked by
// signature and remembered once verified (access-tokens.ts); on their own they would stay good for
// up to ACCESS_TOKEN_TTL_SECONDS after a logout, a detected refresh-token reuse, a disabled user or
// a changed role. The database announces every revocation (pg_notify on `weld_session_revoked`,
// a trigger of migration 000006, whichever way the session ended: REST, GraphQL, weld-admin or
// plain SQL), and every server process keeps the revoked sessions of the last token lifetime in
// memory, so each request pays one Map lookup.
//
// The listener is one dedicated connection (LISTEN needs a session of its own). When it breaks
// (database restart), it reconnects with a growing delay and reloads the revocations it may have
// missed from weld_hidden.revoked_sessions(since). Until it is connected, revocations committed
// meanwhile may go unseen: the reload on reconnect closes that gap. A connection can also die
// without a word (a NAT or firewall dropping an idle one, a failover): TCP keepalive and a reload
// every RELOAD_EVERY_MS, which doubles as a heartbeat, find that out and reconnect, and the
// reload is a backstop for any notification lost on the way.
import pg from 'pg';
import { onServiceNotification } from '../../../db/event-notifications.ts';
import type { Logger } from '../log.ts';

const CHANNEL = 'weld_session_revoked';
const RECONNECT_MS = { first: 500, max: 30_000 };
const RELOAD_EVERY_MS = 60_000;

export class SessionRevocations {
  readonly #senders: pg.Pool | undefined;
  readonly #url: string;
  readonly #rememberMs: number;
  readonly #logger: Logger | undefined;
  readonly #reloadEveryMs: number;
  /** `${tenantId} ${sessionId}` -> when it may be forgotten (its tokens have expired by then). */
  readonly #revoked = new Map<string, number>();
  #client: pg.Client | undefined;
  #stopped = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #reloadTimer: NodeJS.Timeout | undefined;
  #reloading: Promise<void> = Promise.resolve();
  #queuedReload: Promise<void> | undefined;
  /** The connection the queued reload is for (after a reconnect, a new one reloads anew). */
  #queuedFor: pg.Client | undefined;

  constructor(
    authenticatorUrl: string,
    options: {
      accessTokenTtl: number;
      logger?: Logger;
      reloadEveryMs?: number;
      /** The service's pool, to tell who sent a notification (fromReportingLogin). */
      senders?: pg.Pool;
    },
  ) {
    this.#url = authenticatorUrl;
    this.#senders = options.senders;
    // A token lives accessTokenTtl seconds, plus the 5 s clock tolerance of verification.
    this.#rememberMs = (options.accessTokenTtl + 60) * 1000;
    this.#logger = options.logger;
    this.#reloadEveryMs = options.reloadEveryMs ?? RELOAD_EVERY_MS;
  }

  /** Connects the listener and loads the recent revocations; rejects if the first attempt fails. */
  async start(): Promise<void> {
    await this.#connect();
  }

  isRevoked(tenantId: string, sessionId: string): boolean {
    const key = `${tenantId} ${sessionId}`;
    const until = this.#revoked.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.#revoked.delete(key);
    return false;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#reloadTimer);
    await this.#client?.end().catch(() => {});
  }

  #remember(tenantId: string, sessionId: string, revokedAt = Date.now()): void {
    this.#revoked.set(`${tenantId} ${sessionId}`, revokedAt + this.#rememberMs);
    if (this.#revoked.size % 1000 === 0) this.#forgetExpired(); // bounded by a token lifetime
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.#url,
      application_name: 'weld-revocations',
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    client.on('error', (error) => {
      this.#logger?.warn({ err: error }, 'session revocation listener lost its connection');
    });
    client.on('end', () => {
      if (this.#client === client) this.#client = undefined;
      if (!this.#stopped) this.#retry(RECONNECT_MS.first);
    });
    // (A reporting login may NOTIFY too: what it sends is dropped.)
    onServiceNotification(
      client,
      CHANNEL,
      this.#senders,
      (payload) => {
        try {
          const { tenantId, sessionId } = JSON.parse(payload) as Record<string, string>;
          if (tenantId && sessionId) this.#remember(tenantId, sessionId);
        } catch {
          this.#logger?.warn({ payload }, 'unreadable session revocation');
        }
      },
      () => {}, // (the session broke: the reload after reconnecting reads what was missed)
      // A revocation from a session already gone (weld-admin user disable, client remove, user
      // role: short-lived processes): its word is not taken, the database's is, at once.
      () => void this.#reload(client).catch(() => {}),
    );
    try {
      await client.connect();
      await client.query(`listen ${CHANNEL}`);
      // Listening first, then reading: a revocation in between is seen at least once.
      await this.#reload(client);
    } catch (error) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      throw error;
    }
    this.#client = client;
    clearInterval(this.#reloadTimer);
    this.#reloadTimer = setInterval(() => {
      // A failed reload means a dead connection: ending it reconnects (the 'end' handler).
      this.#reload(client).catch(() => void client.end().catch(() => {}));
    }, this.#reloadEveryMs);
    this.#reloadTimer.unref();
  }

  /**
   * One reload at a time on the listening connection (a burst of revocations from vanished
   * senders, a tenant's removal say, would otherwise overlap queries on it, which pg warns of):
   * a reload asked for while one runs waits for it, and any asked for meanwhile share that one.
   */
  #reload(client: pg.Client): Promise<void> {
    if (this.#queuedReload && this.#queuedFor === client) return this.#queuedReload;
    const queued = this.#reloading
      .catch(() => {})
      .then(() => {
        this.#queuedReload = undefined;
        return this.#reloadNow(client);
      });
    this.#queuedReload = queued;
    this.#queuedFor = client;
    this.#reloading = queued;
    return queued;
  }

  /** Remembers every session revoked within the last token lifetime. */
  async #reloadNow(client: pg.Client): Promise<void> {
    const { rows } = await client.query<{ tenant_id: string; session_id: string; at: number }>(
      `select tenant_id, session_id, extract(epoch from revoked_at) * 1000 as at
         from weld_hidden.revoked_sessions(now() - make_interval(secs => $1))`,
      [this.#rememberMs / 1000],
    );
    for (const row of rows) this.#remember(row.tenant_id, row.session_id, Number(row.at));
    this.#forgetExpired();
  }

  #retry(delayMs: number): void {
    this.#retryTimer = setTimeout(() => {
      this.#connect().then(
        () => this.#logger?.info('session revocation listener reconnected'),
        () => {
          if (!this.#stopped) this.#retry(Math.min(delayMs * 2, RECONNECT_MS.max));
        },
      );
    }, delayMs);
    this.#retryTimer.unref();
  }

  #forgetExpired(): void {
    const now = Date.now();
    for (const [key, until] of this.#revoked) if (until <= now) this.#revoked.delete(key);
  }
}
