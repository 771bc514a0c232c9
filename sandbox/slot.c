/* slot.c: a slot, the broker's unit of concurrency, and the sandbox it prepares while idle.
 *
 * A slot owns an unprivileged host uid/gid, a cgroup, a network namespace, a template root (a
 * mount namespace holding the read-only tree every run shares, rebuilt every 30 s), a
 * precompiled seccomp filter and a prepared idmapping. While idle it builds the next sandbox
 * (sbx_slot_prewarm):
 *   1. clones (clone3) a child into new user, pid, mount, ipc, uts and cgroup namespaces (in the
 *      slot's network namespace, the mount namespace a copy of the template's), straight into
 *      the run's cgroup on v2 (on v1 the slot process already sits in it);
 *   2. writes the child's uid/gid maps (inside uid 1000 -> the slot's host uid; never host 0) and
 *      releases it; the child mounts its own /proc, /tmp and /dev/shm and waits for a job as
 *      the sandbox's init
 *      (child.c). sbx_run (run.c) hands it the job and supervises the run.
 * Any failing step is reported; nothing ever runs with less isolation. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* The slot's network namespace, made once and kept as an fd. A run of its own would cost about
 * 1.2 ms of CPU to create and tear down (setup_net, sysctl tables, loopback, then cleanup_net:
 * the largest single cost of a sandbox, measured with perf). Sharing it across the slot's runs
 * shares nothing in time: a slot runs one sandbox at a time and every process of a run is dead
 * before the next one starts, so no socket outlives its run. It is owned by the initial user
 * namespace, so a run has no capability in it (it cannot even set lo up), and seccomp lets a
 * program make AF_UNIX sockets only. Our own network namespace is unchanged on return. */
static int make_netns(int *host, char *err, size_t errlen)
{
	int fd;

	*host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (*host < 0 || unshare(CLONE_NEWNET) < 0) {
		sbx_set_error(err, errlen, "network namespace: %s", strerror(errno));
		return -1;
	}
	fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (setns(*host, CLONE_NEWNET) < 0) {
		sbx_set_error(err, errlen, "back to our network namespace: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd < 0)
		sbx_set_error(err, errlen, "open the slot's network namespace: %s",
			      strerror(errno));
	return fd;
}

/* A user namespace whose only mapping is files_uid -> slot uid, kept as an fd: an idmapped
 * mount made with it stores the program's writes as files_uid on disk. */
static int make_idmap_userns(uid_t files_uid, gid_t files_gid, uid_t uid, gid_t gid, char *err,
			     size_t errlen)
{
	int p[2] = {-1, -1}, fd = -1;
	char path[64], map[64];
	pid_t child;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0) {
		sbx_set_error(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	child = fork();
	if (child < 0) {
		sbx_set_error(err, errlen, "fork: %s", strerror(errno));
		goto out;
	}
	if (child == 0) {
		c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	if (read(p[0], &c, 1) != 1 || c != 'y') {
		sbx_set_error(err, errlen, "unshare(CLONE_NEWUSER) failed in idmap helper");
		goto reap;
	}
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)child);
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)files_uid, (unsigned)uid);
	if (sbx_write_file(path, map) < 0) {
		sbx_set_error(err, errlen, "idmap uid_map: %s", strerror(errno));
		goto reap;
	}
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)child);
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)files_gid, (unsigned)gid);
	if (sbx_write_file(path, map) < 0) {
		sbx_set_error(err, errlen, "idmap gid_map: %s", strerror(errno));
		goto reap;
	}
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)child);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		sbx_set_error(err, errlen, "open %s: %s", path, strerror(errno));
reap:
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
out:
	close(p[0]);
	close(p[1]);
	return fd;
}

/* Back to our own mount and network namespaces (and working directory) after a clone3 from the
 * slot's. These are our own namespaces, kept open: if we cannot return to them, nothing this
 * process does next can be trusted to act on the host it thinks it does. The broker starts a
 * new slot process. */
void sbx_slot_return_home(const struct sbx_slot *slot)
{
	if (setns(slot->host_mnt, CLONE_NEWNS) < 0 || fchdir(slot->host_cwd) < 0 ||
	    setns(slot->host_netns, CLONE_NEWNET) < 0)
		abort();
}

