#!/usr/bin/env bash
# evaluate_interactor.t: interactive problems (Kattis's interactor convention) on /v1/evaluate
# through the real stack over HTTPS (the checks are in evaluate_interactor.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_interactor.py
