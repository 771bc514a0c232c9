#!/usr/bin/env bash
# runs_compile.t: a compiled streamed run's id holds from its start event on, through its compile
# step (stdin held for the program, a signal cancels the compile, ownership): the checks are in
# runs_compile.py, through the real stack over HTTPS.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
harness_start
/usr/bin/python3 tests/integration/runs_compile.py
rc=$?
tap_failed=$rc
exit "$rc"
