#!/usr/bin/env bash
# runs_api.t: API.md "Runs" through the real stack over HTTPS (the checks are in runs_api.py:
# streamed answers read line by line, interactive stdin, signals, ownership, caps, a slow or
# departed reader, background runs), then: nothing of a run is left once the stack stops (no
# process of a slot uid, no cgroup of the stack).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
harness_start
/usr/bin/python3 tests/integration/runs_api.py | sed '/^1\.\./d' | tee "$SBX_HARNESS_DIR/py.tap"
rc=${PIPESTATUS[0]}
n=$(grep -cE '^(not )?ok ' "$SBX_HARNESS_DIR/py.tap")
lo=$SBX_UID_BASE hi=$((SBX_UID_BASE + 128)) cg=$SBX_CGROUP
stack_stop
left=$(ps -eo uid=,pid=,comm= | awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi')
n=$((n + 1))
if [ -z "$left" ]; then echo "ok $n - after the stop no process of the stack's uids is left"
else echo "not ok $n - after the stop no process of the stack's uids is left"; echo "$left" | sed 's/^/#   /'; rc=1; fi
cgs=$(find /sys/fs/cgroup -maxdepth 3 -type d -name "$cg*" 2>/dev/null)
n=$((n + 1))
if [ -z "$cgs" ]; then echo "ok $n - after the stop no cgroup of the stack is left"
else echo "not ok $n - after the stop no cgroup of the stack is left"; echo "$cgs" | sed 's/^/#   /'; rc=1; fi
echo "1..$n"
tap_failed=$rc
exit "$rc"
