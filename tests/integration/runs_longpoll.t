#!/usr/bin/env bash
# runs_longpoll.t: one client's long-polls of background output cannot starve the FastCGI pool
# (runs.long_polls_per_client; the checks are in runs_longpoll.py), through the real stack.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
export HARNESS_WORKERS=${HARNESS_WORKERS:-4}
harness_start
/usr/bin/python3 tests/integration/runs_longpoll.py
rc=$?
tap_failed=$rc
exit "$rc"
