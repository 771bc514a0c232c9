/* holder.c: the holder of one context, a privileged supervisor forked by sbxd's main process.
 *
 * Theory of operation. The holder opens a slot (slot.c) with the context's own host uid and
 * cgroup, builds a sandbox exactly as for a run (sbx_slot_prewarm) and hands its init a job whose
 * program is the kernel, with the kernel's control socket attached as fd 3 (child.c); that part,
 * and killing it all, is holder_kernel.c. The cgroup's memory and process limits are set once per
 * kernel, for its whole life. Then one event loop (this file):
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

static void hlog(const struct holder *H, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void hlog(const struct holder *H, const char *fmt, ...)
{
	char prefix[32];
	va_list ap;

	snprintf(prefix, sizeof prefix, "context=%.8s ", H->st->id);
	va_start(ap, fmt);
	sbx_logv(prefix, fmt, ap);
	va_end(ap);
}

static int arm_ms(int tfd, uint64_t ms)
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
static void answer(int *conn, int rc, const char *message)
{
	struct sbx_wire_ctx_res r;

	if (*conn < 0)
		return;
	sbx_wire_ctx_res_init(&r, rc, message);
	(void)sbx_wire_send_ctx_res(*conn, &r, NULL, NULL);
	sbx_close_fd(conn);
}

/* ---- a call ---- */

static void interrupt_cell(struct holder *H, enum why why)
{
	struct call *c = &H->cur;

	if (!c->active || c->why != WHY_NONE)
		return;
	c->why = why;
	syscall(SYS_pidfd_send_signal, H->slot->w.pidfd, SIGINT, NULL, 0);
	arm_ms(H->grace_t, SBX_CTX_GRACE_MS);
}

static void call_clear(struct holder *H)
{
	struct call *c = &H->cur;

	ep_del(H, c->conn);
	if (H->up) {
		ep_del(H, H->ctl);
		ep_del(H, H->slot->w.out_r);
		ep_del(H, H->slot->w.errout_r);
	}
	sbx_close_fd(&c->conn);
	free(c->line);
	free(c->reply);
	free(c->disp);
	sbx_ctx_stream_free(&c->out);
	sbx_ctx_stream_free(&c->err);
	arm_ms(H->wall_t, 0);
	arm_ms(H->cpu_t, 0);
	arm_ms(H->grace_t, 0);
	memset(c, 0, sizeof *c);
	c->conn = -1;
	H->st->busy = 0;
	H->st->last_used_ms = sbx_realtime_ms();
	if (H->idle_ttl_s)
		arm_ms(H->idle_t, (uint64_t)H->idle_ttl_s * 1000);
}

/* Send the result to the caller (unless it left) and end the call. */
static void call_reply(struct holder *H, struct sbx_wire_ctx_res *r)
{
	struct call *c = &H->cur;
	const void *parts[3] = {c->out.buf, c->err.buf, c->reply};
	uint64_t len[3] = {c->out.len, c->err.len, r->has_reply ? c->reply_len : 0};

	r->out_len = c->out.len;
	r->err_len = c->err.len;
	r->reply_len = len[2];
	r->out_truncated = c->out.truncated;
	r->err_truncated = c->err.truncated;
	if (!c->cancelled && c->conn >= 0 && sbx_holder_stream_end(H) == 0)
		(void)sbx_wire_send_ctx_res(c->conn, r, parts, len);
	hlog(
	    H,
	    "event=cell status=%s lost=%u wall_ms=%llu cpu_ms=%llu out_bytes=%llu err_bytes=%llu%s",
	    sbx_status_name((enum sbx_status)r->status), r->lost, (unsigned long long)r->wall_ms,
	    (unsigned long long)r->cpu_ms, (unsigned long long)c->out.total,
	    (unsigned long long)c->err.total, c->cancelled ? " cancelled=1" : "");
	call_clear(H);
}

static void timing(struct holder *H, struct sbx_wire_ctx_res *r)
{
	struct call *c = &H->cur;
	uint64_t cpu = 0;

	r->wall_ms = sbx_now_ms() - c->start;
	if (H->up && sbx_cg_cpu(H->slot->cg, &cpu) == 0 && cpu > c->cpu0)
		r->cpu_ms = (cpu - c->cpu0) / 1000000;
	r->memory_kb = sbx_holder_memory_kb(H);
	H->st->memory_kb = r->memory_kb;
}

