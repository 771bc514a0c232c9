// result.js: how a run result looks: status badge, exit code or signal, times, memory, truncation
// notices, the compile step when it failed, then stdout and stderr kept apart.
import { el, formatBytes, formatMs, announce } from './ui.js';

const STATUS = {
  ok: ['ok', 'good', 'The program exited with status 0.'],
  error: ['error', 'bad', 'The program exited with a non-zero status.'],
  signal: ['signal', 'bad', 'The program was killed by a signal it caused.'],
  timeout: ['timeout', 'warn', 'The program ran past its time limit and was stopped.'],
  memory_limit: ['memory limit', 'warn', 'The program used more memory than allowed and was stopped.'],
  output_limit: ['output limit', 'warn', 'The program wrote too much output and was stopped.'],
  internal_error: ['internal error', 'bad', 'The sandbox itself failed; this is not your code.'],
  compile_error: ['compile error', 'bad', 'The program did not compile, so it did not run.'],
  skipped: ['skipped', 'muted', 'Not run: an earlier case failed.'],
};

/** The status badge for a status word; unknown words are shown as they are. */
export function badge(status) {
  const [label, tone] = STATUS[status] || [status || 'unknown', 'muted'];
  return el('span', { class: `badge badge-${tone}`, 'data-status': status || '', text: label });
}

function timeoutWhy(res) {
  if (res.limit === 'cpu') return 'The program used up its CPU-time limit and was stopped.';
  if (res.limit === 'wall') return 'The program ran past its wall-clock limit and was stopped.';
  return STATUS.timeout[2];
}

/** "exit 0 · wall 21 ms · CPU 17 ms · memory 8.8 MiB" as a description list. */
export function facts(res) {
  const items = [];
  if (res.signal) items.push(['signal', res.signal]);
  else if (res.exit_code !== undefined && res.exit_code !== null) items.push(['exit code', res.exit_code]);
  if (res.wall_ms != null) items.push(['wall', formatMs(res.wall_ms)]);
  if (res.cpu_ms != null) items.push(['CPU', formatMs(res.cpu_ms)]);
  if (res.memory_kb != null) items.push(['memory', formatBytes(res.memory_kb * 1024)]);
  return el('dl', { class: 'facts' },
    items.map(([k, v]) => el('div', {}, el('dt', { text: k }), el('dd', { text: String(v) }))));
}

function stream(name, text, truncated) {
  const box = el('section', { class: `stream stream-${name}`, 'aria-label': name });
  box.append(el('h3', { text: name }));
  if (truncated) {
    box.append(el('p', { class: 'truncated', role: 'note',
      text: `${name} was truncated: the output limit was reached and the rest was dropped.` }));
  }
  box.append(text
    ? el('pre', { class: 'out', tabindex: 0, text })
    : el('p', { class: 'empty', text: `(no ${name})` }));
  return box;
}

function compileFailed(compile) {
  return compile && compile.status && compile.status !== 'ok';
}

/**
 * Fill box with the result res (any route's run result, with an optional `compile` object).
 * opts.title names what ran ("python main.py", "$ ls").
 */
export function renderResult(box, res, opts = {}) {
  const failedCompile = compileFailed(res.compile);
  const status = failedCompile ? 'compile_error' : res.status;
  const why = status === 'timeout' ? timeoutWhy(res) : (STATUS[status] || [])[2] || '';
  const head = el('div', { class: 'result-head' }, badge(status),
    opts.title ? el('span', { class: 'result-title', text: opts.title }) : null,
    facts(failedCompile ? res.compile : res));
  const parts = [head];
  if (why) parts.push(el('p', { class: 'why', text: why }));
  if (res.message) parts.push(el('p', { class: 'why', text: res.message }));
  if (res.compile && (failedCompile || res.compile.stderr)) {
    const c = res.compile;
    parts.push(el('section', { class: `compile ${failedCompile ? 'compile-failed' : ''}`,
      'aria-label': 'compiler output' },
    el('h3', { text: failedCompile ? 'Compile error' : 'Compiler warnings' }),
    el('pre', { class: 'out', tabindex: 0, text: [c.stderr, c.stdout].filter(Boolean).join('\n') ||
      '(the compiler printed nothing)' })));
  }
  // A failed compile's result stands in for the run's (API: "stage": "compile"): shown once, above.
  if (!failedCompile) {
    parts.push(stream('stdout', res.stdout, res.stdout_truncated),
      stream('stderr', res.stderr, res.stderr_truncated));
  }
  box.replaceChildren(...parts);
  const label = (STATUS[status] || [status])[0];
  const code = res.signal ? `signal ${res.signal}` : res.exit_code != null ? `exit code ${res.exit_code}` : '';
  announce(`${opts.title ? opts.title + ': ' : ''}${label}${code ? ', ' + code : ''}. ${why}`);
}
