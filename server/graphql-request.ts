// One GraphQL request's database work: one connection, one transaction, one deadline; and how
// many requests one user and one tenant may have in flight.
//
// How PostGraphile runs a document: grafast cuts it into units of SQL (one per batch of a step;
// each alias at the root is one) and its pg adaptor gives every unit a pooled connection and a
// transaction of its own, all at once. So one document of 12 aliases took 12 connections (every
// one of GraphQL's pool), and a statement timeout bounded each statement, never the request.
//
// Here a request that reads or writes anything runs on ONE connection of GraphQL's pool, and its
// deadline, GRAPHQL_DEADLINE_MS from the moment it is admitted, bounds all of its database work:
//   - a query runs in ONE transaction: grafast's units become savepoints on it, one after the
//     other (a unit that fails rolls back to its savepoint, as its own transaction did before);
//     it commits at the end, before the answer is sent;
//   - a mutation's units each run in a transaction of their own on that connection, one after the
//     other, as they did on the pool: each root field commits (and writes its events) before the
//     next begins, so two changes of one weld in one document are two events, each with its
//     reason, exactly as two REST requests would be;
//   - the wait for the connection: past the deadline, /problems/busy;
//   - each unit runs with statement_timeout = what is left of the deadline (and at most
//     GRAPHQL_STATEMENT_TIMEOUT_MS), so the database cancels a statement at the deadline;
//   - a unit that would start after the deadline does not start: /problems/timeout;
//   - on PostgreSQL 17 and later, transaction_timeout = the deadline + DEADLINE_MARGIN_MS ends the
//     transaction (and its connection) even if this process stalled; 15 and 16, which the service
//     also supports, lack it: the three bounds above are this process's own clock.
// Errors of a unit are GraphQL errors of its fields, with the problem type REST would give
// (graphql-errors.ts): /problems/timeout, /problems/busy.
//
// Admission: a user may have GRAPHQL_REQUESTS_PER_USER requests in flight on this instance and a
// tenant GRAPHQL_REQUESTS_PER_TENANT (by default one connection fewer than GraphQL's pool holds,
// so one tenant never holds them all); one more is refused at once, 429 with Retry-After, before
// it waits for anything. A request leaves when its answer is sent and its database work is over
// (a client that hangs up does not free the place while its query still runs).
import type { Request, Response } from 'express';
import type pg from 'pg';
import { makeWithPgClientViaPgClientAlreadyInTransaction } from 'postgraphile/adaptors/pg';
import { getOperationAST, GraphQLError, OperationTypeNode } from 'postgraphile/graphql';
import { InFlight } from '../rest-adapter/http/in-flight.ts';
import { HttpProblem, problemOf } from '../rest-adapter/http/problem.ts';
import type { Logger } from '../rest-adapter/http/log.ts';

/** How long past its deadline PostgreSQL 17+ lets a GraphQL transaction live (a backstop). */
export const DEADLINE_MARGIN_MS = 5_000;

export interface GraphqlRequestLimits {
  /** All the database work of one request, the wait for its connection included. */
  deadlineMs: number;
  /** The longest any one statement may run (less when less of the deadline is left). */
  statementTimeoutMs: number;
  /** Requests one user may have in flight on this instance. */
  requestsPerUser: number;
  /** Requests one tenant may have in flight on this instance. */
  requestsPerTenant: number;
}

type PgSettings = Record<string, string | undefined> | null;
type WithPgClient = ReturnType<typeof makeWithPgClientViaPgClientAlreadyInTransaction>;

/** What a unit that would start after the deadline fails with: /problems/timeout, as a statement
 * cancelled by statement_timeout does. */
function deadlinePassed(): Error {
  return Object.assign(
    new Error('canceling statement: the GraphQL request passed its deadline (GRAPHQL_DEADLINE_MS)'),
    { code: '57014' },
  );
}

/** What a wait for a connection that outlasts the deadline fails with: /problems/busy. */
function noConnection(): Error {
  // pg-pool's own words for the same thing, which problem.ts maps to /problems/busy.
  return new Error('timeout exceeded when trying to connect');
}

/**
 * The database side of one request: its connection and transaction, opened on first use (a
 * request that only introspects never takes one), and its deadline.
 */
export class GraphqlRequestSession {
  readonly deadline: number;
  private readonly pool: pg.Pool;
  private readonly statementTimeoutMs: number;
  private opening: Promise<{ client: pg.PoolClient; run: WithPgClient }> | undefined;
  /** A mutation's units commit one by one (set by the plugin before the operation runs). */
  transactionPerUnit = false;
  /** Whether the server knows transaction_timeout (PostgreSQL 17+); learnt when opening. */
  private hasTransactionTimeout = false;
  /** The units run one after the other; this is the last one's end. */
  private queue: Promise<unknown> = Promise.resolve();
  private ended = false;
  /** Why the server ended the connection, when it did so between two statements. */
  private lost: Error | undefined;
  private readonly onLost = (error: Error) => {
    this.lost ??= error;
  };

