"""zygtest.py: what the zygote's sandbox tests share (tests/sandbox/zygote*.t): the binaries,
the reasons to skip, a scratch directory with a /work the runs' uid owns, private one-slot
brokers started and stopped, and the zygotes running as a slot's uid."""
import json
import os
import subprocess
import tempfile
import time

from tap import skip_all

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SBXD, SBX = os.path.join(TOP, "build", "sbxd"), os.path.join(TOP, "build", "sbx")
PY = "/usr/bin/python3"


def require():
    """Skip the whole file where the zygote cannot run."""
    if os.geteuid() != 0:
        skip_all("needs root (namespaces, cgroups)")
    if not (os.access(SBXD, os.X_OK) and os.access(SBX, os.X_OK)):
        skip_all("build/sbxd or build/sbx missing (make all)")
    if not os.path.exists("/sys/fs/cgroup/memory"):
        skip_all("the zygote needs cgroup v1 so far (sandbox/zygote.c); this host has none")


def scratch(prefix):
    """(a scratch directory under /var/tmp, its work/ owned by nobody, the runs' files uid)."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    os.chmod(d, 0o755)
    work = os.path.join(d, "work")
    os.mkdir(work)
    os.chown(work, 65534, 65534)
    return d, work


class Brokers:
    """Private brokers (one slot each unless told) in directory d, each on uids of its own from
    uid_base up (4 per broker), each with its log in logs[n]."""

    def __init__(self, d, uid_base, name):
        self.d, self.uid_base, self.name, self.procs, self.logs = d, uid_base, name, [], []

    def start(self, env, args=(), slots=1):
        n = len(self.procs)
        sock = os.path.join(self.d, "sock%d" % n)
        self.logs.append(os.path.join(self.d, "log%d" % n))
        p = subprocess.Popen([SBXD, "--socket", sock, "--slots", str(slots), "--client-uid", "0",
                              "--files-uid", "65534", "--files-gid", "65534", "--uid-base",
                              str(self.uid_base + 4 * n), "--cgroup-name",
                              "sbx-%s-%d-%d" % (self.name, os.getpid(), n)] + list(args),
                             env=env, stderr=open(self.logs[-1], "w"))
        self.procs.append(p)
        end = time.monotonic() + 60
        while not os.path.exists(sock) and time.monotonic() < end:
            time.sleep(0.05)
        return sock

    @staticmethod
    def stop(p):
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                self.stop(p)


def run_json(sock, work, argv):
    """A run through the broker whose program prints one JSON document: that document (or the
    run's result as {"_result": r}, or {"_raw": out} when the CLI printed no JSON)."""
    out = subprocess.run([SBX, "--broker", sock, "--workdir", work, "--"] + argv,
                         capture_output=True, text=True, timeout=120).stdout
    try:
        r = json.loads(out)
        return json.loads(r.get("stdout") or "null") or {"_result": r}
    except ValueError:
        return {"_raw": out}


def procs():
    """{pid: (comm, ppid, uid)} of every live process (zombies are dead, not yet reaped)."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                s = f.read()
            uid = os.stat("/proc/" + p).st_uid
        except OSError:
            continue
        f = s[s.rindex(")") + 2:].split()
        if f[0] in ("Z", "X"):
            continue
        out[int(p)] = (s[s.index("(") + 1:s.rindex(")")], int(f[1]), uid)
    return out


def zygotes(uid):
    """Pids of the zygotes running as host uid (their parent is the slot, not another zygote)."""
    ps = procs()
    return sorted(p for p, (c, pp, u) in ps.items()
                  if c == "sbx-zygote" and u == uid and ps.get(pp, ("",))[0] != "sbx-zygote")
