#!/usr/bin/env bash
# scaleout.t: several hosts behind one nginx (nginx/sbx-cluster.conf.in). Three "hosts" on this
# machine, each its own broker, FastCGI pool on a TCP port, state dir and shard name: new
# sessions spread over them and carry their host in the id; every later request on a session
# reaches that host only (its directory exists there and nowhere else); stateless runs spread
# too; the seed routes stay on the seed host; a FastCGI port talks only to the front's address;
# a stopped host's sessions answer 503 host_unavailable while every other session, new sessions
# and stateless runs keep working; restarted, its sessions are back intact. Teardown leaves no
# process, cgroup or directory behind.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
HARNESS_FAIL_TIMEOUT=3s harness_start_cluster h1 h2 h3

uuid='[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}'

put() { API_CONTENT_TYPE=application/octet-stream api PUT "/v1/sessions/$1/files/$2" "$3" >/dev/null; }

where() { # where ID [CLIENT-KEY]: the hosts whose state dir holds the session, space-separated
	local sh out=""
	for sh in $SBX_HOSTS; do
		[ -d "$(harness_host_state "$sh")/sessions/${2:-u-alice}/$1" ] && out="$out$sh "
	done
	echo "${out% }"
}

# ---- every host is up and reachable by name ----
for sh in $SBX_HOSTS; do
	api GET "/v1/health?shard=$sh" >/dev/null
	is "$api_status $(echo "$api_body" | json_get 'd["pool"]')" "200 listening" \
		"GET /v1/health?shard=$sh reaches host $sh's health pool, which sees its pool listening"
done

# ---- new sessions spread over the hosts; ids carry the host ----
ids=()
bad=""
for i in $(seq 1 12); do
	api POST /v1/sessions >/dev/null
	id=$(echo "$api_body" | json_get 'd["id"]')
	[ "$api_status" = 201 ] && [[ "$id" =~ ^(h1|h2|h3)-$uuid$ ]] || bad="$bad $api_status:$id"
	ids+=("$id")
done
is "$bad" "" "12 new sessions: 201, ids \"<shard>-<uuid>\""
declare -A count=()
for id in "${ids[@]}"; do count[${id%%-*}]=$((${count[${id%%-*}]:-0} + 1)); done
ok $([ "${count[h1]:-0}" -gt 0 ] && [ "${count[h2]:-0}" -gt 0 ] && [ "${count[h3]:-0}" -gt 0 ]; echo $?) \
	"least_conn spreads them over all three hosts (h1=${count[h1]:-0} h2=${count[h2]:-0} h3=${count[h3]:-0})"

bad=""
for id in "${ids[@]}"; do
	w=$(where "$id")
	[ "$w" = "${id%%-*}" ] || bad="$bad $id:[$w]"
done
is "$bad" "" "each session's directory is on the host its id names, and on no other"

# ---- file writes and reads reach the session's host ----
bad=""
for id in "${ids[@]}"; do
	put "$id" "dir/f.txt" "content of $id"
	[ "$api_status" = 201 ] || bad="$bad put:$api_status"
done
is "$bad" "" "PUT a file into each session through the front: 201"
bad=""
for id in "${ids[@]}"; do
	sh=${id%%-*}
	f=$(harness_host_state "$sh")/sessions/u-alice/$id/files/dir/f.txt
	[ "$(cat "$f" 2>/dev/null)" = "content of $id" ] || bad="$bad $id:disk"
	api GET "/v1/sessions/$id/files/dir/f.txt" >/dev/null
	[ "$api_status" = 200 ] && [ "$api_body" = "content of $id" ] || bad="$bad $id:get=$api_status"
done
is "$bad" "" "each file is on its session's host's disk and reads back through the front"

id=${ids[0]}
api POST "/v1/sessions/$id/run" '{"cmd":"cat dir/f.txt; printf \" and more\" >> dir/f.txt"}' >/dev/null
is "$(echo "$api_body" | json_get 'd["stdout"]')" "content of $id" \
	"a run in a session sees its files (on its host's broker)"
api GET "/v1/sessions/$id/files/dir/f.txt" >/dev/null
is "$api_body" "content of $id and more" "and what the run wrote is read back"

api POST "/v1/sessions/$id/fork" >/dev/null
fork=$(echo "$api_body" | json_get 'd["id"]')
is "$api_status:${fork%%-*}" "201:${id%%-*}" "a fork is made on the source's host and names it ($fork)"
is "$(where "$fork")" "${id%%-*}" "the fork's directory is on that host only"
api GET "/v1/sessions/$fork/files/dir/f.txt" >/dev/null
is "$api_status:$api_body" "200:content of $id and more" "the fork holds a copy of the files"