static void limit_status(const struct call *c, struct sbx_wire_ctx_res *r)
{
	if (c->why == WHY_WALL || c->why == WHY_CPU) {
		r->status = SBX_TIMEOUT;
		r->limit = c->why == WHY_WALL ? SBX_LIMIT_WALL : SBX_LIMIT_CPU;
	}
}

/* Read whatever of the kernel's output is left after its death (every writer is gone). */
static void drain_dead(struct holder *H)
{
	struct call *c = &H->cur;
	struct sbx_ctx_stream *ss[2] = {&c->out, &c->err};
	char buf[16384];
	int i;

	if (!c->active)
		return;
	for (i = 0; i < 2; i++) {
		ssize_t n;

		while (!ss[i]->marked && ss[i]->fd >= 0 &&
		       (n = read(ss[i]->fd, buf, sizeof buf)) > 0)
			sbx_ctx_stream_feed(ss[i], c->marker, buf, (size_t)n);
		sbx_ctx_stream_commit(ss[i], ss[i]->win, ss[i]->win_len);
		ss[i]->win_len = 0;
	}
}

/* The sandbox goes (or went) during the call: report it lost, and start a fresh kernel. */
static void call_lost(struct holder *H, int wstatus_known, const char *why_msg)
{
	struct call *c = &H->cur;
	struct sbx_wire_ctx_res r;
	uint64_t oom = 0;
	int wstatus = 0;
	bool active = c->active;
	char err[256];

	sbx_wire_ctx_res_init(&r, 0, NULL);
	r.lost = 1;
	r.status = SBX_ERROR;
	if (c->active) {
		/* before the kill: the OOM counter and the CPU of this cell */
		if (sbx_cg_oom_kills(H->slot->cg, &oom) < 0)
			oom = c->oom0;
		timing(H, &r);
	}
	sbx_holder_sandbox_stop(H);
	drain_dead(H);
	if (wstatus_known &&
	    read(H->slot->w.status_r, &wstatus, sizeof wstatus) == (ssize_t)sizeof wstatus) {
		if (WIFSIGNALED(wstatus)) {
			r.status = SBX_SIGNAL;
			snprintf(r.message, sizeof r.message, "the interpreter was killed by %s",
				 sbx_signal_name(WTERMSIG(wstatus))
				     ? sbx_signal_name(WTERMSIG(wstatus))
				     : "a signal");
		} else {
			snprintf(r.message, sizeof r.message,
				 "the interpreter exited with status %d", WEXITSTATUS(wstatus));
		}
	} else {
		snprintf(r.message, sizeof r.message, "%s", why_msg);
	}
	if (c->active) {
		limit_status(c, &r);
		if (c->output_killed) {
			r.status = SBX_OUTPUT_LIMIT;
			snprintf(r.message, sizeof r.message, "output past the hard limit");
		} else if (oom > c->oom0) {
			r.status = SBX_MEMORY_LIMIT;
			r.limit = SBX_LIMIT_NONE;
			snprintf(r.message, sizeof r.message, "the context's memory limit was hit");
		}
	}
	sbx_holder_kernel_kill(H);
	if (c->active)
		call_reply(H, &r);
	hlog(H, "event=kernel_lost reason=\"%s\"", r.message);
	if (!H->stopping && sbx_holder_kernel_start(H, err, sizeof err) < 0)
		hlog(H, "event=kernel_start_failed error=\"%s\"", err);
	H->lost_since = !active; /* reported by this call, or by the next */
}

