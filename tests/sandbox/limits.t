#!/usr/bin/python3
"""limits.t: every limit flag gives the right outcome, nothing triggers below a limit, usage
errors exit 64, and the CPU time and peak memory the sandbox reports for a known workload agree
with the same static binary run bare on the host (measured with wait4's rusage)."""
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
import probes  # noqa: E402
from tap import ok, is_, diag  # noqa: E402

S.start(probes={"burn": probes.BURN, "touch": probes.TOUCH})

# ---------------------------------------------------------------- each flag, at and below its limit
COUNT_PY = r"""
import errno, json, os, sys, time
what, n, err = sys.argv[1], 0, None
try:
    if what == 'fork':
        while n < 1000:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            n += 1
    elif what in ('file', 'tmp'):
        fd = os.open('/work/f' if what == 'file' else '/tmp/f', os.O_WRONLY | os.O_CREAT)
        while n < 1000:
            os.write(fd, b'\1' * (1 << 20))
            n += 1
    elif what == 'fds':
        while n < 100000:
            os.open('/dev/null', os.O_RDONLY)
            n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({'n': n, 'err': err}))
"""
cases = [
    ("--wall-ms 500: sleep 5 s -> timeout wall", dict(wall_ms=500),
     ["/usr/bin/sleep", "5"], lambda r, j: r.get("status") == "timeout" and r.get("limit") == "wall"),
    ("--cpu-ms 500: spin -> timeout cpu", dict(cpu_ms=500, wall_ms=60000),
     [S.probe("burn"), "1", "0"], lambda r, j: r.get("status") == "timeout" and r.get("limit") == "cpu"
     and 500 <= r.get("cpu_ms", 0)),
    ("--memory-mb 32: touch 64 MiB -> memory_limit", dict(memory_mb=32),
     [S.probe("touch"), "64"], lambda r, j: r.get("status") == "memory_limit"
     and r.get("memory_kb", 0) <= 32 * 1024 * 1.1),
    ("--output-hard-bytes 100000: 200000 bytes -> output_limit", dict(output_hard_bytes=100000),
     [S.PY, "-c", "print('x' * 200000)"], lambda r, j: r.get("status") == "output_limit"),
    ("--output-bytes 10: 10 bytes kept, flagged, run ok", dict(output_bytes=10),
     [S.PY, "-c", "print('x' * 100)"], lambda r, j: r.get("status") == "ok"
     and r.get("stdout") == "x" * 10 and r.get("stdout_truncated") is True),
    ("--processes 4: the 4th task cannot start (EAGAIN)", dict(processes=4),
     [S.PY, "-c", COUNT_PY, "fork"], lambda r, j: j.get("err") == "EAGAIN" and 1 <= j.get("n", 0) <= 3),
    ("--file-size-mb 1: EFBIG after 1 MiB", dict(file_size_mb=1),
     [S.PY, "-c", COUNT_PY, "file"], lambda r, j: j.get("err") == "EFBIG" and j.get("n") == 1),
    ("--open-files 20: EMFILE within 20 fds", dict(open_files=20),
     [S.PY, "-c", COUNT_PY, "fds"], lambda r, j: j.get("err") == "EMFILE" and j.get("n", 99) <= 20),
    ("--tmp-mb 2: ENOSPC within 2 MiB of /tmp", dict(tmp_mb=2),
     [S.PY, "-c", COUNT_PY, "tmp"], lambda r, j: j.get("err") == "ENOSPC" and j.get("n", 99) <= 2),
    # Below each limit nothing triggers.
    # Far below: the sandbox's own set-up counts in wall time, and a loaded machine slows it.
    ("--wall-ms 10000: sleep 0.5 s -> ok", dict(wall_ms=10000),
     ["/usr/bin/sleep", "0.5"], lambda r, j: r.get("status") == "ok"),
    ("--cpu-ms 3000: burn 300 ms of CPU -> ok", dict(cpu_ms=3000, wall_ms=60000),
     [S.probe("burn"), "1", "300"], lambda r, j: r.get("status") == "ok"),
    ("--memory-mb 96: touch 48 MiB -> ok", dict(memory_mb=96),
     [S.probe("touch"), "48"], lambda r, j: r.get("status") == "ok"),
    ("--processes 8: 5 children -> ok", dict(processes=8),
     ["/bin/sh", "-c", "for i in 1 2 3 4 5; do sleep 0.2 & done; wait"],
     lambda r, j: r.get("status") == "ok" and r.get("stderr") == ""),
    ("--output-hard-bytes 100000: 99999 bytes -> ok", dict(output_hard_bytes=100000, output_bytes=200000),
     [S.PY, "-c", "import sys; sys.stdout.write('x' * 99999)"],
     lambda r, j: r.get("status") == "ok" and len(r.get("stdout", "")) == 99999),
]
for desc, limits, argv, check in cases:
    r = S.run(argv, workdir=S.tmpdir(), **limits)
    j = S.last_json(r) or {}
    ok(S.happened(r) and check(r, j), desc, S.show(r))

