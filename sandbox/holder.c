/* holder.c: the holder of one context, a privileged supervisor forked by sbxd's main process.
 *
 * Theory of operation. The holder opens a slot (slot.c) with the context's own host uid and
 * cgroup, builds a sandbox exactly as for a run (sbx_slot_prewarm) and hands its init a job whose
 * program is the kernel, with the kernel's control socket attached as fd 3 (child.c); that part,
 * and killing it all, is holder_kernel.c. The cgroup's memory and process limits are set once per
 * kernel, for its whole life. Then one event loop (this file; a call's part is holder_call.c):
 *   requests  from the main process (SOCK_SEQPACKET, each with the client's connection attached):
 *             call, interrupt, restart, delete; one call at a time, later callers wait in a
 *             bounded queue until their wait_ms, then -EBUSY;
 *   a call    the request line written to the kernel with a fresh random marker; stdout and
 *             stderr read until each shows "\0<marker>\0", kept up to output_bytes, the call
 *             killed past output_hard_bytes; the reply line read from the control socket;
 *   limits    a wall timer and a CPU timer (the cgroup's usage delta, re-read only as often as
 *             the budget could run out) interrupt the cell: SIGINT to the init, which passes it
 *             to the kernel (child.c); if the cell does not come back within SBX_CTX_GRACE_MS the
 *             sandbox is killed and a fresh one started: lost;
 *   deaths    the init's pidfd: the kernel died (os._exit, a crash, the OOM killer, `exit` in
 *             bash): lost, and a fresh kernel is started for the next call;
 *   cancel    the caller's connection at EOF interrupts its cell;
 *   idle TTL  a timer re-armed after each call ends the context.
 * A failing isolation step is an internal_error: there is never a weaker sandbox. The kernel's
 * reply is the kernel's word, and a cell runs in the kernel's process: a cell can write its own
 * reply, which only ever describes its own context. The holder trusts nothing of it beyond its
 * size; the status it takes from it decides nothing but the cell's own status. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "holder.h"
#include "outcome.h"

void sbx_holder_log(const struct holder *H, const char *fmt, ...)
{
	char prefix[32];
	va_list ap;

	snprintf(prefix, sizeof prefix, "context=%.8s ", H->st->id);
	va_start(ap, fmt);
	sbx_logv(prefix, fmt, ap);
	va_end(ap);
}

int sbx_holder_arm_ms(int tfd, uint64_t ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof its);
	if (ms) {
		its.it_value.tv_sec = (time_t)(ms / 1000);
		its.it_value.tv_nsec = (long)(ms % 1000) * 1000000;
	}
	return timerfd_settime(tfd, 0, &its, NULL);
}

/* A short reply (no output) on a client's connection, then the connection closed. */
void sbx_holder_answer(int *conn, int rc, const char *message)
{
	struct sbx_wire_ctx_res r;

	if (*conn < 0)
		return;
	sbx_wire_ctx_res_init(&r, rc, message);
	(void)sbx_wire_send_ctx_res(*conn, &r, NULL, NULL);
	sbx_close_fd(conn);
}

/* ---- requests from the main process ---- */

static void next_waiter(struct holder *H)
{
	while (!H->cur.active && H->nwaiters > 0 && !H->stopping) {
		struct waiter w = H->waiters[0];

		memmove(H->waiters, H->waiters + 1, (H->nwaiters - 1) * sizeof *H->waiters);
		H->nwaiters--;
		sbx_holder_call_start(H, w.conn, &w.f);
	}
}

static void arm_waiters(struct holder *H)
{
	uint64_t soonest = 0, now = sbx_now_ms();
	unsigned i;

	for (i = 0; i < H->nwaiters; i++)
		if (!soonest || H->waiters[i].deadline < soonest)
			soonest = H->waiters[i].deadline;
	sbx_holder_arm_ms(H->wait_t, soonest ? (soonest > now ? soonest - now : 1) : 0);
}