/* Wait for a child of ours (child.c) to write 'r' on ctl; else report the step it failed at,
 * from its error pipe, as "<what> failed: <step>: <error>". 0 or -1. */
int sbx_slot_await_ready(int ctl, int err_r, const char *what, char *err, size_t errlen)
{
	struct sbx_child_error ce;
	char c = 0;
	ssize_t n;

	do
		n = read(ctl, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1 && c == 'r')
		return 0;
	memset(&ce, 0, sizeof ce);
	if (read(err_r, &ce, sizeof ce) == (ssize_t)sizeof ce) {
		ce.step[sizeof ce.step - 1] = '\0';
		sbx_set_error(err, errlen, "%s failed: %s: %s", what, ce.step, strerror(ce.err));
	} else {
		sbx_set_error(err, errlen, "%s failed without a report", what);
	}
	return -1;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The template root (child_template.c), built by a forked helper in a mount namespace of
 * its own and kept as that namespace's fd once the helper has gone. */
static int make_template(struct sbx_slot *s, char *err, size_t errlen)
{
	struct sbx_child_args ca;
	int ctl[2] = {-1, -1}, ep[2] = {-1, -1}, fd = -1;
	char path[64];
	pid_t pid;

	memset(&ca, 0, sizeof ca);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0 ||
	    pipe2(ep, O_CLOEXEC) < 0) {
		sbx_set_error(err, errlen, "template pipes: %s", strerror(errno));
		goto out;
	}
	ca.ctl_fd = ctl[1];
	ca.err_fd = ep[1];
	ca.sync_fd = ca.status_fd = ca.out_fd = ca.err_out_fd = -1;
	ca.binds = s->cfg.binds;
	ca.nbinds = s->cfg.nbinds;
	pid = fork();
	if (pid < 0) {
		sbx_set_error(err, errlen, "template: fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		sbx_template_main(&ca);
	sbx_close_fd(&ctl[1]);
	sbx_close_fd(&ep[1]);
	if (sbx_slot_await_ready(ctl[0], ep[0], "sandbox template", err, errlen) == 0) {
		snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			sbx_set_error(err, errlen, "template: open %s: %s", path, strerror(errno));
	}
	sbx_close_fd(&ctl[0]); /* the helper sees EOF and exits */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
	}
	if (fd >= 0) {
		sbx_close_fd(&s->tmpl_mnt);
		s->tmpl_mnt = fd;
		s->tmpl_built = mono_s();
		s->tmpl_stale = false;
	}
out:
	sbx_close_fd(&ctl[0]);
	sbx_close_fd(&ctl[1]);
	sbx_close_fd(&ep[0]);
	sbx_close_fd(&ep[1]);
	return fd >= 0 ? 0 : -1;
}

struct sbx_slot *sbx_slot_open(const struct sbx_config *cfg, unsigned index, char *err,
			       size_t errlen)
{
	struct sbx_slot *s = calloc(1, sizeof *s);

	if (!s) {
		sbx_set_error(err, errlen, "out of memory");
		return NULL;
	}
	s->idmap_userns = s->netns = s->host_netns = -1;
	s->tmpl_mnt = s->host_mnt = s->host_cwd = -1;
	s->w.pidfd = s->w.ctl = s->w.err_r = s->w.status_r = s->w.out_r = s->w.errout_r = -1;
	s->cfg = *cfg;
	s->index = index;
	s->uid = cfg->uid_base + index;
	s->gid = cfg->uid_base + index;
	/* warm.c: Python runs start from a pre-started interpreter unless SBX_WARM=0. */
	s->warm_on = !(getenv("SBX_WARM") && strcmp(getenv("SBX_WARM"), "0") == 0);
	/* zygote.c: Python runs forked from a warm interpreter (cgroup v1 hosts) unless
	 * SBX_ZYGOTE=0, which keeps the pre-start alone. A slot keeps one zygote per option set it
	 * serves (two: user runs' -u, the evaluate runner's and checkers' -S -B), each preloading
	 * the slot's recent hints, so alternating forms fork from a zygote each time instead of
	 * restarting one (which made evaluate_code 245 ms against 162 with the pre-start). */
	s->zyg_on = s->warm_on && !(getenv("SBX_ZYGOTE") && strcmp(getenv("SBX_ZYGOTE"), "0") == 0);
	/* A zygote starts while the slot is idle only (zygote.c); SBX_ZYGOTE=1 also starts one for
	 * a job that waits, so that a CLI slot, which serves one run, forks it from a zygote (tests
	 * of zygote-born runs through the CLI: tests/sandbox/zygote_semantics.t). */
	s->zyg_eager = s->zyg_on && getenv("SBX_ZYGOTE") && strcmp(getenv("SBX_ZYGOTE"), "1") == 0;
	for (unsigned k = 0; k < SBX_ZYGOTES; k++)
		s->z[k].pidfd = s->z[k].sock = -1;
	/* Tests that follow one zygote across many runs set a longer template age (tests only). */
	s->tmpl_max_age = SBX_TEMPLATE_MAX_AGE_S;
	if (getenv("SBX_TEMPLATE_MAX_AGE_S") && atof(getenv("SBX_TEMPLATE_MAX_AGE_S")) > 0)
		s->tmpl_max_age = atof(getenv("SBX_TEMPLATE_MAX_AGE_S"));
	s->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (s->ncpu < 1)
		s->ncpu = 1;
	if (geteuid() != 0) {
		sbx_set_error(err, errlen, "the sandbox needs root to open a slot");
		goto fail;
	}
	if (cfg->uid_base == 0 || cfg->files_uid == 0 || cfg->files_gid == 0) {
		/* Host uid 0 must never own what the program runs as or writes. */
		sbx_set_error(err, errlen, "uid_base and files_uid/gid must not be 0");
		goto fail;
	}
	if ((mkdir("/run", 0755) < 0 && errno != EEXIST) ||
	    (mkdir(SBX_STAGE, 0700) < 0 && errno != EEXIST)) {
		sbx_set_error(err, errlen, "mkdir %s: %s", SBX_STAGE, strerror(errno));
		goto fail;
	}
	/* The program must not inherit root's supplementary groups. */
	if (setgroups(0, NULL) < 0) {
		sbx_set_error(err, errlen, "setgroups: %s", strerror(errno));
		goto fail;
	}
	if (sbx_seccomp_build(&s->filter, err, errlen) < 0 ||
	    sbx_seccomp_build_ioctl(&s->ioctl_filter, err, errlen) < 0)
		goto fail;
	s->idmap_userns =
	    make_idmap_userns(cfg->files_uid, cfg->files_gid, s->uid, s->gid, err, errlen);
	if (s->idmap_userns < 0)
		goto fail;
	s->netns = make_netns(&s->host_netns, err, errlen);
	if (s->netns < 0)
		goto fail;
	s->host_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	s->host_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->host_mnt < 0 || s->host_cwd < 0) {
		sbx_set_error(err, errlen, "open our mount namespace: %s", strerror(errno));
		goto fail;
	}
	/* A template that cannot be built (a bind source missing, say) is retried by every
	 * prewarm, so each run answers internal_error naming the step instead of the slot not
	 * opening at all (clients would wait for a slot that never comes). */
	make_template(s, err, errlen);
	s->cg = sbx_cg_open(cfg->cgroup_name ? cfg->cgroup_name : "sbx", index, err, errlen);
	if (!s->cg)
		goto fail;
	return s;
fail:
	sbx_slot_close(s);
	return NULL;
}

