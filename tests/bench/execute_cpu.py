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

from execute_latency import URL, execute_lua

SECS = float(os.environ.get("BENCH_SECS", "6"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
HZ = os.sysconf("SC_CLK_TCK")

# name in /proc/<pid>/stat -> part of the service it belongs to
GROUPS = (("sbxd", "broker"), ("sbx-fcgi", "fcgi"), ("nginx", "nginx"))


def busy_ms():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) * 1000 / HZ


def per_process():
    """{(pid, start time): (comm, own_ms, children_ms, is_kernel_thread)} of every process now
    (a kernel worker renames itself as it works, so the name does not identify it)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        # after comm: state(0) ppid ... flags(6) ... utime(11) stime(12) cutime(13) cstime(14)
        # ... starttime(19)
        kthread = int(f[6]) & 0x00200000 != 0  # PF_KTHREAD
        out[(pid, f[19])] = (comm, (int(f[11]) + int(f[12])) * 1000 / HZ,
                    (int(f[13]) + int(f[14])) * 1000 / HZ, kthread)
    return out


def split(before, after, runs):
    """ms per run by part: a process's own time goes to its group; the time of reaped children
    of the broker's processes is the sandboxed processes' (the run's init and program)."""
    parts = {"sandboxed": 0.0, "broker": 0.0, "fcgi": 0.0, "nginx": 0.0, "kernel threads": 0.0}
    for key, (comm, own, kids, kthread) in after.items():
        b = before.get(key)
        if b:
            d_own, d_kids = own - b[1], kids - b[2]
        else:  # started meanwhile: all of it is from this window
            d_own, d_kids = own, kids
        group = next((g for n, g in GROUPS if comm == n), None)
        if kthread:
            parts["kernel threads"] += d_own
        elif group:
            parts[group] += d_own
            if group == "broker":
                parts["sandboxed"] += d_kids
    return {k: v / runs for k, v in parts.items()}


def wrk_window(script):
    out = subprocess.run(["wrk", "-t", "2", "-c", "8", "-d", f"{max(1, round(SECS))}s", "-s", script,
                          URL + "/v1/execute"], capture_output=True, text=True).stdout
    n = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if not n or bad:
        raise SystemExit(f"wrk failed or saw errors:\n{out}")
    return int(n.group(1))


def main():
    script = execute_lua("execute_cpu.lua")
    bare_runs = max(40, int(SECS * 70))
    bare_input = ("print(1)\n" * bare_runs).encode()
    wrk_window(script)  # warm: workers, slots, page cache
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
        for k, v in split(p0, p1, n).items():
            parts[k] = parts.get(k, 0.0) + v * n
        # wrk has exited by now: its time is our reaped children's
        parts["client (wrk)"] = parts.get("client (wrk)", 0.0) + (
            r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000
    svc = svc_ms / svc_runs
    bare = bare_ms / (bare_runs * ROUNDS)
    parts = {k: v / svc_runs for k, v in parts.items()}
    rest = svc - sum(parts.values())
    print(f"execute_cpu_per_run service {svc:.1f} ms vs bare {bare:.1f} ms ({svc - bare:+.1f}) "
          f"({int(svc_runs)} executes over 8 connections, {bare_runs * ROUNDS} bare runs two at a "
          f"time, alternated in {ROUNDS} windows; reference)")
    print("execute_cpu_where " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()) +
          f", unattributed {rest:.2f} ms per run (reference)")


if __name__ == "__main__":
    main()
