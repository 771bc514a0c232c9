"""layerprobe.py: what the package-layer tests share (tests/sandbox/layer.t, zygote_layer.t): a
layer directory with one module, and a probe that prints, as JSON, what a run sees of
/opt/sbx-packages (its listing, the module imported from it and its inode, whether it is writable
and its mount options) and whether the run was forked from a zygote, with its sys.path."""
import os

PROBE = r"""
import errno, json, os, sys
def t(f):
    try:
        f()
        return "done"
    except OSError as e:
        return errno.errorcode[e.errno]
r = {"zygote": "#sbx" + "-zygote" in open("/proc/self/cmdline").read(), "path": sys.path,
     "listing": sorted(os.listdir("/opt/sbx-packages"))}
try:
    import layermod
    r["x"] = layermod.X
    r["ino"] = os.stat("/opt/sbx-packages/layermod.py").st_ino
    r["create"] = t(lambda: open("/opt/sbx-packages/new.py", "w"))
    r["mkdir"] = t(lambda: os.mkdir("/opt/sbx-packages/d"))
    r["unlink"] = t(lambda: os.unlink("/opt/sbx-packages/layermod.py"))
    r["chmod"] = t(lambda: os.chmod("/opt/sbx-packages/layermod.py", 0o777))
    r["append"] = t(lambda: open("/opt/sbx-packages/layermod.py", "a"))
    m = [l.split() for l in open("/proc/self/mountinfo") if l.split()[4] == "/opt/sbx-packages"]
    r["opts"] = m[-1][5].split(",") if m else []
except ImportError as e:
    r["import"] = str(e)
print(json.dumps(r))
"""


def fill(layer):
    """Put layermod.py (X = 5) in directory layer, world-readable; the module's inode."""
    os.chmod(layer, 0o755)
    path = os.path.join(layer, "layermod.py")
    with open(path, "w") as f:
        f.write("X = 5\n")
    os.chmod(path, 0o644)
    return os.stat(path).st_ino
