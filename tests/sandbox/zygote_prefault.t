#!/usr/bin/python3
"""zygote_prefault.t: the zygote's learned pages (sandbox/zyg_spawn.c: the first programs report
which pages they wrote before their job, later ones copy those in bulk) leave no trace a program
can see: through a private broker with one slot and SBX_ZYGOTE=1, the first runs after the zygote
starts (those that carry the report socket until their job) and later ones (which populate) see
the same descriptors (0-2 only), the same result and no socket; and the zygote drops its end of
the report socket once it has a list."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import ok, skip_all, done  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SBXD, SBX = os.path.join(TOP, "build", "sbxd"), os.path.join(TOP, "build", "sbx")
PY = "/usr/bin/python3"
if os.geteuid() != 0:
    skip_all("needs root (namespaces, cgroups)")
if not (os.access(SBXD, os.X_OK) and os.access(SBX, os.X_OK)):
    skip_all("build/sbxd or build/sbx missing (make all)")
if not os.path.exists("/sys/fs/cgroup/memory"):
    skip_all("the zygote needs cgroup v1 so far (sandbox/zygote.c); this host has none")

d = tempfile.mkdtemp(prefix="sbx-zygpf-t.", dir="/var/tmp")
os.chmod(d, 0o755)
work = os.path.join(d, "work")
os.mkdir(work)
os.chown(work, 65534, 65534)
sock = os.path.join(d, "sock")
env = dict(os.environ, SBX_ZYGOTE="1", SBX_TEMPLATE_MAX_AGE_S="3600")
broker = subprocess.Popen([SBXD, "--socket", sock, "--slots", "1", "--client-uid", "0",
                           "--files-uid", "65534", "--files-gid", "65534", "--uid-base",
                           str(381024 + random.randrange(64) * 16), "--cgroup-name",
                           "sbx-zygpftest-%d" % os.getpid()],
                          env=env, stderr=open(os.path.join(d, "log"), "a"))
end = time.monotonic() + 60
while not os.path.exists(sock) and time.monotonic() < end:
    time.sleep(0.05)

PROG = ("import os,stat\n"
        "fds=sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
        "socks=[f for f in fds if f>2 and os.path.exists('/proc/self/fd/%d'%f)"
        " and stat.S_ISSOCK(os.stat('/proc/self/fd/%d'%f).st_mode)]\n"
        "print(fds[:3], len(fds), socks)\n")


def run():
    r = subprocess.run([SBX, "--broker", sock, "--workdir", work, "--", PY, "-c", PROG],
                       capture_output=True, text=True, timeout=120)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"_out": r.stdout, "_err": r.stderr}


def zygote_sockets():
    """socket descriptors of the broker's zygote (comm sbx-zygote, a grandchild of the broker)"""
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                s = f.read()
            if "(sbx-zygote)" not in s:
                continue
            ppid = int(s[s.rindex(")") + 2:].split()[1])
            with open("/proc/%d/stat" % ppid) as f:
                pp = int(f.read().rsplit(")", 1)[1].split()[1])
            if pp != broker.pid:
                continue
            return sum(os.readlink("/proc/%s/fd/%s" % (pid, fd)).startswith("socket:")
                       for fd in os.listdir("/proc/%s/fd" % pid))
        except (OSError, ValueError, IndexError):
            continue
    return None


try:
    results = [run() for _ in range(5)]
    want = "[0, 1, 2] 4 []\n"  # 0-2 and the listing's own descriptor
    for i, r in enumerate(results):
        ok(r.get("status") == "ok" and r.get("stdout") == want,
           "run %d sees descriptors 0-2 only, no socket (%s)" % (i + 1,
                                                               "reports its pages" if i == 0
                                                               else "copies them"),
           json.dumps(r)[:400])
    n = zygote_sockets()
    ok(n == 1, "the zygote keeps its control socket only once it has its list", "sockets: %s" % n)
finally:
    broker.terminate()
    try:
        broker.wait(30)
    except subprocess.TimeoutExpired:
        broker.kill()
    shutil.rmtree(d, ignore_errors=True)
done()
