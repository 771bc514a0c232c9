#!/usr/bin/env bash
# disk_reserve.t: the disk reserve (disk.reserve_mb) through the real stack, with two clients.
# The sessions volume is the harness's own btrfs image (small); a root-owned file fills it past
# the reserve, as other clients' runs would. Then new sessions, forks, uploads and runs of every
# client get 507 insufficient_storage with Retry-After, health turns 503 insufficient_storage
# with disk_free_bytes, reads and deletes still work; freeing the space makes it all work again.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["disk"] = {"reserve_mb": 200}
PY
export HARNESS_SESSIONS_IMG_SIZE=${HARNESS_SESSIONS_IMG_SIZE:-1G}
harness_start
[ "$SBX_VOLUME" = plain ] &&
	skip_all "sessions are not on a volume of their own here (plain directories): filling it would fill the host's disk"

api GET /v1/health >/dev/null
is "$api_status" 200 "with room to spare, health is 200"
free=$(echo "$api_body" | json_get 'd["disk_free_bytes"]')
reserve=$(echo "$api_body" | json_get 'd["disk_reserve_bytes"]')
is "$reserve" $((200 << 20)) "health reports the configured reserve"
ok $([ "${free:-0}" -gt "$reserve" ]; echo $?) "and the free bytes ($free)"
api POST /v1/sessions >/dev/null
id=$(echo "$api_body" | json_get 'd["id"]')
api PUT "/v1/sessions/$id/files/keep.txt" 'kept' >/dev/null
is "$api_status" 201 "a session with a file, before"

# Fill the volume to 100 MiB under the reserve (as root: no quota stops it).
filler="$SBX_STATE_DIR/sessions/.filler"
fallocate -l $((free - reserve + (100 << 20))) "$filler" 2>/dev/null ||
	dd if=/dev/zero of="$filler" bs=1M count=$(((free - reserve) / 1048576 + 100)) status=none
sync -f "$SBX_STATE_DIR/sessions"
harness_on_exit "rm -f '$filler'"

below() { api GET /v1/health >/dev/null; [ "$api_status" = 503 ]; }
wait_until 20 below
is "$api_status" 503 "below the reserve, health is 503"
is_envelope "$api_body" insufficient_storage
ok $? "with code insufficient_storage"
for who in "$SBX_TOKEN" "$SBX_TOKEN2"; do
	name=$([ "$who" = "$SBX_TOKEN" ] && echo alice || echo bob)
	api_as "$who" POST /v1/sessions >/dev/null
	is "$api_status" 507 "$name: a new session is 507"
	is_envelope "$api_body" insufficient_storage
	ok $? "$name: insufficient_storage"
	echo "$api_headers" | grep -qi '^retry-after:'
	ok $? "$name: with Retry-After"
	api_as "$who" POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
	is "$api_status" 507 "$name: a stateless run is 507"
done
api PUT "/v1/sessions/$id/files/more.txt" 'x' >/dev/null
is "$api_status" 507 "an upload is 507"
api POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 507 "a fork is 507"
api POST "/v1/sessions/$id/run" '{"cmd":"echo hi"}' >/dev/null
is "$api_status" 507 "a run in the session is 507"
api GET "/v1/sessions/$id/files/keep.txt" >/dev/null
is "$api_body" kept "reading still works"
api DELETE "/v1/sessions/$id/files/keep.txt" >/dev/null
is "$api_status" 204 "deleting still works"

rm -f "$filler"
sync -f "$SBX_STATE_DIR/sessions"
above() { api GET /v1/health >/dev/null; [ "$api_status" = 200 ]; }
wait_until 30 above
is "$api_status" 200 "space freed: health is 200 again"
api_as "$SBX_TOKEN2" POST /v1/sessions >/dev/null
is "$api_status" 201 "and bob can make a session"
done_testing
