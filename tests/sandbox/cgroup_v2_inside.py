"""cgroup_v2_inside.py: the checks cgroup_v2.t runs inside User-mode Linux, where cgroup2 is the
only hierarchy (/sys/fs/cgroup, controllers cpu io memory pids). Prints TAP. Limits are generous
in time: everything in UML is about 40 times slower than on the host."""
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import diag, done, ok  # noqa: E402

CG = "/sys/fs/cgroup"
# cgroup_v2.t points these at a plain build of its own when build/ is sanitized.
SBX = os.path.join(os.environ.get("SBX_BIN_DIR", "build"), "sbx")
SBXD = os.path.join(os.environ.get("SBX_BIN_DIR", "build"), "sbxd")


def sbx(*args, limits=()):
    r = subprocess.run([SBX, *limits, "--", *args], capture_output=True, text=True,
                       timeout=300)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"raw": r.stdout[-300:], "err": r.stderr[-300:], "rc": r.returncode}


ok(open(f"{CG}/cgroup.controllers").read().split() == ["cpu", "io", "memory", "pids"]
   and not glob.glob(f"{CG}/memory") and not os.path.exists(f"{CG}/unified"),
   "a pure cgroup v2 host: one hierarchy with cpu, io, memory and pids",
   open(f"{CG}/cgroup.controllers").read())

j = sbx("/usr/bin/python3", "-c", "print(6*7)")
ok(j.get("status") == "ok" and j.get("stdout") == "42\n", "a run works on cgroup v2", j)

TOUCH = "b = b'1' * ({mb} << 20)\nprint('survived')"
j = sbx("/usr/bin/python3", "-c", TOUCH.format(mb=100),
        limits=("--memory-mb", "64", "--cpu-ms", "60000", "--wall-ms", "120000"))
ok(j.get("status") == "memory_limit" and "survived" not in j.get("stdout", "")
   and 60 * 1024 <= j.get("memory_kb", 0) <= 70 * 1024,
   "touching 100 MiB under 64 MiB: memory_limit (memory.max), peak reported at the limit "
   "(memory.peak)", j)

j = sbx("/usr/bin/python3", "-c", TOUCH.format(mb=30),
        limits=("--memory-mb", "256", "--cpu-ms", "60000", "--wall-ms", "120000"))
ok(j.get("status") == "ok" and 30 * 1024 <= j.get("memory_kb", 0) <= 80 * 1024,
   "touching 30 MiB: ok, peak between 30 and 80 MiB (the interpreter's own included)", j)

j = sbx("/usr/bin/python3", "-c", "while True: pass",
        limits=("--cpu-ms", "1000", "--wall-ms", "120000"))
ok(j.get("status") == "timeout" and j.get("limit") == "cpu" and 1000 <= j.get("cpu_ms", 0) <= 2500,
   "a spin: timeout with limit cpu at about 1000 ms (cpu.stat)", j)

j = sbx("/bin/bash", "-c", "for i in $(seq 40); do sleep 20 & done 2>&1 | tail -n 1; echo done",
        limits=("--processes", "8", "--wall-ms", "60000"))
ok(j.get("status") in ("ok", "error") and "done" in j.get("stdout", "")
   and "fork" in (j.get("stdout", "") + j.get("stderr", "")),
   "forks past the process limit fail (pids.max) and the run still ends", j)

j = sbx("/bin/bash", "-c", "setsid sleep 300 & (sleep 301 &); nohup sleep 302 >/dev/null 2>&1 & echo started",
        limits=("--wall-ms", "60000"))
time.sleep(1)
left = subprocess.run(["pgrep", "-x", "sleep"], capture_output=True, text=True).stdout.split()
ok(j.get("status") == "ok" and not left,
   "background children (setsid, double fork, nohup) die with the run (cgroup.kill)", (j, left))

os.makedirs("/mnt/w/tmp/wd", exist_ok=True)
os.chown("/mnt/w/tmp/wd", 1000, 1000)
r = subprocess.run([SBX, "--workdir", "/mnt/w/tmp/wd", "--", "/bin/sh", "-c",
                    "echo hi > /work/f && stat -c %u /work/f"], capture_output=True, text=True,
                   timeout=300)
