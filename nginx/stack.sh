# nginx/stack.sh: shell functions shared by nginx/run (make run), nginx/token and the test
# harness: users, the state directory, the certificate, tokens, config rendering, and starting /
# stopping the four supervised parts (broker, FastCGI pool, health pool, nginx) each in its own
# process group.
# Source it, then call stack_init REPO STATE_DIR. Needs root (users, the broker, nginx's master).
#
# Layout of a state directory (root-owned 0755 unless said):
#   tokens.conf   root 0600: the nginx map "Bearer <token>" -> client name
#   tls/          root 0700: cert.pem, key.pem (0600)
#   ccache/       sbx 0700: the compile cache, a directory per client (fcgi/store/ccache.c)
#   packages/     root 0755: python/ and node/, the operator's package files (the allow-list)
#   layers/       sbx 0700: stateless package layers built from them (fcgi/handlers/packages.c)
#   sessions/ scratch/   sbx 0700: the workers' data. stack_volume_up puts them on btrfs with
#                 quotas (each session's files/ a subvolume with a qgroup limit): the state dir's
#                 own btrfs, else sessions.img (root 0600, sparse) loop-mounted at sessions/ with
#                 scratch/ bound to its .scratch/
#   run/          sockets (sbxd.sock: broker, 0660 group sbx; fcgi.sock: pool, health.sock: health
#                 pool, both owned by nginx's user) and pid files
#   run/nginx/    root:<nginx user> 0750: https.sock, the HTTPS server behind nginx's stream server
#                 (PROXY protocol: only nginx may connect, or anyone could claim an address)
#   log/          sbxd.log, pool.log, health.log, nginx-error.log, access.log, and nginx's refusal
#                 counters nginx-429-rate.log, nginx-429-conn.log, nginx-refused-conn.log (one
#                 2-byte line per refusal: GET /v1/metrics counts them by size)
#   nginx/        rendered nginx.conf + sbx-site.conf, nginx temp files

# Defaults of the knobs (environment overrides them).
: "${SBX_WORKERS:=8}"        # FastCGI workers (each serves one request at a time)
: "${SBX_HEALTH_WORKERS:=2}" # workers of the health pool (GET /v1/health only)
: "${SBX_SLOTS:=8}"          # broker slots (runs at once)
: "${SBX_CONTEXTS:=}"        # contexts (persistent interpreters) at once, machine-wide; their
                             # host uids follow the slots' and the background slots'
                             # (sbxd --background-runs, default SBX_SLOTS/2):
                             # SBX_UID_BASE + SBX_SLOTS + SBX_SLOTS/2 + i.
                             # Empty: the config's contexts.machine (stack_init), so the broker
                             # and the workers agree on one number
: "${SBX_CONTEXTS_MEMORY_MB:=}" # every context's memory together (one cgroup limit); empty:
                             # the config's contexts.total_memory_mb
: "${SBX_RATE:=10r/s}"       # per-client request rate (nginx limit_req)
: "${SBX_BURST:=20}"         # per-client burst above the rate
: "${SBX_CONN:=}"            # per-client requests in flight (nginx limit_conn); empty: half
                             # the workers (at least 1), so one client never holds the whole pool
: "${SBX_ANON_RATE:=10r/s}"  # requests without a valid token, per address (health, the ping, ...)
: "${SBX_ANON_BURST:=20}"    # their burst above that rate
: "${SBX_ANON_CONN:=16}"     # and in flight per address
: "${SBX_ADDR_CONN:=128}"    # TCP connections open at once per client address (nginx stream
                             # limit_conn, before TLS or a header is read: slow-header floods)
: "${SBX_HEADER_TIMEOUT:=5s}" # a connection's whole request header must arrive within this
: "${SBX_NGINX_CONNECTIONS:=4096}" # nginx worker_connections (per nginx worker process)
: "${SBX_BODY_MAX:=10m}"     # JSON bodies (keep >= max_body_bytes of fcgi/sbx.conf.json)
: "${SBX_UPLOAD_MAX:=100m}"  # raw file uploads (the session quota)
: "${SBX_UID_BASE:=200000}"  # slot i runs as host uid SBX_UID_BASE + i
: "${SBX_CGROUP:=sbx}"       # the broker's cgroup subtree
: "${SBX_SESSIONS_IMG_SIZE:=8G}" # sparse btrfs image behind sessions/ (0: plain directories)

stack_say() { printf '%s\n' "$*" >&2; }

