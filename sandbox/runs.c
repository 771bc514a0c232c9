/* runs.c: runs with live output, ids, interactive stdin and signals, on the broker's side (see
 * runs.h for the theory). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runs.h"

/* The pipe a program's interactive stdin comes through. */
#define STDIN_PIPE_BYTES (1 << 20)

/* A request handed from the main process to a slot: what the client sent, conn attached. */
struct handed {
	struct sbx_wire_req h;
	struct sbx_wire_run w;
};

struct live {
	int out;     /* the client connection (a dup of it: the supervisor watches the original for
			hang-ups), written without blocking */
	int ctl;     /* the slot's control pair */
	int stdin_w; /* interactive: the write end of the program's stdin, or -1 */
	char *pending; /* stdin the pipe did not take yet (at most SBX_RUN_MAX_STDIN) */
	size_t pending_len, pending_off;
	bool stdin_eof; /* close stdin once pending is written */
	bool broken;	/* the client is gone: stop writing to it */
	size_t sent[2]; /* per stream: bytes of kept output framed so far */
	/* the frame being written */
	bool cur;
	int cur_stream;
	struct sbx_wire_frame hdr;
	size_t hdr_off, data_off, data_len, data_done;
	struct sbx_run_hooks hooks;
	struct sbx_run_pub *pub;
	/* a compile step (stage 1): stdin sent meanwhile is held for the run that follows (when
	 * that one is interactive), a signal cancels the compile */
	bool compile, then_interactive, cancelled;
	char *held;
	size_t held_len;
	bool held_eof;
};

static void answer(int conn, uint32_t op, int rc, const char *message)
{
	struct sbx_wire_res r;

	(void)op;
	sbx_wire_res_init(&r);
	r.rc = rc;
	if (message)
		snprintf(r.message, sizeof r.message, "%s", message);
	(void)sbx_wire_send_res(conn, &r, NULL, NULL);
}

/* Write what is due without blocking, from the capture buffers (out, err: the kept bytes). */
static void flush(struct live *l, struct run *r, const char *out, size_t out_len, const char *err,
		  size_t err_len)
{
	const char *buf[2] = {out, err};
	size_t len[2] = {out_len, err_len};

	while (!l->broken) {
		struct iovec iov[2];
		ssize_t n;

		if (!l->cur) {
			int s = len[0] > l->sent[0] ? 0 : len[1] > l->sent[1] ? 1 : -1;

			if (s < 0)
				break;
			l->cur = true;
			l->cur_stream = s;
			l->data_off = l->sent[s];
			l->data_len = len[s] - l->sent[s];
			if (l->data_len > SBX_WIRE_MAX_FRAME)
				l->data_len = SBX_WIRE_MAX_FRAME;
			l->sent[s] += l->data_len;
			l->hdr.magic = SBX_WIRE_MAGIC;
			l->hdr.stream = (uint32_t)s + 1;
			l->hdr.len = l->data_len;
			l->hdr_off = l->data_done = 0;
		}
		iov[0].iov_base = (char *)&l->hdr + l->hdr_off;
		iov[0].iov_len = sizeof l->hdr - l->hdr_off;
		iov[1].iov_base = (char *)buf[l->cur_stream] + l->data_off + l->data_done;
		iov[1].iov_len = l->data_len - l->data_done;
		{
			struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};

			n = sendmsg(l->out, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			l->broken = true; /* the supervisor sees the hang-up and cancels */
			break;
		}
		if ((size_t)n < iov[0].iov_len) {
			l->hdr_off += (size_t)n;
			continue;
		}
		n -= (ssize_t)iov[0].iov_len;
		l->hdr_off = sizeof l->hdr;
		l->data_done += (size_t)n;
		if (l->data_done == l->data_len)
			l->cur = false;
	}
	if (r)
		sbx_run_watch(r, 0,
			      !l->broken && (l->cur || len[0] > l->sent[0] || len[1] > l->sent[1])
				  ? EPOLLOUT
				  : 0);
}

static void on_output(void *arg, struct run *r, const char *out, size_t out_len, const char *err,
		      size_t err_len)
{
	struct live *l = arg;

	if (!l->cur) /* else EPOLLOUT is watched already */
		flush(l, r, out, out_len, err, err_len);
}

