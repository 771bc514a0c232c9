// playground.mjs: drives the playground in headless Chromium against the stack at SBX_URL with the
// token SBX_TOKEN (both exported by tests/lib/harness.sh --exec) and prints TAP. Screenshots of each
// state go to build/test-logs/screenshots/ (SCREENSHOTS overrides).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { base, diag, done, LAPTOP, launch, ok, PHONE, setCode, shots, step, token, top, watch } from './lib.mjs';

const { context, page, finish } = await launch({ acceptDownloads: true });

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

// Replace the editor's text by pasting over a select-all (typing would trigger auto-indent and
// bracket closing; insertText turns runs of spaces into U+00A0).
async function runAndWait(page, how = 'keys') {
  if (how === 'keys') {
    await page.click('.cm-content');
    await page.keyboard.press('ControlOrMeta+Enter');
  } else {
    await page.click('#run');
  }
  await page.waitForSelector('#output .result-head .badge', { timeout: 60000 });
  const text = async (sel) => ((await page.locator(sel).count()) ? page.locator(sel).textContent() : '');
  return {
    status: await page.getAttribute('#output .result-head .badge', 'data-status'),
    stdout: await text('#output .stream-stdout'),
    stderr: await text('#output .stream-stderr'),
  };
}


async function clearOutput(page) {
  await page.evaluate(() => document.getElementById('output').replaceChildren());
}


await step('the page loads with the token from the URL fragment', async () => {
  const res = await page.goto(`${base}/#token=${encodeURIComponent(token)}`, { waitUntil: 'load' });
  ok(res.status() === 200 && /text\/html/.test(res.headers()['content-type'] || ''),
    'GET / from a browser serves the playground HTML', `${res.status()} ${res.headers()['content-type']}`);
  const csp = res.headers()['content-security-policy'] || '';
  ok(/default-src 'self'/.test(csp) && !/unsafe-inline|unsafe-eval/.test(csp),
    "the page is served under a strict CSP (default-src 'self', nothing unsafe)", csp || 'no CSP header');
  await page.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  ok(true, 'the language picker is filled from GET /v1/languages');
  const langs = await page.$$eval('#language option', (o) => o.map((x) => x.value));
  ok(['python', 'bash', 'c', 'cpp'].every((l) => langs.includes(l)) && langs.some((l) => /node|javascript/.test(l)),
    'python, bash, javascript/node, c and cpp are offered', langs.join(' '));
  ok(!page.url().includes('token='), 'the token is removed from the address bar', page.url());
  ok(await page.evaluate(() => Boolean(localStorage.getItem('sbx.token'))), 'the token is kept in localStorage');
  ok(await page.locator('.cm-lineNumbers').isVisible(), 'the editor shows line numbers');
  const load = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource').filter((r) => !r.name.includes('/v1/'));
    return { dcl: Math.round(nav.domContentLoadedEventEnd), files: res.length + 1,
      bytes: res.reduce((n, r) => n + r.transferSize, nav.transferSize) };
  });
  diag(`page load: ${load.files} files, ${Math.round(load.bytes / 1024)} KiB transferred, DOMContentLoaded at ${load.dcl} ms`);
  await shot(page, '01-loaded-laptop');
});

await step('python print', async () => {
  await setCode(page, 'print("hello from the browser test")\n');
  const r = await runAndWait(page, 'keys');
  ok(r.status === 'ok' && r.stdout.includes('hello from the browser test'),
    'Ctrl+Enter runs Python and shows its stdout with the ok badge', JSON.stringify(r));
  const facts = await page.locator('#output .facts').textContent();
  ok(/exit code0/.test(facts) && /wall/.test(facts) && /CPU/.test(facts) && /memory/.test(facts),
    'exit code, wall time, CPU time and memory are shown', facts);
  await page.waitForFunction(() => /ok, exit code 0/.test(document.getElementById('announce').textContent),
    null, { timeout: 20000 }).catch(() => {});
  const said = await page.textContent('#announce');
  ok(/ok, exit code 0/.test(said), 'screen readers are told the verdict in one line', said);
  await shot(page, '02-python-ok');
});

