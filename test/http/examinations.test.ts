// NDT records and inspections over real HTTP (issue F6): recording moves welds through the
// lifecycle in the same transaction (and refuses the whole record when the rules refuse one
// weld), corrections need a reason that lands in the examination history, inspections never move
// welds, and the usual resource contract (filters, ETag / If-Match, 403, 405, Idempotency-Key).
// Each operation is exercised under both '' and '/api'. Every response is also checked against
// the OpenAPI document (helpers/http.ts).
import test, { type ExecutionContext } from 'ava';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login } from '../helpers/auth.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const A = 'a.test';
const B = 'b.test';
const PREFIXES = ['', '/api'] as const;
const ROLES = ['viewer', 'inspector', 'engineer', 'admin'] as const;
type Role = (typeof ROLES)[number];

/** The inspector's display name, which an inspection without inspectorName takes. */
const INSPECTOR_NAME = 'Ines Inspector';

const NDT_RECORD_KEYS = [
  'createdAt', 'examinedOn', 'filmIntervals', 'id', 'method', 'notes', 'recordedBy',
  'reportNumber', 'result', 'technician', 'updatedAt', 'version', 'welds',
]; // prettier-ignore
const INSPECTION_KEYS = [
  'createdAt', 'id', 'inspectedOn', 'inspectorName', 'kind', 'notes', 'recordedBy', 'result',
  'updatedAt', 'version', 'weldIds',
]; // prettier-ignore

interface World {
  port: number;
  owner: Awaited<ReturnType<typeof ownerClient>>;
  tenantA: string;
  tokens: Record<Role, string>;
  /** The users' ids in tenant A, by role. */
  userIds: Record<Role, string>;
  /** A weld of tenant A (on its one ISO) in the given status, made by the owner. */
  weld: (status?: string) => Promise<string>;
  weldOfB: string;
}

/** Tenant A: one ISO, welds made per test; tenant B: one weld (for the tenant boundary). */
async function world(t: ExecutionContext): Promise<World> {
  const { target } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const a = await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  const b = await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha'); // tenant B needs a weld, no users
  await owner.query(
    `update weld_public.users set display_name = $2 where tenant_id = $1 and user_name = 'inspector'`,
    [a.id, INSPECTOR_NAME],
  );
  const one = async (sql: string, params: unknown[]) =>
    (await owner.query<{ id: string }>(sql, params)).rows[0]!.id;
  const isoOf = (tenant: string) =>
    one(
      `insert into weld_public.isos (tenant_id, iso_number, line_number) values ($1, 'ISO-1', 'L-1') returning id`,
      [tenant],
    );
  const isoA = await isoOf(a.id);
  let count = 0;
  const weldIn = (tenant: string, iso: string, status = 'PENDING') =>
    one(
      `insert into weld_public.welds (tenant_id, iso_id, weld_number, type, size, status, welded_on)
       values ($1, $2, $3, 'BW', 6, $4, '2026-01-01') returning id`,
      [tenant, iso, `W${String(++count).padStart(3, '0')}`, status],
    );
  const weldOfB = await weldIn(b.id, await isoOf(b.id));
  const { rows } = await owner.query<{ role: Role; id: string }>(
    'select role, id from weld_public.users where tenant_id = $1',
    [a.id],
  );
  const userIds = Object.fromEntries(rows.map((r) => [r.role, r.id])) as Record<Role, string>;

  const { port } = await startServer(t, target);
  const tokens = {} as Record<Role, string>;
  for (const role of ROLES) tokens[role] = (await login(port, A, role)).json.accessToken;
  return {
    port,
    owner,
    tenantA: a.id,
    tokens,
    userIds,
    weld: (status) => weldIn(a.id, isoA, status),
    weldOfB,
  };
}

