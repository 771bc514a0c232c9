#!/usr/bin/env bash
# zygote_stop.t: a stack whose slots run zygotes (the default) stops with nothing of a slot left
# for the stack's sweep to find: each slot reaps its zygotes and every init they forked, the
# prepared one and ended runs' alike (sandbox/slot.c, sbx_slot_close). Before, every stop after
# Python runs printed "leftover processes of slot uid N (killed)".
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || skip_all "needs root (the stack)"
unset SBX_ZYGOTE
export HARNESS_SLOTS=2
harness_start
# both forms in both slots: user runs (-u) and the evaluate runner (-S -B)
ok_runs=0
for i in 1 2 3 4; do
	out=$($SBX_CURL -H "Authorization: Bearer $SBX_TOKEN" \
		-d '{"language":"python","code":"print(6*7)"}' "$SBX_URL/v1/execute")
	case "$out" in *'"stdout":"42\n"'*) ok_runs=$((ok_runs + 1)) ;; esac
	out=$($SBX_CURL -H "Authorization: Bearer $SBX_TOKEN" \
		-d '{"language":"python","code":"def f(x):\n  return x+1","entry_point":"f","io_cases":[{"input":[1],"output":2}]}' \
		"$SBX_URL/v1/evaluate")
	case "$out" in *'"passed":true'*) ok_runs=$((ok_runs + 1)) ;; esac
done
is "$ok_runs" 8 "four executes and four evaluates ran"
sleep 1 # the slots prepare their next sandboxes (from their zygotes) while idle
z=$(pgrep -c -x sbx-zygote -U "$(seq -s, "$SBX_UID_BASE" $((SBX_UID_BASE + SBX_SLOTS - 1)))")
[ "${z:-0}" -gt 0 ]
ok $? "the slots run zygotes ($z processes named sbx-zygote)"
said=$(stack_stop 2>&1)
case "$said" in *"leftover processes"*) false ;; *) true ;; esac
ok $? "the stop finds no leftover process of a slot's uid"
[ -z "$said" ] || diag "$said"
left=$(ps -eo uid=,pid=,stat=,comm= | awk -v lo="$SBX_UID_BASE" -v hi="$((SBX_UID_BASE + SBX_SLOTS * 2))" '$1 >= lo && $1 < hi')
[ -z "$left" ]
ok $? "no process (not even a zombie) of a slot's uid after the stop"
[ -z "$left" ] || diag "$left"
done_testing
