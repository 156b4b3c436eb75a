// The weld map (issue F20) in a real browser: an ISO's drawing on its screen, with a mark per weld
// placed on it. An engineer uploads a PDF drawing from the ISO's screen (POST /attachments, then
// PATCH /isos/{id}), and an inspector who has the screen open sees it come, drawn by pdf.js; they
// place two welds by tapping the drawing (stored where tapped), and each mark wears its weld's
// status colours; a colleague's status change recolours a mark and a place set over REST moves
// one, live; a mark opens its weld. Offline the drawing opens from the service worker's copies,
// a weld placed there shows at once as waiting and reaches the service when the network returns.
// On a phone a PNG drawing set over REST shows, a weld is placed by keyboard alone, and a viewer
// sees the marks but is offered no placing. A two-page PDF shows each page's marks only; a
// drawing that could not be read comes when the network returns. No CSP
// violation or script error anywhere; axe finds nothing serious; screenshots kept.
import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { PDFDocument, PDFName, rgb, StandardFonts } from 'pdf-lib';
import type { Page } from 'playwright-core';
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
import { bearerClient, request, type Client } from '../helpers/http.ts';
import { startServer } from '../helpers/server.ts';

const browser = browserForTests(test);

interface Weld {
  id: string;
  weldNumber: string;
  status: string;
  mapPage: number | null;
  mapX: number | null;
  mapY: number | null;
}

/** A tenant with one ISO of `welds` welds (W1, W2, ...), made over REST by an engineer. */
async function world(t: ExecutionContext, welds: number) {
  t.timeout(180_000);
  const { target } = await migratedDatabase(t);
  const { port } = await startServer(t, target);
  const owner = await ownerClient(target);
  t.teardown(() => owner.end());
  const origin = `http://127.0.0.1:${port}`;
  const host = `127.0.0.1:${port}`;
  await addTenant(owner, { slug: 'site', name: 'Site', origins: [origin] });
  await addRoleUsers(owner, 'site');
  const engineer = bearerClient(
    port,
    host,
    (await login(port, host, 'engineer')).json.accessToken as string,
  );
  const made = (res: Awaited<ReturnType<Client['post']>>, what: string) => {
    if (res.status !== 201) throw new Error(`${what}: ${res.status} ${res.text}`);
    return res.json as { id: string };
  };
  const iso = made(
    await engineer.post('/isos', { isoNumber: 'ISO-MAP-1', lineNumber: '6"-P-1001' }),
    'the ISO',
  );
  const ids: string[] = [];
  for (let n = 1; n <= welds; n++) {
    const body = { isoId: iso.id, weldNumber: `W${n}`, type: 'BW', size: 6 };
    ids.push(made(await engineer.post('/welds', body), `weld W${n}`).id);
  }
  const weld = async (id: string) => (await engineer.get(`/welds/${id}`)).json as Weld;

  /** A signed-in page of a new browser context; `problems` gathers script errors and CSP reports. */
  const open = async (
    role: string,
    viewport = DESKTOP,
    serviceWorkers: 'allow' | 'block' = 'allow',
  ) => {
    const context = await browser().newContext({
      baseURL: origin,
      viewport,
      serviceWorkers,
    });
    t.teardown(() => context.close());
    const page = await context.newPage();
    const problems: string[] = [];
    watchPage(page, problems);
    await page.goto('/app/');
    await signInToApp(page, role, PASSWORD);
    return { context, page, problems };
  };
  return { port, host, isoId: iso.id, weldIds: ids, engineer, weld, open };
}

