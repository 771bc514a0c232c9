#!/usr/bin/env bash
# warm_isolation.t: Python runs started from a pre-started interpreter (sandbox/warm.c) through
# the real stack, one slot so every run follows the one before it in the same slot: nothing of a
# run reaches a later one (files, /tmp, /dev/shm, SysV IPC, abstract sockets, module state,
# random's state, hash seed, environment), a run sees only its own processes, and /v1/execute,
# session execute and /v1/evaluate all work warm. Checks are in warm_isolation.py.
cd "$(dirname "$0")/../.." || exit 1
# The pre-start alone unless SBX_ZYGOTE=1 (zygote_isolation.t): the zygote is the default.
export SBX_ZYGOTE=${SBX_ZYGOTE:-0}
export HARNESS_SLOTS=1 HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/warm_isolation.py
