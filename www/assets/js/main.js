// main.js: the playground's entry: token, editor, language picker, Run, the shell, and the glue
// between the session pane, the Tests panel and the open document.
import { createEditor, hasMode } from '/vendor/editor.js';
import { api, takeTokenFromUrl, getToken, setToken, clearToken } from './api.js';
import { $, notice, clearNotice, busy, setupTabs, el } from './ui.js';
import { renderResult } from './result.js';
import { initSession } from './session.js';
import { initEvaluate, loadCases } from './evaluate.js';
import { initReference, loadLimits, forgetOpenApi } from './reference.js';
import { initExamples, EXAMPLES } from './examples.js';
import { snippet } from './snippets.js';
import { initNotebook } from './notebook.js';
import { runStreamed, sendStdin, sendSignal, liveView, agrees } from './runs.js';
import { initBackground } from './background.js';

const NAMES = { python: 'Python', bash: 'Bash', node: 'JavaScript (Node)', javascript: 'JavaScript',
  c: 'C', cpp: 'C++' };
const EXTENSIONS = { py: 'python', sh: 'bash', bash: 'bash', js: 'node', mjs: 'node', cjs: 'node',
  c: 'c', h: 'c', cpp: 'cpp', cc: 'cpp', cxx: 'cpp', hpp: 'cpp' };
const SAMPLES = {
  python: '# Ctrl+Enter runs this; the Input box is its stdin.\nimport sys\n\nname = sys.stdin.readline().strip() or "world"\nprint(f"Hello, {name}!")\n',
  bash: '# Ctrl+Enter runs this; the Input box is its stdin.\nread -r name || true\necho "Hello, ${name:-world}!"\n',
  node: '// Ctrl+Enter runs this; the Input box is its stdin.\nconst input = require("fs").readFileSync(0, "utf8").trim();\nconsole.log(`Hello, ${input || "world"}!`);\n',
  c: '// Ctrl+Enter compiles and runs this; the Input box is its stdin.\n#include <stdio.h>\n\nint main(void) {\n    char name[100] = "world";\n    if (scanf("%99s", name) != 1) { /* keep the default */ }\n    printf("Hello, %s!\\n", name);\n    return 0;\n}\n',
  cpp: '// Ctrl+Enter compiles and runs this; the Input box is its stdin.\n#include <iostream>\n#include <string>\n\nint main() {\n    std::string name;\n    if (!(std::cin >> name)) name = "world";\n    std::cout << "Hello, " << name << "!\\n";\n}\n',
};

let languages = []; // [{id, version, aliases, compiled}] from GET /v1/languages
let session = null;
let notebook = null;
// The document in the editor: scratch code (path null) or a session file.
const doc = { path: null, dirty: false, loading: false };

function modeName(langId) {
  const lang = languages.find((l) => l.id === langId);
  const names = [langId, ...((lang && lang.aliases) || [])];
  return names.find(hasMode) || langId;
}

function currentLanguage() {
  return $('language').value;
}

function setLanguage(id) {
  if (!languages.some((l) => l.id === id)) return;
  $('language').value = id;
  editor.setLanguage(modeName(id));
}

// The service's id for a file name's extension (ids and aliases both count).
function languageForPath(path) {
  const guess = EXTENSIONS[(path.split('.').pop() || '').toLowerCase()];
  if (!guess) return null;
  const lang = languages.find((l) => l.id === guess || (l.aliases || []).includes(guess));
  return lang ? lang.id : null;
}

function showDoc() {
  // In a session, code that is not a file is written as the language's source file when it runs.
  const lang = languages.find((l) => l.id === currentLanguage());
  const asFile = lang && lang.source_file ? `runs as ${lang.source_file} in the session` : 'not a file';
  $('file-name').textContent = doc.path || (session && session.id() ? `scratch code (${asFile})` : 'scratch');
  $('dirty').hidden = !doc.dirty || !doc.path; // scratch code has nothing to save
  $('save').hidden = !doc.path;
}

// Line wrapping of the editor and of every output box: the user's choice, kept in this browser;
// until there is one, wrapped on a phone (where sideways scrolling is awkward) and not elsewhere.
const WRAP_KEY = 'sbx.wrap';
function wrapWanted() {
  const kept = localStorage.getItem(WRAP_KEY);
  return kept === null ? matchMedia('(max-width: 760px)').matches : kept === 'on';
}

const editor = createEditor($('editor'), {
  label: 'Code editor',
  language: 'python',
  wrap: wrapWanted(),
  onRun: () => run(),
  onSave: () => { if (doc.path) busy($('save'), () => session.save()); },
  onChange: () => {
    if (doc.loading || doc.dirty) return;
    doc.dirty = true;
    showDoc();
  },
});

