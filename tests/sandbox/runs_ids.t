#!/usr/bin/env bash
# runs_ids.t: runs with ids through the broker: registered while they run under their owner
# (another owner's id looks unknown), interactive stdin fed line by line with EOF, signals
# (SIGINT gives Python its KeyboardInterrupt traceback; only SIGINT/SIGTERM/SIGKILL), an id in use
# refused, and clear answers once a run has ended.
. "$(dirname "$0")/runs_lib.sh"
runs_setup runs-ids 397000
registered() { [ "$(drive stdin "$1" alice '')" = 0 ]; }
live_has() { grep -q "$2" "$1/out.live" 2>/dev/null; }
endf() { sed -n 's/^end .*\b'"$2"'=\([^ ]*\).*/\1/p' "$1/ev"; }

runs_broker --slots 3 --client-uid 0

# Interactive stdin: a program reads three lines, answered one at a time.
a=$dir/a; mkdir "$a"; ida=$(newid)
drive stream "$a" -i "$ida" -o alice -I -w 60000 -- /usr/bin/python3 -u -c '
for i in range(3):
    print("got", input(), flush=True)
print("done")' >"$a/ev" &
bg=$!
wait_for 60 registered "$ida"
ok $? "the interactive run is registered under its id"
is "$(drive stdin "$ida" bob 'x')" -2 "another owner's stdin: -ENOENT (looks unknown)"
is "$(drive signal "$ida" bob 2)" -2 "another owner's signal: -ENOENT"
is "$(drive stdin "$(newid)" alice 'x')" -2 "an unknown id: -ENOENT"
is "$(drive stdin "$ida" alice $'one\n')" 0 "first line accepted"
wait_for 30 live_has "$a" "got one"
ok $? "the program answered the first line while running"
is "$(drive stdin "$ida" alice $'two\n')" 0 "second line accepted"
wait_for 30 live_has "$a" "got two"
ok $? "the program answered the second line"
is "$(drive stdin "$ida" alice $'three\n' eof)" 0 "third line with EOF accepted"
wait $bg
is "$(endf "$a" status)" ok "the run ends ok"
is "$(cat "$a/out.final")" $'got one\ngot two\ngot three\ndone' "its stdout has the three answers"
is "$(drive stdin "$ida" alice 'x')" -32 "stdin of an ended run: -EPIPE"
is "$(drive signal "$ida" alice 2)" -32 "signal to an ended run: -EPIPE"

# SIGINT to Python: its KeyboardInterrupt traceback.
b=$dir/b; mkdir "$b"; idb=$(newid)
drive stream "$b" -i "$idb" -o alice -w 60000 -- /usr/bin/python3 -u -c '
import time
print("ready", flush=True)
time.sleep(60)' >"$b/ev" &
bg=$!
wait_for 60 live_has "$b" ready
ok $? "the python program is running"
is "$(drive stdin "$idb" alice 'x')" -32 "stdin of a run that is not interactive: -EPIPE"
is "$(drive signal "$idb" alice 1)" -22 "SIGHUP is refused: -EINVAL"
c=$dir/c; mkdir "$c"
drive stream "$c" -i "$idb" -o alice -- /bin/true >"$c/ev"
is "$(endf "$c" rc)" -17 "a second run with an id in use: -EEXIST"
is "$(drive signal "$idb" alice 2)" 0 "SIGINT accepted"
wait $bg
grep -q KeyboardInterrupt "$b/err.final"
ok $? "python printed its KeyboardInterrupt traceback"
diag "after SIGINT: status=$(endf "$b" status) signal=$(endf "$b" signal) exit=$(endf "$b" exit)"

# SIGKILL to a shell loop: killed by the signal, reported as such.
d=$dir/d; mkdir "$d"; idd=$(newid)
drive stream "$d" -i "$idd" -o alice -w 60000 -- /bin/sh -c 'echo ready; while :; do sleep 1; done' >"$d/ev" &
bg=$!
wait_for 60 live_has "$d" ready
is "$(drive signal "$idd" alice 9)" 0 "SIGKILL accepted"
wait $bg
is "$(endf "$d" status)" signal "a SIGKILLed run ends with status signal"
is "$(endf "$d" signal)" 9 "signal 9"

kill -TERM $pid
wait $pid 2>/dev/null
pid=
done_testing