/** An ISO drawing as a CAD program prints one: a frame, a pipe route, dimensions, a title block. */
async function drawingPdf(pages = 1): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let n = 1; n <= pages; n++) {
    const page = doc.addPage([1190, 842]); // A3 landscape, in points
    page.drawRectangle({
      x: 20,
      y: 20,
      width: 1150,
      height: 802,
      borderColor: rgb(0, 0, 0),
      borderWidth: 2,
    });
    const route = [
      [150, 650],
      [550, 650],
      [550, 300],
      [950, 300],
      [950, 150],
    ] as const;
    for (let i = 1; i < route.length; i++) {
      const [x1, y1] = route[i - 1]!;
      const [x2, y2] = route[i]!;
      page.drawLine({ start: { x: x1, y: y1 }, end: { x: x2, y: y2 }, thickness: 6 });
    }
    page.drawText(`6"-P-1001  ISO-MAP-1  sheet ${n} of ${pages}`, {
      x: 800,
      y: 60,
      size: 20,
      font,
    });
    page.drawText('ELBOW 90 LR', { x: 560, y: 660, size: 14, font, color: rgb(0.2, 0.2, 0.6) });
    // A revision box in a spot colour whose tint is a PostScript function: pdf.js, told not to
    // use eval (the CSP refuses it), interprets the function rather than compiling it.
    const tint = doc.context.register(
      doc.context.stream('{ dup 0.2 mul exch dup 0.4 mul exch 0.9 mul }', {
        FunctionType: 4,
        Domain: [0, 1],
        Range: [0, 1, 0, 1, 0, 1],
      }),
    );
    page.node
      .Resources()!
      .set(
        PDFName.of('ColorSpace'),
        doc.context.obj({ Spot: ['Separation', PDFName.of('TitleBlue'), 'DeviceRGB', tint] }),
      );
    page.node.addContentStream(
      doc.context.register(doc.context.stream('q /Spot cs 1 scn 40 40 300 50 re f Q')),
    );
  }
  return Buffer.from(await doc.save());
}

/** A PNG drawing, drawn by the browser (an SVG's screenshot). */
async function drawingPng(): Promise<Buffer> {
  const context = await browser().newContext({
    viewport: { width: 900, height: 600 },
  });
  try {
    const page = await context.newPage();
    await page.setContent(
      `<body style="margin:0;background:#fff"><svg width="900" height="600">
        <rect x="10" y="10" width="880" height="580" fill="none" stroke="#000" stroke-width="3"/>
        <polyline points="100,150 450,150 450,450 800,450" fill="none" stroke="#000" stroke-width="8"/>
        <text x="620" y="560" font-size="22">ISO-MAP-1 (scan)</text></svg></body>`,
    );
    return await page.screenshot();
  } finally {
    await context.close();
  }
}

