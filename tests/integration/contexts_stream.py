"""contexts_stream.py: "stream": true on context cells (API.md "Contexts" and "Runs") through the
real stack over HTTPS, with a real client reading the NDJSON answer line by line (http.client):
output and display data arrive while the cell runs, a flood stays capped and agrees with the end
event, a client that leaves interrupts its cell (state kept, the cell saw KeyboardInterrupt),
bash streams too, repl streams, keepalives; and a cell that forges the kernel's frames (writing
to the kernel's own descriptors) changes nothing of its answer: no fake end, result, execution
count or state. Run by contexts_stream.t under tests/lib/harness.sh. No assumption about this
machine's speed: the only timing checks are lower bounds the cells impose (their own sleeps)."""
import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sbx_http  # noqa: E402
from tap import diag, done, is_, ok, skip  # noqa: E402

URL = urllib.parse.urlparse(os.environ["SBX_URL"])
TOK = {"alice": os.environ["SBX_TOKEN"], "bob": os.environ["SBX_TOKEN2"]}
CTX = ssl._create_unverified_context()


def conn():
    return http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX, timeout=180)


def jcall(method, path, body=None, who="alice"):
    c = conn()
    h = {"Authorization": "Bearer " + TOK[who]}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    st, b = r.status, r.read()
    c.close()
    try:
        return st, json.loads(b or b"null")
    except ValueError:
        return st, {"raw": b.decode(errors="replace")}


def Stream(path, body, who="alice"):
    """A streamed request (tests/lib/sbx_http.py) as alice or bob."""
    return sbx_http.Stream(path, body, token=TOK[who])


def clean(ev):
    return {k: v for k, v in ev.items() if k not in ("_t", "type")}


st, d = jcall("POST", "/v1/sessions", {})
SID = d["id"]
st, d = jcall("POST", f"/v1/sessions/{SID}/contexts", {"language": "python"})
is_(st, 201, "a python context")
CID = d["id"]
EXEC = f"/v1/sessions/{SID}/contexts/{CID}/execute"


def cell(code, **kw):
    """A cell without streaming, retried while the context is still busy (409)."""
    end = time.monotonic() + 120
    body = {"code": code}
    body.update(kw)
    while True:
        st, d = jcall("POST", EXEC, body)
        if st != 409 or time.monotonic() > end:
            return st, d
        time.sleep(0.2)


# -- 1. output arrives while the cell runs; the events add up to the end event --
st, d = cell("x = 41")
s = Stream(EXEC, {"code": "import time\nprint('first', flush=True)\ntime.sleep(2)\n"
                          "print('second')\nx + 1", "stream": True})
is_(s.status, 200, "stream: 200")
ok(s.ctype.startswith("application/x-ndjson"), "stream: application/x-ndjson", s.ctype)
# The kernel's stdout writes through (print's text and its newline are two writes), so the
# line may come as more than one event: read stdout events until the line is whole.
first = s.until(lambda e: e["type"] not in ("start", "keepalive") and
                (e["type"] != "stdout" or not "first\n".startswith(s.text("stdout")) or
                 s.text("stdout") == "first\n"))
ok(s.events[0]["type"] == "start", "stream: a start event first", s.events[:1])
end = s.rest()
ok(first and first["type"] == "stdout" and
   "".join(e["data"] for e in s.events[:s.events.index(first) + 1]
           if e["type"] == "stdout") == "first\n",
   "stream: the first line comes as stdout events", first)
ok(end and end["type"] == "end", "stream: the end event last", end)
ok(first and end and end["_t"] - first["_t"] >= 1.5,
   "stream: the first line arrived before the cell's 2 s sleep ended",
   end and first and end["_t"] - first["_t"])
ok(end and end.get("stdout") == "first\nsecond\n" == s.text("stdout"),
   "stream: the stdout events add up to the end's stdout", end)
res = [e for e in s.of("result")]
ok(len(res) == 1 and res[0].get("is_main_result") and res[0].get("text") == "42" and
   end.get("results") == [clean(res[0])],
   "stream: the last expression is a result event, repeated in the end", (res, end.get("results")))
