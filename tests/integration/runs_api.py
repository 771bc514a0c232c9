"""runs_api.py: API.md "Runs" through the real stack over HTTPS, with a real client reading the
NDJSON answer line by line (http.client): output arrives while the program runs, UTF-8 and
base64 chunking, interactive stdin, SIGINT, ownership, caps on a flood, a slow reader, a client
that leaves, keepalives, and a session's background runs (start, list, output by cursor, kill,
caps, session delete). Run by runs_api.t under tests/lib/harness.sh, which exports SBX_URL and the
tokens. No assumption about this machine's speed: waits are bounded polls, and the only timing
checks are lower bounds the program itself imposes (its own sleeps)."""
import base64
import http.client
import json
import os
import ssl
import subprocess
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


def call(method, path, body=None, who="alice", raw=None, headers=None):
    """One request; returns (status, headers dict, body bytes)."""
    c = conn()
    h = {"Authorization": "Bearer " + TOK[who]}
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    c.close()
    return out


def jcall(*a, **kw):
    st, h, b = call(*a, **kw)
    try:
        return st, json.loads(b or b"null")
    except ValueError:
        return st, {"raw": b.decode(errors="replace")}


def Stream(path, body, who="alice"):
    """A streamed request (tests/lib/sbx_http.py) as alice or bob."""
    return sbx_http.Stream(path, body, token=TOK[who])


PY = "python"

# -- 1. validation errors stay ordinary JSON errors --
st, h, b = call("POST", "/v1/execute", {"language": "nope", "code": "", "stream": True})
is_(st, 400, "a bad request with stream: true is an ordinary 400")
ok(h.get("content-type", "").startswith("application/json"), "... as JSON, not NDJSON",
   h.get("content-type"))
st, d = jcall("POST", "/v1/execute", {"language": PY, "code": "1", "interactive": True})
ok(st == 400 and d["error"]["field"] == "interactive", "interactive needs stream", d)

# -- 2. the first output arrives while the program still runs --
s = Stream("/v1/execute", {"language": PY, "stream": True,
                           "code": "import time\nprint('one', flush=True)\ntime.sleep(2)\n"
                                   "print('two')\n"})
is_(s.status, 200, "stream: 200")
ok(s.ctype.startswith("application/x-ndjson"), "stream: application/x-ndjson", s.ctype)
start = s.next()
ok(start and start["type"] == "start" and len(start.get("run_id") or "") == 32,
   "the first event is start with a run_id", start)
first = s.until(lambda e: e["type"] == "stdout")
end = s.rest()
ok(first and end and end["type"] == "end", "stdout events, then the end event", s.events[-3:])
if first and end:
    ok(end["_t"] - first["_t"] >= 1.5,
       "the first line came while the program still ran (>= 1.5 s before the end)",
       f"first {first['_t']:.3f} end {end['_t']:.3f}")
    is_(s.text("stdout"), end.get("stdout"), "the stdout events add up to the end's stdout")
    is_(end.get("stdout"), "one\ntwo\n", "end holds the usual whole response")
    is_(end.get("run_id"), start["run_id"], "end names the run id")
s.close()

# -- 3. UTF-8: a character split between two writes never splits between events --
code = ("import sys, time\nsys.stdout.buffer.write(b'a\\xc3'); sys.stdout.flush()\n"
        "time.sleep(0.5)\nsys.stdout.buffer.write(b'\\xa9b\\n'); sys.stdout.flush()\n")
s = Stream("/v1/execute", {"language": PY, "stream": True, "code": code})
end = s.rest()
evs = [e["data"] for e in s.events if e["type"] == "stdout"]
ok(all("\ufffd" not in x for x in evs), "no event carries a broken character", evs)
is_(s.text("stdout"), "a\u00e9b\n", "the events add up to the text")
is_(end.get("stdout"), "a\u00e9b\n", "... as the end says")
s.close()

# -- 4. base64 --
s = Stream("/v1/execute", {"language": PY, "stream": True, "output_encoding": "base64",
                           "code": code})
end = s.rest()
is_(s.text("stdout", b64=True), b"a\xc3\xa9b\n", "base64 events decode to the bytes")
is_(base64.b64decode(end.get("stdout", "")), b"a\xc3\xa9b\n", "... as the end's stdout")
s.close()

