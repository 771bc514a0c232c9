// verdict.js: the Tests panel's verdict view: one table row per case with the Kattis-style verdict
// word (AC, WA, TLE, MLE, RTE, OLE, CE, JE) shown as text and colour (never colour alone), its
// meaning in words, the case's time and memory, and the checker's feedback when there is one.
// evaluate.js shows the per-case details (the diff of expected and got for a WA) under each case.
import { el, formatBytes, formatMs } from './ui.js';

/** verdict word -> [tone for the colour, what it means in words]. */
export const VERDICTS = {
  AC: ['good', 'accepted'],
  WA: ['bad', 'wrong answer'],
  TLE: ['warn', 'time limit exceeded'],
  MLE: ['warn', 'memory limit exceeded'],
  RTE: ['bad', 'run-time error'],
  OLE: ['warn', 'output limit exceeded'],
  CE: ['bad', 'compile error'],
  JE: ['judge', 'judge error: the checker or interactor itself failed'],
};

/**
 * The verdict word of a case: the service's own `verdict` when it sent one; otherwise derived
 * from `passed` and `status` the way the service does it. Skipped cases have none (null).
 */
export function verdictOf(c) {
  if (typeof c.verdict === 'string' && c.verdict) return c.verdict;
  if (c.status === 'skipped') return null;
  if (c.passed) return 'AC';
  switch (c.status) {
    case 'ok': return 'WA';
    case 'timeout': return 'TLE';
    case 'memory_limit': return 'MLE';
    case 'output_limit': return 'OLE';
    case 'compile_error': return 'CE';
    default: return 'RTE';
  }
}

/** The verdict badge: the word, its colour class, and its meaning as visible text for a title. */
export function verdictBadge(word) {
  if (!word) return el('span', { class: 'verdict verdict-none', 'data-verdict': '', text: 'skipped' });
  const [tone, meaning] = VERDICTS[word] || ['muted', word];
  return el('span', {
    class: `verdict verdict-${tone}`, 'data-verdict': word, title: meaning,
    'aria-label': `${word}: ${meaning}`, text: word,
  });
}

/** The table of every case's verdict, time and memory (and checker feedback), in case order. */
export function verdictTable(res) {
  const cases = res.cases || [];
  const body = cases.map((c, i) => {
    const word = verdictOf(c);
    const meaning = word ? (VERDICTS[word] || [null, word])[1] : 'not run';
    const feedback = typeof c.feedback === 'string' && c.feedback.trim() ? c.feedback.trim() : '';
    return el('tr', { class: 'verdict-row', 'data-verdict': word || '' },
      el('th', { scope: 'row', text: String((c.index ?? i) + 1) }),
      el('td', {}, verdictBadge(word)),
      el('td', { class: 'verdict-meaning', text: meaning }),
      el('td', { class: 'num', text: c.wall_ms != null ? formatMs(c.wall_ms) : '' }),
      el('td', { class: 'num', text: c.cpu_ms != null ? formatMs(c.cpu_ms) : '' }),
      el('td', { class: 'num', text: c.memory_kb != null ? formatBytes(c.memory_kb * 1024) : '' }),
      el('td', {}, feedback ? el('pre', { class: 'verdict-feedback', tabindex: 0, text: feedback }) : ''));
  });
  const counts = {};
  for (const c of cases) {
    const w = verdictOf(c) || 'skipped';
    counts[w] = (counts[w] || 0) + 1;
  }
  const summary = Object.entries(counts).map(([w, k]) => `${k} ${w}`).join(', ');
  return el('table', { class: 'verdicts', 'aria-label': 'verdict per case' },
    el('caption', { text: `Verdicts: ${summary || 'no cases'}` }),
    el('thead', {}, el('tr', {},
      ['case', 'verdict', 'meaning', 'wall', 'CPU', 'memory', 'checker feedback']
        .map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, body));
}
