// The weld register import and export of issue F9 over real HTTP: a file with bad lines is refused
// naming exactly those lines and writes nothing; BOM, semicolons, decimal commas and quoted fields
// with delimiters and line breaks are read; existing welds are updated or counted unchanged, ISOs
// created, one event per changed weld; a dry run writes nothing; viewers are refused before the
// upload is read; tenant B's ISO of the same number is never touched; the export streams every
// weld (30,000 here, 11 MB, while the client reads slowly) and imports back unchanged. Every JSON answer
// is also checked against the OpenAPI document (helpers/http.ts).
import fs from 'node:fs';
import http from 'node:http';
import test, { type ExecutionContext } from 'ava';
import type pg from 'pg';
import { connectClient } from '../../db/database.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, cookieHeader, login } from '../helpers/auth.ts';
import { migratedDatabase, superuserQuery } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request, type HttpResponse } from '../helpers/http.ts';
import { spawnServer, startServer } from '../helpers/server.ts';
import { IMPORTS_PER_TENANT, importsInFlightOf } from '../../rest-adapter/imports.ts';

const A = 'a.test';
const B = 'b.test';
const HEADER =
  'isoNumber,lineNumber,weldNumber,type,size,schedule,wallThickness,material,welderStamp,wpsNumber,wpsRevision,weldedOn';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Client {
  get(path: string, headers?: Record<string, string>): Promise<HttpResponse>;
  patch(path: string, body: unknown): Promise<HttpResponse>;
  upload(csv: string, query?: string): Promise<HttpResponse>;
}

function client(port: number, host: string, token: string): Client {
  const auth = { authorization: `Bearer ${token}` };
  return {
    get: (path, headers = {}) => request(port, { path, host, headers: { ...auth, ...headers } }),
    patch: (path, body) => request(port, { method: 'PATCH', path, host, body, headers: auth }),
    upload: (csv, query = '') =>
      request(port, {
        method: 'POST',
        path: `/imports/welds${query}`,
        host,
        body: csv,
        headers: { ...auth, 'content-type': 'text/csv' },
      }),
  };
}

function ok(res: HttpResponse, status = 200): Json {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return res.json;
}

/** Two tenants with users of every role; alpha has welders W-1, W-2 and WPS-1 rev 0 and rev 1. */
async function world(t: ExecutionContext, options: Parameters<typeof startServer>[2] = {}) {
  const { target, rootUrl } = await migratedDatabase(t);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const alpha = await addTenant(owner, { slug: 'alpha', origins: [`http://${A}`] });
  const bravo = await addTenant(owner, { slug: 'bravo', origins: [`http://${B}`] });
  await addRoleUsers(owner, 'alpha');
  await addRoleUsers(owner, 'bravo');
  await owner.query(
    `insert into weld_public.welders (tenant_id, stamp, name)
     values ($1, 'W-1', 'Ann'), ($1, 'W-2', 'Bo'), ($2, 'W-1', 'Bravo welder');
     insert into weld_public.wps (tenant_id, wps_number, revision, process, state)
     values ($1, 'WPS-1', '0', 'GTAW', 'approved'), ($1, 'WPS-2', '0', 'SMAW', 'approved'),
            ($1, 'WPS-2', '1', 'SMAW', 'approved')`
      .replaceAll('$1', `'${alpha.id}'`)
      .replaceAll('$2', `'${bravo.id}'`),
  );
  const { port, pool } = await startServer(t, target, options);
  const as = async (host: string, role: string) =>
    client(port, host, ok(await login(port, host, role)).accessToken);
  return {
    port,
    pool,
    owner,
    rootUrl,
    alpha: alpha.id,
    bravo: bravo.id,
    a: {
      viewer: await as(A, 'viewer'),
      inspector: await as(A, 'inspector'),
      engineer: await as(A, 'engineer'),
    },
    b: { engineer: await as(B, 'engineer') },
  };
}

const csv = (...rows: string[]) => [HEADER, ...rows].join('\n') + '\n';

/** What the tenant holds, for "nothing was written". */
async function holdings(owner: pg.Client, tenant: string) {
  const { rows } = await owner.query<Record<string, number>>(
    `select (select count(*) from weld_public.isos where tenant_id = $1)::int as isos,
            (select count(*) from weld_public.welds where tenant_id = $1)::int as welds,
            -- Written events, placed or still waiting for the relay (which may move them meanwhile).
            ((select count(*) from weld_public.events where tenant_id = $1)
             + (select count(*) from weld_hidden.pending_events where tenant_id = $1))::int as events,
            (select count(*) from weld_hidden.imports where tenant_id = $1)::int as imports,
            (select coalesce(sum(version), 0) from weld_public.welds where tenant_id = $1)::int as versions`,
    [tenant],
  );
  return rows[0]!;
}

