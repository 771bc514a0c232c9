// api.js: the token and every HTTP call to the service, with errors turned into sentences.
// The token lives in localStorage only; it is sent as a Bearer header and never put in a URL.

const TOKEN_KEY = 'sbx.token';

/** Take "#token=..." (what `make run` prints) into storage and drop it from the address bar. */
export function takeTokenFromUrl() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get('token');
  if (!token) return false;
  setToken(token);
  params.delete('token');
  const rest = params.toString();
  history.replaceState(null, '', location.pathname + location.search + (rest ? '#' + rest : ''));
  return true;
}

export function getToken() {
  return localStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(token) {
  localStorage.setItem(TOKEN_KEY, token.trim());
}

export function clearToken() {
  localStorage.removeItem(TOKEN_KEY);
}

/** An HTTP or network failure; .message is a sentence a person can act on. */
export class ApiError extends Error {
  constructor(status, code, message, field = null, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
    this.retryAfter = retryAfter;
  }
}

// Retry-After is either seconds or an HTTP date; returns whole seconds, or null.
function retrySeconds(header) {
  if (!header) return null;
  if (/^\d+$/.test(header.trim())) return Number(header);
  const when = Date.parse(header);
  return Number.isNaN(when) ? null : Math.max(1, Math.ceil((when - Date.now()) / 1000));
}

function explain(status, code, message, retryAfter) {
  const said = message ? ` The service said: ${message}` : '';
  if (status === 401) {
    return 'The service did not accept the token (401). Paste the token that `make run` printed ' +
      '(the part after #token= in its URL) with the Token button.';
  }
  if (status === 429) {
    const wait = retryAfter != null ? `wait ${retryAfter} s` : 'wait a moment';
    return `Too many requests at once (429): ${wait} and try again.${said}`;
  }
  if (status === 413) {
    return 'The request is too large for the service (413): send less code or input, or a ' +
      'smaller file.' + said;
  }
  if (status >= 500) {
    return `The service failed (${status}${code ? ' ' + code : ''}): ${message || 'no details'}` +
      '. Try again; if it keeps failing, the server log has the details.';
  }
  return message || `The request failed with HTTP ${status}.`;
}

async function failure(res) {
  let code = '', message = '', field = null;
  try {
    const body = await res.json();
    if (body && body.error) ({ code = '', message = '', field = null } = body.error);
  } catch {
    // Not the JSON envelope (a proxy page, say): the status alone has to do.
  }
  const retryAfter = retrySeconds(res.headers.get('Retry-After'));
  return new ApiError(res.status, code, explain(res.status, code, message, retryAfter), field,
    retryAfter);
}

/** The ApiError for a response that is not ok (shared with the streamed runs of runs.js). */
export async function apiFailure(res) {
  const err = await failure(res);
  // Any call can find the token revoked; the page offers to replace it wherever it happened.
  if (err.status === 401) window.dispatchEvent(new CustomEvent('sbx:unauthorized', { detail: err }));
  return err;
}

/**
 * Call the service. opts: {json} sends a JSON body; {body} sends raw bytes; {raw: true} returns
 * the Response (for file downloads) instead of parsed JSON. Resolves to the parsed body (null for
 * 204); rejects with ApiError.
 */
export async function api(method, path, opts = {}) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/octet-stream';
    body = opts.body;
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body, cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, 'network', `Could not reach the service (${err.message}). Is it running?`);
  }
  if (!res.ok) throw await apiFailure(res);
  if (opts.raw) return res;
  if (res.status === 204) return null;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

/** A session file path as URL segments: each part percent-encoded, slashes kept. */
export function filePath(sessionId, path) {
  const parts = path.split('/').filter((p) => p !== '').map(encodeURIComponent);
  return `/v1/sessions/${encodeURIComponent(sessionId)}/files/${parts.join('/')}`;
}
