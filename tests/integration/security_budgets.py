"""security_budgets.py: run by security_budgets.t under the harness (see there)."""
import os
import subprocess
import sys
import threading
import time

from security_common import STATE, TOKEN, TOKEN2, client, execute
from tap import diag, done, ok

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))

HOG = r"""
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
t = ctypes.c_void_p()
n = 0
while n < 200000 and libc.timer_create(1, None, ctypes.byref(t)) == 0:
    n += 1
i = 0
while i < 4000 and libc.inotify_init1(0) >= 0:
    i += 1
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
q = 0
while q < 200000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    q += 1
print("took", n, i, q, flush=True)
open("/work/ready", "w").close()
while not os.path.exists("/work/go"):
    time.sleep(0.02)
"""

SMALL = r"""
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
t = ctypes.c_void_p()
n = 0
while n < %d and libc.timer_create(1, None, ctypes.byref(t)) == 0:
    n += 1
i = 0
while i < 4 and libc.inotify_init1(0) >= 0:
    i += 1
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
q = 0
while q < %d and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    q += 1
print("got", n, i, q)
"""

alice = client(TOKEN, timeout=300)
r = alice.post("/v1/sessions", json={})
sid = r.json().get("id") if r.status_code == 201 else None
ok(sid, "alice creates a session", r.text[:300])

held = {}


def hog():
    r = alice.post(f"/v1/sessions/{sid}/execute",
                   json={"language": "python", "code": HOG,
                         "limits": {"wall_ms": 60000, "cpu_ms": 30000}})
    held["r"] = r


th = threading.Thread(target=hog)
th.start()
ready = False
with client(TOKEN) as c2:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and th.is_alive():
        if c2.get(f"/v1/sessions/{sid}/files/ready").status_code == 200:
            ready = True
            break
        time.sleep(0.1)
ok(ready, "alice's run took every timer, inotify instance and queued signal it could, and holds")

host = subprocess.run([sys.executable, "-c", SMALL % (50, 50)], capture_output=True, text=True,
                      timeout=60)
ok(host.stdout.split() == ["got", "50", "4", "50"],
   "meanwhile host root creates 50 POSIX timers, 4 inotify instances, queues 50 signals",
   host.stdout + host.stderr)
s, j = execute("python", SMALL % (20, 20), token=TOKEN2)
ok(s == 200 and (j.get("stdout") or "").split() == ["got", "20", "4", "20"],
   "meanwhile bob's run creates 20 timers, 4 inotify instances, queues 20 signals", j)

with client(TOKEN) as c2:
    c2.put(f"/v1/sessions/{sid}/files/go", content=b"")
th.join(120)
hr = held.get("r")
hj = hr.json() if hr is not None and hr.status_code == 200 else {}
diag(f"alice's run: {hj.get('stdout', '').strip()}")
took = (hj.get("stdout") or "").split()
ok(hj.get("status") == "ok" and len(took) == 4 and int(took[1]) + int(took[3]) <= 1024
   and int(took[2]) <= 16, "alice's take stopped at the run's own budgets (1024 signals, 16 inotify)",
   hj)

s, j = execute("python", r"""
import ctypes, errno, os, resource
libc = ctypes.CDLL(None, use_errno=True)
def call(f, *a):
    return "ok" if f(*a) == 0 else errno.errorcode[ctypes.get_errno()]
ctx = ctypes.c_ulong(0)
print("io_setup", call(libc.syscall, 206, 1, ctypes.byref(ctx)))
buf = ctypes.create_string_buffer(128)
print("sysinfo", call(libc.sysinfo, buf))
try:
    resource.prlimit(1, resource.RLIMIT_NOFILE, (16, 16))
    print("prlimit_init ok")
except OSError as e:
    print("prlimit_init", errno.errorcode[e.errno])
mi = open("/proc/self/mountinfo").read()
print("MOUNTINFO", repr(mi))
""", token=TOKEN2)
out = j.get("stdout") or ""
ok(s == 200 and "io_setup ENOSYS" in out, "io_setup: ENOSYS", out[:300])
ok(s == 200 and "sysinfo ENOSYS" in out, "sysinfo: ENOSYS", out[:300])
ok(s == 200 and "prlimit_init EPERM" in out, "prlimit on the run's init: EPERM", out[:300])
mi = out.split("MOUNTINFO", 1)[1] if "MOUNTINFO" in out else ""
ok(mi and os.path.realpath(STATE) not in mi and STATE not in mi and TOP not in mi,
   "mountinfo names neither the state dir nor the checkout", mi)
vol = os.environ.get("SBX_VOLUME", "")
diag(f"sessions volume: {vol}; /work in mountinfo: "
     + " ".join(line for line in mi.split("\\n") if " /work " in line))

# The disk reserve, when the stack gives the broker one (--disk-reserve-mb): every session and
# scratch subvolume sits in one level-1 qgroup limited to the volume's size less the reserve.
sessions = os.path.join(STATE, "sessions")
reserve = 0
try:
    with open(os.path.join(STATE, "run", "broker.pid")) as f:
        pid = f.read().strip()
    argv = open(f"/proc/{pid}/cmdline").read().split("\0")
    if "--disk-reserve-mb" in argv:
        reserve = int(argv[argv.index("--disk-reserve-mb") + 1]) << 20
except (OSError, ValueError, IndexError):
    pass
if vol not in ("image", "btrfs"):
    ok(True, f"# SKIP sessions are on {vol or 'plain'} directories: no qgroups")
elif not reserve:
    ok(True, "# SKIP the stack does not pass sbxd --disk-reserve-mb (off by default)")
else:
    q = subprocess.run(["btrfs", "qgroup", "show", "-pcre", "--raw", sessions],
                       capture_output=True, text=True, timeout=60)
    rows = {line.split()[0]: line.split() for line in q.stdout.splitlines()
            if line[:2] in ("0/", "1/")}
    parent = rows.get("1/4242")
    st = os.statvfs(sessions)
    total = st.f_blocks * st.f_frsize
    members = [k for k, v in rows.items() if k.startswith("0/") and "1/4242" in v]
    ok(parent is not None and parent[3] == str(total - reserve) and len(members) >= 2
       and "inconsistent" not in q.stderr,
       "the sessions volume's reserve group 1/4242 holds the sessions, limited to size - reserve",
       q.stdout + q.stderr)

done()