function loadText(text) {
  doc.loading = true;
  editor.setText(text);
  doc.loading = false;
}

const docApi = {
  open(path, text) {
    doc.path = path;
    doc.dirty = false;
    loadText(text);
    const lang = languageForPath(path);
    if (lang) setLanguage(lang);
    showDoc();
  },
  close() {
    doc.path = null;
    doc.dirty = false;
    loadText(SAMPLES[currentLanguage()] || '');
    showDoc();
  },
  path: () => doc.path,
  text: () => editor.getText(),
  dirty: () => doc.dirty,
  saved() { doc.dirty = false; showDoc(); },
  renamed(path) { doc.path = path; showDoc(); },
};

async function loadLanguages() {
  const got = await api('GET', '/v1/languages');
  languages = Array.isArray(got) ? got : (got && got.languages) || [];
  const pick = $('language');
  const was = pick.value;
  pick.replaceChildren(...languages.map((l) => el('option', { value: l.id,
    text: `${NAMES[l.id] || l.id}${l.version ? ' ' + l.version : ''}${l.compiled ? ' (compiled)' : ''}` })));
  pick.disabled = false;
  const first = languages.some((l) => l.id === was) ? was
    : (languages.find((l) => l.id === 'python') || languages[0] || {}).id;
  if (first) setLanguage(first);
  if (!doc.path && !doc.dirty) loadText(SAMPLES[first] || '');
}

/** The request's "limits" from the Run panel's options (only what the user filled in), or undefined. */
function limits() {
  const out = {};
  const seconds = (id) => Math.round(parseFloat($(id).value) * 1000);
  if ($('limit-wall').value) out.wall_ms = seconds('limit-wall');
  if ($('limit-cpu').value) out.cpu_ms = seconds('limit-cpu');
  if ($('limit-mem').value) out.memory_mb = Math.round(parseFloat($('limit-mem').value));
  return Object.keys(out).length ? out : undefined;
}

function runArgs() {
  const args = $('args').value.trim();
  return args ? args.split(/\s+/) : undefined;
}

function runTitle() {
  const lang = languages.find((l) => l.id === currentLanguage());
  return `${NAMES[currentLanguage()] || currentLanguage()}${lang && lang.version ? ' ' + lang.version : ''}` +
    (doc.path ? ` · ${doc.path}` : '');
}

/** {path, body} of the request Run sends now (also what "Copy this run as" copies). */
function runRequest() {
  const sid = session.id();
  const body = { language: currentLanguage(), stdin: $('stdin').value, args: runArgs(), limits: limits() };
  let path = '/v1/execute';
  if (sid) {
    path = `/v1/sessions/${encodeURIComponent(sid)}/execute`;
    // A session file runs under its own name (so imports of its neighbours work); sending it
    // as the first of `files` also saves it in the session.
    if (doc.path) {
      body.files = [{ name: doc.path, content: editor.getText() }];
    } else {
      body.code = editor.getText();
    }
  } else {
    body.code = editor.getText();
  }
  return { path, body };
}

// The run in progress: its id (from the stream's start event) and how many times Stop was pressed.
const live = { id: null, stops: 0 };

function showControls(on, interactive = false) {
  $('run-controls').hidden = !on;
  $('run-input-form').hidden = !interactive;
  $('run-input').disabled = false;
  $('run-send').disabled = false;
  $('run-eof').disabled = false;
  $('run-stop').disabled = !live.id;
  $('run-stop').textContent = 'Stop';
  $('run-sent').textContent = '';
  if (!on) $('run-input').value = '';
}

async function sendLine(e) {
  e.preventDefault();
  if (!live.id) return;
  const line = $('run-input').value;
  $('run-input').value = '';
  try {
    await sendStdin(live.id, `${line}\n`);
    $('run-sent').textContent = `Sent: ${line}`;
  } catch (err) {
    notice(err.message);
  }
}

async function sendEof() {
  if (!live.id) return;
  try {
    await sendStdin(live.id, '', true);
    $('run-sent').textContent = 'Sent: end of input';
    $('run-input').disabled = true;
    $('run-send').disabled = true;
    $('run-eof').disabled = true;
  } catch (err) {
    notice(err.message);
  }
}

// Stop: SIGINT first (Python shows its KeyboardInterrupt), SIGKILL if pressed again.
async function stopRun() {
  if (!live.id) return;
  const sig = live.stops ? 'SIGKILL' : 'SIGINT';
  live.stops++;
  $('run-stop').textContent = 'Kill';
  $('run-stop').title = 'Press again to kill it (SIGKILL)';
  try {
    await sendSignal(live.id, sig);
    $('run-sent').textContent = `Sent ${sig}`;
  } catch (err) {
    notice(err.message);
  }
}

