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
/usr/bin/python3 tests/integration/contexts_stream.py | sed '/^1\.\./d' | tee "$SBX_HARNESS_DIR/py.tap"
rc=${PIPESTATUS[0]}
n=$(grep -cE '^(not )?ok ' "$SBX_HARNESS_DIR/py.tap")
cg=$SBX_CGROUP
lo=$((SBX_UID_BASE + SBX_SLOTS)) hi=$((SBX_UID_BASE + SBX_SLOTS + SBX_CONTEXTS))
stack_stop
left=$(ps -eo uid=,pid=,comm= | awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi')
n=$((n + 1))
if [ -z "$left" ]; then echo "ok $n - after the stop no process of a context uid is left"
else echo "not ok $n - after the stop no process of a context uid is left"; echo "$left" | sed 's/^/#   /'; rc=1; fi
cgs=$(find /sys/fs/cgroup -maxdepth 3 -type d -name "$cg-ctx*" 2>/dev/null)
n=$((n + 1))
if [ -z "$cgs" ]; then echo "ok $n - after the stop no context cgroup is left"
else echo "not ok $n - after the stop no context cgroup is left"; echo "$cgs" | sed 's/^/#   /'; rc=1
	for c in $cgs; do find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done; fi
echo "1..$n"
tap_failed=$rc
exit "$rc"
