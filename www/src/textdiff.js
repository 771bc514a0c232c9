// textdiff.js: the second bundled module: jsdiff (npm "diff", pinned in package-lock.json) for the
// Tests panel's expected-versus-got view. esbuild bundles it into www/vendor/textdiff.js; the
// page's own diff.js imports only these two functions from it.
export { diffLines, diffChars } from 'diff';
