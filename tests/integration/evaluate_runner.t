#!/usr/bin/python3
"""evaluate_runner.t: the in-sandbox evaluate runner (fcgi/evaluate/runner/evaluate.py) run directly on the
host with /usr/bin/python3, no sandbox: io_cases semantics, per-case isolation and failure modes,
test mode, `cases` mode in every language, and the runner's own guards. The same cases through
the real service are in evaluate_api.t."""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from tap import ok, is_, skip, diag, done  # noqa: E402

RUNNER = os.path.join(ROOT, "fcgi", "evaluate", "runner", "evaluate.py")
LIMITS = {"wall_ms": 3000, "cpu_ms": 1000, "memory_bytes": 256 << 20, "output_bytes": 4096}


DIRECT = "--nothing-held"  # what evaluate.c passes for a test or `cases` job (sbx_eval.py)


def run(job, timeout=60, args=None, pid=None):
    job.setdefault("limits", LIMITS)
    job.setdefault("cwd", "/tmp")
    if args is None:  # as evaluate.c runs it: nothing to hold but in io mode
        args = [] if job.get("mode") == "io" else [DIRECT]
    p = subprocess.Popen(["/usr/bin/python3", "-S", "-B", RUNNER] + args, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if pid is not None:
        pid.append(p.pid)
    try:
        out, err = p.communicate(json.dumps(job).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    p = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    try:
        return json.loads(p.stdout)
    except ValueError:
        diag("runner stdout: %r\nstderr: %s" % (p.stdout[:500], p.stderr.decode()[-2000:]))
        return {"cases": [], "runner_error": "unparseable"}


def io(code, entry, cases, **kw):
    job = {"mode": "io", "code": code, "entry_point": entry, "cases": cases}
    job.update(kw)
    return run(job)


# ---- io_cases: the seed's argument semantics ----
ADD = "def add(a, b):\n    return a + b\n"
d = io(ADD, "add", [{"input": "a=1, b=2", "output": "3"},
                    {"input": "b=5, a=10", "output": "15"},
                    {"input": "a=1, b=2, c=3", "output": "3"},
                    {"input": "a=1", "output": "2"},
                    {"input": "a=[1, 2], b=[3]", "output": "[1, 2, 3]"},
                    {"input": "a='x,y=z', b='!'", "output": "'x,y=z!'"}])
c = d["cases"]
is_(len(c), 6, "io: one result per case")
ok(c[0]["passed"] and c[0]["got"] == 3 and c[0]["expected"] == 3, "io: name=value pairs", c[0])
ok(c[1]["passed"], "io: pairs in any order", c[1])
ok(c[2]["passed"], "io: extra names ignored", c[2])
ok(not c[3]["passed"] and c[3]["status"] == "error" and "'b'" in c[3]["error"],
   "io: a missing name is an error naming it", c[3])
ok(c[4]["passed"] and c[4]["got"] == [1, 2, 3], "io: list literals with commas", c[4])
ok(c[5]["passed"], "io: string values holding , and =", c[5])

d = io("def f(x):\n    return x\nBIG = 99\n", "f",
       [{"input": "[1, 2, 3]", "output": "[1, 2, 3]"},
        {"input": "'hello'", "output": "'hello'"},
        {"input": "4", "output": "4.0"},
        {"input": "(1, 2)", "output": "[1, 2]"},
        {"input": "5", "output": "BIG - 94"},
        {"input": "{'k': (1, 2)}", "output": "{'k': (1, 2)}"},
        {"input": "7", "output": 7},
        {"input": "not a literal", "output": "1"}])
c = d["cases"]
ok(c[0]["passed"], "io: no pairs: the whole input is one literal argument", c[0])
ok(c[1]["passed"], "io: a string literal argument", c[1])
ok(c[2]["passed"] and c[2]["got"] == 4 and c[2]["expected"] == 4.0, "io: 4 == 4.0", c[2])
ok(not c[3]["passed"] and c[3]["status"] == "ok" and c[3]["got"] == [1, 2] and
   c[3]["got_repr"] == "(1, 2)" and c[3]["expected_repr"] == "[1, 2]",
   "io: a tuple is not a list; got_repr keeps the difference", c[3])
ok(c[4]["passed"], "io: output may be an expression in the code's namespace", c[4])
ok(c[5]["passed"] and c[5]["got"] == {"k": [1, 2]}, "io: nested tuple in a dict", c[5])
ok(c[6]["passed"], "io: a JSON number as output stands for itself", c[6])
ok(c[7]["status"] == "error" and "literal" in c[7]["error"], "io: a bad input is a case error",
   c[7])

d = io("class Solution:\n    def twoSum(self, nums, target):\n"
       "        seen = {}\n        for i, n in enumerate(nums):\n"
       "            if target - n in seen:\n                return [seen[target - n], i]\n"
       "            seen[n] = i\n", "Solution().twoSum",
       [{"input": "nums=[2, 7, 11, 15], target=9", "output": "[0, 1]"},
        {"input": "target=6, nums=[3, 2, 4]", "output": "[1, 2]"}])
ok(all(x["passed"] for x in d["cases"]), "io: entry_point Solution().twoSum", d["cases"])

d = io("def f(a, b=10, *, c=1):\n    return a + b + c\n", "f",
       [{"input": "a=1", "output": "12"}, {"input": "a=1, c=5", "output": "16"},
        {"input": {"a": 2, "b": 3}, "output": "6"}, {"input": [1, 2], "output": "4"}])
ok(all(x["passed"] for x in d["cases"]),
   "io: defaults, keyword-only, object and array inputs", d["cases"])

# ---- io_cases: values JSON cannot hold ----
d = io("import math\ndef f(k):\n    return {'nan': [float('nan'), math.inf, -math.inf],\n"
       "            'set': {3, 1, 2}, 'big': 2**70, 'tuple': (1, (2,)), 'bytes': b'ab',\n"
       "            'obj': object, 'key': {(1, 2): 'v'}, 'cx': 1j}[k]\n", "f",
       [{"input": "k='%s'" % k, "output": "None"} for k in
        ("nan", "set", "big", "tuple", "bytes", "obj", "key", "cx")])
g = [x.get("got") for x in d["cases"]]
is_(g, [["NaN", "Infinity", "-Infinity"], [1, 2, 3], "1180591620717411303424", [1, [2]],
        "b'ab'", "<class 'object'>", {"(1, 2)": "v"}, "1j"],
    "io: NaN, inf, sets, big ints, tuples, bytes, objects, odd keys come back in JSON form")
ok(all(x["status"] == "ok" and x.get("got_repr") for x in d["cases"]),
   "io: every such value also has its exact repr", [x.get("got_repr") for x in d["cases"]])

d = io("def f(k):\n    if k == 'deep':\n        x = []\n        for _ in range(100):\n"
       "            x = [x]\n        return x\n    if k == 'long':\n        return 'z' * 10**7\n"
       "    return list(range(10**5))\n", "f",
       [{"input": "k=%r" % k, "output": "None"} for k in ("deep", "long", "many")])
ok(all(x["status"] == "ok" and isinstance(x["got"], str) and len(x["got"]) < 70000 and
       len(x["got_repr"]) < 70000 for x in d["cases"]),
   "io: values too deep or too big come back as a capped repr",
   [(x["status"], type(x.get("got")).__name__, len(str(x.get("got")))) for x in d["cases"]])

# ---- io_cases: failures stay in their case ----
BAD = r'''
import ctypes, os, sys, time
counter = 0
def f(kind):
    global counter
    counter += 1
    print("case", kind)
    if kind == "raise":
        raise KeyError("missing")
    if kind == "exit":
        sys.exit(3)
    if kind == "_exit":
        os._exit(4)
    if kind == "segv":
        ctypes.string_at(0)
    if kind == "mem":
        return len(bytearray(1 << 33))
    if kind == "spin":
        while True:
            pass
    if kind == "sleep":
        time.sleep(60)
    if kind == "fd1":
        os.write(1, b'{"cases": []}')
        for fd in range(3, 64):
            try:
                os.write(fd, b'{"forged": 1}\n')
            except OSError:
                pass
    if kind == "flood":
        sys.stdout.write("y" * 100000)
    if kind == "regroup":
        os.setpgid(0, os.getpgid(os.getppid()))
        time.sleep(60)
    if kind == "kill_parent":
        os.kill(os.getppid(), 0)
    return counter
'''
kinds = ["count", "raise", "exit", "_exit", "segv", "mem", "spin", "sleep", "count", "fd1",
         "flood", "regroup", "count"]
d = io(BAD, "f", [{"input": "kind=%r" % k, "output": "1"} for k in kinds])
c = {}
for k, x in zip(kinds, d["cases"]):
    c.setdefault(k, x)
ok(all(x["passed"] and x["got"] == 1 for k, x in zip(kinds, d["cases"]) if k == "count"),
   "isolation: a module-level counter reads 1 in every case",
   [x for k, x in zip(kinds, d["cases"]) if k == "count"])
x = c["raise"]
ok(x["status"] == "error" and x["error"].startswith("KeyError: 'missing'") and
   "Traceback" in x["error"] and 'File "<solution>", line 9' in x["error"] and
   "evaluate.py" not in x["error"], "exception: type, message, traceback of the user's code",
   x)
ok(c["exit"]["status"] == "error" and "SystemExit" in c["exit"]["error"],
   "sys.exit fails its case", c["exit"])
ok(c["_exit"]["status"] == "error" and "code 4" in c["_exit"]["error"],
   "os._exit fails its case", c["_exit"])
ok(c["segv"]["status"] == "signal" and c["segv"]["signal"] == "SIGSEGV",
   "a segfault (ctypes) is status signal SIGSEGV", c["segv"])
ok(c["mem"]["status"] == "memory_limit", "a memory bomb is memory_limit", c["mem"])
ok(c["spin"]["status"] == "timeout", "a CPU spin times out", c["spin"])
d1 = io("def f():\n    while True:\n        pass\n", "f", [{"input": "", "output": "1"}],
        limits=dict(LIMITS, wall_ms=30000, cpu_ms=500))
ok(d1["cases"][0]["status"] == "timeout" and d1["cases"][0]["limit"] == "cpu",
   "a CPU spin alone is timeout/cpu", d1["cases"][0])
ok(c["sleep"]["status"] == "timeout" and c["sleep"]["limit"] == "wall",
   "a sleep is timeout/wall", c["sleep"])
ok(len(d["cases"]) == len(kinds) and "forged" not in json.dumps(d) and
   '{"cases": []}' in c["fd1"]["stdout"] and d["cases"][-1]["passed"],
   "writes to fd 1 and stray fds stay in their case, the answer is intact",
   [(x["status"], x.get("error")) for x in d["cases"]])
ok(c["flood"]["stdout_truncated"] and len(c["flood"]["stdout"]) <= 4096 + 10 and
   c["flood"]["stdout"].startswith("case flood"), "print output is captured and capped",
   len(c["flood"]["stdout"]))
ok(c["count"]["stdout"] == "case count\n", "each case has its own stdout", c["count"])
ok(c["regroup"]["status"] == "timeout", "a case that leaves its process group is still killed",
   c["regroup"])
ok(all(isinstance(x.get("wall_ms"), int) and isinstance(x.get("memory_kb"), int)
       for x in d["cases"]), "every case reports wall_ms, cpu_ms, memory_kb")

one = {k: io(BAD, "f", [{"input": "kind=%r" % k, "output": "1"}])["cases"][0]
       for k in ("count", "mem", "segv", "_exit", "raise")}
ok(one["count"]["passed"] and one["mem"]["status"] == "memory_limit" and
   one["segv"]["status"] == "signal" and one["_exit"]["status"] == "error" and
   one["raise"]["error"].startswith("KeyError"),
   "a lone case (no worker) fails the same ways", {k: v["status"] for k, v in one.items()})

# ---- load failures ----
d = io("def f(:\n", "f", [{"input": "1", "output": "1"}] * 3)
ok(d["load"]["status"] == "error" and all(x["status"] == "error" and
                                          x["error"].startswith("SyntaxError")
                                          for x in d["cases"]),
   "a syntax error fails every case with the SyntaxError", d["load"])
d = io("import os\nos._exit(0)\n", "f", [{"input": "1", "output": "1"}] * 2)
ok(all(x["status"] == "error" and "loading" in x["error"] for x in d["cases"]),
   "os._exit while loading fails every case", d["cases"])
d = io("while True:\n    pass\n", "f", [{"input": "1", "output": "1"}],
       limits=dict(LIMITS, wall_ms=1000))
ok(d["cases"][0]["status"] == "timeout", "an endless loop at load time times out",
   d["cases"][0])
d = io("import os, time\nos.setpgid(0, os.getpgid(os.getppid()))\ntime.sleep(60)\n", "f", [{"input": "1", "output": "1"}],
       limits=dict(LIMITS, wall_ms=1000))
ok(d["cases"][0]["status"] == "timeout", "a loader that leaves its process group still times out",
   d["cases"][0])
LOUD = "print('loading')\nimport sys\nsys.stdout.write('more')\ndef f(x):\n    return x\n"
d = io(LOUD, "f", [{"input": "1", "output": "1"}] * 2)
ok(all(x["passed"] and x["stdout"] == "" for x in d["cases"]) and
   "loading" in d["load"]["stdout"],
   "several cases: output while loading goes to load.stdout, once", d["load"])
d = io(LOUD, "f", [{"input": "1", "output": "1"}])
ok(d["cases"][0]["passed"] and d["cases"][0]["stdout"] == "loading\nmore" and
   d["load"]["status"] == "ok", "one case: loading and running are one process, one stdout",
   d["cases"][0])
d = io("if __name__ == '__main__':\n    input()\ndef f(x):\n    return x\n", "f",
       [{"input": "1", "output": "1"}])
ok(d["cases"][0]["passed"], "a __main__ block does not run when the code is loaded", d["cases"])

d = io("import numpy as np\ndef f(n):\n    return np.arange(n) * 2, np.float64(1.5)\n", "f",
       [{"input": "3", "output": "None"}])
ok(d["cases"][0]["status"] == "ok" and d["cases"][0]["got"] == [[0, 2, 4], 1.5],
   "numpy imports (dist-packages without site) and its values convert", d["cases"][0])

# ---- stop_on_failure and the request deadline ----
# A case that errors stops the runner; a wrong value of a held (literal) output is only known
# to the supervisor at the end, so there evaluate.c applies stop_on_first_failure (below).
d = io(ADD, "add", [{"input": "a=1", "output": "3"}] + [{"input": "a=1, b=1",
                                                        "output": "2"}] * 6,
       stop_on_failure=True, parallel=1)
ok(not d["cases"][0]["passed"] and any(x["status"] == "skipped" for x in d["cases"]),
   "stop_on_failure: later cases are skipped", [x["status"] for x in d["cases"]])
# 8 cases of 1 s, two at a time, in a 3 s budget: about 4 s of work, so some are skipped, and the
# first two end in time with 2 s to spare for starting them on a slow machine.
d = io("import time\ndef f(x):\n    time.sleep(1.0)\n    return x\n", "f",
       [{"input": "1", "output": "1"}] * 8, deadline_ms=3000, parallel=2)
st = [x["status"] for x in d["cases"]]
# How many start before the deadline depends on the machine's load (loading alone may take it
# all): only that the rest are skipped, and the started ones end ok or at the deadline.
ok("skipped" in st and set(st) <= {"ok", "timeout", "skipped"},
   "the request's deadline skips what it cannot run", st)

# ---- test mode (HumanEval convention) ----
T = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 0) == 0\n"
d = run({"mode": "test", "code": ADD, "entry_point": "add", "cases": [{"test": T}]})
ok(d["cases"][0]["passed"], "test: a right solution passes", d["cases"])
d = run({"mode": "test", "code": "def add(a, b):\n    return a - b\n", "entry_point": "add",
         "cases": [{"test": T}]})
ok(not d["cases"][0]["passed"] and "AssertionError" in d["cases"][0]["error"] and
   'File "<test>", line 2' in d["cases"][0]["error"], "test: a wrong one fails with the assert",
   d["cases"])
d = run({"mode": "test", "code": "def add(a, b):\n    raise NotImplementedError\n",
         "entry_point": "add", "cases": [{"test": T}]})
ok(not d["cases"][0]["passed"] and "NotImplementedError" in d["cases"][0]["error"],
   "test: a body that only raises fails", d["cases"])

# ---- cases mode: every language ----
CONF = json.load(open(os.path.join(ROOT, "fcgi", "sbx.conf.json")))
LANGS = {x["id"]: x for x in CONF["languages"]}
PROGS = {
    "python": "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"
              "print(' '.join(sys.argv[1:]))\n",
    "bash": "read a b\n[[ $a =~ ^[0-9]+$ ]] || exit 2\necho $((a + b))\necho \"$@\"\n",
    "node": "const s = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
            "if (isNaN(s[0])) process.exit(2);\nconsole.log(s[0] + s[1]);\nconsole.log(process.argv.slice(2).join(' '));\n",
    "c": "#include <stdio.h>\nint main(int c, char **v) {\n  int a, b;\n"
         "  if (scanf(\"%d %d\", &a, &b) != 2) return 2;\n  printf(\"%d\\n\", a + b);\n"
         "  for (int i = 1; i < c; i++) printf(i > 1 ? \" %s\" : \"%s\", v[i]);\n"
         "  printf(\"\\n\");\n  return 0;\n}\n",
    "cpp": "#include <iostream>\nint main(int c, char **v) {\n  long a, b;\n"
           "  if (!(std::cin >> a >> b)) return 2;\n  std::cout << a + b << std::endl;\n"
           "  for (int i = 1; i < c; i++) std::cout << (i > 1 ? \" \" : \"\") << v[i];\n"
           "  std::cout << std::endl;\n}\n",
}


def stdout_job(lid, code, cases, **kw):
    L = LANGS[lid]
    job = {"mode": "stdout", "code": code, "cases": cases, "source_file": L["source_file"],
           "run": L["run"], "compile": L.get("compile"), "python_fork": lid == "python",
           "work_dir": "/work", "limits": dict(LIMITS, wall_ms=5000, cpu_ms=3000)}
    job.update(kw)
    return run(job)


# Enough cases for two schedulers, each forking cases ahead (held at a gate until their turn):
# every case keeps its own stdin and output.
d = stdout_job("python", "a, b = map(int, input().split())\nprint(a + b)\n",
               [{"stdin": "%d %d\n" % (i, 2 * i)} for i in range(24)], parallel=2)
got = [(c.get("status"), c.get("stdout")) for c in d["cases"]]
ok(got == [("ok", "%d\n" % (3 * i)) for i in range(24)],
   "cases: 24 python cases forked ahead by two schedulers each keep their output", got)

for lid, code in PROGS.items():
    if not os.path.exists(LANGS[lid]["run"][0] if lid not in ("c", "cpp")
                          else LANGS[lid]["compile"][0]):
        skip("%s is not installed" % lid, "cases: %s" % lid)
        continue
    d = stdout_job(lid, code, [{"stdin": "1 2", "args": ["x", "y"]}, {"stdin": "40 2\n"},
                               {"stdin": "nonsense"}])
    c = d["cases"]
    ok(len(c) == 3 and c[0]["status"] == "ok" and c[0]["stdout"] == "3\nx y\n" and
       c[1]["stdout"] == "42\n\n" and c[2]["status"] == "error" and c[2]["exit_code"] != 0,
       "cases: %s reads stdin and args, fails alone on bad input" % lid, d)
    if LANGS[lid].get("compile"):
        ok(d["compile"] and d["compile"]["status"] == "ok", "cases: %s compiled once" % lid,
           d["compile"])
        d = stdout_job(lid, "int main( {", [{"stdin": ""}] * 2)
        ok(d["compile"]["status"] == "error" and "error" in d["compile"]["stderr"] and
           all(x["status"] == "error" for x in d["cases"]),
           "cases: a %s compile error is reported once, every case fails" % lid, d["compile"])

d = stdout_job("python", "import sys\nn = int(input())\nif n == 1:\n    import os; os.kill(os.getpid(), 11)\n"
               "if n == 2:\n    sys.exit(7)\nif n == 3:\n    while True: pass\nprint(n)\n",
               [{"stdin": str(i)} for i in range(5)], limits=dict(LIMITS, wall_ms=8000))
st = [(x["status"], x.get("exit_code"), x.get("limit") or x.get("signal")) for x in d["cases"]]
is_(st, [("ok", 0, None), ("signal", None, "SIGSEGV"), ("error", 7, None),
         ("timeout", None, "cpu"), ("ok", 0, None)],
    "cases: python crash, sys.exit code and spin each fail alone")
d = stdout_job("python", "import sys\nprint('bye')\nexit(3)\n", [{"stdin": ""}])
ok(d["cases"][0]["status"] == "error" and d["cases"][0]["exit_code"] == 3 and
   d["cases"][0]["stdout"] == "bye\n", "cases: python's exit() builtin works", d["cases"][0])
d = stdout_job("c", "#include <stdlib.h>\n#include <string.h>\nint main(void) {\n"
               "  char *p = malloc(1u << 30);\n  if (!p) return 3;\n  memset(p, 1, 1u << 30);\n"
               "  return 0;\n}\n", [{"stdin": ""}])
ok(d["cases"][0]["status"] in ("error", "memory_limit", "signal"),
   "cases: a C program over the memory limit fails", d["cases"])
# ---- integrity: what a submission can reach inside the runner (issue 16) ----
SECRETS = ["'SECRET-%d-%s'" % (i, os.urandom(8).hex()) for i in range(3)]
HELD = [{"input": "n=%d" % i, "output": s} for i, s in enumerate(SECRETS)]
PATCH = ("import sys\nm = sys.modules.get('sbx_pycase')\nif m:\n"
         "    m.run_io_case = lambda ns, f, p: {'status': 'ok', 'passed': True, 'got': 1,"
         " 'expected': 1, 'error': None}\n    m.judge_held = lambda r, h: r\n"
         "def f(n):\n    return 0\n")
FAKE = ("import os\ndef f(n):\n"
        "    os.write(3, b'{\"status\": \"ok\", \"passed\": true, \"got\": 1, \"expected\": 1}')\n"
        "    os._exit(0)\n")
GCWALK = r"""
import gc, ast
def f(n):
    gc.unfreeze()
    # dicts of atoms only are not tracked by gc: look one level into every tracked container
    for o in gc.get_objects():
        kids = list(o.values()) if isinstance(o, dict) else list(o) \
            if isinstance(o, (list, tuple)) else []
        for d in [o] + kids:
            if not isinstance(d, dict):
                continue
            if d.get("input") == "n=%d" % n and "output" in d:
                return ast.literal_eval(d["output"])
            if "exp" in d and d.get("args") == [n] and d["exp"] is not None:
                return d["exp"]
        if isinstance(o, tuple) and len(o) == 3 and isinstance(o[2], str) and \
                o[2].startswith("'SECRET-%d-" % n):
            return o[0]
"""
EQ = ("class Any:\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n"
      "def f(n):\n    return Any()\n")
for name, code in (("replacing the runner's functions through sys.modules", PATCH),
                   ("a fake result on the result fd, then os._exit(0)", FAKE),
                   ("walking gc for the literal outputs", GCWALK),
                   ("an object whose __eq__ is always true", EQ)):
    for cases in (HELD, HELD[:1]):
        d = io(code, "f", [dict(x) for x in cases])
        ok(d["cases"] and not any(x["passed"] for x in d["cases"]),
           "integrity: %s (%d case%s): no case passes" % (name, len(cases),
                                                          "s" * (len(cases) > 1)),
           [(x["status"], x.get("got"), x.get("error")) for x in d["cases"]])
d = io("def f(n):\n    return %s\n" % SECRETS[0], "f", [dict(x) for x in HELD[:2]])
ok(d["cases"][0]["passed"] and not d["cases"][1]["passed"] and
   d["cases"][0]["expected"] == SECRETS[0][1:-1] and
   d["cases"][1]["expected_repr"] == SECRETS[1],
   "integrity: held outputs are still compared and reported", d["cases"])
d = io("import fractions, decimal\ndef f(k):\n    return {'q': fractions.Fraction(1, 2),"
       " 'd': decimal.Decimal('1.5'), 'c': 1j, 'b': b'x', 'n': float('nan'), 'f': 4,"
       " 's': {1, 2}, 'fs': frozenset([3]), 't': (1, 2), 'e': ..., 'none': None}[k]\n", "f",
       [{"input": "k=%r" % k, "output": o} for k, o in
        (("q", "0.5"), ("d", "1.5"), ("c", "1j"), ("b", "b'x'"), ("n", "1.0"), ("f", "4.0"),
         ("s", "{2, 1}"), ("fs", "{3}"), ("t", "[1, 2]"), ("e", "..."), ("none", "None"))])
is_([x["passed"] for x in d["cases"]],
    [True, True, True, True, False, True, True, True, False, True, True],
    "integrity: == outside the process keeps Python's semantics (4 == 4.0, (1, 2) != [1, 2], "
    "Fraction, Decimal, complex, bytes, sets, nan)")
d = run({"mode": "stdout", "language": "python", "code": "import gc, sys\ngc.unfreeze()\n"
         "print(sum('expected_stdout' in c for o in gc.get_objects() if isinstance(o, list)"
         " for c in o if isinstance(c, dict)))\n",
         "source_file": "main.py", "run": ["/usr/bin/python3", "{file}"], "python_fork": True,
         "cases": [{"stdin": "", "expected_stdout": "x"}] * 2}, args=[])  # (direct: refused)
ok([x.get("stdout") for x in d["cases"]] == ["0\n", "0\n"],
   "integrity: expected_stdout never reaches a case, even when sent", d["cases"])
for how in ("import os\nos._exit(0)\n", "import sys\nsys.exit(0)\n",
            "import sys\nsys.exit = lambda *a: None\nraise SystemExit(0)\n"):
    for n in (1, 2):
        d = run({"mode": "test", "code": how + "def add(a, b):\n    return 0\n",
                 "entry_point": "add", "cases": [{"test": T}] * n})
        ok(not any(x["passed"] for x in d["cases"]),
           "test: %r while loading does not pass (%d case)" % (how.splitlines()[-1], n),
           d["cases"])

# ---- isolation: "process" (a fresh process per case) and "namespace" (the seed's semantics) ----
ISO = r"""
import ctypes, os, sys
counter = 0
def f(kind):
    global counter
    counter += 1
    if kind == "exit": sys.exit(3)
    if kind == "_exit": os._exit(0)
    if kind == "segv": ctypes.string_at(0)
    if kind == "mem": x = bytearray(1 << 34)
    if kind == "setrec": sys.setrecursionlimit(77)
    if kind == "getrec": return sys.getrecursionlimit()
    if kind == "sleep":
        import time; time.sleep(30)
    return counter
"""
KINDS = ["count", "exit", "count", "_exit", "count", "segv", "count", "mem", "count", "setrec",
         "getrec", "sleep", "count"]
for iso in ("process", "namespace"):
    d = io(ISO, "f", [{"input": "kind=%r" % k, "output": "1"} for k in KINDS], isolation=iso,
           parallel=1, limits=dict(LIMITS, wall_ms=2000))
    by = list(zip(KINDS, d["cases"]))
    ok(all(c["passed"] and c["got"] == 1 for k, c in by if k == "count"),
       "%s: the module counter is 1 in every case (fresh module globals)" % iso,
       [c for k, c in by if k == "count"])
    st = {k: c["status"] for k, c in by}
    ok(st["exit"] == "error" and "SystemExit" in by[1][1]["error"], "%s: sys.exit fails its case"
       % iso, by[1][1])
    ok(st["_exit"] == "error" and st["segv"] == "signal" and st["mem"] == "memory_limit" and
       st["sleep"] == "timeout", "%s: os._exit, a segfault, a memory bomb, a sleep fail alone"
       % iso, st)
    rec = dict(by)["getrec"]["got"]
    ok(rec == (1000 if iso == "process" else 77),
       "%s: sys.setrecursionlimit in one case %s the next" % (
           iso, "does not reach" if iso == "process" else "carries over to (one process)"), rec)
d = io(ISO, "f", [dict(x) for x in HELD], isolation="namespace")
ok(not any(x["passed"] for x in d["cases"]), "namespace: held outputs are judged outside too",
   d["cases"])
d = io(PATCH, "f", [dict(x) for x in HELD], isolation="namespace")
ok(not any(x["passed"] for x in d["cases"]),
   "namespace: replacing the runner's functions changes no held verdict", d["cases"])

for iso in ("process", "namespace"):
    for n in (3, 9):  # one scheduler, and two (from 8 cases)
        d = io("def f(x):\n    return x\n", "f",
               [{"input": "1", "output": "1"}, {"input": "1", "output": "2"}] +
               [{"input": "1", "output": "1"}] * (n - 2),
               stop_on_failure=True, parallel=1, isolation=iso)
        st = [(x["status"], x["passed"]) for x in d["cases"]]
        ok(st[:2] == [("ok", True), ("ok", False)],
           "%s, %d cases: stop_on_failure runs on until a held output is wrong" % (iso, n), st)


# namespace: the code is compiled once per process and exec'd in fresh globals per case (the
# counter above), so a syntax error must still fail every case; a case's CPU is its own (the
# figure is carried from the previous case's report, never that case's CPU).
d = io("def f(:\n    return 1\n", "f", [{"input": "1", "output": "1"}] * 3, isolation="namespace",
       parallel=1)
ok(all(x["status"] == "error" and "SyntaxError" in (x.get("error") or "") for x in d["cases"]),
   "namespace: a syntax error fails every case", d["cases"])
BURN = ("import time\ndef f(burn):\n    t = time.process_time()\n"
        "    while burn and time.process_time() - t < 0.4:\n        pass\n    return 1\n")
d = io(BURN, "f", [{"input": "burn=%s" % b, "output": "1"} for b in (1, 0, 1, 0)],
       isolation="namespace", parallel=1, limits=dict(LIMITS, wall_ms=30000, cpu_ms=3000))
cpu = [x.get("cpu_ms") for x in d["cases"]]
ok(all(x["passed"] for x in d["cases"]) and cpu[0] >= 300 and cpu[2] >= 300 and
   cpu[1] < 300 and cpu[3] < 300,
   "namespace: each case's cpu_ms is its own (a busy case's CPU is not billed to the next)", cpu)

# A test or `cases` job holds no answer (--nothing-held, from evaluate.c): its supervisor is
# its own executor, so a case's process is the supervisor's child (a process level less).
for job in ({"mode": "test", "code": "import os\ndef f():\n    return 1\n", "entry_point": "f",
             "cases": [{"test": "def check(c):\n    print(os.getppid())\n"}]},
            {"mode": "stdout", "code": "import os\nprint(os.getppid())\n", "source_file": "main.py",
             "run": ["/usr/bin/python3", "{file}"], "python_fork": True, "cases": [{"stdin": ""}]},
            {"mode": "stdout", "code": "import os\nprint(os.getppid())\n", "source_file": "main.py",
             "run": ["/usr/bin/python3", "{file}"], "cases": [{"stdin": ""}]}):
    pid = []
    d = run(job, pid=pid)
    c = (d.get("cases") or [{}])[0]
    # python_fork: the worker forks the cases, the worker is the supervisor's child
    want = pid[0] if not job.get("python_fork") else None
    got = (c.get("stdout") or "").strip()
    if want is None:
        ppid = int(got) if got.isdigit() else 0
        try:
            with open("/proc/%d/stat" % ppid) as f:
                got_parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            got_parent = None  # the worker has ended: compare through the figure itself
        ok(c.get("status") == "ok" and ppid and got_parent in (pid[0], None),
           "direct: stdout mode with python_fork runs (the worker is the supervisor's child)",
           (c, pid))
    else:
        ok(c.get("status") == "ok" and got == str(want),
           "direct: %s mode%s: the case's parent is the supervisor" % (
               job["mode"], "" if job["mode"] == "test" else " (exec'd)"), (c, pid))
# Told "nothing held" for a job that could hold answers: refused, nothing runs.
MARK = "/tmp/sbx-runner-direct-%d" % os.getpid()
d = run({"mode": "io", "code": "open(%r, 'w').close()\ndef f(x):\n    return x\n" % MARK,
         "entry_point": "f", "cases": [{"input": "1", "output": "1"}] * 2}, args=[DIRECT])
ok(d.get("runner_error") and len(d["cases"]) == 2 and
   not any(x.get("passed") for x in d["cases"]) and not os.path.exists(MARK),
   "direct: an io job with --nothing-held is refused, its code never runs", d)
d = run({"mode": "stdout", "code": "print(1)\n", "source_file": "main.py",
         "run": ["/usr/bin/python3", "{file}"],
         "cases": [{"stdin": "", "expected_stdout": "1\n"}]}, args=[DIRECT])
ok(d.get("runner_error") and not d["cases"][0].get("stdout"),
   "direct: a job carrying an expected_stdout is refused", d)
if os.path.exists(MARK):
    os.unlink(MARK)

done()
