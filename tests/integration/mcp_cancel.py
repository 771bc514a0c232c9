"""mcp_cancel.py: cancelling MCP tool calls (API.md, MCP; issue 19). Each long call is a program
that appends a line to a file of its session every 0.1 s for up to 25 s; a call is "gone" when
that file stops growing, read through the API while the call would still be running. Checked:
  - an SSE tools/call whose stream the client closes: the run stops;
  - a plain JSON tools/call whose connection drops: the run stops;
  - notifications/cancelled (2025-11-25, a separate POST, 202) for the request id: the run stops
    and the pending POST ends at once; the same notification from another client does nothing;
  - the same in the 2026-07-28 form (_meta and Mcp-Method headers);
  - a python cell (a context) is interrupted when its client goes, and the context still works;
  - the server still answers afterwards.
Timing never depends on this machine's speed: "stops" is measured against the 25 s the program
would otherwise run, with generous deadlines. Run by mcp_cancel.t under harness.sh --exec."""
import json
import os
import sys
import threading
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
H = {"Accept": "application/json, text/event-stream"}


def client(token, timeout=120):
    return httpx.Client(base_url=URL, verify=False, timeout=timeout,
                        headers=dict(H, Authorization="Bearer " + token))


alice = client(os.environ["SBX_TOKEN"])
bob = client(os.environ["SBX_TOKEN2"])
ids = iter(range(100, 10**6))


def body(method, params, rid=None, modern=True):
    p = dict(params)
    if modern:
        p["_meta"] = dict(p.get("_meta", {}),
                          **{"io.modelcontextprotocol/protocolVersion": MODERN})
    b = {"jsonrpc": "2.0", "method": method, "params": p}
    if rid is not None:
        b["id"] = rid
    return b


def headers(method, name=None, modern=True):
    if not modern:
        return {"MCP-Protocol-Version": LEGACY, "Content-Type": "application/json"}
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method,
         "Content-Type": "application/json"}
    if name:
        h["Mcp-Name"] = name
    return h


def tool(name, args, c=alice, modern=True):
    r = c.post("/mcp", content=json.dumps(body("tools/call", {"name": name, "arguments": args},
                                               next(ids), modern)),
               headers=headers("tools/call", name, modern))
    return r.json().get("result", {})


def beats(sid, path):
    r = alice.get(f"/v1/sessions/{sid}/files/{path}")
    return len(r.content) if r.status_code == 200 else -1


def wait_growing(sid, path, deadline=30):
    """True once the file exists and has grown (the program is running)."""
    t0 = time.monotonic()
    first = -1
    while time.monotonic() - t0 < deadline:
        n = beats(sid, path)
        if n > 0 and first < 0:
            first = n
        elif first > 0 and n > first:
            return True
        time.sleep(0.3)
    return False


def stopped(sid, path, deadline=20, quiet=3.0):
    """True when the file stops growing for `quiet` seconds within `deadline` (the program
    would write every 0.1 s for 25 s)."""
    t0 = time.monotonic()
    last, since = beats(sid, path), time.monotonic()
    while time.monotonic() - t0 < deadline:
        time.sleep(0.5)
        n = beats(sid, path)
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
    return False


def program(path):
    return ("import time\n"
            "for i in range(250):\n"
            f"    open('{path}', 'a').write('beat\\n')\n"
            "    time.sleep(0.1)\n"
            f"open('{path}.done', 'w').write('done')\n")


def execute_args(sid, path):
    return {"language": "python", "session_id": sid, "code": program(path),
            "limits": {"wall_ms": 40000, "cpu_ms": 30000}}


sid = tool("create_session", {})["structuredContent"]["session_id"]
ok(sid, "a session through MCP")

# ---- an SSE call whose stream the client closes ----
b = body("tools/call", {"name": "execute", "arguments": execute_args(sid, "sse.txt"),
                        "_meta": {"progressToken": "p1"}}, next(ids))
with httpx.Client(base_url=URL, verify=False, timeout=60,
                  headers=dict(H, Authorization="Bearer " + os.environ["SBX_TOKEN"])) as c1:
    with c1.stream("POST", "/mcp", content=json.dumps(b),
                   headers=headers("tools/call", "execute")) as r:
        ok(r.headers.get("content-type", "").startswith("text/event-stream"),
           "the long call streams (SSE)")
        ok(wait_growing(sid, "sse.txt"), "the program runs")
    # leaving both blocks closes the response and the connection
ok(stopped(sid, "sse.txt"), "closing the SSE stream stops the run")
is_(beats(sid, "sse.txt.done"), -1, "the program never reached its end")

