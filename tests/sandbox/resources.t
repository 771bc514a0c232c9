#!/usr/bin/python3
"""resources.t: hostile resource use (SANDBOX.md checklist 1-9): fork and thread bombs, memory
bombs, CPU spin, sleeping forever, output floods, huge files and full /tmp, fd exhaustion, mlock,
SysV/POSIX IPC, segfaults. Each run must end with the right status, at the limit, and leave
nothing behind (checked after the bombs and again at the end of the file)."""
import glob
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
import probes  # noqa: E402
from tap import ok, is_, diag  # noqa: E402

S.start(probes={"burn": probes.BURN, "touch": probes.TOUCH, "segv": probes.SEGV,
                "ipc": probes.IPC, "mlock": probes.MLOCK})


def pswpout():
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("pswpout "):
                return int(line.split()[1])
    return 0


# ---------------------------------------------------------------- 1, 2: fork and thread bombs
FORK_PY = r"""
import errno, json, os, time
n, err = 0, None
while n < 10000:
    try:
        pid = os.fork()
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    if pid == 0:
        time.sleep(1000)
        os._exit(0)
    n += 1
print(json.dumps({"n": n, "err": err}), flush=True)
"""
r = S.py(FORK_PY, processes=16, wall_ms=8000)
j = S.last_json(r) or {}
ok(r.get("status") == "ok" and j.get("err") == "EAGAIN" and 1 <= j.get("n", 0) <= 15,
   "python fork bomb: fork fails with EAGAIN before 16 tasks, the run ends ok", S.show(r))
S.no_leftover_processes("python fork bomb: none of its sleeping children survives the run")

# The classic shell bomb, while another run must keep answering.
bomb = S.Run(["/usr/bin/bash", "-c", ":(){ :|:& };:; sleep 2; echo survived"],
             processes=32, wall_ms=4000, cpu_ms=4000)
time.sleep(0.5)
r2 = S.py("print(6*7)", wall_ms=5000)
r = bomb.result()
ok(S.happened(r) and r.get("status") in ("ok", "error", "timeout") and r.get("wall_ms", 1e9) <= 5000,
   "bash ':(){ :|:& };:' ends within the wall limit with a normal status", S.show(r))
ok(r2.get("status") == "ok" and r2.get("stdout") == "42\n",
   "another run answers while the bash bomb rages", S.show(r2))
S.no_leftover_processes("bash bomb: nothing survives the run")
r = S.sh("f(){ f|f& };f; sleep 1", processes=32, wall_ms=4000, cpu_ms=4000)
ok(S.happened(r) and r.get("status") in ("ok", "error", "timeout"),
   "dash 'f(){ f|f& };f' ends with a normal status", S.show(r))
S.no_leftover_processes("dash bomb: nothing survives the run")

THREAD_PY = r"""
import json, threading
ev, n, msg = threading.Event(), 0, None
try:
    while n < 10000:
        threading.Thread(target=ev.wait, daemon=True).start()
        n += 1
except RuntimeError as e:
    msg = str(e)
print(json.dumps({"n": n, "msg": msg}), flush=True)
"""
r = S.py(THREAD_PY, processes=16, wall_ms=8000)
j = S.last_json(r) or {}
ok(r.get("status") == "ok" and j.get("msg") and 1 <= j.get("n", 0) <= 15,
   "python thread bomb: thread creation fails before 16 tasks, the run ends ok", S.show(r))
r = S.py("print('after the bombs')")
is_(r.get("stdout"), "after the bombs\n", "a plain run works after the bombs")

# ---------------------------------------------------------------- 3: memory bombs
MEM_PY = r"""
chunks = []
for i in range(128):
    chunks.append(b'\1' * (1 << 20))
print('survived', len(chunks))
"""
swap0 = pswpout()
r = S.py(MEM_PY, memory_mb=64, wall_ms=10000)
S.status_is(r, "memory_limit", "python touching 128 MiB under a 64 MiB limit: memory_limit")
kb = r.get("memory_kb") or 0
ok(0.85 * 65536 <= kb <= 1.10 * 65536, "the peak reported is near the 64 MiB limit (85%..110%)",
   f"memory_kb {kb}")
r = S.run([S.probe("touch"), "128"], memory_mb=64, wall_ms=10000)
S.status_is(r, "memory_limit", "C program touching 128 MiB under 64 MiB: memory_limit")
SMALL_PY = r"""
import os, time
pids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        b = b'\1' * (12 << 20)
        time.sleep(4)
        os._exit(0)
    pids.append(pid)
for p in pids:
    os.waitpid(p, 0)
print('parent done')
"""
r = S.py(SMALL_PY, memory_mb=64, wall_ms=10000)
S.status_is(r, "memory_limit", "8 processes of 12 MiB each under a 64 MiB limit: memory_limit "
            "(the limit is for the whole tree)")