await step('python exception', async () => {
  await clearOutput(page);
  await setCode(page, 'def f():\n    raise ValueError("boom")\nf()\n');
  const r = await runAndWait(page, 'button');
  ok(r.status === 'error' && /Traceback/.test(r.stderr) && /ValueError: boom/.test(r.stderr),
    'an exception shows the error badge and its traceback in stderr', JSON.stringify(r));
  await shot(page, '03-python-traceback');
});

await step('infinite loop', async () => {
  await clearOutput(page);
  await setCode(page, 'while True:\n    pass\n');
  await page.click('.run-options summary');
  await page.fill('#limit-cpu', '99999');
  await page.click('#run');
  await page.waitForSelector('#notice:not([hidden])', { timeout: 20000 });
  const said = await page.textContent('#notice');
  ok(/cpu_ms|CPU/i.test(said) && /\d/.test(said), 'a limit above the maximum gets the server\'s message', said);
  await page.fill('#limit-cpu', '1');
  // A wall limit far above the CPU limit: on a loaded machine 1 s of CPU takes longer than the
  // default wall time, and the check is about the CPU limit.
  await page.fill('#limit-wall', '50');
  const r = await runAndWait(page, 'button');
  const why = await page.textContent('#output .why');
  ok(r.status === 'timeout', 'an infinite loop ends with the timeout badge', JSON.stringify(r));
  ok(/CPU-time limit/.test(why), 'which says the CPU limit (set to 1 s in the options) was hit', why);
  await shot(page, '04-timeout');
  await page.fill('#limit-cpu', '');
  await page.fill('#limit-wall', '');
  await page.click('.run-options summary');
});

await step('truncated output and memory limit', async () => {
  await clearOutput(page);
  await setCode(page, 'print("x" * 200000)\n');
  await runAndWait(page, 'button');
  const note = await page.locator('#output .stream-stdout .truncated').textContent().catch(() => '');
  ok(/stdout was truncated/.test(note), 'output past the cap shows the truncation notice', note);
  await shot(page, '04b-truncated');
  await clearOutput(page);
  await setCode(page, 'x = bytearray(2 * 1024 ** 3)\n');
  const r = await runAndWait(page, 'button');
  ok(r.status === 'memory_limit', 'a program over the memory limit gets the memory-limit badge', JSON.stringify(r));
  await shot(page, '04c-memory-limit');
});

await step('C compile error', async () => {
  await clearOutput(page);
  await page.selectOption('#language', 'c');
  await setCode(page, 'int main(void) { return 0 }\n');
  const r = await runAndWait(page, 'button');
  const compile = (await page.locator('#output .compile').textContent().catch(() => '')) || '';
  ok(r.status === 'compile_error' && /Compile error/.test(compile) && /error/.test(compile),
    'a C syntax error is shown as a compile error with the compiler output', `${r.status} ${compile}`);
  await page.waitForFunction(() => document.getElementById('editor').shadowRoot
    .querySelectorAll('.cm-line span').length >= 3, null, { timeout: 10000 }).catch(() => {});
  const spans = await page.locator('.cm-line span').count();
  ok(spans >= 3, 'C code is syntax-highlighted (its grammar loaded on demand)', `${spans} highlighted spans`);
  await shot(page, '05-compile-error');
  await page.selectOption('#language', 'python');
});