# Another client's sessions are routed the same way, and ownership still holds on each host.
api_as "$SBX_TOKEN2" POST /v1/sessions >/dev/null
bob=$(echo "$api_body" | json_get 'd["id"]')
is "$(where "$bob" u-bob)" "${bob%%-*}" "bob's session lives on the host its id names"
api GET "/v1/sessions/$bob" >/dev/null
is "$api_status" 404 "alice gets 404 for bob's session (on its host)"

# Raw uploads keep their own body limit (the quota), above the JSON one (10 MiB).
head -c $((11 << 20)) /dev/zero >"$SBX_HARNESS_DIR/big"
api PUT "/v1/sessions/${ids[1]}/files/big.bin" "@$SBX_HARNESS_DIR/big" >/dev/null
is "$api_status:$(stat -c %s "$(harness_host_state "${ids[1]%%-*}")/sessions/u-alice/${ids[1]}/files/big.bin" 2>/dev/null)" \
	"201:$((11 << 20))" "an 11 MiB upload reaches the session's host (upload limit, not the JSON one)"
rm -f "$SBX_HARNESS_DIR/big"

# ---- listing one host's sessions ----
want=$(for i in "${ids[@]}" "$fork"; do [ "${i%%-*}" = h2 ] && echo "$i"; done | sort)
api GET "/v1/sessions?shard=h2" >/dev/null
got=$(echo "$api_body" | json_get '"\n".join(sorted(s["id"] for s in d))')
is "$got" "$want" "GET /v1/sessions?shard=h2 lists exactly alice's sessions on h2"

# ---- ids nginx cannot route by shard ----
api GET "/v1/sessions/h9-${ids[0]#*-}" >/dev/null
is "$api_status" 404 "an id naming no known host is 404 (asked on the seed host)"

# ---- stateless routes spread over the hosts ----
bad=""
for i in $(seq 1 6); do
	api POST /v1/execute '{"language":"python","code":"print(6*7)"}' >/dev/null
	[ "$api_status" = 200 ] && [ "$(echo "$api_body" | json_get 'd["stdout"]')" = 42 ] ||
		bad="$bad $api_status"
done
is "$bad" "" "6 stateless runs: 200 with the right output"
n=$(grep 'path="/v1/execute" status=200' "$SBX_STATE_DIR/log/access.log" |
	sed -n 's/.* upstream=\(.*\)$/\1/p' | sort -u | wc -l)
ok $([ "$n" -ge 2 ]; echo $?) "they ran on more than one host ($n distinct upstreams in the access log)"

# ---- the seed routes: the session id is in the body, so the seed host (h1) holds them ----
api POST /write_file '{"id":"seed-abc","rel_path":"s.txt","content":"seeded"}' >/dev/null
is "$api_status" 200 "POST /write_file with a client-chosen id"
is "$(where seed-abc)" h1 "the seed session is on the seed host only"
api GET "/read_file?id=seed-abc&rel_path=s.txt" >/dev/null
is "$(echo "$api_body" | json_get 'd["content"]')" seeded "GET /read_file reads it back"
api GET "/v1/sessions/seed-abc/files/s.txt" >/dev/null
is "$api_status:$api_body" "200:seeded" "a /v1 route on an id without a shard reaches the seed host"

# ---- a FastCGI port answers the front's address only (no authentication in FastCGI) ----
fcgi_probe() { # fcgi_probe SOURCE-ADDR HOST:PORT: "answered" or "closed" for GET /v1/health
	/usr/bin/python3 - "$@" <<'EOF'
import socket, struct, sys
src, dst = sys.argv[1], sys.argv[2]
host, port = dst.rsplit(":", 1)
def rec(t, body):
    return struct.pack(">BBHHBB", 1, t, 1, len(body), 0, 0) + body
def nv(k, v):
    return bytes([len(k), len(v)]) + k + v
params = nv(b"REQUEST_METHOD", b"GET") + nv(b"DOCUMENT_URI", b"/v1/health") + \
    nv(b"SCRIPT_NAME", b"/v1/health") + nv(b"REQUEST_URI", b"/v1/health") + nv(b"QUERY_STRING", b"")
s = socket.socket()
s.settimeout(10)
s.bind((src, 0))
s.connect((host, int(port)))
s.sendall(rec(1, struct.pack(">HB5x", 1, 0)) + rec(4, params) + rec(4, b"") + rec(5, b""))
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
except OSError:
    pass
print("answered" if b"Status" in data or b"status" in data else "closed")
EOF
}
is "$(fcgi_probe 127.0.0.1 "$(harness_host_addr h2)")" answered "h2's FastCGI port answers the front's address"
is "$(fcgi_probe 127.0.0.2 "$(harness_host_addr h2)")" closed \
	"and closes a connection from any other address (FCGI_WEB_SERVER_ADDRS)"

