#!/usr/bin/python3
"""filesystem.t: host data and the file system view (SANDBOX.md checklist 13-17). Secrets planted
on the host (world-readable, so only the sandbox's view can hide them) must be unreachable; writes
outside /work and /tmp fail and create nothing on the host; links, FIFOs and devices the program
leaves in /work never make host-side code touch anything outside; setuid and file capabilities
give nothing; /proc, /sys and /dev expose nothing secret and accept no writes."""
import json
import os
import secrets
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
import probes  # noqa: E402
from tap import ok, diag  # noqa: E402

S.start(probes={"whoami": probes.WHOAMI})
SECRET = "sbxt-secret-" + secrets.token_hex(8)

# ---------------------------------------------------------------- 13: host data
planted = []
sentinel_dir = S.tmpdir(0o755, "sbxt-sentinel-", owner=None)
for d in ("/root", "/tmp", "/var/tmp", "/home", "/opt", "/srv", "/run", "/var/lib", "/etc",
          sentinel_dir):
    if os.path.isdir(d):
        p = os.path.join(d, SECRET)
        with open(p, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(p, 0o644)
        planted.append(p)
PROBE_PY = r"""
import errno, json, os, sys
secret = sys.argv[1]
res = {}
for p in json.loads(sys.argv[2]):
    try:
        if os.path.isdir(p):
            res[p] = 'DIR:' + ','.join(sorted(os.listdir(p)))
        else:
            with open(p, 'rb') as f:
                res[p] = 'READ:' + f.read(4096).decode('utf-8', 'replace')
    except OSError as e:
        res[p] = errno.errorcode.get(e.errno, str(e.errno))
# Every readable file the program can see (except /proc, /sys, /usr), searched for the secret.
hits = []
# (bin, lib*, sbin are links into /usr: the host's own files)
for top in [d for d in os.listdir('/') if d in ('etc', 'work', 'tmp', 'opt', 'var', 'home', 'root',
                                                 'run', 'srv', 'mnt', 'media')]:
    for root, dirs, files in os.walk('/' + top):
        for f in files:
            try:
                with open(os.path.join(root, f), 'rb') as fh:
                    if secret.encode() in fh.read(1 << 20):
                        hits.append(os.path.join(root, f))
            except OSError:
                pass
res['_hits'] = hits
res['_root'] = sorted(os.listdir('/'))
print(json.dumps(res))
"""
looks = planted + ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/root", "/home",
                   "/work/main", "/work/main/state/tokens.conf", "/work/shared", "/run/sbx-cli",
                   "/run/postgresql", "/var/lib/postgresql", "/run/dbus/system_bus_socket",
                   "/tmp/team", "/var/tmp", sentinel_dir, "/proc/1/root/etc/shadow",
                   "/proc/1/cwd", "/sys/fs/cgroup",
                   # this checkout and its `make run` state, wherever it is cloned
                   S.TOP, os.path.join(S.TOP, "state", "tokens.conf")]
try:
    r = S.py(PROBE_PY, SECRET, json.dumps(looks), wall_ms=20000)
finally:
    for p in planted:
        os.unlink(p)
j = S.last_json(r) or {}
leaks = {p: v for p, v in j.items() if not p.startswith("_") and
         (SECRET in v or v.startswith("READ:") or (v.startswith("DIR:") and v != "DIR:"))}
ok(j and not leaks, "host secrets (/etc/shadow, /root, /home, the repo and its state/tokens, /run, "
   "/var, world-readable planted files) are absent, unreadable or empty", f"{leaks}\n{S.show(r)}")
diag("outcomes: " + ", ".join(f"{p}={v[:20]}" for p, v in j.items() if not p.startswith("_")))
ok(j and not j.get("_hits"), "a walk of every readable file finds no planted secret",
   j.get("_hits"))
allowed_top = {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc", "sbin",
               "tmp", "usr", "work"}
ok(j and set(j.get("_root", ["?"])) <= allowed_top, "the root holds only the sandbox's own entries",
   j.get("_root"))

# ---------------------------------------------------------------- 14: writes outside /work, /tmp
name = "sbxt-w-" + secrets.token_hex(4)
targets = ["/" + name, "/usr/" + name, "/usr/bin/" + name, "/etc/" + name, "/opt/probe/" + name,
           "/dev/" + name, "/proc/" + name, "/lib/" + name, "/bin/" + name, "/var/" + name,
           "/home/" + name, "/root/" + name, "/etc/passwd", "/usr/bin/python3", "/dev/null/x"]
