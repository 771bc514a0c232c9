#!/usr/bin/python3
"""kernel.t: the kernel surface a run can reach (SANDBOX.md checklist 18-21, part of 25): ptrace,
process_vm_*, namespaces, mount API, the dangerous syscall set, 32-bit and x32 syscalls from
64-bit code, credentials and capabilities. Every attempt runs in its own child (probes.SYSPROBE),
so a seccomp kill ends only that attempt. The same probe run bare as an unprivileged host user
succeeds at ptrace, process_vm_*, unshare(CLONE_NEWUSER), clone3, perf_event_open, userfaultfd,
io_uring_setup, keyctl and int 0x80: the sandbox is what refuses them here."""
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
import probes  # noqa: E402
from tap import ok, is_, diag, skip  # noqa: E402

REFUSED = {"EPERM", "EACCES", "ENOSYS", "SIGSYS"}

S.start(probes={"sysprobe": probes.SYSPROBE})


def attempts(names, **kw):
    """Run the named attempts in one sandbox; return ({name: outcome}, result)."""
    r = S.run([S.probe("sysprobe")] + names, **kw)
    got = {}
    for line in (r.get("stdout") or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            got[parts[0]] = parts[1]
    return got, r


def check(group, names, allowed, desc):
    got, r = attempts(names)
    bad = {n: got.get(n, "missing") for n in names if got.get(n, "missing") not in allowed}
    ok(S.happened(r) and not bad, desc,
       f"not refused: {bad}\nall: {got}\n{S.show(r) if bad else ''}")
    diag(f"{group}: " + " ".join(f"{n}={got.get(n)}" for n in names))
    return got


# Control: bare on the host, as an unprivileged user, these attempts succeed, so the probe does
# detect a hole when there is one.
CONTROL = ["ptrace_attach_parent", "ptrace_traceme", "process_vm_readv", "unshare_user", "clone3",
           "perf_event_open", "userfaultfd", "io_uring_setup", "keyctl", "int80_getpid"]
bare = subprocess.run([S.probe_host("sysprobe")] + CONTROL, user=S.NOBODY, group=S.NOBODY,
                      capture_output=True, text=True, timeout=30)
bare_got = dict(line.split() for line in bare.stdout.splitlines() if len(line.split()) == 2)
# A kernel without the i386 ABI faults on int 0x80 (SIGSEGV) before any filter: nothing to refuse.
I386 = probes.host_has_i386_abi()
if not I386:
    diag("this kernel has no i386 ABI (int 0x80 faults bare): the int 0x80 checks are moot here")
    CONTROL.remove("int80_getpid")
ok(all(bare_got.get(n) == "ok" for n in CONTROL),
   "control: bare as an unprivileged host user the probe's attempts succeed", bare_got)

# 18: ptrace and process_vm_* (the probe's parent is a process of the same uid: without the
# sandbox, attaching to it and reading its memory works).
check("ptrace", ["ptrace_attach_parent", "ptrace_attach_init", "ptrace_traceme",
                 "process_vm_readv", "process_vm_writev"],
      {"EPERM", "SIGSYS"}, "ptrace (parent, PID 1, TRACEME) and process_vm_readv/writev: EPERM or killed")

# 19: namespaces, setns, mount API, pivot_root, chroot; clone3 exactly ENOSYS so that libc falls
# back to clone (which then must refuse namespace flags).
check("namespaces", ["unshare_user", "unshare_mount", "unshare_net", "unshare_pid", "unshare_ipc",
                     "unshare_uts", "unshare_cgroup", "unshare_time", "clone_newuser", "clone_newns",
                     "setns_net"],
      REFUSED, "unshare (every namespace), clone with namespace flags, setns: refused")
check("mount", ["mount_tmpfs", "remount_usr_rw", "umount_proc", "fsopen", "open_tree",
                "pivot_root", "chroot"],
      REFUSED, "mount, remount /usr rw, umount /proc, fsopen, open_tree, pivot_root, chroot: refused")
got = check("clone3", ["clone3"], {"ENOSYS"}, "clone3: ENOSYS (so libc falls back to clone)")

# 20: the dangerous set.
check("dangerous", ["bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "keyctl", "add_key",
                    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
                    "reboot", "swapon", "swapoff", "open_by_handle_at", "acct", "syslog_read",
                    "iopl", "ioperm", "fanotify_init", "mknod_mem", "mknod_disk"],
      REFUSED, "bpf, perf_event_open, userfaultfd, io_uring, keyctl/add_key, kexec, modules, reboot, "
               "swapon, open_by_handle_at, acct, syslog, iopl/ioperm, fanotify, mknod: refused or killed")
if I386:
    check("32-bit", ["int80_getpid", "int80_setuid0", "int80_unshare", "x32_getpid"],
          REFUSED, "32-bit syscalls via int 0x80 and x32 syscalls from 64-bit code: refused or killed")
    got, r = attempts(["int80_getpid"])
    ok(got.get("int80_getpid") in ("SIGSYS", "SIGKILL"), "a harmless int 0x80 getpid is killed too "
       "(the whole i386 ABI is off, not just a list)", f"got {got}")
else:
    check("32-bit", ["x32_getpid"], REFUSED, "x32 syscalls from 64-bit code: refused or killed")
    skip("this kernel has no i386 ABI: int 0x80 faults with SIGSEGV bare on the host, before any "
         "syscall filter, so the sandbox's i386 filter cannot be exercised",
         "32-bit syscalls via int 0x80 are refused or killed, a harmless getpid too")

# seccomp sees 64-bit arguments, the kernel often uses only the low 32 bits (int, umode_t,
# lower_32_bits(clone flags)): the same calls with high bits set must not slip through.
check("high bits", ["clone_newuser_high", "unshare_user_high", "socket_inet", "socket_inet_high",
                    "socket_netlink_high", "fchmodat_suid_high"],
      REFUSED | {"EAFNOSUPPORT"}, "namespace flags, socket families and set-id modes with the high "
      "32 bits of the argument set: still refused")

# 21: credentials.
# EINVAL is the kernel's own refusal: uid/gid 0 is not mapped in the run's user namespace.
check("credentials", ["setuid0", "setgid0", "setresuid0", "setgroups"],
      REFUSED | {"EINVAL"}, "setuid(0), setgid(0), setresuid(0,0,0), setgroups: refused")

# 25 (kernel part): hostname and clock are refused, or local to the run.
host_name = socket.gethostname()
got = check("clock", ["clock_settime", "settimeofday", "adjtimex_set"], REFUSED,
            "clock_settime, settimeofday, adjtimex(ADJ_FREQUENCY): refused")
got, r = attempts(["sethostname", "setdomainname"])
now_name = socket.gethostname()
if now_name != host_name:
    socket.sethostname(host_name)
ok(all(got.get(n) in REFUSED or got.get(n) == "ok" for n in ("sethostname", "setdomainname"))
   and now_name == host_name,
   "sethostname/setdomainname: refused or local (the host's name is unchanged)",
   f"got {got}, host name before {host_name!r} after {now_name!r}")

STATUS = r"""
import json, os
st = {}
for line in open('/proc/self/status'):
    k, _, v = line.partition(':')
    st[k] = v.strip()
maps = {n: open('/proc/self/' + n).read().split() for n in ('uid_map', 'gid_map')}
try:
    os.setuid(0)
    setuid = 'ok'
except OSError as e:
    setuid = e.strerror
print(json.dumps({'st': st, 'uid': os.getuid(), 'euid': os.geteuid(), 'gid': os.getgid(),
                  'groups': os.getgroups(), 'maps': maps, 'setuid': setuid}))
"""
r = S.py(STATUS)
j = S.last_json(r) or {"st": {}, "maps": {"uid_map": [], "gid_map": []}}
st = j["st"]
for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
    is_(st.get(cap), "0000000000000000", f"/proc/self/status {cap} is 0")
is_(st.get("CapBnd"), "0000000000000000", "/proc/self/status CapBnd is 0 (bounding set cleared)")
is_(st.get("NoNewPrivs"), "1", "NoNewPrivs: 1")
is_(st.get("Seccomp"), "2", "Seccomp: 2 (filter mode)")
is_((j.get("uid"), j.get("euid"), j.get("gid")), (1000, 1000, 1000), "the program runs as uid/gid 1000")
ok(j.get("setuid") not in (None, "ok"), "os.setuid(0) from Python fails", j.get("setuid"))
um, gm = j["maps"]["uid_map"], j["maps"]["gid_map"]
ok(len(um) == 3 and um[0] == "1000" and int(um[1]) >= 200000 and um[2] == "1",
   "uid_map maps only 1000 -> one unprivileged host uid (>= 200000, never 0)", f"uid_map {um}")
ok(len(gm) == 3 and gm[0] == "1000" and int(gm[1]) >= 200000 and gm[2] == "1",
   "gid_map maps only 1000 -> one unprivileged host gid", f"gid_map {gm}")

# The same in shell, with the host's own tools.
r = S.sh("/usr/bin/unshare -r id; echo unshare=$?; /usr/bin/unshare -n true; echo unshare_n=$?; "
         "/usr/bin/mount -t tmpfs none /tmp; echo mount=$?; /usr/sbin/chroot /tmp /bin/true; "
         "echo chroot=$?; /usr/bin/nsenter -t 1 -m true; echo nsenter=$?", wall_ms=5000)
out = r.get("stdout") or ""
codes = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
# 126/127 would mean the tool is missing, which proves nothing.
ok(S.happened(r) and set(codes) == {"unshare", "unshare_n", "mount", "chroot", "nsenter"}
   and all(v not in ("0", "126", "127") for v in codes.values()),
   "shell: unshare -r, unshare -n, mount, chroot, nsenter all fail", S.show(r))

# Nothing of the supervisor leaks in through file descriptors (its control socket, cgroup files,
# the host side of the work directory): the program starts with exactly 0, 1 and 2.
FDS_PY = r"""
import json, os
fds = {}
for f in os.listdir('/proc/self/fd'):
    try:
        fds[f] = os.readlink('/proc/self/fd/' + f)
    except OSError:
        pass   # the directory fd listdir itself used
print(json.dumps(fds))
"""
r = S.py(FDS_PY)
j = S.last_json(r) or {}
ok(sorted(j) == ["0", "1", "2"] and j.get("0") == "/dev/null"
   and all(j.get(f, "").startswith("pipe:") for f in ("1", "2")),
   "the program starts with only fds 0 (/dev/null), 1 and 2 (pipes): nothing of the supervisor",
   S.show(r))

# The filter must not break ordinary work: threads (glibc falls back from clone3 to clone),
# subprocesses, compiling and running C in /work, node.
WORK = r"""
printf '%s\n' '#include <pthread.h>' '#include <stdio.h>' \
  'static void *f(void *a) { return a; }' \
  'int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); pthread_join(t, 0); puts("c-ok"); return 0; }' \
  > /work/t.c
/usr/bin/gcc -O1 -pthread -o /work/t /work/t.c && /work/t
/usr/bin/python3 -c "import threading, subprocess, concurrent.futures as c
t = threading.Thread(target=print, args=('thread-ok',)); t.start(); t.join()
print(subprocess.run(['/bin/echo', 'subprocess-ok'], capture_output=True, text=True).stdout.strip())
print(list(c.ProcessPoolExecutor(2).map(abs, [-1, -2])))"
chmod +x /work/t.c && echo chmod-ok
if [ -x /usr/bin/node ]; then /usr/bin/node -e "console.log('node-ok')"; else echo node-ok; fi
"""
r = S.bash(WORK, wall_ms=30000, cpu_ms=20000)
out = r.get("stdout") or ""
ok(r.get("status") == "ok" and all(w in out for w in ("c-ok", "thread-ok", "subprocess-ok",
                                                       "[1, 2]", "chmod-ok", "node-ok")),
   "ordinary work is not refused: gcc + run, threads, subprocess, process pool, chmod, node",
   S.show(r))

S.finish()
