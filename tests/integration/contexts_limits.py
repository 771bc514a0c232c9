"""contexts_limits.py: contexts.per_client (429), the broker's machine cap (503), both with
Retry-After; cells count as runs for admission (runs.per_client 1: a plain execute during a cell
is 429 too_many_runs); an idle context is stopped after contexts.idle_ttl_s, and its next call
answers state "lost" with a fresh execution_count. Run by contexts_limits.t."""
import os
import sys
import threading
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, ok  # noqa: E402

URL = os.environ["SBX_URL"]
c = httpx.Client(base_url=URL, verify=False, timeout=180,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"]})
cb = httpx.Client(base_url=URL, verify=False, timeout=180,
                  headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN2"]})


def j(r):
    try:
        return r.json()
    except ValueError:
        return {"raw": r.text}


def code_of(r):
    e = j(r).get("error") if isinstance(j(r), dict) else None
    return e.get("code") if isinstance(e, dict) else None


def main_text(d):
    for x in d.get("results") or []:
        if x.get("is_main_result"):
            return x.get("text")
    return None


SA = c.post("/v1/sessions").json()["id"]
SB = cb.post("/v1/sessions").json()["id"]

# ---- caps ----
a = [c.post(f"/v1/sessions/{SA}/contexts", json={"language": "python"}) for _ in range(3)]
ok(a[0].status_code == 201 and a[1].status_code == 201, "alice: two contexts",
   [x.status_code for x in a])
ok(a[2].status_code == 429 and code_of(a[2]) == "too_many_contexts" and
   a[2].headers.get("retry-after"), "alice's third: 429 too_many_contexts + Retry-After", j(a[2]))
b = [cb.post(f"/v1/sessions/{SB}/contexts", json={"language": "bash"}) for _ in range(2)]
ok(b[0].status_code == 201, "bob: one context", j(b[0]))
ok(b[1].status_code == 503 and code_of(b[1]) == "busy" and b[1].headers.get("retry-after"),
   "bob's second (the machine holds 3): 503 busy + Retry-After", j(b[1]))
A0 = j(a[0]).get("id")

# ---- the operators' metrics show the contexts per client and their memory ----
m = c.get("/v1/metrics")
lines = m.text.splitlines() if m.status_code == 200 else []
ok('sbx_contexts{client="alice"} 2' in lines and 'sbx_contexts{client="bob"} 1' in lines and
   any(x.startswith("sbx_contexts_memory_bytes ") and int(x.split()[1]) > 0 for x in lines),
   "GET /v1/metrics: live contexts per client and the memory they hold",
   [x for x in lines if "context" in x] or m.status_code)

# ---- a cell is a run for admission ----
box = {}


def cell():
    r = c.post(f"/v1/sessions/{SA}/contexts/{A0}/execute",
               json={"code": "import time\ntime.sleep(8)\n1"})
    box["cell"] = (r.status_code, j(r))


t = threading.Thread(target=cell)
t.start()
busy = False
end = time.monotonic() + 60
while t.is_alive() and time.monotonic() < end and not busy:
    lst = j(c.get(f"/v1/sessions/{SA}/contexts"))
    busy = any(x.get("id") == A0 and x.get("state") == "busy" for x in lst)
    time.sleep(0.1)
seen = None
if busy:
    r = c.post("/v1/execute", json={"language": "python", "code": "print(1)"})
    seen = r if r.status_code == 429 else None
t.join(60)
ok(seen is not None and code_of(seen) == "too_many_runs",
   "a plain run during a cell of the same client (runs.per_client 1): 429 too_many_runs",
   j(seen) if seen is not None else "never refused")
ok(box.get("cell", (0,))[0] == 200 and main_text(box["cell"][1]) == "1", "the cell ran",
   box.get("cell"))

for x in a[:2]:
    c.delete(f"/v1/sessions/{SA}/contexts/{j(x).get('id')}")
cb.delete(f"/v1/sessions/{SB}/contexts/{j(b[0]).get('id')}")

# ---- idle eviction ----
r = c.post(f"/v1/sessions/{SA}/contexts", json={"language": "python"})
cid = j(r).get("id")
ok(r.status_code == 201, "a new context after the deletes", j(r))
r = c.post(f"/v1/sessions/{SA}/contexts/{cid}/execute", json={"code": "x = 1\nx"})
ok(main_text(j(r)) == "1", "x = 1", j(r))
state = None
end = time.monotonic() + 90
while time.monotonic() < end:
    lst = j(c.get(f"/v1/sessions/{SA}/contexts"))
    state = next((x.get("state") for x in lst if x.get("id") == cid), None)
    if state == "stopped":
        break
    time.sleep(0.5)
ok(state == "stopped", "idle_ttl_s 3: the context is stopped (listed as stopped)", state)
r = c.post(f"/v1/sessions/{SA}/contexts/{cid}/execute", json={"code": "'x' in dir()"})
d = j(r)
ok(r.status_code == 200 and d.get("state") == "lost" and main_text(d) == "False" and
   d.get("execution_count") == 1,
   "the next call after eviction: state lost, a fresh execution_count, x gone", d)
r = c.post(f"/v1/sessions/{SA}/contexts/{cid}/execute", json={"code": "2"})
ok(j(r).get("state") == "kept", "and then kept again", j(r))
c.delete(f"/v1/sessions/{SA}")
cb.delete(f"/v1/sessions/{SB}")
done()
