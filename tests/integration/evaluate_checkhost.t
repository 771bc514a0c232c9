#!/usr/bin/env bash
# evaluate_checkhost.t: hostile checkers against the check host (a lane's checks in one checker
# sandbox, fcgi/evaluate/judge.c) through the real stack over HTTPS (evaluate_checkhost.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_checkhost.py
