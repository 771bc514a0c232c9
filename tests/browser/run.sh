# tests/browser/run.sh: sourced by each tests/browser/*.t: SKIP without Chromium or node, build
# what the page needs (www/vendor) and the test's own deps (playwright-core) when missing, then
# run tests/browser/NAME.mjs against a real stack of the integration harness (browser_run NAME).
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$top"
browser_run() { # browser_run NAME: replaces the shell with the harness running NAME.mjs
	[ -x /usr/bin/chromium ] || { echo "1..0 # SKIP /usr/bin/chromium is not installed"; exit 0; }
	command -v node >/dev/null 2>&1 || { echo "1..0 # SKIP node is not installed"; exit 0; }
	[ -f tests/lib/harness.sh ] ||
		{ echo "1..0 # SKIP tests/lib/harness.sh (the integration harness) is missing"; exit 0; }
	if [ ! -f www/vendor/editor.js ]; then
		make --no-print-directory www >&2 ||
			{ echo "Bail out! could not build www/vendor/editor.js"; exit 1; }
	fi
	if [ ! -d tests/browser/node_modules/playwright-core ]; then
		make --no-print-directory browser-test-deps >&2 ||
			{ echo "Bail out! npm ci in tests/browser failed"; exit 1; }
	fi
	export SCREENSHOTS=${TEST_LOGS:-$top/build/test-logs}/screenshots
	exec bash tests/lib/harness.sh --exec node "tests/browser/$1.mjs"
}
