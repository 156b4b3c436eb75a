// NDT records over real HTTP (issue F6): recording moves welds through the lifecycle in the same
// transaction (and refuses the whole record when the rules refuse one weld), and the refusals:
// the SQL function's validation, roles, tenants, duplicates. Each operation is exercised under
// both '' and '/api'. Every response is also checked against the OpenAPI document
// (helpers/http.ts).
import test from 'ava';
import {
  PREFIXES,
  type Role,
  NDT_RECORD_KEYS,
  world,
  call,
  get,
  statusOf,
  historyOf,
  idsOf,
  problemOf,
  pointers,
  sorted,
} from '../helpers/examinations-http.ts';

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
    ]
      .map((r) => ({ ...r, defectLengthIn: null, acceptanceHeld: null }))
      .sort((x, y) => x.weldId.localeCompare(y.weldId));
    t.deepEqual(read.json.welds, expectedResults);
    const intervals = read.json.filmIntervals as Array<{ id: string }>;
    t.deepEqual(
      intervals.map(({ id: intervalId, ...rest }) => {
        t.regex(intervalId, /^[0-9a-f-]{36}$/);
        return rest;
      }),
      [
        { label: '0-1', result: 'rejected', defectCodes: ['PO', 'IF'], defectLengthIn: null, weldIds: sorted([onFilm, alsoOnFilm]) }, // prettier-ignore
        { label: '1-2', result: 'accepted', defectCodes: [], defectLengthIn: null, weldIds: sorted([clean, given]) }, // prettier-ignore
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
