/* run.c: the supervision of one run, in a slot (slot.c) whose sandbox is already prepared.
 *
 * Theory of operation. The slot's prepared init (slot.c: clone3 into new user, pid, mount, ipc,
 * uts and cgroup namespaces, uid/gid maps written, root built) waits for a job. sbx_run() is a
 * column of named steps:
 *   check_request  limits completed, argv[0] absolute, strings serialized, capture buffers;
 *   attach_files   the work directory cloned as a detached idmapped mount, stdin as it is;
 *   attach_layer   a package layer, if asked for, cloned as a detached read-only mount;
 *   take_sandbox   the prepared sandbox taken (rebuilt if it died waiting): used once, then gone;
 *   start_job      the cgroup's limits set, then the job sent; the init attaches /work, forks the
 *                  program (or hands the job to the Python interpreter it pre-started, warm.c)
 *                  and waits for it (child.c);
 *   watch          one epoll over the init's pidfd, the capture pipes, the error pipe, a timerfd
 *                  for wall time, a timerfd that re-reads the cgroup's CPU counter only as often
 *                  as the remaining budget could run out, and the caller's cancel descriptor;
 *   supervise      on any limit the init is killed through its pidfd: the kernel then kills every
 *                  process of the pid namespace, so nothing the program started can survive;
 *   reap           the init waited for, the program's wait status and any error report read;
 *   measure        CPU time, peak memory and OOM kills of the whole tree, from the cgroup;
 *   sbx_outcome    what the run's outcome was, decided from those facts alone (outcome.c, pure);
 *   release        the sandbox discarded, the captured output handed over, everything closed.
 * Any failing step makes the run SBX_INTERNAL_ERROR; nothing ever runs with less isolation.
 *
 * The descriptors a slot, its init and a run share. "slot" is the slot process (sbxd's child,
 * root, host namespaces); "init" is PID 1 of the prepared sandbox; "program" is what the init
 * forks and execs, with everything it starts. All are close-on-exec unless said otherwise.
 *
 *   descriptor     made by          written by          read by             closed by
 *   -------------  ---------------  ------------------  ------------------  -----------------
 *   Slot lifetime (sbx_slot_open .. sbx_slot_close); kept out of every init (child.c):
 *   idmap_userns   slot: open       -                   attach_files        slot close
 *   netns,         slot: open,      -                   slot: setns before  slot close (or a
 *   tmpl_mnt       template build                       clone3              template rebuild)
 *   host_netns,    slot: open       -                   slot: setns after   slot close
 *   host_mnt/cwd                                        clone3
 *   cgroup run     cgroup.c:        -                   clone3 (v2:         cgroup.c
 *   dir            sbx_cg_prewarm                       INTO_CGROUP)
 *   template ctl,  make_template    helper: 'r' or an   slot: await_ready   slot at once: the
 *   err pipe                        error report                            helper sees EOF
 *   Prepared sandbox (sbx_slot_prewarm .. sbx_warm_discard), used by exactly one run:
 *   pidfd          clone3 PIDFD     -                   supervise (exit),   reap, or
 *                                                       kill_for, reap      warm_discard
 *   sync pipe      prewarm          slot: 'g' once the  init: once          init: at once;
 *                                   id maps are set                         slot: prewarm end
 *   ctl socket     prewarm          init: 'r' (ready);  slot: await_ready;  slot: start_job;
 *   pair                            slot: the job with  init: recv_job      init: after the
 *                                   tree and stdin                          fork (close_range)
 *   err pipe       prewarm          init or program:    slot: await_ready,  init: after fork;
 *                                   a failed step's     supervise, reap     program: at exec;
 *                                   sbx_child_error                         slot: warm_discard
 *   status pipe    prewarm          init (as fd 3):     reap                init: its exit;
 *                                   the wait status                         slot: warm_discard
 *   out, errout    prewarm          program: fds 1, 2   supervise (drain)   init: after fork;
 *   pipes                           (kept across exec)                      slot: warm_discard;
 *                                                                           EOF: tree is dead
 *   One run (sbx_run):
 *   workdir_fd     caller           -                   attach_files        caller
 *   tree           attach_files     -                   init: move_mount    start_job; init,
 *                  (open_tree)                          at /work            once attached
 *   layer_fd       caller           -                   attach_layer        caller
 *   layer          attach_layer     -                   init: move_mount    start_job; init,
 *                  (open_tree)                          at SBX_LAYER_DIR    once attached
 *   stdin_fd       caller: regular  -                   program: fd 0       caller; init
 *                  file or memfd                                            after the fork
 *   cancel_fd      caller: client   -                   supervise           caller
 *                  connection
 *   ep, wall_t,    watch            timers: watch,      supervise           release
 *   cpu_t                           on_cpu_timer
 */
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
#include "outcome.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