# -- 5. a compiled language streams its compile step too --
st, langs = jcall("GET", "/v1/languages")
langs = langs if isinstance(langs, list) else (langs or {}).get("languages") or []
have_c = any(isinstance(x, dict) and x.get("id") == "c" for x in langs)
if have_c:
    s = Stream("/v1/execute", {"language": "c", "stream": True,
                               "code": "#include <stdio.h>\nint main(void){puts(\"hi\");return 0;}\n"})
    end = s.rest()
    ok(end and "compile" in end and end.get("stdout") == "hi\n", "c: compile, then the run",
       end)
    s.close()
    s = Stream("/v1/execute", {"language": "c", "stream": True, "code": "int main(void){ nope }"})
    end = s.rest()
    ce = [e for e in s.events if e["type"] == "stderr" and e.get("stage") == "compile"]
    ok(ce and end.get("stage") == "compile", "c: the compiler's errors stream as stage compile",
       s.events[-3:])
    s.close()
else:
    skip("no c", "c: compile, then the run")
    skip("no c", "c: the compiler's errors stream as stage compile")

# -- 6. interactive: three lines answered one at a time --
s = Stream("/v1/execute", {"language": PY, "stream": True, "interactive": True,
                           "code": "for i in range(3):\n    l = input()\n"
                                   "    print('got', l, flush=True)\n"})
start = s.next()
rid = start.get("run_id") if start else None
answered = 0
for word in ("x", "y", "z"):
    st, d = jcall("POST", f"/v1/runs/{rid}/stdin", raw=(word + "\n").encode(),
                  headers={"Content-Type": "application/octet-stream"})
    # The answer may come in several writes (an unbuffered interpreter): read to its newline.
    got = ""
    while not got.endswith("\n"):
        ev = s.until(lambda e: e["type"] in ("stdout", "end"))
        if not ev or ev["type"] == "end":
            break
        got += ev["data"]
    if st == 200 and got == f"got {word}\n":
        answered += 1
    else:
        diag(f"stdin {word}: {st} {d} -> {got!r}")
is_(answered, 3, "three lines of stdin, each answered before the next was sent")
end = s.rest()
ok(end and end.get("status") == "ok", "the interactive run ends ok", end)
st, d = jcall("POST", f"/v1/runs/{rid}/stdin", raw=b"late\n")
ok(st == 409 and d["error"]["code"] == "run_ended", "stdin to an ended run: 409 run_ended", d)
st, d = jcall("POST", f"/v1/runs/{rid}/signal", {"signal": "SIGINT"})
ok(st == 409 and d["error"]["code"] == "run_ended", "a signal to an ended run: 409 run_ended", d)
s.close()

# -- 7. SIGINT gives Python's KeyboardInterrupt; bob cannot touch alice's run --
s = Stream("/v1/execute", {"language": PY, "stream": True,
                           "code": "import time\nprint('ready', flush=True)\ntime.sleep(60)\n"})
rid = (s.next() or {}).get("run_id")
s.until(lambda e: e["type"] == "stdout")
st, d = jcall("POST", f"/v1/runs/{rid}/signal", {"signal": "SIGINT"}, who="bob")
ok(st == 404 and d["error"]["code"] == "run_not_found", "bob's signal to alice's run: 404", d)
st, d = jcall("POST", f"/v1/runs/{rid}/stdin", raw=b"x", who="bob")
ok(st == 404 and d["error"]["code"] == "run_not_found", "bob's stdin to alice's run: 404", d)
st, d = jcall("POST", f"/v1/runs/{rid}/signal", {"signal": "SIGHUP"})
ok(st == 400, "only SIGINT, SIGTERM, SIGKILL", d)
st, d = jcall("POST", f"/v1/runs/{rid}/signal", {"signal": "SIGINT"})
is_(st, 200, "SIGINT to the running program: 200")
end = s.rest()
ok(end and "KeyboardInterrupt" in (end.get("stderr") or ""),
   "its end shows the KeyboardInterrupt traceback", end)
ok("KeyboardInterrupt" in s.text("stderr"), "... which streamed as stderr", s.events[-3:])
s.close()
st, d = jcall("POST", "/v1/runs/" + "0" * 32 + "/signal", {"signal": "SIGINT"})
ok(st == 404 and d["error"]["code"] == "run_not_found", "an unknown run id: 404", d)

# -- 8. a flood stays capped; what streamed is what the end says --
s = Stream("/v1/execute", {"language": PY, "stream": True, "limits": {"output_bytes": 100000},
                           "code": "import sys\nwhile True:\n    sys.stdout.write('x' * 4096)\n"})