WRITE_PY = r"""
import errno, json, os, sys
res = {}
for p in json.loads(sys.argv[1]):
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b'x')
        os.close(fd)
        res[p] = 'ok'
    except OSError as e:
        res[p] = errno.errorcode.get(e.errno, str(e.errno))
for what, fn in (('chmod', lambda: os.chmod('/usr/bin/python3', 0o777)),
                 ('mkdir', lambda: os.mkdir('/usr/sbxt-dir')),
                 ('rename', lambda: os.rename('/etc/hostname', '/etc/hostname2')),
                 ('unlink', lambda: os.unlink('/etc/passwd')),
                 ('utime', lambda: os.utime('/usr/bin/python3')),
                 ('symlink', lambda: os.symlink('/work', '/usr/sbxt-link'))):
    try:
        fn()
        res[what] = 'ok'
    except OSError as e:
        res[what] = errno.errorcode.get(e.errno, str(e.errno))
for p in ('/work/ok', '/tmp/ok', '/dev/shm/ok'):
    with open(p, 'w') as f:
        f.write('fine')
    res[p] = 'ok'
print(json.dumps(res))
"""
host_python = os.stat("/usr/bin/python3")
r = S.py(WRITE_PY, json.dumps(targets), workdir=S.tmpdir())
j = S.last_json(r) or {}
bad = {p: v for p, v in j.items() if p not in ("/work/ok", "/tmp/ok", "/dev/shm/ok")
       and v not in ("EROFS", "EACCES", "EPERM", "ENOENT", "ENOTDIR")}
ok(j and not bad and all(j.get(p) == "ok" for p in ("/work/ok", "/tmp/ok", "/dev/shm/ok")),
   "writes, chmod, mkdir, rename, unlink, utime outside /work and /tmp fail (EROFS/EACCES/...); "
   "/work, /tmp and /dev/shm are writable", f"bad {bad}\n{S.show(r)}")
diag("write outcomes: " + ", ".join(f"{p}={v}" for p, v in j.items()))
created = [t for t in targets[:12] if os.path.lexists(t)] + \
    [p for p in ("/usr/sbxt-dir", "/usr/sbxt-link") if os.path.lexists(p)]
after = os.stat("/usr/bin/python3")
ok(not created and (after.st_mode, after.st_mtime_ns) == (host_python.st_mode, host_python.st_mtime_ns),
   "nothing was created or changed on the host", created)
r = S.sh("echo x > /usr/evil; echo a=$?; echo x >> /etc/passwd; echo b=$?; touch /evil; echo c=$?",
         wall_ms=5000)
out = r.get("stdout") or ""
ok("a=0" not in out and "b=0" not in out and "c=0" not in out and out.count("=") == 3
   and not os.path.exists("/usr/evil") and not os.path.exists("/evil"),
   "shell: writes to /usr, /etc/passwd and / fail", S.show(r))

# ---------------------------------------------------------------- 15: links, FIFOs, devices
keep = os.path.join(sentinel_dir, "keep.txt")
with open(keep, "w") as f:
    f.write("keep\n")
os.chmod(keep, 0o600)
shadow_before = os.stat("/etc/shadow")
keep_before = os.stat(keep)
LINKS_PY = r"""
import errno, json, os, sys
sentinel = sys.argv[1]
res = {}
def attempt(name, fn):
    try:
        fn()
        res[name] = 'ok'
    except OSError as e:
        res[name] = errno.errorcode.get(e.errno, str(e.errno))
os.chdir('/work')
attempt('symlink-shadow', lambda: os.symlink('/etc/shadow', 'l-shadow'))
attempt('symlink-sentinel', lambda: os.symlink(sentinel + '/keep.txt', 'l-keep'))
attempt('symlink-sentinel-dir', lambda: os.symlink(sentinel, 'l-dir'))
attempt('symlink-root', lambda: os.symlink('/', 'l-root'))
attempt('symlink-up', lambda: os.symlink('../../../../../../', 'l-up'))
attempt('hardlink-python', lambda: os.link('/usr/bin/python3', 'h-python'))
attempt('hardlink-passwd', lambda: os.link('/etc/passwd', 'h-passwd'))
attempt('fifo', lambda: os.mkfifo('fifo'))
attempt('mknod-chr', lambda: os.mknod('chr', 0o666 | 0o020000, os.makedev(1, 1)))
attempt('mknod-blk', lambda: os.mknod('blk', 0o666 | 0o060000, os.makedev(254, 0)))
attempt('socket', lambda: __import__('socket').socket(1).bind('/work/sock'))
for l in ('l-shadow', 'l-keep', 'l-dir/keep.txt', 'l-up' + sentinel + '/keep.txt'):
    attempt('read ' + l, lambda: open(l).read())
attempt('write l-keep', lambda: open('l-keep', 'w').write('changed'))
res['ls l-root'] = ','.join(sorted(os.listdir('l-root')))
print(json.dumps(res))
"""
wd = S.tmpdir()
r = S.py(LINKS_PY, sentinel_dir, workdir=wd)
j = S.last_json(r) or {}
diag("links: " + ", ".join(f"{k}={v}" for k, v in j.items()))
ok(j and j.get("symlink-shadow") == "ok" and j.get("fifo") == "ok",
   "the program may leave symlinks and FIFOs in /work", S.show(r))
