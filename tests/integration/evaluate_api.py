"""evaluate_api.py: POST /v1/evaluate, /v1/sessions/{id}/evaluate and the seed's /evaluate_code
through the real stack (nginx + pool + broker + sandbox) over HTTPS. Run by evaluate_api.t under
tests/lib/harness.sh --exec, which exports SBX_URL and the tokens."""
import os
import sys
import uuid

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
c = httpx.Client(base_url=URL, verify=False, timeout=180,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"]})


def ev(body, path="/v1/evaluate"):
    r = c.post(path, json=body)
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {"raw": r.text}


def err_is(r, status, code, field=None, desc=""):
    s, d = r
    e = d.get("error") if isinstance(d.get("error"), dict) else {}
    ok(s == status and e.get("code") == code and (field is None or e.get("field") == field),
       desc or "%d %s" % (status, code), d)


ADD = "def add(a, b):\n    return a + b\n"

# ---- io_cases through the API ----
s, d = ev({"code": ADD, "entry_point": "add",
           "io_cases": [{"input": "a=1, b=2", "output": "3"},
                        {"input": "b=2, a=2", "output": "4.0"},
                        {"input": "a=(1,), b=(2,)", "output": "[1, 2]"},
                        {"input": "a=1", "output": "2"}]})
is_(s, 200, "io: 200")
ok(d.get("passed") is False and d.get("passed_count") == 2 and d.get("total") == 4,
   "io: passed, passed_count, total", d)
cs = d.get("cases", [])
ok(len(cs) == 4 and all(set(("index", "passed", "status", "got", "expected", "error", "stdout",
                             "stderr", "wall_ms", "cpu_ms", "memory_kb")) <= set(x)
                        for x in cs), "io: every case has the documented fields", cs[:1])
ok(cs[2]["got"] == [1, 2] and cs[2]["got_repr"] == "(1, 2)" and not cs[2]["passed"],
   "io: tuple vs list fails; got_repr shows the tuple", cs[2])
ok(cs[3]["status"] == "error" and "'b'" in (cs[3]["error"] or ""),
   "io: a missing parameter is an error", cs[3])
ok("compile" in d and d["compile"] is None, "io: compile is null for Python", d.get("compile"))

BAD = r'''
import ctypes, os, sys, time
counter = 0
def f(kind):
    global counter
    counter += 1
    print("in", kind)
    if kind == "raise": raise ValueError("nope")
    if kind == "exit": sys.exit(1)
    if kind == "_exit": os._exit(0)
    if kind == "segv": ctypes.string_at(0)
    if kind == "mem":
        x = bytearray(1 << 33)
    if kind == "memtouch":
        x = []
        while True: x.append(bytearray(1 << 24))
    if kind == "spin":
        while True: pass
    if kind == "sleep": time.sleep(60)
    if kind == "forkbomb":
        while True:
            try: os.fork()
            except OSError: pass
    return counter
'''
kinds = ["count", "raise", "exit", "_exit", "segv", "mem", "memtouch", "spin", "sleep",
         "forkbomb", "count", "count"]
# cpu_ms well above what touching 128 MiB costs on a loaded host (page faults are CPU time):
# the memory bomb must meet its memory limit first. wall_ms too: with the spin, the sleep and the
# fork bomb beside it on a loaded 2-core host, touching 128 MiB took over 5 s of wall time
# (under 1 s of CPU) and the case ended as a timeout.
s, d = ev({"code": BAD, "entry_point": "f", "limits": {"wall_ms": 15000, "cpu_ms": 4000,
                                                      "memory_mb": 128},
           "io_cases": [{"input": "kind=%r" % k, "output": "1"} for k in kinds]})
cs = d.get("cases", [])
by = dict(zip(kinds, cs))
is_(s, 200, "failures: 200")
ok(len(cs) == len(kinds) and all(x["passed"] for k, x in zip(kinds, cs) if k == "count"),
   "failures: the counter reads 1 in every case, whatever the others did",
   [x for k, x in zip(kinds, cs) if k == "count"])
ok(by["raise"]["status"] == "error" and by["raise"]["error"].startswith("ValueError: nope") and
   "Traceback" in by["raise"]["error"], "exception with type, message, traceback", by["raise"])
ok(by["raise"]["stdout"] == "in raise\n", "print output per case", by["raise"]["stdout"])
ok(by["exit"]["status"] == "error" and "SystemExit" in by["exit"]["error"], "sys.exit",
   by["exit"])
ok(by["_exit"]["status"] == "error" and not by["_exit"]["passed"], "os._exit", by["_exit"])
ok(by["segv"]["status"] == "signal" and by["segv"].get("signal") == "SIGSEGV", "segfault",
   by["segv"])
ok(by["mem"]["status"] == "memory_limit", "memory bomb (one allocation)", by["mem"])
ok(by["memtouch"]["status"] == "memory_limit", "memory bomb (touched pages)", by["memtouch"])
ok(by["spin"]["status"] == "timeout", "CPU spin", by["spin"])
ok(by["sleep"]["status"] == "timeout" and by["sleep"].get("limit") == "wall", "sleep",
   by["sleep"])
ok(not by["forkbomb"]["passed"] and by["forkbomb"]["status"] != "ok", "fork bomb fails alone",
   by["forkbomb"])

s, d = ev({"code": "def f():\n    while True:\n        pass\n", "entry_point": "f",
           "limits": {"wall_ms": 30000, "cpu_ms": 500}, "io_cases": [{"input": "", "output": "1"}]})
ok(s == 200 and d["cases"][0]["status"] == "timeout" and d["cases"][0].get("limit") == "cpu",
   "a CPU spin alone is timeout/cpu", d.get("cases"))

# ---- test mode ----
T = "def check(candidate):\n    assert candidate(2, 3) == 5\n"
s, d = ev({"code": ADD, "entry_point": "add", "test": T})
ok(s == 200 and d.get("passed") is True and d.get("total") == 1, "test: passes", d)
s, d = ev({"code": "def add(a, b):\n    return 0\n", "entry_point": "add", "test": T})
ok(s == 200 and d.get("passed") is False and "AssertionError" in d["cases"][0]["error"],
   "test: fails with AssertionError", d)

# ---- cases: every language ----
PROGS = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\n",
    "bash": "read a b\necho $((a + b))\n",
    "node": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/)"
            ".map(Number);\nconsole.log(a + b);\n",
    "c": "#include <stdio.h>\nint main(void) { int a, b; if (scanf(\"%d %d\", &a, &b) != 2) "
         "return 1; printf(\"%d\\n\", a + b); return 0; }\n",
    "cpp": "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; "
           "std::cout << a + b << \"\\n\"; }\n",
}
CASES = [{"stdin": "1 2", "expected_stdout": "3"}, {"stdin": "10 20\n", "expected_stdout": "30\n"},
         {"stdin": "2 2", "expected_stdout": "5"}]
