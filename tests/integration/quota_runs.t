#!/usr/bin/env bash
# quota_runs.t: per-session disk quotas hold INSIDE runs (btrfs subvolume + qgroup limit per
# session), end to end through the real stack: a run writing many files past the quota gets
# "Disk quota exceeded" and the session stays within it; the file API then answers 507; freeing
# space makes writes work again; a fork is a real copy under its own quota; delete and expiry
# leave no subvolume behind; stateless runs are bounded too; a restart of the stack on the same
# state dir keeps sessions and quotas.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

[ "$SBX_VOLUME" != plain ] ||
	skip_all "sessions are on a plain directory here (no btrfs or loop devices): quotas hold in the file API only"

ses=$SBX_STATE_DIR/sessions
quota=$((100 << 20)) # fcgi/sbx.conf.json: sessions.quota_mb
# Slack over the quota: the qgroup limit is checked when a write reserves its space, so the
# kernel refuses the write that would cross it; what the subvolume references beyond the data
# is its metadata (16 KiB nodes, the directory of 200 names). 1 MiB bounds that with room.
slack=$((1 << 20))

qgroup_field() { # qgroup_field DIR COLUMN: the raw number (2: referenced, 4: limit) of DIR's subvolume
	btrfs filesystem sync "$ses" >/dev/null 2>&1
	btrfs qgroup show -rf --raw "$1" 2>/dev/null | awk -v c="$2" 'NR > 2 { print $c; exit }'
}
run() { # run ID CMD: POST .../run; sets api_status, api_body and out (stdout + stderr)
	local body
	body=$(printf '%s' "$2" | /usr/bin/python3 -c 'import json,sys; print(json.dumps({"cmd": sys.stdin.read()}))')
	api POST "/v1/sessions/$1/run" "$body" >/dev/null
	out=$(echo "$api_body" | json_get 'd["stdout"] + d["stderr"]')
}
no_subvol_of() { # no_subvol_of ID: no live subvolume path mentions ID
	! btrfs subvolume list "$ses" 2>/dev/null | grep -q "$1"
}

api POST /v1/sessions >/dev/null
is "$api_status" 201 "a session is created"
id=$(echo "$api_body" | json_get 'd["id"]')
root=$ses/u-alice/$id/files
is "$(stat -c %i "$root")" 256 "its files/ is a btrfs subvolume root"
is "$(qgroup_field "$root" 4)" "$quota" "with a qgroup limit of the session quota ($quota bytes)"

# ---- a run writes many small files past the quota ----
run "$id" 'n=0; for i in $(seq 200); do head -c 1M /dev/zero > f$i && n=$((n+1)); done; echo written=$n'
is "$api_status" 200 "the filling run returns 200"
echo "$out" | grep -q 'Disk quota exceeded'
ok $? "its writes past the quota fail with 'Disk quota exceeded'"
written=$(echo "$out" | sed -n 's/^written=//p')
ok $([ -n "$written" ] && [ "$written" -lt 101 ] && [ "$written" -gt 90 ]; echo $?) \
	"about 100 of the 200 1 MiB files were written ($written)"
rfer=$(qgroup_field "$root" 2)
ok $([ -n "$rfer" ] && [ "$rfer" -le $((quota + slack)) ]; echo $?) \
	"the subvolume references at most quota + 1 MiB ($rfer bytes)"
du=$(du -s --block-size=1 "$root" | cut -f1)
ok $([ "$du" -le $((quota + slack)) ]; echo $?) "du of the session: $du bytes, within quota + 1 MiB"

api GET "/v1/sessions/$id" >/dev/null
used=$(echo "$api_body" | json_get 'd["bytes_used"]')
api PUT "/v1/sessions/$id/files/more.txt" 'more' >/dev/null
is "$api_status" 507 "the file API then answers 507 for a PUT"
is_envelope "$api_body" quota_exceeded
ok $? "with code quota_exceeded"
# The API counts file sizes; the qgroup also counts metadata, so it is full first: a PUT the
# API's count still has room for is refused by the kernel (EDQUOT), and that is a 507 too.
if [ -n "$used" ] && [ "$used" -le $((quota - 4)) ]; then
	ok 0 "that 507 is the kernel's EDQUOT (the API's own count, $used bytes, had room)"
else
	skip "the API's own count is full too ($used bytes)" "EDQUOT from the kernel is a 507"
fi

# ---- freeing space makes writes work again ----
run "$id" 'rm -f f1 f2 f3 f4 f5 && echo removed'
is "$out" removed "a run deletes 5 files"
run "$id" 'head -c 1M /dev/zero > again && echo wrote'
is "$out" wrote "the next run writes 1 MiB again"
api DELETE "/v1/sessions/$id/files/f6" >/dev/null
is "$api_status" 204 "DELETE of a file through the API"
api PUT "/v1/sessions/$id/files/more.txt" 'more' >/dev/null
is "$api_status" 201 "and a PUT works again"

