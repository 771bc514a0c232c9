# harness.sh: a private, complete stack for integration tests: the real broker (build/sbxd), the
# real FastCGI pool (spawn-fcgi + multiwatch + build/sbx-fcgi) and nginx over HTTPS on free
# loopback ports, with a temporary state directory and two clients (alice, bob). Its nginx
# prefix, config, pid and logs all live in the temporary directory, so it never touches a
# running `make run` stack or the system nginx; its slots use their own uid range and cgroup name.
#
#   . tests/lib/harness.sh; harness_start     # from a shell test (needs root)
#   tests/lib/harness.sh --exec CMD...         # run CMD (e.g. a Python test) with the stack up
#
# harness_start exports SBX_URL (https://127.0.0.1:PORT), SBX_TOKEN (client alice), SBX_TOKEN2
# (client bob), SBX_STATE_DIR, SBX_CURL (curl -k -s with a time limit: use it unquoted), and
# SBX_HARNESS_DIR, SBX_UID_BASE, SBX_SLOTS, and the pids of the three parts (each leads its own
# process group): SBX_PID_broker, SBX_PID_pool (multiwatch), SBX_PID_health (multiwatch of the
# health pool), SBX_PID_nginx (master). Teardown is automatic on exit (TERM, then KILL, of
# each part's whole process group); to add your own cleanup use harness_on_exit CMD.
#
# Calling routes:
#   api METHOD PATH [BODY]            as alice; prints the body; sets $api_status, $api_body,
#                                     $api_headers. BODY "@file" sends a file's bytes.
#   api_as TOKEN METHOD PATH [BODY]   same with another token ("" sends no Authorization)
#   Call api directly, not inside $(...): a subshell cannot set $api_status for you. When you
#   must, read the status back with $(api_last_status).
#   json_get PYEXPR < json         e.g. echo "$api_body" | json_get 'd["error"]["code"]'
#   is_envelope JSON CODE          true when JSON is the error envelope with that code
#   API_CONTENT_TYPE overrides the Content-Type of a body (default application/json, or
#   application/octet-stream for "@file").
#
# Processes: harness_worker_pids, harness_busy_worker_pids (serving a request),
# harness_health_worker_pids, harness_slot_pids, harness_run_pids; wait_until SECONDS CMD...
# polls CMD until it succeeds.
#
# Knobs (environment, before harness_start): HARNESS_WORKERS (4), HARNESS_SLOTS (4),
# HARNESS_RATE (50r/s), HARNESS_BURST (100), HARNESS_CONN (16), HARNESS_BODY_MAX (10m),
# HARNESS_UPLOAD_MAX (100m), HARNESS_ANON_RATE (1000r/s), HARNESS_ANON_BURST (1000),
# HARNESS_ANON_CONN (64): requests without a token, per address; HARNESS_HEADER_TIMEOUT (5s),
# HARNESS_NGINX_CONNECTIONS (4096: worker_connections), HARNESS_CLIENT_SHARE (100) and
# HARNESS_RESERVE (0): runs.client_share_percent and runs.reserve of the config the harness
# writes when SBX_CONFIG is not set (see _harness_config), HARNESS_TIMEOUT (seconds to wait
# for health, 60), HARNESS_KEEP=1
# (keep the temporary directory), SBX_BIN (directory of sbxd and sbx-fcgi, default build/),
# HARNESS_SESSIONS_IMG_SIZE (2G: the sparse btrfs image behind sessions/; 0: plain directories).
# SBX_VOLUME (exported) says where sessions live: image, btrfs (quotas hold inside runs) or plain.
# Do not run tests under `set -e`: the helpers return non-zero on purpose.

harness_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
. "$harness_repo/nginx/stack.sh"

harness_up=0
harness_exit_cmds=()

harness_diag() { printf '# %s\n' "$@" >&2; }

harness_bail() { # stop the test: the stack could not start (a failure, not a skip)
	echo "Bail out! harness: $*"
	harness_logs
	exit 1
}

harness_logs() { # print the tail of every log of the stack as TAP comments
	local f
	[ -n "${SBX_LOG:-}" ] && [ -d "$SBX_LOG" ] || return 0
	for f in "$SBX_LOG"/*.log; do
		[ -s "$f" ] || continue
		echo "# --- ${f##*/} (last 25 lines)"
		tail -n 25 "$f" | sed 's/^/#   /'
	done
}

