#!/usr/bin/env bash
# core_broker_down.t: when the sandbox broker is gone, runs fail closed with 500 internal_error
# (never a fallback), health says 503 with the reason, and routes that run nothing keep working.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

api POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
is "$api_status" 200 "with the broker up, execute works"
# The broker runs in its own session; stop its whole group (it is this harness's own broker).
kill -TERM -- "-$SBX_PID_broker" 2>/dev/null
for _ in $(seq 50); do kill -0 "$SBX_PID_broker" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SBX_PID_broker" 2>/dev/null
ok $((!$?)) "the broker is stopped"

api POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
is "$api_status" 500 "execute without a broker: 500"
ok "$(is_envelope "$api_body" internal_error; echo $?)" "500 is the envelope with internal_error"
msg=$(echo "$api_body" | json_get 'd["error"]["message"]')
[ -n "$msg" ]; ok $? "the message says what failed: $msg"
api POST /run '{"id":"down-1","cmd":"echo x"}' >/dev/null
is "$api_status" 500 "seed /run without a broker: 500"
sleep 0.5 # a worker may reuse a good probe for 0.2 s
api_as "" GET /v1/health >/dev/null
is "$api_status" 503 "health: 503"
is "$(echo "$api_body" | json_get 'd["sandbox"]["usable"]')" false "health: sandbox.usable false"
is "$(echo "$api_body" | json_get 'd["error"]["code"]')" sandbox_unavailable "health: the envelope's code"
api GET /v1/languages >/dev/null
is "$api_status" 200 "routes that run nothing still answer"
done_testing
