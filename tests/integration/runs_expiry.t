#!/usr/bin/env bash
# runs_expiry.t: a session that expires takes its background runs with it, by every path that
# ends a session: a request to the expired session (removed on access), the cap count of a new
# session (expired ones removed on the way), and DELETE. Own config: sessions.ttl_s 8 and
# runs.background_per_client 2, so the client's cap shows (through the API) that the broker
# forgot the runs, and ps shows that their programs are gone.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
harness_config <<'PY' || exit 1
# 8 s: the session must outlive the steps before its expiry is awaited (a start, the wait for
# its program, a second start) on a loaded machine; 3 s did not.
c["sessions"].update({"ttl_s": 8})
c["runs"].update({"background_per_client": 2, "background_per_session": 2,
                  "client_share_percent": 100, "reserve": 0})
c.setdefault("disk", {})["client_share_percent"] = 0
PY
export HARNESS_SLOTS=${HARNESS_SLOTS:-8}
harness_start

n=0 rc=0
check() { # check "name" CMD...
	local name=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $name"; else echo "not ok $n - $name"; rc=1; fi
}
new_session() {
	api POST /v1/sessions '{}' >/dev/null
	[ "$api_status" = 201 ] || echo "#   new session: $api_status $api_body" >&2
	echo "$api_body" | json_get 'd["id"]'
}
# start_bg SID SECONDS: a background sleep whose argument marks it in ps
start_bg() {
	api POST "/v1/sessions/$1/runs" "{\"cmd\":\"sleep $2\",\"limits\":{\"wall_ms\":60000}}" >/dev/null
	[ "$api_status" = 202 ] || echo "#   start in $1: $api_status $api_body" >&2
	[ "$api_status" = 202 ]
}
sleeping() { ps -eo args= | grep -qE "^(/bin/)?sleep $1\$"; }
not_sleeping() { ! sleeping "$1"; }
session_gone() { api GET "/v1/sessions/$1" >/dev/null; [ "$api_status" = 404 ]; }
cap_frees() { # the client's cap of 2 lets two new runs in: the broker holds none of the old
	local s
	s=$(new_session) || return 1
	start_bg "$s" 293 && start_bg "$s" 293 && api DELETE "/v1/sessions/$s" >/dev/null
}

# 1. On access: the session expires while its run sleeps; the next request to it removes it.
s1=$(new_session)
check "a background run starts in a session" start_bg "$s1" 291
check "its program runs" wait_until 30 sleeping 291
check "a second one starts" start_bg "$s1" 291
api POST "/v1/sessions/$s1/runs" '{"cmd":"true"}' >/dev/null
check "the cap of 2 refuses a third (429)" test "$api_status" = 429
sleep 9.5
check "after its TTL the session is gone (404)" session_gone "$s1"
check "its background runs' programs are gone" wait_until 30 not_sleeping 291
check "the broker forgot its runs: the client's cap lets two new ones in" cap_frees

# 2. By the cap count: a session that expires untouched is removed when its client makes a
# new one (the expired ones are not counted, and go).
s2=$(new_session)
check "a background run starts in a second session" start_bg "$s2" 292
check "its program runs" wait_until 30 sleeping 292
sleep 9.5
s3=$(new_session)
check "a new session is made after the second one expired" test -n "$s3"
check "the expired session's background run is gone, untouched" wait_until 30 not_sleeping 292
check "the broker forgot it" cap_frees

# 3. DELETE (already done by the handler; the store does it too, after the session is
# renamed away so that no run can start in between).
s4=$(new_session)
check "a background run starts in a third session" start_bg "$s4" 294
check "its program runs" wait_until 30 sleeping 294
api DELETE "/v1/sessions/$s4" >/dev/null
check "the session is deleted (204)" test "$api_status" = 204
check "its background run's program is gone" wait_until 30 not_sleeping 294
echo "1..$n"
tap_failed=$rc
exit "$rc"
