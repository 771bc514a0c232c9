#!/usr/bin/env bash
# runs.t: the playground's live runs (issue 17: output as it comes, the input line, Stop, a session's
# background commands) in headless Chromium (playwright-core) against the real stack of the harness.
# Screenshots: build/test-logs/screenshots/runs-*.png. Parts SKIP when the server answers 400/404 for them.
source "$(dirname "$0")/run.sh"
browser_run runs
