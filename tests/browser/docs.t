#!/usr/bin/env bash
# docs.t: the API reference page (/docs/, built from fcgi/openapi.json by redocly) in headless
# Chromium (playwright-core) against the real stack: renders under the CSP, links work.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
[ -x /usr/bin/chromium ] || { echo "1..0 # SKIP /usr/bin/chromium is not installed"; exit 0; }
command -v node >/dev/null 2>&1 || { echo "1..0 # SKIP node is not installed"; exit 0; }
[ -f www/docs/index.html ] || { echo "1..0 # SKIP www/docs/index.html is not built (make all; @redocly/cli from npm)"; exit 0; }
if [ ! -d tests/browser/node_modules/playwright-core ]; then
	make --no-print-directory browser-test-deps >&2 || { echo "Bail out! npm ci in tests/browser failed"; exit 1; }
fi
export SCREENSHOTS=${TEST_LOGS:-$top/build/test-logs}/screenshots
exec bash tests/lib/harness.sh --exec node tests/browser/docs.mjs