  private readonly marginMs: number;

  constructor(
    pool: pg.Pool,
    limits: Pick<GraphqlRequestLimits, 'deadlineMs' | 'statementTimeoutMs'>,
    /** How long past the deadline transaction_timeout ends the transaction (tests shorten it). */
    marginMs = DEADLINE_MARGIN_MS,
  ) {
    this.pool = pool;
    this.deadline = Date.now() + limits.deadlineMs;
    this.statementTimeoutMs = limits.statementTimeoutMs;
    this.marginMs = marginMs;
  }

  remainingMs(): number {
    return this.deadline - Date.now();
  }

  /**
   * grafast's withPgClient for this request: each call a savepoint on the request's transaction,
   * or, for a mutation, a transaction of its own.
   */
  readonly withPgClient: WithPgClient = ((pgSettings: PgSettings, callback: never) => {
    const unit = this.queue.then(async () => {
      if (this.ended) throw new Error('The GraphQL request has already ended');
      if (this.remainingMs() <= 0) throw deadlinePassed();
      const { run } = await this.open();
      const left = this.remainingMs();
      if (left <= 0) throw deadlinePassed();
      const statementTimeout = Math.max(1, Math.min(this.statementTimeoutMs, left));
      const settings: Record<string, string | undefined> = {
        ...pgSettings,
        statement_timeout: String(statementTimeout),
      };
      if (this.transactionPerUnit && this.hasTransactionTimeout) {
        settings.transaction_timeout = String(left + this.marginMs);
      }
      try {
        return await run(settings, callback);
      } catch (error) {
        // The server ended the connection between two statements (transaction_timeout): the
        // statement after it fails only as "not queryable"; its cause says what happened.
        throw this.lost ?? error;
      }
    });
    this.queue = unit.catch(() => {});
    return unit;
  }) as WithPgClient;

  /**
   * Set by GraphqlRequests.admit: called as the operation starts; false when the client has gone
   * already (then nothing runs), else the function to call when the work is over.
   */
  onWork: (() => (() => void) | false) | undefined;

  private open(): Promise<{ client: pg.PoolClient; run: WithPgClient }> {
    this.opening ??= (async () => {
      const client = await connectWithin(this.pool, this.remainingMs());
      client.on('error', this.onLost);
      try {
        if (this.transactionPerUnit) {
          // Each unit begins and commits its own transaction (the adaptor does, with the
          // settings it is given). @dataplan/pg's planner setting for the connection, as its own
          // adaptor makes it, and whether transaction_timeout exists here.
          const { rows } = await client.query<{ has: boolean }>(
            `select set_config('jit_optimize_above_cost', '-1', false),
                    current_setting('server_version_num')::int >= 170000 as has`,
          );
          this.hasTransactionTimeout = rows[0]!.has;
          return { client, run: makeWithPgClientViaPgClientAlreadyInTransaction(client, false) };
        }
        // One round trip: the transaction, @dataplan/pg's planner setting (its adaptor sets it
        // per connection), and on PostgreSQL 17+ the backstop (CASE evaluates set_config only
        // where the setting exists).
        const backstop = Math.max(1, this.remainingMs() + this.marginMs);
        await client.query(
          `begin; select set_config('jit_optimize_above_cost', '-1', true),
             case when current_setting('server_version_num')::int >= 170000
                  then set_config('transaction_timeout', '${backstop}', true) end`,
        );
      } catch (error) {
        client.release(error as Error);
        throw error;
      }
      return { client, run: makeWithPgClientViaPgClientAlreadyInTransaction(client, true) };
    })();
    return this.opening;
  }

  /**
   * After the operation: commits (or rolls back) and gives the connection back. Resolves with the
   * error of a commit that failed (the database ended the transaction: nothing of it was kept).
   */
  async end(commit: boolean): Promise<Error | undefined> {
    this.ended = true;
    await this.queue;
    if (!this.opening) return undefined;
    let opened: { client: pg.PoolClient };
    try {
      opened = await this.opening;
    } catch {
      return undefined; // never connected: nothing to end
    }
    try {
      // A mutation's units have committed (or rolled back) one by one.
      if (!this.transactionPerUnit) await opened.client.query(commit ? 'commit' : 'rollback');
      opened.client.off('error', this.onLost);
      opened.client.release(this.lost);
      return undefined;
    } catch (error) {
      // A transaction_timeout or a lost connection: the connection is of no further use.
      opened.client.release(error as Error);
      return this.lost ?? (error as Error);
    }
  }
}