# ---- a worker that dies mid-request is not a host that is down ----
victim=""
for i in "${ids[@]}"; do [ "${i%%-*}" = h3 ] && victim=$i && break; done
$SBX_CURL -o "$SBX_HARNESS_DIR/died.body" -w '%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" \
	-H 'Content-Type: application/json' --data '{"cmd":"sleep 5"}' \
	"$SBX_URL/v1/sessions/$victim/run" >"$SBX_HARNESS_DIR/died.code" &
curl_pid=$!
# Once the run is in progress on h3 (its program is running), not after a fixed time.
for ((i = 0; i < 100; i++)); do pgrep -f '^sleep 5$' >/dev/null && break; sleep 0.1; done
sleep 0.2
read -r _ h3pool _ <<<"$(harness_host_pids h3)"
kill -KILL $(pgrep -P "$h3pool") 2>/dev/null
wait "$curl_pid"
is "$(cat "$SBX_HARNESS_DIR/died.code")" 502 "a worker killed mid-run: 502"
is_envelope "$(cat "$SBX_HARNESS_DIR/died.body")" bad_gateway
ok $? "with code bad_gateway, not host_unavailable (the host answered)"
end=$((SECONDS + 30)) # multiwatch forks the workers again (by a deadline, not a try count)
while :; do
	api GET "/v1/sessions/$victim" >/dev/null
	[ "$api_status" = 200 ] || [ $SECONDS -ge $end ] && break
	sleep 0.3
done
is "$api_status" 200 "and the session answers again once the workers are back"

# ---- one host down ----
down=h2
harness_host_stop "$down"
bad=""
for id in "${ids[@]}"; do
	[ "${id%%-*}" = "$down" ] || continue
	api GET "/v1/sessions/$id/files/dir/f.txt" >/dev/null
	[ "$api_status" = 503 ] && is_envelope "$api_body" host_unavailable || bad="$bad $api_status:$api_body"
done
is "$bad" "" "with $down down, each of its sessions answers 503 host_unavailable"
ok $([ -n "$(api_header Retry-After)" ]; echo $?) "with Retry-After ($(api_header Retry-After))"
api PUT "/v1/sessions/$down-${ids[0]#*-}/files/x" @/etc/hostname >/dev/null
is "$api_status" 503 "a PUT to a session of $down is 503 as well (nothing written elsewhere)"
bad=""
for id in "${ids[@]}"; do
	[ "${id%%-*}" = "$down" ] && continue
	api GET "/v1/sessions/$id/files/dir/f.txt" >/dev/null
	[ "$api_status" = 200 ] && [[ "$api_body" == "content of $id"* ]] || bad="$bad $id:$api_status"
	put "$id" "after.txt" "written while $down is down"
	[ "$api_status" = 201 ] || bad="$bad $id:put=$api_status"
done
is "$bad" "" "every session of the other hosts still reads and writes"
bad=""
for i in 1 2 3 4 5 6; do
	api POST /v1/sessions >/dev/null
	id=$(echo "$api_body" | json_get 'd["id"]')
	[ "$api_status" = 201 ] && [ "${id%%-*}" != "$down" ] && [ -n "$(where "$id")" ] || bad="$bad $api_status:$id"
done
is "$bad" "" "new sessions are made on the live hosts only"
bad=""
for i in 1 2 3 4 5 6; do
	api POST /v1/execute '{"language":"bash","code":"echo ok"}' >/dev/null
	[ "$api_status" = 200 ] || bad="$bad $api_status"
done
is "$bad" "" "stateless runs keep answering 200 (the down host is skipped, nothing is lost)"
api GET "/v1/health?shard=$down" >/dev/null
is "$api_status" 503 "GET /v1/health?shard=$down says that host is down"
api GET /v1/health >/dev/null
is "$api_status" 200 "GET /v1/health (any host) is 200"

# ---- back up: its sessions are intact ----
harness_host_start "$down"
ok $? "$down starts again on the same port and state"
bad=""
for id in "${ids[@]}"; do
	[ "${id%%-*}" = "$down" ] || continue
	api GET "/v1/sessions/$id/files/dir/f.txt" >/dev/null
	[ "$api_status" = 200 ] && [[ "$api_body" == "content of $id"* ]] || bad="$bad $id:$api_status"
	api GET "/v1/sessions/$id" >/dev/null
	[ "$api_status" = 200 ] || bad="$bad $id:info=$api_status"
