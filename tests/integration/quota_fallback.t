#!/usr/bin/env bash
# quota_fallback.t: without the btrfs image (HARNESS_SESSIONS_IMG_SIZE=0, as on a host with no
# btrfs or loop devices) the stack still starts, on plain directories, says so, and the session
# quota is still held by the file API (507) and by RLIMIT_FSIZE for a run's single file.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
HARNESS_SESSIONS_IMG_SIZE=0
harness_start

is "$SBX_VOLUME" plain "the stack runs on plain directories"
ses=$SBX_STATE_DIR/sessions
mountpoint -q "$ses"
ok $((!$?)) "nothing is mounted at sessions/"
[ ! -e "$SBX_STATE_DIR/sessions.img" ]
ok $? "no image was made"
api_as "" GET /v1/health >/dev/null
is "$api_status" 200 "health is 200"

api POST /v1/sessions >/dev/null
is "$api_status" 201 "a session is created"
id=$(echo "$api_body" | json_get 'd["id"]')
[ -d "$ses/u-alice/$id/files" ] && [ "$(stat -f -c %T "$ses")" != btrfs ]
ok $? "its files/ is a plain directory"
api POST "/v1/sessions/$id/run" '{"cmd":"echo hi > a.txt && cat a.txt"}' >/dev/null
is "$(echo "$api_body" | json_get 'd["stdout"]')" hi "a run works in it"
api POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 201 "fork copies it"
fid=$(echo "$api_body" | json_get 'd["id"]')
api GET "/v1/sessions/$fid/files/a.txt" >/dev/null
is "$api_body" hi "with the file"

truncate -s 100M "$ses/u-alice/$id/files/full.bin"
api PUT "/v1/sessions/$id/files/one.txt" 'x' >/dev/null
is "$api_status" 507 "a full session: the file API answers 507"
api POST "/v1/sessions/$id/run" '{"cmd":"head -c 1M /dev/zero > big && echo wrote"}' >/dev/null
out=$(echo "$api_body" | json_get 'd["stdout"] + d["stderr"] + d["status"]')
! echo "$out" | grep -q wrote
ok $? "a run in a full session cannot write a 1 MiB file (RLIMIT_FSIZE from the quota left)"

api DELETE "/v1/sessions/$id" >/dev/null
is "$api_status" 204 "delete works"
[ ! -e "$ses/u-alice/$id" ]
ok $? "and removes the directory"
done_testing