stack_fnv() { # stack_fnv STRING: its 64-bit FNV-1a in 16 hex digits (as fcgi/http/admit.c)
	local s=$1 h=1469598103934665603 i c
	for ((i = 0; i < ${#s}; i++)); do
		printf -v c '%d' "'${s:i:1}"
		h=$(((h ^ (c & 255)) * 1099511628211))
	done
	printf '%016x\n' "$h"
}

stack_metrics_file() { # the workers' shared counters of this state dir (fcgi/http/metrics.c)
	echo "/dev/shm/sbx-metrics-$(stack_fnv "$SBX_STATE")"
}

stack_init() { # stack_init REPO STATE_DIR: set the paths every other function uses
	SBX_REPO=$(cd "$1" && pwd) || return 1
	mkdir -p "$2" || return 1
	SBX_STATE=$(cd "$2" && pwd) || return 1
	SBX_RUN=$SBX_STATE/run
	SBX_LOG=$SBX_STATE/log
	SBX_NGX=$SBX_STATE/nginx
	SBX_TLS=$SBX_STATE/tls
	SBX_TOKENS=$SBX_STATE/tokens.conf
	SBX_FCGI_SOCK=$SBX_RUN/fcgi.sock
	SBX_HEALTH_SOCK=$SBX_RUN/health.sock
	SBX_HTTPS_SOCK=$SBX_RUN/nginx/https.sock
	SBX_BROKER_SOCK=$SBX_RUN/sbxd.sock
	SBX_NGINX_PID=$SBX_RUN/nginx.pid
	SBX_BIN=${SBX_BIN:-$SBX_REPO/build}
	stack_pids=()
	# the broker's context caps come from the same config as the workers' (one source)
	local caps c m
	caps=$(stack_conf_get "${SBX_CONFIG:-$SBX_REPO/fcgi/sbx.conf.json}" \
		contexts.machine=16 contexts.total_memory_mb=2048) || return 1
	read -r c m <<<"$caps"
	: "${SBX_CONTEXTS:=$c}" "${SBX_CONTEXTS_MEMORY_MB:=$m}"
}

stack_conf_get() { # stack_conf_get CONFIG KEY=DEFAULT...: the values (whole numbers) on one line
	/usr/bin/python3 - "$@" <<'PY'
import json, sys
try:
    conf = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    conf = {}
out = []
for kv in sys.argv[2:]:
    key, _, default = kv.partition("=")
    v = conf
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if v is None:
        v = int(default)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        sys.exit(f"{sys.argv[1]}: {key} must be a whole number, not {v!r}")
    out.append(str(v))
print(" ".join(out))
PY
}

stack_nginx_user() { # the unprivileged user nginx's workers run as
	if id -u www-data >/dev/null 2>&1; then echo www-data; else echo sbx-web; fi
}

stack_users() { # create the service users when missing (idempotent)
	id -u sbx >/dev/null 2>&1 ||
		useradd --system --no-create-home --shell /usr/sbin/nologin sbx || return 1
	SBX_NGINX_USER=$(stack_nginx_user)
	id -u "$SBX_NGINX_USER" >/dev/null 2>&1 ||
		useradd --system --no-create-home --shell /usr/sbin/nologin "$SBX_NGINX_USER" || return 1
	SBX_UID=$(id -u sbx) SBX_GID=$(id -g sbx)
}

stack_dirs() { # the state directory's layout and ownership (idempotent)
	(
		set -e
		umask 022
		chown root:root "$SBX_STATE"
		chmod 0755 "$SBX_STATE"
		mkdir -p "$SBX_RUN" "$SBX_LOG" "$SBX_NGX/tmp" "$SBX_TLS" "$SBX_RUN/nginx"
		chmod 0755 "$SBX_RUN" "$SBX_LOG" "$SBX_NGX"
		chown "root:$(id -g "${SBX_NGINX_USER:-$(stack_nginx_user)}")" "$SBX_RUN/nginx"
		chmod 0750 "$SBX_RUN/nginx"
		chmod 0700 "$SBX_TLS"
		# The operator's package directory (the allow-list, root's, read by the workers).
		mkdir -p "$SBX_STATE/packages/python" "$SBX_STATE/packages/node"
		chmod 0755 "$SBX_STATE/packages" "$SBX_STATE/packages/python" \
			"$SBX_STATE/packages/node"
		for d in sessions scratch ccache idempotency layers mcp-calls; do
			mkdir -p "$SBX_STATE/$d"
			chown sbx:sbx "$SBX_STATE/$d"
			chmod 0700 "$SBX_STATE/$d"
		done
		if [ ! -f "$SBX_TOKENS" ]; then
			(umask 077 && : >"$SBX_TOKENS")
		fi
		chown root:root "$SBX_TOKENS"
		chmod 0600 "$SBX_TOKENS"
	)
}

stack_fstype() { stat -f -c %T "$1" 2>/dev/null; }

# The mount options of the sessions image: runs' files never setuid or devices; the unprivileged
# workers may destroy the subvolumes they made (a whole session in one call).
SBX_VOLUME_OPTS=loop,user_subvol_rm_allowed,noatime,nosuid,nodev

stack_volume_up() { # sessions/ and scratch/ on btrfs with quotas enabled, so a session's quota
	# holds inside runs (ext4/XFS project quotas need CONFIG_QUOTA). Uses the state dir's own
	# btrfs if it is one, else loop-mounts $SBX_STATE/sessions.img (made sparse, once, of
	# SBX_SESSIONS_IMG_SIZE) at sessions/. Idempotent: an image mounted by an earlier start is
	# reused. Never fails: without btrfs it says so and keeps plain directories, where only the
	# file API holds the quota. Sets SBX_VOLUME to btrfs, image or plain.
	local ses=$SBX_STATE/sessions scr=$SBX_STATE/scratch img=$SBX_STATE/sessions.img why
	SBX_VOLUME=plain
	if [ "$(stack_fstype "$ses")" = btrfs ]; then
		if mountpoint -q "$ses" && [ -f "$img" ] &&
			losetup -j "$img" -n -O NAME 2>/dev/null | grep -qxF "$(findmnt -n -o SOURCE "$ses")"; then
			SBX_VOLUME=image
		else
			SBX_VOLUME=btrfs
		fi
	elif [ "$SBX_SESSIONS_IMG_SIZE" = 0 ]; then
		why="SBX_SESSIONS_IMG_SIZE=0"
	elif ! why=$(_stack_volume_mount "$img" "$ses" 2>&1); then
		:
	else
		SBX_VOLUME=image
	fi
	if [ "$SBX_VOLUME" != plain ]; then
		# Quotas must be on before the first session, or setting its limit fails (fail closed).
		why=$(btrfs quota enable "$ses" 2>&1) || SBX_VOLUME=plain
	fi
	[ "$SBX_VOLUME" != plain ] && _stack_reserve_group "$ses"
	if [ "$SBX_VOLUME" = image ] && [ "$(stack_fstype "$scr")" != btrfs ]; then
		# Stateless runs' scratch dirs on the same file system: subvolumes with the quota too,
		# and never more than the image on the host's disk.
		mkdir -p "$ses/.scratch" && chown sbx:sbx "$ses/.scratch" && chmod 0700 "$ses/.scratch" &&
			mount --bind "$ses/.scratch" "$scr" ||
			stack_say "warning: scratch/ stays a plain directory (bind mount failed)"
	fi
	chown sbx:sbx "$ses" "$scr" && chmod 0700 "$ses" "$scr"
	case $SBX_VOLUME in
	plain) stack_say "sessions: plain directory ($why); disk quotas are held by the file API only, not inside runs" ;;
	image) stack_say "sessions: btrfs image $img mounted at $ses (quotas hold inside runs)" ;;
	btrfs) stack_say "sessions: on btrfs at $ses (quotas hold inside runs)" ;;
	esac
	return 0
}