/* Everything of the cell arrived: both markers and the reply line. */
static void call_done(struct holder *H)
{
	struct call *c = &H->cur;
	struct sbx_wire_ctx_res r;
	uint64_t oom = 0;
	const char *v;
	size_t line = (size_t)((char *)memchr(c->reply, '\n', c->reply_len) - c->reply);

	sbx_wire_ctx_res_init(&r, 0, NULL);
	timing(H, &r);
	r.lost = c->lost_before;
	if (c->lost_before)
		snprintf(r.message, sizeof r.message,
			 "the interpreter had died since the last call");
	c->reply_len = line;
	c->reply[line] = '\0';
	r.has_reply = 1;
	r.status = SBX_OK;
	v = sbx_ctx_reply_key(c->reply, c->reply_len, "status");
	if (v && strncmp(v, "\"error\"", 7) == 0)
		r.status = SBX_ERROR;
	v = sbx_ctx_reply_key(c->reply, c->reply_len, "execution_count");
	if (v)
		H->st->execution_count = (uint32_t)strtoul(v, NULL, 10);
	limit_status(c, &r);
	if (sbx_cg_oom_kills(H->slot->cg, &oom) == 0)
		H->oom_seen = oom;
	if (oom > c->oom0) {
		/* something of the cell was OOM-killed, but the kernel lives: state kept */
		r.status = SBX_MEMORY_LIMIT;
		r.limit = SBX_LIMIT_NONE;
		snprintf(r.message, sizeof r.message, "the context's memory limit was hit");
	}
	call_reply(H, &r);
}

static bool call_complete(const struct call *c)
{
	return c->out.marked && c->err.marked && c->have_reply;
}

/* Read what a stream has now. false when that ended the call (output past the hard limit). */
static bool pull(struct holder *H, struct sbx_ctx_stream *s)
{
	struct call *c = &H->cur;
	char buf[16384];

	while (!s->marked) {
		ssize_t n = read(s->fd, buf, sizeof buf);
		size_t used;

		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR))
				ep_del(H, s->fd); /* EOF: the kernel is dying; its pidfd says so */
			break;
		}
		used = sbx_ctx_stream_feed(s, c->marker, buf, (size_t)n);
		if (s->marked && used < (size_t)n) {
			/* a background writer's bytes after the marker: the next cell's */
			char *carry = s == &c->out ? H->carry_out : H->carry_err;
			size_t *cl = s == &c->out ? &H->carry_out_len : &H->carry_err_len;
			size_t k = (size_t)n - used;

			if (k > CARRY_MAX - *cl)
				k = CARRY_MAX - *cl;
			memcpy(carry + *cl, buf + used, k);
			*cl += k;
		}
		if (s->total > c->lim.output_hard_bytes) {
			c->output_killed = true;
			call_lost(H, 0, "output past the hard limit");
			return false;
		}
	}
	if (s->marked)
		ep_del(H, s->fd);
	return true;
}

static void on_stream(struct holder *H, struct sbx_ctx_stream *s)
{
	if (!pull(H, s))
		return;
	sbx_holder_pump(H, false);
	if (call_complete(&H->cur))
		call_done(H);
}

/* The complete lines of the control socket: display lines are queued for a streamed caller, the
 * first reply line stays at the start of reply[], foreign lines are dropped (ctx_proto.c). 0, or
 * -1 when that ended the call. */
static int ctl_lines(struct holder *H)
{
	struct call *c = &H->cur;

	while (!c->have_reply) {
		char *nl = memchr(c->reply + c->scan, '\n', c->reply_len - c->scan);
		size_t len;
		enum sbx_ctx_line kind;

		if (!nl) {
			c->scan = c->reply_len;
			break;
		}
		len = (size_t)(nl - c->reply);
		kind = sbx_ctx_line_kind(c->reply, len, c->marker + 1);
		if (kind == SBX_CTX_LINE_REPLY) {
			c->have_reply = true;
			break;
		}
		if (kind == SBX_CTX_LINE_RESULT && c->stream) {
			/* what the cell printed before it displayed goes first */
			if (!pull(H, &c->out) || !pull(H, &c->err))
				return -1;
			if (sbx_holder_disp_push(H, c->reply, len) < 0) {
				c->output_killed = true;
				call_lost(H, 0, "display data past the hard limit");
				return -1;
			}
		}
		memmove(c->reply, nl + 1, c->reply_len - len - 1);
		c->reply_len -= len + 1;
		c->scan = 0;
	}
	return 0;
}

