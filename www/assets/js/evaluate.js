// evaluate.js: the Tests panel: an editable table of cases, POST .../evaluate, and per case a
// pass/fail badge with the difference and the error.
import { api } from './api.js';
import { $, el, busy, notice, announce } from './ui.js';
import { badge, facts } from './result.js';
import { renderDiff } from './diff.js';
import { verdictBadge, verdictOf, verdictTable } from './verdict.js';

const KIND_TEXT = {
  stdio: { input: 'stdin', expected: 'expected stdout', inHint: 'input lines', outHint: 'output' },
  io: { input: 'arguments', expected: 'expected result', inHint: 'a=1, b=2', outHint: '3' },
};

const kind = () => document.querySelector('input[name=eval-kind]:checked').value;

function caseRow(input = '', expected = '') {
  const t = KIND_TEXT[kind()];
  const row = el('tr', { class: 'case' });
  const number = el('th', { scope: 'row', class: 'case-n' });
  const cell = (cls, value, hint, what) => el('td', {}, el('textarea', {
    class: cls, rows: 2, spellcheck: 'false', placeholder: hint, 'aria-label': what,
  }));
  const inCell = cell('case-in', input, t.inHint, t.input);
  const outCell = cell('case-out', expected, t.outHint, t.expected);
  inCell.firstChild.value = input;
  outCell.firstChild.value = expected;
  const remove = el('button', { type: 'button', class: 'link', text: 'Remove',
    onclick: () => { dropResult(row); row.remove(); renumber(); } });
  row.append(number, inCell, outCell, el('td', {}, remove));
  return row;
}

function dropResult(row) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains('case-result')) next.remove();
}

function rows() {
  return [...$('cases').querySelectorAll('tr.case')];
}

function renumber() {
  rows().forEach((r, i) => {
    r.querySelector('.case-n').textContent = String(i + 1);
    r.querySelector('.case-in').setAttribute('aria-label', `case ${i + 1} ${KIND_TEXT[kind()].input}`);
    r.querySelector('.case-out').setAttribute('aria-label', `case ${i + 1} ${KIND_TEXT[kind()].expected}`);
  });
}

function showKind() {
  const k = kind();
  $('entry-label').hidden = k !== 'io';
  $('compare-label').hidden = k !== 'stdio';
  $('input-head').textContent = KIND_TEXT[k].input;
  $('expected-head').textContent = KIND_TEXT[k].expected;
  for (const r of rows()) {
    r.querySelector('.case-in').placeholder = KIND_TEXT[k].inHint;
    r.querySelector('.case-out').placeholder = KIND_TEXT[k].outHint;
  }
  renumber();
}

function request(language, code) {
  const cases = rows().map((r) => [r.querySelector('.case-in').value, r.querySelector('.case-out').value]);
  if (kind() === 'io') {
    return { language, code, entry_point: $('entry-point').value.trim(),
      io_cases: cases.map(([input, output]) => ({ input, output })) };
  }
  const c = $('compare').value;
  return { language, code, compare: c === 'float' ? { float_tolerance: 1e-6 } : c,
    cases: cases.map(([stdin, expected]) => ({ stdin, expected_stdout: expected })) };
}

