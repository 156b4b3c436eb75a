// GraphQL errors, as the client and the log see them.
//
// The client: a refusal of the database (a role without the grant, a duplicate key, a transition
// the rules forbid, a stale version, a statement timeout...) comes back as a GraphQL error whose
// message says what happened and whose extensions.code is the `type` REST answers for the same
// refusal (the one registry, rest-adapter/http/problem-types.ts), with the same extension members
// (`allowed`, `version`, `errors`). Anything else is unexpected: the client gets grafserv's masked
// message with an id, and the log gets one JSON line with that id.
//
// The log: grafserv's own masking prints the error, the document and a stack to the console
// over several lines; ours writes one JSON line instead. Grafast and grafserv print a few other
// things with console (planning errors, handler failures); while PostGraphile builds its schema
// or serves a request, those go to the service's pino logger too, one JSON line each, so stdout
// stays JSON. Variables are never logged; the document only at debug level.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomUUID } from 'node:crypto';
import { format } from 'node:util';
import { isSafeError } from 'postgraphile/grafast';
import { GraphQLError } from 'postgraphile/graphql';
import {
  camelCase,
  CatalogColumnNaming,
  databaseProblem,
  type ColumnNaming,
} from '../rest-adapter/http/problem.ts';
import { PROBLEM_TYPES, problemType } from '../rest-adapter/http/problem-types.ts';
import type { Logger } from '../rest-adapter/http/log.ts';

/** The connection filter plugin refuses these inputs with plain Errors; they are the client's. */
const FILTER_INPUT_ERROR =
  /^(Empty objects|Null literals) are forbidden in filter argument input\.$/;

export type MaskError = NonNullable<GraphileConfig.GrafservOptions['maskError']>;

/** The logger of the request (or the schema build) PostGraphile is working for right now. */
const activeLogger = new AsyncLocalStorage<Logger>();

/** Runs `work` with console output routed to `logger` (see routeConsoleToLogger). */
export function withGraphqlLogger<T>(logger: Logger, work: () => T): T {
  routeConsoleToLogger();
  return activeLogger.run(logger, work);
}

let routed = false;
/**
 * Replaces the console's printing methods with versions that, inside withGraphqlLogger, write one
 * JSON line through pino (multi-line text becomes one escaped string) and elsewhere behave as
 * before. PostGraphile's libraries print with console directly; none takes a logger.
 */
function routeConsoleToLogger(): void {
  if (routed) return;
  routed = true;
  const levels = [
    ['error', 'error'],
    ['warn', 'warn'],
    ['info', 'info'],
    ['log', 'info'],
    ['dir', 'info'],
    ['debug', 'debug'],
    ['trace', 'debug'],
  ] as const;
  for (const [method, level] of levels) {
    const original = console[method].bind(console) as (...args: unknown[]) => void;
    console[method] = (...args: unknown[]) => {
      const logger = activeLogger.getStore();
      if (!logger) return original(...args);
      logger[level]({ component: 'postgraphile' }, format(...args));
    };
  }
}

/** GraphQL's names for the columns of weld_public: camelCase, `id` as `rowId`. */
export class GraphqlColumnNaming extends CatalogColumnNaming {
  constructor() {
    super((column) => (column === 'id' ? 'rowId' : camelCase(column)));
  }
}

/**
 * grafserv's maskError: the database's refusals become clear errors carrying their REST problem
 * type; GraphQL's own errors (validation, coercion) and Grafast's SafeErrors pass as they are;
 * anything else is hidden behind an id and logged.
 */
export function makeMaskError(naming: ColumnNaming, fallbackLogger: Logger): MaskError {
  return (error) => {
    const original = error.originalError;
    if (!original || original instanceof GraphQLError) return error;
    const log = activeLogger.getStore() ?? fallbackLogger;
    const at = {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path: error.path,
    };
    if (FILTER_INPUT_ERROR.test(original.message)) {
      return new GraphQLError(original.message, {
        ...at,
        originalError: original,
        extensions: {
          code: problemType('validation-failed'),
          status: PROBLEM_TYPES['validation-failed'].status,
        },
      });
    }
    if (isSafeError(original)) {
      return new GraphQLError(original.message, {
        ...at,
        originalError: original,
        extensions: original.extensions ?? {},
      });
    }

    const problem = databaseProblem(original, naming);
    if (problem) {
      // A timeout or a lost database is worth a line, as REST logs its 5xx answers.
      if (problem.status >= 500) log.warn({ code: problem.type, path: error.path }, problem.detail);
      return new GraphQLError(problem.detail, {
        ...at,
        originalError: original,
        extensions: { code: problem.type, status: problem.status, ...problem.extensions },
      });
    }

    // Unexpected. The hash groups occurrences of one fault (its message and SQLSTATE, not the
    // document); the id finds this occurrence in the log.
    const code = (original as { code?: unknown }).code;
    const sqlstate = typeof code === 'string' ? code : undefined;
    const hash = createHash('sha1')
      .update(`${sqlstate ?? ''} ${original.message}`)
      .digest('base64url');
    const errorId = randomUUID();
    log.error(
      {
        errorId,
        hash,
        path: error.path,
        error: {
          type: original.constructor?.name ?? original.name,
          message: original.message,
          code: sqlstate,
          stack: original.stack,
        },
      },
      'GraphQL error hidden from the client',
    );
    log.debug({ errorId, query: error.source?.body }, 'the GraphQL document of the hidden error');
    return new GraphQLError(`An error occurred (logged with hash: '${hash}', id: '${errorId}')`, {
      ...at,
      originalError: original,
      extensions: { errorId },
    });
  };
}
