#!/usr/bin/env bash
# reliability_faults.t: faults and their expected outcomes, through the real stack. Sessions of
# two clients are made first and checked after every fault (none lost, none corrupted).
#   1. nginx SIGKILLed (master and workers) during a run: the caller's connection ends, the pool
#      and broker are untouched, the run's processes end; nginx started again serves at once.
#   2. the broker SIGKILLed during a run: the caller gets a clean 500 internal_error, the run's
#      processes die with it; a new broker (same cgroup name, leftovers from the dead one) serves.
#   3. the whole service stopped and started, then SIGKILLed and started: sessions and files
#      intact, tokens still valid.
#   4. the state directory's disk full (a 24 MiB tmpfs bound over sessions/ and scratch/): clean
#      JSON errors, no partial file, other files intact, and back to normal once space is freed.
# (SIGKILL of a worker mid-run is front_supervision.t.)
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
harness_start

slots_busy() { [ -n "$(harness_run_pids)" ]; }
slots_idle() { [ -z "$(harness_run_pids)" ]; }
status_of() { cat "$1" 2>/dev/null; }
work=$SBX_HARNESS_DIR/faults
mkdir -p "$work"

# ---- sessions that must survive everything ----
api POST /v1/sessions >/dev/null
A=$(echo "$api_body" | json_get 'd["id"]')
api_as "$SBX_TOKEN2" POST /v1/sessions >/dev/null
B=$(echo "$api_body" | json_get 'd["id"]')
head -c 200000 /dev/urandom >"$work/blob"
api PUT "/v1/sessions/$A/files/a.txt" 'alpha' >/dev/null
api PUT "/v1/sessions/$A/files/dir/b.bin" "@$work/blob" >/dev/null
api_as "$SBX_TOKEN2" PUT "/v1/sessions/$B/files/c.txt" 'gamma' >/dev/null
api POST /write_file '{"id":"keep-seed","rel_path":"s.txt","content":"seeded"}' >/dev/null
blob_sum=$(sha256sum <"$work/blob" | cut -d' ' -f1)

sessions_intact() { # sessions_intact WHEN [norun]: every session and file as made above
	local when=$1 good=0 got what="intact and runnable"
	api GET "/v1/sessions/$A/files/a.txt" >/dev/null
	[ "$api_status" = 200 ] && [ "$api_body" = alpha ] || good=1
	got=$($SBX_CURL -H "Authorization: Bearer $SBX_TOKEN" "$SBX_URL/v1/sessions/$A/files/dir/b.bin" | sha256sum | cut -d' ' -f1)
	[ "$got" = "$blob_sum" ] || good=1
	api_as "$SBX_TOKEN2" GET "/v1/sessions/$B/files/c.txt" >/dev/null
	[ "$api_status" = 200 ] && [ "$api_body" = gamma ] || good=1
	api GET '/read_file?id=keep-seed&rel_path=s.txt' >/dev/null
	[ "$(echo "$api_body" | json_get 'd["content"]')" = seeded ] || good=1
	api GET /v1/sessions >/dev/null
	echo "$api_body" | grep -q "$A" || good=1
	if [ "${2:-}" = norun ]; then
		what="intact and readable"
	else
		api POST "/v1/sessions/$A/run" '{"cmd":"cat a.txt; wc -c < dir/b.bin"}' >/dev/null
		[ "$(echo "$api_body" | json_get 'd["stdout"]')" = "alpha200000" ] || good=1
	fi
	ok $good "$when: both clients' sessions and files are $what"
	[ $good -eq 0 ] || diag "last answer: $api_status $api_body"
}
sessions_intact "before the faults"

