#!/usr/bin/env bash
# runs_api.t: API.md "Runs" through the real stack over HTTPS (the checks are in runs_api.py:
# streamed answers read line by line, interactive stdin, signals, ownership, caps, a slow or
# departed reader, background runs), then: nothing of a run is left once the stack stops (no
# process of a slot uid, no cgroup of the stack).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
# Background runs may take half the slots (sbxd --background-runs): room for the
# session cap (runs.background_per_session, 4) to be the one that refuses.
export HARNESS_SLOTS=${HARNESS_SLOTS:-12}
harness_start
/usr/bin/python3 tests/integration/runs_api.py | sed '/^1\.\./d' | tee "$SBX_HARNESS_DIR/py.tap"
rc=${PIPESTATUS[0]}
n=$(grep -cE '^(not )?ok ' "$SBX_HARNESS_DIR/py.tap")
# A FastCGI worker killed mid-stream: its run ends with it (the broker sees the worker's
# connection close), so the command after the sleep never runs.
api POST /v1/sessions '{}' >/dev/null
sid=$(echo "$api_body" | json_get 'd["id"]')
out=$SBX_HARNESS_DIR/killed.ndjson
$SBX_CURL -N --max-time 60 -H "Authorization: Bearer $SBX_TOKEN" "$SBX_URL/v1/sessions/$sid/run" \
	-d '{"cmd":"echo up; sleep 4; touch after_kill","stream":true}' >"$out" &
curl_pid=$!
wait_until 30 grep -q '"stdout"' "$out"
victim=$(harness_busy_worker_pids | head -1)
[ -n "$victim" ] && kill -9 "$victim"
wait "$curl_pid" 2>/dev/null
sleep 7
api GET "/v1/sessions/$sid/files/after_kill" >/dev/null
n=$((n + 1))
if [ -n "$victim" ] && [ "$api_status" = 404 ]; then echo "ok $n - a killed worker's streamed run ends with it"
else echo "not ok $n - a killed worker's streamed run ends with it"; echo "#   victim=$victim status=$api_status; $(head -c 300 "$out")"; rc=1; fi
harness_stop_leaves_nothing "$SBX_UID_BASE" $((SBX_UID_BASE + 128)) "$SBX_CGROUP*" \
	"the stack's uids" "cgroup of the stack"
echo "1..$n"
tap_failed=$rc
exit "$rc"