static void on_wait_timer(struct holder *H)
{
	uint64_t now = sbx_now_ms(), ticks;
	unsigned i = 0;

	if (read(H->wait_t, &ticks, sizeof ticks) < 0) {
		/* a re-armed timer: look anyway */
	}
	while (i < H->nwaiters) {
		if (H->waiters[i].deadline <= now) {
			sbx_holder_answer(&H->waiters[i].conn, -EBUSY, "the context is busy");
			memmove(H->waiters + i, H->waiters + i + 1,
				(H->nwaiters - i - 1) * sizeof *H->waiters);
			H->nwaiters--;
		} else {
			i++;
		}
	}
	arm_waiters(H);
}

static void holder_exit(struct holder *H, int code) __attribute__((noreturn));

static void on_request(struct holder *H)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct sbx_ctx_fwd f;
	struct iovec iov = {&f, sizeof f};
	struct msghdr msg;
	struct cmsghdr *cm;
	int conn = -1;
	ssize_t n;
	char err[256];

	memset(&msg, 0, sizeof msg);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	n = recvmsg(H->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n == 0) {
		H->stopping = true; /* the main process is gone */
		return;
	}
	if (n < 0)
		return;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&conn, CMSG_DATA(cm), sizeof conn);
	if (n != (ssize_t)sizeof f || conn < 0) {
		sbx_close_fd(&conn);
		return;
	}
	switch (f.h.op) {
	case SBX_OP_CTX_CALL:
		if (!H->cur.active) {
			sbx_holder_call_start(H, conn, &f);
		} else if (f.c.wait_ms == 0 || H->nwaiters == MAX_WAITERS) {
			sbx_holder_answer(&conn, -EBUSY, "the context is busy");
		} else {
			H->waiters[H->nwaiters].conn = conn;
			H->waiters[H->nwaiters].f = f;
			H->waiters[H->nwaiters].deadline = sbx_now_ms() + f.c.wait_ms;
			H->nwaiters++;
			arm_waiters(H);
		}
		break;
	case SBX_OP_CTX_INTERRUPT:
		sbx_holder_interrupt(H, WHY_INTERRUPT);
		sbx_holder_answer(&conn, 0, NULL);
		break;
	case SBX_OP_CTX_RESTART:
		if (H->cur.active) {
			struct sbx_wire_ctx_res r;

			sbx_wire_ctx_res_init(&r, 0, "the context was restarted");
			r.status = SBX_ERROR;
			r.lost = 1;
			sbx_holder_timing(H, &r);
			sbx_holder_sandbox_stop(H);
			sbx_holder_drain_dead(H);
			sbx_holder_kernel_kill(H);
			sbx_holder_call_reply(H, &r);
		}
		H->lost_since = false;
		if (sbx_holder_kernel_start(H, err, sizeof err) < 0) {
			sbx_holder_log(H, "event=kernel_start_failed error=\"%s\"", err);
			sbx_holder_answer(&conn, -EIO, err);
		} else {
			sbx_holder_answer(&conn, 0, NULL);
		}
		sbx_holder_log(H, "event=restart");
		next_waiter(H);
		break;
	case SBX_OP_CTX_DELETE:
		if (H->cur.active) {
			struct sbx_wire_ctx_res r;

			sbx_wire_ctx_res_init(&r, 0, "context deleted");
			r.status = SBX_ERROR;
			r.lost = 1;
			sbx_holder_timing(H, &r);
			sbx_holder_sandbox_stop(H);
			sbx_holder_drain_dead(H);
			sbx_holder_kernel_kill(H);
			sbx_holder_call_reply(H, &r);
		}
		sbx_holder_log(H, "event=delete");
		H->st->ended = 1;
		H->stopping = true;
		while (H->nwaiters > 0)
			sbx_holder_answer(&H->waiters[--H->nwaiters].conn, -ENOENT,
					  "context deleted");
		/* answered once everything of it is gone */
		sbx_holder_kernel_kill(H);
		sbx_slot_close(H->slot);
		H->slot = NULL;
		sbx_holder_answer(&conn, 0, NULL);
		holder_exit(H, 0);
	default:
		sbx_holder_answer(&conn, -EINVAL, "unknown operation");
	}
}