async function run() {
  const button = $('run');
  if (button.disabled) return;
  if (!languages.length) {
    notice('The languages are not loaded yet: check the token (Token button) and reload.');
    return;
  }
  const out = $('output');
  selectTab('run');
  await busy(button, async () => {
    clearNotice();
    const sid = session.id();
    const { path, body } = runRequest();
    const sent = body.files ? body.files[0].content : null;
    const interactive = $('interactive').checked;
    const view = liveView(out, runTitle());
    live.id = null;
    live.stops = 0;
    showControls(true, interactive);
    let got;
    try {
      got = await runStreamed(path, body, {
        start: (id) => { live.id = id; $('run-stop').disabled = false; if (interactive) $('run-input').focus(); },
        output: (stream, text) => view.append(stream, text),
      }, interactive);
    } catch (err) {
      out.replaceChildren(el('p', { class: 'empty', text: 'The run did not happen: see the message above.' }));
      throw err;
    } finally {
      live.id = null;
      showControls(false);
    }
    const { result, streamed } = got;
    renderResult(out, result, { title: runTitle(), stdin: interactive ? null : body.stdin,
      code: sent ?? body.code, language: body.language });
    out.dataset.streamed = String(streamed);
    if (streamed && !agrees(view, result)) {
      out.prepend(el('p', { class: 'why', role: 'note',
        text: 'The output shown while it ran differs from the final result; the final result is below.' }));
    }
    if (sent !== null && sent === editor.getText()) docApi.saved();
    if (sid) session.refresh().catch(() => {});
  });
}

const shellHistory = [];
let shellAt = 0;

async function runShell(e) {
  e.preventDefault();
  const cmd = $('shell-cmd').value;
  if (!cmd.trim() || !session.id()) return;
  if (shellHistory[shellHistory.length - 1] !== cmd) shellHistory.push(cmd);
  shellAt = shellHistory.length;
  await busy($('shell-run'), async () => {
    const view = liveView($('shell-output'), `$ ${cmd}`);
    const { result } = await runStreamed(`/v1/sessions/${encodeURIComponent(session.id())}/run`,
      { cmd, limits: limits() }, { output: (stream, text) => view.append(stream, text) });
    renderResult($('shell-output'), result, { title: `$ ${cmd}` });
    session.refresh().catch(() => {});
  });
}

function showWhere() {
  const id = session && session.id();
  $('where').textContent = !id ? 'Scratch: nothing is kept between runs'
    : notebook && notebook.isOpen() ? `Notebook in session ${id.slice(0, 8)}…: variables are kept between cells`
      : `Session ${id.slice(0, 8)}…: files are kept`;
}

function sessionChanged(id) {
  if (notebook) notebook.sessionChanged(id);
  showWhere();
  $('shell-off').hidden = Boolean(id);
  $('shell-form').hidden = !id;
  background.sessionChanged(id);
  showDoc();
}

// ---- token ----
function showTokenState() {
  const has = Boolean(getToken());
  $('token-button').textContent = has ? 'Token ✓' : 'Set token';
  $('token-button').setAttribute('aria-label', has ? 'Token set: change or forget it' : 'Set the access token');
  $('token-button').classList.toggle('missing', !has);
}

function askToken(why = '') {
  $('token-why').textContent = why;
  $('token-why').hidden = !why;
  $('token-input').value = '';
  $('token-clear').hidden = !getToken();
  $('token-dialog').showModal();
  $('token-input').focus();
}

async function afterToken() {
  showTokenState();
  if (!getToken()) return;
  forgetOpenApi();
  try {
    await loadLanguages();
    loadLimits();
    await session.start();
    clearNotice();
  } catch (err) {
    notice(err.message);
  }
}

$('token-button').addEventListener('click', () => askToken());
window.addEventListener('sbx:unauthorized', (e) => {
  if (!$('token-dialog').open) askToken(e.detail.message);
});
$('token-dialog').addEventListener('close', () => {
  const action = $('token-dialog').returnValue;
  if (action === 'save' && $('token-input').value.trim()) {
    setToken($('token-input').value);
    afterToken();
  } else if (action === 'clear') {
    clearToken();
    showTokenState();
    notice('Token forgotten: set one to use the service.', 'info');
  }
});

// ---- copy this run as curl / Python / JavaScript ----
async function copyAs(kind) {
  if (!languages.length) {
    notice('The languages are not loaded yet: check the token (Token button) and reload.');
    return;
  }
  const { path, body } = runRequest();
  const { title, text } = snippet(kind, location.origin + path, body);
  $('snippet-title').textContent = `This run as ${title}`;
  $('snippet').textContent = text;
  $('snippet-box').hidden = false;
  try {
    await navigator.clipboard.writeText(text);
    notice(`Copied this run as ${title}. It reads the token from $SBX_TOKEN; the text also shows below.`, 'info');
  } catch {
    notice('The browser did not allow copying: select the text in the box below and copy it.', 'info');
  }
}

