#!/usr/bin/env bash
# redteam_broker.t: a request to the broker is not dropped when a child of the broker (a context
# holder, a background run's keeper) ends while the request is on its way (redteam_broker.py).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
harness_start
harness_py tests/integration/redteam_broker.py
