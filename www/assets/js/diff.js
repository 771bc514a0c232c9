// diff.js: expected against got for the Tests panel, with jsdiff (npm "diff", bundled into
// vendor/textdiff.js): a line diff, and inside each changed pair of lines a character diff, so a
// reader sees which characters differ. Past LIMIT lines both texts are shown whole instead.
import { diffLines, diffChars } from '/vendor/textdiff.js';
import { el } from './ui.js';

const LIMIT = 400;

/** [{op: ' ' | '-' | '+', line}] turning expected into got ('-' expected only, '+' got only). */
export function lineOps(expected, got) {
  const out = [];
  for (const part of diffLines(expected, got)) {
    const op = part.removed ? '-' : part.added ? '+' : ' ';
    const lines = part.value.replace(/\n$/, '').split('\n');
    for (const line of lines) out.push({ op, line });
  }
  return out;
}

// Trailing spaces and tabs are invisible in a diff; show them.
const visible = (text) => text.replace(/[ \t]+$/, (ws) => ws.replace(/ /g, '·').replace(/\t/g, '→'));
const showWs = (text) => text.replace(/ /g, '·').replace(/\t/g, '→');

/**
 * The line's text as nodes: the characters that differ from its partner line (other) wrapped in
 * <mark class="chg">; op '-' keeps the removed pieces, '+' the added ones.
 */
function lineNodes(line, other, op) {
  if (other === null) return [visible(line)];
  const nodes = [];
  const [before, after] = op === '-' ? [line, other] : [other, line];
  for (const part of diffChars(before, after)) {
    if (op === '-' ? part.added : part.removed) continue;
    const changed = op === '-' ? part.removed : part.added;
    nodes.push(changed ? el('mark', { class: 'chg', text: /^\s+$/.test(part.value) ? showWs(part.value) : part.value })
      : part.value);
  }
  // A trailing-space difference is marked already; other trailing spaces still need showing.
  const last = nodes[nodes.length - 1];
  if (typeof last === 'string') nodes[nodes.length - 1] = visible(last);
  return nodes;
}

/** Pair each run of '-' lines with the '+' run right after it, line by line. */
function partners(ops) {
  const other = new Array(ops.length).fill(null);
  for (let i = 0; i < ops.length;) {
    if (ops[i].op !== '-') { i++; continue; }
    let j = i;
    while (j < ops.length && ops[j].op === '-') j++;
    let k = j;
    while (k < ops.length && ops[k].op === '+') k++;
    for (let d = 0; d < Math.min(j - i, k - j); d++) {
      other[i + d] = ops[j + d].line;
      other[j + d] = ops[i + d].line;
    }
    i = k;
  }
  return other;
}

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
  const ops = lineOps(trim(expected) + '\n', trim(got) + '\n');
  const other = partners(ops);
  const rows = ops.map(({ op, line }, i) => el('span', {
    class: op === '-' ? 'del' : op === '+' ? 'ins' : 'same',
  }, el('span', { class: 'mark', 'aria-hidden': 'true', text: op === '-' ? '−' : op === '+' ? '+' : ' ' }),
  el('span', { class: 'sr-only', text: op === '-' ? 'expected: ' : op === '+' ? 'got: ' : '' }),
  op === ' ' ? visible(line) : lineNodes(line, other[i], op), '\n'));
  return el('div', { class: 'diff' },
    el('p', { class: 'legend' }, el('span', { class: 'del', text: '− expected' }), ' ',
      el('span', { class: 'ins', text: '+ got' }), ' ',
      el('mark', { class: 'chg', text: 'characters that differ' })),
    el('pre', { class: 'out', tabindex: 0 }, rows));
}
