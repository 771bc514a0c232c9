/* zygote.c: Python runs forked from a warm interpreter, one per slot (issue 15).
 *
 * The pre-start design (warm.c) starts a fresh interpreter per run while the slot is idle: the
 * start leaves the latency path but not the CPU, so under load a run still pays a whole
 * interpreter start. Here each slot keeps one interpreter, the zygote Z, that has started (and
 * imported what the slot's runs import, the same hint as warm.c) and never runs user input; each
 * run's sandbox is a fork of it.
 *
 * Z (slot.c: zygote_start) is born with clone3 in a user namespace of its own (the slot's uid
 * mapping, inside uid 1000, owned by the slot's uid, never root), a copy of the slot's template
 * mount namespace and the slot's network namespace, and moved out of the slot's cgroup (its
 * memory and CPU are the service's, not a run's). sbx_zygote_main (below) switches to the
 * inside uid keeping the namespace's capabilities as ambient ones, makes itself non-dumpable and
 * execs /usr/bin/python3 [-u -S -B] -c <zygote.py> <hint>, whose fd 3 is its control socket to
 * the slot. It receives the slot's two precompiled seccomp filters, preloads, freezes its heap
 * for the garbage collector, says ready, then only waits for "prepare" messages.
 *
 * Per run, while the slot is idle (slot.c: zygote_prewarm), the slot sends Z the prepared
 * sandbox's descriptors (control socket, error, status and capture pipes). The per-run chain is
 * C (zyg_spawn.c, a shared object embedded here, sent to Z as a sealed memfd with the filters and
 * loaded with ctypes.PyDLL): every step a Python process takes after a fork writes reference
 * counts, i.e. copy-on-write faults, which are the whole cost of a fork on a VM. Z clones I with
 * new mount, pid, ipc and uts namespaces (PID 1 of the run's pid namespace; Z stays outside it,
 * invisible to the run) and sends I's pidfd and pid to the slot. The slot moves I into the run's
 * cgroup and releases it; I unshares its cgroup namespace there, mounts its own /proc, /tmp and
 * /dev/shm, forks the program P and reports ready once P is confined, exactly where child.c's
 * init would be. P goes through sbx_child_exec's steps in C (setsid, stdio, every fixed rlimit,
 * securebits, capabilities and bounding set dropped, no_new_privs, both seccomp filters) and
 * waits. The job then arrives as for any run: I attaches /work, sets P's job rlimits, hands P
 * argv, environment and stdin, drops its capabilities, reaps, reports P's wait status and exits
 * (the kernel kills the rest). P enters /work and only then returns into Python (Python's
 * at-fork hooks run: random reseeds), where zygote.py runs the code as __main__ as
 * warm_stub.py does and exits without freeing the zygote's heap. Only P ever runs Python after
 * the fork, and only once it is confined.
 *
 * Measured (2026-11-25, this 2-core VM under load 12-25, tests/bench/warm_start_cpu.py, CPU of
 * every process under a one-slot broker per sequential print(1) run): pre-start 94-124 ms (billed
 * 12-16); zygote with the Python chain 92-97 ms (billed 29-31); with this C chain 49-69 ms (billed
 * 12-14). Split (load 15): slot 1.7 ms, Z 6.3 (its copy-on-write faults after each clone and
 * its Python loop), I and P 42.3 of which 12.7 billed (P's job and exit) and ~10 P before the
 * job (Python's at-fork hooks and the warm-up); the rest is I's (namespaces, fork of P, mounts,
 * teardown). MADV_POPULATE_WRITE of P's whole heap in one go instead of the faults (~3 against
 * ~20 us a page in isolation) made no difference here: not kept.
 *
 * Only Python runs of the form the zygote was started for take this path (slot.c checks before
 * taking the sandbox; anything else gets a child.c sandbox); any failure to start or fork the
 * zygote falls back to the child.c path. SBX_ZYGOTE=1 turns it on (off by default while it is a
 * prototype); SBX_WARM=0 turns off both. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "zyg_spawn_so.inc" /* sbx_zyg_spawn_so[]: the shared object built from zyg_spawn.c */