test('a 20-row file with 3 bad lines is refused naming exactly those lines; nothing is written', async (t) => {
  const w = await world(t);
  const rows = Array.from(
    { length: 20 },
    (_, i) =>
      `ISO-20,L-20,W${String(i + 1).padStart(2, '0')},BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02`,
  );
  rows[4] = rows[4]!.replace(',BW,', ',XX,'); // line 6: a bad type
  rows[11] = rows[11]!.replace(',W-1,', ',NOPE,'); // line 13: an unknown stamp
  rows[16] = rows[16]!.replace(',W17,', ',W03,'); // line 18: W03 again
  const before = await holdings(w.owner, w.alpha);

  const refused = await w.a.engineer.upload(csv(...rows));
  t.is(refused.status, 422);
  t.is(refused.headers['content-type'], 'application/problem+json; charset=utf-8');
  t.is(refused.json.type, '/problems/import-invalid');
  t.is(refused.json.errorCount, 3);
  t.deepEqual(
    refused.json.errors.map((e: Json) => [e.line, e.column, e.value]),
    [
      [6, 'type', 'XX'],
      [13, 'welderStamp', 'NOPE'],
      [18, 'weldNumber', 'W03'],
    ],
  );
  t.regex(refused.json.errors[2].detail, /also on line 4/);
  t.deepEqual(await holdings(w.owner, w.alpha), before, 'nothing written, not even the ISO');

  // The same file, corrected, goes in whole.
  rows[4] = rows[4].replace(',XX,', ',BW,');
  rows[11] = rows[11].replace(',NOPE,', ',W-2,');
  rows[16] = rows[16].replace(',W03,', ',W17,');
  const done = ok(await w.a.engineer.upload(csv(...rows)), 201);
  t.like(done, { rows: 20, created: 20, updated: 0, unchanged: 0, isosCreated: 1, kind: 'welds' });
});

test('BOM, semicolons, a decimal comma, a quoted field with the delimiter and a line break; lines counted as an editor does', async (t) => {
  const w = await world(t);
  const file =
    '\uFEFF' +
    [
      HEADER.replaceAll(',', ';'),
      'ISO-S;L-1;W1;bw;0,75;40s;0,113;"A106; Gr. B\r\nsee note";W-1;WPS-1;0;2026-03-02',
      'ISO-S;;W2;SW;2;80;;"say ""hi""";;;;',
    ].join('\r\n');
  const done = ok(await w.a.engineer.upload(file), 201);
  t.like(done, { created: 2, isosCreated: 1 });
  const { items } = ok(await w.a.engineer.get('/welds?weldNumber=W1'));
  t.like(items[0], {
    type: 'BW',
    size: 0.75,
    schedule: '40S',
    wallThickness: 0.113,
    material: 'A106; Gr. B\r\nsee note',
  });
  const second = ok(await w.a.engineer.get('/welds?weldNumber=W2')).items[0];
  t.like(second, { material: 'say "hi"', welderId: null, wallThickness: null });

  // A bad value after the two-line record is named on the line an editor shows it on (4).
  const bad = file.replace('W2;SW;2', 'W2;SW;two');
  const refused = ok(await w.a.engineer.upload(bad), 422);
  t.deepEqual(
    refused.errors.map((e: Json) => [e.line, e.column]),
    [[4, 'size']],
  );
});

