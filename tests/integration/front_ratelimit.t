#!/usr/bin/env bash
# front_ratelimit.t: the IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers) of the
# per-client in-flight cap on run responses, and a Retry-After on 429 too_many_runs computed from
# the client's runs in flight (when the first of them must have ended), not a blind 1 s.
# Config: runs.per_client 2 on a pool of 6 workers.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["runs"] = {"per_client": 2, "machine": 6, "client_share_percent": 100, "reserve": 0,
             "queue_wait_ms": 5000}
PY
export HARNESS_WORKERS=6
harness_start

api POST /v1/execute '{"language":"bash","code":"echo hi"}' >/dev/null
is "$api_status" 200 "a run"
is "$(api_header RateLimit-Policy)" '"inflight";q=2' "... carries RateLimit-Policy: \"inflight\";q=2"
is "$(api_header RateLimit)" '"inflight";r=2' "... and RateLimit: \"inflight\";r=2 (nothing else in flight)"
api GET /v1/languages >/dev/null
is "$(api_header RateLimit)" "" "a route that runs nothing has no RateLimit header"

slow_pids=()
slow() { # slow N WALL_MS: a run of "sleep 59.N" in the background
	$SBX_CURL -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" \
		-H 'Content-Type: application/json' \
		--data-binary "{\"language\":\"bash\",\"code\":\"sleep 59.$1\",\"limits\":{\"wall_ms\":$2}}" \
		"$SBX_URL/v1/execute" >"$SBX_HARNESS_DIR/slow$1.code" &
	slow_pids+=($!)
}
sleeps() { # how many of this stack's runs are "sleep 59.<N>"
	local p n=0
	for p in $(harness_run_pids); do
		case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in "sleep 59."[0-9]" ") n=$((n + 1)) ;; esac
	done
	echo $n
}
kill_sleeps() {
	local p
	for p in $(harness_run_pids); do
		case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in "sleep 59."[0-9]" ") kill -KILL "$p" ;; esac
	done
}
slow 1 60000
wait_until 60 eval '[ "$(sleeps)" -ge 1 ]'
ok $? "one slow run in flight"
api POST /v1/execute '{"language":"bash","code":"echo hi"}' >/dev/null
is "$(api_header RateLimit)" '"inflight";r=1' "with one other run in flight: r=1"
slow 2 50000
wait_until 60 eval '[ "$(sleeps)" -ge 2 ]'
ok $? "two slow runs in flight"
api POST /v1/execute '{"language":"bash","code":"echo third"}' >/dev/null
is "$api_status" 429 "a third: 429"
ok "$(is_envelope "$api_body" too_many_runs; echo $?)" "... too_many_runs"
is "$(api_header RateLimit)" '"inflight";r=0' "... RateLimit r=0"
is "$(api_header RateLimit-Policy)" '"inflight";q=2' "... RateLimit-Policy q=2"
ra=$(api_header Retry-After)
is "$(printf '%s\n' "$api_headers" | grep -ci '^retry-after:')" 1 "... exactly one Retry-After"
# The earlier deadline is the 50 s run's (+5 s of slot queueing): at most 55 s from now, and far
# more than the old blind 1 s unless the machine took 50 s to get here.
ok "$([ "$ra" -ge 2 ] && [ "$ra" -le 56 ]; echo $?)" "... Retry-After $ra s: when the first run must end (2..56)"
kill_sleeps
wait "${slow_pids[@]}"
api POST /v1/execute '{"language":"bash","code":"echo again"}' >/dev/null
is "$api_status/$(api_header RateLimit)" '200/"inflight";r=2' "when the runs end, r is back to 2"
done_testing
