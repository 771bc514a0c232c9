#!/usr/bin/env bash
# notebook.t: the playground's notebook mode (cells in a session's context: issue 14) in headless
# Chromium (playwright-core) against the real stack started by the integration harness.
# Screenshots: build/test-logs/screenshots/nb-*.png. SKIPs when the contexts routes answer 404.
source "$(dirname "$0")/run.sh"
browser_run notebook
