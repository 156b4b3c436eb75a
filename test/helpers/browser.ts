// A real browser for the web app's tests: Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH),
// driven by playwright-core. Nothing is downloaded: `.ci/run` installs the Debian package, and
// test/run.ts says how when it is missing. Also: the axe-core accessibility check, the screenshot
// folder, and a watch for Content-Security-Policy violations (the app must need none).
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ExecutionContext, TestFn } from 'ava';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where the tests write their screenshots (docs/web-app.md). */
export const SCREENSHOTS = path.resolve(import.meta.dirname, '..', 'browser', 'screenshots');

export const PHONE = { width: 390, height: 844 };
export const TABLET = { width: 820, height: 1180 };
export const DESKTOP = { width: 1280, height: 800 };

/**
 * One Chromium for a test file: launched before its tests, closed after them. Returns how to
 * reach it (it exists once the tests run).
 */
export function browserForTests(test: TestFn): () => Browser {
  let browser: Browser | undefined;
  test.before(async () => {
    browser = await launchBrowser();
  });
  test.after.always(async () => {
    await browser?.close();
  });
  return () => browser!;
}

/** Signs in on the web app's sign-in form (the page is at /app/) and waits for the ISO list. */
export async function signInToApp(page: Page, userName: string, password: string): Promise<void> {
  await page.getByLabel('User name').fill(userName);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'ISOs' }).waitFor();
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    // As root Chromium needs --no-sandbox; the rest keeps it off the (closed) network.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * Collects what goes wrong in a page: script errors and Content-Security-Policy violations
 * (Chromium reports those on the console). The test asserts the list is empty at the end.
 */
export function watchPage(page: Page, problems: string[]): void {
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content.Security.Policy|Refused to/i.test(message.text())) {
      problems.push(`CSP: ${message.text()}`);
    }
  });
}

let axeSource: Promise<string> | undefined;

/**
 * Runs axe-core on the page as it is and fails the test on any serious or critical violation.
 * axe is evaluated through the DevTools protocol, which the page's CSP does not govern (an
 * inline script tag would be refused, as it should be).
 */
export async function assertAccessible(t: ExecutionContext, page: Page, screen: string) {
  axeSource ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(`${await axeSource}\n;0`);
  // Evaluated in the page (the tests' TypeScript has no DOM types).
  const violations = await page.evaluate<string[]>(`axe
    .run(document, { resultTypes: ['violations'] })
    .then((result) => result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.id + ' (' + v.impact + '): ' + v.help + ', ' + v.nodes.length + ' element(s)'))`);
  t.deepEqual(violations, [], `accessibility of ${screen}`);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
