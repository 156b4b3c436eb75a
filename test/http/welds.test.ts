// The contract's data paths over real HTTP, each case against both /x and /api/x. Every response
// is also checked against the OpenAPI document (helpers/http.ts).
import test, { type ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, cookieHeader, login, setCookies } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const A = 'a.test';
const B = 'b.test';
const PREFIXES = ['', '/api'] as const;
const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;

interface World {
  port: number;
  tokens: Record<(typeof ROLES)[number], string>;
  tokenB: string;
  bigIso: string;
  smallIso: string;
  weldOfB: string;
  owner: Awaited<ReturnType<typeof ownerClient>>;
}

/** Tenant A: an ISO with 1,234 welds and a small one with 6; tenant B: one weld. */
async function world(t: ExecutionContext): Promise<World> {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const a = await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  const b = await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  const iso = async (tenant: string, number: string, line: string) =>
    (
      await owner.query<{ id: string }>(
        `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, $2, $3) returning id`,
        [tenant, number, line],
      )
    ).rows[0]!.id;
  const welds = (tenant: string, isoId: string, count: number, status = 'PENDING') =>
    owner.query(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status)
       select $1, $2, 'W' || lpad(n::text, 4, '0'), 'BW', 6, $4::weld_public.weld_status
         from generate_series(1, $3) n`,
      [tenant, isoId, count, status],
    );
  const bigIso = await iso(a.id, 'ISO-BIG', 'L-100');
  const smallIso = await iso(a.id, 'ISO-SMALL', 'L-200');
  await welds(a.id, bigIso, 1234);
  await welds(a.id, smallIso, 3, 'ACCEPTED');
  await owner.query(
    `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status)
     values ($1, $2, 'R1', 'BW', 6, 'REJECTED'), ($1, $2, 'R2', 'BW', 6, 'REPAIR'), ($1, $2, 'V1', 'BW', 6, 'VOIDED')`,
    [a.id, smallIso],
  );
  const isoB = await iso(b.id, 'ISO-B', 'L-900');
  await welds(b.id, isoB, 1);
  const weldOfB = (
    await owner.query<{ id: string }>('select id from weld_public.welds where tenant_id = $1', [
      b.id,
    ])
  ).rows[0]!.id;

  const { port } = await startServer(t, target);
  const tokens = {} as World['tokens'];
  for (const role of ROLES) tokens[role] = (await login(port, A, role)).json.accessToken;
  const tokenB = (await login(port, B, 'admin')).json.accessToken;
  return { port, tokens, tokenB, bigIso, smallIso, weldOfB, owner };
}

const get = (
  w: World,
  path: string,
  token = w.tokens.viewer,
  headers: Record<string, string> = {},
) => request(w.port, { path, host: A, headers: { authorization: `Bearer ${token}`, ...headers } });
const patchStatus = (
  w: World,
  prefix: string,
  id: string,
  body: unknown,
  token: string,
  headers: Record<string, string> = {},
) =>
  request(w.port, {
    method: 'PATCH',
    path: `${prefix}/welds/${id}/status`,
    host: A,
    body,
    headers: { authorization: `Bearer ${token}`, ...headers },
  });

async function firstWeld(
  w: World,
  prefix: string,
  query: string,
): Promise<{ id: string; version: number }> {
  return (await get(w, `${prefix}/welds?limit=1&${query}`)).json.items[0];
}

function problemOf(t: ExecutionContext, res: HttpResponse, status: number, label = ''): void {
  t.is(res.status, status, `${label} ${res.text}`);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/, label);
}

for (const prefix of PREFIXES) {
  const at = (path: string) => `${prefix}${path}`;

  test(`GET ${at('/isos')}: the contract shape, filters, validation`, async (t) => {
    const w = await world(t);
    const all = await get(w, at('/isos'));
    t.is(all.status, 200);
    t.deepEqual(Object.keys(all.json).sort(), ['items', 'nextCursor']);
    t.is(all.json.items.length, 2);
    t.is(all.json.nextCursor, null);
    t.deepEqual(Object.keys(all.json.items[0]).sort(), [
      'area', 'createdAt', 'drawingId', 'fluidService', 'id', 'isoNumber', 'lineNumber', 'pipingClass', 'revision', 'rtPercent', 'updatedAt', 'version', 'weldCounts',
    ]); // prettier-ignore
    // Each ISO's progress: its welds by status, as the owner wrote them (in bulk).
    const counts = Object.fromEntries(
      all.json.items.map((i: { isoNumber: string; weldCounts: unknown }) => [
        i.isoNumber,
        i.weldCounts,
      ]),
    );
    t.deepEqual(counts, {
      'ISO-BIG': { total: 1234, pending: 1234, accepted: 0, rejected: 0, repair: 0, voided: 0 },
      'ISO-SMALL': { total: 6, pending: 0, accepted: 3, rejected: 1, repair: 1, voided: 1 },
    });
    t.deepEqual(
      (await get(w, at('/isos?isoNumber=ISO-BIG'))).json.items.map(
        (i: { isoNumber: string }) => i.isoNumber,
      ),
      ['ISO-BIG'],
    );
    t.deepEqual(
      (await get(w, at('/isos?lineNumber=L-200'))).json.items.map(
        (i: { isoNumber: string }) => i.isoNumber,
      ),
      ['ISO-SMALL'],
    );
    const paged = await get(w, at('/isos?limit=1'));
    t.is(paged.json.items.length, 1);
    t.truthy(paged.json.nextCursor);
    t.is(
      paged.headers.link,
      `<${at('/isos')}?limit=1&cursor=${paged.json.nextCursor}>; rel="next"`,
    );

    for (const [query, parameter] of [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=%%%', 'cursor'],
      ['colour=red', 'colour'],
    ] as const) {
      const res = await get(w, at(`/isos?${query}`));
      problemOf(t, res, 422, query);
      t.is(res.json.type, '/problems/validation-failed');
      t.is(res.json.errors[0].parameter, parameter, query);
      t.regex(res.json.detail, new RegExp(`^${parameter}:? `), `${query}: the detail names it`);
    }
    // Messages in plain words, never zod's internals.
    const words = async (query: string) => (await get(w, at(`/isos?${query}`))).json.detail;
    t.is(await words('limit=abc'), 'limit must be a whole number from 1 to 500');
    t.is(
      await words('colour=red&size=2'),
      'colour is not a parameter of this operation; size is not a parameter of this operation',
    );
    problemOf(t, await request(w.port, { path: at('/isos'), host: A }), 401);
  });

  test(`GET ${at('/welds')}: filters by isoId, status (one or several), weldNumber, updatedSince`, async (t) => {
    const w = await world(t);
    const ids = (res: HttpResponse) =>
      res.json.items.map((i: { weldNumber: string }) => i.weldNumber).sort();
    const small = await get(w, at(`/welds?isoId=${w.smallIso}`));
    t.is(small.status, 200);
    t.deepEqual(ids(small), ['R1', 'R2', 'V1', 'W0001', 'W0002', 'W0003']);
    t.deepEqual(Object.keys(small.json.items[0]).sort(), [
      'acceptanceDisposition', 'acceptanceInspectionId', 'acceptanceNdtRecordId',
      'baseMetal1PNumber', 'baseMetal2PNumber', 'component1Id', 'component2Id', 'createdAt', 'id',
      'isoId', 'mapPage', 'mapX', 'mapY', 'material',
      'preheatF', 'repairCycle', 'schedule', 'size', 'status', 'throatIn', 'type', 'updatedAt', 'version', 'wallThickness',
      'weldNumber', 'weldedOn', 'welderId', 'wpsId',
    ]); // prettier-ignore
    t.deepEqual(ids(await get(w, at(`/welds?isoId=${w.smallIso}&status=REJECTED`))), ['R1']);
    t.deepEqual(ids(await get(w, at(`/welds?isoId=${w.smallIso}&status=REJECTED,REPAIR,VOIDED`))), [
      'R1',
      'R2',
      'V1',
    ]);
    t.deepEqual(ids(await get(w, at(`/welds?isoId=${w.smallIso}&weldNumber=W0002`))), ['W0002']);
    const future = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    t.deepEqual(ids(await get(w, at(`/welds?isoId=${w.smallIso}&updatedSince=${future}`))), []);
    t.is(
      (await get(w, at(`/welds?updatedSince=2000-01-01T00:00:00Z&limit=500`))).json.items.length,
      500,
    );
    // A plain date means that day's midnight UTC.
    t.deepEqual(ids(await get(w, at(`/welds?isoId=${w.smallIso}&updatedSince=2099-01-01`))), []);
    t.is(
      (await get(w, at(`/welds?isoId=${w.smallIso}&updatedSince=2000-01-01`))).json.items.length,
      6,
    );

    for (const [query, parameter] of [
      ['status=DONE', 'status'],
      ['status=PENDING,nope', 'status'],
      ['isoId=42', 'isoId'],
      ['updatedSince=yesterday', 'updatedSince'],
      ['updatedSince=0000-01-01', 'updatedSince'],
      ['limit=-1', 'limit'],
    ] as const) {
      const res = await get(w, at(`/welds?${query}`));
      problemOf(t, res, 422, query);
      t.true(
        res.json.errors.some((e: { parameter: string }) => e.parameter.startsWith(parameter)),
        `${query} names ${parameter}`,
      );
    }
  });

  test(`GET ${at('/welds')}: walking a 1,234-weld ISO with limit=100 sees each weld exactly once`, async (t) => {
    const w = await world(t);
    const seen: string[] = [];
    let path: string | undefined = at(`/welds?isoId=${w.bigIso}&limit=100`);
    let pages = 0;
    while (path) {
      const res = await get(w, path);
      t.is(res.status, 200);
      seen.push(...res.json.items.map((i: { id: string }) => i.id));
      pages++;
      const link = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link ?? ''))?.[1];
      t.is(Boolean(link), res.json.nextCursor !== null, 'Link header iff nextCursor');
      if (link) t.true(link.includes(`cursor=${res.json.nextCursor}`));
      path = link;
    }
    t.is(pages, 13);
    t.is(seen.length, 1234);
    t.is(new Set(seen).size, 1234);
    t.deepEqual(seen, [...seen].sort(), 'a stable order (by id)');
  });

  test(`GET ${at('/welds')}?sort=: each order walked in small pages is the order SQL gives, ties by id`, async (t) => {
    const w = await world(t);
    // Dates on some welds of the small ISO (the rest have none: they sort after every date).
    await w.owner.query(
      `update weld_public.welds set welded_on = date '2026-03-01' + (weld_number = 'R1')::int * 7
        where iso_id = $1 and weld_number in ('R1', 'R2', 'W0001')`,
      [w.smallIso],
    );
    const walk = async (sort: string) => {
      const ids: string[] = [];
      let path: string | null = at(`/welds?isoId=${w.smallIso}&sort=${sort}&limit=2`);
      while (path) {
        const res = await get(w, path);
        t.is(res.status, 200, res.text);
        ids.push(...(res.json.items as Array<{ id: string }>).map((x) => x.id));
        const next = res.json.nextCursor as string | null;
        path = next ? at(`/welds?isoId=${w.smallIso}&sort=${sort}&limit=2&cursor=${next}`) : null;
      }
      return ids;
    };
    const sql = async (order: string) =>
      (
        await w.owner.query<{ id: string }>(
          `select id from weld_public.welds where iso_id = $1 order by ${order}`,
          [w.smallIso],
        )
      ).rows.map((r) => r.id);
    t.deepEqual(await walk('weldNumber'), await sql('weld_number, id'));
    t.deepEqual(await walk('-weldNumber'), await sql('weld_number desc, id desc'));
    t.deepEqual(await walk('status'), await sql('status, id'));
    t.deepEqual(await walk('weldedOn'), await sql("coalesce(welded_on, 'infinity'::date), id"));
    const newest = await walk('-weldedOn');
    t.deepEqual(newest, await sql("coalesce(welded_on, 'infinity'::date) desc, id desc"));
    t.is(newest.length, 6);
    // Refused: an order not offered, an id cursor given to a sorted list and the reverse, and a
    // sort asked of the CSV export (which has its own order).
    const first = await get(w, at(`/welds?isoId=${w.smallIso}&limit=1`));
    const sorted = await get(w, at(`/welds?isoId=${w.smallIso}&limit=1&sort=status`));
    for (const bad of [
      `/welds?sort=size`,
      `/welds?sort=status&cursor=${first.json.nextCursor}`,
      `/welds?cursor=${sorted.json.nextCursor}`,
      // A cursor of one order given to another (or the other direction): refused, not misread.
      `/welds?sort=weldNumber&cursor=${sorted.json.nextCursor}`,
      `/welds?sort=-status&cursor=${sorted.json.nextCursor}`,
      `/welds?sort=status&format=csv`,
    ]) {
      problemOf(t, await get(w, at(bad)), 422, bad);
    }
  });

  test(`GET ${at('/welds/{id}')}: ETag and 304; unknown, other tenant's and non-UUID ids are 404`, async (t) => {
    const w = await world(t);
    const weld = await firstWeld(w, prefix, `isoId=${w.smallIso}`);
    const one = await get(w, at(`/welds/${weld.id}`));
    t.is(one.status, 200);
    t.is(one.json.id, weld.id);
    t.is(one.headers.etag, `"${one.json.version}"`);
    const cached = await get(w, at(`/welds/${weld.id}`), w.tokens.viewer, {
      'if-none-match': one.headers.etag!,
    });
    t.is(cached.status, 304);
    t.is(cached.text, '');
    t.is(
      (await get(w, at(`/welds/${weld.id}`), w.tokens.viewer, { 'if-none-match': '"999"' })).status,
      200,
    );
    for (const id of ['00000000-0000-4000-8000-000000000000', w.weldOfB, 'not-a-uuid', '1']) {
      problemOf(t, await get(w, at(`/welds/${id}`)), 404, id);
    }
    // Tenant B's own user sees its weld, so the 404 above was the tenant boundary.
    problemOf(t, await get(w, at(`/welds/${w.weldOfB}`), w.tokenB), 401, "B's token at A's origin");
    const atB = await request(w.port, {
      path: at(`/welds/${w.weldOfB}`),
      host: B,
      headers: { authorization: `Bearer ${w.tokenB}` },
    });
    t.is(atB.status, 200);
  });

  test(`PATCH ${at('/welds/{id}/status')}: 200 with new ETag; 409 with allowed; 412; 403; 422; 404`, async (t) => {
    const w = await world(t);
    const weld = await firstWeld(w, prefix, `isoId=${w.bigIso}`);
    // An acceptance names its basis; this one an engineer's documented disposition.
    const unfounded = await patchStatus(w, prefix, weld.id, { status: 'ACCEPTED' }, w.tokens.admin);
    problemOf(t, unfounded, 422);
    t.deepEqual(
      unfounded.json.errors.map((e: { pointer: string }) => e.pointer),
      [''],
    );
    problemOf(
      t,
      await patchStatus(
        w,
        prefix,
        weld.id,
        { status: 'ACCEPTED', disposition: 'NCR-7 use as is' },
        w.tokens.inspector,
      ),
      403,
      "a disposition is an engineer's",
    );
    const accepted = await patchStatus(
      w,
      prefix,
      weld.id,
      { status: 'ACCEPTED', disposition: 'NCR-7 use as is' },
      w.tokens.engineer,
      { 'if-match': `"${weld.version}"` },
    );
    t.is(accepted.status, 200);
    t.is(accepted.json.status, 'ACCEPTED');
    t.is(accepted.json.acceptanceDisposition, 'NCR-7 use as is');
    t.is(accepted.json.version, weld.version + 1);
    t.is(accepted.headers.etag, `"${weld.version + 1}"`);

    const refused = await patchStatus(w, prefix, weld.id, { status: 'PENDING' }, w.tokens.admin);
    problemOf(t, refused, 409);
    t.is(refused.json.type, '/problems/transition-not-allowed');
    t.deepEqual(refused.json.allowed, ['REJECTED', 'VOIDED']);

    const stale = await patchStatus(
      w,
      prefix,
      weld.id,
      { status: 'REJECTED', reason: 'RT re-shot' },
      w.tokens.inspector,
      { 'if-match': `"${weld.version}"` },
    );
    problemOf(t, stale, 412);
    problemOf(
      t,
      await patchStatus(
        w,
        prefix,
        weld.id,
        { status: 'REJECTED', reason: 'x' },
        w.tokens.inspector,
        { 'if-match': 'garbage' },
      ),
      412,
    );

    const needsReason = await patchStatus(
      w,
      prefix,
      weld.id,
      { status: 'REJECTED' },
      w.tokens.inspector,
    );
    problemOf(t, needsReason, 422);
    t.deepEqual(needsReason.json.errors, [
      { pointer: '/reason', detail: 'required for this transition' },
    ]);

    problemOf(
      t,
      await patchStatus(
        w,
        prefix,
        weld.id,
        { status: 'VOIDED', reason: 'cut out' },
        w.tokens.inspector,
      ),
      403,
      'inspector may not void',
    );
    problemOf(
      t,
      await patchStatus(w, prefix, weld.id, { status: 'REJECTED', reason: 'x' }, w.tokens.viewer),
      403,
      'viewer',
    );
    const badStatus = await patchStatus(w, prefix, weld.id, { status: 'DONE' }, w.tokens.admin);
    problemOf(t, badStatus, 422);
    t.is(badStatus.json.errors[0].pointer, '/status');
    problemOf(
      t,
      await patchStatus(w, prefix, w.weldOfB, { status: 'ACCEPTED' }, w.tokens.admin),
      404,
      'other tenant',
    );
    problemOf(
      t,
      await patchStatus(w, prefix, 'nope', { status: 'ACCEPTED' }, w.tokens.admin),
      404,
      'not a uuid',
    );

    const voided = await patchStatus(
      w,
      prefix,
      weld.id,
      { status: 'VOIDED', reason: 'cut out' },
      w.tokens.engineer,
      { 'if-match': accepted.headers.etag! },
    );
    t.is(voided.status, 200);
    const history = await w.owner.query(
      `select from_status, to_status, reason from weld_public.weld_status_history where weld_id = $1 order by id`,
      [weld.id],
    );
    t.deepEqual(history.rows, [
      { from_status: 'PENDING', to_status: 'ACCEPTED', reason: null },
      { from_status: 'ACCEPTED', to_status: 'VOIDED', reason: 'cut out' },
    ]);
  });

  test(`PATCH ${at('/welds/{id}/status')} in cookie mode needs the CSRF token`, async (t) => {
    const w = await world(t);
    const weld = await firstWeld(w, prefix, `isoId=${w.bigIso}`);
    const session = await login(w.port, A, 'inspector');
    const cookie = cookieHeader(session);
    const send = (headers: Record<string, string>) =>
      request(w.port, {
        method: 'PATCH',
        path: at(`/welds/${weld.id}/status`),
        host: A,
        body: { status: 'REJECTED', reason: 'RT film shows a crack' },
        headers: { cookie, ...headers },
      });
    problemOf(t, await send({}), 403);
    t.is((await send({ 'x-csrf-token': setCookies(session).svc_csrf!.value! })).status, 200);
  });
}

test('/x and /api/x answer identically', async (t) => {
  const w = await world(t);
  for (const path of [`/welds?isoId=${w.smallIso}&limit=4`, '/isos', `/welds?status=NOPE`]) {
    const bare = await get(w, path);
    const api = await get(w, `/api${path}`);
    t.is(api.status, bare.status, path);
    const { instance: _a, ...bareBody } = bare.json;
    const { instance: _b, ...apiBody } = api.json;
    t.deepEqual(apiBody, bareBody, path);
  }
});