static void on_ctl(struct holder *H, uint32_t events)
{
	struct call *c = &H->cur;

	if (events & EPOLLOUT) {
		while (c->line_off < c->line_len) {
			ssize_t n = write(H->ctl, c->line + c->line_off, c->line_len - c->line_off);

			if (n < 0) {
				if (errno != EAGAIN && errno != EINTR)
					ep_add(H, H->ctl,
					       EPOLLIN); /* the death shows on the pidfd */
				break;
			}
			c->line_off += (size_t)n;
		}
		if (c->line_off == c->line_len)
			ep_add(H, H->ctl, EPOLLIN);
	}
	if (!(events & (EPOLLIN | EPOLLHUP)))
		return;
	for (;;) {
		ssize_t n;

		if (c->reply_cap - c->reply_len < 4096) {
			size_t cap = c->reply_cap ? c->reply_cap * 2 : 8192;
			char *p;

			if (cap > MAX_REPLY + 1) {
				c->output_killed = true;
				call_lost(H, 0, "reply past the hard limit");
				return;
			}
			p = realloc(c->reply, cap);
			if (!p) {
				call_lost(H, 0, "out of memory");
				return;
			}
			c->reply = p;
			c->reply_cap = cap;
		}
		n = read(H->ctl, c->reply + c->reply_len, c->reply_cap - c->reply_len - 1);
		if (n <= 0) {
			if (n == 0 || (errno != EAGAIN && errno != EINTR))
				ep_del(H, H->ctl);
			break;
		}
		c->reply_len += (size_t)n;
		if (memchr(c->reply + c->reply_len - (size_t)n, '\n', (size_t)n) &&
		    (ctl_lines(H) < 0 || c->have_reply))
			break;
	}
	if (!c->active)
		return; /* ended by ctl_lines */
	sbx_holder_pump(H, false);
	if (call_complete(c))
		call_done(H);
}

static void on_cpu_timer(struct holder *H)
{
	struct call *c = &H->cur;
	uint64_t used = 0, again;

	if (!c->active || c->why != WHY_NONE)
		return;
	if (sbx_cg_cpu(H->slot->cg, &used) < 0)
		used = c->cpu0;
	again =
	    sbx_cpu_recheck_ms(c->lim.cpu_ms, used > c->cpu0 ? used - c->cpu0 : 0, H->slot->ncpu);
	if (again == 0)
		interrupt_cell(H, WHY_CPU);
	else
		arm_ms(H->cpu_t, again);
}

/* Take the call: read its request, write it to the kernel, start the clocks. */
static void call_start(struct holder *H, int conn, const struct sbx_ctx_fwd *f)
{
	struct call *c = &H->cur;
	char hex[SBX_CTX_ID_LEN + 1], *req = NULL, err[256];
	unsigned char rnd[16];
	struct timeval tv = {5, 0};
	int i;

	memset(c, 0, sizeof *c);
	c->conn = conn;
	c->lim = f->h.limits;
	sbx_limits_defaults(&c->lim);
	H->st->busy = 1;
	arm_ms(H->idle_t, 0);
	/* The client writes the request right after the header: a bounded wait. */
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	req = malloc(f->c.request_len + 1);
	if (!req || sbx_read_all(conn, req, f->c.request_len) < 0) {
		free(req);
		answer(&c->conn, -EPROTO, "the request did not arrive");
		call_clear(H);
		return;
	}
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		free(req);
		answer(&c->conn, -EIO, "getrandom failed");
		call_clear(H);
		return;
	}
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	c->stream = (f->c.flags & SBX_WIRE_CTX_STREAM) != 0;
	c->line = sbx_ctx_request_line(req, f->c.request_len, hex, c->stream, &c->line_len);
	free(req);
	if (!c->line) {
		answer(&c->conn, -EINVAL, "the request is not one JSON object on one line");
		call_clear(H);
		return;
	}
	c->marker[0] = '\0';
	memcpy(c->marker + 1, hex, SBX_CTX_ID_LEN);
	c->marker[SBX_CTX_MARK_LEN - 1] = '\0';
	if (!H->up && sbx_holder_kernel_start(H, err, sizeof err) < 0) {
		hlog(H, "event=kernel_start_failed error=\"%s\"", err);
		answer(&c->conn, -EIO, err);
		call_clear(H);
		return;
	}
	if (!sbx_ctx_stream_init(&c->out, H->slot->w.out_r, c->lim.output_bytes) ||
	    !sbx_ctx_stream_init(&c->err, H->slot->w.errout_r, c->lim.output_bytes)) {
		answer(&c->conn, -ENOMEM, "out of memory");
		call_clear(H);
		return;
	}
	/* Output of background writers since the last cell comes first (as in Jupyter). */
	sbx_ctx_stream_feed_all(&c->out, c->marker, H->carry_out, H->carry_out_len);
	sbx_ctx_stream_feed_all(&c->err, c->marker, H->carry_err, H->carry_err_len);
	H->carry_out_len = H->carry_err_len = 0;
	c->lost_before = H->lost_since;
	H->lost_since = false;
	/* Anything on the control socket now is stale (a cell's own thread writing to fd 3). */
	{
		char junk[4096];

		while (read(H->ctl, junk, sizeof junk) > 0) {
		}
	}
	c->active = true;
	c->start = sbx_now_ms();
	if (sbx_cg_cpu(H->slot->cg, &c->cpu0) < 0)
		c->cpu0 = 0;
	c->oom0 = H->oom_seen; /* the per-call path reads the cgroup once more, at the end */
	arm_ms(H->wall_t, c->lim.wall_ms);
	arm_ms(H->cpu_t, c->lim.cpu_ms / (uint64_t)H->slot->ncpu + 1);
	ep_add(H, c->conn, EPOLLRDHUP);
	ep_add(H, c->out.fd, EPOLLIN);
	ep_add(H, c->err.fd, EPOLLIN);
	ep_add(H, H->ctl, EPOLLIN | EPOLLOUT);
	on_ctl(H, EPOLLOUT);
}