// Function cases carry Python values as JSON plus their repr; the repr is what a person wrote.
function shown(repr, value) {
  if (typeof repr === 'string') return repr;
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function caseDetail(c) {
  const parts = [el('div', { class: 'result-head' },
    el('span', { class: `badge ${c.passed ? 'badge-good' : 'badge-bad'}`, 'data-passed': String(c.passed),
      text: c.passed ? 'pass' : 'fail' }),
    verdictBadge(verdictOf(c)), c.status && c.status !== 'ok' ? badge(c.status) : null, facts(c))];
  if (typeof c.feedback === 'string' && c.feedback.trim()) {
    parts.push(el('h4', { text: 'checker feedback' }), el('pre', { class: 'out feedback', tabindex: 0, text: c.feedback }));
  }
  if (!c.passed && c.status !== 'skipped') {
    const got = shown(c.got_repr, c.got), expected = shown(c.expected_repr, c.expected);
    if (got !== null) parts.push(renderDiff(expected ?? '', got));
    else if (expected !== null) {
      parts.push(el('p', { class: 'why',
        text: `expected ${expected}; ${c.error ? 'the code failed first (below)' : 'no result came back'}` }));
    }
    if (c.error) parts.push(el('h4', { text: 'error' }), el('pre', { class: 'out error', tabindex: 0, text: c.error }));
    if (c.stderr) parts.push(el('h4', { text: 'stderr' }), el('pre', { class: 'out', tabindex: 0, text: c.stderr }));
  }
  return parts;
}

function showResults(res) {
  const summary = $('eval-summary');
  const compileFailed = res.compile && res.compile.status && res.compile.status !== 'ok';
  summary.replaceChildren(el('div', { class: 'result-head' },
    el('span', { class: `badge ${res.passed ? 'badge-good' : 'badge-bad'}`,
      text: res.passed ? 'all passed' : 'failed' }),
    el('span', { text: `${res.passed_count ?? 0} of ${res.total ?? rows().length} cases passed` })));
  if (res.error) {
    summary.append(el('h3', { text: 'The code did not load' }),
      el('pre', { class: 'out error', tabindex: 0, text: String(res.error) }));
  }
  if (compileFailed) {
    summary.append(el('h3', { text: 'Compile error' }),
      el('pre', { class: 'out', tabindex: 0, text: res.compile.stderr || res.compile.stdout || '' }));
  }
  if ((res.cases || []).length) summary.append(verdictTable(res));
  announce(`Tests: ${res.passed_count ?? 0} of ${res.total ?? rows().length} cases passed.`);
  const list = rows();
  for (const c of res.cases || []) {
    const row = list[c.index ?? res.cases.indexOf(c)];
    if (!row) continue;
    dropResult(row);
    row.dataset.passed = String(c.passed);
    row.after(el('tr', { class: `case-result ${c.passed ? 'pass' : 'fail'}` },
      el('td', { colspan: 4, 'aria-label': `case ${row.querySelector('.case-n').textContent} result` },
        caseDetail(c))));
  }
}

/** Wire the Tests panel. ctx = {language(), code(), sessionId(), limits()}. */
export function initEvaluate(ctx) {
  $('cases').append(caseRow(), caseRow());
  showKind();
  for (const radio of document.querySelectorAll('input[name=eval-kind]')) {
    radio.addEventListener('change', showKind);
  }
  $('add-case').addEventListener('click', () => {
    const row = caseRow();
    $('cases').append(row);
    renumber();
    row.querySelector('textarea').focus();
  });
  $('eval-form').addEventListener('submit', (e) => {
    e.preventDefault();
    if (!rows().length) { notice('Add a case first.', 'info'); return; }
    if (kind() === 'io' && ctx.language() !== 'python') {
      notice('Function cases need Python: pick Python, or use stdin cases.', 'info');
      return;
    }
    busy($('run-tests'), async () => {
      $('eval-summary').replaceChildren(el('p', { class: 'empty', text: 'Running the cases…' }));
      const sid = ctx.sessionId();
      const path = sid ? `/v1/sessions/${encodeURIComponent(sid)}/evaluate` : '/v1/evaluate';
      try {
        showResults(await api('POST', path, { json: { ...request(ctx.language(), ctx.code()), limits: ctx.limits() } }));
      } catch (err) {
        $('eval-summary').replaceChildren();
        throw err;
      }
    });
  });
}

/** Replace the cases (an example's): tests = {kind, cases: [[input, expected]...], entry_point?, compare?}. */
export function loadCases(tests) {
  const radio = document.querySelector(`input[name=eval-kind][value=${tests.kind === 'io' ? 'io' : 'stdio'}]`);
  radio.checked = true;
  if (tests.entry_point) $('entry-point').value = tests.entry_point;
  if (tests.compare) $('compare').value = tests.compare;
  $('cases').replaceChildren(...tests.cases.map(([input, expected]) => caseRow(input, expected)));
  $('eval-summary').replaceChildren();
  showKind();
}
