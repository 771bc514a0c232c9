#!/usr/bin/python3
"""zygote_shared.t: a broker's slots learn zygote forms from each other (sandbox/zygote.c,
"forms shared between a broker's slots"). Through a private two-slot broker with the zygote on by
default, one run in the evaluate runner's form (`python3 -S -B /opt/sbxt/runner.py`, a read-only
hint outside /work) lands on one slot; the other slot, which never served a run, then starts a
`-S -B` zygote preloading the same hint while idle, so the form's next runs are forked from a
zygote whichever slot takes them. Before this, only the slot that had served the form had a
zygote for it. A second broker with a short age bound (SBX_ZYG_SHARE_AGE_S, tests only) shows
that a learned zygote is stopped once no slot has served its form for that long, while the
serving slot keeps its own; and a stopped broker leaves no process of either slot. No speed is
assumed: every wait is for a state, with a generous deadline."""
import os
import random
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import ok, diag, done  # noqa: E402

from zygtest import PY, Brokers, procs, require, run_json, scratch, zygotes  # noqa: E402

require()

PROBE = r"""
import json, sys
print(json.dumps({'flags': [sys.flags.no_site, sys.flags.dont_write_bytecode],
    'preloaded': 'csv' in sys.modules,
    'zygote': '#sbx' + '-zygote' in open('/proc/self/cmdline').read()}))
"""

d, work = scratch("sbx-zygote-shared-t.")
UID = 380000 + random.randrange(64) * 16 + 8
opt = os.path.join(d, "opt")
os.mkdir(opt)
with open(os.path.join(opt, "runner.py"), "w") as f:
    f.write("import csv\n" + PROBE)
os.chmod(os.path.join(opt, "runner.py"), 0o644)
os.chmod(opt, 0o755)
RUNNER = [PY, "-S", "-B", "/opt/sbxt/runner.py"]
brokers = Brokers(d, UID, "zygsharetest")
stop = brokers.stop


def start(env_extra):
    env = dict(os.environ, SBX_TEMPLATE_MAX_AGE_S="3600")
    for k in ("SBX_ZYGOTE", "SBX_ZYGOTE_SHARE", "SBX_ZYG_SHARE_AGE_S", "SBX_WARM"):
        env.pop(k, None)
    env.update(env_extra)
    n = len(brokers.procs)
    sock = brokers.start(env, ["--bind-ro", opt + ":/opt/sbxt"], slots=2)
    return sock, brokers.logs[n], UID + 4 * n


def run(sock, argv):
    return run_json(sock, work, argv)


def forms(uid):
    """The slot's zygotes (not the runs they fork) as (options, hints) from their command line:
    python3 [-u -S -B] -c <zygote.py> <hints>."""
    out = []
    for p in zygotes(uid):
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                a = f.read().decode(errors="replace").split("\0")[:-1]
        except OSError:
            continue
        i = a.index("-c") if "-c" in a else len(a)
        out.append((" ".join(a[1:i]), a[i + 2:]))
    return sorted(out)


def wait_for(cond, secs=60):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def served_slots(log):
    with open(log) as f:
        return sorted({int(m) for m in re.findall(r"event=run slot=(\d+)", f.read())})


SB = ("-S -B", ["/opt/sbxt/runner.py"])
try:
    sock, log, uid = start({})
    ok(forms(uid) == [] and forms(uid + 1) == [],
       "a broker whose slots served nothing holds no zygote", (forms(uid), forms(uid + 1)))
    first = run(sock, RUNNER)
    ok(first.get("flags") == [1, 1], "the runner's form runs", first)
    served = served_slots(log)
    ok(len(served) == 1, "one slot served it", served)
    s = served[0] if served else 0
    other = uid + (1 - s)
    ok(wait_for(lambda: forms(uid + s) == [SB]),
       "the slot that served the run keeps a -S -B zygote with the runner's hint",
       forms(uid + s))
    ok(wait_for(lambda: forms(other) == [SB]),
       "the slot that never served it starts one too, while idle (options and hint learned)",
       forms(other))
    before = (zygotes(uid), zygotes(uid + 1))
    got = [run(sock, RUNNER) for _ in range(4)]
    ok(all(r.get("zygote") is True and r.get("preloaded") is True for r in got),
       "the form's next runs fork from a zygote with the hint preloaded, on either slot",
       (got, served_slots(log)))
    # Without the record, the other slot's first run of the form started its zygote while
    # that run waited (a new pid here); with it, every run forks from the zygotes already there.
    after = (zygotes(uid), zygotes(uid + 1))
    ok(after == before, "no zygote started meanwhile: the runs used those started while idle",
       (before, after))
    diag("slots that served: %s" % served_slots(log))
    stop(brokers.procs[0])
    ok(wait_for(lambda: not any(u in (uid, uid + 1) for c, pp, u in procs().values()), 30),
       "a stopped broker leaves no zygote nor anything else of its slots",
       [x for x in procs().values() if x[2] in (uid, uid + 1)])

    # The age bound: a learned zygote goes once no slot has served its form for that long.
    sock, log, uid = start({"SBX_ZYG_SHARE_AGE_S": "3"})
    run(sock, RUNNER)
    served = served_slots(log)
    s = served[0] if served else 0
    other = uid + (1 - s)
    learned = wait_for(lambda: forms(other) == [SB], 3)
    diag("the other slot learned the form within the age: %s" % learned)
    ok(wait_for(lambda: forms(other) == [] and forms(uid + s) == [SB]),
       "after the age, the learned zygote is stopped; the serving slot keeps its own",
       (forms(uid + s), forms(other)))
    time.sleep(1)
    ok(forms(other) == [], "and it is not started again for a form nobody served since",
       forms(other))
    stop(brokers.procs[1])
    ok(wait_for(lambda: not any(u in (uid, uid + 1) for c, pp, u in procs().values()), 30),
       "the second broker leaves nothing either",
       [x for x in procs().values() if x[2] in (uid, uid + 1)])
finally:
    brokers.stop_all()
    shutil.rmtree(d, ignore_errors=True)
done()