/** A connection from the pool within `ms`, or noConnection(); a late one goes back at once. */
async function connectWithin(pool: pg.Pool, ms: number): Promise<pg.PoolClient> {
  if (ms <= 0) throw noConnection();
  const connecting = pool.connect();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
  });
  try {
    const client = await Promise.race([connecting, timedOut]);
    if (client) return client;
    connecting.then(
      (late) => late.release(),
      () => {},
    );
    throw noConnection();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The requests in flight on this instance, per user and per tenant, and each one's session.
 */
export class GraphqlRequests {
  readonly limits: GraphqlRequestLimits;
  private readonly pool: pg.Pool;
  private readonly inFlight = new InFlight();
  private readonly sessions = new WeakMap<object, GraphqlRequestSession>();
  private readonly logger: Logger | undefined;

  constructor(pool: pg.Pool, limits: GraphqlRequestLimits, logger?: Logger) {
    this.pool = pool;
    this.limits = limits;
    this.logger = logger;
  }

  /** Requests in flight of a user (`${tenantId} ${userId}`) or a tenant (its id), for tests. */
  count(key: string): number {
    return this.inFlight.count(key);
  }

  /**
   * Admits an authenticated request (or throws the 429 that refuses it) and opens its session.
   * The place is given back once the response has closed and the session's database work is over.
   */
  admit(req: Request, res: Response): GraphqlRequestSession {
    const tenant = req.tenant!.id;
    const user = `${tenant} ${req.identity!.userId}`;
    const { requestsPerUser, requestsPerTenant } = this.limits;
    const userDone = this.inFlight.take(user, requestsPerUser);
    if (!userDone) {
      throw tooMany(
        `This user already has ${requestsPerUser} GraphQL requests in progress, the most allowed ` +
          '(GRAPHQL_REQUESTS_PER_USER); send the next when one has answered.',
        { limit: requestsPerUser, scope: 'user' },
      );
    }
    const tenantDone = this.inFlight.take(tenant, requestsPerTenant);
    if (!tenantDone) {
      userDone();
      throw tooMany(
        `This tenant already has ${requestsPerTenant} GraphQL requests in progress, the most ` +
          'allowed (GRAPHQL_REQUESTS_PER_TENANT); try again shortly.',
        { limit: requestsPerTenant, scope: 'tenant' },
      );
    }
    const session = new GraphqlRequestSession(this.pool, this.limits);
    this.sessions.set(req, session);

    // Given back when both have happened: the response closed, and the work (if it began) ended.
    let holds = 1;
    const letGo = () => {
      if (--holds > 0) return;
      userDone();
      tenantDone();
    };
    let closed = false;
    const close = () => {
      closed = true;
      letGo();
    };
    // A client may hang up while the request was being authenticated: its 'close' has been and
    // gone, and waiting for it would keep the place for good.
    if (res.closed || req.socket.destroyed) close();
    else res.once('close', close);
    session.onWork = () => {
      if (closed) return false; // the client is gone before its work began: do none
      holds++;
      return letGo;
    };
    return session;
  }

  sessionOf(req: unknown): GraphqlRequestSession | undefined {
    return typeof req === 'object' && req !== null ? this.sessions.get(req) : undefined;
  }

  /**
   * The grafast middleware that runs each admitted request's operation on its session, and ends
   * the transaction before the answer is sent: a mutation answered is a mutation committed.
   */
  plugin(): GraphileConfig.Plugin {
    return {
      name: 'WeldGraphqlRequestPlugin',
      version: '1.0.0',
      grafast: {
        middleware: {
          execute: async (next, event) => {
            const { args } = event;
            const req = (args.requestContext as { expressv4?: { req?: unknown } } | undefined)
              ?.expressv4?.req;
            const session = this.sessionOf(req);
            if (!session) return next();
            const done = session.onWork?.();
            if (done === false) {
              return { errors: [new GraphQLError('The client went away before the request ran.')] };
            }
            const operation = getOperationAST(args.document, args.operationName ?? undefined);
            const writes = operation?.operation === OperationTypeNode.MUTATION;
            session.transactionPerUnit = writes;
            (args.contextValue as Record<string, unknown>).withPgClient = session.withPgClient;
            try {
              const result = await next();
              // A query's transaction commits now (it wrote nothing: its answer stands even if
              // the commit fails); a mutation's fields have each committed already.
              const failed = await session.end(true);
              if (failed) {
                this.logger?.warn({ err: failed }, 'GraphQL read-only transaction ended badly');
              }
              return result;
            } catch (error) {
              await session.end(false);
              throw error;
            } finally {
              done?.();
            }
          },
        },
      },
    };
  }
}

function tooMany(detail: string, extensions: Record<string, unknown>): HttpProblem {
  return problemOf('too-many-graphql-requests', {
    detail,
    extensions,
    headers: { 'Retry-After': '1' },
  });
}
