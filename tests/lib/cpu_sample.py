"""cpu_sample.py: where the machine's CPU went between two samples, for the benchmarks that split
a service's CPU by process (tests/bench/execute_cpu.py, warm_start.py). Machine-wide busy time
comes from /proc/stat (user+nice+system+irq+softirq: steal is another guest's); the split from
every process's utime+stime (+ its reaped children's) in /proc/<pid>/stat."""
import collections
import os

HZ = os.sysconf("SC_CLK_TCK")

# One process in a sample: own_ms and kids_ms are its CPU time and its reaped children's so far;
# kthread: a kernel thread (which renames itself as it works, so the name does not identify it).
Proc = collections.namedtuple("Proc", "comm ppid pgid uid own_ms kids_ms kthread")


def busy_ms():
    """CPU time the machine has been busy since boot, all CPUs together, in ms."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:8]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) * 1000 / HZ


def per_process():
    """{(pid, start time): Proc} of every process now (a pid alone may be reused)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            uid = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        # after comm: state(0) ppid(1) pgrp(2) ... flags(6) ... utime(11) stime(12) cutime(13)
        # cstime(14) ... starttime(19)
        out[(pid, f[19])] = Proc(comm, f[1], f[2], uid, (int(f[11]) + int(f[12])) * 1000 / HZ,
                                 (int(f[13]) + int(f[14])) * 1000 / HZ,
                                 int(f[6]) & 0x00200000 != 0)  # PF_KTHREAD
    return out


def deltas(before, after):
    """(process, own ms, reaped children's ms) spent between two per_process() samples, for each
    process of `after` (all of its time for one started meanwhile)."""
    for key, p in after.items():
        b = before.get(key)
        if b:
            yield p, p.own_ms - b.own_ms, p.kids_ms - b.kids_ms
        else:
            yield p, p.own_ms, p.kids_ms


def gone_before_ms(before, after, comm):
    """What processes named `comm` that ended between two samples had spent before the first
    (own + reaped children's): their parent's reaped time in the window counts their whole life,
    so a split subtracts this to keep only the window's (a zygote restarted meanwhile)."""
    return sum(b.own_ms + b.kids_ms for key, b in before.items()
               if b.comm == comm and key not in after)


def cgroups(pid):
    """The cgroup paths of a process (one per hierarchy, "" when it is gone)."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return " ".join(line.split(":", 2)[2].strip() for line in f)
    except OSError:
        return ""