end = s.rest()
got = s.text("stdout")
ok(len(got) <= 100000, f"a flood streams at most output_bytes ({len(got)} bytes)")
ok(end and end.get("stdout_truncated") is True, "... and the end flags the truncation",
   {k: end.get(k) for k in ("status", "stdout_truncated")} if end else None)
ok(end and got == end.get("stdout"), "... and the events are exactly the end's stdout")
s.close()

# -- 9. a slow reader does not keep the run past its limits --
s = Stream("/v1/execute", {"language": PY, "stream": True,
                           "limits": {"wall_ms": 2000, "output_bytes": 1 << 20},
                           "code": "import sys\nwhile True:\n    sys.stdout.write('y' * 4096)\n"})
time.sleep(6)  # read nothing meanwhile
end = s.rest()
ok(end and end["type"] == "end" and end.get("wall_ms", 1e9) < 4000,
   "a reader that waits 6 s still gets a run that ended at its limits",
   {k: end.get(k) for k in ("status", "wall_ms", "limit")} if end else None)
s.close()

# -- 10. keepalives while nothing is printed --
s = Stream("/v1/execute", {"language": PY, "stream": True,
                           "code": "import time\ntime.sleep(6)\nprint('done')\n"})
end = s.rest()
kas = [e for e in s.events if e["type"] == "keepalive"]
ok(kas, f"a silent 6 s run gets keepalives ({len(kas)})")
gaps = [b["_t"] - a["_t"] for a, b in zip(s.events, s.events[1:])]
ok(gaps and max(gaps) < 5.5, "no gap between events is above 5 s",
   f"gaps {[round(g, 2) for g in gaps]}")
s.close()

# -- 11. session execute and session run stream; a client that leaves cancels its run --
st, sess = jcall("POST", "/v1/sessions", {})
sid = sess.get("id")
s = Stream(f"/v1/sessions/{sid}/run", {"cmd": "echo a; echo b >&2", "stream": True})
end = s.rest()
ok(end and s.text("stdout") == "a\n" and s.text("stderr") == "b\n" and end["exit_code"] == 0,
   "session run streams stdout and stderr", s.events)
s.close()
s = Stream(f"/v1/sessions/{sid}/execute", {"language": PY, "code": "print(6*7)", "stream": True})
end = s.rest()
ok(end and end.get("stdout") == "42\n" and s.text("stdout") == "42\n", "session execute streams")
s.close()
s = Stream(f"/v1/sessions/{sid}/run",
           {"cmd": "echo up; sleep 4; touch left_running", "stream": True})
s.until(lambda e: e["type"] == "stdout")
s.r.close()
s.c.sock.close() if s.c.sock else None
time.sleep(7)
st, h, b = call("GET", f"/v1/sessions/{sid}/files/left_running")
is_(st, 404, "a client that leaves cancels its run (the command after the sleep never ran)")

def kill_race():
    """A kill while long-polls, status requests and a second kill are in flight: every answer
    is a whole one (200 or 404 for the readers, one 204 and one 404 for the killers), never a
    500 from a keeper that left mid-answer. Three rounds, each with a run of its own."""
    import threading
    bad, killers = [], []
    for rnd in range(3):
        st, d = jcall("POST", f"/v1/sessions/{sid}/runs",
                      {"cmd": "echo tick; exec sleep 300"})
        if st != 202:
            bad.append(("start", st, d))
            continue
        rid = d["run_id"]
        got = []

        def reader(path):
            st, h, b = call("GET", path)
            got.append((path.split("?")[0].rsplit("/", 1)[-1], st, b[:120]))
            if "cursor=" in path and len(b) > 4096:  # it printed 5 bytes: never a heap's worth
                bad.append(("output past what the run printed", path, len(b)))

        def killer():
            st, h, b = call("DELETE", f"/v1/sessions/{sid}/runs/{rid}")
            killers.append(st)

        base = f"/v1/sessions/{sid}/runs/{rid}"
        held = f"{base}/output?stream=stderr&cursor=0&wait_ms=9000"  # silent: held till the end
        # stdout read to its end, then held there: the kill must not move the end back under it
        st, h, b = call("GET", f"{base}/output?cursor=0&wait_ms=5000")
        at = h.get("sbx-cursor", "0")
        # two long-polls held: runs.long_polls_per_client (2) allows no more per client
        ts = [threading.Thread(target=reader, args=(held,))]
        ts += [threading.Thread(target=reader,
                                args=(f"{base}/output?cursor={at}&wait_ms=9000",))]
        ts += [threading.Thread(target=reader, args=(base,)) for _ in range(2)]
        for t in ts:
            t.start()
        time.sleep(0.3)
        ks = [threading.Thread(target=killer) for _ in range(2)]
        ks += [threading.Thread(target=reader, args=(base,)) for _ in range(2)]
        for t in ks:
            t.start()
        for t in ts + ks:
            t.join(60)
        bad += [g for g in got if g[1] not in (200, 404)]
        st, d = jcall("GET", base)
        if st != 404:
            bad.append(("after", st, d))
    ok(not bad, "kills racing long-polls and status requests: every answer whole (200/404)", bad)
    is_(sorted(killers), sorted([204, 404] * 3), "of two concurrent kills, one kills (204) and "
        "the other finds nothing left to kill (404)")


