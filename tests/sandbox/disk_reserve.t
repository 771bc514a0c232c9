#!/usr/bin/python3
"""disk_reserve.t: runs of all sessions together cannot take a btrfs sessions volume below its
reserve (issue 13). With a reserve set (--disk-reserve-mb, as sbxd takes it), each subvolume the
sandbox limits (--quota-mb, as the broker does for every session) also joins one level-1 qgroup
limited to the volume's size less the reserve: on a 1 GiB volume, a first run writes 300 MiB within its own 400 MiB quota, and a second
run in another subvolume, also within its own quota, gets EDQUOT once both together reach 512 MiB."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
from tap import ok, diag, skip_all  # noqa: E402

if not shutil.which("mkfs.btrfs"):
    skip_all("btrfs-progs is not installed (make deps)")
S.start()

WRITE = r"""
import errno, os
n = 0
chunk = b"x" * (1 << 20)
try:
    with open("/work/fill", "wb") as f:
        while n < (300 << 20):
            f.write(chunk)
            f.flush()
            n += len(chunk)
    print("wrote", n, "ok")
except OSError as e:
    print("wrote", n, errno.errorcode.get(e.errno, e.errno))
"""

top = S.tmpdir(0o755, "sbxt-vol-", owner=None)
img, mnt = os.path.join(top, "vol.img"), os.path.join(top, "mnt")
os.mkdir(mnt)


def sh(*argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


p = sh("truncate", "-s", "1G", img)
p = p.returncode == 0 and sh("mkfs.btrfs", "-q", img)
if not p or p.returncode != 0 or sh("mount", "-o", "loop,user_subvol_rm_allowed", img,
                                      mnt).returncode != 0:
    skip_all("cannot make and loop-mount a btrfs image here")
try:
    q = sh("btrfs", "quota", "enable", mnt)
    for name in ("a", "b"):
        sh("btrfs", "subvolume", "create", os.path.join(mnt, name))
        os.chown(os.path.join(mnt, name), S.NOBODY, S.NOBODY)
    res = {}
    for name in ("a", "b"):
        r = S.py(WRITE, workdir=os.path.join(mnt, name), extra=["--quota-mb", "400", "--disk-reserve-mb", "512"],
                 file_size_mb=1000, wall_ms=120000, cpu_ms=60000, host_timeout=240)
        res[name] = (r.get("stdout") or "").split()
        diag(f"run in {name}: {' '.join(res[name])}")
        ok(S.happened(r) and len(res[name]) == 3, f"a run writes in subvolume {name}", S.show(r))
    a, b = res["a"], res["b"]
    ok(a[-1:] == ["ok"] and a[1:2] == [str(300 << 20)],
       "the first run writes 300 MiB within its own 400 MiB quota", a)
    ok(b[-1:] == ["EDQUOT"] and len(b) == 3 and int(a[1]) + int(b[1]) <= (512 << 20),
       "the second, within its own quota too, gets EDQUOT once both reach the volume's "
       "size less the 512 MiB reserve", b)
    show = sh("btrfs", "qgroup", "show", "-pcre", mnt)
    diag(show.stdout)
finally:
    sh("umount", mnt)
S.finish()