test('existing welds are updated or counted unchanged, ISOs created; one event per changed weld, as GET shows it', async (t) => {
  const w = await world(t);
  const first = ok(
    await w.a.engineer.upload(
      csv(
        'ISO-1,L-1,W1,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
        'ISO-1,L-1,W2,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
        'ISO-1,L-1,W3,SW,1,80,,A105,,,,',
      ),
    ),
    201,
  );
  t.like(first, { rows: 3, created: 3, updated: 0, unchanged: 0, isosCreated: 1 });
  const welds = async () =>
    Object.fromEntries(
      ok(await w.a.engineer.get('/welds?limit=500')).items.map((x: Json) => [x.weldNumber, x]),
    );
  const was = await welds();
  const head = ok(await w.a.viewer.get('/events?after=now')).nextCursor;

  // W1 changed, W2 and W3 as they are (a WPS of several revisions needs its revision), W4 new.
  const second = ok(
    await w.a.engineer.upload(
      csv(
        'ISO-1,,W1,BW,2,40,0.154,A333-6,W-2,WPS-2,1,2026-03-02',
        'ISO-1,L-1,W2,BW,2.000,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
        'ISO-1,L-1,W3,SW,1,80,,A105,,,,',
        'ISO-1,L-1,W4,FW,0.5,,,,,,,',
      ),
    ),
    201,
  );
  t.like(second, { rows: 4, created: 1, updated: 1, unchanged: 2, isosCreated: 0 });
  const now = await welds();
  t.is(now.W1.version, was.W1.version + 1);
  t.like(now.W1, { material: 'A333-6', status: 'PENDING' });
  t.is(now.W2.version, was.W2.version, 'unchanged is not written');
  t.is(now.W3.updatedAt, was.W3.updatedAt);

  const events = ok(await w.a.viewer.get(`/events?after=${head}`)).items;
  t.deepEqual(
    events.map((e: Json) => [e.type, e.data.weldNumber]),
    [
      ['weld.updated', 'W1'],
      ['weld.created', 'W4'],
    ],
  );
  for (const event of events) {
    t.deepEqual(event.data, ok(await w.a.viewer.get(`/welds/${event.subjectId}`)));
  }

  // A file without a column leaves that column as it is; an empty cell clears an optional value.
  const partial = 'isoNumber,weldNumber,material\nISO-1,W1,\nISO-1,W2,A106-B\n';
  const third = ok(await w.a.engineer.upload(partial), 201);
  t.like(third, { updated: 1, unchanged: 1 });
  t.like((await welds()).W1, { material: null, welderId: now.W1.welderId, type: 'BW' });

  // The records: newest first, with who, what and the file's hash.
  const imports = ok(await w.a.viewer.get('/imports')).items;
  t.is(imports.length, 3);
  t.like(imports[0], { rows: 2, updated: 1, unchanged: 1, fileBytes: partial.length });
  t.regex(imports[0].fileSha256, /^[0-9a-f]{64}$/);
  t.like(ok(await w.a.viewer.get(`/imports/${first.id}`)), first);
});

test('ISOs: a new one needs its line number, an existing one keeps its line; the rules the writes obey are named by line', async (t) => {
  const w = await world(t);
  ok(await w.a.engineer.upload(csv('ISO-1,L-1,W1,BW,2,40,0.154,,W-1,WPS-1,0,2026-03-02')), 201);
  const refused = ok(
    await w.a.engineer.upload(
      csv(
        'ISO-1,L-9,W2,BW,2,,,,,,,', // line 2: ISO-1 is on L-1
        'ISO-NEW,,W1,BW,2,,,,,,,', // line 3: a new ISO without its line
        'ISO-1,,W3,BW,2,,,,,WPS-2,,', // line 4: WPS-2 has two revisions
        'ISO-1,,W4,,,,,,,,,', // line 5: a new weld needs type and size
      ),
    ),
    422,
  );
  t.deepEqual(
    refused.errors.map((e: Json) => [e.line, e.column]),
    [
      [2, 'lineNumber'],
      [3, 'lineNumber'],
      [4, 'wpsNumber'],
      [5, 'size'],
      [5, 'type'],
    ],
  );
  t.regex(refused.errors[2].detail, /has revisions 0, 1: give wpsRevision/);

  // A weld of a released test package keeps its data (WD008), named by line.
  const iso = ok(await w.a.engineer.get('/isos?isoNumber=ISO-1')).items[0];
  await w.owner
    .query(
      `insert into weld_public.test_packages (tenant_id, package_number, test_medium, state)
       values ($1, 'TP-1', 'hydro', 'released')
       returning id`,
      [w.alpha],
    )
    .then(({ rows }) =>
      w.owner.query(
        'insert into weld_public.test_package_isos (tenant_id, test_package_id, iso_id) values ($1, $2, $3)',
        [w.alpha, (rows[0] as { id: string }).id, iso.id],
      ),
    );
  const frozen = ok(
    await w.a.engineer.upload(
      csv('ISO-1,L-1,W1,BW,2,40,0.154,,W-1,WPS-1,0,2026-03-02', 'ISO-1,L-1,W1b,BW,2,,,,,,,'),
    ),
    422,
  );
  t.deepEqual(
    frozen.errors.map((e: Json) => [e.line, e.detail]),
    [[3, 'test package TP-1 is released; the data of its welds changes only while it is open']],
    'W1 as it is was not a change; W1b would be a new weld of the package',
  );
});

