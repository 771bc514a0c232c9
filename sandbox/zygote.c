/* zygote.c: Python runs forked from a warm interpreter, a few per slot (issue 15).
 *
 * The pre-start design (warm.c) starts a fresh interpreter per run while the slot is idle: the
 * start leaves the latency path but not the CPU, so under load a run still pays a whole
 * interpreter start. Here each slot keeps warm interpreters, zygotes, that have started (and
 * imported what the slot's runs import) and never run user input; each run's sandbox is a fork
 * of one.
 *
 * Forms. What a zygote cannot change after its start is its interpreter options (-u -S -B:
 * sys.flags, site's sys.path and builtins, the stdio buffering are made while Python starts), so
 * a slot keeps one zygote per option set (SBX_ZYGOTES, 2: user runs' `python3 -u`, the evaluate
 * runner's and checkers' `python3 -S -B`), the least recently used one replaced by a third set.
 * Each run gets the zygote started with exactly its options: nothing is emulated. What a zygote
 * preloads (warm.c's hint: a read-only script outside /work, the runner or the checker host) is
 * a set: each zygote preloads up to SBX_ZYGOTE_HINTS of the hints its options were last seen
 * with; a new one starts it again once with the set, a full set takes the new hint at the
 * zygote's next start (every SBX_ZYGOTE_MAX_RUNS runs or template refresh); a run whose script
 * was not preloaded reads and compiles it as a cold start does. So runs that alternate between
 * execute, the runner and a checker fork from a zygote each time; one zygote that restarted on
 * each change of form made /evaluate_code 245 ms against 162 with the pre-start (2026-11-25).
 * Memory: a zygote's Rss is about 11 MB, its Pss 4-7 MB (2026-11-25, tests/sandbox/zygote_forms.t
 * prints them); a slot holds at most two.
 *
 * Z (zygote_start, below) is born with clone3 in a user namespace of its own (the slot's uid
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
 * A prepared sandbox takes only Python runs of the options its zygote was started with (warm.c
 * checks before the sandbox is taken): a run of other options gets a fork of its own options'
 * zygote if one runs (zygotes are only started while the slot is idle; a package layer is
 * attached by the run's init as child.c's does), anything else (another language, an option
 * or variable the interpreter reads while it starts) a child.c sandbox; any failure to start or
 * fork a zygote falls back to the child.c path. On by default on cgroup v1 hosts; SBX_ZYGOTE=0
 * keeps the pre-start alone; SBX_WARM=0 turns off both. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "zyg_spawn_so.inc" /* sbx_zyg_spawn_so[]: the shared object built from zyg_spawn.c */
#include "zygote.inc"	    /* sbx_zygote_py[]: sandbox/zygote.py, NUL-terminated */

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

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

/* zygote.py reads a job header of exactly this size. */
_Static_assert(sizeof(struct sbx_job) == 104, "sandbox/zygote.py: update its job header size");

void sbx_zygote_argv(unsigned opts, const char *const *hints, unsigned nhints, const char **argv)
{
	unsigned k;
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
	for (k = 0; k < nhints && k < SBX_ZYGOTE_HINTS; k++)
		argv[n++] = hints[k];
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
	const char *const *argv = args->zyg_argv;
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
	execve(argv[0], (char *const *)argv, (char *const *)sbx_warm_env);
	sbx_child_die(a, "execve", argv[0]);
}

/* ---- the slot's side (called from slot.c's prewarm) ---- */

/* Stop zygote z (each run's init is its child and dies with it, by parent-death signal; its
 * program dies with the init's pid namespace). The entry keeps its form and hints. */
void sbx_zygote_stop_one(struct zygote *z)
{
	if (z->pidfd >= 0) {
		siginfo_t si;

		syscall(SYS_pidfd_send_signal, z->pidfd, SIGKILL, NULL, 0);
		if (syscall(SYS_waitid, P_PIDFD, z->pidfd, &si, WEXITED, NULL) < 0 && z->pid > 0)
			waitpid(z->pid, NULL, 0);
	}
	sbx_close_fd(&z->pidfd);
	sbx_close_fd(&z->sock);
	z->pid = 0;
	z->runs = 0;
	z->grown = false;
}