harness_free_port() { # a TCP port that nothing listens on right now
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

harness_on_exit() { harness_exit_cmds+=("$*"); }

# harness_config: the stack reads the shipped config (fcgi/sbx.conf.json) as changed by the
# Python statements on stdin (the config is `c`), from a private directory removed at exit.
# Call it before harness_start.
harness_config() {
	local dir
	dir=$(mktemp -d /tmp/sbx-conf.XXXXXX) || return 1
	chmod 0755 "$dir"
	/usr/bin/python3 -c 'import json, sys
c = json.load(open("fcgi/sbx.conf.json"))
exec(sys.stdin.read())
json.dump(c, open(sys.argv[1], "w"))' "$dir/sbx.conf.json" || return 1
	cp fcgi/openapi.json "$dir/" && chmod 0644 "$dir"/* || return 1
	export SBX_CONFIG=$dir/sbx.conf.json
	harness_on_exit rm -rf "$dir"
}

_harness_begin() { # what both starts need: root, the tools, the binaries, a directory, traps
	local cmd
	if [ "$(id -u)" -ne 0 ]; then
		echo "1..0 # SKIP the harness needs root (broker, users, nginx master)"
		exit 0
	fi
	for cmd in nginx spawn-fcgi multiwatch openssl curl setsid flock ss; do
		command -v "$cmd" >/dev/null || harness_bail "$cmd is not installed (make deps)"
	done
	SBX_BIN=${SBX_BIN:-$harness_repo/build}
	for cmd in sbxd sbx-fcgi; do
		[ -x "$SBX_BIN/$cmd" ] || harness_bail "$SBX_BIN/$cmd is missing (make all)"
	done
	SBX_HARNESS_DIR=$(mktemp -d /tmp/sbx-harness.XXXXXX) || harness_bail "mktemp failed"
	chmod 0755 "$SBX_HARNESS_DIR"
	trap 'harness_teardown' EXIT
	trap 'harness_teardown; exit 143' TERM
	trap 'harness_teardown; exit 130' INT
	trap 'harness_teardown; exit 129' HUP
	harness_up=1
}

_harness_config() { # unless the test brings its own SBX_CONFIG: fcgi/sbx.conf.json with the
	# fairness knobs of the harness. Many tests drive the pool from one client on purpose (8
	# concurrent seed workflows, a checklist run 4 at a time), so by default a client may hold
	# the whole (small) pool: HARNESS_CLIENT_SHARE (100, percent) and HARNESS_RESERVE (0).
	# Tests of fairness itself set 50 and 2, the shipped defaults. Sessions per client are not
	# bounded by the small test volume either unless HARNESS_DISK_SHARE (0: off; shipped 25).
	# A config this harness wrote for an earlier stack of the same test (gone with its
	# directory) is not the test's own: write one again.
	[ -z "${SBX_CONFIG:-}" ] || [ "$SBX_CONFIG" = "${harness_made_config:-}" ] || return 0
	/usr/bin/python3 - "$harness_repo/fcgi/sbx.conf.json" "$SBX_HARNESS_DIR/conf/sbx.conf.json" \
		"${HARNESS_CLIENT_SHARE:-100}" "${HARNESS_RESERVE:-0}" "${HARNESS_DISK_SHARE:-0}" \
		<<'PY' || return 1
import json, os, shutil, sys
c = json.load(open(sys.argv[1]))
c.setdefault("runs", {})["client_share_percent"] = int(sys.argv[3])
c["runs"]["reserve"] = int(sys.argv[4])
c.setdefault("disk", {})["client_share_percent"] = int(sys.argv[5])
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
json.dump(c, open(sys.argv[2], "w"), indent=1)
# The OpenAPI document is served from the config's directory.
shutil.copy(os.path.join(os.path.dirname(sys.argv[1]), "openapi.json"), os.path.dirname(sys.argv[2]))
PY
	chmod 0755 "$SBX_HARNESS_DIR/conf"
	chmod 0644 "$SBX_HARNESS_DIR/conf/"*
	SBX_CONFIG=$SBX_HARNESS_DIR/conf/sbx.conf.json
	harness_made_config=$SBX_CONFIG
}

_harness_anon_knobs() { # nginx's limits for requests without a token (per address) and its
	# connection budget. Tests poll health from 127.0.0.1 at high rates: generous by default.
	SBX_ANON_RATE=${HARNESS_ANON_RATE:-1000r/s}
	SBX_ANON_BURST=${HARNESS_ANON_BURST:-1000}
	SBX_ANON_CONN=${HARNESS_ANON_CONN:-64}
	SBX_HEADER_TIMEOUT=${HARNESS_HEADER_TIMEOUT:-5s}
	SBX_NGINX_CONNECTIONS=${HARNESS_NGINX_CONNECTIONS:-4096}
	# Connections per address (nginx stream): load tests open many from 127.0.0.1.
	SBX_ADDR_CONN=${HARNESS_ADDR_CONN:-1024}
}

harness_start() {
	local try ok
	[ "$harness_up" -eq 1 ] && return 0
	_harness_begin

	SBX_WORKERS=${HARNESS_WORKERS:-4}
	SBX_SLOTS=${HARNESS_SLOTS:-4}
	SBX_RATE=${HARNESS_RATE:-50r/s}
	SBX_BURST=${HARNESS_BURST:-100}
	SBX_CONN=${HARNESS_CONN:-16}
	SBX_BODY_MAX=${HARNESS_BODY_MAX:-10m}
	SBX_UPLOAD_MAX=${HARNESS_UPLOAD_MAX:-100m}
	_harness_anon_knobs
	_harness_config || harness_bail "cannot write the harness's config"
	# Private slot uids and cgroup: a `make run` stack (uids from 200000) and other harnesses
	# started at the same time must never share a slot.
	# 310000-399999: above the broker default (200000) and the sbx CLI's slots (300000).
	for try in 1 2 3 4 5 6 7 8; do
		SBX_UID_BASE=$((310000 + (RANDOM % 700) * 128))
		[ -z "$(harness_slot_pids)" ] && break
	done
	SBX_CGROUP=sbx-test-${SBX_HARNESS_DIR##*.}
	SBX_LISTEN=127.0.0.1

	stack_init "$harness_repo" "$SBX_HARNESS_DIR/state" || harness_bail "no state directory"
	stack_users || harness_bail "cannot create users"
	stack_dirs || harness_bail "cannot prepare $SBX_STATE"
	# Sessions on a small sparse btrfs image (quotas inside runs), as `make run` does; without
	# btrfs or loop devices the stack runs on plain directories (SBX_VOLUME says which).
	SBX_SESSIONS_IMG_SIZE=${HARNESS_SESSIONS_IMG_SIZE:-2G}
	stack_volume_up 2>"$SBX_HARNESS_DIR/volume.log"
	[ "$SBX_VOLUME" = plain ] && harness_diag "$(cat "$SBX_HARNESS_DIR/volume.log")"
	stack_cert || harness_bail "no certificate"
	SBX_TOKEN=$(stack_token_new alice) || harness_bail "no token"
	SBX_TOKEN2=$(stack_token_new bob) || harness_bail "no token"

	stack_start_service || harness_bail "the broker or a FastCGI pool did not start"

	# A free port can be taken between the probe and nginx's bind: try a few.
	ok=0
	for try in 1 2 3 4 5; do
		SBX_PORT=$(harness_free_port) || harness_bail "no free port"
		stack_start_nginx || harness_bail "nginx config rejected"
		stack_wait_for 5 "$SBX_PID_nginx" "nginx" harness_listening 2>/dev/null
		if stack_alive "$SBX_PID_nginx"; then ok=1; break; fi
		wait "$SBX_PID_nginx" 2>/dev/null
		harness_diag "nginx could not start on port $SBX_PORT (try $try)"
	done
	[ "$ok" -eq 1 ] || harness_bail "nginx did not start"

	SBX_URL="https://127.0.0.1:$SBX_PORT"
	SBX_CURL="curl -k -s --max-time 200"
	SBX_STATE_DIR=$SBX_STATE
	export SBX_URL SBX_TOKEN SBX_TOKEN2 SBX_STATE_DIR SBX_CURL SBX_HARNESS_DIR SBX_UID_BASE SBX_SLOTS
	export SBX_VOLUME
	export SBX_PID_broker SBX_PID_pool SBX_PID_health SBX_PID_nginx

	stack_wait_for "${HARNESS_TIMEOUT:-60}" "$SBX_PID_nginx" "GET /v1/health = 200" \
		harness_all_alive_and_healthy ||
		harness_bail "the stack is not healthy: GET /v1/health answers $(stack_health_code): $(curl -k -s --max-time 5 "$SBX_URL/v1/health")"
	return 0
}

harness_listening() { ss -Hltn "sport = :$SBX_PORT" 2>/dev/null | grep -q .; }

harness_all_alive_and_healthy() {
	stack_alive "$SBX_PID_broker" || return 1
	stack_alive "$SBX_PID_pool" || return 1
	stack_alive "$SBX_PID_health" || return 1
	stack_healthy
}

harness_teardown() { # stop everything this harness started; idempotent
	local c
	[ "$harness_up" -eq 1 ] || return 0
	harness_up=0
	for c in "${harness_exit_cmds[@]}"; do eval "$c"; done
	if [ "${tap_failed:-0}" -gt 0 ]; then harness_logs; fi
	stack_stop
	rm -f "$(stack_metrics_file)"
	harness_sanitizer_reports
	stack_volume_down
	# A broker that had to be killed leaves its (empty) cgroups: remove ours, deepest first.
	for c in /sys/fs/cgroup/"$SBX_CGROUP" /sys/fs/cgroup/*/"$SBX_CGROUP"; do
		[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	if [ "${HARNESS_KEEP:-0}" = 1 ]; then
		harness_diag "kept $SBX_HARNESS_DIR"
	else
		# --one-file-system: should an unmount have failed, nothing mounted below is removed.
		rm -rf --one-file-system "$SBX_HARNESS_DIR"
	fi
}

harness_stop() { harness_teardown; trap - EXIT TERM INT HUP; }

harness_sanitizer_reports() { # fail the test (a "Bail out!" line) when a log of the stack holds
	# a sanitizer report: with SANITIZE=address,undefined the broker, the workers (a leak check
	# when stopped) and their children write them there, where no request would notice one
	local f
	for f in $(find "$SBX_HARNESS_DIR" -name '*.log' -type f 2>/dev/null); do
		grep -qE 'ERROR: (Address|Leak|Memory|Thread)Sanitizer|: runtime error: ' "$f" || continue
		echo "Bail out! harness: a sanitizer report in ${f#"$SBX_HARNESS_DIR"/}"
		grep -E -A 12 'ERROR: [A-Za-z]+Sanitizer|: runtime error: ' "$f" | head -n 40 | sed 's/^/#   /'
	done
}

wait_until() { # wait_until SECONDS CMD...: poll CMD every 0.1 s until it succeeds or time is up
	local end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		"${@:2}" && return 0
		sleep 0.1
	done
	"${@:2}"
}

# ---- calling routes ----

api_as() { # api_as TOKEN METHOD PATH [BODY]: one HTTPS request; see the header comment
	local token=$1 method=$2 path=$3 tmp args
	[ $# -ge 3 ] || { harness_diag "usage: api_as TOKEN METHOD PATH [BODY]"; return 2; }
	[ "$BASH_SUBSHELL" -gt 0 ] && [ -z "${HARNESS_QUIET_SUBSHELL:-}" ] &&
		harness_diag "api called in a subshell: \$api_status is not set outside it; use \$(api_last_status)"
	tmp=$(mktemp "$SBX_HARNESS_DIR/api.XXXXXX")
	args=(-X "$method" -o "$tmp.body" -D "$tmp.head" -w '%{http_code}')
	[ -n "$token" ] && args+=(-H "Authorization: Bearer $token")
	if [ $# -ge 4 ]; then
		if [[ "$4" == @* ]]; then
			args+=(-H "Content-Type: ${API_CONTENT_TYPE:-application/octet-stream}" --data-binary "$4")
		else
			args+=(-H "Content-Type: ${API_CONTENT_TYPE:-application/json}" --data-binary "$4")
		fi
	fi
	api_status=$($SBX_CURL "${args[@]}" "$SBX_URL$path")
	[ -n "$api_status" ] || api_status=000
	api_body=$(cat "$tmp.body" 2>/dev/null)
	api_headers=$(tr -d '\r' <"$tmp.head" 2>/dev/null)
	echo "$api_status" >"$SBX_HARNESS_DIR/api_last_status"
	cat "$tmp.body" 2>/dev/null
	rm -f "$tmp" "$tmp.body" "$tmp.head"
	return 0
}

api() { api_as "$SBX_TOKEN" "$@"; }

api_last_status() { cat "$SBX_HARNESS_DIR/api_last_status" 2>/dev/null || echo 000; }

api_header() { # api_header NAME: the value of a header of the last api call in this shell
	printf '%s\n' "$api_headers" | sed -n "s/^$1: *//Ip" | tail -n 1
}

json_get() { # json_get PYEXPR: evaluate PYEXPR on the JSON document d read from stdin; strings
	# print raw, anything else as JSON; exit status 1 (and nothing printed) if it fails
	/usr/bin/python3 -c '
import json, sys
try:
    d = json.loads(sys.stdin.read())
    v = eval(sys.argv[1], {"d": d})
except Exception:
    sys.exit(1)
print(v if isinstance(v, str) else json.dumps(v))' "$1"
}

is_envelope() { # is_envelope JSON CODE: is it {"error":{"code":CODE,"message":"..."}}?
	printf '%s' "$1" | /usr/bin/python3 -c '
import json, sys
try:
    e = json.loads(sys.stdin.read())["error"]
    ok = e["code"] == sys.argv[1] and isinstance(e["message"], str) and len(e["message"]) > 10
except Exception:
    ok = False
sys.exit(0 if ok else 1)' "$2"
}

# ---- inspecting and changing the stack ----

harness_token() { # harness_token NAME: a new token for client NAME, valid at once (reload)
	local t
	t=$(stack_token_new "$1") || return 1
	harness_reload || return 1
	echo "$t"
}

harness_revoke() { # harness_revoke NAME: every token of NAME stops working (reload)
	stack_token_revoke "$1" && harness_reload
}

harness_reload() { stack_reload; } # graceful nginx reload; new requests see the new config

harness_worker_pids() { # the pids of the FastCGI workers (children of multiwatch)
	pgrep -P "$SBX_PID_pool" 2>/dev/null
}

harness_busy_worker_pids() { # the workers serving a request: blocked in something other than
	# accept (43) / accept4 (288) on the FastCGI socket
	local pid nr
	for pid in $(harness_worker_pids); do
		nr=$(cut -d' ' -f1 "/proc/$pid/syscall" 2>/dev/null)
		[ "$nr" = 43 ] || [ "$nr" = 288 ] || echo "$pid"
	done
}

harness_health_worker_pids() { # the workers of the health pool (children of its multiwatch)
	pgrep -P "$SBX_PID_health" 2>/dev/null
}

harness_pool_pid() { echo "$SBX_PID_pool"; }
harness_health_pid() { echo "$SBX_PID_health"; }
harness_broker_pid() { echo "$SBX_PID_broker"; }
harness_nginx_pid() { echo "$SBX_PID_nginx"; }

harness_slot_pids() { # pids of every process running as one of this broker's slot uids
	# (this includes the broker's own per-slot helpers: see harness_run_pids), background
	# slots included (sbxd --background-runs: SBX_SLOTS/2 more, after the slots)
	local uid
	for ((uid = SBX_UID_BASE; uid < SBX_UID_BASE + SBX_SLOTS + SBX_SLOTS / 2; uid++)); do
		pgrep -U "$uid" 2>/dev/null
	done
}

harness_run_pids() { # pids of the programs of runs in progress: slot-uid processes that are not
	# the broker's own (its per-slot helpers and in-sandbox init are sbxd itself)
	local pid exe ppid
	for pid in $(harness_slot_pids); do
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
		case "$exe" in "$SBX_BIN/sbxd" | "$SBX_BIN/sbxd (deleted)") continue ;; esac
		# An idle slot's pre-started interpreter (sandbox/warm.c) waits for its job under
		# the prepared sandbox's init: not a run.
		if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sbx-warm ]; then
			ppid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
			case "$(readlink "/proc/$ppid/exe" 2>/dev/null)" in
			"$SBX_BIN/sbxd" | "$SBX_BIN/sbxd (deleted)") continue ;;
			esac
		fi
		# A slot's zygote (sandbox/zygote.c), and the init and program it prepared while they
		# wait for a job: named sbx-zygote up to the zygote, whose parent is the slot (a run's
		# program renames itself when its job arrives).
		harness_zygote_idle "$pid" && continue
		echo "$pid"
	done
}

harness_zygote_idle() { # harness_zygote_idle PID: an idle zygote's process (see harness_run_pids)
	local p=$1 i
	for ((i = 0; i < 3; i++)); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sbx-zygote ] || return 1
		p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || return 1
		case "$(readlink "/proc/$p/exe" 2>/dev/null)" in
		"$SBX_BIN/sbxd" | "$SBX_BIN/sbxd (deleted)") return 0 ;;
		esac
	done
	return 1
}