await step('session file', async () => {
  await page.click('#session-new');
  await page.waitForSelector('#session-active:not([hidden])', { timeout: 20000 });
  const sid = await page.textContent('#session-id');
  ok(/^[0-9a-f-]{36}$/.test(sid), 'New session shows a server-made id', sid);
  ok(/in \d+/.test(await page.textContent('#session-expires')), 'the session shows its expiry',
    await page.textContent('#session-expires'));
  await page.click('#file-new');
  await page.fill('#name-input', 'hello.py');
  await page.click('#name-ok');
  await page.waitForSelector('.tree-item[data-path="hello.py"]', { timeout: 20000 });
  ok((await page.textContent('#file-name')) === 'hello.py', 'a new file opens in the editor');
  await setCode(page, 'print("first draft")\n');
  ok(await page.locator('#dirty').isVisible(), 'an edited file is marked unsaved');
  await page.keyboard.press('ControlOrMeta+s');
  await page.waitForSelector('#dirty', { state: 'hidden', timeout: 20000 });
  await page.click('#tab-shell');
  await page.fill('#shell-cmd', 'cat hello.py; ls');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#shell-output .badge', { timeout: 30000 });
  const shell = await page.textContent('#shell-output .stream-stdout');
  ok(shell.includes('print("first draft")') && shell.includes('hello.py'),
    'Ctrl+S saves the file: a shell command in the session sees it', shell);
  await shot(page, '06-session-shell');
  await page.click('#tab-run');
  await setCode(page, 'import sys\nprint("file says", sys.argv[0])\n');
  await clearOutput(page);
  const r = await runAndWait(page, 'button');
  ok(r.status === 'ok' && r.stdout.includes('file says hello.py'),
    'Run runs the open file under its own name in the session', JSON.stringify(r));
  ok(await page.locator('#dirty').isHidden(), 'running the file also saved it');
  await page.click('.tree-item[data-path="hello.py"]');
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 20000 }),
    page.click('#file-download')]);
  const got = fs.readFileSync(await download.path(), 'utf8');
  ok(download.suggestedFilename() === 'hello.py' && got === 'import sys\nprint("file says", sys.argv[0])\n',
    'Download returns the saved bytes', JSON.stringify([download.suggestedFilename(), got]));
  ok(/\d+ B( of [\d.]+ MiB)? in 1 file/.test(await page.textContent('#session-disk')),
    'the session shows its disk use', await page.textContent('#session-disk'));
  await shot(page, '07-session-files');

  await page.click('#folder-new');
  await page.fill('#name-input', 'lib');
  await page.click('#name-ok');
  await page.waitForSelector('.tree-item[data-path="lib"]', { timeout: 20000 });
  await page.setInputFiles('#upload-input', { name: 'data.txt', mimeType: 'text/plain', buffer: Buffer.from('42\n') });
  await page.waitForSelector('.tree-item[data-path="lib/data.txt"]', { timeout: 20000 });
  ok(true, 'New folder makes a folder and Upload puts a file into the selected folder');
  await page.click('.tree-item[data-path="hello.py"]');
  await page.click('#file-rename');
  await page.fill('#name-input', 'lib/main.py');
  await page.click('#name-ok');
  await page.waitForSelector('.tree-item[data-path="lib/main.py"]', { timeout: 20000 });
  ok((await page.textContent('#file-name')) === 'lib/main.py' &&
    (await page.locator('.tree-item[data-path="hello.py"]').count()) === 0,
  'Rename moves the open file and the editor follows it');
  await page.click('.tree-item[data-path="lib/data.txt"]');
  await page.click('#file-delete');
  await page.waitForSelector('.tree-item[data-path="lib/data.txt"]', { state: 'detached', timeout: 20000 });
  ok(true, 'Delete removes a file (after a confirmation)');
  const before = await page.textContent('#session-id');
  await page.click('#session-fork');
  await page.waitForFunction((old) => document.getElementById('session-id').textContent !== old, before, { timeout: 20000 });
  await page.waitForSelector('.tree-item[data-path="lib/main.py"]', { timeout: 20000 });
  ok(true, 'Fork moves to a new session holding a copy of the files');
  await shot(page, '07b-session-forked');
  const forked = await page.textContent('#session-id');
  await page.click('#session-delete');
  await page.waitForSelector('#session-none:not([hidden])', { timeout: 20000 });
  // The original was made after the page loaded: seeing it proves the list was fetched again.
  await page.waitForSelector(`#session-pick option[value="${before}"]`, { state: 'attached', timeout: 10000 })
    .catch(() => {});
  const left = await page.$$eval('#session-pick option', (o) => o.map((x) => x.value));
  ok(!left.includes(forked) && left.includes(before),
    'Delete session removes the fork; the original can still be resumed', left.join(' '));
  await page.selectOption('#session-pick', before);
  await page.click('#session-resume button[type=submit]');
  await page.waitForSelector('.tree-item[data-path="lib/main.py"]', { timeout: 20000 });
  ok((await page.textContent('#session-id')) === before, 'Resume reopens the original session');
});

