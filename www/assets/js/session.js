// session.js: a session in the page: create, resume, fork, leave and delete it, show its expiry and
// disk use, and its file tree with the file actions (new, open, save, rename, delete, upload,
// download). The open file itself is the editor's; this module talks to it through `doc`.
import { api, filePath, ApiError } from './api.js';
import { $, el, notice, busy, formatBytes, fromNow, toDate } from './ui.js';

const SESSION_KEY = 'sbx.session';
const MAX_OPEN_BYTES = 2 * 1024 * 1024; // bigger files are for downloading, not the editor

const enc = encodeURIComponent;
const isDir = (type) => type === 'dir' || type === 'directory';
// One shell word, whatever the path holds.
const shellQuote = (s) => `'${s.replace(/'/g, "'\\''")}'`;
const cleanPath = (p) => p.split('/').filter((s) => s !== '' && s !== '.').join('/');

/**
 * Wire the session pane. doc = {open(path, text), close(), path(), text(), dirty(), saved(),
 * renamed(path)}; onChange(id) is called whenever the session changes (null when none).
 * Returns {id(), refresh(), save()}.
 */
export function initSession(doc, onChange) {
  let id = null;
  let info = null;
  let selected = null; // {path, type} of the highlighted tree item
  let nameSubmit = null; // what the name form does on submit
  let known = new Set(); // every path of the last tree listing

  const sessionUrl = (suffix = '') => `/v1/sessions/${enc(id)}${suffix}`;

  function showFacts() {
    $('session-id').textContent = id;
    const expires = info && info.expires_at ? toDate(info.expires_at) : null;
    $('session-expires').textContent = expires
      ? `${fromNow(expires)} (${expires.toLocaleTimeString()}, extended by each use)` : '?';
    const files = info && info.file_count === 1 ? '1 file' : `${info ? info.file_count ?? '?' : '?'} files`;
    $('session-disk').textContent = info ? `${formatBytes(info.bytes_used)}` +
      `${info.quota_bytes ? ' of ' + formatBytes(info.quota_bytes) : ''} in ${files}` : '?';
  }

  async function refreshFacts() {
    if (!id) return;
    try {
      info = await api('GET', sessionUrl());
    } catch (err) {
      if (err.status !== 404) throw err;
      // Expired (idle past its TTL) or deleted elsewhere: nothing here can be saved any more.
      doc.saved();
      await leave();
      notice('This session has expired or was deleted: its files are gone. Start a new one.');
      return;
    }
    showFacts();
  }

  function buildTree(list) {
    const root = { path: '', type: 'dir', children: new Map() };
    for (const f of list) {
      const parts = cleanPath(f.path).split('/');
      let node = root;
      parts.forEach((name, i) => {
        if (!node.children.has(name)) {
          node.children.set(name, { name, path: parts.slice(0, i + 1).join('/'), type: 'dir',
            children: new Map() });
        }
        node = node.children.get(name);
      });
      node.type = isDir(f.type) ? 'dir' : 'file';
      node.size = f.size;
    }
    return root;
  }

  function renderNodes(node) {
    const kids = [...node.children.values()].sort((a, b) =>
      (a.type === b.type ? a.name.localeCompare(b.name) : a.type === 'dir' ? -1 : 1));
    return kids.map((k) => {
      const current = selected && selected.path === k.path;
      const item = el('button', {
        type: 'button', class: `tree-item ${k.type === 'dir' ? 'is-dir' : 'is-file'}`,
        'data-path': k.path, 'data-type': k.type, 'aria-current': current ? 'true' : null,
        'aria-label': `${k.type === 'dir' ? 'folder' : 'file'} ${k.path}`,
        onclick: () => pick(k),
      }, el('span', { class: 'tree-name', text: k.name }),
      k.type === 'file' ? el('span', { class: 'tree-size', text: formatBytes(k.size) }) : null);
      const sub = k.type === 'dir' && k.children.size ? el('ul', {}, renderNodes(k)) : null;
      return el('li', {}, item, sub);
    });
  }

  async function refreshTree() {
    if (!id) return;
    const got = await api('GET', sessionUrl('/files'));
    const list = Array.isArray(got) ? got : (got && got.files) || [];
    known = new Set(list.map((f) => cleanPath(f.path)));
    const tree = $('file-tree');
    const focused = document.activeElement && document.activeElement.dataset
      ? document.activeElement.dataset.path : undefined;
    tree.replaceChildren(...renderNodes(buildTree(list)));
    if (!list.length) tree.append(el('li', { class: 'empty', text: 'No files yet: New file or Upload.' }));
    if (focused !== undefined) {
      const again = tree.querySelector(`[data-path="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
    updateButtons();
  }

  async function refresh() {
    await refreshFacts();
    if (id) await refreshTree(); // refreshFacts leaves an expired session
  }

  function updateButtons() {
    $('file-rename').disabled = !selected;
    $('file-delete').disabled = !selected;
    $('file-download').disabled = !selected || selected.type !== 'file';
    for (const b of $('file-tree').querySelectorAll('.tree-item')) {
      if (selected && b.dataset.path === selected.path) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
  }

  async function pick(node) {
    selected = { path: node.path, type: node.type };
    updateButtons();
    if (node.type === 'file' && node.path !== doc.path()) await openFile(node.path);
  }

  function discardOk() {
    return !doc.dirty() || confirm(`Discard the unsaved changes to ${doc.path() || 'the code'}?`);
  }

  async function openFile(path) {
    if (!discardOk()) return;
    try {
      const res = await api('GET', filePath(id, path), { raw: true });
      const bytes = await res.arrayBuffer();
      if (bytes.byteLength > MAX_OPEN_BYTES) {
        notice(`${path} is ${formatBytes(bytes.byteLength)}: too big for the editor; download it instead.`, 'info');
        return;
      }
      let text;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        notice(`${path} is not UTF-8 text; download it instead.`, 'info');
        return;
      }
      doc.open(path, text);
    } catch (err) {
      notice(err.message);
    }
  }

  /** Save the open file (if any) back to the session. Returns true when saved or nothing to do. */
  async function save() {
    const path = doc.path();
    if (!id || !path) return true;
    try {
      await api('PUT', filePath(id, path), { body: doc.text() });
      doc.saved();
      refresh().catch((err) => notice(err.message));
      return true;
    } catch (err) {
      notice(`Could not save ${path}: ${err.message}`);
      return false;
    }
  }

  let nameOpener = null; // the button that opened the name form gets the focus back

  function askName(label, value, submit) {
    nameOpener = document.activeElement;
    $('name-label').textContent = label;
    $('name-input').value = value;
    nameSubmit = submit;
    $('name-form').hidden = false;
    $('name-input').focus();
  }

  function closeName() {
    $('name-form').hidden = true;
    nameSubmit = null;
    if (nameOpener && nameOpener.isConnected && !nameOpener.disabled) nameOpener.focus();
    nameOpener = null;
  }

  // The folder new files go into: the selected folder, or the selected file's folder.
  function targetDir() {
    if (!selected) return '';
    const dir = selected.type === 'dir' ? selected.path : selected.path.split('/').slice(0, -1).join('/');
    return dir ? dir + '/' : '';
  }

  async function newFile(path) {
    // PUT would silently empty an existing file.
    if (known.has(path)) throw new Error(`${path} already exists: open it from the tree, or pick another name.`);
    await api('PUT', filePath(id, path), { body: '' });
    selected = { path, type: 'file' };
    await refresh();
    if (discardOk()) doc.open(path, '');
  }

  async function newFolder(path) {
    const res = await api('POST', sessionUrl('/run'), { json: { cmd: `mkdir -p -- ${shellQuote(path)}` } });
    if (res.status !== 'ok') throw new Error(`Could not make the folder: ${res.stderr || res.status}`);
    selected = { path, type: 'dir' };
    await refresh();
  }

  async function rename(from, to) {
    try {
      await api('POST', sessionUrl('/move'), { json: { from, to, overwrite: false } });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 409) throw err;
      if (!confirm(`${to} already exists. Replace it?`)) return;
      await api('POST', sessionUrl('/move'), { json: { from, to, overwrite: true } });
    }
    const open = doc.path();
    if (open === from) doc.renamed(to);
    else if (open && open.startsWith(from + '/')) doc.renamed(to + open.slice(from.length));
    selected = { path: to, type: selected ? selected.type : 'file' };
    await refresh();
  }

  async function remove() {
    const { path, type } = selected;
    if (!confirm(`Delete the ${type === 'dir' ? 'folder' : 'file'} ${path}? This cannot be undone.`)) return;
    await api('DELETE', filePath(id, path));
    const open = doc.path();
    if (open && (open === path || open.startsWith(path + '/'))) doc.close();
    selected = null;
    await refresh();
  }

  async function download() {
    const { path } = selected;
    const res = await api('GET', filePath(id, path), { raw: true });
    const url = URL.createObjectURL(await res.blob());
    const link = el('a', { href: url, download: path.split('/').pop(), class: 'sr-only' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  async function upload(fileList) {
    const dir = targetDir();
    const clash = fileList.filter((f) => known.has(dir + f.name)).map((f) => dir + f.name);
    if (clash.length && !confirm(`Replace ${clash.join(', ')}?`)) return;
    for (const file of fileList) await api('PUT', filePath(id, dir + file.name), { body: file });
    notice(`Uploaded ${fileList.length} file${fileList.length === 1 ? '' : 's'} to /${dir}.`, 'info');
    await refresh();
  }

  async function activate(newId) {
    info = await api('GET', `/v1/sessions/${enc(newId)}`);
    id = newId;
    selected = null;
    localStorage.setItem(SESSION_KEY, id);
    $('session-none').hidden = true;
    $('session-active').hidden = false;
    showFacts();
    await refreshTree();
    onChange(id);
  }

  async function leave() {
    if (!discardOk()) return;
    id = null;
    info = null;
    selected = null;
    localStorage.removeItem(SESSION_KEY);
    closeName();
    $('session-active').hidden = true;
    $('session-none').hidden = false;
    $('file-tree').replaceChildren();
    doc.close();
    onChange(null);
    loadList().catch(() => {});
  }

  async function loadList() {
    const got = await api('GET', '/v1/sessions');
    const list = Array.isArray(got) ? got : (got && got.sessions) || [];
    const pick = $('session-pick');
    pick.replaceChildren(...(list.length ? list.map((s) => el('option', { value: s.id,
      text: `${s.id.slice(0, 8)}… expires ${s.expires_at ? fromNow(toDate(s.expires_at)) : '?'}` }))
      : [el('option', { value: '', text: '(none yet)' })]));
    pick.disabled = !list.length;
    $('session-resume').querySelector('button').disabled = !list.length;
  }

  // ---- wiring ----
  $('session-new').addEventListener('click', (e) => busy(e.currentTarget, async () => {
    const made = await api('POST', '/v1/sessions', { json: {} });
    await activate(made.id);
    notice('New session: its files are kept between runs.', 'info');
  }));
  $('session-resume').addEventListener('submit', (e) => {
    e.preventDefault();
    const wanted = $('session-pick').value;
    if (!wanted) { notice('No session to resume: make a new one.', 'info'); return; }
    busy(e.submitter || $('session-pick'), () => activate(wanted));
  });
  $('session-fork').addEventListener('click', (e) => busy(e.currentTarget, async () => {
    if (!(await save())) return;
    const from = id;
    const made = await api('POST', sessionUrl('/fork'), { json: {} });
    await activate(made.id);
    notice(`Forked ${from.slice(0, 8)}… into this new session; the original is unchanged.`, 'info');
  }));
  $('session-leave').addEventListener('click', () => leave());
  $('session-delete').addEventListener('click', (e) => busy(e.currentTarget, async () => {
    if (!confirm('Delete this session and all its files?')) return;
    await api('DELETE', sessionUrl());
    doc.saved();
    await leave();
  }));
  $('file-new').addEventListener('click', () => askName('New file path', targetDir(), newFile));
  $('folder-new').addEventListener('click', () => askName('New folder path', targetDir(), newFolder));
  $('file-rename').addEventListener('click', () =>
    askName(`New path for ${selected.path}`, selected.path, (to) => rename(selected.path, to)));
  $('file-delete').addEventListener('click', (e) => busy(e.currentTarget, remove));
  $('file-download').addEventListener('click', (e) => busy(e.currentTarget, download));
  $('file-upload').addEventListener('click', () => $('upload-input').click());
  $('upload-input').addEventListener('change', (e) => {
    const list = [...e.target.files];
    e.target.value = '';
    if (list.length) busy($('file-upload'), () => upload(list));
  });
  $('name-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const path = cleanPath($('name-input').value.trim());
    if (!path) return;
    const submit = nameSubmit;
    busy($('name-ok'), async () => { await submit(path); closeName(); });
  });
  $('name-cancel').addEventListener('click', closeName);
  $('name-form').addEventListener('keydown', (e) => { if (e.key === 'Escape') closeName(); });
  // Arrow keys walk the tree like a list; Tab still leaves it.
  $('file-tree').addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const items = [...$('file-tree').querySelectorAll('.tree-item')];
    const i = items.indexOf(document.activeElement);
    const next = items[i + (e.key === 'ArrowDown' ? 1 : -1)];
    if (next) { e.preventDefault(); next.focus(); }
  });
  setInterval(() => { if (id) showFacts(); }, 30000);

  /** Resume the session kept from the last visit, or list the caller's sessions. */
  async function start() {
    const kept = localStorage.getItem(SESSION_KEY);
    if (kept) {
      try {
        await activate(kept);
        return;
      } catch (err) {
        if (err.status !== 404) throw err;
        localStorage.removeItem(SESSION_KEY);
        notice('The last session has expired or was deleted; start a new one.', 'info');
      }
    }
    await loadList();
  }

  return { id: () => id, refresh, save, start };
}
