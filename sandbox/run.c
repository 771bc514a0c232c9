/* run.c: the supervision of one run, in a slot (slot.c) whose sandbox is already prepared.
 *
 * Theory of operation. The slot's prepared init (slot.c: clone3 into new user, pid, mount, ipc,
 * uts and cgroup namespaces, uid/gid maps written, root built) waits for a job. sbx_run() then:
 *   1. sends it the job: limits, argv, environment, and the work directory as a detached
 *      idmapped mount; the init attaches it, forks the program and waits for it (child.c);
 *   2. supervises from one epoll loop: the init's pidfd, the output pipes (kept up to the cap,
 *      drained and counted past it), a timerfd for wall time, and a timerfd that re-reads the
 *      cgroup's CPU counter only as often as the remaining CPU budget could run out;
 *   3. on any limit kills the init through its pidfd: the kernel then kills every process of the
 *      pid namespace, so nothing the program started can survive;
 *   4. reads CPU time, peak memory and OOM kills of the whole tree from the cgroup.
 * Any failing step makes the run SBX_INTERNAL_ERROR; nothing ever runs with less isolation. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

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

/* Capture buffers are fresh anonymous mappings, not heap memory: heap pages touched before the
 * prepared init was forked stay copy-on-write shared with it for the whole run, and each first
 * write to one costs a page copy and a TLB-flush IPI to the other CPUs (perf: about 0.5 ms of a
 * run's CPU under load). */
static char *capture_alloc(size_t cap)
{
	void *p = mmap(NULL, cap + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The caller's copy (malloc'ed, NUL-terminated), made once the init is gone; the mapping goes. */
static char *capture_take(struct stream *st)
{
	char *copy;

	if (!st->buf)
		return calloc(1, 1);
	copy = malloc(st->len + 1);
	if (copy) {
		memcpy(copy, st->buf, st->len);
		copy[st->len] = '\0';
	}
	munmap(st->buf, st->cap + 1);
	st->buf = NULL;
	return copy;
}

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

/* Send the job header with its descriptors, then the strings. */
static int send_job(int ctl, const struct sbx_job *job, const int *fds, int nfds,
                    const char *strings)
{
	if (sbx_send_fds(ctl, job, sizeof *job, fds, nfds) < 0)
		return -1;
	return sbx_write_all(ctl, strings, job->strings_len);
}

/* argv then the environment (a fixed base, overridable, plus the caller's entries) as
 * NUL-terminated strings. Returns a malloc'ed buffer (caller frees) or NULL. */
static char *serialize(const struct sbx_request *req, struct sbx_job *job)
{
	static const char *const base_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
					       "HOME=" SBX_WORK_DIR, "LANG=C.UTF-8", "TMPDIR=/tmp",
					       "USER=user",
					       /* matplotlib: no display, and a writable config
						  and font-cache dir (HOME may be read-only) */
					       "MPLBACKEND=Agg", "MPLCONFIGDIR=/tmp", NULL};
	size_t len = 0, off = 0, i, j;
	char *buf;

	for (i = 0; req->argv[i]; i++)
		len += strlen(req->argv[i]) + 1;
	for (i = 0; base_env[i]; i++)
		len += strlen(base_env[i]) + 1;
	for (i = 0; req->env && req->env[i]; i++)
		len += strlen(req->env[i]) + 1;
	if (len > SBX_MAX_ARGS_BYTES || i > SBX_MAX_ARGS)
		return NULL;
	buf = malloc(len + 1);
	if (!buf)
		return NULL;
	job->argc = job->envc = 0;
	for (i = 0; req->argv[i] && job->argc < SBX_MAX_ARGS; i++, job->argc++) {
		memcpy(buf + off, req->argv[i], strlen(req->argv[i]) + 1);
		off += strlen(req->argv[i]) + 1;
	}
	for (i = 0; base_env[i]; i++) {
		size_t klen = (size_t)(strchr(base_env[i], '=') - base_env[i]) + 1;
		bool overridden = false;

		for (j = 0; req->env && req->env[j]; j++)
			if (strncmp(req->env[j], base_env[i], klen) == 0)
				overridden = true;
		if (overridden)
			continue;
		memcpy(buf + off, base_env[i], strlen(base_env[i]) + 1);
		off += strlen(base_env[i]) + 1;
		job->envc++;
	}
	for (i = 0; req->env && req->env[i] && job->envc < SBX_MAX_ARGS; i++, job->envc++) {
		memcpy(buf + off, req->env[i], strlen(req->env[i]) + 1);
		off += strlen(req->env[i]) + 1;
	}
	job->strings_len = (uint32_t)off;
	return buf;
}

