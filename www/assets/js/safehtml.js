// safehtml.js: HTML that a sandboxed program returned (a pandas frame's _repr_html_, say) made
// safe to show in the page. It is untrusted: it is parsed into an inert document (DOMParser: no
// script runs, no image loads, no handler fires there) and copied node by node into new elements
// of an allowed set, with a few harmless attributes. Everything else is dropped: scripts, styles,
// event handlers, links, images, forms, frames, SVG. Text is always copied as text. Nothing is
// ever assigned to innerHTML.

// Kept as elements: tables and plain text formatting.
const ALLOWED = new Set(['table', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td', 'caption', 'colgroup',
  'col', 'div', 'span', 'p', 'br', 'hr', 'b', 'i', 'u', 's', 'em', 'strong', 'small', 'mark', 'code',
  'pre', 'kbd', 'samp', 'var', 'sub', 'sup', 'ul', 'ol', 'li', 'dl', 'dt', 'dd', 'blockquote',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6']);
// Dropped with everything inside them (their text is code or markup, not content).
const DROPPED = new Set(['script', 'style', 'template', 'iframe', 'frame', 'frameset', 'object',
  'embed', 'applet', 'noscript', 'noembed', 'svg', 'math', 'link', 'meta', 'base', 'head', 'title',
  'form', 'input', 'textarea', 'select', 'option', 'button', 'img', 'picture', 'video', 'audio',
  'source', 'track', 'canvas', 'map', 'area', 'portal', 'dialog', 'slot']);
// Attributes kept, each with the values it may take.
const ATTRS = {
  colspan: /^\d{1,4}$/, rowspan: /^\d{1,4}$/, span: /^\d{1,4}$/,
  scope: /^(row|col|rowgroup|colgroup)$/i, title: /^[^]{0,500}$/,
};
const MAX_NODES = 50000; // past this the rest is cut, so a huge table cannot freeze the page
const MAX_DEPTH = 64;

/**
 * A DocumentFragment built from the untrusted html string; {fragment, cut} where cut says that
 * nodes past MAX_NODES were left out.
 */
export function safeHtml(html) {
  const inert = new DOMParser().parseFromString(String(html), 'text/html');
  const fragment = document.createDocumentFragment();
  const budget = { left: MAX_NODES, cut: false };
  copyChildren(inert.body, fragment, 0, budget);
  return { fragment, cut: budget.cut };
}

function copyChildren(from, to, depth, budget) {
  for (const node of from.childNodes) {
    if (budget.left <= 0) { budget.cut = true; return; }
    budget.left--;
    if (node.nodeType === Node.TEXT_NODE) {
      to.append(document.createTextNode(node.data));
      continue;
    }
    if (node.nodeType !== Node.ELEMENT_NODE || depth >= MAX_DEPTH) continue;
    // Only HTML elements count: an <svg> or <math> subtree is dropped as a whole.
    const tag = node.namespaceURI === 'http://www.w3.org/1999/xhtml' ? node.localName : 'svg';
    if (DROPPED.has(tag)) continue;
    if (!ALLOWED.has(tag)) { // unknown wrapper: keep what is inside
      copyChildren(node, to, depth + 1, budget);
      continue;
    }
    const clean = document.createElement(tag);
    for (const [name, ok] of Object.entries(ATTRS)) {
      const value = node.getAttribute(name);
      if (value !== null && ok.test(value)) clean.setAttribute(name, value);
    }
    copyChildren(node, clean, depth + 1, budget);
    to.append(clean);
  }
}