ok(j and all(j.get(k) != "ok" for k in ("hardlink-python", "hardlink-passwd", "mknod-chr",
                                         "mknod-blk")),
   "hardlinks to files outside /work and device nodes cannot be made", j)
ok(j and all(j.get(k) != "ok" for k in ("read l-shadow", "read l-keep", "read l-dir/keep.txt",
                                         "write l-keep"))
   and "root" not in j.get("ls l-root", "").split(","),
   "inside, those links resolve in the sandbox's view, never the host's", j)
keep_after = os.stat(keep)
shadow_after = os.stat("/etc/shadow")
with open(keep) as f:
    keep_text = f.read()
ok(keep_text == "keep\n" and (keep_after.st_uid, keep_after.st_mode, keep_after.st_mtime_ns)
   == (keep_before.st_uid, keep_before.st_mode, keep_before.st_mtime_ns)
   and (shadow_after.st_uid, shadow_after.st_mode) == (shadow_before.st_uid, shadow_before.st_mode),
   "on the host, the link targets (a sentinel file, /etc/shadow) are untouched: content, owner, mode")
kinds = {n: stat.S_IFMT(os.lstat(os.path.join(wd, n)).st_mode) for n in os.listdir(wd)}
ok(kinds.get("l-shadow") == stat.S_IFLNK and kinds.get("fifo") == stat.S_IFIFO
   and all(os.lstat(os.path.join(wd, n)).st_uid == S.NOBODY for n in kinds),
   "the host's /work holds them as plain links/FIFOs owned by the directory's owner (nobody)",
   {n: oct(k) for n, k in kinds.items()})
# Same in a default (temporary) /work: the CLI's cleanup must not follow them out, nor hang on
# the FIFO.
r = S.py(LINKS_PY, sentinel_dir, wall_ms=5000, host_timeout=60)
ok(S.happened(r) and not r["_host_killed"] and os.path.exists(keep)
   and open(keep).read() == "keep\n" and os.path.exists(sentinel_dir),
   "after a run with a temporary /work full of links and a FIFO, the CLI's cleanup left the "
   "targets alone", S.show(r))
# A second run in the same /work reads through the links the first one left.
r = S.sh("cat /work/l-shadow /work/l-keep /work/l-dir/keep.txt 2>&1; cat /work/fifo & sleep 0.2; "
         "echo done", workdir=wd, wall_ms=5000)
ok(r.get("status") == "ok" and "keep\n" not in (r.get("stdout") or "") and "root:" not in
   (r.get("stdout") or ""), "a later run over the same links sees nothing of the host", S.show(r))

# A caller handing a later run a sub-directory of an earlier run's /work must not be led by a
# symlink that run left there: sbx --workdir WD/l-dir must not mount the link's host target.
victim = S.tmpdir(prefix="sbxt-victim-")
with open(os.path.join(victim, "victim.txt"), "w") as f:
    f.write("victim\n")
os.symlink(victim, os.path.join(wd, "l-victim"))  # what a run could leave: a link to a host dir
os.lchown(os.path.join(wd, "l-victim"), S.NOBODY, S.NOBODY)
r = S.sh("ls /work; echo pwned > /work/new.txt", workdir=os.path.join(wd, "l-victim"))
with open(os.path.join(victim, "victim.txt")) as f:
    victim_text = f.read()
