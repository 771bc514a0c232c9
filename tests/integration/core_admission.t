#!/usr/bin/env bash
# core_admission.t: the run caps across the worker pool: a client past runs.per_client gets 429,
# anyone past runs.machine gets 503, both with Retry-After, and slots come back when runs end.
# Uses a config with tiny caps (per_client 2, machine 2) passed through SBX_CONFIG.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["runs"] = {"per_client": 2, "machine": 2, "client_share_percent": 100, "reserve": 0}
PY
export HARNESS_WORKERS=6
harness_start

slow_pids=()
api POST /run '{"id":"adm-a","cmd":"true"}' >/dev/null
api_as "$SBX_TOKEN2" POST /run '{"id":"adm-b","cmd":"true"}' >/dev/null
for i in 1 2; do
	$SBX_CURL -o "$SBX_HARNESS_DIR/slow$i" -w '%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" \
		-H 'Content-Type: application/json' \
		--data-binary '{"id":"adm-a","cmd":"sleep 59.7","limits":{"wall_ms":60000}}' \
		"$SBX_URL/run" >"$SBX_HARNESS_DIR/slow$i.code" &
	slow_pids+=($!)
done
# Both slow runs admitted and running (a fixed sleep is not enough on a slow machine). They
# last until the checks below are done (their sleeps are killed then): however slow the machine,
# they are still running when the third and fourth requests come.
slow_sleeps() { # pids of this stack's runs' "sleep 59.7"
	local p
	for p in $(harness_run_pids); do
		[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "sleep 59.7 " ] && echo "$p"
	done
}
slow_running() { [ "$(slow_sleeps | wc -l)" -ge 2 ]; }
wait_until 60 slow_running
ok $? "two slow runs of one client are running"
api POST /run '{"id":"adm-a","cmd":"echo third"}' >/dev/null
is "$api_status" 429 "third concurrent run of one client: 429"
ok "$(is_envelope "$api_body" too_many_runs; echo $?)" "429 is the envelope with too_many_runs"
[ -n "$(api_header Retry-After)" ]; ok $? "429 carries Retry-After"
api_as "$SBX_TOKEN2" POST /run '{"id":"adm-b","cmd":"echo other"}' >/dev/null
is "$api_status" 503 "machine cap reached: another client gets 503"
ok "$(is_envelope "$api_body" busy; echo $?)" "503 is the envelope with busy"
[ -n "$(api_header Retry-After)" ]; ok $? "503 carries Retry-After"
slow_sleeps | xargs -r kill -KILL
wait "${slow_pids[@]}"
is "$(cat "$SBX_HARNESS_DIR/slow1.code")$(cat "$SBX_HARNESS_DIR/slow2.code")" 200200 "the two admitted runs finished"
api_as "$SBX_TOKEN2" POST /run '{"id":"adm-b","cmd":"echo again"}' >/dev/null
is "$api_status" 200 "slots come back when runs end"
api GET /v1/health >/dev/null
is "$api_status" 200 "health is not a run: never capped"
done_testing
