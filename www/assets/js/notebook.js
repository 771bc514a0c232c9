// notebook.js: the session's notebook mode: a list of cells run one after another in a context
// (a persistent Python or Bash interpreter of the session: POST /v1/sessions/{id}/contexts and
// its execute, variables, interrupt, restart and DELETE routes), each cell with its editor and
// its outputs (stdout, stderr, results as images, tables or text, the structured error), the
// [N] execution counts, a running indicator, a "state lost" notice, and the variables panel.
// Output of the sandboxed program is untrusted: text goes in as text, images as data: URLs in
// <img> (an SVG there runs no script), HTML only through safehtml.js.
import { createEditor } from '/vendor/editor.js';
import { api, apiFailure, getToken, ApiError } from './api.js';
import { $, el, notice, announce, formatMs, formatBytes } from './ui.js';
import { badge } from './result.js';
import { safeHtml } from './safehtml.js';
import { readNdjson } from './runs.js';

const enc = encodeURIComponent;
const LANGS = { python: 'Python', bash: 'Bash' };
const STORE = (sid) => `sbx.notebook.${sid}`;
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g; // colour codes a traceback may carry

const WHY = {
  timeout: 'The cell ran past its time limit and was interrupted.',
  memory_limit: 'The interpreter used more memory than its limit allows and was stopped.',
  output_limit: 'The cell wrote too much output and was stopped.',
  internal_error: 'The sandbox itself failed; this is not your code.',
  signal: 'The interpreter was killed by a signal.',
};

