#!/usr/bin/env bash
# front_flood.t: requests without a token are limited per address, and a slow-header flood from
# one address neither stops health nor an authenticated request, and does not hold nginx's
# connections longer than client_header_timeout (5 s by default). Every "address" is one of
# loopback's 127.0.0.0/8, so the test stays on this host; the flood is a few hundred sockets and
# stops by itself (the helper closes what is left after its own deadline).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

# A small per-address budget for anonymous requests (the harness's default is generous, since
# other tests poll health from 127.0.0.1); the header timeout is the default.
HARNESS_ANON_RATE=1r/m HARNESS_ANON_BURST=20 HARNESS_ANON_CONN=8 harness_start
work=$SBX_HARNESS_DIR/flood
mkdir -p "$work"

# code_from ADDR [curl args...] PATH: the HTTP status of one request sent from ADDR
code_from() {
	local addr=$1
	shift
	curl -k -s --max-time 30 --interface "$addr" -o "$work/body" -w '%{http_code}' "$@" 2>/dev/null
}

# ---- anonymous requests: a budget per address ----
codes=""
for i in $(seq 30); do codes="$codes $(code_from 127.0.0.2 "$SBX_URL/v1/health")"; done
n200=$(grep -o ' 200' <<<"$codes" | wc -l)
n429=$(grep -o ' 429' <<<"$codes" | wc -l)
ok $([ "$n200" -ge 20 ] && [ "$n200" -le 22 ]; echo $?) "30 anonymous health requests from one address: the burst passes ($n200 x 200)"
is "$((n200 + n429))" 30 "... and the rest is 429 ($n429), nothing else"
is_envelope "$(cat "$work/body")" rate_limited
ok $? "... in the JSON envelope"
is "$(code_from 127.0.0.2 -H "Authorization: Bearer $SBX_TOKEN" "$SBX_URL/v1/health")" 200 \
	"an authenticated request from that address is not counted against it"
is "$(code_from 127.0.0.3 "$SBX_URL/v1/health")" 200 "another address keeps its own budget"
is "$(code_from 127.0.0.2 "$SBX_URL/v1/languages")" 401 "an anonymous API request is still 401"

# ---- a slow-header flood from one address ----
# 300 TLS connections from 127.0.0.4, each sending half a request header, then holding it.
# Prints "open N" once they are open, then, every 0.5 s, how many the server has closed.
cat >"$work/flood.py" <<'EOF'
import socket, ssl, sys, time
port, n, deadline = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
socks = []
for i in range(n):
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.4", 0))
        s = ctx.wrap_socket(raw)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        s.setblocking(False)
        socks.append(s)
    except OSError:
        break
t0 = time.monotonic()
print("open", len(socks), flush=True)
closed = set()
while time.monotonic() - t0 < deadline:
    for i, s in enumerate(socks):
        if i in closed:
            continue
        try:
            if s.recv(4096) == b"":
                closed.add(i)
        except (ssl.SSLWantReadError, BlockingIOError):
            pass
        except OSError:
            closed.add(i)
    print("closed", len(closed), round(time.monotonic() - t0, 1), flush=True)
    if len(closed) == len(socks):
        break
    time.sleep(0.5)
for s in socks:
    s.close()
EOF
/usr/bin/python3 "$work/flood.py" "$SBX_PORT" 300 20 >"$work/flood.out" 2>"$work/flood.err" &
flood=$!
harness_on_exit "kill $flood 2>/dev/null"
flood_open() { grep -q '^open' "$work/flood.out"; }
wait_until 120 flood_open
opened=$(sed -n 's/^open //p' "$work/flood.out")
is "$opened" 300 "300 half-header TLS connections from one address are open"
is "$(code_from 127.0.0.5 "$SBX_URL/v1/health")" 200 "meanwhile health answers another address"
out=$(code_from 127.0.0.5 -H "Authorization: Bearer $SBX_TOKEN2" -H 'Content-Type: application/json' \
	--data '{"language":"python","code":"print(1)"}' "$SBX_URL/v1/execute")
is "$out" 200 "... and so does an authenticated run"
is "$(json_get 'd["stdout"]' <"$work/body")" 1 "... with its output"
wait "$flood"
last=$(grep '^closed' "$work/flood.out" | tail -n 1)
diag "flood: $last (closed, seconds after all were open)"
read -r _ nclosed secs <<<"$last"
is "$nclosed" 300 "nginx closed every half-header connection by itself"
# The first were opened before the last, so "all closed" can come a little before the timeout
# after the last one opened; well before 15 s (the old client_header_timeout) all the same.
ok $(awk -v s="$secs" 'BEGIN { exit !(s <= 10) }'; echo $?) "... within client_header_timeout (5 s) plus slack: ${secs}s after the last opened"

done_testing
