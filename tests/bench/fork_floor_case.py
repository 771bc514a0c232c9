"""fork_floor_case.py RUNNER_DIR [N]: the floor of a case in process isolation. Loads the
evaluate runner's worker as it is before it forks cases (sbx_eval, sbx_pycase, 100 io_cases
preloaded), then forks N (100) children that _exit at once, reaping each. Prints the CPU of it
all in ms (this process and its children), the wall ms and the minor faults, space-separated.
Run with /usr/bin/python3 -S -B (the runner's options) by evaluate_speed.py and
evaluate_speed_procs.py."""
import os
import resource
import sys
import time

sys.path.insert(0, sys.argv[1])
import sbx_eval  # noqa: E402,F401  (the worker's imports, as loaded)
import sbx_pycase  # noqa: E402

sbx_pycase.preload("io", 100)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
t = time.perf_counter()
c0 = resource.getrusage(resource.RUSAGE_SELF)
k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(N):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
c1 = resource.getrusage(resource.RUSAGE_SELF)
k1 = resource.getrusage(resource.RUSAGE_CHILDREN)


def cpu(a, b):
    return b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime


print("%.2f %.2f %d" % ((cpu(c0, c1) + cpu(k0, k1)) * 1000, (time.perf_counter() - t) * 1e3,
                        c1.ru_minflt - c0.ru_minflt + k1.ru_minflt - k0.ru_minflt))
