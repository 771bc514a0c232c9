#!/usr/bin/env bash
# front_fresh_clone.t: the README's two commands work from a fresh clone. Clone the committed
# HEAD into a temporary directory, `make run` there (PORT and STATE_DIR in the temporary
# directory), wait for the banner, send the curl request exactly as printed, check the playground
# URL, stop it with SIGINT (what Ctrl-C sends) and check that nothing is left behind. A second
# `make run` on the same state reuses the certificate and the token, and starts again each part
# that is SIGKILLed. Bounded in time throughout.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. nginx/stack.sh # stack_running
[ "$(id -u)" -eq 0 ] || skip_all "make run needs root"
command -v git >/dev/null || skip_all "git is not installed"
git rev-parse --verify -q HEAD >/dev/null || skip_all "not a git checkout with a commit"

repo=$(pwd)
# Not under /tmp: the broker cannot bind a runner directory from there (reported to the lead).
tmp=$(mktemp -d /var/tmp/sbx-fresh.XXXXXX)
chmod 0755 "$tmp"
src=$tmp/src
state=$tmp/state
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Private slot uids and cgroup, as the harness does, so a `make run` on this machine is safe.
uid_base=$((310000 + (RANDOM % 700) * 128))
make_pid=""

cleanup() {
	if [ -n "$make_pid" ] && kill -0 "$make_pid" 2>/dev/null; then
		kill -INT -- "-$make_pid" 2>/dev/null
		sleep 5
		kill -KILL -- "-$make_pid" 2>/dev/null
	fi
	leftovers | awk '{ print $1 }' | xargs -r kill -KILL 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

leftovers() { # every process that belongs to the clone's stack, one per line
	# The path goes through the environment: in awk's own arguments it would match awk itself.
	ps -e -o pid=,uid=,args= | T=$tmp awk -v lo="$uid_base" -v hi="$((uid_base + 64))" \
		'index($0, ENVIRON["T"]) || ($2 >= lo && $2 < hi)'
}

start_stack() { # start_stack LOG: `make run` in the clone, as the README says, in its own group
	# As from a terminal: its own process group (Ctrl-C reaches that group) and SIGINT not
	# ignored (bash starts background commands with SIGINT ignored; setsid keeps that).
	setsid env --default-signal -u MAKEFLAGS -u MAKELEVEL -u MFLAGS SBX_UID_BASE="$uid_base" \
		SBX_CGROUP="sbx-fresh-${tmp##*.}" WORKERS=2 SLOTS=2 \
		make -C "$src" run PORT="$port" STATE_DIR="$state" </dev/null >"$1" 2>&1 &
	make_pid=$!
}

wait_banner() { # wait_banner LOG SECONDS: until the curl example is printed, make dies, or time
	local end=$((SECONDS + $2))
	while [ "$SECONDS" -lt "$end" ]; do
		grep -q 'Try it:' "$1" && return 0
		kill -0 "$make_pid" 2>/dev/null || return 1
		sleep 1
	done
	return 1
}

within() { # within SECONDS CMD...: poll CMD until it succeeds or time is up (no speed assumed)
	local end=$((SECONDS + $1))
	shift
	until "$@"; do [ "$SECONDS" -ge "$end" ] && return 1; sleep 0.2; done
}
no_leftovers() { [ -z "$(leftovers)" ]; }

stop_stack() { # stop_stack: SIGINT to the foreground group (Ctrl-C), bounded wait
	local end=$((SECONDS + 30))
	kill -INT -- "-$make_pid" 2>/dev/null
	while [ "$SECONDS" -lt "$end" ] && kill -0 "$make_pid" 2>/dev/null; do sleep 0.2; done
	kill -0 "$make_pid" 2>/dev/null && return 1
	wait "$make_pid" 2>/dev/null
	make_pid=""
	return 0
}

git clone -q "$repo" "$src"
ok $? "git clone of the committed HEAD ($(git rev-parse --short HEAD))"

start_stack "$tmp/run1.log"
wait_banner "$tmp/run1.log" 600
ok $? "make run builds and starts the stack from a fresh clone"
if ! grep -q 'Try it:' "$tmp/run1.log"; then
	tail -n 40 "$tmp/run1.log" | sed 's/^/#   /'
	done_testing
	exit
fi

curl_cmd=$(sed -n 's/^ *Try it: *//p' "$tmp/run1.log")
case "$curl_cmd" in curl\ *) ok 0 "the banner prints a curl example" ;; *) ok 1 "the banner prints a curl example: $curl_cmd" ;; esac
out=$(eval "$curl_cmd --max-time 60 -s" 2>&1)
is "$(printf '%s' "$out" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["stdout"], end="")' 2>/dev/null)" "1" \
	"the printed curl request runs Python and prints 1"
