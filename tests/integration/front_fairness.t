#!/usr/bin/env bash
# front_fairness.t: one client cannot take the whole pool, and the service says so.
#   - alice floods with slow runs past her share: half the pool's runs are admitted, the rest get
#     429 too_many_runs with Retry-After at once (not queued behind her runs);
#   - carol, a second heavy client, takes what is left of the shared slots, then gets 503 busy;
#   - bob, who has nothing in flight, still gets a slot at once (the reserve): his print(1)
#     finishes while every one of alice's and carol's slow runs is still running;
#   - GET /v1/health without a token says the pool is saturated, and shows no cgroup path or
#     container id; with a token it has the broker's detail;
#   - GET /v1/metrics: 401 without a token, 403 for a client that is not an operator, Prometheus
#     text for the operator (parsed below), its counters moving with the runs and refusals.
# Pool: 6 workers, 6 slots -> 6 runs at once, 3 per client, 2 kept for clients with none.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["metrics"] = {"clients": ["ops"]}
PY
export HARNESS_WORKERS=6 HARNESS_SLOTS=6
harness_start
work=$SBX_HARNESS_DIR/fair
mkdir -p "$work"
carol=$(harness_token carol) || harness_bail "no token for carol"
ops=$(harness_token ops) || harness_bail "no token for ops"

# metrics TOKEN: GET /v1/metrics into $work/metrics; prints the status
metrics() {
	curl -k -s --max-time 30 -o "$work/metrics" -D "$work/metrics.head" -w '%{http_code}' \
		${1:+-H "Authorization: Bearer $1"} "$SBX_URL/v1/metrics"
}
# metric 'NAME{labels}': its value in $work/metrics, parsed as Prometheus text (0.0.4): every
# line a comment (# HELP / # TYPE NAME gauge|counter) or NAME[{k="v",...}] VALUE; a line that
# is neither fails the parse (exit 2). Absent: 0.
cat >"$work/prom.py" <<'PY'
import re, sys
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*")*)?\})? (-?[0-9.eE+]+|NaN|[+-]Inf)$')
values, types = {}, {}
for line in open(sys.argv[1]).read().splitlines():
    if line.startswith("# HELP "):
        continue
    m = re.match(r"^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (gauge|counter|untyped|summary|histogram)$", line)
    if m:
        types[m.group(1)] = m.group(2)
        continue
    m = sample.match(line)
    if not m or m.group(1) not in types:
        print("bad line:", repr(line))
        sys.exit(2)
    labels = ",".join(sorted(m.group(3).split(","))) if m.group(3) else ""
    values[m.group(1) + ("{" + labels + "}" if labels else "")] = float(m.group(5))
if len(sys.argv) > 2:
    print(int(values.get(sys.argv[2], 0)))
PY
metric() { /usr/bin/python3 "$work/prom.py" "$work/metrics" "$1"; }

# ---- metrics: who may read them ----
is "$(metrics "")" 401 "metrics without a token: 401"
is "$(metrics "$SBX_TOKEN")" 403 "metrics for a client that is not an operator: 403"
is "$(metrics "$ops")" 200 "metrics for the operator: 200"
ok $(grep -qi '^content-type: text/plain' "$work/metrics.head"; echo $?) "... as text/plain"
/usr/bin/python3 "$work/prom.py" "$work/metrics" >"$work/parse.out"
ok $? "... that parses as Prometheus text $(cat "$work/parse.out")"
is "$(metric sbx_machine_slots)" 6 "... the machine's run slots: the pool's 6 workers"
is "$(metric sbx_client_slots)" 3 "... one client's share: half of them"
is "$(metric sbx_machine_slots_reserved)" 2 "... two kept for clients with nothing in flight"
admitted0=$(metric sbx_runs_admitted_total)

