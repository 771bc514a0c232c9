#!/usr/bin/env bash
# front_limits.t: nginx's per-client limits through the real stack. The harness's limits are set
# low (1 request per minute, a burst of 3; one request in flight; 64 KiB bodies) so the outcome
# does not depend on timing: past the limit is 429 with Retry-After in the JSON envelope, and the
# other client is unaffected; a body over the limit is a 413 envelope, raw uploads have their own.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

# ---- request rate ----
HARNESS_RATE=1r/m HARNESS_BURST=3 HARNESS_BODY_MAX=64k HARNESS_UPLOAD_MAX=1m harness_start
codes=""
for i in 1 2 3 4 5 6; do
	api GET /v1/languages >/dev/null
	codes="$codes$api_status "
done
is "$codes" "200 200 200 200 429 429 " "alice: the rate plus the burst pass, the rest is 429"
is_envelope "$api_body" rate_limited
ok $? "429 is the JSON envelope, code rate_limited"
retry=$(api_header Retry-After)
ok $([[ "$retry" =~ ^[1-9][0-9]*$ ]]; echo $?) "429 has Retry-After ($retry)"
api_as "$SBX_TOKEN2" GET /v1/languages >/dev/null
is "$api_status" 200 "bob is not limited by alice's requests"
api_as "" GET /v1/health >/dev/null
is "$api_status" 200 "health is not rate limited"
api_as "" GET /v1/languages >/dev/null
is "$api_status" 401 "an unauthenticated request is 401, not 429"

# ---- body size ----
big=$SBX_HARNESS_DIR/big.json
{ printf '{"language":"python","code":"'; head -c 100000 /dev/zero | tr '\0' x; printf '"}'; } >"$big"
API_CONTENT_TYPE=application/json api_as "$SBX_TOKEN2" POST /v1/execute "@$big" >/dev/null
is "$api_status" 413 "a 100 kB JSON body over a 64 KiB limit: 413"
is_envelope "$api_body" body_too_large
ok $? "413 is the JSON envelope, code body_too_large"
# Raw uploads are bounded by their own (larger) limit.
head -c 100000 /dev/urandom >"$SBX_HARNESS_DIR/blob"
api_as "$SBX_TOKEN2" PUT /v1/sessions/00000000-0000-4000-8000-000000000000/files/blob "@$SBX_HARNESS_DIR/blob" >/dev/null
ok $([ "$api_status" != 413 ]; echo $?) "a 100 kB raw upload is under the upload limit (got $api_status)"
head -c 1100000 /dev/zero >"$SBX_HARNESS_DIR/blob"
api_as "$SBX_TOKEN2" PUT /v1/sessions/00000000-0000-4000-8000-000000000000/files/blob "@$SBX_HARNESS_DIR/blob" >/dev/null
is "$api_status" 413 "an upload over the upload limit: 413"
harness_stop

# ---- requests in flight ----
HARNESS_CONN=1 harness_start
# A run that sleeps holds alice's one allowed request.
body='{"language":"bash","code":"sleep 4; echo done","limits":{"wall_ms":20000}}'
( HARNESS_QUIET_SUBSHELL=1 api POST /v1/execute "$body" >"$SBX_HARNESS_DIR/slow.body"; echo "$api_status" >"$SBX_HARNESS_DIR/slow.status" ) &
slow=$!
started=1
for ((i = 0; i < 100; i++)); do
	if [ -n "$(harness_run_pids)" ]; then started=0; break; fi
	sleep 0.1
done
ok $started "alice's slow run is running"
api GET /v1/languages >/dev/null
is "$api_status" 429 "alice's second request in flight: 429"
is_envelope "$api_body" rate_limited
ok $? "... in the JSON envelope"
ok $([ -n "$(api_header Retry-After)" ]; echo $?) "... with Retry-After"
api_as "$SBX_TOKEN2" GET /v1/languages >/dev/null
is "$api_status" 200 "bob is not limited by alice's request in flight"
wait "$slow"
is "$(cat "$SBX_HARNESS_DIR/slow.status")" 200 "alice's slow run finished normally"
is "$(json_get 'd["stdout"]' <"$SBX_HARNESS_DIR/slow.body")" "done" "... with its output"
api GET /v1/languages >/dev/null
is "$api_status" 200 "alice can send again once her request is done"

done_testing