j = json.loads(r.stdout) if r.stdout.startswith("{") else {"raw": r.stdout, "err": r.stderr}
ok(j.get("status") == "ok" and os.path.exists("/mnt/w/tmp/wd/f"),
   "a work directory on btrfs (idmapped into the run) is written through", j)

left = sorted(glob.glob(f"{CG}/sbx-cli/**/", recursive=True))
ok(not left, "the CLI leaves no cgroup behind (run and slot groups removed)", left)

# The broker: one group per slot under its own name, runs through its socket, all gone at stop.
uid, gid = (int(x) for x in subprocess.run(["id", "-u", "sbx"], capture_output=True, text=True)
            .stdout.split() + subprocess.run(["id", "-g", "sbx"], capture_output=True,
                                             text=True).stdout.split())
os.makedirs("/run/b", exist_ok=True)
os.chmod("/run/b", 0o755)
log = open("/run/b/log", "w")
broker = subprocess.Popen([SBXD, "--socket", "/run/b/s.sock", "--slots", "2",
                           "--client-uid", str(uid), "--files-uid", str(uid), "--files-gid",
                           str(gid), "--uid-base", "330000", "--cgroup-name", "sbx-uml"],
                          stdout=log, stderr=log)
for _ in range(300):
    if os.path.exists("/run/b/s.sock"):
        break
    time.sleep(0.2)
r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", SBX,
                    "--broker", "/run/b/s.sock", "--", "/usr/bin/python3", "-c", "print(2)"],
                   capture_output=True, text=True, timeout=300)
j = json.loads(r.stdout) if r.stdout.startswith("{") else {"raw": r.stdout, "err": r.stderr}
ok(j.get("status") == "ok" and j.get("stdout") == "2\n", "a run through the broker (sbxd) on v2", j)
slots = sorted(os.path.basename(p) for p in glob.glob(f"{CG}/sbx-uml/slot*"))
ok(slots == ["slot0", "slot1"], "the broker made one group per slot", slots)
started = open("/run/b/log").read()
ok("cgroup=v2" in started, "the broker detected cgroup v2", started.splitlines()[:1])
t0 = time.monotonic()
broker.terminate()
try:
    broker.wait(timeout=60)
except subprocess.TimeoutExpired:
    def read(path):
        try:
            return open(path).read().strip()
        except OSError as e:
            return type(e).__name__
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        stat = read(f"/proc/{pid}/stat")
        if "(sbxd)" in stat or int(pid) == broker.pid:
            diag(f"still there: {stat[:90]} | wchan {read(f'/proc/{pid}/wchan')} | "
                 f"stack {read(f'/proc/{pid}/stack')[:300]}")
    broker.kill()
    broker.wait()
diag(f"the broker stopped in {time.monotonic() - t0:.1f} s")
left = glob.glob(f"{CG}/sbx-uml")
ok(broker.returncode == 0 and not left, "a stopped broker removes its whole cgroup tree", left)
diag("broker log: " + open("/run/b/log").read().replace("\n", " | ")[:400])

# Contexts on v2: the contexts' parent group holds their memory limit; a context's group lives
# under it for the context's life, its cell counted from cpu.stat; all gone at delete and stop.
KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctx_fixture")
clog = open("/run/b/ctx.log", "w")
broker = subprocess.Popen([SBXD, "--socket", "/run/b/c.sock", "--slots", "1",
                           "--client-uid", str(uid), "--files-uid", "1000", "--files-gid", "1000",
                           "--uid-base", "331000", "--cgroup-name", "sbx-umlc", "--contexts", "2",
                           "--contexts-memory-mb", "512", "--bind-ro", f"{KDIR}:/opt/sbx-kernel"],
                          stdout=clog, stderr=clog)
for _ in range(300):
    if os.path.exists("/run/b/c.sock-health"):
        break
    time.sleep(0.2)


def ctx(*args):
    r = subprocess.run([SBX, "ctx", "--broker", "/run/b/c.sock", *args], capture_output=True,
                       text=True, timeout=600)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"raw": r.stdout[-300:], "err": r.stderr[-300:]}


