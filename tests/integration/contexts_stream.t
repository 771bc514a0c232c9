#!/usr/bin/env bash
# contexts_stream.t: "stream": true on context cells through the real stack over HTTPS (checks in
# contexts_stream.py), then: nothing of a context is left once the stack stops (no process of a
# context uid, no context cgroup).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
SBX_CONTEXTS=${SBX_CONTEXTS:-8}
export SBX_CONTEXTS
harness_start
harness_py_contexts tests/integration/contexts_stream.py
