#!/usr/bin/python3
"""zygote_forms.t: a slot whose Python runs alternate between forms keeps its zygotes
(sandbox/zygote.c): runs in the execute form (`python3 -u main.py`), the evaluate runner's
(`python3 -S -B /opt/sbxt/runner.py`, a read-only script outside /work: a preload hint) and a
checker host's (`python3 -S -B /opt/sbxt/check.py`, another hint of the same options) through a
private one-slot broker with the zygote on by default (SBX_ZYGOTE unset). Once each form has been
seen, further alternating runs are all forked from the same two zygotes (one per option set; no
restart on a change of options or hint), and each run's sys.flags, sys.path, sys.argv,
sys.orig_argv, site and builtins are exactly those of the same command started cold
(SBX_WARM=0)."""
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import ok, done  # noqa: E402

from zygtest import PY, Brokers, procs, require, run_json, scratch, zygotes  # noqa: E402

require()

# What every form prints: what its interpreter's options and start made, and whether it was
# forked from a zygote (the zygote's command line is the run's).
PROBE = r"""
import builtins, json, sys
print(json.dumps({
    'flags': list(sys.flags), 'path': sys.path, 'argv': sys.argv, 'orig_argv': sys.orig_argv,
    'site': 'site' in sys.modules, 'builtins': sorted(dir(builtins)),
    'write_through': sys.stdout.write_through, 'bytecode': sys.dont_write_bytecode,
    'file': __file__, 'name': __name__,
    'preloaded': sorted(m for m in ('csv', 'fractions') if m in sys.modules),
    'zygote': '#sbx' + '-zygote' in open('/proc/self/cmdline').read()}))
"""

d, work = scratch("sbx-zygote-forms-t.")
UID = 380000 + random.randrange(64) * 16 + 8
opt = os.path.join(d, "opt")
os.mkdir(opt)
with open(os.path.join(work, "main.py"), "w") as f:
    f.write(PROBE)
os.chown(os.path.join(work, "main.py"), 65534, 65534)
# The hinted scripts import at top level what the zygote then preloads (one module each).
for name, mod in (("runner.py", "csv"), ("check.py", "fractions")):
    with open(os.path.join(opt, name), "w") as f:
        f.write("import %s\n%s" % (mod, PROBE))
    os.chmod(os.path.join(opt, name), 0o644)
os.chmod(opt, 0o755)
FORMS = (("execute", [PY, "-u", "main.py", "a1"]),
         ("runner", [PY, "-S", "-B", "/opt/sbxt/runner.py"]),
         ("checker", [PY, "-S", "-B", "/opt/sbxt/check.py", "main.py", "x"]))
brokers = Brokers(d, UID, "zygformstest")
stop = brokers.stop


def start(env_extra):
    env = dict(os.environ, SBX_TEMPLATE_MAX_AGE_S="3600")
    env.pop("SBX_ZYGOTE", None)
    env.update(env_extra)
    return brokers.start(env, ["--bind-ro", opt + ":/opt/sbxt"])


def run(sock, argv):
    return run_json(sock, work, argv)


def memory_kb(pid):
    """Rss and Pss (kB): a zygote shares its pages with the prepared sandbox it forked."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            m = {ln.split()[0]: int(ln.split()[1]) for ln in f if ln.split()[0] in
                 ("Rss:", "Pss:")}
        return m.get("Rss:"), m.get("Pss:")
    except OSError:
        return None


try:
    cold_sock = start({"SBX_WARM": "0"})
    cold = {name: run(cold_sock, argv) for name, argv in FORMS}
    stop(brokers.procs[0])
    ok(all(c.get("zygote") is False and "flags" in c for c in cold.values()),
       "the cold reference runs (SBX_WARM=0) answer, none from a zygote", cold)

    sock = start({})
    # Round one starts the zygotes: -u at the execute form, -S -B at the runner's hint, again
    # once when the checker's hint joins its set. Round two must already start nothing.
    for _ in range(2):
        for name, argv in FORMS:
            run(sock, argv)
    z0 = zygotes(UID + 4)
    got = {name: [] for name, _ in FORMS}
    for _ in range(4):
        for name, argv in FORMS:
            got[name].append(run(sock, argv))
    z1 = zygotes(UID + 4)
    ok(len(z0) == 2 and z1 == z0, "alternating execute, runner and checker runs keep the slot's "
       "two zygotes (one per option set): no restart", (z0, z1))
    ok(all(r.get("zygote") is True for rs in got.values() for r in rs),
       "every alternating run is forked from a zygote",
       {n: [r.get("zygote", r) for r in rs] for n, rs in got.items()})
    keys = ("flags", "path", "argv", "orig_argv", "site", "builtins", "write_through",
            "bytecode", "file", "name")
    for name, _ in FORMS:
        bad = [(k, r.get(k), cold[name].get(k)) for r in got[name] for k in keys
               if r.get(k) != cold[name].get(k)]
        ok(not bad, "%s form: sys.flags, sys.path, sys.argv, sys.orig_argv, site, builtins and "
           "stdio are exactly the cold start's" % name, bad[:4])
    ok(all(r.get("preloaded") == ["csv", "fractions"] for r in got["runner"]),
       "the -S -B zygote preloads both hints (the runner's and the checker's imports)",
       [r.get("preloaded") for r in got["runner"]])
    ok(all(r.get("preloaded") == [] for r in got["execute"]),
       "the -u zygote preloads neither (its runs had no hint)",
       [r.get("preloaded") for r in got["execute"]])
    print("# zygotes' (Rss, Pss) in kB: %s" % [memory_kb(p) for p in z1])
    stop(brokers.procs[1])
    end = time.monotonic() + 30  # no speed assumed: the kernel's parent-death signals
    while time.monotonic() < end and any(u == UID + 4 for c, pp, u in procs().values()):
        time.sleep(0.1)
    left = [p for p, (c, pp, u) in procs().items() if u == UID + 4]
    ok(left == [], "a stopped broker leaves neither zygote nor anything they forked", left)
finally:
    brokers.stop_all()
    shutil.rmtree(d, ignore_errors=True)
done()