is_(pswpout() - swap0, 0, "the host did not swap during the memory bombs (pswpout unchanged)")
S.no_leftover_processes("memory bombs: nothing survives")

# ---------------------------------------------------------------- 4: CPU spin
# Wall limits far above the CPU limit: on a loaded machine CPU time accrues slowly.
r = S.py("while True: pass", cpu_ms=1000, wall_ms=60000)
S.status_is(r, "timeout", "python spin: timeout with limit cpu", limit="cpu")
ok(1000 <= (r.get("cpu_ms") or 0) <= 2000, "cpu_ms of the spin is at the limit (1000..2000)",
   S.show(r))
r = S.run([S.probe("burn"), "3", "0"], cpu_ms=1000, wall_ms=60000)
S.status_is(r, "timeout", "3 spinning threads (main thread idle in join): timeout limit cpu, "
            "so the threads' CPU is counted", limit="cpu")
r = S.sh("for i in 1 2 3; do (while :; do :; done) & done; wait", cpu_ms=1000, wall_ms=60000)
S.status_is(r, "timeout", "shell: 3 spinning background subshells: timeout limit cpu", limit="cpu")
# Each thread burns 300 ms of its own CPU clock (sized in time, not iterations: the same on any
# CPU), so the program's own getrusage is at least 1200 ms, and cpu_ms must cover all of it.
r = S.run([S.probe("burn"), "4", "300"], cpu_ms=10000, wall_ms=60000)
j = S.last_json(r) or {}
self_ms = j.get("self_cpu_ms", 0)
ok(r.get("status") == "ok" and self_ms >= 4 * 300 and (r.get("cpu_ms") or 0) >= 0.95 * self_ms,
   "4 threads burning 300 ms of CPU each: cpu_ms covers every thread (>= 95% of the program's "
   "own getrusage)", f"self {self_ms} ms, {S.show(r)}")

# ---------------------------------------------------------------- 5: sleeping forever
r = S.py("import time; time.sleep(1e6)", wall_ms=1000)
S.status_is(r, "timeout", "sleep forever: timeout limit wall", limit="wall")
ok(1000 <= (r.get("wall_ms") or 0) <= 3000 and (r.get("cpu_ms") or 0) < 500,
   "wall_ms at the limit, cpu_ms small", S.show(r))
r = S.sh("mkfifo /tmp/f && cat /tmp/f", wall_ms=1000)
S.status_is(r, "timeout", "blocking read on a FIFO nobody writes: timeout limit wall", limit="wall")
r = S.py("import os; r, w = os.pipe(); os.read(r, 1)", wall_ms=1000)
S.status_is(r, "timeout", "blocking read on its own pipe: timeout limit wall", limit="wall")
r = S.sh("read x; echo read=$?", wall_ms=2000)
ok(r.get("status") == "ok" and r.get("stdout") == "read=1\n",
   "stdin is empty by default: read gets EOF at once, no hang", S.show(r))

# ---------------------------------------------------------------- 6: output floods
FLOOD_PY = r"""
import sys
b = b'x' * (1 << 20)
for i in range(%d):
    sys.%s.buffer.write(b)
"""
r = S.py(FLOOD_PY % (1024, "stdout"), output_hard_bytes=2 << 30, wall_ms=30000, host_timeout=60)
ok(r.get("status") == "ok" and len(r.get("stdout") or "") == 65536 and r.get("stdout_truncated") is True,
   "1 GiB on stdout (hard cap 2 GiB): ok, 64 KiB kept, stdout_truncated", S.show(r))
ok(0 < r["_maxrss_kb"] < 64 * 1024,
   "the CLI stayed bounded while 1 GiB went through (max RSS of it and its children < 64 MiB)",
   f"maxrss {r['_maxrss_kb']} KiB")
r = S.py(FLOOD_PY % (100000, "stdout"), output_hard_bytes=64 << 20, wall_ms=30000)
ok(r.get("status") == "output_limit" and len(r.get("stdout") or "") == 65536 and r.get("stdout_truncated"),
   "endless stdout: output_limit at the hard cap, 64 KiB kept", S.show(r))
r = S.sh("yes 0123456789abcdef >&2", wall_ms=30000)
ok(r.get("status") == "output_limit" and len(r.get("stderr") or "") == 65536 and r.get("stderr_truncated"),
   "shell: yes >&2 forever: output_limit at the default 16 MiB cap, stderr 64 KiB kept", S.show(r))
ok(r["_maxrss_kb"] < 64 * 1024, "the CLI stayed bounded", f"maxrss {r['_maxrss_kb']} KiB")
r = S.py("import sys; sys.stdout.write('a' * 5000)", output_bytes=1000)
ok(r.get("status") == "ok" and r.get("stdout") == "a" * 1000 and r.get("stdout_truncated") is True,
   "--output-bytes 1000: 1000 bytes kept and flagged, the run is not killed", S.show(r))
