"""bg_runs.py: 200 background runs started and polled by one client; the pool's other clients
see no change in /v1/execute latency (issue 17: within 10 %, the ratio measured in one run).

Alice keeps as many background runs going as the caps allow (BG_AT_ONCE, spread over sessions
of 4), each printing five lines 0.2 s apart, polls every live run's stdout by cursor (wait_ms=0,
one round every POLL_S) and two of them at a time by long-poll, checks each one's whole output once it has
ended, deletes it and starts the next, until BG_TOTAL (200) have run. Bob sends print(1) one at
a time: SAMPLES before, all the while alice works, and SAMPLES after; the ratio is his p50 while
alice works over his p50 before and after together. Run under tests/lib/harness.sh --exec
(bg_runs does that)."""
import http.client
import json
import os
import resource
import ssl
import statistics
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from cpu_sample import busy_ms, cgroups, per_process  # noqa: E402

URL = urllib.parse.urlparse(os.environ["SBX_URL"])
ALICE, BOB = os.environ["SBX_TOKEN"], os.environ["SBX_TOKEN2"]
TOTAL = int(os.environ.get("BG_TOTAL", "200"))
AT_ONCE = int(os.environ.get("BG_AT_ONCE", "16"))
SAMPLES = int(os.environ.get("BENCH_N", "40"))
POLL_S = float(os.environ.get("BG_POLL_S", "0.1"))
CTX = ssl._create_unverified_context()
CMD = "i=0; while [ $i -lt 5 ]; do echo line $i; i=$((i+1)); sleep 0.2; done"
WANT = b"".join(b"line %d\n" % i for i in range(5))


class Conn:
    def __init__(self, token):
        self.token = token
        self.c = None

    def call(self, method, path, body=None):
        for attempt in range(2):
            if self.c is None:
                self.c = http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX,
                                                     timeout=120)
            h = {"Authorization": "Bearer " + self.token}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                h["Content-Type"] = "application/json"
            try:
                self.c.request(method, path, body=data, headers=h)
                r = self.c.getresponse()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
            except (http.client.HTTPException, OSError):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def cpu_split(before, after):
    """ms by part of the service while alice works. The broker's main process is the sbxd whose
    parent is not an sbxd; its root children are slots (their reaped children: the sandboxes,
    prepared ones and runs alike; a background slot is one in a group named <cgroup>-bg), its other
    children keepers of background runs (reaped ones
    counted through the main process's children time). Only this stack's processes count (its
    parts lead their own process groups; sandboxes run as the slots' uids): the machine is
    shared."""
    ours = {os.environ.get("SBX_PID_" + p) for p in ("broker", "pool", "health", "nginx")}
    uid0, nslots = int(os.environ["SBX_UID_BASE"]), int(os.environ["SBX_SLOTS"])
    pids = {k[0]: v for k, v in after.items()}
    parts = {}

    def add(k, v):
        parts[k] = parts.get(k, 0.0) + v
    for key, (comm, ppid, pgid, uid, own, kids, kthread) in after.items():
        b = before.get(key)
        d_own, d_kids = (own - b[4], kids - b[5]) if b else (own, kids)
        parent = pids.get(ppid, ("", "", "", 0))
        if kthread:
            add("kernel threads", d_own)
        elif uid0 <= uid < uid0 + nslots:
            add("sandboxes (live)", d_own)
        elif uid0 + nslots <= uid < uid0 + nslots + nslots // 2:  # background slots'
            add("background sandboxes (live)", d_own)
        elif pgid not in ours:
            continue
        elif comm == "sbxd" and parent[0] != "sbxd":
            add("broker main", d_own)
            add("keepers (reaped)", d_kids)
        elif comm == "sbxd" and uid == 0 and any(
                c.endswith("-bg") for c in cgroups(key[0]).replace(" ", "/").split("/")):
            add("background slots", d_own)  # in their low-weight cpu group
            add("background sandboxes (reaped)", d_kids)
        elif comm == "sbxd" and uid == 0:
            add("slots", d_own)
            add("sandboxes (reaped)", d_kids)
        elif comm == "sbxd":
            add("keepers", d_own)
        elif comm == "sbx-fcgi":
            add("fcgi", d_own)
        elif comm == "nginx":
            add("nginx", d_own)
    return parts


failures = []
stats = {"started": 0, "done": 0, "polls": 0, "long_polls": 0, "refused": 0, "peak": 0}
lock = threading.Lock()
live = {}  # run id -> [session, cursor, bytes]
done_evt = threading.Event()


def fail(msg):
    with lock:
        if len(failures) < 20:
            failures.append(msg)


