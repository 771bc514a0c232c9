#!/usr/bin/env bash
# verdict.t: the Tests panel's verdict view (AC and WA rows, verdict words, the WA diff) in headless
# Chromium (playwright-core) against the real stack started by the integration harness.
source "$(dirname "$0")/run.sh"
browser_run verdict