for lang, code in PROGS.items():
    s, d = ev({"language": lang, "code": code, "cases": CASES})
    cs = d.get("cases", [])
    ok(s == 200 and d.get("passed_count") == 2 and len(cs) == 3 and cs[0]["passed"] and
       cs[1]["passed"] and not cs[2]["passed"] and cs[2]["got"] == "4\n" and
       cs[2]["expected"] == "5" and "expected \"5\", got \"4\"" in (cs[2]["error"] or ""),
       "cases: %s passes two, fails one with a hint" % lang, d)
    if lang in ("c", "cpp"):
        ok(d.get("compile", {}).get("status") == "ok", "cases: %s compile result" % lang,
           d.get("compile"))
for lang in ("c", "cpp"):
    s, d = ev({"language": lang, "code": "int main( {", "cases": CASES})
    ok(s == 200 and d.get("passed") is False and d["compile"]["status"] == "error" and
       d["compile"]["stderr"] and all(x["status"] == "error" for x in d["cases"]),
       "cases: %s compile error: reported in compile, every case fails" % lang, d)
s, d = ev({"language": "bash", "code": "echo \"$1-$2\"", "cases": [
    {"args": ["a", "b"], "expected_stdout": "a-b"}]})
ok(s == 200 and d.get("passed") is True, "cases: args", d)

