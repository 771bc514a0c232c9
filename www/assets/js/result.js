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

// Code that reads standard input, per language: a guess, only used to word a note.
const READS = {
  python: /\binput\s*\(|sys\.stdin|open\(\s*0\b|fileinput/,
  bash: /\bread\b|\$\(\s*cat\s*\)|\/dev\/stdin|^\s*cat\s*$/m,
  node: /readFileSync\(\s*(0|['"]\/dev\/stdin)|process\.stdin|readline/,
  c: /scanf\s*\(|getchar\s*\(|fgets\s*\(|getline\s*\(|\bstdin\b|read\s*\(\s*0\b/,
  cpp: /std::cin|\bcin\s*>>|getline\s*\(|scanf\s*\(|getchar\s*\(|\bstdin\b/,
};

/** True when a run that had empty stdin failed by reading past its end (Python's EOFError). */
export function readPastEmptyStdin(res) {
  return /\bEOFError\b|EOF when reading a line/.test(res.stderr || '');
}

/**
 * A note beside the output when the Input box was empty and the program read stdin: a clear
 * hint when Python's input() failed with EOFError, a quieter note when the code only looks like
 * it reads input. opts: {stdin, code, language}; no stdin given (shell commands) means no note.
 */
function stdinHint(res, opts) {
  if (opts.stdin !== '') return null;
  const eof = readPastEmptyStdin(res);
  const reads = READS[opts.language] && READS[opts.language].test(opts.code || '');
  if (!eof && !reads) return null;
  const text = eof
    ? 'The program asked for input, but the Input box is empty, so input() found the end of ' +
      'the input (EOFError). Type what it should read in the Input (stdin) box, one line per ' +
      'input() call, and run again.'
    : 'The Input box is empty: this program reads standard input and got none (its reads ' +
      'found the end of the input at once). Type its input in the Input (stdin) box to give it some.';
  return el('div', { class: `stdin-hint${eof ? ' stdin-hint-strong' : ''}`, role: 'note' },
    el('p', { text }),
    el('button', { type: 'button', class: 'link', text: 'Go to the Input box',
      onclick: () => { const box = document.getElementById('stdin'); if (box) box.focus(); } }));
}

function compileFailed(compile) {
  return compile && compile.status && compile.status !== 'ok';
}

/**
 * Fill box with the result res (any route's run result, with an optional `compile` object).
 * opts.title names what ran ("python main.py", "$ ls"); opts.stdin, opts.code and opts.language
 * (when the run had an Input box) allow the empty-input hint.
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
  const hint = failedCompile ? null : stdinHint(res, opts);
  if (hint) parts.push(hint);
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
