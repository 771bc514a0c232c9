#!/usr/bin/env bash
# reliability_health_pool.t: GET /v1/health has its own small FastCGI pool, so a host whose every
# worker is busy with runs still says it is healthy (a load balancer must not take a busy host
# out), and the health pool is supervised like the main one. With 2 workers and 2 slots, two
# 6-second runs hold the whole main pool: another route waits, health answers.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
export HARNESS_WORKERS=2 HARNESS_SLOTS=2
. tests/lib/harness.sh
harness_start

work=$SBX_HARNESS_DIR/hp
mkdir -p "$work"
hcurl() { curl -k -s --max-time "$1" -o "$work/hbody" -w '%{http_code}' "$SBX_URL/v1/health"; }
two_runs() { [ "$(harness_run_pids | wc -l)" -ge 2 ]; }
all_busy() { [ "$(harness_busy_worker_pids | wc -l)" -eq 2 ]; }
health_full() { [ "$(harness_health_worker_pids | wc -l)" -eq "$SBX_HEALTH_WORKERS" ]; }

pids=()
# One run each from alice and bob: admission lets one client hold at most half the pool.
tokens=("" "$SBX_TOKEN" "$SBX_TOKEN2")
for i in 1 2; do
	$SBX_CURL -o "$work/run$i" -w '%{http_code}' -H "Authorization: Bearer ${tokens[$i]}" \
		-H 'Content-Type: application/json' \
		--data '{"language":"bash","code":"sleep 58.3; echo slept","limits":{"wall_ms":60000}}' \
		"$SBX_URL/v1/execute" \
		>"$work/code$i" &
	pids+=($!)
done
wait_until 15 two_runs && wait_until 5 all_busy
ok $? "both runs started: every worker of the main pool is serving one"
is "$(curl -k -s --max-time 1 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" \
	"$SBX_URL/v1/languages")" 000 "meanwhile a request to the main pool waits (no answer within 1 s)"
is "$(hcurl 3)" 200 "GET /v1/health answers 200 while the main pool is full"
is "$(json_get 'd["status"]' <"$work/hbody")" ok "... with status ok"
ok $(two_runs; echo $?) "... and the runs are still running (health did not wait for them)"
# The runs outlast the checks above however slow the machine; end their sleeps now (by pid,
# among this stack's runs): the scripts go on to print their output.
for p in $(harness_run_pids); do
	[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "sleep 58.3 " ] && kill -KILL "$p"
done
wait "${pids[@]}"
is "$(cat "$work/code1") $(cat "$work/code2")" "200 200" "the two runs end normally"
is "$(json_get 'd["stdout"]' <"$work/run1")" slept "... with their output"

# The health pool is supervised: a killed health worker is replaced, the pool keeps answering.
wait_until 10 health_full
ok $? "the health pool has its $SBX_HEALTH_WORKERS workers"
victim=$(harness_health_worker_pids | head -n 1)
kill -KILL "$victim"
is "$(hcurl 5)" 200 "health answers right after one of its workers was killed"
wait_until 10 health_full
ok $? "multiwatch replaced the killed health worker"
harness_health_worker_pids | grep -qx "$victim"
ok $([ $? -ne 0 ]; echo $?) "... with a new process"
[ "$(harness_worker_pids | wc -l)" -eq 2 ]
ok $? "the main pool was not touched"

# The main pool down: health says so (503 pool_unavailable), and says ok again once it is back.
is "$(json_get 'd["pool"]' <"$work/hbody")" listening "health reports the main pool listening"
stack_kill_group "$SBX_PID_pool" 5
hcode() { [ "$(hcurl 5)" = "$1" ]; }
wait_until 15 hcode 503
ok $? "with the main pool stopped, health is 503"
is "$(json_get 'd["error"]["code"]' <"$work/hbody") $(json_get 'd["pool"]' <"$work/hbody")" \
	"pool_unavailable not_listening" "... pool_unavailable, pool not_listening"
stack_start_pool
wait_until 15 stack_healthy
ok $? "the main pool started again: health 200"

# The whole health pool down: the host reads as unhealthy (a JSON 502), everything else works;
# started again, health is back.
stack_kill_group "$SBX_PID_health" 5
code=$(hcurl 5)
is "$code" 502 "with the health pool stopped, GET /v1/health is 502"
is_envelope "$(cat "$work/hbody")" "$(json_get 'd["error"]["code"]' <"$work/hbody")"
ok $? "... as a JSON envelope"
api POST /v1/execute '{"language":"python","code":"print(7)"}' >/dev/null
is "$api_status $(echo "$api_body" | json_get 'd["stdout"]')" "200 7" "runs still work meanwhile"
stack_start_health
wait_until 15 test -S "$SBX_HEALTH_SOCK" && wait_until 10 stack_healthy
ok $? "the health pool started again: health 200"
done_testing