s, d = ev({"language": "bash", "code": "printf 'a\\xff\\xfe b\\0c\\n'; printf 'e\\x1b[31m' >&2",
           "cases": [{"expected_stdout": "x"}]})
c0 = (d.get("cases") or [{}])[0]
ok(s == 200 and c0.get("status") == "ok" and c0.get("stdout") == "a\ufffd\ufffd b\x00c\n" and
   c0.get("stderr") == "e\x1b[31m", "cases: invalid UTF-8, NUL and escapes come back as data", c0)
s, d = ev({"language": "python", "code": "import sys\nsys.stdout.write('x' * (40 << 20))\n",
           "cases": [{"expected_stdout": "x"}, {"expected_stdout": ""}]})
cs = d.get("cases", [])
ok(s == 200 and cs and cs[0]["status"] == "output_limit" and cs[0]["stdout_truncated"] and
   len(cs[0]["stdout"]) <= 65536, "cases: a flood is output_limit, what was kept is capped",
   [(x["status"], len(x.get("stdout") or "")) for x in cs])

# ---- compare modes ----
OUT = "print('1.0000001  2')\nprint('x   ')\nprint()\n"
for mode, exp, want in [("exact", "1.0000001  2\nx   \n\n", True),
                        ("exact", "1.0000001  2\nx\n", False),
                        ("lines", "1.0000001  2\nx", True),
                        ("lines", "1.0000001 2\nx", False),
                        ("tokens", "1.0000001 2 x", True),
                        ("tokens", "1 2 x", False),
                        ({"float_tolerance": 1e-6}, "1 2 x", True),
                        ({"float_tolerance": 1e-9}, "1 2 x", False)]:
    s, d = ev({"language": "python", "code": OUT, "compare": mode,
               "cases": [{"expected_stdout": exp}]})
    ok(s == 200 and d.get("passed") is want, "compare %s: %r -> %s" % (mode, exp, want), d)
s, d = ev({"language": "python", "code": OUT, "cases": [{"expected_stdout": "1.0000001  2\nx"}]})
ok(d.get("passed") is True, "compare: lines is the default", d)

# ---- stop_on_first_failure ----
s, d = ev({"code": ADD, "entry_point": "add", "stop_on_first_failure": True,
           "io_cases": [{"input": "a=1, b=1", "output": "2"}, {"input": "a=1, b=1", "output": "3"},
                        {"input": "a=1, b=1", "output": "2"}, {"input": "a=1, b=1",
                                                               "output": "2"}]})
st = [x["status"] for x in d.get("cases", [])]
ok(s == 200 and st[0] == "ok" and st[1] == "ok" and st[2:] == ["skipped", "skipped"] and
   d.get("passed_count") == 1, "stop_on_first_failure: the rest is skipped", st)

# ---- request errors ----
err_is(ev({"code": ADD, "entry_point": "add", "io_cases": [], "bogus": 1}), 400, "unknown_field",
       "bogus", "unknown field: 400 naming it")
err_is(ev({"code": ADD, "entry_point": "add"}), 400, "invalid_request", None,
       "no cases at all: 400")
err_is(ev({"code": ADD, "entry_point": "add", "io_cases": [{"input": "1", "output": "1"}],
           "test": T}), 400, "invalid_request", None, "two kinds of cases: 400")
err_is(ev({"code": ADD, "io_cases": [{"input": "1", "output": "1"}]}), 400, "missing_field",
       "entry_point", "io_cases without entry_point: 400")
err_is(ev({"language": "c", "code": "", "entry_point": "f", "io_cases": [{"input": "1"}]}), 400,
       "invalid_request", "language", "io_cases in C: 400")
err_is(ev({"language": "cobol", "code": "", "cases": [{}]}), 400, "unknown_language",
       "language", "unknown language: 400")
err_is(ev({"code": ADD, "entry_point": "add", "io_cases": [{"input": "1", "outptu": "1"}]}), 400,
       "unknown_field", None, "a typo inside a case: 400")
err_is(ev({"code": ADD, "entry_point": "add", "io_cases": [{"input": 5, "output": "1"}]}), 400,
       "invalid_type", "io_cases[0]", "a number as input: 400")