done
is "$bad" "" "every session of $down is back with its files"

# ---- the shard name is checked where it is set ----
for bad in H1 h-1 abcdefghijklmnopq; do
	SBX_SHARD=$bad SBX_STATE_DIR=$SBX_HARNESS_DIR/badshard timeout 10 "$SBX_BIN/sbx-fcgi" \
		</dev/null >/dev/null 2>"$SBX_HARNESS_DIR/badshard.log"
	rc=$?
	ok $([ "$rc" -ne 0 ] && grep -q 'shard (SBX_SHARD) must be' "$SBX_HARNESS_DIR/badshard.log"; echo $?) \
		"a worker refuses to start with SBX_SHARD=$bad (rc $rc)"
done

# ---- the production rendering ----
prod=$SBX_HARNESS_DIR/prod
mkdir -p "$prod/tmp"
nginx/render-cluster --server-name api.example.com --cert "$SBX_STATE_DIR/tls/cert.pem" \
	--key "$SBX_STATE_DIR/tls/key.pem" --state "$SBX_STATE_DIR" --prefix "$PWD" \
	--access-log "$prod/access.log" --seed h2 h1=10.0.0.11:9000,10.0.0.11:9001 h2=10.0.0.12:9000 \
	h3=unix:/run/sbx-h3.sock >"$prod/site.conf"
ok $? "nginx/render-cluster renders a production site for three hosts"
printf '%s\n' "pid $prod/nginx.pid;" "error_log $prod/error.log;" "events {}" "http {" \
	"client_body_temp_path $prod/tmp;" "fastcgi_temp_path $prod/tmp;" \
	"include $prod/site.conf;" "}" >"$prod/nginx.conf"
nginx -t -q -p "$prod/" -c "$prod/nginx.conf" -e "$prod/error.log" 2>"$prod/t.log"
ok $? "nginx -t accepts it$(sed 's/^/: /' "$prod/t.log" | head -n 3 | tr '\n' ' ')"
grep -q 'default sbx_host_h2;' "$prod/site.conf" && grep -q 'listen 80;' "$prod/site.conf" &&
	grep -q 'server unix:/run/sbx-h3.sock max_fails=1' "$prod/site.conf"
ok $? "with the seed host given, port 80 redirecting, and a Unix-socket host"
sed -n '/^upstream sbx_health_h1 {/,/}/p' "$prod/site.conf" | grep -q 'server 10.0.0.11:9001;' &&
	sed -n '/^upstream sbx_health_h2 {/,/}/p' "$prod/site.conf" | grep -q 'server 10.0.0.12:9000;' &&
	sed -n '/^upstream sbx_health_all {/,/}/p' "$prod/site.conf" | grep -q 'server 10.0.0.11:9001 max_fails'
ok $? "health goes to a host's health pool when given (h1=POOL,HEALTH), else to its pool"
for args in "h1=10.0.0.1:9000 h1=10.0.0.2:9000" "H1=10.0.0.1:9000" "h1" "--seed h9 h1=10.0.0.1:9000" \
	"h1=10.0.0.1:9000;evil" "h1=10.0.0.1:9000,10.0.0.1:9001;evil"; do
	# shellcheck disable=SC2086
	nginx/render-cluster --server-name x --cert /c --key /k $args >/dev/null 2>&1
	is "$?" 2 "render-cluster refuses '$args'"
done

# ---- teardown leaves nothing ----
dir=$SBX_HARNESS_DIR
uids=""
for sh in $SBX_HOSTS; do uids="$uids ${harness_host_uid[$sh]}"; done
pids=$(for sh in $SBX_HOSTS; do harness_host_pids "$sh"; done; echo "$SBX_PID_nginx")
harness_stop
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left pid:$p"; done
for u in $uids; do
	for ((k = u; k < u + ${HARNESS_HOST_SLOTS:-2}; k++)); do
		[ -n "$(pgrep -U "$k" 2>/dev/null)" ] && left="$left uid:$k"
	done
done
ls -d /sys/fs/cgroup/*/"sbx-test-${dir##*.}"-* /sys/fs/cgroup/"sbx-test-${dir##*.}"-* 2>/dev/null |
	grep -q . && left="$left cgroups"
[ -e "$dir" ] && left="$left $dir"
is "$left" "" "after teardown: no process, slot uid, cgroup or temp dir is left"

done_testing
