"""security_checklist.py: the rest of SANDBOX.md's hostile checklist through the real service
(run by security_checklist.t under the harness), so that every item runs through HTTP, not only
through the library (tests/sandbox/): security_hostile.py holds items 1, 3-6, 10, 13, 14, 16-19,
21-23 and the state dir; security_paths.t item 15 (every file route); this file the others, with
the library's own C probes (tests/sandbox/probes.py) compiled by the service (language "c").
Each check is on the result the API returns; afterwards nothing may be left in the slot uids."""
import concurrent.futures as cf
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from security_common import TOKEN, TOKEN2, client, execute, wait_no_run_pids
from tap import diag, done, ok

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sandbox"))
import probes  # noqa: E402 (the library tests' C probes)

REFUSED = {"EPERM", "EACCES", "ENOSYS", "SIGSYS"}


def c_prog(source):
    """A probe's source for the service's C compile (-std=c17: GNU names need _GNU_SOURCE)."""
    return "#define _GNU_SOURCE\n" + source


def last_json(j):
    for line in reversed((j.get("stdout") or "").splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


# ---- 18-21, 25: the kernel surface, with the library's syscall probe ----
I386 = probes.host_has_i386_abi()
SYS_GROUPS = [
    ("ptrace (parent, PID 1, TRACEME) and process_vm_readv/writev: EPERM or killed",
     ["ptrace_attach_parent", "ptrace_attach_init", "ptrace_traceme", "process_vm_readv",
      "process_vm_writev"], {"EPERM", "SIGSYS"}),
    ("unshare (every namespace), clone with namespace flags, setns: refused",
     ["unshare_user", "unshare_mount", "unshare_net", "unshare_pid", "unshare_ipc", "unshare_uts",
      "unshare_cgroup", "unshare_time", "clone_newuser", "clone_newns", "setns_net"], REFUSED),
    ("mount, remount /usr rw, umount /proc, fsopen, open_tree, pivot_root, chroot: refused",
     ["mount_tmpfs", "remount_usr_rw", "umount_proc", "fsopen", "open_tree", "pivot_root", "chroot"],
     REFUSED),
    ("clone3: ENOSYS (so libc falls back to clone)", ["clone3"], {"ENOSYS"}),
    ("the dangerous set (bpf, perf_event_open, userfaultfd, io_uring, keyrings, kexec, modules, "
     "reboot, swap, open_by_handle_at, acct, syslog, iopl, fanotify, mknod): refused or killed",
     ["bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "keyctl", "add_key", "kexec_load",
      "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
      "swapoff", "open_by_handle_at", "acct", "syslog_read", "iopl", "ioperm", "fanotify_init",
      "mknod_mem", "mknod_disk"], REFUSED),
    ("32-bit syscalls via int 0x80 and x32 syscalls from 64-bit code: refused or killed",
     ["int80_getpid", "int80_setuid0", "int80_unshare", "x32_getpid"], REFUSED)
    if I386 else  # int 0x80 faults (SIGSEGV) before any filter: nothing of it to check here
    ("x32 syscalls from 64-bit code: refused or killed (int 0x80: this kernel has no i386 ABI)",
     ["x32_getpid"], REFUSED),
    ("setuid(0), setgid(0), setresuid(0,0,0), setgroups: refused",
     ["setuid0", "setgid0", "setresuid0", "setgroups"], REFUSED | {"EINVAL"}),
    ("clock_settime, settimeofday, adjtimex: refused", ["clock_settime", "settimeofday",
                                                         "adjtimex_set"], REFUSED),
    ("sethostname, setdomainname: refused or local to the run", ["sethostname", "setdomainname"],
     REFUSED | {"ok"}),
]
names = [n for _, group, _ in SYS_GROUPS for n in group]
host_name = socket.gethostname()
s, j = execute("c", c_prog(probes.SYSPROBE), {"wall_ms": 20000, "cpu_ms": 10000}, args=names)
got = {}
for line in (j.get("stdout") or "").splitlines():
    parts = line.split()
    if len(parts) == 2:
        got[parts[0]] = parts[1]
ok(s == 200 and j.get("status") == "ok" and len(got) == len(names),
   f"the syscall probe compiles and runs through POST /v1/execute ({len(got)} of {len(names)} "
   "attempts reported)", {k: j.get(k) for k in ("status", "compile", "stderr", "stdout")})
for desc, group, allowed in SYS_GROUPS:
    bad = {n: got.get(n, "missing") for n in group if got.get(n, "missing") not in allowed}
    ok(not bad, "18-21, 25 via HTTP: " + desc, bad)
diag("probe: " + " ".join(f"{n}={got.get(n)}" for n in names))
ok(socket.gethostname() == host_name, "25: the host's name is unchanged after the run's sethostname",
   socket.gethostname())


# ---- the rest, each its own request, four at a time ----
def check_status(*want):
    return lambda s, j: (s == 200 and j.get("status") in want, j)


CASES = [
    # 2
    ("2: a thread bomb stops at the process limit and the run ends", "python",
     """
     import threading, time
     n = 0
     try:
         while True:
             threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
             n += 1
     except RuntimeError as e:
         print("stopped at", n, type(e).__name__)
     """, {"processes": 32, "wall_ms": 4000},
     lambda s, j: (s == 200 and "stopped at" in j.get("stdout", "")
                   and int(j["stdout"].split()[2]) <= 32, j)),
    # 3 (many small processes)
    ("3: many small processes, each under the memory limit, together over it: memory_limit", "bash",
     """
     for i in $(seq 12); do
         /usr/bin/python3 -c 'b = bytearray(20 << 20); import time; time.sleep(5)' &
     done
     wait; echo survived
     """, {"memory_mb": 128, "wall_ms": 30000},  # far past 12 starts + 5 s, on a slow machine too
     lambda s, j: (s == 200 and j.get("status") == "memory_limit"
                   and 100 * 1024 <= j.get("memory_kb", 0) <= 141 * 1024, j)),
    # 6 (stderr too)
    ("6: a flood on stderr is capped and flagged as well", "bash", "yes EEEEEEEEEEEEEEEE >&2",
     {"wall_ms": 5000},
     lambda s, j: (s == 200 and j.get("stderr_truncated") is True
                   and 0 < len(j.get("stderr", "")) <= 65536, j)),
    # 7
    ("7: one huge file stops at the file size limit (SIGXFSZ, or EFBIG when ignored)", "bash",
     """
     head -c 64M /dev/zero > /work/big; echo rc=$? size=$(stat -c %s /work/big)
     /usr/bin/python3 -c '
     import os, signal
     signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
     with open("/work/big2", "wb") as f:
         try:
             f.write(bytes(64 << 20))
         except OSError as e:
             print("errno", e.errno)
     print("size2", os.path.getsize("/work/big2"))'
     """, {"file_size_mb": 16},
     lambda s, j: (s == 200 and f"rc=153 size={16 << 20}" in j.get("stdout", "")
                   and "errno 27" in j.get("stdout", "") and f"size2 {16 << 20}" in j.get("stdout", ""), j)),
    ("7: many small files and a deep tree are fine (3000 files and main.py and d/)", "python",
     """
     import os
     for i in range(3000):
         open("/work/f%d" % i, "w").write("x")
     p = "/work"
     for i in range(150):
         p += "/d"
         os.mkdir(p)
     print("files", len(os.listdir("/work")), "depth", p.count("/d"))
     """, {"wall_ms": 20000},
     lambda s, j: (s == 200 and j.get("status") == "ok" and "files 3002 depth 150" in j.get("stdout", ""), j)),
    # 8
    ("8: fd exhaustion stops at the open-files limit (EMFILE)", "python",
     """
     import os
     fds = []
     try:
         while True:
             fds.append(os.open("/dev/null", os.O_RDONLY))
     except OSError as e:
         print("stopped at", len(fds), e.errno == 24)
     """, {"wall_ms": 5000},
     lambda s, j: (s == 200 and "True" in j.get("stdout", "") and "stopped at" in j.get("stdout", "")
                   and int(j["stdout"].split()[2]) < 100000, j)),
    ("8: mlock, mlockall and MAP_LOCKED are refused", "c", c_prog(probes.MLOCK), None,
     lambda s, j: (s == 200 and isinstance(last_json(j), dict)
                   and all(v != "ok" for v in last_json(j).values()), j)),
    # 9
    ("9: a segfault is status signal SIGSEGV", "c", c_prog(probes.SEGV), None,
     lambda s, j: (s == 200 and j.get("status") == "signal" and j.get("signal") == "SIGSEGV", j)),
    ("9: no core file anywhere (RLIMIT_CORE 0, none in /work or /tmp)", "python",
     """
     import os, resource, subprocess
     r = subprocess.run(["/usr/bin/python3", "-c", "import ctypes; ctypes.string_at(0)"])
     cores = [n for d in ("/work", "/tmp") for n in os.listdir(d) if "core" in n]
     print("rc", r.returncode, "core_limit", resource.getrlimit(resource.RLIMIT_CORE), "cores", cores)
     """, None,
     lambda s, j: (s == 200 and "rc -11 core_limit (0, 0) cores []" in j.get("stdout", ""), j)),
    # 10
    # The daemon never exits: a run that waited for it would be a wall timeout, so status ok
    # says the run ended with the main process, on a machine of any speed.
    ("10: daemon() outlives nothing: the run ends with the program", "c", c_prog(probes.DAEMON),
     {"wall_ms": 30000},
     lambda s, j: (s == 200 and j.get("status") == "ok", j)),
    ("10: children that ignore SIGTERM or stop themselves: the run still ends", "bash",
     """
     (trap '' TERM; sleep 300) &
     (kill -STOP $BASHPID; sleep 300) &
     sh -c 'trap "" TERM HUP INT; exec sleep 300' &
     echo started
     """, {"wall_ms": 5000},
     lambda s, j: (s == 200 and j.get("status") == "ok" and "started" in j.get("stdout", ""), j)),
    # 11
    ("11: the program exits while a child holds stdout open: the run ends before the child",
     "bash", "sleep 60 & echo done", {"wall_ms": 30000},
     lambda s, j: (s == 200 and j.get("status") == "ok" and j.get("stdout") == "done\n", j)),
    # 12
    ("12: signals to its parent, to PID 1 and to every process reach nothing outside", "python",
     """
     import os, signal
     for target in (os.getppid(), 1, -1):
         try:
             os.kill(target, signal.SIGKILL)
             print("sent", target)
         except OSError as e:
             print("refused", target, e.errno)
     """, None,
     lambda s, j: (s == 200 and j.get("status") in ("ok", "signal", "error"), j)),
    # 17
    ("17: /proc/self/mountinfo names no secret; /sys, /dev/mem, /dev/kmsg, /proc/kcore absent or denied",
     "python",
     """
     import os
     mi = open("/proc/self/mountinfo").read()
     print("MOUNTINFO_BAD", [w for w in ("tokens", "tls", "u-bob", "sbxd.sock") if w in mi])
     for p in ("/sys/kernel/notes", "/dev/mem", "/dev/kmsg", "/proc/kcore", "/proc/kallsyms"):
         try:
             with open(p, "rb") as f:
                 data = f.read(64)
             print("READ", p, len(data), data.strip(b"0 \\n") != b"")
         except OSError as e:
             print("denied", p, e.errno)
     print("sys", os.path.isdir("/sys/kernel"))
     """, None,
     lambda s, j: (s == 200 and "MOUNTINFO_BAD []" in j.get("stdout", "")
                   and "READ /dev/" not in j.get("stdout", "") and "READ /sys" not in j.get("stdout", "")
                   and "READ /proc/kcore" not in j.get("stdout", "")
                   and "/proc/kallsyms" in j.get("stdout", "")
                   and "READ /proc/kallsyms 64 True" not in j.get("stdout", ""), j)),
    # 22 (the socket families the other file does not try)
    ("22: raw, packet and vsock sockets are refused; no host Unix socket is visible", "python",
     """
     import os, socket
     for name, fam, kind in (("raw", socket.AF_INET, socket.SOCK_RAW), ("packet", 17, socket.SOCK_RAW),
                             ("vsock", 40, socket.SOCK_STREAM), ("inet6_raw", socket.AF_INET6, socket.SOCK_RAW)):
         try:
             socket.socket(fam, kind, 0 if fam != socket.AF_INET else socket.IPPROTO_ICMP)
             print("OPENED", name)
         except OSError as e:
             print("refused", name)
     hits = []
     for d in ("/run", "/var/run", "/tmp", "/dev", "/"):
         try:
             for n in os.listdir(d):
                 p = os.path.join(d, n)
                 if n.endswith(".sock") or (os.path.exists(p) and __import__("stat").S_ISSOCK(os.stat(p).st_mode)):
                     hits.append(p)
         except OSError:
             pass
     print("SOCKETS", hits)
     """, None,
     lambda s, j: (s == 200 and "OPENED" not in j.get("stdout", "") and "SOCKETS []" in j.get("stdout", ""), j)),
    # 24
    ("24: escape sequences, NUL bytes and huge lines come back as data; invalid UTF-8 as U+FFFD",
     "python",
     """
     import sys
     sys.stdout.buffer.write(b"\\x1b[31mred\\x1b[0m\\x00nul\\xff\\xfe|" + b"L" * 50000 + b"\\n")
     """, {"output_bytes": 1 << 20},
     lambda s, j: (s == 200 and j.get("stdout", "").startswith("\x1b[31mred\x1b[0m\x00nul\ufffd\ufffd|")
                   and j["stdout"].endswith("L" * 50000 + "\n") and j.get("stdout_truncated") is False, j)),
]


def run_case(case):
    name, lang, code, limits, check = case
    try:
        s, j = execute(lang, code, limits)
        return check(s, j)
    except Exception as e:  # a transport error is a failure of this case
        return False, repr(e)


with cf.ThreadPoolExecutor(4) as pool:
    results = list(pool.map(run_case, CASES))
for (name, *_), (good, info) in zip(CASES, results):
    if isinstance(info, dict):
        info = {k: (v[:300] if isinstance(v, str) else v) for k, v in info.items()}
    ok(good, name, info)

# 24, raw: output_encoding base64 returns the exact bytes.
import base64  # noqa: E402
raw = b"\x1b[2J\x00\xff\xfe\x80ok"
s, j = execute("python", "import sys; sys.stdout.buffer.write(%r)" % raw, output_encoding="base64")
ok(s == 200 and base64.b64decode(j.get("stdout", "")) == raw,
   "24: with output_encoding base64 the exact bytes come back", j)

# 26: two runs at once (two clients) try every channel; a later run sees nothing of an earlier one.
MARK = """
import os, socket, fcntl, time, subprocess
open("/tmp/sbx-mark", "w").write("secret")
open("/dev/shm/sbx-mark", "w").write("secret")
lock = open("/tmp/sbx-lock", "w"); fcntl.flock(lock, fcntl.LOCK_EX)
srv = socket.socket(socket.AF_UNIX); srv.bind("\\0sbx-channel"); srv.listen(1)
print(subprocess.run(["/work/ipc", "make"], capture_output=True, text=True).stdout.strip())
print("MARKED", flush=True)
# Every mark is made: this uniquely named sleep tells the host so; it kills it after its look.
subprocess.run(["/usr/bin/sleep", "%s"])
"""
LOOK = """
import os, socket, subprocess
seen = []
for p in ("/tmp/sbx-mark", "/dev/shm/sbx-mark", "/tmp/sbx-lock"):
    if os.path.exists(p):
        seen.append(p)
c = socket.socket(socket.AF_UNIX)
try:
    c.connect("\\0sbx-channel"); seen.append("abstract socket")
except OSError:
    pass
ipc = subprocess.run(["/work/ipc", "find"], capture_output=True, text=True).stdout.strip()
print("IPC", ipc)
if '"ok"' in ipc:
    seen.append("ipc")
print("SEEN", seen, os.listdir("/tmp"), os.listdir("/dev/shm"))
"""


def with_ipc_probe(token, py, wall_ms=15000):
    """A session whose /work holds the compiled IPC probe, then py run there (bash: python3)."""
    with client(token) as cl:
        sid = cl.post("/v1/sessions", json={}).json()["id"]
        cl.put(f"/v1/sessions/{sid}/files/ipc.c", content=c_prog(probes.IPC).encode())
        cl.post(f"/v1/sessions/{sid}/run", json={"cmd": "gcc -O1 -o ipc ipc.c -lrt"})
        cl.put(f"/v1/sessions/{sid}/files/t.py", content=py.encode())
        r = cl.post(f"/v1/sessions/{sid}/run", json={"cmd": "/usr/bin/python3 t.py",
                                                      "limits": {"wall_ms": wall_ms}})
        cl.delete(f"/v1/sessions/{sid}")
    return r.status_code, r.json()


results = {}


MARK_SLEEP = "59.%04d" % (os.getpid() % 10000)


def marker():
    results["mark"] = with_ipc_probe(TOKEN, MARK % MARK_SLEEP, wall_ms=60000)


def marker_sleeps():
    p = subprocess.run(["pgrep", "-f", f"^/usr/bin/sleep {MARK_SLEEP}$"], capture_output=True,
                       text=True)
    return [int(x) for x in p.stdout.split()]


# The look runs while the marks exist: wait for the marker's sleep (however long its session
# set-up and compile take), look, then end the marker by killing that sleep.
t = threading.Thread(target=marker)
t.start()
t0 = time.monotonic()
while not marker_sleeps() and t.is_alive() and time.monotonic() - t0 < 80:
    time.sleep(0.1)
marked = bool(marker_sleeps())
results["look"] = with_ipc_probe(TOKEN2, LOOK)
for pid in marker_sleeps():
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
t.join()
ms, mj = results["mark"]
ls, lj = results["look"]
ok(ms == 200 and "MARKED" in mj.get("stdout", "") and '"shm": "ok"' in mj.get("stdout", ""),
   "26: a run marks /tmp, /dev/shm, a lock, an abstract socket and SysV/POSIX IPC", mj)
ok(marked and ls == 200 and "SEEN []" in lj.get("stdout", "")
   and '"ok"' not in lj.get("stdout", ""),
   "26: another client's run, while the marks exist, sees none of it", (marked, lj))
later = []
for _ in range(6):  # with 4 slots, later runs land in the marker's slot too
    s, j = with_ipc_probe(TOKEN, LOOK)
    later.append((s, (j.get("stdout") or "")[-200:]))
ok(all(s == 200 and "SEEN []" in o for s, o in later),
   "26: later runs (every slot, the same client too) see nothing of it", later)

left = wait_no_run_pids(10)
ok(not left, "no run process is left in the slot uid range", left)
with client() as cl:
    r = cl.get("/v1/health")
ok(r.status_code == 200, "health still answers 200", r.text[:200])
done()
