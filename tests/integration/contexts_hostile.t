#!/usr/bin/env bash
# contexts_hostile.t: the hostile checklist's programs run inside contexts too (the checks are in
# contexts_hostile.py): the kernel surface probe compiled and run from a bash context, identity,
# capabilities, seccomp, network and /proc from a Python context, and two clients' contexts that
# see nothing of each other (SANDBOX.md checklist 26, for contexts).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
harness_start
harness_py tests/integration/contexts_hostile.py
