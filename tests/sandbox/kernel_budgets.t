#!/usr/bin/python3
"""kernel_budgets.t: what the kernel counts per user or host-wide (issue 13). A run's user namespace
is owned by its slot's uid, not root, so what a run spends of per-user budgets (queued signals and
POSIX timers, inotify instances) is the slot's, bounded by the run's own rlimits and its namespace's
/proc/sys/user limits: while one run holds all it can get, host root and a second run still get
theirs. Host-wide pools without a per-run limit are closed (io_setup: ENOSYS), a run cannot change
its init's rlimits (prlimit on another pid: EPERM), sysinfo() (host load, RAM, process count) is
ENOSYS, and /proc/self/mountinfo shows no host path of the extra read-only trees."""
import ctypes
import os
import fcntl
import struct
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
from tap import ok, diag  # noqa: E402

BUDGET = r"""
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>
#include <linux/aio_abi.h>

static const char *err(int ok) { return ok ? "ok" : strerrorname_np(errno); }

static int timers(int max)
{
	int n = 0;
	timer_t t;
	while (n < max && timer_create(CLOCK_MONOTONIC, NULL, &t) == 0) n++;
	return n;
}

static int inotifies(int max)
{
	int n = 0;
	while (n < max && inotify_init1(IN_CLOEXEC) >= 0) n++;
	return n;
}

static int queued(int max)
{
	sigset_t s;
	union sigval v = {0};
	int n = 0;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &s, NULL);
	while (n < max && sigqueue(getpid(), SIGRTMIN, v) == 0) n++;
	return n;
}

int main(int argc, char **argv)
{
	const char *m = argv[1];
	if (!strcmp(m, "hog") || !strcmp(m, "small")) {
		int big = !strcmp(m, "hog");
		int t = timers(big ? 200000 : 20), i = inotifies(big ? 4000 : 4), q = queued(big ? 200000 : 20);
		printf("timers %d\ninotify %d\nsigqueue %d\n", t, i, q);
		fflush(stdout);
		if (big) {
			/* Hold everything until the host says go (never by time: see COMMON) */
			close(open("/work/ready", O_WRONLY | O_CREAT, 0644));
			while (access("/work/go", F_OK) != 0) usleep(20000);
		}
		return 0;
	}
	if (!strcmp(m, "io_setup")) {
		aio_context_t ctx = 0;
		printf("io_setup %s\n", err(syscall(SYS_io_setup, 1, &ctx) == 0));
		return 0;
	}
	if (!strcmp(m, "prlimit")) {
		struct rlimit r = {16, 16}, old;
		printf("prlimit_self0 %s\n", err(prlimit(0, RLIMIT_NOFILE, NULL, &old) == 0));
		printf("prlimit_init_set %s\n", err(prlimit(1, RLIMIT_NOFILE, &r, NULL) == 0));
		printf("prlimit_init_get %s\n", err(prlimit(1, RLIMIT_NOFILE, NULL, &old) == 0));
		/* 1 in the low 32 bits, something in the high ones: the kernel reads a pid_t */
		printf("prlimit_init_high %s\n",
		       err(syscall(SYS_prlimit64, 0x100000001L, RLIMIT_NOFILE, &r, NULL) == 0));
		printf("setrlimit_self %s\n", err(setrlimit(RLIMIT_NOFILE, &r) == 0));
		return 0;
	}
	if (!strcmp(m, "sysinfo")) {
		struct sysinfo si;
		printf("sysinfo %s\n", err(syscall(SYS_sysinfo, &si) == 0));
		return 0;
	}
	return 2;
}
"""

S.start(probes={"budget": BUDGET})

libc = ctypes.CDLL(None, use_errno=True)
HOST_CHECK = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
t = ctypes.c_void_p()
n = 0
while n < 50 and libc.timer_create(1, None, ctypes.byref(t)) == 0:
    n += 1
i = 0
while i < 4 and libc.inotify_init1(0) >= 0:
    i += 1
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
q = 0
while q < 50 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
    q += 1
print(n, i, q)
"""


def counts(r):
    got = {}
    for line in (r.get("stdout") or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            got[parts[0]] = parts[1]
    return got


def owner_uids(mark):
    """Owners (NS_GET_OWNER_UID) of the user namespaces of the processes whose environment holds
    mark: the run's program, found from the host."""
    owners = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if mark.encode() not in f.read():
                    continue
            fd = os.open(f"/proc/{d}/ns/user", os.O_RDONLY)
            try:
                b = bytearray(4)
                fcntl.ioctl(fd, 0xB704, b)  # NS_GET_OWNER_UID
                owners.add(struct.unpack("I", b)[0])
            finally:
                os.close(fd)
        except OSError:
            continue
    return owners


