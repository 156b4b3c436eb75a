// The inspector's screens as tried on a phone (issue F17, part 6), in a real browser: a weld's page
// shows the film intervals that show it, with their defect codes; the NDT form's errors name the
// film interval (and weld) the service refused, not its position in the list. (Histories naming
// who changed what are in pwa.test.ts, where the change is made.)
import test, { type ExecutionContext } from 'ava';
import type { Page } from 'playwright-core';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login, PASSWORD } from '../helpers/auth.ts';
import { browserForTests, PHONE, screenshot, signInToApp, watchPage } from '../helpers/browser.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const browser = browserForTests(test);

interface Weld {
  id: string;
  weld_number: string;
}

/** A seeded tenant, two of its welded PENDING welds, and an inspector signed in on a phone. */
async function world(t: ExecutionContext) {
  const { target } = await migratedDatabase(t);
  const { port } = await startServer(t, target);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const origin = `http://127.0.0.1:${port}`;
  const host = `127.0.0.1:${port}`;
  const tenant = await addTenant(owner, { slug: 'site', name: 'Site', origins: [origin] });
  await seedTenant(owner, 'site', { isos: 1, weldsPerIso: 6, seed: 3 });
  await addRoleUsers(owner, 'site');
  const { rows } = await owner.query<Weld>(
    `select id, weld_number from weld_public.welds
      where tenant_id = $1 and status = 'PENDING' and welded_on is not null
      order by weld_number limit 2`,
    [tenant.id],
  );
  if (rows.length < 2) throw new Error('the seed made fewer than two welded PENDING welds');
  const context = await browser().newContext({ baseURL: origin, viewport: PHONE });
  t.teardown(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  watchPage(page, problems);
  await page.goto('/app/');
  await signInToApp(page, 'inspector', PASSWORD);
  const token = (await login(port, host, 'inspector')).json.accessToken as string;
  return {
    port,
    host,
    token,
    page,
    problems,
    owner,
    tenantId: tenant.id,
    welds: rows as [Weld, Weld],
  };
}

async function openWeld(page: Page, weld: Weld) {
  await page.goto(`/app/#/welds/${weld.id}`);
  await page.getByRole('heading', { name: `Weld ${weld.weld_number}` }).waitFor();
}

test("a weld's page shows the film intervals that show it, with their defect codes", async (t) => {
  const w = await world(t);
  const [w1, w2] = w.welds;
  const today = new Date().toISOString().slice(0, 10);
  const res = await request(w.port, {
    method: 'POST',
    path: '/ndt-records',
    host: w.host,
    headers: { authorization: `Bearer ${w.token}` },
    body: {
      method: 'RT',
      reportNumber: 'RT-77',
      examinedOn: today,
      welds: [{ weldId: w1.id }, { weldId: w2.id }],
      filmIntervals: [
        { label: '0-1', result: 'accepted', defectCodes: [], weldIds: [w1.id] },
        { label: '1-2', result: 'rejected', defectCodes: ['PO', 'SI'], weldIds: [w2.id] },
      ],
    },
  });
  t.is(res.status, 201, res.text);

  await openWeld(w.page, w2);
  const rejected = w.page.locator('li', { hasText: `RT RT-77, ${today}` });
  await rejected.getByText('film 1-2 rejected (defects PO, SI)').waitFor();
  t.false((await rejected.innerText()).includes('0-1'), 'only the intervals that show this weld');
  await screenshot(w.page, 'phone-weld-film-defects');

  await openWeld(w.page, w1);
  const accepted = w.page.locator('li', { hasText: `RT RT-77, ${today}` });
  await accepted.getByText('film 0-1 accepted').waitFor();
  t.false((await accepted.innerText()).includes('defects'));
  t.deepEqual(w.problems, []);
});

test("a weld's page shows what it is made of and what was done to it: components and heats, fillers, preheat, PWHT and hardness, and the checks they raise", async (t) => {
  const w = await world(t);
  const [w1] = w.welds;
  const post = async (path: string, body: unknown, token = w.token) => {
    const res = await request(w.port, {
      method: 'POST',
      path,
      host: w.host,
      headers: { authorization: `Bearer ${token}` },
      body,
    });
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
    return res.json as { id: string };
  };
  const engineer = (await login(w.port, w.host, 'engineer')).json.accessToken as string;
  const pipe = await post(
    '/components',
    {
      tag: 'P-1',
      kind: 'pipe',
      materialSpec: 'A335',
      grade: 'P22',
      pNumber: '5A',
      heatNumber: 'H-771',
      mtrRef: 'MTR-9',
    },
    engineer,
  );
  const patched = await request(w.port, {
    method: 'PATCH',
    path: `/welds/${w1.id}`,
    host: w.host,
    headers: { authorization: `Bearer ${engineer}` },
    body: { component1Id: pipe.id, wallThickness: 0.6, preheatF: 350 },
  });
  t.is(patched.status, 200, patched.text);
  const lot = await post(
    '/filler-lots',
    { awsClassification: 'E9018-B3', lotNumber: 'L-22', fNumber: 4 },
    engineer,
  );
  await post('/weld-fillers', { weldId: w1.id, process: 'SMAW', fillerLotId: lot.id });
  await post('/pwht-records', {
    recordNumber: 'PW-5',
    treatedOn: '2026-11-20',
    holdingTemperatureF: 1200,
    holdMinutes: 60,
    chartRef: 'C-5',
    weldIds: [w1.id],
  });
  await post('/hardness-readings', {
    weldId: w1.id,
    measuredOn: '2026-11-21',
    location: 'haz',
    hardnessHb: 250,
  });

  await openWeld(w.page, w1);
  const page = w.page;
  await page.getByText('P-1: pipe A335-P22, P-No. 5A, heat H-771').waitFor();
  await page.getByText('SMAW: E9018-B3 lot L-22, F-No. 4').waitFor();
  await page.getByText('PW-5, 2026-11-20: 1200 °F for 60 min').waitFor();
  await page.getByText('250 HB, heat affected zone, 2026-11-21').waitFor();
  const fields = await page.locator('dl.fields').innerText();
  t.regex(fields, /Preheat \(°F\)\s+350/);
  t.regex(fields, /Base metals\s+P-No\. 5A to P-No\. /);
  // PWHT at 1200 °F is below P-No. 5A's range. Built to B31.3-2012, 250 HB is over its 241 too
  // (the 2022 edition sets no Brinell limit).
  await page.getByText(/PWHT_OUT_OF_RANGE/).waitFor();
  t.is(await page.getByText(/HARDNESS_HIGH/).count(), 0);
  await w.owner.query(
    `update weld_public.tenant_settings set code_edition = 'B31.3-2012' where tenant_id = $1`,
    [w.tenantId],
  );
  await page.reload();
  await page.getByText(/HARDNESS_HIGH/).waitFor();
  await screenshot(page, 'phone-weld-traceability');
  t.deepEqual(w.problems, []);
});

test('the NDT form names the film interval the service refused, not its position', async (t) => {
  const w = await world(t);
  const [w1] = w.welds;
  await w.page.goto(`/app/#/welds/${w1.id}/ndt`);
  await w.page.getByRole('heading', { name: 'Record an NDT result' }).waitFor();
  await w.page.getByLabel('Report number').fill('RT-78');
  await w.page.getByRole('button', { name: 'Add a film interval' }).click();
  await w.page.locator('#label-1').fill('A');
  await w.page
    .getByRole('group', { name: 'Welds on interval A' })
    .getByLabel(w1.weld_number, { exact: true })
    .check();
  await w.page.getByRole('button', { name: 'Record the result' }).click();
  const alert = w.page.getByRole('alert');
  await alert.waitFor();
  t.regex(await alert.innerText(), /^Film interval A, label: must be two location markers/);
  t.false((await alert.innerText()).includes('film intervals 2'));
  t.deepEqual(w.problems, []);
});

test('on a phone the weld list sorts by weld number, status or date welded, as GET /welds does', async (t) => {
  const w = await world(t);
  const rest = async (sort: string) =>
    (
      (
        await request(w.port, {
          path: `/welds?sort=${sort}&limit=500`,
          host: w.host,
          headers: { authorization: `Bearer ${w.token}` },
        })
      ).json as { items: Array<{ weldNumber: string }> }
    ).items.map((x) => x.weldNumber);
  await w.page.goto('/app/#/welds');
  await w.page.getByRole('heading', { name: 'Welds' }).waitFor();
  for (const [label, sort] of [
    ['date welded, newest first', '-weldedOn'],
    ['status', 'status'],
    ['weld number', 'weldNumber'],
  ] as const) {
    const fold = w.page.locator('details.filter-fold');
    if ((await fold.getAttribute('open')) === null) await fold.locator('summary').click();
    await w.page.getByLabel('Sort by').selectOption({ label });
    await w.page.getByRole('button', { name: 'Filter' }).click();
    await w.page.waitForURL(`**/app/#/welds?sort=${encodeURIComponent(sort)}`);
    const expected = await rest(sort);
    t.true(expected.length >= 6);
    // (Read until the list shows the new order: the page reads it after the URL changes.)
    let shown: string[] = [];
    for (let i = 0; i < 50; i++) {
      shown = await w.page.locator('tbody tr td:first-child').allInnerTexts();
      if (JSON.stringify(shown) === JSON.stringify(expected)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.deepEqual(shown, expected, label);
  }
  await screenshot(w.page, 'phone-welds-sorted');
  t.deepEqual(w.problems, []);
});

test("a repaired weld reported re-welded records the repair's day and welder; an engineer accepts a weld on a typed disposition", async (t) => {
  const w = await world(t);
  const [w1, w2] = w.welds;
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await request(w.port, {
      method,
      path,
      host: w.host,
      headers: { authorization: `Bearer ${token}` },
      body,
    });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    return res.json as { welderId: string | null; weldedOn: string };
  };
  const engineer = (await login(w.port, w.host, 'engineer')).json.accessToken as string;
  // W1 rejected by RT, released for repair by the engineer.
  const weld = await call(w.token, 'GET', `/welds/${w1.id}`);
  await call(w.token, 'POST', '/ndt-records', {
    method: 'RT',
    reportNumber: 'RT-REP',
    examinedOn: weld.weldedOn,
    welds: [{ weldId: w1.id, result: 'rejected' }],
  });
  await call(engineer, 'PATCH', `/welds/${w1.id}/status`, { status: 'REPAIR' });

  const page = w.page;
  await openWeld(page, w1);
  await page.getByRole('radio', { name: /^PENDING/ }).check();
  const repair = page.getByRole('group', { name: 'The repair as welded' });
  const today = new Date().toISOString().slice(0, 10);
  t.is(await repair.getByLabel('Welded on').inputValue(), today, 'today unless changed');
  await repair.getByLabel('Welder').selectOption(weld.welderId);
  await page.getByRole('button', { name: /^Change status/ }).click();
  await page.getByRole('heading', { level: 1 }).locator('.status').getByText('PENDING').waitFor();
  const { rows } = await w.owner.query<{ welded_on: string; welder_id: string }>(
    `select to_char(welded_on, 'YYYY-MM-DD') as welded_on, welder_id from weld_public.weld_repairs
      where weld_id = $1`,
    [w1.id],
  );
  t.deepEqual(rows, [{ welded_on: today, welder_id: weld.welderId! }]);

  // The engineer chooses a documented disposition as the basis: it must be typed.
  const context = await browser().newContext({ baseURL: `http://${w.host}`, viewport: PHONE });
  t.teardown(() => context.close());
  const desk = await context.newPage();
  const problems: string[] = [];
  watchPage(desk, problems);
  await desk.goto('/app/');
  await signInToApp(desk, 'engineer', PASSWORD);
  await openWeld(desk, w2);
  await desk.getByRole('radio', { name: /^ACCEPTED/ }).check();
  await desk.getByRole('radio', { name: /^a documented disposition/ }).check();
  const submit = desk.getByRole('button', { name: /^Change status/ });
  t.true(await submit.isDisabled(), 'no basis yet');
  await desk.getByLabel(/^Disposition/).fill('NCR-77 use as is');
  await submit.click();
  await desk.getByRole('heading', { level: 1 }).locator('.status').getByText('ACCEPTED').waitFor();
  const { rows: accepted } = await w.owner.query<{ acceptance_disposition: string }>(
    'select acceptance_disposition from weld_public.welds where id = $1',
    [w2.id],
  );
  t.deepEqual(accepted, [{ acceptance_disposition: 'NCR-77 use as is' }]);
  t.deepEqual([...w.problems, ...problems], []);
});
