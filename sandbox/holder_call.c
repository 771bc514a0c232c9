/* holder_call.c: one call of a context, for the holder's loop (holder.c): the request line
 * written to the kernel with a fresh random marker; stdout and stderr read until each shows
 * "\0<marker>\0", kept up to output_bytes, the call killed past output_hard_bytes; the reply
 * line read from the control socket; the wall and CPU timers and the caller's EOF interrupt the
 * cell; a cell that does not come back, or a kernel that dies, makes the call lost (a fresh
 * kernel is started for the next one). The reply to the caller ends the call. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "holder.h"
#include "outcome.h"

void sbx_holder_interrupt(struct holder *H, enum why why)
{
	struct call *c = &H->cur;

	if (!c->active || c->why != WHY_NONE)
		return;
	c->why = why;
	syscall(SYS_pidfd_send_signal, H->slot->w.pidfd, SIGINT, NULL, 0);
	sbx_holder_arm_ms(H->grace_t, SBX_CTX_GRACE_MS);
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
	sbx_holder_arm_ms(H->wall_t, 0);
	sbx_holder_arm_ms(H->cpu_t, 0);
	sbx_holder_arm_ms(H->grace_t, 0);
	memset(c, 0, sizeof *c);
	c->conn = -1;
	H->st->busy = 0;
	H->st->last_used_ms = sbx_realtime_ms();
	if (H->idle_ttl_s)
		sbx_holder_arm_ms(H->idle_t, (uint64_t)H->idle_ttl_s * 1000);
}

/* Send the result to the caller (unless it left) and end the call. */
void sbx_holder_call_reply(struct holder *H, struct sbx_wire_ctx_res *r)
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
	sbx_holder_log(
	    H,
	    "event=cell status=%s lost=%u wall_ms=%llu cpu_ms=%llu out_bytes=%llu err_bytes=%llu%s",
	    sbx_status_name((enum sbx_status)r->status), r->lost, (unsigned long long)r->wall_ms,
	    (unsigned long long)r->cpu_ms, (unsigned long long)c->out.total,
	    (unsigned long long)c->err.total, c->cancelled ? " cancelled=1" : "");
	call_clear(H);
}

void sbx_holder_timing(struct holder *H, struct sbx_wire_ctx_res *r)
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
void sbx_holder_drain_dead(struct holder *H)
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
void sbx_holder_call_lost(struct holder *H, int wstatus_known, const char *why_msg)
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
		sbx_holder_timing(H, &r);
	}
	sbx_holder_sandbox_stop(H);
	sbx_holder_drain_dead(H);
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
		sbx_holder_call_reply(H, &r);
	sbx_holder_log(H, "event=kernel_lost reason=\"%s\"", r.message);
	if (!H->stopping && sbx_holder_kernel_start(H, err, sizeof err) < 0)
		sbx_holder_log(H, "event=kernel_start_failed error=\"%s\"", err);
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
	sbx_holder_timing(H, &r);
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
	sbx_holder_call_reply(H, &r);
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
			sbx_holder_call_lost(H, 0, "output past the hard limit");
			return false;
		}
	}
	if (s->marked)
		ep_del(H, s->fd);
	return true;
}

void sbx_holder_on_stream(struct holder *H, struct sbx_ctx_stream *s)
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
				sbx_holder_call_lost(H, 0, "display data past the hard limit");
				return -1;
			}
		}
		memmove(c->reply, nl + 1, c->reply_len - len - 1);
		c->reply_len -= len + 1;
		c->scan = 0;
	}
	return 0;
}

void sbx_holder_on_ctl(struct holder *H, uint32_t events)
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
				sbx_holder_call_lost(H, 0, "reply past the hard limit");
				return;
			}
			p = realloc(c->reply, cap);
			if (!p) {
				sbx_holder_call_lost(H, 0, "out of memory");
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

void sbx_holder_on_cpu_timer(struct holder *H)
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
		sbx_holder_interrupt(H, WHY_CPU);
	else
		sbx_holder_arm_ms(H->cpu_t, again);
}

/* Take the call: read its request, write it to the kernel, start the clocks. */
void sbx_holder_call_start(struct holder *H, int conn, const struct sbx_ctx_fwd *f)
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
	sbx_holder_arm_ms(H->idle_t, 0);
	/* The client writes the request right after the header: a bounded wait. */
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	req = malloc(f->c.request_len + 1);
	if (!req || sbx_read_all(conn, req, f->c.request_len) < 0) {
		free(req);
		sbx_holder_answer(&c->conn, -EPROTO, "the request did not arrive");
		call_clear(H);
		return;
	}
	if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		free(req);
		sbx_holder_answer(&c->conn, -EIO, "getrandom failed");
		call_clear(H);
		return;
	}
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	c->stream = (f->c.flags & SBX_WIRE_CTX_STREAM) != 0;
	c->line = sbx_ctx_request_line(req, f->c.request_len, hex, c->stream, &c->line_len);
	free(req);
	if (!c->line) {
		sbx_holder_answer(&c->conn, -EINVAL,
				  "the request is not one JSON object on one line");
		call_clear(H);
		return;
	}
	c->marker[0] = '\0';
	memcpy(c->marker + 1, hex, SBX_CTX_ID_LEN);
	c->marker[SBX_CTX_MARK_LEN - 1] = '\0';
	if (!H->up && sbx_holder_kernel_start(H, err, sizeof err) < 0) {
		sbx_holder_log(H, "event=kernel_start_failed error=\"%s\"", err);
		sbx_holder_answer(&c->conn, -EIO, err);
		call_clear(H);
		return;
	}
	if (!sbx_ctx_stream_init(&c->out, H->slot->w.out_r, c->lim.output_bytes) ||
	    !sbx_ctx_stream_init(&c->err, H->slot->w.errout_r, c->lim.output_bytes)) {
		sbx_holder_answer(&c->conn, -ENOMEM, "out of memory");
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
	sbx_holder_arm_ms(H->wall_t, c->lim.wall_ms);
	sbx_holder_arm_ms(H->cpu_t, c->lim.cpu_ms / (uint64_t)H->slot->ncpu + 1);
	ep_add(H, c->conn, EPOLLRDHUP);
	ep_add(H, c->out.fd, EPOLLIN);
	ep_add(H, c->err.fd, EPOLLIN);
	ep_add(H, H->ctl, EPOLLIN | EPOLLOUT);
	sbx_holder_on_ctl(H, EPOLLOUT);
}

/* The caller at EOF (or reset): it left, so its cell is interrupted and its result dropped. */
void sbx_holder_on_caller(struct holder *H)
{
	struct call *c = &H->cur;

	ep_del(H, c->conn);
	c->cancelled = true;
	sbx_holder_interrupt(H, WHY_CANCEL);
}
