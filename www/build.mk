# www/build.mk: build rules of www/ (included by the top Makefile).
# The playground's own files are served as they are; only the editor (CodeMirror 6, pinned in
# www/package-lock.json) is bundled, by esbuild, into www/vendor/editor.js (git-ignored).
# tests/browser's playwright-core is installed from its own lockfile for the browser tests.

WWW_DEPS := www/node_modules/.package-lock.json
WWW_BUNDLE := www/vendor/editor.js
BROWSER_TEST_DEPS := tests/browser/node_modules/.package-lock.json
NPM_CI := npm ci --no-audit --no-fund --loglevel=error

all: $(WWW_BUNDLE)

$(WWW_DEPS): www/package.json www/package-lock.json
	cd www && $(NPM_CI)
	@touch $@

# --splitting: grammars imported dynamically become chunks next to editor.js, loaded on demand.
# The directory is rebuilt whole so that no stale chunk is left behind.
$(WWW_BUNDLE): www/src/editor.js $(WWW_DEPS)
	rm -rf www/vendor
	www/node_modules/.bin/esbuild www/src/editor.js --bundle --splitting --format=esm --minify \
		--target=es2020 --legal-comments=eof --log-level=warning --outdir=www/vendor \
		--chunk-names=[name]-[hash]

$(BROWSER_TEST_DEPS): tests/browser/package.json tests/browser/package-lock.json
	cd tests/browser && $(NPM_CI)
	@touch $@

.PHONY: www browser-test-deps
www: $(WWW_BUNDLE)
browser-test-deps: $(BROWSER_TEST_DEPS)
