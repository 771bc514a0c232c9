#!/usr/bin/env bash
# runs.t: the playground's live runs (issue 17: output as it comes, the input line, Stop, a session's
# background commands) in headless Chromium (playwright-core) against the real stack of the harness.
# Screenshots: build/test-logs/screenshots/runs-*.png. Parts SKIP when the server answers 400/404 for them.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
[ -x /usr/bin/chromium ] || { echo "1..0 # SKIP /usr/bin/chromium is not installed"; exit 0; }
command -v node >/dev/null 2>&1 || { echo "1..0 # SKIP node is not installed"; exit 0; }
[ -f tests/lib/harness.sh ] || { echo "1..0 # SKIP tests/lib/harness.sh (the integration harness) is missing"; exit 0; }
if [ ! -f www/vendor/editor.js ]; then
	make --no-print-directory www >&2 || { echo "Bail out! could not build www/vendor/editor.js"; exit 1; }
fi
if [ ! -d tests/browser/node_modules/playwright-core ]; then
	make --no-print-directory browser-test-deps >&2 || { echo "Bail out! npm ci in tests/browser failed"; exit 1; }
fi
export SCREENSHOTS=${TEST_LOGS:-$top/build/test-logs}/screenshots
exec bash tests/lib/harness.sh --exec node tests/browser/runs.mjs