ok(sorted(os.listdir(victim)) == ["victim.txt"] and victim_text == "victim\n"
   and "victim.txt" not in (r.get("stdout") or ""),
   "--workdir naming a symlink (as a run can leave in /work) is not followed to the host "
   "directory it points at", f"victim dir now {os.listdir(victim)}; {S.show(r)}")

# ---------------------------------------------------------------- 16: setuid and file caps
wd = S.tmpdir()
who = S.probe_host("whoami")
for fname, uid, mode in (("suid-root", 0, 0o4755), ("sgid-root", 0, 0o2755),
                         ("suid-nobody", S.NOBODY, 0o4755), ("caps", S.NOBODY, 0o755)):
    p = os.path.join(wd, fname)
    shutil.copy(who, p)
    os.chown(p, uid, uid)
    os.chmod(p, mode)
probe_suid = S.probe_host("whoami-suid")
shutil.copy(who, probe_suid)
os.chmod(probe_suid, 0o4755)
setcap = subprocess.run(["/usr/sbin/setcap", "cap_dac_read_search,cap_setuid,cap_sys_admin+ep",
                         os.path.join(wd, "caps")], capture_output=True, text=True)
ok(setcap.returncode == 0, "setcap on a copy of the probe works on the host", setcap.stderr)
for fname in ("/work/suid-root", "/work/sgid-root", "/work/suid-nobody", "/work/caps",
              S.probe("whoami-suid")):
    r = S.run([fname], workdir=wd)
    j = S.last_json(r) or {}
    ok(j.get("euid") == 1000 and j.get("egid") == 1000
       and "".join(j.get("caps", "?").split()) == "0" * 32 and j.get("shadow") != 0,
       f"{fname}: no privilege gained (euid/egid 1000, no capabilities)", S.show(r))

# Nor may a run leave setuid/setgid files or file capabilities behind on the host: they would
# run as the work directory's owner (for the service: its files uid/gid) for any local user.
MAKE_SUID_PY = r"""
import ctypes, json, os, struct
libc = ctypes.CDLL(None, use_errno=True)
res = {}
def attempt(name, fn):
    try:
        fn()
        res[name] = 'ok'
    except OSError as e:
        res[name] = e.strerror
def raw(nr, *args):
    if libc.syscall(nr, *args) < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
for n in 'bcdef':
    open('/work/' + n, 'w').close()
attempt('open O_CREAT 06755', lambda: os.close(os.open('/work/a', os.O_CREAT | os.O_WRONLY, 0o6755)))
attempt('chmod 06755', lambda: os.chmod('/work/b', 0o6755))
attempt('fchmod 06755', lambda: os.fchmod(os.open('/work/c', os.O_RDONLY), 0o6755))
attempt('fchmodat2 06755', lambda: raw(452, -100, b'/work/d', 0o6755, 0))
attempt('fchmodat2 0640', lambda: raw(452, -100, b'/work/d', 0o640, 0))
attempt('mknod S_IFREG 06755', lambda: os.mknod('/work/g', 0o100000 | 0o6755))
cap = struct.pack('<5I', 0x02000001, 1 << 21, 0, 0, 0)   # CAP_SYS_ADMIN, effective
attempt('setxattr security.capability', lambda: os.setxattr('/work/e', 'security.capability', cap))
attempt('setxattr trusted', lambda: os.setxattr('/work/f', 'trusted.sbxt', b'1'))
def with_content(path, how):
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o6755)
    if how == 'write':
        os.write(fd, b'#!/bin/sh\nid\n')
    elif how == 'copy_file_range':
        os.copy_file_range(os.open('/usr/bin/id', os.O_RDONLY), fd, 1 << 20)
    else:
        os.posix_fallocate(fd, 0, 4096)
        import mmap
        m = mmap.mmap(fd, 4096)
        m[:4] = b'\x7fELF'
        m.close()
    os.close(fd)
for how in ('write', 'copy_file_range', 'mmap'):
    attempt('open 06755 + ' + how, lambda: with_content('/work/full-' + how, how))
print(json.dumps(res))
"""
wd = S.tmpdir()
r = S.py(MAKE_SUID_PY, workdir=wd)
diag(f"set-id attempts: {S.last_json(r)}")
setid = {}
for n in os.listdir(wd):
    st = os.lstat(os.path.join(wd, n))
    if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        setid[n] = oct(st.st_mode)
    for attr in ("security.capability", "trusted.sbxt"):
        try:
            os.getxattr(os.path.join(wd, n), attr, follow_symlinks=False)
            setid[n + " " + attr] = "set"
        except OSError:
            pass