# ---- a plain JSON call whose connection drops ----
def dropped(name, args):
    """A tools/call whose client gives up after 4 s (its connection closes)."""
    try:
        with client(os.environ["SBX_TOKEN"], timeout=4) as c2:
            c2.post("/mcp", content=json.dumps(body("tools/call", {
                "name": name, "arguments": args}, next(ids))),
                headers=headers("tools/call", name))
    except httpx.TimeoutException:
        pass


th = threading.Thread(target=dropped, args=("execute", execute_args(sid, "plain.txt")))
th.start()
ok(wait_growing(sid, "plain.txt"), "the plain JSON call runs")
th.join()
ok(stopped(sid, "plain.txt"), "dropping the connection of a plain JSON call stops the run")


# ---- notifications/cancelled, 2025-11-25 and 2026-07-28 ----
def cancelled_by_notification(modern, path):
    rid = next(ids)
    box = {}

    def long_call():
        t0 = time.monotonic()
        r = alice.post("/mcp", content=json.dumps(body("tools/call", {
            "name": "execute", "arguments": execute_args(sid, path)}, rid, modern)),
            headers=headers("tools/call", "execute", modern))
        box["r"], box["t"] = r, time.monotonic() - t0

    era = "2026-07-28" if modern else "2025-11-25"
    th = threading.Thread(target=long_call)
    th.start()
    ok(wait_growing(sid, path), f"{era}: the call runs")
    note = body("notifications/cancelled", {"requestId": rid, "reason": "test"}, None, modern)
    r = bob.post("/mcp", content=json.dumps(note),
                 headers=headers("notifications/cancelled", None, modern))
    is_(r.status_code, 202, f"{era}: another client's notifications/cancelled: 202")
    time.sleep(1.5)
    ok(wait_growing(sid, path, deadline=10), f"{era}: ... and the call keeps running")
    t_cancel = time.monotonic()
    r = alice.post("/mcp", content=json.dumps(note),
                   headers=headers("notifications/cancelled", None, modern))
    is_(r.status_code, 202, f"{era}: notifications/cancelled: 202")
    th.join(60)
    ok("r" in box and time.monotonic() - t_cancel < 20,
       f"{era}: the pending call ended soon after ({time.monotonic() - t_cancel:.1f} s)")
    d = box["r"].json() if "r" in box else {}
    ok("result" not in d, f"{era}: no result for the cancelled call", d)
    ok(stopped(sid, path), f"{era}: the run stopped")
    is_(beats(sid, path + ".done"), -1, f"{era}: the program never reached its end")


# ---- an evaluate whose connection drops (a grader's long test run) ----
eval_args = {"language": "python", "session_id": sid, "code": program("eval.txt"),
             "cases": [{"stdin": "", "expected_stdout": ""}],
             "limits": {"wall_ms": 40000, "cpu_ms": 30000}}
th = threading.Thread(target=dropped, args=("evaluate", eval_args))
th.start()
ok(wait_growing(sid, "eval.txt"), "an evaluate call runs its case")
th.join()
ok(stopped(sid, "eval.txt"), "dropping the connection of an evaluate call stops its cases")
is_(beats(sid, "eval.txt.done"), -1, "... the case never reached its end")

cancelled_by_notification(False, "legacy.txt")
cancelled_by_notification(True, "modern.txt")

# A notification for a call that is not running (done or unknown): 202, nothing else.
r = alice.post("/mcp", content=json.dumps(body("notifications/cancelled", {"requestId": 999999})),
               headers=headers("notifications/cancelled"))
is_(r.status_code, 202, "cancelling an unknown request id: 202, ignored")

# ---- a python cell whose client goes ----
cell = ("import time\n"
        "for i in range(250):\n"
        "    open('cell.txt', 'a').write('beat\\n')\n"
        "    time.sleep(0.1)\n")


def dropped_cell():
    try:
        with client(os.environ["SBX_TOKEN"], timeout=4) as c3:
            c3.post("/mcp", content=json.dumps(body("tools/call", {
                "name": "python", "arguments": {"session_id": sid, "code": cell,
                                                "limits": {"wall_ms": 40000}}}, next(ids))),
                headers=headers("tools/call", "python"))
    except httpx.TimeoutException:
        pass


res = tool("python", {"session_id": sid, "code": "kept = 41"})
ok(res.get("isError") is False, "a python cell runs", res)
th = threading.Thread(target=dropped_cell)
th.start()
ok(wait_growing(sid, "cell.txt"), "the python cell runs")
th.join()
ok(stopped(sid, "cell.txt"), "dropping the connection interrupts the python cell")
res = tool("python", {"session_id": sid, "code": "print(kept + 1)"})
is_(res.get("structuredContent", {}).get("stdout"), "42\n",
    "the context is still there, its state kept")

# ---- still healthy ----
res = tool("execute", {"language": "python", "code": "print(1)"})
is_(res.get("structuredContent", {}).get("stdout"), "1\n", "the server still answers")
done()
