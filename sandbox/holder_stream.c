/* holder_stream.c: a streamed call (SBX_WIRE_CTX_STREAM, wire.h): what the caller gets while its
 * cell runs. The holder's loop (holder.c) reads the cell's output and the kernel's display lines;
 * this file forwards them to the caller's connection as frames, as far as the connection takes
 * them without waiting (a slow caller never blocks the holder: what it has not taken waits in
 * the call's buffers, output within its cap, display lines within SBX_WIRE_CTX_MAX_RESULT), and
 * at the end flushes the rest before the END frame and the usual reply.
 *
 * What is forwarded of stdout and stderr is what the stream kept (sbx_ctx_stream: never the bytes
 * that may begin the marker, never past output_bytes), so it is always a prefix of the final
 * result's out and err: nothing the caller got is contradicted by the reply. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "holder.h"

/* A connection that takes nothing for this long at the end of a call is given up. */
#define FLUSH_WAIT_MS 30000

static void want_out(struct holder *H, bool on)
{
	struct call *c = &H->cur;

	if (c->want_out == on || c->conn < 0)
		return;
	c->want_out = on;
	ep_add(H, c->conn, EPOLLRDHUP | (on ? EPOLLOUT : 0));
}

/* The next frame to write, when there is one. */
static bool pend_next(struct call *c)
{
	struct sbx_ctx_stream *ss[2] = {&c->out, &c->err};
	uint64_t len;

	for (int i = 0; i < 2; i++) {
		if (ss[i]->len > c->fwd[i]) {
			size_t n = ss[i]->len - c->fwd[i];

			c->pend.h.len = n > SBX_WIRE_MAX_FRAME ? SBX_WIRE_MAX_FRAME : n;
			c->pend.h.stream = (uint32_t)(i + 1);
			c->pend.src = i + 1;
			c->pend.off = c->fwd[i];
			goto set;
		}
	}
	if (c->disp_off >= c->disp_len) {
		c->disp_off = c->disp_len = 0;
		return false;
	}
	memcpy(&len, c->disp + c->disp_off, sizeof len);
	c->pend.h.len = len;
	c->pend.h.stream = SBX_WIRE_CTX_FRAME_RESULT;
	c->pend.src = SBX_WIRE_CTX_FRAME_RESULT;
	c->pend.off = c->disp_off + sizeof len;
set:
	c->pend.h.magic = SBX_WIRE_CTX_FRAME_MAGIC;
	c->pend.done = 0;
	c->pend_active = true;
	return true;
}

static void pend_finished(struct call *c)
{
	if (c->pend.src == SBX_WIRE_CTX_FRAME_RESULT)
		c->disp_off = c->pend.off + (size_t)c->pend.h.len;
	else
		c->fwd[c->pend.src - 1] += (size_t)c->pend.h.len;
	c->pend_active = false;
}

int sbx_holder_pump(struct holder *H, bool wait)
{
	struct call *c = &H->cur;
	const size_t hl = sizeof c->pend.h;

	if (!c->stream || c->cancelled || c->conn < 0)
		return 0;
	while (c->pend_active || pend_next(c)) {
		const char *data = c->pend.src == 1   ? c->out.buf
				   : c->pend.src == 2 ? c->err.buf
						      : c->disp;
		size_t len = (size_t)c->pend.h.len, done = c->pend.done;
		struct iovec iov[2];
		struct msghdr m;
		ssize_t n;

		memset(&m, 0, sizeof m);
		data += c->pend.off;
		if (done < hl) {
			iov[0] = (struct iovec){(char *)&c->pend.h + done, hl - done};
			iov[1] = (struct iovec){(void *)data, len};
			m.msg_iovlen = 2;
		} else {
			iov[0] = (struct iovec){(void *)(data + done - hl), len - (done - hl)};
			m.msg_iovlen = 1;
		}
		m.msg_iov = iov;
		n = sendmsg(c->conn, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {c->conn, POLLOUT, 0};

			if (!wait) {
				want_out(H, true);
				return 0;
			}
			if (poll(&p, 1, FLUSH_WAIT_MS) > 0 && !(p.revents & (POLLERR | POLLHUP)))
				continue;
		}
		if (n <= 0) {
			/* The caller is gone: nobody reads the rest (its cell is interrupted by the
			 * loop, which sees the connection's end). */
			ep_del(H, c->conn);
			c->cancelled = true;
			return -1;
		}
		c->pend.done += (size_t)n;
		if (c->pend.done == hl + len)
			pend_finished(c);
	}
	want_out(H, false);
	return 0;
}

int sbx_holder_disp_push(struct holder *H, const char *line, size_t len)
{
	struct call *c = &H->cur;
	uint64_t l = len;
	size_t need;

	if (!c->stream || c->cancelled)
		return 0;
	if (len == 0 || len > SBX_WIRE_CTX_MAX_RESULT ||
	    c->disp_len - c->disp_off > SBX_WIRE_CTX_MAX_RESULT - len)
		return -1;
	need = c->disp_len + sizeof l + len;
	if (need > c->disp_cap) {
		size_t cap = c->disp_cap ? c->disp_cap : 16384;
		char *p;

		/* what was forwarded goes first */
		if (c->disp_off && !(c->pend_active && c->pend.src == SBX_WIRE_CTX_FRAME_RESULT)) {
			memmove(c->disp, c->disp + c->disp_off, c->disp_len - c->disp_off);
			c->disp_len -= c->disp_off;
			c->disp_off = 0;
			need = c->disp_len + sizeof l + len;
		}
		while (cap < need)
			cap *= 2;
		if (cap > c->disp_cap) {
			if (!(p = realloc(c->disp, cap)))
				return -1;
			c->disp = p;
			c->disp_cap = cap;
		}
	}
	memcpy(c->disp + c->disp_len, &l, sizeof l);
	memcpy(c->disp + c->disp_len + sizeof l, line, len);
	c->disp_len += sizeof l + len;
	return 0;
}

int sbx_holder_stream_end(struct holder *H)
{
	struct call *c = &H->cur;
	struct sbx_wire_frame end = {SBX_WIRE_CTX_FRAME_MAGIC, SBX_WIRE_FRAME_END, 0};

	if (!c->stream || c->cancelled || c->conn < 0)
		return 0;
	if (sbx_holder_pump(H, true) < 0 || sbx_write_all(c->conn, &end, sizeof end) < 0) {
		c->cancelled = true;
		return -1;
	}
	return 0;
}