# ---- several hosts behind one nginx (tests/integration/scaleout.t) ----
#
#   harness_start_cluster h1 h2 h3     instead of harness_start: one broker + pool per shard
#
# Each host has its own state dir ($SBX_HARNESS_DIR/host-<shard>, plain directories, no btrfs
# image), slot uids, cgroup, SBX_SHARD and a pool and a health pool on free TCP loopback ports; one nginx (state
# dir $SBX_HARNESS_DIR/state: tokens, TLS, logs) renders nginx/sbx-cluster.conf.in for them,
# the first shard being the seed host. Exports what harness_start does (SBX_STATE_DIR is the
# front's) plus SBX_HOSTS (the shards). api, json_get, ... work as with one host. Knobs:
# HARNESS_HOST_WORKERS (2), HARNESS_HOST_SLOTS (2), HARNESS_FAIL_TIMEOUT (10s), and those of
# harness_start that concern nginx (rate, burst, conn, body sizes, timeout, keep).
#   harness_host_state SHARD           print the host's state dir (sessions/ is in it)
#   harness_host_addr SHARD            print the host's FastCGI address (127.0.0.1:PORT)
#   harness_host_stop SHARD            stop the host's pool and broker (its state stays)
#   harness_host_start SHARD           start them again (same port, state, shard)
#   harness_host_pids SHARD            print the pids of its broker, pool and health pool
#                                      (multiwatch, both)

