/* run.c: slots and the supervision of one run.
 *
 * Theory of operation. A slot is a process-sized unit of concurrency: its own unprivileged host
 * uid/gid, its own cgroup, a precompiled seccomp filter and a prepared idmapping. sbx_run() then:
 *   1. clones (clone3) a child into new user, pid, mount, net, ipc, uts and cgroup namespaces,
 *      straight into the run's cgroup on v2 (on v1 the slot process already sits in it);
 *   2. writes the child's uid/gid maps (inside uid 1000 -> the slot's host uid; never host 0) and
 *      releases it; the child builds the root, forks the program and becomes its init (child.c);
 *   3. supervises from one epoll loop: the init's pidfd, the output pipes (kept up to the cap,
 *      drained and counted past it), a timerfd for wall time, and a timerfd that re-reads the
 *      cgroup's CPU counter only as often as the remaining CPU budget could run out;
 *   4. on any limit kills the init through its pidfd: the kernel then kills every process of the
 *      pid namespace, so nothing the program started can survive;
 *   5. reads CPU time, peak memory and OOM kills of the whole tree from the cgroup.
 * Any failing step makes the run SBX_INTERNAL_ERROR; nothing ever runs with less isolation. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct sbx_slot {
	struct sbx_config cfg;
	unsigned index;
	uid_t uid;
	gid_t gid;
	struct sbx_cgroup *cg;
	struct sock_fprog filter;
	int idmap_userns; /* user namespace mapping files_uid (on disk) -> the slot's uid */
	long ncpu;
};

const char *sbx_status_name(enum sbx_status s)
{
	static const char *const names[] = {"ok", "error", "signal", "timeout", "memory_limit",
	                                    "output_limit", "internal_error"};

	return (unsigned)s < sizeof names / sizeof *names ? names[s] : "internal_error";
}

const char *sbx_limit_name(enum sbx_limit_kind k)
{
	return k == SBX_LIMIT_WALL ? "wall" : k == SBX_LIMIT_CPU ? "cpu" : NULL;
}

