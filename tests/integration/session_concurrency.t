#!/usr/bin/env bash
# session_concurrency.t: several workers of the pool act on one session at once through the real
# stack: parallel uploads all land whole, racing first writes of one seed id make one session,
# a fork taken during uploads is a consistent copy, parallel deletes leave nothing behind.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
# The per-client limits are front_limits.t's subject; here up to 24 requests of one client are in
# flight at once, over the default limit_conn of 16 (a slow machine overlaps them all).
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
export HARNESS_CONN=${HARNESS_CONN:-64}
. tests/lib/harness.sh
harness_start

# A bare `wait` would also wait for the stack the harness started: wait for our curls only.
pids=()
wait_curls() {
	wait "${pids[@]}"
	pids=()
}

auth=(-H "Authorization: Bearer $SBX_TOKEN")
api POST /v1/sessions >/dev/null
id=$(echo "$api_body" | json_get 'd["id"]')
work=$SBX_HARNESS_DIR/conc
mkdir -p "$work"
head -c 200000 /dev/urandom >"$work/blob"

# 24 uploads of 200 KB at once, into shared and separate directories.
for i in $(seq 24); do
	$SBX_CURL "${auth[@]}" -X PUT --data-binary "@$work/blob" -o /dev/null -w '%{http_code}\n' \
		"$SBX_URL/v1/sessions/$id/files/d$((i % 3))/f$i.bin" >"$work/put.$i" &
	pids+=($!)
done
wait_curls
codes=$(cat "$work"/put.* | sort | uniq -c | tr -s ' ')
is "$codes" " 24 201" "24 parallel uploads are all 201"
api GET "/v1/sessions/$id" >/dev/null
is "$(echo "$api_body" | json_get 'd["file_count"]')" 24 "all 24 files are there"
is "$(echo "$api_body" | json_get 'd["bytes_used"]')" 4800000 "each whole (200000 bytes x 24)"
ls -aR "$SBX_STATE_DIR/sessions/u-alice/$id/files" | grep -q '^\.sbx-tmp-'
is $? 1 "no temp file is left"

# The same file written by 12 clients at once: one complete version wins.
for i in $(seq 12); do
	printf '%s' "$(printf "writer-$i-%.0s" $(seq 500))" >"$work/v$i"
	$SBX_CURL "${auth[@]}" -X PUT --data-binary "@$work/v$i" -o /dev/null \
		"$SBX_URL/v1/sessions/$id/files/same.txt" &
	pids+=($!)
done
wait_curls
$SBX_CURL "${auth[@]}" -o "$work/same" "$SBX_URL/v1/sessions/$id/files/same.txt"
won=0
for i in $(seq 12); do cmp -s "$work/same" "$work/v$i" && won=$((won + 1)); done
is "$won" 1 "12 racing writes of one file leave exactly one writer's complete bytes"

# Racing first writes of a new seed id: one session, every file.
for i in $(seq 16); do
	$SBX_CURL "${auth[@]}" -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}\n' \
		--data "{\"id\":\"race-seed\",\"rel_path\":\"f$i.txt\",\"content\":\"$i\"}" \
		"$SBX_URL/write_file" >"$work/seed.$i" &
	pids+=($!)
done
wait_curls
is "$(cat "$work"/seed.* | sort | uniq -c | tr -s ' ')" " 16 200" "16 racing first writes of one seed id are all 200"
api GET /v1/sessions/race-seed >/dev/null
is "$(echo "$api_body" | json_get 'd["file_count"]')" 16 "one session holds all 16 files"
api GET /v1/sessions >/dev/null
is "$(echo "$api_body" | json_get 'len([s for s in d if s["id"] == "race-seed"])')" 1 \
	"listed once"

# An upload's temp file, as one in flight leaves it (planted, so the fork below surely meets one
# whatever the timing): the fork copies what the API wrote, never half an upload ($SBX_VOLUME).
head -c 1000 /dev/urandom >"$SBX_STATE_DIR/sessions/u-alice/$id/files/d0/.sbx-tmp-planted"
api GET "/v1/sessions/$id/files" >/dev/null
is "$(echo "$api_body" | json_get '[e["path"] for e in d if ".sbx-tmp-" in e["path"]]')" "[]" \
	"the listing leaves an upload temp file out"

# A fork while uploads run: every file of the copy is whole.
for i in $(seq 10); do
	$SBX_CURL "${auth[@]}" -X PUT --data-binary "@$work/blob" -o /dev/null \
		"$SBX_URL/v1/sessions/$id/files/late$i.bin" &
	pids+=($!)
done
api POST "/v1/sessions/$id/fork" >/dev/null
fork_status=$api_status
fid=$(echo "$api_body" | json_get 'd["id"]')
wait_curls
is "$fork_status" 201 "fork during uploads is 201"
api GET "/v1/sessions/$fid/files" >/dev/null
bad=$(echo "$api_body" | json_get '[e["path"] for e in d if e["type"] == "file" and e["path"].endswith(".bin") and e["size"] != 200000]')
is "$bad" "[]" "every .bin file of the fork is whole"
ls -aR "$SBX_STATE_DIR/sessions/u-alice/$fid/files" | grep -q '^\.sbx-tmp-'
is $? 1 "the fork holds no half-written temp file ($SBX_VOLUME)"

# Parallel deletes of the same sessions: each goes once, nothing is left.
for s in "$id" "$fid" race-seed; do
	for _ in 1 2 3; do
		$SBX_CURL "${auth[@]}" -X DELETE -o /dev/null -w '%{http_code}\n' \
			"$SBX_URL/v1/sessions/$s" >>"$work/del.$s" &
		pids+=($!)
	done
done
wait_curls
r=0
for s in "$id" "$fid" race-seed; do
	[ "$(grep -c 204 "$work/del.$s")" = 1 ] && [ "$(grep -c 404 "$work/del.$s")" = 2 ] || r=1
done
ok $r "3 racing DELETEs of a session: one 204, two 404"
left=$(ls -A "$SBX_STATE_DIR/sessions/u-alice" | grep -v '^\.lock$')
is "$left" "" "no session, trash or temp directory is left"

done_testing
