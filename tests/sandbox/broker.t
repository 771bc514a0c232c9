#!/usr/bin/env bash
# broker.t: the privileged broker (build/sbxd) as the service uses it: runs through its socket,
# peer-uid check, fail-closed set-up errors that answer instead of hanging, a run cancelled when
# its client goes away, and a stop that leaves no process, socket or cgroup behind.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
[ "$(id -u)" = 0 ] || skip_all "needs root (namespaces, cgroups)"
[ -x build/sbxd ] && [ -x build/sbx ] || skip_all "build/sbxd or build/sbx missing (make all)"

dir=$(mktemp -d /var/tmp/sbx-broker-t.XXXXXX)
chmod 755 "$dir"
uid_base=$((390000 + (RANDOM % 64) * 16))
cg=sbx-brokertest-$$
files_uid=65534 files_gid=65534
mkdir -p "$dir/work" && chown $files_uid:$files_gid "$dir/work"
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	pkill -9 -u "$(seq -s, $uid_base $((uid_base + 3)))" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

start() { # start [extra sbxd args...]
	build/sbxd --socket "$dir/sock" --slots 2 --client-uid 0 --files-uid $files_uid \
		--files-gid $files_gid --uid-base $uid_base --cgroup-name $cg "$@" 2>>"$dir/log" &
	pid=$!
	wait_for 30 sockets_up
}
stop() {
	kill -TERM "$pid" 2>/dev/null
	wait_for 10 broker_gone
	local rc=$?
	wait "$pid" 2>/dev/null
	pid=
	return $rc
}
wait_for() { # wait_for SECONDS CMD...: poll CMD until it succeeds (no speed is assumed)
	local end=$((SECONDS + $1))
	shift
	until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.05; done
}
broker_gone() { ! kill -0 "$pid" 2>/dev/null; }
sockets_up() { [ -S "$dir/sock" ] && [ -S "$dir/sock-health" ]; }
run_sleeping() { pgrep -u "$(seq -s, $uid_base $((uid_base + 1)))" -x sleep >/dev/null; }
no_run_sleeping() { ! run_sleeping; }
no_slot_procs() { [ "$(slot_procs)" -eq 0 ]; }
field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin).get('$1'))"; }
slot_procs() { ps -eo uid= | awk -v lo=$uid_base -v hi=$((uid_base + 2)) '$1>=lo && $1<hi' | wc -l; }

start
ok $? "sbxd starts and listens on its run and control sockets"
out=$(build/sbx --broker "$dir/sock" --workdir "$dir/work" -- /bin/sh -c 'echo hi > f; cat f; id -u')
is "$(echo "$out" | field status)" ok "a run through the broker succeeds"
is "$(echo "$out" | field stdout)" $'hi\n1000' "it ran as uid 1000 inside and wrote to /work"
is "$(stat -c %u "$dir/work/f")" $files_uid "what it wrote is owned by the files uid on disk"
is "$(stat -c %a "$(dirname "$dir/sock")/sock")" 660 "the run socket is mode 0660"

# Only the service's uid (and root) may ask: nobody is in the socket's group here, so only the
# SO_PEERCRED check stands between it and the broker.
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups build/sbx --broker "$dir/sock" \
	--workdir "$dir/work" -- /bin/echo should-not-run 2>/dev/null)
is "$(echo "$out" | field status)" internal_error "a peer with another uid is refused"
grep -q 'event=reject.*reason=peer_uid' "$dir/log"
ok $? "the broker logs the refused peer"

# Cancel: the client disappears mid-run; the run must not go on.
build/sbx --broker "$dir/sock" --workdir "$dir/work" -- /bin/sleep 30 >/dev/null &
client=$!
wait_for 60 run_sleeping
ok $? "the run started (its sleep is running in a slot)"
kill -9 $client
wait $client 2>/dev/null
wait_for 3 no_run_sleeping
ok $? "a run whose client went away is killed (no sleep left within 3 s)"
grep -q 'status=internal_error.*cancelled' "$dir/log"
ok $? "the broker logs the cancelled run"

