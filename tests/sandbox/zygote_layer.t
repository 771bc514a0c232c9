#!/usr/bin/python3
"""zygote_layer.t: a Python run with a package layer (stateless "packages") is forked from the
slot's zygote like any other run of its form: the run's init attaches the layer at
/opt/sbx-packages as child.c's does, and the program puts PYTHONPATH on sys.path where the
interpreter would have. Before, such a run dropped the zygote's prepared sandbox and got a
child.c one built while it waited (tests/bench/packages: 3.15 x a run without packages).
Through a private one-slot broker (the zygote on by default): the run comes from the zygote,
imports from the layer, sees it read-only, nosuid, nodev and the host's very inode, and has the
sys.path of the same run started cold; the next run without a layer, from the same zygote, finds
/opt/sbx-packages empty (the layer was the run's mount namespace's only); a layer that is not a
directory is internal_error and the program never runs, and the zygote serves the next run."""
import json
import os
import random
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import ok, done  # noqa: E402

from layerprobe import PROBE, fill  # noqa: E402
from zygtest import PY, SBX, Brokers, require, scratch, zygotes  # noqa: E402
import subprocess  # noqa: E402

require()
d, work = scratch("sbx-zygote-layer-t.")
UID = 380000 + random.randrange(64) * 16 + 12
brokers = Brokers(d, UID, "zyglayertest")
layer = os.path.join(d, "layer")
os.mkdir(layer)
ino = fill(layer)


def run(sock, lay=None, code=PROBE):
    argv = [SBX, "--broker", sock, "--workdir", work]
    if lay:
        argv += ["--layer", lay, "--env", "PYTHONPATH=/opt/sbx-packages"]
    out = subprocess.run(argv + ["--", PY, "-u", "-c", code], capture_output=True, text=True,
                         timeout=120).stdout
    try:
        r = json.loads(out)
    except ValueError:
        return {"_raw": out}
    try:
        return dict(json.loads(r.get("stdout") or "null") or {}, _result=r)
    except ValueError:
        return {"_result": r}


def start(env_extra):
    env = dict(os.environ, SBX_TEMPLATE_MAX_AGE_S="3600")
    for k in ("SBX_ZYGOTE", "SBX_WARM", "SBX_ZYGOTE_SHARE"):
        env.pop(k, None)
    env.update(env_extra)
    return brokers.start(env)


try:
    sock = start({})
    run(sock)
    run(sock)  # the slot has served the form: its zygote is up, its next sandbox a fork of it
    z = zygotes(UID)
    got = run(sock, layer)
    ok(got.get("zygote") is True and zygotes(UID) == z and len(z) == 1,
       "a run with a package layer is forked from the slot's zygote", (got, z, zygotes(UID)))
    ok(got.get("x") == 5 and got.get("ino") == ino,
       "... it imports from the layer, the host's very file", got)
    ok(got.get("create") == "EROFS" and {"ro", "nosuid", "nodev"} <= set(got.get("opts") or []),
       "... which is read-only, nosuid, nodev", got)
    after = run(sock)
    ok(after.get("zygote") is True and after.get("listing") == [] and "x" not in after,
       "the next run without a layer, from the same zygote, finds /opt/sbx-packages empty",
       after)
    notdir = os.path.join(layer, "layermod.py")
    bad = run(sock, notdir, "print('ran')")
    res = bad.get("_result") or {}
    ok(res.get("status") == "internal_error" and "ran" not in (res.get("stdout") or ""),
       "a layer that is not a directory: internal_error, the program never runs", bad)
    again = run(sock, layer)
    ok(again.get("zygote") is True and again.get("x") == 5 and zygotes(UID) == z,
       "... and the same zygote serves the next layered run", (again, zygotes(UID)))
    brokers.stop(brokers.procs[0])

    sock = start({"SBX_WARM": "0"})
    cold = run(sock, layer)
    ok(cold.get("zygote") is False and cold.get("x") == 5 and cold.get("path") == got.get("path"),
       "its sys.path is that of the same run started cold (PYTHONPATH after the script's "
       "directory)", (cold.get("path"), got.get("path")))
finally:
    brokers.stop_all()
    shutil.rmtree(d, ignore_errors=True)
done()