CID = "0" * 31 + "1"
j = ctx("create", CID, "--owner", "alice", "--workdir", "/mnt/w/tmp/wd", "--memory-mb", "96")
ok(j.get("rc") == 0, "contexts on v2: create", j)
limit = open(f"{CG}/sbx-umlc-ctx/memory.max").read().strip() if os.path.exists(
    f"{CG}/sbx-umlc-ctx/memory.max") else None
ok(limit == str(512 << 20), "contexts on v2: their parent group holds --contexts-memory-mb", limit)
cmax = open(f"{CG}/sbx-umlc-ctx/slot0/run/memory.max").read().strip() if os.path.exists(
    f"{CG}/sbx-umlc-ctx/slot0/run/memory.max") else None
ok(cmax == str(96 << 20), "contexts on v2: the context's own group has its memory limit", cmax)
j = ctx("call", CID, "--wall-ms", "120000", json.dumps({"op": "execute", "code": "x = 6 * 7\nx"}))
ok(j.get("status") == "ok" and '"42"' in (j.get("reply") or ""), "contexts on v2: a cell runs", j)
j = ctx("call", CID, "--wall-ms", "600000", "--cpu-ms", "1000",
        json.dumps({"op": "execute", "code": "while True: pass"}))
ok(j.get("status") == "timeout" and j.get("limit") == "cpu" and not j.get("lost"),
   "contexts on v2: CPU from cpu.stat interrupts a spin, state kept", j)
j = ctx("call", CID, "--wall-ms", "600000", "--cpu-ms", "600000",
        json.dumps({"op": "execute", "code": "b = b'1' * (200 << 20)"}))
ok(j.get("status") == "memory_limit" and j.get("lost"), "contexts on v2: a memory bomb is "
   "memory_limit, lost", j)
j = ctx("delete", CID)
ok(j.get("rc") == 0 and not os.path.exists(f"{CG}/sbx-umlc-ctx/slot0"),
   "contexts on v2: delete removes the context's group", j)
broker.terminate()
try:
    broker.wait(timeout=120)
except subprocess.TimeoutExpired:
    broker.kill()
    broker.wait()
ok(not os.path.exists(f"{CG}/sbx-umlc-ctx"), "contexts on v2: a stopped broker removes their "
   "parent group")
diag("contexts broker log: " + open("/run/b/ctx.log").read().replace("\n", " | ")[:600])

# The broker as systemd starts sbx-broker.service (Delegate=yes): the kernel side of what systemd
# does, by hand. The unit's group exists with every controller enabled down to it, and the main
# process is put there before exec; the broker must keep inside that subtree: move itself to
# <service>/supervisor (a group with processes cannot enable controllers for children) and put
# its slots in <service>/<name>/slotN. A restart finds the group as the last stop left it
# (systemd removes it only once the unit is stopped for good).
SVC = f"{CG}/system.slice/sbx-broker.service"
os.makedirs(SVC, exist_ok=True)
for parent in (CG, f"{CG}/system.slice"):
    with open(f"{parent}/cgroup.subtree_control", "w") as f:
        f.write("+cpu +io +memory +pids")


def start_delegated(log_path, group=SVC):
    return subprocess.Popen(
        ["/bin/sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", SBXD,
         "--socket", "/run/b/d.sock", "--slots", "2", "--client-uid", str(uid), "--files-uid",
         str(uid), "--files-gid", str(gid), "--uid-base", "340000", "--cgroup-name", "sbx"],
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT)


def broker_run(*limits, code="print(3)"):
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                        SBX, "--broker", "/run/b/d.sock", *limits, "--",
                        "/usr/bin/python3", "-c", code],
                       capture_output=True, text=True, timeout=300)
    return json.loads(r.stdout) if r.stdout.startswith("{") else {"raw": r.stdout, "err": r.stderr}


def broker_probe():
    r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                        SBX, "--broker", "/run/b/d.sock", "--probe"],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, json.loads(r.stdout) if r.stdout.startswith("{") else {"raw": r.stdout}


def stop(broker):
    broker.terminate()
    try:
        broker.wait(timeout=60)
    except subprocess.TimeoutExpired:
        broker.kill()
        broker.wait()
    if os.path.exists("/run/b/d.sock"):
        os.unlink("/run/b/d.sock")


def wait_socket(path):
    for _ in range(300):
        if os.path.exists(path):
            return True
        time.sleep(0.2)
    return False