_stack_reserve_group() { # _stack_reserve_group DIR: every subvolume already on the volume joins
	# the broker's reserve group (qgroup 1/4242, sandbox/quota.c), then one rescan makes the
	# accounting exact again. New sessions and forks join it as they are made; these are the ones
	# made before the reserve existed (an older image). Nothing to do with the reserve off.
	local ses=$1 members id n=0
	[ "${SBX_BROKER_RESERVE_MB:-auto}" = 0 ] && return 0
	btrfs qgroup create 1/4242 "$ses" >/dev/null 2>&1 # already there: fine
	members=$(btrfs qgroup show -c --raw "$ses" 2>/dev/null | awk '$1 == "1/4242" { print $NF }')
	for id in $(btrfs subvolume list "$ses" 2>/dev/null | awk '{ print $2 }'); do
		case ",$members," in *",0/$id,"*) continue ;; esac
		btrfs qgroup assign --no-rescan "0/$id" 1/4242 "$ses" >/dev/null 2>&1 && n=$((n + 1))
	done
	if [ "$n" -gt 0 ]; then
		stack_say "sessions: $n earlier subvolume(s) joined the disk reserve's group; rescanning quotas"
		btrfs quota rescan -w "$ses" >/dev/null 2>&1 ||
			stack_say "warning: btrfs quota rescan failed: per-session limits may be off until one runs"
	fi
	return 0
}

