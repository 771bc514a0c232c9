// background.js: a session's background commands (API.md "Runs") in the Shell panel: start one
// (POST /v1/sessions/{id}/runs -> 202 {run_id}), list them, show one's stdout and stderr read by
// cursor and long-polled (GET .../runs/{run_id}/output?stream=&cursor=&wait_ms=) while the panel
// is open, and kill it (DELETE). Output is untrusted: set as text, never parsed as HTML.
import { api } from './api.js';
import { $, el, notice, busy, formatMs } from './ui.js';

const enc = encodeURIComponent;
const WAIT_MS = 10000; // one long-poll's wait; the server answers earlier when bytes come
const LIST_EVERY_MS = 3000;

const runIdOf = (r) => r.run_id || r.id;
const runningNow = (r) => (r.state || (r.status ? 'ended' : 'running')) === 'running';

function describe(r) {
  if (runningNow(r)) return 'running';
  const bits = [r.status || r.state || 'ended'];
  if (r.signal) bits.push(`signal ${r.signal}`);
  else if (r.exit_code != null) bits.push(`exit ${r.exit_code}`);
  if (r.wall_ms != null) bits.push(formatMs(r.wall_ms));
  return bits.join(', ');
}

/**
 * Wire the background runs. ctx = {id() the session id or null, limits() the Run options' limits,
 * visible() whether the Shell panel shows}. Returns {sessionChanged(id), refresh()}.
 */