/* Drop the prepared sandbox (used or not): its init dies with its pid namespace. */
void sbx_warm_discard(struct sbx_slot *s)
{
	struct warm *w = &s->w;

	if (w->pidfd >= 0) {
		siginfo_t si;

		syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
		if (syscall(SYS_waitid, P_PIDFD, w->pidfd, &si, WEXITED, NULL) < 0) {
			/* A zygote-born init is the zygote's child, not ours: wait until it has
			 * exited (its pidfd turns readable once its pid namespace is empty), so a
			 * slot that closes leaves none of its processes dying behind it. */
			struct pollfd pf = {w->pidfd, POLLIN, 0};

			while (poll(&pf, 1, 5000) < 0 && errno == EINTR)
				;
			if (w->pid > 0) /* a child of ours on a kernel without P_PIDFD: reap it */
				waitpid(w->pid, NULL, WNOHANG);
		}
	}
	sbx_close_fd(&w->pidfd);
	sbx_close_fd(&w->ctl);
	sbx_close_fd(&w->err_r);
	sbx_close_fd(&w->status_r);
	sbx_close_fd(&w->out_r);
	sbx_close_fd(&w->errout_r);
	w->pid = 0;
	w->ready = false;
	s->w_zygote = false;
}

/* Reap the inits a stopped zygote left to us (killed by their parent-death signal, so about to
 * end; an init ends once every process of its pid namespace is reaped, which a loaded host can
 * take a while to schedule), for at most 3 s by the clock (the stack gives a broker 5 s to stop): a
 * slot that exits earlier hands them to pid 1, and the stack's sweep finds them as leftovers of the
 * slot's uid. */