/** A request to tenant A as the given role. */
function call(
  w: World,
  method: string,
  path: string,
  role: Role,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResponse> {
  return request(w.port, {
    method,
    path,
    host: A,
    body,
    headers: { authorization: `Bearer ${w.tokens[role]}`, ...headers },
  });
}

const get = (w: World, path: string, role: Role = 'viewer') => call(w, 'GET', path, role);

async function statusOf(w: World, prefix: string, weldId: string): Promise<string> {
  const res = await get(w, `${prefix}/welds/${weldId}`);
  return res.json.status;
}

interface HistoryEntry {
  fromStatus: string;
  toStatus: string;
  cause: string;
  ndtRecordId: string | null;
  changedBy: string | null;
}

/** The weld's status history, oldest first, as GET /welds/{id}/history gives it. */
async function historyOf(w: World, prefix: string, weldId: string): Promise<HistoryEntry[]> {
  const res = await get(w, `${prefix}/welds/${weldId}/history?limit=500`);
  if (res.status !== 200) throw new Error(`history of ${weldId}: ${res.status} ${res.text}`);
  return res.json.items;
}

/** The ids of a list page, in the order given. */
const idsOf = (res: HttpResponse): string[] => res.json.items.map((i: { id: string }) => i.id);

function problemOf(t: ExecutionContext, res: HttpResponse, status: number, type?: string): void {
  t.is(res.status, status, res.text);
  t.regex(String(res.headers['content-type']), /^application\/problem\+json/);
  if (type) t.is(res.json.type, type, res.text);
}

/** The pointers a 422 names. */
const pointers = (res: HttpResponse): string[] =>
  (res.json.errors ?? []).map((e: { pointer?: string }) => e.pointer);

/** The rows the examination history holds for a record, oldest first (read as the owner). */
async function examinationChanges(w: World, recordId: string) {
  const { rows } = await w.owner.query<{ subject: string; change: string; reason: string | null }>(
    `select subject, change, reason from weld_public.examination_changes
      where tenant_id = $1 and record_id = $2 order by id`,
    [w.tenantA, recordId],
  );
  return rows;
}

const sorted = (ids: string[]) => [...ids].sort();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

//------------------------------------------------------------------------------------------------
// Recording NDT: results move welds

for (const prefix of PREFIXES) {
  const at = (path: string) => `${prefix}${path}`;

  test(`POST ${at('/ndt-records')}: an RT interval rejected rejects exactly its welds, accepts the others`, async (t) => {
    const w = await world(t);
    const onFilm = await w.weld(); // on the rejected interval 0-1
    const alsoOnFilm = await w.weld('ACCEPTED'); // accepted earlier, on 0-1 too: a later defect
    const clean = await w.weld(); // on 1-2 only, result derived
    const given = await w.weld(); // on 1-2, result given
    const bystander = await w.weld(); // not in the record
    const res = await call(w, 'POST', at('/ndt-records'), 'inspector', {
      method: 'RT',
      reportNumber: 'RT-001',
      examinedOn: '2026-03-02',
      technician: 'T. Radiographer',
      notes: 'first shot',
      welds: [
        { weldId: onFilm },
        { weldId: alsoOnFilm },
        { weldId: clean },
        { weldId: given, result: 'accepted' },
      ],
      filmIntervals: [
        { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [clean, given] },
        {
          label: '0-1',
          result: 'rejected',
          defectCodes: ['PO', 'IF'],
          weldIds: [onFilm, alsoOnFilm],
        },
      ],
    });
    t.is(res.status, 201, res.text);
    const id = res.json.id as string;
    t.is(res.headers.location, at(`/ndt-records/${id}`));
    t.is(res.headers.etag, `"${res.json.version}"`);

    // The record as GET gives it: results (derived ones too), intervals with ids, author.
    const read = await get(w, at(`/ndt-records/${id}`));
    t.is(read.status, 200);
    t.deepEqual(read.json, res.json, 'POST answers what GET reads');
    t.deepEqual(Object.keys(read.json).sort(), NDT_RECORD_KEYS);
    t.like(read.json, {
      method: 'RT',
      reportNumber: 'RT-001',
      examinedOn: '2026-03-02',
      technician: 'T. Radiographer',
      notes: 'first shot',
      result: 'rejected', // derived: one weld is
      recordedBy: w.userIds.inspector,
    });
    const expectedResults = [
      { weldId: onFilm, result: 'rejected' },
      { weldId: alsoOnFilm, result: 'rejected' },
      { weldId: clean, result: 'accepted' },
      { weldId: given, result: 'accepted' },
    ].sort((x, y) => x.weldId.localeCompare(y.weldId));
    t.deepEqual(read.json.welds, expectedResults);
    const intervals = read.json.filmIntervals as Array<{ id: string }>;
    t.deepEqual(
      intervals.map(({ id: intervalId, ...rest }) => {
        t.regex(intervalId, /^[0-9a-f-]{36}$/);
        return rest;
      }),
      [
        { label: '0-1', result: 'rejected', defectCodes: ['PO', 'IF'], weldIds: sorted([onFilm, alsoOnFilm]) }, // prettier-ignore
        { label: '1-2', result: 'accepted', defectCodes: [], weldIds: sorted([clean, given]) },
      ],
    );

    // The welds moved, each once, with the record as the cause; the bystander did not.
    t.is(await statusOf(w, prefix, onFilm), 'REJECTED');
    t.is(await statusOf(w, prefix, alsoOnFilm), 'REJECTED');
    t.is(await statusOf(w, prefix, clean), 'ACCEPTED');
    t.is(await statusOf(w, prefix, given), 'ACCEPTED');
    t.is(await statusOf(w, prefix, bystander), 'PENDING');
    for (const [weldId, from, to] of [
      [onFilm, 'PENDING', 'REJECTED'],
      [alsoOnFilm, 'ACCEPTED', 'REJECTED'],
      [clean, 'PENDING', 'ACCEPTED'],
      [given, 'PENDING', 'ACCEPTED'],
    ] as const) {
      const history = await historyOf(w, prefix, weldId);
      t.is(history.length, 1, `${from} -> ${to}: one history row`);
      t.like(history[0], {
        fromStatus: from,
        toStatus: to,
        cause: 'ndt',
        ndtRecordId: id,
        changedBy: w.userIds.inspector,
      });
    }
    t.deepEqual(await historyOf(w, prefix, bystander), []);
  });

  test(`POST ${at('/ndt-records')}: recordedBy and result are the service's, not the client's`, async (t) => {
    const w = await world(t);
    const weld = await w.weld();
    const body = {
      method: 'UT',
      reportNumber: 'UT-RO',
      examinedOn: '2026-03-02',
      welds: [{ weldId: weld, result: 'accepted' }],
    };
    const forged = await call(w, 'POST', at('/ndt-records'), 'inspector', {
      ...body,
      recordedBy: w.userIds.admin,
    });
    problemOf(t, forged, 422, '/problems/validation-failed');
    t.deepEqual(forged.json.errors, [{ pointer: '/recordedBy', detail: 'is read-only here' }]);
    const derived = await call(w, 'POST', at('/ndt-records'), 'inspector', {
      ...body,
      result: 'rejected',
    });
    problemOf(t, derived, 422);
    t.deepEqual(pointers(derived), ['/result']);
    // Nothing was written by either.
    t.deepEqual(idsOf(await get(w, at(`/ndt-records?weldId=${weld}`))), []);
    t.is(await statusOf(w, prefix, weld), 'PENDING');
    // The same body without them is recorded as the signed-in inspector's.
    const ok = await call(w, 'POST', at('/ndt-records'), 'inspector', body);
    t.is(ok.status, 201, ok.text);
    t.is(ok.json.recordedBy, w.userIds.inspector);
    t.is(ok.json.result, 'accepted');
  });
}

test('a record covering a VOIDED weld (or one the rules refuse) is refused whole: 409, nothing written', async (t) => {
  const w = await world(t);
  const first = await w.weld();
  const voided = await w.weld('VOIDED');
  const last = await w.weld();
  for (const prefix of PREFIXES) {
    const res = await call(w, 'POST', `${prefix}/ndt-records`, 'inspector', {
      method: 'UT',
      reportNumber: `UT-VOID${prefix}`,
      examinedOn: '2026-03-03',
      welds: [
        { weldId: first, result: 'accepted' },
        { weldId: voided, result: 'accepted' },
        { weldId: last, result: 'rejected' },
      ],
    });
    problemOf(t, res, 409, '/problems/ndt-result-refused');
    t.is(res.json.welds.length, 1, 'only the voided weld is named');
    t.like(res.json.welds[0], {
      weldId: voided,
      weldNumber: (await get(w, `${prefix}/welds/${voided}`)).json.weldNumber,
      status: 'VOIDED',
      result: 'accepted',
    });
    t.true(Array.isArray(res.json.welds[0].allowed));
    // Nothing was written: no record, the other welds still PENDING without history.
    for (const weldId of [first, voided, last]) {
      t.deepEqual(idsOf(await get(w, `${prefix}/ndt-records?weldId=${weldId}`)), []);
    }
    t.deepEqual(idsOf(await get(w, `${prefix}/ndt-records`)), []);
    t.is(await statusOf(w, prefix, first), 'PENDING');
    t.is(await statusOf(w, prefix, last), 'PENDING');
    t.deepEqual(await historyOf(w, prefix, first), []);
    t.deepEqual(await historyOf(w, prefix, last), []);
  }

  // A weld in REPAIR (not re-welded yet) and a REJECTED weld getting accepted: both named.
  const inRepair = await w.weld('REPAIR');
  const rejected = await w.weld('REJECTED');
  const res = await call(w, 'POST', '/ndt-records', 'inspector', {
    method: 'UT',
    reportNumber: 'UT-REFUSED',
    examinedOn: '2026-03-03',
    welds: [
      { weldId: first, result: 'accepted' },
      { weldId: inRepair, result: 'rejected' },
      { weldId: rejected, result: 'accepted' },
    ],
  });
  problemOf(t, res, 409, '/problems/ndt-result-refused');
  const named = (res.json.welds as Array<{ weldId: string; status: string; result: string }>)
    .map(({ weldId, status, result }) => ({ weldId, status, result }))
    .sort((x, y) => x.weldId.localeCompare(y.weldId));
  t.deepEqual(
    named,
    [
      { weldId: inRepair, status: 'REPAIR', result: 'rejected' },
      { weldId: rejected, status: 'REJECTED', result: 'accepted' },
    ].sort((x, y) => x.weldId.localeCompare(y.weldId)),
  );
  t.is(await statusOf(w, '', first), 'PENDING');
  t.deepEqual(idsOf(await get(w, '/ndt-records')), []);
});

test('with the tenant switch off, results are recorded without moving welds', async (t) => {
  const w = await world(t);
  const switched = await w.owner.query(
    'update weld_public.tenant_settings set ndt_results_drive_status = false where tenant_id = $1',
    [w.tenantA],
  );
  t.is(switched.rowCount, 1, 'every tenant has its settings row');
  const failed = await w.weld();
  const passed = await w.weld();
  for (const [prefix, report] of [
    ['', 'RT-OFF-1'],
    ['/api', 'RT-OFF-2'],
  ] as const) {
    const res = await call(w, 'POST', `${prefix}/ndt-records`, 'inspector', {
      method: 'RT',
      reportNumber: report,
      examinedOn: '2026-03-04',
      welds: [{ weldId: failed }, { weldId: passed }],
      filmIntervals: [
        { label: '0-1', result: 'rejected', defectCodes: ['CR'], weldIds: [failed] },
        { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [passed] },
      ],
    });
    t.is(res.status, 201, res.text);
    t.is(res.json.result, 'rejected');
    t.is(await statusOf(w, prefix, failed), 'PENDING');
    t.is(await statusOf(w, prefix, passed), 'PENDING');
    t.deepEqual(await historyOf(w, prefix, failed), []);
  }
  t.is(idsOf(await get(w, `/ndt-records?weldId=${failed}`)).length, 2);

  // Switched on again, the next record moves them.
  await w.owner.query(
    'update weld_public.tenant_settings set ndt_results_drive_status = true where tenant_id = $1',
    [w.tenantA],
  );
  const on = await call(w, 'POST', '/ndt-records', 'inspector', {
    method: 'UT',
    reportNumber: 'UT-ON',
    examinedOn: '2026-03-05',
    welds: [{ weldId: passed, result: 'accepted' }],
  });
  t.is(on.status, 201, on.text);
  t.is(await statusOf(w, '', passed), 'ACCEPTED');
});

//------------------------------------------------------------------------------------------------
// Refusals: the SQL function's validation, roles, tenants, duplicates

test('invalid records are refused with 422 naming the field, 403 for a viewer, 409 for a duplicate report', async (t) => {
  const w = await world(t);
  const [w1, w2] = [await w.weld(), await w.weld()];
  const refused = async (prefix: string, body: unknown, role: Role = 'inspector') => {
    const res = await call(w, 'POST', `${prefix}/ndt-records`, role, body);
    // Whatever the refusal, nothing was written and no weld moved.
    t.deepEqual(idsOf(await get(w, `${prefix}/ndt-records`)), [], JSON.stringify(body));
    t.is(await statusOf(w, prefix, w1), 'PENDING');
    t.is(await statusOf(w, prefix, w2), 'PENDING');
    return res;
  };

  for (const prefix of PREFIXES) {
    // A result that contradicts the film: the weld is on a rejected interval.
    const contradiction = await refused(prefix, {
      method: 'RT',
      reportNumber: 'RT-X',
      examinedOn: '2026-03-02',
      welds: [
        { weldId: w1, result: 'accepted' },
        { weldId: w2, result: 'accepted' },
      ],
      filmIntervals: [
        { label: '0-1', result: 'rejected', defectCodes: ['SL'], weldIds: [w1] },
        { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [w2] },
      ],
    });
    problemOf(t, contradiction, 422, '/problems/validation-failed');
    t.is(contradiction.json.errors[0].pointer, '/welds/0/result');

    // Film intervals belong to radiography only.
    const filmOnUt = await refused(prefix, {
      method: 'UT',
      reportNumber: 'UT-X',
      examinedOn: '2026-03-02',
      welds: [{ weldId: w1, result: 'accepted' }],
      filmIntervals: [{ label: '0-1', result: 'accepted', defectCodes: [], weldIds: [w1] }],
    });
    problemOf(t, filmOnUt, 422, '/problems/validation-failed');
    t.regex(filmOnUt.json.errors[0].pointer ?? '', /^\/filmIntervals/);

    // Another tenant's weld is no weld of this tenant: named, by its place in the body.
    const foreign = await refused(prefix, {
      method: 'UT',
      reportNumber: 'UT-Y',
      examinedOn: '2026-03-02',
      welds: [
        { weldId: w1, result: 'accepted' },
        { weldId: w.weldOfB, result: 'accepted' },
      ],
    });
    problemOf(t, foreign, 422, '/problems/validation-failed');
    t.is(foreign.json.errors[0].pointer, '/welds/1/weldId', foreign.text);
    t.true(foreign.json.detail.includes(w.weldOfB), foreign.text);

    // A viewer records nothing.
    const viewer = await refused(
      prefix,
      {
        method: 'UT',
        reportNumber: 'UT-Z',
        examinedOn: '2026-03-02',
        welds: [{ weldId: w1, result: 'accepted' }],
      },
      'viewer',
    );
    problemOf(t, viewer, 403, '/problems/role-not-allowed');
  }

  // The report number is unique per method: the same number by another method is fine.
  for (const [prefix, method, status] of [
    ['', 'UT', 201],
    ['/api', 'UT', 409],
    ['', 'MT', 201],
    ['/api', 'MT', 409],
  ] as const) {
    const res = await call(w, 'POST', `${prefix}/ndt-records`, 'inspector', {
      method,
      reportNumber: 'R-100',
      examinedOn: '2026-03-06',
      welds: [{ weldId: w1, result: 'accepted' }],
    });
    t.is(res.status, status, `${method} ${res.text}`);
    if (status === 409) {
      problemOf(t, res, 409, '/problems/conflict');
      t.true(pointers(res).includes('/reportNumber'), res.text);
    }
  }
  t.is(idsOf(await get(w, `/ndt-records?weldId=${w1}`)).length, 2);
});

//------------------------------------------------------------------------------------------------
// Corrections

for (const prefix of PREFIXES) {
  const at = (path: string) => `${prefix}${path}`;

  test(`PATCH ${at('/ndt-records/{id}')}: a reason is required, kept, and only changed results move welds`, async (t) => {
    const w = await world(t);
    const [kept, failed] = [await w.weld(), await w.weld()];
    const created = await call(w, 'POST', at('/ndt-records'), 'inspector', {
      method: 'UT',
      reportNumber: 'UT-C1',
      examinedOn: '2026-03-10',
      welds: [
        { weldId: kept, result: 'accepted' },
        { weldId: failed, result: 'accepted' },
      ],
    });
    t.is(created.status, 201, created.text);
    const id = created.json.id as string;
    const v1 = created.json.version as number;
    const path = at(`/ndt-records/${id}`);
    const corrected = [
      { weldId: kept, result: 'accepted' },
      { weldId: failed, result: 'rejected' },
    ];

    // No reason: refused, and nothing changed.
    const noReason = await call(w, 'PATCH', path, 'inspector', { welds: corrected });
    problemOf(t, noReason, 422, '/problems/validation-failed');
    t.deepEqual(pointers(noReason), ['/reason']);
    problemOf(
      t,
      await call(w, 'PATCH', path, 'viewer', { reason: 'x', notes: 'n' }),
      403,
      '/problems/role-not-allowed',
    );
    problemOf(
      t,
      await call(w, 'PATCH', path, 'inspector', { reason: 'x', recordedBy: w.userIds.admin }),
      422,
    );
    // A stale If-Match: refused with the current version.
    const stale = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason: 're-read of the film', welds: corrected },
      { 'if-match': `"${v1 + 1}"` },
    );
    problemOf(t, stale, 412, '/problems/stale-version');
    t.is(stale.json.version, v1);
    const unchanged = await get(w, path);
    t.is(unchanged.json.version, v1);
    t.is(unchanged.headers.etag, `"${v1}"`);
    t.is(await statusOf(w, prefix, failed), 'ACCEPTED');
    t.deepEqual(await examinationChanges(w, id), []);

    // With a reason and the current version: the changed result moves its weld only.
    const reason = 'second reading found lack of fusion';
    const ok = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason, welds: corrected },
      { 'if-match': `"${v1}"` },
    );
    t.is(ok.status, 200, ok.text);
    t.is(ok.json.version, v1 + 1, 'one correction, one version');
    t.is(ok.headers.etag, `"${v1 + 1}"`);
    t.is(ok.json.result, 'rejected');
    t.deepEqual(
      ok.json.welds,
      [...corrected].sort((x, y) => x.weldId.localeCompare(y.weldId)),
    );
    t.is(await statusOf(w, prefix, failed), 'REJECTED');
    t.is(await statusOf(w, prefix, kept), 'ACCEPTED');
    const failedHistory = await historyOf(w, prefix, failed);
    t.is(failedHistory.length, 2);
    t.like(failedHistory[1], {
      fromStatus: 'ACCEPTED',
      toStatus: 'REJECTED',
      cause: 'ndt',
      ndtRecordId: id,
    });
    t.is((await historyOf(w, prefix, kept)).length, 1, 'an unchanged result is not re-applied');
    const changes = await examinationChanges(w, id);
    t.true(changes.length > 0, 'the correction is in the examination history');
    t.true(
      changes.every((c) => c.subject === 'ndt_record' && c.reason === reason),
      JSON.stringify(changes),
    );

    // The rejected weld is repaired and back to PENDING; a notes-only correction leaves it.
    const engineerRepair = await call(w, 'PATCH', at(`/welds/${failed}/status`), 'engineer', {
      status: 'REPAIR',
    });
    t.is(engineerRepair.status, 200, engineerRepair.text);
    const rewelded = await call(w, 'PATCH', at(`/welds/${failed}/status`), 'inspector', {
      status: 'PENDING',
    });
    t.is(rewelded.status, 200, rewelded.text);
    const notes = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason: 'typo in the notes', notes: 'film 2 of 2' },
      { 'if-match': ok.headers.etag! },
    );
    t.is(notes.status, 200, notes.text);
    t.is(notes.json.version, v1 + 2, 'one more correction, one more version');
    t.is(notes.json.notes, 'film 2 of 2');
    t.is(await statusOf(w, prefix, failed), 'PENDING', 'not re-rejected by an old result');
    t.is((await historyOf(w, prefix, failed)).length, 4);
    t.true((await examinationChanges(w, id)).some((c) => c.reason === 'typo in the notes'));

    // Records are never deleted.
    const deleted = await call(w, 'DELETE', path, 'admin');
    problemOf(t, deleted, 405);
    t.false(String(deleted.headers.allow).includes('DELETE'));
    t.is((await get(w, path)).status, 200);
  });
}

