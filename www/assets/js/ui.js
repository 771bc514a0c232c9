// ui.js: small DOM helpers shared by the page's modules: element building, the notice line,
// number formatting and keyboard-driven tabs. No framework: the page is small enough not to need one.

export const $ = (id) => document.getElementById(id);

/**
 * Build an element. attrs: class, text, on<event> handlers, boolean and string attributes.
 * Children are nodes or strings (added as text, never parsed as HTML).
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

let noticeTimer = null;

/** Say one short line to screen readers (the #announce live region). */
export function announce(text) {
  $('announce').textContent = '';
  // A fresh text node after a tick, so the same words twice are still announced.
  setTimeout(() => { $('announce').textContent = text; }, 50);
}

/** Show a message in the page's alert line; kind is "error" or "info" (info fades by itself). */
export function notice(message, kind = 'error') {
  const box = $('notice');
  box.className = `notice notice-${kind}`;
  box.replaceChildren(el('span', { text: message }),
    el('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss message',
      text: 'Dismiss', onclick: clearNotice }));
  box.hidden = false;
  clearTimeout(noticeTimer);
  if (kind === 'info') noticeTimer = setTimeout(clearNotice, 6000);
}

export function clearNotice() {
  $('notice').hidden = true;
}

/** Run fn while button shows it is working; errors go to the notice line. */
export async function busy(button, fn) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } catch (err) {
    notice(err.message);
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

export function formatBytes(n) {
  if (n == null) return '?';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = n / 1024, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function formatMs(ms) {
  if (ms == null) return '?';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** "in 59 min", "in 2 h 5 min", "now" for a time in the future. */
export function fromNow(date) {
  const min = Math.round((date.getTime() - Date.now()) / 60000);
  if (min <= 0) return 'now';
  if (min < 60) return `in ${min} min`;
  return `in ${Math.floor(min / 60)} h ${min % 60} min`;
}

/** Server times may be ISO strings or Unix seconds. */
export function toDate(value) {
  if (typeof value === 'number') return new Date(value * 1000);
  return new Date(value);
}

/**
 * WAI-ARIA tabs: buttons with role=tab inside tablist, each aria-controls its panel. Arrow keys,
 * Home and End move between tabs. Returns select(name) for the code to switch tabs itself.
 */
export function setupTabs(tablist) {
  const tabs = [...tablist.querySelectorAll('[role=tab]')];
  function select(tab) {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
    }
  }
  tablist.addEventListener('click', (e) => {
    const tab = e.target.closest('[role=tab]');
    if (tab) select(tab);
  });
  tablist.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(document.activeElement);
    if (i < 0) return;
    const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    const tab = tabs[(next + tabs.length) % tabs.length];
    select(tab);
    tab.focus();
  });
  select(tabs.find((t) => t.getAttribute('aria-selected') === 'true') || tabs[0]);
  return (name) => select(tabs.find((t) => t.dataset.tab === name));
}