nonempty = {n: m for n, m in setid.items() if " " in n or os.path.getsize(os.path.join(wd, n))}
ok(S.happened(r) and not nonempty, "no non-empty setuid/setgid file and no file capability or "
   "trusted xattr left on the host (writes, copy_file_range, mmap after an O_CREAT 06755)",
   f"{nonempty}\n{S.show(r)}")
# The kernel clears the bits on the first write, so what remains is empty files: low impact, but
# the sandbox means to forbid set-id modes (its fchmodat rule), and open()/mknod() modes bypass it.
ok(S.happened(r) and not setid, "no setuid/setgid file at all (chmod, fchmod, fchmodat2, "
   "open(O_CREAT) and mknod modes)", f"{setid}\n{S.show(r)}")
# Refused as the kernel would refuse it (EPERM), not as a missing call (ENOSYS). fchmodat2
# (Linux 6.6, used by glibc 2.39 and later) is allowed like fchmodat: a plain mode works.
got = S.last_json(r) or {}
eperm = {k: v for k, v in got.items() if k in ('open O_CREAT 06755', 'chmod 06755', 'fchmod 06755',
                                               'fchmodat2 06755', 'mknod S_IFREG 06755')}
ok(len(eperm) == 5 and set(eperm.values()) == {'Operation not permitted'},
   "a set-id mode in open(O_CREAT), chmod, fchmod, fchmodat2 and mknod fails with EPERM", got)
ok(got.get('fchmodat2 0640') == 'ok' and oct(os.stat(os.path.join(wd, 'd')).st_mode & 0o7777)
   == '0o640', "fchmodat2 with a plain mode works (Linux 6.6's chmod call)", got)

# ---------------------------------------------------------------- 17: /proc, /sys, /dev
PROC_PY = r"""
import errno, json, os, stat
res = {}
def attempt(name, fn):
    try:
        v = fn()
        res[name] = 'ok' if v is None else v
    except OSError as e:
        res[name] = errno.errorcode.get(e.errno, str(e.errno))
def write(p, data):
    with open(p, 'w') as f:
        f.write(data)
attempt('environ1', lambda: open('/proc/1/environ', 'rb').read().decode('latin-1'))
envs = ''
for p in os.listdir('/proc'):
    for f in ('environ', 'cmdline'):
        try:
            envs += open('/proc/%s/%s' % (p, f), 'rb').read().decode('latin-1')
        except OSError:
            pass
res['all_environ'] = envs
res['mountinfo'] = open('/proc/self/mountinfo').read()
for p, d in (('/proc/sys/kernel/hostname', 'evil'), ('/proc/sys/vm/drop_caches', '3'),
             ('/proc/sysrq-trigger', 'h'), ('/proc/sys/kernel/core_pattern', '|/tmp/x'),
             ('/proc/self/oom_score_adj', '-1000'), ('/proc/self/setgroups', 'allow')):
    attempt('write ' + p, lambda: write(p, d))
for p in ('/proc/kcore', '/proc/kallsyms', '/proc/kmsg', '/proc/keys', '/proc/timer_list',
          '/proc/sched_debug', '/proc/modules', '/proc/config.gz', '/proc/cmdline'):
    attempt('read ' + p, lambda: open(p, 'rb').read(64).decode('latin-1'))
attempt('ls /sys', lambda: ','.join(os.listdir('/sys')))
devs = {}
for root, dirs, files in os.walk('/dev'):
    for n in dirs + files:
        p = os.path.join(root, n)
        st = os.lstat(p)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            devs[p] = ['b' if stat.S_ISBLK(st.st_mode) else 'c', os.major(st.st_rdev),
                       os.minor(st.st_rdev)]
res['devs'] = devs
for p in ('/dev/mem', '/dev/kmem', '/dev/port', '/dev/kmsg', '/dev/vda', '/dev/kvm', '/dev/fuse',
          '/dev/vsock', '/dev/userfaultfd', '/dev/loop-control', '/dev/console', '/dev/tty0',
          '/dev/btrfs-control', '/dev/cpu'):
    attempt('open ' + p, lambda: open(p, 'rb').read(1).decode('latin-1'))
print(json.dumps(res))
"""
host_env = dict(os.environ, SBXT_SECRET=SECRET, LD_PRELOAD="/nonexistent-" + SECRET)
wd = S.tmpdir()
r = S.py(PROC_PY, host_env=host_env, workdir=wd)
j = S.last_json(r) or {}
ok(j and j.get("environ1") in ("", "EACCES", "ENOENT", "EPERM", "ESRCH"),
   "/proc/1/environ is empty or unreadable", repr(j.get("environ1"))[:300])
