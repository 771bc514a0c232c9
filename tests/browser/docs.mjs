// docs.mjs: the API reference page (/docs/) in headless Chromium against the stack at SBX_URL
// (tests/lib/harness.sh --exec); prints TAP. It renders under the site's CSP (no violation, no
// page error), shows the document's operations with their examples, its in-page links lead to
// the operation, and the playground's footer link opens it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const base = (process.env.SBX_URL || '').replace(/\/$/, '');
let n = 0, failed = 0;
function ok(cond, desc, detail) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${desc}`);
  if (!cond) {
    failed++;
    if (detail !== undefined) console.log(`#   ${String(detail).split('\n').join('\n#   ')}`);
  }
  return cond;
}
if (!base) {
  console.log('1..0 # SKIP SBX_URL is not set (run through tests/lib/harness.sh --exec)');
  process.exit(0);
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  ignoreHTTPSErrors: true, // the harness's certificate is self-signed
  viewport: { width: 1366, height: 768 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-quic'],
});
const problems = [];
const offsite = [];
const page = context.pages()[0] || await context.newPage();
page.on('console', (m) => {
  if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
});
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('request', (r) => { if (!r.url().startsWith(base) && !/^(data|blob):/.test(r.url())) offsite.push(r.url()); });

try {
  await page.goto(`${base}/docs/`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.body.innerText.includes('/v1/execute'), null, { timeout: 30000 });
  const text = await page.evaluate(() => document.body.innerText);
  ok(text.includes('sbx: sandboxed code execution'), 'the page shows the document\'s title');
  ok(text.includes('Run code statelessly') && text.includes('Create a session'),
    'it lists the operations', text.slice(0, 300));
  const link = page.locator('a[href$="/other/execute"]').first();
  if (await link.count()) {
    const href = await link.getAttribute('href');
    await link.click();
    await page.waitForTimeout(500);
    ok(new URL(page.url()).pathname === '/docs/' && new URL(page.url()).hash === '#/other/execute',
      `the side menu's link goes to the operation (/docs/#${href}: the page routes in the fragment)`, page.url());
    await page.waitForFunction(() => /print\(1\)/.test(document.body.innerText), null, { timeout: 20000 })
      .then(() => ok(true, 'the operation shows its real request example (print(1))'),
        () => ok(false, 'the operation shows its real request example (print(1))'));
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(() => document.body.innerText.includes('Run code statelessly'), null, { timeout: 30000 })
      .then(() => ok(true, `a reload of ${href} gets the page again`),
        () => ok(false, `a reload of ${href} gets the page again`));
  } else {
    ok(false, 'the side menu links an execute operation',
      (await page.$$eval('a[href]', (a) => a.map((x) => x.getAttribute('href')))).slice(0, 20).join('\n'));
  }
  const dir = process.env.SCREENSHOTS;
  if (dir) {
    fs.mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: path.join(dir, 'docs-reference.png') });
  }
  ok(problems.length === 0, 'no CSP violation and no page error', problems.join('\n'));
  ok(offsite.length === 0, 'nothing is loaded from another origin', offsite.join('\n'));

  await page.goto(`${base}/index.html#token=${encodeURIComponent(process.env.SBX_TOKEN || '')}`, { waitUntil: 'load' });
  const [docs] = await Promise.all([context.waitForEvent('page', { timeout: 20000 }), page.click('#docs-link')]);
  await docs.waitForLoadState('load');
  ok(new URL(docs.url()).pathname === '/docs/', 'the playground\'s footer link opens /docs/', docs.url());
} catch (e) {
  ok(false, 'the docs page test ran to its end', e.stack || e);
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
