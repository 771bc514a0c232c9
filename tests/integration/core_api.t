#!/usr/bin/env bash
# core_api.t: execute in every language, outcomes, request errors, session and seed runs, through
# the real stack over HTTPS (the checks are in core_api.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/core_api.py
