"""contexts_api.py: the context routes through the real stack (nginx + pool + broker + holder +
kernel) over HTTPS: create/list/execute/delete, state across cells, display data, limits and
interrupts (state kept or lost, never silently), a client that goes away, two callers, session
delete while busy, ownership, variables, repl, bash. Run by contexts_api.t under
tests/lib/harness.sh --exec, which exports SBX_URL and the tokens. Timing-free: every wait is a
bounded poll, never an assumption about this machine's speed."""
import base64
import os
import sys
import threading
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import diag, done, is_, ok, skip  # noqa: E402

URL = os.environ["SBX_URL"]
A = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"]}
B = {"Authorization": "Bearer " + os.environ["SBX_TOKEN2"]}
c = httpx.Client(base_url=URL, verify=False, timeout=180, headers=A)
cb = httpx.Client(base_url=URL, verify=False, timeout=180, headers=B)


def j(r):
    try:
        return r.json()
    except ValueError:
        return {"raw": r.text}


def code_of(r):
    e = j(r).get("error") if isinstance(j(r), dict) else None
    return e.get("code") if isinstance(e, dict) else None


def session(client=c):
    r = client.post("/v1/sessions")
    assert r.status_code == 201, r.text
    return r.json()["id"]


def new_ctx(sid, lang="python", client=c, **kw):
    body = {"language": lang}
    body.update(kw)
    return client.post(f"/v1/sessions/{sid}/contexts", json=body)


def run(sid, cid, code, client=c, **kw):
    body = {"code": code}
    body.update(kw)
    r = client.post(f"/v1/sessions/{sid}/contexts/{cid}/execute", json=body)
    return r.status_code, j(r)


def main_text(d):
    for x in d.get("results") or []:
        if x.get("is_main_result"):
            return x.get("text")
    return None


def run_until_free(sid, cid, code, secs=60, **kw):
    """A cell on a context another call may still hold: retried while it answers 409."""
    end = time.monotonic() + secs
    while True:
        s, d = run(sid, cid, code, **kw)
        if s != 409 or time.monotonic() > end:
            return s, d
        time.sleep(0.2)


S = session()

# ---- create, list ----
r = new_ctx(S)
d = j(r)
is_(r.status_code, 201, "create: 201")
CID = d.get("id", "")
ok(len(CID) == 32 and all(ch in "0123456789abcdef" for ch in CID), "create: a 32-hex id", d)
ok(d.get("language") == "python" and d.get("execution_count") == 0 and "created_at" in d,
   "create: language, execution_count 0, created_at", d)
r = new_ctx(S, "ruby")
ok(r.status_code == 400 and code_of(r) == "invalid_language" and
   j(r)["error"].get("field") == "language", "create: ruby is 400 invalid_language", j(r))
r = c.post(f"/v1/sessions/{S}/contexts", json={"language": "python", "colour": 1})
ok(r.status_code == 400 and code_of(r) == "unknown_field", "create: unknown field is 400", j(r))
r = c.post(f"/v1/sessions/{S}/contexts", json={"language": "python",
                                               "limits": {"memory_mb": 1 << 30}})
ok(r.status_code == 400 and code_of(r) == "limit_too_high", "create: memory above max: 400",
   j(r))
r = c.get(f"/v1/sessions/{S}/contexts")
lst = j(r)
ok(r.status_code == 200 and isinstance(lst, list) and
   [x["id"] for x in lst] == [CID] and lst[0].get("state") in ("idle", "busy"),
   "list: the context, idle", lst)

# ---- execute: value, output, error ----
s, d = run(S, CID, "x = 6 * 7\nx")
ok(s == 200 and d.get("status") == "ok" and main_text(d) == "42" and
   d.get("execution_count") == 1 and d.get("state") == "kept" and d.get("error") is None,
   "execute: the last expression is the main result", d)
for k in ("exit_code", "signal", "stdout", "stderr", "stdout_truncated", "stderr_truncated",
          "wall_ms", "cpu_ms", "memory_kb"):
    ok(k in d, f"execute: the run result's {k} is there", sorted(d))
s, d = run(S, CID, "import sys\nprint('out')\nprint('err', file=sys.stderr)\nx;")
ok(d.get("stdout") == "out\n" and d.get("stderr") == "err\n" and d.get("results") == [],
   "execute: stdout and stderr apart; a trailing ';' hides the value", d)
