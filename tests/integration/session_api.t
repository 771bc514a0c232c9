#!/usr/bin/env bash
# session_api.t: the /v1 session routes through the real stack (nginx + pool + broker, HTTPS):
# create, list, info, ownership, fork, expiry, quota, delete (also while a run is in progress),
# and sessions surviving a restart of the worker pool.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

iso='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'

api POST /v1/sessions >/dev/null
is "$api_status" 201 "POST /v1/sessions is 201"
id=$(echo "$api_body" | json_get 'd["id"]')
[[ "$id" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
ok $? "the id is a server-made UUID ($id)"
[[ "$(echo "$api_body" | json_get 'd["created_at"]')" =~ $iso ]] &&
	[[ "$(echo "$api_body" | json_get 'd["expires_at"]')" =~ $iso ]]
ok $? "created_at and expires_at are ISO 8601 UTC"

api POST /v1/sessions '{"name":"x"}' >/dev/null
is "$api_status" 400 "an unknown field in the create body is 400"
is_envelope "$api_body" unknown_field
ok $? "with code unknown_field"

api PUT "/v1/sessions/$id/files/a.txt" @/etc/hostname >/dev/null
api GET "/v1/sessions/$id" >/dev/null
is "$api_status" 200 "GET /v1/sessions/{id} is 200"
echo "$api_body" | json_get 'sorted(k for k in d if k != "quota_bytes")' | grep -q \
	'"bytes_used", "created_at", "expires_at", "file_count", "id", "last_used_at"'
ok $? "info has id, created_at, last_used_at, expires_at, bytes_used, file_count"
is "$(echo "$api_body" | json_get 'd["file_count"]')" 1 "file_count counts the file"
is "$(echo "$api_body" | json_get 'd["bytes_used"]')" "$(stat -c %s /etc/hostname)" \
	"bytes_used counts its bytes"

api GET /v1/sessions >/dev/null
is "$api_status" 200 "GET /v1/sessions is 200"
echo "$api_body" | json_get '[s["id"] for s in d]' | grep -q "$id"
ok $? "alice's list has the session"

api_as "$SBX_TOKEN2" GET "/v1/sessions/$id" >/dev/null
is "$api_status" 404 "bob gets 404 for alice's session"
bob_body=$api_body
api_as "$SBX_TOKEN2" GET /v1/sessions/00000000-0000-4000-8000-000000000000 >/dev/null
is "$(echo "$bob_body" | json_get 'd["error"]["code"]')" \
	"$(echo "$api_body" | json_get 'd["error"]["code"]')" \
	"the same error as for a session that does not exist"
api_as "$SBX_TOKEN2" GET /v1/sessions >/dev/null
echo "$api_body" | json_get '[s["id"] for s in d]' | grep -q "$id"
is $? 1 "bob's list does not have it"
api_as "$SBX_TOKEN2" DELETE "/v1/sessions/$id" >/dev/null
is "$api_status" 404 "bob cannot delete it"
api_as "$SBX_TOKEN2" GET "/v1/sessions/$id/files/a.txt" >/dev/null
is "$api_status" 404 "bob cannot read its files"
api_as "" GET "/v1/sessions/$id" >/dev/null
is "$api_status" 401 "no token: 401"

api GET /v1/sessions/not-a-session >/dev/null
is "$api_status" 404 "an unknown id is 404"
is_envelope "$api_body" session_not_found
ok $? "with code session_not_found"

# Fork: every file, a new id; the copy is independent.
api POST "/v1/sessions/$id/run" '{"cmd":"mkdir -p d/e && echo deep > d/e/f.txt && ln -s /etc/passwd link && mkfifo pipe"}' >/dev/null
is "$api_status" 200 "a run leaves a nested file, a symlink and a FIFO"
api POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 201 "fork is 201"
fid=$(echo "$api_body" | json_get 'd["id"]')
[ -n "$fid" ] && [ "$fid" != "$id" ]
ok $? "with a new id"
api GET "/v1/sessions/$fid/files/d/e/f.txt" >/dev/null
is "$api_body" "deep" "the fork has the nested file"
api POST "/v1/sessions/$fid/run" '{"cmd":"readlink link; test -e pipe && echo fifo || echo nofifo"}' >/dev/null
is "$(echo "$api_body" | json_get 'd["stdout"]')" "$(printf '/etc/passwd\nnofifo')" \
	"the symlink is copied as a symlink; the FIFO is skipped"
api PUT "/v1/sessions/$fid/files/a.txt" 'changed' >/dev/null
api GET "/v1/sessions/$id/files/a.txt" >/dev/null
is "$api_body" "$(cat /etc/hostname)" "writing the fork leaves the original alone"
api_as "$SBX_TOKEN2" POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 404 "bob cannot fork alice's session"
api POST "/v1/sessions/$id/fork" '{"deep":true}' >/dev/null
is "$api_status" 400 "fork rejects unknown fields"

# Quota: the state dir is ours (root): make the session full behind the service's back.
sdir="$SBX_STATE_DIR/sessions/u-alice/$id"
[ -d "$sdir/files" ]
ok $? "the session lives under sessions/u-alice/<id>/files"
truncate -s 100M "$sdir/files/full.bin"
api PUT "/v1/sessions/$id/files/one.txt" 'x' >/dev/null
is "$api_status" 507 "a write past the quota is 507"
is_envelope "$api_body" quota_exceeded
ok $? "with code quota_exceeded"
api GET "/v1/sessions/$id/files/one.txt" >/dev/null
is "$api_status" 404 "and nothing was written"
api POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 507 "a fork of a session over its quota is 507"
rm -f "$sdir/files/full.bin"

# Expiry: an idle session past its TTL is gone (404) and removed from disk.
api POST /v1/sessions >/dev/null
eid=$(echo "$api_body" | json_get 'd["id"]')
edir="$SBX_STATE_DIR/sessions/u-alice/$eid"
/usr/bin/python3 - "$edir/meta.json" <<'EOF'
import json, sys, time
p = sys.argv[1]
m = json.load(open(p))
m["last_used_at"] = int(time.time()) - 90000
json.dump(m, open(p, "w"))
EOF
api GET "/v1/sessions/$eid" >/dev/null
is "$api_status" 404 "an expired session is 404"
[ ! -e "$edir" ]
ok $? "and removed from disk"

# Survives a restart of the workers: everything is on disk.
for pid in $(harness_worker_pids); do kill "$pid" 2>/dev/null; done
for _ in $(seq 50); do
	api GET "/v1/sessions/$id" >/dev/null
	[ "$api_status" = 200 ] && break
	sleep 0.2
done
is "$api_status" 200 "the session is still there after the workers restart"

# Delete while a run is in progress: 204 at once; the run ends on its own; nothing is left.
api PUT "/v1/sessions/$id/files/slow.sh" 'sleep 2; echo late > late.txt; echo finished' >/dev/null
$SBX_CURL -H "Authorization: Bearer $SBX_TOKEN" -H 'Content-Type: application/json' \
	-X POST --data '{"cmd":"sh slow.sh"}' -o "$SBX_HARNESS_DIR/run.out" -w '%{http_code}' \
	"$SBX_URL/v1/sessions/$id/run" >"$SBX_HARNESS_DIR/run.code" &
runpid=$!
# DELETE once the run's program is running (not a fixed sleep: a slow machine may not be there).
for ((i = 0; i < 100; i++)); do [ -n "$(harness_run_pids)" ] && break; sleep 0.1; done
sleep 0.2
api DELETE "/v1/sessions/$id" >/dev/null
is "$api_status" 204 "DELETE during a run is 204"
api GET "/v1/sessions/$id" >/dev/null
is "$api_status" 404 "the session is gone at once"
wait "$runpid"
code=$(cat "$SBX_HARNESS_DIR/run.code")
[ "$code" = 200 ] || [ "$code" = 500 ]
ok $? "the run still returns (HTTP $code)"
ls -A "$SBX_STATE_DIR/sessions/u-alice" | grep -q "^$id\$"
is $? 1 "the session's directory is gone after the run"

api DELETE "/v1/sessions/$fid" >/dev/null
is "$api_status" 204 "DELETE is 204"
[ -z "$api_body" ]
ok $? "with no body"
api GET "/v1/sessions/$fid/files/d/e/f.txt" >/dev/null
is "$api_status" 404 "its files are gone"

done_testing