def background():
    st, d = jcall("POST", f"/v1/sessions/{sid}/runs", {"cmd": "sleep 300"})
    is_(st, 202, "a background sleep: 202 at once")
    r_sleep = d.get("run_id")
    st, d = jcall("POST", f"/v1/sessions/{sid}/runs",
                  {"cmd": "while true; do date; sleep 1; done"})
    is_(st, 202, "a background date loop: 202")
    r_loop = d.get("run_id")
    st, d = jcall("GET", f"/v1/sessions/{sid}/runs")
    ids = {x["run_id"] for x in d.get("runs", [])} if st == 200 else set()
    ok({r_sleep, r_loop} <= ids, "both are listed", d)
    st, d = jcall("GET", f"/v1/sessions/{sid}/runs/{r_loop}")
    ok(st == 200 and d.get("state") == "running", "the loop is running", d)
    cursor, lines, polls = 0, b"", 0
    while lines.count(b"\n") < 3 and polls < 60:
        polls += 1
        st, h, b = call("GET", f"/v1/sessions/{sid}/runs/{r_loop}/output?stream=stdout"
                               f"&cursor={cursor}&wait_ms=5000")
        if st != 200:
            diag(f"output: {st} {b[:200]}")
            break
        nxt = int(h.get("sbx-cursor", "-1"))
        if nxt != cursor + len(b):
            diag(f"cursor {cursor} + {len(b)} != {nxt}")
            break
        cursor, lines = nxt, lines + b
    ok(lines.count(b"\n") >= 3, f"three lines of the loop read by cursor ({polls} polls)", lines)
    st, d = jcall("GET", f"/v1/sessions/{sid}/runs/{r_loop}", who="bob")
    ok(st == 404, "bob cannot see alice's background run", d)
    st, h, b = call("DELETE", f"/v1/sessions/{sid}/runs/{r_loop}", who="bob")
    ok(st == 404, "bob cannot kill it")
    st, h, b = call("DELETE", f"/v1/sessions/{sid}/runs/{r_loop}")
    is_(st, 204, "alice kills it: 204")
    st, d = jcall("GET", f"/v1/sessions/{sid}/runs/{r_loop}")
    is_(st, 404, "a killed run is gone")
    st, d = jcall("GET", f"/v1/sessions/{sid}/runs/{r_sleep}/output?cursor=0&wait_ms=100")
    ok(st == 200, "a silent run's long-poll answers empty", d)
    kill_race()
    # caps: runs.background_per_session (4 in the shipped config)
    codes = []
    mark = "sleep 300 # sbx-test-%s" % sid
    for i in range(5):
        st, d = jcall("POST", f"/v1/sessions/{sid}/runs", {"cmd": mark})
        codes.append(st)
    ok(429 in codes, f"past the session's cap: 429 ({codes})")
    st, h, b = call("DELETE", f"/v1/sessions/{sid}")
    is_(st, 204, "the session is deleted with its runs")
    st, d = jcall("GET", f"/v1/sessions/{sid}/runs/{r_sleep}")
    is_(st, 404, "its runs are gone with it")
    # Killed, not only unreachable (this test runs on the stack's host, as root).
    until, left = time.monotonic() + 5, None
    while time.monotonic() < until:
        left = subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True).stdout
        if not left:
            break
        time.sleep(0.1)
    ok(not left, "their processes are gone", left)


# -- 12. background runs --
st, d = jcall("POST", f"/v1/sessions/{sid}/runs", {"cmd": "true"})
if st == 500 and "not implemented" in json.dumps(d).lower():
    skip("the broker has no background runs (sandbox: sbx_client_run_start answers ENOSYS)",
         "background runs")
    st, h, b = call("DELETE", f"/v1/sessions/{sid}")
    is_(st, 204, "the session is deleted")
else:
    is_(st, 202, "a background run starts: 202")
    background()
done()
