#!/usr/bin/env bash
# bg_cpu.t: what background runs cost besides themselves is the machine's idle work (issue 17:
# 200 background runs of one client leave the others' latency alone; issue 13: tenants isolated
# in latency). Each slot has a cpu group; a run, background or not, has the default class (its
# wall time stays honest on a busy machine); the sandbox a slot prepares after a background run
# is prepared in the idle class (cpu.idle, lowest weight), and the slot is back to the default
# once it is ready (no run waits for an idle-class slot to wake); after a foreground run (a
# streamed one too: only a keeper makes a run background) the preparation is not idle; a run
# cannot raise its own priority; a broker stop removes the groups.
. "$(dirname "$0")/runs_lib.sh"
runs_setup bg-cpu 414000
first() { head -1 | cut -d' ' -f"$1"; }

# The cpu controller: v1's cpu hierarchy, or v2 with cpu enabled for the slots.
cpu_mnt=$(awk '$0 ~ / - cgroup / { n = split($NF, o, ","); for (i = 1; i <= n; i++) if (o[i] == "cpu") print $5 }' /proc/self/mountinfo | head -1)
v2_mnt=$(awk '$0 ~ / - cgroup2 / { print $5 }' /proc/self/mountinfo | head -1)
if [ -n "$cpu_mnt" ]; then
	version=1 weight=cpu.shares low=2 normal=1024
elif [ -n "$v2_mnt" ] && grep -qw cpu "$v2_mnt/cgroup.controllers" 2>/dev/null; then
	version=2 weight=cpu.weight low=1 normal=100
else
	skip_all "no cpu controller (neither cgroup v1 cpu nor v2 cpu)"
fi

runs_broker --slots 4 --client-uid 65534 --background-runs 2

# pid of the process of a slot's uid named $1 (the program, on the host), or nothing
prog_pid() { ps -eo pid=,uid=,comm= | awk -v lo=$uid_base -v hi=$((uid_base + 4)) -v c="$1" '$2>=lo && $2<hi && $3==c {print $1; exit}'; }
# the host directory of the cpu group whose class rules pid $1 (v1: its cpu group; v2: the parent
# of its run group, the slot's group)
cpu_dir() {
	local line
	if [ $version = 1 ]; then
		line=$(awk -F: '{ n = split($2, o, ","); for (i = 1; i <= n; i++) if (o[i] == "cpu") print $3 }' "/proc/$1/cgroup")
		echo "$cpu_mnt$line"
	else
		line=$(awk -F: '$1 == 0 { print $3 }' "/proc/$1/cgroup")
		echo "$v2_mnt${line%/run}"
	fi
}
# "low" (the idle class where the kernel has cpu.idle, whose weight then reads the kernel's own
# idle weight, and the lowest weight), "normal" (not idle, the default weight), or what it is
class() {
	local w idle=-
	w=$(cat "$1/$weight")
	[ -f "$1/cpu.idle" ] && idle=$(cat "$1/cpu.idle")
	if [ "$w" -le $((low + 1)) ] && [ "$idle" != 0 ]; then echo low
	elif [ "$w" = $normal ] && [ "$idle" != 1 ]; then echo normal
	else echo "$weight $w, cpu.idle $idle"; fi
}

# A background run: its program, and its keeper.
a=$(newid)
is "$(drive start "$a" alice s1 0 60 -- /bin/sleep 30 | first 1)" 0 "a background sleep starts"
have_sleep() { [ -n "$(prog_pid sleep)" ]; }
wait_for 30 have_sleep
ok $? "its program runs in a slot"
p=$(prog_pid sleep)
g=$(cpu_dir "$p")
case "$g" in */"$cg"/slot[0-9]*) ok 0 "it sits in its slot's cpu group ($g)" ;; *) ok 1 "it sits in its slot's cpu group (got '$g')" ;; esac
is "$(class "$g")" normal "the run itself has the default class ($weight $normal, not idle)"
[ "$(ps -o ni= -p "$p" | tr -d ' ')" -ge 10 ]
ok $? "the program itself is niced (10 or more)"

# It cannot raise its own priority: not its nice, not its scheduling class, not its group.
b=$(newid)
drive start "$b" alice s1 0 60 -- /bin/sh -c 'renice -n 0 -p $$ >/dev/null 2>&1 && echo reniced; chrt -f -p 1 $$ >/dev/null 2>&1 && echo rescheduled; for f in /sys/fs/cgroup/cpu.idle /sys/fs/cgroup/cpu/cpu.idle /sys/fs/cgroup/cpu.weight /sys/fs/cgroup/cpu/cpu.shares; do echo 0 2>/dev/null >$f && echo "wrote $f"; done; echo end' >/dev/null
ended() { [ "$(drive status "$1" alice | first 2)" = ended ]; }
wait_for 30 ended "$b"
is "$(drive output "$b" alice 1 0 0 | tail -n +2)" end "a background run cannot renice itself, take a realtime class or write its group's files"

# A foreground run, streamed like a keeper's but from a client: the default weight.
f=$dir/f
mkdir "$f"
drive stream "$f" -w 20000 -- /usr/bin/tail -f /dev/null >/dev/null &
fg=$!
have_tail() { [ -n "$(prog_pid tail)" ]; }
wait_for 30 have_tail
ok $? "a foreground streamed run runs"
fgd=$(cpu_dir "$(prog_pid tail)")
is "$(class "$fgd")" normal "its group has the default weight ($weight $normal), not idle"
fslot=$(($(ps -o uid= -p "$(prog_pid tail)" | tr -d ' ') - uid_base))
kill "$fg" 2>/dev/null
wait "$fg" 2>/dev/null
no_tail() { [ -z "$(prog_pid tail)" ]; }
wait_for 30 no_tail
sleep 1
! grep -q "event=prepare class=idle slot=$fslot\b" "$dir/log"
ok $? "the slot of the foreground run prepares its next sandbox in the default class"

# The sandbox the slot prepares after a background run is idle work, until it is ready: then the
# slot waits for its next run at the default weight.
bslot=$(($(ps -o uid= -p "$p" | tr -d ' ') - uid_base))
is "$(drive kill "$a" alice)" 0 "the background sleep is killed"
no_sleep() { [ -z "$(prog_pid sleep)" ]; }
wait_for 30 no_sleep
ok $? "it is gone"
idle_prep() { grep -q "event=prepare class=idle slot=$bslot\b" "$dir/log"; }
wait_for 30 idle_prep
ok $? "its slot ($bslot) prepares the next sandbox in the idle class"
! grep -q "prewarm_failed" "$dir/log"
ok $? "and every preparation succeeded (the class written)"
back() { [ "$(class "$g")" = normal ]; }
wait_for 30 back
ok $? "its slot's group is back to the default weight once the next sandbox is ready ($(class "$g"))"

# A stop removes the cpu groups with the rest.
kill -TERM $pid
wait $pid 2>/dev/null
pid=
if [ $version = 1 ]; then
	[ ! -e "$cpu_mnt/$cg" ]
	ok $? "after a stop the cpu groups are removed ($cpu_mnt/$cg)"
else
	[ -z "$(find "$v2_mnt" -maxdepth 3 -type d -name "$cg" 2>/dev/null)" ]
	ok $? "after a stop the slots' groups are removed"
fi
done_testing
