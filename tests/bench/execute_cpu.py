"""execute_cpu.py: CPU per POST /v1/execute (python print(1)) under 8 wrk connections, split by
the process that spent it, against bare `/usr/bin/python3 -c 'print(1)'` runs two at a time.

Both sides saturate the 2 CPUs, so busy time per run is what throughput pays. Machine-wide busy
time comes from /proc/stat (user+nice+system+irq+softirq: steal is another guest's); the split
comes from every process's utime+stime (+ its reaped children's) in /proc/<pid>/stat before and
after, grouped by name. Alternated in ROUNDS windows so a change in the machine's speed hits both
sides alike. Run under tests/lib/harness.sh --exec (execute_cpu does that)."""
import os
import re
import resource
import subprocess
import sys

from execute_latency import URL, execute_lua

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from cpu_sample import busy_ms, deltas, gone_before_ms, per_process  # noqa: E402

SECS = float(os.environ.get("BENCH_SECS", "6"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))

# name in /proc/<pid>/stat -> part of the service it belongs to
GROUPS = (("sbxd", "broker"), ("sbx-fcgi", "fcgi"), ("nginx", "nginx"))


def split(before, after, runs):
    """ms per run by part: a process's own time goes to its group; the time of reaped children
    of the broker's processes is the sandboxed processes' (the run's init and program)."""
    parts = {"sandboxed": 0.0, "broker": 0.0, "fcgi": 0.0, "nginx": 0.0, "kernel threads": 0.0}
    for p, d_own, d_kids in deltas(before, after):
        group = next((g for n, g in GROUPS if p.comm == n), None)
        if p.kthread:
            parts["kernel threads"] += d_own
        elif group:
            parts[group] += d_own
            if group == "broker":
                parts["sandboxed"] += d_kids
    return {k: v / runs for k, v in parts.items()}


def split_zygote(before, after, runs):
    """split, with SBX_ZYGOTE=1's processes too (comm sbx-zygote, sandbox/zygote.c): a slot's
    zygote (a child of the broker) is the service's "zygote" part; each run's init (a child of
    the zygote, same name), and what the zygote and the inits reaped, are the sandboxed part.
    (warm_start.py's zsplit counts a live init as zygote: it is here the run's.)"""
    parts = split(before, after, runs)
    parts["zygote"] = 0.0
    comm_of = {pid: p.comm for (pid, _), p in after.items()}
    for p, d_own, d_kids in deltas(before, after):
        if p.comm != "sbx-zygote" or p.kthread:
            continue
        own = "sandboxed" if comm_of.get(p.ppid) == "sbx-zygote" else "zygote"
        parts[own] += d_own / runs
        parts["sandboxed"] += d_kids / runs
    parts["sandboxed"] -= gone_before_ms(before, after, "sbx-zygote") / runs
    return parts


def wrk_window(script):
    out = subprocess.run(["wrk", "-t", "2", "-c", "8", "-d", f"{max(1, round(SECS))}s", "-s", script,
                          URL + "/v1/execute"], capture_output=True, text=True).stdout
    n = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if not n or bad:
        raise SystemExit(f"wrk failed or saw errors:\n{out}")
    return int(n.group(1))


def windows(script, bare_runs, split_fn=split):
    """ROUNDS windows of wrk running `script` alternated with bare_runs bare runs two at a time,
    after one window to warm up (workers, slots, page cache). (service ms per run, bare ms per
    run, split_fn's ms per run by part plus the client's, the unattributed rest, runs)."""
    bare_input = ("print(1)\n" * bare_runs).encode()
    wrk_window(script)
    svc_ms = svc_runs = bare_ms = 0.0
    parts = {}
    for _ in range(ROUNDS):
        b0 = busy_ms()
        subprocess.run(["xargs", "-P", "2", "-n", "1", "-d", "\n", "/usr/bin/python3", "-c"],
                       input=bare_input, stdout=subprocess.DEVNULL, check=True)
        bare_ms += busy_ms() - b0
        p0, b0, r0 = per_process(), busy_ms(), resource.getrusage(resource.RUSAGE_CHILDREN)
        n = wrk_window(script)
        b1, p1, r1 = busy_ms(), per_process(), resource.getrusage(resource.RUSAGE_CHILDREN)
        svc_ms += b1 - b0
        svc_runs += n
        for k, v in split_fn(p0, p1, n).items():
            parts[k] = parts.get(k, 0.0) + v * n
        # wrk has exited by now: its time is our reaped children's
        parts["client (wrk)"] = parts.get("client (wrk)", 0.0) + (
            r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000
    svc = svc_ms / svc_runs
    bare = bare_ms / (bare_runs * ROUNDS)
    parts = {k: v / svc_runs for k, v in parts.items()}
    return svc, bare, parts, svc - sum(parts.values()), svc_runs


def main():
    bare_runs = max(40, int(SECS * 70))
    svc, bare, parts, rest, svc_runs = windows(execute_lua("execute_cpu.lua"), bare_runs,
                                               split_zygote)
    print(f"execute_cpu_per_run service {svc:.1f} ms vs bare {bare:.1f} ms ({svc - bare:+.1f}) "
          f"({int(svc_runs)} executes over 8 connections, {bare_runs * ROUNDS} bare runs two at a "
          f"time, alternated in {ROUNDS} windows; reference)")
    print("execute_cpu_where " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()) +
          f", unattributed {rest:.2f} ms per run (reference)")


if __name__ == "__main__":
    main()
