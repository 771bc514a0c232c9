// diff.js: a line diff of expected against got, small enough to read (LCS over lines). Test
// outputs are short; past LIMIT lines we fall back to showing both texts whole.
import { el } from './ui.js';

const LIMIT = 400;

/** [{op: ' ' | '-' | '+', line}] turning expected into got ('-' expected only, '+' got only). */
export function diffLines(expected, got) {
  const a = expected.split('\n'), b = got.split('\n');
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push({ op: ' ', line: a[i] }); i++; j++; }
    else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) out.push({ op: '-', line: a[i++] });
    else out.push({ op: '+', line: b[j++] });
  }
  return out;
}

// Trailing spaces and tabs are invisible in a diff; show them.
const visible = (line) => line.replace(/[ \t]+$/, (ws) => ws.replace(/ /g, '·').replace(/\t/g, '→'));

/** A <pre> with the diff, '-' lines marked as expected and '+' lines as got. */
export function renderDiff(expected, got) {
  expected = expected ?? '';
  got = got ?? '';
  if (expected.split('\n').length > LIMIT || got.split('\n').length > LIMIT) {
    return el('div', { class: 'diff-whole' },
      el('h4', { text: 'expected' }), el('pre', { class: 'out', text: expected }),
      el('h4', { text: 'got' }), el('pre', { class: 'out', text: got }));
  }
  // Output ends in a newline and expected text usually does not: compare the lines themselves,
  // and say so when only the line ends differ.
  const trim = (s) => s.replace(/\n+$/, '');
  if (trim(expected) === trim(got) && expected !== got) {
    return el('div', { class: 'diff' }, el('p', { class: 'legend',
      text: `Only the trailing newlines differ: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}.` }));
  }
  const rows = diffLines(trim(expected), trim(got)).map(({ op, line }) => el('span', {
    class: op === '-' ? 'del' : op === '+' ? 'ins' : 'same',
  }, el('span', { class: 'mark', 'aria-hidden': 'true', text: op === '-' ? '−' : op === '+' ? '+' : ' ' }),
  el('span', { class: 'sr-only', text: op === '-' ? 'expected: ' : op === '+' ? 'got: ' : '' }),
  visible(line), '\n'));
  return el('div', { class: 'diff' },
    el('p', { class: 'legend' }, el('span', { class: 'del', text: '− expected' }), ' ',
      el('span', { class: 'ins', text: '+ got' })),
    el('pre', { class: 'out', tabindex: 0 }, rows));
}