# Stop during a run: prompt, and nothing left.
build/sbx --broker "$dir/sock" --workdir "$dir/work" -- /bin/sleep 30 >"$dir/during-stop" &
client=$!
wait_for 60 run_sleeping || diag "the run's sleep was not seen within 60 s"
stop
ok $? "SIGTERM stops the broker within 10 s even with a 30 s run in flight"
wait $client 2>/dev/null
is "$(field status <"$dir/during-stop")" internal_error "the run in flight is answered as internal_error"
wait_for 5 no_slot_procs
is "$(slot_procs)" 0 "no process of the broker's slots is left (within 5 s of the stop)"
[ ! -e "$dir/sock" ] && [ ! -e "$dir/sock-health" ]
ok $? "the sockets are removed"
left=$(ls -d /sys/fs/cgroup/*/$cg 2>/dev/null | wc -l)
is "$left" 0 "the cgroup subtree is removed"

# Fail closed, and answer: a set-up step that cannot work is internal_error, not a hang.
start --bind-ro /nonexistent-sbx-source:/opt/sbx
ok $? "sbxd starts with a bind source that does not exist"
out=$(timeout 20 build/sbx --broker "$dir/sock" --workdir "$dir/work" -- /bin/true)
is "$(echo "$out" | field status)" internal_error "a run then fails closed with internal_error"
echo "$out" | field message | grep -q 'bind source /nonexistent-sbx-source'
ok $? "the message names the failed step"
stop
ok $? "and the broker still stops promptly"

# Slots that cannot open at all (here: their cgroup's parent directory does not exist):
# the broker answers runs itself, internal_error with the slots' reason, and its probe says so,
# instead of leaving clients in the listen queue and counting crash-looping slots as alive.
cg_saved=$cg
cg=sbx-missing-$$/slots
start
ok $? "sbxd starts even when its slots cannot open"
# Once the broker knows (its probe says both slots failed), a run must be answered at once. (A
# slot that has not tried to open yet counts as ready: on a loaded machine the second one may
# still be starting when the first has failed.)
slots_failed() {
	build/sbx --broker "$dir/sock" --probe 2>/dev/null |
		grep -q '0 of 2 slots ready; a slot failed to open'
}
wait_for 30 slots_failed || diag "the probe did not report the failed slots within 30 s"
t0=$(date +%s%N)
out=$(timeout 20 build/sbx --broker "$dir/sock" --workdir "$dir/work" -- /bin/true)
t1=$(date +%s%N)
is "$(echo "$out" | field status)" internal_error "a run is answered internal_error"
echo "$out" | field message | grep -q 'no sandbox slot can be opened: cgroup.*No such file or directory'
ok $? "the message gives the slots' reason${out:+: $(echo "$out" | field message | cut -c1-120)}"
ok $([ $(((t1 - t0) / 1000000)) -lt 5000 ]; echo $?) "at once, not after a client timeout ($(((t1 - t0) / 1000000)) ms)"
probe=$(build/sbx --broker "$dir/sock" --probe)
rc=$?
ok $([ $rc -eq 1 ] && echo "$probe" | grep -q '"usable": false' &&
	echo "$probe" | grep -q '0 of 2 slots ready; a slot failed to open'; echo $?) \
	"the probe says unusable, 0 of 2 slots ready, and why"
echo "$probe" | grep -q '0 of 2 slots ready; a slot failed' || diag "probe (rc $rc): $probe"
stop
ok $? "and the broker stops promptly"
cg=$cg_saved
start
probe=$(build/sbx --broker "$dir/sock" --probe)
ok $([ $? -eq 0 ] && echo "$probe" | grep -q '2 of 2 slots ready'; echo $?) \
	"a healthy broker's probe: usable, 2 of 2 slots ready"
stop

# A broker started niced past the programs' own nice value (an operator's `nice -n 15`): runs
# still work, at that nice value (lowering it would need a privilege the sandbox lacks).
start_niced() { nice -n 15 build/sbxd --socket "$dir/sock" --slots 2 --client-uid 0 \
	--files-uid $files_uid --files-gid $files_gid --uid-base $uid_base --cgroup-name $cg \
	2>>"$dir/log" & pid=$!; wait_for 30 sockets_up; }
start_niced
out=$(build/sbx --broker "$dir/sock" --workdir "$dir/work" -- /bin/sh -c 'cut -d" " -f19 /proc/self/stat')
is "$(echo "$out" | field status)" ok "a broker started under nice 15 still runs programs"
is "$(echo "$out" | field stdout)" 15 "which keep its nice value (15), never less nice"
stop

done_testing
