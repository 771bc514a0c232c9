// lib.mjs: what every browser test shares: TAP output, the stack it is pointed at (SBX_URL and
// SBX_TOKEN, exported by tests/lib/harness.sh --exec; without them the test SKIPs), and one
// headless Chromium (Debian's, with the flags these machines need) whose pages report CSP
// violations and script errors into `problems`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const top = path.resolve(new URL('../..', import.meta.url).pathname);
export const base = (process.env.SBX_URL || '').replace(/\/$/, '');
export const token = process.env.SBX_TOKEN || '';
export const shots = process.env.SCREENSHOTS || path.join(top, 'build/test-logs/screenshots');
export const LAPTOP = { width: 1366, height: 768 };
export const PHONE = { width: 390, height: 844 };

const tap = { n: 0, failed: 0 };
export function ok(cond, desc, detail) {
  tap.n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${tap.n} - ${desc}`);
  if (!cond) {
    tap.failed++;
    if (detail !== undefined) console.log(`#   ${String(detail).split('\n').join('\n#   ')}`);
  }
  return cond;
}
export function skip(desc, why) {
  tap.n++;
  console.log(`ok ${tap.n} - ${desc} # SKIP ${why}`);
}
export const diag = (msg) => console.log(`# ${msg}`);
export const failures = () => tap.failed;

// A test step: an exception fails it (with its stack) instead of ending the test.
export async function step(desc, fn) {
  try {
    await fn();
  } catch (err) {
    ok(false, desc, err.stack || err);
  }
}

// Replaces the playground editor's text, as a paste (typing would trigger the editor's
// auto-indent and bracket closing).
export async function setCode(page, code) {
  await page.click('.cm-content');
  await page.keyboard.press('ControlOrMeta+a');
  await page.locator('.cm-content').evaluate((node, text) => {
    const data = new DataTransfer();
    data.setData('text/plain', text);
    node.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, code);
}

// Problems seen on any watched page: CSP violations and uncaught page errors.
export const problems = [];
export function watch(page) {
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => d.accept()); // confirm() before deletes, discards and restarts
  return page;
}

// The browser: SKIPs the whole test (exit 0) without a stack to point at. Returns the context,
// its first page (watched) and finish(code), which closes it, removes the profile and exits.
export async function launch(options = {}) {
  if (!base || !token) {
    console.log('1..0 # SKIP SBX_URL and SBX_TOKEN are not set (run through tests/lib/harness.sh --exec)');
    process.exit(0);
  }
  fs.mkdirSync(shots, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    ignoreHTTPSErrors: true, // the harness's certificate is self-signed
    viewport: LAPTOP,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-quic'],
    ...options,
  });
  const page = watch(context.pages()[0] || await context.newPage());
  async function finish(code) {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
    process.exit(code);
  }
  return { context, page, finish };
}

// Ends the test: the page-problems check, the plan, and the exit status.
export async function done(finish) {
  ok(problems.length === 0, 'no CSP violation or script error on the page', problems.join('\n'));
  console.log(`1..${tap.n}`);
  await finish(tap.failed ? 1 : 0);
}