await step('evaluate', async () => {
  await page.click('#session-leave');
  await page.waitForSelector('#session-none:not([hidden])');
  await setCode(page, 'a, b = map(int, input().split())\nprint(a + b)\n');
  await page.click('#tab-tests');
  const ins = page.locator('#cases .case-in'), outs = page.locator('#cases .case-out');
  await ins.nth(0).fill('1 2');
  await outs.nth(0).fill('3');
  await ins.nth(1).fill('2 2');
  await outs.nth(1).fill('5');
  await page.click('#run-tests');
  await page.waitForSelector('#eval-summary .result-head', { timeout: 60000 });
  await page.waitForSelector('.case-result', { timeout: 10000 });
  const verdicts = await page.$$eval('.case-result [data-passed]', (b) => b.map((x) => x.dataset.passed));
  ok(verdicts.join() === 'true,false', 'one case passes and one fails', verdicts.join());
  const diff = await page.locator('.case-result.fail .diff').textContent();
  ok(/5/.test(diff) && /4/.test(diff), 'the failing case shows the difference of expected and got', diff);
  ok(/1 of 2/.test(await page.textContent('#eval-summary')), 'the summary counts the passes');
  await shot(page, '08-evaluate');

  // jsdiff: inside a changed line, the characters that differ are marked.
  await setCode(page, 'print("hello World, 42")\n');
  await ins.nth(0).fill('');
  await outs.nth(0).fill('hello world, 41');
  await page.locator('#cases tr.case').nth(1).locator('button').click();
  await page.evaluate(() => document.getElementById('eval-summary').replaceChildren());
  await page.click('#run-tests');
  await page.waitForSelector('#eval-summary .result-head', { timeout: 60000 });
  await page.waitForSelector('.case-result.fail .diff', { timeout: 10000 });
  const marked = async (sel) => page.$$eval(sel, (m) => m.map((x) => x.textContent).join('|'));
  const del = await marked('.case-result.fail .diff pre .del mark.chg');
  const add = await marked('.case-result.fail .diff pre .ins mark.chg');
  ok(del === 'w|1' && add === 'W|2', 'the diff marks the characters that differ (jsdiff), not just the line',
    `expected side: ${del}; got side: ${add}`);
  await shot(page, '08a-evaluate-char-diff');
  await page.click('#add-case');

  await setCode(page, 'def add(a, b):\n    return a + b\n');
  await page.check('input[name=eval-kind][value=io]');
  await page.fill('#entry-point', 'add');
  await ins.nth(0).fill('a=1, b=2');
  await outs.nth(0).fill('3');
  await ins.nth(1).fill('a=1, b="x"');
  await outs.nth(1).fill('3');
  await page.evaluate(() => document.getElementById('eval-summary').replaceChildren());
  await page.click('#run-tests');
  await page.waitForSelector('#eval-summary .result-head', { timeout: 60000 });
  const io = await page.$$eval('.case-result [data-passed]', (b) => b.map((x) => x.dataset.passed));
  const err = await page.locator('.case-result.fail pre.error').textContent();
  ok(io.join() === 'true,false' && /TypeError/.test(err),
    'function cases (entry point + io_cases): a pass, and a fail showing the exception', `${io} ${err}`);
  await shot(page, '08b-evaluate-function');
});

await step('accessibility', async () => {
  const unnamed = await page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea')]
    .filter((x) => x.offsetParent !== null && x.type !== 'hidden')
    .filter((x) => !(x.labels && x.labels.length) && !x.getAttribute('aria-label') &&
      !x.getAttribute('aria-labelledby') && !(x.tagName === 'BUTTON' && x.textContent.trim()))
    .map((x) => x.outerHTML.slice(0, 80)));
  ok(unnamed.length === 0, 'every visible control has a label or a name', unnamed.join('\n'));
  await page.focus('#tab-tests');
  await page.keyboard.press('ArrowLeft');
  ok(await page.evaluate(() => document.activeElement.id === 'tab-run' &&
    !document.getElementById('panel-run').hidden), 'the panel tabs follow the arrow keys');
  await page.click('.cm-content');
  await page.keyboard.press('Tab');
  const inside = await page.evaluate(() => document.activeElement.id);
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  const after = await page.evaluate(() => document.activeElement.id || document.activeElement.tagName);
  ok(inside === 'editor' && after !== 'editor',
    'Tab indents inside the editor; Esc then Tab moves on to the next control', `${inside} -> ${after}`);
  await page.click('#tab-run');
  await clearOutput(page);
  await page.focus('#stdin');
  await page.keyboard.press('ControlOrMeta+Enter');
  await page.waitForSelector('#output .badge', { timeout: 30000 });
  ok(true, 'Ctrl+Enter in the input box runs the code too');
});