//------------------------------------------------------------------------------------------------
// Lists

test('GET /ndt-records filters by method, result, weldId, examinedSince and updatedSince', async (t) => {
  const w = await world(t);
  const [w1, w2, w3, w4] = [await w.weld(), await w.weld(), await w.weld(), await w.weld()];
  const record = async (body: object) => {
    const res = await call(w, 'POST', '/ndt-records', 'inspector', body);
    t.is(res.status, 201, res.text);
    return res.json as { id: string; version: number };
  };
  const rt = await record({
    method: 'RT',
    reportNumber: 'RT-F1',
    examinedOn: '2026-01-10',
    welds: [{ weldId: w1 }, { weldId: w2 }],
    filmIntervals: [
      { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [w1] },
      { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [w2] },
    ],
  });
  // w2, accepted by RT, is accepted again by UT: no refusal, no second move.
  const ut = await record({
    method: 'UT',
    reportNumber: 'UT-F2',
    examinedOn: '2026-02-10',
    welds: [
      { weldId: w2, result: 'accepted' },
      { weldId: w3, result: 'accepted' },
    ],
  });
  const mt = await record({
    method: 'MT',
    reportNumber: 'MT-F3',
    examinedOn: '2026-03-10',
    welds: [{ weldId: w4, result: 'accepted' }],
  });
  t.is((await historyOf(w, '', w2)).length, 1);
  // Only MT-F3 changes after `since`.
  await pause(50);
  const since = new Date().toISOString();
  await pause(50);
  const patched = await call(w, 'PATCH', `/ndt-records/${mt.id}`, 'inspector', {
    reason: 'technician named',
    technician: 'M. Particle',
  });
  t.is(patched.status, 200, patched.text);

  for (const prefix of PREFIXES) {
    const list = async (query: string) => {
      const res = await get(w, `${prefix}/ndt-records?${query}`);
      t.is(res.status, 200, `${query}: ${res.text}`);
      return sorted(idsOf(res));
    };
    t.deepEqual(await list(''), sorted([rt.id, ut.id, mt.id]));
    t.deepEqual(await list('method=UT'), [ut.id]);
    t.deepEqual(await list('result=rejected'), [rt.id]);
    t.deepEqual(await list('result=accepted'), sorted([ut.id, mt.id]));
    t.deepEqual(await list(`weldId=${w2}`), sorted([rt.id, ut.id]));
    t.deepEqual(await list(`weldId=${w3}`), [ut.id]);
    t.deepEqual(await list('examinedSince=2026-02-10'), sorted([ut.id, mt.id]));
    t.deepEqual(await list('examinedSince=2026-02-11'), [mt.id]);
    t.deepEqual(await list(`updatedSince=${encodeURIComponent(since)}`), [mt.id]);
    t.deepEqual(await list('method=RT&result=accepted'), [], 'filters combine with and');
    t.deepEqual(await list(`weldId=${w.weldOfB}`), [], "another tenant's weld has none here");
    const paged = await get(w, `${prefix}/ndt-records?limit=2`);
    t.is(paged.json.items.length, 2);
    t.truthy(paged.json.nextCursor);

    for (const [query, parameter] of [
      ['method=XR', 'method'],
      ['result=maybe', 'result'],
      ['weldId=42', 'weldId'],
      ['examinedSince=yesterday', 'examinedSince'],
      ['inspectedSince=2026-01-01', 'inspectedSince'],
    ] as const) {
      const res = await get(w, `${prefix}/ndt-records?${query}`);
      problemOf(t, res, 422, '/problems/validation-failed');
      t.is(res.json.errors[0].parameter, parameter, query);
    }
  }
});

