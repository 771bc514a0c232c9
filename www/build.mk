# www/build.mk: build rules of www/ (included by the top Makefile).
# The playground's own files are served as they are; only the editor (CodeMirror 6) and the text
# diff (jsdiff, npm "diff"), pinned in www/package-lock.json, are bundled by esbuild into
# www/vendor/editor.js and www/vendor/textdiff.js (git-ignored).
# tests/browser's playwright-core is installed from its own lockfile for the browser tests.
# The API reference (www/docs/, git-ignored, served at /docs/) is fcgi/openapi.json rendered by
# @redocly/cli build-docs (pinned in the same lockfile: offline once installed), its inline
# scripts split into files for the site's Content-Security-Policy (www/docs_split.py).

WWW_DEPS := www/node_modules/.package-lock.json
WWW_BUNDLE := www/vendor/editor.js
WWW_ENTRIES := www/src/editor.js www/src/textdiff.js
BROWSER_TEST_DEPS := tests/browser/node_modules/.package-lock.json
NPM_CI := npm ci --no-audit --no-fund --loglevel=error

WWW_DOCS := www/docs/index.html
# No telemetry, no update check: the build needs no network once node_modules is there.
REDOCLY := REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true www/node_modules/.bin/redocly

all: $(WWW_BUNDLE) $(WWW_DOCS)

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

# Built beside, then moved into place whole: the page and its scripts always match.
$(WWW_DOCS): fcgi/openapi.json www/docs_split.py www/build.mk $(WWW_DEPS)
	rm -rf www/docs.new && mkdir -p www/docs.new
	$(REDOCLY) build-docs fcgi/openapi.json --inlineBundle --title "sbx API reference" \
		-o www/docs.new/raw.html >www/docs.new/build.log 2>&1 || { cat www/docs.new/build.log; exit 1; }
	/usr/bin/python3 www/docs_split.py www/docs.new/raw.html www/docs.new
	rm www/docs.new/raw.html www/docs.new/build.log
	rm -rf www/docs && mv www/docs.new www/docs

$(BROWSER_TEST_DEPS): tests/browser/package.json tests/browser/package-lock.json
	cd tests/browser && $(NPM_CI)
	@touch $@

.PHONY: www docs browser-test-deps
www: $(WWW_BUNDLE) $(WWW_DOCS)
docs: $(WWW_DOCS)
browser-test-deps: $(BROWSER_TEST_DEPS)