void sbx_zygote_stop_all(struct sbx_slot *s)
{
	for (unsigned k = 0; k < SBX_ZYGOTES; k++)
		sbx_zygote_stop_one(&s->z[k]);
}

/* Start zygote z for its form (options and hints): clone3 into a user namespace of its own
 * (owned by the slot's uid, the slot's mapping), a copy of the template's mount namespace, new
 * ipc and uts namespaces, in the slot's network namespace; out of the slot's cgroup; then the
 * seccomp filters sent and its ready report awaited. 0 or -1 with err filled. */
int sbx_zygote_start(struct sbx_slot *slot, struct zygote *z, char *err, size_t errlen)
{
	const char *argv[8 + SBX_ZYGOTE_HINTS], *hints[SBX_ZYGOTE_HINTS];
	struct sbx_child_args ca;
	int sync_p[2] = {-1, -1}, err_p[2] = {-1, -1}, ctl[2] = {-1, -1};
	int rc = -1, e, so;
	uint32_t lens[2];
	char sig[sizeof z->sig];
	pid_t pid;

	/* Taken before the start: a change while the interpreter starts leaves the zygote out of
	 * date (replaced at its next use), never one that loaded the old files marked current. */
	sbx_warm_sig(sig, sizeof sig);
	memset(&ca, 0, sizeof ca);
	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
		sbx_set_error(err, errlen, "zygote pipes: %s", strerror(errno));
		goto out;
	}
	ca.ctl_fd = ctl[1];
	ca.sync_fd = sync_p[0];
	ca.err_fd = err_p[1];
	ca.out_fd = ca.err_out_fd = -1;
	/* SBX_ZYGOTE_DEBUG=1: the zygote's stderr is ours (its tracebacks), else /dev/null. */
	ca.status_fd = getenv("SBX_ZYGOTE_DEBUG") ? 2 : -1;
	/* the most recently seen hint first: the import order of what two hints share */
	for (unsigned k = 0; k < z->nhints; k++)
		hints[k] = z->hints[z->nhints - 1 - k];
	sbx_zygote_argv(z->opts, hints, z->nhints, argv);
	ca.zyg_argv = argv;
	{
		struct clone_args args;

		memset(&args, 0, sizeof args);
		args.flags =
		    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
		args.pidfd = (uint64_t)(uintptr_t)&z->pidfd;
		args.exit_signal = SIGCHLD;
		if (setns(slot->netns, CLONE_NEWNET) < 0 ||
		    setns(slot->tmpl_mnt, CLONE_NEWNS) < 0) {
			sbx_set_error(err, errlen, "zygote: join the slot's namespaces: %s",
				      strerror(errno));
			sbx_slot_return_home(slot);
			goto out;
		}
		if (sbx_slot_own_as_slot(slot->uid) < 0) {
			sbx_set_error(err, errlen, "zygote: take the slot's uid: %s",
				      strerror(errno));
			sbx_slot_return_home(slot);
			goto out;
		}
		pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
		e = errno;
		if (pid != 0) {
			sbx_slot_own_as_root();
			sbx_slot_return_home(slot);
		}
		errno = e;
	}
	if (pid < 0) {
		sbx_set_error(err, errlen, "zygote: clone3: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		sbx_zygote_main(&ca);
	z->pid = pid;
	sbx_close_fd(&ctl[1]);
	sbx_close_fd(&sync_p[0]);
	sbx_close_fd(&err_p[1]);
	z->sock = ctl[0];
	ctl[0] = -1;
	if ((e = sbx_slot_write_maps(pid, slot->uid, slot->gid)) < 0) {
		sbx_set_error(err, errlen, "zygote: uid/gid maps: %s", strerror(-e));
		goto out;
	}
	if ((e = sbx_slot_write_ns_limits(pid, true)) < 0) {
		sbx_set_error(err, errlen, "zygote: per-namespace limits: %s", strerror(-e));
		goto out;
	}
	/* Its start and its idle memory are the service's, not a run's. */
	if ((e = sbx_cg_move(slot->cg, pid, false)) < 0) {
		sbx_set_error(err, errlen, "zygote: leave the slot's cgroup: %s", strerror(-e));
		goto out;
	}
	if (write(sync_p[1], "g", 1) != 1) {
		sbx_set_error(err, errlen, "zygote: release: %s", strerror(errno));
		goto out;
	}
	/* The filters every run's program loads, in the order sbx_child_exec loads them, with the
	 * per-run chain in C it loads (zyg_spawn.c, a sealed memfd). */
	lens[0] = (uint32_t)(slot->ioctl_filter.len * sizeof(struct sock_filter));
	lens[1] = (uint32_t)(slot->filter.len * sizeof(struct sock_filter));
	if ((so = sbx_zyg_spawn_memfd()) < 0) {
		sbx_set_error(err, errlen, "zygote: spawn object: %s", strerror(-so));
		goto out;
	}
	e = sbx_send_fds(z->sock, lens, sizeof lens, &so, 1);
	close(so);
	if (e < 0 || sbx_write_all(z->sock, slot->ioctl_filter.filter, lens[0]) < 0 ||
	    sbx_write_all(z->sock, slot->filter.filter, lens[1]) < 0) {
		sbx_set_error(err, errlen, "zygote: send filters: %s", strerror(errno));
		goto out;
	}
	if (sbx_slot_await_ready(z->sock, err_p[0], "zygote start", err, errlen) < 0)
		goto out;
	memcpy(z->sig, sig, sizeof z->sig);
	z->tmpl_built = slot->tmpl_built;
	z->runs = 0;
	z->grown = false;
	slot->zyg_starts++;
	if (getenv("SBX_ZYGOTE_DEBUG"))
		fprintf(stderr,
			"sbx: zygote: started pid=%d opts=%u hints=%u (start %u of the slot)\n",
			(int)pid, z->opts, z->nhints, slot->zyg_starts);
	rc = 0;
out:
	sbx_close_fd(&sync_p[0]);
	sbx_close_fd(&sync_p[1]);
	sbx_close_fd(&err_p[0]);
	sbx_close_fd(&err_p[1]);
	sbx_close_fd(&ctl[0]);
	sbx_close_fd(&ctl[1]);
	if (rc < 0)
		sbx_zygote_stop_one(z);
	return rc;
}

/* A zygote serves at most this many runs (they all share its hash seed and its address space
 * layout), then a new one is started. */
#define SBX_ZYGOTE_MAX_RUNS 64

/* Whether the host's interpreter and the template are those z was started with. */
bool sbx_zygote_current(const struct sbx_slot *slot, const struct zygote *z, const char *sig)
{
	return strcmp(z->sig, sig) == 0 && !slot->tmpl_stale && z->tmpl_built == slot->tmpl_built;
}

/* Add hint to z's set, as its most recently seen. A new hint while the set has room marks z to
 * be started again with the set (once per hint: the preload is what a hint is for); a full set
 * drops its least recently seen one without a restart (the next start, after
 * SBX_ZYGOTE_MAX_RUNS or the template's refresh, preloads the recent ones): hints a client
 * cycles through cost at most SBX_ZYGOTE_HINTS starts. */
void sbx_zygote_note_hint(struct zygote *z, const char *hint)
{
	unsigned k;

	if (!hint[0])
		return;
	for (k = 0; k < z->nhints && strcmp(z->hints[k], hint) != 0; k++) {
	}
	if (k < z->nhints) {
		char h[sizeof z->hints[0]];

		memcpy(h, z->hints[k], sizeof h);
		memmove(z->hints[k], z->hints[k + 1], (z->nhints - 1 - k) * sizeof z->hints[0]);
		memcpy(z->hints[z->nhints - 1], h, sizeof h);
		return;
	}
	if (z->nhints == SBX_ZYGOTE_HINTS) {
		memmove(z->hints[0], z->hints[1], (SBX_ZYGOTE_HINTS - 1) * sizeof z->hints[0]);
		z->nhints--;
	} else if (z->pid > 0) {
		z->grown = true;
	}
	snprintf(z->hints[z->nhints++], sizeof z->hints[0], "%s", hint);
}

/* The slot's zygote for its current form (slot->warm_opts, slot->warm_hint), started if
 * needed. Its entry is the one of those options, else an unused one, else the least recently
 * used one (whose zygote is stopped). A zygote started before the template was last rebuilt,
 * before the host's interpreter or libraries changed, after SBX_ZYGOTE_MAX_RUNS, before its
 * hint set grew, or dead, is replaced; other entries' zygotes that are out of date are stopped
 * (their memory is freed now; they start again when their form comes). A zygote is only
 * started while the slot is idle (may_start): a job waiting for its sandbox gets a child.c one
 * (what the pre-start gives it) rather than waiting for an interpreter's start and its fork, and
 * the zygote starts once the job is answered. The zygote or NULL with err filled. */
static struct zygote *zygote_ensure(struct sbx_slot *slot, bool may_start, char *err, size_t errlen)
{
	struct zygote *z = NULL;
	char sig[sizeof slot->z[0].sig];
	unsigned k;

	sbx_warm_sig(sig, sizeof sig);
	for (k = 0; k < SBX_ZYGOTES && !z; k++)
		if (slot->z[k].used && slot->z[k].opts == slot->warm_opts)
			z = &slot->z[k];
	for (k = 0; k < SBX_ZYGOTES && !z; k++)
		if (!slot->z[k].used)
			z = &slot->z[k];
	if (!z) {
		z = &slot->z[0];
		for (k = 1; k < SBX_ZYGOTES; k++)
			if (slot->z[k].last < z->last)
				z = &slot->z[k];
	}
	if (!z->used || z->opts != slot->warm_opts) {
		sbx_zygote_stop_one(z);
		z->used = true;
		z->opts = slot->warm_opts;
		z->nhints = 0;
		/* the slot's own form, unless it only learned it (sbx_zyg_share_idle) */
		z->learned = slot->zshare_borrowed;
	}
	z->last = ++slot->zyg_tick;
	sbx_zygote_note_hint(z, slot->warm_hint);
	for (k = 0; k < SBX_ZYGOTES; k++) {
		struct zygote *o = &slot->z[k];
		struct pollfd pf = {o->pidfd, POLLIN, 0};

		if (o->pid > 0 && (poll(&pf, 1, 0) != 0 || !sbx_zygote_current(slot, o, sig) ||
				   (o == z && (o->grown || o->runs >= SBX_ZYGOTE_MAX_RUNS))))
			sbx_zygote_stop_one(o);
	}
	if (z->pid > 0)
		return z;
	if (!may_start) {
		sbx_set_error(err, errlen, "zygote: none running for this form, a job waits");
		return NULL;
	}
	return sbx_zygote_start(slot, z, err, errlen) == 0 ? z : NULL;
}

/* The prepared sandbox, forked from the zygote (zygote.c): Z clones I (PID 1 of the run's new
 * namespaces) and sends its pidfd; I is moved into the run's cgroup and released,
 * then mounts its own /proc, /tmp and /dev/shm and reports ready. 0, or -1 with err filled (the
 * caller then prepares a child.c sandbox). */
int sbx_zygote_prewarm(struct sbx_slot *slot, bool may_start, char *err, size_t errlen)
{
	struct warm *w = &slot->w;
	struct zygote *z;
	int err_p[2] = {-1, -1}, status_p[2] = {-1, -1}, out_p[2] = {-1, -1};
	int errout_p[2] = {-1, -1}, ctl[2] = {-1, -1};
	char opts[192], hdr[5];
	int rc = -1, e, pfd = -1;
	size_t i;

	if (!(z = zygote_ensure(slot, may_start, err, errlen)))
		return -1;
	if (pipe2(err_p, O_CLOEXEC) < 0 || pipe2(status_p, O_CLOEXEC) < 0 ||
	    pipe2(out_p, O_CLOEXEC) < 0 || pipe2(errout_p, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
		sbx_set_error(err, errlen, "pipes: %s", strerror(errno));
		goto out;
	}
	memset(opts, 0, sizeof opts);
	snprintf(opts, 96, "size=%llu,nr_inodes=16384,mode=1777",
		 (unsigned long long)SBX_DEFAULT_TMP_BYTES);
	snprintf(opts + 96, 96, "size=%llu,nr_inodes=1024,mode=1777",
		 (unsigned long long)SBX_DEFAULT_TMP_BYTES);
	{
		int fds[4] = {ctl[1], err_p[1], status_p[1], out_p[1]};

		/* Two messages: sbx_send_fds carries at most 4 descriptors. */
		if (sbx_send_fds(z->sock, opts, sizeof opts, fds, 4) < 0 ||
		    sbx_send_fds(z->sock, "e", 1, &errout_p[1], 1) < 0) {
			sbx_set_error(err, errlen, "zygote: prepare: %s", strerror(errno));
			sbx_zygote_stop_one(z);
			goto out;
		}
	}
	z->runs++;
	sbx_close_fd(&ctl[1]);
	sbx_close_fd(&err_p[1]);
	sbx_close_fd(&status_p[1]);
	sbx_close_fd(&out_p[1]);
	sbx_close_fd(&errout_p[1]);
	{
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = {hdr, sizeof hdr};
		struct msghdr msg;
		struct cmsghdr *c;
		ssize_t n;

		memset(&msg, 0, sizeof msg);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof cbuf;
		do
			n = recvmsg(ctl[0], &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC);
		while (n < 0 && errno == EINTR);
		for (c = CMSG_FIRSTHDR(&msg); n > 0 && c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len >= CMSG_LEN(sizeof(int)))
				memcpy(&pfd, CMSG_DATA(c), sizeof pfd);
		if (n != (ssize_t)sizeof hdr || hdr[0] != 'P' || pfd < 0) {
			/* its error report, if it sent one, names the step */
			if (sbx_slot_await_ready(ctl[0], err_p[0], "zygote fork", err, errlen) == 0)
				sbx_set_error(err, errlen, "zygote fork: no init");
			goto out;
		}
	}
	w->pidfd = pfd;
	pfd = -1;
	memcpy(&w->pid, hdr + 1, sizeof w->pid);
	w->ctl = ctl[0];
	w->err_r = err_p[0];
	w->status_r = status_p[0];
	w->out_r = out_p[0];
	w->errout_r = errout_p[0];
	ctl[0] = err_p[0] = status_p[0] = out_p[0] = errout_p[0] = -1;
	w->ready = true;
	slot->w_zygote = true;
	slot->w_zyg_opts = z->opts;
	/* what take_sandbox compares (run.c): the zygote's */
	memcpy(slot->warm_sig, z->sig, sizeof slot->warm_sig);
	/* The pid is the init's in our pid namespace (the zygote shares it); the pidfd pins it. */
	{
		struct pollfd pf = {w->pidfd, POLLIN, 0};

		if (poll(&pf, 1, 0) != 0) {
			sbx_set_error(err, errlen, "zygote: the run's init died");
			sbx_warm_discard(slot);
			goto out;
		}
	}
	if ((e = sbx_cg_move(slot->cg, w->pid, true)) < 0) {
		sbx_set_error(err, errlen, "zygote: move the init into the run's cgroup: %s",
			      strerror(-e));
		sbx_warm_discard(slot);
		goto out;
	}
	if (write(w->ctl, "g", 1) != 1) {
		sbx_set_error(err, errlen, "zygote: release the init: %s", strerror(errno));
		sbx_warm_discard(slot);
		goto out;
	}
	if (sbx_slot_await_ready(w->ctl, w->err_r, "sandbox setup (zygote)", err, errlen) < 0) {
		sbx_warm_discard(slot);
		goto out;
	}
	rc = 0;
out : {
	int fds[] = {err_p[0],	  err_p[1],    status_p[0], status_p[1], out_p[0], out_p[1],
		     errout_p[0], errout_p[1], ctl[0],	    ctl[1],	 pfd};

	for (i = 0; i < sizeof fds / sizeof *fds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}
	/* a zygote that failed to fork is not trusted with the next one */
	if (rc < 0)
		sbx_zygote_stop_one(z);
	return rc;
}

/* A job the prepared sandbox can take: a zygote's only Python runs of its form (a package
 * layer included: its init attaches it as child.c's does, and the program puts the layer's
 * PYTHONPATH on sys.path as the interpreter would have). */
bool sbx_zygote_fits(const struct sbx_slot *s, const char *const *argv, const char *const *env)
{
	unsigned opts;

	if (!s->w_zygote)
		return true;
	return sbx_warm_parse((char *const *)argv, (char *const *)env, &opts) >= 1 &&
	       opts == s->w_zyg_opts;
}