ok(end.get("state") == "kept" and end.get("status") == "ok" and
   isinstance(end.get("execution_count"), int), "stream: the end is the usual cell result", end)
s.close()

# -- 2. display data arrives before the end (a plot as it is shown, display()) --
s = Stream(EXEC, {"code": "class H:\n    def _repr_html_(self):\n        return '<b>hi</b>'\n"
                          "display(H())\nimport time\ntime.sleep(2)\nprint('done')",
                  "stream": True})
r = s.until(lambda e: e["type"] == "result")
end = s.rest()
ok(r and r.get("html") == "<b>hi</b>" and not r.get("is_main_result"),
   "display: a result event with its html", r)
ok(r and end and end["_t"] - r["_t"] >= 1.5, "display: it came before the cell ended",
   end and r and end["_t"] - r["_t"])
ok(end and end.get("results") == [clean(r)] if r else False,
   "display: the end repeats what was sent, nothing else", end and end.get("results"))
s.close()
st, d = cell("import importlib.util\nimportlib.util.find_spec('matplotlib') is not None")
has_mpl = st == 200 and any(x.get("text") == "True" for x in d.get("results") or [])
if has_mpl:
    s = Stream(EXEC, {"code": "import matplotlib.pyplot as plt, time\nplt.plot([1, 3, 2])\n"
                              "plt.show()\ntime.sleep(2)\nprint('after the plot')",
                      "stream": True})
    r = s.until(lambda e: e["type"] == "result")
    end = s.rest()
    import base64
    png = base64.b64decode(r.get("png", "")) if r else b""
    ok(png.startswith(b"\x89PNG\r\n\x1a\n"), "plot: a result event with a PNG", r and r.keys())
    ok(r and end and end["_t"] - r["_t"] >= 1.5, "plot: shown before the cell ended",
       end and r and end["_t"] - r["_t"])
    ok(end and [x.get("png") for x in end.get("results") or []] == [r.get("png")],
       "plot: the end's results are what was sent")
    s.close()
else:
    for name in ("plot: a result event with a PNG", "plot: shown before the cell ended",
                 "plot: the end's results are what was sent"):
        skip("no matplotlib in the template", name)

# -- 3. a flood stays capped, and what streamed is what the end says --
s = Stream(EXEC, {"code": "import sys\nfor i in range(200):\n    sys.stdout.write('x' * 50000)\n"
                          "print('é' * 1000)",
                  "limits": {"output_bytes": 100000}, "stream": True})
end = s.rest()
got = s.text("stdout")
ok(len(got.encode()) <= 100000, f"flood: at most output_bytes streamed ({len(got.encode())})")
ok(end and end.get("stdout_truncated") is True and end.get("stdout") == got,
   "flood: the end says truncated and agrees with the events", end and end.get("stdout_truncated"))
s.close()

# -- 4. a client that leaves interrupts its cell: state kept, the cell saw KeyboardInterrupt --
st, d = cell("x = 41\ncaught = False")
s = Stream(EXEC, {"code": "import time\nprint('go', flush=True)\ntry:\n    time.sleep(120)\n"
                          "except KeyboardInterrupt:\n    caught = True\n    raise",
                  "stream": True})
# print() may reach the holder as "go" then "\n": read output events until the line is whole
ev = s.until(lambda e: e["type"] == "stdout" and "go\n" in s.text("stdout"))
ok(ev and s.text("stdout") == "go\n", "leave: the cell started", s.events)
s.close()
st, d = cell("(x, caught)")
ok(st == 200 and d.get("state") == "kept" and
   any(x.get("text") == "(41, True)" for x in d.get("results") or []),
   "leave: the next cell sees the state kept and the KeyboardInterrupt caught", d)

# -- 5. keepalives while a cell is silent --
s = Stream(EXEC, {"code": "import time\ntime.sleep(6)", "stream": True})
end = s.rest()
ok(len(s.of("keepalive")) >= 1 and end and end["type"] == "end",
   "keepalive: a silent cell gets keepalives", [e["type"] for e in s.events])
s.close()

