"""evaluate_checker.py: two ratios, each against a baseline measured in the same run (alternated,
medians of BENCH_N rounds, default 5):
  1. /v1/evaluate, 100 `cases` (stdin/expected_stdout, Python) with a Python checker vs the same
     request with the built-in comparison (target ratio <= 2).
  2. /evaluate_code with 100 io_cases of a small function vs one bare `/usr/bin/python3 -c
     'print(1)'` start, and vs the seed's own way (a ProcessPoolExecutor with one worker per core
     made for the request, each case exec'ing the code in fresh globals; no sandbox, no HTTP).
  3. /v1/evaluate with the same 100 io_cases in `process` isolation vs the bare python start
     (target ratio <= 2.2), so that all three of the graders' targets come from one run.
Also a breakdown of (2): a /v1/execute of print(1) (stack + sandbox + python start) and
/evaluate_code with 1 io_case (the runner's fixed part).
BENCH_ONLY=checker measures (1) alone (a quicker, steadier figure on a shared machine).
Run under tests/lib/harness.sh --exec (tests/bench/evaluate_checker does that)."""
import os
import statistics
import subprocess
import time
import uuid
from concurrent.futures import ProcessPoolExecutor

import httpx

URL = os.environ["SBX_URL"]
H = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"]}
N = int(os.environ.get("BENCH_N", "5"))
CHECKER = ("import sys\nans = open(sys.argv[2]).read().split()\n"
           "sys.exit(42 if sys.stdin.read().split() == ans else 43)\n")
CASES = [{"stdin": "%d %d\n" % (i, 2 * i), "expected_stdout": "%d\n" % (3 * i)}
         for i in range(100)]
PLAIN = {"language": "python", "code": "a, b = map(int, input().split())\nprint(a + b)\n",
         "cases": CASES}
CHECKED = dict(PLAIN, checker={"language": "python", "code": CHECKER})
CODE = "def add(a, b):\n    return a + b\n"
IO = [{"input": "a=%d, b=%d" % (i, 2 * i), "output": str(3 * i)} for i in range(100)]


def timed(f):
    t = time.perf_counter()
    f()
    return (time.perf_counter() - t) * 1e3


def evaluate(c, body):
    r = c.post("/v1/evaluate", json=body)
    if r.status_code != 200 or r.json().get("passed_count") != 100:
        raise SystemExit("evaluate failed: %s %s" % (r.status_code, r.text[:300]))


def evaluate_code(c, sid):
    r = c.post("/evaluate_code", json={"id": sid, "code": CODE, "entry_point": "add",
                                       "io_cases": IO})
    if r.status_code != 200 or not r.json().get("passed"):
        raise SystemExit("evaluate_code failed: %s %s" % (r.status_code, r.text[:300]))


def evaluate_code_one(c, sid):
    r = c.post("/evaluate_code", json={"id": sid, "code": CODE, "entry_point": "add",
                                       "io_cases": IO[:1]})
    if r.status_code != 200 or not r.json().get("passed"):
        raise SystemExit("evaluate_code failed: %s %s" % (r.status_code, r.text[:300]))


def execute_one(c):
    r = c.post("/v1/execute", json={"language": "python", "code": "print(1)"})
    if r.status_code != 200:
        raise SystemExit("execute failed: %s %s" % (r.status_code, r.text[:300]))


def evaluate_process(c):
    r = c.post("/v1/evaluate", json={"language": "python", "code": CODE, "entry_point": "add",
                                     "io_cases": IO, "isolation": "process"})
    if r.status_code != 200 or r.json().get("passed_count") != 100:
        raise SystemExit("evaluate (process) failed: %s %s" % (r.status_code, r.text[:300]))


def bare():
    subprocess.run(["/usr/bin/python3", "-c", "print(1)"], stdout=subprocess.DEVNULL, check=True)


def seed_case(args):
    code, a, b, want = args
    g = {"__name__": "solution"}
    exec(code, g)
    return g["add"](a, b) == want


def seed_way():
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
        ok = list(ex.map(seed_case, [(CODE, i, 2 * i, 3 * i) for i in range(100)]))
    if not all(ok):
        raise SystemExit("seed baseline failed")


def checker_only():
    c = httpx.Client(base_url=URL, verify=False, headers=H, timeout=300)
    for f in (lambda: evaluate(c, PLAIN), lambda: evaluate(c, CHECKED)):
        f()
    plain, checked = [], []
    for _ in range(N):
        plain.append(timed(lambda: evaluate(c, PLAIN)))
        checked.append(timed(lambda: evaluate(c, CHECKED)))
    p, k = statistics.median(plain), statistics.median(checked)
    print("evaluate 100 cases, built-in compare: %.0f ms; with a python checker: %.0f ms"
          % (p, k))
    print("checker overhead: ratio %.2f (target <= 2.0); load average %s"
          % (k / p, " ".join("%.2f" % x for x in os.getloadavg())))


def main():
    if os.environ.get("BENCH_ONLY") == "checker":
        return checker_only()
    c = httpx.Client(base_url=URL, verify=False, headers=H, timeout=300)
    sid = "bench-" + uuid.uuid4().hex[:12]
    for f in (lambda: evaluate(c, PLAIN), lambda: evaluate(c, CHECKED),
              lambda: evaluate_code(c, sid), lambda: evaluate_process(c), bare, seed_way):
        f()  # warm up each path once
    plain, checked, ec, pr, br, seed, ec1, ex = [], [], [], [], [], [], [], []
    for _ in range(N):
        plain.append(timed(lambda: evaluate(c, PLAIN)))
        checked.append(timed(lambda: evaluate(c, CHECKED)))
        ec.append(timed(lambda: evaluate_code(c, sid)))
        ec1.append(timed(lambda: evaluate_code_one(c, sid)))
        ex.append(timed(lambda: execute_one(c)))
        pr.append(timed(lambda: evaluate_process(c)))
        br.append(timed(bare))
        seed.append(timed(seed_way))
    m = {k: statistics.median(v) for k, v in
         dict(plain=plain, checked=checked, ec=ec, pr=pr, bare=br, seed=seed, ec1=ec1,
              ex=ex).items()}
    print("evaluate 100 cases, built-in compare: %.0f ms; with a python checker: %.0f ms"
          % (m["plain"], m["checked"]))
    print("checker overhead: ratio %.2f (target <= 2.0)" % (m["checked"] / m["plain"]))
    print("evaluate_code 100 io_cases: %.0f ms; bare python start: %.0f ms; seed's "
          "ProcessPoolExecutor: %.0f ms" % (m["ec"], m["bare"], m["seed"]))
    print("evaluate_code vs bare python: ratio %.2f (reference)" % (m["ec"] / m["bare"]))
    # Where evaluate_code's time goes: the stack and a sandboxed python start (execute), the
    # runner's fixed part (1 case), the 99 other cases.
    print("breakdown: /v1/execute print(1) %.0f ms; evaluate_code 1 io_case %.0f ms; 99 more "
          "cases %.0f ms" % (m["ex"], m["ec1"], m["ec"] - m["ec1"]))
    print("evaluate_code vs seed's way: ratio %.2f (target <= 1.0)" % (m["ec"] / m["seed"]))
    print("/v1/evaluate 100 io_cases, process isolation: %.0f ms; vs bare python: ratio %.2f "
          "(target <= 2.2)" % (m["pr"], m["pr"] / m["bare"]))


main()