await step('too large', async () => {
  await setCode(page, 'print(len(input()))\n');
  await page.click('#tab-run');
  await page.fill('#stdin', 'x'.repeat(1536 * 1024));
  await page.click('#run');
  await page.waitForSelector('#notice:not([hidden])', { timeout: 20000 });
  const text = await page.textContent('#notice');
  ok(/too large for the service \(413\)/.test(text), 'a request over the body limit gets the 413 message', text);
  await shot(page, '11-too-large');
  await page.fill('#stdin', '');
});

await step('phone layout', async () => {
  await page.setViewportSize(PHONE);
  await page.click('#tab-run');
  await page.waitForTimeout(300);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  ok(overflow <= 0, 'nothing overflows sideways on a phone viewport', `overflow ${overflow}px`);
  ok(await page.locator('#run').isVisible(), 'Run is visible on a phone');
  await shot(page, '09-phone');
  await page.click('#tab-tests');
  ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    'the Tests panel fits a phone too');
  await shot(page, '09b-phone-tests');
  await page.setViewportSize(LAPTOP);
});

await step('every language', async () => {
  // A fresh page shows each language's sample when it is picked; each one runs as it is.
  const fresh = await context.newPage();
  watch(fresh);
  await fresh.goto(`${base}/`);
  await fresh.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  const ids = await fresh.$$eval('#language option', (o) => o.map((x) => x.value));
  for (const id of ids) {
    await fresh.selectOption('#language', id);
    await fresh.fill('#stdin', 'sandbox');
    await fresh.evaluate(() => document.getElementById('output').replaceChildren());
    const r = await runAndWait(fresh, 'button');
    ok(r.status === 'ok' && r.stdout.includes('Hello, sandbox!'), `the ${id} sample runs and reads stdin`, JSON.stringify(r));
  }
  await shot(fresh, '12-cpp-sample');
  await fresh.close();
});

// ---- issue 18: limit values, the empty-input hint, examples, copy as, wrapping, API reference ----
const conf = JSON.parse(fs.readFileSync(path.join(top, 'fcgi/sbx.conf.json'), 'utf8'));

await step('limit values', async () => {
  await page.reload();
  await page.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  await page.click('#tab-run');
  await page.waitForFunction(() => document.getElementById('limit-wall').placeholder !== 'default', null,
    { timeout: 20000 }).catch(() => {});
  const { defaults, maxima } = conf.limits;
  const got = await page.evaluate(() => ['limit-wall', 'limit-cpu', 'limit-mem'].map((id) => ({
    placeholder: document.getElementById(id).placeholder, max: document.getElementById(id).max,
    range: document.getElementById(`${id}-range`).textContent })));
  const want = [[defaults.wall_ms / 1000, maxima.wall_ms / 1000, 's'], [defaults.cpu_ms / 1000, maxima.cpu_ms / 1000, 's'],
    [defaults.memory_mb, maxima.memory_mb, 'MiB']];
  ok(got.every((g, i) => g.placeholder === String(want[i][0]) && g.max === String(want[i][1]) &&
    g.range === `default ${want[i][0]} ${want[i][2]}, max ${want[i][1]} ${want[i][2]}`),
  'the limits show the server\'s defaults and maxima (those of fcgi/sbx.conf.json), not "default"',
  JSON.stringify({ got, want }));
  const summary = await page.textContent('.run-options summary');
  ok(summary.includes(`wall ${want[0][0]} s`) && summary.includes(`memory ${want[2][0]} MiB`),
    'the closed options line names the default limits too', summary);
  await page.click('.run-options summary');
  const other = await page.textContent('#limits-other');
  ok(other.includes(`processes ${defaults.processes} (max ${maxima.processes})`),
    'the other limits (processes, output, file size) are listed with their maxima', other);
  await shot(page, '13-limit-values');
  await page.click('.run-options summary');
});