#include "zygote.inc"	    /* sbx_zygote_py[]: sandbox/zygote.py, NUL-terminated */

/* The zygote's per-run chain (zyg_spawn.c) in a sealed memfd: nothing can change it once made,
 * and no file on the host is involved. The descriptor (close-on-exec) or -errno. */
int sbx_zyg_spawn_memfd(void)
{
	size_t off = 0;
	int fd = memfd_create("sbx-zyg-spawn", MFD_CLOEXEC | MFD_ALLOW_SEALING), e;

	if (fd < 0)
		return -errno;
	while (off < sizeof sbx_zyg_spawn_so) {
		ssize_t n = write(fd, sbx_zyg_spawn_so + off, sizeof sbx_zyg_spawn_so - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		goto fail;
	return fd;
fail:
	e = errno ? errno : EIO;
	close(fd);
	return -e;
}

/* zygote.py reads a job header of exactly this size (and refuses one with a layer). */
_Static_assert(sizeof(struct sbx_job) == 104, "sandbox/zygote.py: update its job header size");

void sbx_zygote_argv(unsigned opts, const char *hint, const char **argv)
{
	int n = 0;

	argv[n++] = SBX_WARM_PYTHON;
	if (opts & SBX_WARM_OPT_U)
		argv[n++] = "-u";
	if (opts & SBX_WARM_OPT_S)
		argv[n++] = "-S";
	if (opts & SBX_WARM_OPT_B)
		argv[n++] = "-B";
	argv[n++] = "-c";
	argv[n++] = sbx_zygote_py;
	argv[n++] = hint ? hint : "";
	argv[n] = NULL;
}

/* The child of the zygote's clone3 (new user and mount namespaces, in the slot's network
 * namespace) becomes the slot's warm interpreter; between clone3 and execve, so child.c's rules
 * hold. As the inside uid, with the namespace's capabilities kept as ambient ones (they survive
 * the exec: the zygote's forks mount each run's /proc, /tmp and /dev/shm and drop them before any
 * user code), non-dumpable, niced, with /dev/null as stdio and its control socket as fd 3.
 * Failures go to the error pipe. */
void sbx_zygote_main(const struct sbx_child_args *args)
{
	static const char *argv[8];
	struct sbx_child_args za = *args;
	const struct sbx_child_args *a = &za;
	int cap, fd;

	sbx_child_close_others(args);
	/* Off the numbers the exec's stdio and control socket take (0-3). */
	za.err_fd = fcntl(args->err_fd, F_DUPFD_CLOEXEC, 10);
	za.ctl_fd = fcntl(args->ctl_fd, F_DUPFD_CLOEXEC, 10);
	za.status_fd = args->status_fd >= 0 ? fcntl(args->status_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (za.err_fd < 0 || za.ctl_fd < 0)
		_exit(127);
	close(args->err_fd);
	close(args->ctl_fd);
	/* Inheritable too: ambient capabilities must be permitted and inheritable. */
	sbx_child_become_inside(a, true);
	for (cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0 && errno != EINVAL)
			sbx_child_die(a, "ambient capability", NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		sbx_child_die(a, "pdeathsig", NULL);
	sbx_child_yield_cpu(a);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sbx_child_die(a, "dumpable", NULL);
	if (chdir("/") < 0)
		sbx_child_die(a, "chdir", "/");
	if (dup2(a->ctl_fd, 3) < 0)
		sbx_child_die(a, "dup", "control socket");
	fd = open("/dev/null", O_RDWR); /* may be 0 itself: then it must survive the exec */
	if (fd < 0 || dup2(fd, 0) < 0 || dup2(fd, 1) < 0 ||
	    dup2(a->status_fd >= 0 ? a->status_fd : fd, 2) < 0)
		sbx_child_die(a, "open", "/dev/null");
	if (fd > 3)
		close(fd);
	if (syscall(SYS_close_range, 4U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		sbx_child_die(a, "close_range", NULL);
	sbx_zygote_argv(a->warm_opts, a->warm_hint, argv);
	execve(argv[0], (char *const *)argv, (char *const *)sbx_warm_env);
	sbx_child_die(a, "execve", argv[0]);
}