r = S.py("import sys; sys.stdout.write('a' * 1000)", output_bytes=1000)
ok(r.get("stdout") == "a" * 1000 and r.get("stdout_truncated") is False,
   "exactly 1000 bytes under --output-bytes 1000: not truncated", S.show(r))
r = S.py(FLOOD_PY % (4, "stderr"), output_hard_bytes=1 << 20)
is_(r.get("status"), "output_limit", "4 MiB on stderr with --output-hard-bytes 1048576: output_limit")

# ---------------------------------------------------------------- 7: files and /tmp
FILL_PY = r"""
import errno, json, os
path, limit = %r, %d
n, err = 0, None
try:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while n < limit:
        os.write(fd, b'\1' * (1 << 20))
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"mb": n, "err": err}), flush=True)
"""
wd = S.tmpdir()
r = S.py(FILL_PY % ("/work/big", 64), file_size_mb=4, workdir=wd)
j = S.last_json(r) or {}
size = os.path.getsize(os.path.join(wd, "big")) if os.path.exists(os.path.join(wd, "big")) else -1
ok(r.get("status") == "ok" and j.get("err") == "EFBIG" and size == 4 << 20,
   "python writing a huge file: EFBIG at --file-size-mb 4, the host file is exactly 4 MiB",
   f"size {size} {S.show(r)}")
r = S.sh("dd if=/dev/zero of=/work/big2 bs=1M count=10 2>/dev/null", file_size_mb=4, workdir=wd)
size = os.path.getsize(os.path.join(wd, "big2")) if os.path.exists(os.path.join(wd, "big2")) else -1
ok(((r.get("status") == "signal" and r.get("signal") == "SIGXFSZ")
    or (r.get("status") == "error" and r.get("exit_code") == 128 + 25)) and size <= 4 << 20,
   "shell dd past the file size limit: killed by SIGXFSZ, file <= 4 MiB", f"size {size} {S.show(r)}")
r = S.py(FILL_PY % ("/tmp/fill", 64), tmp_mb=8, file_size_mb=64)
j = S.last_json(r) or {}
ok(r.get("status") == "ok" and j.get("err") == "ENOSPC" and j.get("mb", 99) <= 8,
   "filling /tmp: ENOSPC at --tmp-mb 8", S.show(r))
r = S.py(FILL_PY % ("/dev/shm/fill", 64), tmp_mb=8, file_size_mb=64)
j = S.last_json(r) or {}
ok(r.get("status") == "ok" and j.get("err") in ("ENOSPC", "ENOENT", "EACCES", "EROFS")
   and j.get("mb", 99) <= 8, "filling /dev/shm: stops within the tmp limit (or there is none)",
   S.show(r))


def shmem_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


# What a run leaves in its tmpfs (/tmp, /dev/shm) is host memory: it must be freed with the run.
shm0 = shmem_kb()
r = S.py(FILL_PY % ("/tmp/keep", 48) + "\n" + FILL_PY % ("/dev/shm/keep", 48), file_size_mb=64,
         memory_mb=256)
shm1 = shmem_kb()
ok(S.happened(r) and (r.get("stdout") or "").count('"mb": 48') == 2 and shm1 - shm0 < 32 * 1024, "96 MiB left in /tmp and /dev/shm are freed when "
   f"the run ends (host Shmem {shm0} -> {shm1} KiB)", S.show(r))
# Bounded by count, not by a time budget (which a slow machine would spend before the limit):
# 200000 files is over ten times any inode limit the sandbox sets, so reaching it means none.
INODES_PY = r"""
import errno, json, os
n, err = 0, None
os.mkdir('/tmp/many')
try:
    while n < 200000:
        os.close(os.open('/tmp/many/%d' % n, os.O_CREAT | os.O_WRONLY, 0o600))
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"files": n, "err": err}), flush=True)
"""
r = S.py(INODES_PY, wall_ms=120000, cpu_ms=60000, host_timeout=180)
j = S.last_json(r) or {}
ok((r.get("status") == "ok" and j.get("err") == "ENOSPC") or r.get("status") == "memory_limit",
   "many empty files in /tmp: ENOSPC at an inode limit (or memory_limit), not unbounded",
   f"{j} {S.show(r)}")
# The top directory is named uniquely and holds the whole chain: it can only go once every level
# below it went, so it still being there means the cleanup gave up somewhere.
DEEP_PY = r"""
import os
os.chdir('/work')
os.mkdir('%s')
os.chdir('%s')
for i in range(3000):
    os.mkdir('d')
    os.chdir('d')
print('deep')
"""
marker = "deep-%d-%d" % (os.getpid(), time.time_ns())
r = S.py(DEEP_PY % (marker, marker), wall_ms=10000)
ok(r.get("status") == "ok" and r.get("stdout") == "deep\n",
   "a 3000-level deep tree (paths past PATH_MAX) in the default /work: the run succeeds", S.show(r))
