# www/build.mk: build rules of www/ (included by the top Makefile).
# The playground's own files are served as they are; only the editor (CodeMirror 6) and the text
# diff (jsdiff, npm "diff"), pinned in www/package-lock.json, are bundled by esbuild into
# www/vendor/editor.js and www/vendor/textdiff.js (git-ignored).
# tests/browser's playwright-core is installed from its own lockfile for the browser tests.

WWW_DEPS := www/node_modules/.package-lock.json
WWW_BUNDLE := www/vendor/editor.js
WWW_ENTRIES := www/src/editor.js www/src/textdiff.js
BROWSER_TEST_DEPS := tests/browser/node_modules/.package-lock.json
NPM_CI := npm ci --no-audit --no-fund --loglevel=error

all: $(WWW_BUNDLE)

$(WWW_DEPS): www/package.json www/package-lock.json
	cd www && $(NPM_CI)
	@touch $@

# --splitting: grammars imported dynamically become chunks next to editor.js, loaded on demand.
# The directory is rebuilt whole so that no stale chunk is left behind.
$(WWW_BUNDLE): $(WWW_ENTRIES) $(WWW_DEPS)
	rm -rf www/vendor
	www/node_modules/.bin/esbuild $(WWW_ENTRIES) --bundle --splitting --format=esm --minify \
		--target=es2020 --legal-comments=eof --log-level=warning --outdir=www/vendor \
		--chunk-names=[name]-[hash]

$(BROWSER_TEST_DEPS): tests/browser/package.json tests/browser/package-lock.json
	cd tests/browser && $(NPM_CI)
	@touch $@

.PHONY: www browser-test-deps
www: $(WWW_BUNDLE)
browser-test-deps: $(BROWSER_TEST_DEPS)