# -- 6. bash contexts stream; repl streams --
st, d = jcall("POST", f"/v1/sessions/{SID}/contexts", {"language": "bash"})
BID = d.get("id")
s = Stream(f"/v1/sessions/{SID}/contexts/{BID}/execute",
           {"code": "echo one; sleep 2; echo two; echo err >&2", "stream": True})
first = s.until(lambda e: e["type"] == "stdout")
end = s.rest()
ok(first and first["data"] == "one\n" and end["_t"] - first["_t"] >= 1.5,
   "bash: the first line came before the cell ended", first)
ok(end.get("stdout") == "one\ntwo\n" == s.text("stdout") and
   end.get("stderr") == "err\n" == s.text("stderr") and end.get("exit_code") == 0,
   "bash: the events add up to the end", end)
s.close()
s = Stream(f"/v1/sessions/{SID}/repl", {"code": "print('r')\n6 * 7", "stream": True})
end = s.rest()
ok(end and len(end.get("context_id") or "") == 32 and s.text("stdout") == "r\n" and
   [e.get("text") for e in s.of("result")] == ["42"], "repl: streams, the end names the context",
   end)
s.close()

# -- 7. validation errors stay ordinary JSON errors; other clients get 404 --
st, d = jcall("POST", EXEC, {"code": "1", "stream": "yes"})
is_(st, 400, "stream must be a boolean")
st, d = jcall("POST", EXEC, {"code": "1", "stream": True}, who="bob")
is_(st, 404, "another client's context is 404, streamed or not")

# -- 8. forged frames: a cell writing to the kernel's own descriptors changes nothing --
FORGE = r'''
import os, json
fake_reply = {"op": "execute", "status": "ok", "execution_count": 999, "error": None,
              "exit_code": 0, "results": [{"is_main_result": True, "text": "FORGED"}]}
lines = [json.dumps(fake_reply),
         json.dumps({"marker": "0" * 32, "op": "display", "result": {"text": "FORGED"}}),
         json.dumps({"marker": "0" * 32, "op": "execute", "status": "ok",
                     "execution_count": 999, "results": []}),
         json.dumps({"type": "end", "status": "ok", "stdout": "FORGED"}),
         json.dumps({"op": "display", "result": {"text": "FORGED"}})]
data = ("\n".join(lines) + "\n").encode()
n = 0
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + fd).startswith("socket:"):
            os.write(int(fd), data)
            n += 1
    except OSError:
        pass
os.write(1, b"\0" + b"0" * 32 + b"\0" + b'{"type":"end"}\n')
print("after", n)
6 * 7
'''
st, d = cell("1")
count0 = d.get("execution_count") if st == 200 else None
for streamed in (False, True):
    tag = "forged (streamed)" if streamed else "forged"
    if streamed:
        s = Stream(EXEC, {"code": FORGE, "stream": True})
        end = s.rest()
        evs = s.events
        s.close()
    else:
        st, end = cell(FORGE)
        evs = []
    texts = [x.get("text") for x in end.get("results") or []] + \
        [e.get("text") for e in evs if e["type"] == "result"]
    ok("after 1" in (end.get("stdout") or ""), f"{tag}: the cell found the kernel's socket and wrote",
       end.get("stdout"))
    ok("FORGED" not in texts and texts.count("42") == (2 if streamed else 1),
       f"{tag}: no forged result, the true one is there", texts)
    want = count0 + (2 if streamed else 1) if isinstance(count0, int) else None
    ok(end.get("execution_count") == want and end.get("state") == "kept" and
       end.get("status") == "ok", f"{tag}: execution_count and state are the kernel's",
       (end.get("execution_count"), want, end.get("state"), end.get("status")))
    if streamed:
        ends = [e for e in evs if e["type"] == "end"]
        ok(len(ends) == 1 and evs[-1] is ends[0],
           f"{tag}: exactly one end event, the last", [e["type"] for e in evs])
st, d = cell("1")
ok(st == 200 and isinstance(count0, int) and d.get("execution_count") == count0 + 3 and
   d.get("state") == "kept", "forged: the context goes on, counting its own cells", d)

done()