left = glob.glob("/tmp/sbx-cli-*/" + marker)
ok(not left, "... and the CLI removes its temporary /work afterwards", f"left behind: {left}")
for d in left:
    subprocess.run(["rm", "-rf", "--one-file-system", os.path.dirname(d)])
# The default /work is a directory on the host's disk: it must be bounded like /tmp, or one run
# fills the host's file system 16 MiB (the file size limit) at a time.
BIG_WORK_PY = r"""
import errno, json, os
n, err = 0, None
try:
    while n < 40:
        with open('/work/f%d' % n, 'wb') as f:
            f.write(b'\1' * (8 << 20))
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"mb": n * 8, "err": err}))
"""
r = S.py(BIG_WORK_PY, wall_ms=20000)
j = S.last_json(r) or {}
ok(r.get("status") in ("ok", "output_limit") and j.get("err") in ("ENOSPC", "EDQUOT"),
   "the default /work is bounded: 40 files of 8 MiB (320 MiB) end in ENOSPC/EDQUOT",
   f"{j} {S.show(r)}")

# ---------------------------------------------------------------- 8: fds, mlock, IPC
FDS_PY = r"""
import errno, json, os
n, err = 0, None
try:
    while n < 100000:
        os.open('/dev/null', os.O_RDONLY)
        n += 1
except OSError as e:
    err = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"n": n, "err": err}))
"""
r = S.py(FDS_PY, open_files=64)
j = S.last_json(r) or {}
ok(r.get("status") == "ok" and j.get("err") == "EMFILE" and j.get("n", 999) <= 64,
   "fd exhaustion: EMFILE within --open-files 64", S.show(r))
r = S.run([S.probe("mlock")])
j = S.last_json(r) or {}
ok(j and all(v != "ok" for v in j.values()), "mlock, mlockall, MAP_LOCKED: all refused", S.show(r))
r1 = S.run([S.probe("ipc"), "make"])
with open("/proc/sysvipc/shm") as f:
    host_shm = f.read()
j1 = S.last_json(r1) or {}
r2 = S.run([S.probe("ipc"), "find"])
j2 = S.last_json(r2) or {}
diag(f"ipc create: {j1}  ipc find in a later run: {j2}")
ok(j1 and j2 and all(v != "ok" for v in j2.values()),
   "SysV shm/msg/sem and POSIX mq made by one run are gone for the next run", S.show(r2))
ok(str(0x5b5b5b) not in host_shm.split(), "the run's SysV shm is not in the host's IPC namespace")
SHM_PY = r"""
import sys
from multiprocessing import shared_memory
try:
    if sys.argv[1] == 'make':
        m = shared_memory.SharedMemory('sbx-test-shm', create=True, size=4096)
        m.buf[:6] = b'secret'
        print('made')
    else:
        m = shared_memory.SharedMemory('sbx-test-shm')
        print('found', bytes(m.buf[:6]))
except OSError as e:
    print(type(e).__name__)
"""
r1 = S.py(SHM_PY, "make")
r2 = S.py(SHM_PY, "find")
ok(not (r2.get("stdout") or "").startswith("found") and not os.path.exists("/dev/shm/sbx-test-shm"),
   "POSIX shared memory of one run: not seen by the next run nor on the host",
   f"make: {r1.get('stdout')!r} {r1.get('stderr')!r} find: {r2.get('stdout')!r}")

# ---------------------------------------------------------------- 9: segfaults
wd = S.tmpdir()
cwd = S.tmpdir()
r = S.py("import ctypes; ctypes.string_at(0)", workdir=wd, cwd=cwd)
ok(r.get("status") == "signal" and r.get("signal") == "SIGSEGV", "python segfault: signal SIGSEGV",
   S.show(r))
r = S.run([S.probe("segv")], workdir=wd, cwd=cwd)
ok(r.get("status") == "signal" and r.get("signal") == "SIGSEGV", "C segfault: signal SIGSEGV",
   S.show(r))
cores = [os.path.join(d, f) for d in (wd, cwd, S.probe_host("."))
         for f in os.listdir(d) if f.startswith("core")]
ok(not cores, "no core file in /work, the CLI's cwd or the probe dir (core_pattern is 'core')",
   cores)
r = S.py("print([l for l in open('/proc/self/limits') if 'core' in l][0].split()[4:6])")
is_((r.get("stdout") or "").strip(), "['0', '0']", "RLIMIT_CORE is 0/0 inside")

S.finish()
