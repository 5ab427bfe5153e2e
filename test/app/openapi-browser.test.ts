// Swagger UI in a real browser (spec, "Machine-readable description and explorer"): headless
// Chromium (Debian's `chromium`, which .ci/run installs) opens /docs/swagger-ui without a
// trailing slash, sends the key header the way a browser extension would, authorizes with the
// UI's own Authorize dialog and runs "Try it out".
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import t from 'tap';
import { startTestServer } from '../support/server.ts';

/** LABDATA_CHROMIUM, else the first Chromium on PATH. No browser is a failure, never a skip. */
function chromiumPath(): string {
  const candidates = process.env.LABDATA_CHROMIUM
    ? [process.env.LABDATA_CHROMIUM]
    : ['chromium', 'chromium-browser', 'google-chrome'].flatMap((name) => (process.env.PATH ?? '').split(':').map((dir) => path.join(dir, name)));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // try the next one
    }
  }
  throw new Error('no Chromium found: install the Debian package `chromium` (.ci/run does) or set LABDATA_CHROMIUM');
}

const server = await startTestServer(t);
const member = await server.member(await server.organization());
await server.post('/api/v1/projects', { code: 'UI-1', name: 'Seen in the explorer', description: 'x' }, { key: member.key });

const browser = await chromium.launch({
  executablePath: chromiumPath(),
  // Root in CI containers cannot use Chromium's sandbox.
  args: ['--no-sandbox'],
});
t.teardown(() => browser.close());

/** A page whose requests under /docs carry the key, as a header-adding browser extension does. */
async function docsPage(): Promise<{ page: Page; failures: string[]; apiKeys: (string | undefined)[]; documents: string[] }> {
  // The test server's certificate is trusted by the test processes, not by this browser profile.
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 1600 } });
  const page = await context.newPage();
  const failures: string[] = [];
  const apiKeys: (string | undefined)[] = [];
  const documents: string[] = [];
  await page.route('**/docs/**', (route) => route.continue({ headers: { ...route.request().headers(), 'x-api-key': member.key } }));
  page.on('response', (res) => {
    if (res.status() >= 400) failures.push(`${res.status()} ${res.url()}`);
    if ((res.headers()['content-type'] ?? '').startsWith('application/json') && new URL(res.url()).pathname.startsWith('/docs/')) documents.push(new URL(res.url()).pathname);
  });
  // A script or style the page's content security policy blocks shows up here.
  page.on('console', (message) => {
    if (message.type() === 'error') failures.push(`console: ${message.text()}`);
  });
  page.on('request', (req) => {
    if (new URL(req.url()).pathname.startsWith('/api/v1/')) apiKeys.push(req.headers()['x-api-key']);
  });
  return { page, failures, apiKeys, documents };
}

t.test('the explorer renders every operation and "Try it out" answers 200', async (t) => {
  const { page, failures, apiKeys, documents } = await docsPage();
  const response = await page.goto(server.url + '/docs/swagger-ui');
  t.equal(response?.status(), 200, 'the page at the spec address, without a trailing slash');
  await page.locator('.opblock').nth(99).waitFor({ timeout: 60_000 });
  const rendered = await page.locator('.opblock').count();
  t.ok(rendered >= 100, `${rendered} operations rendered`);
  t.same(failures, [], 'every script, style and the document loaded');
  t.same(documents, ['/docs/api-docs/public-v1'], 'the document is the spec\'s OpenAPI address (group public-v1)');

  // Authorize with the X-API-KEY scheme through the UI's dialog.
  await page.locator('.auth-wrapper button.authorize').click();
  const scheme = page.locator('.auth-container', { hasText: 'X-API-KEY' });
  await scheme.locator('input').fill(member.key);
  await scheme.locator('button.authorize').click();
  await page.locator('.modal-ux button.btn-done').first().click();

  const list = page.locator('#operations-Projects-list_projects');
  await list.locator('.opblock-summary').first().click();
  await list.locator('button.try-out__btn').click();
  await list.locator('button.execute').click();
  const status = list.locator('.live-responses-table .response .response-col_status').first();
  await status.waitFor({ timeout: 30_000 });
  t.equal((await status.innerText()).trim(), '200', 'Try it out on GET /api/v1/projects shows 200');
  t.match(await list.locator('.live-responses-table').innerText(), 'Seen in the explorer', 'with the page of projects');
  t.same(apiKeys, [member.key], 'the call carried the key given to Authorize');

  await status.scrollIntoViewIfNeeded();
  const screenshot = path.join(t.testdir(), 'swagger-ui.png');
  await page.screenshot({ path: screenshot, fullPage: false });
  t.ok(statSync(screenshot).size > 10_000, `screenshot written to ${screenshot}`);
});

t.test('a query string on the explorer address does not stop it from rendering', async (t) => {
  const { page, failures, documents } = await docsPage();
  const response = await page.goto(server.url + '/docs/swagger-ui?urls.primaryName=public-v1');
  t.equal(response?.status(), 200);
  await page.locator('.opblock').nth(99).waitFor({ timeout: 60_000 });
  t.same(failures, []);
  t.same(documents, ['/docs/api-docs/public-v1']);
});
