"""evaluate_speed_procs.py: where the evaluate runner's CPU goes, per process, for one request.

Runs the runner directly (no sandbox, no stack) the way a pre-started interpreter does
(sandbox/warm.c: the runner's modules imported before the job arrives), one fresh interpreter
per round, and records at the exit of every process of the request (supervisor, executor,
worker, second scheduler, case processes) its own CPU (utime + stime) and minor page faults
counted from the moment the job is handed over. Jobs: one HumanEval problem (test mode, one
case) and 100 io_cases of `add` (process and namespace isolation).

    python3 tests/bench/evaluate_speed_procs.py [ROUNDS]

Also prints the fork floor of process isolation on this machine: 100 x (fork of a loaded
worker + _exit + reap), the CPU no design that forks a process per case can go below, against
one bare `python3 -c 'print(1)'` start measured in the same run, with the number of cores."""
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNNER = os.path.join(ROOT, "fcgi", "evaluate", "runner")
HUMANEVAL = os.environ.get("HUMANEVAL") or next(
    (p for p in (os.path.join(ROOT, up, "shared", "datasets", "HumanEval.jsonl.gz")
                 for up in ("..", os.path.join("..", ".."))) if os.path.exists(p)), "")
PY = "/usr/bin/python3"
# What evaluate.c passes the runner for a job with no answer to hold (test, `cases`): empty to
# measure the runner as it was before (supervisor -> executor -> case).
DIRECT = os.environ.get("EVAL_DIRECT", "--nothing-held").split()

# The pre-started interpreter: the runner imported, then the job. Every process of the request
# ends through os._exit (the runner's own rule) but the supervisor, which returns from main():
# the patched os._exit appends each process's own figures (from the hand-over on) to LOG.
DRIVER = r"""
import os, resource, sys
sys.path.insert(0, sys.argv[1])
import sbx_eval
LOG, ROLE = sys.argv[2], ["supervisor"]
sys.argv = ["/opt/sbx/evaluate.py"] + sys.argv[3:]  # what evaluate.c passes the runner
_exit, _fork = os._exit, os.fork
def fork():
    pid = _fork()
    if pid == 0:
        ROLE[0] = ROLE[0] + ">"
        r = resource.getrusage(resource.RUSAGE_SELF)
        BASE[0] = (r.ru_utime + r.ru_stime, r.ru_minflt)  # a child's figures start at its fork
    return pid
def note():
    r = resource.getrusage(resource.RUSAGE_SELF)
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, ("%s %d %.3f %d\n" % (ROLE[0], os.getpid(),
        (r.ru_utime + r.ru_stime - BASE[0][0]) * 1e3, r.ru_minflt - BASE[0][1])).encode())
    os.close(fd)
def quit(code=0):
    try:
        note()
    finally:
        _exit(code)
_kill, _killpg = os.kill, os.killpg
TCK = os.sysconf("SC_CLK_TCK")
def killed(pid, sig):
    # A process the runner kills (namespace processes at the end): its figures from /proc
    # first (ticks: coarse), as the child of this one.
    if sig == 9 and pid not in KILLED:
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read().rsplit(")", 1)[1].split()
            if st[0] != "Z":
                KILLED.add(pid)
                fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.write(fd, ("%s> %d %.3f %d\n" % (ROLE[0], pid,
                    (int(st[11]) + int(st[12])) * 1e3 / TCK, int(st[7]))).encode())
                os.close(fd)
        except (OSError, IndexError):
            pass
KILLED = set()
def kill(pid, sig):
    killed(pid, sig)
    return _kill(pid, sig)
def killpg(pid, sig):
    killed(pid, sig)
    return _killpg(pid, sig)
os._exit, os.fork, os.kill, os.killpg = quit, fork, kill, killpg
r = resource.getrusage(resource.RUSAGE_SELF)
BASE = [(r.ru_utime + r.ru_stime, r.ru_minflt)]
sbx_eval.main()
note()
_exit(0)
"""

def humaneval_job():
    with gzip.open(HUMANEVAL, "rt") as f:
        p = [json.loads(x) for x in f if x.strip()][int(os.environ.get("HUMANEVAL_INDEX", "2"))]
    test = p["test"] + "\ncheck(%s)\n" % p["entry_point"]
    return {"mode": "test", "code": p["prompt"] + p["canonical_solution"],
            "entry_point": p["entry_point"], "cases": [{"test": test}]}