await step('empty input hint', async () => {
  await page.selectOption('#language', 'python');
  await page.fill('#stdin', '');
  await setCode(page, 'name = input("Name? ")\nprint("hi", name)\n');
  await clearOutput(page);
  let r = await runAndWait(page, 'button');
  const hint = await page.locator('#output .stdin-hint-strong').textContent().catch(() => '');
  ok(r.status === 'error' && /EOFError/.test(r.stderr) && /Input box is empty/.test(hint) && /Input \(stdin\) box/.test(hint),
    'input() on an empty Input box shows a hint pointing at the Input box beside the EOFError', `${JSON.stringify(r)} ${hint}`);
  await shot(page, '14-empty-stdin-hint');
  await page.click('#output .stdin-hint button');
  ok(await page.evaluate(() => document.activeElement.id === 'stdin'), 'its button moves the focus to the Input box');
  await page.fill('#stdin', 'Ada');
  await clearOutput(page);
  r = await runAndWait(page, 'button');
  ok(r.status === 'ok' && (await page.locator('#output .stdin-hint').count()) === 0,
    'with input given the hint is gone', JSON.stringify(r));
  await page.fill('#stdin', '');
  await page.selectOption('#language', 'c');
  await setCode(page, '#include <stdio.h>\nint main(void) { int x = 7; if (scanf("%d", &x) != 1) puts("no number"); return 0; }\n');
  await clearOutput(page);
  r = await runAndWait(page, 'button');
  const note = await page.locator('#output .stdin-hint').textContent().catch(() => '');
  ok(r.status === 'ok' && /Input box is empty/.test(note),
    'a C program reading an empty Input box gets the quieter empty-input note', `${JSON.stringify(r)} ${note}`);
  await page.selectOption('#language', 'python');
});

// What each example prints when it runs as loaded (stdout substrings, or the tests' summary).
const EXPECT = {
  'python-input': ['Hello, Ada! In ten years you will be 46.'],
  'python-numpy': ['solution: [2. 3.]', 'A @ x == b: True', 'standard deviation 2.0'],
  'python-files': ['This is run 1.', 'runs.txt'],
  'python-tests': { tests: '3 of 3' },
  'python-function-tests': { tests: '3 of 3' },
  'c-input': ['5 numbers: sum 14, largest 5'],
  'cpp-words': ['the 3', 'cat 1'],
  'bash-pipes': ['line 3: red', '3 red'],
  'node-json': ['3 people, mean score 90.7', 'best: grace (97)'],
};

async function loadExample(id) {
  await page.click('#examples-button');
  await page.waitForSelector('#examples-dialog[open]', { timeout: 5000 });
  await page.click(`#examples-dialog [data-example="${id}"]`);
  await page.waitForSelector('#examples-dialog', { state: 'hidden', timeout: 5000 });
}