static void slot_reap_orphans(void)
{
	double end = mono_s() + 3;

	while (mono_s() < end) {
		pid_t p = waitpid(-1, NULL, WNOHANG | __WALL);

		if (p < 0 && errno != EINTR)
			return; /* ECHILD: none left */
		if (p == 0)
			usleep(1000);
	}
}

void sbx_slot_close(struct sbx_slot *s)
{
	bool zyg = false;

	if (!s)
		return;
	/* Each zygote-born init (the prepared one, and ended runs' not yet reaped) is its
	 * zygote's child. Stopping the zygotes first, as their inits' next parent (a subreaper),
	 * lets the discard below and slot_reap_orphans reap them: a closed slot leaves nothing of
	 * its own behind, not even a zombie for the stack's sweep to find. */
	for (unsigned k = 0; k < SBX_ZYGOTES; k++)
		zyg = zyg || s->z[k].pid > 0;
	if (zyg) {
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
		sbx_zygote_stop_all(s);
	}
	if (s->w.ready) {
		struct sbx_cg_stats st;

		sbx_warm_discard(s);
		sbx_cg_finish(s->cg, &st, NULL, 0);
	}
	sbx_zygote_stop_all(s);
	if (zyg)
		slot_reap_orphans();
	sbx_cg_close(s->cg);
	if (s->idmap_userns >= 0)
		close(s->idmap_userns);
	if (s->netns >= 0)
		close(s->netns);
	if (s->host_netns >= 0)
		close(s->host_netns);
	sbx_close_fd(&s->tmpl_mnt);
	sbx_close_fd(&s->host_mnt);
	sbx_close_fd(&s->host_cwd);
	free(s->filter.filter);
	free(s->ioctl_filter.filter);
	free(s);
}

/* The parent-death signal the broker gave this slot process, and the broker's pid: every change
 * of the effective uid clears that signal (commit_creds), so sbx_slot_own_as_root() sets it again,
 * and a broker that died in between is noticed (else an orphan slot would keep its sandbox and the
 * old socket forever). */
static int pdeath_sig;
static pid_t pdeath_parent;

/* Back to euid 0 (the permitted capabilities become effective again), and the parent-death
 * signal again. If that fails this process cannot be trusted to act as it thinks: the broker
 * starts a new slot process. */
void sbx_slot_own_as_root(void)
{
	if (setresuid((uid_t)-1, 0, (uid_t)-1) < 0 || geteuid() != 0)
		abort();
	if (pdeath_sig > 0) {
		if (prctl(PR_SET_PDEATHSIG, pdeath_sig, 0, 0, 0) < 0)
			abort();
		if (getppid() != pdeath_parent)
			raise(pdeath_sig); /* the broker died while the signal was cleared */
	}
}

/* The run's user namespace belongs to the slot's uid, not to root. The kernel charges what it
 * counts per user (processes, pending signals and POSIX timers, mqueue bytes, locked memory,
 * inotify instances and watches, namespaces...) at every level of the namespace chain, and one
 * level up from the run's namespace that is its owner: with root as owner, a run spent root's own
 * budgets, and a run that used them up made root's processes and every other run fail with EAGAIN
 * or EMFILE. Owned by the slot's uid (reserved for the slot, no host process runs as it), a run
 * spends the slot's budgets only, which its death returns before the slot's next run.
 *
 * The owner is the creator's effective uid at clone3, so the slot process takes the slot's uid as
 * its effective uid for that one call (real and saved uid stay 0, to come back) and keeps its
 * capabilities effective (switching away from euid 0 clears them; the permitted set stays), which
 * clone3 needs for CLONE_INTO_CGROUP and the new namespaces. Switching back to euid 0 restores
 * them. Only the effective uid changes: the namespace's rlimit bounds (RLIMIT_NPROC) stay those
 * of a root creator, and the run's own rlimits (child.c) do the limiting. */