# ---- fork: a real copy, under its own quota ----
run "$id" 'rm -f f7 f8 f9 f10 f11 f12 f13 f14 f15 f16; echo original > mark.txt'
api POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 201 "fork is 201"
fid=$(echo "$api_body" | json_get 'd["id"]')
froot=$ses/u-alice/$fid/files
is "$(stat -c %i "$froot" 2>/dev/null)" 256 "the fork's files/ is a subvolume of its own"
is "$(qgroup_field "$froot" 4)" "$quota" "with its own qgroup limit"
api GET "/v1/sessions/$fid/files/mark.txt" >/dev/null
is "$api_body" original "the fork has the files"
run "$fid" 'echo forked > mark.txt'
api GET "/v1/sessions/$id/files/mark.txt" >/dev/null
is "$api_body" original "writing the fork leaves the original alone"
run "$fid" 'n=0; for i in $(seq 40); do head -c 1M /dev/zero > g$i && n=$((n+1)); done; echo written=$n'
echo "$out" | grep -q 'Disk quota exceeded'
ok $? "the fork (as full as its source) hits its own quota"
frfer=$(qgroup_field "$froot" 2)
ok $([ -n "$frfer" ] && [ "$frfer" -le $((quota + slack)) ]; echo $?) \
	"the fork references at most quota + 1 MiB ($frfer bytes)"
run "$id" 'head -c 5M /dev/zero > h && echo wrote'
is "$out" wrote "the original still has its own room (5 MiB written)"

# ---- delete and expiry leave no subvolume ----
api DELETE "/v1/sessions/$id" >/dev/null
is "$api_status" 204 "DELETE of the session"
ok $([ ! -e "$ses/u-alice/$id" ] && no_subvol_of "$id"; echo $?) "its directory and subvolume are gone"
/usr/bin/python3 - "$ses/u-alice/$fid/meta.json" <<'EOF'
import json, sys, time
p = sys.argv[1]
m = json.load(open(p))
m["last_used_at"] = int(time.time()) - 90000
json.dump(m, open(p, "w"))
EOF
api GET "/v1/sessions/$fid" >/dev/null
is "$api_status" 404 "the expired fork is 404"
ok $([ ! -e "$ses/u-alice/$fid" ] && no_subvol_of "$fid"; echo $?) "and its subvolume is gone"
# The periodic sweep (not a request for the session itself) removes expired ones too.
api POST /v1/sessions >/dev/null
xid=$(echo "$api_body" | json_get 'd["id"]')
api PUT "/v1/sessions/$xid/files/x.txt" 'x' >/dev/null
/usr/bin/python3 - "$ses/u-alice/$xid/meta.json" <<'EOF'
import json, sys, time
p = sys.argv[1]
m = json.load(open(p))
m["last_used_at"] = int(time.time()) - 90000
json.dump(m, open(p, "w"))
EOF
touch -d '5 minutes ago' "$ses/.sweep" # the sweep runs at most once a minute
api GET /v1/sessions/00000000-0000-4000-8000-000000000000 >/dev/null
ok $([ ! -e "$ses/u-alice/$xid" ] && no_subvol_of "$xid"; echo $?) \
	"the expiry sweep removes an expired session and its subvolume"
left=$(find "$ses/u-alice" -mindepth 1 -maxdepth 1 -name '.trash-*' | wc -l)
is "$left" 0 "no trash left behind"

# ---- stateless runs cannot fill the disk either ----
api POST /v1/execute '{"language":"bash","code":"n=0; for i in $(seq 200); do head -c 1M /dev/zero > f$i 2>/dev/null && n=$((n+1)); done; echo written=$n; du -sm . | cut -f1"}' >/dev/null
out=$(echo "$api_body" | json_get 'd["stdout"]')
n=$(echo "$out" | sed -n 's/^written=//p')
ok $([ "$api_status" = 200 ] && [ -n "$n" ] && [ "$n" -le 100 ]; echo $?) \
	"a stateless run is held to the quota too ($n of 200 MiB written)"
for _ in $(seq 50); do
	[ -z "$(ls -A "$SBX_STATE_DIR/scratch")" ] && break
	sleep 0.1
done
is "$(ls -A "$SBX_STATE_DIR/scratch")" "" "its scratch subvolume is removed afterwards"

# ---- a restart of the stack on the same state dir keeps sessions and quotas ----
api POST /v1/sessions >/dev/null
rid=$(echo "$api_body" | json_get 'd["id"]')
api PUT "/v1/sessions/$rid/files/keep.txt" 'kept' >/dev/null
stack_stop
stack_volume_down
! mountpoint -q "$ses"
ok $? "after stop the sessions volume is unmounted"
[ -z "$(losetup -j "$SBX_STATE_DIR/sessions.img" 2>/dev/null)" ]
ok $? "and its loop device detached"
stack_volume_up 2>/dev/null
stack_start_service &&
	stack_start_nginx &&
	stack_wait_for 15 "$SBX_PID_nginx" "health" stack_healthy
ok $? "the stack starts again on the same state dir (image reused: $SBX_VOLUME)"
api GET "/v1/sessions/$rid/files/keep.txt" >/dev/null
is "$api_body" kept "the session and its files survived"
is "$(qgroup_field "$ses/u-alice/$rid/files" 4)" "$quota" "and so did its quota"
run "$rid" 'for i in $(seq 120); do head -c 1M /dev/zero > f$i || break; done 2>&1 | tail -n 1'
echo "$out" | grep -q 'Disk quota exceeded'
ok $? "a run is still held to it"

# ---- a run must not escape its quota by making a subvolume of its own ----
run "$rid" "rm -f f*; /usr/bin/python3 -c '
import fcntl, os, struct
fd = os.open(\".\", os.O_RDONLY)
try:
    fcntl.ioctl(fd, 0x5000940e, bytearray(struct.pack(\"q\", 0) + b\"nested\".ljust(4088, b\"\\0\")))
    print(\"created\")
except OSError as e:
    print(\"refused\", e.errno)
'"
echo "$out" | grep -q 'refused 1$'
ok $? "a run cannot create a btrfs subvolume in /work: EPERM ($out)"

done_testing