# The program cannot lift its own limits: raising any rlimit fails, and the limits still bite.
RAISE_PY = r"""
import json, os, resource as R
res = {}
for name in ('RLIMIT_FSIZE', 'RLIMIT_CORE', 'RLIMIT_NOFILE', 'RLIMIT_MEMLOCK', 'RLIMIT_CPU',
             'RLIMIT_NPROC', 'RLIMIT_MSGQUEUE'):
    r = getattr(R, name)
    soft, hard = R.getrlimit(r)
    try:
        R.setrlimit(r, (R.RLIM_INFINITY, R.RLIM_INFINITY))
        res[name] = 'raised' if hard != R.RLIM_INFINITY else 'already unlimited'
    except (OSError, ValueError) as e:
        res[name] = 'refused'
    try:
        R.setrlimit(r, (hard, hard))   # soft up to hard is allowed; use it
    except (OSError, ValueError):
        pass
try:
    with open('/work/big', 'wb', buffering=0) as f:
        for i in range(3):
            f.write(b'\1' * (1 << 20))
    res['write 3 MiB'] = 'ok'
except OSError as e:
    res['write 3 MiB'] = e.strerror
print(json.dumps(res))
"""
r = S.py(RAISE_PY, file_size_mb=1, workdir=S.tmpdir())
j = S.last_json(r) or {}
ok(j and "raised" not in j.values() and j.get("write 3 MiB") == "File too large",
   "no rlimit can be raised from inside; after trying, a 3 MiB write still fails at "
   "--file-size-mb 1", S.show(r))
cwd = S.tmpdir()
wd = S.tmpdir()
r = S.bash("ulimit -c unlimited; echo ulimit=$?; /usr/bin/python3 -c 'import ctypes; "
           "ctypes.string_at(0)'; ls /work", workdir=wd, cwd=cwd)
ok("ulimit=0" not in (r.get("stdout") or "") and not any(f.startswith("core") for f in
                                                         os.listdir(wd) + os.listdir(cwd)),
   "ulimit -c unlimited is refused and a segfault after it leaves no core file", S.show(r))

# ---------------------------------------------------------------- usage errors and exit codes
for desc, args in (("no program", []), ("unknown flag", ["--bogus", "--", "/usr/bin/true"]),
                   ("non-numeric limit", ["--wall-ms", "abc", "--", "/usr/bin/true"]),
                   ("missing flag value", ["--wall-ms"])):
    p = subprocess.run([S.SBX] + args, capture_output=True, text=True, timeout=30)
    is_(p.returncode, 64, f"usage error ({desc}): exit 64")
root_dir = S.tmpdir(owner=None)
p = subprocess.run([S.SBX, "--workdir", root_dir, "--", "/usr/bin/true"], capture_output=True,
                   text=True, timeout=30)
is_(p.returncode, 64, "a root-owned --workdir is refused (exit 64): its files would be root's")
stdin_file = os.path.join(S.tmpdir(owner=None), "in.txt")
with open(stdin_file, "w") as f:
    f.write("line one\nline two\n")
STDIN_PY = r"""
import sys
data = sys.stdin.read()
try:
    open('/proc/self/fd/0', 'w').write('overwritten')
    w = 'ok'
except OSError as e:
    w = e.strerror
print(repr(data), w)
"""
r = S.py(STDIN_PY, stdin=stdin_file)
with open(stdin_file) as f:
    after = f.read()