# ---- 1. nginx SIGKILLed during a run, then started again ----
( $SBX_CURL -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" \
	-H 'Content-Type: application/json' --data '{"language":"bash","code":"sleep 3; echo late"}' \
	"$SBX_URL/v1/execute" >"$work/inflight1"; echo done >>"$work/inflight1" ) &
inflight=$!
wait_until 10 slots_busy
ok $? "a run is in progress"
workers_before=$(harness_worker_pids | sort | tr '\n' ' ')
kill -KILL -- "-$SBX_PID_nginx"
t0=$SECONDS
wait "$inflight"
is "$(head -c 3 "$work/inflight1")" 000 "the caller's connection ends (no answer, no hang)"
ok $([ $((SECONDS - t0)) -lt 10 ]; echo $?) "... promptly"
wait_until 10 slots_idle
ok $? "the run still ends (no process left in the slots)"
sleep 0.5
is "$(harness_worker_pids | sort | tr '\n' ' ')" "$workers_before" "every worker survives writing to the dead nginx"
stack_alive "$SBX_PID_broker" && stack_alive "$SBX_PID_pool"
ok $? "the broker and the pool are untouched"
{ wait "$SBX_PID_nginx"; } 2>/dev/null
stack_start_nginx
stack_wait_for 10 "$SBX_PID_nginx" "nginx" stack_healthy
ok $? "nginx started again on the same port over its stale pid file: health 200"
api POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
is "$api_status" 200 "execute works again"
sessions_intact "after nginx was killed"

# ---- 2. the broker SIGKILLed during a run ----
( $SBX_CURL -o "$work/body2" -w '%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" \
	-H 'Content-Type: application/json' --data '{"cmd":"sleep 30 & setsid sleep 31 & sleep 32; echo late"}' \
	"$SBX_URL/v1/sessions/$A/run" >"$work/inflight2" ) &
inflight=$!
wait_until 10 slots_busy
ok $? "a run with background children is in progress"
victims=$(harness_run_pids | tr '\n' ' ')
kill -KILL -- "-$SBX_PID_broker"
t0=$SECONDS
wait "$inflight"
is "$(cat "$work/inflight2")" 500 "the caller gets 500"
is_envelope "$(cat "$work/body2")" internal_error
ok $? "... with the internal_error envelope"
ok $([ $((SECONDS - t0)) -lt 10 ]; echo $?) "... promptly, not after the run's 30 s"
wait_until 10 slots_idle
ok $? "the run's processes die with the broker (none left in the slot uids)"
slots_idle || { diag "left: $(harness_run_pids | tr '\n' ' ') (were: $victims)"; ps -o pid,ppid,uid,stat,cmd -p "$(harness_run_pids | tr '\n' ',' | sed 's/,$//')" | sed 's/^/# /'; }
{ wait "$SBX_PID_broker"; } 2>/dev/null
api POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
# 500 internal_error normally; 503 busy when the dead broker's prepared sandboxes still hold its
# listening socket for a moment (then connect() says EAGAIN). Either way: refused, in JSON.
ok $({ [ "$api_status" = 500 ] || [ "$api_status" = 503 ]; } && is_envelope "$api_body" "$(echo "$api_body" | json_get 'd["error"]["code"]')"; echo $?) \
	"without a broker, runs fail closed: $api_status $(echo "$api_body" | json_get 'd["error"]["code"]')"
stack_start_broker
stack_wait_for 15 "$SBX_PID_broker" "the broker" test -S "$SBX_BROKER_SOCK"
stack_wait_for 15 "$SBX_PID_broker" "health" stack_healthy
ok $? "a new broker starts over the dead one's cgroups and socket: health 200"
api POST /v1/execute '{"language":"python","code":"print(2)"}' >/dev/null
ok $([ "$api_status" = 200 ] && [ "$(echo "$api_body" | json_get 'd["stdout"]')" = 2 ]; echo $?) "execute works again"
sessions_intact "after the broker was killed"

# ---- 2b. only the broker's main process SIGKILLed (not its group): its slots leave with it ----
slots=$(pgrep -P "$SBX_PID_broker" | tr '\n' ' ')
ok $([ -n "$slots" ]; echo $?) "the broker has slot processes ($slots)"
kill -KILL "$SBX_PID_broker"
{ wait "$SBX_PID_broker"; } 2>/dev/null
slots_gone() { local p; for p in $slots; do stack_running "$p" && return 1; done; return 0; }
wait_until 10 slots_gone
ok $? "with the broker's main process killed alone, every slot process exits too (no orphan holding the old socket)"
stack_start_broker
stack_wait_for 15 "$SBX_PID_broker" "health" stack_healthy
ok $? "a new broker: health 200"

# ---- 3. the whole service restarted: gracefully, then after SIGKILL ----
start_all() {
	stack_start_service &&
		stack_start_nginx &&
		stack_wait_for 15 "$SBX_PID_nginx" "health" stack_healthy
}
stack_stop
start_all
ok $? "the service stopped and started again: health 200"
sessions_intact "after a restart"
for part in nginx pool health broker; do
	pid=$(eval "echo \$SBX_PID_$part")
	kill -KILL -- "-$pid"
done
for part in nginx pool health broker; do
	pid=$(eval "echo \$SBX_PID_$part")
	{ wait "$pid"; } 2>/dev/null
done
start_all
ok $? "the service SIGKILLed and started again (stale sockets, pid files, cgroups): health 200"
sessions_intact "after a crash and restart"

# ---- 4. the state directory's disk fills up ----
disk=$SBX_HARNESS_DIR/disk
mkdir -p "$disk"
if mount -t tmpfs -o size=24m,mode=0755 sbx-faults "$disk" 2>/dev/null; then
	harness_on_exit "umount -l '$SBX_STATE_DIR/sessions' '$SBX_STATE_DIR/scratch' '$disk' 2>/dev/null"
	stack_kill_group "$SBX_PID_pool" 5
	mkdir -p "$disk/sessions" "$disk/scratch"
	chown sbx:sbx "$disk/sessions" "$disk/scratch"
	chmod 0700 "$disk/sessions" "$disk/scratch"
	cp -a "$SBX_STATE_DIR/sessions/." "$disk/sessions/"
	mount --bind "$disk/sessions" "$SBX_STATE_DIR/sessions" &&
		mount --bind "$disk/scratch" "$SBX_STATE_DIR/scratch"
	ok $? "sessions/ and scratch/ now live on a 24 MiB tmpfs"
	stack_start_pool
	stack_wait_for 15 "$SBX_PID_pool" "health" stack_healthy
	sessions_intact "on the small disk"

	head -c $((30 << 20)) /dev/zero >"$work/big"
	api PUT "/v1/sessions/$A/files/big.bin" "@$work/big" >/dev/null
	is "$api_status" 507 "PUT of 30 MiB onto 24 MiB: 507"
	is_envelope "$api_body" insufficient_storage && grep -qi '^retry-after:' <<<"$api_headers"
	ok $? "... insufficient_storage envelope (the server's disk, not the session's quota), Retry-After"
	api GET "/v1/sessions/$A/files" >/dev/null
	echo "$api_body" | json_get '[e["path"] for e in d]' | grep -q big
	ok $((!$?)) "no partial big.bin in the tree"
	used=$(df --output=used "$disk" | tail -n 1)
	ok $([ "$used" -lt 4096 ]; echo $?) "and no hidden temp file holds the space (used ${used} KiB)"

	api POST "/v1/sessions/$A/run" '{"cmd":"for i in 1 2; do head -c 15000000 /dev/zero > fill$i.bin; done; echo rc=$?"}' >/dev/null
	out=$(echo "$api_body" | json_get 'd["stdout"]+d["stderr"]')
	ok $([ "$api_status" = 200 ] && echo "$out" | grep -q 'No space left'; echo $?) "a run filling the disk gets ENOSPC as a program error"
	[ "$api_status" = 200 ] || diag "$api_status $api_body"
	avail=$(df --output=avail "$disk" | tail -n 1)
	diag "disk free after the run: ${avail} KiB"
	api PUT "/v1/sessions/$A/files/more.txt" 'more' >/dev/null
	ok $([ "$api_status" = 507 ] && is_envelope "$api_body" insufficient_storage; echo $?) "PUT on the full disk: 507 insufficient_storage (got $api_status)"
	api POST /v1/sessions >/dev/null
	ok $({ [ "$api_status" = 201 ] || { [ "$api_status" -ge 400 ] && [ "$api_status" != 502 ] && [ "$api_status" != 504 ] && is_envelope "$api_body" "$(echo "$api_body" | json_get 'd["error"]["code"]')"; }; }; echo $?) \
		"create a session on the full disk: 201 or a clean JSON error (got $api_status $(echo "$api_body" | json_get 'd["error"]["code"]' 2>/dev/null))"
	api POST /v1/execute '{"language":"python","code":"print(3)"}' >/dev/null
	ok $({ [ "$api_status" = 200 ] || { [ "$api_status" -ge 400 ] && [ "$api_status" != 502 ] && [ "$api_status" != 504 ] && is_envelope "$api_body" "$(echo "$api_body" | json_get 'd["error"]["code"]')"; }; }; echo $?) \
		"stateless execute on the full disk: 200 or a clean JSON error (got $api_status $(echo "$api_body" | json_get 'd["error"]["code"]' 2>/dev/null))"
	# Below the disk reserve (disk.reserve_mb) nothing new may start: health says so, so that a
	# balancer stops sending work, and runs are refused cleanly (507) rather than failing half.
	api GET /v1/health >/dev/null
	is "$api_status" 503 "health turns 503 with the disk full (below its reserve)"
	is_envelope "$api_body" insufficient_storage
	ok $? "... insufficient_storage"
	api POST "/v1/sessions/$A/run" '{"cmd":"true"}' >/dev/null
	ok $([ "$api_status" = 507 ] && is_envelope "$api_body" insufficient_storage; echo $?) \
		"a run in a session on the full disk: 507 insufficient_storage (got $api_status)"
	sessions_intact "with the disk full" norun

	api DELETE "/v1/sessions/$A/files/fill1.bin" >/dev/null
	api DELETE "/v1/sessions/$A/files/fill2.bin" >/dev/null
	is "$api_status" 204 "deleting the fillers frees the space"
	api PUT "/v1/sessions/$A/files/more.txt" 'more' >/dev/null
	is "$api_status" 201 "writes work again, no restart needed"
	api POST /v1/sessions >/dev/null
	is "$api_status" 201 "sessions can be created again"
	api POST /v1/execute '{"language":"python","code":"print(4)"}' >/dev/null
	is "$api_status" 200 "stateless execute works again"
	api GET /v1/health >/dev/null
	is "$api_status" 200 "health is 200 again"
	sessions_intact "after the disk was freed"
	leftovers=$(find "$disk" -name '.new-*' -o -name '.tmp*' -o -name '.trash-*' | head -5)
	is "$leftovers" "" "no temporary or half-made entries left on the disk"
else
	skip "cannot mount a tmpfs here" "disk-full checks"
fi

wait_until 10 slots_idle
ok $? "no run process is left in the slot uid range at the end"
done_testing
