#!/usr/bin/env bash
# evaluate_api.t: the evaluate routes (io_cases, test, cases in every language, compare modes,
# failures in one case, request errors, session and seed routes) through the real stack over
# HTTPS (the checks are in evaluate_api.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_api.py