ok(r.get("status") == "ok" and (r.get("stdout") or "").startswith("'line one\\nline two\\n'")
   and "ok" not in (r.get("stdout") or "").split()[-1:] and after == "line one\nline two\n",
   "--stdin FILE: the program reads it, cannot reopen it for writing, the host file is unchanged",
   S.show(r))
r = S.run(["/usr/bin/false"])
ok(r.get("_rc") == 0 and r.get("status") == "error" and r.get("exit_code") == 1,
   "a program exiting 1: status error, exit_code 1, and the CLI itself exits 0", S.show(r))
r = S.sh("exit 77")
is_(r.get("exit_code"), 77, "exit_code is passed through")
r = S.sh("kill -ABRT $$")
ok(r.get("status") == "signal" and r.get("signal") == "SIGABRT", "a self-inflicted SIGABRT: "
   "status signal, signal SIGABRT", S.show(r))
r = S.run(["/nonexistent/program"])
diag(f"a program that does not exist inside: {S.show(r)[:300]}")
ok(S.happened(r) or r.get("status") == "internal_error", "a missing program gives a normal outcome "
   "or internal_error, never a hang or a crash", S.show(r))

# ---------------------------------------------------------------- accuracy against a bare run
# The same static binary, alternately bare (wait4 rusage) and in the sandbox (the cgroup's
# counters). The probe burns a fixed amount of its own CPU clock, so the work is the same however
# fast the CPU or busy the machine (iterations would vary by +-20% here: cache and SMT contention).
# (a) each sandboxed run's cpu_ms must match the program's own getrusage of that very run within
# 5% (this is the accounting itself); (b) the least CPU time seen bare and sandboxed, over 5
# alternations, within 5% (what the sandbox adds to the count: its init, exec, set-up inside).


def bare(argv):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, _st, ru = os.wait4(p.pid, 0)
    p.returncode = 0
    return ru


BURN_MS = "800"  # CPU time each run burns (sized in time: the same work on any CPU)
bare_cpu, sbx_cpu, self_cpu = [], [], []
for _ in range(5):
    ru = bare([S.probe_host("burn"), "1", BURN_MS])
    bare_cpu.append(round((ru.ru_utime + ru.ru_stime) * 1000))
    r = S.run([S.probe("burn"), "1", BURN_MS], cpu_ms=10000, wall_ms=60000)
    sbx_cpu.append(r.get("cpu_ms") or 0)
    self_cpu.append((S.last_json(r) or {}).get("self_cpu_ms", -1))
diag(f"CPU ms bare {bare_cpu}; sandbox cpu_ms {sbx_cpu}; the program's own rusage {self_cpu}")
ok(all(abs(c - m) <= 0.05 * m + 5 for c, m in zip(sbx_cpu, self_cpu)),
   "each run's cpu_ms matches the program's own getrusage within 5%", (sbx_cpu, self_cpu))
b, s = min(bare_cpu), min(sbx_cpu)
ok(b >= int(BURN_MS) and abs(s - b) <= 0.05 * b, f"cpu_ms of a {BURN_MS} ms CPU burn agrees with "
   f"the bare run within 5% (least of 5: bare {b} ms, sandbox {s} ms, ratio {s / max(b, 1):.3f})",
   (bare_cpu, sbx_cpu))

# Peak memory: bare ru_maxrss counts the process's resident pages; the sandbox's memory_kb is the
# cgroup peak, which also holds page tables (~0.2% of 200 MiB), kernel stacks, our small init and
# any page cache first touched inside. Those add well under 5% (10 MiB) for a 200 MiB workload,
# and nothing subtracts, so 5% both ways is the allowance. Memory does not suffer CPU noise.
bare_kb, sbx_kb = [], []
for _ in range(3):
    bare_kb.append(bare([S.probe_host("touch"), "200"]).ru_maxrss)
    r = S.run([S.probe("touch"), "200"], memory_mb=512)
    sbx_kb.append(r.get("memory_kb") or 0)
b, s = statistics.median(bare_kb), statistics.median(sbx_kb)
ok(abs(s - b) <= 0.05 * b, f"memory_kb of a program touching 200 MiB agrees with the bare maxrss "
   f"within 5% (medians of 3: bare {b} KiB, sandbox {s} KiB, ratio {s / b:.3f})",
   f"bare {bare_kb} sandbox {sbx_kb}")

S.finish()