declare -gA harness_host_dir=() harness_host_port=() harness_host_uid=() harness_host_cg=()
declare -gA harness_host_broker=() harness_host_pool=() harness_host_health=()
declare -gA harness_host_hport=()
harness_front_nginx=""

_harness_host_use() { # point stack.sh's globals at one host
	local sh=$1
	stack_init "$harness_repo" "${harness_host_dir[$sh]}" || return 1
	SBX_UID_BASE=${harness_host_uid[$sh]}
	SBX_CGROUP=${harness_host_cg[$sh]}
	SBX_FCGI_ADDR=127.0.0.1:${harness_host_port[$sh]}
	SBX_FCGI_HEALTH_ADDR=127.0.0.1:${harness_host_hport[$sh]}
	SBX_FCGI_FRONT=127.0.0.1
	SBX_SHARD=$sh
	SBX_WORKERS=${HARNESS_HOST_WORKERS:-2}
	SBX_SLOTS=${HARNESS_HOST_SLOTS:-2}
	SBX_PID_broker=${harness_host_broker[$sh]}
	SBX_PID_pool=${harness_host_pool[$sh]}
	SBX_PID_health=${harness_host_health[$sh]}
	SBX_PID_nginx=""
}

_harness_front_use() { # and back at the front (nginx)
	stack_init "$harness_repo" "$SBX_HARNESS_DIR/state" || return 1
	unset SBX_FCGI_ADDR SBX_FCGI_HEALTH_ADDR SBX_FCGI_FRONT SBX_SHARD
	SBX_PID_broker="" SBX_PID_pool="" SBX_PID_health="" SBX_PID_nginx=$harness_front_nginx
	SBX_SLOTS=${HARNESS_HOST_SLOTS:-2}
	# harness_teardown removes the cgroups of this name: one that never exists.
	SBX_CGROUP=sbx-test-${SBX_HARNESS_DIR##*.}-front
}

harness_host_start() { # harness_host_start SHARD: its broker, pool and health pool (waits)
	local sh=$1 rc=0
	[ -n "${harness_host_dir[$sh]:-}" ] || { harness_diag "no host $sh"; return 2; }
	_harness_host_use "$sh" || return 1
	stack_start_service || rc=1
	harness_host_broker[$sh]=$SBX_PID_broker harness_host_pool[$sh]=${SBX_PID_pool:-}
	harness_host_health[$sh]=${SBX_PID_health:-}
	_harness_front_use
	return $rc
}

harness_host_stop() { # harness_host_stop SHARD: pool and broker stopped, slots swept, cgroup gone
	local sh=$1 c
	[ -n "${harness_host_dir[$sh]:-}" ] || { harness_diag "no host $sh"; return 2; }
	_harness_host_use "$sh" || return 1
	stack_stop
	rm -f "$(stack_metrics_file)"
	for c in /sys/fs/cgroup/"$SBX_CGROUP" /sys/fs/cgroup/*/"$SBX_CGROUP"; do
		[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	harness_host_broker[$sh]="" harness_host_pool[$sh]="" harness_host_health[$sh]=""
	_harness_front_use
}

harness_host_state() { echo "${harness_host_dir[$1]}"; }
harness_host_addr() { echo "127.0.0.1:${harness_host_port[$1]}"; }
harness_host_pids() { echo "${harness_host_broker[$1]} ${harness_host_pool[$1]} ${harness_host_health[$1]}"; }

_harness_cluster_teardown() { # first of harness_teardown's exit commands
	local sh f
	for sh in $SBX_HOSTS; do
		if [ "${tap_failed:-0}" -gt 0 ]; then
			for f in "${harness_host_dir[$sh]}"/log/*.log; do
				[ -s "$f" ] || continue
				echo "# --- $sh: ${f##*/} (last 15 lines)"
				tail -n 15 "$f" | sed 's/^/#   /'
			done
		fi
		harness_host_stop "$sh"
	done
}

