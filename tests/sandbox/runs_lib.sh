# tests/sandbox/runs_lib.sh: sourced by the broker-level runs tests (runs.t, runs_ids.t,
# runs_bg.t): root and the binaries or SKIP, a private directory and cgroup name, a uid range of
# its own, and a broker of their own started and stopped with the test.
#   runs_setup NAME UID_BASE_FROM   then   runs_broker --slots N --client-uid U [more sbxd args]
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
. tests/lib/tap.sh
[ "$(id -u)" = 0 ] || skip_all "needs root (namespaces, cgroups)"
[ -x build/sbxd ] && [ -x build/tests/runs_drive ] || skip_all "build/sbxd or build/tests/runs_drive missing (make all)"

pid=
runs_setup() { # runs_setup NAME UID_BASE_FROM: $dir, $uid_base (16 uids), $cg; cleaned at exit
	dir=$(mktemp -d "/var/tmp/sbx-$1-t.XXXXXX")
	chmod 755 "$dir"
	uid_base=$(($2 + (RANDOM % 64) * 16))
	cg=sbx-${1//-/}test-$$
	trap runs_cleanup EXIT
}
runs_cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && sleep 0.5 && kill -9 "$pid" 2>/dev/null
	rm -rf "$dir"
}
wait_for() { local end=$((SECONDS + $1)); shift; until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.05; done; }
sockets_up() { [ -S "$dir/sock" ] && [ -S "$dir/sock-health" ]; }
drive() { build/tests/runs_drive "$dir/sock" "$@"; }
newid() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
runs_broker() { # runs_broker SBXD_ARGS...: this test's broker, its log in $dir/log; TAP line
	build/sbxd --socket "$dir/sock" --files-uid 65534 --files-gid 65534 --uid-base "$uid_base" \
		--cgroup-name "$cg" "$@" 2>>"$dir/log" &
	pid=$!
	wait_for 30 sockets_up
	ok $? "sbxd starts"
}
