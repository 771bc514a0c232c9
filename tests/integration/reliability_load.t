#!/usr/bin/env bash
# reliability_load.t: load and leak check. Sustained concurrent execute, file and evaluate traffic
# from alice, bob and carol with hostile runs mixed in, health timed from its own process
# (reliability_load.py, LOAD_SECONDS default 60), then, after the stack is stopped: no cgroup of
# this harness, no mount under its directory, no process in its slot uid range.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
# More workers than slots: a run waiting for a slot must not keep file calls waiting (health has
# a pool of its own).
export HARNESS_WORKERS=${HARNESS_WORKERS:-10} HARNESS_SLOTS=${HARNESS_SLOTS:-4}
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
. tests/lib/harness.sh
harness_start
# A third client, so the traffic comes from several (alice also sends the hostile runs).
SBX_TOKEN3=$(harness_token carol) || { echo "Bail out! no token for carol"; exit 1; }
export SBX_TOKEN3
/usr/bin/python3 tests/integration/reliability_load.py
read -r tap_n tap_failed <"$SBX_HARNESS_DIR/tap_state" 2>/dev/null || { tap_n=0; tap_failed=1; }

dir=$SBX_HARNESS_DIR cg=$SBX_CGROUP uid_base=$SBX_UID_BASE slots=$SBX_SLOTS
harness_stop
left=$(ls -d /sys/fs/cgroup/*/"$cg" /sys/fs/cgroup/"$cg" 2>/dev/null)
ok $([ -z "$left" ]; echo $?) "no cgroup of this harness ($cg) is left after the stack stopped"
[ -n "$left" ] && diag "left: $(echo $left) $(find $left -name cgroup.procs -exec cat {} + 2>/dev/null | wc -l) processes in them"
mounts=$(grep -c -- "$dir" /proc/self/mountinfo)
is "$mounts" 0 "no mount under the harness directory is left"
procs=""
for ((uid = uid_base; uid < uid_base + slots; uid++)); do procs+=$(pgrep -U "$uid" | tr '\n' ' '); done
is "$procs" "" "no process is left in the slot uid range"
done_testing