// ---- examples ----
function loadExample(x) {
  if (doc.path && doc.dirty && !confirm(`Leave ${doc.path} without saving it?`)) return;
  doc.path = null;
  setLanguage(x.language);
  loadText(x.code);
  doc.dirty = false;
  showDoc();
  $('output').replaceChildren();
  if (x.tests) {
    loadCases(x.tests);
    selectTab('tests');
  } else {
    $('stdin').value = x.stdin || '';
    selectTab('run');
  }
  notice(`Loaded the example “${x.title}”: ${x.tests ? 'Run tests' : 'Run'} runs it.`, 'info');
  editor.focus();
}

function setWrap(on) {
  editor.setWrap(on);
  if (notebook) notebook.setWrap(on);
  document.body.classList.toggle('nowrap', !on);
  $('wrap').checked = on;
}

// ---- wiring ----
const selectTab = setupTabs(document.querySelector('.tabs'));
notebook = initNotebook({ id: () => session && session.id() }, {
  // The notebook takes the place of the editor and the Run/Tests/Shell panels (and of the
  // scratch Run button in the top bar, which would run the hidden editor's code).
  opened: () => showWhere(),
});
const background = initBackground({ id: () => session && session.id(), limits,
  visible: () => !$('panel-shell').hidden });
session = initSession(docApi, sessionChanged);
initEvaluate({ language: currentLanguage, code: () => editor.getText(), sessionId: () => session.id(), limits });
initReference();
initExamples({ languages: () => languages, names: NAMES, load: loadExample });
for (const button of document.querySelectorAll('[data-copy]')) {
  button.addEventListener('click', () => copyAs(button.dataset.copy));
}
$('snippet-close').addEventListener('click', () => { $('snippet-box').hidden = true; });
setWrap(wrapWanted());
$('wrap').addEventListener('change', () => {
  localStorage.setItem(WRAP_KEY, $('wrap').checked ? 'on' : 'off');
  setWrap($('wrap').checked);
});
$('run').addEventListener('click', run);
// The editor lives in a shadow root, so the skip link focuses it rather than jumping to it.
document.querySelector('.skip').addEventListener('click', (e) => { e.preventDefault(); editor.focus(); });
$('save').addEventListener('click', (e) => busy(e.currentTarget, () => session.save()));
$('shell-form').addEventListener('submit', runShell);
$('run-input-form').addEventListener('submit', sendLine);
$('run-eof').addEventListener('click', sendEof);
$('run-stop').addEventListener('click', stopRun);
$('interactive').checked = localStorage.getItem('sbx.interactive') === 'on';
$('interactive').addEventListener('change', () => {
  localStorage.setItem('sbx.interactive', $('interactive').checked ? 'on' : 'off');
});
// Up and Down walk the commands run before, as in a terminal.
$('shell-cmd').addEventListener('keydown', (e) => {
  if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') return;
  e.preventDefault();
  shellAt = Math.max(0, Math.min(shellHistory.length, shellAt + (e.key === 'ArrowUp' ? -1 : 1)));
  $('shell-cmd').value = shellHistory[shellAt] || '';
});
$('language').addEventListener('change', () => {
  const before = editor.getText();
  const id = currentLanguage();
  editor.setLanguage(modeName(id));
  showDoc();
  // Swap the sample only while the user has not written anything of their own.
  if (!doc.path && (!before.trim() || Object.values(SAMPLES).includes(before) ||
      EXAMPLES.some((x) => x.code === before))) {
    loadText(SAMPLES[id] || '');
    doc.dirty = false;
    showDoc();
  }
});
// Ctrl/Cmd+Enter in a form field submits that form (tests, shell); anywhere else it runs the code.
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Enter' || !(e.ctrlKey || e.metaKey) || e.defaultPrevented) return;
  e.preventDefault();
  const form = e.target.closest && e.target.closest('form');
  if (form && form.id !== 'token-form') form.requestSubmit();
  else if (!notebook.isOpen()) run(); // in the notebook, a cell's own keys run it
});
// Ctrl/Cmd+S saves the open session file from anywhere, instead of saving the web page.
document.addEventListener('keydown', (e) => {
  if (e.key.toLowerCase() !== 's' || !(e.ctrlKey || e.metaKey) || e.defaultPrevented) return;
  e.preventDefault();
  if (doc.path) busy($('save'), () => session.save());
});
window.addEventListener('beforeunload', (e) => {
  if (doc.dirty && doc.path) e.preventDefault();
});

takeTokenFromUrl();
showTokenState();
showDoc();
loadText(SAMPLES.python);
if (getToken()) afterToken();
else askToken();