/** base64 of a string's UTF-8 bytes (for an SVG data: URL). */
function base64Utf8(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

function textOf(value) {
  if (Array.isArray(value)) return value.join(value.every((l) => l.endsWith('\n')) ? '' : '\n');
  return value == null ? '' : String(value);
}

function streamBox(name, text, truncated) {
  if (!text && !truncated) return null;
  return el('div', { class: `nb-stream stream-${name}`, 'aria-label': name },
    truncated ? el('p', { class: 'truncated', role: 'note',
      text: `${name} was truncated: the output limit was reached and the rest was dropped.` }) : null,
    text ? el('pre', { class: 'out', tabindex: 0, text }) : null);
}

/** One entry of `results`: an image, an SVG, a safe HTML table, JSON or text. */
function resultBox(r, count) {
  const label = r.is_main_result ? `Out [${count}]` : 'Displayed';
  const box = el('div', { class: `nb-result${r.is_main_result ? ' nb-main-result' : ''}` },
    el('span', { class: 'nb-out-label', text: label }));
  const alt = (r.text || (r.is_main_result ? `the value of cell [${count}]` : 'a displayed image')).slice(0, 200);
  if (r.png) {
    box.append(el('img', { class: 'nb-image', src: `data:image/png;base64,${r.png}`, alt }));
  } else if (r.svg) {
    box.append(el('img', { class: 'nb-image', src: `data:image/svg+xml;base64,${base64Utf8(r.svg)}`, alt }));
  } else if (r.html) {
    const { fragment, cut } = safeHtml(r.html);
    box.append(el('div', { class: 'nb-html', tabindex: 0, 'aria-label': label }, fragment));
    if (cut) box.append(el('p', { class: 'truncated', text: 'The table is too large to show whole: the rest was left out.' }));
  } else if (r.json !== undefined && r.json !== null && !r.text) {
    box.append(el('pre', { class: 'out', tabindex: 0, text: JSON.stringify(r.json, null, 2) }));
  } else {
    box.append(el('pre', { class: 'out', tabindex: 0, text: r.text ?? '' }));
  }
  return box;
}

function errorBox(err) {
  const trace = textOf(err.traceback).replace(ANSI, '');
  return el('div', { class: 'nb-error', role: 'group', 'aria-label': `error ${err.name || ''}` },
    el('p', { class: 'nb-error-head' }, el('strong', { text: err.name || 'Error' }),
      err.value ? `: ${err.value}` : ''),
    trace ? el('pre', { class: 'out error', tabindex: 0, text: trace }) : null);
}

function lostBox(why) {
  const said = String(why).trim();
  return el('div', { class: 'nb-lost', role: 'alert' },
    el('strong', { text: 'State lost.' }),
    ` ${said}${/[.!?]$/.test(said) ? '' : '.'} Every variable, import and definition of earlier cells is gone: run those cells again.`);
}

/** The outputs of one executed cell. */
function renderOutputs(box, res, extra = {}) {
  const parts = [];
  const count = res.execution_count;
  if (res.state === 'lost') {
    parts.push(lostBox(extra.lostWhy || res.message || (res.status === 'ok' || res.status === 'error'
      ? 'The interpreter had stopped (idle too long, restarted or crashed) and a fresh one ran this cell.'
      : 'The interpreter did not come back and was restarted.')));
  }
  const plain = res.status === 'ok' || (res.status === 'error' && res.error);
  if (!plain) {
    let why = WHY[res.status] || '';
    if (res.status === 'timeout' && res.limit) why = `The cell ran past its ${res.limit === 'cpu' ? 'CPU-time' : 'wall-clock'} limit and was interrupted.`;
    if (res.status === 'timeout' && res.state === 'kept') why += ' The interpreter came back: its state is kept.';
    parts.push(el('p', { class: 'nb-status' }, badge(res.status),
      res.exit_code != null && res.status === 'error' ? ` exit code ${res.exit_code}` : '',
      why ? ` ${why}` : '', res.message && res.state !== 'lost' ? ` ${res.message}` : ''));
  }
  const out = streamBox('stdout', res.stdout, res.stdout_truncated);
  const err = streamBox('stderr', res.stderr, res.stderr_truncated);
  if (out) parts.push(out);
  if (err) parts.push(err);
  for (const r of res.results || []) parts.push(resultBox(r, count));
  if (res.results_truncated) {
    parts.push(el('p', { class: 'truncated', role: 'note',
      text: 'More was displayed than the service keeps for one cell: the rest of the results was dropped.' }));
  }
  if (res.error) parts.push(errorBox(res.error));
  const facts = [];
  if (res.exit_code != null && extra.language === 'bash') facts.push(`exit ${res.exit_code}`);
  if (res.wall_ms != null) facts.push(`wall ${formatMs(res.wall_ms)}`);
  if (res.cpu_ms != null) facts.push(`CPU ${formatMs(res.cpu_ms)}`);
  if (res.memory_kb != null) facts.push(`memory ${formatBytes(res.memory_kb * 1024)}`);
  if (facts.length) parts.push(el('p', { class: 'nb-facts', text: facts.join(' · ') }));
  box.replaceChildren(...parts);
}

/**
 * POST a cell with "stream": true and show its output and results in box as they come (API.md
 * "Contexts": NDJSON events, the end event last). Resolves to the cell result; a server that
 * answers the whole result at once is fine too. Errors are ApiErrors, as api() throws them.
 */
async function executeStreamed(path, body, box) {
  const headers = { Accept: 'application/x-ndjson', 'Content-Type': 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(path, { method: 'POST', headers, body: JSON.stringify({ ...body, stream: true }), cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, 'network', `Could not reach the service (${err.message}). Is it running?`);
  }
  if (!res.ok) throw await apiFailure(res);
  if (!/ndjson/.test(res.headers.get('Content-Type') || '')) {
    const text = await res.text();
    return text ? JSON.parse(text) : null;
  }
  const live = { stdout: '', stderr: '', results: [] };
  let end = null;
  let queued = false;
  const show = () => {
    queued = false;
    if (end) return;
    const parts = [streamBox('stdout', live.stdout), streamBox('stderr', live.stderr),
      ...live.results.map((r) => resultBox(r, '*'))].filter(Boolean);
    box.replaceChildren(...parts);
  };
  const onEvent = (ev) => {
    if (ev.type === 'stdout' || ev.type === 'stderr') live[ev.type] += ev.data || '';
    else if (ev.type === 'result') live.results.push(ev);
    else if (ev.type === 'end') {
      const { type: _type, ...rest } = ev;
      end = rest;
      return;
    } else return;
    if (!queued) {
      queued = true;
      requestAnimationFrame(show);
    }
  };
  await readNdjson(res, onEvent);
  if (!end) throw new ApiError(0, 'network', 'The connection ended before the cell did: its result is unknown.');
  if (end.error && !end.status) {
    throw new ApiError(end.http_status || 500, end.error.code || '', end.error.message || 'The cell failed.');
  }
  return end;
}

/**
 * Wire the notebook. session: {id()}; hooks.opened(on) tells the page that the notebook took
 * the place of the editor (or gave it back). Returns {sessionChanged(id), open(), close(), isOpen()}.
 */
export function initNotebook(session, hooks = {}) {
  let sid = null;
  let ctx = null;         // {id, language} of the context the cells run in
  let cells = [];         // [{node, editor, prompt, out, state}]
  let running = null;     // the cell whose request is in flight
  let queue = [];         // cells waiting their turn
  let wrap = false;
  let saveTimer = null;
  let keptCells = null;   // the session's cells, made into editors when the notebook first opens

  const base = () => `/v1/sessions/${enc(sid)}`;
  const ctxUrl = (tail = '') => `${base()}/contexts/${enc(ctx.id)}${tail}`;
  const language = () => $('nb-language').value;

  function setState(kind, text) {
    const box = $('nb-state');
    box.dataset.state = kind;
    box.textContent = text;
    $('nb-interrupt').disabled = !running;
    // Another language is another interpreter: not while a cell of this one runs.
    $('nb-language').disabled = Boolean(running || queue.length);
    $('nb-restart').disabled = !ctx;
    $('nb-shutdown').disabled = !ctx;
  }

  function idleState() {
    if (running) setState('busy', `Running cell ${cells.indexOf(running) + 1}…`);
    else if (ctx) setState('idle', `${LANGS[ctx.language]} interpreter ${ctx.id.slice(0, 8)}… idle`);
    else setState('none', 'No interpreter yet: running a cell starts one');
  }

  // ---- cells ----
  function saveNow() {
    clearTimeout(saveTimer);
    saveTimer = null;
    if (!sid || !cells.length) return; // never opened: what is stored stays
    try {
      localStorage.setItem(STORE(sid), JSON.stringify({ language: language(),
        cells: cells.map((c) => c.editor.getText()) }));
    } catch { /* storage full: the cells are only not kept */ }
  }

  function save() {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(saveNow, 300);
  }

  function renumber() {
    cells.forEach((c, i) => {
      c.node.setAttribute('aria-label', `Cell ${i + 1}`);
      c.runButton.setAttribute('aria-label', `Run cell ${i + 1}`);
      c.deleteButton.setAttribute('aria-label', `Delete cell ${i + 1}`);
    });
  }

  function setPrompt(cell, text, state) {
    cell.prompt.textContent = text;
    cell.state = state;
    cell.node.dataset.state = state;
    cell.node.setAttribute('aria-busy', String(state === 'running'));
  }

  function addCell(code = '', after = null, focus = true) {
    const holder = el('div', { class: 'nb-editor' });
    const cell = { state: 'new' };
    cell.prompt = el('span', { class: 'nb-prompt', text: '[ ]' });
    cell.runButton = el('button', { type: 'button', class: 'nb-run', text: 'Run',
      onclick: () => runCell(cell, 'stay') });
    cell.deleteButton = el('button', { type: 'button', class: 'link nb-delete', text: 'Delete',
      onclick: () => deleteCell(cell) });
    cell.out = el('div', { class: 'nb-out' }); // a one-line verdict is announced instead
    cell.node = el('div', { class: 'nb-cell', role: 'group', 'data-state': 'new' },
      el('div', { class: 'nb-gutter' }, cell.prompt),
      el('div', { class: 'nb-body' }, holder,
        el('div', { class: 'nb-tools' }, cell.runButton, cell.deleteButton), cell.out));
    const where = after ? cells.indexOf(after) + 1 : cells.length;
    cells.splice(where, 0, cell);
    const next = cells[where + 1];
    $('nb-cells').insertBefore(cell.node, next ? next.node : null);
    cell.editor = createEditor(holder, {
      doc: code, language: language(), wrap, label: 'Cell code',
      placeholder: `${LANGS[language()]} code: Shift+Enter runs it`,
      keys: [
        { key: 'Shift-Enter', run: () => runCell(cell, 'next') },
        { key: 'Alt-Enter', run: () => runCell(cell, 'insert') },
      ],
      onRun: () => runCell(cell, 'stay'),
      onChange: save,
    });
    renumber();
    save();
    if (focus) cell.editor.focus();
    return cell;
  }

  function deleteCell(cell) {
    if (cell === running) { notice('This cell is running: interrupt it first.', 'info'); return; }
    const i = cells.indexOf(cell);
    queue = queue.filter((c) => c !== cell);
    cells.splice(i, 1);
    cell.node.remove();
    if (!cells.length) addCell('', null, false);
    renumber();
    save();
    const near = cells[Math.min(i, cells.length - 1)];
    near.editor.focus();
  }

  function clearCells(codes) {
    queue = [];
    for (const c of cells) c.node.remove();
    cells = [];
    for (const code of codes.length ? codes : ['']) addCell(code, null, false);
  }

  // ---- the context ----
  // The page's own calls that occupy the context (execute, variables) go one at a time, so that
  // the page never races itself into 409 context_busy; interrupt and restart do not wait.
  let lock = Promise.resolve();
  function exclusive(fn) {
    const run = lock.then(fn, fn);
    lock = run.catch(() => {});
    return run;
  }

  // One lookup or creation at a time: a second caller gets the first one's answer.
  let finding = null;
  function ensureContext() {
    if (ctx && ctx.language === language()) return Promise.resolve(false);
    if (!finding) finding = findContext().finally(() => { finding = null; });
    return finding;
  }

  async function findContext() {
    ctx = null;
    let found = null;
    try {
      const got = await api('GET', `${base()}/contexts`);
      const list = Array.isArray(got) ? got : (got && got.contexts) || [];
      found = list.find((c) => c.language === language()) || null;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 401) throw err;
    }
    if (!found) found = await api('POST', `${base()}/contexts`, { json: { language: language() } });
    ctx = { id: found.id, language: found.language || language() };
    idleState();
    return true;
  }

  // Shift+Enter: run, then the next cell (a new one at the end); Alt+Enter: run, then a new cell
  // below; Ctrl+Enter and the Run button: run and stay.
  function runCell(cell, then) {
    if (!sid) return;
    if (cell.state !== 'queued' && cell !== running) {
      setPrompt(cell, '[*]', 'queued');
      queue.push(cell);
      pump();
    }
    if (then === 'next') {
      const i = cells.indexOf(cell);
      if (cells[i + 1]) cells[i + 1].editor.focus();
      else addCell('', cell);
    } else if (then === 'insert') {
      addCell('', cell);
    }
  }

  async function pump() {
    if (running || !queue.length) return;
    const cell = queue.shift();
    running = cell;
    setPrompt(cell, '[*]', 'running');
    cell.out.replaceChildren(el('p', { class: 'nb-running', role: 'status', text: 'Running…' }));
    idleState();
    let ok = false;
    try {
      ok = await exclusive(() => execute(cell));
    } catch (err) {
      setPrompt(cell, '[!]', 'failed');
      cell.out.replaceChildren(el('p', { class: 'nb-failed', text: `The cell did not run: ${err.message}` }));
      if (err instanceof ApiError && err.code === 'context_busy') {
        cell.out.append(el('p', { class: 'help', text: 'Another caller is running a cell in this interpreter: wait, or Interrupt it.' }));
      }
    }
    running = null;
    if (!ok && queue.length) { // as in Jupyter: an error stops the cells queued after it
      for (const c of queue) {
        setPrompt(c, '[ ]', 'new');
        c.out.replaceChildren(el('p', { class: 'help', text: 'Not run: an earlier cell failed or was interrupted.' }));
      }
      queue = [];
    }
    idleState();
    refreshVariables();
    pump();
  }

  /** The per-cell limits filled in (wall and CPU time: the rest are the context's), or undefined. */
  function cellLimits() {
    const out = {};
    const ms = (id) => Math.round(parseFloat($(id).value) * 1000);
    if ($('nb-limit-wall').value) out.wall_ms = ms('nb-limit-wall');
    if ($('nb-limit-cpu').value) out.cpu_ms = ms('nb-limit-cpu');
    return Object.keys(out).length ? out : undefined;
  }

  // The defaults and maxima the Run panel shows (from the OpenAPI document), once they are known.
  function showLimitDefaults() {
    const parts = [];
    for (const [mine, runs, name] of [['nb-limit-wall', 'limit-wall', 'wall'], ['nb-limit-cpu', 'limit-cpu', 'CPU']]) {
      const from = $(runs);
      if (from.placeholder && from.placeholder !== 'default') $(mine).placeholder = from.placeholder;
      if (from.max) $(mine).max = from.max;
      const v = $(mine).value || (from.placeholder !== 'default' ? from.placeholder : '');
      if (v) parts.push(`${name} ${v} s`);
    }
    $('nb-limits-summary').textContent = parts.length ? `(${parts.join(', ')})` : '';
  }

  async function execute(cell) {
    const code = cell.editor.getText();
    const limits = cellLimits();
    const lang = language();
    const fresh = await ensureContext();
    let res;
    let lostWhy = null;
    try {
      res = await executeStreamed(ctxUrl('/execute'), { code, limits }, cell.out);
    } catch (err) {
      // The context is gone (deleted elsewhere, or the service restarted): a new one runs the
      // cell, and the user is told that the earlier state did not survive.
      if (!(err instanceof ApiError) || err.status !== 404 || fresh) throw err;
      ctx = null;
      await ensureContext();
      res = await api('POST', ctxUrl('/execute'), { json: { code, limits } });
      lostWhy = 'The interpreter had stopped (deleted or the service restarted) and a new one ran this cell.';
      res.state = 'lost';
    }
    const count = res.execution_count;
    // A cell that ended its interpreter has no count of the new one: [!] rather than [0].
    setPrompt(cell, count > 0 ? `[${count}]` : '[!]', res.status === 'ok' ? 'done' : 'error');
    cell.node.dataset.count = count ?? '';
    renderOutputs(cell.out, res, { lostWhy, language: lang });
    if (res.state === 'lost') {
      notice('The interpreter\'s state was lost: variables from earlier cells are gone (see the cell).');
      for (const c of cells) if (c !== cell && /^\[\d+\]$/.test(c.prompt.textContent)) c.node.classList.add('nb-stale');
    }
    cell.node.classList.remove('nb-stale');
    const what = res.error ? `${res.error.name}` : res.status;
    announce(`Cell ${cells.indexOf(cell) + 1} [${count ?? ' '}]: ${what}${res.state === 'lost' ? ', state lost' : ''}.`);
    return res.status === 'ok';
  }

  // ---- variables ----
  let varsSeq = 0;
  async function refreshVariables() {
    const body = $('nb-vars');
    const seq = ++varsSeq;
    if (!ctx) {
      body.replaceChildren(el('tr', {}, el('td', { colspan: 3, class: 'empty', text: 'No interpreter yet.' })));
      return;
    }
    let got;
    try {
      got = await exclusive(() => (ctx ? api('GET', ctxUrl('/variables')) : []));
    } catch (err) {
      if (seq !== varsSeq) return;
      body.replaceChildren(el('tr', {}, el('td', { colspan: 3, class: 'empty', text: `Not available: ${err.message}` })));
      return;
    }
    if (seq !== varsSeq) return;
    const list = Array.isArray(got) ? got : (got && got.variables) || [];
    body.replaceChildren(...(list.length ? list.map((v) => el('tr', { 'data-name': v.name },
      el('th', { scope: 'row', class: 'mono', text: v.name }),
      el('td', { class: 'mono', text: v.type || '' }),
      el('td', {}, el('code', { class: 'nb-repr', text: v.repr ?? '' }))))
      : [el('tr', {}, el('td', { colspan: 3, class: 'empty', text: 'No variables yet.' }))]));
  }

  // ---- toolbar ----
  async function interrupt() {
    if (!ctx || !running) return;
    try {
      await api('POST', ctxUrl('/interrupt'), { json: {} });
      announce('Interrupt sent.');
    } catch (err) {
      notice(err.message);
    }
  }

  async function restart() {
    if (!ctx) return;
    if (!confirm('Restart the interpreter? Every variable, import and definition is lost; the cells stay.')) return;
    const button = $('nb-restart');
    button.disabled = true;
    try {
      await api('POST', ctxUrl('/restart'), { json: {} });
      for (const c of cells) if (/^\[\d+\]$/.test(c.prompt.textContent)) c.node.classList.add('nb-stale');
      notice('Restarted: a fresh interpreter, with no variables. Run the cells again to rebuild them.', 'info');
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) ctx = null;
      else notice(err.message);
    } finally {
      idleState();
      refreshVariables();
    }
  }

  async function shutdown() {
    if (!ctx) return;
    if (!confirm('Shut the interpreter down? Its state is lost; the cells stay, and the next run starts a new one.')) return;
    const gone = ctx;
    queue = [];
    ctx = null;
    try {
      await api('DELETE', `${base()}/contexts/${enc(gone.id)}`);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) notice(err.message);
    }
    for (const c of cells) if (/^\[\d+\]$/.test(c.prompt.textContent)) c.node.classList.add('nb-stale');
    idleState();
    refreshVariables();
  }

  function switchLanguage() {
    // Another language is another interpreter: the cells' code stays, their outputs go.
    ctx = null;
    for (const c of cells) {
      c.editor.setLanguage(language());
      setPrompt(c, '[ ]', 'new');
      c.out.replaceChildren();
      c.node.classList.remove('nb-stale');
    }
    save();
    idleState();
    ensureContext().then(refreshVariables, (err) => notice(err.message));
  }

  function open() {
    if (!sid) { notice('Start or resume a session first: the notebook runs in its session.', 'info'); return; }
    $('notebook').hidden = false;
    document.body.classList.add('notebook-mode');
    if (keptCells) {
      clearCells(keptCells);
      keptCells = null;
    }
    $('notebook-toggle').setAttribute('aria-pressed', 'true');
    if (hooks.opened) hooks.opened(true);
    idleState();
    refreshVariables();
    showLimitDefaults();
    (cells.find((c) => c.state === 'new' && !c.editor.getText()) || cells[cells.length - 1]).editor.focus();
  }

  function close() {
    $('notebook').hidden = true;
    document.body.classList.remove('notebook-mode');
    $('notebook-toggle').setAttribute('aria-pressed', 'false');
    if (hooks.opened) hooks.opened(false);
  }

  function sessionChanged(id) {
    if (id === sid) return;
    if (saveTimer) saveNow(); // the last edits belong to the session being left
    sid = id;
    ctx = null;
    running = null;
    queue = [];
    let kept = null;
    try { kept = id && JSON.parse(localStorage.getItem(STORE(id)) || 'null'); } catch { /* ignored */ }
    if (kept && LANGS[kept.language]) $('nb-language').value = kept.language;
    // No editors until the notebook is shown: the page stays as light as before for everyone else.
    for (const c of cells) c.node.remove();
    cells = [];
    keptCells = kept && Array.isArray(kept.cells) ? kept.cells.filter((c) => typeof c === 'string') : [];
    if (!id) { close(); return; }
    idleState();
    if (!$('notebook').hidden) open();
  }

  $('notebook-toggle').addEventListener('click', () => ($('notebook').hidden ? open() : close()));
  $('nb-close').addEventListener('click', () => { close(); $('notebook-toggle').focus(); });
  $('nb-add').addEventListener('click', () => addCell('', null, true));
  $('nb-interrupt').addEventListener('click', interrupt);
  $('nb-restart').addEventListener('click', restart);
  $('nb-shutdown').addEventListener('click', shutdown);
  $('nb-language').addEventListener('change', switchLanguage);
  $('nb-vars-refresh').addEventListener('click', refreshVariables);
  for (const id of ['nb-limit-wall', 'nb-limit-cpu']) $(id).addEventListener('input', showLimitDefaults);
  idleState();

  return {
    sessionChanged,
    open,
    close,
    isOpen: () => !$('notebook').hidden,
    setWrap(on) { wrap = on; for (const c of cells) c.editor.setWrap(on); },
  };
}