# ---- alice floods ----
# slow TOKEN NAME: a 20-second run in the background; its status to $work/NAME.code
slow() {
	$SBX_CURL -o "$work/$2.body" -D "$work/$2.head" -w '%{http_code}' -H "Authorization: Bearer $1" \
		-H 'Content-Type: application/json' \
		--data '{"language":"bash","code":"sleep 20; echo slept","limits":{"wall_ms":40000}}' \
		"$SBX_URL/v1/execute" >"$work/$2.code" &
}
slow_pids=()
for i in 1 2 3 4 5 6; do slow "$SBX_TOKEN" "a$i"; slow_pids+=($!); done
# Runs in progress: their `sleep` processes (a run is a shell and its sleep).
nsleeps() {
	local pid n=0
	for pid in $(harness_run_pids); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && n=$((n + 1))
	done
	echo "$n"
}
nruns() { [ "$(nsleeps)" -ge "$1" ]; }
# ncodes CODE FILES...: how many of the files hold CODE (each holds one status, no newline)
ncodes() {
	local code=$1 f n=0
	shift
	for f in "$@"; do [ "$(cat "$f" 2>/dev/null)" = "$code" ] && n=$((n + 1)); done
	echo "$n"
}
a_refused() { [ "$(ncodes 429 "$work"/a?.code)" -ge 3 ]; }
wait_until 60 nruns 3
ok $? "three of alice's runs are running"
wait_until 30 a_refused
ok $? "the other three got 429 at once, not a place in a queue"
for i in 1 2 3 4 5 6; do
	[ "$(cat "$work/a$i.code" 2>/dev/null)" = 429 ] || continue
	is_envelope "$(cat "$work/a$i.body")" too_many_runs
	ok $? "... the too_many_runs envelope"
	ok $(grep -qi '^retry-after: [1-9]' "$work/a$i.head"; echo $?) "... with Retry-After"
	break
done

# ---- carol takes what is left of the shared slots ----
# One first (had she sent all three at once, the one that saw no other of hers in flight could
# take a reserved slot, as designed: a client with nothing in flight may), then two more.
slow "$carol" c1
slow_pids+=($!)
wait_until 60 nruns 4
ok $? "carol's first run is running (the last shared slot)"
for i in 2 3; do slow "$carol" "c$i"; slow_pids+=($!); done
c_refused() { [ "$(ncodes 503 "$work"/c?.code)" -ge 2 ]; }
wait_until 30 c_refused
ok $? "her other two got 503: the shared slots are taken, the reserve is not hers"
for i in 1 2 3; do
	[ "$(cat "$work/c$i.code" 2>/dev/null)" = 503 ] || continue
	is_envelope "$(cat "$work/c$i.body")" busy
	ok $? "... the busy envelope"
	ok $(grep -qi '^retry-after: [1-9]' "$work/c$i.head"; echo $?) "... with Retry-After"
	break
done

# ---- meanwhile: health and metrics ----
health=$(curl -k -s --max-time 30 "$SBX_URL/v1/health")
is "$(echo "$health" | json_get 'd["status"]')" ok "health without a token: ok (busy is not down)"
is "$(echo "$health" | json_get 'd["runs"]["in_flight"]')" 4 "... four runs in flight"
ok $(echo "$health" | grep -qiE 'cgroup|/sys/fs|docker|kubepods|containerd|[0-9a-f]{64}|"detail"'; [ $? -ne 0 ]; echo $?) \
	"... no cgroup path, container id or broker detail: $health"
api GET /v1/health >/dev/null
ok $(echo "$api_body" | json_get 'd["sandbox"]["detail"]' >/dev/null; echo $?) "health with a token has the broker's detail"
is "$(metrics "$ops")" 200 "metrics during the flood"
is "$(metric 'sbx_runs_in_flight{client="alice"}')" 3 "... alice: 3 runs in flight"
is "$(metric 'sbx_runs_in_flight{client="carol"}')" 1 "... carol: 1"
is "$(metric sbx_machine_slots_in_use)" 4 "... 4 machine slots in use"
is "$(metric 'sbx_rejections_total{reason="per_client"}')" 3 "... 3 refused over a client's share"
is "$(metric 'sbx_client_rejections_total{client="alice",reason="per_client"}')" 3 "... all alice's"
is "$(metric 'sbx_rejections_total{reason="machine"}')" 2 "... 2 refused for want of a machine slot"
is "$(metric 'sbx_client_rejections_total{client="carol",reason="machine"}')" 2 "... both carol's"

# ---- bob, with nothing in flight, is not kept waiting ----
api_as "$SBX_TOKEN2" POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
is "$api_status" 200 "bob's print(1) is admitted"
is "$(echo "$api_body" | json_get 'd["stdout"]')" 1 "... and runs"
running=0
for f in a1 a2 a3 a4 a5 a6 c1 c2 c3; do
	[ -s "$work/$f.code" ] || running=$((running + 1))
done
is "$running" 4 "... while all four slow runs are still running (no answer yet)"
is "$(metrics "$ops")" 200 "metrics after bob's run"
is "$(metric sbx_runs_admitted_total)" "$((admitted0 + 5))" "... 5 more runs admitted"
is "$(metric 'sbx_client_runs_admitted_total{client="bob"}')" 1 "... one of them bob's"

wait "${slow_pids[@]}"
is "$(ncodes 200 "$work"/a?.code "$work"/c?.code)" 4 "the four admitted slow runs all finished"
is "$(metrics "$ops")" 200 "metrics afterwards"
is "$(metric sbx_machine_slots_in_use)" 0 "... no slot held any more"

done_testing
