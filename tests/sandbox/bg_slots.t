#!/usr/bin/env bash
# bg_slots.t: background runs have slots of their own (sbxd --background-runs N: N slots that
# accept only on <socket>-bg, root's alone, which only the keepers reach), in a cgroup of low CPU
# weight (<cgroup-name>-bg: cpu.shares on v1, cpu.weight on v2). Seen from the host, through a
# marker in the runs' argv and /proc/<pid>/cgroup: a background run's processes sit in the
# background slot's group with the low weight, a foreground run's do not; a shell background run
# leaves the foreground slots' pre-started Python interpreters alone; a run cannot leave or
# change its group; the probe counts the background slots apart; a stop leaves no group behind;
# slots that cannot open fail closed, and say why. Foreground slots get one cpu share each under
# a parent weighted by their number.
. "$(dirname "$0")/runs_lib.sh"
runs_setup bg-slots 402000
first() { head -1 | cut -d' ' -f"$1"; }
mark=bgmark$$
# the run's group in the cpu hierarchy (v1: the line naming the cpu controller; v2: 0::)
cpu_path() { # cpu_path PID
	local p
	p=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' "/proc/$1/cgroup" 2>/dev/null)
	[ -n "$p" ] || p=$(awk -F: '$1 == "0" {print $3}' "/proc/$1/cgroup" 2>/dev/null)
	echo "$p"
}
cpu_mnt=$(findmnt -n -t cgroup -o TARGET,OPTIONS | awk '$2 ~ /(^|,)cpu(,|$)/ {print $1; exit}')
# (the low weight is per background slot: 64 shares or 6 of weight, times the one slot here)
if [ -n "$cpu_mnt" ]; then
	weight_file=cpu.shares want_weight=64
else
	cpu_mnt=$(findmnt -n -t cgroup2 -o TARGET | head -1)
	weight_file=cpu.weight want_weight=6
fi
# the weight of the group named NAME that holds PATH (a slot's group, or a run's under it)
weight_of() { # weight_of PATH NAME
	local p=$1
	while [ -n "$p" ] && [ "$(basename "$p")" != "$2" ]; do p=$(dirname "$p"); [ "$p" = / ] && p=; done
	[ -n "$p" ] && cat "$cpu_mnt$p/$weight_file"
}

# The pre-start's waiting interpreters are what is watched below (with the zygote, the default,
# the prepared sandboxes hold the zygote's processes instead): the slots' separation is the same.
export SBX_ZYGOTE=0
runs_broker --slots 2 --client-uid 65534 --background-runs 1
probe_says() { build/sbx --broker "$dir/sock" --probe 2>/dev/null | grep -q "$1"; }
wait_for 30 probe_says '2 of 2 slots ready; 1 of 1 background slots ready'
ok $? "the probe counts 2 foreground slots and, apart, 1 background slot"
is "$(stat -c '%a %U' "$dir/sock-bg")" "600 root" "the background slots' socket is root's alone (0600)"
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups build/sbx --broker "$dir/sock-bg" \
	--workdir "$dir" -- /bin/echo reached 2>/dev/null)
! echo "$out" | grep -q reached
ok $? "the pool's uid cannot reach the background slots' socket"

# Both foreground slots learn Python (two runs at once hold both), then pre-start it.
# (a pre-started interpreter names itself sbx-warm until its job comes: warm_stub.py)
warm_both() { pgrep -u $uid_base -x sbx-warm >/dev/null && pgrep -u $((uid_base + 1)) -x sbx-warm >/dev/null; }
for try in 1 2 3 4 5; do
	clients=
	for k in 1 2; do
		mkdir -p "$dir/p$k"
		drive stream "$dir/p$k" -- /usr/bin/python3 -c 'import time; time.sleep(1.5); print(1)' \
			>"$dir/p$k/ev" &
		clients+=" $!"
	done
	wait $clients
	wait_for 30 warm_both && break
done
warm_both
ok $? "each foreground slot has a pre-started python3 (sbx-warm) waiting after a Python run"
py0=$(pgrep -u $uid_base -x sbx-warm) py1=$(pgrep -u $((uid_base + 1)) -x sbx-warm)

# A shell background run, marked in its argv.
a=$(newid)
is "$(drive start "$a" alice s1 0 60 -- /bin/sh -c 'while :; do echo tick; sleep 0.2; done' $mark | first 1)" \
	0 "a shell background run starts"