_harness_cluster_healthy() { # every host answers GET /v1/health?shard=NAME with 200 via nginx
	local sh
	stack_alive "$harness_front_nginx" || return 1
	for sh in $SBX_HOSTS; do
		[ "$(curl -k -s -o /dev/null -w '%{http_code}' --max-time 5 \
			"https://127.0.0.1:$SBX_PORT/v1/health?shard=$sh" 2>/dev/null)" = 200 ] || return 1
	done
}

harness_start_cluster() { # harness_start_cluster SHARD...: see above
	local sh try ok base hosts=() used=" "
	[ "$harness_up" -eq 1 ] && return 0
	[ $# -ge 1 ] || harness_bail "harness_start_cluster needs shard names"
	_harness_begin
	SBX_HOSTS="$*"
	export SBX_HOSTS
	harness_on_exit _harness_cluster_teardown

	SBX_RATE=${HARNESS_RATE:-50r/s}
	SBX_BURST=${HARNESS_BURST:-100}
	SBX_CONN=${HARNESS_CONN:-16}
	SBX_BODY_MAX=${HARNESS_BODY_MAX:-10m}
	SBX_UPLOAD_MAX=${HARNESS_UPLOAD_MAX:-100m}
	_harness_anon_knobs
	_harness_config || harness_bail "cannot write the harness's config"
	SBX_LISTEN=127.0.0.1
	SBX_SESSIONS_IMG_SIZE=0
	stack_users || harness_bail "cannot create users"
	for sh in "$@"; do
		stack_valid_shard "$sh" || harness_bail "bad shard name $sh"
		harness_host_dir[$sh]=$SBX_HARNESS_DIR/host-$sh
		harness_host_cg[$sh]=sbx-test-${SBX_HARNESS_DIR##*.}-$sh
		# Slot uid ranges of 128 in 310000-399999 (as harness_start), distinct per host.
		for try in 1 2 3 4 5 6 7 8; do
			base=$((310000 + (RANDOM % 700) * 128))
			SBX_UID_BASE=$base SBX_SLOTS=${HARNESS_HOST_SLOTS:-2}
			case $used in *" $base "*) continue ;; esac
			[ -z "$(harness_slot_pids)" ] && break
		done
		used="$used$base "
		harness_host_uid[$sh]=$base
		harness_host_port[$sh]=$(harness_free_port) || harness_bail "no free port"
		harness_host_hport[$sh]=${harness_host_port[$sh]}
		while [ "${harness_host_hport[$sh]}" = "${harness_host_port[$sh]}" ]; do
			harness_host_hport[$sh]=$(harness_free_port) || harness_bail "no free port"
		done
		_harness_host_use "$sh" || harness_bail "no state directory for $sh"
		stack_dirs || harness_bail "cannot prepare $SBX_STATE"
		harness_host_start "$sh" || harness_bail "host $sh did not start"
		hosts+=("$sh=$(harness_host_addr "$sh"),127.0.0.1:${harness_host_hport[$sh]}")
	done

	_harness_front_use || harness_bail "no state directory"
	stack_dirs || harness_bail "cannot prepare $SBX_STATE"
	stack_cert || harness_bail "no certificate"
	SBX_TOKEN=$(stack_token_new alice) || harness_bail "no token"
	SBX_TOKEN2=$(stack_token_new bob) || harness_bail "no token"
	SBX_CLUSTER_HOSTS="${hosts[*]}"
	SBX_FAIL_TIMEOUT=${HARNESS_FAIL_TIMEOUT:-10s}
	ok=0
	for try in 1 2 3 4 5; do
		SBX_PORT=$(harness_free_port) || harness_bail "no free port"
		SBX_RENDER_NGINX=stack_render_cluster_nginx stack_start_nginx ||
			harness_bail "nginx rejects the cluster config"
		harness_front_nginx=$SBX_PID_nginx
		stack_wait_for 5 "$SBX_PID_nginx" "nginx" harness_listening 2>/dev/null
		if stack_alive "$SBX_PID_nginx"; then ok=1; break; fi
		wait "$SBX_PID_nginx" 2>/dev/null
		harness_diag "nginx could not start on port $SBX_PORT (try $try)"
	done
	[ "$ok" -eq 1 ] || harness_bail "nginx did not start"

	SBX_URL="https://127.0.0.1:$SBX_PORT"
	SBX_CURL="curl -k -s --max-time 200"
	SBX_STATE_DIR=$SBX_STATE
	SBX_VOLUME=plain
	export SBX_URL SBX_TOKEN SBX_TOKEN2 SBX_STATE_DIR SBX_CURL SBX_HARNESS_DIR SBX_VOLUME
	export SBX_PID_nginx
	stack_wait_for "${HARNESS_TIMEOUT:-60}" "$SBX_PID_nginx" "every host healthy" \
		_harness_cluster_healthy || harness_bail "not every host answers GET /v1/health?shard="
	return 0
}

# harness_py SCRIPT [ARGS]: run a Python TAP script against the started stack; its status is the
# test's (harness_stop then prints the stack's logs when it failed).
harness_py() {
	/usr/bin/python3 "$@"
	tap_failed=$?
	return "$tap_failed"
}

# harness_stop_leaves_nothing LO HI GLOB UIDS CGROUPS: stop the stack, then two TAP checks
# numbered after $n: no process of a uid in [LO, HI) is left (UIDS names them), and no cgroup
# directory named GLOB (CGROUPS names them; removed when found). Updates n, and rc on failure.
harness_stop_leaves_nothing() {
	local lo=$1 hi=$2 glob=$3 left cgs c
	stack_stop
	left=$(ps -eo uid=,pid=,comm= | awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 < hi')
	n=$((n + 1))
	if [ -z "$left" ]; then echo "ok $n - after the stop no process of $4 is left"
	else echo "not ok $n - after the stop no process of $4 is left"; echo "$left" | sed 's/^/#   /'; rc=1; fi
	cgs=$(find /sys/fs/cgroup -maxdepth 3 -type d -name "$glob" 2>/dev/null)
	n=$((n + 1))
	if [ -z "$cgs" ]; then echo "ok $n - after the stop no $5 is left"
	else echo "not ok $n - after the stop no $5 is left"; echo "$cgs" | sed 's/^/#   /'; rc=1
		for c in $cgs; do find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done; fi
}

# harness_py_contexts SCRIPT [ARGS]: run a Python TAP script (its plan line dropped), stop the
# stack, then check that no process of a context's uid and no context cgroup is left; prints
# the whole plan and returns the status.
harness_py_contexts() {
	local rc n
	/usr/bin/python3 "$@" | sed '/^1\.\./d' | tee "$SBX_HARNESS_DIR/py.tap"
	rc=${PIPESTATUS[0]}
	n=$(grep -cE '^(not )?ok ' "$SBX_HARNESS_DIR/py.tap")
	harness_stop_leaves_nothing $((SBX_UID_BASE + SBX_SLOTS)) \
		$((SBX_UID_BASE + SBX_SLOTS + SBX_CONTEXTS)) "$SBX_CGROUP-ctx*" "a context uid" \
		"context cgroup"
	echo "1..$n"
	tap_failed=$rc
	return "$rc"
}

# Executed rather than sourced: tests/lib/harness.sh --exec CMD...
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	if [ "${1:-}" != --exec ] || [ $# -lt 2 ]; then
		echo "usage: tests/lib/harness.sh --exec CMD..." >&2
		exit 2
	fi
	shift
	harness_start
	"$@"
	harness_rc=$?
	harness_stop
	exit $harness_rc
fi