def alice():
    c = Conn(ALICE)
    sessions = []
    for _ in range((AT_ONCE + 3) // 4):
        st, _, b = c.call("POST", "/v1/sessions", {})
        if st != 201 and st != 200:
            fail(f"session: {st} {b[:200]}")
            done_evt.set()
            return
        sessions.append(json.loads(b)["id"])
    per = {s: 0 for s in sessions}
    while stats["done"] < TOTAL and not (failures and len(failures) >= 20):
        # start as many as the caps allow
        while stats["started"] < TOTAL and len(live) < AT_ONCE:
            sid = min(per, key=per.get)
            st, h, b = c.call("POST", f"/v1/sessions/{sid}/runs",
                              {"cmd": CMD, "limits": {"wall_ms": 30000}})
            if st == 202:
                with lock:
                    live[json.loads(b)["run_id"]] = [sid, 0, b""]
                per[sid] += 1
                stats["started"] += 1
                stats["peak"] = max(stats["peak"], len(live))
            elif st in (429, 503) and h.get("retry-after"):
                stats["refused"] += 1
                break  # a cap: wait for runs to end
            else:
                fail(f"start: {st} {b[:200]}")
                break
        with lock:
            items = list(live.items())
        for rid, (sid, cur, got) in items:
            st, h, b = c.call("GET", f"/v1/sessions/{sid}/runs/{rid}/output"
                              f"?stream=stdout&cursor={cur}&wait_ms=0")
            stats["polls"] += 1
            if st != 200:
                fail(f"poll: {st} {b[:200]}")
                with lock:
                    live.pop(rid, None)
                per[sid] -= 1
                continue
            with lock:
                if rid in live:
                    live[rid][1] = int(h["sbx-cursor"])
                    live[rid][2] = got + b
            if h.get("sbx-run-state") == "ended" and not b:
                if got != WANT:
                    fail(f"run {rid}: output {got!r}")
                st, _, b = c.call("DELETE", f"/v1/sessions/{sid}/runs/{rid}")
                if st != 204:
                    fail(f"delete: {st} {b[:200]}")
                with lock:
                    live.pop(rid, None)
                per[sid] -= 1
                stats["done"] += 1
        time.sleep(POLL_S)
    for sid in sessions:
        c.call("DELETE", f"/v1/sessions/{sid}")
    done_evt.set()


def long_poller(k):
    """Follows one live run at a time by long-poll (wait_ms=2000) to its end, as a client
    watching a run would: the client's cap of long-polls held."""
    c = Conn(ALICE)
    while not done_evt.is_set():
        with lock:
            items = list(live.items())[k::2][:1]
        if not items:
            time.sleep(POLL_S)
            continue
        rid, (sid, cur, _) = items[0]
        while not done_evt.is_set():
            st, h, b = c.call("GET", f"/v1/sessions/{sid}/runs/{rid}/output"
                              f"?stream=stdout&cursor={cur}&wait_ms=2000")
            if st == 200:
                stats["long_polls"] += 1
                cur = int(h["sbx-cursor"])
                if h.get("sbx-run-state") == "ended" and not b:
                    break
            elif st == 404:  # deleted by the cursor poller meanwhile
                break
            elif st == 429:
                time.sleep(1)
            else:
                fail(f"long-poll: {st} {b[:200]}")
                break
        # this one has ended: the cursor poller deletes it; follow another
        while not done_evt.is_set():
            with lock:
                if rid not in live:
                    break
            time.sleep(POLL_S)


def bob_once(c, out):
    t = time.perf_counter()
    st, _, b = c.call("POST", "/v1/execute", {"language": "python", "code": "print(1)"})
    ms = (time.perf_counter() - t) * 1000
    if st == 200 and json.loads(b).get("stdout") == "1\n":
        out.append(ms)
    else:
        fail(f"bob: {st} {b[:200]}")


bob = Conn(BOB)
for _ in range(5):  # warm up
    bob_once(bob, [])
before, during, after = [], [], []
q0, qb0, tq0 = per_process(), busy_ms(), time.monotonic()
for _ in range(SAMPLES):
    bob_once(bob, before)
t0 = time.monotonic()
quiet_parts, quiet_busy, quiet_s = cpu_split(q0, per_process()), busy_ms() - qb0, t0 - tq0
p0, b0, r0 = per_process(), busy_ms(), resource.getrusage(resource.RUSAGE_SELF)
threads = [threading.Thread(target=alice)] + [threading.Thread(target=long_poller, args=(k,))
                                              for k in range(2)]
for t in threads:
    t.start()
time.sleep(1)  # alice reaches her steady state
while not done_evt.is_set():
    bob_once(bob, during)
for t in threads:
    t.join()
elapsed = time.monotonic() - t0
p1, b1, r1 = per_process(), busy_ms(), resource.getrusage(resource.RUSAGE_SELF)
for _ in range(SAMPLES):
    bob_once(bob, after)

quiet = before + after
q50, d50 = statistics.median(quiet), statistics.median(during) if during else float("nan")
ratio = d50 / q50
print(f"alice: {stats['started']} background runs started, {stats['done']} read to their end "
      f"and deleted in {elapsed:.1f} s; at most {stats['peak']} at once (cap {AT_ONCE}: "
      f"half of sbxd --background-runs = slots/2 background slots of their own, "
      f"runs.background_per_client raised to it, 4 per "
      f"session); {stats['polls']} cursor polls, {stats['long_polls']} long-polls, "
      f"{stats['refused']} designed refusals")
print(f"bob's print(1): quiet p50 {q50:.1f} ms ({len(before)} before, {len(after)} after); "
      f"while alice works p50 {d50:.1f} ms, p90 "
      f"{sorted(during)[int(0.9 * (len(during) - 1))] if during else float('nan'):.1f} ms "
      f"({len(during)} runs)")
print(f"target: bob's /v1/execute p50 while one client runs {TOTAL} background runs / quiet p50: "
      f"{ratio:.2f} (target <= 1.10) {'PASS' if ratio <= 1.10 else 'FAIL'}")
parts = cpu_split(p0, p1)
parts["bench client (alice+bob)"] = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000


def show(what, parts, busy, secs):
    print(f"cpu {what}: machine busy {busy / secs / 10:.0f} % of one CPU over {secs:.1f} s; "
          "this stack's parts, % of one CPU: " +
          ", ".join(f"{k} {v / secs / 10:.1f}" for k, v in sorted(parts.items(), key=lambda x: -x[1])) +
          f"; rest (the machine's other processes) {(busy - sum(parts.values())) / secs / 10:.1f}")


show("before alice (bob alone)", quiet_parts, quiet_busy, quiet_s)
show("while alice works", parts, b1 - b0, elapsed)
if failures:
    print("failures:", *failures[:10], sep="\n  ")
sys.exit(1 if failures or stats["done"] < TOTAL else 0)
