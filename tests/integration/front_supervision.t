#!/usr/bin/env bash
# front_supervision.t: the pool is supervised. SIGKILL the worker serving a long run: the caller
# gets a clean JSON 502/503, multiwatch brings the pool back to full size, the run's processes
# (slot uids) are gone, and the service keeps answering. Also: a worker killed while idle is
# replaced, and the pool survives many kills in a row.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
HARNESS_WORKERS=3 harness_start

pool_size() { harness_worker_pids | wc -l; }

pool_full() { [ "$(pool_size)" -eq 3 ]; }
slots_busy() { [ -n "$(harness_run_pids)" ]; }
slots_idle() { [ -z "$(harness_run_pids)" ]; }

# The worker serving the request (the first busy one).
busy_worker() { harness_busy_worker_pids | head -n 1 | grep .; }

wait_until 10 pool_full
ok $? "the pool has its 3 workers"
before=$(harness_worker_pids | sort | tr '\n' ' ')

# A run that would last 30 s; its worker dies after it started.
body='{"language":"bash","code":"sleep 30; echo never","limits":{"wall_ms":60000}}'
( HARNESS_QUIET_SUBSHELL=1 api POST /v1/execute "$body" >"$SBX_HARNESS_DIR/run.body"
  echo "$api_status" >"$SBX_HARNESS_DIR/run.status" ) &
caller=$!
wait_until 15 slots_busy
ok $? "the long run started in a slot"
victim=""
wait_until 5 busy_worker >/dev/null && victim=$(busy_worker)
ok $([ -n "$victim" ]; echo $?) "found the worker serving it ($victim)"
[ -n "$victim" ] && kill -KILL "$victim"
t0=$(date +%s)
wait "$caller"
status=$(cat "$SBX_HARNESS_DIR/run.status")
ok $([ "$status" = 502 ] || [ "$status" = 503 ]; echo $?) "the caller gets 502 or 503 (got $status)"
body=$(cat "$SBX_HARNESS_DIR/run.body")
code=$(echo "$body" | json_get 'd["error"]["code"]')
is_envelope "$body" "$code"
ok $? "... as a JSON envelope ($code)"
ok $([ $(($(date +%s) - t0)) -lt 20 ]; echo $?) "... at once, not after the run's 30 s"

wait_until 10 pool_full
ok $? "the pool is back to 3 workers"
harness_worker_pids | grep -qx "$victim"
ok $([ $? -ne 0 ]; echo $?) "the killed worker is not among them"
wait_until 10 slots_idle
ok $? "the run's processes are gone (no program left under a slot uid)"
[ -z "$(harness_run_pids)" ] || diag "left: $(ps -o pid,user,etime,cmd -p "$(harness_run_pids | paste -sd,)")"

api POST /v1/execute '{"language":"bash","code":"echo again"}' >/dev/null
is "$api_status" 200 "the service runs code again"
is "$(echo "$api_body" | json_get 'd["stdout"]')" again "... correctly"

# Idle workers killed one after another are replaced each time.
for i in 1 2 3 4 5; do
	pid=$(harness_worker_pids | head -n 1)
	kill -KILL "$pid"
	wait_until 10 pool_full || break
done
ok $? "five idle workers killed in a row are each replaced"
api GET /v1/languages >/dev/null
is "$api_status" 200 "the service still answers"
ok $([ "$(harness_worker_pids | sort | tr '\n' ' ')" != "$before" ]; echo $?) "the workers are new processes"
kill -0 "$(harness_pool_pid)"
ok $? "multiwatch itself still runs"

done_testing
