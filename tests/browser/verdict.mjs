// verdict.mjs: the Tests panel's verdict view in headless Chromium against the stack at SBX_URL
// (token SBX_TOKEN, both exported by tests/lib/harness.sh --exec); prints TAP. Two stdin cases, one
// right and one wrong: the verdict table shows an AC row and a WA row as words (with their meaning,
// time and memory), and the WA case shows the diff of expected and got.
import { base, done, launch, ok, token, setCode as setCodeIn } from './lib.mjs';

const { page, finish } = await launch();

const setCode = (code) => setCodeIn(page, code);

try {
  await page.goto(`${base}/#token=${encodeURIComponent(token)}`, { waitUntil: 'load' });
  await page.waitForSelector('#language option[value=python]', { state: 'attached', timeout: 20000 });
  await setCode('a, b = map(int, input().split())\nprint(a + b)\n');
  await page.click('#tab-tests');
  const ins = page.locator('#cases .case-in'), outs = page.locator('#cases .case-out');
  await ins.nth(0).fill('1 2');
  await outs.nth(0).fill('3');
  await ins.nth(1).fill('2 2');
  await outs.nth(1).fill('5');
  await page.click('#run-tests');
  await page.waitForSelector('#eval-summary table.verdicts tr.verdict-row', { timeout: 60000 });
  const rows = await page.$$eval('#eval-summary table.verdicts tr.verdict-row', (rs) => rs.map((r) => ({
    verdict: r.dataset.verdict,
    word: r.querySelector('.verdict').textContent,
    cls: r.querySelector('.verdict').className,
    meaning: r.querySelector('.verdict-meaning').textContent,
    cells: [...r.querySelectorAll('td.num')].map((td) => td.textContent),
  })));
  ok(rows.length === 2, 'the verdict table has one row per case', JSON.stringify(rows));
  ok(rows[0] && rows[0].word === 'AC' && /accepted/.test(rows[0].meaning) && /verdict-good/.test(rows[0].cls),
    'the right case is an AC row: the word, its meaning in words, and the good colour', JSON.stringify(rows[0]));
  ok(rows[1] && rows[1].word === 'WA' && /wrong answer/.test(rows[1].meaning) && /verdict-bad/.test(rows[1].cls),
    'the wrong case is a WA row: the word, its meaning in words, and the bad colour', JSON.stringify(rows[1]));
  ok(rows.every((r) => r.cells.length === 3 && /ms|s$/.test(r.cells[0]) && /B$/.test(r.cells[2])),
    'each row shows its wall time, CPU time and memory', JSON.stringify(rows.map((r) => r.cells)));
  const caption = await page.textContent('#eval-summary table.verdicts caption');
  ok(/1 AC/.test(caption) && /1 WA/.test(caption), 'the caption counts the verdicts', caption);
  await page.waitForSelector('.case-result.fail .diff', { timeout: 10000 });
  const diff = await page.locator('.case-result.fail .diff').textContent();
  ok(/5/.test(diff) && /4/.test(diff), 'the WA case shows the diff of expected (5) and got (4)', diff);
  const detail = await page.$$eval('.case-result .verdict', (b) => b.map((x) => x.dataset.verdict));
  ok(detail.join() === 'AC,WA', 'each case detail carries its verdict word too', detail.join());
} catch (err) {
  ok(false, 'the verdict view', err.stack || err);
}
await done(finish);
