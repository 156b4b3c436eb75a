// The QC manager's dashboard (issue F17, part 5), in a real browser: an engineer sees progress,
// repair rates against the threshold, the backlog and the packages, each a chart with the table of
// its numbers, the same numbers as the reports; a change made elsewhere reaches it live; an
// inspector is not offered it. Accessibility checked with axe; screenshots kept.
import test from 'ava';
import { seedTenant } from '../../db/seed/index.ts';
import { addTenant } from '../../db/tenants.ts';
import { addRoleUsers, login, PASSWORD } from '../helpers/auth.ts';
import {
  assertAccessible,
  browserForTests,
  DESKTOP,
  PHONE,
  screenshot,
  signInToApp,
  watchPage,
} from '../helpers/browser.ts';
import { migratedDatabase } from '../helpers/database.ts';
import { ownerClient } from '../helpers/fixtures.ts';
import { request } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const browser = browserForTests(test);

interface WelderRow {
  welderStamp: string;
  weldsExamined: number;
  weldsRejected: number;
}

test('an engineer reads the dashboard: four charts, their numbers those of the reports, live', async (t) => {
  t.timeout(120_000);
  const { target } = await migratedDatabase(t);
  const { port } = await startServer(t, target);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const origin = `http://127.0.0.1:${port}`;
  const host = `127.0.0.1:${port}`;
  await addTenant(owner, { slug: 'site', name: 'Site', origins: [origin] });
  await seedTenant(owner, 'site', { isos: 8, weldsPerIso: 20, seed: 4 });
  await addRoleUsers(owner, 'site');
  const token = (await login(port, host, 'engineer')).json.accessToken as string;
  const get = async <T>(path: string) =>
    (await request(port, { path, host, headers: { authorization: `Bearer ${token}` } })).json as {
      items: T[];
    };

  const context = await browser().newContext({ baseURL: origin, viewport: DESKTOP });
  t.teardown(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  watchPage(page, problems);
  await page.goto('/app/');
  await signInToApp(page, 'engineer', PASSWORD);
  await page.getByRole('link', { name: 'Dashboard' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  const figures = page.locator('figure.chart-figure');
  await figures.first().waitFor();
  t.is(await figures.count(), 4);
  for (const caption of [
    'Welds made and accepted, week by week',
    'Repair rate per welder',
    'Examinations drawn and not yet done',
    'Test packages by state',
  ]) {
    const figure = page.locator('figure', { hasText: caption });
    t.is(await figure.locator('canvas[role="img"]').count(), 1, caption);
  }

  // The repair rates are the welder performance report's, summed over its months.
  const report = await get<WelderRow>('/reports/welder-performance?limit=500');
  const expected = new Map<string, { examined: number; rejected: number }>();
  for (const row of report.items) {
    const w = expected.get(row.welderStamp) ?? { examined: 0, rejected: 0 };
    w.examined += row.weldsExamined;
    w.rejected += row.weldsRejected;
    expected.set(row.welderStamp, w);
  }
  const repairs = page.locator('figure', { hasText: 'Repair rate per welder' }).locator('tbody tr');
  const shown = await repairs.evaluateAll((rows) =>
    rows.map((row) =>
      [...row.children].map((cell) => (cell as { textContent: string }).textContent),
    ),
  );
  t.true(shown.length > 0, 'some welds were examined');
  for (const [welder, examined, rejected] of shown) {
    const stamp = welder!.split(' ')[0]!;
    t.deepEqual(
      { examined: Number(examined), rejected: Number(rejected) },
      expected.get(stamp),
      stamp,
    );
  }
  // The packages table counts the board's packages.
  const board = await get<{ state: string }>('/reports/test-package-board?limit=500');
  const packages = page
    .locator('figure', { hasText: 'Test packages by state' })
    .locator('tbody tr');
  const total = (
    await packages.evaluateAll((rows) =>
      rows.map((row) =>
        [...row.querySelectorAll('td')].reduce(
          (sum, cell) => sum + Number((cell as { textContent: string }).textContent),
          0,
        ),
      ),
    )
  ).reduce((a, b) => a + b, 0);
  t.is(total, board.items.length);
  await assertAccessible(t, page, 'the dashboard');
  await screenshot(page, 'dashboard-desktop');

  // Live: a weld made elsewhere today moves the progress table without a reload.
  const progress = page.locator('figure', { hasText: 'Welds made and accepted' });
  await progress.locator('summary').click();
  const weldedSoFar = async () =>
    Number(await progress.locator('tbody tr').last().locator('td').nth(2).innerText());
  const before = await weldedSoFar();
  // (On an ISO of its own: the seed's ISOs may be in released packages, whose welds stay.)
  const iso = await request(port, {
    method: 'POST',
    path: '/isos',
    host,
    headers: { authorization: `Bearer ${token}` },
    body: { isoNumber: 'LIVE-ISO', lineNumber: 'LIVE-LINE' },
  });
  t.is(iso.status, 201, iso.text);
  const made = await request(port, {
    method: 'POST',
    path: '/welds',
    host,
    headers: { authorization: `Bearer ${token}` },
    body: {
      isoId: (iso.json as { id: string }).id,
      weldNumber: 'LIVE-1',
      type: 'BW',
      size: 4,
      weldedOn: new Date().toISOString().slice(0, 10),
    },
  });
  t.is(made.status, 201, made.text);
  // (Read again until it moves: the page's CSP forbids the string functions waitForFunction runs.)
  const deadline = Date.now() + 15_000;
  while ((await weldedSoFar()) !== before + 1 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.is(await weldedSoFar(), before + 1);

  // On a phone the charts stack, each with its table.
  await page.setViewportSize(PHONE);
  await screenshot(page, 'dashboard-phone');
  t.deepEqual(problems, []);
});

test('an inspector is not offered the dashboard, and the route says so', async (t) => {
  const { target } = await migratedDatabase(t);
  const { port } = await startServer(t, target);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const origin = `http://127.0.0.1:${port}`;
  await addTenant(owner, { slug: 'site', name: 'Site', origins: [origin] });
  await addRoleUsers(owner, 'site');
  const context = await browser().newContext({ baseURL: origin, viewport: PHONE });
  t.teardown(() => context.close());
  const page = await context.newPage();
  await page.goto('/app/');
  await signInToApp(page, 'inspector', PASSWORD);
  await page.getByRole('link', { name: 'Welds' }).waitFor();
  t.is(await page.getByRole('link', { name: 'Dashboard' }).count(), 0);
  await page.goto('/app/#/dashboard');
  await page.getByText('The dashboard is for engineers and admins.').waitFor();
  t.is(await page.locator('canvas').count(), 0);
});
