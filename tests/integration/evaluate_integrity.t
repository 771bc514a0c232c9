#!/usr/bin/env bash
# evaluate_integrity.t: a student who wants full marks without solving the problem, or who wants
# to slow everyone else's grading, through the real stack (checks in evaluate_integrity.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_integrity.py