s, d = run(S, CID, "def f():\n    return 1 / 0\nf()")
e = d.get("error") or {}
ok(d.get("status") == "error" and e.get("name") == "ZeroDivisionError" and
   isinstance(e.get("traceback"), list) and d.get("state") == "kept",
   "execute: an exception is status error with a structured error", d)
ok(not any("sbx_kernel" in line for line in e.get("traceback", [])),
   "execute: the traceback shows no kernel frame", e)

# ---- state across 50 cells ----
run(S, CID, "n = 0")
counts = []
for i in range(50):
    s, d = run(S, CID, "n += 1")
    counts.append((s, d.get("status"), d.get("execution_count")))
s, d = run(S, CID, "n")
ok(all(x[0] == 200 and x[1] == "ok" for x in counts) and main_text(d) == "50",
   "50 cells: the state is kept", (counts[-3:], d))
ok(all(counts[i][2] + 1 == counts[i + 1][2] for i in range(49)),
   "50 cells: execution_count counts them", counts[:3])

# ---- a plot ----
s, d = run(S, CID, "import importlib.util\nimportlib.util.find_spec('matplotlib') is not None")
if main_text(d) == "True":
    s, d = run(S, CID, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nNone")
    pngs = [x["png"] for x in d.get("results") or [] if x.get("png")]
    raw = base64.b64decode(pngs[0]) if pngs else b""
    ok(s == 200 and len(pngs) == 1 and raw.startswith(b"\x89PNG\r\n\x1a\n") and
       raw[12:16] == b"IHDR", "a plot comes back as one valid PNG",
       {k: (v if k != "results" else len(v)) for k, v in d.items()})
else:
    skip("python3-matplotlib is not installed in the sandbox's root", "a plot as a PNG")

# ---- limits: per cell ----
s, d = run(S, CID, "1", limits={"memory_mb": 64})
ok(s == 400 and (d.get("error") or {}).get("field") == "limits",
   "execute: memory_mb is the context's, not a cell's: 400", d)
s, d = run(S, CID, "1", limits={"wall_ms": 10 ** 9})
ok(s == 400 and (d.get("error") or {}).get("code") == "limit_too_high",
   "execute: wall_ms above the maximum: 400 limit_too_high", d)
s, d = run(S, CID, "while True:\n    pass", limits={"wall_ms": 1000})
ok(d.get("status") == "timeout" and d.get("state") == "kept" and d.get("limit") in ("wall", "cpu"),
   "while True with wall 1 s: timeout, state kept", d)
s, d = run(S, CID, "x")
ok(main_text(d) == "42", "after the timeout x is still 42", d)

# C-level hang: SIGINT blocked, so the interrupt cannot land: killed, state lost.
s, d = run(S, CID, "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
           "time.sleep(60)", limits={"wall_ms": 1000})
ok(s == 200 and d.get("status") == "timeout" and d.get("state") == "lost",
   "a hang with SIGINT blocked: timeout, state lost", d)
s, d = run(S, CID, "'x' in dir()")
ok(main_text(d) == "False" and d.get("execution_count") == 1,
   "after the kill: a fresh interpreter (x gone, execution_count 1)", d)

# os._exit: lost, and the next cell works
s, d = run(S, CID, "import os\nos._exit(3)")
ok(s == 200 and d.get("state") == "lost", "os._exit: state lost", d)
s, d = run(S, CID, "1 + 1")
ok(main_text(d) == "2" and d.get("state") == "kept", "after os._exit the next cell works", d)

# a cell that closes its own stdout cannot break the next one
s, d = run(S, CID, "import os, sys\nprint('bye')\nsys.stdout.flush()\nos.close(1)")
s, d = run(S, CID, "print('still here')")
ok(d.get("stdout") == "still here\n", "a cell that closed fd 1: the next cell's output is there",
   d)

# memory bomb in a small context
r = new_ctx(S, limits={"memory_mb": 64})
MC = j(r).get("id")
ok(r.status_code == 201 and j(r).get("memory_mb") == 64, "create with memory_mb 64", j(r))
s, d = run(S, MC, "keep = 1\nb = b'x' * (512 << 20)")
ok(s == 200 and (d.get("status") == "memory_limit" or
                 (d.get("error") or {}).get("name") == "MemoryError"),
   "a memory bomb: memory_limit (or MemoryError)", d)
s, d = run(S, MC, "1 + 1")
ok(main_text(d) == "2", "after the memory bomb the context answers", d)

# fork bomb: bounded by the context's processes limit; the context answers afterwards
s, d = run(S, MC, "import os, time\nfor _ in range(10000):\n    try:\n        if os.fork() == 0:\n"
           "            time.sleep(30)\n            os._exit(0)\n    except OSError:\n        break\n"
           "'forked'", limits={"wall_ms": 5000})
ok(s == 200 and d.get("status") in ("ok", "error", "timeout", "memory_limit"),
   "a fork bomb ends (processes limit)", d)
s, d = run_until_free(S, MC, "2 + 2")
ok(main_text(d) == "4", "after the fork bomb the context answers", d)
r = c.delete(f"/v1/sessions/{S}/contexts/{MC}")
is_(r.status_code, 204, "delete the small context")

# ---- interrupt route ----
box = {}


def slow(key, code, **kw):
    box[key] = run(S, CID, code, **kw)


t = threading.Thread(target=slow, args=("int", "import time\nx = 1\nwhile True:\n    pass"))
t.start()
time.sleep(1.0)
end = time.monotonic() + 30
while t.is_alive() and time.monotonic() < end:
    r = c.post(f"/v1/sessions/{S}/contexts/{CID}/interrupt")
    if r.status_code != 204:
        break
    t.join(1.0)
t.join(60)
s, d = box.get("int", (0, {}))
ok(r.status_code == 204, "interrupt: 204", j(r) if r.content else "")
ok(d.get("status") == "error" and (d.get("error") or {}).get("name") == "KeyboardInterrupt" and
   d.get("state") == "kept", "interrupt: the cell ends in KeyboardInterrupt, state kept", d)

# ---- a client that goes away interrupts its cell ----
t0 = time.monotonic()
try:
    httpx.post(f"{URL}/v1/sessions/{S}/contexts/{CID}/execute", headers=A, verify=False,
               timeout=2, json={"code": "import time\ntime.sleep(40)\ngone_flag = 1"})
    gone = False
except httpx.TimeoutException:
    gone = True
ok(gone, "disconnect: the client gave up after 2 s")
s, d = run_until_free(S, CID, "'gone_flag' in dir()", secs=60)
ok(main_text(d) == "False" and time.monotonic() - t0 < 40,
   "disconnect: the cell was interrupted (its next line never ran)", (s, d))

# ---- two callers: never interleaved ----
t = threading.Thread(target=slow, args=("a", "import time\ntime.sleep(5)\n'a'"))
t.start()
time.sleep(1.0)
r = c.post(f"/v1/sessions/{S}/contexts/{CID}/execute", json={"code": "'b'"})
t.join(60)
sa, da = box.get("a", (0, {}))
ok(main_text(da) == "'a'", "two callers: the first cell ran", da)
ok((r.status_code == 409 and code_of(r) == "context_busy" and r.headers.get("retry-after")) or
   (r.status_code == 200 and main_text(j(r)) == "'b'"),
   "two callers: the second waits or gets 409 context_busy", (r.status_code, j(r)))

# ---- ownership ----
r = cb.get(f"/v1/sessions/{S}/contexts")
ok(r.status_code == 404, "bob: 404 on alice's session's contexts", j(r))
r = cb.post(f"/v1/sessions/{S}/contexts/{CID}/execute", json={"code": "1"})
ok(r.status_code == 404, "bob: 404 on alice's context", j(r))
SB = session(cb)
r = cb.post(f"/v1/sessions/{SB}/contexts/{CID}/execute", json={"code": "1"})
ok(r.status_code == 404 and code_of(r) == "context_not_found",
   "bob: alice's context id in his own session is context_not_found", j(r))
r = c.post(f"/v1/sessions/{S}/contexts/{'0' * 32}/execute", json={"code": "1"})
ok(r.status_code == 404 and code_of(r) == "context_not_found", "an unknown context: 404", j(r))

# ---- variables ----
r = c.put(f"/v1/sessions/{S}/contexts/{CID}/variables/data", json={"a": [1, 2], "b": None})
ok(r.status_code == 200 and j(r).get("name") == "data", "PUT variable: 200", j(r))
s, d = run(S, CID, "data['a'][1] + (data['b'] is None)")
ok(main_text(d) == "3", "the injected value is a Python dict", d)
r = c.put(f"/v1/sessions/{S}/contexts/{CID}/variables/1bad", json=1)
ok(r.status_code == 400 and j(r)["error"].get("field") == "name", "PUT a bad name: 400", j(r))
r = c.get(f"/v1/sessions/{S}/contexts/{CID}/variables")
vs = j(r)
ok(r.status_code == 200 and isinstance(vs, list) and
   any(v.get("name") == "data" and v.get("type") == "dict" for v in vs) and
   all(set(v) == {"name", "type", "repr"} for v in vs), "GET variables lists data", vs)

# ---- restart ----
r = c.post(f"/v1/sessions/{S}/contexts/{CID}/restart")
ok(r.status_code == 200, "restart: 200", j(r))
s, d = run(S, CID, "'data' in dir()")
ok(main_text(d) == "False" and d.get("execution_count") == 1, "restart: the state is gone", d)

# ---- repl ----
r = c.post(f"/v1/sessions/{S}/repl", json={"code": "y = 5"})
d1 = j(r)
r = c.post(f"/v1/sessions/{S}/repl", json={"code": "y * 2"})
d2 = j(r)
ok(r.status_code == 200 and main_text(d2) == "10" and d1.get("context_id") and
   d1.get("context_id") == d2.get("context_id"), "repl: one default context, state kept",
   (d1, d2))
r = c.post(f"/v1/sessions/{S}/repl", json={"code": "echo hi", "language": "bash"})
ok(r.status_code == 200 and j(r).get("stdout") == "hi\n" and
   j(r).get("context_id") != d1.get("context_id"), "repl: bash has its own default", j(r))
lst = j(c.get(f"/v1/sessions/{S}/contexts"))
ok(sum(1 for x in lst if x.get("default")) == 2, "list: the two defaults are marked", lst)
# contexts.per_client (4) counts live contexts: the bash default goes again
for x in lst:
    if x.get("default") and x.get("language") == "bash":
        c.delete(f"/v1/sessions/{S}/contexts/{x['id']}")

# ---- bash ----
r = new_ctx(S, "bash")
BC = j(r).get("id")
ok(r.status_code == 201, "create bash: 201", j(r))
run(S, BC, "mkdir -p sub && cd sub\nexport V=7\nf() { echo fn$1; }")
s, d = run(S, BC, "pwd; echo $V; f 1")
ok(d.get("stdout") == "/work/sub\n7\nfn1\n" and d.get("exit_code") == 0,
   "bash: cwd, variables and functions persist", d)
s, d = run(S, BC, "false")
ok(d.get("exit_code") == 1 and d.get("status") == "error", "bash: exit_code is the last command's",
   d)
r = new_ctx(S, "bash", cwd="sub")
d = j(r)
ok(r.status_code == 201, "create bash with cwd: 201", d)
s, d = run(S, d.get("id"), "pwd")
ok(d.get("stdout") == "/work/sub\n", "cwd: the context starts there", d)
r = new_ctx(S, "python", cwd="nope")
ok(r.status_code == 400 and j(r)["error"].get("field") == "cwd", "cwd not a directory: 400",
   j(r))

# ---- fork copies files, not contexts ----
r = c.post(f"/v1/sessions/{S}/fork")
F = j(r).get("id")
r = c.get(f"/v1/sessions/{F}/contexts")
ok(r.status_code == 200 and j(r) == [], "fork: the copy has no contexts", j(r))
c.delete(f"/v1/sessions/{F}")

# ---- delete ----
r = c.delete(f"/v1/sessions/{S}/contexts/{BC}")
is_(r.status_code, 204, "delete: 204")
s, d = run(S, BC, "echo")
ok(s == 404, "delete: the context is gone (404)", d)

# ---- session delete while a cell is busy ----
t = threading.Thread(target=slow, args=("del", "import time\ntime.sleep(60)"))
t0 = time.monotonic()
t.start()
time.sleep(1.5)
r = c.delete(f"/v1/sessions/{S}")
is_(r.status_code, 204, "session delete during a busy cell: 204")
t.join(60)
s, d = box.get("del", (0, {}))
ok(not t.is_alive() and time.monotonic() - t0 < 50 and s in (200, 404, 500),
   "session delete: the busy cell ends at once", (s, d))
r = c.get(f"/v1/sessions/{S}/contexts")
ok(r.status_code == 404, "session delete: its contexts are gone with it", j(r))
c.delete(f"/v1/sessions/{SB}", headers=B)
done()
