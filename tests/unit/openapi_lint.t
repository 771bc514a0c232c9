#!/usr/bin/env bash
# openapi_lint.t: a third-party OpenAPI linter (@redocly/cli lint, pinned in www/package-lock.json
# and installed by make) finds no error in fcgi/openapi.json; its warnings are shown as notes.
# SKIPs only when the linter could not be installed (no npm registry at `make` time).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
redocly=www/node_modules/.bin/redocly
[ -x "$redocly" ] || skip_all "$redocly is not installed (make all installs it from npm; was the registry unreachable?)"
out=$(REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true "$redocly" lint --format=stylish \
	fcgi/openapi.json 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/# /'
ok $rc "redocly lint: fcgi/openapi.json has no error"
errors=$(printf '%s\n' "$out" | grep -c ' error ')
is "$errors" 0 "... no line of its report is an error"
done_testing
