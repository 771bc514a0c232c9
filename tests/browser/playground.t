#!/usr/bin/env bash
# playground.t: the browser playground in headless Chromium (playwright-core) against the real
# stack started by the integration harness: nginx + worker pool + broker, over HTTPS with a token.
# Screenshots of each state: build/test-logs/screenshots/*.png.
source "$(dirname "$0")/run.sh"
# A small JSON body limit, so that the 413 message can be seen without sending megabytes.
export HARNESS_BODY_MAX=1m
browser_run playground