test('GET /inspections filters by kind, result, weldId, inspectedSince and updatedSince', async (t) => {
  const w = await world(t);
  const [w1, w2, w3] = [await w.weld(), await w.weld(), await w.weld()];
  const inspect = async (body: object) => {
    const res = await call(w, 'POST', '/api/inspections', 'inspector', body);
    t.is(res.status, 201, res.text);
    return res.json as { id: string };
  };
  const fitUp = await inspect({
    kind: 'fit-up',
    inspectedOn: '2026-01-05',
    result: 'accepted',
    weldIds: [w1, w2],
  });
  const visual = await inspect({
    kind: 'visual',
    inspectedOn: '2026-02-05',
    result: 'rejected',
    weldIds: [w2],
  });
  const final = await inspect({
    kind: 'final',
    inspectedOn: '2026-03-05',
    result: 'accepted',
    weldIds: [w3],
  });
  await pause(50);
  const since = new Date().toISOString();
  await pause(50);
  const patched = await call(w, 'PATCH', `/inspections/${final.id}`, 'inspector', {
    reason: 'notes added',
    notes: 'flange face checked',
  });
  t.is(patched.status, 200, patched.text);

  for (const prefix of PREFIXES) {
    const list = async (query: string) => {
      const res = await get(w, `${prefix}/inspections?${query}`);
      t.is(res.status, 200, `${query}: ${res.text}`);
      return sorted(idsOf(res));
    };
    t.deepEqual(await list(''), sorted([fitUp.id, visual.id, final.id]));
    t.deepEqual(await list('kind=visual'), [visual.id]);
    t.deepEqual(await list('result=accepted'), sorted([fitUp.id, final.id]));
    t.deepEqual(await list(`weldId=${w2}`), sorted([fitUp.id, visual.id]));
    t.deepEqual(await list(`weldId=${w3}`), [final.id]);
    t.deepEqual(await list('inspectedSince=2026-02-05'), sorted([visual.id, final.id]));
    t.deepEqual(await list('inspectedSince=2026-02-06'), [final.id]);
    t.deepEqual(await list(`updatedSince=${encodeURIComponent(since)}`), [final.id]);
    t.deepEqual(await list('kind=fit-up&result=rejected'), []);
    for (const [query, parameter] of [
      ['kind=radiography', 'kind'],
      ['result=ok', 'result'],
      ['weldId=x', 'weldId'],
      ['inspectedSince=2026-13-01', 'inspectedSince'],
      ['method=RT', 'method'],
    ] as const) {
      const res = await get(w, `${prefix}/inspections?${query}`);
      problemOf(t, res, 422, '/problems/validation-failed');
      t.is(res.json.errors[0].parameter, parameter, query);
    }
  }
});

