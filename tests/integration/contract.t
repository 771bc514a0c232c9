#!/usr/bin/env bash
# contract.t: responses of every route, errors included, validated against fcgi/openapi.json (the
# checks are in contract.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/contract.py
