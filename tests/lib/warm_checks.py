"""warm_checks.py: what the warm-start isolation tests share (tests/integration/warm_isolation.py
for Python, tests/sandbox/warm_node_isolation.py for node). Both run under tests/lib/harness.sh
--exec with one slot, so every run follows the one before it in the same slot; `execute` is
security_common.execute: (lang, code) -> (status code, JSON body)."""
import json
import os
import time

from tap import ok

# The environment every run gets (run.c's base environment), sorted.
BASE_ENV = ['HOME', 'LANG', 'MPLBACKEND', 'MPLCONFIGDIR', 'PATH', 'TMPDIR', 'USER']


def plant_then_look(execute, lang, plant, look, looks):
    """Run `plant` once, then `look` `looks` times; each program prints one JSON object. Returns
    (status, body) of the plant run and the objects of every run, the plant's first ({} when a
    run failed to answer; a failed look run gives {"bad": body})."""
    st, r = execute(lang, plant)
    seen = [json.loads(r.get("stdout") or "{}") if st == 200 else {}]
    for _ in range(looks):
        st_i, r_i = execute(lang, look)
        seen.append(json.loads(r_i.get("stdout") or "{}") if st_i == 200 else {"bad": r_i})
    return st, r, seen


def check_restart_after_change(execute, lang, path, desc):
    """A change of `path` on the host (its mtime, put back after) drops the process the slot
    pre-started before it: the next run's process started after the change. Two TAP lines: desc,
    then that runs go on."""
    # The run's start time in clock ticks since boot (/proc/self/stat field 22).
    start = {
        "python": "print(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])\n",
        "node": "console.log(require('fs').readFileSync('/proc/self/stat', 'utf8')"
                ".split(') ')[1].split(' ')[19])\n",
    }[lang]
    execute(lang, start)
    time.sleep(1.5)  # the slot prepares its next sandbox while idle
    st0 = os.stat(path)
    with open("/proc/uptime") as f:  # the clock of a process's start time in /proc/PID/stat
        t_change = float(f.read().split()[0])
    os.utime(path, None)
    try:
        st, r = execute(lang, start)
    finally:
        os.utime(path, ns=(st0.st_atime_ns, st0.st_mtime_ns))
    started = int((r.get("stdout") or "0").strip() or 0) / os.sysconf("SC_CLK_TCK")
    ok(st == 200 and started >= t_change - 0.02, desc,
       f"started {started:.2f} change {t_change:.2f} {json.dumps(r)[:300]}")
    st, r = execute(lang, start)
    ok(st == 200 and r.get("exit_code") == 0, "and runs go on", json.dumps(r)[:300])