url=$(sed -n 's/^ *Playground: *//p' "$tmp/run1.log")
case "$url" in "https://127.0.0.1:$port/#token=sbx_"*) ok 0 "the playground URL carries the token in the fragment" ;;
*) ok 1 "the playground URL carries the token in the fragment: $url" ;; esac
token=${url#*#token=}
is "$(curl -k -s -o /dev/null -w '%{http_code}' -H 'Accept: text/html' "https://127.0.0.1:$port/")" 200 "the playground page loads"
grep -qF "$token" "$state/log/access.log" 2>/dev/null
ok $([ $? -ne 0 ]; echo $?) "the token is not in the access log"
cert1=$(md5sum <"$state/tls/cert.pem")

stop_stack
ok $? "SIGINT stops make run"
within 15 no_leftovers
left=$(leftovers)
is "$left" "" "no process of the stack is left"
ss -Hltn "sport = :$port" | grep -q .
ok $([ $? -ne 0 ]; echo $?) "the port is free again"
ok $([ ! -S "$state/run/fcgi.sock" ] && [ ! -S "$state/run/sbxd.sock" ]; echo $?) "the sockets are removed"

# A second start reuses the state: same certificate, same token.
start_stack "$tmp/run2.log"
wait_banner "$tmp/run2.log" 120
ok $? "a second make run starts"
is "$(sed -n 's/^ *Playground: *//p' "$tmp/run2.log")" "$url" "... with the same token"
is "$(md5sum <"$state/tls/cert.pem")" "$cert1" "... and the same certificate"
# make token / make revoke against the running stack.
t2=$(env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$src" token NAME=alice STATE_DIR="$state" 2>/dev/null)
is "$(curl -k -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t2" "https://127.0.0.1:$port/v1/languages")" 200 \
	"make token NAME=alice: the new token works at once"
env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$src" revoke NAME=alice STATE_DIR="$state" >/dev/null 2>&1
ok $? "make revoke NAME=alice"
is "$(curl -k -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $t2" "https://127.0.0.1:$port/v1/languages")" 401 \
	"... and the token is refused at once"

# Self-healing: a part killed outright is started again by make run's supervisor, as systemd's
# Restart= does in production, without leaving its old processes behind.
health() { curl -k -s -o /dev/null -w '%{http_code}' --max-time 3 "https://127.0.0.1:$port/v1/health"; }
healthy_new() { # healthy_new PART OLDPID: health 200 and the part runs under a new pid
	local now
	now=$(cat "$state/run/$1.pid" 2>/dev/null)
	[ -n "$now" ] && [ "$now" != "$2" ] && kill -0 "$now" 2>/dev/null && [ "$(health)" = 200 ]
}
orphans() { # processes of this stack whose parent died (re-parented to PID 1)
	ps -e -o pid=,ppid=,args= | T=$tmp awk '$2 == 1 && index($0, ENVIRON["T"])'
}
for part in nginx broker pool health; do
	old=$(cat "$state/run/$part.pid")
	kids=$(pgrep -P "$old" | tr '\n' ' ')
	kill -KILL "$old"
	end=$((SECONDS + 30))
	until healthy_new "$part" "$old" || [ "$SECONDS" -ge "$end" ]; do sleep 0.3; done
	healthy_new "$part" "$old"
	ok $? "SIGKILL of the $part ($old): make run starts it again, health 200"
	kids_gone() { local k; for k in $kids; do stack_running "$k" && return 1; done; [ -z "$(orphans)" ]; }
	within 15 kids_gone
	left=""
	for k in $kids; do stack_running "$k" && left="$left $k"; done
	is "$left$(orphans)" "" "... and nothing of the killed $part is left (its children: $kids)"
done
grep -q 'the nginx stopped (status 137); starting it again' "$tmp/run2.log"
ok $? "make run says what it restarted"
out=$(eval "$curl_cmd --max-time 60 -s" 2>&1)
is "$(printf '%s' "$out" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["stdout"], end="")' 2>/dev/null)" "1" \
	"the printed curl request works after the restarts"

stop_stack
ok $? "SIGINT stops the second make run"
within 15 no_leftovers
is "$(leftovers)" "" "no process of the stack is left"

done_testing
