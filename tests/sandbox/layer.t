#!/usr/bin/python3
"""layer.t: the read-only layer of a request (sbx_request.layer_fd, the CLI's --layer), the
mechanism of stateless "packages". Bound at /opt/sbx-packages: importable, the host's very
inodes, read-only, nosuid, nodev (create, mkdir, unlink, chmod all fail with EROFS), the host's
directory unchanged; without one the mount point is empty; a layer that cannot be mounted (not a
directory) fails the run as internal_error, never a run without it."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sbxtest as S  # noqa: E402
from tap import ok  # noqa: E402
from layerprobe import PROBE, fill  # noqa: E402

S.start()
layer = S.tmpdir(0o755, "sbxt-layer-", owner=None)
ino = fill(layer)

r = S.py(PROBE, extra=["--layer", layer], env=["PYTHONPATH=/opt/sbx-packages"])
S.ran(r, "a run with a layer")
d = S.last_json(r) or {}
ok(d.get("x") == 5, "its modules import from /opt/sbx-packages", S.show(r))
ok(d.get("ino") == ino, "... the host's own file (same inode), not a copy", S.show(r))
ok(all(d.get(k) == "EROFS" for k in ("create", "mkdir", "unlink", "chmod")),
   "create, mkdir, unlink and chmod in the layer fail with EROFS", json.dumps(d))
ok(d.get("append") in ("EROFS", "EACCES"), "... and an existing file cannot be opened for writing",
   json.dumps(d))
ok({"ro", "nosuid", "nodev"} <= set(d.get("opts") or []), "the mount is ro, nosuid, nodev",
   json.dumps(d))
ok(sorted(os.listdir(layer)) == ["layermod.py"] and open(os.path.join(layer, "layermod.py")).read()
   == "X = 5\n", "the host's directory is unchanged")

r = S.py("import os; print(os.listdir('/opt/sbx-packages'))")
ok(S.happened(r) and r.get("stdout", "").strip() == "[]",
   "without a layer /opt/sbx-packages is an empty directory", S.show(r))

# The zygote (SBX_ZYGOTE=1) prepares sandboxes whose init mounts no layer: a layer job must get
# a sandbox that does (child.c's), never one without its layer.
zenv = dict(os.environ, SBX_ZYGOTE="1")
r = S.py(PROBE, extra=["--layer", layer], env=["PYTHONPATH=/opt/sbx-packages"], host_env=zenv)
d = S.last_json(r) or {}
ok(d.get("x") == 5 and d.get("ino") == ino and d.get("create") == "EROFS",
   "with the zygote on, a layer job still runs with its read-only layer", S.show(r))

notdir = os.path.join(layer, "layermod.py")
r = S.py("print('ran')", extra=["--layer", notdir])
ok(r.get("status") == "internal_error" and "ran" not in (r.get("stdout") or ""),
   "a layer that is not a directory: internal_error, the program never runs", S.show(r))
ok("layer" in (r.get("message") or r.get("_raw", b"").decode("utf-8", "replace")),
   "... the message names the layer", S.show(r))
S.finish()