void sbx_limits_defaults(struct sbx_limits *l)
{
#define D(f, v)                                                                                    \
	if (!l->f)                                                                                 \
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
char *sbx_job_serialize(const struct sbx_request *req, struct sbx_job *job)
{
	static const char *const base_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
					       "HOME=" SBX_WORK_DIR, "LANG=C.UTF-8", "TMPDIR=/tmp",
					       "USER=user",
					       /* matplotlib: no display, and a writable config and
						  font-cache dir (HOME may be read-only) */
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

/* ---- one run: its state, then its steps in the order sbx_run takes them ---- */

struct run {
	struct sbx_slot *slot;
	struct warm *w; /* the slot's prepared sandbox, which this run consumes */
	const struct sbx_request *req;
	struct sbx_result *res;
	struct sbx_job job;
	char *strings;		/* the job's argv and environment, serialized */
	int fds[3], nfds;	/* descriptors sent with the job: the tree, stdin, the layer */
	int tree;		/* the idmapped clone of the work directory's mount */
	int layer;		/* the read-only clone of the layer's mount, or -1 */
	struct stream out, err; /* the capture pipes, read into their buffers */
	int ep, wall_t, cpu_t;	/* the supervisor's epoll and its two timers */
	uint64_t start;		/* when the job was handed over (ms) */
	bool consumed;		/* the prepared sandbox was used: discard it, whatever happened */
	bool init_done, out_eof, errout_eof;
	struct sbx_child_error cerr; /* the init's error report, as far as it arrived */
	size_t cerr_len;
	struct sbx_run_facts facts;	   /* what sbx_outcome decides from */
	const struct sbx_run_hooks *hooks; /* live runs (runs.c); NULL for an ordinary run */
	uint32_t hook_events[3];	   /* what each hook descriptor is watched for now */
};

static void run_init(struct run *r, struct sbx_slot *slot, const struct sbx_request *req,
		     struct sbx_result *res)
{
	memset(r, 0, sizeof *r);
	memset(res, 0, sizeof *res);
	r->slot = slot;
	r->w = &slot->w;
	r->req = req;
	r->res = res;
	r->tree = r->layer = r->ep = r->wall_t = r->cpu_t = -1;
	r->out.fd = r->err.fd = -1;
	r->start = sbx_now_ms();
}

/* Kill the init, and with it every process of the run's pid namespace, for the first reason
 * only: what the run is reported as is why it was first killed (outcome.h). */
static void kill_for(struct run *r, enum sbx_kill_reason why)
{
	if (r->facts.killed != SBX_KILL_NONE)
		return;
	r->facts.killed = why;
	syscall(SYS_pidfd_send_signal, r->w->pidfd, SIGKILL, NULL, 0);
}

/* 1. The request as sbx_run accepts it: limits completed, argv[0] absolute, strings and capture
 * buffers within bounds. */
static int check_request(struct run *r)
{
	r->job.limits = r->req->limits;
	sbx_limits_defaults(&r->job.limits);
	if (!r->req->argv || !r->req->argv[0] || r->req->argv[0][0] != '/') {
		internal(r->res, "invalid request: argv[0] must be an absolute path", 0);
		return -1;
	}
	r->strings = sbx_job_serialize(r->req, &r->job);
	r->out.cap = r->err.cap = r->job.limits.output_bytes;
	r->out.buf = capture_alloc(r->out.cap);
	r->err.buf = capture_alloc(r->err.cap);
	if (!r->strings || !r->out.buf || !r->err.buf) {
		internal(r->res, "invalid request: arguments too large, or out of memory", 0);
		return -1;
	}
	return 0;
}

/* 2. The work directory as a detached mount for the init to attach at /work: a private copy,
 * idmapped so the program's uid writes as the files' owner. Then stdin, as it is. */
static int attach_files(struct run *r)
{
	int dir = r->req->workdir_fd;

	if (dir >= 0) {
		struct mount_attr attr;
		struct stat st;

		if (fstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			internal(r->res, "work directory", ENOTDIR);
			return -1;
		}
		r->tree = (int)syscall(SYS_open_tree, dir, "",
				       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (r->tree < 0) {
			internal(r->res, "clone work directory mount", errno);
			return -1;
		}
		memset(&attr, 0, sizeof attr);
		attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		attr.userns_fd = (uint64_t)r->slot->idmap_userns;
		if (syscall(SYS_mount_setattr, r->tree, "", AT_EMPTY_PATH, &attr, sizeof attr) <
		    0) {
			internal(r->res, "idmap work directory", errno);
			return -1;
		}
		r->fds[r->nfds++] = r->tree;
		r->job.has_tree = 1;
	}
	if (r->req->stdin_fd >= 0) {
		r->fds[r->nfds++] = r->req->stdin_fd;
		r->job.has_stdin = 1;
	}
	return 0;
}

/* 2b. The request's layer, a detached clone of its directory made read-only, nosuid, nodev (not
 * idmapped: its files stay the service's, which the program's uid is not), for the init to
 * attach at SBX_LAYER_DIR. Every run naming the directory sees the same inodes. Fails closed. */
static int attach_layer(struct run *r)
{
	struct mount_attr attr;
	struct stat st;

	if (r->req->layer_fd <= 0)
		return 0;
	if (fstat(r->req->layer_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		internal(r->res, "layer directory", ENOTDIR);
		return -1;
	}
	r->layer = (int)syscall(SYS_open_tree, r->req->layer_fd, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (r->layer < 0) {
		internal(r->res, "clone layer mount", errno);
		return -1;
	}
	memset(&attr, 0, sizeof attr);
	attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	if (syscall(SYS_mount_setattr, r->layer, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof attr) < 0) {
		internal(r->res, "read-only layer", errno);
		return -1;
	}
	r->fds[r->nfds++] = r->layer;
	r->job.has_layer = 1;
	return 0;
}

/* 3. The slot's prepared sandbox, built now if it is not ready. One that died while waiting
 * (killed from outside, say) is replaced, not reported: the request never touched it. From here
 * on the sandbox is this run's, and is discarded after it. */
static int take_sandbox(struct run *r)
{
	/* warm.c: a Python run tells the slot how to pre-start the next interpreter; one prepared
	 * before the host's interpreter or libraries changed is dropped, and the template too. */
	sbx_warm_note(r->slot, r->req->argv, r->req->env);
	if (r->w->ready && r->slot->warm_on && r->slot->warm_known) {
		char sig[sizeof r->slot->warm_sig];

		sbx_warm_sig(sig, sizeof sig);
		if (strcmp(sig, r->slot->warm_sig) != 0) {
			struct sbx_cg_stats st;

			sbx_warm_discard(r->slot);
			sbx_cg_finish(r->slot->cg, &st, NULL, 0);
			r->slot->tmpl_stale = true;
		}
	}
	if (r->w->ready) {
		struct pollfd pf = {r->w->pidfd, POLLIN, 0};

		if (poll(&pf, 1, 0) != 0) {
			struct sbx_cg_stats st;

			sbx_warm_discard(r->slot);
			sbx_cg_finish(r->slot->cg, &st, NULL, 0);
		}
	}
	/* A sandbox dropped here is rebuilt while the job waits: no zygote starts for it (warm.c
	 * decided before these drops). */
	if (!r->w->ready)
		r->slot->zyg_waiting = true;
	if (sbx_slot_prewarm(r->slot, r->res->message, sizeof r->res->message) < 0) {
		r->res->status = SBX_INTERNAL_ERROR;
		return -1;
	}
	r->consumed = true;
	return 0;
}

/* 4. The cgroup's limits set and counters reset, then the job handed to the init, which
 * attaches /work, forks the program and waits for it (child.c). The clock starts here. Returns
 * -1 when there is nothing to supervise (the cgroup could not be prepared). */
static int start_job(struct run *r)
{
	if (sbx_cg_prepare(r->slot->cg, &r->job.limits, r->res->message, sizeof r->res->message) <
	    0) {
		r->res->status = SBX_INTERNAL_ERROR;
		r->facts.killed = SBX_KILL_SETUP;
		return -1;
	}
	r->start = sbx_now_ms();
	if (send_job(r->w->ctl, &r->job, r->fds, r->nfds, r->strings) < 0) {
		/* the init may have died in setup: its report, read while supervising, says why */
		internal(r->res, "hand the job to the sandbox", errno);
		kill_for(r, SBX_KILL_SETUP);
	}
	sbx_close_fd(&r->tree);
	sbx_close_fd(&r->layer);
	sbx_close_fd(&r->w->ctl);
	return 0;
}

/* 5. What the supervisor waits on: the init's pidfd, the capture pipes, the error pipe, the
 * wall timer, the CPU timer (first set for the soonest the budget could run out on every CPU)
 * and the caller's cancel descriptor. */
static void watch(struct run *r)
{
	struct warm *w = r->w;
	size_t i;

	r->out.fd = w->out_r;
	r->err.fd = w->errout_r;
	fcntl(r->out.fd, F_SETFL, O_NONBLOCK);
	fcntl(r->err.fd, F_SETFL, O_NONBLOCK);
	fcntl(w->err_r, F_SETFL, O_NONBLOCK);
	r->ep = epoll_create1(EPOLL_CLOEXEC);
	r->wall_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	r->cpu_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (r->ep < 0 || r->wall_t < 0 || r->cpu_t < 0 ||
	    arm(r->wall_t, r->job.limits.wall_ms) < 0 ||
	    arm(r->cpu_t, r->job.limits.cpu_ms / (uint64_t)r->slot->ncpu) < 0) {
		if (r->facts.killed == SBX_KILL_NONE)
			internal(r->res, "supervisor setup", errno);
		syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
		r->facts.killed = SBX_KILL_SETUP;
	}
	{
		int fds[] = {w->pidfd,	r->out.fd, r->err.fd,	     w->err_r,
			     r->wall_t, r->cpu_t,  r->req->cancel_fd};

		for (i = 0; r->ep >= 0 && i < sizeof fds / sizeof *fds; i++) {
			struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fds[i]};

			if (fds[i] >= 0)
				epoll_ctl(r->ep, EPOLL_CTL_ADD, fds[i], &ev);
		}
	}
	for (i = 0; r->hooks && i < 3; i++)
		sbx_run_watch(r, (int)i, r->hooks->events[i]);
}

void sbx_run_watch(struct run *r, int i, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.fd = r->hooks->fds[i]};
	int op = !r->hook_events[i] ? EPOLL_CTL_ADD : events ? EPOLL_CTL_MOD : EPOLL_CTL_DEL;

	if (r->ep < 0 || r->hooks->fds[i] < 0 || (!events && !r->hook_events[i]) ||
	    events == r->hook_events[i])
		return;
	if (epoll_ctl(r->ep, op, r->hooks->fds[i], &ev) == 0)
		r->hook_events[i] = events;
}

void sbx_run_kept(struct run *r, const char **out, size_t *out_len, const char **err,
		  size_t *err_len)
{
	*out = r->out.buf;
	*out_len = r->out.buf ? r->out.len : 0;
	*err = r->err.buf;
	*err_len = r->err.buf ? r->err.len : 0;
}

int sbx_run_signal(struct run *r, int sig)
{
	if (r->init_done || r->w->pidfd < 0)
		return -ESRCH;
	return sbx_cg_signal(r->slot->cg, sig, r->w->pid);
}

/* The caller gave up (its connection closed, or the server is stopping): nobody will read the
 * result, so the run must not go on. */
static void on_cancel(struct run *r)
{
	epoll_ctl(r->ep, EPOLL_CTL_DEL, r->req->cancel_fd, NULL);
	if (!r->init_done)
		kill_for(r, SBX_KILL_CANCEL);
}

static void on_init_exit(struct run *r)
{
	r->init_done = true;
	epoll_ctl(r->ep, EPOLL_CTL_DEL, r->w->pidfd, NULL);
}

/* Output is kept up to the cap, then drained and counted; past the hard cap the run dies. */
static void on_output(struct run *r, int fd)
{
	struct stream *st = fd == r->out.fd ? &r->out : &r->err;

	if (drain(st)) {
		epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL);
		*(fd == r->out.fd ? &r->out_eof : &r->errout_eof) = true;
	}
	if (st->total > r->job.limits.output_hard_bytes)
		kill_for(r, SBX_KILL_OUTPUT);
	if (r->hooks && r->hooks->output)
		r->hooks->output(r->hooks->arg, r, r->out.buf, r->out.len, r->err.buf, r->err.len);
}

/* A whole error report from the init is a failed setup step: nothing of the job may go on. */
static void on_child_error(struct run *r)
{
	ssize_t n = read(r->w->err_r, (char *)&r->cerr + r->cerr_len, sizeof r->cerr - r->cerr_len);

	if (n > 0)
		r->cerr_len += (size_t)n;
	if (n == 0 || (n < 0 && errno != EAGAIN) || r->cerr_len == sizeof r->cerr)
		epoll_ctl(r->ep, EPOLL_CTL_DEL, r->w->err_r, NULL);
	if (r->cerr_len == sizeof r->cerr)
		kill_for(r, SBX_KILL_SETUP);
}

static void on_wall_timer(struct run *r)
{
	uint64_t ticks;

	if (read(r->wall_t, &ticks, sizeof ticks) > 0 && !r->init_done) {
		/* Read before the kill frees it: a run crawling at its memory limit (outcome.h). */
		if (!r->facts.killed && sbx_cg_anon(r->slot->cg, &r->facts.anon_at_kill) == 0)
			r->facts.memory_limit = r->job.limits.memory_bytes;
		kill_for(r, SBX_KILL_WALL);
	}
}

/* The CPU counter is read only as often as the remaining budget could run out. */
static void on_cpu_timer(struct run *r)
{
	uint64_t ticks, used = 0, again;

	if (read(r->cpu_t, &ticks, sizeof ticks) <= 0 || r->init_done)
		return;
	if (sbx_cg_cpu(r->slot->cg, &used) < 0)
		used = 0;
	again = sbx_cpu_recheck_ms(r->job.limits.cpu_ms, used, r->slot->ncpu);
	if (again == 0)
		kill_for(r, SBX_KILL_CPU);
	else
		arm(r->cpu_t, again);
}

static void on_hook(struct run *r, int fd, uint32_t events)
{
	int i;

	for (i = 0; i < 3; i++)
		if (fd == r->hooks->fds[i]) {
			r->hooks->ready(r->hooks->arg, r, i, events);
			return;
		}
}

/* 6. Until the init is dead and both pipes are at EOF (or stay silent a second after its
 * death: every writer is gone then, a pipe cannot stay open). */
static void supervise(struct run *r)
{
	while (r->ep >= 0 && !(r->init_done && r->out_eof && r->errout_eof)) {
		struct epoll_event evs[8];
		int n = epoll_wait(r->ep, evs, 8, r->init_done ? 1000 : -1), k;

		if (n < 0 && errno != EINTR)
			break;
		if (n == 0 && r->init_done)
			break;
		for (k = 0; k < n; k++) {
			int fd = evs[k].data.fd;

			if (fd == r->req->cancel_fd)
				on_cancel(r);
			else if (fd == r->w->pidfd)
				on_init_exit(r);
			else if (fd == r->out.fd || fd == r->err.fd)
				on_output(r, fd);
			else if (fd == r->w->err_r)
				on_child_error(r);
			else if (fd == r->wall_t)
				on_wall_timer(r);
			else if (fd == r->cpu_t)
				on_cpu_timer(r);
			else if (r->hooks)
				on_hook(r, fd, evs[k].events);
		}
	}
}

/* 7. The init waited for (killed first if the sandbox failed), its report of the program's wait
 * status read, and whatever of an error report raced with its exit. */
static void reap(struct run *r)
{
	struct warm *w = r->w;
	siginfo_t si;

	r->res->wall_ms = sbx_now_ms() - r->start;
	if (r->facts.killed == SBX_KILL_SETUP)
		syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
	memset(&si, 0, sizeof si);
	if (syscall(SYS_waitid, P_PIDFD, w->pidfd, &si, WEXITED, NULL) < 0)
		waitpid(w->pid, NULL, 0);
	sbx_close_fd(&w->pidfd);
	if (read(w->status_r, &r->facts.wstatus, sizeof r->facts.wstatus) ==
	    sizeof r->facts.wstatus)
		r->facts.have_status = true;
	if (r->cerr_len < sizeof r->cerr) {
		ssize_t n =
		    read(w->err_r, (char *)&r->cerr + r->cerr_len, sizeof r->cerr - r->cerr_len);

		if (n > 0)
			r->cerr_len += (size_t)n;
	}
	if (r->cerr_len == sizeof r->cerr) {
		r->cerr.step[sizeof r->cerr.step - 1] = '\0';
		r->facts.child_failed = true;
		r->facts.child_errno = r->cerr.err;
		r->facts.child_step = r->cerr.step;
	}
}

/* 8. The cgroup emptied (leftovers killed) and read: CPU time, peak memory, OOM kills. */
static void measure(struct run *r)
{
	bool setup = r->facts.killed == SBX_KILL_SETUP;
	struct sbx_cg_stats cst;

	memset(&cst, 0, sizeof cst);
	if (sbx_cg_finish(r->slot->cg, &cst, setup ? NULL : r->res->message,
			  sizeof r->res->message) < 0 &&
	    !setup) {
		r->facts.cgroup_failed = true;
		return;
	}
	r->res->cpu_ms = cst.cpu_ns / 1000000ull;
	r->res->memory_kb = cst.peak_bytes / 1024;
	r->facts.oom_kills = cst.oom_kills;
}

/* 10. The sandbox discarded (it serves exactly one job), the output handed over (what was
 * captured before a kill or a timeout is kept), everything of the run closed. */
static void release(struct run *r)
{
	struct sbx_result *res = r->res;

	if (r->consumed)
		sbx_warm_discard(r->slot);
	res->out = capture_take(&r->out);
	res->err = capture_take(&r->err);
	res->out_len = res->out ? r->out.len : 0;
	res->err_len = res->err ? r->err.len : 0;
	res->out_truncated = r->out.truncated;
	res->err_truncated = r->err.truncated;
	free(r->strings);
	sbx_close_fd(&r->tree);
	sbx_close_fd(&r->layer);
	sbx_close_fd(&r->ep);
	sbx_close_fd(&r->wall_t);
	sbx_close_fd(&r->cpu_t);
}

int sbx_run(struct sbx_slot *slot, const struct sbx_request *req, struct sbx_result *res)
{
	return sbx_run_hooked(slot, req, NULL, res);
}

int sbx_run_hooked(struct sbx_slot *slot, const struct sbx_request *req,
		   const struct sbx_run_hooks *hooks, struct sbx_result *res)
{
	struct run r;

	run_init(&r, slot, req, res);
	r.hooks = hooks;
	if (check_request(&r) == 0 && attach_files(&r) == 0 && attach_layer(&r) == 0 &&
	    take_sandbox(&r) == 0) {
		if (start_job(&r) == 0) {
			watch(&r);
			supervise(&r);
		}
		reap(&r);
		measure(&r);
		sbx_outcome(&r.facts, res); /* 9. what the run's outcome was: outcome.c */
	}
	release(&r);
	return res->status == SBX_INTERNAL_ERROR ? -1 : 0;
}