test('viewers and inspectors are refused before the upload is read; a dry run answers the counts and writes nothing', async (t) => {
  const w = await world(t);
  const file = csv('ISO-D,L-D,W1,BW,2,,,,,,,', 'ISO-D,L-D,W2,BW,2,,,,,,,');
  const before = await holdings(w.owner, w.alpha);
  for (const role of ['viewer', 'inspector'] as const) {
    const refused = await w.a[role].upload(file);
    t.is(refused.status, 403, role);
    t.is(refused.json.type, '/problems/role-not-allowed');
    t.is((await w.a[role].upload(file, '?dryRun=true')).status, 403, `${role}, dry run`);
  }
  const dry = ok(await w.a.engineer.upload(file, '?dryRun=true'));
  t.deepEqual(dry, { dryRun: true, rows: 2, created: 2, updated: 0, unchanged: 0, isosCreated: 1 });
  t.deepEqual(await holdings(w.owner, w.alpha), before);
  t.deepEqual(ok(await w.a.viewer.get('/imports')).items, []);
});

test("tenant B's ISO of the same number is never touched from tenant A", async (t) => {
  const w = await world(t);
  ok(await w.b.engineer.upload(csv('ISO-1,L-B,W1,BW,2,40,,bravo steel,W-1,,,')), 201);
  const bravoBefore = await holdings(w.owner, w.bravo);
  // W-1 is a stamp in both tenants; WPS-1 exists in alpha only.
  const done = ok(
    await w.a.engineer.upload(csv('ISO-1,L-A,W1,BW,4,80,,alpha steel,W-1,WPS-1,0,')),
    201,
  );
  t.like(done, { created: 1, updated: 0, isosCreated: 1 });
  t.deepEqual(await holdings(w.owner, w.bravo), bravoBefore);
  const bravoWeld = ok(await w.b.engineer.get('/welds')).items[0];
  t.like(bravoWeld, { material: 'bravo steel', size: 2, version: 1 });
  // And bravo's export holds its own weld only.
  const exported = await w.b.engineer.get('/welds?format=csv');
  t.is(exported.text.trim().split('\n').length, 2);
  t.regex(exported.text, /ISO-1,L-B,W1,BW,2,40,,bravo steel,W-1,,,,,,,PENDING,0,,1/);
});

