"""stall_watch.py SECONDS OUT: a real-time watchdog on every CPU for SECONDS, then
{"stalls": [[start, ms], ...], "error": null|"..."} in OUT (start: CLOCK_MONOTONIC seconds).

One process per CPU, pinned to it at SCHED_FIFO: it preempts every ordinary task, so when its
2 ms sleep oversleeps by 20 ms or more, the CPU itself was not running anything of this machine
(the hypervisor ran another guest: steal) or the kernel held it. reliability_load.py uses it to
tell such a stall of the machine from a slow answer of the service."""
import json
import os
import sys
import time

seconds, out = float(sys.argv[1]), sys.argv[2]
end = time.monotonic() + seconds
cpus = sorted(os.sched_getaffinity(0))
children = {}
for cpu in cpus:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        res = {"stalls": [], "error": None}
        try:
            os.sched_setaffinity(0, {cpu})
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
            while time.monotonic() < end:
                t = time.monotonic()
                time.sleep(0.002)
                late = (time.monotonic() - t - 0.002) * 1000
                if late >= 20:
                    res["stalls"].append([t, late])
        except OSError as e:
            res["error"] = f"cpu {cpu}: {e}"
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    children[pid] = r
stalls, errors = [], []
for pid, r in children.items():
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    res = json.loads(data or b'{"stalls": [], "error": "no report"}')
    stalls += res["stalls"]
    if res["error"]:
        errors.append(res["error"])
with open(out + ".tmp", "w") as f:
    json.dump({"stalls": sorted(stalls), "error": "; ".join(errors) or None}, f)
os.rename(out + ".tmp", out)
