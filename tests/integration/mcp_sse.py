"""mcp_sse.py: progress on an SSE response for tools/call (API.md, MCP). Over HTTPS through the
real stack: with a progressToken and Accept text/event-stream the answer is text/event-stream
(X-Accel-Buffering: no, which nginx consumes) whose events parse as JSON-RPC, begin with notifications/progress carrying
the token and end with the call's response; the first event arrives before the call has finished, a 5 s call gets more
progress events while it runs;
without the token, or with Accept application/json only, the answer is plain JSON.
Run by mcp_sse.t under tests/lib/harness.sh --exec."""
import json
import os
import sys
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
MODERN = "2026-07-28"
c = httpx.Client(base_url=URL, verify=False, timeout=120,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"]})


def call(code, token=None, accept="application/json, text/event-stream"):
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    if token is not None:
        meta["progressToken"] = token
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "execute", "arguments": {"language": "python", "code": code},
                       "_meta": meta}}
    h = {"Accept": accept, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
         "Mcp-Name": "execute", "Content-Type": "application/json"}
    return c.stream("POST", "/mcp", content=json.dumps(body), headers=h)


def events(r):
    """(event list, seconds to the first whole event) from a streamed SSE response. Events end
    with a blank line; an event's data lines are joined with newlines."""
    out, buf, first = [], "", None
    t0 = time.monotonic()
    for chunk in r.iter_text():
        buf += chunk.replace("\r\n", "\n")
        while "\n\n" in buf:
            ev, buf = buf.split("\n\n", 1)
            data = [ln[5:].lstrip(" ") for ln in ev.split("\n") if ln.startswith("data:")]
            if data:
                if first is None:
                    first = time.monotonic() - t0
                out.append(json.loads("\n".join(data)))
    ok(buf.strip() == "", f"the stream ends with a whole event ({buf!r:.80})")
    return out, first


# A call that sleeps: the progress event must come before it ends, not with the result.
t0 = time.monotonic()
with call("import time; time.sleep(2); print(1)", token="tok-1") as r:
    is_(r.status_code, 200, "SSE call: 200")
    ok(r.headers.get("content-type", "").startswith("text/event-stream"),
       f"SSE call: Content-Type text/event-stream ({r.headers.get('content-type')})")
    evs, first = events(r)
total = time.monotonic() - t0
prog = [e for e in evs if e.get("method") == "notifications/progress"]
ok(prog and prog[0]["params"].get("progressToken") == "tok-1"
   and isinstance(prog[0]["params"].get("progress"), (int, float))
   and isinstance(prog[0]["params"].get("message"), str),
   f"a progress notification with the token, progress and message: {prog!r:.200}")
last = evs[-1] if evs else {}
ok(last.get("id") == 7 and last.get("result", {}).get("structuredContent", {}).get("stdout") == "1\n",
   f"the last event is the response: {last!r:.200}")
ok(all(e.get("jsonrpc") == "2.0" for e in evs), "every event is a JSON-RPC message")
# Timing is relative to the call's own length (2 s of sleep), never to this machine's speed.
ok(first is not None and first < total - 1.5,
   f"the progress event came before the run ended (first {first}, total {total:.2f} s)")

# A 5 s call gets progress while it runs (every 2 s of wall time): at least one more event
# after the start, with progress increasing, and the result last.
with call("import time; time.sleep(5); print(5)", token="tok-2") as r:
    evs, _ = events(r)
prog = [e["params"] for e in evs if e.get("method") == "notifications/progress"]
ok(len(prog) >= 2 and all(p.get("progressToken") == "tok-2" for p in prog),
   f"progress events while the call runs: {len(prog)}")
ok(all(a["progress"] < b["progress"] for a, b in zip(prog, prog[1:])),
   f"progress increases: {[p['progress'] for p in prog]}")
ok(evs and evs[-1].get("result", {}).get("structuredContent", {}).get("stdout") == "5\n",
   "the 5 s call's result is the last event")

# An integer token is echoed as an integer.
with call("print(2)", token=42) as r:
    evs, _ = events(r)
ok(any(e.get("method") == "notifications/progress" and e["params"].get("progressToken") == 42
       for e in evs), "an integer progressToken is echoed")

# Without a token: plain JSON, as before.
with call("print(3)") as r:
    r.read()
    ok(r.headers.get("content-type", "").startswith("application/json"), "no token: JSON answer")
    d = json.loads(r.text)
    is_(d.get("result", {}).get("structuredContent", {}).get("stdout"), "3\n", "no token: result")

# A token, but a client that only takes JSON: plain JSON.
with call("print(4)", token="t", accept="application/json") as r:
    r.read()
    ok(r.headers.get("content-type", "").startswith("application/json"),
       "Accept without text/event-stream: JSON answer")
    is_(json.loads(r.text).get("result", {}).get("structuredContent", {}).get("stdout"), "4\n",
        "Accept without text/event-stream: result")
done()