//------------------------------------------------------------------------------------------------
// Inspections

for (const prefix of PREFIXES) {
  const at = (path: string) => `${prefix}${path}`;

  test(`${at('/inspections')}: create, read, correct with a reason; never moves a weld`, async (t) => {
    const w = await world(t);
    const [w1, w2, w3] = [await w.weld(), await w.weld(), await w.weld('ACCEPTED')];
    const body = {
      kind: 'visual',
      inspectedOn: '2026-04-01',
      result: 'rejected',
      notes: 'undercut at 3 o’clock',
      weldIds: [w2, w1],
    };
    problemOf(
      t,
      await call(w, 'POST', at('/inspections'), 'viewer', body),
      403,
      '/problems/role-not-allowed',
    );
    problemOf(
      t,
      await call(w, 'POST', at('/inspections'), 'inspector', {
        ...body,
        recordedBy: w.userIds.admin,
      }),
      422,
    );
    t.deepEqual(idsOf(await get(w, at('/inspections'))), [], 'the refusals wrote nothing');

    const created = await call(w, 'POST', at('/inspections'), 'inspector', body);
    t.is(created.status, 201, created.text);
    const id = created.json.id as string;
    t.is(created.headers.location, at(`/inspections/${id}`));
    t.is(created.headers.etag, `"${created.json.version}"`);
    const read = await get(w, at(`/inspections/${id}`));
    t.is(read.status, 200);
    t.deepEqual(read.json, created.json);
    t.deepEqual(Object.keys(read.json).sort(), INSPECTION_KEYS);
    // The inspector's name defaults to the signed-in user's display name, from the users table.
    const { rows } = await w.owner.query<{ display_name: string }>(
      'select display_name from weld_public.users where id = $1',
      [w.userIds.inspector],
    );
    t.is(rows[0]!.display_name, INSPECTOR_NAME);
    t.like(read.json, {
      kind: 'visual',
      inspectorName: INSPECTOR_NAME,
      inspectedOn: '2026-04-01',
      result: 'rejected',
      notes: body.notes,
      recordedBy: w.userIds.inspector,
      weldIds: sorted([w1, w2]),
    });
    // A third-party inspector's name may be given.
    const named = await call(w, 'POST', at('/inspections'), 'engineer', {
      kind: 'fit-up',
      inspectorName: 'Third Party QC',
      inspectedOn: '2026-04-01',
      result: 'accepted',
      weldIds: [w3],
    });
    t.is(named.status, 201, named.text);
    t.is(named.json.inspectorName, 'Third Party QC');
    t.is(named.json.recordedBy, w.userIds.engineer);

    // A rejected inspection does not move welds (and an accepted one neither).
    t.is(await statusOf(w, prefix, w1), 'PENDING');
    t.is(await statusOf(w, prefix, w2), 'PENDING');
    t.is(await statusOf(w, prefix, w3), 'ACCEPTED');
    t.deepEqual(await historyOf(w, prefix, w1), []);

    // Corrections: a reason is required; the weld list is replaced whole.
    const path = at(`/inspections/${id}`);
    const v1 = created.json.version as number;
    const noReason = await call(w, 'PATCH', path, 'inspector', { result: 'accepted' });
    problemOf(t, noReason, 422);
    t.deepEqual(pointers(noReason), ['/reason']);
    problemOf(
      t,
      await call(w, 'PATCH', path, 'viewer', { reason: 'x', result: 'accepted' }),
      403,
      '/problems/role-not-allowed',
    );
    problemOf(
      t,
      await call(w, 'PATCH', path, 'inspector', { reason: 'x' }, { 'if-match': `"${v1 + 7}"` }),
      412,
      '/problems/stale-version',
    );
    const reason = 'W1 was not part of this visual; W3 was';
    const corrected = await call(
      w,
      'PATCH',
      path,
      'inspector',
      { reason, result: 'accepted', weldIds: [w3, w2] },
      { 'if-match': `"${v1}"` },
    );
    t.is(corrected.status, 200, corrected.text);
    t.like(corrected.json, { result: 'accepted', weldIds: sorted([w2, w3]), version: v1 + 1 });
    t.is(corrected.headers.etag, `"${v1 + 1}"`);
    t.deepEqual((await get(w, path)).json, corrected.json);
    const changes = await examinationChanges(w, id);
    t.true(changes.length > 0);
    t.true(
      changes.every((c) => c.subject === 'inspection' && c.reason === reason),
      JSON.stringify(changes),
    );
    t.is(await statusOf(w, prefix, w2), 'PENDING');
    t.is(await statusOf(w, prefix, w3), 'ACCEPTED');

    // Inspections are never deleted.
    problemOf(t, await call(w, 'DELETE', path, 'admin'), 405);
    t.is((await get(w, path)).status, 200);
  });
}

