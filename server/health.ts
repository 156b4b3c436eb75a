// Health: anonymous, JSON, and honest about the database.
//   GET /health/live   the tenant of this origin is served: its database answers (spec 4)
//   GET /health/ready  the process can serve: database reachable, schema migrated to the
//                      newest committed migration, not shutting down. Answers on any Host,
//                      because load balancers probe by address.
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { MIGRATIONS_DIR } from '../db/database.ts';
import { common, content, problem } from '../rest-adapter/http/operation.ts';
import { problemOf } from '../rest-adapter/http/problem.ts';
import type { Route } from '../rest-adapter/http/route.ts';

/** The newest committed migration's file name; the database must have applied it. */
export function newestCommittedMigration(): string {
  const files = fs
    .readdirSync(path.join(MIGRATIONS_DIR, 'committed'))
    .filter((f) => f.endsWith('.sql'));
  return files.sort().at(-1) ?? '';
}

export function healthRoutes(deps: { pool: pg.Pool; isDraining: () => boolean }): Route[] {
  const expectedMigration = newestCommittedMigration();

  /** Runs a probe query; an unreachable database becomes 503 in problem.ts, like everywhere. */
  async function probe<T extends pg.QueryResultRow>(sql: string): Promise<T | undefined> {
    return (await deps.pool.query<T>(sql)).rows[0];
  }

  return [
    {
      method: 'GET',
      path: '/health/live',
      doc: {
        schemas: {
          Health: { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'] },
        },
        summary: 'The tenant of this origin is served',
        security: [],
        responses: {
          '200': { description: 'healthy', ...content('Health') },
          '503': problem('database unavailable'),
          ...common,
        },
      },
      anonymous: true,
      handler: async (_req, res) => {
        await probe('select 1');
        res.json({ status: 'ok' });
      },
    },
    {
      method: 'GET',
      path: '/health/ready',
      doc: {
        summary: 'This instance can serve (any Host)',
        security: [],
        responses: {
          '200': { description: 'ready', ...content('Health') },
          '503': problem('not ready'),
          default: common.default,
        },
      },
      tenant: false,
      anonymous: true,
      handler: async (_req, res) => {
        if (deps.isDraining()) {
          throw problemOf('shutting-down', {
            detail: 'This instance is shutting down and takes no new work.',
          });
        }
        const row = await probe<{ applied: string | null }>(
          'select weld_hidden.applied_migration() as applied',
        );
        const applied = row?.applied ?? '';
        if (applied < expectedMigration) {
          throw problemOf('schema-behind', {
            detail: `The database has applied ${applied || 'no migration'}; this build needs ${expectedMigration}.`,
          });
        }
        res.json({ status: 'ok' });
      },
    },
  ];
}
