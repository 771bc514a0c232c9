#!/usr/bin/env bash
# runs_bg.t: background runs held by the broker: start returns at once, output read by cursor
# with long-polling, status with the final result, list per owner and session, ownership, caps
# (per owner, and the machine's --background-runs, the number of background slots of their own,
# so others' runs still get slots), signals and kill, keep_s, and a broker stop that leaves
# nothing behind.
. "$(dirname "$0")/runs_lib.sh"
runs_setup runs-bg 398000
first() { head -1 | cut -d' ' -f"$1"; }
ended() { [ "$(drive status "$1" alice | first 2)" = ended ]; }
gone() { [ "$(drive status "$1" alice | first 1)" = -2 ]; }
# 4 slots and 2 background slots of their own: uids uid_base .. uid_base+5
slot_procs() { ps -eo uid= | awk -v lo=$uid_base -v hi=$((uid_base + 6)) '$1>=lo && $1<hi' | wc -l; }

runs_broker --slots 4 --client-uid 65534 --background-runs 4

# A date loop read by cursor, long-polled.
a=$(newid)
t0=$(date +%s%N)
is "$(drive start "$a" alice s1 2 60 -- /bin/sh -c 'while true; do date +%s%N; sleep 1; done' | first 1)" 0 "start answers 0"
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -lt 5000 ]
ok $? "start returns at once ($(((t1 - t0) / 1000000)) ms)"
keeper_uids=$(ps -o uid= --ppid $pid | sort -u | tr -d ' ' | tr '\n' ' ')
is "$keeper_uids" "0 65534 " "the keeper runs as the client uid (65534), slots as root"
cursor=0 got=""
for i in 1 2 3; do
	drive output "$a" alice 1 $cursor 10000 >"$dir/o"
	rc=$(first 1 <"$dir/o") next=$(first 2 <"$dir/o")
	[ "$rc" = 0 ] || break
	got+=$(tail -n +2 "$dir/o")$'\n'
	cursor=$next
done
is "$rc" 0 "three long-polled reads by cursor answer 0"
lines=$(printf '%s' "$got" | grep -c '^[0-9]*$')
[ "$lines" -ge 3 ]
ok $? "they return the loop's lines in order, each new ($lines lines by cursor $cursor)"
drive output "$a" alice 1 0 0 | tail -n +2 >"$dir/all"
cmp -s <(printf '%s' "$got") <(head -c "$cursor" "$dir/all")
ok $? "what was read by cursor is a prefix of the whole stream"
s=$(date +%s%N); drive output "$a" alice 2 0 1500 >"$dir/o"; e=$(date +%s%N)
[ "$(first 1 <"$dir/o")" = 0 ] && [ $(((e - s) / 1000000)) -ge 1000 ]
ok $? "a long-poll with nothing new waits (stderr, $(((e - s) / 1000000)) ms for 1500)"
is "$(drive output "$a" alice 1 999999 0 | first 1)" -22 "a cursor past the kept output: -EINVAL"

# Ownership and listing.
is "$(drive status "$a" bob | first 1)" -2 "another owner's status: -ENOENT"
is "$(drive output "$a" bob 1 0 0 | first 1)" -2 "another owner's output: -ENOENT"
is "$(drive kill "$a" bob)" -2 "another owner's kill: -ENOENT"
is "$(drive list bob | first 2)" 0 "bob lists none"
is "$(drive list alice s1)" "0 1"$'\n'"$a running" "alice's session s1 lists it, running"
is "$(drive list alice s2 | first 2)" 0 "another session lists none"

# Caps: alice at her cap of 2 after a second run; carol (no cap of her own) at her share, half
# of the machine's 4; the machine's 4 taken after that.
b=$(newid)
is "$(drive start "$b" alice s1 2 60 -- /bin/sleep 60 | first 1)" 0 "a second background run starts"
is "$(drive start "$(newid)" alice s1 2 60 -- /bin/sleep 60 | first 1)" -122 "a third for alice: -EDQUOT (her cap)"
c1=$(newid) c2=$(newid)
is "$(drive start "$c1" carol s9 0 60 -- /bin/sleep 60 | first 1)" 0 "carol starts one"
is "$(drive start "$c2" carol s9 0 60 -- /bin/sleep 60 | first 1)" 0 "and a second"
is "$(drive start "$(newid)" carol s9 0 60 -- /bin/sleep 60 | first 1)" -122 "a third for carol: -EDQUOT (half the machine, whatever her cap)"
is "$(drive start "$(newid)" dave s8 0 60 -- /bin/sleep 60 | first 1)" -11 "the machine's background runs are all taken: -EAGAIN"
is "$(drive start "$a" carol s9 0 60 -- /bin/true | first 1)" -17 "an id in use: -EEXIST"
f=$dir/f; mkdir "$f"
drive stream "$f" -- /bin/echo foreground >"$f/ev"
grep -q 'status=ok' "$f/ev" && [ "$(cat "$f/out.final")" = foreground ]
ok $? "with the background runs holding their slots, another client's run still gets one"

is "$(drive kill "$c1" carol)$(drive kill "$c2" carol)" 00 "carol's are killed"

# A signal ends a background run and keeps its output; kill forgets one.
is "$(drive signal "$b" alice 9)" 0 "SIGKILL to a background run"
wait_for 30 ended "$b"
ok $? "it ends"
is "$(drive status "$b" alice | first 3)" signal "its status says signal"
is "$(drive kill "$a" alice)" 0 "kill answers 0"
is "$(drive status "$a" alice | first 1)" -2 "a killed run is forgotten"
is "$(drive list alice | first 2)" 1 "alice lists the one left"

# An ended run keeps its result for keep_s, then goes.
c=$(newid)
is "$(drive start "$c" alice s1 0 2 -- /bin/sh -c 'echo done; exit 3' | first 1)" 0 "a short background run starts (keep_s 2)"
wait_for 30 ended "$c"
drive status "$c" alice >"$dir/st"
is "$(first 3 <"$dir/st")" error "its status has the final result (exit 3: error)"
is "$(tail -n +2 "$dir/st")" done "and its stdout"
is "$(drive output "$c" alice 1 0 0 | first 4)" 0 "output of an ended run: not truncated"
is "$(drive output "$c" alice 1 0 0 | first 3)" 1 "and flagged ended"
wait_for 20 gone "$c"
ok $? "it is gone after keep_s"

# A broker stop leaves nothing: the keeper and its run.
d=$(newid)
drive start "$d" alice s1 0 60 -- /bin/sleep 60 >/dev/null
some_procs() { [ "$(slot_procs)" -gt 0 ]; }
wait_for 30 some_procs
ok $? "the background sleep runs in a slot"
kill -TERM $pid
wait $pid 2>/dev/null
pid=
no_procs() { [ "$(slot_procs)" -eq 0 ]; }
wait_for 10 no_procs
ok $? "after a stop no process of any slot is left"
! pgrep -f "runs_drive|sbxd --socket $dir" >/dev/null
ok $? "no keeper (an sbxd child) is left"
is "$(ls -d /sys/fs/cgroup/*/$cg /sys/fs/cgroup/*/$cg-* 2>/dev/null | wc -l)" 0 "the cgroup subtrees (slots', background slots') are removed"
done_testing
