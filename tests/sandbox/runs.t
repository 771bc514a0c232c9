#!/usr/bin/env bash
# runs.t: streamed runs through the broker (sbx_client_run_stream): output delivered as it is
# read, a prefix of the final result that never contradicts it (caps and truncation as usual),
# ticks while nothing comes, a slow reader that neither stalls the run past its limits nor changes
# its result, and what streaming costs a short run next to sbx_client_run.
. "$(dirname "$0")/runs_lib.sh"
runs_setup runs 395000
endf() { sed -n 's/^end .*\b'"$1"'=\([^ ]*\).*/\1/p' "$dir/ev"; }
prefix_of() { # prefix_of LIVE FINAL: LIVE is a prefix of FINAL
	local n; n=$(stat -c %s "$1"); cmp -s -n "$n" "$1" "$2" && [ "$n" -le "$(stat -c %s "$2")" ]
}

runs_broker --slots 2 --client-uid 0

# Time to first byte: print, sleep 2 s, print. The first chunk comes before the run ends, and
# at least a second before it.
drive stream "$dir" -- /bin/sh -c 'echo first; sleep 2; echo second' >"$dir/ev"
is "$(endf status)" ok "the streamed run ends ok"
first=$(awk '$1=="chunk"{print $2; exit}' "$dir/ev")
end=$(awk '$1=="end"{print $2}' "$dir/ev")
[ -n "$first" ] && [ $((end - first)) -ge 1000 ]
ok $? "the first chunk arrived while the program still ran (at ${first:-?} ms, end at $end ms)"
is "$(cat "$dir/out.live")" $'first\nsecond' "every byte of stdout was delivered, in order"
cmp -s "$dir/out.live" "$dir/out.final"
ok $? "what was delivered is exactly the final stdout"

# Ticks while nothing comes: a 5 s silence gives at least one.
drive stream "$dir" -- /bin/sh -c 'sleep 5; echo x' >"$dir/ev"
ticks=$(grep -c '^tick' "$dir/ev")
[ "$ticks" -ge 1 ]
ok $? "a silent run gets ticks ($ticks in 5 s)"

# Caps: a flood past output_bytes is cut exactly as the result says; the delivered bytes are a
# prefix of it, never more.
drive stream "$dir" -c 1000 -- /bin/sh -c 'yes abcdefghij | head -c 50000; yes e | head -c 30000 >&2' >"$dir/ev"
is "$(endf out_len)" 1000 "the flood's stdout is kept up to the cap"
is "$(endf out_truncated)" 1 "and flagged truncated"
is "$(stat -c %s "$dir/out.live")" 1000 "exactly the kept bytes were delivered"
prefix_of "$dir/out.live" "$dir/out.final" && prefix_of "$dir/err.live" "$dir/err.final"
ok $? "delivered stdout and stderr are prefixes of the final streams"
cmp -s "$dir/err.live" "$dir/err.final"
ok $? "stderr delivered in full (up to its cap)"

# Same result as a plain run.
drive plain "$dir" -- /bin/sh -c 'echo out; echo err >&2; exit 3' >"$dir/ev"
plain=$(sed 's/^end [0-9]* //; s/wall_ms=[0-9]* //' "$dir/ev")
drive stream "$dir" -- /bin/sh -c 'echo out; echo err >&2; exit 3' >"$dir/ev"
streamed=$(sed -n 's/^end [0-9]* //; s/wall_ms=[0-9]* //p' "$dir/ev")
is "$streamed" "$plain" "a streamed run's result is the plain run's (status, lengths, exit)"

# A slow reader (each chunk takes it 300 ms) of a program that writes 200 lines fast and then
# runs past its 2 s wall limit: the run still ends by its limit, and the delivered bytes are
# still a prefix of the result.
drive stream "$dir" -s 300 -w 2000 -- /bin/sh -c 'i=0; while [ $i -lt 200 ]; do echo line $i; i=$((i+1)); sleep 0.01; done; sleep 30' >"$dir/ev"
is "$(endf status)" timeout "a slow reader's run ends by its wall limit"
wall=$(endf wall_ms)
[ "$wall" -lt 5000 ]
ok $? "and does not run on for the reader (the run's wall time: $wall ms)"
prefix_of "$dir/out.live" "$dir/out.final" && cmp -s "$dir/out.live" "$dir/out.final"
ok $? "the slow reader got every kept byte, consistent with the result"

# The cost of streaming to a short run: median of 30 runs each way (a comment, not a test: the
# machine is shared; bench numbers come from make bench).
b=$(drive bench 30)
diag "short run (/bin/echo hi) median wall: $b"
echo "$b" | grep -q 'plain_us=[0-9]* stream_us=[0-9]*'
ok $? "both kinds of short run complete"

kill -TERM $pid
wait $pid 2>/dev/null
pid=
done_testing
