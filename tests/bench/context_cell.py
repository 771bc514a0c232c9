"""context_cell.py: the figures of a context (issue 14), on the stack tests/bench/context_cell
starts:
  1. a `1+1` cell in a warm Python context over HTTPS keep-alive: median latency vs a bare
     `/usr/bin/python3 -c 'print(1)'` start, alternated in the same run (target ratio <= 0.2);
  2. an idle Python context's memory (the cgroup's, numpy not imported; target <= 20 MiB);
  3. what creating one costs (POST .../contexts until the kernel is ready);
  4. how many idle contexts this machine holds before a cap refuses one (and which cap)."""
import http.client
import json
import os
import ssl
import statistics
import subprocess
import time
import urllib.parse

URL = os.environ["SBX_URL"]
H = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"], "Content-Type": "application/json"}
N = int(os.environ.get("BENCH_N", "40"))
MAX_FILL = int(os.environ.get("BENCH_MAX_CONTEXTS", "64"))
BARE = ["/usr/bin/python3", "-c", "print(1)"]


class Conn:
    """One HTTPS keep-alive connection (stdlib http.client, the lightest client at hand)."""

    def __init__(self):
        u = urllib.parse.urlsplit(URL)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=120)

    def call(self, method, path, body=None):
        self.c.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                       headers=H)
        r = self.c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data) if data else None, r
        except ValueError:
            return r.status, {"raw": data[:200]}, r


def bare_once():
    t = time.perf_counter()
    subprocess.run(BARE, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


c = Conn()
st, s, _ = c.call("POST", "/v1/sessions")
SID = s["id"]
BASE = f"/v1/sessions/{SID}/contexts"


def create():
    t = time.perf_counter()
    st, d, r = c.call("POST", BASE, {"language": "python"})
    return st, d, time.perf_counter() - t, r


st, d, _, _ = create()
if st != 201:
    raise SystemExit(f"create failed: {st} {d}")
CID = d["id"]


def cell_once():
    t = time.perf_counter()
    st, d, _ = c.call("POST", f"{BASE}/{CID}/execute", {"code": "1+1"})
    dt = time.perf_counter() - t
    if st != 200 or (d.get("results") or [{}])[0].get("text") != "2":
        raise SystemExit(f"cell failed: {st} {d}")
    return dt


for _ in range(5):  # warm: the connection, the worker, the interpreter
    cell_once()
    bare_once()
a, b = [], []
for _ in range(N):
    a.append(cell_once())
    b.append(bare_once())
ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
print(f"context_cell_ms p50={ma:.2f} p90={sorted(a)[int(0.9 * len(a))] * 1e3:.2f} n={N}")
print(f"bare_python_ms p50={mb:.1f}")
print(f"context_cell_ratio {ma / mb:.3f} (target <= 0.2)")

# ---- idle memory: the context's cgroup after a few quiet seconds ----
time.sleep(3)
st, lst, _ = c.call("GET", BASE)
kb = next((x.get("memory_kb", 0) for x in lst if x["id"] == CID), 0)
print(f"idle_context_mib {kb / 1024:.1f} (target <= 20)")

# ---- create cost, and how many idle contexts fit ----
costs, made, refusal = [], [CID], None
while len(made) < MAX_FILL:
    st, d, dt, r = create()
    if st != 201:
        refusal = f"{st} {(d.get('error') or {}).get('code')} retry_after={r.getheader('Retry-After')}"
        break
    costs.append(dt)
    made.append(d["id"])
if costs:
    print(f"context_create_ms median={statistics.median(costs) * 1e3:.0f} "
          f"max={max(costs) * 1e3:.0f} n={len(costs)}")
st, lst, _ = c.call("GET", BASE)
total_kb = sum(x.get("memory_kb", 0) for x in lst)
print(f"idle_contexts_held {len(made)} (memory together {total_kb / 1024:.0f} MiB; "
      f"stopped by: {refusal or f'the bench limit BENCH_MAX_CONTEXTS={MAX_FILL}'}) "
      f"reference: broker caps --contexts {os.environ.get('SBX_CONTEXTS', '?')} "
      f"--contexts-memory-mb {os.environ.get('SBX_CONTEXTS_MEMORY_MB', '?')}")
budget = float(os.environ.get("SBX_CONTEXTS_MEMORY_MB", "0") or 0)
if budget and total_kb:
    print(f"idle_contexts_by_memory_budget ~{budget / (total_kb / 1024 / len(made)):.0f} "
          f"({budget:.0f} MiB / {total_kb / 1024 / len(made):.1f} MiB each) reference")
for cid in made:
    c.call("DELETE", f"{BASE}/{cid}")
c.call("DELETE", f"/v1/sessions/{SID}")