/* The end: nothing more is taken; whatever was handed over is refused; everything goes. */
static void holder_exit(struct holder *H, int code)
{
	H->st->ended = 1;
	H->stopping = true;
	if (H->cur.active) {
		struct sbx_wire_ctx_res r;

		sbx_wire_ctx_res_init(&r, -ENOENT, "the context ended");
		sbx_holder_call_reply(H, &r);
	}
	while (H->nwaiters > 0)
		sbx_holder_answer(&H->waiters[--H->nwaiters].conn, -ENOENT, "the context ended");
	if (H->slot) {
		sbx_holder_kernel_kill(H);
		sbx_slot_close(H->slot);
		H->slot = NULL;
	}
	/* Requests handed over meanwhile: the context is gone. */
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct sbx_ctx_fwd f;
		struct iovec iov = {&f, sizeof f};
		struct msghdr msg;
		struct cmsghdr *cm;
		int conn = -1;

		memset(&msg, 0, sizeof msg);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof cbuf;
		if (recvmsg(H->sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) <= 0)
			break;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				memcpy(&conn, CMSG_DATA(cm), sizeof conn);
		sbx_holder_answer(&conn, -ENOENT, "no such context");
	}
	sbx_holder_log(H, "event=context_end code=%d", code);
	_exit(code);
}