static void close_stdin(struct live *l, struct run *r)
{
	if (r)
		sbx_run_watch(r, 2, 0);
	sbx_close_fd(&l->stdin_w);
	free(l->pending);
	l->pending = NULL;
	l->pending_len = l->pending_off = 0;
}

static void write_pending(struct live *l, struct run *r)
{
	while (l->pending_off < l->pending_len) {
		ssize_t n =
		    write(l->stdin_w, l->pending + l->pending_off, l->pending_len - l->pending_off);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			close_stdin(l, r); /* the program closed its stdin */
			return;
		}
		l->pending_off += (size_t)n;
	}
	if (l->pending_off == l->pending_len) {
		free(l->pending);
		l->pending = NULL;
		l->pending_len = l->pending_off = 0;
		if (l->stdin_eof)
			close_stdin(l, r);
		else
			sbx_run_watch(r, 2, 0);
	} else {
		sbx_run_watch(r, 2, EPOLLOUT);
	}
}

/* During a compile step: hold the stdin for the run, or cancel the compile on a signal. */
static void serve_compiling(struct live *l, struct run *r, int conn, const struct handed *m)
{
	char *p;

	if (m->h.op == SBX_OP_RUN_SIGNAL) {
		/* the program never starts: the compile's result (killed) is the answer */
		l->cancelled = true;
		(void)sbx_run_signal(r, SIGKILL);
		answer(conn, m->h.op, 0, NULL);
		return;
	}
	if (!l->then_interactive || l->held_eof) {
		answer(conn, m->h.op, -EPIPE, "stdin is closed, or the run is not interactive");
		return;
	}
	if (l->held_len + m->w.data_len > SBX_RUN_MAX_STDIN) {
		answer(conn, m->h.op, -EAGAIN, "the program has not read its stdin yet");
		return;
	}
	if (m->w.data_len) {
		p = realloc(l->held, l->held_len + m->w.data_len);
		if (!p) {
			answer(conn, m->h.op, -ENOMEM, "out of memory");
			return;
		}
		l->held = p;
		if (sbx_read_all(conn, l->held + l->held_len, m->w.data_len) < 0)
			return;
		l->held_len += m->w.data_len;
	}
	l->held_eof = m->w.eof != 0;
	answer(conn, m->h.op, 0, NULL);
}

/* A STDIN or SIGNAL request for this slot's run, handed over with its connection. r is NULL when
 * the run has ended (pub: the slot's entry then). */
static void serve_handed(struct live *l, struct run *r, int ctl, const struct sbx_run_pub *pub)
{
	struct handed m;
	struct iovec iov = {&m, sizeof m};
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	struct cmsghdr *c;
	struct timeval tv = {0, 200000};
	int conn = -1, rc;
	ssize_t n = recvmsg(ctl, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&conn, CMSG_DATA(c), sizeof conn);
	if (conn < 0)
		return;
	/* the main process checked it; a stalled client is dropped */
	if (n != (ssize_t)sizeof m || sbx_wire_check_run(&m.h, &m.w) != SBX_WIRE_OK)
		goto out;
	setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (!l && pub && pub->state == SBX_RUN_PUB_STARTING && strcmp(pub->id, m.w.id) == 0 &&
	    sbx_now_ms() < pub->starting_until) {
		answer(conn, m.h.op, -EINPROGRESS, "the run is starting, send again");
		goto out;
	}
	if (!l || !r || !l->pub || strcmp(l->pub->id, m.w.id) != 0) {
		answer(conn, m.h.op, -EPIPE, "the run has ended");
		goto out;
	}
	if (l->compile) {
		serve_compiling(l, r, conn, &m);
		goto out;
	}
	if (m.h.op == SBX_OP_RUN_SIGNAL) {
		rc = sbx_run_signal(r, (int)m.w.sig);
		answer(conn, m.h.op, rc == -ESRCH ? -EPIPE : rc,
		       rc == 0	      ? NULL
		       : rc == -ESRCH ? "the run has ended"
				      : "signal failed");
		goto out;
	}
	/* STDIN */
	if (l->stdin_w < 0) {
		answer(conn, m.h.op, -EPIPE, "stdin is closed, or the run is not interactive");
		goto out;
	}
	if (l->pending) {
		answer(conn, m.h.op, -EAGAIN, "the program has not read its stdin yet");
		goto out;
	}
	if (m.w.data_len) {
		l->pending = malloc(m.w.data_len);
		if (!l->pending) {
			answer(conn, m.h.op, -ENOMEM, "out of memory");
			goto out;
		}
		if (sbx_read_all(conn, l->pending, m.w.data_len) < 0) {
			free(l->pending);
			l->pending = NULL;
			goto out;
		}
		l->pending_len = m.w.data_len;
	}
	l->stdin_eof = m.w.eof != 0;
	write_pending(l, r);
	answer(conn, m.h.op, 0, NULL);
out:
	close(conn);
}