//------------------------------------------------------------------------------------------------
// Idempotency

test('POST /ndt-records with an Idempotency-Key: a retry replays the answer, no second record, welds moved once', async (t) => {
  const w = await world(t);
  for (const prefix of PREFIXES) {
    const [failed, passed] = [await w.weld(), await w.weld()];
    const key = `ndt-retry${prefix}`;
    const body = {
      method: 'RT',
      reportNumber: `RT-IDEM${prefix}`,
      examinedOn: '2026-05-01',
      welds: [{ weldId: failed }, { weldId: passed }],
      filmIntervals: [
        { label: '0-1', result: 'rejected', defectCodes: ['PO'], weldIds: [failed] },
        { label: '1-2', result: 'accepted', defectCodes: [], weldIds: [passed] },
      ],
    };
    const send = (payload: object) =>
      call(w, 'POST', `${prefix}/ndt-records`, 'inspector', payload, { 'idempotency-key': key });
    const first = await send(body);
    t.is(first.status, 201, first.text);
    t.is(first.headers['idempotent-replayed'], undefined);
    const again = await send(body);
    t.is(again.status, 201, again.text);
    t.is(again.headers['idempotent-replayed'], 'true');
    t.deepEqual(again.json, first.json);
    t.is(again.headers.location, first.headers.location);
    t.is(again.headers.etag, first.headers.etag);
    // One record, and each weld moved once.
    t.deepEqual(idsOf(await get(w, `${prefix}/ndt-records?weldId=${failed}`)), [first.json.id]);
    for (const weldId of [failed, passed]) {
      const history = await historyOf(w, prefix, weldId);
      t.is(history.length, 1, 'one history row per weld');
      t.is(history[0]!.ndtRecordId, first.json.id);
    }
    // The same key for another body is refused, and writes nothing.
    const reused = await send({ ...body, reportNumber: `RT-OTHER${prefix}` });
    problemOf(t, reused, 422, '/problems/idempotency-key-reused');
    t.is(idsOf(await get(w, `${prefix}/ndt-records?weldId=${failed}`)).length, 1);
  }
});

