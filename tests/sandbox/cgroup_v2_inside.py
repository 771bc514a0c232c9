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


def sbx(*args, limits=()):
    r = subprocess.run(["build/sbx", *limits, "--", *args], capture_output=True, text=True,
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
r = subprocess.run(["build/sbx", "--workdir", "/mnt/w/tmp/wd", "--", "/bin/sh", "-c",
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
broker = subprocess.Popen(["build/sbxd", "--socket", "/run/b/s.sock", "--slots", "2",
                           "--client-uid", str(uid), "--files-uid", str(uid), "--files-gid",
                           str(gid), "--uid-base", "330000", "--cgroup-name", "sbx-uml"],
                          stdout=log, stderr=log)
for _ in range(300):
    if os.path.exists("/run/b/s.sock"):
        break
    time.sleep(0.2)
r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "build/sbx",
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
done()
