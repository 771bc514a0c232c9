"""evaluate_stream.py: "stream": true on POST /v1/evaluate and /v1/sessions/{id}/evaluate, through
the real stack over HTTPS with a real client reading the NDJSON answer line by line (http.client):
a case event as each case ends, the compile event, events the end event never contradicts, in
both isolation modes, with a checker and with an interactor, and a client that leaves cancels
the evaluation. Run by evaluate_stream.t under tests/lib/harness.sh.

No assumption about this machine's speed: "the first case's event arrives before the last case
ends" is checked by making the last case WAIT for a file that this test writes into the session
only after it has read the first case's event (so without streaming the last case could never
pass); other waits are bounded polls."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sbx_http  # noqa: E402
from tap import done, is_, ok  # noqa: E402

TOK = os.environ["SBX_TOKEN"]


def call(method, path, body=None, raw=None):
    return sbx_http.call_raw(method, path, body if body is not None else raw, token=TOK,
                             timeout=180)


def jcall(*a, **kw):
    st, h, b = call(*a, **kw)
    try:
        return st, json.loads(b or b"null")
    except ValueError:
        return st, {"raw": b.decode(errors="replace")}


class Stream(sbx_http.Stream):
    """A streamed evaluation (tests/lib/sbx_http.py): "stream": true added to the body."""

    def __init__(self, path, body):
        super().__init__(path, dict(body, stream=True), token=TOK)

    def kinds(self, kind):
        return self.of(kind)


def strip(ev):
    return {k: v for k, v in ev.items() if k not in ("type", "_t")}


def agree(s, end, what):
    """Every case event is exactly the end event's case of its index, each index once, and the
    end event is the last one."""
    cases = s.kinds("case")
    idx = [e.get("index") for e in cases]
    ok(end is not None and end["type"] == "end" and s.events[-1] is end,
       f"{what}: the last event is the end event", s.events[-1:] if s.events else None)
    if not end or "cases" not in end:
        ok(False, f"{what}: events agree with the end event", end)
        return
    ok(sorted(idx) == list(range(end["total"])),
       f"{what}: one case event per case", idx)
    bad = [e["index"] for e in cases if strip(e) != end["cases"][e["index"]]]
    ok(not bad, f"{what}: every case event equals the end event's case", bad)


def session():
    st, d = jcall("POST", "/v1/sessions", {})
    return d["id"]


# -- 1. a bad request with stream: true is an ordinary JSON 400 --
st, h, b = call("POST", "/v1/evaluate", {"code": "x", "io_cases": [], "stream": True})
ok(st == 400 and h.get("content-type", "").startswith("application/json"),
   "a bad request with stream: true is an ordinary JSON 400", (st, b[:200]))
st, d = jcall("POST", "/v1/evaluate", {"code": "x", "entry_point": "f",
                                       "io_cases": [{"input": "1", "output": "1"}],
                                       "stream": "yes"})
ok(st == 400 and d["error"]["field"] == "stream", "stream must be a boolean", d)

# -- 2. io_cases, process isolation: start, one case event per case, end --
ADD = "def add(a, b):\n    return a + b\n"
IO = [{"input": "a=%d, b=%d" % (i, i), "output": str(2 * i + (i == 3))} for i in range(6)]
s = Stream("/v1/evaluate", {"code": ADD, "entry_point": "add", "io_cases": IO})
is_(s.status, 200, "streamed evaluate: 200")
ok(s.ctype.startswith("application/x-ndjson"), "... application/x-ndjson", s.ctype)
first = s.next()
ok(first and first["type"] == "start" and isinstance(first.get("run_id"), str)
   and len(first["run_id"]) == 32, "the first event is start with a run_id", first)
end = s.rest()
agree(s, end, "io_cases")
ok(end and end["passed_count"] == 5 and end["cases"][3]["verdict"] == "WA"
   and end["cases"][3]["expected"] == 7, "the end event is the usual answer (one WA)", end)
s.close()

# -- 3. the first case's event arrives while the last case still runs (both isolations) --
sid = session()
WAIT = ("import os, time\n"
        "def f(n):\n"
        "    while n and not os.path.exists('go'):\n"
        "        time.sleep(0.05)\n"
        "    return n\n")
for iso in ("process", "namespace"):
    call("DELETE", f"/v1/sessions/{sid}/files/go")
    s = Stream(f"/v1/sessions/{sid}/evaluate",
               {"code": WAIT, "entry_point": "f", "isolation": iso,
                "io_cases": [{"input": "0", "output": "0"}, {"input": "1", "output": "1"}],
                "limits": {"wall_ms": 60000, "cpu_ms": 30000}})
    ev = s.until(lambda e: e["type"] in ("case", "end"))
    ok(ev and ev["type"] == "case" and ev["index"] == 0 and ev["verdict"] == "AC",
       f"{iso}: case 0's event comes while case 1 waits", ev)
    st, _, _ = call("PUT", f"/v1/sessions/{sid}/files/go", raw=b"")
    end = s.rest()
    ok(end and end["cases"][1]["verdict"] == "AC",
       f"{iso}: case 1 ended only after case 0's event was read", end and end.get("cases"))
    agree(s, end, iso)
    s.close()

# -- 4. cases in C: the compile event, then the cases; stop_on_first_failure in order --
C = ("#include <stdio.h>\nint main(void){int a;if(scanf(\"%d\",&a)!=1)return 1;"
     "printf(\"%d\\n\",a*2);return 0;}\n")
CC = [{"stdin": "%d\n" % i, "expected_stdout": "%d\n" % (2 * i + (i == 2))} for i in range(5)]
s = Stream("/v1/evaluate", {"language": "c", "code": C, "cases": CC,
                            "stop_on_first_failure": True})
end = s.rest()
comp = s.kinds("compile")
ok(len(comp) == 1 and comp[0].get("status") == "ok", "C: one compile event", comp)
order = [e["type"] for e in s.events]
ok(order and "compile" in order and "case" in order
   and order.index("compile") < order.index("case"), "C: the compile event comes first", order)
agree(s, end, "C, stop_on_first_failure")
ok([e["index"] for e in s.kinds("case")] == list(range(5)),
   "C, stop_on_first_failure: case events in index order", [e["index"] for e in s.kinds("case")])
ok(end and [c["status"] for c in end["cases"][3:]] == ["skipped", "skipped"],
   "C: cases after the failure are skipped in events and end", end and end["cases"])
ok(end and strip(comp[0]) == end["compile"] if comp else False,
   "C: the compile event is the end event's compile")
s.close()

s = Stream("/v1/evaluate", {"language": "c", "code": "int main(void){ return x; }\n",
                            "cases": CC[:2]})
end = s.rest()
agree(s, end, "C that does not compile")
ok(end and all(c["verdict"] == "CE" for c in end["cases"]), "... every case is CE", end)
s.close()

# -- 5. a checker and an interactor --
CHECKER = ("import sys\nans = open(sys.argv[2]).read().split()\n"
           "sys.exit(42 if sys.stdin.read().split() == ans else 43)\n")
PC = [{"stdin": "%d\n" % i, "expected_stdout": "%d\n" % (i + (i == 1))} for i in range(4)]
s = Stream("/v1/evaluate", {"language": "python", "code": "print(int(input()))\n", "cases": PC,
                            "checker": {"language": "python", "code": CHECKER}})
end = s.rest()
agree(s, end, "checker")
ok(end and [c["verdict"] for c in end["cases"]] == ["AC", "WA", "AC", "AC"],
   "checker: verdicts", end and [c.get("verdict") for c in end["cases"]])
s.close()

GUESS = ("import sys\nsecret = int(open(sys.argv[1]).read())\n"
         "for _ in range(20):\n"
         "    g = int(input())\n"
         "    if g == secret:\n"
         "        print('=', flush=True); sys.exit(42)\n"
         "    print('<' if g < secret else '>', flush=True)\n"
         "sys.exit(43)\n")
SOL = ("lo, hi = 1, 100\n"
       "while True:\n"
       "    m = (lo + hi) // 2\n"
       "    print(m, flush=True)\n"
       "    r = input()\n"
       "    if r == '=': break\n"
       "    if r == '<': lo = m + 1\n"
       "    else: hi = m - 1\n")
s = Stream("/v1/evaluate", {"language": "python", "code": SOL,
                            "cases": [{"stdin": "37"}, {"stdin": "99"}],
                            "interactor": {"language": "python", "code": GUESS}})
end = s.rest()
agree(s, end, "interactor")
ok(end and [c["verdict"] for c in end["cases"]] == ["AC", "AC"], "interactor: verdicts",
   end and end.get("cases"))
s.close()

# -- 6. a client that leaves cancels the evaluation: nothing of it is left running --
# The slow cases never end on their own (their wall limit is a minute): each carries a marker in
# its argv, so this test (root, same machine) sees its processes in /proc, inside the sandbox's
# pid namespace or not.
MARK = "sbx-evaluate-stream-%d-%d" % (os.getpid(), int(time.time()))


def marked():
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARK.encode() in f.read():
                    n += 1
        except OSError:
            pass
    return n


sid = session()
SLOW = 'read n\nif [ "$n" != 0 ]; then while :; do sleep 0.2; done; fi\necho "$n"\n'
s = Stream(f"/v1/sessions/{sid}/evaluate",
           {"language": "bash", "code": SLOW, "limits": {"wall_ms": 60000},
            "cases": [{"stdin": "%d\n" % i, "expected_stdout": "%d\n" % i, "args": [MARK]}
                      for i in range(4)]})
ev = s.until(lambda e: e["type"] in ("case", "end"))
ok(ev and ev["type"] == "case" and ev["index"] == 0, "the quick case's event comes first", ev)
seen = 0
for _ in range(300):  # bounded: the slow cases start after the quick one
    seen = marked()
    if seen:
        break
    time.sleep(0.1)
ok(seen > 0, "the slow cases are running", seen)
s.r.close()
if s.c.sock:
    s.c.sock.close()
left = seen
for _ in range(300):  # 30 s, half the slow cases' own wall limit
    left = marked()
    if not left:
        break
    time.sleep(0.1)
ok(left == 0, "after the client left, no process of its evaluation is left", left)

done()