_stack_volume_mount() { # _stack_volume_mount IMG DIR: make IMG if missing, mount it at DIR; the
	# reason on stderr when it cannot
	local img=$1 dir=$2 dev tmp c
	for c in mkfs.btrfs btrfs losetup mountpoint findmnt; do
		command -v "$c" >/dev/null || { echo "$c is not installed"; return 1; }
	done
	grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
		{ echo "the kernel has no btrfs"; return 1; }
	[ -e /dev/loop-control ] || { echo "no loop devices (/dev/loop-control)"; return 1; }
	# A loop device of this image left attached without a mount (a crash mid-start) would make
	# the kernel see the same file system twice.
	for dev in $(losetup -j "$img" -n -O NAME 2>/dev/null); do
		findmnt -n -S "$dev" >/dev/null || losetup -d "$dev" 2>/dev/null
	done
	if [ ! -f "$img" ]; then
		tmp=$img.new
		rm -f "$tmp"
		(umask 077 && truncate -s "$SBX_SESSIONS_IMG_SIZE" "$tmp") &&
			mkfs.btrfs -q "$tmp" >/dev/null 2>&1 && mv "$tmp" "$img" ||
			{ rm -f "$tmp"; echo "cannot make a btrfs image of $SBX_SESSIONS_IMG_SIZE at $img"; return 1; }
	fi
	chown root:root "$img" && chmod 0600 "$img"
	if [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
		# Sessions of an earlier start on a plain directory would be hidden under the mount:
		# moved in (their files/ stay plain directories: quota by the file API only).
		tmp=$SBX_STATE/.sessions-move
		mkdir -p "$tmp" && mount -t btrfs -o "$SBX_VOLUME_OPTS" "$img" "$tmp" ||
			{ echo "cannot mount $img"; return 1; }
		if cp -a -n "$dir/." "$tmp/"; then
			find "$dir" -mindepth 1 -delete
		fi
		umount "$tmp"
		rmdir "$tmp"
		[ -z "$(ls -A "$dir" 2>/dev/null)" ] || { echo "cannot move the old sessions into $img"; return 1; }
	fi
	mount -t btrfs -o "$SBX_VOLUME_OPTS" "$img" "$dir" 2>&1 || { echo "cannot mount $img"; return 1; }
}

stack_volume_down() { # undo stack_volume_up's mounts; the image (and every session) stays for the
	# next start. A busy mount is detached lazily (the loop device goes with its last user).
	local m
	[ "${SBX_VOLUME:-}" = image ] || return 0
	for m in "$SBX_STATE/scratch" "$SBX_STATE/sessions"; do
		mountpoint -q "$m" || continue
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			stack_say "warning: cannot unmount $m"
	done
	SBX_VOLUME=
}

stack_cert() { # a self-signed certificate for 127.0.0.1 and localhost, made once
	[ -s "$SBX_TLS/cert.pem" ] && [ -s "$SBX_TLS/key.pem" ] && return 0
	(
		umask 077
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 \
			-subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
			-keyout "$SBX_TLS/key.pem.tmp" -out "$SBX_TLS/cert.pem.tmp" 2>/dev/null &&
			mv "$SBX_TLS/key.pem.tmp" "$SBX_TLS/key.pem" &&
			mv "$SBX_TLS/cert.pem.tmp" "$SBX_TLS/cert.pem"
	) || { stack_say "error: openssl could not make a certificate"; return 1; }
	chmod 0600 "$SBX_TLS/key.pem"
	chmod 0644 "$SBX_TLS/cert.pem"
}

stack_valid_name() { # client names: what can be logged and put in REMOTE_USER without quoting
	[[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ ]]
}

stack_tokens_edit() { # stack_tokens_edit FILTER-CMD...: rewrite tokens.conf through a filter,
	# atomically (rename) and under a lock, keeping it root 0600.
	local tmp rc
	tmp=$(umask 077 && mktemp "$SBX_TOKENS.XXXXXX") || return 1
	(
		flock 9
		"$@" <"$SBX_TOKENS" >"$tmp" && chmod 0600 "$tmp" && mv -f "$tmp" "$SBX_TOKENS"
	) 9>>"$SBX_STATE/.tokens.lock"
	rc=$?
	rm -f "$tmp"
	return $rc
}

stack_token_new() { # stack_token_new NAME: add a fresh token for NAME, print it
	local name=$1 token
	stack_valid_name "$name" || { stack_say "error: client names are 1-64 of [A-Za-z0-9_.-]"; return 2; }
	# 32 random bytes, hex: map keys compare case-insensitively, so no base64.
	token=sbx_$(head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n')
	[ ${#token} -eq 68 ] || { stack_say "error: could not read /dev/urandom"; return 1; }
	_stack_append() { cat; printf '"Bearer %s" %s;\n' "$token" "$name"; }
	stack_tokens_edit _stack_append || return 1
	printf '%s\n' "$token"
}

stack_piston_key_new() { # stack_piston_key_new NAME: a new Piston URL key for NAME, print it
	local name=$1 key
	stack_valid_name "$name" || { stack_say "error: client names are 1-64 of [A-Za-z0-9_.-]"; return 2; }
	key=sbx_pk_$(head -c 24 /dev/urandom | od -An -v -tx1 | tr -d ' \n')
	[ ${#key} -eq 55 ] || { stack_say "error: could not read /dev/urandom"; return 1; }
	_stack_append() { cat; printf '"Piston %s" %s;\n' "$key" "$name"; }
	stack_tokens_edit _stack_append || return 1
	printf '%s\n' "$key"
}

stack_token_revoke() { # stack_token_revoke NAME: remove every token of NAME; fails if none
	local name=$1
	stack_valid_name "$name" || { stack_say "error: client names are 1-64 of [A-Za-z0-9_.-]"; return 2; }
	grep -q "\" $name;\$" "$SBX_TOKENS" || { stack_say "no token for client $name"; return 1; }
	_stack_drop() { grep -v "\" $name;\$" || true; }
	stack_tokens_edit _stack_drop
}

stack_token_of() { # stack_token_of NAME: print NAME's first token, or nothing
	sed -n "s/^\"Bearer \\([^\"]*\\)\" $1;\$/\\1/p" "$SBX_TOKENS" | head -n 1
}

stack_clients() { # the client names that hold a token
	sed -n 's/^"Bearer [^"]*" \(.*\);$/\1/p' "$SBX_TOKENS" | sort -u
}

# Replacement text for sed: escape \ & and the delimiter |.
_stack_sed_val() { printf '%s' "$1" | sed -e 's/[\\&|]/\\&/g'; }

stack_bytes() { # stack_bytes SIZE: nginx's size syntax (10m, 256k, 1g, 4096) in bytes
	local n=${1%[kKmMgG]}
	case "$1" in
	*[kK]) echo $((n * 1024)) ;; *[mM]) echo $((n * 1048576)) ;; *[gG]) echo $((n * 1073741824)) ;;
	*) echo "$n" ;;
	esac
}

stack_cors_map() { # stack_cors_map CONFIG: the entries of nginx's CORS origin map (one line)
	# from the config's cors.origins; nothing when it is absent or empty. Fails on a value that
	# is not an origin (scheme://host[:port], lower case, as browsers send it).
	/usr/bin/python3 - "$1" <<'PY'
import json, re, sys
try:
    conf = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    conf = {}
origins = (conf.get("cors") or {}).get("origins") or []
for o in origins:
    if not isinstance(o, str) or not re.fullmatch(r"https?://[a-z0-9.-]+(:[0-9]{1,5})?", o):
        sys.exit(f"cors.origins: {o!r} is not an origin (scheme://host[:port], lower case)")
print(" ".join(f'"{o}" "{o}";' for o in origins))
PY
}

stack_render() { # stack_render TEMPLATE MODE(dev|prod) VAR=VALUE...: print the template filled in
	# (a size VAR ending in _MAX also fills @VAR_BYTES@ with its value in bytes; @CORS_ORIGINS@,
	# unless given, comes from the cors.origins of $SBX_CONFIG or the checkout's config)
	local template=$1 mode=$2 args=() kv cors
	shift 2
	case " $* " in
	*" CORS_ORIGINS="*) ;;
	*) cors=$(stack_cors_map "${SBX_CONFIG:-$SBX_REPO/fcgi/sbx.conf.json}") || return 1
		set -- "$@" CORS_ORIGINS="$cors" ;;
	esac
	for kv in "$@"; do
		args+=(-e "s|@${kv%%=*}@|$(_stack_sed_val "${kv#*=}")|g")
		case "${kv%%=*}" in
		*_MAX) args+=(-e "s|@${kv%%=*}_BYTES@|$(stack_bytes "${kv#*=}")|g") ;;
		esac
	done
	if [ "$mode" = prod ]; then args+=(-e 's/^#@prod //'); else args+=(-e '/^#@prod /d'); fi
	sed "${args[@]}" "$template" || return 1
}

stack_conn() { # the per-client in-flight limit: SBX_CONN, or half the workers (at least 1)
	local c=${SBX_CONN:-$((SBX_WORKERS / 2))}
	[ "$c" -ge 1 ] 2>/dev/null || c=1
	echo "$c"
}

stack_stream_module() { # the load_module line of nginx's stream module ("" when built in);
	# fails (and says so) when this nginx has none: the per-address connection cap needs it
	local v m
	v=$(nginx -V 2>&1)
	case " $v " in *" --with-stream "*) return 0 ;; esac
	for m in /usr/lib/nginx/modules/ngx_stream_module.so /usr/share/nginx/modules/ngx_stream_module.so; do
		[ -f "$m" ] && { echo "load_module $m;"; return 0; }
	done
	stack_say "error: nginx has no stream module (Debian: libnginx-mod-stream; 'make deps' installs it)"
	return 1
}

stack_render_main() { # nginx.conf of this state directory: the stream server on the public
	# address (per-address connection cap), the site's HTTPS server behind it on a Unix socket
	local listen=${SBX_LISTEN:-127.0.0.1}:$SBX_PORT module
	module=$(stack_stream_module) || return 1
	stack_render "$SBX_REPO/nginx/nginx.conf.in" dev \
		NGINX_USER="$SBX_NGINX_USER" PID_FILE="$SBX_NGINX_PID" PREFIX="$SBX_NGX" \
		ERROR_LOG="$SBX_LOG/nginx-error.log" WORKER_CONNECTIONS="$SBX_NGINX_CONNECTIONS" \
		NOFILE="$((SBX_NGINX_CONNECTIONS * 2 + 64))" STREAM_MODULE="$module" \
		LISTEN="$listen" ADDR_CONN="$SBX_ADDR_CONN" HTTPS_SOCK="$SBX_HTTPS_SOCK" \
		COUNTER_DIR="$SBX_LOG" >"$SBX_NGX/nginx.conf"
}

stack_render_nginx() { # render this state directory's nginx.conf and site file for PORT/LISTEN
	local listen="unix:$SBX_HTTPS_SOCK proxy_protocol"
	stack_render "$SBX_REPO/nginx/sbx-site.conf.in" dev \
		TOKENS="$SBX_TOKENS" RATE="$SBX_RATE" LISTEN="$listen" PORT="$SBX_PORT" \
		SERVER_NAME=localhost CERT="$SBX_TLS/cert.pem" KEY="$SBX_TLS/key.pem" \
		ACCESS_LOG="$SBX_LOG/access.log" WWW="$SBX_REPO/www" BODY_MAX="$SBX_BODY_MAX" \
		UPLOAD_MAX="$SBX_UPLOAD_MAX" BURST="$SBX_BURST" CONN="$(stack_conn)" \
		ANON_RATE="$SBX_ANON_RATE" ANON_BURST="$SBX_ANON_BURST" ANON_CONN="$SBX_ANON_CONN" \
		HEADER_TIMEOUT="$SBX_HEADER_TIMEOUT" COUNTER_DIR="$SBX_LOG" \
		FCGI_SOCK="$SBX_FCGI_SOCK" HEALTH_SOCK="$SBX_HEALTH_SOCK" NGINX_DIR="$SBX_REPO/nginx" \
		>"$SBX_NGX/sbx-site.conf" && stack_render_main
}

# ---- several hosts behind one nginx (nginx/sbx-cluster.conf.in) ----

stack_valid_shard() { # shard names: what fcgi/config.c accepts and the id regex of the site matches
	[[ "$1" =~ ^[a-z0-9]{1,16}$ ]]
}

stack_cluster_hosts() { # stack_cluster_hosts SEED MAX_FAILS FAIL_TIMEOUT SHARD=ADDR[,HEALTH]...:
	# print the upstreams and shard maps that replace the "#@hosts" line of sbx-cluster.conf.in.
	# ADDR is HOST:PORT of a host's FastCGI pool (or unix:/path); HEALTH, when given, that of its
	# health pool (GET /v1/health goes there; without it, to the pool). SEED is the shard that
	# holds the sessions of ids without a shard prefix (the seed routes' client-chosen ids).
	local seed=$1 fails=$2 timeout=$3 kv shard addr haddr a seen=" " found=0
	local -A pool=() health=()
	local order=()
	shift 3
	[ $# -gt 0 ] || { stack_say "error: no hosts (SHARD=ADDR...)"; return 2; }
	for kv in "$@"; do
		shard=${kv%%=*} addr=${kv#*=}
		[ "$kv" != "$shard" ] && [ -n "$addr" ] && stack_valid_shard "$shard" ||
			{ stack_say "error: '$kv' is not SHARD=ADDR with SHARD 1-16 of [a-z0-9]"; return 2; }
		haddr=${addr#*,} addr=${addr%%,*}
		[ "$haddr" = "$addr" ] || [ -n "$haddr" ] || haddr=$addr
		for a in "$addr" "$haddr"; do
			[[ "$a" =~ ^[][A-Za-z0-9.:/_-]+$ ]] ||
				{ stack_say "error: '$a' (in '$kv') is not HOST:PORT or unix:/path"; return 2; }
		done
		case $seen in *" $shard "*) stack_say "error: shard $shard given twice"; return 2 ;; esac
		seen="$seen$shard "
		[ "$shard" = "$seed" ] && found=1
		pool[$shard]=$addr health[$shard]=$haddr
		order+=("$shard")
	done
	[ "$found" -eq 1 ] || { stack_say "error: the seed shard '$seed' is not one of the hosts"; return 2; }
	printf '# ---- generated from the hosts:%s(seed: %s) ----\n' "$seen" "$seed"
	printf '# Every host: stateless routes and new sessions, least_conn. Passive health: a host that\n'
	printf '# fails max_fails times within fail_timeout is skipped for fail_timeout, then tried again.\n'
	printf 'upstream sbx_all {\n\tleast_conn;\n'
	for shard in "${order[@]}"; do
		printf '\tserver %s max_fails=%s fail_timeout=%s;\n' "${pool[$shard]}" "$fails" "$timeout"
	done
	printf '}\n'
	printf '# One host each: the sessions it holds (a lone server is never marked down: always tried).\n'
	for shard in "${order[@]}"; do
		printf 'upstream sbx_host_%s {\n\tserver %s;\n}\n' "$shard" "${pool[$shard]}"
	done
	printf '# GET /v1/health: every host'"'"'s health pool (its pool when it has none), and one each.\n'
	printf 'upstream sbx_health_all {\n'
	for shard in "${order[@]}"; do
		printf '\tserver %s max_fails=%s fail_timeout=%s;\n' "${health[$shard]}" "$fails" "$timeout"
	done
	printf '}\n'
	for shard in "${order[@]}"; do
		printf 'upstream sbx_health_%s {\n\tserver %s;\n}\n' "$shard" "${health[$shard]}"
	done
	printf '# The shard of a session id -> its host; no (known) shard -> the seed host.\n'
	printf 'map $sbx_id_shard $sbx_session_host {\n\tdefault sbx_host_%s;\n' "$seed"
	for shard in "${order[@]}"; do printf '\t%s sbx_host_%s;\n' "$shard" "$shard"; done
	printf '}\n'
	printf '# ?shard=NAME -> that host (GET /v1/sessions) or its health pool (GET /v1/health); ""\n'
	printf '# when absent or unknown.\n'
	printf 'map $arg_shard $sbx_named_host {\n\tdefault "";\n'
	for shard in "${order[@]}"; do printf '\t%s sbx_host_%s;\n' "$shard" "$shard"; done
	printf '}\n'
	printf 'map $arg_shard $sbx_named_health {\n\tdefault "";\n'
	for shard in "${order[@]}"; do printf '\t%s sbx_health_%s;\n' "$shard" "$shard"; done
	printf '}\n'
	printf '# /mcp bounced by a host (X-Sbx-Shard): the host named; unknown -> the seed host.\n'
	printf 'map $sbx_mcp_shard $sbx_mcp_host {\n\tdefault sbx_host_%s;\n' "$seed"
	for shard in "${order[@]}"; do printf '\t%s sbx_host_%s;\n' "$shard" "$shard"; done
	printf '}\n'
	printf '# The seed routes (session id in the body): the seed host.\n'
	printf 'map $sbx_client $sbx_seed_host {\n\tdefault sbx_host_%s;\n}\n' "$seed"
}

stack_render_cluster() { # stack_render_cluster MODE SEED MAX_FAILS FAIL_TIMEOUT SHARD=ADDR... --
	# VAR=VALUE...: print nginx/sbx-cluster.conf.in filled in (the hosts at "#@hosts")
	local mode=$1 seed=$2 fails=$3 timeout=$4 hosts=() blocks
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do hosts+=("$1"); shift; done
	[ "${1:-}" = -- ] && shift
	blocks=$(stack_cluster_hosts "$seed" "$fails" "$timeout" "${hosts[@]}") || return 2
	stack_render "$SBX_REPO/nginx/sbx-cluster.conf.in" "$mode" "$@" |
		HOSTS_BLOCK=$blocks awk '$0 == "#@hosts" { print ENVIRON["HOSTS_BLOCK"]; next } { print }'
}

stack_render_cluster_nginx() { # as stack_render_nginx, for the hosts in SBX_CLUSTER_HOSTS
	# (SHARD=ADDR words; the first is the seed unless SBX_CLUSTER_SEED says otherwise)
	local listen="unix:$SBX_HTTPS_SOCK proxy_protocol" hosts
	read -r -a hosts <<<"$SBX_CLUSTER_HOSTS"
	stack_render_cluster dev "${SBX_CLUSTER_SEED:-${hosts[0]%%=*}}" "${SBX_MAX_FAILS:-1}" \
		"${SBX_FAIL_TIMEOUT:-10s}" "${hosts[@]}" -- \
		TOKENS="$SBX_TOKENS" RATE="$SBX_RATE" LISTEN="$listen" PORT="$SBX_PORT" \
		SERVER_NAME=localhost CERT="$SBX_TLS/cert.pem" KEY="$SBX_TLS/key.pem" \
		ACCESS_LOG="$SBX_LOG/access.log" WWW="$SBX_REPO/www" BODY_MAX="$SBX_BODY_MAX" \
		UPLOAD_MAX="$SBX_UPLOAD_MAX" BURST="$SBX_BURST" CONN="${SBX_CONN:-8}" \
		ANON_RATE="$SBX_ANON_RATE" ANON_BURST="$SBX_ANON_BURST" ANON_CONN="$SBX_ANON_CONN" \
		HEADER_TIMEOUT="$SBX_HEADER_TIMEOUT" COUNTER_DIR="$SBX_LOG" \
		NGINX_DIR="$SBX_REPO/nginx" >"$SBX_NGX/sbx-site.conf" && stack_render_main
}

stack_nginx() { # stack_nginx ARGS...: this stack's nginx binary with its prefix and config
	nginx -p "$SBX_NGX/" -c "$SBX_NGX/nginx.conf" -e "$SBX_LOG/nginx-error.log" "$@"
}

stack_nginx_running_pid() { # print the pid of this state dir's running nginx master, if any
	local pid
	[ -s "$SBX_NGINX_PID" ] || return 1
	pid=$(cat "$SBX_NGINX_PID" 2>/dev/null) || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
		grep -q "nginx" "/proc/$pid/cmdline" 2>/dev/null || return 1
	echo "$pid"
}

stack_reload() { # make nginx re-read tokens (graceful: open connections are kept); no-op if down.
	# With SBX_RELOAD set (production: "systemctl reload nginx"), that command does it instead.
	local pid old
	if [ -n "${SBX_RELOAD:-}" ]; then
		sh -c "$SBX_RELOAD" || { stack_say "error: '$SBX_RELOAD' failed"; return 1; }
		return 0
	fi
	pid=$(stack_nginx_running_pid) || return 0
	stack_nginx -t -q >/dev/null 2>&1 || {
		stack_nginx -t >&2
		stack_say "error: nginx config test failed; not reloaded"
		return 1
	}
	old=$(pgrep -P "$pid")
	kill -HUP "$pid"
	# Return once every old worker has stopped accepting (it is gone, or finishing its requests
	# as "shutting down"): from then on, every new request sees the new tokens.
	local end=$((SECONDS + 10)) w busy
	while [ "$SECONDS" -lt "$end" ]; do
		busy=0
		for w in $old; do
			if [ "$(ps -o ppid= -p "$w" 2>/dev/null | tr -d ' ')" = "$pid" ] &&
				! grep -q 'shutting down' "/proc/$w/cmdline" 2>/dev/null; then
				busy=1
			fi
		done
		[ "$busy" -eq 0 ] && return 0
		sleep 0.05
	done
	stack_say "warning: nginx's old workers still accept after 10 s"
	return 0
}

stack_start() { # stack_start NAME LOGFILE CMD...: start one supervised part in its own session
	local name=$1 log=$2
	shift 2
	printf '%s start %s\n' "$(date -u +%FT%TZ)" "$name" >>"$log"
	# Every signal back to its default: a shell without job control starts background commands
	# with SIGINT and SIGQUIT ignored, and the parts must not inherit that.
	setsid env --default-signal "$@" </dev/null >>"$log" 2>&1 &
	stack_pids+=("$!")
	eval "SBX_PID_$name=$!"
	echo "$!" >"$SBX_RUN/$name.pid"
}

stack_env() { # the clean environment the pool and the broker get
	local e
	echo PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	for e in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS SBX_DEBUG SBX_WARM SBX_ZYGOTE; do
		[ -n "${!e:-}" ] && echo "$e=${!e}"
	done
}

stack_pool_env() { # the environment of the FastCGI workers (both pools)
	stack_env
	echo "SBX_STATE_DIR=$SBX_STATE"
	echo "SBX_BROKER_SOCKET=$SBX_BROKER_SOCK"
	echo "SBX_CONFIG=${SBX_CONFIG:-$SBX_REPO/fcgi/sbx.conf.json}"
	# The main pool's size: admission never lets more runs in than there are workers (a run
	# holds one: fcgi/http/admit.c); health reports saturation against it.
	echo "SBX_POOL_WORKERS=$SBX_WORKERS"
}

stack_start_broker() {
	local binds=() envs
	[ -d "$SBX_REPO/fcgi/evaluate/runner" ] && binds=(--bind-ro "$SBX_REPO/fcgi/evaluate/runner:/opt/sbx")
	# the contexts' kernel (sandbox/kernel/sbx_kernel.py), read-only inside every sandbox
	[ -d "$SBX_REPO/sandbox/kernel" ] && binds+=(--bind-ro "$SBX_REPO/sandbox/kernel:/opt/sbx-kernel")
	rm -f "$SBX_BROKER_SOCK"
	mapfile -t envs < <(stack_env)
	stack_start broker "$SBX_LOG/sbxd.log" env -i "${envs[@]}" "$SBX_BIN/sbxd" \
		--socket "$SBX_BROKER_SOCK" --slots "$SBX_SLOTS" --client-uid "$SBX_UID" \
		--files-uid "$SBX_UID" --files-gid "$SBX_GID" --uid-base "$SBX_UID_BASE" \
		--cgroup-name "$SBX_CGROUP" --disk-reserve-mb "${SBX_BROKER_RESERVE_MB:-auto}" \
		--contexts "$SBX_CONTEXTS" --contexts-memory-mb "$SBX_CONTEXTS_MEMORY_MB" "${binds[@]}"
}

stack_start_pool() {
	local envs bind
	rm -f "$SBX_FCGI_SOCK"
	mapfile -t envs < <(stack_pool_env)
	# One host of several (nginx/sbx-cluster.conf.in): its shard name prefixes its session ids.
	[ -n "${SBX_SHARD:-}" ] && envs+=("SBX_SHARD=$SBX_SHARD")
	if [ -n "${SBX_FCGI_ADDR:-}" ]; then
		# A host behind a front nginx on another machine listens on TCP (ADDR:PORT). FastCGI
		# has no authentication and the workers trust REMOTE_USER, so libfcgi closes every
		# connection not from the front's address (FCGI_WEB_SERVER_ADDRS, comma-separated).
		bind=(-a "$(stack_addr_host "$SBX_FCGI_ADDR")" -p "${SBX_FCGI_ADDR##*:}")
		envs+=("FCGI_WEB_SERVER_ADDRS=${SBX_FCGI_FRONT:-127.0.0.1}")
	else
		bind=(-s "$SBX_FCGI_SOCK" -M 0660 -U "$SBX_NGINX_USER" -G "$SBX_NGINX_USER")
	fi
	# spawn-fcgi makes the socket (owned by nginx's user, so only nginx can connect), drops to
	# sbx and execs multiwatch (-n: no fork, so this pid is multiwatch), which keeps N workers
	# alive: a worker that dies is forked again; -r/-t stop a worker that cannot start at all.
	stack_start pool "$SBX_LOG/pool.log" env -i "${envs[@]}" spawn-fcgi -n "${bind[@]}" \
		-u sbx -g sbx -d "$SBX_STATE" -- \
		/usr/bin/multiwatch -f "$SBX_WORKERS" -r 25 -t 3000 -- "$SBX_BIN/sbx-fcgi"
}

stack_start_health() { # the health pool: GET /v1/health only, so a monitor's probe never waits
	# behind workers busy with runs (or queued for a slot). The same binary and config as the
	# pool; its answer also says whether the main pool listens (SBX_POOL_LISTEN). On a host
	# behind a front elsewhere it listens on TCP, SBX_FCGI_HEALTH_ADDR (as SBX_FCGI_ADDR).
	local envs bind
	rm -f "$SBX_HEALTH_SOCK"
	mapfile -t envs < <(stack_pool_env)
	envs+=("SBX_POOL_LISTEN=${SBX_FCGI_ADDR:-$SBX_FCGI_SOCK}")
	if [ -n "${SBX_FCGI_HEALTH_ADDR:-}" ]; then
		bind=(-a "$(stack_addr_host "$SBX_FCGI_HEALTH_ADDR")" -p "${SBX_FCGI_HEALTH_ADDR##*:}")
		envs+=("FCGI_WEB_SERVER_ADDRS=${SBX_FCGI_FRONT:-127.0.0.1}")
	else
		bind=(-s "$SBX_HEALTH_SOCK" -M 0660 -U "$SBX_NGINX_USER" -G "$SBX_NGINX_USER")
	fi
	stack_start health "$SBX_LOG/health.log" env -i "${envs[@]}" spawn-fcgi -n "${bind[@]}" \
		-u sbx -g sbx -d "$SBX_STATE" -- \
		/usr/bin/multiwatch -f "$SBX_HEALTH_WORKERS" -r 25 -t 3000 -- "$SBX_BIN/sbx-fcgi"
}

stack_start_service() { # the broker, then the pool, then the health pool, each waited for;
	# non-zero (and the part named) as soon as one does not come up. nginx is started apart.
	stack_start_broker
	stack_wait_for 15 "$SBX_PID_broker" "the broker (log: $SBX_LOG/sbxd.log)" \
		test -S "$SBX_BROKER_SOCK" || return 1
	stack_start_pool
	stack_wait_for 15 "$SBX_PID_pool" "the FastCGI pool (log: $SBX_LOG/pool.log)" \
		stack_pool_ready || return 1
	stack_start_health
	stack_wait_for 15 "$SBX_PID_health" "the health pool (log: $SBX_LOG/health.log)" \
		stack_health_ready
}

stack_addr_host() { # stack_addr_host ADDR:PORT: the address part ("[::1]:9000" -> "::1")
	local h=${1%:*}
	h=${h#[}
	printf '%s\n' "${h%]}"
}

stack_pool_ready() { # is the pool accepting: its socket, or its TCP port (SBX_FCGI_ADDR)?
	if [ -n "${SBX_FCGI_ADDR:-}" ]; then
		ss -Hltn "sport = :${SBX_FCGI_ADDR##*:}" 2>/dev/null | grep -q .
	else
		test -S "$SBX_FCGI_SOCK"
	fi
}

stack_health_ready() { # is the health pool accepting: its socket, or SBX_FCGI_HEALTH_ADDR's port?
	if [ -n "${SBX_FCGI_HEALTH_ADDR:-}" ]; then
		ss -Hltn "sport = :${SBX_FCGI_HEALTH_ADDR##*:}" 2>/dev/null | grep -q .
	else
		test -S "$SBX_HEALTH_SOCK"
	fi
}

stack_start_nginx() { # SBX_RENDER_NGINX names another render function (the cluster's)
	"${SBX_RENDER_NGINX:-stack_render_nginx}" || return 1
	# A socket left by an nginx that was killed would make the bind fail.
	stack_nginx_running_pid >/dev/null || rm -f "$SBX_HTTPS_SOCK"
	stack_nginx -t -q >>"$SBX_LOG/nginx-error.log" 2>&1 ||
		{ stack_say "error: nginx rejects the rendered config:"; stack_nginx -t >&2; return 1; }
	stack_start nginx "$SBX_LOG/nginx-error.log" nginx -p "$SBX_NGX/" -c "$SBX_NGX/nginx.conf" \
		-e "$SBX_LOG/nginx-error.log"
}

stack_alive() { kill -0 "$1" 2>/dev/null; }

stack_running() { # stack_running PID: alive and not a zombie (an orphan's zombie may wait a while
	# for PID 1 to reap it: it has ended all the same)
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

stack_wait_for() { # stack_wait_for SECONDS PID WHAT CMD...: poll CMD until it succeeds; fail
	# early if PID (the part being waited for) died
	local secs=$1 end=$((SECONDS + $1)) pid=$2 what=$3
	shift 3
	while :; do
		"$@" && return 0
		if [ -n "$pid" ] && ! stack_alive "$pid"; then
			stack_say "error: $what exited during start-up"
			return 1
		fi
		[ "$SECONDS" -lt "$end" ] || break
		sleep 0.1
	done
	stack_say "error: $what not ready after ${secs}s"
	return 1
}

stack_health_code() { # print the HTTP status of GET /v1/health
	curl -k -s -o /dev/null -w '%{http_code}' --max-time 5 \
		"https://127.0.0.1:$SBX_PORT/v1/health" 2>/dev/null
}

stack_healthy() { [ "$(stack_health_code)" = 200 ]; }

stack_group_live() { # stack_group_live PGID: does the group hold a process that is not a zombie?
	ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'
}

stack_kill_group() { # stack_kill_group PID SECONDS: TERM the leader PID, wait for its whole
	# process group to end, then KILL what is left of the group
	local pid=$1 secs=$2 i
	[ -n "$pid" ] || return 0
	# The leader only: each part stops its own children in order (multiwatch would respawn a
	# worker that got TERM from outside; nginx's master waits for its workers).
	kill -TERM "$pid" 2>/dev/null || kill -TERM -- "-$pid" 2>/dev/null
	for ((i = 0; i < secs * 10; i++)); do
		stack_group_live "$pid" || break
		sleep 0.1
	done
	if stack_group_live "$pid"; then
		stack_say "$pid did not stop in ${secs}s: SIGKILL"
		kill -KILL -- "-$pid" 2>/dev/null
		for ((i = 0; i < 20; i++)); do stack_group_live "$pid" || break; sleep 0.1; done
	fi
	{ wait "$pid"; } 2>/dev/null
	return 0
}

stack_stop() { # stop nginx (no new requests), then the pools, then the broker
	local name pid
	for name in nginx pool health broker; do
		pid=$(eval "echo \${SBX_PID_$name:-}")
		[ -n "$pid" ] || continue
		stack_kill_group "$pid" 5
		rm -f "$SBX_RUN/$name.pid"
		eval "SBX_PID_$name="
		[ "$name" = broker ] && stack_sweep_slots
	done
	rm -f "$SBX_FCGI_SOCK" "$SBX_HEALTH_SOCK" "$SBX_BROKER_SOCK"
}

stack_sweep_slots() { # once the broker is gone: kill what still runs under its slots' uids
	# (a broker that had to be killed cannot clean up its slots; the uids are this stack's own)
	local uid pids i
	# (slots, background slots: sbxd's default SBX_SLOTS/2, contexts)
	for ((uid = SBX_UID_BASE; uid < SBX_UID_BASE + SBX_SLOTS + SBX_SLOTS / 2 + SBX_CONTEXTS; uid++)); do
		pids=$(pgrep -U "$uid" 2>/dev/null | tr '\n' ' ')
		[ -n "$pids" ] || continue
		stack_say "leftover processes of slot uid $uid: $pids(killed)"
		kill -KILL $pids 2>/dev/null
		# gone, not just signalled: the caller may look for them next
		for ((i = 0; i < 50; i++)); do pgrep -U "$uid" >/dev/null 2>&1 || break; sleep 0.1; done
	done
}

stack_stale() { # report parts of an earlier stack on this state dir that are still running
	local name pid found=1
	for name in nginx pool health broker; do
		[ -s "$SBX_RUN/$name.pid" ] || continue
		pid=$(cat "$SBX_RUN/$name.pid")
		# Alive and still one of ours (not a recycled pid).
		if [[ "$pid" =~ ^[0-9]+$ ]] && stack_alive "$pid" &&
			tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE 'sbxd|multiwatch|nginx'; then
			stack_say "still running from an earlier start: $name (pid $pid)"
			found=0
		fi
	done
	return $found
}
