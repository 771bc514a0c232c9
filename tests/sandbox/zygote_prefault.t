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
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import ok, done  # noqa: E402

from zygtest import PY, SBX, Brokers, require, scratch  # noqa: E402

require()
d, work = scratch("sbx-zygpf-t.")
brokers = Brokers(d, 381024 + random.randrange(64) * 16, "zygpftest")
sock = brokers.start(dict(os.environ, SBX_ZYGOTE="1", SBX_TEMPLATE_MAX_AGE_S="3600"))
broker = brokers.procs[0]

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
    # Right after a run the slot has Z fork the next prepared sandbox, which holds a socket of
    # its own for a moment: the count settles, with no speed assumed.
    end = time.monotonic() + 30
    n = zygote_sockets()
    while n != 1 and time.monotonic() < end:
        time.sleep(0.05)
        n = zygote_sockets()
    ok(n == 1, "the zygote keeps its control socket only once it has its list", "sockets: %s" % n)
finally:
    brokers.stop_all()
    shutil.rmtree(d, ignore_errors=True)
done()