def io_job(n, isolation):
    return {"mode": "io", "code": "def add(a, b):\n    return a + b\n", "entry_point": "add",
            "cases": [{"input": "a=%d, b=%d" % (i, 2 * i), "output": str(3 * i)}
                      for i in range(n)], "isolation": isolation}


def common(job, tmp):
    job.update({"limits": {"wall_ms": 10000, "cpu_ms": 10000, "memory_bytes": 256 << 20,
                           "output_bytes": 1 << 16}, "deadline_ms": 60000, "parallel": 2,
                "stop_on_failure": False, "cwd": tmp, "work_dir": tmp, "tmp_dir": tmp})
    return job


def one(job, tmp, args):
    log = os.path.join(tmp, "procs.log")
    if os.path.exists(log):
        os.unlink(log)
    t = time.perf_counter()
    r = subprocess.run([PY, "-S", "-B", "-c", DRIVER, RUNNER, log] + args, input=json.dumps(job),
                       capture_output=True, text=True, cwd=tmp)
    wall = (time.perf_counter() - t) * 1e3
    ans = json.loads(r.stdout)
    bad = [c for c in ans["cases"] if not c.get("passed")]
    if bad:
        raise SystemExit("runner failed: %r" % bad[:1])
    procs = {}
    with open(log) as f:
        for line in f:
            role, _, cpu, flt = line.split()
            procs.setdefault(role, []).append((float(cpu), int(flt)))
    return wall, procs


LABELS = {0: "supervisor", 1: "executor (direct: case)", 2: "executor's children",
          3: "their children", 4: "4th level"}


def report(name, job, rounds, tmp, args=()):
    runs = [one(job, tmp, list(args)) for _ in range(rounds)]
    roles = sorted({k for _, p in runs for k in p}, key=len)
    total = []
    for _, p in runs:
        total.append((sum(c for v in p.values() for c, _ in v),
                      sum(f for v in p.values() for _, f in v)))
    print("%s: runner wall %.0f ms (median of %d, incl. interpreter start), CPU from the job on "
          "%.1f ms, %d faults" % (name, statistics.median(w for w, _ in runs), rounds,
                                  statistics.median(c for c, _ in total),
                                  statistics.median(f for _, f in total)))
    for role in roles:
        cpu = [sum(c for c, _ in p.get(role, [])) for _, p in runs]
        flt = [sum(f for _, f in p.get(role, [])) for _, p in runs]
        n = statistics.median(len(p.get(role, [])) for _, p in runs)
        label = LABELS.get(role.count(">"), role)
        print("  %-22s x%-4g CPU %7.1f ms  faults %6d" % (label, n, statistics.median(cpu),
                                                         statistics.median(flt)))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    only = sys.argv[2:]  # humaneval, process, namespace, floor: a part of the figures
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as tmp:
        if os.path.exists(HUMANEVAL) and (not only or "humaneval" in only):
            report("humaneval #%s (test, 1 case)" % os.environ.get("HUMANEVAL_INDEX", "2"), common(humaneval_job(), tmp), rounds, tmp,
                   DIRECT)
        if not only or "process" in only:
            report("100 io_cases, process", common(io_job(100, "process"), tmp), rounds, tmp)
        if not only or "namespace" in only:
            report("100 io_cases, namespace", common(io_job(100, "namespace"), tmp), rounds, tmp)
        if only and "floor" not in only:
            return
        bare = []
        for _ in range(rounds * 2):
            r0 = os.times()
            subprocess.run([PY, "-c", "print(1)"], stdout=subprocess.DEVNULL, check=True)
            r1 = os.times()
            bare.append((r1.children_user + r1.children_system - r0.children_user
                         - r0.children_system) * 1e3)
        b = statistics.median(bare)
        case = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_floor_case.py")
        ff = [subprocess.run([PY, "-S", "-B", case, RUNNER], capture_output=True,
                             text=True, check=True).stdout.split() for _ in range(rounds)]
        cpu = statistics.median(float(x[0]) for x in ff)
        cores = len(os.sched_getaffinity(0))
        print("bare python3 -c 'print(1)': %.1f ms CPU" % b)
        print("fork floor: 100 x (fork of the loaded worker + _exit + reap): %.1f ms CPU, %d "
              "faults (%.2f ms a case); on %d cores >= %.1f ms wall = %.2f x bare; the "
              "2.2 x target allows %.1f ms for everything" % (
                  cpu, statistics.median(int(x[2]) for x in ff), cpu / 100, cores,
                  cpu / cores, cpu / cores / b, 2.2 * b))
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
