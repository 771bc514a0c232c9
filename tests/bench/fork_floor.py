"""fork_floor.py: what this machine charges for the steps a warm start is made of, each against
a bare `python3 -c 'print(1)'` measured in the same run (issue 15: is a fork of a warm
interpreter cheaper than starting one, here?).

Prints, as reference lines (no target of their own; they say which design can reach the
throughput targets of execute_latency and the evaluate benches on this machine):
  page_fault first-touch A us, copy-on-write B us per 4 KiB page
  bare_python_start C ms CPU, F faults
  warm_fork exit-only D ms CPU (child d1 + parent d2), print(1) E ms CPU, ratio E/C
A machine whose page faults trap to its hypervisor (a paravirtual MMU) pays many times what
bare metal does per fault; so does a loaded one. The CPU of each step is rusage (the child's
from wait4, the parent's own), so it is the process's CPU only, not the machine's."""
import json
import mmap
import os
import resource
import subprocess
import sys

N = int(os.environ.get("BENCH_N", "40"))
PY = "/usr/bin/python3"


def cpu_ms(r):
    return (r.ru_utime + r.ru_stime) * 1e3


def fault_costs(pages=8192):
    """us per first-touch fault of anonymous memory, and per copy-on-write fault after a fork
    (the child writes one byte per page; its fork and exit are measured apart and taken off)."""
    m = mmap.mmap(-1, pages * 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    for i in range(pages):
        m[i * 4096] = 1
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    first = (cpu_ms(r1) - cpu_ms(r0)) * 1e3 / max(1, r1.ru_minflt - r0.ru_minflt)

    def child(write):
        pid = os.fork()
        if pid == 0:
            if write:
                for i in range(pages):
                    m[i * 4096] = 2
            os._exit(0)
        _, _, ru = os.wait4(pid, 0)
        return cpu_ms(ru), ru.ru_minflt

    base = min(child(False) for _ in range(3))
    cow = min(child(True) for _ in range(3))
    return first, (cow[0] - base[0]) * 1e3 / max(1, cow[1] - base[1])


def bare_start():
    cpu = flt = 0.0
    for _ in range(N):
        p = subprocess.Popen([PY, "-c", "print(1)"], stdout=subprocess.DEVNULL)
        _, _, ru = os.wait4(p.pid, 0)
        cpu += cpu_ms(ru)
        flt += ru.ru_minflt
    return cpu / N, flt / N


# The warm interpreter: the runner's form (-S -B), the modules the runner and the stub preload,
# gc frozen as the pre-start and the zygote leave it; then N forks whose child exits at once, and
# N whose child runs a compiled print(1) as __main__, flushes and leaves without finalizing.
WARM = r"""
import gc, io, json, os, resource, sys
import ast, ctypes, traceback
N = int(sys.argv[1])
code = compile("print(1)", "main.py", "exec")
gc.freeze()
def cpu(r): return (r.ru_utime + r.ru_stime) * 1e3
def loop(run):
    s0 = resource.getrusage(resource.RUSAGE_SELF)
    ch = flt = 0.0
    for _ in range(N):
        pid = os.fork()
        if pid == 0:
            if run:
                sys.stdout = io.StringIO()
                exec(code, {"__name__": "__main__"})
                sys.stdout.flush()
            os._exit(0)
        _, _, ru = os.wait4(pid, 0)
        ch += cpu(ru)
        flt += ru.ru_minflt
    s1 = resource.getrusage(resource.RUSAGE_SELF)
    return {"child": ch / N, "parent": (cpu(s1) - cpu(s0)) / N, "child_faults": flt / N,
            "parent_faults": (s1.ru_minflt - s0.ru_minflt) / N}
print(json.dumps({"exit": loop(False), "run": loop(True)}))
"""


def warm_fork():
    out = subprocess.run([PY, "-S", "-B", "-c", WARM, str(N)], capture_output=True, check=True)
    return json.loads(out.stdout)


def main():
    first, cow = fault_costs()
    rounds = []
    for _ in range(2):  # alternated, so a change in the machine's load hits both alike
        rounds.append((bare_start(), warm_fork()))
    bare = sum(r[0][0] for r in rounds) / len(rounds)
    bare_flt = sum(r[0][1] for r in rounds) / len(rounds)
    ex = {k: sum(r[1]["exit"][k] for r in rounds) / len(rounds) for k in rounds[0][1]["exit"]}
    run = {k: sum(r[1]["run"][k] for r in rounds) / len(rounds) for k in rounds[0][1]["run"]}
    print(f"page_fault first-touch {first:.2f} us, copy-on-write {cow:.2f} us per 4 KiB page "
          "(reference: bare metal is well under 1 us)")
    print(f"bare_python_start {bare:.2f} ms CPU, {bare_flt:.0f} faults per run ({N} runs x "
          f"{len(rounds)}; reference)")
    print(f"warm_fork exit-only {ex['child'] + ex['parent']:.2f} ms CPU (child {ex['child']:.2f}"
          f" + parent {ex['parent']:.2f}; faults {ex['child_faults']:.0f} + "
          f"{ex['parent_faults']:.0f}) (reference)")
    tot = run["child"] + run["parent"]
    print(f"warm_fork print(1) {tot:.2f} ms CPU (child {run['child']:.2f} + parent "
          f"{run['parent']:.2f}; faults {run['child_faults']:.0f} + {run['parent_faults']:.0f}),"
          f" ratio {tot / bare:.3f} vs bare_python_start (reference: a fork of a warm "
          "interpreter's share of a run's CPU)")


if __name__ == "__main__":
    main()
