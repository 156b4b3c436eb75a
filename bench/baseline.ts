// The benchmark's baseline: the least a Node service can do to answer GET /welds?limit=50 on this
// hardware. node:http and pg, no framework, no token check, the same SQL and the same per-request
// transaction with the same role and row-security settings (withContext), the same pool size.
// Tenants come from BENCH_TENANTS, a JSON map of Host -> tenant id. It stays what issue F11 measured
// against: pg parses the rows (timestamps into Dates) and JSON.stringify renders them.
//
// `?trips=1` (issue F16, an experiment): the same transaction as one simple query (begin and the
// context, the SELECT with its limit written in, commit), one round trip instead of three, to
// measure what the round trips cost.
import http from 'node:http';
import pg from 'pg';
import {
  beginStatement,
  createPool,
  prepared,
  withContext,
  type SessionContext,
} from '../db/database.ts';
import { welds } from '../rest-adapter/welds.ts';

const tenants = JSON.parse(process.env.BENCH_TENANTS ?? '{}') as Record<string, string>;
const pool = createPool(process.env.AUTHENTICATOR_URL!, {
  max: Number(process.env.DB_POOL_MAX ?? 20),
  onError: () => {},
});

// The weld's columns as the service read them before PostgreSQL rendered its JSON (F11); the
// limit is a parameter, or written in for the one-round-trip experiment.
const selectWithLimit = (limit: string) => `select r.id, ${Object.entries(welds.fields)
  .map(([name, f]) => `${f.read ?? `r.${f.column}`} as "${name}"`)
  .join(', ')}, r.version, r.created_at as "createdAt", r.updated_at as "updatedAt"
  from weld_public.welds r order by r.id limit ${limit}`;
const SELECT = selectWithLimit('$1');

const server = http.createServer((req, res) => {
  const tenantId = tenants[req.headers.host ?? ''];
  if (!tenantId) {
    res.writeHead(404).end();
    return;
  }
  const context: SessionContext = { role: 'weld_viewer', tenantId };
  const trips = new URL(req.url ?? '/', 'http://baseline').searchParams.get('trips');
  const page: Promise<{ id: string }[]> =
    trips === '1'
      ? oneTrip(context)
      : withContext(pool, context, (db) => db.query<{ id: string }>(prepared(SELECT, [51]))).then(
          ({ rows }) => rows,
        );
  page.then(
    (rows) => {
      const items = rows.slice(0, 50);
      const body = JSON.stringify({
        items,
        nextCursor: rows.length > 50 ? items.at(-1)!.id : null,
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    },
    () => res.writeHead(500).end(),
  );
});
/** The page in one round trip: begin and the context, the SELECT, commit, as one simple query. */
async function oneTrip(context: SessionContext) {
  const client = await pool.connect();
  let results: pg.QueryResult<{ id: string }>[];
  try {
    const text = `${beginStatement(context)}; ${selectWithLimit('51')}; commit`;
    results = (await client.query(text)) as unknown as pg.QueryResult<{ id: string }>[];
  } catch (error) {
    client.release(error as Error); // an aborted transaction block: the connection is dropped
    throw error;
  }
  client.release();
  return results.at(-2)!.rows; // the statement before the commit
}

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