void sbx_holder_main(const struct sbx_ctx_config *cc, unsigned index, struct sbx_ctx_state *st,
		     const struct sbx_wire_req *h, const struct sbx_wire_ctx *c, int conn,
		     int workdir, int sock)
{
	static struct holder hold;
	struct holder *H = &hold;
	struct sbx_config cfg = *cc->cfg;
	struct stat sb;
	sigset_t mask;
	char err[256];

	memset(H, 0, sizeof *H);
	H->cc = cc;
	H->index = index;
	H->st = st;
	H->workdir = workdir;
	H->sock = sock;
	H->ctl = -1;
	H->cur.conn = -1;
	H->lang = (enum sbx_ctx_lang)c->language;
	H->idle_ttl_s = c->idle_ttl_s;
	H->life = h->limits;
	sbx_limits_defaults(&H->life);
	/* The holder is stopped by SIGTERM (the broker's stop, or its death: PDEATHSIG), read
	 * from the loop so that a stop never lands in the middle of a step. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	/* On cgroup v1 the holder sits in its context's memory group (it forks the sandbox from
	 * there): the OOM killer must pick the kernel, never the holder. Its sandbox is set back to
	 * 0 (holder_kernel.c). */
	if (sbx_write_file("/proc/self/oom_score_adj", "-1000") < 0)
		sbx_holder_log(H, "event=oom_score_adj_failed");
	H->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	H->ep = epoll_create1(EPOLL_CLOEXEC);
	H->wall_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->cpu_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->grace_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->idle_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->wait_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (H->sigfd < 0 || H->ep < 0 || H->wall_t < 0 || H->cpu_t < 0 || H->grace_t < 0 ||
	    H->idle_t < 0 || H->wait_t < 0) {
		sbx_holder_answer(&conn, -EIO, "holder setup failed");
		holder_exit(H, 1);
	}
	/* The context's own host uid, after the run slots', and its own cgroup. */
	cfg.uid_base = cc->cfg->uid_base + cc->slots;
	cfg.cgroup_name = cc->cgroup_name;
	if (fstat(workdir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != cc->cfg->files_uid) {
		sbx_holder_answer(&conn, -EINVAL, "the work directory is not a session directory");
		holder_exit(H, 1);
	}
	H->slot = sbx_slot_open(&cfg, index, err, sizeof err);
	if (!H->slot) {
		sbx_holder_log(H, "event=create_failed error=\"%s\"", err);
		sbx_holder_answer(&conn, -EIO, err);
		holder_exit(H, 1);
	}
	if (sbx_holder_kernel_start(H, err, sizeof err) < 0) {
		sbx_holder_log(H, "event=create_failed error=\"%s\"", err);
		sbx_holder_answer(&conn, -EIO, err);
		holder_exit(H, 1);
	}
	st->last_used_ms = sbx_realtime_ms();
	st->memory_kb = sbx_holder_memory_kb(H);
	sbx_holder_answer(&conn, 0, NULL);
	sbx_holder_log(H, "event=create language=%s uid=%u memory_kb=%llu",
		       sbx_ctx_lang_name(H->lang), (unsigned)H->slot->uid,
		       (unsigned long long)st->memory_kb);
	if (H->idle_ttl_s)
		sbx_holder_arm_ms(H->idle_t, (uint64_t)H->idle_ttl_s * 1000);
	ep_add(H, H->sock, EPOLLIN);
	ep_add(H, H->sigfd, EPOLLIN);
	ep_add(H, H->wall_t, EPOLLIN);
	ep_add(H, H->cpu_t, EPOLLIN);
	ep_add(H, H->grace_t, EPOLLIN);
	ep_add(H, H->idle_t, EPOLLIN);
	ep_add(H, H->wait_t, EPOLLIN);
	while (!H->stopping) {
		struct epoll_event evs[16];
		int n = epoll_wait(H->ep, evs, 16, -1), k;

		if (n < 0 && errno != EINTR)
			break;
		unsigned gen = H->generation;

		for (k = 0; k < n && !H->stopping && gen == H->generation; k++) {
			int fd = evs[k].data.fd;
			uint64_t ticks;

			if (fd == H->sock) {
				on_request(H);
			} else if (fd == H->sigfd) {
				struct signalfd_siginfo si;

				while (read(H->sigfd, &si, sizeof si) > 0) {
				}
				H->stopping = true;
			} else if (H->up && fd == H->slot->w.pidfd) {
				if (!H->cur.active)
					sbx_holder_log(H, "event=kernel_died_idle");
				sbx_holder_call_lost(H, 1, "the interpreter died");
			} else if (H->cur.active && fd == H->cur.conn) {
				if (evs[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR) ||
				    sbx_holder_pump(H, false) < 0)
					sbx_holder_on_caller(H);
			} else if (H->cur.active && fd == H->cur.out.fd) {
				sbx_holder_on_stream(H, &H->cur.out);
			} else if (H->cur.active && fd == H->cur.err.fd) {
				sbx_holder_on_stream(H, &H->cur.err);
			} else if (H->cur.active && fd == H->ctl) {
				sbx_holder_on_ctl(H, evs[k].events);
			} else if (fd == H->wall_t) {
				if (read(fd, &ticks, sizeof ticks) > 0)
					sbx_holder_interrupt(H, WHY_WALL);
			} else if (fd == H->cpu_t) {
				if (read(fd, &ticks, sizeof ticks) > 0)
					sbx_holder_on_cpu_timer(H);
			} else if (fd == H->grace_t) {
				if (read(fd, &ticks, sizeof ticks) > 0 && H->cur.active)
					sbx_holder_call_lost(
					    H, 0,
					    "the interpreter did not come back from an "
					    "interrupt: killed and restarted");
			} else if (fd == H->idle_t) {
				if (read(fd, &ticks, sizeof ticks) > 0 && !H->cur.active &&
				    H->nwaiters == 0) {
					sbx_holder_log(H, "event=idle_end");
					holder_exit(H, 0);
				}
			} else if (fd == H->wait_t) {
				on_wait_timer(H);
			}
			/* a fd of an ended call may still have an event in this batch: skip it */
			if (!H->cur.active)
				next_waiter(H);
		}
	}
	holder_exit(H, 0);
}