def groups_under(path):
    return sorted(os.path.relpath(p, path) for p in glob.glob(f"{path}/**/", recursive=True)
                  if os.path.relpath(p, path) != ".")


for attempt in ("first start", "restart"):
    broker = start_delegated(f"/run/b/delegated-{attempt[0]}.log")
    up = wait_socket("/run/b/d.sock")
    own = open(f"/proc/{broker.pid}/cgroup").read().strip()
    j = broker_run()
    ok(up and j.get("status") == "ok" and j.get("stdout") == "3\n",
       f"delegated subtree ({attempt}): a run through the broker works", j)
    ok(own == "0::/system.slice/sbx-broker.service/supervisor",
       f"delegated subtree ({attempt}): the broker moved itself to <service>/supervisor", own)
    # (a slot's "run" group exists while its next sandbox is prepared: not always at this moment)
    # (and the background slot's, sbxd --background-runs: 1 of 2 slots by default)
    groups = [g for g in groups_under(SVC) if not g.endswith("/run")]
    ok(groups == ["sbx", "sbx-bg", "sbx-bg/slot2", "sbx/slot0", "sbx/slot1", "supervisor"] and
       not os.path.exists(f"{CG}/sbx"),
       f"delegated subtree ({attempt}): slot groups are <service>/sbx/slotN and "
       "<service>/sbx-bg/slotN, nothing outside "
       "the service's group", groups)
    weights = [open(f"{SVC}/{g}/cpu.weight").read().strip()
               if os.path.exists(f"{SVC}/{g}/cpu.weight") else None for g in ("sbx", "sbx-bg")]
    ok(weights == ["200", "6"], f"delegated subtree ({attempt}): cpu.weight is one default "
       "share per slot for the slots' group (200), low for the background slots' (6)", weights)
    rc, p = broker_probe()
    ok(rc == 0 and p.get("usable") is True and "2 of 2 slots ready" in p.get("detail", "")
       and "1 of 1 background slots ready" in p.get("detail", ""),
       f"delegated subtree ({attempt}): the broker's probe says its slots are ready", p)
    if attempt == "first start":
        j = broker_run("--memory-mb", "64", "--cpu-ms", "60000", "--wall-ms", "120000",
                       code=TOUCH.format(mb=100))
        ok(j.get("status") == "memory_limit" and 60 * 1024 <= j.get("memory_kb", 0) <= 70 * 1024,
           "delegated subtree: the memory limit is enforced in the slot's group", j)
    stop(broker)
    groups = groups_under(SVC)
    ctl = open(f"{SVC}/cgroup.subtree_control").read().split()
    ok(broker.returncode == 0 and groups == ["supervisor"] and not ctl,
       f"delegated subtree ({attempt}): a stopped broker leaves only its empty supervisor group "
       "and no controllers enabled in the service's group (a restart can enter it again)",
       (broker.returncode, groups, ctl))
# What systemd does once the unit is stopped: remove the service's whole group.
try:
    os.rmdir(f"{SVC}/supervisor")
    os.rmdir(SVC)
    trimmed = None
except OSError as e:
    trimmed = e
ok(trimmed is None and not os.path.exists(SVC), "delegated subtree: nothing of the broker stops "
   "systemd removing the service's group", trimmed)
diag("delegated broker log: " + open("/run/b/delegated-f.log").read().replace("\n", " | ")[:300])

# A subtree where slots cannot be made (the slice does not pass the memory controller down): the
# broker fails closed, and its probe says so instead of counting crash-looping slots as alive.
BAD = f"{CG}/nomem.slice/sbx-broker.service"
os.makedirs(BAD, exist_ok=True)
with open(f"{CG}/nomem.slice/cgroup.subtree_control", "w") as f:
    f.write("+pids")
broker = start_delegated("/run/b/nomem.log", group=BAD)
wait_socket("/run/b/d.sock")
time.sleep(3)
rc, p = broker_probe()
ok(rc == 1 and p.get("usable") is False and "0 of 2 slots ready" in p.get("detail", "")
   and "a slot failed to open" in p.get("detail", ""),
   "slots that cannot open their cgroup: the broker's probe says unusable, and why", p)
stop(broker)
done()
