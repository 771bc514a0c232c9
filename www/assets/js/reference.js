// reference.js: what the page learns from the service's OpenAPI document (GET /v1/openapi.json,
// which needs the token): the limits' defaults and maxima shown in the Run options, and the API
// reference dialog (the routes, and the document itself to open or download).
import { api } from './api.js';
import { $, el, busy, notice, formatBytes } from './ui.js';

let openapi = null; // the promise of the document, fetched once per token

/** The OpenAPI document (cached); rejects with ApiError. */
export function getOpenApi() {
  if (!openapi) {
    openapi = api('GET', '/v1/openapi.json');
    openapi.catch(() => { openapi = null; });
  }
  return openapi;
}

/** Forget the cached document (a new token may see another service). */
export function forgetOpenApi() {
  openapi = null;
}

/**
 * {name: {default, maximum}} of the request's "limits" object, from the document's Limits schema.
 * No route serves the live configuration's values: the document carries the shipped defaults.
 */
export function limitsFrom(doc) {
  const schemas = (doc && doc.components && doc.components.schemas) || {};
  const schema = schemas.Limits ||
    Object.values(schemas).find((s) => s && s.properties && s.properties.wall_ms && s.properties.cpu_ms);
  const out = {};
  for (const [name, p] of Object.entries((schema && schema.properties) || {})) {
    if (p && (typeof p.default === 'number' || typeof p.maximum === 'number')) {
      out[name] = { default: p.default, maximum: p.maximum };
    }
  }
  return out;
}

const seconds = (ms) => `${+(ms / 1000).toFixed(3)}`;
const INPUTS = [
  // [limit name, input id, how a value is shown, the input's unit, the scale from the unit]
  ['wall_ms', 'limit-wall', (v) => `${seconds(v)} s`, seconds],
  ['cpu_ms', 'limit-cpu', (v) => `${seconds(v)} s`, seconds],
  ['memory_mb', 'limit-mem', (v) => `${v} MiB`, (v) => String(v)],
];
const OTHERS = [
  // [limit name, what the default gives, how a value is shown]
  ['processes', 'processes', (v) => String(v)],
  ['output_bytes', 'output per stream', formatBytes],
  ['file_size_mb', 'largest file', (v) => `${v} MiB`],
];

/** Put the limits' defaults and maxima into the Run panel's options. */
export function showLimits(limits) {
  const summary = [];
  for (const [name, id, show, inUnit] of INPUTS) {
    const l = limits[name];
    const range = $(`${id}-range`);
    if (!l) { range.textContent = ''; continue; }
    const input = $(id);
    if (l.default != null) input.placeholder = inUnit(l.default);
    if (l.maximum != null) input.max = inUnit(l.maximum);
    range.textContent = [l.default != null ? `default ${show(l.default)}` : '',
      l.maximum != null ? `max ${show(l.maximum)}` : ''].filter(Boolean).join(', ');
    if (l.default != null) summary.push(`${{ wall_ms: 'wall', cpu_ms: 'CPU', memory_mb: 'memory' }[name]} ${show(l.default)}`);
  }
  $('limits-summary').textContent = summary.length ? `(${summary.join(', ')})` : '';
  const others = OTHERS.filter(([name]) => limits[name] && limits[name].default != null)
    .map(([name, what, show]) => `${what} ${show(limits[name].default)}` +
      (limits[name].maximum != null ? ` (max ${show(limits[name].maximum)})` : ''));
  $('limits-other').textContent = others.length
    ? `Also by default: ${others.join(', ')}. These values come from the service's OpenAPI document.`
    : '';
  $('limits-other').hidden = !others.length;
}

/** Read the document and show the limits; a failure leaves "default" in place. */
export async function loadLimits() {
  try {
    showLimits(limitsFrom(await getOpenApi()));
  } catch {
    // The options still work without the numbers: empty means the server's default.
  }
}

async function documentBlob() {
  const doc = await getOpenApi();
  return new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' });
}

async function openDocument() {
  const url = URL.createObjectURL(await documentBlob());
  // The document needs the token, so a plain link cannot show it: open a copy held by the page.
  const win = window.open(url, '_blank');
  if (!win) notice('The browser blocked the new tab: use Download openapi.json instead.', 'info');
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function downloadDocument() {
  const url = URL.createObjectURL(await documentBlob());
  const a = el('a', { href: url, download: 'openapi.json' });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const METHODS = ['get', 'post', 'put', 'delete', 'patch'];

async function fillRoutes() {
  const doc = await getOpenApi();
  const info = doc.info || {};
  $('api-info').textContent = `${info.title || 'The API'}${info.version ? ' ' + info.version : ''}, ` +
    `OpenAPI ${doc.openapi || '?'}.`;
  const rows = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const method of METHODS) {
      const op = item && item[method];
      if (!op) continue;
      rows.push(el('tr', {}, el('td', { class: 'mono', text: method.toUpperCase() }),
        el('td', { class: 'mono', text: path }),
        el('td', { text: op.summary || (op.description || '').split('\n')[0] })));
    }
  }
  $('api-routes').replaceChildren(...rows);
}

/** Wire the API reference dialog, its links in the header and the footer. */
export function initReference() {
  const dialog = $('api-dialog');
  for (const link of document.querySelectorAll('.api-open')) {
    link.addEventListener('click', (e) => {
      e.preventDefault();
      dialog.showModal();
      $('api-close').focus();
      fillRoutes().catch((err) => { $('api-info').textContent = err.message; });
    });
  }
  $('api-close').addEventListener('click', () => dialog.close());
  $('openapi-open').addEventListener('click', (e) => busy(e.currentTarget, openDocument));
  $('openapi-download').addEventListener('click', (e) => busy(e.currentTarget, downloadDocument));
  $('openapi-link').addEventListener('click', (e) => {
    e.preventDefault();
    openDocument().catch((err) => notice(err.message));
  });
}