/* The caller at EOF (or reset): it left, so its cell is interrupted and its result dropped. */
static void on_caller(struct holder *H)
{
	struct call *c = &H->cur;

	ep_del(H, c->conn);
	c->cancelled = true;
	interrupt_cell(H, WHY_CANCEL);
}

/* ---- requests from the main process ---- */

static void next_waiter(struct holder *H)
{
	while (!H->cur.active && H->nwaiters > 0 && !H->stopping) {
		struct waiter w = H->waiters[0];

		memmove(H->waiters, H->waiters + 1, (H->nwaiters - 1) * sizeof *H->waiters);
		H->nwaiters--;
		call_start(H, w.conn, &w.f);
	}
}

static void arm_waiters(struct holder *H)
{
	uint64_t soonest = 0, now = sbx_now_ms();
	unsigned i;

	for (i = 0; i < H->nwaiters; i++)
		if (!soonest || H->waiters[i].deadline < soonest)
			soonest = H->waiters[i].deadline;
	arm_ms(H->wait_t, soonest ? (soonest > now ? soonest - now : 1) : 0);
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
			answer(&H->waiters[i].conn, -EBUSY, "the context is busy");
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
			call_start(H, conn, &f);
		} else if (f.c.wait_ms == 0 || H->nwaiters == MAX_WAITERS) {
			answer(&conn, -EBUSY, "the context is busy");
		} else {
			H->waiters[H->nwaiters].conn = conn;
			H->waiters[H->nwaiters].f = f;
			H->waiters[H->nwaiters].deadline = sbx_now_ms() + f.c.wait_ms;
			H->nwaiters++;
			arm_waiters(H);
		}
		break;
	case SBX_OP_CTX_INTERRUPT:
		interrupt_cell(H, WHY_INTERRUPT);
		answer(&conn, 0, NULL);
		break;
	case SBX_OP_CTX_RESTART:
		if (H->cur.active) {
			struct sbx_wire_ctx_res r;

			sbx_wire_ctx_res_init(&r, 0, "the context was restarted");
			r.status = SBX_ERROR;
			r.lost = 1;
			timing(H, &r);
			sbx_holder_sandbox_stop(H);
			drain_dead(H);
			sbx_holder_kernel_kill(H);
			call_reply(H, &r);
		}
		H->lost_since = false;
		if (sbx_holder_kernel_start(H, err, sizeof err) < 0) {
			hlog(H, "event=kernel_start_failed error=\"%s\"", err);
			answer(&conn, -EIO, err);
		} else {
			answer(&conn, 0, NULL);
		}
		hlog(H, "event=restart");
		next_waiter(H);
		break;
	case SBX_OP_CTX_DELETE:
		if (H->cur.active) {
			struct sbx_wire_ctx_res r;

			sbx_wire_ctx_res_init(&r, 0, "context deleted");
			r.status = SBX_ERROR;
			r.lost = 1;
			timing(H, &r);
			sbx_holder_sandbox_stop(H);
			drain_dead(H);
			sbx_holder_kernel_kill(H);
			call_reply(H, &r);
		}
		hlog(H, "event=delete");
		H->st->ended = 1;
		H->stopping = true;
		while (H->nwaiters > 0)
			answer(&H->waiters[--H->nwaiters].conn, -ENOENT, "context deleted");
		/* answered once everything of it is gone */
		sbx_holder_kernel_kill(H);
		sbx_slot_close(H->slot);
		H->slot = NULL;
		answer(&conn, 0, NULL);
		holder_exit(H, 0);
	default:
		answer(&conn, -EINVAL, "unknown operation");
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
		call_reply(H, &r);
	}
	while (H->nwaiters > 0)
		answer(&H->waiters[--H->nwaiters].conn, -ENOENT, "the context ended");
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
		answer(&conn, -ENOENT, "no such context");
	}
	hlog(H, "event=context_end code=%d", code);
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
		hlog(H, "event=oom_score_adj_failed");
	H->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	H->ep = epoll_create1(EPOLL_CLOEXEC);
	H->wall_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->cpu_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->grace_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->idle_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	H->wait_t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (H->sigfd < 0 || H->ep < 0 || H->wall_t < 0 || H->cpu_t < 0 || H->grace_t < 0 ||
	    H->idle_t < 0 || H->wait_t < 0) {
		answer(&conn, -EIO, "holder setup failed");
		holder_exit(H, 1);
	}
	/* The context's own host uid, after the run slots', and its own cgroup. */
	cfg.uid_base = cc->cfg->uid_base + cc->slots;
	cfg.cgroup_name = cc->cgroup_name;
	if (fstat(workdir, &sb) < 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != cc->cfg->files_uid) {
		answer(&conn, -EINVAL, "the work directory is not a session directory");
		holder_exit(H, 1);
	}
	H->slot = sbx_slot_open(&cfg, index, err, sizeof err);
	if (!H->slot) {
		hlog(H, "event=create_failed error=\"%s\"", err);
		answer(&conn, -EIO, err);
		holder_exit(H, 1);
	}
	if (sbx_holder_kernel_start(H, err, sizeof err) < 0) {
		hlog(H, "event=create_failed error=\"%s\"", err);
		answer(&conn, -EIO, err);
		holder_exit(H, 1);
	}
	st->last_used_ms = sbx_realtime_ms();
	st->memory_kb = sbx_holder_memory_kb(H);
	answer(&conn, 0, NULL);
	hlog(H, "event=create language=%s uid=%u memory_kb=%llu", sbx_ctx_lang_name(H->lang),
	     (unsigned)H->slot->uid, (unsigned long long)st->memory_kb);
	if (H->idle_ttl_s)
		arm_ms(H->idle_t, (uint64_t)H->idle_ttl_s * 1000);
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
					hlog(H, "event=kernel_died_idle");
				call_lost(H, 1, "the interpreter died");
			} else if (H->cur.active && fd == H->cur.conn) {
				if (evs[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR) ||
				    sbx_holder_pump(H, false) < 0)
					on_caller(H);
			} else if (H->cur.active && fd == H->cur.out.fd) {
				on_stream(H, &H->cur.out);
			} else if (H->cur.active && fd == H->cur.err.fd) {
				on_stream(H, &H->cur.err);
			} else if (H->cur.active && fd == H->ctl) {
				on_ctl(H, evs[k].events);
			} else if (fd == H->wall_t) {
				if (read(fd, &ticks, sizeof ticks) > 0)
					interrupt_cell(H, WHY_WALL);
			} else if (fd == H->cpu_t) {
				if (read(fd, &ticks, sizeof ticks) > 0)
					on_cpu_timer(H);
			} else if (fd == H->grace_t) {
				if (read(fd, &ticks, sizeof ticks) > 0 && H->cur.active)
					call_lost(H, 0,
						  "the interpreter did not come back from an "
						  "interrupt: killed and restarted");
			} else if (fd == H->idle_t) {
				if (read(fd, &ticks, sizeof ticks) > 0 && !H->cur.active &&
				    H->nwaiters == 0) {
					hlog(H, "event=idle_end");
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
