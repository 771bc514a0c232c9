#!/usr/bin/env bash
# evaluate_checker.t: checkers (Kattis output validators) on the evaluate routes through the real
# stack over HTTPS (the checks are in evaluate_checker.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_checker.py
