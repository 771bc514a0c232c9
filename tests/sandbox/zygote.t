#!/usr/bin/python3
"""zygote.t: what is particular to runs forked from a slot's zygote (sandbox/zygote.c), through a
private broker with one slot and SBX_ZYGOTE=1: later runs are forked from one zygote that lives
on; a run cannot see, signal, ptrace or open the zygote; random's state differs in every run; a
run that crashes, exits hard or is killed for its memory leaves the zygote as it was; the zygote
sits outside the run's cgroup, is not dumpable and runs as the slot's uid; a change of the host's
interpreter signature starts a new zygote; a job of another form is served by a child.c sandbox;
and with SBX_ZYGOTE=0 there is no zygote at all (unset, the default, is on:
tests/sandbox/zygote_forms.t). The semantics of a zygote-born run against a
cold one are tests/sandbox/zygote_semantics.t (warm_semantics.t in zygote mode)."""
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import ok, done  # noqa: E402

from zygtest import PY, SBX, Brokers, procs, require, scratch, zygotes  # noqa: E402

require()
d, work = scratch("sbx-zygote-t.")
UID = 380000 + random.randrange(64) * 16
brokers = Brokers(d, UID, "zygotetest")
stop = brokers.stop


def start(zygote):
    # One zygote followed across the file: no template refresh (which starts a new one) midway.
    return brokers.start(dict(os.environ, SBX_ZYGOTE="1" if zygote else "0",
                              SBX_TEMPLATE_MAX_AGE_S="3600", SBX_ZYGOTE_DEBUG="1"))


def run(sock, code, *args, **kw):
    argv = [SBX, "--broker", sock, "--workdir", work]
    for k, v in kw.items():
        argv += ["--" + k.replace("_", "-"), str(v)]
    out = subprocess.run(argv + ["--", PY, "-c", code] + list(args), capture_output=True,
                         text=True, timeout=120).stdout
    try:
        return json.loads(out)
    except ValueError:
        return {"_raw": out}