static void on_ready(void *arg, struct run *r, int i, uint32_t revents)
{
	struct live *l = arg;
	const char *out, *err;
	size_t out_len, err_len;

	if (i == 0) {
		if (revents & (EPOLLERR | EPOLLHUP))
			l->broken = true;
		sbx_run_kept(r, &out, &out_len, &err, &err_len);
		flush(l, r, out, out_len, err, err_len);
	} else if (i == 1) {
		serve_handed(l, r, l->ctl, NULL);
	} else if (l->stdin_w >= 0) {
		write_pending(l, r);
	}
}

static void publish(struct sbx_run_pub *pub, int state, const char *id, const char *owner)
{
	if (!pub)
		return;
	__atomic_add_fetch(&pub->seq, 1, __ATOMIC_SEQ_CST);
	if (id) {
		memset(pub->id, 0, sizeof pub->id);
		memset(pub->owner, 0, sizeof pub->owner);
		memcpy(pub->id, id, strnlen(id, sizeof pub->id - 1));
		memcpy(pub->owner, owner, strnlen(owner, sizeof pub->owner - 1));
	}
	if (state == SBX_RUN_PUB_STARTING)
		pub->starting_until = sbx_now_ms() + SBX_RUN_STARTING_MS;
	pub->state = state;
	__atomic_add_fetch(&pub->seq, 1, __ATOMIC_SEQ_CST);
}

/* A compile step's end: the stdin it held goes back to the client (before the end frame), in
 * frames, then the eof. -1 when the client is gone. */
static int send_held(int conn, const struct live *l)
{
	struct sbx_wire_frame f = {.magic = SBX_WIRE_MAGIC, .stream = SBX_WIRE_FRAME_STDIN};
	size_t off;

	for (off = 0; off < l->held_len; off += f.len) {
		f.len =
		    l->held_len - off > SBX_WIRE_MAX_FRAME ? SBX_WIRE_MAX_FRAME : l->held_len - off;
		if (sbx_write_all(conn, &f, sizeof f) < 0 ||
		    sbx_write_all(conn, l->held + off, (size_t)f.len) < 0)
			return -1;
	}
	if (!l->held_eof)
		return 0;
	f.stream = SBX_WIRE_FRAME_STDIN_EOF;
	f.len = 0;
	return sbx_write_all(conn, &f, sizeof f);
}

/* Interactive: the stdin that came with the request (held during the compile step) is written
 * to the pipe before the program starts (what does not fit is written as the program reads),
 * and the pipe closed after it with eof. 0, or -errno. */
static int initial_stdin(struct live *l, int fd, bool eof)
{
	struct stat st;
	ssize_t n;

	if (fd >= 0) {
		if (fstat(fd, &st) < 0)
			return -errno;
		if (st.st_size > (off_t)SBX_RUN_MAX_STDIN)
			return -E2BIG;
		if (st.st_size > 0) {
			l->pending = malloc((size_t)st.st_size);
			if (!l->pending)
				return -ENOMEM;
			n = pread(fd, l->pending, (size_t)st.st_size, 0);
			if (n != st.st_size)
				return n < 0 ? -errno : -EIO;
			l->pending_len = (size_t)n;
		}
	}
	l->stdin_eof = eof;
	while (l->pending_off < l->pending_len) {
		n = write(l->stdin_w, l->pending + l->pending_off, l->pending_len - l->pending_off);
		if (n <= 0)
			break; /* full: the rest when the program reads (EPOLLOUT) */
		l->pending_off += (size_t)n;
	}
	if (l->pending_off < l->pending_len) {
		l->hooks.events[2] = EPOLLOUT;
		return 0;
	}
	free(l->pending);
	l->pending = NULL;
	l->pending_len = l->pending_off = 0;
	if (eof)
		close_stdin(l, NULL);
	return 0;
}

