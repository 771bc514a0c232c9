"""warm_start.py: one phase of tests/bench/warm_start (BENCH_PHASE=cold|warm|zygote names the
stack's SBX_WARM / SBX_ZYGOTE setting). Every figure is against bare /usr/bin/python3 measured in the same run,
alternated with the service so a change in the machine's load hits both sides alike. Run under
tests/lib/harness.sh --exec (warm_start does that)."""
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from execute_latency import (H, URL, Conn, api_once, bare_once, bare_parallel, execute_lua,
                             wrk_execute)
from execute_cpu import split, windows

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from cpu_sample import deltas, gone_before_ms  # noqa: E402

PHASE = os.environ.get("BENCH_PHASE", "warm")
N = int(os.environ.get("BENCH_N", "40"))
SECS = float(os.environ.get("BENCH_SECS", "8"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def latency():
    c = Conn()
    for _ in range(5):
        api_once(c)
        bare_once()
    a, b = [], []
    for _ in range(N):
        a.append(api_once(c))
        b.append(bare_once())
    ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
    print(f"warm_start[{PHASE}] execute_p50_ms {ma:.1f} bare_p50_ms {mb:.1f} n={N}")
    print(f"warm_start[{PHASE}] execute_latency_ratio {ma / mb:.2f} (target <= 0.5)")
    return mb / 1e3


def throughput(bare_median):
    import execute_latency
    execute_latency.BARE_MEDIAN[0] = bare_median
    bare = svc = 0.0
    bad = 0
    for _ in range(ROUNDS):
        bare += bare_parallel(2, SECS / ROUNDS) / ROUNDS
        r, n = wrk_execute(SECS / ROUNDS)
        svc += r / ROUNDS
        bad += n
    print(f"warm_start[{PHASE}] execute_8_clients_runs_per_s {svc:.1f} bare_2_at_a_time_runs_per_s "
          f"{bare:.1f} non2xx={bad}")
    print(f"warm_start[{PHASE}] execute_throughput_ratio {svc / bare:.2f} (target >= 1.5)")


def zsplit(p0, p1, n):
    """execute_cpu's split, plus the zygotes (comm sbx-zygote, sandbox/zygote.c): their own time
    (forks, idle) is "zygote", the time of the children they reaped (each run's C, with its init
    and program) is "sandboxed"."""
    parts = split(p0, p1, n)
    parts["zygote"] = 0.0
    for p, d_own, d_kids in deltas(p0, p1):
        if p.comm != "sbx-zygote" or p.kthread:
            continue
        parts["zygote"] += d_own / n
        parts["sandboxed"] += d_kids / n
    parts["sandboxed"] -= gone_before_ms(p0, p1, "sbx-zygote") / n
    return parts


def cpu_split():
    svc, bare, parts, rest, _ = windows(execute_lua("warm_cpu.lua"), max(40, int(SECS * 40)),
                                        zsplit)
    print(f"warm_start[{PHASE}] cpu_per_execute service {svc:.1f} ms vs bare {bare:.1f} ms "
          f"(reference)")
    print(f"warm_start[{PHASE}] cpu_where " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
          + f", unattributed {rest:.2f} ms per run (reference)")


def humaneval():
    path = os.environ.get("HUMANEVAL", "")
    if not os.path.exists(path):
        print(f"warm_start[{PHASE}] humaneval: SKIP, {path or 'the dataset'} is absent")
        return
    with gzip.open(path, "rt") as f:
        probs = [json.loads(x) for x in f if x.strip()]
    with tempfile.TemporaryDirectory() as d:
        files = []
        for i, p in enumerate(probs):
            fn = os.path.join(d, f"p{i}.py")
            with open(fn, "w") as f:
                f.write(p["prompt"] + p["canonical_solution"] + "\n" + p["test"] +
                        f"\ncheck({p['entry_point']})\n")
            files.append(fn)
        t = time.perf_counter()
        for fn in files:
            subprocess.run(["/usr/bin/python3", fn], stdout=subprocess.DEVNULL, check=True)
        bare = time.perf_counter() - t
    local = threading.local()

    def one(p):
        c = getattr(local, "c", None)
        if c is None:
            c = local.c = httpx.Client(base_url=URL, verify=False, headers=H, timeout=300)
        r = c.post("/v1/evaluate", json={"code": p["prompt"] + p["canonical_solution"],
                                         "test": p["test"], "entry_point": p["entry_point"]})
        return r.status_code == 200 and r.json().get("passed") is True

    with ThreadPoolExecutor(4) as pool:  # warm the slots with the runner's form
        list(pool.map(one, probs[:8]))
    t = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        passed = sum(pool.map(one, probs))
    api = time.perf_counter() - t
    print(f"warm_start[{PHASE}] humaneval_api_4_clients_s {api:.2f} ({passed}/{len(probs)} passed) "
          f"bare_sequential_s {bare:.2f}")
    print(f"warm_start[{PHASE}] humaneval_ratio {api / bare:.2f} (target <= 0.5)")


if __name__ == "__main__":
    import sys
    sys.stdout.reconfigure(line_buffering=True)
    parts = os.environ.get("BENCH_PARTS", "latency throughput cpu humaneval").split()
    m = latency() if "latency" in parts or "throughput" in parts else None
    if "throughput" in parts:
        throughput(m)
    if "cpu" in parts:
        cpu_split()
    if "humaneval" not in parts:
        raise SystemExit(0)
    if os.environ.get("BENCH_HUMANEVAL", "1") != "0":
        humaneval()
