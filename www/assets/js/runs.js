// runs.js: runs whose output is shown as it comes (API.md "Runs"): a streamed request read line by
// line (NDJSON events start, stdout, stderr, keepalive, end), the input line and Stop of a running
// program (POST /v1/runs/{id}/stdin and /signal), and the fallback to the plain request on a
// server without streaming (it answers 400 naming "stream" or "interactive").
import { api, apiFailure, getToken, ApiError } from './api.js';
import { el } from './ui.js';

// null: not known yet; false: the server said 400 to "stream", so later runs do not ask again.
let streaming = null;

export const streamingKnownOff = () => streaming === false;

/** Read a fetch Response body as NDJSON, calling onEvent(obj) for each line as it arrives. */
export async function readNdjson(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, at).trim();
      buf = buf.slice(at + 1);
      if (line) onEvent(JSON.parse(line));
    }
    if (done) break;
  }
  if (buf.trim()) onEvent(JSON.parse(buf));
}

// A server from before streaming: 400 unknown_field naming "stream" (or "interactive").
const unknownField = (err, name) => err instanceof ApiError && err.status === 400 &&
  err.code === 'unknown_field' && (err.field === name || !err.field && err.message.includes(`"${name}"`));

/**
 * Run path+body with output as it comes. hooks: {start(runId), output(stream, text)}. Resolves to
 * {result, streamed}: the end event's response (the usual whole response) or, on a server without
 * streaming, the plain response. interactive asks for stdin kept open (only when streaming).
 */
export async function runStreamed(path, body, hooks = {}, interactive = false) {
  if (streaming === false) {
    if (interactive) throw new ApiError(400, 'no_streaming', 'This server does not support input while a program runs: put the input in the Input box instead.');
    return { result: await api('POST', path, { json: body }), streamed: false };
  }
  const headers = { Accept: 'application/x-ndjson', 'Content-Type': 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const sent = { ...body, stream: true };
  // With "interactive" the server takes stdin only through /v1/runs/{id}/stdin: what the Input
  // box holds is sent there first, as soon as the run has its id.
  let first = '';
  if (interactive) {
    sent.interactive = true;
    first = sent.stdin || '';
    delete sent.stdin;
  }
  let res;
  try {
    res = await fetch(path, { method: 'POST', headers, body: JSON.stringify(sent), cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, 'network', `Could not reach the service (${err.message}). Is it running?`);
  }
  if (!res.ok) {
    const err = await apiFailure(res);
    if (unknownField(err, 'stream')) {
      streaming = false;
      return runStreamed(path, body, hooks, interactive);
    }
    if (unknownField(err, 'interactive')) {
      throw new ApiError(400, 'no_interactive', 'This server does not support input while a program runs: turn Interactive off and put the input in the Input box.');
    }
    throw err;
  }
  const type = res.headers.get('Content-Type') || '';
  if (!/ndjson/.test(type)) {
    // A server that ignored "stream": the whole answer at once.
    const text = await res.text();
    return { result: text ? JSON.parse(text) : null, streamed: false };
  }
  streaming = true;
  let result = null;
  let sawError = null;
  await readNdjson(res, (ev) => {
    if (ev.type === 'start') {
      if (first && ev.run_id) sendStdin(ev.run_id, first).catch(() => {});
      if (hooks.start) hooks.start(ev.run_id);
    }
    else if (ev.type === 'stdout' || ev.type === 'stderr') hooks.output && hooks.output(ev.type, ev.data || '');
    else if (ev.type === 'end') {
      const { type: _type, ...rest } = ev;
      result = rest;
    } else if (ev.type === 'error' || ev.error) sawError = ev.error || ev;
  });
  if (!result) {
    if (sawError) throw new ApiError(500, sawError.code || '', sawError.message || 'The run failed.');
    throw new ApiError(0, 'network', 'The connection ended before the run did: the result is unknown.');
  }
  if (result.error && !result.status) {
    throw new ApiError(result.http_status || 500, result.error.code || '', result.error.message || 'The run failed.');
  }
  return { result, streamed: true };
}

/** Send text to a running program's stdin (eof: close it after). */
export function sendStdin(runId, text, eof = false) {
  return api('POST', `/v1/runs/${encodeURIComponent(runId)}/stdin${eof ? '?eof=1' : ''}`,
    { body: text });
}

/** SIGINT, SIGTERM or SIGKILL to a running program. */
export function sendSignal(runId, signal) {
  return api('POST', `/v1/runs/${encodeURIComponent(runId)}/signal`, { json: { signal } });
}

/**
 * The live view of a run in box: stdout and stderr kept apart as the final result shows them,
 * filled as chunks arrive. Returns {append(stream, text), shown(stream), node}.
 */
export function liveView(box, title) {
  const pres = {};
  const texts = { stdout: '', stderr: '' };
  const section = (name) => {
    pres[name] = el('pre', { class: 'out', tabindex: 0 });
    return el('section', { class: `stream stream-${name}`, 'aria-label': name, hidden: name === 'stderr' },
      el('h3', { text: name }), pres[name]);
  };
  const status = el('p', { class: 'live-status', role: 'status', text: 'Running… output appears as it comes.' });
  const node = el('div', { class: 'live', 'data-live': 'running' },
    // Not .result-head/.badge: those mean "the result is here" (to the page's tests as well).
    el('div', { class: 'live-head' }, el('span', { class: 'live-badge', text: 'running' }),
      title ? el('span', { class: 'result-title', text: title }) : null),
    status, section('stdout'), section('stderr'));
  box.replaceChildren(node);
  return {
    node,
    status,
    append(name, text) {
      texts[name] += text;
      pres[name].append(text); // a text node: output is never parsed as HTML
      pres[name].parentNode.hidden = false;
    },
    shown: (name) => texts[name],
  };
}

/** True when what the live view showed is what the final result holds (a prefix of it). */
export function agrees(view, result) {
  return ['stdout', 'stderr'].every((s) => (result[s] || '').startsWith(view.shown(s)));
}