/** POST /attachments as a browser would send it: multipart/form-data, the owner, the file. */
async function attach(
  w: Awaited<ReturnType<typeof world>>,
  file: { name: string; type: string; bytes: Buffer },
): Promise<{ id: string; contentType: string }> {
  const boundary = `----weld-map-${randomUUID()}`;
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="isoId"\r\n\r\n${w.isoId}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\n` +
        `Content-Type: ${file.type}\r\n\r\n`,
    ),
    file.bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const token = (await login(w.port, w.host, 'engineer')).json.accessToken as string;
  const res = await request(w.port, {
    method: 'POST',
    path: '/attachments',
    host: w.host,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
    body,
  });
  if (res.status !== 201) throw new Error(`POST /attachments: ${res.status} ${res.text}`);
  return res.json;
}

async function setDrawing(w: Awaited<ReturnType<typeof world>>, drawingId: string) {
  const res = await w.engineer.patch(`/isos/${w.isoId}`, { drawingId });
  if (res.status !== 200) throw new Error(`PATCH /isos: ${res.status} ${res.text}`);
}

const isoScreen = (isoId: string) => `/app/#/welds?isoId=${isoId}`;

/** Waits until the canvas shows page `page` of the drawing. */
const drawn = async (page: Page, n = 1) => {
  const canvas = page.locator(`canvas[data-drawn="${n}"]`);
  await canvas.waitFor({ timeout: 20_000 });
  return canvas;
};

/** The share of the canvas's pixels that are ink (dark), not paper. */
const inkOf = async (page: Page): Promise<number> =>
  await page.evaluate(`(() => {
    const canvas = document.querySelector('canvas[data-drawn]');
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] + data[i + 1] + data[i + 2] < 384) ink++;
    return ink / (data.length / 4);
  })()`);

/** Taps the drawing at a fraction of its width and height. */
async function tapDrawing(page: Page, x: number, y: number) {
  const canvas = page.locator('canvas[data-drawn]');
  const box = (await canvas.boundingBox())!;
  await canvas.click({ position: { x: box.width * x, y: box.height * y } });
}

/** Picks a weld to place (its button among the unplaced) and taps the drawing there. */
async function placeByTap(page: Page, weldNumber: string, x: number, y: number) {
  await page.getByRole('button', { name: weldNumber, exact: true }).click();
  await page
    .getByRole('status')
    .filter({ hasText: `Tap the drawing where ${weldNumber} is` })
    .waitFor();
  await tapDrawing(page, x, y);
}

const mark = (page: Page, weldId: string) => page.locator(`a.marker[data-weld="${weldId}"]`);

/** Where a mark's centre is on the drawing, as fractions of its width and height. */
async function markAt(page: Page, weldId: string) {
  const sheet = (await page.locator('canvas[data-drawn]').boundingBox())!;
  const box = (await mark(page, weldId).boundingBox())!;
  return {
    x: (box.x + box.width / 2 - sheet.x) / sheet.width,
    y: (box.y + box.height / 2 - sheet.y) / sheet.height,
  };
}

/** The colours a mark wears, and those of its weld's status badge in the list below. */
async function markColours(page: Page, weldId: string) {
  const colours = (selector: string) =>
    page.evaluate<string>(`(() => {
      const style = getComputedStyle(document.querySelector('${selector}'));
      return style.color + ' on ' + style.backgroundColor;
    })()`);
  return {
    mark: await colours(`a.marker[data-weld="${weldId}"]`),
    badge: await colours(`tr[data-weld="${weldId}"] .status`),
  };
}

/** Waits until an expression is true in the page (waitForFunction would need eval: the CSP). */
async function until(page: Page, expression: string) {
  for (let i = 0; i < 100; i++) {
    if (await page.evaluate<boolean>(`Boolean(${expression})`)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`never true: ${expression}`);
}

/** Reads the weld over REST until `done` says so (the app's requests are on their way). */
async function eventually(
  w: Awaited<ReturnType<typeof world>>,
  id: string,
  done: (weld: Weld) => boolean,
): Promise<Weld> {
  let weld = await w.weld(id);
  for (let i = 0; i < 100 && !done(weld); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    weld = await w.weld(id);
  }
  return weld;
}

const near = (t: ExecutionContext, actual: number | null, expected: number, what: string) =>
  t.true(actual !== null && Math.abs(actual - expected) < 0.01, `${what}: ${actual} ~ ${expected}`);

test.serial(
  'an engineer uploads the drawing; an inspector places welds on it, sees them move and recolour live, opens one, and places one offline',
  async (t) => {
    const w = await world(t, 4);
    const [w1, w2, w3, w4] = w.weldIds as [string, string, string, string];

    // The inspector has the ISO open before it has a drawing: a plain word, no upload.
    const inspector = await w.open('inspector');
    const page = inspector.page;
    await page.goto(isoScreen(w.isoId));
    await page.getByRole('heading', { name: 'Welds on ISO-MAP-1' }).waitFor();
    await page.getByText('This ISO has no drawing yet. An engineer can add one.').waitFor();
    t.is(await page.locator('input[type=file]').count(), 0);
    await page.getByText('Live', { exact: true }).waitFor();

    // The engineer uploads it on the same screen.
    const engineer = await w.open('engineer');
    await engineer.page.goto(isoScreen(w.isoId));
    await engineer.page.getByText('This ISO has no drawing yet: add one below.').waitFor();
    await engineer.page.getByLabel('The drawing (PDF, PNG or JPEG)').setInputFiles({
      name: 'ISO-MAP-1 rev 0.pdf',
      mimeType: 'application/pdf',
      buffer: await drawingPdf(),
    });
    await engineer.page.getByRole('button', { name: 'Upload the drawing' }).click();
    await drawn(engineer.page);
    const iso = (await w.engineer.get(`/isos/${w.isoId}`)).json as { drawingId: string | null };
    t.truthy(iso.drawingId);
    const attachment = (await w.engineer.get(`/attachments/${iso.drawingId}`)).json;
    t.like(attachment, {
      fileName: 'ISO-MAP-1 rev 0.pdf',
      contentType: 'application/pdf',
      isoId: w.isoId,
    });
    t.deepEqual(engineer.problems, []);

    // The inspector's screen shows it without a reload, drawn: lines and text, on white.
    await drawn(page);
    const ink = await inkOf(page);
    t.true(ink > 0.002 && ink < 0.2, `ink on the drawing: ${ink}`);
    t.is(await page.locator('a.marker').count(), 0);

    // Two welds placed by tapping the drawing: stored where tapped.
    await placeByTap(page, 'W1', 0.25, 0.4);
    await mark(page, w1).waitFor();
    await placeByTap(page, 'W2', 0.7, 0.62);
    await mark(page, w2).waitFor();
    const one = await eventually(w, w1, (x) => x.mapPage !== null);
    const two = await eventually(w, w2, (x) => x.mapPage !== null);
    t.is(one.mapPage, 1);
    near(t, one.mapX, 0.25, 'W1 x');
    near(t, one.mapY, 0.4, 'W1 y');
    t.is(two.mapPage, 1);
    near(t, two.mapX, 0.7, 'W2 x');
    near(t, two.mapY, 0.62, 'W2 y');

    // Each mark is where its weld is, named and coloured as its status badge.
    for (const [id, x, y] of [
      [w1, 0.25, 0.4],
      [w2, 0.7, 0.62],
    ] as const) {
      const at = await markAt(page, id);
      near(t, at.x, x, 'mark x');
      near(t, at.y, y, 'mark y');
      t.regex((await mark(page, id).getAttribute('class'))!, /\bstatus PENDING\b/);
      const { mark: worn, badge } = await markColours(page, id);
      t.is(worn, badge);
    }
    t.is(await page.getByRole('link', { name: 'Weld W1, PENDING' }).count(), 1);
    t.is(await page.getByRole('button', { name: 'W1', exact: true }).count(), 0, 'placed');

    // Live: a colleague rejects W1 (the mark turns red) and places W3 over REST (a mark comes).
    const rejected = await w.engineer.patch(`/welds/${w1}/status`, {
      status: 'REJECTED',
      reason: 'RT: slag inclusion',
    });
    t.is(rejected.status, 200, rejected.text);
    await page.locator(`a.marker.REJECTED[data-weld="${w1}"]`).waitFor({ timeout: 10_000 });
    const red = await markColours(page, w1);
    t.is(red.mark, red.badge);
    t.notDeepEqual(red, await markColours(page, w2));
    const placed = await w.engineer.patch(`/welds/${w3}`, { mapPage: 1, mapX: 0.5, mapY: 0.2 });
    t.is(placed.status, 200, placed.text);
    await mark(page, w3).waitFor({ timeout: 10_000 });
    const at3 = await markAt(page, w3);
    near(t, at3.x, 0.5, 'W3 x');
    near(t, at3.y, 0.2, 'W3 y');
    // ... and moves it.
    t.is((await w.engineer.patch(`/welds/${w3}`, { mapX: 0.55, mapY: 0.25 })).status, 200);
    await page
      .locator(`a.marker[data-weld="${w3}"][style*="left: 55%"][style*="top: 25%"]`)
      .waitFor({ timeout: 10_000 });
    await assertAccessible(t, page, 'the weld map, desktop');
    await screenshot(page, 'weld-map-desktop');

    // A mark opens its weld.
    await page.getByRole('link', { name: 'Weld W2, PENDING' }).click();
    await page.getByRole('heading', { name: 'Weld W2' }).waitFor();
    t.regex(page.url(), new RegExp(`#/welds/${w2}$`));
    t.regex(await page.locator('dl.fields').innerText(), /On the drawing\s+page 1/);

    // Offline: the drawing comes from the service worker's copies (read through it once).
    await page.evaluate('navigator.serviceWorker.ready.then(() => true)');
    await page.goto(isoScreen(w.isoId));
    await page.reload();
    await drawn(page);
    t.true(await page.evaluate<boolean>('navigator.serviceWorker.controller !== null'));
    await inspector.context.setOffline(true);
    await page.reload();
    await page.getByText('Offline', { exact: true }).waitFor();
    await drawn(page);
    t.true((await inkOf(page)) > 0.002, 'drawn offline');
    await mark(page, w2).waitFor();

    // A weld placed offline shows at once, waiting; nothing is sent yet.
    await placeByTap(page, 'W4', 0.4, 0.75);
    const unsent = page.getByRole('link', {
      name: 'Weld W4, PENDING, placed offline, not sent yet',
    });
    await unsent.waitFor();
    t.regex((await unsent.getAttribute('class'))!, /\bunsent\b/);
    await page.getByText('1 change waiting to be sent: W4 placed on the drawing').waitFor();
    const at4 = await markAt(page, w4);
    near(t, at4.x, 0.4, 'W4 x, offline');
    t.is((await w.weld(w4)).mapPage, null, 'not sent while offline');

    // Back online it is sent (once), and the mark stops waiting.
    await inspector.context.setOffline(false);
    await page.locator('.banner.offline').waitFor({ state: 'detached', timeout: 15_000 });
    const four = await eventually(w, w4, (x) => x.mapPage !== null);
    t.is(four.mapPage, 1);
    near(t, four.mapX, 0.4, 'W4 x');
    near(t, four.mapY, 0.75, 'W4 y');
    await page.getByRole('link', { name: 'Weld W4, PENDING', exact: true }).waitFor();
    t.is(four.status, 'PENDING');
    t.deepEqual(inspector.problems, []);
  },
);

test.serial(
  'on a phone a PNG drawing shows; a weld is placed by keyboard alone; a viewer sees the marks and is offered no placing',
  async (t) => {
    const w = await world(t, 3);
    const [w1, w2] = w.weldIds as [string, string, string];
    const png = await attach(w, {
      name: 'iso-map-1.png',
      type: 'image/png',
      bytes: await drawingPng(),
    });
    t.is(png.contentType, 'image/png');
    await setDrawing(w, png.id);
    t.is(
      (await w.engineer.patch(`/welds/${w2}`, { mapPage: 1, mapX: 0.2, mapY: 0.25 })).status,
      200,
    );

    const { page, problems } = await w.open('inspector', PHONE);
    await page.goto(isoScreen(w.isoId));
    await drawn(page);
    const ink = await inkOf(page);
    t.true(ink > 0.002 && ink < 0.3, `ink on the drawing: ${ink}`);
    await mark(page, w2).waitFor();

    // By keyboard: the weld's button, then the aim (focused), moved by the arrow keys, Enter.
    await page.getByRole('button', { name: 'W1', exact: true }).focus();
    await page.keyboard.press('Enter');
    const aim = page.getByRole('button', { name: 'Place W1 here (the arrow keys move this aim)' });
    await aim.waitFor();
    await until(page, `document.activeElement.className === 'aim'`);
    for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Shift+ArrowDown');
    await page.keyboard.press('Enter');
    await mark(page, w1).waitFor();
    const one = await eventually(w, w1, (x) => x.mapPage !== null);
    t.deepEqual([one.mapPage, one.mapX, one.mapY], [1, 0.6, 0.6]);
    // The focus is on the new mark, and the mark is where the aim was.
    await until(page, `document.activeElement.id === 'mark-${w1}'`);
    const at = await markAt(page, w1);
    near(t, at.x, 0.6, 'mark x');
    near(t, at.y, 0.6, 'mark y');

    // Zoomed in, the drawing scrolls sideways and the marks stay where their welds are.
    await page.getByRole('button', { name: 'Zoom in' }).click();
    await page.getByText('150 %').waitFor();
    await until(
      page,
      `document.querySelector('.sheet').getBoundingClientRect().width >
        document.querySelector('.map-view').clientWidth * 1.4`,
    );
    const zoomed = await markAt(page, w2);
    near(t, zoomed.x, 0.2, 'zoomed mark x');
    near(t, zoomed.y, 0.25, 'zoomed mark y');
    await page.getByRole('button', { name: 'Zoom out' }).click();
    await page.getByText('100 %').waitFor();
    await assertAccessible(t, page, 'the weld map, phone');
    await screenshot(page, 'weld-map-phone');
    t.deepEqual(problems, []);

    const viewer = await w.open('viewer', PHONE);
    await viewer.page.goto(isoScreen(w.isoId));
    await drawn(viewer.page);
    await mark(viewer.page, w1).waitFor();
    await mark(viewer.page, w2).waitFor();
    t.is(await viewer.page.getByText('Place a weld on the drawing').count(), 0);
    t.is(await viewer.page.getByRole('button', { name: 'W3', exact: true }).count(), 0);
    t.deepEqual(viewer.problems, []);
  },
);

test.serial(
  "a drawing of two pages: a page at a time, each with its own welds' marks; moving a weld to the other page; a drawing not read comes when the network returns",
  async (t) => {
    const w = await world(t, 2);
    const [w1, w2] = w.weldIds as [string, string];
    const pdf = await attach(w, {
      name: 'two sheets.pdf',
      type: 'application/pdf',
      bytes: await drawingPdf(2),
    });
    await setDrawing(w, pdf.id);
    t.is(
      (await w.engineer.patch(`/welds/${w2}`, { mapPage: 2, mapX: 0.3, mapY: 0.3 })).status,
      200,
    );

    const { page, problems } = await w.open('inspector');
    await page.goto(isoScreen(w.isoId));
    await drawn(page, 1);
    t.is(await page.locator('a.marker').count(), 0, 'no weld on page 1');
    await page.getByLabel('Page', { exact: true }).selectOption('2');
    await drawn(page, 2);
    await mark(page, w2).waitFor();
    t.is(await page.locator('a.marker').count(), 1);

    // W1 placed on page 2, then moved to page 1.
    await placeByTap(page, 'W1', 0.6, 0.5);
    await mark(page, w1).waitFor();
    t.like(await eventually(w, w1, (x) => x.mapPage !== null), { mapPage: 2 });
    await page.getByLabel('Page', { exact: true }).selectOption('1');
    await drawn(page, 1);
    await page.getByText('Move a weld (2 on the drawing)').click();
    await page.getByRole('button', { name: 'W1 (page 2)' }).click();
    await drawn(page, 2); // picking a placed weld shows its page
    await page.getByLabel('Page', { exact: true }).selectOption('1');
    await drawn(page, 1);
    await tapDrawing(page, 0.1, 0.9);
    await mark(page, w1).waitFor();
    const moved = await eventually(w, w1, (x) => x.mapPage === 1);
    t.is(moved.mapPage, 1);
    near(t, moved.mapX, 0.1, 'W1 x');
    near(t, moved.mapY, 0.9, 'W1 y');
    t.is(await mark(page, w2).count(), 0, 'W2 is on page 2');
    t.deepEqual(problems, []);

    // A drawing whose bytes cannot be read (the network fails as they come, and no copy is kept:
    // no service worker here) says so, once, and comes when the network is back.
    const other = await w.open('inspector', DESKTOP, 'block');
    const reads: string[] = [];
    other.page.on('request', (r) => r.url().endsWith('/content') && reads.push(r.url()));
    await other.page.route('**/attachments/*/content', (route) => route.abort());
    await other.page.goto(isoScreen(w.isoId));
    await other.page
      .getByRole('alert')
      .filter({ hasText: 'The drawing could not be shown' })
      .waitFor();
    await other.page.waitForTimeout(1000);
    t.is(reads.length, 1, 'read once, not again and again');
    await other.page.unroute('**/attachments/*/content');
    await other.context.setOffline(true);
    await other.page.getByText('Offline', { exact: true }).waitFor();
    await other.context.setOffline(false);
    await drawn(other.page, 1);
    await mark(other.page, w1).waitFor();
    t.is(await other.page.getByText('The drawing could not be shown').count(), 0);
    t.deepEqual(other.problems, []);
  },
);
