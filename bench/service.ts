// The service as its own process (server/main.ts) on a bench's database, as `npm start` runs it
// against DATABASE_URL, and requests to it: for the benches that measure it over HTTP (events.ts,
// graphql-fairness.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');

/**
 * Starts server/main.ts on `rootUrl` (port chosen by the system, the log in `logFile`) and
 * resolves once it listens. `env` adds to or overrides the defaults.
 */
export function startService(
  rootUrl: string,
  logFile: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; port: number }> {
  const fd = fs.openSync(logFile, 'w');
  const child = spawn(process.execPath, ['server/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: rootUrl,
      // Required with a database URL; a fresh one per run (the benches register no webhook).
      WEBHOOK_SECRET_KEY: crypto.randomBytes(32).toString('base64'),
      PORT: '0',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', fd, fd],
  });
  fs.closeSync(fd);
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 60_000;
    const poll = setInterval(() => {
      const match = /"port":(\d+),[^\n]*listening on/.exec(fs.readFileSync(logFile, 'utf8'));
      if (match) {
        clearInterval(poll);
        resolve({ child, port: Number(match[1]) });
      } else if (Date.now() > deadline || child.exitCode !== null) {
        clearInterval(poll);
        reject(new Error(`the service did not start; see ${logFile}`));
      }
    }, 100);
  });
}

/** One JSON request to the service on `agent`; resolves with the status and the body's text. */
export function callService(
  agent: http.Agent,
  port: number,
  request: { host: string; method: string; path: string; token?: string; body?: unknown },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        agent,
        method: request.method,
        path: request.path,
        headers: {
          host: request.host,
          'content-type': 'application/json',
          ...(request.token ? { authorization: `Bearer ${request.token}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(request.body === undefined ? undefined : JSON.stringify(request.body));
  });
}