err_is(ev({"language": "python", "code": "", "cases": [{"stdin": 1}]}), 400, "invalid_type",
       "cases[0]", "a number as stdin: 400")
err_is(ev({"language": "python", "code": "", "cases": [{}], "compare": "fuzzy"}), 400,
       "invalid_value", "compare", "unknown compare mode: 400")
err_is(ev({"code": ADD, "entry_point": "add", "io_cases": [{"input": "1"}] * 100000}), 400,
       "too_many_cases", "io_cases", "too many cases: 400")
err_is(ev({"code": ADD, "entry_point": "add", "io_cases": [{"input": "1"}],
           "limits": {"wall_ms": 10 ** 9}}), 400, "limit_too_high", None,
       "a limit above the maximum: 400")
r = httpx.post(URL + "/v1/evaluate", json={"code": ADD}, verify=False)
ok(r.status_code == 401, "no token: 401", r.status_code)

# ---- session evaluate: the code sees the session's files ----
r = c.post("/v1/sessions")
sid = r.json().get("id") if r.status_code == 201 else None
ok(sid, "session created", r.text)
if sid:
    r = c.put("/v1/sessions/%s/files/helper.py" % sid, content=b"K = 41\n")
    ok(r.status_code in (200, 201, 204), "helper.py uploaded", r.text)
    r = c.put("/v1/sessions/%s/files/data.txt" % sid, content=b"7\n")
    s, d = ev({"code": "import helper\ndef f(x):\n    return helper.K + x + int(open('data.txt')"
                       ".read())\n", "entry_point": "f",
               "io_cases": [{"input": "1", "output": "49"}]},
              "/v1/sessions/%s/evaluate" % sid)
    ok(s == 200 and d.get("passed") is True, "session evaluate imports and reads session files", d)
    r = c.get("/v1/sessions/%s/files" % sid)
    names = sorted(x.get("path") for x in (r.json() if isinstance(r.json(), list)
                                           else r.json().get("files", [])))
    is_(names, ["data.txt", "helper.py"], "session evaluate leaves no files behind")
    s, d = ev({"language": "c", "code": "#include <stdio.h>\nint main(void){puts(\"hi\");}",
               "cases": [{"expected_stdout": "hi"}]}, "/v1/sessions/%s/evaluate" % sid)
    ok(s == 200 and d.get("passed") is True, "session evaluate compiles C", d)
    r = c.get("/v1/sessions/%s/files" % sid)
    names2 = sorted(x.get("path") for x in (r.json() if isinstance(r.json(), list)
                                            else r.json().get("files", [])))
    is_(names2, ["data.txt", "helper.py"], "compiling in a session leaves no binary behind")
s, d = ev({"code": ADD, "entry_point": "add", "io_cases": [{"input": "1"}]},
          "/v1/sessions/%s/evaluate" % uuid.uuid4())
is_(s, 404, "session evaluate of an unknown session: 404")
if sid:
    r = httpx.post(URL + "/v1/sessions/%s/evaluate" % sid, verify=False, timeout=60,
                   headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN2"]},
                   json={"code": ADD, "entry_point": "add", "io_cases": [{"input": "1"}]})
    is_(r.status_code, 404, "session evaluate of another client's session: 404")

# ---- seed /evaluate_code ----
sid = "seed-eval-" + uuid.uuid4().hex[:8]
s, d = ev({"id": sid, "code": ADD, "entry_point": "add",
           "io_cases": [{"input": "a=1, b=2", "output": "3"}, {"input": "a=5, b=5",
                                                                "output": "11"},
                        {"input": "a=1", "output": "2"}]}, "/evaluate_code")
is_(s, 200, "seed: 200")
is_(sorted(d), ["case_results", "error", "passed"], "seed: top-level shape")
cr = d.get("case_results", [])
ok(len(cr) == 3 and all(sorted(x) == ["case", "error", "expected", "got", "input", "passed"]
                        for x in cr), "seed: case_results item shape", cr)
