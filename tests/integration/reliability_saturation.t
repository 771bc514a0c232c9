#!/usr/bin/env bash
# reliability_saturation.t: more runs arrive than the broker can take in at that moment (its
# listen queue holds as many as it has slots), all within the workers' own admission limits
# (runs.per_client 8, runs.machine 16). To make the moment certain, the broker is paused
# (its slot processes SIGSTOPped) while the requests arrive, as a busy or descheduled broker on a loaded host would be,
# then resumed. Every caller must get its result or a designed refusal (503/429 with Retry-After
# and the error envelope), never a 500 internal_error: "all sandbox slots are busy" is load, not a
# sandbox failure (sandbox.h: sbx_client_run returns -EAGAIN, "answer 503 with Retry-After").
# Afterwards the service runs code normally.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
export HARNESS_WORKERS=${HARNESS_WORKERS:-8} HARNESS_SLOTS=1
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
. tests/lib/harness.sh
harness_start

work=$SBX_HARNESS_DIR/sat
mkdir -p "$work"
n=6 pids=()
# The broker's per-slot processes (its children) are the ones that accept connections.
slot_procs=$(pgrep -P "$SBX_PID_broker" | tr '\n' ' ')
ok $([ -n "$slot_procs" ]; echo $?) "found the broker's slot processes ($slot_procs)"
kill -STOP $slot_procs
for ((i = 0; i < n; i++)); do
	token=$SBX_TOKEN
	[ $((i % 2)) -eq 1 ] && token=$SBX_TOKEN2
	$SBX_CURL -o "$work/body$i" -D "$work/head$i" -w '%{http_code}' -H "Authorization: Bearer $token" \
		-H 'Content-Type: application/json' --data '{"language":"bash","code":"sleep 1; echo done"}' \
		"$SBX_URL/v1/execute" >"$work/code$i" &
	pids+=($!)
done
sleep 3
kill -CONT $slot_procs
wait "${pids[@]}" # only these: a bare wait would wait for the stack's own background parts
ok200=0 refused=0 bad=0
for ((i = 0; i < n; i++)); do
	code=$(cat "$work/code$i")
	case "$code" in
	200) [ "$(json_get 'd["stdout"]' <"$work/body$i")" = done ] && ok200=$((ok200 + 1)) || bad=$((bad + 1)) ;;
	429 | 503)
		if is_envelope "$(cat "$work/body$i")" "$(json_get 'd["error"]["code"]' <"$work/body$i")" &&
			grep -qi '^retry-after:' "$work/head$i"; then
			refused=$((refused + 1)); diag "run $i: $code $(cat "$work/body$i")"
		else
			bad=$((bad + 1))
		fi ;;
	*) bad=$((bad + 1)); diag "run $i: $code $(cat "$work/body$i")" ;;
	esac
done
diag "$n runs while the 1-slot broker was paused: $ok200 answered 200, $refused refused with 429/503"
is "$bad" 0 "no caller gets anything but its result or a designed 429/503 with Retry-After"
ok $([ "$ok200" -ge 1 ]; echo $?) "at least one run got through"
api POST /v1/execute '{"language":"python","code":"print(5)"}' >/dev/null
is "$api_status" 200 "afterwards the service runs code"
done_testing