static void internal(struct sbx_result *res, const char *what, int err)
{
	res->status = SBX_INTERNAL_ERROR;
	if (err)
		snprintf(res->message, sizeof res->message, "%s: %s", what, strerror(err));
	else
		snprintf(res->message, sizeof res->message, "%s", what);
}

enum kill_reason { KILL_NONE, KILL_WALL, KILL_CPU, KILL_OUTPUT, KILL_SETUP, KILL_CANCEL };

int sbx_run(struct sbx_slot *slot, const struct sbx_request *req, struct sbx_result *res)
{
	struct warm *w = &slot->w;
	struct sbx_job job;
	struct stream out = {-1, NULL, 0, 0, 0, false}, err = {-1, NULL, 0, 0, 0, false};
	int tree = -1, ep = -1, wall_t = -1, cpu_t = -1, fds[2], nfds = 0;
	char *strings = NULL;
	enum kill_reason why = KILL_NONE;
	struct sbx_child_error cerr;
	size_t cerr_len = 0, i;
	bool init_done = false, out_eof = false, errout_eof = false, have_status = false;
	bool consumed = false;
	uint64_t start = sbx_now_ms();
	int rc = -1, wstatus = 0;
	struct sbx_cg_stats cst;

	memset(res, 0, sizeof *res);
	memset(&job, 0, sizeof job);
	memset(&cerr, 0, sizeof cerr);
	job.limits = req->limits;
	apply_defaults(&job.limits);
	if (!req->argv || !req->argv[0] || req->argv[0][0] != '/') {
		internal(res, "invalid request: argv[0] must be an absolute path", 0);
		goto out;
	}
	strings = serialize(req, &job);
	out.cap = err.cap = job.limits.output_bytes;
	out.buf = capture_alloc(out.cap);
	err.buf = capture_alloc(err.cap);
	if (!strings || !out.buf || !err.buf) {
		internal(res, "invalid request: arguments too large, or out of memory", 0);
		goto out;
	}
	if (req->workdir_fd >= 0) {
		struct mount_attr attr;
		struct stat st;

		if (fstat(req->workdir_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
			internal(res, "work directory", ENOTDIR);
			goto out;
		}
		/* A private copy of the directory's mount, idmapped so the program's uid writes
		 * as the files' owner; the child attaches it at /work. */
		tree = (int)syscall(SYS_open_tree, req->workdir_fd, "",
		                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (tree < 0) {
			internal(res, "clone work directory mount", errno);
			goto out;
		}
		memset(&attr, 0, sizeof attr);
		attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		attr.userns_fd = (uint64_t)slot->idmap_userns;
		if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
			internal(res, "idmap work directory", errno);
			goto out;
		}
		fds[nfds++] = tree;
		job.has_tree = 1;
	}
	if (req->stdin_fd >= 0) {
		fds[nfds++] = req->stdin_fd;
		job.has_stdin = 1;
	}
	/* A prepared sandbox that died while waiting (killed from outside, say) is replaced, not
	 * reported: the request never touched it. */
	if (w->ready) {
		struct pollfd pf = {w->pidfd, POLLIN, 0};

		if (poll(&pf, 1, 0) != 0) {
			struct sbx_cg_stats st;

			sbx_warm_discard(slot);
			sbx_cg_finish(slot->cg, &st, NULL, 0);
		}
	}
	if (sbx_slot_prewarm(slot, res->message, sizeof res->message) < 0) {
		res->status = SBX_INTERNAL_ERROR;
		goto out;
	}
	consumed = true;
	if (sbx_cg_prepare(slot->cg, &job.limits, res->message, sizeof res->message) < 0) {
		res->status = SBX_INTERNAL_ERROR;
		why = KILL_SETUP;
		goto reap;
	}
	start = sbx_now_ms();
	if (send_job(w->ctl, &job, fds, nfds, strings) < 0) {
		/* the init may have died in setup: its report below says why */
		internal(res, "hand the job to the sandbox", errno);
		why = KILL_SETUP;
		syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
	}
	sbx_close_fd(&tree);
	sbx_close_fd(&w->ctl);

	out.fd = w->out_r;
	err.fd = w->errout_r;
	fcntl(out.fd, F_SETFL, O_NONBLOCK);
	fcntl(err.fd, F_SETFL, O_NONBLOCK);
	fcntl(w->err_r, F_SETFL, O_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	wall_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	cpu_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || wall_t < 0 || cpu_t < 0 || arm(wall_t, job.limits.wall_ms) < 0 ||
	    arm(cpu_t, job.limits.cpu_ms / (uint64_t)slot->ncpu) < 0) {
		syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
		if (why == KILL_NONE)
			internal(res, "supervisor setup", errno);
		why = KILL_SETUP;
	}
	{
		int watch[] = {w->pidfd, out.fd, err.fd, w->err_r, wall_t, cpu_t, req->cancel_fd};

		for (i = 0; ep >= 0 && i < sizeof watch / sizeof *watch; i++) {
			struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = watch[i]};

			if (watch[i] >= 0)
				epoll_ctl(ep, EPOLL_CTL_ADD, watch[i], &ev);
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

			if (fd == req->cancel_fd) {
				/* The caller gave up (its connection closed, or the server is stopping):
				 * nobody will read the result, so the run must not go on. */
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				if (why == KILL_NONE && !init_done) {
					why = KILL_CANCEL;
					syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == w->pidfd) {
				init_done = true;
				epoll_ctl(ep, EPOLL_CTL_DEL, w->pidfd, NULL);
			} else if (fd == out.fd || fd == err.fd) {
				struct stream *st = fd == out.fd ? &out : &err;

				if (drain(st)) {
					epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
					*(fd == out.fd ? &out_eof : &errout_eof) = true;
				}
				if (st->total > job.limits.output_hard_bytes && why == KILL_NONE) {
					why = KILL_OUTPUT;
					syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == w->err_r) {
				ssize_t r = read(w->err_r, (char *)&cerr + cerr_len,
				                 sizeof cerr - cerr_len);

				if (r > 0)
					cerr_len += (size_t)r;
				if (r == 0 || (r < 0 && errno != EAGAIN) || cerr_len == sizeof cerr)
					epoll_ctl(ep, EPOLL_CTL_DEL, w->err_r, NULL);
				if (cerr_len == sizeof cerr && why == KILL_NONE) {
					why = KILL_SETUP;
					syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == wall_t) {
				if (read(wall_t, &ticks, sizeof ticks) > 0 && why == KILL_NONE &&
				    !init_done) {
					why = KILL_WALL;
					syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
				}
			} else if (fd == cpu_t) {
				uint64_t used = 0, limit_ns = job.limits.cpu_ms * 1000000ull;

				if (read(cpu_t, &ticks, sizeof ticks) <= 0 || init_done)
					continue;
				if (sbx_cg_cpu(slot->cg, &used) == 0 && used >= limit_ns) {
					if (why == KILL_NONE) {
						why = KILL_CPU;
						syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
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
reap:
	res->wall_ms = sbx_now_ms() - start;
	if (why == KILL_SETUP)
		syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
	{
		siginfo_t si;

		memset(&si, 0, sizeof si);
		if (syscall(SYS_waitid, P_PIDFD, w->pidfd, &si, WEXITED, NULL) < 0)
			waitpid(w->pid, NULL, 0);
		sbx_close_fd(&w->pidfd);
	}
	if (read(w->status_r, &wstatus, sizeof wstatus) == sizeof wstatus)
		have_status = true;
	/* The error pipe may still hold a report that raced with the init's exit. */
	if (cerr_len < sizeof cerr) {
		ssize_t r = read(w->err_r, (char *)&cerr + cerr_len, sizeof cerr - cerr_len);

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
	if (why == KILL_CANCEL) {
		internal(res, "the run was cancelled: its caller went away", 0);
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
		internal(res, "the sandbox's init exited without reporting the program's status", 0);
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
	if (consumed)
		sbx_warm_discard(slot); /* a sandbox serves exactly one job */
	/* Output captured before a kill or a timeout is kept. */
	res->out = capture_take(&out);
	res->err = capture_take(&err);
	res->out_len = res->out ? out.len : 0;
	res->err_len = res->err ? err.len : 0;
	res->out_truncated = out.truncated;
	res->err_truncated = err.truncated;
	free(strings);
	sbx_close_fd(&tree);
	sbx_close_fd(&ep);
	sbx_close_fd(&wall_t);
	sbx_close_fd(&cpu_t);
	return rc;
}