export function initBackground(ctx) {
  let runs = [];
  let open = null; // {runId, gen, cursors, decoders, ended}
  let gen = 0; // bumped to stop the long-polls of the run shown before
  let listTimer = null;

  const base = () => `/v1/sessions/${enc(ctx.id())}/runs`;
  // The server lists runs by id; the commands started from this browser are remembered here.
  const cmdKey = () => `sbx.bgcmds.${ctx.id()}`;
  const cmds = () => { try { return JSON.parse(localStorage.getItem(cmdKey()) || '{}'); } catch { return {}; } };
  const cmdOf = (r) => r.cmd || cmds()[runIdOf(r)] || '';

  function renderList() {
    const list = $('bg-list');
    list.replaceChildren(...runs.map((r) => {
      const id = runIdOf(r);
      const current = open && open.runId === id;
      const cmd = cmdOf(r) || `run ${id.slice(0, 8)}…`;
      return el('li', { class: 'bg-run', 'data-run': id, 'data-state': runningNow(r) ? 'running' : 'ended' },
        el('button', { type: 'button', class: 'bg-item', 'aria-current': current ? 'true' : null,
          'aria-label': `${cmd}: ${describe(r)}. Show its output`, onclick: () => show(id) },
        el('code', { class: 'bg-cmd', text: cmd }),
        el('span', { class: 'bg-state', text: describe(r) })));
    }));
    if (!runs.length) list.append(el('li', { class: 'empty', text: 'None yet: type a command above and press Start in background.' }));
  }

  async function refresh() {
    if (!ctx.id()) return;
    const got = await api('GET', base());
    runs = Array.isArray(got) ? got : (got && got.runs) || [];
    renderList();
    if (open) {
      const r = runs.find((x) => runIdOf(x) === open.runId);
      if (r) $('bg-state').textContent = describe(r);
    }
  }

  function scheduleList() {
    clearTimeout(listTimer);
    if (!ctx.id()) return;
    listTimer = setTimeout(async () => {
      // Only while someone looks and something runs: a list nobody sees is not polled.
      if (ctx.visible() && document.visibilityState === 'visible' && runs.some(runningNow)) {
        await refresh().catch(() => {});
      }
      scheduleList();
    }, LIST_EVERY_MS);
  }

  // One stream's long-poll loop: bytes from the cursor, appended as text, until the run ends.
  async function poll(state, stream) {
    const pre = $(`bg-${stream}`);
    const decoder = new TextDecoder();
    while (state.gen === gen) {
      if (!ctx.visible() || document.visibilityState !== 'visible') {
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      let res;
      try {
        res = await api('GET', `${base()}/${enc(state.runId)}/output?stream=${stream}` +
          `&cursor=${state.cursors[stream]}&wait_ms=${WAIT_MS}`, { raw: true });
      } catch (err) {
        // A kill under way ends the pending polls with an error of their own: not news.
        if (state.gen === gen && !state.killing && err.status !== 404) notice(err.message);
        return;
      }
      if (state.gen !== gen) return;
      let bytes, next, ended;
      if (/json/.test(res.headers.get('Content-Type') || '')) {
        const j = await res.json();
        bytes = new TextEncoder().encode(j.data || '');
        next = j.cursor ?? j.next_cursor;
        ended = j.ended ?? (j.state && j.state !== 'running');
      } else {
        bytes = new Uint8Array(await res.arrayBuffer());
        const h = res.headers.get('Sbx-Cursor');
        next = h !== null ? Number(h) : undefined;
        const e = res.headers.get('Sbx-Ended') || res.headers.get('Sbx-Run-State');
        ended = e !== null ? e === '1' || e === 'true' || e === 'ended' : undefined;
      }
      if (state.gen !== gen) return;
      if (bytes.length) pre.append(decoder.decode(bytes, { stream: true }));
      state.cursors[stream] = Number.isFinite(Number(next)) ? Number(next) : state.cursors[stream] + bytes.length;
      if (!bytes.length) {
        // Nothing new within the wait: has it ended? (asked only then, not on every chunk)
        if (ended === undefined) {
          const r = await api('GET', `${base()}/${enc(state.runId)}`).catch(() => null);
          ended = !r || !runningNow(r);
        }
        if (ended) {
          pre.append(decoder.decode());
          state.done[stream] = true;
          if (state.done.stdout && state.done.stderr) finished(state);
          return;
        }
      }
    }
  }

  async function finished(state) {
    if (state.gen !== gen) return;
    $('bg-kill').disabled = true;
    await refresh().catch(() => {});
  }

  function show(runId) {
    gen++;
    const state = { runId, gen, cursors: { stdout: 0, stderr: 0 }, done: { stdout: false, stderr: false } };
    open = state;
    const r = runs.find((x) => runIdOf(x) === runId) || {};
    $('bg-output').hidden = false;
    $('bg-output-title').textContent = cmdOf(r) ? `$ ${cmdOf(r)}` : `run ${runId}`;
    $('bg-state').textContent = describe(r);
    $('bg-stdout').replaceChildren();
    $('bg-stderr').replaceChildren();
    $('bg-kill').disabled = !runningNow(r);
    $('bg-output').dataset.state = runningNow(r) ? 'running' : 'ended';
    renderList();
    poll(state, 'stdout');
    poll(state, 'stderr');
  }

  function hide() {
    gen++;
    open = null;
    $('bg-output').hidden = true;
    renderList();
  }

  async function start() {
    const cmd = $('shell-cmd').value;
    if (!cmd.trim() || !ctx.id()) return;
    await busy($('shell-bg'), async () => {
      const got = await api('POST', base(), { json: { cmd, limits: ctx.limits() } });
      const id = got && (got.run_id || got.id);
      if (id) localStorage.setItem(cmdKey(), JSON.stringify({ ...cmds(), [id]: cmd }));
      await refresh();
      if (id) {
        if (!runs.some((x) => runIdOf(x) === id)) runs.unshift({ run_id: id, cmd, state: 'running' });
        show(id);
      }
      scheduleList();
    });
  }

  async function kill() {
    if (!open) return;
    const state = open;
    let killed = false;
    state.killing = true;
    await busy($('bg-kill'), async () => {
      await api('DELETE', `${base()}/${enc(state.runId)}`);
      killed = true;
    });
    if (!killed) {
      state.killing = false;
      return;
    }
    // The server kills it and forgets it (204): its output stays shown here, the polls stop.
    if (open === state) {
      gen++;
      $('bg-state').textContent = 'killed';
      $('bg-output').dataset.state = 'killed';
      $('bg-kill').disabled = true;
    }
    await refresh().catch(() => {});
  }

  $('shell-bg').addEventListener('click', start);
  $('bg-refresh').addEventListener('click', (e) => busy(e.currentTarget, refresh));
  $('bg-kill').addEventListener('click', kill);
  $('bg-close').addEventListener('click', hide);

  return {
    async sessionChanged(id) {
      hide();
      runs = [];
      $('bg-panel').hidden = !id;
      renderList();
      if (!id) { clearTimeout(listTimer); return; }
      try {
        await refresh();
      } catch (err) {
        // A server without background runs (404/405): the panel stays hidden.
        if (err.status === 404 || err.status === 405) {
          $('bg-panel').hidden = true;
          $('shell-bg').hidden = true;
          return;
        }
        $('bg-list').replaceChildren(el('li', { class: 'empty',
          text: `Background commands are not available: ${err.message}` }));
      }
      $('shell-bg').hidden = false;
      scheduleList();
    },
    refresh,
  };
}