ok(j and SECRET not in j.get("all_environ", SECRET),
   "no /proc/*/environ or cmdline holds the CLI's environment (a secret set in it)", S.show(r))
mi = j.get("mountinfo", "")
ok(j and SECRET not in mi and "tokens" not in mi and " /root" not in mi and " /home" not in mi
   and "/work/main" not in mi, "/proc/self/mountinfo names no secret host paths (tokens, /root, "
   "/home, the repo)", mi)
if wd in mi:
    diag(f"note: mountinfo shows the host path of --workdir ({wd}); for the service that is "
         f"the session's path under the state dir")
mounts = {line.split()[4]: line.split()[5].split(",") for line in mi.splitlines() if len(line.split()) > 5}
need = {"/usr": {"ro", "nosuid", "nodev"}, "/work": {"nosuid", "nodev"}, "/tmp": {"nosuid", "nodev"},
        "/proc": {"nosuid", "nodev"}, S.PROBE_DIR_INSIDE: {"ro", "nosuid", "nodev"}}
missing = {m: sorted(f - set(mounts.get(m, []))) for m, f in need.items() if f - set(mounts.get(m, []))}
ok(j and not missing, "mount flags: /usr and binds ro,nosuid,nodev; /work, /tmp, /proc nosuid,nodev",
   missing)
writes = {k: v for k, v in j.items() if k.startswith("write ")}
ok(j and writes and all(v != "ok" for v in writes.values()),
   "writes to /proc/sys/*, /proc/sysrq-trigger, core_pattern, oom_score_adj, setgroups fail", writes)
reads = {k: v for k, v in j.items() if k.startswith("read ")}
ok(j and reads and all(v in ("ENOENT", "EACCES", "EPERM") for v in reads.values()),
   "/proc/kcore, kallsyms, kmsg, keys, timer_list, modules, cmdline...: absent or unreadable", reads)
ok(j and j.get("ls /sys") in ("ENOENT", "", "EACCES"), "/sys is absent (or empty)", j.get("ls /sys"))
allowed = {("c", 1, 3), ("c", 1, 5), ("c", 1, 7), ("c", 1, 8), ("c", 1, 9), ("c", 5, 0), ("c", 5, 2)}
extra = {p: d for p, d in j.get("devs", {"?": 0}).items()
         if tuple(d) not in allowed and not (d[0] == "c" and d[1] == 136)}
ok(j and not extra, "/dev holds only null, zero, full, random, urandom (and tty/pty nodes)", extra)
opens = {k: v for k, v in j.items() if k.startswith("open ")}
ok(j and opens and all(v in ("ENOENT", "EACCES", "EPERM") for v in opens.values()),
   "/dev/mem, kmem, port, kmsg, vda, kvm, fuse, vsock, userfaultfd, console...: absent", opens)

# ---------------------------------------------------------------- setup failures fail closed
r = S.run(["/usr/bin/true"], binds=["/nonexistent-sbxt:/opt/x"], host_timeout=15)
ok(r.get("_rc") == 2 and r.get("status") == "internal_error" and not r["_host_killed"],
   "--bind-ro of a missing host path: internal_error (exit 2) at once, no run, no hang",
   S.show(r))
in_tmp = subprocess.run(["mktemp", "-d", "/tmp/sbxt-bind-XXXXXX"], capture_output=True,
                        text=True).stdout.strip()
os.chmod(in_tmp, 0o755)
S._tmpdirs.append(in_tmp)
shutil.copy(S.probe_host("whoami"), in_tmp)
r = S.run(["/opt/x/whoami"], binds=[f"{in_tmp}:/opt/x"], host_timeout=15)
ok(r.get("status") == "ok" and (S.last_json(r) or {}).get("euid") == 1000,
   "--bind-ro of a host directory under /tmp works", S.show(r))

S.finish()
