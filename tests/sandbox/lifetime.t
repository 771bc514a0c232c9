#!/usr/bin/python3
"""lifetime.t: nothing of a run outlives it (SANDBOX.md checklist 10-12). Background children
made every way a program can (&, nohup, setsid, double fork, daemon(), ignoring SIGTERM, stopped,
re-forking chains) each append to a heartbeat file in the host's work directory; after the run
returns, the file must stop growing and no process with a sandbox uid may remain. A child holding
stdout open must not keep the run alive. Signals from inside reach nothing outside."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
import probes  # noqa: E402
from tap import ok, is_  # noqa: E402

S.start(probes={"daemon": probes.DAEMON})

BEAT = "while :; do echo x >> /work/hb-{n}; sleep 0.1; done"


def heartbeats_stop(wd, desc):
    """After a run: every hb-* file in wd has stopped growing (checked over 0.6 s)."""
    def sizes():
        return {f: os.path.getsize(os.path.join(wd, f)) for f in os.listdir(wd) if f.startswith("hb-")}
    before = sizes()
    time.sleep(0.6)
    after = sizes()
    return ok(before and before == after, desc, f"before {before} after {after}")


def lifetime_case(name, argv, expect_beats=True, **kw):
    """The background child never exits: a run that waited for it would end in a wall timeout,
    so status ok says the run ended with the main process (whatever the machine's speed)."""
    wd = S.tmpdir()
    r = S.run(argv, workdir=wd, wall_ms=kw.pop("wall_ms", 30000), **kw)
    ok(r.get("status") == "ok",
       f"{name}: the run ends with the main process, not at the wall limit", S.show(r))
    S.no_leftover_processes(f"{name}: no process of the run survives")
    if expect_beats:
        heartbeats_stop(wd, f"{name}: the background child's heartbeat stopped with the run")
    return r


# 10: background children of every kind; the main process exits at once (after one beat).
WAIT_BEAT = " while [ ! -s /work/hb-{n} ]; do sleep 0.05; done"
lifetime_case("sh &", ["/bin/sh", "-c", "(" + BEAT.format(n="amp") + ") >/dev/null 2>&1 &"
                       + WAIT_BEAT.format(n="amp")])
lifetime_case("nohup", ["/bin/sh", "-c", "nohup /bin/sh -c '" + BEAT.format(n="nohup")
                        + "' >/dev/null 2>&1 &" + WAIT_BEAT.format(n="nohup")])
lifetime_case("setsid", ["/bin/sh", "-c", "/usr/bin/setsid /bin/sh -c '" + BEAT.format(n="setsid")
                         + "' >/dev/null 2>&1 &" + WAIT_BEAT.format(n="setsid")])
DOUBLE_FORK = r"""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 3)
        while True:
            with open('/work/hb-double', 'a') as f:
                f.write('x')
            time.sleep(0.1)
    os._exit(0)
os.wait()
while not os.path.exists('/work/hb-double'):
    time.sleep(0.05)
"""
lifetime_case("double fork", [S.PY, "-c", DOUBLE_FORK])
lifetime_case("daemon()", ["/bin/sh", "-c", S.probe("daemon") + ";" + WAIT_BEAT.format(n="daemon")])
IGNORE_TERM = r"""
import os, signal, time
if os.fork() == 0:
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1):
        signal.signal(s, signal.SIG_IGN)
    while True:
        with open('/work/hb-ignore', 'a') as f:
            f.write('x')
        time.sleep(0.1)
while not os.path.exists('/work/hb-ignore'):
    time.sleep(0.05)
"""
lifetime_case("SIGTERM ignored", [S.PY, "-c", IGNORE_TERM])
STOPPED = r"""
import os, signal, time
for i in range(3):
    if os.fork() == 0:
        with open('/work/hb-stopped%d' % i, 'a') as f:
            f.write('x')
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
while len([f for f in os.listdir('/work') if f.startswith('hb-')]) < 3:
    time.sleep(0.05)
time.sleep(0.1)
"""
lifetime_case("self-stopped children", [S.PY, "-c", STOPPED])
CHAIN = r"""
import os, time
if os.fork() == 0:
    while True:   # each generation forks the next and dies: the pid keeps moving
        if os.fork():
            os._exit(0)
        with open('/work/hb-chain', 'a') as f:
            f.write('x')
        time.sleep(0.01)
while not os.path.exists('/work/hb-chain') or os.path.getsize('/work/hb-chain') < 20:
    time.sleep(0.05)
"""
lifetime_case("re-forking chain", [S.PY, "-c", CHAIN])
# Main process never exits: the wall limit ends everything, including SIGTERM-ignoring children.
wd = S.tmpdir()
r = S.sh("trap '' TERM HUP INT; (trap '' TERM HUP INT; " + BEAT.format(n="wait") + ") & wait",
         workdir=wd, wall_ms=1500)
S.status_is(r, "timeout", "a shell ignoring SIGTERM that waits on its children: timeout (wall)",
            limit="wall")
S.no_leftover_processes("wall timeout: no process of the run survives")
heartbeats_stop(wd, "wall timeout: the child's heartbeat stopped")

# 11: the main process exits while a child still holds stdout/stderr open. The child sleeps
# longer than the wall limit: a run that waited for its pipes to close would be a timeout.
r = S.sh("(sleep 30; echo late) & echo early", wall_ms=20000)
ok(r.get("status") == "ok" and r.get("stdout") == "early\n",
   "sh: exit while a child holding stdout sleeps 30 s: the run ends ok, before its 20 s wall",
   S.show(r))
r = S.py("import subprocess; subprocess.Popen(['/usr/bin/sleep', '30']); print('early')",
         wall_ms=20000)
ok(r.get("status") == "ok" and r.get("stdout") == "early\n",
   "python: exit while a child holding stdout and stderr sleeps 30 s: the run ends ok, before "
   "its 20 s wall", S.show(r))
S.no_leftover_processes("the children holding stdout are gone")

# The supervisor itself dies (a caller's timeout, the OOM killer, a crash): the run must not live
# on unsupervised, with no wall or CPU limit left to end it. Allow it 3 s to notice.
wd = S.tmpdir()
cli = S.Run(["/bin/sh", "-c", BEAT.format(n="orphan")], workdir=wd, wall_ms=60000)
t0 = time.monotonic()
while not os.path.exists(os.path.join(wd, "hb-orphan")) and time.monotonic() - t0 < 60:
    time.sleep(0.05)
ok(os.path.exists(os.path.join(wd, "hb-orphan")), "the run to orphan started (first heartbeat)")
os.kill(cli.p.pid, signal.SIGKILL)
os.waitpid(cli.p.pid, 0)
S._live.discard(cli.p.pid)
t_kill = time.monotonic()
left = S.sandbox_processes()
while left and time.monotonic() - t_kill < 3:
    time.sleep(0.05)
    S.reap_orphans()  # its dead init comes to us (child subreaper) as a zombie
    left = S.sandbox_processes()
gone_ms = int((time.monotonic() - t_kill) * 1000)
ok(not left, f"the CLI killed mid-run: every process of the run is gone within 3 s "
   f"(took {gone_ms} ms)", f"left: {left}")
heartbeats_stop(wd, "the CLI killed mid-run: the program's heartbeat stopped")
# Survivors were re-parented to us: end them, by pid, and reap them.
for pid, _uid, _comm in left:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
time.sleep(0.3)
S.reap_orphans()
for t in cli.readers:  # our pipes close once nothing of the run holds them
    t.join(5)

# 12: signals to the parent, PID 1 and everything visible do nothing outside. Canaries run on
# the host as the very uids the CLI's slots use, so only the pid namespace stands between.
canaries = []
for uid in range(300000, 300004):
    canaries.append(subprocess.Popen(["/usr/bin/sleep", "120"], user=uid, group=uid,
                                     start_new_session=True))
SIGNALS = r"""
import json, os, signal
res = {'ppid': os.getppid(), 'self': os.getpid()}
for name, pid in (('parent', os.getppid()), ('init', 1)):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(pid, sig)
            res[name + '-' + sig.name] = 'sent'
        except OSError as e:
            res[name + '-' + sig.name] = e.strerror
alive = []
for pid in range(1, 40000):
    try:
        os.kill(pid, 0)
        alive.append(pid)
    except OSError:
        pass
res['alive'] = alive
res['proc'] = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
print(json.dumps(res), flush=True)
try:
    os.kill(-1, signal.SIGKILL)
except OSError as e:
    print('kill -1:', e.strerror)
print('still here', flush=True)
"""
r = S.py(SIGNALS, wall_ms=10000)
j = S.last_json(r) or {}
ok(r.get("status") == "ok" and (r.get("stdout") or "").endswith("still here\n"),
   "SIGKILL/SIGTERM/SIGSTOP to the parent and PID 1, then kill(-1, SIGKILL): the program goes on "
   "and the run ends normally", S.show(r))
ok(j.get("alive") and set(j["alive"]) <= set(j.get("proc", [])) | {1} and len(j["alive"]) <= 3,
   "only the run's own processes (PID 1 and itself) answer kill(pid, 0) for pids 1..39999",
   f"alive {j.get('alive')} proc {j.get('proc')}")
is_([c.poll() for c in canaries], [None] * 4,
    "host processes running as the CLI slot uids 300000-300003 were not touched")
for c in canaries:
    c.kill()
    c.wait()

S.finish()