await step('examples', async () => {
  await page.click('#examples-button');
  await page.waitForSelector('#examples-dialog[open]', { timeout: 5000 });
  const ids = await page.$$eval('#examples-dialog [data-example]', (b) => b.map((x) => x.dataset.example));
  const langs = await page.$$eval('#examples-dialog .example-group h3', (h) => h.map((x) => x.textContent));
  ok(ids.length >= 9 && langs.length >= 5, 'the gallery lists examples for every language', `${langs} / ${ids}`);
  ok(await page.evaluate(() => document.activeElement.dataset.example !== undefined),
    'opening the gallery puts the focus on its first example');
  const unnamed = await page.$$eval('#examples-dialog button', (b) => b.filter((x) => !x.textContent.trim()).length);
  ok(unnamed === 0, 'every example button is named');
  await shot(page, '15-examples');
  await page.keyboard.press('Escape');
  ok(await page.locator('#examples-dialog').isHidden(), 'Escape closes the gallery');
  ok(ids.every((id) => EXPECT[id]), 'every example has an expectation in this test', ids.filter((id) => !EXPECT[id]).join());
  for (const id of ids) {
    const want = EXPECT[id];
    if (!want) continue;
    await loadExample(id);
    if (want.tests) {
      await page.evaluate(() => document.getElementById('eval-summary').replaceChildren());
      ok(!(await page.locator('#panel-tests').isHidden()), `example ${id} opens the Tests panel with its cases`);
      await page.click('#run-tests');
      await page.waitForSelector('#eval-summary .result-head', { timeout: 90000 });
      const summary = await page.textContent('#eval-summary');
      ok(summary.includes(want.tests), `example ${id}: its tests pass`, summary);
    } else {
      await clearOutput(page);
      const r = await runAndWait(page, 'button');
      ok(r.status === 'ok' && want.every((w) => r.stdout.includes(w)), `example ${id} runs as loaded`, JSON.stringify(r));
    }
  }
  await shot(page, '15b-example-ran');
  // The session example: in a session the file stays, so a second run counts 2.
  await loadExample('python-files');
  await page.click('#session-new');
  await page.waitForSelector('#session-active:not([hidden])', { timeout: 20000 });
  await clearOutput(page);
  await runAndWait(page, 'button');
  await clearOutput(page);
  const r = await runAndWait(page, 'button');
  ok(r.status === 'ok' && r.stdout.includes('This is run 2.'), 'in a session the files example finds its file again', JSON.stringify(r));
  await page.click('#session-delete');
  await page.waitForSelector('#session-none:not([hidden])', { timeout: 20000 });
});

await step('copy as curl, Python, JavaScript', async () => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  await page.selectOption('#language', 'python');
  await setCode(page, 'import sys\nprint("copied:", sys.stdin.read().strip(), sys.argv[1:])\n');
  // Quotes, a dollar sign and a backslash: what a shell or a string literal could mangle.
  const stdin = 'it\'s "quoted" $HOME \\n';
  await page.fill('#stdin', stdin);
  await page.click('.run-options summary');
  await page.fill('#args', 'a b');
  await page.fill('#limit-wall', '20');
  const want = `copied: ${stdin} ['a', 'b']`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-copy-'));
  const env = { ...process.env, SBX_TOKEN: token, NODE_TLS_REJECT_UNAUTHORIZED: '0' };
  const runners = {
    curl: (file) => ['bash', [file]],
    python: (file) => ['python3', [file]],
    javascript: (file) => ['node', [file]],
  };
  for (const kind of ['curl', 'python', 'javascript']) {
    await page.click(`[data-copy=${kind}]`);
    await page.waitForSelector('#snippet-box:not([hidden])', { timeout: 5000 });
    const text = await page.evaluate(() => navigator.clipboard.readText());
    const shown = await page.textContent('#snippet');
    ok(text === shown && text.includes('SBX_TOKEN') && !text.includes(token),
      `Copy as ${kind} puts the request on the clipboard with $SBX_TOKEN in place of the token`, text.slice(0, 400));
    const file = path.join(dir, { curl: 'run.sh', python: 'run.py', javascript: 'run.mjs' }[kind]);
    fs.writeFileSync(file, text);
    const [cmd, args] = runners[kind](file);
    const res = spawnSync(cmd, args, { env, encoding: 'utf8', timeout: 120000 });
    let out = res.stdout || '';
    if (kind === 'curl') {
      try { out = JSON.parse(out).stdout; } catch { /* shown below */ }
    }
    ok(res.status === 0 && out.includes(want), `the copied ${kind} program runs the same code, input, arguments and limits`,
      `exit ${res.status}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`);
  }
  ok(/"wall_ms": 20000/.test(await page.textContent('#snippet')), 'the copied request carries the limits set in the options');
  await shot(page, '16-copy-as');
  fs.rmSync(dir, { recursive: true, force: true });
  await page.fill('#args', '');
  await page.fill('#limit-wall', '');
  await page.click('.run-options summary');
  await page.click('#snippet-close');
  await page.fill('#stdin', '');
});

