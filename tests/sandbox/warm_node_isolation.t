#!/usr/bin/env bash
# warm_node_isolation.t: node runs started from the pre-started node (sandbox/warm.c,
# sandbox/warm_stub.js) through the real stack, one slot so every run follows the one before it in
# the same slot: nothing of a run reaches a later one (files, /tmp, /dev/shm, globals, the
# require cache, the environment, processes), runs alternate between node and Python without
# harm, and a change of the node binary drops the node started before it. Checks are in
# warm_node_isolation.py.
cd "$(dirname "$0")/../.." || exit 1
if [ ! -x /usr/bin/node ]; then
	echo "1..0 # SKIP /usr/bin/node is not installed"
	exit 0
fi
# The pre-start: the Python runs between node runs are checked for the pre-started stub (the
# zygote, the default for Python, has tests of its own: zygote*.t).
export SBX_ZYGOTE=0
export HARNESS_SLOTS=1 HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/sandbox/warm_node_isolation.py