int sbx_slot_own_as_slot(uid_t uid)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];

	if (prctl(PR_GET_PDEATHSIG, &pdeath_sig, 0, 0, 0) < 0)
		return -1;
	pdeath_parent = getppid();
	if (syscall(SYS_capget, &hdr, data) < 0 || setresuid((uid_t)-1, uid, (uid_t)-1) < 0)
		return -1;
	data[0].effective = data[0].permitted;
	data[1].effective = data[1].permitted;
	if (syscall(SYS_capset, &hdr, data) < 0) {
		int e = errno;

		sbx_slot_own_as_root();
		errno = e;
		return -1;
	}
	return 0;
}

/* Per-namespace ceilings on what the kernel counts per user, written into the run's user
 * namespace's own /proc/sys/user (each user namespace has its set; a process in it with
 * CAP_SYS_RESOURCE there may write it). The slot's uid already bounds a run by the host's
 * per-user limits; these keep a run well below them, and at 0 for what it has no use for (it
 * cannot make namespaces anyway: seccomp). Written by a helper (write_ns_limits). */
static const struct {
	const char *name;
	const char *value;
} ns_limits[] = {
    {"max_inotify_instances", "16"}, /* inotify_init: host default 128 per user */
    {"max_inotify_watches", "8192"}, /* watches, all instances together */
    {"max_fanotify_groups", "0"},    /* fanotify_init is refused by seccomp too */
    {"max_fanotify_marks", "0"},     {"max_user_namespaces", "0"},   {"max_pid_namespaces", "0"},
    {"max_net_namespaces", "0"},     {"max_mnt_namespaces", "0"},    {"max_ipc_namespaces", "0"},
    {"max_uts_namespaces", "0"},     {"max_cgroup_namespaces", "0"}, {"max_time_namespaces", "0"},
};

/* The helper's stack: it shares our memory (CLONE_VM) while we wait for it (CLONE_VFORK). */
static char ns_helper_stack[64 << 10] __attribute__((aligned(16)));

/* zygote.c: the zygote's own user namespace holds every run's mount, pid, ipc, uts and cgroup
 * namespaces (its forks make them; a run cannot: seccomp), so those get a small count there
 * instead of 0: one run's set, and the last run's while it is being torn down. */
static const char *const zygote_ns[] = {"max_pid_namespaces", "max_mnt_namespaces",
					"max_ipc_namespaces", "max_uts_namespaces",
					"max_cgroup_namespaces"};

struct ns_limits_arg {
	int nsfd;
	bool zygote;
};

static int ns_limits_helper(void *arg)
{
	char path[80];
	size_t i, k;
	int e;

	const struct ns_limits_arg *a = arg;

	if (setns(a->nsfd, CLONE_NEWUSER) < 0)
		return errno;
	/* The sysctl set is looked up by the caller's user namespace: these are the run's. */
	for (i = 0; i < sizeof ns_limits / sizeof *ns_limits; i++) {
		const char *value = ns_limits[i].value;

		for (k = 0; a->zygote && k < sizeof zygote_ns / sizeof *zygote_ns; k++)
			if (strcmp(ns_limits[i].name, zygote_ns[k]) == 0)
				value = "8";
		snprintf(path, sizeof path, "/proc/sys/user/%s", ns_limits[i].name);
		e = sbx_write_file(path, value);
		/* A limit this kernel does not have (fanotify without CONFIG_FANOTIFY) */
		if (e < 0 && e != -ENOENT)
			return -e;
	}
	return 0;
}

/* Joining a user namespace cannot be undone, so a helper does it: a clone sharing our memory
 * while we wait (a fork's copy of the slot process's memory cost 15 times more CPU, measured:
 * about 2.4 against 0.16 ms on this 2-core VM). 0 or -errno. */
