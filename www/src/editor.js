// editor.js: the one bundled module: a CodeMirror 6 editor with the languages the service runs.
// esbuild bundles this file into www/vendor/editor.js (see www/build.mk); the page's own modules
// stay unbundled and import only createEditor() from here. Python and shell are in the main
// bundle; the JavaScript and C/C++ grammars (a third of the size) load when first picked.
import { EditorState, Compartment } from '@codemirror/state';
import {
  EditorView, keymap, lineNumbers, highlightActiveLine, highlightActiveLineGutter,
  highlightSpecialChars, drawSelection, rectangularSelection, placeholder,
} from '@codemirror/view';
import {
  defaultKeymap, history, historyKeymap, indentWithTab, insertNewlineAndIndent,
} from '@codemirror/commands';
import {
  syntaxHighlighting, defaultHighlightStyle, indentOnInput, bracketMatching, foldGutter,
  foldKeymap, StreamLanguage, indentUnit,
} from '@codemirror/language';
import { searchKeymap, highlightSelectionMatches } from '@codemirror/search';
import { closeBrackets, closeBracketsKeymap } from '@codemirror/autocomplete';
import { python } from '@codemirror/lang-python';
import { shell } from '@codemirror/legacy-modes/mode/shell';

// Keys are the service's language ids and their usual aliases; unknown ids get plain text.
const js = async () => (await import('@codemirror/lang-javascript')).javascript();
const cpp = async () => (await import('@codemirror/lang-cpp')).cpp();
const sh = async () => StreamLanguage.define(shell);
const MODES = {
  python: async () => python(), py: async () => python(), python3: async () => python(),
  bash: sh, sh, shell: sh,
  javascript: js, node: js, js, nodejs: js,
  c: cpp, cpp, 'c++': cpp,
};

/** True when the editor has a highlighting mode for this language id or alias. */
export function hasMode(name) {
  return Object.prototype.hasOwnProperty.call(MODES, name);
}

/**
 * Build an editor inside parent. opts: {doc, language, label, placeholder, wrap, onRun, onSave,
 * onChange, keys}; keys: [{key, run}] bindings placed before every other one (a notebook cell's
 * Shift+Enter); wrap soft-wraps long lines (for phones, where sideways scrolling is awkward).
 * Returns {view, getText, setText, setLanguage, setWrap, focus}; the caller owns the returned object.
 * Ctrl/Cmd+Enter calls onRun, Ctrl/Cmd+S calls onSave; Tab indents, and Escape then Tab leaves
 * the editor (CodeMirror's tab-focus mode) so keyboard users are never trapped.
 */
export function createEditor(parent, opts = {}) {
  const lang = new Compartment();
  const wrap = new Compartment();
  const run = () => { if (opts.onRun) opts.onRun(); return true; };
  const save = () => { if (opts.onSave) opts.onSave(); return true; };
  const state = EditorState.create({
    doc: opts.doc || '',
    extensions: [
      lineNumbers(), highlightActiveLineGutter(), highlightSpecialChars(), history(),
      foldGutter(), drawSelection(), EditorState.allowMultipleSelections.of(true),
      indentOnInput(), syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
      bracketMatching(), closeBrackets(), rectangularSelection(), highlightActiveLine(),
      highlightSelectionMatches(), indentUnit.of('    '),
      placeholder(opts.placeholder || ''),
      keymap.of([
        // The caller's own keys first (a notebook cell's Shift+Enter runs the cell).
        ...(opts.keys || []).map(({ key, run: fn }) => ({ key, run: () => { fn(); return true; }, preventDefault: true })),
        { key: 'Mod-Enter', run, preventDefault: true },
        { key: 'Mod-s', run: save, preventDefault: true },
        { key: 'Shift-Enter', run: insertNewlineAndIndent },
        ...closeBracketsKeymap, ...defaultKeymap, ...searchKeymap, ...historyKeymap,
        ...foldKeymap, indentWithTab,
      ]),
      lang.of([]),
      theme,
      wrap.of(opts.wrap ? EditorView.lineWrapping : []),
      EditorView.contentAttributes.of({ 'aria-label': opts.label || 'Code editor' }),
      EditorView.updateListener.of((u) => { if (u.docChanged && opts.onChange) opts.onChange(); }),
    ],
  });
  // Inside a shadow root CodeMirror's styles go into adoptedStyleSheets; mounted in the document
  // they would be a <style> element, which the page's CSP (style-src 'self') rightly blocks.
  const root = parent.shadowRoot || parent.attachShadow({ mode: 'open' });
  const view = new EditorView({ state, parent: root, root });
  let wanted = null;
  // The grammar may arrive after a later pick: only the last pick is applied.
  function setLanguage(name) {
    wanted = name;
    modeFor(name).then((ext) => {
      if (wanted === name) view.dispatch({ effects: lang.reconfigure(ext) });
    }, () => {
      if (wanted === name) view.dispatch({ effects: lang.reconfigure([]) });
    });
  }
  setLanguage(opts.language);
  return {
    view,
    getText: () => view.state.doc.toString(),
    setText(text) {
      view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    },
    setLanguage,
    /** Soft-wrap long lines (true) or scroll sideways (false). */
    setWrap(on) {
      view.dispatch({ effects: wrap.reconfigure(on ? EditorView.lineWrapping : []) });
    },
    focus: () => view.focus(),
  };
}

// The page's stylesheet cannot reach into the shadow root, so the editor's look lives here.
const theme = EditorView.theme({
  '&': { height: '100%', fontSize: '14px', backgroundColor: '#fff' },
  '&.cm-focused': { outline: '3px solid #ffbf47', outlineOffset: '-3px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace' },
  '.cm-gutters': { backgroundColor: '#f3f4f6', color: '#5b6475', borderRight: '1px solid #d8dce3' },
  '.cm-activeLine': { backgroundColor: '#f2f6fd' },
  '.cm-activeLineGutter': { backgroundColor: '#e3ecfb' },
});

function modeFor(name) {
  return name && hasMode(name) ? MODES[name]() : Promise.resolve([]);
}
