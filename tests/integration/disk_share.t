#!/usr/bin/env bash
# disk_share.t: one client cannot be promised more of the shared sessions volume than its share
# (disk.client_share_percent), through the real stack with two clients. Each session's quota
# holds inside runs, so sessions x quota is what a client can fill; issue 13 saw two clients fill
# the volume with fallocate in seconds and every other client's sessions and runs then fail.
# Here the volume is a 1 GiB image and the share 20 %: two sessions of 100 MiB per client.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

export HARNESS_SESSIONS_IMG_SIZE=1G HARNESS_DISK_SHARE=20
harness_start
[ "$SBX_VOLUME" = plain ] &&
	skip_all "sessions are not on a volume of their own here (plain directories)"

ids=()
for i in 1 2; do
	api POST /v1/sessions >/dev/null
	is "$api_status" 201 "alice: session $i of her share is made"
	ids+=("$(echo "$api_body" | json_get 'd["id"]')")
done
api POST /v1/sessions >/dev/null
is "$api_status" 409 "alice: a third session, past her share of the disk, is refused"
is_envelope "$api_body" too_many_sessions
ok $? "... with code too_many_sessions"
echo "$api_body" | json_get 'd["error"]["message"]' | grep -q 'has 2 sessions'
ok $? "... and the message names the limit (2)"
api POST "/v1/sessions/${ids[0]}/fork" >/dev/null
is "$api_status" 409 "alice: a fork past her share is refused too"

# The seed routes make a session on a client's first write to a new id: the same cap.
api POST /write_file '{"id":"share-seed-1","rel_path":"a.txt","content":"x"}' >/dev/null
is "$api_status" 409 "alice: a seed write that would make a third session is refused too"
is_envelope "$api_body" too_many_sessions
ok $? "... with code too_many_sessions"

for i in 1 2; do
	api_as "$SBX_TOKEN2" POST /v1/sessions >/dev/null
	is "$api_status" 201 "bob: session $i is made while alice is at her share"
done

# What alice can actually write stays within her sessions' quotas: the kernel holds each.
api POST "/v1/sessions/${ids[0]}/run" \
	'{"cmd":"fallocate -l 300M /work/big; echo rc=$?","limits":{"wall_ms":30000}}' >/dev/null
echo "$api_body" | json_get 'd["stdout"]' | grep -q 'rc=0'
ok $(($? == 0 ? 1 : 0)) "alice cannot fallocate past her session's quota inside a run"

api DELETE "/v1/sessions/${ids[1]}" >/dev/null
is "$api_status" 204 "alice deletes one session"
api POST /v1/sessions >/dev/null
is "$api_status" 201 "and may make another"
done_testing