int sbx_slot_write_ns_limits(pid_t pid, bool zygote)
{
	struct ns_limits_arg a = {-1, zygote};
	char path[64];
	int st, e = 0;
	pid_t h;

	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
	a.nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (a.nsfd < 0)
		return -errno;
	h = clone(ns_limits_helper, ns_helper_stack + sizeof ns_helper_stack,
		  CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	if (h < 0)
		e = -errno;
	while (h > 0 && waitpid(h, &st, 0) < 0) {
		if (errno != EINTR) {
			e = -errno;
			break;
		}
	}
	close(a.nsfd);
	if (e < 0)
		return e;
	if (!WIFEXITED(st))
		return -EIO;
	return -WEXITSTATUS(st);
}

int sbx_slot_write_maps(pid_t pid, uid_t uid, gid_t gid)
{
	char path[64], map[64];
	int rc;

	snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
	if ((rc = sbx_write_file(path, "deny")) < 0)
		return rc;
	snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof map, "%d %u 1\n", SBX_INSIDE_UID, (unsigned)uid);
	if ((rc = sbx_write_file(path, map)) < 0)
		return rc;
	snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof map, "%d %u 1\n", SBX_INSIDE_UID, (unsigned)gid);
	return sbx_write_file(path, map);
}

int sbx_slot_prewarm(struct sbx_slot *slot, char *err, size_t errlen)
{
	struct sbx_child_args ca;
	struct warm *w = &slot->w;
	int sync_p[2] = {-1, -1}, err_p[2] = {-1, -1}, status_p[2] = {-1, -1};
	int out_p[2] = {-1, -1}, errout_p[2] = {-1, -1}, ctl[2] = {-1, -1};
	int cgfd, rc = -1, e;
	bool waiting;
	pid_t pid;
	size_t i;

	if (w->ready)
		return 0;
	/* Binds pin what they name: a host file replaced since (ld.so.cache after an install)
	 * reaches runs once the template is rebuilt. */
	if ((slot->tmpl_mnt < 0 || slot->tmpl_stale ||
	     mono_s() - slot->tmpl_built > slot->tmpl_max_age) &&
	    make_template(slot, err, errlen) < 0)
		return -1;
	/* zygote.c: fork the sandbox from the slot's warm interpreter; any failure falls back to
	 * the sandbox below (cgroup v1 only so far: the zygote must sit outside the run's group).
	 */
	waiting = slot->zyg_waiting;
	slot->zyg_waiting = false;
	if (slot->zyg_on && slot->warm_known && !(slot->warm_opts & SBX_WARM_OPT_NODE) &&
	    !slot->zyg_skip && sbx_cg_version(slot->cg) == 1) {
		char zerr[256];

		if (sbx_zygote_prewarm(slot, !waiting || slot->zyg_eager, zerr, sizeof zerr) == 0)
			return 0;
		if (getenv("SBX_ZYGOTE_DEBUG"))
			fprintf(stderr, "sbx: zygote: %s (falling back)\n", zerr);
	}
	slot->zyg_skip = false;
	memset(&ca, 0, sizeof ca);
	cgfd = sbx_cg_prewarm(slot->cg, err, errlen);
	if (cgfd == -2)
		return -1;
	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0 ||
	    pipe2(status_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0 ||
	    pipe2(errout_p, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0) {
		sbx_set_error(err, errlen, "pipes: %s", strerror(errno));
		goto out;
	}
	ca.ctl_fd = ctl[1];
	ca.sync_fd = sync_p[0];
	ca.err_fd = err_p[1];
	ca.status_fd = status_p[1];
	ca.out_fd = out_p[1];
	ca.err_out_fd = errout_p[1];
	ca.filter = &slot->filter;
	ca.ioctl_filter = &slot->ioctl_filter;
	ca.binds = slot->cfg.binds;
	ca.nbinds = slot->cfg.nbinds;
	ca.tmp_bytes = SBX_DEFAULT_TMP_BYTES;
	snprintf(ca.tmp_opts, sizeof ca.tmp_opts, "size=%llu,nr_inodes=16384,mode=1777",
		 (unsigned long long)ca.tmp_bytes);
	snprintf(ca.shm_opts, sizeof ca.shm_opts, "size=%llu,nr_inodes=1024,mode=1777",
		 (unsigned long long)ca.tmp_bytes);
	/* warm.c: pre-start the interpreter the way the slot's last Python run used it. */
	ca.warm = slot->warm_on && slot->warm_known;
	ca.warm_opts = slot->warm_opts;
	ca.warm_hint = slot->warm_hint;
	if (ca.warm)
		sbx_warm_sig(slot->warm_sig, sizeof slot->warm_sig);
	{
		struct clone_args args;

		memset(&args, 0, sizeof args);
		/* Born in the slot's network namespace (make_netns), not a new one. */
		args.flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
			     CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD;
		args.pidfd = (uint64_t)(uintptr_t)&w->pidfd;
		args.exit_signal = SIGCHLD;
		if (cgfd >= 0) {
			/* v2: born in the run's group, no migration */
			args.flags |= CLONE_INTO_CGROUP;
			args.cgroup = (uint64_t)cgfd;
		}
		/* ... and in a copy of the template's mount namespace (make_template). */
		if (setns(slot->netns, CLONE_NEWNET) < 0 ||
		    setns(slot->tmpl_mnt, CLONE_NEWNS) < 0) {
			sbx_set_error(err, errlen, "join the slot's namespaces: %s",
				      strerror(errno));
			sbx_slot_return_home(slot);
			goto out;
		}
		/* ... owned by the slot's uid (own_as_slot). */
		if (sbx_slot_own_as_slot(slot->uid) < 0) {
			sbx_set_error(err, errlen, "take the slot's uid: %s", strerror(errno));
			sbx_slot_return_home(slot);
			goto out;
		}
		pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
		e = errno;
		/* The parent returns to its own, whether clone3 worked or not. */
		if (pid != 0) {
			sbx_slot_own_as_root();
			sbx_slot_return_home(slot);
		}
		errno = e;
	}
	if (pid < 0) {
		sbx_set_error(err, errlen, "clone3 into new namespaces: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		sbx_child_main(&ca);
	/* Only the child may hold its ends: a read below must see EOF if it dies in setup. */
	sbx_close_fd(&ctl[1]);
	sbx_close_fd(&sync_p[0]);
	sbx_close_fd(&err_p[1]);
	sbx_close_fd(&status_p[1]);
	sbx_close_fd(&out_p[1]);
	sbx_close_fd(&errout_p[1]);
	w->pid = pid;
	w->ctl = ctl[0];
	w->err_r = err_p[0];
	w->status_r = status_p[0];
	w->out_r = out_p[0];
	w->errout_r = errout_p[0];
	ctl[0] = err_p[0] = status_p[0] = out_p[0] = errout_p[0] = -1;
	w->ready = true;
	if ((e = sbx_slot_write_maps(pid, slot->uid, slot->gid)) < 0) {
		sbx_set_error(err, errlen, "write uid/gid maps: %s", strerror(-e));
		sbx_warm_discard(slot);
		goto out;
	}
	if ((e = sbx_slot_write_ns_limits(pid, false)) < 0) {
		sbx_set_error(err, errlen, "per-namespace limits: %s", strerror(-e));
		sbx_warm_discard(slot);
		goto out;
	}
	if (write(sync_p[1], "g", 1) != 1) {
		sbx_set_error(err, errlen, "release child: %s", strerror(errno));
		sbx_warm_discard(slot);
		goto out;
	}
	/* Wait until the sandbox is built, so a job only pays for attaching /work and exec. */
	if (sbx_slot_await_ready(w->ctl, w->err_r, "sandbox setup", err, errlen) < 0) {
		sbx_warm_discard(slot);
		goto out;
	}
	rc = 0;
out : {
	int fds[] = {sync_p[0], sync_p[1], err_p[0],	err_p[1],    status_p[0], status_p[1],
		     out_p[0],	out_p[1],  errout_p[0], errout_p[1], ctl[0],	  ctl[1]};

	for (i = 0; i < sizeof fds / sizeof *fds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}
	if (rc < 0 && !w->ready) {
		struct sbx_cg_stats st;

		sbx_cg_finish(slot->cg, &st, NULL, 0);
	}
	return rc;
}