await step('line wrapping', async () => {
  await setCode(page, `print("${'x'.repeat(300)}")\n`);
  await clearOutput(page);
  await runAndWait(page, 'button');
  const whiteSpace = () => page.$eval('#output .stream-stdout pre', (p) => getComputedStyle(p).whiteSpace);
  const wrapped = () => page.locator('.cm-content.cm-lineWrapping').count();
  const before = { editor: await wrapped(), output: await whiteSpace(), box: await page.isChecked('#wrap') };
  await page.check('#wrap');
  const on = { editor: await wrapped(), output: await whiteSpace() };
  ok(!before.box && before.editor === 0 && before.output === 'pre' && on.editor === 1 && on.output === 'pre-wrap',
    'Wrap lines soft-wraps the editor and the output (off by default on a laptop)', JSON.stringify({ before, on }));
  await shot(page, '17-wrapped');
  await page.reload();
  await page.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  ok(await page.isChecked('#wrap') && (await wrapped()) === 1, 'the choice is remembered across reloads');
  await page.uncheck('#wrap');
  ok((await wrapped()) === 0, 'and unchecking it turns wrapping off again');
});

await step('API reference', async () => {
  ok(await page.locator('footer a.api-open').isVisible() && await page.locator('header a.api-open').isVisible(),
    'the header and the footer link the API reference');
  await page.click('#api-link');
  await page.waitForSelector('#api-dialog[open]', { timeout: 5000 });
  await page.waitForFunction(() => document.querySelectorAll('#api-routes tr').length > 5, null, { timeout: 20000 });
  const routes = await page.$$eval('#api-routes tr', (r) => r.map((x) => x.textContent));
  ok(routes.some((r) => r.startsWith('POST/v1/execute')) && routes.some((r) => r.startsWith('GET/v1/languages')),
    'the API dialog lists the routes of the served OpenAPI document', routes.slice(0, 5).join('\n'));
  await shot(page, '18-api-reference');
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 20000 }), page.click('#openapi-download')]);
  const docText = fs.readFileSync(await download.path(), 'utf8');
  let doc = null;
  try { doc = JSON.parse(docText); } catch { /* reported below */ }
  ok(download.suggestedFilename() === 'openapi.json' && doc && doc.openapi && doc.paths['/v1/execute'],
    'Download openapi.json saves the document fetched with the token', docText.slice(0, 200));
  await page.keyboard.press('Escape');
  ok(await page.locator('#api-dialog').isHidden(), 'Escape closes the API dialog');
});

await step('rate limit', async () => {
  // More requests at once than nginx's per-client burst allows: some come back 429, and the
  // page's API layer turns that into a sentence with the Retry-After wait.
  const said = await page.evaluate(async () => {
    const { api } = await import('/assets/js/api.js');
    const all = await Promise.allSettled(Array.from({ length: 300 }, () => api('GET', '/v1/languages')));
    const limited = all.find((r) => r.status === 'rejected' && r.reason.status === 429);
    return limited ? limited.reason.message : `no 429 in ${all.length} requests`;
  });
  ok(/Too many requests at once \(429\): wait \d+ s and try again/.test(said),
    'a 429 becomes a message with the wait from Retry-After', said);
});

await step('bad token', async () => {
  const bad = await context.newPage();
  watch(bad);
  await bad.goto(`${base}/#token=not-a-real-token`);
  await bad.waitForSelector('#notice:not([hidden])', { timeout: 20000 });
  const text = await bad.textContent('#notice');
  ok(/did not accept the token \(401\)/.test(text), 'a bad token gets the 401 message', text);
  ok(await bad.locator('#token-dialog').isVisible(), 'and the token dialog opens to paste a new one');
  await shot(bad, '10-bad-token');
  await bad.fill('#token-input', token);
  await bad.click('#token-form button[value=save]');
  await bad.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  // The notice is cleared once the reload with the new token has finished: wait for that
  // (bounded) instead of reading it at one instant, which raced on a loaded machine.
  const cleared = await bad.waitForSelector('#notice', { state: 'hidden', timeout: 20000 })
    .then(() => true, () => false);
  ok(cleared, 'pasting the right token into the dialog loads the page and clears the message');
  await bad.reload();
  await bad.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  ok(!(await bad.locator('#token-dialog').isVisible()), 'the pasted token is remembered across reloads');
  await bad.close();
});

await done(finish);