# 1. One run takes all it can of the per-user budgets and holds them.
wd = S.tmpdir()
mark = "SBXT_BUDGET=" + uuid.uuid4().hex
hog = S.Run([S.probe("budget"), "hog"], workdir=wd, env=[mark], wall_ms=120000, cpu_ms=60000,
            host_timeout=180)
deadline = time.monotonic() + 150
while not os.path.exists(os.path.join(wd, "ready")) and time.monotonic() < deadline \
        and hog.p.poll() is None:
    time.sleep(0.05)
held = os.path.exists(os.path.join(wd, "ready"))
ok(held, "a run took every POSIX timer, inotify instance and queued signal it could and holds them")
owners = owner_uids(mark) if held else set()
ok(owners and 0 not in owners and all(S.UID_LO <= u < S.UID_HI for u in owners),
   "the run's user namespace is owned by its slot's uid, never host root", owners)

# 2. Meanwhile host root and a second run get theirs.
host = subprocess.run([S.PY, "-c", HOST_CHECK], capture_output=True, text=True, timeout=60)
ok(host.returncode == 0 and host.stdout.split() == ["50", "4", "50"],
   "meanwhile host root creates 50 POSIX timers, 4 inotify instances and queues 50 signals",
   host.stdout + host.stderr)
other = S.run([S.probe("budget"), "small"])
c = counts(other)
ok(S.happened(other) and c == {"timers": "20", "inotify": "4", "sigqueue": "20"},
   "meanwhile a second run creates 20 timers, 4 inotify instances and queues 20 signals",
   S.show(other))

open(os.path.join(wd, "go"), "w").close()
r = hog.result()
c = counts(r)
diag(f"the holding run got: {c}")
try:
    t, i, q = int(c["timers"]), int(c["inotify"]), int(c["sigqueue"])
except (KeyError, ValueError):
    t = i = q = -1
ok(S.happened(r) and 0 < t <= 1024 and t + q <= 1024,
   "its POSIX timers and queued signals stop at the run's RLIMIT_SIGPENDING (1024 together)", S.show(r))
ok(S.happened(r) and 0 < i <= 16, "its inotify instances stop at its namespace's limit (16)", S.show(r))

# 3. Host-wide pools and the init's limits.
got = counts(S.run([S.probe("budget"), "io_setup"]))
ok(got.get("io_setup") == "ENOSYS", "io_setup (host-wide fs.aio-max-nr): ENOSYS", got)
r = S.run([S.probe("budget"), "prlimit"])
got = counts(r)
ok(got.get("prlimit_self0") == "ok" and got.get("setrlimit_self") == "ok",
   "getrlimit/setrlimit/prlimit on itself (pid 0) work", got)
ok(got.get("prlimit_init_set") == "EPERM" and got.get("prlimit_init_get") == "EPERM"
   and got.get("prlimit_init_high") == "EPERM",
   "prlimit on the run's init (pid 1, also with high bits set): EPERM", got)
got = counts(S.run([S.probe("budget"), "sysinfo"]))
ok(got.get("sysinfo") == "ENOSYS", "sysinfo (host load, RAM, process count): ENOSYS", got)

# 4. mountinfo: the extra read-only tree (the probes, bound from the host) shows no host path.
r = S.py("print(open('/proc/self/mountinfo').read())")
mi = r.get("stdout") or ""
probe_host = os.path.dirname(S.probe_host("budget"))
ok(S.happened(r) and S.PROBE_DIR_INSIDE in mi and probe_host not in mi and "/var/tmp" not in mi,
   "mountinfo shows no host path of the extra read-only tree", mi)

# 5. The languages the service runs still start (runtimes probe limits, memory and CPUs).
for name, argv in (("python", [S.PY, "-c", "import os, resource; print(resource.getrlimit(0)[0] >= 0)"]),
                   ("node", ["/usr/bin/node", "-e", "console.log(require('os').totalmem() >= 0)"])):
    if not os.path.exists(argv[0]):
        ok(True, f"# SKIP {name} is not installed")
        continue
    r = S.run(argv, memory_mb=512)
    ok(r.get("status") == "ok" and "true" in (r.get("stdout") or "").lower(),
       f"{name} starts and reads its limits and memory", S.show(r))

S.finish()