/* Another slot runs this id now (ids are random: this guards against a caller's mistake). */
static bool id_running(struct sbx_run_pub *pubs, unsigned n, const char *id)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (pubs[i].state == SBX_RUN_RUNNING &&
		    strncmp((const char *)pubs[i].id, id, SBX_RUN_ID_LEN) == 0)
			return true;
	return false;
}

void sbx_runs_serve_stream(struct sbx_slot *slot, unsigned index, int conn,
			   const struct sbx_wire_req *h, int *fds, int nfds, int ctl,
			   struct sbx_run_pub *pubs, unsigned npubs)
{
	struct sbx_run_pub *pub = &pubs[index];
	struct sbx_wire_run w;
	struct sbx_wire_res rr;
	struct sbx_wire_frame end;
	struct sbx_result res;
	struct sbx_request req;
	struct live l;
	const char *argv[SBX_MAX_ARGS + 1], *envp[SBX_MAX_ARGS + 1];
	char *strings = NULL;
	int pipefd[2] = {-1, -1}, rc, flags;
	struct stat st;
	struct timeval tv = {30, 0};
	enum sbx_wire_err e;

	memset(&res, 0, sizeof res);
	memset(&l, 0, sizeof l);
	l.out = l.stdin_w = -1;
	l.ctl = ctl;
	e = sbx_wire_recv_run(conn, h, &w);
	if (e == SBX_WIRE_OK)
		e = sbx_wire_recv_strings(conn, h, &strings, argv, envp);
	if (e != SBX_WIRE_OK) {
		sbx_log("event=reject slot=%u reason=bad_request error=%s", index,
			sbx_wire_strerror(e));
		goto out;
	}
	memset(&req, 0, sizeof req);
	req.argv = argv;
	req.env = envp;
	sbx_wire_req_fds(h, fds, nfds, &req);
	req.cancel_fd = conn;
	req.limits = h->limits;
	if (req.stdin_fd >= 0 && (fstat(req.stdin_fd, &st) < 0 || !S_ISREG(st.st_mode)))
		goto out;
	l.compile = w.stage == 1;
	l.then_interactive = l.compile && w.interactive;
	if (w.interactive && !l.compile) {
		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			rc = -errno;
			res.status = SBX_INTERNAL_ERROR;
			snprintf(res.message, sizeof res.message, "stdin pipe: %s", strerror(-rc));
			sbx_wire_encode_result(&rr, rc, &res);
			goto reply;
		}
		fcntl(pipefd[1], F_SETPIPE_SZ, STDIN_PIPE_BYTES);
		fcntl(pipefd[1], F_SETFL, O_NONBLOCK);
		l.stdin_w = pipefd[1];
		rc = initial_stdin(&l, req.stdin_fd, w.eof != 0);
		req.stdin_fd = pipefd[0];
		if (rc < 0) {
			res.status = SBX_INTERNAL_ERROR;
			snprintf(res.message, sizeof res.message, "stdin: %s", strerror(-rc));
			sbx_wire_encode_result(&rr, rc, &res);
			goto reply;
		}
	}
	if (w.id[0] && id_running(pubs, npubs, w.id)) {
		res.status = SBX_INTERNAL_ERROR;
		snprintf(res.message, sizeof res.message, "run id in use");
		sbx_wire_encode_result(&rr, -EEXIST, &res);
		goto reply;
	}
	l.out = fcntl(conn, F_DUPFD_CLOEXEC, 0);
	if (l.out < 0)
		goto out;
	l.pub = w.id[0] ? pub : NULL;
	l.hooks.arg = &l;
	l.hooks.fds[0] = l.out;
	l.hooks.fds[1] = l.pub ? ctl : -1;
	l.hooks.events[1] = l.pub && ctl >= 0 ? EPOLLIN : 0;
	l.hooks.fds[2] = l.stdin_w;
	if (l.stdin_w < 0)
		l.hooks.events[2] = 0;
	l.hooks.output = on_output;
	l.hooks.ready = on_ready;
	publish(l.pub, SBX_RUN_RUNNING, w.id, w.owner);
	rc = sbx_run_hooked(slot, &req, &l.hooks, &res);
	/* A compile that succeeded hands its id to the run that follows */
	publish(l.pub,
		l.compile && !l.cancelled && rc == 0 && res.status == SBX_OK ? SBX_RUN_PUB_STARTING
									     : SBX_RUN_ENDED,
		NULL, NULL);
	sbx_close_fd(&pipefd[0]);
	close_stdin(&l, NULL);
	sbx_wire_encode_result(&rr, rc, &res);
	sbx_log("event=run slot=%u stream=1 id=%s status=%s wall_ms=%llu out_bytes=%zu "
		"err_bytes=%zu",
		index, w.id[0] ? w.id : "-", sbx_status_name(res.status),
		(unsigned long long)res.wall_ms, res.out_len, res.err_len);
	/* The frame in flight is finished from the result (the same bytes), then the end. */
	flags = fcntl(l.out, F_GETFL);
	fcntl(l.out, F_SETFL, flags & ~O_NONBLOCK);
	setsockopt(l.out, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (l.cur && !l.broken) {
		const char *b = l.cur_stream == 0 ? res.out : res.err;

		if ((l.hdr_off < sizeof l.hdr && sbx_write_all(l.out, (char *)&l.hdr + l.hdr_off,
							       sizeof l.hdr - l.hdr_off) < 0) ||
		    sbx_write_all(l.out, b + l.data_off + l.data_done, l.data_len - l.data_done) <
			0)
			l.broken = true;
	}
reply:
	if (l.broken)
		goto out;
	memset(&end, 0, sizeof end);
	end.magic = SBX_WIRE_MAGIC;
	end.stream = SBX_WIRE_FRAME_END;
	if ((l.compile && send_held(conn, &l) < 0) || sbx_write_all(conn, &end, sizeof end) < 0 ||
	    sbx_wire_send_res(conn, &rr, res.out, res.err) != SBX_WIRE_OK)
		sbx_log("event=reply_failed slot=%u", index);
out:
	sbx_close_fd(&pipefd[0]);
	close_stdin(&l, NULL);
	sbx_close_fd(&l.out);
	free(l.held);
	sbx_result_free(&res);
	free(strings);
}