MARK = "import sys;print('#sbx'+'-zygote' in open('/proc/self/cmdline').read())"
try:
    sock = start(True)
    first = run(sock, MARK)
    second = run(sock, MARK)
    z = zygotes(UID)
    ok(first.get("status") == "ok" and second.get("stdout") == "True\n",
       "with SBX_ZYGOTE=1 a slot's second Python run is forked from its zygote", (first, second))
    ok(len(z) == 1, "one zygote for the slot, running as the slot's host uid", z)
    zpid = z[0] if z else -1
    third = run(sock, MARK)
    ok(zygotes(UID) == z and third.get("stdout") == "True\n", "the next run comes from the same "
       "zygote (it lives on; each run is a fork)", (zygotes(UID), third))

    # The per-run chain is C (sandbox/zyg_spawn.c): the zygote clones the run's init itself and
    # the init forks the program (the Python chain had a fork C between the zygote and the init).
    slow = subprocess.Popen([SBX, "--broker", sock, "--workdir", work, "--", PY, "-c",
                             "import time;time.sleep(5)"], stdout=subprocess.DEVNULL)
    chain = None
    end = time.monotonic() + 60
    while chain is None and slow.poll() is None and time.monotonic() < end:
        ps = procs()
        for pid, (c, pp, u) in ps.items():
            if c == "python3" and u == UID and pp in ps:
                chain = (ps[pp][0], ps[pp][1])
        time.sleep(0.05)
    slow.wait(120)
    ok(chain is not None and chain[1] == zpid, "the run's program is the child of the run's "
       "init, itself the zygote's own child (no fork in between)", (chain, zpid))

    REACH = r"""
import ctypes, errno, json, os, sys
z = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
def err(f):
    try:
        f(); return 0
    except OSError as e:
        return e.errno
r = {'procs': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), 'pid': os.getpid(),
     'ppid': os.getppid(), 'kill': err(lambda: os.kill(z, 0)),
     'pidfd': err(lambda: os.pidfd_open(z)),
     'proc': os.path.exists('/proc/%d' % z)}
r['ptrace'] = libc.ptrace(16, z, 0, 0)  # PTRACE_ATTACH
r['ptrace_errno'] = ctypes.get_errno()
print(json.dumps(r))
"""
    r = run(sock, REACH, str(zpid))
    j = json.loads(r.get("stdout") or "{}")
    ok(j.get("procs") == [j.get("pid")] and j.get("ppid") in (0, 1) and j.get("kill") == 3 and
       j.get("pidfd") in (3, 38, 1) and j.get("proc") is False and j.get("ptrace") == -1,
       "a run sees only itself: the zygote's pid is nothing to it (kill, pidfd_open, /proc, "
       "ptrace all fail)", r)

    rands = [run(sock, "import random;print(random.random(), random.getrandbits(64))")
             .get("stdout") for _ in range(3)]
    ok(None not in rands and len(set(rands)) == 3, "random's state differs in every run", rands)

    for desc, code, kw in (
            ("a segfault", "import ctypes;ctypes.string_at(0)", {}),
            ("os._exit(7)", "import os;os._exit(7)", {}),
            ("SIGKILL to itself", "import os,signal;os.kill(os.getpid(),signal.SIGKILL)", {}),
            ("a memory bomb at its limit", "b=[]\nwhile 1: b.append(bytearray(1<<20))",
             {"memory_mb": 64}),
            ("a fork bomb", "import os\nwhile 1:\n    try: os.fork()\n    except OSError: pass",
             {"wall_ms": 1500, "processes": 16})):
        r = run(sock, code, **kw)
        after = run(sock, MARK)
        ok(r.get("status") in ("signal", "error", "memory_limit", "timeout") and
           zygotes(UID) == z and after.get("stdout") == "True\n",
           "%s: the run ends as it should, the zygote is the same and serves the next run" % desc,
           (r, after, zygotes(UID)))

    ps = procs()
    try:
        with open("/proc/%d/cgroup" % zpid) as f:
            cg = f.read()
        with open("/proc/%d/status" % zpid) as f:
            status = f.read()
    except OSError:
        cg = status = ""
    mem = [ln for ln in cg.splitlines() if ":memory:" in ln]
    ok(mem and not mem[0].endswith("/slot0") and "sbx-zygotetest" in mem[0],
       "the zygote sits outside the slot's cgroup (its start and idle memory are not a run's)",
       mem)
    try:
        owner = os.stat("/proc/%d/environ" % zpid).st_uid
    except OSError:
        owner = None
    ok(owner == 0, "the zygote is not dumpable (its /proc/<pid>/environ is root's)", owner)

    r = run(sock, "import sys;print(sys.argv)", "x")
    sh = subprocess.run([SBX, "--broker", sock, "--workdir", work, "--", "/bin/sh", "-c",
                         "echo shell"], capture_output=True, text=True, timeout=120).stdout
    again = run(sock, MARK)
    ok("shell" in sh and again.get("status") == "ok",
       "a job of another form (a shell) is served by a child.c sandbox, and Python runs go on",
       (sh, again))

    # The interpreter's signature (sandbox/warm.c) changes: a new zygote.
    dp = "/usr/lib/python3/dist-packages"
    if os.path.isdir(dp):
        st = os.stat(dp)
        os.utime(dp, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
        try:
            r1 = run(sock, MARK)
            r = run(sock, MARK)
        finally:
            os.utime(dp, ns=(st.st_atime_ns, st.st_mtime_ns))
        # The old zygote's forks die by parent-death signal, and the slot prepares its next
        # sandbox (starting the new zygote) after answering: both async, no speed assumed.
        end = time.monotonic() + 30
        while len(zygotes(UID)) != 1 and time.monotonic() < end:
            time.sleep(0.1)
        nz = zygotes(UID)
        why = (z, nz, r1, r)
        if not (len(nz) == 1 and nz != z):
            # What the slot said (SBX_ZYGOTE_DEBUG: every start, every fallback and why).
            with open(brokers.logs[0]) as f:
                why += (f.read()[-3000:],)
        ok(len(nz) == 1 and nz != z and r.get("stdout") == "True\n",
           "a change of the interpreter's signature (dist-packages) starts a new zygote", why)
    else:
        ok(True, "# SKIP no %s on this host" % dp)
    stop(brokers.procs[0])
    end = time.monotonic() + 30  # no speed assumed: the kernel's parent-death signals
    while time.monotonic() < end and any(u == UID for c, pp, u in procs().values()):
        time.sleep(0.1)
    left = [p for p, (c, pp, u) in procs().items() if u == UID]
    ok(left == [], "a stopped broker leaves no zygote and nothing it forked", left)

    sock = start(False)
    run(sock, MARK)
    r = run(sock, MARK)
    ok(r.get("stdout") == "False\n" and zygotes(UID + 4) == [],
       "with SBX_ZYGOTE=0 there is no zygote: runs are pre-started as before", r)
finally:
    brokers.stop_all()
    shutil.rmtree(d, ignore_errors=True)
done()
