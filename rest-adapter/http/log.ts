// JSON logs (pino), one line per request with its request id, never a secret: we log no headers,
// no bodies and no query strings, and redact the usual secret names in case one slips into an
// error object.
import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      id: string;
      log: Logger;
    }
  }
}

/**
 * The service's logger: JSON lines (LOG_FORMAT=json, for log collectors), or with LOG_FORMAT=pretty
 * one readable line per entry for a person at a terminal (pino-pretty, coloured when stdout is
 * one). Both carry the same fields and redactions.
 */
export function createLogger(level: string, format: 'json' | 'pretty' = 'json'): Logger {
  return pino(
    {
      level,
      base: { service: 'weld-data-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [
          '*.password',
          '*.accessToken',
          '*.refreshToken',
          '*.authorization',
          '*.cookie',
          '*.connectionString',
          '*.secret',
          '*.clientSecret',
          '*.client_secret',
        ],
        censor: '[redacted]',
      },
    },
    // Written asynchronously: under a burst (an overload answering hundreds of 503s at once), a
    // slow reader of stdout must not stall the event loop that answers health checks. Lines still
    // go out at once when the process is idle, and are flushed when it exits.
    format === 'pretty'
      ? pretty({
          destination: pino.destination({ dest: 1, sync: false }),
          colorize: process.stdout.isTTY,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname,service',
          singleLine: true,
        })
      : pino.destination({ dest: 1, sync: false }),
  );
}

/** The problem type an answer was sent with (problem.ts's sendProblem notes it). */
const problemTypeOf = (res: Response): string | undefined =>
  typeof res.locals.problemType === 'string' ? res.locals.problemType : undefined;

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives each request an id (the caller's X-Request-Id when it is a sane token, else a new UUID),
 * returns it as a response header, and logs the request when its response is done.
 */
export function requestLogging(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    req.id = incoming && INCOMING_ID.test(incoming) ? incoming : randomUUID();
    req.log = logger.child({ reqId: req.id });
    res.setHeader('X-Request-Id', req.id);
    const started = process.hrtime.bigint();
    // The path as asked: a router mounted at /api trims req.path while the request is inside it.
    const path = req.path;
    res.on('close', () => {
      req.log.info(
        {
          method: req.method,
          path,
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          tenant: req.tenant?.slug,
          // Who asked, as the token said (a user id, an OAuth2 client's id, a role; never the
          // token), and what refused a 4xx: an operator finds which caller keeps failing, and why.
          user: req.identity?.userId,
          client: req.identity?.clientId,
          role: req.identity?.role,
          problem: res.statusCode >= 400 && res.statusCode < 500 ? problemTypeOf(res) : undefined,
          aborted: !res.writableFinished || undefined,
        },
        'request',
      );
    });
    next();
  };
}