test('the body: 415 unless text/csv in UTF-8, 413 past IMPORT_MAX_BYTES, 422 for a bad header, text that is not UTF-8 or CSV; CSRF holds', async (t) => {
  const w = await world(t, { importMaxBytes: 4096 });
  const send = (body: string | Buffer | Buffer[], headers: Record<string, string>) =>
    new Promise<HttpResponse>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: w.port,
          method: 'POST',
          path: '/imports/welds',
          headers: { host: A, ...headers },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += String(c)));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              headers: res.headers,
              text,
              json: JSON.parse(text || 'null'),
            }),
          );
        },
      );
      req.on('error', reject);
      if (!Array.isArray(body)) return void req.end(body);
      // Pieces a moment apart, so the server reads them as pieces too.
      void (async () => {
        for (const piece of body) {
          req.write(piece);
          await new Promise((r) => setTimeout(r, 30));
        }
        req.end();
      })();
    });
  const token = ok(await login(w.port, A, 'engineer')).accessToken as string;
  const bearer = { authorization: `Bearer ${token}` };
  t.is((await send('{}', { ...bearer, 'content-type': 'application/json' })).status, 415);
  t.is(
    (await send(csv(), { ...bearer, 'content-type': 'text/csv; charset=iso-8859-1' })).status,
    415,
  );
  const big = await send(
    csv(...Array.from({ length: 200 }, (_, i) => `ISO-B,L,W${i},BW,2,,,,,,,`)),
    {
      ...bearer,
      'content-type': 'text/csv',
    },
  );
  t.is(big.status, 413);

  const header = ok(
    await w.a.engineer.upload('isoNumber,weldNumber,colour,weldNumber\nISO,W1,red,W1\n'),
    422,
  );
  t.deepEqual(
    header.errors.map((e: Json) => [e.line, e.column]),
    [
      [1, 'colour'],
      [1, 'weldNumber'],
    ],
  );
  t.regex(header.errors[0].detail, /not a column of the register/);
  // A header wider than any register is refused at once (a hostile one could be millions wide).
  const wide = ok(await w.a.engineer.upload('isoNumber,weldNumber' + ',x'.repeat(200) + '\n'), 422);
  t.deepEqual(
    wide.errors.map((e: Json) => [e.line, e.column]),
    [[1, null]],
  );
  t.regex(wide.errors[0].detail, /more than 100 fields/);
  t.deepEqual(
    ok(await w.a.engineer.upload('lineNumber,type\n'), 422).errors.map((e: Json) => e.column),
    ['isoNumber', 'weldNumber'],
  );
  const latin1 = Buffer.concat([
    Buffer.from(csv() + 'ISO-L,L,W1,BW,2,,,'),
    Buffer.from([0xe9]),
    Buffer.from(',,,,\n'),
  ]);
  const notUtf8 = await send(latin1, { ...bearer, 'content-type': 'text/csv' });
  t.is(notUtf8.status, 422);
  t.regex(notUtf8.json.errors[0].detail, /not UTF-8/);
  t.is(notUtf8.json.errors[0].line, 2);
  // The line an editor shows, past CRLFs and a quoted field over two lines, whatever pieces the
  // file comes in (a euro sign cut between two of them is no error).
  const file = Buffer.concat([
    Buffer.from(
      HEADER + '\r\n' + 'ISO-L,L,W1,BW,2,,,"two\r\nlines",,,,\r\n' + 'ISO-L,L,W2,BW,2,,,€,,,,\r\n',
    ),
    Buffer.from('ISO-L,L,W3,BW,2,,,caf'),
    Buffer.from([0xe9]),
    Buffer.from(',,,,\r\nISO-L,L,W4,BW,2,,,,,,,\r\n'),
  ]);
  const euro = file.indexOf('€');
  for (const cuts of [[], [euro + 1], [euro + 2, file.indexOf(0xe9)], [file.indexOf(0xe9) + 1]]) {
    const pieces = [0, ...cuts, file.length]
      .slice(1)
      .map((end, i, ends) => file.subarray(i ? ends[i - 1] : 0, end));
    const refused = await send(pieces, { ...bearer, 'content-type': 'text/csv' });
    t.is(refused.status, 422, refused.text);
    t.deepEqual(
      refused.json.errors.map((e: Json) => [e.line, e.detail]),
      [[5, 'is not UTF-8 text: save the file as CSV UTF-8']],
      `cut at ${cuts.join(', ')}`,
    );
  }
  const open = ok(await w.a.engineer.upload(csv('ISO-Q,L,"W1,BW,2,,,,,,,')), 422);
  t.deepEqual(
    open.errors.map((e: Json) => e.line),
    [2],
  );
  t.is(ok(await w.a.engineer.upload(csv(), '?dryrun=true'), 422).errors[0].parameter, 'dryrun');

  // Cookie mode: without the CSRF header the import is refused before anything is read.
  const signedIn = await login(w.port, A, 'engineer');
  const noCsrf = await send(csv('ISO-C,L,W1,BW,2,,,,,,,'), {
    cookie: cookieHeader(signedIn),
    'content-type': 'text/csv',
  });
  t.is(noCsrf.status, 403);
  t.is(noCsrf.json.type, '/problems/csrf-rejected');
  t.is((await holdings(w.owner, w.alpha)).isos, 0);
});