const char *sbx_signal_name(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT",
		[SIGILL] = "SIGILL",   [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
		[SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",   [SIGKILL] = "SIGKILL",
		[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
		[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
		[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
		[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
		[SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG",   [SIGXCPU] = "SIGXCPU",
		[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
		[SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO",   [SIGPWR] = "SIGPWR",
		[SIGSYS] = "SIGSYS",
	};

	if (sig <= 0 || (unsigned)sig >= sizeof names / sizeof *names)
		return NULL;
	return names[sig];
}

void sbx_result_free(struct sbx_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->err);
	memset(res, 0, sizeof *res);
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

struct sbx_slot *sbx_slot_open(const struct sbx_config *cfg, unsigned index, char *err,
                               size_t errlen)
{
	struct sbx_slot *s = calloc(1, sizeof *s);

	if (!s) {
		sbx_set_error(err, errlen, "out of memory");
		return NULL;
	}
	s->idmap_userns = -1;
	s->cfg = *cfg;
	s->index = index;
	s->uid = cfg->uid_base + index;
	s->gid = cfg->uid_base + index;
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
	/* The program must not inherit root's supplementary groups. */
	if (setgroups(0, NULL) < 0) {
		sbx_set_error(err, errlen, "setgroups: %s", strerror(errno));
		goto fail;
	}
	if (sbx_seccomp_build(&s->filter, err, errlen) < 0)
		goto fail;
	s->idmap_userns = make_idmap_userns(cfg->files_uid, cfg->files_gid, s->uid, s->gid, err,
	                                    errlen);
	if (s->idmap_userns < 0)
		goto fail;
	s->cg = sbx_cg_open(cfg->cgroup_name ? cfg->cgroup_name : "sbx", index, err, errlen);
	if (!s->cg)
		goto fail;
	return s;
fail:
	sbx_slot_close(s);
	return NULL;
}

void sbx_slot_close(struct sbx_slot *s)
{
	if (!s)
		return;
	sbx_cg_close(s->cg);
	if (s->idmap_userns >= 0)
		close(s->idmap_userns);
	free(s->filter.filter);
	free(s);
}

static void apply_defaults(struct sbx_limits *l)
{
#define D(f, v) \
	if (!l->f) \
		l->f = v;
	D(wall_ms, SBX_DEFAULT_WALL_MS)
	D(cpu_ms, SBX_DEFAULT_CPU_MS)
	D(memory_bytes, SBX_DEFAULT_MEMORY_BYTES)
	D(processes, SBX_DEFAULT_PROCESSES)
	D(output_bytes, SBX_DEFAULT_OUTPUT_BYTES)
	D(output_hard_bytes, SBX_DEFAULT_OUTPUT_HARD_BYTES)
	D(file_size_bytes, SBX_DEFAULT_FILE_SIZE_BYTES)
	D(open_files, SBX_DEFAULT_OPEN_FILES)
	D(tmp_bytes, SBX_DEFAULT_TMP_BYTES)
#undef D
	if (l->output_hard_bytes < l->output_bytes)
		l->output_hard_bytes = l->output_bytes;
}

struct stream {
	int fd;
	char *buf;
	size_t len, cap;
	uint64_t total;
	bool truncated;
};

/* Read what is there. Returns 1 at EOF, 0 otherwise. */
static int drain(struct stream *st)
{
	char scratch[16384];

	for (;;) {
		char *dst = scratch;
		size_t room = sizeof scratch;
		ssize_t n;

		if (st->len < st->cap) {
			dst = st->buf + st->len;
			room = st->cap - st->len;
		}
		n = read(st->fd, dst, room);
		if (n == 0)
			return 1;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : 1;
		if (dst != scratch)
			st->len += (size_t)n;
		else
			st->truncated = true;
		st->total += (uint64_t)n;
	}
}

static int arm(int tfd, uint64_t ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof its);
	if (ms == 0)
		ms = 1;
	its.it_value.tv_sec = (time_t)(ms / 1000);
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000;
	return timerfd_settime(tfd, 0, &its, NULL);
}

static int write_maps(pid_t pid, uid_t uid, gid_t gid)
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

/* The run failed in step `what` with errno err. */
static int fail(struct sbx_result *res, const char *unused, const char *what, int err)
{
	(void)unused;
	res->status = SBX_INTERNAL_ERROR;
	snprintf(res->message, sizeof res->message, "%s: %s", what, strerror(err));
	return -1;
}

enum kill_reason { KILL_NONE, KILL_WALL, KILL_CPU, KILL_OUTPUT, KILL_SETUP };

int sbx_run(struct sbx_slot *slot, const struct sbx_request *req, struct sbx_result *res)
{
	static const char *const base_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
	                                       "HOME=" SBX_WORK_DIR, "LANG=C.UTF-8",
	                                       "TMPDIR=/tmp", "USER=user", NULL};
	struct sbx_limits lim = req->limits;
	struct sbx_child_args ca;
	struct stream out = {-1, NULL, 0, 0, 0, false}, err = {-1, NULL, 0, 0, 0, false};
	int sync_p[2] = {-1, -1}, err_p[2] = {-1, -1}, status_p[2] = {-1, -1};
	int out_p[2] = {-1, -1}, errout_p[2] = {-1, -1};
	int tree = -1, pidfd = -1, ep = -1, wall_t = -1, cpu_t = -1, cgfd = -1;
	const char **envp = NULL;
	enum kill_reason why = KILL_NONE;
	struct sbx_child_error cerr;
	size_t cerr_len = 0, nenv = 0, i;
	bool init_done = false, out_eof = false, errout_eof = false;
	uint64_t start = 0;
	pid_t pid = -1;
	int rc = -1, wstatus = 0;
	bool have_status = false;
	struct sbx_cg_stats cst;

	memset(res, 0, sizeof *res);
	memset(&ca, 0, sizeof ca);
	memset(&cerr, 0, sizeof cerr);
	apply_defaults(&lim);
	if (!req->argv || !req->argv[0] || req->argv[0][0] != '/') {
		res->status = SBX_INTERNAL_ERROR;
		snprintf(res->message, sizeof res->message,
		         "invalid request: argv[0] must be an absolute path");
		goto out;
	}

	/* Environment: a fixed base plus the caller's entries; nothing of ours leaks in. */
	for (i = 0; req->env && req->env[i]; i++)
		nenv++;
	envp = calloc(nenv + sizeof base_env / sizeof *base_env, sizeof *envp);
	out.cap = lim.output_bytes;
	err.cap = lim.output_bytes;
	out.buf = malloc(out.cap + 1);
	err.buf = malloc(err.cap + 1);
	if (!envp || !out.buf || !err.buf) {
		fail(res, NULL, "allocate run buffers", ENOMEM);
		goto out;
	}
	nenv = 0;
	for (i = 0; base_env[i]; i++) {
		const char *key_end = strchr(base_env[i], '=');
		size_t j, klen = (size_t)(key_end - base_env[i]) + 1;
		bool overridden = false;

		for (j = 0; req->env && req->env[j]; j++)
			if (strncmp(req->env[j], base_env[i], klen) == 0)
				overridden = true;
		if (!overridden)
			envp[nenv++] = base_env[i];
	}
	for (i = 0; req->env && req->env[i]; i++)
		envp[nenv++] = req->env[i];
	envp[nenv] = NULL;

	if (req->workdir_fd >= 0) {
		struct mount_attr attr;
		struct stat st;

		if (fstat(req->workdir_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fail(res, NULL, "work directory", ENOTDIR);
			goto out;
		}
		tree = (int)syscall(SYS_open_tree, req->workdir_fd, "",
		                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (tree < 0) {
			fail(res, NULL, "clone work directory mount", errno);
			goto out;
		}
		memset(&attr, 0, sizeof attr);
		attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		attr.userns_fd = (uint64_t)slot->idmap_userns;
		if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
			fail(res, NULL, "idmap work directory", errno);
			goto out;
		}
	}

	if (pipe2(sync_p, O_CLOEXEC) < 0 || pipe2(err_p, O_CLOEXEC) < 0 ||
	    pipe2(status_p, O_CLOEXEC) < 0 || pipe2(out_p, O_CLOEXEC) < 0 ||
	    pipe2(errout_p, O_CLOEXEC) < 0) {
		fail(res, NULL, "pipes", errno);
		goto out;
	}
	ca.argv = (char *const *)req->argv;
	ca.envp = (char *const *)envp;
	ca.sync_fd = sync_p[0];
	ca.err_fd = err_p[1];
	ca.status_fd = status_p[1];
	ca.out_fd = out_p[1];
	ca.err_out_fd = errout_p[1];
	ca.stdin_fd = req->stdin_fd;
	ca.work_tree_fd = tree;
	ca.limits = &lim;
	ca.filter = &slot->filter;
	ca.binds = slot->cfg.binds;
	ca.nbinds = slot->cfg.nbinds;
	snprintf(ca.tmp_opts, sizeof ca.tmp_opts, "size=%llu,nr_inodes=16384,mode=1777",
	         (unsigned long long)lim.tmp_bytes);
	snprintf(ca.shm_opts, sizeof ca.shm_opts, "size=%llu,nr_inodes=1024,mode=1777",
	         (unsigned long long)lim.tmp_bytes);
	snprintf(ca.work_opts, sizeof ca.work_opts, "size=%llu,nr_inodes=16384,mode=0755",
	         (unsigned long long)lim.tmp_bytes);

	cgfd = sbx_cg_prepare(slot->cg, &lim, res->message, sizeof res->message);
	if (cgfd == -2) {
		res->status = SBX_INTERNAL_ERROR;
		goto out;
	}
	{
		struct clone_args args;

		memset(&args, 0, sizeof args);
		args.flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
		             CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD;
		args.pidfd = (uint64_t)(uintptr_t)&pidfd;
		args.exit_signal = SIGCHLD;
		if (cgfd >= 0) {
			args.flags |= CLONE_INTO_CGROUP;
			args.cgroup = (uint64_t)cgfd;
		}
		pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
	}
	if (pid < 0) {
		fail(res, NULL, "clone3 into new namespaces", errno);
		goto out;
	}
	if (pid == 0)
		sbx_child_main(&ca);

	close(sync_p[0]);
	close(err_p[1]);
	close(status_p[1]);
	close(out_p[1]);
	close(errout_p[1]);
	sync_p[0] = err_p[1] = status_p[1] = out_p[1] = errout_p[1] = -1;
	if (tree >= 0) {
		close(tree);
		tree = -1;
	}
	{
		int e = write_maps(pid, slot->uid, slot->gid);

		if (e < 0) {
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			fail(res, NULL, "write uid/gid maps", -e);
			why = KILL_SETUP;
		}
	}
	start = sbx_now_ms();
	if (why == KILL_NONE && write(sync_p[1], "g", 1) != 1) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		fail(res, NULL, "release child", errno);
		why = KILL_SETUP;
	}
	close(sync_p[1]);
	sync_p[1] = -1;

	out.fd = out_p[0];
	err.fd = errout_p[0];
	fcntl(out.fd, F_SETFL, O_NONBLOCK);
	fcntl(err.fd, F_SETFL, O_NONBLOCK);
	fcntl(err_p[0], F_SETFL, O_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	wall_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	cpu_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || wall_t < 0 || cpu_t < 0 || arm(wall_t, lim.wall_ms) < 0 ||
	    arm(cpu_t, lim.cpu_ms / (uint64_t)slot->ncpu) < 0) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		if (why == KILL_NONE)
			fail(res, NULL, "supervisor setup", errno);
		why = KILL_SETUP;
	}
	{
		int fds[] = {pidfd, out.fd, err.fd, err_p[0], wall_t, cpu_t};

		for (i = 0; ep >= 0 && i < sizeof fds / sizeof *fds; i++) {
			struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};

			if (fds[i] >= 0)
				epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
		}
	}

	while (ep >= 0 && !(init_done && out_eof && errout_eof)) {
		struct epoll_event evs[8];
		int n = epoll_wait(ep, evs, 8, init_done ? 1000 : -1), k;

		if (n < 0 && errno != EINTR)
			break;
		if (n == 0 && init_done)
			break; /* every writer is dead; a pipe cannot stay open */
		for (k = 0; k < n; k++) {
			int fd = evs[k].data.fd;
			uint64_t ticks;

			if (fd == pidfd) {
				init_done = true;
				epoll_ctl(ep, EPOLL_CTL_DEL, pidfd, NULL);
			} else if (fd == out.fd || fd == err.fd) {
				struct stream *st = fd == out.fd ? &out : &err;

				if (drain(st)) {
					epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
					*(fd == out.fd ? &out_eof : &errout_eof) = true;
				}
				if (st->total > lim.output_hard_bytes && why == KILL_NONE) {
					why = KILL_OUTPUT;
					syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == err_p[0]) {
				ssize_t r = read(err_p[0], (char *)&cerr + cerr_len,
				                 sizeof cerr - cerr_len);

				if (r > 0)
					cerr_len += (size_t)r;
				if (r == 0 || (r < 0 && errno != EAGAIN) || cerr_len == sizeof cerr)
					epoll_ctl(ep, EPOLL_CTL_DEL, err_p[0], NULL);
				if (cerr_len == sizeof cerr && why == KILL_NONE) {
					why = KILL_SETUP;
					syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == wall_t) {
				if (read(wall_t, &ticks, sizeof ticks) > 0 && why == KILL_NONE &&
				    !init_done) {
					why = KILL_WALL;
					syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == cpu_t) {
				uint64_t used = 0, limit_ns = lim.cpu_ms * 1000000ull;

				if (read(cpu_t, &ticks, sizeof ticks) <= 0 || init_done)
					continue;
				if (sbx_cg_cpu(slot->cg, &used) == 0 && used >= limit_ns) {
					if (why == KILL_NONE) {
						why = KILL_CPU;
						syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
					}
				} else {
					/* The soonest the budget could run out with every CPU busy. */
					uint64_t left_ms = (limit_ns - used) / 1000000ull /
					                   (uint64_t)slot->ncpu;

					arm(cpu_t, left_ms < 2 ? 2 : left_ms);
				}
			}
		}
	}
	res->wall_ms = sbx_now_ms() - start;
	{
		siginfo_t si;

		memset(&si, 0, sizeof si);
		if (pidfd >= 0 && syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED, NULL) < 0)
			waitpid(pid, NULL, 0);
	}
	if (read(status_p[0], &wstatus, sizeof wstatus) == sizeof wstatus)
		have_status = true;
	/* The error pipe may still hold a report that raced with the init's exit. */
	if (cerr_len < sizeof cerr) {
		ssize_t r = read(err_p[0], (char *)&cerr + cerr_len, sizeof cerr - cerr_len);

		if (r > 0)
			cerr_len += (size_t)r;
	}
	if (sbx_cg_finish(slot->cg, &cst, why == KILL_SETUP ? NULL : res->message,
	                  sizeof res->message) < 0 && why != KILL_SETUP) {
		res->status = SBX_INTERNAL_ERROR;
		goto out;
	}
	res->cpu_ms = cst.cpu_ns / 1000000ull;
	res->memory_kb = cst.peak_bytes / 1024;

	if (cerr_len == sizeof cerr) {
		cerr.step[sizeof cerr.step - 1] = '\0';
		res->status = SBX_INTERNAL_ERROR;
		snprintf(res->message, sizeof res->message, "sandbox setup failed: %s: %s", cerr.step,
		         strerror(cerr.err));
		goto out;
	}
	if (why == KILL_SETUP) {
		res->status = SBX_INTERNAL_ERROR;
		goto out;
	}
	if (why == KILL_WALL || why == KILL_CPU) {
		res->status = SBX_TIMEOUT;
		res->limit = why == KILL_WALL ? SBX_LIMIT_WALL : SBX_LIMIT_CPU;
		res->signal = SIGKILL;
	} else if (why == KILL_OUTPUT) {
		res->status = SBX_OUTPUT_LIMIT;
		res->signal = SIGKILL;
	} else if (cst.oom_kills > 0) {
		res->status = SBX_MEMORY_LIMIT;
		res->signal = SIGKILL;
	} else if (!have_status) {
		res->status = SBX_INTERNAL_ERROR;
		snprintf(res->message, sizeof res->message,
		         "the sandbox's init exited without reporting the program's status");
		goto out;
	} else if (WIFEXITED(wstatus)) {
		res->exit_code = WEXITSTATUS(wstatus);
		res->status = res->exit_code == 0 ? SBX_OK : SBX_ERROR;
	} else if (WIFSIGNALED(wstatus)) {
		res->signal = WTERMSIG(wstatus);
		if (res->signal == SIGXCPU) {
			res->status = SBX_TIMEOUT;
			res->limit = SBX_LIMIT_CPU;
		} else {
			res->status = SBX_SIGNAL;
		}
	}
	rc = 0;
out:
	if (res->status == SBX_INTERNAL_ERROR)
		rc = -1;
	/* Output captured before a kill or a timeout is kept. */
	res->out = out.buf ? out.buf : calloc(1, 1);
	res->err = err.buf ? err.buf : calloc(1, 1);
	res->out_len = out.len;
	res->err_len = err.len;
	res->out[out.len] = '\0';
	res->err[err.len] = '\0';
	res->out_truncated = out.truncated;
	res->err_truncated = err.truncated;
	out.buf = err.buf = NULL;
	free(envp);
	{
		int fds[] = {sync_p[0], sync_p[1], err_p[0], err_p[1], status_p[0], status_p[1],
		             out_p[0], out_p[1], errout_p[0], errout_p[1], tree, pidfd, ep, wall_t,
		             cpu_t};

		for (i = 0; i < sizeof fds / sizeof *fds; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	return rc;
}

int sbx_probe(struct sbx_probe *out)
{
	char cg[256];
	long ns = 0;

	memset(out, 0, sizeof *out);
	out->cgroup_version = sbx_cg_probe(cg, sizeof cg);
	/* The kernel features every run needs; a missing one fails closed here rather than mid-run. */
	if (syscall(SYS_mount_setattr, -1, "", 0, NULL, 0) < 0 && errno == ENOSYS)
		ns = -1;
	if (syscall(SYS_open_tree, -1, "", 0) < 0 && errno == ENOSYS)
		ns = -1;
	if (syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS)
		ns = -1;
	out->usable = out->cgroup_version > 0 && ns == 0;
	snprintf(out->detail, sizeof out->detail, "%s; %s", cg,
	         ns == 0 ? "clone3, open_tree and mount_setattr available"
	                 : "kernel lacks clone3, open_tree or mount_setattr");
	return out->usable ? 0 : -1;
}