void sbx_runs_answer_idle(int ctl, struct sbx_run_pub *pub)
{
	serve_handed(NULL, NULL, ctl, pub);
}

void sbx_runs_route(int conn, const struct sbx_wire_req *h, struct sbx_run_pub *pubs,
		    const int *ctls, unsigned n)
{
	struct handed m;
	enum sbx_wire_err e = sbx_wire_recv_run(conn, h, &m.w);
	bool ended = false, starting = false;
	unsigned i;

	if (e != SBX_WIRE_OK) {
		answer(conn, h->op, -EINVAL, "bad request");
		return;
	}
	m.h = *h;
	for (i = 0; i < n; i++) {
		struct sbx_run_pub *p = &pubs[i];
		uint32_t seq = __atomic_load_n(&p->seq, __ATOMIC_SEQ_CST);
		char id[sizeof p->id], owner[sizeof p->owner];
		int state = p->state;

		memcpy(id, p->id, sizeof id);
		memcpy(owner, p->owner, sizeof owner);
		id[sizeof id - 1] = owner[sizeof owner - 1] = '\0';
		if ((seq & 1) || seq != __atomic_load_n(&p->seq, __ATOMIC_SEQ_CST)) {
			i--; /* being written: read it again */
			continue;
		}
		if (!state || strcmp(id, m.w.id) != 0 || strcmp(owner, m.w.owner) != 0)
			continue;
		if (state == SBX_RUN_ENDED) {
			ended = true;
			continue;
		}
		if (state == SBX_RUN_PUB_STARTING) {
			/* its program may be running in another slot already */
			starting = starting || sbx_now_ms() < p->starting_until;
			continue;
		}
		/* hand it over without waiting: a full pair is a busy slot */
		if (ctls[i] >= 0 && sbx_send_fds(ctls[i], &m, sizeof m, &conn, 1) == 0)
			return;
		answer(conn, h->op, -EAGAIN, "the run is busy, retry");
		return;
	}
	if (ended)
		answer(conn, h->op, -EPIPE, "the run has ended");
	else if (starting)
		answer(conn, h->op, -EINPROGRESS, "the run is starting, send again");
	else
		answer(conn, h->op, -ENOENT, "no such run");
}