bg_pid() { pgrep -u $((uid_base + 2)) -f "$mark" | head -1; }
wait_for 30 eval '[ -n "$(bg_pid)" ]'
p=$(bg_pid)
is "$(ps -o uid= -p "$p" | tr -d ' ')" $((uid_base + 2)) "it runs in the background slot (host uid $((uid_base + 2)))"
path=$(cpu_path "$p")
case "$path" in */$cg-bg/slot2 | */$cg-bg/slot2/*) r=0 ;; *) r=1 ;; esac
ok $r "its cpu group is the background slot's, under $cg-bg ($path)"
is "$(weight_of "$path" "$cg-bg")" $want_weight "that group's $weight_file is the low weight ($want_weight)"
outside=0
for q in $(pgrep -u $((uid_base + 2))); do
	qp=$(cpu_path "$q")
	[ -n "$qp" ] || continue # (a sleep that ended meanwhile)
	case "$qp" in */$cg-bg/*) ;; *) outside=$((outside + 1)) diag "outside: $q $qp" ;; esac
done
is "$outside" 0 "every process of the background slot's uid is in that group"
ticks() { [ "$(drive output "$a" alice 1 0 0 | tail -n +2 | grep -c tick)" -ge 5 ]; }
wait_for 30 ticks
ok $? "the background run runs (five ticks read)"
kill -0 "$py0" 2>/dev/null && kill -0 "$py1" 2>/dev/null
ok $? "the foreground slots' pre-started interpreters are still the same, waiting ($py0 $py1)"

# A foreground run is not in the background group.
mkdir -p "$dir/fg"
drive stream "$dir/fg" -- /bin/sh -c 'sleep 5' fg$mark >/dev/null &
fgclient=$!
# (the client's own argv holds the marker too: only the slots' uids)
fg_pid() { pgrep -u $uid_base,$((uid_base + 1)) -f "fg$mark" | head -1; }
wait_for 30 eval '[ -n "$(fg_pid)" ]'
fpath=$(cpu_path "$(fg_pid)")
case "$fpath" in *-bg/*) r=1 ;; *) r=0 ;; esac
ok $r "a foreground run's cpu group is not the background one ($fpath)"
# Foreground runs: one share per slot (whatever they setsid()), under a parent weighted by the
# slot count, so the pool weighs what its runs did as autogroups.
case "$fpath" in */$cg/slot[01] | */$cg/slot[01]/*) r=0 ;; *) r=1 ;; esac
ok $r "it is its slot's own cpu group, under $cg ($fpath)"
[ "$weight_file" = cpu.shares ] && want_fg=2048 || want_fg=200
is "$(weight_of "$fpath" "$cg")" $want_fg "whose $weight_file is the 2 slots' ($want_fg)"
kill "$fgclient" 2>/dev/null
wait "$fgclient" 2>/dev/null

# A run cannot leave or change its group: no cgroupfs, its own cgroup namespace, no privilege.
is "$(drive kill "$a" alice)" 0 "the first background run is killed"
e=$(newid)
drive start "$e" alice s1 0 60 -- /bin/sh -c '
	cat /proc/self/cgroup
	echo $$ > /sys/fs/cgroup/cpu/cgroup.procs && echo ESCAPED
	echo $$ > /sys/fs/cgroup/cgroup.procs && echo ESCAPED
	echo 1024 > /sys/fs/cgroup/cpu/cpu.shares && echo ESCAPED
	mkdir -p /tmp/cg && mount -t cgroup -o cpu none /tmp/cg && echo ESCAPED
	mount -t cgroup2 none /tmp/cg && echo ESCAPED
	echo -20 > /proc/self/autogroup
	echo tried; sleep 30' esc$mark >/dev/null
tried() { drive output "$e" alice 1 0 0 | grep -q tried; }
wait_for 30 tried
ok $? "the escape attempts ran"
drive output "$e" alice 1 0 0 | tail -n +2 >"$dir/esc"
! grep -q ESCAPED "$dir/esc"
ok $? "no write to a cgroup and no cgroupfs mount succeeded"
grep -Eq '^[0-9]+:([^:]*,)?cpu(,[^:]*)?:/$|^0::/$' "$dir/esc"
ok $? "inside, its own cpu group is the root of its cgroup namespace"
esc_pid() { pgrep -u $((uid_base + 2)) -f "esc$mark" | head -1; }
epath=$(cpu_path "$(esc_pid)")
case "$epath" in */$cg-bg/*) r=0 ;; *) r=1 ;; esac
ok $r "seen from the host it is still in the background group ($epath)"
is "$(weight_of "$epath" "$cg-bg")" $want_weight "whose weight is unchanged"

# A stop leaves no group, socket or process behind.
kill -TERM $pid
wait $pid 2>/dev/null
pid=
is "$(find /sys/fs/cgroup -maxdepth 4 -type d -name "$cg*" 2>/dev/null | wc -l)" 0 \
	"after a stop no cgroup of the broker's is left (slots', background slots')"
[ ! -e "$dir/sock-bg" ]
ok $? "the background slots' socket is removed"
no_procs() { [ "$(ps -eo uid= | awk -v lo=$uid_base -v hi=$((uid_base + 3)) '$1>=lo && $1<hi' | wc -l)" -eq 0 ]; }
wait_for 10 no_procs
ok $? "no process of any slot is left"

# Fail closed: background slots that cannot open (their cgroup's parent does not exist) make
# no run unconfined: a background run is refused with the reason, and the probe says so.
cg_saved=$cg
cg=sbx-missing-$$/x
runs_broker --slots 2 --client-uid 65534 --background-runs 1
wait_for 30 probe_says '0 of 1 background slots ready; a background slot failed to open'
ok $? "the probe says the background slot failed to open, and why"
f=$(newid)
drive start "$f" alice s1 0 60 -- /bin/echo should-not-run >"$dir/start"
is "$(first 1 <"$dir/start")" -11 "a background run is refused at once (-EAGAIN), never run unweighted"
grep -q 'no background slot can be opened: ' "$dir/start"
ok $? "with the background slots' reason ($(cut -c1-100 "$dir/start"))"
kill -TERM $pid
wait $pid 2>/dev/null
pid=
cg=$cg_saved
done_testing