ok(cr[0]["passed"] is True and cr[0]["got"] == 3 and cr[0]["expected"] == 3 and
   cr[0]["case"] == 0 and cr[0]["input"] == "a=1, b=2" and cr[0]["error"] is None,
   "seed: a passing case", cr[0] if cr else None)
ok(cr[1]["passed"] is False and cr[1]["got"] == 10 and cr[1]["expected"] == 11,
   "seed: a failing case", cr[1] if len(cr) > 1 else None)
ok(cr[2]["passed"] is False and cr[2]["got"] is None and "b" in (cr[2]["error"] or "") and
   cr[2]["expected"] == "2",
   "seed: an erroring case", cr[2] if len(cr) > 2 else None)
ok(d.get("passed") is False and d.get("error") is None, "seed: passed false, error null", d)
s, d = ev({"id": sid, "code": "def add(a, b:\n", "entry_point": "add",
           "io_cases": [{"input": "a=1, b=2", "output": "3"}]}, "/evaluate_code")
ok(s == 200 and d.get("passed") is False and
   d["case_results"][0]["error"].startswith("SyntaxError"), "seed: a syntax error", d)
s, d = ev({"id": "", "code": ADD, "entry_point": "add", "io_cases": []}, "/evaluate_code")
ok(s == 400, "seed: an empty id is 400", d)
s, d = ev({"id": sid, "code": ADD, "entry_point": "add"}, "/evaluate_code")
ok(s == 400 and d["error"].get("field") == "io_cases", "seed: missing io_cases is 400", d)
# ---- verdicts and isolation (issue 16) ----
V = ("import sys\ndef f(k):\n    if k == 'spin':\n        while True: pass\n"
     "    if k == 'raise': raise ValueError(k)\n    if k == 'mem': x = bytearray(1 << 34)\n"
     "    return k\n")
s, d = ev({"code": V, "entry_point": "f", "limits": {"wall_ms": 3000, "cpu_ms": 500},
           "io_cases": [{"input": "k=%r" % k, "output": o} for k, o in
                        (("a", "'a'"), ("b", "'x'"), ("spin", "1"), ("raise", "1"),
                         ("mem", "1"))]})
ok(s == 200 and [x.get("verdict") for x in d.get("cases", [])] ==
   ["AC", "WA", "TLE", "RTE", "MLE"], "verdicts: AC, WA, TLE, RTE, MLE", d.get("cases"))
s, d = ev({"language": "c", "code": "int main(void) { return x; }",
           "cases": [{"stdin": "", "expected_stdout": ""}]})
ok(s == 200 and d["cases"][0].get("verdict") == "CE", "verdicts: CE for a compile error",
   d.get("cases"))
s, d = ev({"language": "python", "code": "print('x' * 100000)\n",
           "limits": {"output_bytes": 1024}, "cases": [{"stdin": "", "expected_stdout": ""}]})
ok(s == 200 and d["cases"][0].get("verdict") in ("WA", "OLE"),
   "verdicts: output past the cap is never AC", d.get("cases"))

REC = ("import sys\ndef f(k):\n    if k == 'set':\n        sys.setrecursionlimit(77)\n"
       "    return sys.getrecursionlimit()\n")
rc = [{"input": "k='set'", "output": "77"}, {"input": "k='get'", "output": "77"}]
s, d = ev({"code": REC, "entry_point": "f", "io_cases": rc, "isolation": "namespace",
           "limits": {"processes": 4}})
s2, d2 = ev({"code": REC, "entry_point": "f", "io_cases": rc})
ok(s == 200 and s2 == 200 and d2["cases"][1]["got"] == 1000,
   "isolation: process (the /v1 default): one case's recursion limit never reaches the next",
   (d.get("cases"), d2.get("cases")))
s, d = ev({"id": sid, "code": REC, "entry_point": "f", "io_cases": rc}, "/evaluate_code")
ok(s == 200 and len(d.get("case_results", [])) == 2 and
   d["case_results"][0]["passed"] is True,
   "isolation: /evaluate_code runs in namespace isolation by default", d)
s, d = ev({"code": REC, "entry_point": "f", "io_cases": rc, "isolation": "threads"})
ok(s == 400 and d.get("error", {}).get("field") == "isolation", "isolation: unknown is 400", d)

done()