test('GET /ndt-records/{id}/history and /inspections/{id}/history: each correction, with its reason, in pages', async (t) => {
  const w = await world(t);
  for (const prefix of PREFIXES) {
    const [first, second] = [await w.weld(), await w.weld()];
    const recorded = await call(w, 'POST', `${prefix}/ndt-records`, 'inspector', {
      method: 'UT',
      reportNumber: `UT-H${prefix}`,
      examinedOn: '2026-05-02',
      technician: 'J. Doe',
      welds: [{ weldId: first, result: 'accepted' }],
    });
    t.is(recorded.status, 201, recorded.text);
    const path = `${prefix}/ndt-records/${recorded.json.id}/history`;
    // Recording is no correction: the history starts empty.
    t.deepEqual((await get(w, path)).json, { items: [], nextCursor: null });

    const fix = (body: object) =>
      call(w, 'PATCH', `${prefix}/ndt-records/${recorded.json.id}`, 'inspector', body);
    t.is((await fix({ technician: 'J. Doe (II)', reason: 'level added' })).status, 200);
    t.is(
      (
        await fix({
          welds: [
            { weldId: first, result: 'accepted' },
            { weldId: second, result: 'accepted' },
          ],
          reason: 'weld missed',
        })
      ).status,
      200,
    );
    const all = await get(w, path);
    t.is(all.status, 200, all.text);
    t.deepEqual(
      all.json.items.map((e: { change: string; reason: string }) => [e.change, e.reason]),
      [
        ['updated', 'level added'],
        ['weld_added', 'weld missed'],
      ],
    );
    const updated = all.json.items[0];
    t.deepEqual(
      [updated.before, updated.after],
      [{ technician: 'J. Doe' }, { technician: 'J. Doe (II)' }],
    );
    t.is(updated.changedBy, w.userIds.inspector);
    t.is(all.json.items[1].after.weldId, second, 'keys as the API spells them');

    // Pages of one, linked.
    const page = await get(w, `${path}?limit=1`);
    t.is(page.json.items.length, 1);
    t.is(page.headers.link, `<${path}?limit=1&cursor=${page.json.nextCursor}>; rel="next"`);
    const next = await get(w, `${path}?limit=1&cursor=${page.json.nextCursor}`);
    t.deepEqual(next.json.items, [all.json.items[1]]);

    // An inspection's history the same way; unknown and malformed ids are 404.
    const inspection = await call(w, 'POST', `${prefix}/inspections`, 'inspector', {
      kind: 'visual',
      inspectedOn: '2026-05-02',
      result: 'accepted',
      weldIds: [first],
    });
    const corrected = await call(
      w,
      'PATCH',
      `${prefix}/inspections/${inspection.json.id}`,
      'inspector',
      {
        result: 'rejected',
        reason: 'undercut found on review',
      },
    );
    t.is(corrected.status, 200, corrected.text);
    const inspectionHistory = await get(w, `${prefix}/inspections/${inspection.json.id}/history`);
    t.deepEqual(
      inspectionHistory.json.items.map((e: { before: object; after: object; reason: string }) => [
        e.before,
        e.after,
        e.reason,
      ]),
      [[{ result: 'accepted' }, { result: 'rejected' }, 'undercut found on review']],
    );
    problemOf(t, await get(w, `${prefix}/ndt-records/${inspection.json.id}/history`), 404);
    problemOf(t, await get(w, `${prefix}/inspections/nope/history`), 404);
    problemOf(t, await get(w, `${path}?cursor=abc`), 422);
  }
});