test('export: every weld the filters select as CSV, streamed with flat memory (30,000 welds, 11 MB, to a slow reader), and imported back unchanged', async (t) => {
  const w = await world(t);
  const rows = Array.from({ length: 30_000 }, (_, i) => {
    const iso = `ISO-${String(Math.floor(i / 50)).padStart(3, '0')}-${'S'.repeat(90)}`;
    const line = `L-${Math.floor(i / 200)}-${'P'.repeat(90)}`;
    const weld = `W${String(i % 50).padStart(2, '0')}-${'n'.repeat(40)}`;
    return `${iso},${line},${weld},BW,2,40,0.154,=formula ${'x'.repeat(90)},W-1,WPS-1,0,2026-03-02`;
  });
  ok(await w.a.engineer.upload(csv(...rows)), 201);

  // A reader that stops after the first piece for half a second, from the service as its own
  // process (server/main.ts): meanwhile the process must hold no more than a stream's buffers, the
  // rest waiting in PostgreSQL and the sockets. An export built in memory first would hold all of
  // it (11 MB, more as strings) by then.
  const service = await spawnServer(t, { DATABASE_URL: w.rootUrl });
  const rss = () =>
    Number(
      /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${service.child.pid}/status`, 'utf8'))![1],
    ) * 1024;
  const token = ok(await login(service.port, A, 'viewer')).accessToken as string;
  const exportFrom = (path: string, pause: boolean) =>
    new Promise<{ text: string; grown: number; headers: http.IncomingHttpHeaders }>(
      (resolve, reject) => {
        const before = rss();
        const req = http.request(
          {
            host: '127.0.0.1',
            port: service.port,
            path,
            headers: { host: A, authorization: `Bearer ${token}`, accept: 'text/csv' },
          },
          (res) => {
            const pieces: Buffer[] = [];
            let grown = 0;
            res.once('data', (piece: Buffer) => {
              pieces.push(piece);
              if (!pause) return void res.on('data', (more: Buffer) => pieces.push(more));
              res.pause();
              setTimeout(() => {
                grown = rss() - before;
                res.on('data', (more: Buffer) => pieces.push(more));
                res.resume();
              }, 500);
            });
            res.on('end', () =>
              resolve({
                text: Buffer.concat(pieces).toString('utf8'),
                grown,
                headers: res.headers,
              }),
            );
          },
        );
        req.on('error', reject);
        req.end();
      },
    );
  await exportFrom('/welds?weldNumber=W00', false); // warm: the code paths compiled, the pool open
  const { text, grown, headers } = await exportFrom('/welds', true);
  t.is(headers['content-type'], 'text/csv; charset=utf-8');
  t.is(headers['content-length'], undefined, 'streamed (chunked), not sent as one body');
  t.true(text.length > 11_000_000, `${text.length} characters`);
  // Streaming holds at most what passed before the sockets filled, plus young garbage not yet
  // collected (up to 8 MB seen when the whole suite, browser tests included, loads both cores:
  // npm start lets the young generation grow to 16 MB); an export built first would hold all
  // 11 MB of text at once, and the rows it came from besides.
  t.true(grown < 10_000_000, `the service grew by ${grown} bytes while the reader paused`);
  t.true(text.startsWith('\uFEFF'));
  const lines = text.slice(1).trimEnd().split('\n');
  t.is(lines.length, 30_001);
  t.is(
    lines[0],
    `${HEADER},baseMetal1PNumber,baseMetal2PNumber,preheatF,status,repairCycle,acceptance,version`,
  );
  t.regex(
    lines[1]!,
    /^ISO-000-S+,L-0-P+,W00-n+,BW,2,40,0\.154,'=formula x+,W-1,WPS-1,0,2026-03-02,,,,PENDING,0,,1$/,
  );

  // The export imports back as it is: every weld unchanged.
  const again = ok(await w.a.engineer.upload(text), 201);
  t.like(again, { rows: 30_000, created: 0, updated: 0, unchanged: 30_000 });

  // Filters apply, ?format=csv is Accept: text/csv, and pages do not.
  const one = await w.a.viewer.get(`/welds?format=csv&weldNumber=W07-${'n'.repeat(40)}`);
  t.is(one.text.trim().split('\n').length, 1 + 600);
  t.is(ok(await w.a.viewer.get('/welds?format=csv&limit=10'), 422).errors[0].parameter, 'limit');
  t.is((await w.a.viewer.get('/welds?limit=2')).json.items.length, 2, 'JSON stays the default');
});

/**
 * Polls until a statement matching `like` waits for a lock in this test's database (as the
 * superuser; other test files' databases share the cluster).
 */
async function waitingForLock(rootUrl: string, like: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const rows = await superuserQuery(
      rootUrl,
      `select 1 from pg_catalog.pg_locks l join pg_catalog.pg_stat_activity a using (pid)
        where not l.granted and a.query like $1 and a.datname = pg_catalog.current_database()`,
      [like],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`nothing matching ${like} waited for a lock`);
}

test("no lost update: a PATCH that answers 200 between an import's check and its write is a per-line conflict (409), never reverted; 5 rounds", async (t) => {
  const w = await world(t);
  ok(
    await w.a.engineer.upload(
      csv(
        'ISO-1,L-1,W1,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
        'ISO-1,L-1,W2,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
      ),
    ),
    201,
  );
  const byNumber = Object.fromEntries(
    ok(await w.a.engineer.get('/welds?limit=10')).items.map((x: Json) => [x.weldNumber, x.id]),
  ) as Record<string, string>;
  // The weld of the lower id is the one a DBA holds: the import's write locks in id order, so it
  // waits there before it reaches the other, which the PATCH changes meanwhile.
  const [held, patched] = [byNumber.W1!, byNumber.W2!].sort() as [string, string];
  const number = (id: string) => (id === byNumber.W1 ? 'W1' : 'W2');
  const dba = await connectClient(w.rootUrl);
  t.teardown(() => dba.end());
  for (let round = 1; round <= 5; round++) {
    const before = await holdings(w.owner, w.alpha);
    await dba.query('begin');
    await dba.query('select 1 from weld_public.welds where id = $1 for update', [held]);
    // A file without a material column: it changes the dates only, and must leave material be.
    const importing = w.a.engineer.upload(
      `isoNumber,weldNumber,weldedOn\nISO-1,W1,2026-04-0${round}\nISO-1,W2,2026-04-0${round}\n`,
    );
    await waitingForLock(w.rootUrl, '%apply_weld_import%');
    const material = `patched ${round}`;
    t.is((await w.a.engineer.patch(`/welds/${patched}`, { material })).status, 200);
    await dba.query('commit');
    const refused = await importing;
    t.is(refused.status, 409, `round ${round}: ${refused.text}`);
    t.is(refused.json.type, '/problems/import-conflict');
    t.is(refused.json.errorCount, 1);
    t.regex(
      refused.json.errors[0].detail,
      new RegExp(`^weld ${number(patched)} of ISO ISO-1 changed while the file was checked`),
    );
    const after = ok(await w.a.engineer.get(`/welds/${patched}`));
    t.is(after.material, material, 'the PATCH stands');
    t.is(after.weldedOn, '2026-03-02', 'and nothing of the import was written');
    const now = await holdings(w.owner, w.alpha);
    t.is(now.imports, before.imports);
    t.is(now.versions, before.versions! + 1, 'the PATCH alone bumped a version');
  }
});

test('two imports at once take turns: the second checks what the first wrote, so neither undoes the other; 5 rounds', async (t) => {
  const w = await world(t);
  ok(
    await w.a.engineer.upload(
      csv(
        'ISO-1,L-1,W1,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
        'ISO-1,L-1,W2,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
      ),
    ),
    201,
  );
  const ids = ok(await w.a.engineer.get('/welds?limit=10')).items.map((x: Json) => x.id as string);
  const dba = await connectClient(w.rootUrl);
  t.teardown(() => dba.end());
  for (let round = 1; round <= 5; round++) {
    await dba.query('begin');
    await dba.query('select 1 from weld_public.welds where id = any($1) for update', [ids]);
    const materials = w.a.engineer.upload(
      `isoNumber,weldNumber,material\nISO-1,W1,steel ${round}\nISO-1,W2,steel ${round}\n`,
    );
    await waitingForLock(w.rootUrl, '%apply_weld_import%');
    const dates = w.a.engineer.upload(
      `isoNumber,weldNumber,weldedOn\nISO-1,W1,2026-05-0${round}\nISO-1,W2,2026-05-0${round}\n`,
    );
    await waitingForLock(w.rootUrl, '%check_weld_import%');
    await dba.query('commit');
    t.is((await materials).status, 201);
    t.is((await dates).status, 201);
    for (const weld of ok(await w.a.engineer.get('/welds?limit=10')).items) {
      t.like(weld, { material: `steel ${round}`, weldedOn: `2026-05-0${round}` });
    }
  }
});

test('a PATCH and an import of other columns, raced 20 times: the PATCH is never reverted, and an import that answered 201 is all there', async (t) => {
  const w = await world(t);
  const rows = Array.from(
    { length: 50 },
    (_, i) => `ISO-1,L-1,W${i},BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02`,
  );
  ok(await w.a.engineer.upload(csv(...rows)), 201);
  const welds = ok(await w.a.engineer.get('/welds?limit=100')).items as Json[];
  const target = welds.find((x) => x.weldNumber === 'W25')!;
  let conflicts = 0;
  for (let round = 1; round <= 20; round++) {
    const day = `2026-06-${String(round).padStart(2, '0')}`;
    const file = `isoNumber,weldNumber,weldedOn\n${welds.map((x) => `ISO-1,${x.weldNumber},${day}`).join('\n')}\n`;
    const material = `race ${round}`;
    const [imported, patched] = await Promise.all([
      w.a.engineer.upload(file),
      w.a.engineer.patch(`/welds/${target.id}`, { material }),
    ]);
    t.is(patched.status, 200);
    t.true([201, 409].includes(imported.status), imported.text);
    if (imported.status === 409) conflicts++;
    const now = ok(await w.a.engineer.get(`/welds/${target.id}`));
    t.is(now.material, material, `round ${round}: the PATCH stands`);
    if (imported.status === 201) t.is(now.weldedOn, day, `round ${round}: the import is there`);
  }
  t.log(`${conflicts} of 20 rounds met a conflict`);
});

test('a file with versions (an export, edited) changes only welds still at its version: one changed since is named on its line; unchanged rows are not judged', async (t) => {
  const w = await world(t);
  ok(
    await w.a.engineer.upload(
      csv(
        'ISO-1,L-1,W1,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
        'ISO-1,L-1,W2,BW,2,40,0.154,A106-B,W-1,WPS-1,0,2026-03-02',
      ),
    ),
    201,
  );
  const exported = (await w.a.engineer.get('/welds', { accept: 'text/csv' })).text.replace(
    /^\uFEFF/,
    '',
  );
  const w2 = ok(await w.a.engineer.get('/welds?weldNumber=W2')).items[0];
  ok(await w.a.engineer.patch(`/welds/${w2.id}`, { material: 'changed meanwhile' }));
  // The user edits both rows' material in the export, and uploads it.
  const edited = exported.replaceAll(',A106-B,', ',A333-6,');
  const refused = await w.a.engineer.upload(edited);
  t.is(refused.status, 422);
  t.deepEqual(
    refused.json.errors.map((e: Json) => [e.line, e.column, e.value]),
    [[3, 'version', '1']],
  );
  t.regex(
    refused.json.errors[0].detail,
    /^weld W2 of ISO ISO-1 is at version 2, changed since this file's version 1/,
  );
  // Emptying the cell overwrites on purpose; importing an export as it is changes nothing.
  const overwrite = edited.replace(/^(ISO-1,[^\n]*,W2,[^\n]*,)1(\r?)$/m, '$1$2');
  t.not(overwrite, edited);
  t.like(ok(await w.a.engineer.upload(overwrite), 201), { updated: 2 });
  const again = (await w.a.engineer.get('/welds', { accept: 'text/csv' })).text;
  t.like(ok(await w.a.engineer.upload(again.replace(/^\uFEFF/, '')), 201), {
    updated: 0,
    unchanged: 2,
  });
  const bad = await w.a.engineer.upload('isoNumber,weldNumber,version\nISO-1,W1,two\n');
  t.deepEqual(
    bad.json.errors.map((e: Json) => [e.line, e.column, e.detail]),
    [
      [
        2,
        'version',
        "must be a whole number: the weld's version, as the export wrote it (or empty)",
      ],
    ],
  );
});

test('a tenant has at most IMPORTS_PER_TENANT imports at once on an instance; one more is 429, other tenants import on', async (t) => {
  const w = await world(t);
  const token = (await login(w.port, A, 'engineer')).json.accessToken as string;
  // Two uploads that have sent their header and half a file, and wait.
  const held = Array.from({ length: IMPORTS_PER_TENANT }, (_, i) => {
    const req = http.request({
      port: w.port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/imports/welds?dryRun=true',
      headers: {
        host: A,
        authorization: `Bearer ${token}`,
        'content-type': 'text/csv',
        'transfer-encoding': 'chunked',
      },
    });
    const answered = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
    });
    answered.catch(() => {}); // awaited below; a failed test must not leave it unhandled
    t.teardown(() => req.destroy());
    req.write(`${HEADER}\n`);
    return { req, answered, row: `ISO-${i},L-1,W-${i},BW,2,,,,W-1,WPS-1,0,\n` };
  });
  // Both past the role check and spooling (on a loaded machine that takes a moment) before the
  // third is sent.
  for (let i = 0; importsInFlightOf(w.pool, w.alpha) < IMPORTS_PER_TENANT && i < 200; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  t.is(importsInFlightOf(w.pool, w.alpha), IMPORTS_PER_TENANT);
  const third = await w.a.engineer.upload(
    csv('ISO-9,L-1,W-9,BW,2,,,,W-1,WPS-1,0,'),
    '?dryRun=true',
  );
  t.is(third.status, 429, third.text);
  t.like(third.json, { type: '/problems/too-many-imports', limit: IMPORTS_PER_TENANT });
  t.is(third.headers['retry-after'], '5');
  // The /api prefix is the same service: the same count.
  const viaApi = await request(w.port, {
    method: 'POST',
    path: '/api/imports/welds?dryRun=true',
    host: A,
    body: csv('ISO-9,L-1,W-9,BW,2,,,,W-1,WPS-1,0,'),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' },
  });
  t.is(viaApi.status, 429, viaApi.text);
  // Another tenant is not held back.
  const other = await w.b.engineer.upload(csv('ISO-1,L-1,W-1,BW,2,,,,W-1,,,'), '?dryRun=true');
  t.not(other.status, 429, other.text);

  for (const { req, row } of held) req.end(row);
  t.deepEqual(
    await Promise.all(held.map((h) => h.answered)),
    held.map(() => 200),
  );
  // Their places are free again.
  const after = await w.a.engineer.upload(
    csv('ISO-9,L-1,W-9,BW,2,,,,W-1,WPS-1,0,'),
    '?dryRun=true',
  );
  t.is(after.status, 200, after.text);
});
